"""Scheduling policies on hand-built queue snapshots (no simulation)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from accelsim.engines.cluster.des._schedulers import (
    SCHEDULERS,
    Evict,
    Fit,
    QueueSnapshot,
    Running,
    Start,
    Waiting,
    backfill,
    easy_backfill_plan,
    fifo,
    priority,
    priority_preemptive,
    resolve_scheduler,
    smallest_first,
)


def _job(job_id: int, chips: int, hours: float = 1.0, *, prio: int = 0, t: float = 0.0) -> Waiting:
    return Waiting(t, job_id, chips, prio, (Fit(0, chips, hours),), True)


def _run(job_id: int, chips: int, end: float, *, prio: int = 0, start: float = 0.0) -> Running:
    return Running(job_id, 0, chips, prio, 0.0, start, end, True)


def _snap(pending: Sequence[Waiting], free: int, running: Sequence[Running] = ()) -> QueueSnapshot:
    return QueueSnapshot(0.0, list(pending), (free,), {r.job_id: r for r in running})


def _started(decisions: Sequence[object]) -> list[int]:
    return [d.job.job_id for d in decisions if isinstance(d, Start)]


def test_fifo_head_blocks_smaller_jobs_behind_it() -> None:
    """Strict order: job 1 (6 chips) does not fit in 4, so job 2 (1 chip) waits too."""
    snap = _snap([_job(0, 2), _job(1, 6), _job(2, 1)], free=6)
    assert _started(fifo(snap)) == [0]


def test_smallest_first_starts_every_job_that_fits_smallest_first() -> None:
    snap = _snap([_job(0, 5), _job(1, 2), _job(2, 3), _job(3, 2)], free=7)
    assert _started(smallest_first(snap)) == [1, 3, 2]


def test_priority_orders_by_priority_then_submission() -> None:
    pending = [_job(0, 1, prio=0), _job(1, 1, prio=2, t=1.0), _job(2, 1, prio=2, t=2.0)]
    assert _started(priority(_snap(pending, free=2))) == [1, 2]


def test_backfill_reserves_for_the_head_and_fills_around_it() -> None:
    """8 chips, 2 free; running: 4 end at t=3, 2 end at t=10. The head needs 6: reserved at 3
    with 0 spare. Job 2 (2 chips, 2 h) ends before 3: backfilled. Job 3 (1 chip, 5 h) would
    end after 3 and there is no spare: it waits."""
    running = [_run(10, 4, end=3.0), _run(11, 2, end=10.0)]
    pending = [_job(1, 6, 4.0), _job(2, 2, 2.0), _job(3, 1, 5.0)]
    decisions, reservation = easy_backfill_plan(_snap(pending, 2, running))
    assert reservation is not None
    assert (reservation.job_id, reservation.start_hours, reservation.spare_chips) == (1, 3.0, 0)
    assert _started(decisions) == [2]


def test_backfill_may_use_chips_the_head_will_not_need() -> None:
    """As above but the head needs 4: 2 chips are spare at t=3, so job 3 backfills too."""
    running = [_run(10, 4, end=3.0), _run(11, 2, end=10.0)]
    pending = [_job(1, 4, 4.0), _job(2, 1, 2.0), _job(3, 1, 5.0), _job(4, 1, 5.0)]
    decisions, reservation = easy_backfill_plan(_snap(pending, 2, running))
    assert reservation is not None
    assert (reservation.start_hours, reservation.spare_chips) == (3.0, 2)
    # Job 2 ends before 3, so it needs no spare; job 3 ends after 3 and takes a spare chip;
    # job 4 could take the other spare, but no chip is free now.
    assert _started(decisions) == [2, 3]
    assert backfill(_snap(pending, 2, running)) == decisions


def test_priority_preemptive_evicts_lowest_priority_most_recent_first() -> None:
    """A priority-3 job needs 4 of 4 busy chips: evict prio-0 jobs, the latest start first."""
    running = [
        _run(10, 2, 9.0, prio=0, start=0.0),
        _run(11, 2, 9.0, prio=0, start=1.0),
        _run(12, 2, 9.0, prio=1, start=0.5),
        _run(13, 2, 9.0, prio=5, start=0.5),
    ]
    snap = _snap([_job(1, 4, prio=3)], free=0, running=running)
    assert priority_preemptive(snap) == [Evict(11), Evict(10), Start(snap.pending[0], 0)]


def test_priority_preemptive_never_evicts_equal_or_higher_priority() -> None:
    running = [_run(10, 4, 9.0, prio=3)]
    assert priority_preemptive(_snap([_job(1, 4, prio=3)], 0, running)) == []


def test_registry_resolves_names_and_suggests_on_typos() -> None:
    assert set(SCHEDULERS) >= {"fifo", "backfill", "smallest_first", "priority"}
    assert resolve_scheduler("backfill") is backfill
    with pytest.raises(KeyError, match="did you mean 'priority'"):
        resolve_scheduler("priorty")
