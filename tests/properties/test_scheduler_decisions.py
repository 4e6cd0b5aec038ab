"""Every scheduling policy's decisions on any queue snapshot (hypothesis, no simulation).

A policy is a pure function of a frozen :class:`QueueSnapshot` (``_schedulers.py``). Over
generated snapshots (1-3 pools, up to 12 waiting jobs with preference lists, domain
rounding and estimates, up to 8 running jobs of mixed priorities) each policy must:

- start only waiting jobs, each once, on a pool it lists, never more chips of a pool
  than are free (plus those its own evictions free);
- follow its definition: FIFO starts a prefix of the queue; priority a prefix of the
  queue by (priority desc, submission, id); smallest-first leaves no waiting job that
  still fits; EASY backfill keeps the head's reservation; priority-preemptive evicts
  only preemptible jobs of strictly lower priority than a job it starts, and only when
  that job could not start without them.

These are the contracts the cluster relies on when it applies decisions (it raises on a
job started where it does not fit), checked here on far more states than simulations
reach.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from accelsim.engines.cluster.des._schedulers import (
    SCHEDULERS,
    Evict,
    Fit,
    QueueSnapshot,
    Running,
    Start,
    Waiting,
    easy_backfill_plan,
    fifo,
    priority,
    priority_preemptive,
    smallest_first,
)


@st.composite
def snapshots(draw: st.DrawFn) -> QueueSnapshot:
    pools = draw(st.integers(1, 3))
    now = draw(st.sampled_from([0.0, 3.5, 10.0]))
    free = tuple(draw(st.integers(0, 16)) for _ in range(pools))
    running: dict[int, Running] = {}
    for k in range(draw(st.integers(0, 8))):
        job_id = 1000 + k
        started = draw(st.floats(0.0, now))
        running[job_id] = Running(
            job_id,
            draw(st.integers(0, pools - 1)),
            draw(st.integers(1, 16)),
            draw(st.integers(0, 2)),
            started,
            started,
            started + draw(st.floats(0.1, 20.0)),  # may lie before now: an overrun
            draw(st.booleans()),
        )
    pending = []
    submits = sorted(draw(st.lists(st.floats(0.0, now), max_size=12)))
    for i, submitted in enumerate(submits):
        chips = draw(st.integers(1, 16))
        order = draw(st.permutations(range(pools)))
        allowed = order[: draw(st.integers(1, pools))]
        fits = tuple(
            Fit(p, chips + draw(st.sampled_from([0, 0, 1, 3])), draw(st.floats(0.1, 20.0)))
            for p in allowed
        )
        pending.append(
            Waiting(submitted, i, chips, draw(st.integers(0, 2)), fits, draw(st.booleans()))
        )
    return QueueSnapshot(now, pending, free, running)


def _check_feasible(snap: QueueSnapshot, decisions: list[Start | Evict]) -> list[Start]:
    """Each start is a distinct waiting job on a pool it lists, with its chips there, within
    the free chips plus those freed by evictions; returns the starts."""
    pending_ids = {j.job_id for j in snap.pending}
    starts = [d for d in decisions if isinstance(d, Start)]
    evicts = [d for d in decisions if isinstance(d, Evict)]
    assert all(s.job.job_id in pending_ids for s in starts)
    assert len({s.job.job_id for s in starts}) == len(starts)
    assert len({e.job_id for e in evicts}) == len(evicts)
    assert all(e.job_id in snap.running for e in evicts)
    used: Counter[int] = Counter()
    for s in starts:
        fit = next((f for f in s.job.fits if f.pool == s.pool), None)
        assert fit is not None, "started on a pool it does not list"
        used[s.pool] += fit.chips
    freed: Counter[int] = Counter()
    for e in evicts:
        freed[snap.running[e.job_id].pool] += snap.running[e.job_id].chips
    for p, chips in used.items():
        assert chips <= snap.free_chips[p] + freed[p], (p, chips, snap.free_chips, freed)
    return starts


def _fit_chips(job: Waiting, pool: int) -> int:
    return next(f.chips for f in job.fits if f.pool == pool)


@given(snapshots(), st.sampled_from(sorted(SCHEDULERS)))
def test_every_policy_makes_only_feasible_decisions(snap: QueueSnapshot, name: str) -> None:
    decisions = list(SCHEDULERS[name](snap))
    _check_feasible(snap, decisions)
    if name != "priority_preemptive":
        assert not any(isinstance(d, Evict) for d in decisions)


@given(snapshots())
def test_fifo_starts_a_prefix_of_the_queue_each_on_its_first_pool_with_room(
    snap: QueueSnapshot,
) -> None:
    starts = _check_feasible(snap, list(fifo(snap)))
    assert [s.job for s in starts] == list(snap.pending[: len(starts)])
    free = list(snap.free_chips)
    for s in starts:  # the first listed pool with room, in preference order
        first = next(f for f in s.job.fits if f.chips <= free[f.pool])
        assert s.pool == first.pool
        free[s.pool] -= first.chips
    if len(starts) < len(snap.pending):  # the next job fits nowhere: it blocks the rest
        head = snap.pending[len(starts)]
        assert all(f.chips > free[f.pool] for f in head.fits)


@given(snapshots())
def test_priority_starts_a_prefix_in_priority_order(snap: QueueSnapshot) -> None:
    starts = _check_feasible(snap, list(priority(snap)))
    order = sorted(snap.pending, key=lambda j: (-j.priority, j.submitted_hours, j.job_id))
    assert [s.job for s in starts] == order[: len(starts)]


@given(snapshots())
def test_smallest_first_leaves_no_waiting_job_that_still_fits(snap: QueueSnapshot) -> None:
    """Greedy by size: after its starts, no job left waiting fits on any pool it lists, and
    among the starts the sizes never decrease (ties by submission)."""
    starts = _check_feasible(snap, list(smallest_first(snap)))
    free = list(snap.free_chips)
    for s in starts:
        free[s.pool] -= _fit_chips(s.job, s.pool)
    started = {s.job.job_id for s in starts}
    for job in snap.pending:
        if job.job_id not in started:
            assert all(f.chips > free[f.pool] for f in job.fits), job
    keys = [(s.job.chips, s.job.submitted_hours, s.job.job_id) for s in starts]
    assert keys == sorted(keys)


@given(snapshots())
def test_backfill_keeps_the_heads_reservation(snap: QueueSnapshot) -> None:
    """EASY: jobs start in order until the first that does not fit (the head). The head
    gets the earliest time enough chips free up by the running jobs' estimates; every job
    started past it either runs on another pool, ends by the reservation, or uses chips
    the head will not need then (in total at most the reservation's spare chips)."""
    decisions, reservation = easy_backfill_plan(snap)
    starts = _check_feasible(snap, list(decisions))
    k = 0
    while k < len(starts) and starts[k].job is snap.pending[k]:
        k += 1
    if reservation is None:
        return
    head = next(j for j in snap.pending if j.job_id == reservation.job_id)
    assert head not in [s.job for s in starts]
    assert snap.pending[k] is head  # the head is the first job that did not start
    assert reservation.start_hours >= snap.now_hours
    spare_used = 0
    for s in starts[k:]:
        fit = next(f for f in s.job.fits if f.pool == s.pool)
        if s.pool == reservation.pool and snap.now_hours + fit.hours > reservation.start_hours:
            spare_used += fit.chips
    assert spare_used <= reservation.spare_chips


@given(snapshots())
def test_priority_preemptive_evicts_only_what_a_higher_job_needs(snap: QueueSnapshot) -> None:
    """Every eviction is of a preemptible running job of strictly lower priority than some
    job started on its pool; and evictions happen only for a job that could not start on
    the free chips alone."""
    decisions = list(priority_preemptive(snap))
    starts = _check_feasible(snap, decisions)
    evicted = [snap.running[d.job_id] for d in decisions if isinstance(d, Evict)]
    for victim in evicted:
        assert victim.preemptible
        assert any(s.pool == victim.pool and s.job.priority > victim.priority for s in starts), (
            victim
        )
    if evicted:
        # evictions are listed before the start they make room for
        first_evict = next(i for i, d in enumerate(decisions) if isinstance(d, Evict))
        beneficiary = next(d for d in decisions[first_evict:] if isinstance(d, Start))
        free = list(snap.free_chips)
        for d in decisions[:first_evict]:
            assert isinstance(d, Start)
            free[d.pool] -= _fit_chips(d.job, d.pool)
        assert all(f.chips > free[f.pool] for f in beneficiary.job.fits)
