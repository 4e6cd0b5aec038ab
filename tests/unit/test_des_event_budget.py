"""Issue 33 item 4: a cluster DES run has an event budget; past it the run stops with a
clear message naming the limit rather than running without end, and a training run whose
horizon widening passes it is reported unfinished."""

from __future__ import annotations

import numpy as np
import pytest

import accelsim as acs
from accelsim.catalog import active
from accelsim.engines import OverloadWarning
from accelsim.engines.cluster._hero import simulate_training_block
from accelsim.engines.cluster._streams_run import DesOptions, simulate_block
from accelsim.engines.cluster.des import (
    MAX_EVENTS,
    ClusterBudgetError,
    JobSpec,
    PoolSpec,
    run,
)
from accelsim.errors import AccelsimError

SEED = np.random.SeedSequence(33)
JOBS = [JobSpec(i, 0.1 * i, 1, 10.0) for i in range(400)]


def test_a_run_past_its_budget_stops_naming_the_limit() -> None:
    """400 arrivals in 40 h on 4 chips: 100 events end the run near 10 h, 96 jobs queued."""
    with pytest.raises(ClusterBudgetError, match=r"max_events=100 events at 9\.9 h of its 100 h"):
        run([PoolSpec("p", chips=4)], JOBS, scheduler="fifo", horizon_hours=100.0,
            seed_seq=SEED, max_events=100)  # fmt: skip


def test_a_run_within_its_budget_is_the_unbudgeted_run() -> None:
    """The budget stops a run; it never changes one that fits: same events as the default."""
    kwargs = {"scheduler": "backfill", "horizon_hours": 100.0, "seed_seq": SEED,
              "keep_events": True}  # fmt: skip
    small = run([PoolSpec("p", chips=4)], JOBS, max_events=1000, **kwargs)  # type: ignore[arg-type]
    default = run([PoolSpec("p", chips=4)], JOBS, **kwargs)  # type: ignore[arg-type]
    assert small.events == default.events
    assert MAX_EVENTS >= 50_000_000  # above what a runnable scenario's run needs


def test_a_bad_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="max_events must be >= 1"):
        run([PoolSpec("p", chips=4)], JOBS, scheduler="fifo", horizon_hours=1.0,
            seed_seq=SEED, max_events=0)  # fmt: skip


def _stream() -> acs.Scenario:
    return acs.Scenario(
        name="busy",
        workload=acs.JobStream(interarrival_hours=0.05, chips=1, duration_hours=4.0),
        fleet=[acs.Pool(chip="h100-sxm", count=8, provider="aws")],
        horizon_days=2,
    )


def test_a_stream_run_past_the_budget_names_scenario_run_and_limit() -> None:
    with pytest.raises(AccelsimError, match=r"scenario 'busy', run 0: cluster DES stopped after "
                       r"max_events=200 events"):  # fmt: skip
        simulate_block(_stream(), active(), SEED, 0, 1, DesOptions(max_events=200))


def test_a_training_run_whose_widening_passes_the_budget_is_unfinished() -> None:
    """The starved training run of issue 15 (smallest_first, 1.25x load of 1-chip jobs):
    the 5-day window fits a budget of 600 events, the first replay to a wider horizon does
    not, so the job is unfinished (finished 0) with a warning naming the limit, where the
    default budget replays six widenings."""
    s = acs.Scenario(
        name="starved",
        workload=acs.TrainingRun(params=1e9, tokens=1e10),
        fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")],
        background=acs.JobStream(interarrival_hours=0.5, chips=1, duration_hours=40.0),
        scheduler="smallest_first",
        horizon_days=5,
        warmup_days=2,
        assumptions=acs.Assumptions(porting_hours=0.0),
    )
    with pytest.warns(OverloadWarning, match=r"max_events=600 events.*finished 0"):
        data, _, _ = simulate_training_block(s, active(), SEED, 0, 1, DesOptions(max_events=600))
    assert data["finished"].tolist() == [0.0]
    assert np.isfinite(data["time_to_train_days"]).all()
