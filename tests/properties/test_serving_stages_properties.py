"""Hypothesis invariants of the serving pipeline's windows over stages
(``engines/serving/_stages.py``): a stage added to a layout never serves or complies more."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import accelsim as acs
from accelsim import catalog
from accelsim.engines._inputs import InputDraws
from accelsim.engines.serving._inputs import Demand
from accelsim.engines.serving._setup import (
    ServingSetup,
    build_replica,
    draw_replica_inputs,
    serving_setup,
)
from accelsim.engines.serving._stages import Stage, hour_totals
from accelsim.engines.serving._usage import LOAD_NODES

CAT = catalog.builtin_catalog()
RUNS = 6


def _setup(scaling: str, cold: float) -> ServingSetup:
    svc = acs.Serving(
        model="llama-3.1-8b", precision="fp8", rate_rps=10.0, input_tokens=1000,
        output_tokens=100, slo=acs.SLO(ttft_ms=2000, tpot_ms=100), chips_per_replica=1,
        horizon_days=1.5, scaling=scaling,
        **({"cold_start_minutes": cold, "min_replicas": 1} if scaling != "fixed" else {}),
    )  # fmt: skip
    pool = acs.Pool(chip="h100-sxm", count=4, provider="aws")
    return serving_setup(acs.Scenario(name="p", workload=svc, fleet=[pool]), CAT)


SETUPS = {
    (s, c): _setup(s, c)
    for s, c in [("fixed", 0.0), ("follow_demand", 0.0), ("follow_demand", 20.0)]
}
REPLICA = build_replica(
    SETUPS["fixed", 0.0],
    draw_replica_inputs(
        SETUPS["fixed", 0.0],
        InputDraws(np.random.SeedSequence(0), 0, RUNS),
        CAT.serving_priors,
    ),
)
loads = st.floats(0.0, 1.0)
stage_params = st.tuples(st.floats(0.5, 50.0), loads, st.floats(0.05, 1.0))


def _stage(setup: ServingSetup, sat: float, slo: float, sustained: float) -> Stage:
    return Stage(
        setup=setup,
        replica=REPLICA,
        saturated_rps=np.full(RUNS, sat),
        slo_load=np.full(RUNS, min(slo, sustained)),
        sustained_load=np.full(RUNS, sustained),
        feasible=np.ones(RUNS, dtype=bool),
        latency={"ttft_p50_s": np.tile(LOAD_NODES, (RUNS, 1))},
    )


@settings(max_examples=40, deadline=None)
@given(
    stage_params,
    stage_params,
    st.sampled_from(sorted(SETUPS)),
    st.lists(st.floats(0.1, 200.0), min_size=RUNS, max_size=RUNS),
    st.lists(st.sampled_from([1.0, 1.5, 4.0]), min_size=RUNS, max_size=RUNS),
)
def test_a_second_stage_never_serves_or_complies_more(
    a: tuple[float, float, float],
    b: tuple[float, float, float],
    key: tuple[str, float],
    rates: list[float],
    bursts: list[float],
) -> None:
    """Served and compliant requests of a two-stage layout are at most either stage's alone
    (its served share is the least of theirs, its windows comply only where both do);
    demand is the same; compliant never exceeds served (the SLO load is within the
    sustained one); nothing is negative or infinite."""
    setup = SETUPS[key]
    demand = Demand(
        rate_rps=np.asarray(rates),
        growth_per_month=np.zeros(RUNS),
        burstiness=np.asarray(bursts),
    )
    first, second = _stage(setup, *a), _stage(setup, *b)
    second = dataclasses.replace(second, latency={"tpot_p50_s": second.latency["ttft_p50_s"]})
    both = hour_totals(setup, demand, (first, second))
    for alone in (hour_totals(setup, demand, (s,)) for s in (first, second)):
        np.testing.assert_array_equal(both.demand_requests, alone.demand_requests)
        assert (both.served_requests <= alone.served_requests).all()
        assert (both.compliant_requests <= alone.compliant_requests).all()
    assert (both.compliant_requests <= both.served_requests * (1 + 1e-12)).all()
    assert (both.served_requests <= both.demand_requests * (1 + 1e-12)).all()
    for v in (both.served_requests, both.compliant_requests, both.replica_hours):
        assert np.isfinite(v).all()
        assert (v >= 0.0).all()
