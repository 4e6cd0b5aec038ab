"""Scenario -> DES engine: shared clusters, job streams, traces, several pools.

Each Monte Carlo run is one discrete-event simulation. The run's scalar inputs (failure
rates, lead times, repair-time laws, prices) are drawn per block of runs exactly as the
analytic engine draws them, so the two engines share common random numbers; the events of
run ``i`` come from streams addressed by ``("des", i)`` under the study root.

Costs of a shared fleet are the costs of holding it: every pool is held from delivery to
the horizon (cloud pools are rented for that time, used or not; idle reserved capacity is
first-class), on-prem pools pay amortisation, hosting and operations for those hours, and
energy is charged on allocated chip-hours (idle draw is not modelled, an underestimate).
Engineering and delay costs are not modelled for streams, so they are not reported.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np

from accelsim import catalog
from accelsim._typing import FloatArray, IntArray
from accelsim.catalog.priors import Priors
from accelsim.dists import as_dist
from accelsim.engines import analytic, des
from accelsim.engines.des.specs import JobSpec, PoolSpec
from accelsim.engines.des.streams import poisson_stream
from accelsim.engines.des.trace import read_trace
from accelsim.engines.inputs import InputDraws
from accelsim.engines.pricing import pool_energy_kwh, price_pool
from accelsim.models import reliability
from accelsim.scenario import JobStream, Pool, Scenario, Trace
from accelsim.seeding import child

_HOURS_PER_DAY = 24.0


def _fits(framework: str, pool: Pool, priors: Priors) -> bool:
    """A job runs on a pool unless its framework would need a port to the pool's stack."""
    stack = catalog.chip(pool.chip).software_stack
    return priors.framework_fit.table[framework][stack] != "ported"  # type: ignore[index]


def allowed_pools(scenario: Scenario, framework: str) -> tuple[int, ...]:
    """Indices of the pools a workload's jobs may run on, in fleet order."""
    priors = catalog.priors()
    allowed = tuple(i for i, p in enumerate(scenario.fleet) if _fits(framework, p, priors))
    if not allowed:
        raise ValueError(
            f"scenario {scenario.name!r}: no pool runs {framework} code without a port; "
            f"add a pool whose chip stack fits, or port the code (a TrainingRun)"
        )
    return allowed


@functools.cache
def _trace_jobs(path: str, columns: tuple[tuple[str, str], ...] | None, unit: str) -> list[JobSpec]:
    return read_trace(Path(path), columns=dict(columns) if columns else None, time_unit=unit)  # type: ignore[arg-type]


def _pool_specs(scenario: Scenario, draws: InputDraws, run: int, priors: Priors) -> list[PoolSpec]:
    """The fleet of run ``run`` of this block, with its drawn rates and lead times."""
    a = scenario.assumptions
    first_peak = catalog.chip(scenario.fleet[0].chip).bf16_tflops
    fail = draws.get(
        "assumptions.failure_rate_per_chip_hour",
        a.failure_rate_per_chip_hour,
        priors.failure_rate_per_chip_hour.value,
    )
    repair = as_dist(a.repair_hours if a.repair_hours is not None else priors.repair_hours.value)
    specs = []
    for i, pool in enumerate(scenario.fleet):
        chip = catalog.chip(pool.chip)
        lead = draws.get(
            f"assumptions.lead_time_days.{pool.pricing}",
            a.lead_time_days,
            priors.lead_time_days[pool.pricing].value,
        )
        preempt = (
            draws.get(
                "assumptions.spot_preemptions_per_hour",
                a.spot_preemptions_per_hour,
                priors.spot_preemptions_per_chip_hour.value,
            )[run]
            if pool.pricing == "spot"
            else 0.0
        )
        specs.append(
            PoolSpec(
                name=f"{i}:{pool.chip}@{pool.provider}",
                chips=pool.count,
                domain_chips=chip.scale_up_domain_chips,
                # Durations are on the first pool's chip; others scale with peak throughput.
                speed=chip.bf16_tflops / first_peak,
                failure_rate_per_chip_hour=float(fail[run]),
                preemptions_per_chip_hour=float(preempt),
                lead_time_hours=float(lead[run]) * _HOURS_PER_DAY,
                repair_hours=repair.sample,
                preemption_return_hours=repair.sample,
            )
        )
    return specs


def _jobs(scenario: Scenario, root: np.random.SeedSequence, run: int) -> object:
    work = scenario.workload
    assert scenario.horizon_days is not None
    horizon_h = scenario.horizon_days * _HOURS_PER_DAY
    if isinstance(work, JobStream):
        template = JobSpec(
            0, 0.0, 1, 1.0, 0, allowed_pools(scenario, work.framework), None, work.whole_domains
        )
        priority = as_dist(work.priority)
        return poisson_stream(
            child(root, "des", run),
            interarrival_hours=as_dist(work.interarrival_hours).sample,
            chips=as_dist(work.chips).sample,
            work_hours=as_dist(work.duration_hours).sample,
            priority=priority.sample,
            until_hours=horizon_h,
            template=template,
        )
    assert isinstance(work, Trace)
    cols = tuple(sorted(work.columns.items())) if work.columns else None
    pools = allowed_pools(scenario, work.framework)
    return [j._replace(pools=pools) for j in _trace_jobs(work.path, cols, work.time_unit)]


def simulate_block(
    scenario: Scenario, root: np.random.SeedSequence, start: int, stop: int
) -> tuple[dict[str, FloatArray], InputDraws]:
    """Metrics of runs ``[start, stop)`` (one block) of a job-stream or trace scenario."""
    priors = catalog.priors()
    draws = InputDraws(root=root, start=start, stop=stop)
    assert scenario.horizon_days is not None
    horizon_h = scenario.horizon_days * _HOURS_PER_DAY
    warmup_h = scenario.warmup_days * _HOURS_PER_DAY
    rows: list[dict[str, float]] = []
    for k in range(draws.runs):
        pools = _pool_specs(scenario, draws, k, priors)
        result = des.run(
            pools,
            _jobs(scenario, root, start + k),  # type: ignore[arg-type]
            scheduler=scenario.scheduler,
            horizon_hours=horizon_h,
            warmup_hours=warmup_h,
            seed_seq=child(root, "des", start + k),
        )
        row = {
            "jobs_arrived": float(result.jobs_arrived),
            "jobs_completed": float(result.jobs_completed),
            "jobs_running_at_horizon": float(result.jobs_running_at_horizon),
            "jobs_queued_at_horizon": float(result.jobs_queued_at_horizon),
            "mean_wait_hours": result.mean_wait_hours,
            "p95_wait_hours": result.p95_wait_hours,
            "mean_jct_hours": result.mean_jct_hours,
            "utilization": result.utilization,
            "goodput": result.goodput,
            "interruptions": float(result.interruptions),
        }
        for i, pm in enumerate(result.pools):
            row[f"utilization_pool{i}"] = pm.utilization
            row[f"allocated_chip_hours_pool{i}"] = pm.allocated_chip_hours
            row[f"held_hours_pool{i}"] = max(0.0, horizon_h - pools[i].lead_time_hours)
        rows.append(row)
    data = {key: np.array([r[key] for r in rows]) for key in rows[0]}
    data |= _price_fleet(scenario, draws, data, priors)
    return data, draws


def _price_fleet(
    scenario: Scenario, draws: InputDraws, data: dict[str, FloatArray], priors: Priors
) -> dict[str, FloatArray]:
    """Cost of holding every pool to the horizon, and energy of its allocated hours."""
    total = {
        k: np.zeros(draws.runs) for k in ("hardware_cost_usd", "energy_cost_usd", "energy_kwh")
    }
    out: dict[str, FloatArray] = {}
    for i, pool in enumerate(scenario.fleet):
        held_h = data[f"held_hours_pool{i}"]
        kwh = pool_energy_kwh(pool, draws, scenario, priors, data[f"allocated_chip_hours_pool{i}"])
        total["energy_kwh"] = total["energy_kwh"] + kwh
        if pool.provider is None:
            continue
        # A shared fleet is held whether busy or not: rent is on every held chip-hour.
        costs = price_pool(
            pool, draws, scenario, chip_hours=pool.count * held_h, held_hours=held_h, kwh=kwh
        )
        for key in ("hardware_cost_usd", "energy_cost_usd"):
            total[key] = total[key] + costs[key]
    out["energy_kwh"] = total["energy_kwh"]
    if all(p.provider is not None for p in scenario.fleet):
        out["hardware_cost_usd"] = total["hardware_cost_usd"]
        out["energy_cost_usd"] = total["energy_cost_usd"]
        out["tco_usd"] = out["hardware_cost_usd"] + out["energy_cost_usd"]
        completed = data["jobs_completed"]
        with np.errstate(divide="ignore", invalid="ignore"):
            out["usd_per_completed_job"] = np.where(
                completed > 0, out["tco_usd"] / np.maximum(completed, 1.0), math.inf
            )
    return out


__all__ = ["allowed_pools", "simulate_block"]


def des_completion(
    scenario: Scenario, root: np.random.SeedSequence, start: int
) -> analytic.CompletionSampler:
    """A completion sampler that simulates each run's training job event by event.

    The job holds every chip of its dedicated pool; a failed chip is replaced at once (hot
    spare), so the model is the analytic engine's: interruptions at ``rate``, work lost
    since the last checkpoint, a restart that failures can also interrupt.
    """
    chips = scenario.fleet[0].count

    def sample(
        rng: np.random.Generator,
        work: FloatArray,
        interval: FloatArray,
        write: FloatArray,
        restart: FloatArray,
        rate: FloatArray,
    ) -> tuple[FloatArray, IntArray]:
        del rng  # each run's events come from its own addressed stream
        hours = np.empty(work.size)
        count = np.empty(work.size, dtype=np.int64)
        for k in range(work.size):
            pool = PoolSpec("dedicated", chips=chips, failure_rate_per_chip_hour=rate[k] / chips)
            tau = None if not np.isfinite(interval[k]) else float(interval[k])
            job = JobSpec(
                0, 0.0, chips, float(work[k]), 0, None, None, False, tau,
                float(write[k]), float(restart[k]), False,
            )  # fmt: skip
            # The engine runs to a horizon; start at twice the exact mean and widen until
            # the job ends. The same seed replays the same events, so a wider horizon only
            # extends the run: the result equals one run with an unbounded horizon.
            horizon = 2.0 * float(
                reliability.expected_completion_hours(
                    work[k], interval[k], write[k], restart[k], rate[k]
                )
            )
            while True:
                result = des.run(
                    [pool],
                    [job],
                    scheduler="fifo",
                    horizon_hours=horizon,
                    seed_seq=child(root, "des", start + k),
                    keep_jobs=True,
                )
                assert result.jobs is not None
                if math.isfinite(result.jobs[0].end_hours):
                    break
                horizon *= 4.0
            hours[k] = result.jobs[0].end_hours
            count[k] = result.jobs[0].interruptions
        return hours, count

    return sample
