"""Hypothesis: the FIFO recursion equals the event loop on any qualifying run, ties included.

Blocks of 1 to 1,024 jobs (the recursion reads and integrates in blocks). Inputs are
drawn to collide: submission gaps and work from a small grid (0, 0.25, 0.5, ...)
so that arrivals, starts and ends often share an instant, plus free floats. Per-job starts
and ends must be equal exactly (both take the same float operations: the start is an
arrival's clock time or an end ``S + d``). Level integrals and sums may add the same terms
in another order when several events share an instant (the event loop may split a segment
at an instant where the queue length changes and changes back), so the metrics are held to
``1e-9`` relative (float rounding of sums of at most a few hundred terms is ~1e-13).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.oracles import fifo_recursion as _fifo
from tests.oracles.fifo_recursion import simulate_fifo

from accelsim.engines.cluster import des
from accelsim.engines.cluster.des import DesResult, JobSpec, PoolSpec
from accelsim.engines.cluster.des._schedulers import resolve_scheduler

BLOCK = _fifo.BLOCK
GRID = st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.0])
TIME = st.one_of(GRID, st.floats(0.0, 3.0, allow_nan=False, allow_subnormal=False))


@st.composite
def cases(draw: st.DrawFn) -> tuple[PoolSpec, list[JobSpec], float, float, float | None]:
    cap = draw(st.integers(1, 12))
    n = draw(st.integers(0, 40))
    t = 0.0
    jobs = []
    for i in range(n):
        t += draw(TIME)
        work = draw(TIME.filter(lambda x: x > 0.0))
        chips = draw(st.integers(1, cap))
        ckpt = draw(st.booleans())
        jobs.append(
            JobSpec(
                i, t, chips, work, 0, None, None, False, 0.5 if ckpt else None, 0.1 if ckpt else 0.0
            )
        )
    horizon = draw(st.floats(0.5, 60.0))
    warmup = draw(st.floats(0.0, 0.9)) * horizon
    bins = draw(st.one_of(st.none(), st.floats(0.3, 20.0)))
    pool = PoolSpec("p", chips=cap, speed=draw(st.sampled_from([1.0, 0.5, 3.0])))
    _fifo.BLOCK = draw(st.sampled_from([1, 2, 5, 1024]))  # restored by the test
    return pool, jobs, horizon, warmup, bins


def _close(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-9, atol=1e-9, equal_nan=True))
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return all(_close(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@settings(max_examples=300, deadline=None)
@given(cases())
def test_recursion_equals_the_event_loop(
    case: tuple[PoolSpec, list[JobSpec], float, float, float | None],
) -> None:
    pool, jobs, horizon, warmup, bins = case
    try:
        fast = simulate_fifo([pool], jobs, horizon_hours=horizon, warmup_hours=warmup,
                             keep_jobs=True, utilization_resolution_hours=bins)  # fmt: skip
    finally:
        _fifo.BLOCK = BLOCK
    slow = des._event_loop([pool], jobs, resolve_scheduler("fifo"), horizon_hours=horizon,
                           warmup_hours=warmup, seed_seq=np.random.SeedSequence(0),
                           keep_jobs=True, keep_events=False,
                           utilization_resolution_hours=bins)  # fmt: skip
    assert isinstance(fast, DesResult)
    assert fast.jobs is not None
    assert slow.jobs is not None
    starts = [(r.job_id, r.first_start_hours, r.end_hours, r.pool, r.allocated_chips)
              for r in fast.jobs]  # fmt: skip
    want = [(r.job_id, r.first_start_hours, r.end_hours, r.pool, r.allocated_chips)
            for r in slow.jobs]  # fmt: skip
    assert [str(x) for x in starts] == [str(x) for x in want]  # exact, nan included
    for f in dataclasses.fields(DesResult):
        x, y = getattr(fast, f.name), getattr(slow, f.name)
        assert _close(x, y), f"{f.name}: recursion {x!r} != event loop {y!r}"
