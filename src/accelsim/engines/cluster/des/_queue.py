"""An index of the waiting jobs kept beside the queue, so a policy's work per event does not
grow with the queue.

Sorting the whole queue on every event (as a policy over a bare snapshot does) costs
``O(Q log Q)`` per event, so an overloaded fleet, whose queue grows with the horizon, runs in
time quadratic in it. The cluster keeps this index up to date as jobs enter and leave the
queue (``O(log Q)`` search and a ``memmove`` each), and hands it to the policies that read
it in :attr:`~accelsim.engines.cluster.des._schedulers.QueueSnapshot.queue_index`:

- **by priority**: per priority, the jobs in submission order (``priority``,
  ``priority_preemptive``: the policy walks them highest priority first and stops where
  the first job blocks, as the sorted queue would);
- **by shape**: per *shape* (the job's chips and the ``(pool, chips)`` of each of its fits,
  in order), the jobs in submission order, and per fit the jobs by estimated hours (for
  ``backfill``, which may start a job on the reserved pool only if it ends by the
  reservation).
  Jobs of one shape fit or do not fit alike, and free chips only shrink while a policy
  decides, so once a shape's first job no longer fits no job of it does: ``smallest_first``
  and ``backfill`` visit the shapes that can still fit (few: they are set by the job sizes
  and pools, not the queue's length) and merge their jobs in the policy's order.

The index only speeds a policy up: every policy gives the same decisions with it and
without it (``queue_index=None``: the sorted queue), which the tests check decision by decision.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterator
from typing import NamedTuple

from accelsim.engines.cluster.des._waiting import Waiting

Shape = tuple[int, tuple[tuple[int, int], ...]]
"""A job's chips, and the ``(pool, chips)`` of each of its fits in order of preference."""


def shape_of(w: Waiting) -> Shape:
    """The shape of a waiting job: what decides where, and whether, it fits now."""
    return (w.chips, tuple((f.pool, f.chips) for f in w.fits))


class HoursKey(NamedTuple):
    """Orders a shape's jobs by their estimated hours on one fit (ties: the queue order)."""

    hours: float
    submitted_hours: float
    job_id: int


class ShapeGroup:
    """The waiting jobs of one shape: in queue order, and by estimated hours on each fit."""

    __slots__ = ("by_hours", "jobs", "shape")

    def __init__(self, shape: Shape) -> None:
        self.shape = shape
        self.jobs: list[Waiting] = []
        """In queue order: (submission time, job id)."""
        self.by_hours: list[list[HoursKey]] = [[] for _ in shape[1]]
        """Per fit (in the shape's order), the jobs' estimated hours there, ascending."""


class QueueIndex:
    """The waiting jobs by priority and by shape (see the module docstring).

    Parameters
    ----------
    by_priority : bool
        Keep the jobs of each priority in queue order.
    by_shape : bool
        Keep the jobs of each shape in queue order, and their hours per fit.
    """

    __slots__ = ("_priorities", "_shapes", "_sizes", "by_priority", "by_shape")

    def __init__(self, *, by_priority: bool, by_shape: bool) -> None:
        self.by_priority = by_priority
        self.by_shape = by_shape
        self._priorities: dict[int, list[Waiting]] = {}
        self._shapes: dict[Shape, ShapeGroup] = {}
        self._sizes: dict[int, list[ShapeGroup]] = {}
        """Chips -> the non-empty shape groups of that many chips."""

    def add(self, w: Waiting) -> None:
        """A job enters the queue (a new arrival, or a requeue in its old place)."""
        if self.by_priority:
            jobs = self._priorities.get(w.priority)
            if jobs is None:
                self._priorities[w.priority] = [w]
            elif w < jobs[-1]:
                insort(jobs, w)
            else:
                jobs.append(w)
        if self.by_shape:
            shape = shape_of(w)
            group = self._shapes.get(shape)
            if group is None:
                group = self._shapes[shape] = ShapeGroup(shape)
                self._sizes.setdefault(w.chips, []).append(group)
            if group.jobs and w < group.jobs[-1]:
                insort(group.jobs, w)
            else:
                group.jobs.append(w)
            for k, fit in enumerate(w.fits):
                insort(group.by_hours[k], HoursKey(fit.hours, w.submitted_hours, w.job_id))

    def remove(self, w: Waiting) -> None:
        """A job leaves the queue (started or withdrawn)."""
        if self.by_priority:
            jobs = self._priorities[w.priority]
            del jobs[bisect_left(jobs, w)]
            if not jobs:
                del self._priorities[w.priority]
        if self.by_shape:
            shape = shape_of(w)
            group = self._shapes[shape]
            del group.jobs[bisect_left(group.jobs, w)]
            for k, fit in enumerate(w.fits):
                hours = group.by_hours[k]
                del hours[bisect_left(hours, HoursKey(fit.hours, w.submitted_hours, w.job_id))]
            if not group.jobs:
                del self._shapes[shape]
                same = self._sizes[w.chips]
                same.remove(group)
                if not same:
                    del self._sizes[w.chips]

    def in_priority_order(self) -> Iterator[Waiting]:
        """The waiting jobs by (priority descending, submission time, job id), lazily."""
        for p in sorted(self._priorities, reverse=True):
            yield from self._priorities[p]

    def sizes(self) -> list[tuple[int, list[ShapeGroup]]]:
        """The shape groups by chips, ascending (each list in the order shapes appeared)."""
        return sorted(self._sizes.items())

    def groups(self) -> list[ShapeGroup]:
        """Every non-empty shape group."""
        return list(self._shapes.values())


__all__ = ["HoursKey", "QueueIndex", "Shape", "ShapeGroup", "shape_of"]
