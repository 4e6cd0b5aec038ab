"""Serving DES speed: accelsim's simulate_serving against a bare-SimPy model of the same rules.

Run with ``make bench``; not part of the test suite. The bare reference below is the least
SimPy code for the same request model: one process per replica, one timeout per batch
iteration, the same admission (FCFS, reserve-on-admit), chunked prefill, least-loaded
routing and iteration formula (``terms_iteration_seconds``). Both run the same
arrivals, interleaved, best of ``ROUNDS`` in CPU time; they must give the same first-token
times (checked), so the ratio compares like with like. "Same" is to ``rtol = atol = 1e-9``
[s]: accelsim times a run of iterations (a decode stretch, a prompt's full prefill chunks)
by its closed-form sum (~1e-15 relative to the per-iteration sum) and both keep times in
hours, whose rounding (~2**-53 · 3600 s per step near 1 h) random-walks over ~1e5
iterations to ~1e-12 s; 1e-9 bounds that with margin while any rule difference (an
admission one iteration late) moves a TTFT by >= 1 ms.

accelsim's state machine is compiled by numba (``accelsim.engines.serving.des._jit``) and
cached on disk; the first call in a process loads it (~0.2 s; ~6 s to compile in a fresh
install), which the best of ``ROUNDS`` leaves out, as it leaves out the bare reference's
first-call costs.

- 8 replicas at 70 % of their saturated request rate (``offline_tokens_per_s / output``):
  simulated requests per CPU-second, accelsim / bare >= 1x (asserted).
- An hour of 50 requests/s on 8 replicas: CPU seconds printed against the issue's ~1 s,
  and the bare reference's on the same hour (asserted slower).
- Long prompts (2,000-6,000 tokens in chunks of 256) on 8 replicas: requests per CPU-second,
  accelsim / bare (asserted >= 1x): a prompt's full chunks are one closed-form run.
- The same hour on disaggregated pools (4 prefill + 4 decode replicas,
  :func:`simulate_serving_disaggregated`): CPU seconds against the colocated hour's, both
  measured here (printed, not asserted: the two play different iterations).
"""

from __future__ import annotations

import heapq
import time
from collections import deque
from collections.abc import Callable, Generator
from functools import partial
from typing import Any

import numpy as np
import pytest
import simpy

from accelsim.engines.serving.des import (
    ReplicaModel,
    ReplicaPlan,
    RequestStream,
    simulate_serving,
    simulate_serving_disaggregated,
)
from accelsim.models.serving import (
    iteration_cost,
    iteration_terms,
    kv_capacity_tokens,
    kv_transfer_seconds,
    offline_tokens_per_s,
    terms_iteration_seconds,
)
from accelsim.seeding import as_seed_sequence, stream

pytestmark = pytest.mark.bench

ROUNDS = 3
ROOT = as_seed_sequence(2025)
REPLICAS = 8
# Llama-3.1-70B at fp8 on 4 H100-like chips (TP4), 60 % of the roofline, 4 ms per iteration.
COST = iteration_cost(
    active_params=70e9,
    total_params=70e9,
    layers=80,
    d_model=8192,
    weight_bytes=70e9,
    kv_bytes_per_token=163840.0,
    chips=4,
    peak_tflops=989,
    hbm_tbps=3.35,
    interconnect_gbps=900,
    efficiency=0.6,
    overhead_seconds=0.004,
)
CAPACITY = float(kv_capacity_tokens(4 * 80e9, 70e9, 163840.0, 0.9))
MAX_BATCH, CHUNK = 256, 512
MEAN_IN, MEAN_OUT = 1000, 250


def _requests(
    name: str, rate_per_s: float, hours: float, prompts: tuple[int, int] = (100, 2 * MEAN_IN - 100)
) -> RequestStream:
    rng = stream(ROOT, "bench", "serving", name)
    n = rng.poisson(rate_per_s * hours * 3600.0)
    arrivals = np.sort(rng.uniform(0.0, hours, n))
    inputs = rng.integers(*prompts, n)
    outputs = rng.integers(10, 2 * MEAN_OUT - 10, n)
    return RequestStream(arrivals, inputs, outputs)


def accelsim_serving(requests: RequestStream, hours: float, chunk: int = CHUNK) -> np.ndarray:
    trace = simulate_serving(
        ReplicaModel(COST, CAPACITY, MAX_BATCH, chunk),
        requests,
        ReplicaPlan(np.full(int(np.ceil(hours)), REPLICAS, dtype=np.int64)),
        hours,
    )
    return np.where(trace.first_token, trace.ttft_s, -1.0)


def bare_simpy(requests: RequestStream, hours: float, chunk: int = CHUNK) -> np.ndarray:
    """One generator per replica, one timeout per iteration; same rules, fixed fleet."""
    seconds: Callable[[float, float, float, float], float] = partial(
        terms_iteration_seconds, iteration_terms(COST)
    )
    arrivals = requests.arrival_hours.tolist()
    inputs = requests.input_tokens.tolist()
    outputs = requests.output_tokens.tolist()
    env = simpy.Environment()
    first = [-1.0] * len(arrivals)
    replicas: list[dict[str, Any]] = [
        {"queue": deque(), "prefill": deque(), "decode": [], "load": 0, "admitted": 0,
         "reserved": 0, "kv": 0, "steps": 0, "wake": None}
        for _ in range(REPLICAS)
    ]  # fmt: skip

    def replica(r: dict[str, Any]) -> Generator[simpy.Event, Any, None]:
        queue, prefill, decode = r["queue"], r["prefill"], r["decode"]
        while True:
            while queue and r["admitted"] < MAX_BATCH:
                i = queue[0]
                if r["reserved"] + inputs[i] + outputs[i] > CAPACITY:
                    break
                queue.popleft()
                r["admitted"] += 1
                r["reserved"] += inputs[i] + outputs[i]
                prefill.append([i, 0])
            if not prefill and not decode:
                r["wake"] = env.event()
                yield r["wake"]
                r["wake"] = None
                continue
            finished, tokens, pairs = [], 0, 0.0
            budget = chunk - len(decode)  # the iteration's budget less a token per decode
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
            batch = len(decode)
            context = pairs / tokens if tokens else 0.0
            yield env.timeout(seconds(batch, tokens, r["kv"] if batch else 0, context) / 3600.0)
            if batch:
                r["steps"] += 1
                r["kv"] += batch
                while decode and decode[0][0] == r["steps"]:
                    i = heapq.heappop(decode)[1]
                    r["kv"] -= inputs[i] + outputs[i]
                    r["reserved"] -= inputs[i] + outputs[i]
                    r["admitted"] -= 1
                    r["load"] -= 1
            for i in finished:
                first[i] = (env.now - arrivals[i]) * 3600.0
                if outputs[i] == 1:
                    r["reserved"] -= inputs[i] + outputs[i]
                    r["admitted"] -= 1
                    r["load"] -= 1
                else:
                    heapq.heappush(decode, (r["steps"] + outputs[i] - 1, i))
                    r["kv"] += inputs[i] + 1

    def source() -> Generator[simpy.Event, Any, None]:
        for i, t in enumerate(arrivals):
            if t > env.now:
                yield env.timeout(t - env.now)
            if inputs[i] + outputs[i] > CAPACITY:
                continue
            r = min(replicas, key=lambda x: x["load"])
            r["queue"].append(i)
            r["load"] += 1
            if r["wake"] is not None and not r["wake"].triggered:
                r["wake"].succeed()

    for r in replicas:
        env.process(replica(r))
    env.process(source())
    env.run(until=hours)
    return np.asarray(first)


def _best(f: Callable[..., np.ndarray], *args: Any) -> tuple[float, np.ndarray]:
    start = time.process_time()
    out = f(*args)
    return time.process_time() - start, out


def test_seventy_percent_load_against_bare_simpy(
    benchmark: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """8 replicas at 70 % of saturation: requests per CPU-second, accelsim / bare >= 1x."""
    saturated = float(offline_tokens_per_s(COST, CAPACITY, MEAN_IN, MEAN_OUT, MAX_BATCH))
    rate = 0.7 * REPLICAS * saturated / MEAN_OUT
    hours = 0.05
    requests = _requests("load70", rate, hours)
    best = {"accelsim": np.inf, "bare SimPy": np.inf}
    ttft: dict[str, np.ndarray] = {}
    for _ in range(ROUNDS):
        for name, f in (("accelsim", accelsim_serving), ("bare SimPy", bare_simpy)):
            seconds, ttft[name] = _best(f, requests, hours)
            best[name] = min(best[name], seconds)
    # same rules, times equal to float rounding (module docstring: why 1e-9)
    np.testing.assert_allclose(ttft["accelsim"], ttft["bare SimPy"], rtol=1e-9, atol=1e-9)
    n = requests.arrival_hours.size
    rates = {name: n / s for name, s in best.items()}
    ratio = rates["accelsim"] / rates["bare SimPy"]
    benchmark.extra_info.update({f"{k} requests/s": round(v) for k, v in rates.items()})
    benchmark.pedantic(accelsim_serving, args=(requests, hours), rounds=1, iterations=1)
    with capsys.disabled():
        print(
            f"\nserving, 8 replicas at 70 % load: {n:,} requests at {rate:.1f}/s over "
            f"{hours * 60:.0f} min (CPU time, best of {ROUNDS})"
        )
        for name, r in rates.items():
            print(f"  {name:12s} {r:>10,.0f} requests/s")
        print(f"  accelsim / bare SimPy = {ratio:.2f}x (target >= 1x); same TTFTs")
    assert ratio >= 1.0


def test_an_hour_of_fifty_requests_per_second(
    benchmark: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """An hour of 50 requests/s on 8 replicas: CPU seconds (best of ``ROUNDS``), against the
    issue's ~1 s, and the bare-SimPy reference on the same hour in the same run."""
    requests = _requests("hour50", 50.0, 1.0)
    best = {"accelsim": np.inf, "bare SimPy": np.inf}
    for _ in range(ROUNDS):
        best["accelsim"] = min(best["accelsim"], _best(accelsim_serving, requests, 1.0)[0])
    best["bare SimPy"] = _best(bare_simpy, requests, 1.0)[0]  # one round: seconds each
    benchmark.pedantic(accelsim_serving, args=(requests, 1.0), rounds=1, iterations=1)
    trace = simulate_serving(
        ReplicaModel(COST, CAPACITY, MAX_BATCH, CHUNK),
        requests,
        ReplicaPlan(np.full(1, REPLICAS, dtype=np.int64)),
        1.0,
    )
    seconds = best["accelsim"]
    with capsys.disabled():
        print(
            f"\nserving, an hour of 50 requests/s on 8 replicas: {requests.arrival_hours.size:,}"
            f" requests, {trace.iterations:,} batch iterations, {seconds:.3f} s of CPU "
            f"(issue target ~1 s; {seconds / trace.iterations * 1e9:.0f} ns per iteration); "
            f"bare SimPy {best['bare SimPy']:.2f} s "
            f"({best['bare SimPy'] / seconds:.1f}x accelsim's time)"
        )
    assert best["bare SimPy"] >= seconds


def test_long_prompts_against_bare_simpy(
    benchmark: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Prompts of 2,000-6,000 tokens in chunks of 256, 10 requests/s on 8 replicas: requests
    per CPU-second, accelsim / bare >= 1x, same first-token times."""
    chunk, hours = 256, 0.05
    requests = _requests("long", 10.0, hours, prompts=(2000, 6000))
    best = {"accelsim": np.inf, "bare SimPy": np.inf}
    ttft: dict[str, np.ndarray] = {}
    for _ in range(ROUNDS):
        for name, f in (("accelsim", accelsim_serving), ("bare SimPy", bare_simpy)):
            seconds, ttft[name] = _best(f, requests, hours, chunk)
            best[name] = min(best[name], seconds)
    np.testing.assert_allclose(ttft["accelsim"], ttft["bare SimPy"], rtol=1e-9, atol=1e-9)
    n = requests.arrival_hours.size
    rates = {name: n / s for name, s in best.items()}
    ratio = rates["accelsim"] / rates["bare SimPy"]
    benchmark.extra_info.update({f"{k} requests/s": round(v) for k, v in rates.items()})
    benchmark.pedantic(accelsim_serving, args=(requests, hours, chunk), rounds=1, iterations=1)
    with capsys.disabled():
        print(
            f"\nserving, long prompts (2,000-6,000 tokens, chunks of {chunk}): {n:,} requests "
            f"over {hours * 60:.0f} min (CPU time, best of {ROUNDS})"
        )
        for name, r in rates.items():
            print(f"  {name:12s} {r:>10,.0f} requests/s")
        print(f"  accelsim / bare SimPy = {ratio:.2f}x (target >= 1x); same TTFTs")
    assert ratio >= 1.0


def accelsim_disaggregated(requests: RequestStream, hours: float) -> np.ndarray:
    """4 prefill + 4 decode replicas, each prompt's cache over 4 x 50 GB/s."""
    half = np.full(int(np.ceil(hours)), REPLICAS // 2, dtype=np.int64)
    out = simulate_serving_disaggregated(
        ReplicaModel(COST, CAPACITY, MAX_BATCH, 0),
        ReplicaModel(COST, CAPACITY, MAX_BATCH, 0, decode_only=True),
        requests,
        kv_transfer_seconds(requests.input_tokens, 163840.0, 200.0),
        (ReplicaPlan(half), ReplicaPlan(half)),
        hours,
    )
    return np.where(out.trace.first_token, out.trace.ttft_s, -1.0)


def test_an_hour_on_disaggregated_pools(benchmark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """The hour of 50 requests/s on 4 prefill + 4 decode replicas: CPU seconds, best of
    ``ROUNDS``, against the colocated hour on 8 replicas in the same run."""
    requests = _requests("hour50", 50.0, 1.0)
    best = {"colocated": np.inf, "disaggregated": np.inf}
    for _ in range(ROUNDS):
        for name, f in (("colocated", accelsim_serving), ("disaggregated", accelsim_disaggregated)):
            best[name] = min(best[name], _best(f, requests, 1.0)[0])
    benchmark.pedantic(accelsim_disaggregated, args=(requests, 1.0), rounds=1, iterations=1)
    with capsys.disabled():
        print(
            f"\nserving, an hour of 50 requests/s: colocated (8 replicas) "
            f"{best['colocated']:.2f} s, disaggregated (4 + 4) {best['disaggregated']:.2f} s "
            f"of CPU ({best['disaggregated'] / best['colocated']:.2f}x)"
        )
