"""The disaggregated serving DES against queueing theory, pool by pool.

Oracles
-------
- M/D/1 (prefill pool, batch 1, one prompt length ``S``): mean wait ``rho S / (2 (1 -
  rho))``, Pollaczek-Khinchine (Kleinrock, *Queueing Systems* vol. 1, 1975, sec. 5.7) and
  DistServe's (OSDI'24, sec. 3.1) prefill-instance formula; the fast path's
  :func:`~accelsim.models.serving.prefill_latency` mean is the same closed form.
- Little's law on a sample path (Stidham 1974), on each pool: over a window that starts and
  ends empty, the time-average number in the pool equals its arrivals / window x mean
  sojourn there (prefill: arrival to end of prefill; decode: arrival of the KV cache to
  completion).
- M/D/1 (a decode-only replica, batch 1, one prompt and output length): a sequence holds
  the replica for ``D``, the sum of its ``out - 1`` decode iterations, so the wait for
  admission is Pollaczek-Khinchine's with service ``D``.
- The utilisation law at batch 1: the prefill pool's busy time is the sum of its prompts'
  prefill times.

Tolerances are k = 4.5 standard errors estimated from the run itself, as in
test_serving_des_theory.py (two-sided normal tail of 7e-6); each test bounds its SE.
"""

from __future__ import annotations

import numpy as np
import pytest

from accelsim.engines.serving.des import (
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
    prefill_latency,
    prefill_seconds,
)

H = 3600.0
K_SE = 4.5


def _cost() -> IterationCost:
    """Llama-3.1-8B-like dense model on one H100-like chip at 50 % of the roofline."""
    return iteration_cost(
        active_params=8e9, total_params=8e9, layers=32, d_model=4096, weight_bytes=16e9,
        kv_bytes_per_token=131072.0, chips=1, peak_tflops=989, hbm_tbps=3.35,
        interconnect_gbps=900, efficiency=0.5, overhead_seconds=0.004,
    )  # fmt: skip


def _batch_means(x: np.ndarray, batches: int) -> tuple[float, float]:
    means = x[: x.size // batches * batches].reshape(batches, -1).mean(axis=1)
    return float(means.mean()), float(means.std(ddof=1) / np.sqrt(batches))


@pytest.mark.parametrize(("rho", "n"), [(0.5, 100_000), (0.8, 200_000)])
def test_prefill_pool_at_batch_one_is_md1(rho: float, n: int) -> None:
    """Mean wait (TTFT - S - transfer) of the prefill pool: P-K within 4.5 batch-means SEs.

    One-token outputs, so nothing reaches the decode pool; 40 batches, first 2,000
    customers dropped (start from empty); SE held below 3 % of the oracle. Also the fast
    path's mean TTFT at that load is the same closed form.
    """
    cost = _cost()
    prompt = 512
    service_s = float(prefill_seconds(cost, prompt))
    transfer_s = float(kv_transfer_seconds(prompt, 131072.0, 50.0))
    rng = np.random.default_rng(20240514)
    arrival_hours = np.cumsum(rng.exponential(service_s / rho, n)) / H
    horizon = float(arrival_hours[-1]) + 1.0
    hours = int(np.ceil(horizon))
    out = simulate_serving_disaggregated(
        ReplicaModel(cost, 1e6, max_batch=1, prefill_chunk_tokens=0),
        ReplicaModel(cost, 1e6, max_batch=8, prefill_chunk_tokens=0, decode_only=True),
        RequestStream(arrival_hours, np.full(n, prompt), np.ones(n, dtype=np.int64)),
        np.full(n, transfer_s),
        (ReplicaPlan(np.ones(hours, dtype=np.int64)), ReplicaPlan(np.ones(hours, dtype=np.int64))),
        horizon,
    )
    assert out.trace.completed.all()
    waits = out.trace.ttft_s[2000:] - service_s - transfer_s
    mean, se = _batch_means(waits, 40)
    oracle = rho * service_s / (2.0 * (1.0 - rho))
    assert se < 0.03 * oracle
    assert abs(mean - oracle) <= K_SE * se
    fast = prefill_latency(rho / service_s, np.full(1, service_s), np.full(1, transfer_s))
    assert float(fast.ttft_mean_s) == pytest.approx(service_s + transfer_s + oracle, rel=1e-9)
    # utilisation law: busy time = the sum of the prefill services, to float rounding
    assert out.prefill.busy_replica_hours * H == pytest.approx(n * service_s, rel=1e-9)


@pytest.mark.parametrize(("rho", "n"), [(0.5, 50_000), (0.8, 150_000)])
def test_decode_replica_at_batch_one_is_md1(rho: float, n: int) -> None:
    """Mean admission wait of a decode-only replica at batch 1: P-K with service ``D``
    within 4.5 batch-means SEs (40 batches, first 1,000 dropped, SE < 3 % of the oracle);
    every sequence then decodes for exactly ``D`` (TPOT ``D / (out - 1)``)."""
    cost = _cost()
    prompt, out = 512, 40
    steps = np.arange(out - 1)
    service_s = float(np.sum(iteration_seconds(cost, 1.0, 0.0, prompt + 1.0 + steps, 0.0)))
    rng = np.random.default_rng(20240515)
    arrival_hours = np.cumsum(rng.exponential(service_s / rho, n)) / H
    horizon = float(arrival_hours[-1]) + 1.0
    trace = simulate_serving(
        ReplicaModel(cost, 1e6, max_batch=1, prefill_chunk_tokens=0, decode_only=True),
        RequestStream(arrival_hours, np.full(n, prompt), np.full(n, out)),
        ReplicaPlan(np.ones(int(np.ceil(horizon)), dtype=np.int64)),
        horizon,
    )
    assert trace.completed.all()
    np.testing.assert_allclose(trace.e2e_s - trace.ttft_s, service_s, rtol=1e-9)
    np.testing.assert_allclose(trace.tpot_s, service_s / (out - 1), rtol=1e-9)
    mean, se = _batch_means(trace.ttft_s[1000:], 40)
    oracle = rho * service_s / (2.0 * (1.0 - rho))
    assert se < 0.03 * oracle
    assert abs(mean - oracle) <= K_SE * se


def _in_system(
    start: np.ndarray, end: np.ndarray, rng: np.random.Generator
) -> tuple[float, float, float]:
    """(time-average N sampled at 20,000 uniform instants, its SE, Little's n / T x W)."""
    window = float(end.max())
    instants = np.sort(rng.uniform(0.0, window, 20_000))
    count = np.searchsorted(np.sort(start), instants, side="right") - np.searchsorted(
        np.sort(end), instants, side="right"
    )
    little = start.size / window * float((end - start).mean())
    return float(count.mean()), float(count.std(ddof=1) / np.sqrt(instants.size)), little


def test_littles_law_on_each_pool() -> None:
    """Two prefill and two decode replicas, Poisson arrivals, mixed prompt and output
    lengths, batched prefill; the window starts empty and ends when the last request
    completes, so Little's law holds on each pool's path; the only error is the sampling
    of N(t) at independent uniform instants (SE std(N) / sqrt(M))."""
    rng = np.random.default_rng(12)
    n, rate_per_s = 6000, 40.0
    arrival_hours = np.cumsum(rng.exponential(1.0 / rate_per_s, n)) / H
    inputs = rng.integers(50, 2000, n)
    outputs = rng.integers(2, 300, n)
    transfer = kv_transfer_seconds(inputs, 131072.0, 50.0)
    horizon = float(np.ceil(arrival_hours[-1] + 0.5))
    plan = ReplicaPlan(np.full(int(horizon), 2, dtype=np.int64))
    out = simulate_serving_disaggregated(
        ReplicaModel(_cost(), 300_000.0, max_batch=16, prefill_chunk_tokens=0),
        ReplicaModel(_cost(), 300_000.0, max_batch=64, prefill_chunk_tokens=0, decode_only=True),
        RequestStream(arrival_hours, inputs, outputs),
        transfer,
        (plan, plan),
        horizon,
    )
    assert out.trace.completed.all()
    arrive = arrival_hours * H
    prefilled = arrive + out.prefill.ttft_s  # end of its prefill iteration
    handoff = arrive + out.trace.ttft_s  # its cache reaches the decode pool
    assert np.allclose(handoff - prefilled, transfer, rtol=1e-9, atol=1e-9)
    done = arrive + out.trace.e2e_s
    assert np.allclose(handoff + out.decode.e2e_s, done, rtol=1e-12, atol=1e-9)
    for start, end in ((arrive, prefilled), (handoff, done)):
        average, se, little = _in_system(start, end, rng)
        assert se < 0.03 * little
        assert abs(average - little) <= K_SE * se
