"""The request DES's metrics at the edges a user reaches: one-token outputs, a replica that
cannot hold a sequence, long outputs still decoding at the horizon, and the energy prior the
serving engines draw (found by looking at runs as a user; each failed before its fix)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import accelsim as acs


def _scenario(**changes: Any) -> acs.Scenario:
    fields: dict[str, Any] = {
        "model": "llama-3.1-8b",
        "precision": "fp8",
        "rate_rps": 2.0,
        "input_tokens": 2000,
        "output_tokens": 1,
        "slo": acs.SLO(ttft_ms=2000, tpot_ms=100),
        "chips_per_replica": 1,
        "horizon_days": 0.01,
    }
    pool: dict[str, Any] = {"chip": "h100-sxm", "count": 1, "provider": None}
    pool |= changes.pop("pool", {})
    fields |= changes
    return acs.Scenario(name="des", workload=acs.Serving(**fields), fleet=[acs.Pool(**pool)])


def _split(**changes: Any) -> acs.Scenario:
    """Llama 3.1 8B FP8 on one H100 prefill and one H100 decode replica (2-chip pools)."""
    fields: dict[str, Any] = {
        "model": "llama-3.1-8b",
        "precision": "fp8",
        "rate_rps": 2.0,
        "input_tokens": 500,
        "output_tokens": 50,
        "slo": acs.SLO(ttft_ms=2000, tpot_ms=100),
        "horizon_days": 0.1 / 24,
        "disaggregated": acs.Disaggregation(
            prefill_chips_per_replica=1, decode_chips_per_replica=1
        ),
    }
    pool = acs.Pool(chip="h100-sxm", count=2, provider=None)
    return acs.Scenario(name="split", workload=acs.Serving(**fields | changes), fleet=[pool] * 2)


def test_one_token_outputs_report_their_first_token_time() -> None:
    """Every request ends at its first token: TTFT is its prefill (it read 0, the windows'
    TTFT being averaged only where some request had a token gap); TPOT has no gap to time."""
    s = _scenario()
    des = acs.simulate(s, runs=4, seed=1, engine="des")
    fast = acs.simulate(s, runs=4, seed=1)
    ttft = des.samples("ttft_p50_ms")
    assert (ttft > 0.0).all()
    # the 2,000-token prefill of an 8B FP8 model on one H100 (~25-50 ms): the DES against
    # the fast path, run by run (same draws), within the agreement tests' spread
    np.testing.assert_allclose(ttft, fast.samples("ttft_p50_ms"), rtol=0.35)
    for res in (des, fast):
        np.testing.assert_array_equal(res.samples("tpot_p50_ms"), 0.0)
        np.testing.assert_array_equal(res.samples("tpot_p99_ms"), 0.0)


def test_an_infeasible_replica_is_paid_for_the_horizon_only() -> None:
    """A replica that holds no sequence serves nothing but is provisioned: over 0.48 h, 8
    replicas are 3.84 chip-hours, as on the fast path (the whole last hour was billed)."""
    s = _scenario(
        kv_share=1e-6,
        output_tokens=100,
        rate_rps=5.0,
        horizon_days=0.02,
        pool={"count": 8, "provider": "aws"},
    )
    des = acs.simulate(s, runs=3, seed=1, engine="des")
    fast = acs.simulate(s, runs=3, seed=1)
    np.testing.assert_array_equal(des.samples("finished"), 0.0)
    np.testing.assert_allclose(des.samples("chip_hours"), 8 * 0.48, rtol=1e-12)
    np.testing.assert_allclose(des.samples("chip_hours"), fast.samples("chip_hours"), rtol=1e-12)
    np.testing.assert_allclose(des.samples("replicas_mean"), 8.0, rtol=1e-12)


def test_the_disaggregated_des_pays_an_infeasible_fleet_for_the_horizon_only() -> None:
    s = _split(kv_share=1e-6)
    des = acs.simulate(s, runs=2, seed=1, engine="des")
    np.testing.assert_allclose(des.samples("chip_hours"), 4 * 0.1, rtol=1e-9)


def test_long_outputs_still_decoding_at_the_horizon_are_served_not_dropped() -> None:
    """40,000-token outputs at 0.004 requests/s: the replica is mostly idle, so every run
    finishes (requests decoding at the horizon had their first token long before)."""
    s = _scenario(rate_rps=0.004, input_tokens=1000, output_tokens=40_000)
    des = acs.simulate(s, runs=4, seed=1, engine="des")
    assert (des.samples("utilization") < 0.5).all()
    np.testing.assert_array_equal(des.samples("finished"), 1.0)
    # and none counts as dropped (the token shortfall over the mean output read ~1 each)
    np.testing.assert_array_equal(des.samples("requests_dropped"), 0.0)


def test_requests_dropped_counts_requests_not_tokens_at_light_load() -> None:
    """At 20 % load every request gets its first token; those still decoding at the
    horizon were counted "dropped" as the token shortfall over the mean output (dozens per
    run); now none is, while the per-token measure still counts only the tokens emitted."""
    s = _scenario(rate_rps=5.0, input_tokens=500, output_tokens=400, horizon_days=0.5 / 24)
    des = acs.simulate(s, runs=3, seed=1, engine="des")
    np.testing.assert_array_equal(des.samples("requests_dropped"), 0.0)
    np.testing.assert_array_equal(des.samples("finished"), 1.0)
    tokens, demand = des.samples("output_tokens"), 5.0 * 1800
    assert (tokens < 400 * demand * 1.1).all()  # Poisson noise: sd ~1 %


def test_an_overloaded_des_replica_is_still_unfinished() -> None:
    """The counterpart: twice the saturated rate leaves requests queued without a first
    token, so the run is not finished."""
    s = _scenario(rate_rps=200.0, output_tokens=200)
    des = acs.simulate(s, runs=2, seed=1, engine="des")
    np.testing.assert_array_equal(des.samples("finished"), 0.0)
    # the requests left without a first token are dropped: most of the second half
    dropped, demand = des.samples("requests_dropped"), 200.0 * 0.01 * 86_400
    assert (dropped > 0.2 * demand).all()
    assert (dropped < demand).all()


def test_serving_energy_draws_the_serving_prior_under_its_own_name() -> None:
    """Serving chips draw ``priors.serving.power_fraction_of_tdp`` (triangular 0.5-0.9), so
    the report lists that prior and its sources, not training's (PERT 0.6-0.95)."""
    s = _scenario(output_tokens=100, pool={"provider": "aws"})
    res = acs.simulate(s, runs=500, seed=2)
    draw = res.inputs["priors.serving.power_fraction_of_tdp"]
    assert "priors.power_fraction_of_tdp" not in res.inputs
    assert draw.min() >= 0.5
    assert draw.max() <= 0.9
    assert draw.min() < 0.6  # outside training's support: the serving prior was drawn


def test_one_token_outputs_have_no_tpot_on_disaggregated_pools_either() -> None:
    """The disaggregated fast path gave them the decode iteration (8 ms against a 3 ms
    bound: attainment 0 where the DES has 1)."""
    s = _split(output_tokens=1, slo=acs.SLO(ttft_ms=2000, tpot_ms=3))
    for res in (acs.simulate(s, runs=2, seed=1), acs.simulate(s, runs=2, seed=1, engine="des")):
        np.testing.assert_array_equal(res.samples("tpot_p99_ms"), 0.0)
        np.testing.assert_array_equal(res.samples("slo_attainment"), 1.0)


def test_disaggregated_pools_count_dropped_requests_the_same_way() -> None:
    """Light load on split pools: nothing dropped (long outputs still decoding at the
    horizon counted as a token shortfall before); the fast path sheds nothing either."""
    s = _split(output_tokens=2000, horizon_days=0.25 / 24)
    for res in (acs.simulate(s, runs=2, seed=1), acs.simulate(s, runs=2, seed=1, engine="des")):
        np.testing.assert_array_equal(res.samples("requests_dropped"), 0.0)
        np.testing.assert_array_equal(res.samples("finished"), 1.0)


def test_a_study_over_the_des_event_budget_names_the_knobs_a_study_has() -> None:
    """``simulate(engine="des")`` cannot raise the DES function's ``max_events``: its error
    names the horizon and the fast path instead (it advised raising max_events)."""
    from accelsim import catalog
    from accelsim.engines.serving._blocks import simulate_serving_block
    from accelsim.engines.serving.des import EventBudgetError

    for s in (_scenario(output_tokens=50), _split(horizon_days=0.01)):
        # ~1,728 requests expected: under 2,500 events, the DES starts and stops in play;
        # under 50, the run is refused before any arrival is drawn (no DES error behind it)
        for budget, cause in ((2_500, EventBudgetError), (50, type(None))):
            with pytest.raises(RuntimeError, match="engine='analytic'") as caught:
                simulate_serving_block(
                    s, np.random.SeedSequence(1), 0, 1, cat=catalog.builtin_catalog(),
                    max_events=budget,
                )  # fmt: skip
            assert "raise max_events" not in str(caught.value)
            assert isinstance(caught.value.__cause__, cause)
