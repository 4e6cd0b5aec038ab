"""Invariants of the DES policies and metrics over generated fleets and workloads (hypothesis).

Each property names the bug it would catch. The generators are those of
``test_des_properties.py`` (1-3 pools of up to 24 chips, up to 30 jobs, every policy).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st
from tests.properties.test_des_properties import HORIZON_HOURS, fleets, scenarios, workloads

from accelsim.engines.cluster.des import SCHEDULERS, DesResult, JobSpec, PoolSpec, run
from accelsim.engines.cluster.des._records import JobRecord
from accelsim.seeding import as_seed_sequence

NON_EVICTING = ["fifo", "backfill", "smallest_first", "priority"]


def _run(
    pools: Sequence[PoolSpec],
    jobs: Sequence[JobSpec],
    policy: str,
    *,
    horizon: float = HORIZON_HOURS,
    warmup: float = 0.0,
    seed: int = 7,
) -> DesResult:
    return run(
        pools,
        jobs,
        scheduler=policy,
        horizon_hours=horizon,
        warmup_hours=warmup,
        seed_seq=as_seed_sequence(seed),
        keep_jobs=True,
    )


def _scaled_job(job: JobSpec, k: float) -> JobSpec:
    return job._replace(
        submit_hours=job.submit_hours * k,
        work_hours=job.work_hours * k,
        checkpoint_interval_hours=None
        if job.checkpoint_interval_hours is None
        else job.checkpoint_interval_hours * k,
        checkpoint_write_hours=job.checkpoint_write_hours * k,
        restart_hours=job.restart_hours * k,
    )


@given(
    scenarios(lossy=False),
    st.sampled_from(sorted(SCHEDULERS)),
    st.sampled_from([0.25, 2.0, 1024.0]),
)
def test_rescaling_time_rescales_every_record_exactly(
    scenario: tuple[list[PoolSpec], list[JobSpec]], policy: str, k: float
) -> None:
    """Hours are a unit, not a scale: multiply every time by a power of two (exact in
    floating point) and every start, end, wait and lost hour is multiplied by it, bit for
    bit, under every policy. Catches a constant in hours hidden in the engine (a minimum
    duration, a tie window, a default estimate), which would break the symmetry."""
    pools, jobs = scenario
    base = _run(pools, jobs, policy)
    pools_k = [dataclasses.replace(p, lead_time_hours=p.lead_time_hours * k) for p in pools]
    scaled = _run(pools_k, [_scaled_job(j, k) for j in jobs], policy, horizon=HORIZON_HOURS * k)
    assert base.jobs is not None
    assert scaled.jobs is not None
    for a, b in zip(base.jobs, scaled.jobs, strict=True):
        assert (a.job_id, a.pool, a.allocated_chips, a.interruptions) == (
            b.job_id,
            b.pool,
            b.allocated_chips,
            b.interruptions,
        )
        for name in ("first_start_hours", "end_hours", "lost_compute_hours"):
            x, y = getattr(a, name), getattr(b, name)
            assert (math.isnan(x) and math.isnan(y)) or x * k == y, (name, x, y)
    assert base.jobs_completed == scaled.jobs_completed
    assert base.mean_wait_hours * k == scaled.mean_wait_hours
    assert base.utilization == scaled.utilization


@given(fleets(lossy=False), st.data(), st.sampled_from([0.5, 2.0, 4.0]))
def test_a_pool_of_speed_s_is_a_pool_of_speed_one_with_work_divided_by_s(
    fleet: list[PoolSpec], data: st.DataObject, speed: float
) -> None:
    """On one pool, speed ``s`` and work ``w`` give the same history as speed 1 and work
    ``w / s`` (estimates too, for backfill). Catches a speed applied twice, or to the
    wait, or forgotten on one path (estimates, checkpoint segments)."""
    pool = fleet[0]
    jobs = [j._replace(pools=None) for j in data.draw(workloads([pool], lossless=True))]
    policy = data.draw(st.sampled_from(sorted(SCHEDULERS)))
    fast = _run([dataclasses.replace(pool, speed=speed)], jobs, policy)
    slow_jobs = [j._replace(work_hours=j.work_hours / speed) for j in jobs]
    plain = _run([dataclasses.replace(pool, speed=1.0)], slow_jobs, policy)
    assert fast.jobs is not None
    assert plain.jobs is not None
    for a, b in zip(fast.jobs, plain.jobs, strict=True):
        assert a.first_start_hours == b.first_start_hours or (
            math.isnan(a.first_start_hours) and math.isnan(b.first_start_hours)
        )
        assert a.end_hours == b.end_hours or (math.isnan(a.end_hours) and math.isnan(b.end_hours))


@st.composite
def equal_size_workloads(draw: st.DrawFn) -> tuple[PoolSpec, list[JobSpec]]:
    """One pool; every job needs the same chips (and priorities that are all equal)."""
    chips = draw(st.integers(1, 24))
    size = draw(st.integers(1, chips))
    submits = sorted(draw(st.lists(st.floats(0.0, 35.0), max_size=30)))
    jobs = [
        JobSpec(i, s, size, draw(st.floats(0.1, 12.0)), priority=1) for i, s in enumerate(submits)
    ]
    return PoolSpec("p", chips=chips), jobs


@given(equal_size_workloads())
@example((PoolSpec("p", chips=2), [JobSpec(0, 0.0, 2, 5.0, 1), JobSpec(1, 1.0, 2, 1.0, 1)]))
def test_with_equal_sizes_and_priorities_every_policy_is_fifo(
    case: tuple[PoolSpec, list[JobSpec]],
) -> None:
    """When every job needs the same chips with one priority, a job fits iff the queue's
    head fits, so backfill, smallest-first and both priority policies reduce to FIFO: the
    same job records. Catches a policy that reorders equal jobs (a tie not broken by
    submission then id), or backfill starting a job that does not fit."""
    pool, jobs = case
    want = _run([pool], jobs, "fifo").jobs
    for policy in sorted(SCHEDULERS):
        assert _run([pool], jobs, policy).jobs == want, policy


@given(scenarios(lossy=False), st.integers(0, 3))
def test_priority_preemptive_without_preemptible_jobs_is_priority(
    scenario: tuple[list[PoolSpec], list[JobSpec]], seed: int
) -> None:
    """No job may be evicted: ``priority_preemptive`` must make exactly ``priority``'s
    decisions (same records, no interruption). Catches an eviction of a non-preemptible
    job or a different blocking rule when no room can be made."""
    pools, jobs = scenario
    pinned = [j._replace(preemptible=False) for j in jobs]
    a = _run(pools, pinned, "priority_preemptive", seed=seed)
    b = _run(pools, pinned, "priority", seed=seed)
    assert a.jobs == b.jobs
    assert a.interruptions == 0


@given(scenarios(lossy=False), st.data())
def test_fifo_ignores_priorities(
    scenario: tuple[list[PoolSpec], list[JobSpec]], data: st.DataObject
) -> None:
    """FIFO serves by submission whatever the priorities: redrawing them changes no start,
    end or pool. Catches a FIFO that sorts by priority."""
    pools, jobs = scenario
    redrawn = [j._replace(priority=data.draw(st.integers(-5, 5))) for j in jobs]
    a, b = _run(pools, jobs, "fifo").jobs, _run(pools, redrawn, "fifo").jobs
    assert a is not None
    assert b is not None
    assert [(r.first_start_hours, r.end_hours, r.pool) for r in a] == [
        (r.first_start_hours, r.end_hours, r.pool) for r in b
    ]


@st.composite
def one_chip_queues(draw: st.DrawFn) -> tuple[int, list[JobSpec]]:
    """1-8 servers and up to 40 one-chip jobs, some at the same instant."""
    servers = draw(st.integers(1, 8))
    submits = sorted(draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0]) | st.floats(0, 30),
                                   max_size=40)))  # fmt: skip
    jobs = [JobSpec(i, s, 1, draw(st.floats(0.05, 10.0))) for i, s in enumerate(submits)]
    return servers, jobs


def _waits(records: tuple[JobRecord, ...] | None, horizon: float) -> np.ndarray:
    """Submission to first start (or to the horizon), clamped at 0 as the engine does.

    SimPy's clock reaches a submission time by adding a delay to the previous event's
    time, so a job started at once may show a start an ulp before its submission; the
    engine records such a wait as 0 (``_cluster``: "float noise at 0").
    """
    assert records is not None
    return np.array(
        [
            max((horizon if math.isnan(r.first_start_hours) else r.first_start_hours)
                - r.submit_hours, 0.0)
            for r in records
        ]
    )  # fmt: skip


@given(one_chip_queues(), st.integers(1, 4))
def test_more_chips_never_delay_any_one_chip_job_under_fifo(
    case: tuple[int, list[JobSpec]], extra: int
) -> None:
    """FIFO G/G/c is monotone in c on every sample path: with more servers no customer
    starts later (each takes the earliest-free server; the sorted vector of server-free
    times only falls). So every job's wait, and the mean wait, can only fall. Catches a
    pool whose extra chips are not used, or a scheduler that skips a free chip."""
    servers, jobs = case
    few = _waits(_run([PoolSpec("p", chips=servers)], jobs, "fifo").jobs, HORIZON_HOURS)
    more = _waits(_run([PoolSpec("p", chips=servers + extra)], jobs, "fifo").jobs, HORIZON_HOURS)
    assert np.all(more <= few + 1e-12)


@given(one_chip_queues(), st.data())
def test_longer_work_never_shortens_a_wait_under_fifo(
    case: tuple[int, list[JobSpec]], data: st.DataObject
) -> None:
    """Lengthening one job's work delays no one under FIFO with one-chip jobs (the
    Kiefer-Wolfowitz recursion is non-decreasing in every service time). Catches a
    recursion or event loop that frees a chip at the wrong time."""
    servers, jobs = case
    if not jobs:
        return
    i = data.draw(st.integers(0, len(jobs) - 1))
    longer = list(jobs)
    longer[i] = jobs[i]._replace(work_hours=jobs[i].work_hours + data.draw(st.floats(0.1, 5.0)))
    pool = [PoolSpec("p", chips=servers)]
    base = _waits(_run(pool, jobs, "fifo").jobs, HORIZON_HOURS)
    more = _waits(_run(pool, longer, "fifo").jobs, HORIZON_HOURS)
    assert np.all(more >= base - 1e-12)


@given(scenarios(lossy=False), st.sampled_from(NON_EVICTING))
def test_each_pools_allocated_chip_hours_are_the_sum_over_its_jobs(
    scenario: tuple[list[PoolSpec], list[JobSpec]], policy: str
) -> None:
    """Little's law for the chips of each pool, on the sample path: with nothing
    interrupted, the allocated chip-hours of pool ``p`` over ``[0, H]`` equal the sum over
    the jobs that ran there of allocated chips x hours held (to ``H`` if still running),
    and useful chip-hours never exceed them. Catches usage
    booked to the wrong pool, counted twice, or cut at the horizon wrongly; this is the
    usage the cost model prices."""
    pools, jobs = scenario
    res = _run(pools, jobs, policy)
    assert res.jobs is not None
    for p, metrics in enumerate(res.pools):
        held = [
            (r.allocated_chips, (HORIZON_HOURS if math.isnan(r.end_hours) else r.end_hours)
             - r.first_start_hours)
            for r in res.jobs
            if r.pool == p
        ]  # fmt: skip
        allocated = sum(a * h for a, h in held)
        assert math.isclose(metrics.allocated_chip_hours, allocated, rel_tol=1e-9, abs_tol=1e-9)
        assert metrics.useful_chip_hours <= metrics.allocated_chip_hours * (1 + 1e-12) + 1e-12
        assert res.pools[p].interruptions_policy == 0


@given(scenarios(), st.sampled_from(sorted(SCHEDULERS)), st.sampled_from([0.0, 5.0, 20.0]))
def test_wait_and_jct_metrics_are_the_means_over_the_jobs_submitted_in_the_window(
    scenario: tuple[list[PoolSpec], list[JobSpec]], policy: str, warmup: float
) -> None:
    """The summary is a pure function of the per-job records: waits of the jobs submitted
    in ``[warmup, H)`` (censored at ``H`` when never started), their mean and 95th
    percentile, and the mean JCT (censored alike). With failures and evictions too. Catches
    a job counted twice (a requeued job's second wait), one dropped, or the window applied
    to starts instead of submissions."""
    pools, jobs = scenario
    res = _run(pools, jobs, policy, warmup=warmup)
    assert res.jobs is not None
    window = [r for r in res.jobs if r.submit_hours >= warmup]
    waits = _waits(tuple(window), HORIZON_HOURS)
    assert np.array_equal(np.sort(res.wait_hours), np.sort(waits))
    assert res.jobs_waiting_at_horizon == sum(math.isnan(r.first_start_hours) for r in window)
    if window:
        assert math.isclose(res.mean_wait_hours, float(waits.mean()), rel_tol=1e-12, abs_tol=1e-12)
        assert res.p95_wait_hours == float(np.quantile(waits, 0.95))
        jct = [(HORIZON_HOURS if math.isnan(r.end_hours) else r.end_hours) - r.submit_hours
               for r in window]  # fmt: skip
        assert math.isclose(res.mean_jct_hours, float(np.mean(jct)), rel_tol=1e-9, abs_tol=1e-9)
    else:
        assert res.mean_wait_hours == res.p95_wait_hours == res.mean_jct_hours == 0.0
    for v in (res.mean_wait_hours, res.p95_wait_hours, res.mean_jct_hours, res.utilization):
        assert math.isfinite(v)
        assert v >= 0.0
