"""Small batch limits: the fast path's admission queue against the request DES.

A replica whose batch limit ``L`` (``max_batch`` here; a KV cache that fits a few
long-context sequences alike) is small makes requests wait for a slot: the fast path models
that wait as an M/G/L queue (``latency_under_load``, ``_admission_wait``). Before it, the
fast path shed all load at ``L = 1`` (finished 0, where the DES serves every request) and
gave a TTFT p99 of ~20 ms at ``L = 4`` and 4 requests/s where the DES has 1.6 s.

Llama 3.1 8B FP8 on one H100, 500-token prompts, 100 output tokens, one hour, 72 runs
(seed 2024), ``max_batch`` 1, 2, 4, 8 at 0.2-0.7, 0.5-1.5, 1-3 and 2-6 requests/s (10-70 %
of the slots' capacity), chunked (2,048) and prefill-first, at the shipped
``compute_memory_overlap`` (0) and at the roofline max (1). Median DES/fast ratio over runs,
measured (chunked / prefill-first; overlap 0, overlap 1 in brackets):

====  ===========================  ===========================  ========
L     TTFT p50                     TTFT p99                     TPOT p50
====  ===========================  ===========================  ========
1     0.77 / 0.77 (0.71 / 0.71)    0.91 / 0.91 (0.91 / 0.91)    1.00
2     0.91 / 0.91 (0.88 / 0.87)    1.03 / 1.04 (1.03 / 1.03)    1.00
4     0.99 / 0.99 (0.99 / 0.99)    1.13 / 1.15 (1.12 / 1.14)    1.00
8     1.00 / 1.00 (1.00 / 1.00)    1.12 / 1.26 (1.01 / 1.13)    1.00
====  ===========================  ===========================  ========

(with one slot nothing shares an iteration: chunked and prefill-first alike; efficiency drawn
from the CUDA FP8 dense group's pooled law, 0.41-0.83, where the stack's 0.32-0.95 gave 1.17
for the prefill-first p99 at ``L = 8``.) SLO attainment,
mean over runs: within 0.03. Runs: the p99 ratio of a run jumps where the slot wait's
probability crosses 1 % (between no wait and a wait at the p99), so over 24 runs its median has
a bootstrap standard error of 0.05 at ``L = 4`` and 0.09-0.14 at ``L = 8``; seeds 2024, 7, 1, 2
and 3 gave 1.26, 0.99, 1.07, 1.12, 1.08 at ``L = 4`` prefill-first at overlap 0 and 1.21, 0.98,
1.10, 1.11, 1.07 at 1 (the same spread: not the overlap). 72 runs bring the standard error to
0.03-0.06, below the budgets' resolution. Where it is weak: (a) the TTFT median at ``L = 1-2``
(fast high by 10-30 %): the wait is zero-or-exponential with its mass ``π = θ·E[A]`` above
Erlang C's (mean and tail rate kept), so near a 50 % chance of waiting the median falls inside
the wait while the DES's does not. (b) The p99 at ``L = 4-8`` (fast low by up to 21 %: DES/fast
1.26). At ``L = 4`` an exact M/D/L simulation (FCFS, Poisson arrivals) with the fast path's own
mean holding time gives the DES's TTFT p99 within 5 % per run, so the gap is the slot wait's
law: at light load the wait given a wait of a near-constant holding time has a coefficient of
variation ~0.78, which a zero-or-exponential law (no hyperexponential) has not; against the
exact M/D/L wait it understates the p99 by 22-27 % where the probability of a wait is just
above 1 % (``L = 2-8``). At ``L = 8`` the DES's per-window p99 also averages windows on both
sides of that 1 %. (c) Near the slots' capacity the engines part: with seed 7, in a few runs
the fast path finds the slots saturated (it sheds) where the DES serves a one-hour run. Budgets
below are the figures' distance from 1 rounded up, by regime; runs are not bounded one by one
(a run near the slots' capacity moves its ratio by 10x). SLO attainment: the fast path's is per
hour (0 or 1 over a one-hour run), the DES's per 5-minute window: compared as the mean over
runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from tests.serving_overlap import OVERLAPS, at_overlap

import accelsim as acs
from accelsim.engines import simulate_serving_block, simulate_serving_fast

RUNS = 72
RATES = {1: (0.2, 0.7), 2: (0.5, 1.5), 4: (1.0, 3.0), 8: (2.0, 6.0)}
# Budget on |median DES/fast − 1| per limit: TTFT p50, TTFT p99.
BUDGETS = {1: (0.35, 0.20), 2: (0.15, 0.10), 4: (0.07, 0.25), 8: (0.05, 0.30)}


def _scenario(limit: int, chunk: int, **changes: Any) -> acs.Scenario:
    low, high = RATES[limit]
    svc = acs.Serving(
        model="llama-3.1-8b",
        precision="fp8",
        rate_rps=acs.Uniform(low=low, high=high),
        input_tokens=500,
        output_tokens=100,
        max_batch=limit,
        prefill_chunk_tokens=chunk,
        slo=acs.SLO(ttft_ms=2000, tpot_ms=100),
        chips_per_replica=1,
        horizon_days=1.0 / 24,
        **changes,
    )
    pool = acs.Pool(chip="h100-sxm", count=1, provider="aws")
    return acs.Scenario(name="small-batch", workload=svc, fleet=[pool])


@pytest.mark.parametrize("overlap", OVERLAPS)
@pytest.mark.parametrize("chunk", [2048, 0])
@pytest.mark.parametrize("limit", [1, 2, 4, 8])
def test_small_batch_limits_agree(limit: int, chunk: int, overlap: float) -> None:
    s = _scenario(limit, chunk)
    root = np.random.SeedSequence(2024)
    cat = at_overlap(overlap)
    fast, _ = simulate_serving_fast(s, root, 0, RUNS, cat=cat)
    des, _ = simulate_serving_block(s, root, 0, RUNS, cat=cat)
    # The fast path no longer sheds what the slots hold.
    assert (fast["finished"] == 1.0).all()
    assert (des["finished"] == 1.0).all()
    p50_budget, p99_budget = BUDGETS[limit]
    for metric, budget in (
        ("ttft_p50_ms", p50_budget),
        ("ttft_p99_ms", p99_budget),
        ("tpot_p50_ms", 0.03),
    ):
        median = float(np.median(des[metric] / fast[metric]))
        assert abs(median - 1.0) <= budget, (limit, chunk, overlap, metric, median)
    gap = abs(float(np.mean(des["slo_attainment"])) - float(np.mean(fast["slo_attainment"])))
    assert gap <= 0.15, (limit, chunk, overlap, gap)
