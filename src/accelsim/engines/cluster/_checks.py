"""Runnability checks of a DES scenario: what the engine would fail on, and overloads.

:func:`check_runnable` refuses, before any simulation, a trace file that is missing or has
bad rows, a trace job larger than every pool it may run on, a stream expected to submit too
many jobs in a run, or a fleet expecting too many chip failures and preemptions; it warns
(:class:`OverloadWarning`) of an offered load >= 1. Also here: which pools a workload's jobs
may run on (:func:`allowed_pools`) and a trace's jobs as the engine reads them.
"""

from __future__ import annotations

import csv
import functools
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from accelsim.catalog import Catalog
from accelsim.dists import as_dist
from accelsim.engines._offers import spot_preemption_prior
from accelsim.engines.cluster.des import TRACE_COLUMNS, JobSpec, read_trace
from accelsim.engines.cluster.des._streams import MAX_JOBS
from accelsim.engines.training import _analytic as analytic
from accelsim.errors import AccelsimError
from accelsim.models import reliability
from accelsim.scenario import JobStream, Pool, Scenario, Trace, TrainingRun, mix_part

_HOURS_PER_DAY = 24.0


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
            f"scenario {scenario.name!r}: the fleet expects {expected:.3g} chip failures and "
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
    if scenario.workloads is not None:
        # a mix: each stream or trace on the fleet, as the scenario it would be alone
        for i, part in enumerate(scenario.workloads):
            if isinstance(part, JobStream | Trace):
                alone = mix_part(scenario, i)
                check_runnable(alone, cat, max_jobs_per_run=max_jobs_per_run, warn=warn)
        return
    work = scenario.workload
    where = "workload"
    if isinstance(work, TrainingRun):
        if len(scenario.fleet) > 1 or scenario.background is not None:
            _check_hero_interruptions(scenario, cat)
        if scenario.background is None:
            return
        work, where = scenario.background, "background"
    if not isinstance(work, JobStream | Trace) or scenario.horizon_days is None:
        return
    horizon_h = scenario.horizon_days * _HOURS_PER_DAY
    _check_strikes(scenario, cat, horizon_h)
    if isinstance(work, JobStream):
        load = _stream_load(scenario, work, where, cat, max_jobs_per_run)
    else:
        load = _trace_load(scenario, work, where, cat, max_jobs_per_run)
    name = scenario.name
    if warn and load >= 1.0:
        warnings.warn(
            f"scenario {name!r}: offered load {load:.3g} >= 1: the fleet cannot keep up with "
            f"its {where}, so the queue grows to the horizon; waits count jobs still waiting "
            f"there up to it (see jobs_waiting_at_horizon)",
            OverloadWarning,
            stacklevel=2,
        )


MAX_EXPECTED_INTERRUPTIONS = 1e6
"""Largest expected number of interruptions of a training job the DES will simulate (one
event each; past it a run would take hours)."""
_PROBE_RUNS = 32
"""Runs of the analytic probe that estimates a DES training job's interruptions."""


def _check_hero_interruptions(scenario: Scenario, cat: Catalog) -> None:
    """Refuse a training run that the shared-cluster engine runs (several pools, or a
    background) when its job expects more than :data:`MAX_EXPECTED_INTERRUPTIONS` in most
    runs: the engine would refuse every such run, so ``validate`` says so before a study.
    The expectation is the DES's own (``reliability.expected_interruptions`` of the run's
    physics), over a small analytic probe of the same scenario (seed 0)."""
    seen: list[np.ndarray] = []

    def capture(
        rng: np.random.Generator,
        work: np.ndarray,
        interval: np.ndarray,
        write: np.ndarray,
        restart: np.ndarray,
        rate: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        physics = (work, interval, write, restart, rate)
        seen.append(np.asarray(reliability.expected_interruptions(*physics), dtype=float))
        return reliability.sample_completion_hours(rng, *physics)

    analytic.simulate_training(scenario, cat, np.random.SeedSequence(0), 0, _PROBE_RUNS, capture)
    events = float(np.median(np.concatenate(seen))) if seen else 0.0
    if not events <= MAX_EXPECTED_INTERRUPTIONS:
        raise AccelsimError(
            f"scenario {scenario.name!r}: its training job expects {events:.3g} interruptions "
            f"(median of a {_PROBE_RUNS}-run probe); the shared-cluster engine, which runs a "
            f"training run on several pools or beside a background, simulates each one and "
            f"stops at {MAX_EXPECTED_INTERRUPTIONS:.0e}. Check the MFU, failure and "
            f"preemption rates, or use one pool with the analytic engine"
        )


def _stream_load(
    scenario: Scenario, work: JobStream, where: str, cat: Catalog, max_jobs: int
) -> float:
    """A stream's offered load (chips x hours of work per hour over capacity); refuses a
    stream expected to submit more than ``max_jobs`` jobs in a run."""
    horizon_h = float(scenario.horizon_days or 0.0) * _HOURS_PER_DAY
    mean_gap = as_dist(work.interarrival_hours).expected_value()
    expected = horizon_h / mean_gap
    if expected > max_jobs:
        raise AccelsimError(
            f"scenario {scenario.name!r}: {where} expects {expected:,.0f} jobs per run "
            f"(horizon {horizon_h:g} h / mean inter-arrival {mean_gap:.3g} h), above the "
            f"cap of {max_jobs:,}: shorten horizon_days or lengthen interarrival_hours"
        )
    mix = work.framework if isinstance(work.framework, dict) else {work.framework: 1.0}
    pools = sorted({i for f, w in mix.items() if w > 0 for i in allowed_pools(scenario, f, cat)})
    demand = as_dist(work.chips).expected_value() * as_dist(work.duration_hours).expected_value()
    return float(demand / mean_gap / _capacity(scenario, cat, pools))


def _trace_load(scenario: Scenario, work: Trace, where: str, cat: Catalog, max_jobs: int) -> float:
    """A trace's offered load over the measured window; refuses a missing file, bad rows, a
    job no pool it may use can hold, and more than ``max_jobs`` jobs."""
    name = scenario.name
    horizon_h = float(scenario.horizon_days or 0.0) * _HOURS_PER_DAY
    warmup_h = scenario.warmup_days * _HOURS_PER_DAY
    path = Path(work.path)
    if not path.is_file():
        raise AccelsimError(f"scenario {name!r}: {where}.path: no such trace file: {path}")
    try:
        jobs = _trace_jobs(scenario, work, cat, max_jobs=max_jobs)
    except ValueError as exc:
        raise AccelsimError(f"scenario {name!r}: {where}: {exc}") from None
    _check_chip_type_column(name, where, work, path)
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
    if len(jobs) > max_jobs:
        raise AccelsimError(
            f"scenario {name!r}: {where} has {len(jobs):,} jobs, above the cap of "
            f"{max_jobs:,} per run"
        )
    capacity = _capacity(scenario, cat, range(len(counts)))
    return offered / ((horizon_h - warmup_h) * capacity)


_TraceKey = tuple[
    str, tuple[tuple[str, str], ...], str, tuple[tuple[str, tuple[int, ...]], ...], bool
]


def _trace_key(scenario: Scenario, work: Trace, cat: Catalog) -> tuple[_TraceKey, tuple[int, ...]]:
    """The arguments of the trace's reading (hashable, for the cache) and the pools its
    framework fits."""
    columns = TRACE_COLUMNS[work.columns] if isinstance(work.columns, str) else work.columns
    fits = set(allowed_pools(scenario, work.framework, cat))
    by_type: dict[str, list[int]] = {}
    for i, pool in enumerate(scenario.fleet):
        if i in fits:
            by_type.setdefault(pool.chip, []).append(i)
    for label, chip_id in (work.chip_types or {}).items():
        by_type[label] = by_type.get(cat.chip(chip_id).id, [])
    key = (
        work.path,
        tuple(sorted((columns or {}).items())),
        work.time_unit,
        tuple((k, tuple(v)) for k, v in sorted(by_type.items())),
        work.skip_zero,
    )
    return key, tuple(sorted(fits))


def _check_chip_type_column(name: str, where: str, work: Trace, path: Path) -> None:
    """Refuse ``chip_types`` on a trace without the chip-type column they would map."""
    if not work.chip_types:
        return
    columns = TRACE_COLUMNS[work.columns] if isinstance(work.columns, str) else work.columns
    column = (columns or {}).get("chip_type", "chip_type")
    with path.open(newline="") as handle:
        header = next(csv.reader(handle), [])
    if column not in header:
        raise AccelsimError(
            f"scenario {name!r}: {where}.chip_types maps chip types to pools, but the trace "
            f"has no {column!r} column (header: {header}): map the column in columns "
            f"(chip_type: <its name>) or remove chip_types"
        )


def _trace_jobs(scenario: Scenario, work: Trace, cat: Catalog, *, max_jobs: int) -> list[JobSpec]:
    """The trace's jobs with the pools each may use (framework fit, and chip type if mapped);
    more than ``max_jobs`` jobs are refused without reading the whole file."""
    key, pools = _trace_key(scenario, work, cat)
    jobs = _read_trace_cached(*key, max_jobs)
    return [j if j.pools is not None else j._replace(pools=pools) for j in jobs]


def trace_users(scenario: Scenario, work: Trace, cat: Catalog) -> tuple[str, ...]:
    """Each of the trace's jobs' ``user`` text, in job order (``""`` without a user column)."""
    return _read_trace_users(*_trace_key(scenario, work, cat)[0])


@functools.cache
def _read_trace_users(
    path: str,
    columns: tuple[tuple[str, str], ...],
    unit: str,
    pools_by_chip_type: tuple[tuple[str, tuple[int, ...]], ...],
    skip_zero: bool,
) -> tuple[str, ...]:
    users: list[str] = []
    read_trace(
        Path(path),
        columns=dict(columns) or None,
        time_unit=unit,  # type: ignore[arg-type]
        pools_by_chip_type=dict(pools_by_chip_type),
        skip_zero=skip_zero,
        users=users,
    )
    return tuple(users)


@functools.cache
def _read_trace_cached(
    path: str,
    columns: tuple[tuple[str, str], ...],
    unit: str,
    pools_by_chip_type: tuple[tuple[str, tuple[int, ...]], ...],
    skip_zero: bool,
    max_jobs: int,
) -> list[JobSpec]:
    return read_trace(
        Path(path),
        columns=dict(columns) or None,
        time_unit=unit,  # type: ignore[arg-type]
        pools_by_chip_type=dict(pools_by_chip_type),
        skip_zero=skip_zero,
        max_jobs=max_jobs,
    )


__all__ = [
    "OverloadWarning",
    "allowed_pools",
    "check_runnable",
    "trace_users",
]
