"""Chargeback of a mix pool by pool (issue 17): each pool's hardware and energy goes to the
workloads that held its chips, at that pool's own price, idle chip-hours included.

The closed forms: a cloud pool on demand costs chips x hours x its price per chip-hour
(energy is in the rent), so a workload alone on a pool pays exactly that.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import accelsim as acs
from accelsim.engines.cluster._mixed_parts import chargeback

DAYS = 3
HOURS = 24.0 * DAYS


def two_pools(workloads: list[object]) -> acs.Scenario:
    """A cheap TPU pool first (the training run's), a dearer H100 pool second."""
    return acs.Scenario(
        name="two-pools",
        fleet=[
            acs.Pool(chip="tpu-v5p", count=8, provider="gcp"),
            acs.Pool(chip="h100-sxm", count=8, provider="aws"),
        ],
        workloads=workloads,  # type: ignore[arg-type]
        horizon_days=DAYS,
        scheduler="priority_preemptive",
        # fixed prices: the closed forms are chips x hours x the offer's price
        assumptions=acs.Assumptions(price_change_per_year=0.0),  # type: ignore[call-arg]
    )


LLM = acs.TrainingRun(params=1e9, tokens=5e10, chips=8, framework="jax", name="llm")
GPU = acs.JobStream(  # pytorch: the H100 pool only
    interarrival_hours=acs.Exponential(mean=1.0),
    chips=acs.Choice(values=[1, 2, 4]),
    duration_hours=acs.LogNormal(low=1.0, high=6.0),
    name="gpu",
)
LAB = acs.JobStream(  # jax: both pools
    interarrival_hours=acs.Exponential(mean=2.0),
    chips=acs.Choice(values=[1, 2]),
    duration_hours=acs.LogNormal(low=1.0, high=4.0),
    framework="jax",
    name="lab",
)


def price(chip: str, provider: str) -> float:
    return acs.catalog.price(chip, provider=provider, pricing="on_demand").usd_per_chip_hour


def test_a_workload_alone_on_the_cheap_pool_pays_that_pools_price() -> None:
    res = acs.simulate(two_pools([LLM, GPU]), runs=3, seed=2, progress=False)
    tpu, h100 = 8 * HOURS * price("tpu-v5p", "gcp"), 8 * HOURS * price("h100-sxm", "aws")
    assert (res.samples("chip_hours.llm") > 0).all()
    assert (res.samples("chip_hours.gpu") > 0).all()
    np.testing.assert_allclose(res.samples("chargeback_usd.llm"), tpu, rtol=1e-9)
    np.testing.assert_allclose(res.samples("chargeback_usd.gpu"), h100, rtol=1e-9)
    # the fleet's mean price per chip-hour would have charged llm otherwise
    mean_rule = (tpu + h100) * res.samples("chip_hours.llm") / res.samples("chip_hours")
    assert not np.allclose(res.samples("chargeback_usd.llm"), mean_rule, rtol=1e-3)


def test_chargebacks_with_a_shared_pool_sum_to_the_fleets_hardware_and_energy() -> None:
    res = acs.simulate(two_pools([LLM, GPU, LAB]), runs=3, seed=4, progress=False)
    names = ("llm", "gpu", "lab")
    total = sum(res.samples(f"chargeback_usd.{n}") for n in names)
    fleet = res.samples("hardware_cost_usd") + res.samples("energy_cost_usd")
    np.testing.assert_allclose(total, fleet, rtol=1e-9)
    np.testing.assert_array_equal(res.samples("unattributed_usd"), 0.0)
    assert (res.samples("chargeback_usd.lab") > 0).all()
    # llm never touches the H100 pool: it pays at most the TPU pool
    tpu = 8 * HOURS * price("tpu-v5p", "gcp")
    assert (res.samples("chargeback_usd.llm") <= tpu * (1 + 1e-9)).all()


def test_one_pool_charges_the_mean_price_as_before() -> None:
    cost = [np.array([100.0, 50.0])]
    held = {"a": [np.array([3.0, 0.0])], "b": [np.array([1.0, 0.0])]}
    out = chargeback(cost, held)
    np.testing.assert_allclose(out["a"], [75.0, 0.0])
    np.testing.assert_allclose(out["b"], [25.0, 0.0])  # nothing ran in run 2: no one pays


def test_an_unused_pool_is_spread_over_the_fleets_users() -> None:
    cost = [np.array([10.0]), np.array([30.0])]
    held = {"a": [np.array([1.0]), np.array([0.0])], "b": [np.array([3.0]), np.array([0.0])]}
    out = chargeback(cost, held)
    np.testing.assert_allclose(out["a"], [2.5 + 7.5])
    np.testing.assert_allclose(out["b"], [7.5 + 22.5])


hours = hnp.arrays(
    float, (3,), elements=st.one_of(st.just(0.0), st.floats(1e-6, 1e6, allow_subnormal=False))
)


@settings(max_examples=200, deadline=None)
@given(
    pools=st.integers(1, 3),
    data=st.data(),
)
def test_chargebacks_add_up_to_the_pools_and_teams_to_their_workload(
    pools: int, data: st.DataObject
) -> None:
    cost = [data.draw(hnp.arrays(float, (3,), elements=st.floats(0.0, 1e9))) for _ in range(pools)]
    held = {w: [data.draw(hours) for _ in range(pools)] for w in ("a", "b", "c")}
    split = data.draw(st.floats(0.0, 1.0))
    teams = {"a.x": [h * split for h in held["a"]], "a.y": [h * (1 - split) for h in held["a"]]}
    out = chargeback(cost, held, teams)
    ran = sum(sum(h) for h in held.values()) > 0
    total = out["a"] + out["b"] + out["c"]
    expected = np.where(ran, sum(cost), 0.0)
    np.testing.assert_allclose(total, expected, rtol=1e-9, atol=1e-6)
    np.testing.assert_allclose(out["a.x"] + out["a.y"], out["a"], rtol=1e-9, atol=1e-6)
    for value in out.values():
        assert np.isfinite(value).all()
        assert (value >= 0).all()
    # a workload on no pool pays nothing
    for w, hs in held.items():
        if all((h == 0).all() for h in hs):
            np.testing.assert_array_equal(out[w], 0.0)


def test_holdings_count_chip_hours_per_pool() -> None:
    from accelsim.engines.cluster.des import Holdings

    h = Holdings(lambda job: job % 2, 2, pools=2)
    h.start(0, 4, 0.0, 1)
    h.start(1, 2, 1.0, 0)
    h.stop(0, 3.0)
    h.start(2, 1, 3.0, 0)
    h.close(5.0)
    assert h.pool_chip_hours == [[2.0, 12.0], [8.0, 0.0]]
    assert h.chip_hours == [14.0, 8.0]
    with pytest.raises(KeyError):
        h.stop(7, 6.0)
