"""Formatting of numbers in summaries and tables."""

from __future__ import annotations

import math

import pytest

from accelsim.results import format_value, render_table


@pytest.mark.parametrize(
    ("metric", "value", "text"),
    [
        ("tco_usd", 5.46e6, "$5.46M"),
        ("tco_usd", 1.5e9, "$1.5B"),
        ("tco_usd", 52_800.0, "$52.8k"),
        ("tco_usd", 12.0, "$12"),
        ("chip_hours", 786_018.0, "786k h"),
        ("chip_hours", 1.05e6, "1.05M h"),
        ("training_flops", 2.03e20, "2.03e+20"),
        ("training_days", 41.234, "41.2 d"),
        ("energy_kwh", 370.0, "370 kWh"),
        ("mfu", 0.3541, "0.354"),
    ],
)
def test_format_value(metric: str, value: float, text: str) -> None:
    assert format_value(metric, value) == text


def test_non_finite_values_print_as_such() -> None:
    assert format_value("tco_usd", math.inf) == "inf"
    assert format_value("tco_usd", math.nan) == "nan"


def test_render_table_aligns_columns() -> None:
    lines = render_table(["a", "bb"], [["x", "1"], ["yyy", "22"]]).splitlines()
    assert len({len(line) for line in lines}) == 1
