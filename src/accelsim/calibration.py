"""Calibration against published training runs: does the P5-P95 interval cover reality?

For each run in ``catalog/data/published_runs.csv`` the published configuration is
simulated (chip, chip count, parameters, tokens or FLOPs, and the published MFU when there
is one), and everything unpublished takes the catalog priors. A run published in stages
(a batch-size ramp on a growing number of chips) is simulated stage by stage, each with its
own chips, tokens and MFU, and the stages are summed run by run. The claim the library
makes is coverage: the predicted P5-P95 interval of ``training_days`` and ``chip_hours``
holds the published figure for most A and A- runs. The priors are not tuned to these runs
(the MFU priors do draw on published MFUs of some of them, which the page states).

Each figure is judged twice: in sample, with the run's own published MFU as an input, and
leave-one-out (LOO), with nothing of the run but its configuration (chip, count,
parameters, tokens or FLOPs): its MFU then comes from the catalog prior like any
unpublished input. No prior is fitted to the rows' outcomes (the instability term's
sources are external to them), so there is nothing else to refit without the row.

Regenerate the page with ``accelsim calibrate --out docs/calibration.md``.
"""

from __future__ import annotations

import csv
import importlib.resources
import io
import math
from dataclasses import dataclass

import numpy as np

from accelsim._typing import FloatArray
from accelsim.catalog import chip as catalog_chip
from accelsim.dists import Uniform
from accelsim.scenario import Assumptions, Pool, Scenario, TrainingRun
from accelsim.seeding import SeedLike
from accelsim.study import simulate

_LEVEL = 0.9
CLAIM_GRADES = ("A", "A-")
"""Validation grades whose coverage is the library's calibration claim."""


@dataclass(frozen=True)
class RunStage:
    """One stage of a staged run: its chips, the tokens it trained on and its MFU."""

    chips: int
    tokens: float
    mfu: float


def _stages(text: str) -> tuple[RunStage, ...]:
    """Parse ``"chips:tokens:mfu;..."`` (empty: no stages)."""
    out = []
    for part in filter(None, (p.strip() for p in text.split(";"))):
        chips, tokens, mfu = part.split(":")
        out.append(RunStage(chips=int(chips), tokens=float(tokens), mfu=float(mfu)))
    return tuple(out)


@dataclass(frozen=True)
class PublishedRun:
    """One published training run: its configuration and its outcome."""

    run_id: str
    model: str
    grade: str
    params_active: float
    params_total: float | None
    """All parameters of a mixture of experts, every expert included (``None``: dense).
    Selects the mixture-of-experts MFU prior."""
    tokens: float | None
    flops: float | None
    chip: str
    chips: int
    stages: tuple[RunStage, ...]
    """The published stages (empty: one stage of ``chips`` at ``mfu_low``-``mfu_high``)."""
    framework: str
    mfu_low: float | None
    mfu_high: float | None
    published_days: float | None
    published_chip_hours: float | None
    days_basis: str
    """``wall_clock`` (first to last step, downtime included) or ``throughput`` (derived
    from step throughput, so failure-free): decides which simulated metric it is held to."""
    chip_hours_basis: str
    """As ``days_basis``, for the published chip-hours."""
    excluded_because: str
    """Why the run's figures are not an independent check (empty when they are)."""
    source_url: str
    as_of: str
    start_year: int | None
    """Year the run started: the year its source dates the training, else the year it was
    published (an upper bound). Selects the recovery technique of its era
    (``TrainingRun.start_year``)."""
    note: str
    """How each published figure was read."""
    miss_note: str
    """Why the model misses this run, where it is known to (empty otherwise)."""

    def __post_init__(self) -> None:
        if self.stages:
            total = sum(s.tokens for s in self.stages)
            if self.tokens is None or not math.isclose(total, self.tokens, rel_tol=1e-9):
                raise ValueError(f"{self.run_id}: stage tokens sum to {total:g}, not the tokens")
            if self.chips != max(s.chips for s in self.stages):
                raise ValueError(f"{self.run_id}: chips must be the largest stage's count")

    @property
    def chips_label(self) -> str:
        """Chip counts as the table shows them (stages joined by arrows)."""
        counts = [s.chips for s in self.stages] or [self.chips]
        return " → ".join(f"{c:,}" for c in counts) + f" x {self.chip}"

    def _stage_scenario(
        self, name: str, chips: int, work: TrainingRun, mfu: float | Uniform | None
    ) -> Scenario:
        return Scenario(
            name=name,
            workload=work,
            # Unpriced: calibration compares time and chip-hours, and the validation-only
            # chips (v100, h800, tpu-v3) have no current offer.
            fleet=[Pool(chip=self.chip, count=chips, provider=None)],
            assumptions=Assumptions(mfu=mfu, lead_time_days=0.0, porting_hours=0.0),
        )

    def scenarios(self, own_mfu: bool = True) -> list[tuple[int, Scenario]]:
        """The run as ``(chips, scenario)`` per stage: published facts set, the rest priors.

        Training time is what is compared, so there is no lead time and no porting
        (these runs used their own stack). ``own_mfu=False`` (leave-one-out) drops the
        run's published MFUs: the MFU prior takes their place.
        """
        framework = self.framework
        if self.stages:
            return [
                (
                    s.chips,
                    self._stage_scenario(
                        f"{self.run_id}.stage{i}",
                        s.chips,
                        TrainingRun(
                            params=self.params_active,
                            total_params=self.params_total,
                            tokens=s.tokens,
                            flops=6.0 * self.params_active * s.tokens,
                            framework=framework,  # type: ignore[arg-type]
                            start_year=self.start_year,
                        ),
                        s.mfu if own_mfu else None,
                    ),
                )
                for i, s in enumerate(self.stages, start=1)
            ]
        mfu: float | Uniform | None
        if not own_mfu or self.mfu_low is None or self.mfu_high is None:
            mfu = None
        elif self.mfu_low == self.mfu_high:
            mfu = self.mfu_low
        else:
            mfu = Uniform(low=self.mfu_low, high=self.mfu_high)
        tokens = self.tokens if self.tokens is not None else 1.0  # FLOPs given instead
        flops = self.flops if self.flops is not None else 6.0 * self.params_active * tokens
        work = TrainingRun(
            params=self.params_active,
            total_params=self.params_total,
            tokens=tokens,
            flops=flops,
            framework=framework,  # type: ignore[arg-type]
            start_year=self.start_year,
        )
        return [(self.chips, self._stage_scenario(self.run_id, self.chips, work, mfu))]


def _opt(value: str) -> float | None:
    return float(value) if value.strip() else None


def published_runs(grades: tuple[str, ...] | None = None) -> list[PublishedRun]:
    """The published runs shipped with the package, optionally only some grades.

    Examples
    --------
    >>> nemotron = next(r for r in published_runs(("A-",)) if r.run_id == "nemotron4_15b")
    >>> nemotron.chips_label, [s.tokens for s in nemotron.stages]
    ('768 → 1,536 → 2,304 x h100-sxm', [200000000000.0, 200000000000.0, 7600000000000.0])
    """
    text = (
        importlib.resources.files("accelsim.catalog")
        .joinpath("data", "published_runs.csv")
        .read_text(encoding="utf-8")
    )
    out = []
    for row in csv.DictReader(io.StringIO(text)):
        if grades is not None and row["grade"] not in grades:
            continue
        out.append(
            PublishedRun(
                run_id=row["run_id"],
                model=row["model"],
                grade=row["grade"],
                params_active=float(row["params_active"]),
                params_total=_opt(row["params_total"]),
                tokens=_opt(row["tokens"]),
                flops=_opt(row["flops"]),
                chip=row["chip"],
                chips=int(row["chips"]),
                stages=_stages(row["stages"]),
                framework=row["framework"],
                mfu_low=_opt(row["mfu_low"]),
                mfu_high=_opt(row["mfu_high"]),
                published_days=_opt(row["published_days"]),
                published_chip_hours=_opt(row["published_chip_hours"]),
                days_basis=row["days_basis"],
                chip_hours_basis=row["chip_hours_basis"],
                excluded_because=row["excluded_because"],
                source_url=row["source_url"],
                as_of=row["as_of"],
                start_year=int(row["start_year"]) if row["start_year"].strip() else None,
                note=row["note"],
                miss_note=row["miss_note"],
            )
        )
    return out


@dataclass(frozen=True)
class Check:
    """One published figure against the predicted interval."""

    run: PublishedRun
    metric: str
    published: float
    low: float
    median: float
    high: float
    loo_low: float = math.nan
    """P5 leave-one-out: without the run's own published MFU (nan: not computed)."""
    loo_median: float = math.nan
    loo_high: float = math.nan

    @property
    def counted(self) -> bool:
        """Whether the check counts towards coverage (an independent figure)."""
        return not self.run.excluded_because

    @property
    def covered(self) -> bool:
        """Whether the published figure lies in the predicted P5-P95 interval."""
        return self.low <= self.published <= self.high

    @property
    def covered_loo(self) -> bool:
        """Whether the leave-one-out P5-P95 interval holds the published figure."""
        return self.loo_low <= self.published <= self.loo_high

    @property
    def ratio(self) -> float:
        """Published figure over the predicted median."""
        return self.published / self.median if self.median > 0 else math.nan


def simulated_samples(
    run: PublishedRun, runs: int = 2000, seed: SeedLike = 0, own_mfu: bool = True
) -> dict[str, FloatArray]:
    """Per Monte Carlo run: wall-clock and failure-free days and chip-hours of ``run``.

    Keys ``("days" | "chip_hours", "wall_clock" | "throughput")`` joined by ``"."``. A
    staged run sums its stages run by run; every stage uses the same seed, so run ``k``
    of each stage draws the same priors (one cluster and one code base, common random
    numbers), and stages differ in chips, tokens and MFU only. The failure events reuse
    one stream too, so the stages' failure overheads are correlated rather than
    independent: an approximation that widens the summed interval slightly.
    ``own_mfu=False``: leave-one-out, the run's published MFUs replaced by the prior.
    """
    total = {
        key: np.zeros(runs)
        for key in ("days.wall_clock", "days.throughput", "chip_hours.wall_clock",
                    "chip_hours.throughput")
    }  # fmt: skip
    for chips, scenario in run.scenarios(own_mfu):
        res = simulate(scenario, runs=runs, seed=seed, progress=False)
        for basis, metric in (("wall_clock", "training_days"), ("throughput", "compute_days")):
            days = res.samples(metric)
            total[f"days.{basis}"] += days
            total[f"chip_hours.{basis}"] += days * 24.0 * chips
    return total


def calibrate(
    grades: tuple[str, ...] | None = CLAIM_GRADES, runs: int = 2000, seed: SeedLike = 0
) -> list[Check]:
    """Simulate every published run and compare its published figures with P5-P95, in
    sample (with its published MFU) and leave-one-out (without it)."""
    checks = []
    tail = (1.0 - _LEVEL) / 2.0
    levels = [tail, 0.5, 1.0 - tail]
    for run in published_runs(grades):
        samples = simulated_samples(run, runs=runs, seed=seed)
        loo = simulated_samples(run, runs=runs, seed=seed, own_mfu=False)
        for metric, key, value, basis in (
            ("training_days", "days", run.published_days, run.days_basis),
            ("chip_hours", "chip_hours", run.published_chip_hours, run.chip_hours_basis),
        ):
            if value is None:
                continue
            name = metric if basis == "wall_clock" else f"failure-free {metric}"
            low, median, high = np.quantile(samples[f"{key}.{basis}"], levels)
            loo_low, loo_median, loo_high = np.quantile(loo[f"{key}.{basis}"], levels)
            checks.append(
                Check(run, name, value, float(low), float(median), float(high),
                      float(loo_low), float(loo_median), float(loo_high))
            )  # fmt: skip
    return checks


def coverage(
    checks: list[Check], grades: tuple[str, ...] | None = None, loo: bool = False
) -> float:
    """Share of counted checks (of ``grades``, or all) whose figure lies in the interval
    (``loo``: the leave-one-out interval)."""
    counted = [c for c in checks if c.counted and (grades is None or c.run.grade in grades)]
    hits = sum(c.covered_loo if loo else c.covered for c in counted)
    return hits / len(counted) if counted else math.nan


def _coverage_line(checks: list[Check], grades: tuple[str, ...] | None, label: str) -> str:
    counted = [c for c in checks if c.counted and (grades is None or c.run.grade in grades)]
    hits, loo_hits = sum(c.covered for c in counted), sum(c.covered_loo for c in counted)
    above = sum(c.published > c.loo_high for c in counted)
    below = sum(c.published < c.loo_low for c in counted)
    return (
        f"{label}: in sample {hits} of {len(counted)} counted figures "
        f"({coverage(checks, grades):.0%}) lie in the predicted P5-P95 interval; "
        f"leave-one-out {loo_hits} of {len(counted)} ({coverage(checks, grades, loo=True):.0%}), "
        f"{above} above and {below} below."
    )


def calibration_markdown(checks: list[Check]) -> str:
    """The calibration table as Markdown, with coverage, exclusions, outliers and readings."""
    lines = [
        "| run | grade | chips | metric | published | P5 | P50 | P95 | covered "
        "| LOO P5 | LOO P50 | LOO P95 | LOO covered |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in checks:
        fmt = ",.0f" if c.metric.endswith("chip_hours") else ".1f"
        verdict = ("yes" if c.covered else "**no**") if c.counted else "not counted"
        loo = ("yes" if c.covered_loo else "**no**") if c.counted else "not counted"
        lines.append(
            f"| [{c.run.model}]({c.run.source_url}) | {c.run.grade} | {c.run.chips_label} | "
            f"{c.metric} | {c.published:{fmt}} | {c.low:{fmt}} | "
            f"{c.median:{fmt}} | {c.high:{fmt}} | {verdict} | {c.loo_low:{fmt}} | "
            f"{c.loo_median:{fmt}} | {c.loo_high:{fmt}} | {loo} |"
        )
    lines += [
        "",
        _coverage_line(checks, CLAIM_GRADES, "**Coverage of A and A- runs (the claim)**"),
        _coverage_line(checks, None, "All grades"),
        "",
        "Leave-one-out coverage and median absolute P50 error (|published / P50 - 1|) of the "
        "counted figures, all grades, by class:",
        "",
        *_summary_lines(checks),
    ]
    runs = list({c.run.run_id: c.run for c in checks}.values())
    excluded = [r for r in runs if r.excluded_because]
    if excluded:
        lines += ["", "Not counted:"]
        lines += [f"- {r.model}: {r.excluded_because}." for r in excluded]
    misses = [c for c in checks if c.counted and not c.covered]
    if misses:
        lines += ["", "Outliers and why:"]
        for c in misses:
            side = "below" if c.published < c.low else "above"
            why = c.run.miss_note or "no reason recorded"
            lines.append(
                f"- {c.run.model} ({c.run.grade}), {c.metric}: published {c.ratio:.2f}x the "
                f"predicted median, {side} the interval: {why}."
            )
    loo_misses = [c for c in checks if c.counted and not c.covered_loo]
    if loo_misses:
        lines += ["", "Leave-one-out misses (without the run's own MFU):"]
        for c in loo_misses:
            side = "below" if c.published < c.loo_low else "above"
            ratio = c.published / c.loo_median if c.loo_median > 0 else math.nan
            lines.append(
                f"- {c.run.model} ({c.run.grade}), {c.metric}: published {ratio:.2f}x the "
                f"leave-one-out median, {side} its interval."
            )
    lines += ["", "How each run's figures were read:"]
    lines += [f"- {r.model}: {r.note}." for r in runs]
    return "\n".join(lines)


def p50_error(check: Check, loo: bool = True) -> float:
    """``|published / predicted P50 - 1|`` of a check (``loo``: the leave-one-out P50)."""
    mid = check.loo_median if loo else check.median
    return abs(check.published / mid - 1.0) if mid > 0 else math.nan


def _size_class(params: float) -> str:
    if params < 10e9:
        return "< 10B"
    return "10-100B" if params < 100e9 else ">= 100B"


def _family(chip_id: str) -> str:
    """Chip family of a catalog chip: a GPU without its memory or form suffix."""
    kind = catalog_chip(chip_id).kind
    return chip_id if kind == "tpu" else chip_id.split("-", 1)[0]


def check_classes(check: Check) -> dict[str, str]:
    """The classes a check is reported under: chip family, TPU or GPU, model size."""
    run = check.run
    return {
        "chip family": _family(run.chip),
        "TPU vs GPU": catalog_chip(run.chip).kind.upper(),
        "size (active params)": _size_class(run.params_active),
    }


@dataclass(frozen=True)
class ClassSummary:
    """Leave-one-out coverage and median absolute P50 error of the counted checks of a class."""

    dimension: str
    name: str
    counted: int
    covered: int
    median_error: float
    """Median of ``|published / LOO P50 - 1|`` over the class's counted checks."""
    median_error_in_sample: float


def _summary(dimension: str, name: str, checks: list[Check]) -> ClassSummary:
    return ClassSummary(
        dimension=dimension,
        name=name,
        counted=len(checks),
        covered=sum(c.covered_loo for c in checks),
        median_error=float(np.median([p50_error(c) for c in checks])),
        median_error_in_sample=float(np.median([p50_error(c, loo=False) for c in checks])),
    )


def loo_summary(checks: list[Check]) -> list[ClassSummary]:
    """Leave-one-out coverage and median absolute P50 error of all counted checks, then by class
    (:func:`check_classes`), classes in order of name."""
    counted = [c for c in checks if c.counted]
    out = [_summary("all", "all counted figures", counted)] if counted else []
    for dimension in ("chip family", "TPU vs GPU", "size (active params)"):
        names = sorted({check_classes(c)[dimension] for c in counted})
        for name in names:
            members = [c for c in counted if check_classes(c)[dimension] == name]
            out.append(_summary(dimension, name, members))
    return out


def _summary_lines(checks: list[Check]) -> list[str]:
    lines = [
        "| by | class | counted | LOO covered | median abs. LOO P50 error "
        "| median abs. in-sample P50 error |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {s.dimension} | {s.name} | {s.counted} | {s.covered} "
        f"({s.covered / s.counted:.0%}) | {s.median_error:.1%} "
        f"| {s.median_error_in_sample:.1%} |"
        for s in loo_summary(checks)
    ]
    return lines


_PAGE = """# Calibration against published training runs

Each published run is simulated with its published configuration (chip, chip count,
parameters, tokens or FLOPs, and its MFU where the paper gives one); every other input
takes the catalog priors. A run published in stages (Nemotron-4 15B's batch ramp) is
simulated stage by stage with each stage's chips, tokens and MFU, summed run by run. The
table shows whether the published figure lies in the predicted P5-P95 interval. A figure
derived from step throughput (no downtime) is held to the simulated failure-free time; a
wall-clock figure to the simulated training time, failures and badput included. The
priors were not tuned to these runs; the MFU priors do draw on published MFUs of some of
them (LLaMA-65B, Llama 3, Nemotron-4, Gopher, GLM-130B, BLOOM, PaLM, and DeepSeek-V3 for
the mixture-of-experts prior), which makes those rows weaker evidence. A mixture of experts
(OLMoE, DeepSeek-V3) takes the mixture-of-experts MFU prior. A figure that the run's
published inputs already determine is shown but not counted.

Each figure is judged twice. **In sample** (P5-P95): with the run's published MFU as an
input, where it has one. **Leave-one-out** (LOO P5-P95): with nothing fitted to the run:
its configuration only, the MFU drawn from the catalog prior like any unpublished input.
No prior is fitted to these rows' outcomes: the instability term (loss-spike and
divergence rollbacks, `priors.instability_events_per_day` and
`instability_days_per_event`, inside `training_days`) rests on PaLM, DeepSeek-V3, Llama 3,
K2, OPT-175B, GLM-130B's abstract and BigScience's 104B logbook, none of them a day or
chip-hour figure below (PaLM's ~20 loss spikes are a source, its chip-hours a row), so the
two columns differ only in whether the row's own published MFU is used. For
a row without one they are the same. The MFU ceiling priors are judgement ranges whose
sources include the MFUs of LLaMA-65B, Llama 3, Nemotron-4, Gopher, GLM-130B, BLOOM, PaLM
and DeepSeek-V3; they are not refitted per row. The reliability priors quote BLOOM's
logbook. Those rows are weaker evidence; the others (MPT-7B, BloombergGPT, Falcon, Phi-2,
StarCoderBase, T5, Meena, StableLM, OLMoE, GPT-3) are sources of no prior.

Each run states the year it started (`start_year`, from its source; the year of
publication where the source does not date the training, an upper bound). It selects the
recovery technique of its era: a run that leaves its recovery unset and starts before
`priors.frontier_recovery_from_year` (2023, from Gemini's and the 2021-2022 logbooks, none
of them a row) restarts from synchronous checkpoints at any size; from then on a run of
`priors.frontier_recovery_min_chips` or more uses frontier recovery. The chip selects its
generation's MFU ceiling (`priors.mfu_ceiling_by_chip`: Ampere, Hopper, and Volta from
Megatron-LM and ZeRO, not from GPT-3).

Each run's MFU is carried from the reference configuration of its model size to its own
chips, with a global batch that grows with the chips
(`accelsim.models.perf.mfu_at_scale`, docs/concepts.md "MFU and scaling"). That carry is
validated separately, leave-one-out, on held-out MLPerf Training scaling pairs by pair
size, chip and TPU against GPU: `tests/validation/test_perf_scaling_pairs.py` (print
the table with `python tests/validation/test_perf_scaling_pairs.py`).

Regenerate with `accelsim calibrate --out docs/calibration.md` ({runs} runs, seed {seed});
`tests/validation/test_calibration.py` checks that this page is current.

{table}
"""


def calibration_page(checks: list[Check], runs: int, seed: int) -> str:
    """The whole ``docs/calibration.md`` page for checks made with ``runs`` and ``seed``."""
    return _PAGE.format(runs=runs, seed=seed, table=calibration_markdown(checks))


__all__ = [
    "CLAIM_GRADES",
    "Check",
    "ClassSummary",
    "PublishedRun",
    "RunStage",
    "calibrate",
    "calibration_markdown",
    "calibration_page",
    "check_classes",
    "coverage",
    "loo_summary",
    "p50_error",
    "published_runs",
    "simulated_samples",
]
