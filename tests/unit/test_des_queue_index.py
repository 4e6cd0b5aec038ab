"""Issue 33 item 4: the cluster's queue index bounds a policy's work per event, and changes
no decision.

Exactness: each indexed policy replays seeded scenarios (several pools with speeds, whole
domains, pool preferences, priorities, estimates, checkpoints, failures and repairs,
overload) to the same event log and job records as the same policy sorting the queue on
every event (``tests/oracles/sorted_schedulers.py``, the code before the index). Work: in an
overloaded run whose
queue reaches thousands of jobs, the jobs a policy looks at per call stay bounded by the job
shapes and starts, where sorting the queue looks at every waiting job every time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest
from tests.oracles import sorted_schedulers

import accelsim.engines.cluster.des._schedulers as schedulers
from accelsim.engines.cluster.des import JobSpec, PoolSpec, run
from accelsim.engines.cluster.des._queue import QueueIndex
from accelsim.engines.cluster.des._schedulers import SCHEDULERS, Scheduler

INDEXED = ("backfill", "smallest_first", "priority", "priority_preemptive")


def _unindexed(policy: Scheduler) -> Scheduler:
    """The same policy as it was before the index, sorting the queue on every call
    (``tests/oracles/sorted_schedulers.py``)."""
    name = next(k for k, v in SCHEDULERS.items() if v is policy)
    return sorted_schedulers.SCHEDULERS[name]  # type: ignore[return-value]


def _jobs(seed: int, n: int, pools: int, horizon: float) -> list[JobSpec]:
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.uniform(0.0, horizon, n))
    submit[5:9] = submit[5]  # a batch submitted at one instant, ids out of order
    ids = np.arange(n)
    ids[5:9] = ids[5:9][::-1]
    jobs = []
    for i in range(n):
        prefs = tuple(int(p) for p in rng.permutation(pools)[: rng.integers(1, pools + 1)])
        jobs.append(
            JobSpec(
                job_id=int(ids[i]),
                submit_hours=float(submit[i]),
                chips=int(rng.choice([1, 2, 3, 4, 8, 12, 16])),
                work_hours=float(rng.lognormal(1.5, 1.0)),
                priority=int(rng.integers(0, 3)),
                pools=prefs if rng.random() < 0.6 else None,
                estimate_hours=float(rng.lognormal(0.7, 1.0)) if rng.random() < 0.5 else None,
                whole_domains=bool(rng.random() < 0.3),
                checkpoint_interval_hours=0.5 if rng.random() < 0.3 else None,
                checkpoint_write_hours=0.02 if rng.random() < 0.3 else 0.0,
                restart_hours=0.1,
                preemptible=bool(rng.random() < 0.8),
            )
        )
    return jobs


def _pools(seed: int) -> list[PoolSpec]:
    rng = np.random.default_rng(seed + 1000)
    repair = lambda g, n: g.exponential(3.0, n)  # noqa: E731
    return [
        PoolSpec("a", chips=24, domain_chips=4, failure_rate_per_chip_hour=0.003,
                 repair_hours=repair),
        PoolSpec("b", chips=16, speed=float(rng.uniform(0.5, 2.0)), domain_chips=8,
                 preemptions_per_chip_hour=0.002, lead_time_hours=3.0),
        PoolSpec("c", chips=32, slice_sizes=(4, 8, 16), slice_multiple=32),
    ]  # fmt: skip


@pytest.mark.parametrize("name", INDEXED)
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_indexed_policy_replays_the_sorting_one(name: str, seed: int) -> None:
    """Same events, same job records, same metrics: with load past capacity, so the queue
    grows and requeued jobs return to their places."""
    pools = _pools(seed)
    jobs = _jobs(seed, 600, len(pools), horizon=150.0)
    kwargs: dict[str, object] = {
        "horizon_hours": 160.0,
        "warmup_hours": 10.0,
        "seed_seq": np.random.SeedSequence(seed),
        "keep_jobs": True,
        "keep_events": True,
    }
    indexed = run(pools, jobs, scheduler=name, **kwargs)  # type: ignore[arg-type]
    sorting = run(pools, jobs, scheduler=_unindexed(SCHEDULERS[name]), **kwargs)  # type: ignore[arg-type]
    assert indexed.jobs_queued_at_horizon > 20  # the queue did grow
    assert indexed.events == sorting.events
    assert indexed.jobs == sorting.jobs
    assert indexed.mean_wait_hours == sorting.mean_wait_hours
    assert indexed.pools == sorting.pools


def _count_looks(monkeypatch: pytest.MonkeyPatch) -> Callable[[], int]:
    """Count the waiting jobs a policy looks at: through ``_first_fit`` (smallest_first,
    priority_preemptive, backfill's head search), by iterating the queue or the index by
    priority, or as a candidate of backfill's pass over the index."""
    seen = [0]
    first_fit = schedulers._first_fit

    def counting_fit(job: object, free: list[int]) -> object:
        seen[0] += 1
        return first_fit(job, free)  # type: ignore[arg-type]

    iterate = schedulers.ReadOnlyQueue.__iter__

    def counting_iter(self: schedulers.ReadOnlyQueue) -> Iterator[schedulers.Waiting]:
        for job in iterate(self):
            seen[0] += 1
            yield job

    by_priority = QueueIndex.in_priority_order

    def counting_priority(self: QueueIndex) -> Iterator[schedulers.Waiting]:
        for job in by_priority(self):
            seen[0] += 1
            yield job

    short_fits = schedulers._short_fits

    def counting_backfill(*args: object) -> list[int] | None:
        seen[0] += 1
        return short_fits(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(schedulers, "_first_fit", counting_fit)
    monkeypatch.setattr(schedulers, "_short_fits", counting_backfill)
    monkeypatch.setattr(QueueIndex, "in_priority_order", counting_priority)
    monkeypatch.setattr(schedulers.ReadOnlyQueue, "__iter__", counting_iter)
    return lambda: seen[0]


@pytest.mark.parametrize("name", INDEXED)
def test_work_per_event_does_not_grow_with_the_queue(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """3x overload on 64 chips for 400 h: the queue passes 1,000 jobs. A policy that sorts
    the queue looks at every waiting job on every call (millions in all); the indexed one
    at a few per job started."""
    rng = np.random.default_rng(7)
    n = 3000
    submit = np.cumsum(rng.exponential(400.0 / n, n))
    sizes = rng.choice([1, 2, 4, 8], n)
    work = rng.lognormal(1.5, 0.8, n)
    jobs = [
        JobSpec(i, float(submit[i]), int(sizes[i]), float(work[i]), int(i % 3)) for i in range(n)
    ]
    looks = _count_looks(monkeypatch)
    res = run(
        [PoolSpec("p", chips=64)], jobs, scheduler=name, horizon_hours=400.0,
        seed_seq=np.random.SeedSequence(1),
    )  # fmt: skip
    assert res.offered_load > 2.0
    assert res.jobs_queued_at_horizon > 1000
    # Each call looks at the jobs it starts plus, per shape or priority, one that blocks;
    # a call per arrival and per completion.
    calls = res.jobs_arrived + res.jobs_completed
    assert looks() <= 4 * res.jobs_completed + 8 * calls, (looks(), calls)
