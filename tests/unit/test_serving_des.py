"""Unit tests of the serving DES (engines/serving/des) and its scalar iteration formula.

Tiny scenarios with hand-computed answers: every iteration's length comes from
:func:`iteration_seconds`, so the expected latencies are sums of calls to it. The DES sums a
decode-only stretch in closed form (:func:`decode_stretch_seconds`, ~1e-15 relative to the
per-iteration sum) and keeps times in hours from 0, so a latency of ``x`` seconds read at
``t`` hours carries ~``2**-53 · t · 3600`` s of rounding (4e-13 s at 1 h): the tolerance
``rel=1e-9`` bounds both for latencies of 1 ms or more, not bit-identity.
"""

from __future__ import annotations

import numpy as np
import pytest
from tests.oracles.scalar_formulas import scalar_iteration_seconds

from accelsim.engines.serving.des import (
    ReplicaModel,
    ReplicaPlan,
    RequestStream,
    ServingTrace,
    simulate_serving,
)
from accelsim.models.serving import (
    IterationCost,
    iteration_cost,
    iteration_seconds,
)

H = 3600.0  # seconds per hour


def _cost(active: float = 8e9, total: float = 8e9, chips: int = 1) -> IterationCost:
    return iteration_cost(
        active_params=active,
        total_params=total,
        layers=32,
        d_model=4096,
        weight_bytes=total,
        kv_bytes_per_token=131072.0,
        chips=chips,
        peak_tflops=989,
        hbm_tbps=3.35,
        interconnect_gbps=900,
        efficiency=0.5,
        overhead_seconds=0.004,
    )


def _f(cost: IterationCost, decode: float, prefill: float, kv: float, ctx: float = 0.0) -> float:
    return float(iteration_seconds(cost, decode, prefill, kv, ctx))


def _stream(arrivals: list[float], inputs: list[int], outputs: list[int]) -> RequestStream:
    return RequestStream(
        np.asarray(arrivals, dtype=np.float64),
        np.asarray(inputs, dtype=np.int64),
        np.asarray(outputs, dtype=np.int64),
    )


def _run(
    stream: RequestStream,
    *,
    cost: IterationCost | None = None,
    capacity: float = 1e6,
    max_batch: int = 8,
    chunk: int = 0,
    plan: list[int] | None = None,
    cold: float = 0.0,
    horizon: float = 1.0,
    router: str = "least_loaded",
) -> ServingTrace:
    model = ReplicaModel(cost or _cost(), capacity, max_batch, chunk)
    replicas = np.asarray(plan if plan is not None else [1], dtype=np.int64)
    return simulate_serving(
        model,
        stream,
        ReplicaPlan(replicas, cold),
        horizon,
        router=router,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(("active", "total", "chips"), [(8e9, 8e9, 1), (13e9, 47e9, 2)])
def test_scalar_iteration_seconds_equals_the_array_formula_bit_for_bit(
    active: float, total: float, chips: int
) -> None:
    """The DES's float evaluator is the same formula: exact equality, ints and floats."""
    cost = _cost(active, total, chips)
    f = scalar_iteration_seconds(cost)
    rng = np.random.default_rng(7)
    for _ in range(2000):
        d, p, kv = (int(x) for x in rng.integers(0, [600, 9000, 2_000_000]))
        ctx = float(rng.uniform(0, 5000))
        expected = float(iteration_seconds(cost, d, p, kv, ctx))
        assert f(d, p, kv, ctx) == expected
        assert f(float(d), float(p), float(kv), ctx) == expected


def test_one_request_prefill_first_then_decode_hand_computed() -> None:
    """TTFT = the whole-prompt prefill iteration; each next token one decode iteration."""
    cost = _cost()
    trace = _run(_stream([0.0], [100], [3]), cost=cost)
    prefill = _f(cost, 0, 100, 0, 50.0)
    decodes = [_f(cost, 1, 0, 101), _f(cost, 1, 0, 102)]
    assert trace.completed.tolist() == [True]
    assert trace.ttft_s[0] == pytest.approx(prefill, rel=1e-9)
    assert trace.tpot_s[0] == pytest.approx(sum(decodes) / 2, rel=1e-9)
    assert trace.e2e_s[0] == pytest.approx(prefill + sum(decodes), rel=1e-9)
    assert trace.iterations == 3
    assert trace.busy_replica_hours * H == pytest.approx(prefill + sum(decodes), rel=1e-9)
    assert trace.tokens_generated.tolist() == [3]
    assert trace.output_tokens_total == 3


def test_chunked_prefill_spans_iterations_with_the_context_of_each_chunk() -> None:
    """A 300-token prompt in chunks of 128: 128 (ctx 64), 128 (ctx 192), 44 (ctx 278)."""
    cost = _cost()
    trace = _run(_stream([0.0], [300], [2]), cost=cost, chunk=128)
    chunks = _f(cost, 0, 128, 0, 64.0) + _f(cost, 0, 128, 0, 192.0) + _f(cost, 0, 44, 0, 278.0)
    assert trace.ttft_s[0] == pytest.approx(chunks, rel=1e-9)
    assert trace.tpot_s[0] == pytest.approx(_f(cost, 1, 0, 301), rel=1e-9)
    assert trace.iterations == 4


def test_chunked_prefill_decodes_running_sequences_alongside() -> None:
    """A second prompt arriving mid-decode shares iterations with the first's decode."""
    cost = _cost()
    first_iteration = _f(cost, 0, 10, 0, 5.0)
    late = first_iteration / H * 1.5  # arrives during the first decode iteration
    trace = _run(_stream([0.0, late], [10, 10], [50, 2]), cost=cost, chunk=16)
    # request 1 is admitted at the end of decode iteration 1 and prefilled with a decode
    t1 = first_iteration + _f(cost, 1, 0, 11)
    ttft1 = t1 + _f(cost, 1, 10, 12, 5.0) - late * H
    assert trace.ttft_s[1] == pytest.approx(ttft1, rel=1e-9)
    assert trace.completed.all()


def test_an_arrival_exactly_at_a_boundary_joins_there() -> None:
    """Ties: the router acts before the boundary at its instant, so a request arriving at
    the very end of the first iteration is prefilled in the second, with the first decode."""
    cost = _cost()
    boundary = _f(cost, 0, 10, 0, 5.0) / H  # the DES's own expression for that end [h]
    trace = _run(_stream([0.0, boundary], [10, 10], [50, 2]), cost=cost, chunk=16)
    assert trace.ttft_s[1] == pytest.approx(_f(cost, 1, 10, 11, 5.0), rel=1e-9)


def test_prefill_first_pauses_decoding_for_the_prompt() -> None:
    """With chunk 0 the iteration that prefills a new prompt decodes nothing."""
    cost = _cost()
    first_iteration = _f(cost, 0, 10, 0, 5.0)
    late = first_iteration / H * 1.5
    trace = _run(_stream([0.0, late], [10, 10], [50, 2]), cost=cost, chunk=0)
    t1 = first_iteration + _f(cost, 1, 0, 11)
    assert trace.ttft_s[1] == pytest.approx(t1 + _f(cost, 0, 10, 0, 5.0) - late * H, rel=1e-9)


def test_batch_one_serves_in_arrival_order() -> None:
    """max_batch 1, one-token outputs: the n-th request at t=0 waits n prefill iterations."""
    cost = _cost()
    trace = _run(_stream([0.0] * 4, [64] * 4, [1] * 4), cost=cost, max_batch=1)
    s = _f(cost, 0, 64, 0, 32.0)
    np.testing.assert_allclose(trace.ttft_s, s * np.arange(1, 5), rtol=1e-9)
    assert trace.tpot_s.tolist() == [0.0] * 4


def test_kv_reservation_blocks_until_a_completion_frees_room() -> None:
    """Capacity 250: the second 200-token context waits for the first to complete."""
    cost = _cost()
    trace = _run(_stream([0.0, 0.0], [100, 100], [100, 100]), cost=cost, capacity=250.0)
    assert trace.completed.all()
    assert trace.ttft_s[1] >= trace.e2e_s[0]


def test_a_request_that_can_never_fit_is_rejected_without_hanging() -> None:
    trace = _run(_stream([0.0, 0.1], [5000, 10], [10, 10]), capacity=1000.0)
    assert trace.rejected.tolist() == [True, False]
    assert trace.first_token.tolist() == [False, True]
    assert trace.completed.tolist() == [False, True]
    assert trace.tokens_generated[0] == 0
    assert trace.ttft_s[0] == 0.0


def test_round_robin_alternates_and_least_loaded_balances() -> None:
    stream = _stream([0.0] * 4, [10] * 4, [20] * 4)
    rr = _run(stream, plan=[2], router="round_robin", max_batch=1)
    ll = _run(stream, plan=[2], max_batch=1)
    # two replicas, batch 1: requests 0, 1 start at once; 2, 3 wait one request each
    np.testing.assert_allclose(rr.ttft_s[:2], rr.ttft_s[0], rtol=1e-12)
    assert rr.ttft_s[2] > rr.ttft_s[0]
    assert rr.ttft_s[3] > rr.ttft_s[0]
    np.testing.assert_allclose(ll.ttft_s, rr.ttft_s, rtol=1e-12)


def test_cold_start_delays_service_and_counts_as_provisioned() -> None:
    """Plan [0, 1] with a 0.25 h cold start: a request at 1.0 h starts at 1.25 h."""
    cost = _cost()
    stream = _stream([0.5, 1.0], [64, 64], [1, 1])
    trace = _run(stream, cost=cost, max_batch=1, plan=[0, 1], cold=0.25, horizon=2.0)
    s = _f(cost, 0, 64, 0, 32.0)
    assert trace.ttft_s[0] == pytest.approx(0.75 * H + s, rel=1e-9)  # router queue, 0.5 -> 1.25
    assert trace.ttft_s[1] == pytest.approx(0.25 * H + s + s, rel=1e-9)
    assert trace.replica_hours == pytest.approx(1.0)
    assert trace.replicas_peak == 1


def test_replica_hours_is_the_integral_of_the_plan_without_traffic() -> None:
    """No requests: draining is instant, so replica-hours = sum of the plan (hour 4 is 0.5 h)."""
    plan = [2, 4, 1, 0, 3]
    trace = _run(_stream([], [], []), plan=plan, cold=0.25, horizon=4.5)
    assert trace.replica_hours == pytest.approx(2 + 4 + 1 + 0 + 3 * 0.5, rel=1e-12)
    assert trace.replicas_peak == 4
    assert trace.iterations == 0
    assert trace.busy_replica_hours == 0.0


def test_a_draining_replica_finishes_its_sequences_then_stops() -> None:
    """Plan [1, 0]: a long request admitted at 0.99 h completes after the scale-down."""
    cost = _cost()
    trace = _run(_stream([0.99], [100], [8000]), cost=cost, plan=[1, 0], horizon=2.0)
    assert trace.completed.tolist() == [True]
    end_hours = 0.99 + trace.e2e_s[0] / H
    assert end_hours > 1.0
    assert trace.replica_hours == pytest.approx(end_hours, rel=1e-9)


def test_starting_replicas_are_cancelled_first_on_scale_down() -> None:
    """Plan [1, 3, 1]: the two replicas decided at 1 h are provisioned until 2 h, whether
    they came up (cold 0.5 h: drained at 2 h) or were still starting (cold 1.5 h: cancelled).
    """
    trace = _run(_stream([], [], []), plan=[1, 3, 1], cold=0.5, horizon=3.0)
    assert trace.replica_hours == pytest.approx(3 + 2 * 1.0, rel=1e-12)
    cancelled = _run(_stream([], [], []), plan=[1, 3, 1], cold=1.5, horizon=3.0)
    assert cancelled.replica_hours == pytest.approx(3 + 2 * 1.0, rel=1e-12)


def test_horizon_cuts_decoding_and_counts_partial_tokens() -> None:
    cost = _cost()
    trace = _run(_stream([0.0], [100], [10**6]), cost=cost, capacity=2e6, horizon=0.01)
    assert trace.first_token.tolist() == [True]
    assert trace.completed.tolist() == [False]
    assert 1 < trace.tokens_generated[0] < 10**6
    assert trace.tokens_generated.sum() == trace.output_tokens_total
    assert trace.busy_replica_hours == pytest.approx(0.01, rel=1e-9)
    assert trace.tpot_s[0] == 0.0
    assert trace.e2e_s[0] == 0.0


def test_same_inputs_same_trace() -> None:
    rng = np.random.default_rng(3)
    n = 300
    stream = RequestStream(
        np.sort(rng.uniform(0, 0.2, n)), rng.integers(1, 500, n), rng.integers(1, 300, n)
    )
    a = _run(stream, plan=[3], chunk=64, horizon=0.2)
    b = _run(stream, plan=[3], chunk=64, horizon=0.2)
    for field in ServingTrace.__dataclass_fields__:
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))


def test_max_events_stops_with_a_clear_error() -> None:
    stream = _stream([0.0], [100], [10**6])
    model = ReplicaModel(_cost(), 2e6, 8, 0)
    with pytest.raises(RuntimeError, match="max_events=100"):
        simulate_serving(model, stream, ReplicaPlan(np.array([1])), 1.0, max_events=100)


@pytest.mark.parametrize(
    ("stream", "plan", "match"),
    [
        (_stream([0.2, 0.1], [1, 1], [1, 1]), [1], "sorted"),
        (_stream([0.0], [0], [1]), [1], ">= 1"),
        (_stream([1.5], [1], [1]), [1], "within"),
        (_stream([0.0], [1], [1]), [1, 1], "replicas_per_hour"),
    ],
)
def test_bad_inputs_name_the_field(stream: RequestStream, plan: list[int], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        _run(stream, plan=plan)


def test_bad_router_is_refused() -> None:
    with pytest.raises(ValueError, match="router"):
        _run(_stream([], [], []), router="random")


def test_a_token_budget_below_the_batch_cap_is_refused() -> None:
    """Each running sequence takes one token of the budget (vLLM refuses
    max_num_batched_tokens < max_num_seqs); at the cap itself it runs."""
    stream = _stream([0.0, 0.0], [10, 10], [3, 3])
    with pytest.raises(ValueError, match=r"prefill_chunk_tokens \(7\).*max_batch \(8\)"):
        simulate_serving(
            ReplicaModel(_cost(), 1e4, 8, 7), stream, ReplicaPlan(np.ones(1, np.int64)), 1.0
        )
    trace = simulate_serving(
        ReplicaModel(_cost(), 1e4, 8, 8), stream, ReplicaPlan(np.ones(1, np.int64)), 1.0
    )
    assert trace.completed.all()


def test_a_decoding_batch_takes_its_tokens_of_the_budget_first() -> None:
    """Budget 8: a 15-token prompt shares its first iteration with a 1-token prompt (7
    tokens), then gets 7 beside that sequence's decode, then its last: its first token ends
    iteration 3, where a budget for prompt tokens alone would end it in 2."""
    stream = _stream([0.0, 0.0], [1, 15], [40, 2])
    model = ReplicaModel(_cost(), 1e4, 2, 8)
    trace = simulate_serving(model, stream, ReplicaPlan(np.ones(1, np.int64)), 1.0)
    # request 0 (1 token) and request 1's first 7 share iteration 1; then 0 decodes while 1
    # takes 7 + 1 more tokens in iterations 2 and 3: its first token ends iteration 3.
    seconds = scalar_iteration_seconds(_cost())
    first = seconds(0, 8, 0, (1 * 0.5 + 7 * 3.5) / 8)  # prompt 0 whole, 7 of prompt 1
    second = seconds(1, 7, 2, 7 + 3.5)  # 0 decodes (2 tokens cached); 1's tokens 8-14
    third = seconds(1, 1, 3, 14.5)  # its last token
    assert trace.ttft_s[1] == pytest.approx(first + second + third, rel=1e-12)
