"""Unit tests for accelsim.models.engineering: scalars, arrays, broadcasting, edges, oracles."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from accelsim.models.engineering import (
    calendar_days,
    mfu_after_optimization,
    optimal_optimization_hours,
    optimization_hours_for_mfu,
    reoptimization_hours,
    total_cost_usd_at,
)

EPS = float(np.finfo(float).eps)


# --- mfu_after_optimization -------------------------------------------------------------


def test_mfu_at_zero_hours_is_start_times_ceiling_exactly() -> None:
    """h = 0 gives ceiling·start bit-for-bit: expm1(0) is exactly 0, so no rounding enters."""
    ceiling = np.array([0.35, 0.5, 0.62])
    start = np.array([0.1, 0.6, 1.0])
    assert np.array_equal(mfu_after_optimization(ceiling, start, 0.0, 250.0), ceiling * start)


def test_mfu_at_infinite_hours_is_ceiling() -> None:
    """h = inf gives exp(-inf) = 0, so the ceiling is reached exactly."""
    ceiling = np.array([0.35, 0.5, 1.0])
    assert np.array_equal(mfu_after_optimization(ceiling, 0.3, np.inf, 100.0), ceiling)


def test_mfu_after_one_scale_closes_63_percent_of_the_gap() -> None:
    """Hand value at h = scale: 0.5·(1 - 0.4/e) = 0.42642411...; rtol 1e-14 (a few flops)."""
    got = mfu_after_optimization(0.5, 0.6, 120.0, 120.0)
    assert got == pytest.approx(0.5 * (1.0 - 0.4 * np.exp(-1.0)), rel=1e-14)
    assert got == pytest.approx(0.4264241117657115, rel=1e-14)


def test_mfu_broadcasts_over_hours_and_ceilings() -> None:
    """Column of ceilings × row of hours gives the outer grid, each cell the scalar result."""
    ceiling = np.array([[0.4], [0.6]])
    hours = np.array([0.0, 10.0, 100.0])
    grid = mfu_after_optimization(ceiling, 0.5, hours, 50.0)
    assert grid.shape == (2, 3)
    for i, j in itertools.product(range(2), range(3)):
        assert grid[i, j] == mfu_after_optimization(ceiling[i, 0], 0.5, hours[j], 50.0)


def test_mfu_accepts_lists_and_returns_float64() -> None:
    """Array-likes in, float64 out."""
    out = mfu_after_optimization([0.5, 0.5], [1, 1], [0, 5], [1, 1])
    assert out.dtype == np.float64
    assert np.array_equal(out, [0.5, 0.5])


# --- optimization_hours_for_mfu ----------------------------------------------------------


def test_hours_for_mfu_hand_value() -> None:
    """Closing 3/4 of the gap takes scale·ln 4 hours: 100·ln 4 = 138.629...; rtol 1e-14."""
    # start 0.6 of a 0.5 ceiling = 0.3; target 0.45 closes 0.15 of the 0.2 gap.
    got = optimization_hours_for_mfu(0.45, 0.5, 0.6, 100.0)
    assert got == pytest.approx(100.0 * np.log(4.0), rel=1e-14)


def test_hours_for_mfu_edges() -> None:
    """0 at or below the start, inf at or above the ceiling; start = 1 reaches the ceiling at 0."""
    targets = np.array([0.0, 0.3, 0.5, 0.7])
    got = optimization_hours_for_mfu(targets, 0.5, 0.6, 100.0)
    assert np.array_equal(got, [0.0, 0.0, np.inf, np.inf])
    at_start_one = optimization_hours_for_mfu([0.2, 0.5, 0.6], 0.5, 1.0, 100.0)
    assert np.array_equal(at_start_one, [0.0, 0.0, np.inf])


def test_hours_for_mfu_round_trip() -> None:
    """m(h(target)) = target. Tolerance 1e-14 absolute: ~10 roundings of values ≤ 1 (≈ 2e-15)."""
    ceiling = np.array([[0.3], [0.55], [0.9]])
    start = np.array([0.05, 0.4, 0.8])
    targets = ceiling * (start + (1.0 - start) * np.array([[0.01], [0.5], [0.999]])[:, :, None])
    hours = optimization_hours_for_mfu(targets, ceiling, start, 300.0)
    assert np.all(np.isfinite(hours))
    np.testing.assert_allclose(
        mfu_after_optimization(ceiling, start, hours, 300.0), targets, rtol=0, atol=1e-14
    )


def test_hours_round_trip_from_hours() -> None:
    """h(m(h)) = h for h/scale in [0.5, 5]. rtol 1e-12: the error in 1 - g is ~eps, amplified
    by e^{h/s}/(h/s) ≤ e^5/5 ≈ 30 and by ~1/(1-start) = 2, so ≲ 60·eps ≈ 1.3e-14."""
    hours = np.array([50.0, 100.0, 250.0, 500.0])
    mfu = mfu_after_optimization(0.5, 0.5, hours, 100.0)
    np.testing.assert_allclose(optimization_hours_for_mfu(mfu, 0.5, 0.5, 100.0), hours, rtol=1e-12)


# --- reoptimization_hours, calendar_days ---------------------------------------------------


def test_reoptimization_hours_hand_values_and_zero() -> None:
    """n changes × hours each, exactly (products of small integers are exact in float64)."""
    got = reoptimization_hours(np.array([0, 1, 12]), np.array([[10.0], [40.0]]))
    assert np.array_equal(got, [[0.0, 10.0, 120.0], [0.0, 40.0, 480.0]])


def test_calendar_days_one_engineer_week() -> None:
    """40 h of work at 40 h/week for one engineer is one calendar week: 7 d exactly."""
    assert calendar_days(40.0, 1, 40.0) == 7.0


def test_calendar_days_arrays_and_zero() -> None:
    """Hours split across engineers; zero hours take zero days. Exact: dyadic-friendly values."""
    got = calendar_days(np.array([0.0, 80.0, 400.0]), np.array([[1.0], [4.0]]), 40.0)
    assert np.array_equal(got, [[0.0, 14.0, 70.0], [0.0, 3.5, 17.5]])


# --- total_cost_usd_at, optimal_optimization_hours ---------------------------------------


def test_total_cost_matches_one_over_mfu_form_for_any_ceiling() -> None:
    """C(h) = H·c/m(h) + w·h for any ceiling c: the ceiling cancels. rtol 1e-13 (a few flops,
    with c/m evaluated as a separate quotient)."""
    hours = np.array([0.0, 10.0, 200.0, 5000.0])
    for ceiling in (0.2, 0.55, 1.0):
        mfu = mfu_after_optimization(ceiling, 0.3, hours, 400.0)
        expected = 2e6 * ceiling / mfu + 150.0 * hours
        np.testing.assert_allclose(
            total_cost_usd_at(hours, 2e6, 150.0, 0.3, 400.0), expected, rtol=1e-13
        )


def test_total_cost_at_zero_hours_is_hardware_over_start() -> None:
    """At h = 0 the run is at start·ceiling, so hardware costs H/start: 1e6/0.5 = 2e6 exactly."""
    assert total_cost_usd_at(0.0, 1e6, 100.0, 0.5, 100.0) == 2e6


def _grid() -> list[tuple[float, float, float, float]]:
    hardware = (1e3, 1e5, 1e7)
    rate = (50.0, 150.0, 400.0)
    start = (0.1, 0.4, 0.9)
    scale = (20.0, 200.0, 2000.0)
    return list(itertools.product(hardware, rate, start, scale))


def test_optimal_hours_match_scipy_minimize_scalar() -> None:
    """Oracle: bounded Brent minimisation of C(h) on [0, 100·scale] (C is convex, see Notes).

    Tolerances: closed-form cost within 1e-6 relative of scipy's (the brief's bound; Brent with
    xatol = 1e-9·scale is far tighter), and never above scipy's by more than 1e-12 relative,
    since the closed form is the exact minimiser and only rounding (~10 flops) separates them.
    The grid must contain both interior optima and optima clipped to 0.
    """
    cases = np.array(_grid())
    hardware, rate, start, scale = cases.T
    ours = optimal_optimization_hours(hardware, rate, start, scale)
    ours_cost = total_cost_usd_at(ours, hardware, rate, start, scale)
    assert np.any(ours == 0.0)
    assert np.any(ours > 0.0)
    # the bracket must hold every optimum for Brent to find it
    assert np.all(ours < 100.0 * scale)
    for i, (h_usd, w, s0, tau) in enumerate(cases):
        res = minimize_scalar(
            lambda h, h_usd=h_usd, w=w, s0=s0, tau=tau: float(
                total_cost_usd_at(h, h_usd, w, s0, tau)
            ),
            bounds=(0.0, 100.0 * tau),
            method="bounded",
            options={"xatol": 1e-9 * tau},
        )
        assert res.success
        assert ours_cost[i] == pytest.approx(res.fun, rel=1e-6)
        assert ours_cost[i] <= res.fun * (1.0 + 1e-12)


def test_optimal_hours_satisfy_first_order_condition() -> None:
    """At an interior optimum H·a·x / (τ(1 - a·x)²) = w. rtol 1e-10: y* has ~eps error,
    multiplied by the condition of y/(1-y)² (≤ ~10 on this grid) and exp/log round trips."""
    cases = np.array(_grid())
    hardware, rate, start, scale = cases.T
    hours = optimal_optimization_hours(hardware, rate, start, scale)
    interior = hours > 0.0
    y = (1.0 - start) * np.exp(-hours / scale)
    marginal_saving = hardware * y / (scale * (1.0 - y) ** 2)
    np.testing.assert_allclose(marginal_saving[interior], rate[interior], rtol=1e-10)
    # where clipped to 0, the first hour does not pay: C'(0) >= 0
    assert np.all(marginal_saving[~interior] <= rate[~interior])


def test_optimal_hours_edges() -> None:
    """Free hardware or no gap to close (start = 1) means no optimisation: exactly 0 h."""
    assert np.array_equal(
        optimal_optimization_hours([0.0, 1e9], 100.0, [0.5, 1.0], 100.0), [0.0, 0.0]
    )


def test_optimal_hours_broadcast() -> None:
    """Column of hardware costs × row of rates gives the grid of scalar optima."""
    hardware = np.array([[1e4], [1e6], [1e8]])
    rate = np.array([50.0, 200.0])
    grid = optimal_optimization_hours(hardware, rate, 0.3, 150.0)
    assert grid.shape == (3, 2)
    for i, j in itertools.product(range(3), range(2)):
        assert grid[i, j] == optimal_optimization_hours(hardware[i, 0], rate[j], 0.3, 150.0)


def test_optimal_hours_large_hardware_asymptote() -> None:
    """For k = H/(τw) → ∞, y* → 1/k, so h* → τ·ln(a·k). At k = 1e12 the relative gap between
    y* and 1/k is ~2/k = 2e-12, so h* matches to 1e-12 relative (log of a ratio near 1)."""
    k = 1e12
    got = optimal_optimization_hours(k * 100.0 * 50.0, 50.0, 0.2, 100.0)
    assert got == pytest.approx(100.0 * np.log(0.8 * k), rel=1e-12)


def test_effort_at_stake_is_zero_below_threshold_full_above_reference_and_monotone() -> None:
    """Oracle: the stated rule h0·min(1, (S/S0)^e) for S >= S_min, else 0."""
    stake = np.array([10.0, 999.0, 1e3, 1e4, 1e5, 1e6, 1e8])
    from accelsim.models import engineering

    got = engineering.effort_at_stake(
        200.0, stake, reference_chip_hours=1e6, elasticity=0.5, threshold_chip_hours=1e3
    )
    np.testing.assert_allclose(got[:2], 0.0)
    np.testing.assert_allclose(got[2:5], 200.0 * np.sqrt(stake[2:5] / 1e6))
    np.testing.assert_allclose(got[5:], 200.0)
    assert np.all(np.diff(got) >= 0)


def test_a_small_fine_tune_is_hardware_led_and_a_large_run_pays_for_optimisation() -> None:
    """Issue 14 item 7: a 7B fine-tune on 8 H100 gets no optimisation effort (below the
    threshold), a 70B pretraining on 1,024 H100 keeps the prior's; the large run's
    optimisation days come before its first step (time to train >= preparation + training)."""
    import accelsim as acs

    def run(params: float, tokens: float, n: int) -> acs.Result:
        s = acs.Scenario(
            name="x",
            workload=acs.TrainingRun(params=params, tokens=tokens, framework="pytorch"),
            fleet=[acs.Pool(chip="h100-sxm", count=n, provider="gcp", pricing="on_demand")],
        )
        return acs.simulate(s, runs=256, seed=3, engine="analytic")

    small = run(7e9, 1e9, 8)
    assert np.all(small.samples("engineering_cost_usd") == 0.0)
    assert np.median(small.samples("hardware_cost_usd")) > 0.0
    big = run(70e9, 2e12, 1024)
    hours = big.samples("engineering_hours")
    assert np.median(hours) > 50.0
    ttt, train = big.samples("time_to_train_days"), big.samples("training_days")
    assert np.mean(ttt - train > big.samples("lead_time_days") + 1e-9) > 0.05
