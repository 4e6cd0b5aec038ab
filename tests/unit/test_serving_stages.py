"""The serving pipeline's hours and windows over stages (``engines/serving/_stages.py``), and
the one drawn record of both layouts (issue 27: disaggregated prefill/decode is two stages
of the one pipeline)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import accelsim as acs
from accelsim import catalog
from accelsim.engines import _inputs as drawing
from accelsim.engines._inputs import InputDraws
from accelsim.engines.serving import _blocks_disagg, _disagg
from accelsim.engines.serving._disagg import disaggregated_pools, disaggregated_stages
from accelsim.engines.serving._inputs import (
    Demand,
    demand_rps,
    draw_launch,
    draw_serving_inputs,
)
from accelsim.engines.serving._setup import (
    SECONDS_PER_HOUR,
    ServingSetup,
    build_replica,
    draw_replica_inputs,
    serving_setup,
)
from accelsim.engines.serving._stages import (
    Stage,
    hour_totals,
    usage_from_totals,
)
from accelsim.engines.serving._usage import LOAD_NODES, replicas_per_hour

CAT = catalog.builtin_catalog()


def _scenario(hours: float = 1.0, **extra: object) -> acs.Scenario:
    svc = acs.Serving(
        model="llama-3.1-8b", precision="fp8", rate_rps=10.0, input_tokens=1000,
        output_tokens=100, slo=acs.SLO(ttft_ms=2000, tpot_ms=100), chips_per_replica=1,
        horizon_days=hours / 24, **extra,
    )  # fmt: skip
    return acs.Scenario(
        name="stages", workload=svc, fleet=[acs.Pool(chip="h100-sxm", count=2, provider="aws")]
    )


def _stage(
    setup: ServingSetup, runs: int, sat: float, slo: float, columns: dict[str, float]
) -> Stage:
    """A synthetic stage: every run's replica saturates at ``sat`` [1/s], meets the SLO up
    to ``slo`` of it, and its latency columns are flat at the given values [s]."""
    draws = InputDraws(np.random.SeedSequence(0), 0, runs)
    replica = build_replica(setup, draw_replica_inputs(setup, draws, CAT.serving_priors))
    k = len(LOAD_NODES)
    return Stage(
        setup=setup,
        replica=replica,
        saturated_rps=np.full(runs, sat),
        slo_load=np.full(runs, slo),
        sustained_load=np.ones(runs),
        feasible=np.ones(runs, dtype=bool),
        latency={name: np.full((runs, k), v) for name, v in columns.items()},
    )


def _demand(rates: list[float], burst: list[float] | None = None) -> Demand:
    n = len(rates)
    return Demand(
        rate_rps=np.asarray(rates, dtype=float),
        growth_per_month=np.zeros(n),
        burstiness=np.asarray(burst if burst is not None else [1.0] * n, dtype=float),
    )


def _owning(stage: Stage, prefix: str) -> dict[str, np.ndarray]:
    """``stage``'s latency columns of one metric (``ttft`` or ``tpot``)."""
    return {k: v for k, v in stage.latency.items() if k.startswith(prefix)}


TTFT = {"ttft_p50_s": 0.1, "ttft_p99_s": 0.3}
TPOT = {"tpot_p50_s": 0.02, "tpot_p99_s": 0.05}


def test_a_window_is_served_up_to_the_least_stage_and_complies_only_within_every_slo() -> None:
    """One hour, two replicas per stage, Poisson windows: run 0 loads prefill to 0.25 and
    decode to 0.5 of their saturated rates (all served, compliant: both within 0.6); run 1
    to 1.0 and 2.0 (decode limits: half served; decode beyond its SLO: none compliant)."""
    setup = serving_setup(_scenario(), CAT)
    pre = _stage(setup, 2, 10.0, 0.6, TTFT)
    dec = _stage(setup, 2, 5.0, 0.6, TPOT)
    profile = demand_rps(setup, np.ones(1), np.zeros(1), np.zeros(1))[0, 0]
    rates = [5.0 / profile, 20.0 / profile]  # 5 and 20 requests/s in hour 0
    totals = hour_totals(setup, _demand(rates), (pre, dec))
    requests = np.array([5.0, 20.0]) * SECONDS_PER_HOUR
    np.testing.assert_allclose(totals.demand_requests, requests, rtol=1e-12)
    np.testing.assert_allclose(totals.served_requests, [requests[0], requests[1] / 2], rtol=1e-12)
    np.testing.assert_allclose(totals.compliant_requests, [requests[0], 0.0], rtol=1e-12)
    np.testing.assert_array_equal(totals.stage_hours[0], [2.0, 2.0])
    np.testing.assert_array_equal(totals.replicas_peak, [4.0, 4.0])
    usage = usage_from_totals((pre, dec), totals)
    # each latency column from the stage owning it
    np.testing.assert_allclose(usage.ttft_p99_s, 0.3, rtol=1e-12)
    np.testing.assert_allclose(usage.tpot_p50_s, 0.02, rtol=1e-12)
    assert not usage.finished[1]
    assert usage.finished[0]


def test_two_identical_stages_serve_as_one_over_hours_bursts_and_cold_starts() -> None:
    """A layout of two copies of one stage windows exactly as that stage alone: the same
    served, compliant and demanded requests and latency weights; twice the replicas."""
    setup = serving_setup(
        _scenario(hours=30.0, scaling="follow_demand", cold_start_minutes=10.0), CAT
    )
    runs = 24
    rng = np.random.default_rng(5)
    demand = _demand(list(rng.uniform(1.0, 60.0, runs)), list(rng.choice([1.0, 2.5], runs)))
    one = _stage(setup, runs, 12.0, 0.7, TTFT | TPOT)
    split = (
        dataclasses.replace(one, latency=_owning(one, "ttft")),
        dataclasses.replace(one, latency=_owning(one, "tpot")),
    )
    alone, both = hour_totals(setup, demand, (one,)), hour_totals(setup, demand, split)
    for name in ("demand_requests", "served_requests", "compliant_requests"):
        np.testing.assert_array_equal(getattr(both, name), getattr(alone, name), err_msg=name)
    np.testing.assert_array_equal(both.node_weights[1], alone.node_weights[0])
    np.testing.assert_array_equal(both.replica_hours, 2 * alone.replica_hours)
    np.testing.assert_array_equal(both.replicas_peak, 2 * alone.replicas_peak)
    assert (alone.served_requests < alone.demand_requests).any()  # some windows shed
    u1, u2 = usage_from_totals((one,), alone), usage_from_totals(split, both)
    for name in ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s"):
        np.testing.assert_array_equal(getattr(u2, name), getattr(u1, name), err_msg=name)


def test_a_scale_up_serves_its_cold_start_on_the_replicas_held_before() -> None:
    """Follow-demand, a 60-minute cold start (the whole hour): 6 then 12 requests/s; the
    decode stage (10/s per replica) scales 1 -> 2, the prefill stage (100/s) stays at 1.
    Hour 1 runs on the replicas held before: decode at 1.2 of its rate serves 1/1.2 of the
    hour and misses its SLO load; with no cold start it serves all and complies."""
    profile = np.ones(24)
    profile[1] = 2.0

    def totals(cold: float) -> object:
        work = {"scaling": "follow_demand", "cold_start_minutes": cold, "min_replicas": 1}
        setup = serving_setup(_scenario(hours=2.0, **work), CAT)
        setup = dataclasses.replace(setup, profile=profile)
        pre, dec = _stage(setup, 1, 100.0, 1.0, TTFT), _stage(setup, 1, 10.0, 1.0, TPOT)
        plan = replicas_per_hour(setup, np.array([[6.0, 12.0]]), np.array([10.0]))
        assert plan.tolist() == [[1.0, 2.0]]  # the premise: decode scales up in hour 1
        return hour_totals(setup, _demand([6.0]), (pre, dec))

    h = SECONDS_PER_HOUR
    cold, warm = totals(60.0), totals(0.0)
    for t in (cold, warm):
        np.testing.assert_allclose(t.demand_requests, [18.0 * h], rtol=1e-12)  # type: ignore[attr-defined]
        np.testing.assert_array_equal(t.stage_peaks[0], [1.0])  # type: ignore[attr-defined]
        np.testing.assert_array_equal(t.stage_peaks[1], [2.0])  # type: ignore[attr-defined]
    np.testing.assert_allclose(cold.served_requests, [6.0 * h + 12.0 * h / 1.2], rtol=1e-12)  # type: ignore[attr-defined]
    np.testing.assert_allclose(cold.compliant_requests, [6.0 * h], rtol=1e-12)  # type: ignore[attr-defined]
    np.testing.assert_allclose(warm.served_requests, [18.0 * h], rtol=1e-12)  # type: ignore[attr-defined]
    np.testing.assert_allclose(warm.compliant_requests, [18.0 * h], rtol=1e-12)  # type: ignore[attr-defined]


def _disaggregated() -> acs.Scenario:
    svc = acs.Serving(
        model="llama-3.1-8b", precision="fp8", rate_rps=acs.Uniform(low=4.0, high=10.0),
        input_tokens=acs.LogNormal(low=200, high=2000), output_tokens=100,
        slo=acs.SLO(ttft_ms=2000, tpot_ms=100), horizon_days=0.1 / 24,
        disaggregated=acs.Disaggregation(prefill_pool=0, decode_pool=1),
    )  # fmt: skip
    fleet = [
        acs.Pool(chip="h100-sxm", count=2, provider="aws"),
        acs.Pool(chip="tpu-v6e", count=8, provider="gcp"),
    ]
    return acs.Scenario(name="dis", workload=svc, fleet=fleet)


def test_the_disaggregated_record_holds_each_pools_draws_as_the_colocated_builders_draw_them() -> (
    None
):
    """One record per run for both layouts: each stage's replica inputs and launch are what
    the colocated builders draw on that pool; the stages are a pure function of it."""
    s = _disaggregated()
    draws = InputDraws(np.random.SeedSequence(11), 0, 16)
    base, pools = disaggregated_pools(s, CAT)
    record = draw_serving_inputs(base, s, draws, CAT, pools)
    assert [i for i, _ in pools] == [0, 1]
    for (index, setup), replica, launch in zip(
        pools, record.replicas, record.launches, strict=True
    ):
        alone = draw_replica_inputs(setup, draws, CAT.serving_priors)
        for f in dataclasses.fields(alone):
            np.testing.assert_array_equal(getattr(replica, f.name), getattr(alone, f.name))
        own = draw_launch(setup, s, draws, CAT.priors, index)
        np.testing.assert_array_equal(launch.launch_days, own.launch_days)
    # two software stacks: different porting draws per pool
    assert not np.array_equal(record.launches[0].porting_hours, record.launches[1].porting_hours)
    stages, _ = disaggregated_stages(base, pools, record)
    again, _ = disaggregated_stages(base, pools, record)
    np.testing.assert_array_equal(stages[0].slo_load, again[0].slo_load)
    assert set(stages[0].latency) == {"ttft_p50_s", "ttft_p99_s"}
    assert set(stages[1].latency) == {"tpot_p50_s", "tpot_p99_s"}


@pytest.mark.parametrize("engine", ["fast", "des"])
def test_a_disaggregated_run_draws_nothing_after_its_record(
    engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Draw once, then the physics: once the record is drawn, no input is drawn again (the
    fast path and the request DES alike)."""
    late: list[str] = []
    drawn = [False]
    real_get, real_draw = drawing.InputDraws.get, _disagg.draw_serving_inputs

    def get(self: InputDraws, name: str, *args: object, **kwargs: object) -> object:
        if drawn[0]:
            late.append(name)
        return real_get(self, name, *args, **kwargs)  # type: ignore[arg-type]

    def draw(*args: object, **kwargs: object) -> object:
        out = real_draw(*args, **kwargs)  # type: ignore[arg-type]
        drawn[0] = True
        return out

    monkeypatch.setattr(drawing.InputDraws, "get", get)
    monkeypatch.setattr(_disagg, "draw_serving_inputs", draw)
    monkeypatch.setattr(_blocks_disagg, "draw_serving_inputs", draw)
    s = _disaggregated()
    if engine == "fast":
        metrics, _ = _disagg.simulate_serving_disaggregated(
            s, np.random.SeedSequence(3), 0, 4, cat=CAT
        )
    else:
        metrics, _ = _blocks_disagg.simulate_disaggregated_block(
            s, np.random.SeedSequence(3), 0, 2, cat=CAT
        )
    assert drawn[0]
    assert late == []
    assert np.isfinite(metrics["usd_per_million_output_tokens"]).all()


@pytest.mark.parametrize(("decode_chip", "stacks"), [("h200", 1), ("tpu-v6e", 2)])
def test_the_pools_port_once_per_software_stack_and_launch_with_the_latest(
    decode_chip: str, stacks: int
) -> None:
    """The pricing step over the stages' pools: engineering hours are one port per software
    stack (H100 + H200: CUDA once; H100 + TPU v6e: CUDA and XLA), the launch is the later
    of the two pools' (each the longer of its lead time and its port)."""
    s = _disaggregated()
    pools = [s.fleet[0], s.fleet[1].model_copy(update={"chip": decode_chip})]
    s = s.model_copy(update={"fleet": pools})
    root = np.random.SeedSequence(8)
    metrics, _ = _disagg.simulate_serving_disaggregated(s, root, 0, 32, cat=CAT)
    base, pools_ = disaggregated_pools(s, CAT)
    record = draw_serving_inputs(base, s, InputDraws(root, 0, 32), CAT, pools_)
    first, second = record.launches
    ports = first.porting_hours + (second.porting_hours if stacks == 2 else 0.0)
    np.testing.assert_array_equal(metrics["engineering_hours"], ports)
    later = np.maximum(first.launch_days, second.launch_days)
    np.testing.assert_array_equal(metrics["launch_days"], later)
    # the decode pool's launch is the later one here (a longer lead time, and for TPU a
    # port): the first pool's alone would not do
    assert (metrics["launch_days"] > first.launch_days).all()
    assert stacks == 1 or (second.porting_hours > 0.0).all()
