"""Hypothesis invariants of accelsim.models.engineering: the learning curve and the optimum.

Strategies are explicit and finite: ceilings and start fractions in [1e-3, 1], hours in
[0, 1e6], scales in [0.1, 1e5], hardware costs 0 or in [1, 1e10] USD, rates in [1, 1e4] USD/h.
"""

from __future__ import annotations

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

from accelsim.models.engineering import (
    calendar_days,
    mfu_after_optimization,
    optimal_optimization_hours,
    optimization_hours_for_mfu,
    total_cost_usd_at,
)

EPS = float(np.finfo(float).eps)

SHARE = st.floats(1e-3, 1.0, allow_nan=False, allow_infinity=False)
HOURS = st.floats(0.0, 1e6, allow_nan=False, allow_infinity=False)
SCALE = st.floats(0.1, 1e5, allow_nan=False, allow_infinity=False)
HARDWARE_USD = st.one_of(st.just(0.0), st.floats(1.0, 1e10, allow_nan=False, allow_infinity=False))
RATE = st.floats(1.0, 1e4, allow_nan=False, allow_infinity=False)


@given(ceiling=SHARE, start=SHARE, hours=HOURS, more=HOURS, scale=SCALE)
def test_mfu_is_non_decreasing_in_hours(
    ceiling: float, start: float, hours: float, more: float, scale: float
) -> None:
    """More optimisation never lowers MFU (exact: expm1 and the rounding of each later
    operation are monotone)."""
    lower = mfu_after_optimization(ceiling, start, hours, scale)
    higher = mfu_after_optimization(ceiling, start, hours + more, scale)
    assert higher >= lower


@given(ceiling=SHARE, start=SHARE, hours=HOURS, scale=SCALE)
def test_mfu_stays_between_start_and_ceiling(
    ceiling: float, start: float, hours: float, scale: float
) -> None:
    """start·ceiling <= m(h) <= ceiling, inside (0, 1], exactly (the share of the ceiling is
    capped at 1 and never below start; multiplying by the ceiling keeps the order)."""
    mfu = mfu_after_optimization(ceiling, start, hours, scale)
    assert ceiling * start <= mfu <= ceiling
    assert 0.0 < mfu <= 1.0


@given(ceiling=SHARE, start=SHARE, position=st.floats(0.0, 1.0), scale=SCALE)
def test_hours_for_mfu_inverts_the_curve(
    ceiling: float, start: float, position: float, scale: float
) -> None:
    """m(h(target)) = target for targets between start·ceiling and the ceiling. Absolute
    tolerance 64·eps ≈ 1.4e-14: about ten roundings of quantities ≤ 1 on each side."""
    target = ceiling * (start + (1.0 - start) * position)
    hours = optimization_hours_for_mfu(target, ceiling, start, scale)
    assert hours >= 0.0
    if np.isfinite(hours):
        back = mfu_after_optimization(ceiling, start, hours, scale)
        assert abs(back - target) <= 64 * EPS
    else:
        # infinite only where the target rounds to at least the ceiling
        assert target >= ceiling * (1.0 - 4 * EPS)


@given(ceiling=SHARE, start=SHARE, low=SHARE, high=SHARE, scale=SCALE)
def test_hours_for_mfu_non_decreasing_in_target(
    ceiling: float, start: float, low: float, high: float, scale: float
) -> None:
    """A higher target never needs fewer hours."""
    low, high = min(low, high), max(low, high)
    assert optimization_hours_for_mfu(high, ceiling, start, scale) >= optimization_hours_for_mfu(
        low, ceiling, start, scale
    )


@given(hours=HOURS, engineers=st.integers(1, 1000), hours_per_week=st.floats(1.0, 168.0))
def test_calendar_days_non_negative_and_falling_with_team_size(
    hours: float, engineers: int, hours_per_week: float
) -> None:
    """Days are >= 0 and a bigger team never takes longer."""
    days = calendar_days(hours, engineers, hours_per_week)
    assert days >= 0.0
    assert calendar_days(hours, engineers + 1, hours_per_week) <= days


@example(hardware_usd=1e10, rate=1.0, start=1e-3, scale=0.1)  # k = 1e11: the asymptotic regime
@given(hardware_usd=HARDWARE_USD, rate=RATE, start=SHARE, scale=SCALE)
def test_optimal_hours_beat_none_and_double(
    hardware_usd: float, rate: float, start: float, scale: float
) -> None:
    """h* >= 0, finite, and C(h*) <= C(0) and C(h*) <= C(2h*).

    Tolerance 1e-12 relative: C(h*) is the exact minimum, so only rounding separates it from
    a neighbour where C is flat to second order (~10 roundings, ≈ 2e-15), plus the error of
    h* itself, which enters C at second order.
    """
    h_star = optimal_optimization_hours(hardware_usd, rate, start, scale)
    assert np.isfinite(h_star)
    assert h_star >= 0.0
    cost = total_cost_usd_at(h_star, hardware_usd, rate, start, scale)
    at_zero = total_cost_usd_at(0.0, hardware_usd, rate, start, scale)
    at_double = total_cost_usd_at(2.0 * h_star, hardware_usd, rate, start, scale)
    assert cost <= at_zero * (1.0 + 1e-12)
    assert cost <= at_double * (1.0 + 1e-12)
