"""The request DES's compiled kernel: its heap, its array bounds, its formulas, its cache.

The kernel's behaviour is held by the DES tests and the brute-force oracle
(``test_serving_des_oracle.py``); these hold what compiling it adds: the hand-written heap
against ``heapq``, the exact bound on the replicas a plan provisions (the kernel's arrays
are sized by it), the compiled formulas against the plain-Python ones bit for bit, the
errors raised from inside the kernel, and where its machine code is cached (a user folder
named by the sources' digest, never inside the package). Under ``-p tests.no_numba`` the
same tests hold the plain-Python kernel.
"""

from __future__ import annotations

import heapq
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.serving_costs import llama_8b_fp8_h100

import accelsim
from accelsim.engines.serving.des import ReplicaModel, ReplicaPlan, RequestStream, simulate_serving
from accelsim.engines.serving.des._jit import (
    COMPILED,
    cache_folder,
    jit,
    kernel_sources,
    prepare,
    run_time,
    seconds,
    user_cache_root,
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


def test_a_changed_source_compiles_into_a_new_cache_folder(tmp_path: Path) -> None:
    """numba checks a cached function against its own file only: the folder is named by a
    digest of every kernel source, so an edit to a called formula cannot reuse old code."""
    source = tmp_path / "kernel.py"
    source.write_text("x = 1\n")
    first = cache_folder([source], tmp_path / "cache")
    assert first is not None
    assert first.is_dir()
    assert first.is_relative_to(tmp_path / "cache" / "numba")
    assert cache_folder([source], tmp_path / "cache") == first
    source.write_text("x = 2\n")
    assert cache_folder([source], tmp_path / "cache") != first


def test_an_unwritable_cache_root_means_no_disk_cache(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert cache_folder(kernel_sources(), blocker) is None


@pytest.mark.parametrize(
    ("environ", "platform", "want"),
    [
        ({"ACCELSIM_CACHE_DIR": "/c"}, "linux", Path("/c")),
        ({"XDG_CACHE_HOME": "/x"}, "linux", Path("/x/accelsim")),
        ({}, "linux", Path.home() / ".cache" / "accelsim"),
        ({}, "darwin", Path.home() / "Library" / "Caches" / "accelsim"),
        ({"LOCALAPPDATA": "/l"}, "win32", Path("/l/accelsim")),
    ],
)
def test_the_user_cache_folder(environ: dict[str, str], platform: str, want: Path) -> None:
    assert user_cache_root(environ, platform) == want


def test_the_kernel_sources_include_the_formulas_it_compiles() -> None:
    names = {path.name for path in kernel_sources()}
    assert {"_iteration.py", "_runs.py", "_replica.py", "_jit.py"} <= names
    assert all(path.is_file() for path in kernel_sources())


def test_the_kernel_is_compiled_exactly_when_numba_imports() -> None:
    def f(x: float) -> float:
        return x + 1.0

    try:
        import numba  # noqa: F401
    except ImportError:
        importable = False
    else:
        importable = True
    assert importable is COMPILED  # (a stray numba block in a normal run would show here)
    compiled = jit(f)
    assert (compiled is not f) is COMPILED
    assert compiled(1.0) == 2.0


def test_nothing_is_written_inside_the_installed_package(tmp_path: Path) -> None:
    """A DES run in a fresh process caches (when compiled) under ACCELSIM_CACHE_DIR only."""
    package = Path(accelsim.__file__).parent
    before = {p: p.stat().st_mtime_ns for p in package.rglob("*") if p.suffix in {".nbi", ".nbc"}}
    code = (
        "import numpy as np, accelsim\n"
        "from accelsim.engines.serving.des import ReplicaModel, ReplicaPlan, RequestStream, "
        "simulate_serving\n"
        "from tests.serving_costs import llama_8b_fp8_h100\n"
        "m = ReplicaModel(llama_8b_fp8_h100(), 1e6, max_batch=8, prefill_chunk_tokens=0)\n"
        "s = RequestStream(np.array([0.0, 0.1]), np.array([100, 100]), np.array([5, 5]))\n"
        "assert simulate_serving(m, s, ReplicaPlan(np.array([1])), 1.0).completed.all()\n"
    )
    prelude = "import tests.no_numba; tests.no_numba.block()\n" if not COMPILED else ""
    env = {**os.environ, "ACCELSIM_CACHE_DIR": str(tmp_path)}
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", prelude + code], env=env, cwd=root, check=True,
                   timeout=300)  # fmt: skip
    after = {p: p.stat().st_mtime_ns for p in package.rglob("*") if p.suffix in {".nbi", ".nbc"}}
    assert after == before
    cached = list(tmp_path.rglob("*.nbi"))
    assert bool(cached) is COMPILED


def test_an_unbounded_kv_capacity_is_simulated_not_an_error() -> None:
    """``kv_capacity_tokens=inf`` (the batch limit alone binds) sized the heaps by
    ``inf // tokens``, a nan, and failed; the pure-Python DES accepted it."""
    stream = RequestStream(np.array([0.0, 0.1]), np.array([100, 100]), np.array([5, 5]))
    for capacity in (math.inf, 1e300):
        model = ReplicaModel(llama_8b_fp8_h100(), capacity, max_batch=8, prefill_chunk_tokens=0)
        trace = simulate_serving(model, stream, ReplicaPlan(np.array([1])), 1.0)
        assert trace.completed.all()


_TWO_SPEEDS = """
import dataclasses, sys
import numpy as np
from accelsim.engines.serving.des import ReplicaModel, ReplicaPlan, RequestStream, simulate_serving
from tests.serving_costs import llama_8b_fp8_h100

rng = np.random.default_rng(5)
n = 3000
arrival = np.sort(rng.uniform(0.0, 2.5, n))
stream = RequestStream(arrival, rng.integers(20, 3000, n), rng.integers(1, 400, n))
plan = ReplicaPlan(np.array([1, 3, 2]), cold_start_hours=0.05)
out = {}
for chunk, router in ((0, "least_loaded"), (512, "round_robin")):
    model = ReplicaModel(llama_8b_fp8_h100(), 60_000.0, max_batch=64, prefill_chunk_tokens=chunk)
    trace = simulate_serving(model, stream, plan, 2.5, router=router)
    for f in dataclasses.fields(trace):
        out[f"{chunk}.{f.name}"] = np.asarray(getattr(trace, f.name))
np.savez(sys.argv[1], **out)
"""


def test_one_kernel_at_two_speeds_gives_the_same_bits(tmp_path: Path) -> None:
    """The plain-Python kernel (numba made unimportable) and the compiled one play the same
    fleet (a plan that scales with cold starts, prefill-first and chunked, both routers) to
    the same bits: one implementation, two speeds. Without numba both sides run plain."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "ACCELSIM_CACHE_DIR": str(tmp_path / "cache")}
    files = {}
    for label, prelude in (
        ("plain", "import tests.no_numba; tests.no_numba.block()\n"),
        ("default", ""),
    ):
        files[label] = tmp_path / f"{label}.npz"
        subprocess.run([sys.executable, "-c", prelude + _TWO_SPEEDS, str(files[label])],
                       env=env, cwd=root, check=True, timeout=600)  # fmt: skip
    plain, default = np.load(files["plain"]), np.load(files["default"])
    assert sorted(plain.files) == sorted(default.files)
    assert plain["0.iterations"] > 1000
    for name in plain.files:
        assert np.array_equal(plain[name], default[name], equal_nan=True), name
