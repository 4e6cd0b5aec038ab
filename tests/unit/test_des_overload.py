"""Issue 15: no hang and honest queue metrics under overload (censored waits, job caps)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import accelsim as acs
from accelsim.engines import OverloadWarning
from accelsim.engines.cluster.des import JobSpec, PoolSpec, poisson_stream, run
from accelsim.errors import AccelsimError

SEED = np.random.SeedSequence(15)


def test_jobs_still_waiting_at_the_horizon_count_up_to_it() -> None:
    """One chip, four 10-h jobs at 0, 1, 2, 3 h, horizon 15 h (worked by hand, FIFO).

    Job 0 runs 0-10 (wait 0), job 1 starts at 10 (wait 9); jobs 2 and 3 never start:
    censored waits 13 and 12. Mean (0 + 9 + 13 + 12) / 4 = 8.5. JCT: 10, then job 1 is
    unfinished (15 - 1 = 14), 13, 12: mean 12.25. Offered load 4 x 10 / 15 = 8/3.
    """
    jobs = [JobSpec(i, float(i), 1, 10.0) for i in range(4)]
    res = run([PoolSpec("p", chips=1)], jobs, scheduler="fifo", horizon_hours=15.0, seed_seq=SEED)
    assert res.jobs_waiting_at_horizon == 2
    assert res.mean_wait_hours == pytest.approx(8.5)
    assert res.mean_jct_hours == pytest.approx(12.25)
    assert res.offered_load == pytest.approx(40.0 / 15.0)
    assert res.p95_wait_hours == pytest.approx(np.quantile([0.0, 9.0, 13.0, 12.0], 0.95))


def test_an_empty_window_reports_zero_waits_not_nan() -> None:
    res = run([PoolSpec("p", chips=1)], [], scheduler="fifo", horizon_hours=5.0, seed_seq=SEED)
    assert (res.mean_wait_hours, res.p95_wait_hours, res.mean_jct_hours) == (0.0, 0.0, 0.0)
    assert res.offered_load == 0.0


def test_a_stream_past_its_job_cap_raises_naming_the_cap() -> None:
    jobs = poisson_stream(
        SEED,
        interarrival_hours=lambda rng, n: np.full(n, 1e-9),
        chips=lambda rng, n: np.ones(n),
        work_hours=lambda rng, n: np.ones(n),
        until_hours=1.0,
        max_jobs=100,
    )
    with pytest.raises(AccelsimError, match="cap of 100 jobs"):
        list(jobs)


def _stream(scheduler: str, mean_gap: float = 0.05, horizon_days: float = 2.0) -> acs.Scenario:
    return acs.Scenario(
        name="s",
        workload=acs.JobStream(
            interarrival_hours=acs.Exponential(mean=mean_gap),
            chips=acs.Choice(values=[1, 8]),
            duration_hours=acs.Exponential(mean=4.0),
        ),
        fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")],
        horizon_days=horizon_days,
        scheduler=scheduler,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("scheduler", ["fifo", "backfill", "priority"])
def test_overload_warns_and_waits_grow_with_the_backlog(scheduler: str) -> None:
    """At 5.6x the load every scheduler reports finite waits of at least the backlog's."""
    with pytest.warns(OverloadWarning, match="offered load"):
        res = acs.simulate(_stream(scheduler), runs=4, seed=1, progress=False)
    waits = res.samples("mean_wait_hours")
    assert np.isfinite(waits).all()
    assert (res.samples("offered_load") > 1).all()
    assert (res.samples("jobs_waiting_at_horizon") > 0).all()
    # Most jobs never start: the censored mean wait is a sizeable part of the 48 h window.
    assert (waits > 10.0).all()


def test_a_stream_expecting_more_jobs_than_the_cap_is_refused_before_simulating() -> None:
    with pytest.raises(AccelsimError, match="expects 72,000,000 jobs"):
        acs.simulate(_stream("fifo", 1e-3, 3000.0), runs=2, seed=1, progress=False)


def test_a_starved_training_run_is_censored_and_unfinished() -> None:
    """smallest_first under 1.25x load of 1-chip jobs never gives the 64-chip run a start."""
    background = acs.JobStream(interarrival_hours=0.5, chips=1, duration_hours=40.0)
    s = acs.Scenario(
        name="starved",
        workload=acs.TrainingRun(params=1e9, tokens=1e10),
        fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")],
        background=background,
        scheduler="smallest_first",
        horizon_days=5,
        warmup_days=2,  # the decision meets a full fleet (64 chips busy by 32 h)
        assumptions=acs.Assumptions(porting_hours=0.0),
    )
    with pytest.warns(OverloadWarning):
        res = acs.simulate(s, runs=2, seed=3, progress=False)
    ttt = res.samples("time_to_train_days")
    assert np.isfinite(ttt).all()
    assert (ttt > 5.0).all()
    np.testing.assert_array_equal(res.samples("finished"), [0.0, 0.0])
    assert all(math.isfinite(v) for m in res.metrics for v in res.samples(m))


def test_a_fleet_expecting_too_many_failures_is_refused_before_simulating() -> None:
    """10^6 chips failing every other hour for 3000 days: 3.6e10 events, not a run."""
    s = acs.Scenario(
        name="f",
        workload=acs.JobStream(interarrival_hours=1000.0, chips=1, duration_hours=1.0),
        fleet=[acs.Pool(chip="h100-sxm", count=1_000_000, provider="aws")],
        horizon_days=3000,
        assumptions=acs.Assumptions(failure_rate_per_chip_hour=0.5),
    )
    with pytest.raises(AccelsimError, match="above the cap of 10,000,000"):
        acs.simulate(s, runs=1, seed=1, progress=False)
