"""DES behaviours, each as a tiny scenario and one equality on its record log.

Failures and preemptions are injected at chosen times through the cluster's own entry points
(``chip_down`` / ``chip_up``), so the logs are exact; the random strike processes are tested
for their rates in ``test_des_run.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import pytest
import simpy

from accelsim.engines.cluster.des import JobSpec, PoolSpec, run
from accelsim.engines.cluster.des._attempts import attempt_hours, progress, segments
from accelsim.engines.cluster.des._cluster import Cluster, wakeup
from accelsim.engines.cluster.des._processes import Arrivals
from accelsim.engines.cluster.des._records import EventRecord, Recorder
from accelsim.engines.cluster.des._schedulers import resolve_scheduler
from accelsim.models import reliability

SEED = np.random.SeedSequence(2024)


def _cluster(
    pools: Sequence[PoolSpec], jobs: Sequence[JobSpec], scheduler: str = "fifo"
) -> tuple[simpy.Environment, Cluster, Recorder]:
    """A delivered cluster with its jobs scheduled to arrive, not yet run."""
    env = simpy.Environment(initial_time=0.0)
    rec = Recorder(
        len(pools),
        warmup_hours=0.0,
        horizon_hours=1e3,
        bin_hours=None,
        keep_jobs=True,
        keep_events=True,
    )
    cluster = Cluster(env, pools, resolve_scheduler(scheduler), rec)
    for p in range(len(pools)):
        cluster.deliver(p)
    Arrivals(cluster, jobs, 1e3).start()
    return env, cluster, rec


def _at(env: simpy.Environment, hours: float, action: Callable[[], object]) -> None:
    wakeup(env, hours - env.now, lambda _: action(), None)


def _log(events: Sequence[EventRecord] | None) -> list[tuple[float, str, int, int, int, int]]:
    """(time, kind, pool, job, busy, up), rounded to absorb float noise in sums of hours."""
    assert events is not None
    return [
        (round(e.time_hours, 9), e.kind, e.pool, e.job_id, e.busy_chips, e.up_chips)
        for e in events
        if e.kind != "arrive"
    ]


def test_gang_job_waits_for_all_its_chips() -> None:
    """6 + 4 chips on an 8-chip pool: the 4-chip job waits for the 6-chip one to finish."""
    jobs = [JobSpec(0, 0.0, chips=6, work_hours=2.0), JobSpec(1, 0.5, chips=4, work_hours=1.0)]
    res = run(
        [PoolSpec("p", chips=8)],
        jobs,
        scheduler="fifo",
        horizon_hours=10.0,
        seed_seq=SEED,
        keep_events=True,
    )
    assert _log(res.events) == [
        (0.0, "deliver", 0, -1, 0, 8),
        (0.0, "start", 0, 0, 6, 8),
        (2.0, "finish", 0, 0, 0, 8),
        (2.0, "start", 0, 1, 4, 8),
        (3.0, "finish", 0, 1, 0, 8),
    ]


def test_failure_loses_work_since_checkpoint_and_waits_for_repair() -> None:
    """W = 10 h, tau = 3, C = 0.5, R = 1 on exactly 4 chips; a chip fails at t = 8.

    Segments end at 3.5 and 7.0, so 6 h are saved and 1 h lost; the job waits for the
    repair (t = 10), pays the restart, then 3 + 0.5 and 1 + 0.5: it ends at 10 + 1 + 5 = 16.
    """
    job = JobSpec(
        0,
        0.0,
        chips=4,
        work_hours=10.0,
        checkpoint_interval_hours=3.0,
        checkpoint_write_hours=0.5,
        restart_hours=1.0,
    )
    env, cluster, rec = _cluster([PoolSpec("p", chips=4)], [job])
    _at(env, 8.0, lambda: cluster.chip_down(0, 0, "failure", stays_down=True))
    _at(env, 10.0, lambda: cluster.chip_up(0, "failure"))
    env.run(until=100.0)
    assert _log(rec.events) == [
        (0.0, "deliver", 0, -1, 0, 4),
        (0.0, "start", 0, 0, 4, 4),
        (8.0, "interrupt", 0, 0, 0, 4),
        (8.0, "fail", 0, -1, 0, 3),
        (10.0, "repair", 0, -1, 0, 4),
        (10.0, "start", 0, 0, 4, 4),
        (16.0, "finish", 0, 0, 0, 4),
    ]
    assert rec.jobs is not None
    assert rec.jobs[0].lost_compute_hours == pytest.approx(1.0)


def test_failure_restarts_at_once_on_spare_chips() -> None:
    """A spare chip: the interrupted 2-chip job restarts at the failure time, not the repair."""
    job = JobSpec(0, 0.0, chips=2, work_hours=4.0, restart_hours=0.25)
    env, cluster, rec = _cluster([PoolSpec("p", chips=3)], [job])
    _at(env, 1.0, lambda: cluster.chip_down(0, 1, "failure", stays_down=True))
    _at(env, 9.0, lambda: cluster.chip_up(0, "failure"))
    env.run(until=100.0)
    # No checkpoints: the first hour is lost; 0.25 h restart + 4 h of work from t = 1.
    assert [(t, k, j) for t, k, _, j, _, _ in _log(rec.events)] == [
        (0.0, "deliver", -1),
        (0.0, "start", 0),
        (1.0, "interrupt", 0),
        (1.0, "fail", -1),
        (1.0, "start", 0),
        (5.25, "finish", 0),
        (9.0, "repair", -1),
    ]


def test_strike_on_an_idle_or_down_chip_interrupts_nobody() -> None:
    """Positions [0, busy) are busy chips, [busy, up) idle, [up, chips) already down."""
    env, cluster, rec = _cluster([PoolSpec("p", chips=4)], [JobSpec(0, 0.0, 2, 5.0)])
    _at(env, 1.0, lambda: cluster.chip_down(0, 3, "failure", stays_down=True))  # idle
    _at(env, 2.0, lambda: cluster.chip_down(0, 3, "failure", stays_down=True))  # down: nothing
    env.run(until=100.0)
    assert [(t, k, busy, up) for t, k, _, _, busy, up in _log(rec.events)] == [
        (0.0, "deliver", 0, 4),
        (0.0, "start", 2, 4),
        (1.0, "fail", 2, 3),
        (5.0, "finish", 0, 3),
    ]


def test_spot_preemption_takes_capacity_until_it_returns() -> None:
    """A preempted chip of a 2-chip pool stops the 2-chip job until the capacity returns."""
    env, cluster, rec = _cluster([PoolSpec("spot", chips=2)], [JobSpec(0, 0.0, 2, 3.0)])
    _at(env, 1.0, lambda: cluster.chip_down(0, 0, "preemption", stays_down=True))
    _at(env, 4.0, lambda: cluster.chip_up(0, "preemption"))
    env.run(until=100.0)
    assert _log(rec.events) == [
        (0.0, "deliver", 0, -1, 0, 2),
        (0.0, "start", 0, 0, 2, 2),
        (1.0, "interrupt", 0, 0, 0, 2),
        (1.0, "preempt", 0, -1, 0, 1),
        (4.0, "return", 0, -1, 0, 2),
        (4.0, "start", 0, 0, 2, 2),
        (7.0, "finish", 0, 0, 0, 2),
    ]
    assert rec.events is not None
    assert [e.cause for e in rec.events if e.kind == "interrupt"] == ["preemption"]


def test_lead_time_delays_capacity() -> None:
    """Chips arrive after a 5 h lead time; a job submitted at 0 starts at 5."""
    res = run(
        [PoolSpec("p", chips=2, lead_time_hours=5.0)],
        [JobSpec(0, 0.0, 2, 1.0)],
        scheduler="fifo",
        horizon_hours=20.0,
        seed_seq=SEED,
        keep_events=True,
    )
    assert _log(res.events) == [
        (5.0, "deliver", 0, -1, 0, 2),
        (5.0, "start", 0, 0, 2, 2),
        (6.0, "finish", 0, 0, 0, 2),
    ]
    assert res.mean_wait_hours == 5.0
    assert res.pools[0].available_chip_hours == 2 * 15.0


def test_whole_domains_round_the_allocation_up() -> None:
    """Domains of 8 on 16 chips: 5 chips hold 8; 9 chips would hold 16, so that job waits,
    while a 6-chip job that does not ask for whole domains fits beside the first."""
    jobs = [
        JobSpec(0, 0.0, chips=5, work_hours=2.0, whole_domains=True),
        JobSpec(1, 0.0, chips=9, work_hours=1.0, whole_domains=True),
        JobSpec(2, 0.0, chips=6, work_hours=1.0),
    ]
    res = run(
        [PoolSpec("p", chips=16, domain_chips=8)],
        jobs,
        scheduler="smallest_first",
        horizon_hours=10.0,
        seed_seq=SEED,
        keep_events=True,
    )
    assert _log(res.events) == [
        (0.0, "deliver", 0, -1, 0, 16),
        (0.0, "start", 0, 0, 8, 16),
        (0.0, "start", 0, 2, 14, 16),
        (1.0, "finish", 0, 2, 8, 16),
        (2.0, "finish", 0, 0, 0, 16),
        (2.0, "start", 0, 1, 16, 16),
        (3.0, "finish", 0, 1, 0, 16),
    ]
    # Rounding is allocated but not useful: 8 chips held for 5 used during 2 h.
    pool = res.pools[0]
    assert pool.allocated_chip_hours - pool.useful_chip_hours == pytest.approx(3 * 2.0 + 7 * 1.0)


def test_priority_preemptive_evicts_the_lower_priority_job() -> None:
    """A priority-5 job arrives on a full pool; the priority-0 job is evicted and resumes."""
    jobs = [JobSpec(0, 0.0, 4, 4.0, priority=0), JobSpec(1, 1.0, 4, 1.0, priority=5)]
    res = run(
        [PoolSpec("p", chips=4)],
        jobs,
        scheduler="priority_preemptive",
        horizon_hours=20.0,
        seed_seq=SEED,
        keep_events=True,
    )
    assert _log(res.events) == [
        (0.0, "deliver", 0, -1, 0, 4),
        (0.0, "start", 0, 0, 4, 4),
        (1.0, "interrupt", 0, 0, 0, 4),
        (1.0, "start", 0, 1, 4, 4),
        (2.0, "finish", 0, 1, 0, 4),
        (2.0, "start", 0, 0, 4, 4),
        (6.0, "finish", 0, 0, 0, 4),
    ]
    assert res.pools[0].interruptions_policy == 1


def test_job_prefers_its_first_listed_pool_and_scales_with_speed() -> None:
    """Pools (1, 0): the job runs on pool 1 (speed 2), so 4 h of work take 2 h."""
    pools = [PoolSpec("slow", chips=4), PoolSpec("fast", chips=4, speed=2.0)]
    res = run(
        pools,
        [JobSpec(0, 0.0, 4, 4.0, pools=(1, 0))],
        scheduler="fifo",
        horizon_hours=10.0,
        seed_seq=SEED,
        keep_jobs=True,
    )
    assert res.jobs is not None
    record = res.jobs[0]
    assert (record.pool, record.end_hours) == (1, 2.0)


@pytest.mark.parametrize(
    ("work", "interval", "write", "restart"),
    [(10.0, 2.0, 0.1, 0.5), (10.0, 3.0, 0.2, 0.0), (9.0, 3.0, 0.0, 1.0), (1.0, 5.0, 0.3, 0.2)],
)
def test_attempt_layout_matches_the_reliability_model(
    work: float, interval: float, write: float, restart: float
) -> None:
    """Failure-free, an attempt lasts what models.reliability says (no restart on the first)."""
    expected = float(reliability.expected_completion_hours(work, interval, write, restart, 0.0))
    assert attempt_hours(0.0, *segments(work, interval), write) == pytest.approx(expected)


def test_progress_counts_only_completed_writes_as_saved() -> None:
    """Mid-write the segment is not yet saved; after the write it is."""
    layout = segments(10.0, 3.0)
    assert progress(3.2, 0.0, *layout, 0.5) == pytest.approx((3.0, 0.0))
    assert progress(3.5, 0.0, *layout, 0.5) == pytest.approx((3.0, 3.0))
    done, saved = progress(100.0, 0.0, *layout, 0.5)
    assert (done, saved) == pytest.approx((10.0, 9.0))  # the final write is due at 12.0
    assert math.isclose(attempt_hours(0.0, *layout, 0.5), 12.0)
