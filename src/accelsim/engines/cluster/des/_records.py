"""What a DES run remembers: streaming accumulators, and per-job and per-event records on request.

Memory does not grow with the number of finished jobs unless asked: time-weighted levels
(busy chips, up chips, queue length) are integrated as they change, counts are counters, and
the only per-job data kept by default is one float per measured wait (for the exact p95).
Per-job :class:`JobRecord` and per-event :class:`EventRecord` lists are kept only when the
caller asks (``keep_jobs`` / ``keep_events``); :mod:`accelsim.engines.cluster.des._metrics` turns
all of it into a result after the run.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass
from typing import Literal, NamedTuple

EventKind = Literal[
    "deliver", "arrive", "start", "finish", "interrupt", "fail", "repair", "preempt", "return"
]
Cause = Literal["", "failure", "preemption", "policy"]
CAUSES: tuple[Cause, ...] = ("failure", "preemption", "policy")


class EventRecord(NamedTuple):
    """One state change, with the pool's state right after it (``keep_events=True``)."""

    time_hours: float
    kind: EventKind
    """``deliver`` (pool capacity arrives), ``arrive``, ``start``, ``finish``, ``interrupt``
    (a running job stops and requeues), ``fail`` / ``preempt`` (a chip goes down),
    ``repair`` / ``return`` (it comes back)."""
    pool: int
    """Pool index, or -1 for an arrival."""
    job_id: int
    """The job concerned, or -1 for chip events."""
    busy_chips: int
    """Chips allocated to jobs in ``pool`` after the change (0 when ``pool`` is -1). [chips]"""
    up_chips: int
    """Chips delivered and not down in ``pool`` after the change. [chips]"""
    queued_jobs: int
    """Jobs waiting after the change."""
    cause: Cause = ""
    """For ``interrupt``: ``failure``, ``preemption`` or ``policy``."""


@dataclass(frozen=True, slots=True)
class JobRecord:
    """The history of one job (``keep_jobs=True``); ``nan`` where it did not get that far."""

    job_id: int
    submit_hours: float
    chips: int
    priority: int
    work_hours: float
    """Failure-free compute on a speed-1 pool. [h]"""
    pool: int
    """Pool of its last attempt, or -1 if it never started."""
    allocated_chips: int
    """Chips held in its last attempt (more than ``chips`` if rounded to whole domains)."""
    first_start_hours: float
    end_hours: float
    """Completion time; ``nan`` if running or queued at the horizon. [h]"""
    interruptions: int
    lost_compute_hours: float
    """Compute done and then lost to interruptions, in wall hours on its pools. [h]"""

    @property
    def wait_hours(self) -> float:
        """Submission to first start. [h]"""
        return self.first_start_hours - self.submit_hours

    @property
    def jct_hours(self) -> float:
        """Submission to completion (job completion time). [h]"""
        return self.end_hours - self.submit_hours


class Level:
    """A piecewise-constant quantity integrated over time from ``from_hours`` on.

    ``set(now, value)`` closes the segment since the previous change: one step per change,
    never one per time step. :class:`BinnedLevel` also integrates per time bin.
    """

    __slots__ = ("_from", "area", "last_hours", "value")

    def __init__(self, from_hours: float) -> None:
        self.value = 0.0
        self.last_hours = 0.0
        self.area = 0.0
        self._from = from_hours

    def set(self, now: float, value: float) -> None:
        """Change the level to ``value`` at time ``now`` (non-decreasing). [h]"""
        if now > self._from:
            last = self.last_hours
            self.area += self.value * (now - (last if last > self._from else self._from))
        self.last_hours = now
        self.value = value

    def bins(self) -> list[float]:
        """Integral per time bin (none here)."""
        return []


class BinnedLevel(Level):
    """A :class:`Level` that also integrates per bin of ``bin_hours`` from time 0.

    A segment is split at the bin edges it crosses: one step per change plus one per bin
    crossed.
    """

    __slots__ = ("_bins", "_edge", "_k", "_width")

    def __init__(self, from_hours: float, bin_hours: float, horizon_hours: float) -> None:
        super().__init__(from_hours)
        self._width = bin_hours
        self._bins = [0.0] * (math.ceil(horizon_hours / bin_hours) + 1)
        self._k = 0
        self._edge = bin_hours

    def set(self, now: float, value: float) -> None:
        """Change the level to ``value`` at time ``now`` (non-decreasing). [h]"""
        bins = self._bins
        t = self.last_hours
        v = self.value
        while now >= self._edge:
            bins[self._k] += v * (self._edge - t)
            t = self._edge
            self._k += 1
            self._edge = (self._k + 1) * self._width
        bins[self._k] += v * (now - t)
        super().set(now, value)

    def bins(self) -> list[float]:
        """Integral per bin so far (the caller divides by the bin widths)."""
        return self._bins


def level(from_hours: float, bin_hours: float | None, horizon_hours: float) -> Level:
    """A :class:`BinnedLevel` if ``bin_hours`` is set, else a plain :class:`Level`."""
    if bin_hours is None:
        return Level(from_hours)
    return BinnedLevel(from_hours, bin_hours, horizon_hours)


class PoolTally:
    """Accumulators of one pool."""

    __slots__ = (
        "busy",
        "chip_downs",
        "interruptions",
        "lost_chip_hours",
        "up",
        "useful_chip_hours",
    )

    def __init__(self, warmup_hours: float, bin_hours: float | None, horizon_hours: float) -> None:
        self.busy = level(warmup_hours, bin_hours, horizon_hours)
        self.up = level(warmup_hours, bin_hours, horizon_hours)
        self.useful_chip_hours = 0.0
        self.lost_chip_hours = 0.0
        self.interruptions = dict.fromkeys(CAUSES, 0)
        self.chip_downs = {"failure": 0, "preemption": 0}


class Recorder:
    """Everything a run accumulates. Counts cover the whole run; rates and levels, the window.

    The measurement window is ``[warmup_hours, horizon_hours)``: waits and completion times
    count for jobs submitted in it; chip-hours and levels are integrated over it.
    """

    def __init__(
        self,
        pools: int,
        *,
        warmup_hours: float,
        horizon_hours: float,
        bin_hours: float | None,
        keep_jobs: bool,
        keep_events: bool,
    ) -> None:
        self.warmup_hours = warmup_hours
        self.horizon_hours = horizon_hours
        self.bin_hours = bin_hours
        self.pools = [PoolTally(warmup_hours, bin_hours, horizon_hours) for _ in range(pools)]
        self.queue = level(warmup_hours, bin_hours, horizon_hours)
        self.arrived = 0
        self.arrived_in_window = 0
        self.completed = 0
        self.wait_hours = array("d")
        # Jobs submitted in the window and never started by the horizon: their waits are in
        # wait_hours, censored at the horizon.
        self.censored_waits = 0
        # Chips x speed-1 work of the jobs submitted in the window. [chip h]
        self.offered_chip_hours = 0.0
        self.jct_sum_hours = 0.0
        self.jct_count = 0
        # Jobs submitted in the window and unfinished at the horizon, counted to it.
        self.jct_censored_sum_hours = 0.0
        self.jct_censored_count = 0
        self.jobs: list[JobRecord] | None = [] if keep_jobs else None
        self.events: list[EventRecord] | None = [] if keep_events else None


__all__ = [
    "CAUSES",
    "Cause",
    "EventKind",
    "EventRecord",
    "JobRecord",
    "Level",
    "PoolTally",
    "Recorder",
]
