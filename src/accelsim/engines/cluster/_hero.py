"""Scenario -> DES engine: a training run sharing its fleet (the hero run).

**A training run on the DES engine** (a ``background``, several pools, or ``engine="des"``)
is one gang job, :data:`HERO_JOB_ID`, holding every chip of the first pool and allowed on
that pool only, at priority :data:`HERO_PRIORITY` (the background keeps its own priorities,
so the priority matters under the ``priority`` schedulers only; the hero is never evicted by
``priority_preemptive``). The analytic physics gives its compute hours, checkpoint interval,
write and restart times (:func:`accelsim.engines.training._analytic.simulate_training` with
a completion sampler that runs the DES). The background starts at time 0; the decision is at
``warmup_days`` (0 without a horizon), and the hero is submitted once its capacity lead time
and its porting are over: ``decision + max(lead, porting)``, where the lead time is 0 when a
background runs on the fleet (one rule of when a fleet exists,
:func:`accelsim.scenario.fleet_in_service`: a fleet that already runs other work is in
service from day 0 for every workload on it). Its queue wait (submission to
first start) is added to ``wait_days`` and ``time_to_train_days``; ``training_days`` runs
from its first start to its end, so waits after an interruption count there.

The first pool keeps the analytic engine's failure model so both engines mean the same
``training_days``: its chips fail at the run's interruption rate per chip (spot preemptions
included) and a hot spare replaces a failed chip at once. The waits after an interruption
(for spot capacity to return, or for a repaired host when ``Pool.spare_hosts`` are all in
repair) and a fallback to on-demand are then added to the job's simulated time by the same
function as in the analytic engine (:func:`accelsim.engines.training._recovery.recover`): during
them the hero keeps its chips in the DES (a stated simplification; the background does not
get them). Other pools keep their repair and return times. All pools are in service from
time 0: with a background, the fleet already runs it (no lead time); without one (a lone
run on the DES engine), nothing else uses the pools before the hero's submission at the end
of its lead time, so this equals a fleet delivered then.

Horizon: the fleet's metrics (``jobs_*``, waits, ``utilization``) and the records and time
series asked for cover ``[0, horizon_days)``, the hero included as one of the jobs. If the
hero has not ended by then, the run is replayed with a wider horizon (doubling, at most
:data:`MAX_WIDENINGS` times). A replay draws the same events (every source is an addressed
stream read in time order), so it only extends the run: its hero equals that of one run with
an unbounded horizon, and its first ``horizon_days`` equal the measured window. (Running
until the hero ends would need a stop hook in :func:`accelsim.engines.cluster.des.run`; a replay
costs at most one extra run per doubling.) A hero still unfinished after the last widening
(starved, e.g. by ``smallest_first`` under a heavy stream) is unfinished (``finished`` 0):
its queue wait runs to the last horizon simulated if it never started, and its training
time is censored at the training run's own horizon.

Costs of a hero scenario are the hero's own (its chip-hours, held hours, engineering and
delay): the fleet's other costs belong to the background work.

The fleet's draws, pools, background jobs and window metrics come from
:mod:`accelsim.engines.cluster._streams_run`, as for a stream or trace scenario.
"""

from __future__ import annotations

import heapq
import math
import warnings
from collections.abc import Iterable
from dataclasses import replace

import numpy as np

import accelsim.engines.cluster.des as des
from accelsim._typing import FloatArray, IntArray
from accelsim.catalog import Catalog
from accelsim.engines._inputs import InputDraws, InputPlan, as_plan
from accelsim.engines._pricing import price_training
from accelsim.engines.cluster._checks import (
    MAX_EXPECTED_INTERRUPTIONS,
    OverloadWarning,
    check_runnable,
)
from accelsim.engines.cluster._streams_run import (
    DesOptions,
    _fleet_draws,
    _FleetDraws,
    _Kept,
    _pool_specs,
    _stream_jobs,
    _window_row,
    over_budget,
)
from accelsim.engines.cluster.des import DesResult, JobRecord, JobSpec, PoolSpec
from accelsim.engines.training import _analytic as analytic
from accelsim.errors import AccelsimError
from accelsim.models import reliability
from accelsim.scenario import Scenario
from accelsim.seeding import child

_HOURS_PER_DAY = 24.0
HERO_JOB_ID = 0
"""Job id of the training run in a DES training scenario (background ids start at 1)."""
HERO_PRIORITY = 1
"""Priority of the training run; background jobs keep theirs (0 unless set)."""
MAX_WIDENINGS = 6
"""Horizon doublings tried before a training run that has not ended is censored."""


class _Hero:
    """A completion sampler that runs each run's training job on the shared fleet.

    Called by :func:`analytic.simulate_training` with the run's physics; remembers each
    run's queue wait, the fleet's window metrics and what the study keeps.
    """

    def __init__(
        self,
        scenario: Scenario,
        cat: Catalog,
        root: np.random.SeedSequence,
        start: int,
        submit_hours: FloatArray,
        fleet: _FleetDraws,
        options: DesOptions,
    ) -> None:
        self.scenario = scenario
        self.cat = cat
        self.root = root
        self.start = start
        self.submit_hours = submit_hours
        self.fleet = fleet
        self.kept = _Kept(options)
        self.max_jobs = options.max_jobs_per_run
        self.max_events = options.max_events
        self.resolution_hours = options.resolution_hours
        days = scenario.horizon_days
        self.window_hours = None if days is None else days * _HOURS_PER_DAY
        self.warmup_hours = 0.0 if days is None else scenario.warmup_days * _HOURS_PER_DAY
        self.queue_hours = np.zeros(submit_hours.size)
        # Runs whose job had not ended by the last horizon simulated (starved): censored there.
        self.unfinished = np.zeros(submit_hours.size, dtype=bool)
        self.rows: list[dict[str, float]] = []

    def _pools(self, k: int, rate_per_hour: float) -> list[PoolSpec]:
        pools = _pool_specs(self.scenario, self.cat, self.fleet, k)
        specs = [replace(p, lead_time_hours=0.0) for p in pools]
        # The hero's pool keeps the analytic model: interruptions at the run's rate (spot
        # preemptions included), a failed chip replaced at once by a hot spare.
        specs[0] = replace(
            specs[0],
            failure_rate_per_chip_hour=rate_per_hour / specs[0].chips,
            preemptions_per_chip_hour=0.0,
            repair_hours=None,
            preemption_return_hours=None,
        )
        return specs

    def _jobs(self, hero: JobSpec, k: int, horizon_hours: float) -> Iterable[JobSpec]:
        background = self.scenario.background
        if background is None:
            return [hero]
        run = self.start + k
        others = _stream_jobs(
            self.scenario,
            self.cat,
            background,
            self.root,
            run,
            horizon_hours,
            HERO_JOB_ID + 1,
            self.max_jobs,
        )
        return heapq.merge([hero], others, key=lambda j: (j.submit_hours, j.job_id))

    def _run(
        self, hero: JobSpec, k: int, rate_per_hour: float, horizon_hours: float, first: bool
    ) -> DesResult:
        return des.run(
            self._pools(k, rate_per_hour),
            self._jobs(hero, k, horizon_hours),
            scheduler=self.scenario.scheduler,
            horizon_hours=horizon_hours,
            warmup_hours=self.warmup_hours,
            seed_seq=child(self.root, "des", self.start + k),
            keep_jobs=True,
            utilization_resolution_hours=self.resolution_hours if first else None,
            max_events=self.max_events,
        )

    def _expected(self, k: int, physics: tuple[float, ...]) -> float:
        """Expected failure-laden hours of run ``k``'s job; refuses a job with too many
        interruptions to simulate one by one."""
        expected = float(reliability.expected_completion_hours(*physics))
        events = float(reliability.expected_interruptions(*physics))
        if not events <= MAX_EXPECTED_INTERRUPTIONS:
            # Every interruption is an event here; past this the DES would run for hours.
            raise AccelsimError(
                f"scenario {self.scenario.name!r}: run {self.start + k} expects "
                f"{events:.3g} interruptions of its training job; the shared-cluster "
                f"engine simulates each one and stops at {MAX_EXPECTED_INTERRUPTIONS:.0e}. "
                f"Check the MFU, failure and preemption rates, or use one pool with the "
                f"analytic engine"
            )
        return expected

    def _simulate(self, k: int, physics: tuple[float, ...]) -> tuple[DesResult, DesResult]:
        """(the run's measured window, the run until the job ended or the last widening)."""
        work, interval, write, restart, rate = physics
        submit = float(self.submit_hours[k])
        tau = None if not math.isfinite(interval) else interval
        hero = JobSpec(
            HERO_JOB_ID, submit, self.scenario.fleet[0].count, work, HERO_PRIORITY, (0,), None,
            False, tau, write, restart, False,
        )  # fmt: skip
        expected = self._expected(k, physics)
        # (An expected time that overflows means the run cannot end: no widening then.)
        reach = submit + 2.0 * (expected if math.isfinite(expected) else work)
        horizon = self.window_hours or reach
        try:
            window = result = self._run(hero, k, rate, horizon, first=True)
        except des.ClusterBudgetError as err:
            raise over_budget(self.scenario, self.start + k, err) from None
        for _ in range(MAX_WIDENINGS):
            if _ended(result) or not math.isfinite(expected):
                break
            wider = 2.0 * max(horizon, reach)
            try:
                result = self._run(hero, k, rate, wider, first=False)
            except des.ClusterBudgetError as err:
                # The job has not ended by the last horizon played within the budget: it is
                # unfinished there, as after the last widening.
                warnings.warn(
                    f"scenario {self.scenario.name!r}, run {self.start + k}: the training "
                    f"job had not ended by {horizon:,.4g} h, and a replay to {wider:,.4g} h "
                    f"passed the event budget ({err}); it is reported unfinished (finished 0)",
                    OverloadWarning,
                    stacklevel=2,
                )
                break
            horizon = wider
        return window, result

    def sample(
        self,
        rng: np.random.Generator,
        work: FloatArray,
        interval: FloatArray,
        write: FloatArray,
        restart: FloatArray,
        rate: FloatArray,
    ) -> tuple[FloatArray, IntArray]:
        """``(hours from first start to end, interruptions)`` of each run's training job."""
        del rng  # each run's events come from its own addressed stream
        hours = np.full(work.size, math.inf)
        count = np.zeros(work.size, dtype=np.int64)
        for k in range(work.size):
            physics = tuple(float(x[k]) for x in (work, interval, write, restart, rate))
            window, result = self._simulate(k, physics)
            record = _hero_record(result)
            submit = float(self.submit_hours[k])
            # A job not started by the last horizon simulated has waited at least until it.
            end = result.horizon_hours
            started = record is not None and math.isfinite(record.first_start_hours)
            first = record.first_start_hours if record is not None and started else end
            self.queue_hours[k] = max(first - submit, 0.0)
            if record is not None:
                count[k] = record.interruptions
            if record is not None and math.isfinite(record.end_hours):
                hours[k] = record.end_hours - record.first_start_hours
            else:
                # inf: not ended; the analytic engine censors it at the training run's
                # horizon (``TrainingRun.horizon_days``) and reports it unfinished.
                self.unfinished[k] = True
            if self.window_hours is not None:
                self.rows.append(_window_row(window))
                self.kept.add(self.start + k, window)
            else:
                self.kept.add(self.start + k, result)
        return hours, count

    def window_metrics(self) -> dict[str, FloatArray]:
        """The fleet's metrics over ``[warmup, horizon)`` per run (none without a horizon)."""
        if not self.rows:
            return {}
        return {key: np.array([r[key] for r in self.rows]) for key in self.rows[0]}


def _hero_record(result: DesResult) -> JobRecord | None:
    """The training job's record (records are sorted by id; absent if never submitted)."""
    assert result.jobs is not None
    if result.jobs and result.jobs[0].job_id == HERO_JOB_ID:
        return result.jobs[0]
    return None


def _ended(result: DesResult) -> bool:
    record = _hero_record(result)
    return record is not None and math.isfinite(record.end_hours)


def simulate_training_block(
    scenario: Scenario,
    cat: Catalog,
    plan: InputPlan | np.random.SeedSequence,
    start: int,
    stop: int,
    options: DesOptions = DesOptions(),  # noqa: B008 (frozen: a shared default is safe)
) -> tuple[dict[str, FloatArray], InputDraws, dict[str, np.ndarray]]:
    """Usage, costs and fleet metrics of runs ``[start, stop)`` of a training scenario.

    Two passes over the same draws: the first (the analytic engine, cheap) gives each run's
    lead time and porting, hence the training job's submission; the second runs the job in
    the DES as the completion sampler. Queue waits are then added to the calendar before
    pricing, so the delay cost sees them.
    """
    # simulate() checks and warns before dispatching; again here for a worker that lacks
    # the trace file (the same clear error there)
    check_runnable(scenario, cat, max_jobs_per_run=options.max_jobs_per_run, warn=False)
    plan = as_plan(plan)
    before, pre_draws = analytic.simulate_training(scenario, cat, plan, start, stop)
    decision_h = 0.0 if scenario.horizon_days is None else scenario.warmup_days * _HOURS_PER_DAY
    submit_h = decision_h + _HOURS_PER_DAY * np.maximum(
        before["lead_time_days"], before["preparation_days"]
    )
    fleet = _fleet_draws(scenario, cat, pre_draws)
    hero = _Hero(scenario, cat, plan.root, start, submit_h, fleet, options)
    usage, draws = analytic.simulate_training(
        scenario, cat, plan, start, stop, hero.sample, per_run_streams=True
    )
    queue_days = hero.queue_hours / _HOURS_PER_DAY
    usage["queue_wait_days"] = queue_days
    usage["wait_days"] = usage["wait_days"] + queue_days
    usage["time_to_train_days"] = usage["time_to_train_days"] + queue_days
    if hero.unfinished.any():
        finished = usage.get("finished", np.ones(queue_days.size))
        usage["finished"] = np.where(hero.unfinished, 0.0, finished)
    data = {**usage, **price_training(scenario, cat, usage, draws), **hero.window_metrics()}
    return data, draws, hero.kept.arrays()


__all__ = [
    "HERO_JOB_ID",
    "HERO_PRIORITY",
    "MAX_WIDENINGS",
    "simulate_training_block",
]
