"""Scenario -> DES engine: job streams and traces on shared clusters of several pools.

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

What a training run on the DES engine shares with them (the block's drawn fleet, the pools
of a run, a stream's jobs, the window's metrics, what a study keeps) is here too; the
training run itself is :mod:`accelsim.engines.cluster._hero`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import accelsim.engines.cluster.des as des
from accelsim._typing import FloatArray
from accelsim.catalog import Catalog
from accelsim.dists import as_dist
from accelsim.engines._inputs import InputDraws, InputPlan, as_plan
from accelsim.engines._offers import lead_time_days, spot_preemption_prior
from accelsim.engines._price_inputs import draw_price_inputs
from accelsim.engines._pricing import (
    Billing,
    credits_usd,
    pool_billing,
    pool_energy_kwh,
    price_pool,
    wait_cost_usd,
)
from accelsim.engines.cluster._checks import _trace_jobs, allowed_pools, check_runnable, trace_users
from accelsim.engines.cluster._mixed_parts import chargeback, team_metrics, trace_teams
from accelsim.engines.cluster.des import DesResult, JobRecord, JobSpec, PoolSpec, poisson_stream
from accelsim.engines.cluster.des._streams import MAX_JOBS
from accelsim.errors import AccelsimError
from accelsim.scenario import JobStream, Scenario, Trace, workload_name
from accelsim.seeding import child, stream

_HOURS_PER_DAY = 24.0

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
:class:`~accelsim.engines.cluster.des.JobRecord`, plus the Monte Carlo run)."""


@dataclass(frozen=True)
class DesOptions:
    """What a DES study keeps beyond its metrics."""

    keep_jobs: bool = False
    """Keep every job's record (memory grows with the jobs)."""
    resolution_hours: float | None = None
    """Width of the bins of the utilisation / queue time series, or ``None``. [h]"""
    max_jobs_per_run: int = MAX_JOBS
    """Most jobs a stream may submit in one run; more is an error naming the cap. [count]"""
    max_events: int = des.MAX_EVENTS
    """Event budget of one DES run (:func:`accelsim.engines.cluster.des.run`). [count]"""


def over_budget(scenario: Scenario, run: int, err: des.ClusterBudgetError) -> AccelsimError:
    """A study's words for a DES run over its event budget: the scenario and run named."""
    return AccelsimError(f"scenario {scenario.name!r}, run {run}: {err}")


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
    return [
        j._replace(job_id=j.job_id + first_job_id)
        for j in _trace_jobs(scenario, work, cat, max_jobs=max_jobs)
    ]


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


_Teams = tuple[list[str], np.ndarray]
"""A trace's team labels and each job's team index (:func:`trace_teams`)."""


def _stream_run(
    scenario: Scenario,
    cat: Catalog,
    fleet: _FleetDraws,
    root: np.random.SeedSequence,
    run: int,
    k: int,
    options: DesOptions,
    teams: _Teams | None = None,
) -> tuple[dict[str, float], DesResult]:
    """One run (``k`` of the block, ``run`` of the study) of a stream or trace scenario;
    with ``teams``, each team's chip-hours per pool (``held_pool<p>.<trace>.<team>``, priced
    by :func:`simulate_block`) and job metrics, as in a mix."""
    assert scenario.horizon_days is not None
    assert isinstance(scenario.workload, JobStream | Trace)
    horizon_h = scenario.horizon_days * _HOURS_PER_DAY
    pools = _pool_specs(scenario, cat, fleet, k)
    holdings = None
    if teams is not None:
        team = teams[1]
        holdings = des.Holdings(lambda job_id: int(team[job_id]), len(teams[0]), pools=len(pools))
    try:
        result = des.run(
            pools,
            _stream_jobs(
                scenario, cat, scenario.workload, root, run, horizon_h, 0, options.max_jobs_per_run
            ),
            scheduler=scenario.scheduler,
            horizon_hours=horizon_h,
            warmup_hours=scenario.warmup_days * _HOURS_PER_DAY,
            seed_seq=child(root, "des", run),
            keep_jobs=options.keep_jobs or teams is not None,
            utilization_resolution_hours=options.resolution_hours,
            holdings=holdings,
            max_events=options.max_events,
        )
    except des.ClusterBudgetError as err:
        raise over_budget(scenario, run, err) from None
    row = _window_row(result)
    if teams is not None and holdings is not None and result.jobs is not None:
        prefix = workload_name(scenario.workload)
        warmup_h = scenario.warmup_days * _HOURS_PER_DAY
        per_team = team_metrics(result.jobs, teams[1], 0, teams[0], horizon_h, warmup_h)
        for c, label in enumerate(teams[0]):
            row[f"chip_hours.{prefix}.{label}"] = holdings.chip_hours[c]
            for p, hours in enumerate(holdings.pool_chip_hours[c]):
                row[f"held_pool{p}.{prefix}.{label}"] = hours
            row |= {f"{prefix}.{label}.{key}": v for key, v in per_team[label].items()}
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
    # simulate() checks and warns before dispatching; again here for a worker that lacks
    # the trace file (the same clear error there)
    check_runnable(scenario, cat, max_jobs_per_run=options.max_jobs_per_run, warn=False)
    plan = as_plan(plan)
    draws = plan.draws(start, stop)
    fleet = _fleet_draws(scenario, cat, draws)
    work = scenario.workload
    teams = None
    # Teams where the trace's columns map a user column, as the mix documents: a header
    # merely named "user" (e.g. a Helios log's hundreds of users) adds no metrics here.
    if isinstance(work, Trace) and isinstance(work.columns, dict) and "user" in work.columns:
        teams = trace_teams(trace_users(scenario, work, cat), f"scenario {scenario.name!r}")
    kept = _Kept(options)
    rows: list[dict[str, float]] = []
    for k in range(draws.runs):
        row, result = _stream_run(scenario, cat, fleet, plan.root, start + k, k, options, teams)
        kept.add(start + k, result)
        rows.append(row)
    data = {key: np.array([r[key] for r in rows]) for key in rows[0]}
    priced = _price_fleet(scenario, cat, draws, data, per_pool=teams is not None)
    pools = range(len(scenario.fleet))
    costs = [priced.pop(f"pool_cost_usd{p}", None) for p in pools]
    data |= priced
    if teams is not None:
        assert work is not None
        trace = workload_name(work)
        held = {
            f"{trace}.{label}": [data.pop(f"held_pool{p}.{trace}.{label}") for p in pools]
            for label in teams[0]
        }
        if all(c is not None for c in costs):
            charged = chargeback([c for c in costs if c is not None], held)
            data |= {f"chargeback_usd.{name}": value for name, value in charged.items()}
    return data, draws, kept.arrays()


def _price_fleet(
    scenario: Scenario,
    cat: Catalog,
    draws: InputDraws,
    data: dict[str, FloatArray],
    per_pool: bool = False,
) -> dict[str, FloatArray]:
    """Cost of holding every pool to the horizon, energy of its allocated hours, and the
    window's queue wait (``queue_wait_job_hours``) at ``wait_usd_per_job_hour``.

    With ``per_pool``, also each priced pool's hardware + energy as ``pool_cost_usd{i}``
    (what a mix charges back to the pool's own users). [USD]
    """
    priced_fleet = all(p.provider is not None for p in scenario.fleet)
    prices = draw_price_inputs(scenario, cat, draws, wait=priced_fleet, emissions=False)
    total = {
        k: np.zeros(draws.runs) for k in ("hardware_cost_usd", "energy_cost_usd", "energy_kwh")
    }
    out: dict[str, FloatArray] = {}
    billings: list[Billing] = []
    for i, pool in enumerate(scenario.fleet):
        held_h = data[f"held_hours_pool{i}"]
        chip_hours = data[f"allocated_chip_hours_pool{i}"]
        kwh = pool_energy_kwh(pool, prices.pool(i), chip_hours, cat=cat)
        total["energy_kwh"] = total["energy_kwh"] + kwh
        if pool.provider is None:
            continue
        # A shared fleet is held whether busy or not: rent is on every held chip-hour.
        costs = price_pool(
            pool,
            prices.pool(i),
            prices.costs,
            chip_hours=pool.count * held_h,
            held_hours=held_h,
            kwh=kwh,
            cat=cat,
        )
        for key in ("hardware_cost_usd", "energy_cost_usd"):
            total[key] = total[key] + costs[key]
        if per_pool:
            out[f"pool_cost_usd{i}"] = costs["hardware_cost_usd"] + costs["energy_cost_usd"]
        billings.append(pool_billing(pool, costs["hardware_cost_usd"], held_h))
    out["energy_kwh"] = total["energy_kwh"]
    if priced_fleet:
        out["hardware_cost_usd"] = total["hardware_cost_usd"]
        out["energy_cost_usd"] = total["energy_cost_usd"]
        out["wait_cost_usd"] = wait_cost_usd(prices.costs, data["queue_wait_job_hours"])
        out["tco_usd"] = out["hardware_cost_usd"] + out["energy_cost_usd"] + out["wait_cost_usd"]
        if scenario.credits:
            out["credits_usd"] = credits_usd(scenario, cat, billings, draws.runs)
            out["tco_usd"] = out["tco_usd"] + out["credits_usd"]
        # With no job completed in the run, the whole cost: a lower bound of the first
        # job's (it completes later, if ever), never inf.
        out["usd_per_completed_job"] = out["tco_usd"] / np.maximum(data["jobs_completed"], 1.0)
    return out


__all__ = [
    "JOB_DTYPE",
    "DesOptions",
    "merge_kept",
    "simulate_block",
]
