"""Near saturation the model's decode point can dip (a prompt's interference falls as the
averaged fixed point's batch grows beyond ~0.9 of ``λ_sat``): the latency table keeps the
highest latency of any lighter load, and ``serving_capacity`` stops at the first failing
load, as ``simulate`` does. Llama 3.1 8B FP8 on one H100, 2,000/200 tokens, TPOT bound 100
ms: before, the fast path's TPOT p99 fell from 158 ms at 0.87 of ``λ_sat`` to 26 ms at 0.99,
and ``serving_capacity`` reported the whole saturated rate as meeting the SLO while
``simulate`` had attainment 0 from 0.78 of it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import accelsim as acs
from accelsim import catalog
from accelsim.engines import InputPlan
from accelsim.engines.serving._setup import draw_replica, serving_setup
from accelsim.engines.serving._usage import latency_table

CAT = catalog.builtin_catalog()


def _scenario(rate: float = 1.0, **changes: Any) -> acs.Scenario:
    svc = acs.Serving(
        model="llama-3.1-8b", precision="fp8", rate_rps=rate, input_tokens=2000,
        output_tokens=200, slo=acs.SLO(ttft_ms=2000, tpot_ms=100), chips_per_replica=1,
        horizon_days=0.05, **changes,
    )  # fmt: skip
    return acs.Scenario(
        name="near-saturation",
        workload=svc,
        fleet=[acs.Pool(chip="h100-sxm", count=1, provider=None)],
    )


@pytest.mark.parametrize("changes", [{}, {"prefill_chunk_tokens": 0}, {"max_batch": 64}])
def test_the_latency_table_never_falls_as_the_load_rises(changes: dict[str, Any]) -> None:
    s = _scenario(**changes)
    setup = serving_setup(s, CAT)
    draws = InputPlan(np.random.SeedSequence(3)).draws(0, 64)
    table = latency_table(setup, draw_replica(setup, draws, CAT.serving_priors))
    for values in (table.ttft_p50_s, table.ttft_p99_s, table.tpot_p50_s, table.tpot_p99_s):
        assert (np.diff(values, axis=1) >= 0.0).all()


def test_serving_capacity_stops_where_simulate_first_misses_the_slo() -> None:
    cap = acs.serving_capacity(_scenario(), runs=1, seed=1)
    saturated = cap.quantile("offline_rps_per_replica", 0.5)
    share = cap.quantile("slo_rps_per_replica", 0.5) / saturated
    assert share < 0.9  # it was 1.0 (the dip met the bound again near saturation)
    # simulate meets the SLO below that share and misses it above
    below = acs.simulate(_scenario(0.9 * share * saturated), runs=1, seed=1)
    above = acs.simulate(_scenario(min(1.1 * share, 0.99) * saturated), runs=1, seed=1)
    assert below.quantile("slo_attainment", 0.5) == 1.0
    assert above.quantile("slo_attainment", 0.5) == 0.0


def test_high_load_tpot_agrees_with_the_des() -> None:
    """At 0.95 of ``λ_sat`` the fast path read 33-70 ms TPOT p50 off the dip where the
    request DES has ~135 ms; with the running maximum, within 15 % (measured 0.92)."""
    cap = acs.serving_capacity(_scenario(), runs=1, seed=1)
    s = _scenario(0.95 * cap.quantile("offline_rps_per_replica", 0.5))
    fast = acs.simulate(s, runs=1, seed=1).quantile("tpot_p50_ms", 0.5)
    des = acs.simulate(s, runs=1, seed=1, engine="des").quantile("tpot_p50_ms", 0.5)
    assert fast / des == pytest.approx(1.0, abs=0.15)
