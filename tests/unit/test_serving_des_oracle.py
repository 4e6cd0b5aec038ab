"""The serving DES against a brute-force reference: one SimPy timeout per batch iteration.

The reference below plays every iteration of every replica (no closed-form runs, no lazy
replicas): a process per replica, the same rules (FCFS reserve-on-admit admission, chunked
or prefill-first iterations, least-loaded or round-robin routing, fixed fleet) and the same
iteration formula. The DES times runs of iterations in closed form and keeps times in hours,
so latencies agree to float rounding, not bit for bit: ``rel = 1e-9`` with ``abs = 1e-9 s``
bounds it (a few 1e-16 relative per run, ~2**-53 · t per boundary at t hours), while any rule
difference (an admission or a completion one iteration early or late) moves a time by a
whole iteration (tens of seconds with this cost). Iteration counts must be equal.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Generator
from typing import Any

import numpy as np
import simpy
from hypothesis import given
from hypothesis import strategies as st
from tests.oracles.scalar_formulas import scalar_iteration_seconds

from accelsim.engines.serving.des import ReplicaModel, ReplicaPlan, RequestStream, simulate_serving
from accelsim.models.serving import IterationCost

H = 3600.0
# Iterations of tens of seconds, growing with the batch, the prompt chunk and its context
# (coefficients in IterationCost's field order), so that a few requests overlap in hours.
_COST = IterationCost(*(np.array(v) for v in (1e-12, 1e-9, 2e9, 1e7, 2e10, 1.0, 1e6, 0.05, 20.0)))


def _reference(
    model: ReplicaModel, requests: RequestStream, replicas: int, horizon: float, router: str
) -> tuple[np.ndarray, np.ndarray, int]:
    """(first-token hours, completion hours, -1 where none; iterations begun)."""
    seconds = scalar_iteration_seconds(model.cost)
    arrivals = requests.arrival_hours.tolist()
    inputs = requests.input_tokens.tolist()
    outputs = requests.output_tokens.tolist()
    chunk, capacity = model.prefill_chunk_tokens, model.kv_capacity_tokens
    env = simpy.Environment()
    first, done = [-1.0] * len(arrivals), [-1.0] * len(arrivals)
    count = [0]
    fleet: list[dict[str, Any]] = [
        {"queue": deque(), "prefill": deque(), "decode": [], "load": 0, "admitted": 0,
         "reserved": 0, "kv": 0, "steps": 0, "wake": None}
        for _ in range(replicas)
    ]  # fmt: skip

    def release(r: dict[str, Any], i: int) -> None:
        done[i] = env.now
        r["reserved"] -= inputs[i] + outputs[i]
        r["admitted"] -= 1
        r["load"] -= 1

    def replica(r: dict[str, Any]) -> Generator[simpy.Event, Any, None]:
        queue, prefill, decode = r["queue"], r["prefill"], r["decode"]
        while True:
            while queue and r["admitted"] < model.max_batch:
                i = queue[0]
                if r["reserved"] + inputs[i] + outputs[i] > capacity:
                    break
                queue.popleft()
                r["admitted"] += 1
                r["reserved"] += inputs[i] + outputs[i]
                prefill.append([i, 0])
            if not prefill and not decode:
                r["wake"] = env.event()
                yield r["wake"]
                continue
            finished: list[int] = []
            tokens, pairs, batch = 0, 0.0, len(decode)
            if chunk == 0 and prefill:  # prefill-first: whole prompts, no decode
                batch = 0
                for i, _ in prefill:
                    tokens += inputs[i]
                    pairs += inputs[i] * (inputs[i] / 2.0)
                    finished.append(i)
                prefill.clear()
            budget = chunk - batch if chunk else 0  # the budget less a token per decode
            while prefill and budget:
                entry = prefill[0]
                take = min(inputs[entry[0]] - entry[1], budget)
                pairs += take * (entry[1] + take / 2.0)
                tokens += take
                budget -= take
                if entry[1] + take == inputs[entry[0]]:
                    finished.append(prefill.popleft()[0])
                else:
                    entry[1] += take
            count[0] += 1
            context = pairs / tokens if tokens else 0.0
            yield env.timeout(seconds(batch, tokens, r["kv"] if batch else 0, context) / H)
            if batch:
                r["steps"] += 1
                r["kv"] += batch
                while decode and decode[0][0] == r["steps"]:
                    i = heapq.heappop(decode)[1]
                    r["kv"] -= inputs[i] + outputs[i]
                    release(r, i)
            for i in finished:
                first[i] = env.now
                if outputs[i] == 1:
                    release(r, i)
                else:
                    heapq.heappush(decode, (r["steps"] + outputs[i] - 1, i))
                    r["kv"] += inputs[i] + 1

    def source() -> Generator[simpy.Event, Any, None]:
        for i, t in enumerate(arrivals):
            # equal arrival times are dispatched together (the DES's rule): one timeout for
            # the first of them, as ``now + (t - now)`` need not give back ``t`` exactly
            if t > env.now and (i == 0 or t != arrivals[i - 1]):
                yield env.timeout(t - env.now)
            if inputs[i] + outputs[i] > capacity:
                continue
            if router == "least_loaded":
                r = min(fleet, key=lambda x: x["load"])
            else:
                r = fleet[i % replicas]  # nothing rejected in these cases: i counts dispatches
            r["queue"].append(i)
            r["load"] += 1
            if r["wake"] is not None and not r["wake"].triggered:
                r["wake"].succeed()

    for r in fleet:
        env.process(replica(r))
    env.process(source())
    env.run(until=horizon)
    return np.asarray(first), np.asarray(done), count[0]


@st.composite
def cases(draw: st.DrawFn) -> tuple[ReplicaModel, RequestStream, int, float, str]:
    horizon = draw(st.sampled_from([1.0, 2.5]))
    n = draw(st.integers(1, 30))
    burst = draw(st.integers(0, n))  # requests at t = 0
    later = draw(st.lists(st.floats(0.0, horizon, exclude_max=True), min_size=n - burst,
                          max_size=n - burst))  # fmt: skip
    arrivals = np.sort(np.concatenate([np.zeros(burst), np.asarray(later, dtype=float)]))
    inputs = draw(st.lists(st.integers(1, 300), min_size=n, max_size=n))
    outputs = draw(st.lists(st.integers(1, 60), min_size=n, max_size=n))
    max_batch = draw(st.integers(1, 6))
    model = ReplicaModel(
        _COST,
        kv_capacity_tokens=400.0,  # every request fits (<= 360 tokens); a few at once
        max_batch=max_batch,
        # the smallest budget allowed (max_batch) leaves a prompt one token at a full batch
        prefill_chunk_tokens=draw(st.sampled_from([0, max_batch, 16, 64])),
    )
    stream = RequestStream(arrivals, np.asarray(inputs, np.int64), np.asarray(outputs, np.int64))
    router = draw(st.sampled_from(["least_loaded", "round_robin"]))
    return model, stream, draw(st.integers(1, 3)), horizon, router


@given(cases())
def test_the_des_plays_the_same_iterations_as_one_timeout_per_iteration(
    case: tuple[ReplicaModel, RequestStream, int, float, str],
) -> None:
    model, stream, replicas, horizon, router = case
    plan = ReplicaPlan(np.full(int(np.ceil(horizon)), replicas, dtype=np.int64))
    trace = simulate_serving(model, stream, plan, horizon, router=router)  # type: ignore[arg-type]
    first, done, iterations = _reference(model, stream, replicas, horizon, router)
    np.testing.assert_array_equal(trace.first_token, first >= 0)
    np.testing.assert_array_equal(trace.completed, done >= 0)
    arrival = stream.arrival_hours
    np.testing.assert_allclose(
        trace.ttft_s, np.where(first >= 0, (first - arrival) * H, 0.0), rtol=1e-9, atol=1e-9
    )
    np.testing.assert_allclose(
        trace.e2e_s, np.where(done >= 0, (done - arrival) * H, 0.0), rtol=1e-9, atol=1e-9
    )
    assert trace.iterations == iterations


def test_a_long_prompt_prefills_in_a_run_while_others_decode_and_complete() -> None:
    """Hand-built: a 2,000-token prompt under a 64-token budget (62 prompt tokens an iteration
    beside two decoding sequences, 63 once one of them completes; ~40 s each) arrives while
    two sequences decode; one of them completes during its chunks, and
    a fourth request arrives mid-prompt (admitted at once, prefilled after the head): the
    closed-form runs, cut by that arrival, give the reference's times and iterations."""
    model = ReplicaModel(_COST, 10_000.0, 8, 64)
    stream = RequestStream(
        np.array([0.0, 0.0, 0.05, 0.3]),
        np.array([10, 10, 2000, 50], dtype=np.int64),
        np.array([12, 60, 5, 5], dtype=np.int64),
    )
    trace = simulate_serving(model, stream, ReplicaPlan(np.array([1, 1])), 2.0)
    first, done, iterations = _reference(model, stream, 1, 2.0, "least_loaded")
    assert trace.completed.all()
    arrival = stream.arrival_hours
    assert arrival[2] < done[0] < first[2]  # request 0 completes during 2's prefill
    assert arrival[3] < first[2] < first[3]  # 3 arrives mid-prompt, prefilled after it
    np.testing.assert_allclose(trace.ttft_s, (first - arrival) * H, rtol=1e-9)
    np.testing.assert_allclose(trace.e2e_s, (done - arrival) * H, rtol=1e-9)
    assert trace.iterations == iterations
