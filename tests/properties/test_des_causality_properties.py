"""DES invariants of time, allocation and accounting over generated fleets (hypothesis).

Causality (the future never changes the past), measurement that does not perturb the
system (the warm-up window), gang allocation to whole domains or TPU slices, preemptive
priority isolating the top class, and chip-hours attributed to classes of jobs and to
withdrawn reservations. Generators: ``test_des_properties.py``.
"""

from __future__ import annotations

import math

from hypothesis import assume, given
from hypothesis import strategies as st
from tests.properties.test_des_properties import HORIZON_HOURS, fleets, scenarios, workloads

from accelsim.engines.cluster.des import SCHEDULERS, Holdings, JobSpec, PoolSpec, run
from accelsim.seeding import as_seed_sequence

TINY = 1e-9


@given(
    st.integers(1, 4096),
    st.integers(1, 64),
    st.sampled_from([(), (4, 8, 16, 32), (1, 2, 4), (8, 64, 128)]),
    st.sampled_from([0, 64, 256]),
    st.booleans(),
)
def test_a_gang_gets_the_smallest_allocation_that_holds_it(
    chips: int, domain: int, slices: tuple[int, ...], multiple: int, whole: bool
) -> None:
    """Without ``whole_domains`` exactly its chips; with it, the smallest valid slice (a
    listed size or a multiple of ``slice_multiple``) when the pool has slice shapes, else
    its chips rounded up to whole domains; a job no slice holds gets more chips than the
    pool (it can never start). Checked against a brute-force search over the sizes."""
    pool = PoolSpec("p", chips=8192, domain_chips=domain, slice_sizes=slices,
                    slice_multiple=multiple)  # fmt: skip
    got = pool.allocation_chips(chips, whole_domains=whole)
    if not whole:
        assert got == chips
        return
    if slices or multiple:
        valid = [s for s in slices if s >= chips]
        if multiple:
            valid.append(next(k * multiple for k in range(1, 10_000) if k * multiple >= chips))
        assert got == (min(valid) if valid else pool.chips + 1)
    else:
        assert got >= chips
        assert got % domain == 0
        assert got - domain < chips  # one domain fewer would not hold it


@given(scenarios(), st.sampled_from(sorted(SCHEDULERS)), st.integers(0, 2**16),
       st.floats(5.0, 35.0))  # fmt: skip
def test_the_future_never_changes_the_past(
    scenario: tuple[list[PoolSpec], list[JobSpec]], policy: str, seed: int, cut: float
) -> None:
    """Running to an earlier horizon ``H1`` gives the same history up to ``H1``: every
    state change before it (failures, preemptions and repairs included, same seed) and
    every job finished before it. Catches a decision that reads jobs not yet submitted,
    or random streams that depend on the horizon."""
    pools, jobs = scenario
    seq = as_seed_sequence(seed)
    long = run(pools, jobs, scheduler=policy, horizon_hours=HORIZON_HOURS, seed_seq=seq,
               keep_jobs=True, keep_events=True)  # fmt: skip
    short = run(pools, jobs, scheduler=policy, horizon_hours=cut, seed_seq=seq,
                keep_jobs=True, keep_events=True)  # fmt: skip
    assert long.events is not None
    assert short.events is not None
    before = [e for e in long.events if e.time_hours < cut]
    assert [e for e in short.events if e.time_hours < cut] == before
    assert long.jobs is not None
    assert short.jobs is not None
    done_long = {j.job_id: j for j in long.jobs if j.end_hours < cut}
    done_short = {j.job_id: j for j in short.jobs if not math.isnan(j.end_hours)}
    assert done_short == done_long


@given(scenarios(), st.sampled_from(sorted(SCHEDULERS)), st.integers(0, 2**16),
       st.floats(0.0, 30.0))  # fmt: skip
def test_the_warmup_window_measures_without_changing_the_run(
    scenario: tuple[list[PoolSpec], list[JobSpec]], policy: str, seed: int, warmup: float
) -> None:
    """The same seed with any warm-up gives the same events and job histories; only the
    measured window differs, and its counts over the whole run do not. Catches a warm-up
    that resets state or shifts a random stream."""
    pools, jobs = scenario
    seq = as_seed_sequence(seed)
    a = run(pools, jobs, scheduler=policy, horizon_hours=HORIZON_HOURS, seed_seq=seq,
            keep_jobs=True, keep_events=True)  # fmt: skip
    b = run(pools, jobs, scheduler=policy, horizon_hours=HORIZON_HOURS, warmup_hours=warmup,
            seed_seq=seq, keep_jobs=True, keep_events=True)  # fmt: skip
    assert a.events == b.events
    assert a.jobs == b.jobs
    assert (a.jobs_arrived, a.jobs_completed, a.jobs_running_at_horizon) == (
        b.jobs_arrived,
        b.jobs_completed,
        b.jobs_running_at_horizon,
    )
    for pa, pb in zip(a.pools, b.pools, strict=True):
        assert pb.available_chip_hours <= pa.available_chip_hours + TINY
        assert pb.allocated_chip_hours <= pa.allocated_chip_hours + TINY


@st.composite
def two_class_workloads(draw: st.DrawFn) -> tuple[PoolSpec, list[JobSpec]]:
    """One pool, jobs of priority 0 or 1, all preemptible, nothing lost but evictions."""
    fleet = draw(fleets(lossy=False))
    pool = fleet[0]
    jobs = draw(workloads([pool], lossless=True))
    jobs = [j._replace(pools=None, preemptible=True, priority=j.priority % 2) for j in jobs]
    return pool, jobs


@given(two_class_workloads())
def test_preemptive_priority_runs_the_top_class_as_if_alone(
    case: tuple[PoolSpec, list[JobSpec]],
) -> None:
    """Under ``priority_preemptive`` on one pool where every lower job may be evicted, the
    top class never waits for a lower job: its starts and ends are those of the top class
    run alone (FIFO among equals), to the clock's float noise. Catches an eviction that
    frees too few chips, a victim chosen from the wrong class, or a top job left behind a
    lower one."""
    pool, jobs = case
    top = [j for j in jobs if j.priority == 1]
    assume(top)
    mixed = run([pool], jobs, scheduler="priority_preemptive", horizon_hours=HORIZON_HOURS,
                seed_seq=as_seed_sequence(1), keep_jobs=True)  # fmt: skip
    alone = run([pool], top, scheduler="priority_preemptive", horizon_hours=HORIZON_HOURS,
                seed_seq=as_seed_sequence(1), keep_jobs=True)  # fmt: skip
    assert mixed.jobs is not None
    assert alone.jobs is not None
    by_id = {j.job_id: j for j in mixed.jobs}
    for j in alone.jobs:
        m = by_id[j.job_id]
        assert m.interruptions == 0
        for x, y in ((m.first_start_hours, j.first_start_hours), (m.end_hours, j.end_hours)):
            # equal up to the float noise of SimPy's clock (a sum of delays), 1e-9 h
            assert (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, abs_tol=TINY)


@given(scenarios(), st.sampled_from(sorted(SCHEDULERS)), st.integers(0, 2**16),
       st.integers(1, 3))  # fmt: skip
def test_chip_hours_held_per_class_add_up_to_each_pools_allocation(
    scenario: tuple[list[PoolSpec], list[JobSpec]], policy: str, seed: int, classes: int
) -> None:
    """``Holdings`` splits every attempt's chip-hours by class (job id modulo ``classes``);
    summed over classes they are each pool's allocated chip-hours, and each kept interval
    lies inside the run. The split a mixed fleet's chargeback is priced from."""
    pools, jobs = scenario
    holdings = Holdings(lambda job_id: job_id % classes, classes, range(classes), len(pools))
    res = run(pools, jobs, scheduler=policy, horizon_hours=HORIZON_HOURS,
              seed_seq=as_seed_sequence(seed), holdings=holdings)  # fmt: skip
    for p, metrics in enumerate(res.pools):
        held = sum(holdings.pool_chip_hours[c][p] for c in range(classes))
        assert math.isclose(held, metrics.allocated_chip_hours, rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(sum(holdings.chip_hours), sum(res.allocated_chip_hours),
                        rel_tol=1e-9, abs_tol=1e-9)  # fmt: skip
    for intervals in holdings.intervals.values():
        for start, end, chips in intervals:
            assert 0.0 <= start <= end <= HORIZON_HOURS
            assert chips >= 1


@given(scenarios(lossy=False), st.sampled_from(sorted(SCHEDULERS)), st.data())
def test_a_withdrawn_reservation_ends_by_its_window_and_a_late_one_changes_nothing(
    scenario: tuple[list[PoolSpec], list[JobSpec]], policy: str, data: st.DataObject
) -> None:
    """A job withdrawn at ``t`` after its submission (its window closed) is over by ``t``;
    every job is still accounted for. Withdrawing jobs only after they finished changes no
    history (a finished job is left alone)."""
    pools, jobs = scenario
    assume(jobs)
    seq = as_seed_sequence(5)
    base = run(pools, jobs, scheduler=policy, horizon_hours=HORIZON_HOURS, seed_seq=seq,
               keep_jobs=True)  # fmt: skip
    assert base.jobs is not None
    chosen = data.draw(st.lists(st.sampled_from([j.job_id for j in jobs]), unique=True,
                                min_size=1))  # fmt: skip
    submit = {j.job_id: j.submit_hours for j in jobs}
    pairs = sorted((submit[i] + data.draw(st.floats(0.01, 10.0)), i) for i in chosen)
    res = run(pools, jobs, scheduler=policy, horizon_hours=HORIZON_HOURS, seed_seq=seq,
              keep_jobs=True, withdrawals=pairs)  # fmt: skip
    assert res.jobs is not None
    assert res.jobs_arrived == res.jobs_completed + res.jobs_running_at_horizon + (
        res.jobs_queued_at_horizon
    )
    ends = {j.job_id: j.end_hours for j in res.jobs}
    for t, i in pairs:
        if t < HORIZON_HOURS:
            assert ends[i] <= t + TINY, (i, t, ends[i])
    late = sorted(
        (j.end_hours + 1.0, j.job_id) for j in base.jobs if j.end_hours + 1.0 < HORIZON_HOURS
    )
    again = run(pools, jobs, scheduler=policy, horizon_hours=HORIZON_HOURS, seed_seq=seq,
                keep_jobs=True, withdrawals=late)  # fmt: skip
    assert again.jobs == base.jobs


def test_a_reservation_withdrawn_when_it_is_submitted_never_runs() -> None:
    """A zero-length window: the job is over at its submission, holding no chip-hours (the
    withdrawal is due before the arrival in SimPy's queue; it waits for the arrival)."""
    pools = [PoolSpec("p", chips=1)]
    jobs = [JobSpec(0, 0.0, 1, 1.0), JobSpec(1, 1.0, 1, 1.0)]
    res = run(pools, jobs, scheduler="fifo", horizon_hours=10.0, seed_seq=as_seed_sequence(1),
              keep_jobs=True, withdrawals=[(1.0, 1)])  # fmt: skip
    assert res.jobs is not None
    assert res.jobs[1].end_hours == 1.0
    assert res.pools[0].allocated_chip_hours == 1.0  # job 0's hour only


def test_a_job_never_records_a_start_before_its_submission() -> None:
    """The shrunk case: one chip, the second job arrives to an idle pool (backfill). SimPy's
    clock reaches the submission as t + (s - t), an ulp short of s; the record clamps."""
    pools = [PoolSpec("p0", chips=1, speed=0.5)]
    jobs = [JobSpec(0, 0.5463643729331964, 1, 1.0), JobSpec(1, 4.74648676670211, 1, 1.0)]
    res = run(pools, jobs, scheduler="backfill", horizon_hours=HORIZON_HOURS,
              seed_seq=as_seed_sequence(0), keep_jobs=True)  # fmt: skip
    assert res.jobs is not None
    assert all(not j.first_start_hours < j.submit_hours for j in res.jobs)
