"""Invariants of the DES engine over generated fleets, job streams and policies (hypothesis)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from accelsim._typing import FloatArray
from accelsim.engines.cluster.des import SCHEDULERS, DesResult, JobSpec, PoolSpec, run
from accelsim.engines.cluster.des._schedulers import (
    Decision,
    QueueSnapshot,
    Reservation,
    easy_backfill_plan,
)
from accelsim.seeding import as_seed_sequence

HORIZON_HOURS = 40.0


class _Constant:
    """A sampler of one value (a class, so pools compare equal and repr well)."""

    def __init__(self, hours: float) -> None:
        self.hours = hours

    def __call__(self, rng: np.random.Generator, n: int) -> FloatArray:
        return np.full(n, self.hours)

    def __repr__(self) -> str:
        return f"_Constant({self.hours})"


@st.composite
def fleets(draw: st.DrawFn, *, lossy: bool = True) -> list[PoolSpec]:
    """1-3 pools of up to 24 chips; with ``lossy``, some fail, preempt or arrive late."""
    pools = []
    for i in range(draw(st.integers(1, 3))):
        domain = draw(st.sampled_from([1, 2, 4]))
        pools.append(
            PoolSpec(
                name=f"p{i}",
                chips=domain * draw(st.integers(1, 6)),
                domain_chips=domain,
                speed=draw(st.sampled_from([0.5, 1.0, 2.0])),
                failure_rate_per_chip_hour=draw(st.sampled_from([0.0, 0.01, 0.05]))
                if lossy
                else 0.0,
                preemptions_per_chip_hour=draw(st.sampled_from([0.0, 0.03])) if lossy else 0.0,
                lead_time_hours=draw(st.sampled_from([0.0, 0.0, 5.0])),
                repair_hours=draw(st.sampled_from([None, _Constant(0.5), _Constant(6.0)])),
                preemption_return_hours=draw(st.sampled_from([None, _Constant(2.0)])),
            )
        )
    return pools


@st.composite
def workloads(
    draw: st.DrawFn, pools: Sequence[PoolSpec], *, lossless: bool = False
) -> list[JobSpec]:
    """Up to 30 jobs that each fit some pool they may use, in submission order.

    With ``lossless``, jobs hold exactly their chips and spend all their time computing
    (no whole-domain rounding, checkpoint writes or restarts).
    """
    biggest = max(range(len(pools)), key=lambda p: pools[p].chips)
    submits = sorted(draw(st.lists(st.floats(0.0, 35.0), min_size=0, max_size=30)))
    jobs = []
    for i, submit in enumerate(submits):
        chips = draw(st.integers(1, pools[biggest].chips))
        allowed = draw(st.sampled_from([None, "biggest", "permuted"]))
        if allowed == "biggest":
            choice: tuple[int, ...] | None = (biggest,)
        elif allowed == "permuted":
            choice = tuple(draw(st.permutations(range(len(pools)))))
        else:
            choice = None
        checkpoints = draw(st.booleans()) and not lossless
        jobs.append(
            JobSpec(
                job_id=i,
                submit_hours=submit,
                chips=chips,
                work_hours=draw(st.floats(0.1, 12.0)),
                priority=draw(st.integers(0, 2)),
                pools=choice,
                whole_domains=draw(st.booleans()) and not lossless,
                checkpoint_interval_hours=draw(st.sampled_from([1.0, 2.5]))
                if checkpoints
                else None,
                checkpoint_write_hours=0.1 if checkpoints else 0.0,
                restart_hours=0.0 if lossless else draw(st.sampled_from([0.0, 0.3])),
                preemptible=draw(st.booleans()),
            )
        )
    return jobs


def _run(
    pools: Sequence[PoolSpec], jobs: Sequence[JobSpec], policy: str, seed: int, warmup: float = 0.0
) -> DesResult:
    return run(
        pools,
        jobs,
        scheduler=policy,
        horizon_hours=HORIZON_HOURS,
        warmup_hours=warmup,
        seed_seq=as_seed_sequence(seed),
        keep_jobs=True,
        keep_events=True,
    )


@st.composite
def scenarios(draw: st.DrawFn, *, lossy: bool = True) -> tuple[list[PoolSpec], list[JobSpec]]:
    pools = draw(fleets(lossy=lossy))
    return pools, draw(workloads(pools, lossless=not lossy))


@given(
    scenarios(),
    st.sampled_from(sorted(SCHEDULERS)),
    st.integers(0, 2**16),
    st.sampled_from([0.0, 10.0]),
)
def test_every_job_is_accounted_for_and_chips_are_never_overcommitted(
    scenario: tuple[list[PoolSpec], list[JobSpec]], policy: str, seed: int, warmup: float
) -> None:
    """arrived = completed + running + queued; 0 <= busy <= up after every state change;
    utilisation and goodput in [0, 1] with goodput <= utilisation; useful + lost <= allocated."""
    pools, jobs = scenario
    res = _run(pools, jobs, policy, seed, warmup)
    assert res.jobs_arrived == len(jobs)
    assert res.jobs_arrived == (
        res.jobs_completed + res.jobs_running_at_horizon + res.jobs_queued_at_horizon
    )
    assert res.events is not None
    for e in res.events:
        assert 0 <= e.busy_chips <= e.up_chips <= (pools[e.pool].chips if e.pool >= 0 else 0)
        assert e.queued_jobs >= 0
    tiny = 1e-9
    for pool in res.pools:
        if pool.available_chip_hours > 0:
            assert -tiny <= pool.goodput <= pool.utilization + tiny <= 1 + 2 * tiny
        assert (
            pool.useful_chip_hours + pool.lost_chip_hours
            <= pool.allocated_chip_hours * (1 + tiny) + tiny
        )
    assert res.jobs is not None
    for job in res.jobs:
        assert not job.first_start_hours < job.submit_hours  # nan (never started) passes
        if not math.isnan(job.end_hours):  # finished: at least its work at the fastest speed
            fastest = max(p.speed for p in pools)
            assert job.end_hours - job.first_start_hours >= job.work_hours / fastest - tiny


@given(scenarios(lossy=False), st.sampled_from(["fifo", "backfill", "smallest_first", "priority"]))
def test_without_losses_goodput_equals_utilisation(
    scenario: tuple[list[PoolSpec], list[JobSpec]], policy: str
) -> None:
    """No failures, preemptions, evictions, rounding, writes or restarts: every allocated
    chip-hour is useful (equal to float rounding, 1e-9 relative)."""
    pools, jobs = scenario
    res = _run(pools, jobs, policy, seed=1)
    for pool in res.pools:
        assert math.isclose(
            pool.useful_chip_hours, pool.allocated_chip_hours, rel_tol=1e-9, abs_tol=1e-9
        )
    assert res.interruptions == 0


@given(scenarios(lossy=False), st.sampled_from(["fifo", "backfill", "smallest_first", "priority"]))
def test_littles_law_holds_exactly_on_the_sample_path(
    scenario: tuple[list[PoolSpec], list[JobSpec]], policy: str
) -> None:
    """Queue-length area over [0, H] = the sum of each job's time queued before H.

    With nothing interrupted each job queues once, from submission to first start (or to
    the horizon), so L T = sum of waits exactly: Little's law on the sample path.
    """
    pools, jobs = scenario
    res = _run(pools, jobs, policy, seed=2)
    assert res.jobs is not None
    queued = sum(
        (HORIZON_HOURS if math.isnan(j.first_start_hours) else j.first_start_hours) - j.submit_hours
        for j in res.jobs
    )
    assert math.isclose(res.mean_queue_length * HORIZON_HOURS, queued, rel_tol=1e-9, abs_tol=1e-9)


@given(scenarios(), st.sampled_from(sorted(SCHEDULERS)), st.integers(0, 2**16))
def test_same_seed_gives_identical_results(
    scenario: tuple[list[PoolSpec], list[JobSpec]], policy: str, seed: int
) -> None:
    pools, jobs = scenario
    a, b = _run(pools, jobs, policy, seed), _run(pools, jobs, policy, seed)
    assert a.events == b.events
    assert a.jobs == b.jobs
    assert a.pools == b.pools
    assert np.array_equal(a.wait_hours, b.wait_hours)


@given(scenarios(lossy=False))
def test_backfill_never_delays_the_head_jobs_reservation(
    scenario: tuple[list[PoolSpec], list[JobSpec]],
) -> None:
    """EASY property: with exact estimates and no failures, a head job starts no later than
    any reservation it was given (and by the horizon if a reservation fell before it).

    Checkpoint writes and whole-domain rounding are allowed here (estimates include them);
    the generated workloads are lossless, so nothing is interrupted.
    """
    pools, jobs = scenario
    reservations: list[Reservation] = []

    def recording_backfill(snap: QueueSnapshot) -> list[Decision]:
        decisions, reservation = easy_backfill_plan(snap)
        if reservation is not None:
            reservations.append(reservation)
        return decisions

    res = run(
        pools,
        jobs,
        scheduler=recording_backfill,
        horizon_hours=HORIZON_HOURS,
        seed_seq=as_seed_sequence(3),
        keep_jobs=True,
    )
    assert res.jobs is not None
    started = {j.job_id: j.first_start_hours for j in res.jobs}
    for r in reservations:
        start = started[r.job_id]
        if math.isnan(start):
            assert r.start_hours >= HORIZON_HOURS - 1e-9
        else:
            assert start <= r.start_hours + 1e-9
