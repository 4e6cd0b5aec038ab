"""Test oracle: the cluster DES's scheduling policies as they were before the queue index,
each sorting the whole queue on every call.

The library's policies (``accelsim.engines.cluster.des._schedulers``) read the queue through
an index (:class:`~accelsim.engines.cluster.des._queue.QueueIndex`, the cluster's, or one
built from the snapshot's queue) so their work per event does not grow with the queue. These
are the plain definitions, kept in tests/ to check the indexed policies decision by decision
(``tests/unit/test_des_queue_index.py``, ``tests/properties/test_queue_index_properties.py``).
They read a snapshot's attributes only, so they take the library's ``QueueSnapshot``; their
decisions are tuples equal to the library's.

The original module docstring follows.

Scheduling policies: plain functions from a frozen queue snapshot to decisions.

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

from collections.abc import Mapping, Sequence

from accelsim.engines.cluster.des._schedulers import (
    Decision,
    Evict,
    QueueSnapshot,
    Reservation,
    Running,
    Scheduler,
    Start,
)
from accelsim.engines.cluster.des._waiting import Fit, Waiting


def _first_fit(job: Waiting, free: list[int]) -> Fit | None:
    for fit in job.fits:
        if fit.chips <= free[fit.pool]:
            return fit
    return None


def _in_order(snap: QueueSnapshot, ordered: Sequence[Waiting]) -> list[Decision]:
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


def priority(snap: QueueSnapshot) -> list[Decision]:
    """Like :func:`fifo`, in order of priority (highest first), then submission, then id."""
    return _in_order(snap, sorted(snap.pending, key=_priority_key))


def smallest_first(snap: QueueSnapshot) -> list[Decision]:
    """Start the smallest waiting jobs that fit now; ties go to the earlier submission.

    Greedy: a large job waits while smaller ones keep fitting (it can starve).
    """
    free = list(snap.free_chips)
    chosen: list[Decision] = []
    for job in sorted(snap.pending, key=lambda j: (j.chips, j.submitted_hours, j.job_id)):
        fit = _first_fit(job, free)
        if fit is not None:
            free[fit.pool] -= fit.chips
            chosen.append(Start(job, fit.pool))
    return chosen


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
    spare = reservation.spare_chips
    for job in pending:
        for fit in job.fits:
            if fit.chips > free[fit.pool]:
                continue
            if fit.pool == reservation.pool and now + fit.hours > reservation.start_hours:
                if fit.chips > spare:
                    continue
                spare -= fit.chips
            free[fit.pool] -= fit.chips
            chosen.append(Start(job, fit.pool))
            break
    return chosen, reservation


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
    for job in sorted(snap.pending, key=_priority_key):
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
