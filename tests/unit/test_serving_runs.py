"""Closed-form runs of iterations (models/serving/_runs.py) against their iterations.

Oracles: a decode-only run is :func:`scalar_decode_stretch_seconds` bit for bit (same float
operations in the same order); any run is the sum of :func:`iteration_seconds` over its
iterations, summed exactly with ``math.fsum``, to ``rel = 1e-12``: every iteration time and
the closed form are sums of a few positive products each rounded to ~2**-53 relative, so
they differ by a few 1e-16; 1e-12 bounds that with a wide margin, while one iteration too
many or too few, or a chunk's context off by one token, moves a run by far more.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.oracles.scalar_formulas import scalar_decode_stretch_seconds, scalar_iteration_run

from accelsim.models import serving as sv


def _cost(active: float, overhead: float, chips: int = 4) -> sv.IterationCost:
    return sv.iteration_cost(
        active_params=active, total_params=70e9, layers=80, d_model=8192,
        weight_bytes=70e9, kv_bytes_per_token=163840.0, chips=chips, peak_tflops=989,
        hbm_tbps=3.35, interconnect_gbps=900, efficiency=0.6, overhead_seconds=overhead,
    )  # fmt: skip


def _oracle(cost: sv.IterationCost, decode: int, kv: int, prefill: int, done: int, n: int) -> float:
    """Iteration by iteration, as the DES plays a chunk: context = pairs / prefill tokens."""
    times = []
    for i in range(n):
        pairs = prefill * ((done + prefill * i) + prefill / 2.0)
        context = pairs / prefill if prefill else 0.0
        cached = kv + decode * i if decode else 0
        times.append(float(sv.iteration_seconds(cost, decode, prefill, cached, context)))
    return math.fsum(times)


@given(
    active=st.sampled_from([70e9, 13e9, 1e6]),  # dense; MoE; a tiny active share
    overhead=st.sampled_from([0.0, 0.004]),
    chips=st.sampled_from([1, 8]),
    decode=st.integers(1, 4096),
    kv=st.integers(0, 10**8),
    iterations=st.integers(0, 10**6),
)
def test_a_decode_only_run_is_the_decode_stretch_bit_for_bit(
    active: float, overhead: float, chips: int, decode: int, kv: int, iterations: int
) -> None:
    cost = _cost(active, overhead, chips)
    run = scalar_iteration_run(cost)(decode, kv, 0, 0.0)
    expected = scalar_decode_stretch_seconds(cost)(decode, kv, iterations)
    assert sv.run_seconds(run, iterations) == expected
    assert math.isfinite(expected)


@given(
    active=st.sampled_from([70e9, 13e9]),
    decode=st.integers(0, 2048),
    kv=st.integers(0, 4_000_000),
    prefill=st.sampled_from([1, 64, 512, 8192]),
    done=st.integers(0, 100_000),
    iterations=st.integers(0, 60),
)
def test_a_run_is_the_sum_of_its_iterations(
    active: float, decode: int, kv: int, prefill: int, done: int, iterations: int
) -> None:
    cost = _cost(active, 0.004)
    cached = kv if decode else 0  # the DES's convention: no decode, no cache read
    run = scalar_iteration_run(cost)(decode, cached, prefill, done + prefill / 2.0)
    got = sv.run_seconds(run, iterations)
    assert got == pytest.approx(_oracle(cost, decode, kv, prefill, done, iterations), rel=1e-12)
    # a run's first k iterations take no longer than its first k + 1
    assert sv.run_seconds(run, iterations + 1) > got >= 0.0


def test_prefill_runs_cross_from_memory_to_compute_bound_inside() -> None:
    """Small decode batch with a growing prefill context: the roofline switches inside the
    run (found by brute force over a grid), and the closed form still matches."""
    cost = _cost(70e9, 0.004)
    f = scalar_iteration_run(cost)
    crossings = 0
    rng = np.random.default_rng(5)
    for _ in range(300):
        decode, kv = int(rng.integers(0, 64)), int(rng.integers(0, 200_000))
        prefill, done = int(rng.choice([16, 64, 256])), int(rng.integers(0, 50_000))
        n = int(rng.integers(2, 400))
        run = f(decode, kv if decode else 0, prefill, done + prefill / 2.0)
        leading = run[4]  # iterations before the roofline switches side
        crossings += 0 < leading < n
        expected = _oracle(cost, decode, kv, prefill, done, n)
        assert sv.run_seconds(run, n) == pytest.approx(expected, rel=1e-12)
    assert crossings >= 5  # the switch inside a run is exercised, not just one side
