"""Per-run results of the DES engine, computed after the run from the recorder's tallies.

Definitions (the measurement window is ``[warmup_hours, horizon_hours)``):

- *Counts* ``jobs_arrived``, ``jobs_completed``, ``jobs_running_at_horizon`` and
  ``jobs_queued_at_horizon`` cover the whole run, so ``arrived == completed + running +
  queued`` holds exactly.
- *Wait*: first start minus submission, for jobs submitted in the window; a job still
  waiting for its first start at the horizon counts with its wait up to the horizon
  (censored: a lower bound of its wait), so an overloaded fleet never reports less wait
  than it imposes; ``jobs_waiting_at_horizon`` says how many waits are censored. With no
  job submitted in the window the waits are 0. *JCT*: completion minus submission, for
  jobs submitted in the window, an unfinished job counted to the horizon (censored alike);
  0 with no job submitted in the window.
- *Offered load*: chips x speed-1 work of the jobs submitted in the window, over the
  window's capacity (every pool's chips x speed x window); >= 1 means the fleet cannot keep
  up, and waits grow with the horizon.
- *Available* chip-hours integrate the chips that are delivered and up (not down for repair
  or preemption) over the window; *allocated* chip-hours, the chips held by jobs (whole
  domains included); *useful* chip-hours, each job's chips times the compute it kept:
  restarts, checkpoint writes, lost work and domain rounding are not useful. Utilisation is
  allocated / available and goodput useful / available, per pool and overall (0 when
  nothing was available, e.g. a horizon inside the fleet's lead time). Compute still
  running at the horizon counts as useful.
- Interruptions, chip failures and preemptions are counted in the window.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from accelsim._typing import FloatArray
from accelsim.engines.cluster.des._records import EventRecord, JobRecord, Recorder
from accelsim.engines.cluster.des._specs import PoolSpec


@dataclass(frozen=True, slots=True)
class PoolMetrics:
    """One pool's usage over the window: what the cost model prices."""

    name: str
    available_chip_hours: float
    """Delivered chips that were up, integrated over the window. [chip h]"""
    allocated_chip_hours: float
    """Chips held by jobs, integrated over the window. [chip h]"""
    useful_chip_hours: float
    """Chips times compute that was kept. [chip h]"""
    lost_chip_hours: float
    """Chips times compute lost to interruptions. [chip h]"""
    utilization: float
    """Allocated / available. [fraction]"""
    goodput: float
    """Useful / available. [fraction]"""
    interruptions_failure: int
    interruptions_preemption: int
    interruptions_policy: int
    chip_failures: int
    chip_preemptions: int


@dataclass(frozen=True, slots=True)
class TimeSeries:
    """Averages per time bin from time 0 to the horizon (warm-up included, to show it)."""

    start_hours: FloatArray
    """Start of each bin. [h]"""
    busy_chips: FloatArray
    """Mean allocated chips, shape (bins, pools). [chips]"""
    up_chips: FloatArray
    """Mean chips delivered and up, shape (bins, pools). [chips]"""
    queued_jobs: FloatArray
    """Mean jobs waiting, shape (bins,)."""

    @property
    def utilization(self) -> FloatArray:
        """Allocated / available per bin and pool (``nan`` with no chips up). [fraction]"""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.up_chips > 0, self.busy_chips / self.up_chips, np.nan)


@dataclass(frozen=True, slots=True)
class DesResult:
    """Metrics of one DES run (see the module docstring for the definitions)."""

    horizon_hours: float
    warmup_hours: float
    jobs_arrived: int
    jobs_completed: int
    jobs_running_at_horizon: int
    jobs_queued_at_horizon: int
    mean_wait_hours: float
    p95_wait_hours: float
    mean_jct_hours: float
    jobs_waiting_at_horizon: int
    """Jobs submitted in the window never started by the horizon (censored waits)."""
    offered_load: float
    """Offered work over capacity in the window (see the module docstring). [fraction]"""
    arrival_rate_per_hour: float
    """Jobs submitted in the window per hour of window. [1/h]"""
    mean_queue_length: float
    """Time-average number of waiting jobs over the window (requeued ones included)."""
    utilization: float
    goodput: float
    interruptions: int
    pools: tuple[PoolMetrics, ...]
    wait_hours: FloatArray
    """The measured waits, in order of first start. [h]"""
    jobs: tuple[JobRecord, ...] | None
    """Per-job records sorted by id (``keep_jobs=True``)."""
    events: tuple[EventRecord, ...] | None
    """Every state change in order (``keep_events=True``)."""
    series: TimeSeries | None
    """Per-bin averages (``utilization_resolution_hours`` set)."""

    @property
    def allocated_chip_hours(self) -> tuple[float, ...]:
        """Allocated chip-hours per pool, the usage the cost model prices. [chip h]"""
        return tuple(p.allocated_chip_hours for p in self.pools)


def _ratio(num: float, den: float) -> float:
    # 0 / 0 (no chip up in the window, say before the fleet's delivery): 0, nothing was used
    return num / den if den > 0 else 0.0


def _share(part: float, whole: float) -> float:
    """``part / whole`` for a part that cannot exceed the whole (chips busy or doing useful
    work are chips up): the two are sums of the same intervals taken in different orders,
    so a saturated pool's ratio could pass 1 by an ulp (a goodput of 1.000000000001)."""
    return _ratio(min(part, whole), whole)


def _series(rec: Recorder, pools: int) -> TimeSeries | None:
    if rec.bin_hours is None:
        return None
    width = rec.bin_hours
    bins = math.ceil(rec.horizon_hours / width - 1e-9)
    start: FloatArray = np.arange(bins, dtype=np.float64) * width
    widths = np.minimum(start + width, rec.horizon_hours) - start

    def mean(level_bins: list[float]) -> FloatArray:
        out: FloatArray = np.asarray(level_bins[:bins], dtype=np.float64) / widths
        return out

    busy = np.stack([mean(t.busy.bins()) for t in rec.pools], axis=1).reshape(bins, pools)
    up = np.stack([mean(t.up.bins()) for t in rec.pools], axis=1).reshape(bins, pools)
    return TimeSeries(start, busy, up, mean(rec.queue.bins()))


def summarize(
    rec: Recorder, pools: Sequence[PoolSpec], running_at_horizon: int, queued_at_horizon: int
) -> DesResult:
    """Build the result from a closed recorder (pure: reads ``rec``, changes nothing)."""
    window = rec.horizon_hours - rec.warmup_hours
    per_pool = tuple(
        PoolMetrics(
            name=spec.name,
            available_chip_hours=t.up.area,
            allocated_chip_hours=t.busy.area,
            useful_chip_hours=t.useful_chip_hours,
            lost_chip_hours=t.lost_chip_hours,
            utilization=_share(t.busy.area, t.up.area),
            goodput=_share(t.useful_chip_hours, t.up.area),
            interruptions_failure=t.interruptions["failure"],
            interruptions_preemption=t.interruptions["preemption"],
            interruptions_policy=t.interruptions["policy"],
            chip_failures=t.chip_downs["failure"],
            chip_preemptions=t.chip_downs["preemption"],
        )
        for spec, t in zip(pools, rec.pools, strict=True)
    )
    available = sum(p.available_chip_hours for p in per_pool)
    waits = np.frombuffer(rec.wait_hours, dtype=float).copy()
    return DesResult(
        horizon_hours=rec.horizon_hours,
        warmup_hours=rec.warmup_hours,
        jobs_arrived=rec.arrived,
        jobs_completed=rec.completed,
        jobs_running_at_horizon=running_at_horizon,
        jobs_queued_at_horizon=queued_at_horizon,
        mean_wait_hours=float(waits.mean()) if waits.size else 0.0,
        p95_wait_hours=float(np.quantile(waits, 0.95)) if waits.size else 0.0,
        mean_jct_hours=_ratio(
            rec.jct_sum_hours + rec.jct_censored_sum_hours,
            rec.jct_count + rec.jct_censored_count,
        )
        if rec.jct_count + rec.jct_censored_count
        else 0.0,
        jobs_waiting_at_horizon=rec.censored_waits,
        offered_load=_ratio(
            rec.offered_chip_hours, window * sum(spec.chips * spec.speed for spec in pools)
        ),
        arrival_rate_per_hour=rec.arrived_in_window / window,
        mean_queue_length=rec.queue.area / window,
        utilization=_share(sum(p.allocated_chip_hours for p in per_pool), available),
        goodput=_share(sum(p.useful_chip_hours for p in per_pool), available),
        interruptions=sum(
            p.interruptions_failure + p.interruptions_preemption + p.interruptions_policy
            for p in per_pool
        ),
        pools=per_pool,
        wait_hours=waits,
        jobs=None if rec.jobs is None else tuple(sorted(rec.jobs, key=lambda j: j.job_id)),
        events=None if rec.events is None else tuple(rec.events),
        series=_series(rec, len(pools)),
    )


__all__ = ["DesResult", "PoolMetrics", "TimeSeries", "summarize"]
