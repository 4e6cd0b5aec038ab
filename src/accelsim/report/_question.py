"""The question a report answers, what each option is, and its headline figures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from accelsim.dists import EVERY_DIST_TYPE
from accelsim.report._page_data import (
    JOB_STREAM,
    OTHER,
    SERVING,
    TRAINING,
    KeyFigure,
    _mc_error,
    _spread,
    count_words,
    fmt,
)
from accelsim.results import Result, completes, marked
from accelsim.scenario import Scenario, TrainingRun

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


def _serving_chips(res: Result) -> str:
    """``"136 chips at peak, 90 on average (medians over runs)"``, or ``""`` without the
    replica metrics of a serving result."""
    needed = ("replicas_peak", "replicas_mean", "chips_per_replica")
    if not all(m in res.data for m in needed):
        return ""
    per = res.samples("chips_per_replica")
    peak = float(np.median(res.samples("replicas_peak") * per))
    mean = float(np.median(res.samples("replicas_mean") * per))
    return f"{peak:,.0f} chips at peak, {mean:,.0f} on average (medians over runs)"


def describe_option(res: Result, scenario: Scenario | None) -> str:
    """What an option is, in one line: its fleet and, for training, its code's fit; for
    serving, the chips its replicas hold at peak and on average (under ``follow_demand``
    the pool is a cap, not what is paid for)."""
    used = _serving_chips(res)
    if used and scenario is not None:
        cap = "up to " if getattr(scenario.workload, "scaling", "") == "follow_demand" else ""
        return f"{cap}{_pools_text(scenario)}; {used}"
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


_CHEAPEST_LABEL = {
    TRAINING: "Cheapest finished option in",
    SERVING: "Cheapest option serving every request in",
    JOB_STREAM: "Cheapest option keeping up in",
}
"""The "cheapest" card's label: cheapest among the options that complete their work."""


def _cheapest_share(results: Mapping[str, Result], name: str) -> float:
    """Share of paired runs in which ``name`` completes its work at the lowest TCO among the
    options that complete theirs in that run: a run that does not finish is censored at the
    horizon, so its cost is no saving (ties split as in :func:`prob_lowest`)."""
    tco = np.stack([r.samples("tco_usd") for r in results.values()])
    done = np.stack([completes(r) for r in results.values()])
    some = done.any(axis=0)
    if not some.any():
        return 0.0
    ranked = np.where(done, tco, np.inf)[:, some]
    lowest = (ranked == ranked.min(axis=0)) & done[:, some]
    shares = (lowest / lowest.sum(axis=0)).sum(axis=1) / tco.shape[1]
    return float(shares[list(results).index(name)])


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
                    marked(res, metric, fmt(metric, mean)),
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
                    marked(res, metric, fmt(metric, res.quantile(metric, 0.5))),
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
                _CHEAPEST_LABEL.get(kind, "Cheapest complete option in"),
                f"{share:.0%} of runs",
                "paired runs (common random numbers); a run that does not complete its "
                "work is not counted as cheapest",
                "cheapest",
            )
        )
    return tuple(out)
