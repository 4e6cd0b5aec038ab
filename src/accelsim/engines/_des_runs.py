"""Scenario -> DES engine: shared clusters, job streams, traces, several pools, hero runs.

Each Monte Carlo run is one discrete-event simulation. The run's scalar inputs (failure
rates, lead times, repair-time laws, prices) are drawn per block of runs exactly as the
analytic engine draws them, so the two engines share common random numbers; the events of
run ``i`` come from streams addressed by ``("des", i)`` under the study root.

Costs of a shared fleet are the costs of holding it: every pool is held from delivery to
the horizon (cloud pools are rented for that time, used or not; idle reserved capacity is
first-class), on-prem pools pay amortisation, hosting and operations for those hours, and
energy is charged on allocated chip-hours (idle draw is not modelled, an underestimate).
Engineering and delay costs are not modelled for streams, so they are not reported. Queue
wait is priced when the user values it: ``queue_wait_job_hours`` (the area under the number
of waiting jobs over the window, so jobs still queued at the horizon count up to it) times
``wait_usd_per_job_hour`` (unset = 0) is ``wait_cost_usd``, part of ``tco_usd``; a training
run sharing a fleet prices its own queue wait the same way.

**A training run on the DES engine** (a ``background``, several pools, or ``engine="des"``)
is one gang job, :data:`HERO_JOB_ID`, holding every chip of the first pool and allowed on
that pool only, at priority :data:`HERO_PRIORITY` (the background keeps its own priorities,
so the priority matters under the ``priority`` schedulers only; the hero is never evicted
by ``priority_preemptive``). The analytic physics gives its compute hours, checkpoint
interval, write and restart times (:func:`accelsim.engines._analytic.simulate_training` with
a completion sampler that runs the DES). The background starts at time 0; the decision is at
``warmup_days`` (0 without a horizon), and the hero is submitted once its capacity lead time
and its porting are over: ``decision + max(lead, porting)``. Its queue wait (submission to
first start) is added to ``wait_days`` and ``time_to_train_days``; ``training_days`` runs
from its first start to its end, so waits after an interruption count there.

The first pool keeps the analytic engine's failure model so both engines mean the same
``training_days``: its chips fail at the run's interruption rate per chip (spot preemptions
included) and a hot spare replaces a failed chip at once. Other pools keep their repair and
return times. All pools are in service from time 0: a lead time is the hero's capacity or
quota wait, not the delivery of a fleet that already runs the background.

Horizon: the fleet's metrics (``jobs_*``, waits, ``utilization``) and the records and time
series asked for cover ``[0, horizon_days)``, the hero included as one of the jobs. If the
hero has not ended by then, the run is replayed with a wider horizon (doubling, at most
:data:`MAX_WIDENINGS` times). A replay draws the same events (every source is an addressed
stream read in time order), so it only extends the run: its hero equals that of one run with
an unbounded horizon, and its first ``horizon_days`` equal the measured window. (Running
until the hero ends would need a stop hook in :func:`accelsim.engines.des.run`; a replay
costs at most one extra run per doubling.) A hero still unfinished after the last widening
(starved, e.g. by ``smallest_first`` under a heavy stream) is unfinished (``finished`` 0):
its queue wait runs to the last horizon simulated if it never started, and its training
time is censored at the training run's own horizon.

Costs of a hero scenario are the hero's own (its chip-hours, held hours, engineering and
delay): the fleet's other costs belong to the background work.
"""

from __future__ import annotations

import functools
import heapq
import math
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from accelsim._typing import FloatArray, IntArray
from accelsim.catalog import Catalog
from accelsim.dists import as_dist
from accelsim.engines import _analytic as analytic
from accelsim.engines import des
from accelsim.engines._inputs import InputDraws, InputPlan, as_plan
from accelsim.engines._offers import lead_time_days, spot_preemption_prior
from accelsim.engines._pricing import (
    Billing,
    credits_usd,
    pool_billing,
    pool_energy_kwh,
    price_pool,
    price_training,
    wait_cost_usd,
)
from accelsim.engines.des import (
    TRACE_COLUMNS,
    DesResult,
    JobRecord,
    JobSpec,
    PoolSpec,
    poisson_stream,
    read_trace,
)
from accelsim.engines.des._streams import MAX_JOBS
from accelsim.errors import AccelsimError
from accelsim.models import reliability
from accelsim.scenario import JobStream, Pool, Scenario, Trace, TrainingRun
from accelsim.seeding import child, stream

_HOURS_PER_DAY = 24.0
MAX_EXPECTED_INTERRUPTIONS = 1e6
"""Largest expected number of interruptions of a training job the DES will simulate."""
HERO_JOB_ID = 0
"""Job id of the training run in a DES training scenario (background ids start at 1)."""
HERO_PRIORITY = 1
"""Priority of the training run; background jobs keep theirs (0 unless set)."""
MAX_WIDENINGS = 6
"""Horizon doublings tried before a training run that has not ended is censored."""

JOB_DTYPE = np.dtype(
    [
        ("run", np.int64),
        ("job_id", np.int64),
        ("submit_hours", np.float64),
        ("chips", np.int64),
        ("priority", np.int64),
        ("work_hours", np.float64),
        ("pool", np.int64),
        ("allocated_chips", np.int64),
        ("first_start_hours", np.float64),
        ("end_hours", np.float64),
        ("interruptions", np.int64),
        ("lost_compute_hours", np.float64),
    ]
)
"""One row per job and run of ``Result.extras["jobs"]`` (fields of
:class:`~accelsim.engines.des.JobRecord`, plus the Monte Carlo run)."""


@dataclass(frozen=True)
class DesOptions:
    """What a DES study keeps beyond its metrics."""

    keep_jobs: bool = False
    """Keep every job's record (memory grows with the jobs)."""
    resolution_hours: float | None = None
    """Width of the bins of the utilisation / queue time series, or ``None``. [h]"""
    max_jobs_per_run: int = MAX_JOBS
    """Most jobs a stream may submit in one run; more is an error naming the cap. [count]"""


class _Kept:
    """Per-job records and time series of the runs of one block, gathered as numpy arrays."""

    def __init__(self, options: DesOptions) -> None:
        self.options = options
        self.jobs: list[np.ndarray] = []
        self.series: list[tuple[FloatArray, FloatArray, FloatArray, FloatArray]] = []

    def add(self, run: int, result: DesResult) -> None:
        """Keep what was asked of run ``run``."""
        if self.options.keep_jobs:
            assert result.jobs is not None
            self.jobs.append(_job_rows(run, result.jobs))
        if self.options.resolution_hours is not None:
            ts = result.series
            assert ts is not None
            self.series.append((ts.start_hours, ts.busy_chips, ts.up_chips, ts.queued_jobs))

    def arrays(self) -> dict[str, np.ndarray]:
        """The block's kept data by name (empty when nothing was asked)."""
        out: dict[str, np.ndarray] = {}
        if self.options.keep_jobs:
            out["jobs"] = np.concatenate(self.jobs) if self.jobs else np.empty(0, JOB_DTYPE)
        if self.series:
            out["series.start_hours"] = self.series[0][0]
            for i, key in enumerate(("busy_chips", "up_chips", "queued_jobs"), start=1):
                out[f"series.{key}"] = np.stack([s[i] for s in self.series])
        return out


def _job_rows(run: int, jobs: Iterable[JobRecord]) -> np.ndarray:
    rows = [
        (
            run,
            j.job_id,
            j.submit_hours,
            j.chips,
            j.priority,
            j.work_hours,
            j.pool,
            j.allocated_chips,
            j.first_start_hours,
            j.end_hours,
            j.interruptions,
            j.lost_compute_hours,
        )
        for j in jobs
    ]
    return np.array(rows, dtype=JOB_DTYPE)


def merge_kept(parts: Sequence[Mapping[str, np.ndarray]]) -> dict[str, Any]:
    """``Result.extras`` from the blocks' kept arrays, in run order.

    ``"jobs"``: one structured array of :data:`JOB_DTYPE`, all runs (column ``run``).
    ``"series"``: ``start_hours`` (bins,), ``busy_chips`` and ``up_chips`` (runs, bins,
    pools), ``queued_jobs`` (runs, bins) and ``utilization`` (busy / up, ``nan`` with no
    chip up) per bin from time 0 to the horizon.
    """
    out: dict[str, Any] = {}
    if parts and "jobs" in parts[0]:
        out["jobs"] = np.concatenate([p["jobs"] for p in parts])
    if parts and "series.start_hours" in parts[0]:
        busy = np.concatenate([p["series.busy_chips"] for p in parts])
        up = np.concatenate([p["series.up_chips"] for p in parts])
        with np.errstate(invalid="ignore", divide="ignore"):
            util = np.where(up > 0, busy / np.where(up > 0, up, 1.0), np.nan)
        out["series"] = {
            "start_hours": parts[0]["series.start_hours"],
            "busy_chips": busy,
            "up_chips": up,
            "queued_jobs": np.concatenate([p["series.queued_jobs"] for p in parts]),
            "utilization": util,
        }
    return out


def _fits(framework: str, pool: Pool, cat: Catalog) -> bool:
    """A job runs on a pool unless its framework would need a port to the pool's stack."""
    stack = cat.chip(pool.chip).software_stack
    return cat.priors.framework_fit.table[framework][stack] != "ported"  # type: ignore[index]


def allowed_pools(scenario: Scenario, framework: str, cat: Catalog) -> tuple[int, ...]:
    """Indices of the pools a workload's jobs may run on, in fleet order."""
    allowed = tuple(i for i, p in enumerate(scenario.fleet) if _fits(framework, p, cat))
    if not allowed:
        raise ValueError(
            f"scenario {scenario.name!r}: no pool runs {framework} code without a port; "
            f"add a pool whose chip stack fits, or port the code (a TrainingRun)"
        )
    return allowed


class OverloadWarning(UserWarning):
    """A shared fleet offered at least as much work as it can do: waits grow with the horizon."""


def _capacity(scenario: Scenario, cat: Catalog, pools: Sequence[int]) -> float:
    """Chips x speed of the given pools (speed 1 = the first pool's chip). [chips]"""
    first = cat.chip(scenario.fleet[0].chip).bf16_tflops
    return sum(
        scenario.fleet[i].count * cat.chip(scenario.fleet[i].chip).bf16_tflops / first
        for i in pools
    )


MAX_EXPECTED_STRIKES = 10_000_000
"""Most chip failures and preemptions expected in one run of a shared fleet: each is an
event of the DES, so more would run for hours (a stated bound, not a sourced figure)."""


def _check_strikes(scenario: Scenario, cat: Catalog, horizon_h: float) -> None:
    """Refuse a fleet whose chips are expected to fail or be preempted too often to simulate."""
    a, priors = scenario.assumptions, cat.priors
    fail = a.failure_rate_per_chip_hour
    fail_rate = as_dist(fail if fail is not None else priors.failure_rate_per_chip_hour.value)
    expected = 0.0
    for pool in scenario.fleet:
        rate = fail_rate.expected_value()
        if pool.pricing == "spot":
            spot = a.spot_preemptions_per_hour
            law = spot if spot is not None else spot_preemption_prior(cat, pool)
            rate += as_dist(law).expected_value()
        expected += pool.count * rate * horizon_h
    if expected > MAX_EXPECTED_STRIKES:
        raise AccelsimError(
            f"scenario {scenario.name!r}: the fleet expects {expected:,.0f} chip failures and "
            f"preemptions per run over {horizon_h:g} h, above the cap of "
            f"{MAX_EXPECTED_STRIKES:,}: check the rates, or shorten horizon_days"
        )


def check_runnable(
    scenario: Scenario, cat: Catalog, *, max_jobs_per_run: int = MAX_JOBS, warn: bool = True
) -> None:
    """Refuse, before any simulation, what the DES would fail on; warn of an overload.

    Checks what needs the catalog or the file system, beyond the scenario's own validation:
    a trace file that is missing or has bad rows, a trace job larger than every pool it may
    run on, a stream expected to submit more than ``max_jobs_per_run`` jobs in a run, a fleet
    expecting more than :data:`MAX_EXPECTED_STRIKES` chip failures and preemptions. Warns
    (:class:`OverloadWarning`) where the offered load of a stream or trace, its chips x
    work per hour over the fleet's capacity (chips x speed), is >= 1: its queue then grows
    without bound and its waits are those of the horizon chosen.

    Raises
    ------
    AccelsimError
        Naming the scenario, the cause and the limit.
    """
    work = scenario.workload
    where = "workload"
    if isinstance(work, TrainingRun):
        if scenario.background is None:
            return
        work, where = scenario.background, "background"
    if not isinstance(work, JobStream | Trace) or scenario.horizon_days is None:
        return
    horizon_h = scenario.horizon_days * _HOURS_PER_DAY
    warmup_h = scenario.warmup_days * _HOURS_PER_DAY
    name = scenario.name
    _check_strikes(scenario, cat, horizon_h)
    if isinstance(work, JobStream):
        mean_gap = as_dist(work.interarrival_hours).expected_value()
        expected = horizon_h / mean_gap
        if expected > max_jobs_per_run:
            raise AccelsimError(
                f"scenario {name!r}: {where} expects {expected:,.0f} jobs per run "
                f"(horizon {horizon_h:g} h / mean inter-arrival {mean_gap:.3g} h), above the "
                f"cap of {max_jobs_per_run:,}: shorten horizon_days or lengthen "
                f"interarrival_hours"
            )
        mix = work.framework if isinstance(work.framework, dict) else {work.framework: 1.0}
        pools = sorted(
            {i for f, w in mix.items() if w > 0 for i in allowed_pools(scenario, f, cat)}
        )
        demand = (
            as_dist(work.chips).expected_value() * as_dist(work.duration_hours).expected_value()
        )
        load = demand / mean_gap / _capacity(scenario, cat, pools)
    else:
        path = Path(work.path)
        if not path.is_file():
            raise AccelsimError(f"scenario {name!r}: {where}.path: no such trace file: {path}")
        try:
            jobs = _trace_jobs(scenario, work, cat)
        except ValueError as exc:
            raise AccelsimError(f"scenario {name!r}: {where}: {exc}") from None
        counts = [p.count for p in scenario.fleet]
        offered = 0.0
        for job in jobs:
            allowed = job.pools if job.pools is not None else range(len(counts))
            most = max((counts[i] for i in allowed), default=0)
            if job.chips > most:
                raise AccelsimError(
                    f"scenario {name!r}: {where}: trace job {job.job_id} asks for "
                    f"{job.chips} chips, but the pools it may run on hold at most {most}; "
                    f"it could never start"
                )
            if warmup_h <= job.submit_hours < horizon_h:
                offered += job.chips * job.work_hours
        if len(jobs) > max_jobs_per_run:
            raise AccelsimError(
                f"scenario {name!r}: {where} has {len(jobs):,} jobs, above the cap of "
                f"{max_jobs_per_run:,} per run"
            )
        capacity = _capacity(scenario, cat, range(len(counts)))
        load = offered / ((horizon_h - warmup_h) * capacity)
    if warn and load >= 1.0:
        warnings.warn(
            f"scenario {name!r}: offered load {load:.2f} >= 1: the fleet cannot keep up with "
            f"its {where}, so the queue grows to the horizon; waits count jobs still waiting "
            f"there up to it (see jobs_waiting_at_horizon)",
            OverloadWarning,
            stacklevel=2,
        )


def _trace_jobs(scenario: Scenario, work: Trace, cat: Catalog) -> list[JobSpec]:
    """The trace's jobs with the pools each may use (framework fit, and chip type if mapped)."""
    columns = TRACE_COLUMNS[work.columns] if isinstance(work.columns, str) else work.columns
    fits = set(allowed_pools(scenario, work.framework, cat))
    by_type: dict[str, list[int]] = {}
    for i, pool in enumerate(scenario.fleet):
        if i in fits:
            by_type.setdefault(pool.chip, []).append(i)
    for label, chip_id in (work.chip_types or {}).items():
        by_type[label] = by_type.get(cat.chip(chip_id).id, [])
    jobs = _read_trace_cached(
        work.path,
        tuple(sorted((columns or {}).items())),
        work.time_unit,
        tuple((k, tuple(v)) for k, v in sorted(by_type.items())),
        work.skip_zero,
    )
    pools = tuple(sorted(fits))
    return [j if j.pools is not None else j._replace(pools=pools) for j in jobs]


@functools.cache
def _read_trace_cached(
    path: str,
    columns: tuple[tuple[str, str], ...],
    unit: str,
    pools_by_chip_type: tuple[tuple[str, tuple[int, ...]], ...],
    skip_zero: bool,
) -> list[JobSpec]:
    return read_trace(
        Path(path),
        columns=dict(columns) or None,
        time_unit=unit,  # type: ignore[arg-type]
        pools_by_chip_type=dict(pools_by_chip_type),
        skip_zero=skip_zero,
    )


@dataclass(frozen=True)
class _FleetDraws:
    """The fleet's drawn inputs of one block: one array per pool and input, drawn once."""

    failure_rate_per_chip_hour: FloatArray
    lead_time_days: tuple[FloatArray, ...]
    preemptions_per_chip_hour: tuple[FloatArray, ...]


def _fleet_draws(scenario: Scenario, cat: Catalog, draws: InputDraws) -> _FleetDraws:
    a, priors = scenario.assumptions, cat.priors
    fail = draws.get(
        "assumptions.failure_rate_per_chip_hour",
        a.failure_rate_per_chip_hour,
        priors.failure_rate_per_chip_hour.value,
    )
    lead = tuple(lead_time_days(cat, pool, a.lead_time_days, draws) for pool in scenario.fleet)
    preempt = tuple(
        draws.get(
            "assumptions.spot_preemptions_per_hour",
            a.spot_preemptions_per_hour,
            spot_preemption_prior(cat, pool),
        )
        if pool.pricing == "spot"
        else np.zeros(draws.runs)
        for pool in scenario.fleet
    )
    return _FleetDraws(fail, lead, preempt)


def _pool_specs(scenario: Scenario, cat: Catalog, fleet: _FleetDraws, run: int) -> list[PoolSpec]:
    """The fleet of run ``run`` of this block, with its drawn rates and lead times."""
    a, priors = scenario.assumptions, cat.priors
    first_peak = cat.chip(scenario.fleet[0].chip).bf16_tflops
    repair = as_dist(a.repair_hours if a.repair_hours is not None else priors.repair_hours.value)
    spot_return = as_dist(
        a.spot_return_hours if a.spot_return_hours is not None else priors.spot_return_hours.value
    )
    specs = []
    for i, pool in enumerate(scenario.fleet):
        chip = cat.chip(pool.chip)
        specs.append(
            PoolSpec(
                name=f"{i}:{pool.chip}@{pool.provider}",
                chips=pool.count,
                domain_chips=chip.scale_up_domain_chips,
                # Durations are on the first pool's chip; others scale with peak throughput.
                speed=chip.bf16_tflops / first_peak,
                failure_rate_per_chip_hour=float(fleet.failure_rate_per_chip_hour[run]),
                preemptions_per_chip_hour=float(fleet.preemptions_per_chip_hour[i][run]),
                lead_time_hours=float(fleet.lead_time_days[i][run]) * _HOURS_PER_DAY,
                repair_hours=repair.sample,
                preemption_return_hours=spot_return.sample,
                slice_sizes=chip.slice_sizes or (),
                slice_multiple=chip.slice_multiple or 0,
            )
        )
    return specs


def _stream_jobs(
    scenario: Scenario,
    cat: Catalog,
    work: JobStream | Trace,
    root: np.random.SeedSequence,
    run: int,
    until_hours: float,
    first_job_id: int = 0,
    max_jobs: int = MAX_JOBS,
) -> Iterable[JobSpec]:
    """The jobs of a stream or trace in run ``run``, numbered from ``first_job_id``."""
    if isinstance(work, JobStream):
        mix = work.framework if isinstance(work.framework, dict) else {work.framework: 1.0}
        frameworks = [f for f, w in mix.items() if w > 0]
        pools_of: dict[str, tuple[int, ...]] = {
            f: allowed_pools(scenario, f, cat) for f in frameworks
        }
        template = JobSpec(0, 0.0, 1, 1.0, 0, pools_of[frameworks[0]], None, work.whole_domains)
        jobs = poisson_stream(
            child(root, "des", run),
            interarrival_hours=as_dist(work.interarrival_hours).sample,
            chips=as_dist(work.chips).sample,
            work_hours=as_dist(work.duration_hours).sample,
            priority=as_dist(work.priority).sample,
            until_hours=until_hours,
            template=template,
            first_job_id=first_job_id,
            max_jobs=max_jobs,
        )
        if len(frameworks) == 1:
            return jobs
        return _mixed_frameworks(
            jobs, frameworks, [mix[f] for f in frameworks], pools_of, root, run
        )
    return [j._replace(job_id=j.job_id + first_job_id) for j in _trace_jobs(scenario, work, cat)]


def _mixed_frameworks(
    jobs: Iterable[JobSpec],
    frameworks: Sequence[str],
    weights: Sequence[float],
    pools_of: Mapping[str, tuple[int, ...]],
    root: np.random.SeedSequence,
    run: int,
) -> Iterator[JobSpec]:
    """Give each job a framework drawn from the mix, and the pools that framework fits."""
    p = np.asarray(weights) / sum(weights)
    rng = stream(root, "des", run, "framework")
    source = iter(jobs)
    block = 4096
    while True:
        picks = rng.choice(len(frameworks), size=block, p=p)
        for pick in picks.tolist():
            job = next(source, None)
            if job is None:
                return
            yield job._replace(pools=pools_of[frameworks[pick]])


def _window_row(result: DesResult) -> dict[str, float]:
    """The shared fleet's metrics over the measurement window of one run."""
    row = {
        "jobs_arrived": float(result.jobs_arrived),
        "jobs_completed": float(result.jobs_completed),
        "jobs_running_at_horizon": float(result.jobs_running_at_horizon),
        "jobs_queued_at_horizon": float(result.jobs_queued_at_horizon),
        # Jobs still waiting at the horizon count with their wait up to it (censored).
        "mean_wait_hours": result.mean_wait_hours,
        "p95_wait_hours": result.p95_wait_hours,
        "jobs_waiting_at_horizon": float(result.jobs_waiting_at_horizon),
        "offered_load": result.offered_load,
        # The area under the number of waiting jobs over the window: every job's wait in
        # it, jobs still queued at the horizon up to the horizon and requeued ones included.
        "queue_wait_job_hours": result.mean_queue_length
        * (result.horizon_hours - result.warmup_hours),
        "mean_jct_hours": result.mean_jct_hours,
        "utilization": result.utilization,
    }
    for i, pm in enumerate(result.pools):
        row[f"utilization_pool{i}"] = pm.utilization
    return row


def _stream_run(
    scenario: Scenario,
    cat: Catalog,
    fleet: _FleetDraws,
    root: np.random.SeedSequence,
    run: int,
    k: int,
    options: DesOptions,
) -> tuple[dict[str, float], DesResult]:
    """One run (``k`` of the block, ``run`` of the study) of a stream or trace scenario."""
    assert scenario.horizon_days is not None
    assert isinstance(scenario.workload, JobStream | Trace)
    horizon_h = scenario.horizon_days * _HOURS_PER_DAY
    pools = _pool_specs(scenario, cat, fleet, k)
    result = des.run(
        pools,
        _stream_jobs(
            scenario, cat, scenario.workload, root, run, horizon_h, 0, options.max_jobs_per_run
        ),
        scheduler=scenario.scheduler,
        horizon_hours=horizon_h,
        warmup_hours=scenario.warmup_days * _HOURS_PER_DAY,
        seed_seq=child(root, "des", run),
        keep_jobs=options.keep_jobs,
        utilization_resolution_hours=options.resolution_hours,
    )
    row = _window_row(result)
    row["goodput"] = result.goodput
    row["interruptions"] = float(result.interruptions)
    for i, pm in enumerate(result.pools):
        row[f"allocated_chip_hours_pool{i}"] = pm.allocated_chip_hours
        row[f"held_hours_pool{i}"] = max(0.0, horizon_h - pools[i].lead_time_hours)
    return row, result


def simulate_block(
    scenario: Scenario,
    cat: Catalog,
    plan: InputPlan | np.random.SeedSequence,
    start: int,
    stop: int,
    options: DesOptions = DesOptions(),  # frozen: a shared default is safe
) -> tuple[dict[str, FloatArray], InputDraws, dict[str, np.ndarray]]:
    """Metrics, draws and kept arrays of runs ``[start, stop)`` of a stream or trace scenario.

    ``cat`` is the study's catalog and ``plan`` how it draws (a bare seed: plain Monte Carlo).
    """
    check_runnable(scenario, cat, max_jobs_per_run=options.max_jobs_per_run, warn=start == 0)
    plan = as_plan(plan)
    draws = plan.draws(start, stop)
    fleet = _fleet_draws(scenario, cat, draws)
    kept = _Kept(options)
    rows: list[dict[str, float]] = []
    for k in range(draws.runs):
        row, result = _stream_run(scenario, cat, fleet, plan.root, start + k, k, options)
        kept.add(start + k, result)
        rows.append(row)
    data = {key: np.array([r[key] for r in rows]) for key in rows[0]}
    data |= _price_fleet(scenario, cat, draws, data)
    return data, draws, kept.arrays()


def _price_fleet(
    scenario: Scenario, cat: Catalog, draws: InputDraws, data: dict[str, FloatArray]
) -> dict[str, FloatArray]:
    """Cost of holding every pool to the horizon, energy of its allocated hours, and the
    window's queue wait (``queue_wait_job_hours``) at ``wait_usd_per_job_hour``."""
    total = {
        k: np.zeros(draws.runs) for k in ("hardware_cost_usd", "energy_cost_usd", "energy_kwh")
    }
    out: dict[str, FloatArray] = {}
    billings: list[Billing] = []
    for i, pool in enumerate(scenario.fleet):
        held_h = data[f"held_hours_pool{i}"]
        chip_hours = data[f"allocated_chip_hours_pool{i}"]
        kwh = pool_energy_kwh(pool, draws, scenario, cat.priors, chip_hours, cat=cat)
        total["energy_kwh"] = total["energy_kwh"] + kwh
        if pool.provider is None:
            continue
        # A shared fleet is held whether busy or not: rent is on every held chip-hour.
        costs = price_pool(
            pool,
            draws,
            scenario,
            chip_hours=pool.count * held_h,
            held_hours=held_h,
            kwh=kwh,
            cat=cat,
        )
        for key in ("hardware_cost_usd", "energy_cost_usd"):
            total[key] = total[key] + costs[key]
        billings.append(pool_billing(pool, costs["hardware_cost_usd"], held_h))
    out["energy_kwh"] = total["energy_kwh"]
    if all(p.provider is not None for p in scenario.fleet):
        out["hardware_cost_usd"] = total["hardware_cost_usd"]
        out["energy_cost_usd"] = total["energy_cost_usd"]
        out["wait_cost_usd"] = wait_cost_usd(scenario, draws, data["queue_wait_job_hours"])
        out["tco_usd"] = out["hardware_cost_usd"] + out["energy_cost_usd"] + out["wait_cost_usd"]
        if scenario.credits:
            out["credits_usd"] = credits_usd(scenario, cat, billings, draws.runs)
            out["tco_usd"] = out["tco_usd"] + out["credits_usd"]
        # With no job completed in the run, the whole cost: a lower bound of the first
        # job's (it completes later, if ever), never inf.
        out["usd_per_completed_job"] = out["tco_usd"] / np.maximum(data["jobs_completed"], 1.0)
    return out


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
        window = result = self._run(hero, k, rate, horizon, first=True)
        for _ in range(MAX_WIDENINGS):
            if _ended(result) or not math.isfinite(expected):
                break
            horizon = 2.0 * max(horizon, reach)
            result = self._run(hero, k, rate, horizon, first=False)
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
    options: DesOptions = DesOptions(),  # frozen: a shared default is safe
) -> tuple[dict[str, FloatArray], InputDraws, dict[str, np.ndarray]]:
    """Usage, costs and fleet metrics of runs ``[start, stop)`` of a training scenario.

    Two passes over the same draws: the first (the analytic engine, cheap) gives each run's
    lead time and porting, hence the training job's submission; the second runs the job in
    the DES as the completion sampler. Queue waits are then added to the calendar before
    pricing, so the delay cost sees them.
    """
    check_runnable(scenario, cat, max_jobs_per_run=options.max_jobs_per_run, warn=start == 0)
    plan = as_plan(plan)
    before, pre_draws = analytic.simulate_training(scenario, cat, plan, start, stop)
    decision_h = 0.0 if scenario.horizon_days is None else scenario.warmup_days * _HOURS_PER_DAY
    submit_h = decision_h + _HOURS_PER_DAY * np.maximum(
        before["lead_time_days"], before["preparation_days"]
    )
    fleet = _fleet_draws(scenario, cat, pre_draws)
    hero = _Hero(scenario, cat, plan.root, start, submit_h, fleet, options)
    usage, draws = analytic.simulate_training(scenario, cat, plan, start, stop, hero.sample)
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
    "JOB_DTYPE",
    "MAX_WIDENINGS",
    "DesOptions",
    "OverloadWarning",
    "allowed_pools",
    "check_runnable",
    "merge_kept",
    "simulate_block",
    "simulate_training_block",
]
