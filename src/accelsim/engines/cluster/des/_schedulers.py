"""Scheduling policies: plain functions from a frozen queue snapshot to decisions.

A scheduler takes a :class:`QueueSnapshot` and returns the decisions to apply now, in order:
:class:`Start` (run a waiting job on a pool) and :class:`Evict` (stop a running job and
requeue it). The :class:`~accelsim.engines.cluster.des._cluster.Cluster` calls it on every arrival
and every release of chips, and checks each decision (a job started where it does not fit is
an error, never a silent skip). Adding a policy is writing one function; :data:`SCHEDULERS`
maps the names a scenario may use to them.

Every policy breaks ties explicitly: equal keys fall back to (submission time, job id), the
order of ``snap.pending``. Jobs are gang-scheduled: a job starts only when one pool has all
the chips it needs, and a job may run on the pools it lists, tried in its order of preference.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import NamedTuple, overload

from accelsim.engines.cluster.des._queue import QueueIndex, ShapeGroup
from accelsim.engines.cluster.des._waiting import Fit, Waiting
from accelsim.errors import close_matches


class ReadOnlyQueue(Sequence[Waiting]):
    """A read-only view of the cluster's queue (schedulers must not mutate it)."""

    __slots__ = ("_items",)

    def __init__(self, items: list[Waiting]) -> None:
        self._items = items

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> Waiting: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Waiting]: ...
    def __getitem__(self, index: int | slice) -> Waiting | Sequence[Waiting]:
        return self._items[index]

    def __iter__(self) -> Iterator[Waiting]:
        return iter(self._items)


class Running(NamedTuple):
    """A running job, as a scheduler sees it."""

    job_id: int
    pool: int
    chips: int
    priority: int
    submitted_hours: float
    started_hours: float
    expected_end_hours: float
    """Start plus the estimate: for backfill; a job may overrun it. [h]"""
    preemptible: bool


class QueueSnapshot(NamedTuple):
    """What a scheduler decides from. Immutable; the two collections are read-only views.

    ``pending`` and ``running`` are live read-only views of the cluster's state, valid
    for the duration of the call (copy what you keep): building copies on every event
    would make each event cost as much as the queue is long.
    """

    now_hours: float
    pending: Sequence[Waiting]
    """Waiting jobs ordered by (submission time, job id); requeued jobs keep their place."""
    free_chips: tuple[int, ...]
    """Idle chips that are up, per pool. [chips]"""
    running: Mapping[int, Running]
    """Running jobs by job id, in start order (left empty for :data:`IGNORES_RUNNING`)."""
    queue_index: QueueIndex | None = None
    """The cluster's index of ``pending`` for the policies in :data:`INDEXED_BY_PRIORITY`
    and :data:`INDEXED_BY_SHAPE` (``None``: the policy builds one from ``pending``, at the
    cost of a sort; the decisions are the same either way)."""


class Start(NamedTuple):
    """Decision: start ``job`` on pool ``pool`` now."""

    job: Waiting
    pool: int


class Evict(NamedTuple):
    """Decision: interrupt running job ``job_id`` (it loses work since its last checkpoint)."""

    job_id: int


Decision = Start | Evict
Scheduler = Callable[[QueueSnapshot], Sequence[Decision]]


def _first_fit(job: Waiting, free: list[int]) -> Fit | None:
    for fit in job.fits:
        if fit.chips <= free[fit.pool]:
            return fit
    return None


def _in_order(snap: QueueSnapshot, ordered: Iterable[Waiting]) -> list[Decision]:
    """Start jobs in the given order while each fits; the first that does not blocks the rest."""
    free = list(snap.free_chips)
    chosen: list[Decision] = []
    for job in ordered:
        for fit in job.fits:  # _first_fit, inlined: this loop runs on every event
            if fit.chips <= free[fit.pool]:
                break
        else:
            break
        free[fit.pool] -= fit.chips
        chosen.append(Start(job, fit.pool))
    return chosen


def fifo(snap: QueueSnapshot) -> list[Decision]:
    """Start jobs strictly in submission order; a job that does not fit blocks those behind it.

    Examples
    --------
    >>> job = Waiting(0.0, 7, 4, 0, (Fit(0, 4, 1.0),), True)
    >>> fifo(QueueSnapshot(0.0, [job], (8,), {}))
    [Start(job=Waiting(submitted_hours=0.0, job_id=7, ...), pool=0)]
    """
    return _in_order(snap, snap.pending)


def queue_index(snap: QueueSnapshot, *, by_priority: bool, by_shape: bool) -> QueueIndex:
    """The snapshot's index of its queue when it has the kind asked for, else one built from
    ``snap.pending`` (a snapshot made outside the cluster): every policy reads the queue one
    way, through an index (:mod:`._queue`)."""
    index = snap.queue_index
    has_kind = index is not None and (index.by_priority or not by_priority)
    if index is not None and has_kind and (index.by_shape or not by_shape):
        return index
    built = QueueIndex(by_priority=by_priority, by_shape=by_shape)
    for job in snap.pending:
        built.add(job)
    return built


def _by_priority(snap: QueueSnapshot) -> Iterable[Waiting]:
    """The queue by (priority descending, submission, id), from the index."""
    return queue_index(snap, by_priority=True, by_shape=False).in_priority_order()


def priority(snap: QueueSnapshot) -> list[Decision]:
    """Like :func:`fifo`, in order of priority (highest first), then submission, then id."""
    return _in_order(snap, _by_priority(snap))


def smallest_first(snap: QueueSnapshot) -> list[Decision]:
    """Start the smallest waiting jobs that fit now; ties go to the earlier submission.

    Greedy: a large job waits while smaller ones keep fitting (it can starve). With the
    cluster's index the work per call grows with the shapes of job that still fit, not with
    the queue (:mod:`._queue`).
    """
    free = list(snap.free_chips)
    chosen: list[Decision] = []
    index = queue_index(snap, by_priority=False, by_shape=True)
    for chips, groups in index.sizes():
        if chips > max(free, default=0):
            break  # a fit holds at least the job's chips: no larger job fits either
        _merge_starts([(g, 0) for g in groups], free, chosen)
    return chosen


def _merge_starts(
    starts: Sequence[tuple[ShapeGroup, int]], free: list[int], chosen: list[Decision]
) -> None:
    """Start, in queue order across the groups, each job from its position on that fits.

    A group whose next job does not fit is dropped: its jobs share their fits, and free
    chips only shrink, so none of them fits any more in this call.
    """
    heap = [(g.jobs[pos], i, pos) for i, (g, pos) in enumerate(starts) if pos < len(g.jobs)]
    heapq.heapify(heap)
    while heap:
        job, i, pos = heap[0]
        fit = _first_fit(job, free)
        if fit is None:
            heapq.heappop(heap)
            continue
        free[fit.pool] -= fit.chips
        chosen.append(Start(job, fit.pool))
        _advance(heap, starts[i][0].jobs, i, pos)


def _advance(heap: list[tuple[Waiting, int, int]], jobs: list[Waiting], i: int, pos: int) -> None:
    """Replace the heap's top (group ``i`` at ``pos``) by that group's next job, if any."""
    if pos + 1 < len(jobs):
        heapq.heapreplace(heap, (jobs[pos + 1], i, pos + 1))
    else:
        heapq.heappop(heap)


class Reservation(NamedTuple):
    """The head job's guaranteed start under EASY backfilling."""

    job_id: int
    pool: int
    start_hours: float
    """Earliest time enough chips free up on ``pool``, by running jobs' estimates. [h]"""
    spare_chips: int
    """Chips free at ``start_hours`` beyond what the head needs: backfill may keep these. [chips]"""


def _reserve(
    head: Waiting, snap: QueueSnapshot, free: list[int], started: list[tuple[int, float, int]]
) -> Reservation | None:
    """Earliest (time, pool) at which ``head`` fits if running jobs end at their estimates."""
    now = snap.now_hours
    best: Reservation | None = None
    for fit in head.fits:
        ends = [
            (max(r.expected_end_hours, now), r.chips)
            for r in snap.running.values()
            if r.pool == fit.pool
        ]
        ends += [(end, chips) for pool, end, chips in started if pool == fit.pool]
        ends.sort()
        avail = free[fit.pool]
        at = now
        for end, chips in ends:
            if avail >= fit.chips:
                break
            avail += chips
            at = end
        if avail < fit.chips:
            continue  # only chips down for repair could make room here; not reservable now
        if best is None or at < best.start_hours:
            best = Reservation(head.job_id, fit.pool, at, avail - fit.chips)
    return best


def easy_backfill_plan(snap: QueueSnapshot) -> tuple[list[Decision], Reservation | None]:
    """EASY backfilling: the decisions and the head job's reservation (for tests and tools).

    Jobs start in submission order while they fit. The first that does not (the head) gets a
    reservation: the earliest time enough chips free up on one of its pools, assuming running
    jobs end at their estimates. A later job may start now if it fits now and either runs on
    another pool, ends (by its estimate) no later than the reservation, or uses only chips
    the head will not need then. So with estimates that are never short, backfilling never
    delays the head (the EASY property, tested in ``tests/properties``).

    References
    ----------
    D. Lifka, "The ANL/IBM SP scheduling system", JSSPP 1995; A. Mu'alem and D. Feitelson,
    "Utilization, predictability, workloads, and user runtime estimates in scheduling the
    IBM SP2 with backfilling", IEEE TPDS 12(6), 2001.
    """
    free = list(snap.free_chips)
    now = snap.now_hours
    chosen: list[Decision] = []
    started: list[tuple[int, float, int]] = []
    pending = iter(snap.pending)
    head: Waiting | None = None
    for job in pending:
        fit = _first_fit(job, free)
        if fit is None:
            head = job
            break
        free[fit.pool] -= fit.chips
        started.append((fit.pool, now + fit.hours, fit.chips))
        chosen.append(Start(job, fit.pool))
    if head is None:
        return chosen, None
    reservation = _reserve(head, snap, free, started)
    if reservation is None:
        return chosen, None
    index = queue_index(snap, by_priority=False, by_shape=True)
    _backfill_indexed(snap, index, head, reservation, free, chosen)
    return chosen, reservation


def _backfill_indexed(
    snap: QueueSnapshot,
    index: QueueIndex,
    head: Waiting,
    reservation: Reservation,
    free: list[int],
    chosen: list[Decision],
) -> None:
    """The backfill pass of :func:`easy_backfill_plan` over the index: the jobs behind the
    head in queue order, merged across the shapes that may still start one."""
    now, pool, start = snap.now_hours, reservation.pool, reservation.start_hours
    spare = reservation.spare_chips
    groups = index.groups()
    heap = []
    for i, g in enumerate(groups):
        pos = bisect_right(g.jobs, head)
        if pos < len(g.jobs):
            heap.append((g.jobs[pos], i, pos))
    heapq.heapify(heap)
    ends: dict[tuple[int, ...], list[int]] = {}
    while heap:
        job, i, pos = heap[0]
        group = groups[i]
        short = _short_fits(group, free, spare, pool)
        if short is not None:  # only a job ending by the reservation may start
            key = (i, *short)
            if key not in ends:  # fixed for the call, as the estimates and the reservation are
                ends[key] = _ending_in_time(group, short, now, start)
            at = _next_short(group, pos, short, ends[key], now, start)
            if at is None:
                heapq.heappop(heap)  # free chips and the spare only shrink: never again here
                continue
            if at != pos:
                heapq.heapreplace(heap, (group.jobs[at], i, at))  # back into queue order
                continue
        for fit in job.fits:  # the rule of the unindexed pass, unchanged
            if fit.chips > free[fit.pool]:
                continue
            if fit.pool == pool and now + fit.hours > start:
                if fit.chips > spare:
                    continue
                spare -= fit.chips
            free[fit.pool] -= fit.chips
            chosen.append(Start(job, fit.pool))
            break
        _advance(heap, group.jobs, i, pos)


def _short_fits(group: ShapeGroup, free: list[int], spare: int, pool: int) -> list[int] | None:
    """``None`` when every job of the group may start by the backfill rule (a fit with its
    chips free off the reserved pool, or within the spare chips); else the fits (indices
    in the shape) with their chips free, all on the reserved pool, where a job may start
    only if it ends by the reservation (none: no job of the group may start)."""
    short = []
    for k, (p, chips) in enumerate(group.shape[1]):
        if chips <= free[p]:
            if p != pool or chips <= spare:
                return None
            short.append(k)
    return short


def _ending_in_time(group: ShapeGroup, short: list[int], now: float, start: float) -> list[int]:
    """Per fit of ``short``, how many of the group's jobs end by ``start`` there (a prefix of
    its hours-sorted list: ``now + hours`` grows with the hours)."""
    return [bisect_right(group.by_hours[k], start, key=lambda e: now + e.hours) for k in short]


def _next_short(
    group: ShapeGroup, pos: int, short: list[int], counts: list[int], now: float, start: float
) -> int | None:
    """Where, in the group's queue order, the first job from position ``pos`` on that ends by
    ``start`` on one of the ``short`` fits is (``None``: none does); ``counts`` are
    :func:`_ending_in_time`'s.

    The jobs that end in time are a prefix of each fit's hours-sorted list, of ``total``
    jobs in all. The search walks the queue from ``pos`` for at most ``total`` jobs (when
    many end in time one comes soon), then takes the earliest of the prefix in queue order:
    it costs at most twice the smaller of the distance to the job and ``total``.
    """
    total = sum(counts)
    if total == 0:
        return None
    jobs = group.jobs
    stop = min(len(jobs), pos + total)
    for at in range(pos, stop):
        fits = jobs[at].fits
        for k in short:
            if now + fits[k].hours <= start:
                return at
    if stop == len(jobs):
        return None
    job = jobs[stop]
    here = (job.submitted_hours, job.job_id)
    first = min(
        (
            (e.submitted_hours, e.job_id)
            for k, m in zip(short, counts, strict=True)
            for e in group.by_hours[k][:m]
            if (e.submitted_hours, e.job_id) >= here
        ),
        default=None,
    )
    return None if first is None else bisect_left(jobs, first)


def backfill(snap: QueueSnapshot) -> list[Decision]:
    """EASY backfilling with runtime estimates (see :func:`easy_backfill_plan`)."""
    return easy_backfill_plan(snap)[0]


def _priority_key(job: Waiting) -> tuple[int, float, int]:
    return (-job.priority, job.submitted_hours, job.job_id)


def priority_preemptive(snap: QueueSnapshot) -> list[Decision]:
    """:func:`priority`, evicting lower-priority preemptible jobs when that makes room.

    When the highest-priority waiting job does not fit, running jobs of strictly lower
    priority on one of its pools are evicted (lowest priority first, then the most recently
    started, whose lost work is likely smallest) until it fits; if even that cannot make
    room, it blocks those behind it. Evicted jobs requeue and lose work since their last
    checkpoint.
    """
    free = list(snap.free_chips)
    chosen: list[Decision] = []
    evicted: set[int] = set()
    for job in _by_priority(snap):
        fit = _first_fit(job, free)
        if fit is None:
            fit = _make_room(job, snap, free, evicted, chosen)
            if fit is None:
                break
        free[fit.pool] -= fit.chips
        chosen.append(Start(job, fit.pool))
    return chosen


def _make_room(
    job: Waiting, snap: QueueSnapshot, free: list[int], evicted: set[int], chosen: list[Decision]
) -> Fit | None:
    """Evict the fewest low-priority jobs (in eviction order) that let ``job`` fit; or none."""
    for fit in job.fits:
        victims = sorted(
            (
                r
                for r in snap.running.values()
                if r.pool == fit.pool
                and r.preemptible
                and r.priority < job.priority
                and r.job_id not in evicted
            ),
            key=lambda r: (r.priority, -r.started_hours, -r.job_id),
        )
        avail = free[fit.pool]
        taken: list[Running] = []
        for victim in victims:
            if avail >= fit.chips:
                break
            avail += victim.chips
            taken.append(victim)
        if avail >= fit.chips:
            for victim in taken:
                evicted.add(victim.job_id)
                chosen.append(Evict(victim.job_id))
            free[fit.pool] = avail
            return fit
    return None


SCHEDULERS: Mapping[str, Scheduler] = {
    "fifo": fifo,
    "backfill": backfill,
    "smallest_first": smallest_first,
    "priority": priority,
    "priority_preemptive": priority_preemptive,
}
"""Scheduler names a scenario may use."""

STARTS_ONLY: frozenset[Scheduler] = frozenset({fifo, backfill, smallest_first, priority})
"""Policies that never evict: the cluster skips calling them when no chip is free."""

HEAD_BLOCKING: frozenset[Scheduler] = frozenset({fifo})
"""Policies that start nothing when the first job in submission order fits nowhere."""

IGNORES_RUNNING: frozenset[Scheduler] = frozenset({fifo, smallest_first, priority})
"""Policies that never read ``snap.running``: the cluster does not build it for them."""

INDEXED_BY_PRIORITY: frozenset[Scheduler] = frozenset({priority, priority_preemptive})
"""Policies that read the queue by priority from ``snap.queue_index`` when it is given."""

INDEXED_BY_SHAPE: frozenset[Scheduler] = frozenset({smallest_first, backfill})
"""Policies that read the queue by shape from ``snap.queue_index`` when it is given."""


def resolve_scheduler(scheduler: str | Scheduler) -> Scheduler:
    """The policy function for a name in :data:`SCHEDULERS`, or a callable as is.

    Examples
    --------
    >>> resolve_scheduler("fifo") is fifo
    True
    >>> resolve_scheduler("fifa")
    Traceback (most recent call last):
    ...
    KeyError: "unknown scheduler 'fifa'; did you mean 'fifo'? (known: backfill, fifo, ...)"
    """
    if callable(scheduler):
        return scheduler
    try:
        return SCHEDULERS[scheduler]
    except KeyError:
        hint = close_matches(scheduler, SCHEDULERS)
        msg = f"unknown scheduler {scheduler!r}"
        msg += f"; did you mean {', '.join(map(repr, hint))}?" if hint else ""
        raise KeyError(f"{msg} (known: {', '.join(sorted(SCHEDULERS))})") from None


__all__ = [
    "HEAD_BLOCKING",
    "IGNORES_RUNNING",
    "INDEXED_BY_PRIORITY",
    "INDEXED_BY_SHAPE",
    "SCHEDULERS",
    "STARTS_ONLY",
    "Decision",
    "Evict",
    "Fit",
    "QueueSnapshot",
    "ReadOnlyQueue",
    "Reservation",
    "Running",
    "Scheduler",
    "Start",
    "Waiting",
    "backfill",
    "easy_backfill_plan",
    "fifo",
    "priority",
    "priority_preemptive",
    "resolve_scheduler",
]
