"""The request DES of disaggregated prefill and decode pools (issue 13): hand-computed
traces, conservation over random streams and plans, bad inputs, and the study path."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import accelsim as acs
from accelsim.engines.serving.des import (
    DisaggregatedTrace,
    ReplicaModel,
    ReplicaPlan,
    RequestStream,
    simulate_serving,
    simulate_serving_disaggregated,
)
from accelsim.models.serving import (
    IterationCost,
    iteration_cost,
    iteration_seconds,
    kv_transfer_seconds,
    prefill_seconds,
)

H = 3600.0
# Iterations of tens of seconds (the oracle test's coefficients), so requests overlap in hours.
_SLOW = IterationCost(*(np.array(v) for v in (1e-12, 1e-9, 2e9, 1e7, 2e10, 1.0, 1e6, 0.05, 20.0)))


def _cost() -> IterationCost:
    return iteration_cost(
        active_params=8e9, total_params=8e9, layers=32, d_model=4096, weight_bytes=16e9,
        kv_bytes_per_token=131072.0, chips=1, peak_tflops=989, hbm_tbps=3.35,
        interconnect_gbps=900, efficiency=0.5, overhead_seconds=0.005,
    )  # fmt: skip


def _f(cost: IterationCost, d: float, p: float, kv: float, ctx: float = 0.0) -> float:
    return float(iteration_seconds(cost, d, p, kv, ctx))


def _stream(arrivals: list[float], inputs: list[int], outputs: list[int]) -> RequestStream:
    return RequestStream(
        np.asarray(arrivals, dtype=float),
        np.asarray(inputs, dtype=np.int64),
        np.asarray(outputs, dtype=np.int64),
    )


def _run(
    stream: RequestStream,
    transfer: list[float] | np.ndarray,
    *,
    cost: IterationCost | None = None,
    capacity: tuple[float, float] = (1e6, 1e6),
    batch: tuple[int, int] = (8, 8),
    plans: tuple[list[int], list[int]] = ([1], [1]),
    cold: float = 0.0,
    horizon: float = 1.0,
) -> DisaggregatedTrace:
    c = cost or _cost()
    return simulate_serving_disaggregated(
        ReplicaModel(c, capacity[0], batch[0], 0),
        ReplicaModel(c, capacity[1], batch[1], 0, decode_only=True),
        stream,
        np.asarray(transfer, dtype=float),
        (
            ReplicaPlan(np.asarray(plans[0], dtype=np.int64), cold),
            ReplicaPlan(np.asarray(plans[1], dtype=np.int64), cold),
        ),
        horizon,
    )


def test_one_request_prefill_transfer_then_decode_hand_computed() -> None:
    """TTFT = its prefill iteration + the transfer; then one decode iteration per token,
    the first over its prompt and first token (KV 101), on the decode replica."""
    cost = _cost()
    out = _run(_stream([0.0], [100], [3]), [0.002], cost=cost)
    prefill = float(prefill_seconds(cost, 100))
    assert prefill == _f(cost, 0, 100, 0, 50.0)
    decodes = [_f(cost, 1, 0, 101), _f(cost, 1, 0, 102)]
    t = out.trace
    assert t.completed.tolist() == [True]
    assert t.ttft_s[0] == pytest.approx(prefill + 0.002, rel=1e-9)
    assert t.tpot_s[0] == pytest.approx(sum(decodes) / 2, rel=1e-9)
    assert t.e2e_s[0] == pytest.approx(prefill + 0.002 + sum(decodes), rel=1e-9)
    assert out.prefill.busy_replica_hours * H == pytest.approx(prefill, rel=1e-9)
    assert out.decode.busy_replica_hours * H == pytest.approx(sum(decodes), rel=1e-9)
    assert out.prefill.iterations == 1
    assert out.decode.iterations == 2
    assert t.iterations == 3
    assert t.tokens_generated.tolist() == [3]
    assert t.output_tokens_total == 3
    assert t.replica_hours == pytest.approx(2.0)
    assert t.replicas_peak == 2


def test_prefill_batches_waiting_prompts_whole_and_decodes_nothing() -> None:
    """Three prompts at t = 0 on a prefill replica of batch 2: the first two in one
    iteration (600 tokens, each attending to half its own prompt), the third after."""
    cost = _cost()
    out = _run(_stream([0.0, 0.0, 0.0], [200, 400, 300], [1, 1, 1]), [0.0] * 3, batch=(2, 8))
    both = _f(cost, 0, 600, 0, (200 * 100 + 400 * 200) / 600)
    third = _f(cost, 0, 300, 0, 150.0)
    np.testing.assert_allclose(out.trace.ttft_s, [both, both, both + third], rtol=1e-9)
    # one-token requests complete at their first token and never reach the decode pool
    assert out.trace.completed.all()
    assert not out.decode.completed.any()
    assert out.decode.iterations == 0
    assert out.prefill.iterations == 2


def test_a_one_token_request_completes_when_its_cache_would_arrive() -> None:
    out = _run(_stream([0.0], [100], [1]), [0.5])
    assert out.trace.e2e_s[0] == pytest.approx(out.trace.ttft_s[0], rel=1e-12)
    assert out.trace.tpot_s[0] == 0.0


def test_decode_admission_reserves_the_full_context() -> None:
    """Decode capacity 600 tokens, two requests of 300 + 50: the second waits for the first
    to complete on the decode replica (its TPOT includes the wait), never preempting it."""
    cost = _cost()
    out = _run(_stream([0.0, 0.0], [300, 300], [50, 50]), [0.0, 0.0], capacity=(1e6, 600.0))
    t, d = out.trace, out.decode
    assert t.completed.all()
    # both prefilled together, so both caches arrive at once; the second is admitted when
    # the first completes: its admission wait is the first's whole decode
    assert d.ttft_s[0] == 0.0
    assert d.ttft_s[1] == pytest.approx(d.e2e_s[0], rel=1e-9)
    assert t.tpot_s[1] > 1.9 * t.tpot_s[0]
    assert _f(cost, 1, 0, 301) < t.tpot_s[0]


def test_requests_that_never_fit_are_rejected_before_prefill() -> None:
    """Context 1,100 > decode capacity 1,000: rejected, never prefilled (no busy time);
    prompt 900 + 1 > prefill capacity 800: rejected at the prefill pool."""
    out = _run(
        _stream([0.0, 0.0, 0.1], [1000, 900, 100], [100, 50, 10]),
        [0.0] * 3,
        capacity=(800.0, 1000.0),
    )
    assert out.trace.rejected.tolist() == [True, True, False]
    assert out.trace.completed.tolist() == [False, False, True]
    assert out.prefill.rejected.tolist() == [True, True, False]
    assert not out.prefill.completed[:2].any()


def test_cold_start_and_scale_down_per_pool() -> None:
    """Pools planned apart: hours and peaks are each pool's own; the peak of both at once
    is at most the sum of the peaks."""
    out = _run(
        _stream([0.1, 1.2, 2.5], [100, 100, 100], [20, 20, 20]),
        [0.01] * 3,
        plans=([1, 2, 1], [2, 1, 3]),
        cold=0.25,
        horizon=3.0,
    )
    assert out.trace.completed.all()
    assert out.prefill.replicas_peak == 2
    assert out.decode.replicas_peak == 3
    assert out.trace.replicas_peak <= 5
    assert out.trace.replica_hours == pytest.approx(
        out.prefill.replica_hours + out.decode.replica_hours, rel=1e-12
    )
    # prefill: 1 warm for 3 h + 1 from hour 1 to 2 (scaled up then down); decode: 2 warm,
    # one drained at 1 h (idle: stops at once), two new at 2 h -> 2 + 1 + 1 + 2 x 1
    assert out.prefill.replica_hours == pytest.approx(4.0, rel=1e-12)
    assert out.decode.replica_hours == pytest.approx(6.0, rel=1e-12)


@st.composite
def _cases(draw: st.DrawFn) -> tuple[RequestStream, np.ndarray, tuple[int, int], float, list]:
    horizon = draw(st.sampled_from([1.0, 2.5]))
    n = draw(st.integers(1, 40))
    later = draw(st.lists(st.floats(0.0, horizon, exclude_max=True), min_size=n, max_size=n))
    arrivals = np.sort(np.asarray(later, dtype=float))
    inputs = draw(st.lists(st.integers(1, 300), min_size=n, max_size=n))
    outputs = draw(st.lists(st.integers(1, 60), min_size=n, max_size=n))
    transfer = draw(st.lists(st.floats(0.0, 3600.0), min_size=n, max_size=n))
    hours = int(np.ceil(horizon))
    plans = [draw(st.lists(st.integers(0, 3), min_size=hours, max_size=hours)) for _ in "pd"]
    batch = (draw(st.integers(1, 6)), draw(st.integers(1, 6)))
    stream = RequestStream(arrivals, np.asarray(inputs, np.int64), np.asarray(outputs, np.int64))
    return stream, np.asarray(transfer), batch, horizon, plans


@settings(deadline=None)
@given(_cases(), st.sampled_from([0.0, 0.3]))
def test_no_request_is_lost_or_counted_twice(
    case: tuple[RequestStream, np.ndarray, tuple[int, int], float, list], cold: float
) -> None:
    stream, transfer, batch, horizon, plans = case
    out = _run(
        stream,
        transfer,
        cost=_SLOW,
        capacity=(250.0, 330.0),  # some prompts and contexts never fit
        batch=batch,
        plans=(plans[0], plans[1]),
        cold=cold,
        horizon=horizon,
    )
    t, p, d = out.trace, out.prefill, out.decode
    inputs, outputs = stream.input_tokens, stream.output_tokens
    # each request is exactly one of: rejected, completed, in flight
    assert not (t.rejected & t.completed).any()
    np.testing.assert_array_equal(t.rejected, (inputs + outputs > 330) | (inputs + 1 > 250))
    # a first token needs a prefill; a completion needs a first token; a decode visit needs
    # a first token and more than one output token
    assert (p.completed[t.first_token]).all()
    assert (t.first_token[t.completed]).all()
    assert not (d.completed & ~t.first_token).any()
    assert not (d.completed & (outputs == 1)).any()
    np.testing.assert_array_equal(t.completed & (outputs > 1), d.completed)
    # tokens: per request (heaps and step counts) and per iteration (batch x steps) agree
    assert t.output_tokens_total == int(t.tokens_generated.sum())
    assert (t.tokens_generated <= outputs).all()
    np.testing.assert_array_equal(t.tokens_generated[t.completed], outputs[t.completed])
    assert (t.tokens_generated[t.first_token & ~t.completed] >= 1).all()
    assert (t.tokens_generated[~t.first_token] == 0).all()
    # times: ordered, finite, within the horizon
    for x in (t.ttft_s, t.tpot_s, t.e2e_s):
        assert np.isfinite(x).all()
        assert (x >= 0).all()
    assert (t.e2e_s[t.completed] >= t.ttft_s[t.completed] - 1e-9).all()
    ends = stream.arrival_hours * H + t.e2e_s
    assert (ends[t.completed] <= horizon * H * (1 + 1e-12)).all()
    assert (t.ttft_s[t.first_token] >= transfer[t.first_token] - 1e-9).all()
    # fleet: the sums of the pools; busy within provisioned
    assert t.busy_replica_hours == pytest.approx(p.busy_replica_hours + d.busy_replica_hours)
    assert p.busy_replica_hours <= p.replica_hours + 1e-9
    assert d.busy_replica_hours <= d.replica_hours + 1e-9
    assert max(p.replicas_peak, d.replicas_peak) <= t.replicas_peak
    assert t.replicas_peak <= p.replicas_peak + d.replicas_peak


def test_same_inputs_same_trace() -> None:
    rng = np.random.default_rng(3)
    n = 300
    stream = _stream(
        np.sort(rng.uniform(0, 0.5, n)).tolist(),
        rng.integers(10, 2000, n).tolist(),
        rng.integers(1, 200, n).tolist(),
    )
    transfer = kv_transfer_seconds(stream.input_tokens, 131072.0, 50.0)
    a = _run(stream, transfer, plans=([2], [2]))
    b = _run(stream, transfer, plans=([2], [2]))
    for name in ("ttft_s", "tpot_s", "e2e_s", "tokens_generated"):
        np.testing.assert_array_equal(getattr(a.trace, name), getattr(b.trace, name))
    assert a.trace.completed.all()


def test_max_events_is_one_budget_for_both_pools() -> None:
    """200 one-at-a-time prompts take 200 prefill iterations (+ arrivals), then the decode
    pool needs more: a budget the prefill pool alone fits stops in the decode pool."""
    n = 200
    stream = _stream([0.0] * n, [100] * n, [50] * n)
    transfer = np.zeros(n)
    c = _cost()
    models = (ReplicaModel(c, 1e6, 1, 0), ReplicaModel(c, 1e6, 1, 0, decode_only=True))
    plans = (ReplicaPlan(np.array([1])), ReplicaPlan(np.array([1])))
    full = simulate_serving_disaggregated(*models, stream, transfer, plans, 1.0)
    assert full.trace.completed.all()
    assert full.prefill.iterations == n
    with pytest.raises(RuntimeError, match="max_events=300"):
        simulate_serving_disaggregated(*models, stream, transfer, plans, 1.0, max_events=300)


def test_bad_inputs_name_the_problem() -> None:
    cost = _cost()
    stream = _stream([0.0], [10], [2])
    plan = ReplicaPlan(np.array([1]))
    chunked = ReplicaModel(cost, 1e6, 8, 512)
    decode = ReplicaModel(cost, 1e6, 8, 0, decode_only=True)
    with pytest.raises(ValueError, match="prefill_chunk_tokens must be 0"):
        simulate_serving_disaggregated(chunked, decode, stream, np.zeros(1), (plan, plan), 1.0)
    with pytest.raises(ValueError, match="must be decode_only"):
        simulate_serving_disaggregated(chunked.__class__(cost, 1e6, 8, 0),
                                       chunked.__class__(cost, 1e6, 8, 0),
                                       stream, np.zeros(1), (plan, plan), 1.0)  # fmt: skip
    prefill = ReplicaModel(cost, 1e6, 8, 0)
    for bad in (np.zeros(2), np.array([-1.0]), np.array([np.inf])):
        with pytest.raises(ValueError, match="transfer_s"):
            simulate_serving_disaggregated(prefill, decode, stream, bad, (plan, plan), 1.0)
    zero = _stream([0.0], [10], [0])
    with pytest.raises(ValueError, match="must be >= 1"):
        simulate_serving_disaggregated(prefill, decode, zero, np.zeros(1), (plan, plan), 1.0)
    with pytest.raises(ValueError, match="output_tokens must be >= 2"):
        simulate_serving(decode, _stream([0.0], [10], [1]), plan, 1.0)


def _scenario(**extra: object) -> acs.Scenario:
    svc = acs.Serving(
        model="llama-3.1-8b", precision="fp8", rate_rps=acs.Uniform(low=4.0, high=10.0),
        input_tokens=acs.LogNormal(low=200, high=2000), output_tokens=100,
        slo=acs.SLO(ttft_ms=2000, tpot_ms=100), horizon_days=0.1 / 24,
        disaggregated=acs.Disaggregation(
            prefill_pool=0, decode_pool=1, prefill_chips_per_replica=1,
            decode_chips_per_replica=1,
        ),
        **extra,
    )  # fmt: skip
    fleet = [
        acs.Pool(chip="h100-sxm", count=2, provider="aws"),
        acs.Pool(chip="h200", count=1, provider="aws"),
    ]
    # fixed prices: each pool pays its offer's price per chip-hour
    fixed = acs.Assumptions(price_change_per_year=0.0)
    return acs.Scenario(name="dis-des", workload=svc, fleet=fleet, assumptions=fixed)


def test_simulate_runs_disaggregation_on_the_des_with_the_fast_path_metrics() -> None:
    s = _scenario()
    des = acs.simulate(s, runs=4, seed=2, engine="des", progress=False)
    fast = acs.simulate(s, runs=4, seed=2, progress=False)
    assert des.engine == "des"
    assert set(des.metrics) == set(fast.metrics)
    for m in des.metrics:
        assert np.isfinite(des.samples(m)).all(), m
    hours = 0.1
    assert np.allclose(des.samples("prefill_chip_hours"), 2 * hours, rtol=1e-12)
    assert np.allclose(des.samples("decode_chip_hours"), 1 * hours, rtol=1e-12)
    assert (des.samples("prefill_replicas_peak") == 2).all()
    assert (des.samples("replicas_peak") == 3).all()
    # each pool priced at its own offer
    h100 = acs.catalog.price("h100-sxm", provider="aws", pricing="on_demand")
    h200 = acs.catalog.price("h200", provider="aws", pricing="on_demand")
    expected = hours * (2 * h100.usd_per_chip_hour + h200.usd_per_chip_hour)
    assert np.allclose(des.samples("hardware_cost_usd"), expected, rtol=1e-9)
    assert (des.samples("kv_transfer_ms") > 0).all()
    assert (des.samples("requests_served") > 0).all()


def test_follow_demand_with_cold_start_runs_on_the_des() -> None:
    s = _scenario(scaling="follow_demand", cold_start_minutes=5.0, min_replicas=1)
    res = acs.simulate(s, runs=3, seed=4, engine="des", progress=False)
    for m in res.metrics:
        assert np.isfinite(res.samples(m)).all(), m
    total = res.samples("prefill_chip_hours") + res.samples("decode_chip_hours")
    assert np.allclose(res.samples("chip_hours"), total, rtol=1e-12)
    assert (res.samples("slo_attainment") <= 1.0).all()
