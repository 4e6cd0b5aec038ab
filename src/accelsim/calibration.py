"""Calibration against published training runs: does the P5-P95 interval cover reality?

For each run in ``catalog/data/published_runs.csv`` the published configuration is
simulated (chip, chip count, active parameters, tokens or reported FLOPs, and the
published MFU when there is one), and everything unpublished takes the catalog priors.
The claim the library makes is coverage: the predicted P5-P95 interval of
``training_days`` and ``chip_hours`` holds the published figure for most runs. The
priors are not tuned to these runs (the MFU priors do draw on published MFUs of some of
them, which the docs state).

Regenerate the table in the docs with ``accelsim calibrate --out docs/calibration.md``.
"""

from __future__ import annotations

import csv
import importlib.resources
import io
import math
from dataclasses import dataclass

import numpy as np

from accelsim.dists import Uniform
from accelsim.scenario import Assumptions, Pool, Scenario, TrainingRun
from accelsim.seeding import SeedLike
from accelsim.study import simulate

_LEVEL = 0.9


@dataclass(frozen=True)
class PublishedRun:
    """One published training run: its configuration and its outcome."""

    run_id: str
    model: str
    grade: str
    params_active: float
    tokens: float | None
    flops: float | None
    chip: str
    chips: int
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
    note: str

    def scenario(self) -> Scenario:
        """The run as a scenario: published facts set, the rest from the priors.

        Training time is what is compared, so there is no lead time and no porting
        (these runs used their own stack).
        """
        mfu: float | Uniform | None
        if self.mfu_low is None or self.mfu_high is None:
            mfu = None
        elif self.mfu_low == self.mfu_high:
            mfu = self.mfu_low
        else:
            mfu = Uniform(low=self.mfu_low, high=self.mfu_high)
        tokens = self.tokens if self.tokens is not None else 1.0  # FLOPs given instead
        flops = self.flops if self.flops is not None else 6.0 * self.params_active * tokens
        return Scenario(
            name=self.run_id,
            workload=TrainingRun(
                params=self.params_active,
                tokens=tokens,
                flops=flops,
                framework=self.framework,  # type: ignore[arg-type]
            ),
            # Unpriced: calibration compares time and chip-hours, and the validation-only
            # chips (v100, h800, tpu-v3) have no current offer.
            fleet=[Pool(chip=self.chip, count=self.chips, provider=None)],
            assumptions=Assumptions(mfu=mfu, lead_time_days=0.0, porting_hours=0.0),
        )


def _opt(value: str) -> float | None:
    return float(value) if value.strip() else None


def published_runs(grades: tuple[str, ...] | None = None) -> list[PublishedRun]:
    """The published runs shipped with the package, optionally only some grades."""
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
                tokens=_opt(row["tokens"]),
                flops=_opt(row["flops"]),
                chip=row["chip"],
                chips=int(row["chips"]),
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
                note=row["note"],
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

    @property
    def counted(self) -> bool:
        """Whether the check counts towards coverage (an independent figure)."""
        return not self.run.excluded_because

    @property
    def covered(self) -> bool:
        """Whether the published figure lies in the predicted P5-P95 interval."""
        return self.low <= self.published <= self.high

    @property
    def ratio(self) -> float:
        """Published figure over the predicted median."""
        return self.published / self.median if self.median > 0 else math.nan


def calibrate(
    grades: tuple[str, ...] | None = ("A", "A-"), runs: int = 2000, seed: SeedLike = 0
) -> list[Check]:
    """Simulate every published run and compare its published figures with P5-P95."""
    checks = []
    for run in published_runs(grades):
        res = simulate(run.scenario(), runs=runs, seed=seed)
        days = {
            "wall_clock": res.samples("training_days"),
            "throughput": res.samples("compute_days"),
        }
        for metric, value, basis in (
            ("training_days", run.published_days, run.days_basis),
            ("chip_hours", run.published_chip_hours, run.chip_hours_basis),
        ):
            if value is None:
                continue
            name = metric if basis == "wall_clock" else f"failure-free {metric}"
            predicted = days[basis] * (24.0 * run.chips if metric == "chip_hours" else 1.0)
            tail = (1.0 - _LEVEL) / 2.0
            low, median, high = np.quantile(predicted, [tail, 0.5, 1.0 - tail])
            checks.append(Check(run, name, value, float(low), float(median), float(high)))
    return checks


def coverage(checks: list[Check]) -> float:
    """Share of counted checks whose published figure lies in the predicted interval."""
    counted = [c for c in checks if c.counted]
    return sum(c.covered for c in counted) / len(counted) if counted else math.nan


def calibration_markdown(checks: list[Check]) -> str:
    """The calibration table as Markdown, with the coverage line."""
    lines = [
        "| run | grade | chips | metric | published | P5 | P50 | P95 | covered |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in checks:
        fmt = ",.0f" if c.metric.endswith("chip_hours") else ".1f"
        verdict = ("yes" if c.covered else "**no**") if c.counted else "not counted"
        lines.append(
            f"| [{c.run.model}]({c.run.source_url}) | {c.run.grade} | {c.run.chips:,} x "
            f"{c.run.chip} | {c.metric} | {c.published:{fmt}} | {c.low:{fmt}} | "
            f"{c.median:{fmt}} | {c.high:{fmt}} | {verdict} |"
        )
    counted = [c for c in checks if c.counted]
    lines.append("")
    lines.append(
        f"Coverage: {sum(c.covered for c in counted)} of {len(counted)} counted figures "
        f"({coverage(checks):.0%}) lie in the predicted P5-P95 interval."
    )
    lines += [
        f"\nNot counted: {c.run.model}: {c.run.excluded_because}." for c in checks if not c.counted
    ]
    return "\n".join(lines)


__all__ = [
    "Check",
    "PublishedRun",
    "calibrate",
    "calibration_markdown",
    "coverage",
    "published_runs",
]
