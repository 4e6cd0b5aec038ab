"""How results read: units from metric names, numbers as people read them, plain tables."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Z95 = 1.959963984540054
"""Two-sided 95 % standard normal quantile: the half-width of a mean's 95 % interval in SEs."""


def unit_of(metric: str) -> str:
    """The unit a metric's name carries (``tco_usd`` -> ``"USD"``), or ``""``.

    A dotted name (a workload's metric in a mix, ``research.mean_wait_hours``, or an
    attribution, ``chargeback_usd.research``) carries it in its last part that has one.

    >>> unit_of("tco_usd"), unit_of("research.mean_wait_hours"), unit_of("chargeback_usd.llm")
    ('USD', 'h', 'USD')
    """
    for part in reversed(metric.split(".")):
        for suffix, unit in (
            ("_usd", "USD"),
            ("_days", "d"),
            ("_hours", "h"),
            ("_kwh", "kWh"),
            ("_kg_co2e", "kg CO2e"),
        ):
            if part.endswith(suffix):
                return unit
    return ""


_USD_SCALES = ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k"))


def format_usd(value: float, *, small: str = ",.0f") -> str:
    """Dollars as a person reads them, sign first: ``$12.3M``, ``-$33.4k``, ``$950``.

    Every amount of money accelsim prints goes through this function. From $1,000 up the
    amount is rounded to three significant digits and scaled (k, M, B, T); below, it is
    written with the format spec ``small`` (``",.0f"``: whole dollars; ``".3g"`` for prices
    such as ``$4.92``). A negative amount (a credit) reads ``-$33.4k``, never ``$-33.4k``;
    an amount that rounds to zero has no sign.

    Parameters
    ----------
    value : float
        Amount. [USD]
    small : str
        Format spec of amounts below $1,000 after rounding.

    Returns
    -------
    str
        The amount as text (``"nan"``/``"inf"`` as :func:`str` writes them).

    Examples
    --------
    >>> format_usd(-33_412.0), format_usd(12_345_678.0), format_usd(4.916, small=".3g")
    ('-$33.4k', '$12.3M', '$4.92')
    >>> format_usd(999_950.0), format_usd(-0.2)
    ('$1M', '$0')
    """
    if not np.isfinite(value):
        return str(value)
    magnitude = float(f"{abs(value):.3g}")
    text = ""
    for scale, tag in _USD_SCALES:
        if magnitude >= scale:
            scaled = magnitude / scale
            text = (f"{scaled:,.0f}" if scaled >= 1000 else f"{scaled:.3g}") + tag
            break
    else:
        text = f"{abs(value):{small}}"
    is_zero = not any(c in "123456789" for c in text.split("e")[0])
    return ("-" if value < 0 and not is_zero else "") + "$" + text


def format_value(metric: str, value: float) -> str:
    """A number as a person reads it, e.g. ``$12.3M``, ``-$33.4k``, ``41.2 d``, ``0.412``."""
    if not np.isfinite(value):
        return str(value)
    unit = unit_of(metric)
    if unit == "USD":
        return format_usd(value)
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
