"""Trace files (``engines/cluster/des/_trace.py``) over generated rows, and their replay.

Oracle: the reading rule its docstring states, applied by hand to the rows written: jobs
sorted by submission (file order among equal times), times from the first submission,
converted to hours by the unit, numbered from 0; zero-chip or zero-duration rows skipped
with ``skip_zero`` and otherwise reported, every one, by line. A replay of one-chip jobs
under FIFO must start them at the Kiefer-Wolfowitz recursion's times (each job takes the
earliest-free chip), an implementation independent of the engine's.
"""

from __future__ import annotations

import csv
import heapq
import itertools
import math
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from accelsim.engines.cluster.des import JobSpec, PoolSpec, TraceError, read_trace, run
from accelsim.seeding import as_seed_sequence

HOURS = {"s": 1 / 3600, "min": 1 / 60, "h": 1.0}

rows_strategy = st.lists(
    st.tuples(
        st.integers(0, 10**6) | st.floats(0.0, 1e6),  # submit
        st.integers(0, 64),  # chips (0: a CPU-only job)
        st.integers(0, 10**5) | st.floats(0.0, 1e5),  # duration (0: failed at once)
        st.integers(-3, 3),  # priority
        st.floats(1.0, 1e5),  # estimate
    ),
    min_size=1,
    max_size=25,
)


def _write(path: Path, rows: list[tuple[float, int, float, int, float]]) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["submit", "chips", "duration", "priority", "estimate"])
        for submit, chips, duration, prio, est in rows:
            w.writerow([repr(submit), chips, repr(duration), prio, repr(est)])


@given(rows_strategy, st.sampled_from(sorted(HOURS)))
def test_reading_sorts_rebases_converts_and_skips_as_stated(
    rows: list[tuple[float, int, float, int, float]], unit: str
) -> None:
    kept = [(s, line, c, d, p, e) for line, (s, c, d, p, e) in enumerate(rows) if c and d]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "trace.csv")
        _write(path, rows)
        if len(kept) < len(rows):  # without skip_zero, every zero row is reported by line
            with pytest.raises(TraceError) as err:
                read_trace(path, time_unit=unit)  # type: ignore[arg-type]
            zero_lines = [i + 2 for i, r in enumerate(rows) if not (r[1] and r[2])]
            assert [line for line, _ in err.value.problems] == zero_lines
        if not kept:
            assert read_trace(path, time_unit=unit, skip_zero=True) == []  # type: ignore[arg-type]
            return
        jobs = read_trace(path, time_unit=unit, skip_zero=True)  # type: ignore[arg-type]
    kept.sort(key=lambda r: (r[0], r[1]))
    first = kept[0][0]
    h = HOURS[unit]
    assert [j.job_id for j in jobs] == list(range(len(kept)))
    for job, (submit, _, chips, duration, prio, est) in zip(jobs, kept, strict=True):
        assert job.submit_hours == (submit - first) * h
        assert job.chips == chips
        assert job.work_hours == duration * h
        assert job.priority == prio
        assert job.estimate_hours == est * h
    assert jobs[0].submit_hours == 0.0
    assert all(a.submit_hours <= b.submit_hours for a, b in itertools.pairwise(jobs))


def _kiefer_wolfowitz(jobs: list[JobSpec], servers: int) -> list[float]:
    free = [0.0] * servers
    starts = []
    for j in jobs:
        start = max(free[0], j.submit_hours)
        starts.append(start)
        heapq.heapreplace(free, start + j.work_hours)
    return starts


@given(
    st.lists(st.tuples(st.integers(0, 36_000), st.integers(1, 20_000)), min_size=1, max_size=40),
    st.integers(1, 6),
)
def test_a_one_chip_trace_replays_at_the_kiefer_wolfowitz_starts(
    rows: list[tuple[int, int]], servers: int
) -> None:
    """Seconds in the file, hours in the engine: FIFO starts equal the recursion's."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "trace.csv")
        _write(path, [(s, 1, d, 0, float(d)) for s, d in rows])
        jobs = read_trace(path)
    res = run([PoolSpec("p", chips=servers)], jobs, scheduler="fifo", horizon_hours=1e6,
              seed_seq=as_seed_sequence(0), keep_jobs=True)  # fmt: skip
    assert res.jobs is not None
    got = [j.first_start_hours for j in res.jobs]
    want = _kiefer_wolfowitz(jobs, servers)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)
    assert res.jobs_completed == len(jobs)
    # nothing lost: chip-hours allocated are the trace's chip-hours
    total = sum(j.work_hours for j in jobs)
    assert math.isclose(res.pools[0].allocated_chip_hours, total, rel_tol=1e-9)
