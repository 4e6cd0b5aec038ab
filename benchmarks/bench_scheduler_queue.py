"""Scheduler cost against the queue's length: each policy with the cluster's queue index
against the same policy sorting the whole queue at every event (issue 33 item 4).

Run with ``make bench`` (pytest-benchmark); not part of the test suite. The workload is an
overloaded stream on one 256-chip pool (offered load ~2.5: sizes 1-32 chips as in the
public traces, log-normal work of median 4 h), so the queue grows through the run to
thousands of jobs. For each of ``backfill``, ``smallest_first``, ``priority`` (three
priorities) and ``priority_preemptive``, in one process and interleaved, best of
``ROUNDS`` CPU seconds:

- the indexed policy on ``JOBS`` and on ``2 * JOBS`` jobs (the horizon doubled with them),
  whose ratio is the growth exponent's witness: 2 for a cost per event that does not grow
  with the queue, 4 for one that grows linearly with it;
- the reference, the same policy over a snapshot without the index (``queue_index=None``),
  which sorts the queue at every event as the policies did before, on ``JOBS`` jobs.

Both give the same schedule (asserted here on the event log; tested in
``tests/unit/test_des_queue_index.py``).

Measured (CPU s, best of 3, two cores shared with other work, so +-30 %), 2026-11-29,
indexed / sorting on 6,000 jobs, then the indexed policy on 12,000 over 6,000:
``backfill`` (queue up to 3,461) 0.16 / 1.08 s (7.0x), 2.03x; ``smallest_first`` (1,312)
0.08 / 1.54 s (19x), 2.12x; ``priority`` (3,734) 0.04 / 2.21 s (50x), 2.16x;
``priority_preemptive`` (3,887) 0.08 / 2.51 s (30x), 2.46x. The study-level reproductions
of the issue are in the CHANGELOG entry of issue 33.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from accelsim.engines.cluster.des import DesResult, JobSpec, PoolSpec, run
from accelsim.engines.cluster.des._schedulers import SCHEDULERS, QueueSnapshot, Scheduler

pytestmark = pytest.mark.bench

ROUNDS = 3
JOBS = 6000
CHIPS = 256
LOAD = 2.5
SIZES = np.array([1, 2, 4, 8, 16, 32])
WEIGHTS = np.array([0.4, 0.15, 0.15, 0.2, 0.07, 0.03])
POLICIES = ("backfill", "smallest_first", "priority", "priority_preemptive")


def _jobs(n: int) -> tuple[list[JobSpec], float]:
    """``n`` jobs of the overloaded stream and the horizon that holds them. [h]"""
    rng = np.random.default_rng(33)
    work = rng.lognormal(np.log(4.0), 1.0, n)
    sizes = rng.choice(SIZES, n, p=WEIGHTS)
    rate = LOAD * CHIPS / float(np.mean(sizes) * np.mean(work))
    submit = np.cumsum(rng.exponential(1.0 / rate, n))
    prio = rng.integers(0, 3, n)
    jobs = [
        JobSpec(i, float(submit[i]), int(sizes[i]), float(work[i]), int(prio[i])) for i in range(n)
    ]
    return jobs, float(submit[-1]) + 1.0


def _sorting(policy: Scheduler) -> Scheduler:
    def reference(snap: QueueSnapshot) -> Any:
        return policy(snap._replace(queue_index=None))

    return reference


def _best(
    policy: str | Scheduler, jobs: Sequence[JobSpec], horizon: float
) -> tuple[float, DesResult]:
    best, res = float("inf"), None
    for _ in range(ROUNDS):
        start = time.process_time()
        res = run([PoolSpec("p", chips=CHIPS)], jobs, scheduler=policy, horizon_hours=horizon,
                  seed_seq=np.random.SeedSequence(1), keep_events=True)  # fmt: skip
        best = min(best, time.process_time() - start)
    assert res is not None
    return best, res


@pytest.mark.parametrize("name", POLICIES)
def test_policy_cost_against_the_queue(
    name: str, benchmark: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    jobs, horizon = _jobs(JOBS)
    twice, horizon2 = _jobs(2 * JOBS)
    indexed, res = _best(name, jobs, horizon)
    doubled, _ = _best(name, twice, horizon2)
    sorting, ref = _best(_sorting(SCHEDULERS[name]), jobs, horizon)
    assert res.events == ref.events  # the same schedule
    queue = max(e.queued_jobs for e in res.events or ())
    line = (
        f"{name}: {JOBS:,} jobs (queue up to {queue:,}) indexed {indexed:.2f} s, sorting "
        f"{sorting:.2f} s ({sorting / indexed:.1f}x); {2 * JOBS:,} jobs indexed {doubled:.2f} s "
        f"({doubled / indexed:.2f}x for 2x the jobs)"
    )
    with capsys.disabled():
        print(line)
    benchmark.extra_info.update(
        {"indexed s": indexed, "sorting s": sorting, "doubling ratio": doubled / indexed}
    )
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    assert indexed < sorting
