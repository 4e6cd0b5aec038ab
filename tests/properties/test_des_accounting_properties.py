"""No work counted twice or lost: the DES's pool totals against its job records (hypothesis).

With failures, spot preemptions, evictions, checkpoints, restarts and whole-domain
rounding (the lossy generators of ``test_des_properties.py``), the per-pool totals the
cost model prices must be the sums of what happened to each job:

- lost chip-hours = sum over jobs of chips x compute lost to interruptions;
- interruptions counted per pool (by cause) = sum of each job's interruptions, and a
  chip failure or preemption interrupts at most one job;
- once every job has finished, on pools of speed 1, useful chip-hours = sum over jobs of
  chips x work: redone work is not counted twice and kept work is never dropped.
"""

from __future__ import annotations

import dataclasses
import math

from hypothesis import assume, given
from hypothesis import strategies as st
from tests.properties.test_des_properties import HORIZON_HOURS, scenarios

from accelsim.engines.cluster.des import SCHEDULERS, JobSpec, PoolSpec, run
from accelsim.seeding import as_seed_sequence


@given(scenarios(), st.sampled_from(sorted(SCHEDULERS)), st.integers(0, 2**16))
def test_lost_chip_hours_and_interruptions_are_the_sums_over_jobs(
    scenario: tuple[list[PoolSpec], list[JobSpec]], policy: str, seed: int
) -> None:
    pools, jobs = scenario
    res = run(pools, jobs, scheduler=policy, horizon_hours=HORIZON_HOURS,
              seed_seq=as_seed_sequence(seed), keep_jobs=True)  # fmt: skip
    assert res.jobs is not None
    lost = sum(p.lost_chip_hours for p in res.pools)
    by_job = sum(j.chips * j.lost_compute_hours for j in res.jobs)
    assert math.isclose(lost, by_job, rel_tol=1e-9, abs_tol=1e-9)
    assert res.interruptions == sum(j.interruptions for j in res.jobs)
    for p in res.pools:
        assert p.interruptions_failure <= p.chip_failures
        assert p.interruptions_preemption <= p.chip_preemptions
        assert p.lost_chip_hours >= 0.0
    assert all(j.lost_compute_hours >= 0.0 for j in res.jobs)
    assert all(j.interruptions == 0 for j in res.jobs if math.isnan(j.first_start_hours))


@given(scenarios(), st.sampled_from(sorted(SCHEDULERS)), st.integers(0, 2**16))
def test_once_every_job_finished_useful_chip_hours_are_the_work_done_once(
    scenario: tuple[list[PoolSpec], list[JobSpec]], policy: str, seed: int
) -> None:
    """Speed 1 everywhere, a 400 h horizon (about nine in ten draws finish every job)."""
    pools, jobs = scenario
    pools = [dataclasses.replace(p, speed=1.0) for p in pools]
    res = run(pools, jobs, scheduler=policy, horizon_hours=400.0,
              seed_seq=as_seed_sequence(seed), keep_jobs=True)  # fmt: skip
    assume(res.jobs_running_at_horizon == 0)
    assume(res.jobs_queued_at_horizon == 0)
    assert res.jobs is not None
    useful = sum(p.useful_chip_hours for p in res.pools)
    assert math.isclose(useful, sum(j.chips * j.work_hours for j in jobs), rel_tol=1e-9,
                        abs_tol=1e-9)  # fmt: skip
    assert res.jobs_completed == len(jobs)
    for p in res.pools:  # holding chips covers the useful and the lost compute, at least
        tol = 1e-9 * (1.0 + p.allocated_chip_hours)
        assert p.useful_chip_hours + p.lost_chip_hours <= p.allocated_chip_hours + tol
