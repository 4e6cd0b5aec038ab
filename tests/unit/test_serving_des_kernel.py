"""The request DES's compiled kernel: its heap, its array bounds, its formulas, its cache.

The kernel's behaviour is held by the DES tests and the brute-force oracle
(``test_serving_des_oracle.py``); these hold what compiling it adds: the hand-written heap
against ``heapq``, the exact bound on the replicas a plan provisions (the kernel's arrays
are sized by it), the compiled formulas against the plain-Python ones bit for bit, the
errors raised from inside the kernel, and the guard against a stale on-disk cache.
"""

from __future__ import annotations

import heapq
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.serving_costs import llama_8b_fp8_h100

from accelsim.engines.serving.des import ReplicaModel, ReplicaPlan, RequestStream, simulate_serving
from accelsim.engines.serving.des._jit import (
    clear_stale_cache,
    kernel_sources,
    prepare,
    run_time,
    seconds,
)
from accelsim.engines.serving.des._replica import heap_pop, heap_push
from accelsim.engines.serving.des._run import play_fleet
from accelsim.engines.serving.des._state import provisioned_bound
from accelsim.models.serving import (
    iteration_terms,
    run_seconds,
    terms_iteration_run,
    terms_iteration_seconds,
)

_OPS = st.lists(
    st.one_of(st.integers(0, 2**62), st.sampled_from([0, 1, 2**62]), st.none()),
    max_size=300,
)


@given(ops=_OPS)
def test_the_compiled_heap_pops_what_heapq_pops(ops: list[int | None]) -> None:
    """A push per integer, a pop per ``None`` (on a non-empty heap): the same steps come
    out in the same order as from ``heapq``, and each pop's request carries its step."""
    steps, requests = np.zeros(len(ops), np.int64), np.zeros(len(ops), np.int64)
    reference: list[tuple[int, int]] = []
    size = 0
    for index, op in enumerate(ops):
        if op is not None:
            heap_push(steps, requests, size, op, index)
            heapq.heappush(reference, (op, index))
            size += 1
        elif size:
            request = heap_pop(steps, requests, size)
            size -= 1
            expected_step = heapq.heappop(reference)[0]
            assert ops[request] == expected_step
    assert sorted(steps[:size].tolist()) == sorted(step for step, _ in reference)


@given(
    plan=st.lists(st.integers(0, 6), min_size=1, max_size=8),
    cold=st.sampled_from([0.0, 0.25, 1.5]),
    n=st.integers(0, 40),
)
def test_a_plan_provisions_exactly_the_replicas_its_bound_counts(
    plan: list[int], cold: float, n: int
) -> None:
    """The kernel's replica arrays are sized by :func:`provisioned_bound`, so it must never
    be exceeded; it is exact (each hour provisions its rise over the last hour's count)."""
    hours = float(len(plan))
    rng = np.random.default_rng(n)
    stream = RequestStream(
        np.sort(rng.uniform(0.0, hours, n)), rng.integers(1, 400, n), rng.integers(1, 50, n)
    )
    model = ReplicaModel(llama_8b_fp8_h100(), 5_000.0, max_batch=4, prefill_chunk_tokens=8)
    replica_plan = ReplicaPlan(np.array(plan, dtype=np.int64), cold_start_hours=cold)
    played = play_fleet(model, stream, replica_plan, hours, "least_loaded", 10**7)
    assert int(played.fleet["replicas"][0]) == provisioned_bound(replica_plan.replicas_per_hour)


_COUNT = st.integers(0, 10**6)


@given(
    active=st.sampled_from([8e9, 1e9, 1.0]),
    decode=_COUNT,
    prefill=_COUNT,
    kv=st.integers(0, 10**9),
    context=st.floats(0.0, 1e6),
    steps=st.integers(0, 10**7),
)
def test_the_compiled_formulas_give_the_plain_python_bits(
    active: float, decode: int, prefill: int, kv: int, context: float, steps: int
) -> None:
    """The kernel runs the model's plain-float formulas compiled: bit for bit the same
    numbers, a mixture of experts' power of a float included (numba's power of an integer
    exponent would differ in the last bits)."""
    terms = iteration_terms(llama_8b_fp8_h100(active_params=active))
    assert seconds(terms, decode, prefill, kv, context) == terms_iteration_seconds(
        terms, decode, prefill, kv, context
    )
    if decode + prefill == 0:
        return
    run = terms_iteration_run(terms, decode, kv, prefill, context)
    assert prepare(terms, decode, kv, prefill, context) == run
    assert run_time(run, steps) == run_seconds(run, steps)


def test_an_iteration_time_that_is_not_positive_is_a_clear_error() -> None:
    model = ReplicaModel(
        llama_8b_fp8_h100(overhead_seconds=-1.0), 10_000.0, max_batch=1, prefill_chunk_tokens=0
    )
    stream = RequestStream(np.zeros(1), np.array([10]), np.array([2]))
    with pytest.raises(RuntimeError, match=r"iteration time must be > 0 s, got -0\.99"):
        simulate_serving(model, stream, ReplicaPlan(np.array([1])), 1.0)


def test_a_changed_source_clears_the_compiled_cache(tmp_path: Path) -> None:
    source = tmp_path / "kernel.py"
    source.write_text("x = 1\n")
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    stale = cache / "kernel.f-1.py311.nbi"
    stale.write_text("old")
    assert clear_stale_cache([source])  # no digest yet: cleared
    assert not stale.exists()
    stale.write_text("compiled from x = 1")
    assert not clear_stale_cache([source])  # same sources: kept
    assert stale.exists()
    source.write_text("x = 2\n")
    assert clear_stale_cache([source])
    assert not stale.exists()
    assert (cache / "accelsim_kernel.digest").is_file()


def test_the_kernel_sources_include_the_formulas_it_compiles() -> None:
    names = {path.name for path in kernel_sources()}
    assert {"_iteration.py", "_runs.py", "_replica.py", "_jit.py"} <= names
    assert all(path.is_file() for path in kernel_sources())


def test_an_unbounded_kv_capacity_is_simulated_not_an_error() -> None:
    """``kv_capacity_tokens=inf`` (the batch limit alone binds) sized the heaps by
    ``inf // tokens``, a nan, and failed; the pure-Python DES accepted it."""
    stream = RequestStream(np.array([0.0, 0.1]), np.array([100, 100]), np.array([5, 5]))
    for capacity in (math.inf, 1e300):
        model = ReplicaModel(llama_8b_fp8_h100(), capacity, max_batch=8, prefill_chunk_tokens=0)
        trace = simulate_serving(model, stream, ReplicaPlan(np.array([1])), 1.0)
        assert trace.completed.all()
