"""The analytic engine against closed forms: 6·N·D compute time and exact E[T] with failures."""

from __future__ import annotations

import numpy as np
import pytest

import accelsim as acs
from accelsim.models import reliability


def fixed_scenario(**assumptions: float) -> acs.Scenario:
    base = {
        "mfu": 0.4,
        "failure_rate_per_chip_hour": 2e-5,
        "checkpoint_write_hours": 0.05,
        "restart_hours": 0.25,
        "startup_hours": 0.0,  # the first start's time is its own test (test_overheads.py)
        "checkpoint_interval_hours": 1.5,
        "badput_fraction": 0.05,
        "lead_time_days": 3.0,
        "porting_hours": 0.0,
        "engineers": 2.0,
    }
    base.update(assumptions)
    return acs.Scenario(
        name="fixed",
        workload=acs.TrainingRun(params=70e9, tokens=2e12),
        fleet=[acs.Pool(chip="h100-sxm", count=2048, provider="aws")],
        assumptions=acs.Assumptions(**base),
    )


def test_compute_days_are_6nd_over_delivered_flops() -> None:
    """Oracle: 6·N·D / (chips · peak · MFU), exact (same arithmetic, independent of draws)."""
    res = acs.simulate(fixed_scenario(), runs=20, seed=1)
    peak = acs.catalog.chip("h100-sxm").bf16_tflops * 1e12
    expected_days = 6 * 70e9 * 2e12 / (2048 * peak * 0.4) / 86400
    np.testing.assert_allclose(res.samples("compute_days"), expected_days, rtol=1e-12)
    np.testing.assert_allclose(res.samples("mfu"), 0.4)


def test_mean_training_time_matches_exact_expectation() -> None:
    """Oracle: E[T] = sum over segments of e^{λR}(e^{λ(s+C)} − 1)/λ, divided by (1 − badput).

    The sampler is exact, so the sample mean of 4,000 runs lies within 5 standard errors of
    the closed form with probability > 0.9999 whatever the seed.
    """
    s = fixed_scenario()
    res = acs.simulate(s, runs=4000, seed=7)
    work_h = res.samples("compute_days")[0] * 24
    rate = 2048 * 2e-5
    exact_h = reliability.expected_completion_hours(work_h, 1.5, 0.05, 0.25, rate) / (1 - 0.05)
    # rollbacks (instability_days, models.instability) are no part of this law
    x = (res.samples("training_days") - res.samples("instability_days")) * 24
    se = x.std(ddof=1) / np.sqrt(x.size)
    assert abs(x.mean() - float(exact_h)) <= 5 * se
    n = res.samples("interruptions")
    expected_n = reliability.expected_interruptions(work_h, 1.5, 0.05, 0.25, rate)
    assert abs(n.mean() - float(expected_n)) <= 5 * n.std(ddof=1) / np.sqrt(n.size)


def test_no_failures_means_goodput_is_one_minus_badput() -> None:
    res = acs.simulate(fixed_scenario(failure_rate_per_chip_hour=0.0), runs=50, seed=3)
    # Without failures the only losses are the checkpoint writes, the badput and the
    # rollbacks (instability_days, added after the badput stretch).
    work_h = res.samples("compute_days") * 24
    segments = np.ceil(work_h / 1.5)
    rollback_h = res.samples("instability_days") * 24
    expected = work_h / ((work_h + segments * 0.05) / 0.95 + rollback_h)
    np.testing.assert_allclose(res.samples("goodput"), expected, rtol=1e-9)
    assert (res.samples("interruptions") == 0).all()


def test_time_to_train_adds_lead_time_when_it_is_longer_than_porting() -> None:
    res = acs.simulate(fixed_scenario(), runs=50, seed=3)
    np.testing.assert_allclose(
        res.samples("time_to_train_days"), 3.0 + res.samples("training_days"), rtol=1e-12
    )


@pytest.mark.parametrize("pricing", ["on_demand", "spot"])
def test_hardware_cost_is_chip_hours_times_price(pricing: str) -> None:
    """Oracle: rental cost = allocated chip-hours × USD per chip-hour of the offer, prices
    held fixed (moving prices: tests/validation/test_fleet_pricing_oracles.py)."""
    s = acs.Scenario(
        name="gcp",
        workload=acs.TrainingRun(params=7e9, tokens=1e11),
        fleet=[acs.Pool(chip="h100-sxm", count=64, provider="gcp", pricing=pricing)],  # type: ignore[arg-type]
        assumptions=acs.Assumptions(mfu=0.4, price_change_per_year=0.0),
    )
    res = acs.simulate(s, runs=100, seed=2)
    rate = acs.catalog.price("h100-sxm", provider="gcp", pricing=pricing).usd_per_chip_hour
    assert rate is not None
    np.testing.assert_allclose(
        res.samples("hardware_cost_usd"), res.samples("chip_hours") * rate, rtol=1e-12
    )
