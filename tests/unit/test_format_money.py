"""Money reads sign first (``-$33.4k``, never ``$-33.4k``) through one function, and the text
reads back to the amount within its rounding (issue 16: credits are negative lines)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from accelsim.results import format_usd, format_value

_SCALE = {"": 1.0, "k": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}
_MONEY = re.compile(r"^(-?)\$([0-9][0-9,]*(?:\.[0-9]+)?(?:e[+-][0-9]+)?)([kMBT]?)$")


def _read_back(text: str) -> float:
    match = _MONEY.match(text)
    assert match, text
    sign, digits, tag = match.groups()
    value = float(digits.replace(",", "")) * _SCALE[tag]
    return -value if sign else value


amounts = st.one_of(
    st.floats(min_value=-1e16, max_value=1e16, allow_nan=False, allow_infinity=False),
    # every magnitude from cents to quadrillions, both signs
    st.tuples(st.sampled_from([-1.0, 1.0]), st.floats(min_value=-2.0, max_value=16.0)).map(
        lambda t: t[0] * 10.0 ** t[1]
    ),
)


@given(amounts, st.sampled_from([",.0f", ".3g"]))
@example(-33_412.0, ",.0f")
@example(-999_950.0, ",.0f")
@example(-0.4, ",.0f")
@example(-1e15, ",.0f")
@example(5e-324, ".3g")
def test_money_reads_sign_first_and_back_to_the_amount(value: float, small: str) -> None:
    text = format_usd(value, small=small)
    assert "$-" not in text
    back = _read_back(text)
    # three significant digits from $1,000 up; whole dollars (or 3 digits) below
    tolerance = 0.005 * abs(value) + (0.5 if small == ",.0f" else 0.0)
    assert abs(back - value) <= tolerance * (1 + 1e-12), (value, text)
    if back != 0:
        assert np.sign(back) == np.sign(value)
        assert text.startswith("-$") == (value < 0)
    else:
        assert text.startswith("$")  # an amount that rounds to zero has no sign


@given(amounts)
def test_every_usd_metric_formats_through_format_usd(value: float) -> None:
    for metric in ("tco_usd", "credits_usd", "hardware_cost_usd"):
        assert format_value(metric, value) == format_usd(value)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (-33_412.0, "-$33.4k"),
        (33_412.0, "$33.4k"),
        (-1_250_000.0, "-$1.25M"),
        (-950.0, "-$950"),
        (999_950.0, "$1M"),
        (-2.5e12, "-$2.5T"),
        (0.0, "$0"),
        (-0.0, "$0"),
    ],
)
def test_hand_written_cases(value: float, text: str) -> None:
    assert format_usd(value) == text


def test_non_finite_amounts_are_written_as_python_writes_them() -> None:
    assert format_usd(float("nan")) == "nan"
    assert format_usd(float("-inf")) == "-inf"
