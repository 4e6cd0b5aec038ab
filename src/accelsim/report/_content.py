"""What a report says, as plain data: the question, key figures, tables and provenance.

Everything here is computed from the results (and, when given, the scenarios they came
from) and handed to the template as strings and numbers; the template only lays it out
and escapes it. Which sections exist is decided by the metrics present: a training result
has ``time_to_train_days``, a serving result ``usd_per_million_output_tokens``, a job
stream ``mean_wait_hours``.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from accelsim import catalog
from accelsim.dists import EVERY_DIST_TYPE
from accelsim.results import Z95, Result, format_value
from accelsim.scenario import Scenario, TrainingRun

TRAINING, SERVING, JOB_STREAM, OTHER = "training", "serving", "job_stream", "other"

MIN_DRIVER_RUNS = 98
"""Fewest runs for rank correlations: below ~98 runs the 95 % band of a Spearman rho of an
input with no effect (1.96 / sqrt(n - 1)) is wider than ±0.2, so drivers are noise."""
TOP_DRIVERS = 10

SERVING_METRICS = (
    "usd_per_million_output_tokens",
    "usd_per_million_tokens",
    "replicas_peak",
    "replicas_mean",
    "ttft_p50_ms",
    "ttft_p99_ms",
    "tpot_p50_ms",
    "tpot_p99_ms",
    "slo_attainment",
    "utilization",
)
"""Serving metrics shown in the serving table, in this order, where present."""

COST_PARTS = ("hardware_cost_usd", "energy_cost_usd", "engineering_cost_usd", "delay_cost_usd")


# ---------------------------------------------------------------- numbers


def fmt(metric: str, value: float) -> str:
    """A value as people read it: :func:`accelsim.results.format_value`, plus units the
    metric names carry that it does not know (``usd_per_...``, ``_ms``, shares)."""
    if not np.isfinite(value):
        return "n/a"
    if metric.startswith("usd_per"):
        return f"${value:,.3g}" if abs(value) < 1e3 else f"${value:,.0f}"
    if metric.endswith("_ms"):
        return f"{value:,.3g} ms" if abs(value) < 1e3 else f"{value:,.0f} ms"
    if metric in ("slo_attainment", "utilization", "goodput") or metric.startswith("utilization"):
        return f"{100 * value:.1f}%"
    return format_value(metric, value)


def count_words(x: float) -> str:
    """``70e9`` -> ``"70B"``, ``2e12`` -> ``"2T"``: a large count in words people use."""
    for scale, tag in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.3g}{tag}"
    return f"{x:.3g}"


def _mc_error(res: Result, metric: str) -> float:
    return Z95 * res.std_error(metric)


def _spread(res: Result, metric: str, x: np.ndarray | None = None) -> str:
    values = res.samples(metric) if x is None else x
    p5, p95 = np.quantile(values, [0.05, 0.95])
    return f"{fmt(metric, float(p5))} – {fmt(metric, float(p95))}"


# ---------------------------------------------------------------- data the template reads


@dataclass(frozen=True)
class Cell:
    """A table cell: a main line, an optional second line, an optional bar in [-1, 1]."""

    main: str
    sub: str = ""
    bar: float | None = None


@dataclass(frozen=True)
class Grid:
    """A table: header, rows of cells (the first cell of a row is its label)."""

    header: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    caption: str = ""
    note: str = ""


@dataclass(frozen=True)
class KeyFigure:
    """One headline number of an option, e.g. expected TCO."""

    label: str
    value: str
    detail: str
    metric: str


@dataclass(frozen=True)
class Option:
    """One option: its name, what it is, and its headline numbers."""

    name: str
    description: str
    figures: tuple[KeyFigure, ...]
    chosen: bool = False


@dataclass(frozen=True)
class Assumption:
    """One input of the study: its value, who set it, its sources and what was drawn."""

    name: str
    value: str
    unit: str
    set_by: str
    user_set: bool
    basis: str
    sources: tuple[tuple[str, str], ...]
    """``(url, as_of)`` pairs."""
    drawn: str
    options: str
    note: str = ""


@dataclass(frozen=True)
class Price:
    """A catalog offer a pool was priced at."""

    option: str
    provider: str
    chip: str
    pricing: str
    price: str
    as_of: str
    source: str


# ---------------------------------------------------------------- kind and question


def kind_of(results: Mapping[str, Result]) -> str:
    """Which kind of study: keyed on the metrics every option has."""
    common = set.intersection(*(set(r.metrics) for r in results.values()))
    if "time_to_train_days" in common:
        return TRAINING
    if "usd_per_million_output_tokens" in common:
        return SERVING
    if "mean_wait_hours" in common:
        return JOB_STREAM
    return OTHER


def _where(provider: str | None, pricing: str) -> str:
    """``"aws, on demand"``; just ``"on prem"`` for owned capacity."""
    words = pricing.replace("_", " ")
    return words if not provider or provider == pricing else f"{provider}, {words}"


def _pools_text(s: Scenario) -> str:
    return ", ".join(f"{p.count:,} × {p.chip} ({_where(p.provider, p.pricing)})" for p in s.fleet)


def describe_option(res: Result, scenario: Scenario | None) -> str:
    """What an option is, in one line: its fleet and, for training, its code's fit."""
    info = res.info
    if info is not None:
        fit = {"native": "native", "supported": "supported", "ported": "to be ported"}.get(
            str(info.fit), str(info.fit)
        )
        return (
            f"{info.chips:,} × {info.chip} ({_where(info.provider, info.pricing)}); "
            f"{info.framework} code, {fit} on {info.stack}; {info.stage} stage"
        )
    if scenario is not None:
        return _pools_text(scenario)
    return res.scenario_name


def _differs(values: Sequence[str]) -> bool:
    return len(set(values)) > 1


def _alternatives(results: Mapping[str, Result], scenarios: Mapping[str, Scenario]) -> str:
    """``"GPU or TPU"``, ``"on demand or on prem"``...: what the options differ in."""
    infos = [r.info for r in results.values()]
    if all(i is not None for i in infos):
        for attr in ("kind", "chip", "pricing", "provider"):
            values = [str(getattr(i, attr)) for i in infos]
            if _differs(values):
                words = [v.upper() if attr == "kind" else v.replace("_", " ") for v in values]
                unique = list(dict.fromkeys(words))
                return ", ".join(unique[:-1]) + " or " + unique[-1]
    if len(scenarios) == len(results):
        chips = [s.fleet[0].chip for s in scenarios.values()]
        if _differs(chips):
            unique = list(dict.fromkeys(chips))
            return ", ".join(unique[:-1]) + " or " + unique[-1]
    return f"Which of {len(results)} options"


def _training_phrase(results: Mapping[str, Result], scenarios: Mapping[str, Scenario]) -> str:
    runs = {
        (s.workload.params, s.workload.tokens)
        for s in scenarios.values()
        if isinstance(s.workload, TrainingRun)
    }
    if len(scenarios) == len(results) and len(runs) == 1:
        params, tokens = next(iter(runs))
        return f"training a {count_words(params)}-parameter model on {count_words(tokens)} tokens"
    first = next(iter(results.values()))
    if "training_flops" in first.metrics:
        return f"this training run ({first.mean('training_flops'):.2g} FLOPs)"
    return "this training run"


def _serving_phrase(scenarios: Mapping[str, Scenario]) -> str:
    works = [s.workload for s in scenarios.values() if getattr(s.workload, "kind", "") == "serving"]
    if not works:
        return "serving this model"
    w = works[0]
    params = getattr(w, "params", None)
    model = getattr(w, "model", None) or (
        f"a {count_words(float(params))}-parameter model" if params else "this model"
    )
    rate = getattr(w, "rate_rps", None)
    if isinstance(rate, int | float):
        return f"serving {model} at {rate:,.4g} req/s"
    if isinstance(rate, EVERY_DIST_TYPE):
        return f"serving {model} at ~{rate.expected_value():,.3g} req/s"
    return f"serving {model}"


def question(results: Mapping[str, Result], scenarios: Mapping[str, Scenario], kind: str) -> str:
    """The question the study answers, in plain words, from the scenarios or the results."""
    several = len(results) > 1
    first_name = next(iter(results))
    first_s = scenarios.get(first_name)
    fleet = describe_option(results[first_name], first_s).split(";")[0]
    if kind == TRAINING:
        what = _training_phrase(results, scenarios)
        if several:
            return f"{_alternatives(results, scenarios)} for {what}?"
        return f"What will {what} on {fleet} cost, and when will the model be trained?"
    if kind == SERVING:
        what = _serving_phrase(scenarios)
        if several:
            return f"{_alternatives(results, scenarios)} for {what}: what does each cost?"
        return f"What does {what} on {fleet} cost?"
    if kind == JOB_STREAM:
        kinds = {getattr(s.workload, "kind", "") for s in scenarios.values()}
        jobs = "this trace of jobs" if kinds == {"trace"} else "this stream of jobs"
        if several:
            return (
                f"{_alternatives(results, scenarios)} for {jobs}: what does each "
                "cost, and how long do jobs wait?"
            )
        return f"What does running {jobs} on {fleet} cost, and how long do jobs wait?"
    return "What do these options cost?" if several else f"What does {first_name} cost?"


# ---------------------------------------------------------------- headline figures


def _cheapest_share(results: Mapping[str, Result], name: str) -> float:
    tco = np.stack([r.samples("tco_usd") for r in results.values()])
    idx = list(results).index(name)
    return float(np.mean(np.argmin(tco, axis=0) == idx))


def key_figures(results: Mapping[str, Result], name: str, kind: str) -> tuple[KeyFigure, ...]:
    """The headline numbers of one option."""
    res = results[name]
    out: list[KeyFigure] = []

    def mean_fig(label: str, metric: str) -> None:
        if metric in res.metrics:
            mean = res.mean(metric)
            out.append(
                KeyFigure(
                    label,
                    fmt(metric, mean),
                    f"± {fmt(metric, _mc_error(res, metric))} (95% MC error); "
                    f"P5–P95 {_spread(res, metric)}",
                    metric,
                )
            )

    def median_fig(label: str, metric: str) -> None:
        if metric in res.metrics:
            out.append(
                KeyFigure(
                    label,
                    fmt(metric, res.quantile(metric, 0.5)),
                    f"median; P5–P95 {_spread(res, metric)}",
                    metric,
                )
            )

    if kind == SERVING:
        mean_fig("Cost per 1M output tokens", "usd_per_million_output_tokens")
        median_fig("Replicas at peak", "replicas_peak")
        mean_fig("SLO attainment", "slo_attainment")
    mean_fig("Expected TCO", "tco_usd")
    if kind == TRAINING:
        median_fig("Time to a trained model", "time_to_train_days")
    if kind == JOB_STREAM:
        mean_fig("Mean queue wait", "mean_wait_hours")
        mean_fig("Utilisation", "utilization")
    if len(results) > 1 and all("tco_usd" in r.metrics for r in results.values()):
        share = _cheapest_share(results, name)
        out.append(
            KeyFigure(
                "Cheapest option in",
                f"{share:.0%} of runs",
                "paired runs (common random numbers)",
                "cheapest",
            )
        )
    return tuple(out)


# ---------------------------------------------------------------- tables


def _cell(res: Result, metric: str, x: np.ndarray | None = None, share_of: str = "") -> Cell:
    values = res.samples(metric) if x is None else x
    mean = float(np.mean(values))
    main = fmt(metric, mean)
    if share_of and share_of in res.metrics and res.mean(share_of) > 0:
        main += f" ({mean / res.mean(share_of):.0%})"
    return Cell(main, _spread(res, metric, values))


def cost_grid(results: Mapping[str, Result]) -> Grid | None:
    """Mean of each cost part (its share of TCO) and its P5–P95, per option."""
    if not all("tco_usd" in r.metrics for r in results.values()):
        return None
    known = [m for m in COST_PARTS if any(m in r.metrics for r in results.values())]
    others = sorted(
        {m for r in results.values() for m in r.metrics if m.endswith("_cost_usd")} - set(known)
    )
    rows = []
    for part in [*known, *others, "tco_usd"]:
        label = (
            "total (TCO)" if part == "tco_usd" else part.removesuffix("_cost_usd").replace("_", " ")
        )
        cells = [
            _cell(r, part, share_of="tco_usd" if part != "tco_usd" else "")
            if part in r.metrics
            else Cell("—")
            for r in results.values()
        ]
        rows.append((Cell(label), *cells))
    return Grid(
        ("cost", *results),
        tuple(rows),
        "Mean (share of mean TCO), and P5 – P95 over the runs.",
    )


_TIME_ROWS = (
    ("lead_time_days", "capacity lead time or quota wait"),
    ("porting_days", "porting to the chip's stack"),
    ("before_days", "before the first step (the longer of the two)"),
    ("queue_days", "queue"),
    ("compute_days", "training, failure-free"),
    ("failure_overhead_days", "failures, checkpoints and badput"),
    ("training_days", "training, first step to last"),
    ("time_to_train_days", "time to a trained model"),
)


def time_grid(results: Mapping[str, Result]) -> Grid:
    """Mean days of each phase and P5–P95, per option (training results)."""
    from accelsim.report._figures import phase_samples

    phases = {name: phase_samples(r) for name, r in results.items()}
    rows = []
    for key, label in _TIME_ROWS:
        cells = []
        for name, r in results.items():
            x = phases[name].get(key)
            cells.append(_cell(r, "time_to_train_days", r.samples(key) if x is None else x))
        rows.append((Cell(label), *cells))
    return Grid(
        ("phase", *results),
        tuple(rows),
        "Mean days and P5 – P95. Lead time and porting run side by side; the rest follow "
        "one another, so the phases from 'before the first step' on add up to the time to "
        "a trained model.",
    )


def serving_grid(results: Mapping[str, Result]) -> Grid | None:
    """The serving metrics present: mean and P5–P95 per option."""
    present = [m for m in SERVING_METRICS if all(m in r.metrics for r in results.values())]
    if not present:
        return None
    rows = tuple(
        (Cell(m.replace("_", " ")), *(_cell(r, m) for r in results.values())) for m in present
    )
    return Grid(("metric", *results), rows, "Mean and P5 – P95 over the runs.")


def metrics_grid(results: Mapping[str, Result]) -> Grid:
    """Every metric all options report: mean ± 95 % MC error, and P5 – P95."""
    first = next(iter(results.values()))
    names = [m for m in first.metrics if all(m in r.metrics for r in results.values())]
    rows = []
    for m in names:
        cells = []
        for r in results.values():
            err = _mc_error(r, m)
            cells.append(
                Cell(
                    f"{fmt(m, r.mean(m))} ± {fmt(m, err) if np.isfinite(err) else 'n/a'}",
                    _spread(r, m),
                )
            )
        rows.append((Cell(m), *cells))
    return Grid(
        ("metric", *results),
        tuple(rows),
        "Mean ± 95% Monte Carlo error of the mean, and P5 – P95 (the spread of outcomes).",
    )


# ---------------------------------------------------------------- drivers


def rank_correlations(res: Result, metric: str) -> dict[str, float]:
    """Spearman's rho of each input that varied with ``metric``, over the result's runs.

    The same numbers as ``accelsim.sensitivity(scenario, metric, runs=n, seed=s)`` (method
    ``"spearman"``), which simulates the same runs again: here the result's own draws are
    used, so the drivers describe exactly the runs on the page.
    """
    from scipy.stats import spearmanr

    y = res.samples(metric)
    out: dict[str, float] = {}
    if np.ptp(y) == 0:
        return out
    for name, x in res.inputs.items():
        if np.ptp(x) > 0:
            out[name] = float(spearmanr(x, y).statistic)
    return out


def driver_grids(results: Mapping[str, Result], metrics: Sequence[str]) -> tuple[Grid, ...]:
    """For each metric, the inputs with the largest |rho| in any option, largest first."""
    grids = []
    for metric in metrics:
        if not all(metric in r.metrics for r in results.values()):
            continue
        rho = {name: rank_correlations(r, metric) for name, r in results.items()}
        inputs = sorted(
            {k for v in rho.values() for k in v},
            key=lambda k: (-max(abs(v.get(k, 0.0)) for v in rho.values()), k),
        )[:TOP_DRIVERS]
        if not inputs:
            continue
        rows = tuple(
            (
                Cell(k),
                *(
                    Cell(f"{rho[n][k]:+.2f}", bar=rho[n][k]) if k in rho[n] else Cell("—")
                    for n in results
                ),
            )
            for k in inputs
        )
        grids.append(
            Grid(
                ("input", *results),
                rows,
                f"What drives {metric}: Spearman rank correlation of each input with it.",
            )
        )
    return tuple(grids)


# ---------------------------------------------------------------- assumptions


_PRIOR_ALIASES = {"spot_preemptions_per_hour": "spot_preemptions_per_chip_hour"}
_SITE_FIELDS = {"pue": "pue", "electricity_usd_per_kwh": "usd_per_kwh"}


def describe_value(value: object) -> str:
    """A number or distribution as its YAML form, e.g. ``pert(low=0.3, mode=0.42, high=0.56)``."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | float):
        return f"{value:g}"
    if isinstance(value, EVERY_DIST_TYPE):
        fields = value.model_dump()
        tag = fields.pop("dist")
        inner = ", ".join(
            f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in fields.items()
        )
        return f"{tag}({inner})"
    return str(value)


def _drawn(x: np.ndarray) -> str:
    if np.ptp(x) == 0:
        return f"{format_value('', float(x[0]))} (every run)"
    p5, p50, p95 = np.quantile(x, [0.05, 0.5, 0.95])
    return " / ".join(format_value("", float(v)) for v in (p5, p50, p95))


def source_label(url: str) -> str:
    """A source's link text: host and path, without the scheme, cut to 40 characters."""
    text = url.split("://", 1)[-1].removeprefix("www.").rstrip("/")
    return text if len(text) <= 40 else text[:39] + "…"


def _sources(sources: Sequence[catalog.Source]) -> tuple[tuple[str, str], ...]:
    return tuple((str(s.url), s.as_of.isoformat()) for s in sources)


def _user_value(scenario: Scenario | None, scope: str, path: str) -> object | None:
    if scenario is None:
        return None
    field_name = path.split(".")[0]
    holder: object = scenario.assumptions if scope == "assumptions" else scenario.workload
    if scope not in ("assumptions", "workload"):
        return None
    value = getattr(holder, field_name, None)
    return value


def assumptions(
    results: Mapping[str, Result], scenarios: Mapping[str, Scenario]
) -> tuple[Assumption, ...]:
    """Every drawn input (and every assumption the user set) with its provenance."""
    by_name = catalog.priors().by_name()
    names = list(dict.fromkeys(k for r in results.values() for k in r.inputs))
    rows: list[Assumption] = []
    for name in names:
        users = [n for n, r in results.items() if name in r.inputs]
        option = users[0]
        res, scenario = results[option], scenarios.get(option)
        x = np.asarray(res.inputs[name])
        scope, _, path = name.partition(".")
        used_by = "all" if len(users) == len(results) else ", ".join(users)
        user = _user_value(scenario, scope, path)
        prior_name = _PRIOR_ALIASES.get(path, path)
        prior = by_name.get(prior_name)
        pricing = getattr(res.info, "pricing", None) or (
            scenario.fleet[0].pricing if scenario is not None else None
        )
        if user is not None:
            rows.append(
                Assumption(
                    name,
                    describe_value(user),
                    prior.unit if prior else "",
                    "you",
                    True,
                    "set in the scenario",
                    (),
                    _drawn(x),
                    used_by,
                )
            )
        elif path in _SITE_FIELDS and pricing == "on_prem":
            provider = getattr(res.info, "provider", None) or "on_prem"
            site = catalog.site(provider)
            rows.append(
                Assumption(
                    name,
                    describe_value(getattr(site, _SITE_FIELDS[path])),
                    prior.unit if prior else "",
                    "on-prem site sheet",
                    False,
                    "published",
                    _sources(site.sources),
                    _drawn(x),
                    used_by,
                )
            )
        elif prior is not None and not (
            np.ptp(x) == 0
            and not (isinstance(prior.value, int | float) and float(prior.value) == float(x[0]))
        ):
            rows.append(
                Assumption(
                    name,
                    describe_value(prior.value),
                    prior.unit,
                    "catalog prior",
                    False,
                    "judgement" if prior.assumption else "published",
                    _sources(prior.sources),
                    _drawn(x),
                    used_by,
                    prior.note,
                )
            )
        elif name == "engineering.reoptimization_hours":
            rows.append(
                Assumption(
                    name,
                    "architecture changes × hours per change",
                    "engineer·h",
                    "derived",
                    False,
                    "from the priors above",
                    (),
                    _drawn(x),
                    used_by,
                )
            )
        else:
            rows.append(
                Assumption(
                    name,
                    _drawn(x).removesuffix(" (every run)"),
                    "",
                    "fixed by the scenario" if np.ptp(x) == 0 else "engine",
                    False,
                    "—",
                    (),
                    _drawn(x),
                    used_by,
                )
            )
    seen = {r.name for r in rows}
    for option, scenario in scenarios.items():
        for field_name in type(scenario.assumptions).model_fields:
            value = getattr(scenario.assumptions, field_name)
            name = f"assumptions.{field_name}"
            if value is None or name in seen or any(s.startswith(name + ".") for s in seen):
                continue
            seen.add(name)
            prior = by_name.get(field_name)
            rows.append(
                Assumption(
                    name,
                    describe_value(value),
                    prior.unit if prior else "",
                    "you",
                    True,
                    "set in the scenario",
                    (),
                    "not drawn by this engine",
                    option,
                )
            )
    return tuple(sorted(rows, key=lambda a: (not a.user_set, a.name)))


def prices(results: Mapping[str, Result], scenarios: Mapping[str, Scenario]) -> tuple[Price, ...]:
    """The catalog offer behind each pool of each option (from the scenario, else its info)."""
    out = []
    for name, res in results.items():
        pools: list[tuple[str, str | None, str]] = []
        if name in scenarios:
            pools = [(p.chip, p.provider, p.pricing) for p in scenarios[name].fleet]
        elif res.info is not None:
            pools = [(res.info.chip, res.info.provider, res.info.pricing)]
        for chip_id, provider, pricing in pools:
            if provider is None:
                continue
            try:
                offer = catalog.price(chip_id, provider=provider, pricing=pricing)  # type: ignore[arg-type]
            except (LookupError, ValueError):
                continue
            price = (
                f"${offer.usd_per_chip_hour:,.2f} per chip-hour"
                if offer.usd_per_chip_hour is not None
                else f"${offer.purchase_usd_per_chip:,.0f} per chip, "
                f"{offer.amortization_years:g} years"
            )
            out.append(
                Price(
                    name,
                    offer.provider,
                    offer.chip,
                    offer.pricing,
                    price,
                    offer.as_of.isoformat(),
                    str(offer.source),
                )
            )
    return tuple(out)


# ---------------------------------------------------------------- calibration


def calibration_lines(kind: str, status: Mapping[str, Any]) -> tuple[tuple[str, ...], str]:
    """What the calibration pages say, for this kind of study, and which page."""
    if kind == TRAINING:
        t = status["training"]
        return (
            (
                f"Published training runs graded A and A-: {t['claim_covered']} of "
                f"{t['claim_counted']} published figures (time to train, chip-hours) lie in "
                f"the predicted P5 – P95 interval ({t['claim_loo_covered']} judged "
                f"leave-one-out, without the run's own published MFU).",
                f"All grades: {t['all_covered']} of {t['all_counted']} "
                f"({t['all_loo_covered']} leave-one-out).",
            ),
            str(t["page"]),
        )
    if kind == SERVING:
        s = status["serving"]
        return (
            (
                f"Per-chip serving throughput against {s['throughput_rows']} published "
                f"results: the P5 – P95 interval holds {s['coverage_pct']:.1f}% of them; "
                f"median error of the median {s['median_abs_error_pct']:.1f}%.",
                f"Largest rate meeting the latency SLO against {s['slo_rows']} published "
                f"Server/Interactive results: median ratio {s['slo_median_ratio']:.2f}.",
            ),
            str(s["page"]),
        )
    return (
        (
            "Shared clusters and job streams are checked against queueing theory (M/M/c), "
            "not against published fleets: no coverage figure for this kind of study.",
        ),
        "",
    )


# ---------------------------------------------------------------- reproduce


def reproduce_rows(
    results: Mapping[str, Result], price_list: Sequence[Price], how: str | None, version: str
) -> tuple[tuple[str, str], ...]:
    """Seed, runs, engine, version and the oldest price date: what replays this page."""
    first = next(iter(results.values()))
    seeds = {r.seed_entropy for r in results.values()}
    engines = sorted({r.engine for r in results.values()})
    designs = sorted({r.design for r in results.values()})
    rows = [
        ("seed (root entropy)", ", ".join("unknown" if s is None else str(s) for s in seeds)),
        (
            "runs",
            f"{first.runs:,}"
            + (" per option, paired (common random numbers)" if len(results) > 1 else ""),
        ),
        ("engine", ", ".join(engines)),
        ("input design", ", ".join(designs)),
        ("accelsim version", version),
    ]
    if price_list:
        oldest = min(price_list, key=lambda p: p.as_of)
        rows.append(
            (
                "oldest price used",
                f"{oldest.as_of} ({oldest.provider} {oldest.chip} {oldest.pricing})",
            )
        )
    else:
        rows.append(("oldest price used", "no catalog offer (no provider on any pool)"))
    if how:
        rows.append(("reproduce with", how))
    return tuple(rows)


def today() -> str:
    """The date the page is written (UTC)."""
    return datetime.datetime.now(datetime.UTC).date().isoformat()
