"""How results read: units from metric names, numbers as people read them, plain tables."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Z95 = 1.959963984540054
"""Two-sided 95 % standard normal quantile: the half-width of a mean's 95 % interval in SEs."""


def unit_of(metric: str) -> str:
    """The unit a metric's name carries (``tco_usd`` -> ``"USD"``), or ``""``."""
    for suffix, unit in (
        ("_usd", "USD"),
        ("_days", "d"),
        ("_hours", "h"),
        ("_kwh", "kWh"),
        ("_kg_co2e", "kg CO2e"),
    ):
        if metric.endswith(suffix):
            return unit
    return ""


def format_value(metric: str, value: float) -> str:
    """A number as a person reads it, e.g. ``$12.3M``, ``41.2 d``, ``0.412``."""
    if not np.isfinite(value):
        return str(value)
    unit = unit_of(metric)
    if unit == "USD":
        for scale, tag in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
            if abs(value) >= scale:
                return f"${value / scale:,.3g}{tag}"
        return f"${value:,.0f}"
    if abs(value) >= 1e9:
        text = f"{value:.3g}"
    elif abs(value) >= 1e6:
        text = f"{value / 1e6:.3g}M"
    elif abs(value) >= 1e4:
        text = f"{value / 1e3:.3g}k"
    elif abs(value) >= 100:
        text = f"{value:,.0f}"
    else:
        text = f"{value:.3g}"
    return f"{text} {unit}".strip() if unit and unit != "USD" else text


NOT_AVAILABLE = "n/a"
"""How a number that cannot be estimated reads in text (the standard error of one run)."""


def format_error(metric: str, value: float) -> str:
    """A Monte Carlo error as text: :func:`format_value`, or ``"n/a"`` where it is ``nan``
    (a standard error needs at least two runs, or two antithetic pairs)."""
    return NOT_AVAILABLE if np.isnan(value) else format_value(metric, value)


@dataclass(frozen=True)
class Table:
    """A table as data: a title (lines above it), a header and rows of already formatted
    cells. ``str()`` renders it as plain text (:func:`render_table`); the CLI draws the same
    cells as a rich table, so a table is formatted once and never parsed back from text."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    title: str = ""
    note: str = ""
    """Lines printed under the table."""

    def __post_init__(self) -> None:
        for row in self.rows:
            if len(row) != len(self.header):
                raise ValueError(f"a row has {len(row)} cells for {len(self.header)} columns")

    def __str__(self) -> str:
        parts = [self.title] if self.title else []
        parts.append(render_table(self.header, self.rows))
        if self.note:
            parts.append(self.note)
        return "\n".join(parts)


def render_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain-text table with aligned columns (first column left, others right)."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        first = str(cells[0]).ljust(widths[0])
        rest = [str(c).rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True)]
        return "  ".join([first, *rest]).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(r) for r in rows)])
