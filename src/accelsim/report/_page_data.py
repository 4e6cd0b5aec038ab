"""What a report says, as plain data: the kinds of study, number formatting, and the cells,
tables, options, assumptions and prices handed to the template.

Everything in the report is computed from the results (and, when given, the scenarios they
came from) and handed to the template as strings and numbers; the template only lays it out
and escapes it. Which sections exist is decided by the metrics present: a training result
has ``time_to_train_days``, a serving result ``usd_per_million_output_tokens``, a job
stream ``mean_wait_hours``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from accelsim.results import Z95, Result, format_usd, format_value

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
    "chips_per_replica",
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
        return format_usd(value, small=".3g")
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
