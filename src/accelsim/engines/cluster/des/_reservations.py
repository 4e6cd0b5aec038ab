"""Time-window reservations and who held the chips: what a fleet of several workloads needs.

:class:`Holdings` integrates the chips each *class* of jobs holds (a workload of a mix, a
team of a trace), attempt by attempt, from the cluster's start and release of chips: the
chip-hours each class held on each pool, and for the classes asked every attempt's
interval. Summed over the classes they equal each pool's allocated chip-hours (the
recorder's busy level), which the tests check.

:class:`Withdrawals` ends jobs at given times wherever they are (waiting or running): a
reservation whose window closed, such as a serving replica of an hour plan. A job that
finished first is left alone.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator
from typing import cast

from simpy.events import Event

from accelsim.engines.cluster.des._cluster import Cluster, wakeup


class Holdings:
    """Chip-hours held per class of job, from every attempt's start to its release.

    Parameters
    ----------
    job_class : callable
        ``job_class(job_id)`` gives the job's class, an index in ``[0, classes)``.
    classes : int
        Number of classes.
    intervals_of : collection of int
        Classes whose attempts are kept as ``(start, end, chips)`` intervals. [h, h, chips]
    pools : int
        Number of pools of the cluster (``pool_chip_hours`` has one column per pool).
    """

    __slots__ = ("_class", "_open", "chip_hours", "intervals", "pool_chip_hours")

    def __init__(
        self,
        job_class: Callable[[int], int],
        classes: int,
        intervals_of: Collection[int] = (),
        pools: int = 1,
    ) -> None:
        self._class = job_class
        self._open: dict[int, tuple[int, int, float, int]] = {}
        self.chip_hours = [0.0] * classes
        """Chip-hours held by each class, over every pool. [chip h]"""
        self.pool_chip_hours = [[0.0] * pools for _ in range(classes)]
        """Chip-hours held by each class (row) on each pool (column). [chip h]"""
        self.intervals: dict[int, list[tuple[float, float, int]]] = {c: [] for c in intervals_of}
        """Each kept class's attempts, ``(start, end, chips)`` in order of release."""

    def start(self, job_id: int, chips: int, now: float, pool: int = 0) -> None:
        """An attempt of ``job_id`` takes ``chips`` chips of ``pool`` at ``now``. [chips, h]"""
        self._open[job_id] = (self._class(job_id), chips, now, pool)

    def stop(self, job_id: int, now: float) -> None:
        """The running attempt of ``job_id`` releases its chips at ``now``. [h]"""
        cls, chips, began, pool = self._open.pop(job_id)
        held = chips * (now - began)
        self.chip_hours[cls] += held
        self.pool_chip_hours[cls][pool] += held
        kept = self.intervals.get(cls)
        if kept is not None:
            kept.append((began, now, chips))

    def close(self, horizon_hours: float) -> None:
        """Attempts still running at the horizon hold their chips up to it. [h]"""
        for job_id in list(self._open):
            self.stop(job_id, horizon_hours)


class Withdrawals:
    """Withdraws jobs at given times (``(time, job_id)`` pairs in non-decreasing time)."""

    def __init__(
        self, cluster: Cluster, pairs: Iterable[tuple[float, int]], horizon_hours: float
    ) -> None:
        self._cluster = cluster
        self._pairs: Iterator[tuple[float, int]] = iter(pairs)
        self._horizon = horizon_hours
        self._last = 0.0

    def start(self) -> None:
        """Schedule the first withdrawal."""
        self._schedule(next(self._pairs, None))

    def _schedule(self, pair: tuple[float, int] | None) -> None:
        if pair is None or pair[0] >= self._horizon:
            return
        if not pair[0] >= self._last:
            raise ValueError(
                f"withdrawals must come in time order: job {pair[1]} at {pair[0]} h follows "
                f"one at {self._last} h"
            )
        self._last = pair[0]
        env = self._cluster.env
        wakeup(env, pair[0] - env.now, self._on_time, pair)

    def _on_time(self, event: Event) -> None:
        time_hours, job_id = cast(tuple[float, int], event.value)
        absent = []
        nxt: tuple[float, int] | None = (time_hours, job_id)
        while nxt is not None and nxt[0] == time_hours:
            if self._cluster.holds(nxt[1]):
                self._cluster.withdraw(nxt[1])
            else:
                absent.append(nxt[1])
            nxt = next(self._pairs, None)
        if absent:
            # a job not in the system may be one submitted at this very instant, whose
            # arrival SimPy has not processed yet: withdraw it once everything already
            # due now has happened (a job that is over stays over)
            wakeup(self._cluster.env, 0.0, self._on_late, absent)
        self._schedule(nxt)

    def _on_late(self, event: Event) -> None:
        for job_id in cast(list[int], event.value):
            self._cluster.withdraw(job_id)


__all__ = ["Holdings", "Withdrawals"]
