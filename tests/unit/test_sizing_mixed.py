"""size_fleet over a mix of workloads (issue 17): the pool-count sweep prices the whole
fleet, its TCO the fleet's (hardware + energy + engineering + the cost of waiting)."""

from __future__ import annotations

import numpy as np
import pytest

import accelsim as acs
from accelsim.engines import OverloadWarning

HOURS = 3 * 24.0
LLM = acs.TrainingRun(params=1e9, tokens=2e10, chips=32, name="llm")
RESEARCH = acs.JobStream(
    interarrival_hours=acs.Exponential(mean=0.25),
    chips=acs.Choice(values=[1, 4, 8]),
    duration_hours=acs.LogNormal(low=1.0, high=6.0),
)


def org(wait_usd: float) -> acs.Scenario:
    return acs.Scenario(
        name="org",
        workloads=[LLM, RESEARCH],
        horizon_days=3,
        fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")],
        scheduler="priority_preemptive",
        assumptions=acs.Assumptions(  # type: ignore[call-arg]
            wait_usd_per_job_hour=wait_usd, price_change_per_year=0.0
        ),
    )


def test_size_fleet_over_a_mix_trades_hardware_against_waiting() -> None:
    counts = [32, 64, 128]
    with pytest.warns(OverloadWarning, match="research"):  # 32 chips cannot keep up
        sizing = acs.size_fleet(org(50.0), counts=counts, runs=4, seed=1)
    price = acs.catalog.price("h100-sxm", provider="aws", pricing="on_demand").usd_per_chip_hour
    means = []
    for count, res in zip(counts, sizing.sweep.results, strict=True):
        # the fleet's TCO, line by line; hardware is every chip held the whole horizon
        parts = sum(
            res.samples(m) for m in ("hardware_cost_usd", "energy_cost_usd", "engineering_cost_usd")
        )
        np.testing.assert_allclose(res.samples("tco_usd"), parts + res.samples("wait_cost_usd"))
        np.testing.assert_allclose(res.samples("hardware_cost_usd"), count * HOURS * price)
        means.append(res.mean("tco_usd"))
    assert sizing.best_count == counts[int(np.argmin(means))]
    assert sizing.mean_tco_usd == tuple(means)
    assert sum(sizing.prob_cheapest) == pytest.approx(1.0)
    # waiting falls as the fleet grows (paired runs): the smallest fleet is not the answer
    waits = [r.mean("wait_cost_usd") for r in sizing.sweep.results]
    assert waits[0] > waits[1] >= waits[2]
    assert sizing.best_count != 32
    table = sizing.table()
    assert "mean wait research" in table
    assert "mean wait cost" in table


def test_without_a_price_of_waiting_the_smallest_mix_is_cheapest() -> None:
    with pytest.warns(OverloadWarning):
        sizing = acs.size_fleet(org(0.0), counts=[32, 64], runs=2, seed=1)
    assert sizing.best_count == 32
    assert "Waiting is free here" in sizing.table()


def test_a_count_below_a_training_runs_chips_is_an_error_before_any_run() -> None:
    with pytest.raises(ValueError, match=r"workloads\[0\].chips=32 exceeds"):
        acs.size_fleet(org(50.0), counts=[16, 64], runs=2, seed=1)
