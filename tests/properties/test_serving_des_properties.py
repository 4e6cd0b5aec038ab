"""Conservation invariants of the serving DES over small random streams and plans."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

from accelsim.engines.serving.des import ReplicaModel, ReplicaPlan, RequestStream, simulate_serving
from accelsim.models.serving import IterationCost

# Slow iterations (tens of seconds) so that a few requests in a few hours queue and overlap.
_COST = IterationCost(*(np.array(v) for v in (1e-12, 1e-9, 2e9, 1e5, 2e10, 1.0, 1e6, 0.0, 20.0)))


@st.composite
def cases(draw: st.DrawFn) -> tuple[ReplicaModel, RequestStream, ReplicaPlan, float, str]:
    hours = draw(st.integers(1, 3))
    horizon = hours - draw(st.sampled_from([0.0, 0.5]))
    n = draw(st.integers(1, 25))
    burst = draw(st.integers(0, n))  # requests at t = 0
    later = draw(
        st.lists(st.floats(0.0, horizon, exclude_max=True), min_size=n - burst, max_size=n - burst)
    )
    arrivals = np.sort(np.concatenate([np.zeros(burst), np.asarray(later, dtype=float)]))
    inputs = np.asarray(draw(st.lists(st.integers(1, 60), min_size=n, max_size=n)), dtype=np.int64)
    outputs = np.asarray(draw(st.lists(st.integers(1, 40), min_size=n, max_size=n)), dtype=np.int64)
    plan = np.asarray(
        draw(st.lists(st.integers(0, 3), min_size=hours, max_size=hours)), dtype=np.int64
    )
    max_batch = draw(st.integers(1, 4))
    model = ReplicaModel(
        _COST,
        kv_capacity_tokens=float(draw(st.integers(20, 150))),  # some requests never fit
        max_batch=max_batch,
        # the smallest budget (max_batch): a full batch leaves a waiting prompt one token
        prefill_chunk_tokens=draw(st.sampled_from([0, max_batch, 8, 32])),
    )
    cold = draw(st.sampled_from([0.0, 0.25, 1.5]))
    router = draw(st.sampled_from(["least_loaded", "round_robin"]))
    return model, RequestStream(arrivals, inputs, outputs), ReplicaPlan(plan, cold), horizon, router


@given(cases())
@example(
    (
        ReplicaModel(_COST, 100.0, 1, 0),
        RequestStream(np.zeros(1), np.array([10], dtype=np.int64), np.array([1], dtype=np.int64)),
        ReplicaPlan(np.array([0], dtype=np.int64)),
        1.0,
        "least_loaded",
    )
)
def test_every_request_and_token_is_accounted_for_once(
    case: tuple[ReplicaModel, RequestStream, ReplicaPlan, float, str],
) -> None:
    model, stream, plan, horizon, router = case
    trace = simulate_serving(model, stream, plan, horizon, router=router)  # type: ignore[arg-type]
    again = simulate_serving(model, stream, plan, horizon, router=router)  # type: ignore[arg-type]
    context = stream.input_tokens + stream.output_tokens
    # rejected exactly when the context can never fit; rejected requests get nothing
    np.testing.assert_array_equal(trace.rejected, context > model.kv_capacity_tokens)
    assert not (trace.rejected & trace.first_token).any()
    # completed => first token; tokens: full where completed, partial where in flight
    assert not (trace.completed & ~trace.first_token).any()
    tokens = trace.tokens_generated
    np.testing.assert_array_equal(tokens[trace.completed], stream.output_tokens[trace.completed])
    assert (tokens[~trace.completed] < stream.output_tokens[~trace.completed]).all()
    np.testing.assert_array_equal(tokens > 0, trace.first_token)
    assert int(tokens.sum()) == trace.output_tokens_total  # per request == per iteration
    # latencies: finite, >= 0, consistent
    for latency in (trace.ttft_s, trace.tpot_s, trace.e2e_s):
        assert np.isfinite(latency).all()
        assert (latency >= 0).all()
    done = trace.completed
    e2e = trace.ttft_s[done] + trace.tpot_s[done] * (stream.output_tokens[done] - 1)
    np.testing.assert_allclose(trace.e2e_s[done], e2e, rtol=1e-9, atol=1e-6)
    # fleet: provisioned >= the plan's integral, busy within provisioned
    lengths = np.minimum(np.arange(1, plan.replicas_per_hour.size + 1), horizon) - np.arange(
        plan.replicas_per_hour.size
    )
    assert trace.replica_hours >= float(plan.replicas_per_hour @ lengths) - 1e-9
    assert 0.0 <= trace.busy_replica_hours <= trace.replica_hours + 1e-9
    assert trace.replicas_peak >= int(plan.replicas_per_hour.max())
    # deterministic
    for field in type(trace).__dataclass_fields__:
        np.testing.assert_array_equal(getattr(trace, field), getattr(again, field))
