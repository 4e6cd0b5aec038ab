"""The serving DES against queueing theory and the steady-state throughput formula.

Oracles
-------
- M/D/1 (batch 1, one-token outputs: each request is one prefill iteration of fixed length
  ``S``): mean wait ``rho S / (2 (1 - rho))``, Pollaczek-Khinchine (Kleinrock, *Queueing
  Systems* vol. 1, 1975, sec. 5.7).
- Little's law on a sample path (Stidham 1974): over a window that starts and ends empty,
  the time-average number in system equals arrivals / window x mean sojourn.
- :func:`accelsim.models.serving.throughput_at_batch`: exact for the DES whenever every
  iteration is memory-bound (derivation in the test's docstring).

Tolerances are k standard errors estimated from the run itself (batch means, or independent
sampling), with k = 4.5: a two-sided normal tail of 7e-6, so any seed passes and a biased
engine fails; each test also bounds its SE so it cannot lose its power silently.
"""

from __future__ import annotations

import numpy as np
import pytest

from accelsim.engines.serving.des import ReplicaModel, ReplicaPlan, RequestStream, simulate_serving
from accelsim.models.serving import (
    IterationCost,
    iteration_cost,
    iteration_seconds,
    offline_tokens_per_s,
    throughput_at_batch,
)

H = 3600.0
K_SE = 4.5


def _cost() -> IterationCost:
    """Llama-3.1-8B-like dense model on one H100-like chip at 50 % of the roofline."""
    return iteration_cost(
        active_params=8e9,
        total_params=8e9,
        layers=32,
        d_model=4096,
        weight_bytes=16e9,
        kv_bytes_per_token=131072.0,
        chips=1,
        peak_tflops=989,
        hbm_tbps=3.35,
        interconnect_gbps=900,
        efficiency=0.5,
        overhead_seconds=0.004,
    )


def _batch_means(x: np.ndarray, batches: int) -> tuple[float, float]:
    """Mean and its standard error from ``batches`` contiguous batch means."""
    means = x[: x.size // batches * batches].reshape(batches, -1).mean(axis=1)
    return float(means.mean()), float(means.std(ddof=1) / np.sqrt(batches))


@pytest.mark.parametrize(("rho", "n"), [(0.5, 100_000), (0.8, 200_000)])
def test_batch_one_is_md1_pollaczek_khinchine(rho: float, n: int) -> None:
    """Mean wait (TTFT - S) of an M/D/1 queue: P-K within 4.5 batch-means SEs.

    40 batches of 2,500-5,000 customers, far longer than the wait's correlation (about
    ``1/(1 - sqrt(rho))**2`` = 12 and 90 services at rho = 0.5 and 0.8), so the batch means
    are nearly independent; the first 2,000 customers (a start from empty) are dropped.
    The SE is held below 3 % of the oracle (the design SE: about 1.5 % and 2 %).
    """
    cost = _cost()
    prompt = 512
    service_s = float(iteration_seconds(cost, 0, prompt, 0, prompt / 2.0))
    rng = np.random.default_rng(20240513)
    gaps_s = rng.exponential(service_s / rho, n)
    arrival_hours = np.cumsum(gaps_s) / H
    horizon = float(arrival_hours[-1]) + 1.0
    trace = simulate_serving(
        ReplicaModel(cost, 1e6, max_batch=1, prefill_chunk_tokens=0),
        RequestStream(arrival_hours, np.full(n, prompt), np.ones(n, dtype=np.int64)),
        ReplicaPlan(np.ones(int(np.ceil(horizon)), dtype=np.int64)),
        horizon,
    )
    assert trace.completed.all()
    waits = trace.ttft_s[2000:] - service_s
    mean, se = _batch_means(waits, 40)
    oracle = rho * service_s / (2.0 * (1.0 - rho))
    assert se < 0.03 * oracle
    assert abs(mean - oracle) <= K_SE * se


def test_littles_law_on_the_trace() -> None:
    """Time-average number in system, sampled at 20,000 uniform instants, = (n / T) W.

    Four replicas, Poisson arrivals at ~60 % of their decode capacity, mixed prompt and
    output lengths, chunked prefill. The window [0, T] starts empty and ends when the last
    request completes, so Little's law holds exactly on the path; the only error is the
    sampling of N(t) at independent uniform instants, whose SE is std(N) / sqrt(M).
    """
    rng = np.random.default_rng(11)
    n, rate_per_s = 6000, 40.0
    arrival_hours = np.cumsum(rng.exponential(1.0 / rate_per_s, n)) / H
    inputs = rng.integers(50, 2000, n)
    outputs = rng.integers(1, 300, n)
    horizon = float(np.ceil(arrival_hours[-1] + 0.5))
    trace = simulate_serving(
        ReplicaModel(_cost(), 300_000.0, max_batch=64, prefill_chunk_tokens=256),
        RequestStream(arrival_hours, inputs, outputs),
        ReplicaPlan(np.full(int(horizon), 4, dtype=np.int64)),
        horizon,
    )
    assert trace.completed.all()
    start = arrival_hours * H
    end = start + trace.e2e_s
    window = float(end.max())
    instants = np.sort(rng.uniform(0.0, window, 20_000))
    in_system = np.searchsorted(start, instants, side="right") - np.searchsorted(
        np.sort(end), instants, side="right"
    )
    time_average = float(in_system.mean())
    se = float(in_system.std(ddof=1) / np.sqrt(instants.size))
    little = n / window * float(trace.e2e_s.mean())
    assert se < 0.02 * little
    assert abs(time_average - little) <= K_SE * se


def test_saturated_throughput_is_throughput_at_batch_when_memory_bound() -> None:
    """3,000 requests at t = 0 on one replica: tokens / busy time vs the formula.

    Every iteration here is memory-bound (checked below), so its time is linear in the KV
    tokens and constant otherwise: W s_byte + kv_bytes s_byte kv + overhead. Summed over the
    run, the busy time is then ``I f(B, ., B (in + out/2))`` with ``I`` the iterations and
    ``B`` the realised batch, the decoded tokens per iteration: each sequence decodes
    ``out - 1`` tokens (its first comes from its prefill) at contexts in+1 ... in+out-1,
    mean ``in + out/2``, exactly the formula's steady state. The DES emits ``out`` tokens
    per sequence where the formula counts ``out - 1`` decoded ones, so
    DES / ``throughput_at_batch(B)`` = out / (out - 1) exactly; tolerance 1e-9 (rounding).
    """
    cost = _cost()
    n, prompt, output, max_batch, chunk = 3000, 200, 100, 64, 64
    largest = max_batch + chunk
    compute_s = float(
        (cost.flops_per_token * largest + cost.attention_flops_per_context_token * 1e5)
        * cost.seconds_per_flop
    )
    memory_s = float(cost.weight_bytes * cost.seconds_per_byte)
    assert compute_s < memory_s  # the precondition: memory-bound everywhere
    trace = simulate_serving(
        ReplicaModel(cost, 1e6, max_batch=max_batch, prefill_chunk_tokens=chunk),
        RequestStream(np.zeros(n), np.full(n, prompt), np.full(n, output)),
        ReplicaPlan(np.ones(2, dtype=np.int64)),
        2.0,
    )
    assert trace.completed.all()
    tokens = trace.output_tokens_total
    realised_batch = (tokens - n) / trace.iterations
    # the budget caps it: B decodes and C - B prompt tokens an iteration, so B sequences
    # join per out iterations when B = (C - B)·out/in, B = C·out/(in + out) = 21.3 (the
    # start, a batch filling, takes ~1 %; a budget for prompts only would give C·out/in = 32)
    assert realised_batch == pytest.approx(chunk * output / (prompt + output), rel=0.03)
    measured = tokens / (trace.busy_replica_hours * H)
    formula = float(throughput_at_batch(cost, realised_batch, prompt, output))
    assert measured / formula == pytest.approx(output / (output - 1), rel=1e-9)
    # The offline throughput the engines size replicas by takes the same budget-capped
    # batch (without the cap it would run the 64-sequence limit: 2.8x the DES here).
    offline = float(offline_tokens_per_s(cost, 1e6, prompt, output, max_batch, chunk))
    assert measured * (output - 1) / output == pytest.approx(offline, rel=0.03)


def test_chunked_prefill_lowers_p99_tpot_on_long_prompts() -> None:
    """10 % of prompts are 8,000 tokens: chunks of 512 give a lower p99 TPOT than
    prefill-first.

    Prefill-first stops every decoding sequence for the whole compute-bound prompt (about
    0.27 s here, twenty decode iterations); chunked prefill runs the prompt 512 tokens at a
    time inside decode iterations, which are memory-bound, so much of the prompt's compute
    hides under the weight reads and no decode step waits for a whole prompt. Same arrivals
    and lengths for both.
    """
    rng = np.random.default_rng(5)
    n, rate_per_s = 4000, 5.0
    arrival_hours = np.cumsum(rng.exponential(1.0 / rate_per_s, n)) / H
    inputs = np.where(rng.random(n) < 0.1, 8000, 200)
    outputs = rng.integers(100, 300, n)
    horizon = float(np.ceil(arrival_hours[-1] + 0.2))
    p99 = {}
    for chunk in (0, 512):
        trace = simulate_serving(
            ReplicaModel(_cost(), 500_000.0, max_batch=128, prefill_chunk_tokens=chunk),
            RequestStream(arrival_hours, inputs, outputs),
            ReplicaPlan(np.ones(int(horizon), dtype=np.int64)),
            horizon,
        )
        assert trace.completed.all()
        p99[chunk] = float(np.quantile(trace.tpot_s, 0.99))
    assert p99[512] < p99[0]
