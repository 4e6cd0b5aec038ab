"""The one stateful object of a DES run: chips per pool, the queue, the running jobs.

:class:`Cluster` owns the state and calls the scheduling policy on every arrival and every
release of chips; the processes in :mod:`~accelsim.engines.cluster.des._processes` only tell it what
happened (a job arrived, a chip failed or came back). State changes are SimPy events with
plain callbacks (no generator and no ``Resource`` request per job), scheduled only at
arrivals, completions, failures, repairs, preemptions and deliveries.

A job's attempt is laid out in advance from the model of :mod:`accelsim.models.reliability`:
the restart (after an interruption only), then segments of ``checkpoint_interval_hours`` of
compute, each followed by a checkpoint write of ``checkpoint_write_hours``, the last segment
(partial or not) included. When an attempt is interrupted, the compute it saved (the
segments whose write completed) is computed from the elapsed time, never stepped through;
the rest is lost, and the job requeues in its original place in submission order and pays
``restart_hours`` when it starts again.

Chips are interchangeable within a pool: the cluster counts them rather than naming them.
So ``whole_domains`` rounds a job's allocation up to a multiple of the pool's
``domain_chips`` (it holds, and is exposed to failures on, the whole domains), but it does
not track which domains a down chip fragments.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from collections.abc import Sequence
from types import MappingProxyType
from typing import Any, Protocol, cast

import simpy
from simpy.events import Event

from accelsim.engines.cluster.des._attempts import attempt_hours, progress, segments
from accelsim.engines.cluster.des._queue import QueueIndex
from accelsim.engines.cluster.des._records import Cause, EventKind, EventRecord, JobRecord, Recorder
from accelsim.engines.cluster.des._schedulers import (
    HEAD_BLOCKING,
    IGNORES_RUNNING,
    INDEXED_BY_PRIORITY,
    INDEXED_BY_SHAPE,
    STARTS_ONLY,
    Fit,
    QueueSnapshot,
    ReadOnlyQueue,
    Running,
    Scheduler,
    Start,
    Waiting,
)
from accelsim.engines.cluster.des._specs import JobSpec, PoolSpec, check_job


def wakeup(env: simpy.Environment, delay: float, callback: Any, value: Any) -> Event:
    """An event that fires ``delay`` hours from now and calls ``callback(event)``.

    A SimPy ``Timeout`` (public API only) whose ``value`` carries the callback's data.
    """
    event = env.timeout(delay, value)
    event.callbacks.append(callback)
    return event


class Holder(Protocol):
    """Told of every attempt's start and release of chips (e.g. ``_reservations.Holdings``)."""

    def start(self, job_id: int, chips: int, now: float, pool: int) -> None:
        """An attempt of ``job_id`` takes ``chips`` chips of ``pool`` at ``now``. [chips, h]"""

    def stop(self, job_id: int, now: float) -> None:
        """The running attempt of ``job_id`` releases its chips at ``now``. [h]"""


class _Job:
    """Mutable state of one job between arrival and completion (private to the cluster)."""

    __slots__ = (
        "alloc",
        "attempt",
        "first_start",
        "full",
        "interruptions",
        "interval",
        "lost",
        "partial",
        "plain",
        "pool",
        "remaining_estimate",
        "remaining_work",
        "restart_due",
        "spec",
        "started",
        "waiting",
    )

    def __init__(self, spec: JobSpec) -> None:
        self.spec = spec
        self.remaining_work = spec.work_hours  # speed-1 hours not yet saved
        estimate = spec.estimate_hours
        self.remaining_estimate = spec.work_hours if estimate is None else estimate
        self.restart_due = 0.0
        self.first_start = math.nan
        self.interruptions = 0
        self.lost = 0.0
        # The completion event of the running attempt; an interruption clears it, so the
        # event, still in SimPy's queue, finds itself stale when it fires.
        self.attempt: Event | None = None
        self.pool = -1
        self.alloc = 0
        self.started = 0.0
        self.full = 0
        self.interval = 0.0
        self.partial = 0.0
        self.waiting: Waiting | None = None
        # No checkpoints and no write: an attempt is one stretch of compute (the fast path).
        self.plain = spec.checkpoint_interval_hours is None and spec.checkpoint_write_hours == 0.0


class Cluster:
    """Free and up chips per pool, the queue and the running jobs; applies the policy."""

    def __init__(
        self,
        env: simpy.Environment,
        pools: Sequence[PoolSpec],
        scheduler: Scheduler,
        recorder: Recorder,
        holdings: Holder | None = None,
    ) -> None:
        self.env = env
        self._hold = holdings
        self.pools = tuple(pools)
        self.free = [0] * len(pools)
        self.up = [0] * len(pools)
        self._scheduler = scheduler
        self._rec = recorder
        self._warmup = recorder.warmup_hours
        self._pending: list[Waiting] = []
        self._running: dict[int, Running] = {}
        self._by_pool: list[dict[int, _Job]] = [{} for _ in pools]
        self._jobs: dict[int, _Job] = {}
        self._pending_view = ReadOnlyQueue(self._pending)
        self._running_view = MappingProxyType(self._running)
        self._finish_callback = self._on_finish
        self._log = recorder.events
        self._every_pool = tuple(range(len(pools)))
        self._starts_only = scheduler in STARTS_ONLY
        self._track_running = scheduler not in IGNORES_RUNNING
        self._head_blocking = scheduler in HEAD_BLOCKING
        by_priority, by_shape = scheduler in INDEXED_BY_PRIORITY, scheduler in INDEXED_BY_SHAPE
        self._index = (
            QueueIndex(by_priority=by_priority, by_shape=by_shape)
            if by_priority or by_shape
            else None
        )

    # -- arrivals and the policy ------------------------------------------------------------

    def submit(self, spec: JobSpec) -> None:
        """Queue a newly arrived job (the caller dispatches after a batch of arrivals)."""
        check_job(spec)
        if spec.job_id in self._jobs:
            raise ValueError(f"job id {spec.job_id} is already in the system; ids must be unique")
        job = _Job(spec)
        self._jobs[spec.job_id] = job
        rec = self._rec
        rec.arrived += 1
        if spec.submit_hours >= self._warmup:
            rec.arrived_in_window += 1
            rec.offered_chip_hours += spec.chips * spec.work_hours
        self._enqueue(job)
        if self._log is not None:
            self._event("arrive", -1, spec.job_id)

    def _enqueue(self, job: _Job) -> None:
        spec = job.spec
        pools = self.pools
        interval = spec.checkpoint_interval_hours
        write = spec.checkpoint_write_hours
        restart = job.restart_due
        plain = job.plain
        if (
            spec.pools is None
            and plain
            and len(pools) == 1
            and not spec.whole_domains
            and spec.chips <= pools[0].chips
        ):  # the common case, without the general loop: one pool, no rounding, no writes
            fit = Fit(0, spec.chips, restart + job.remaining_estimate / pools[0].speed)
            self._queue(job, (fit,))
            return
        fits = []
        for p in self._every_pool if spec.pools is None else spec.pools:
            if not 0 <= p < len(pools):
                raise ValueError(f"job {spec.job_id} lists pool {p}; there are {len(pools)}")
            pool = pools[p]
            chips = pool.allocation_chips(spec.chips, True) if spec.whole_domains else spec.chips
            if chips <= pool.chips:
                compute = job.remaining_estimate / pool.speed
                hours = (
                    restart + compute
                    if plain
                    else attempt_hours(restart, *segments(compute, interval), write)
                )
                fits.append(Fit(p, chips, hours))
        if not fits:
            raise ValueError(
                f"job {spec.job_id} needs {spec.chips} chips, more than any pool it may use holds"
            )
        self._queue(job, tuple(fits))

    def _queue(self, job: _Job, fits: tuple[Fit, ...]) -> None:
        spec = job.spec
        w = Waiting(
            spec.submit_hours, spec.job_id, spec.chips, spec.priority, fits, spec.preemptible
        )
        job.waiting = w
        pending = self._pending
        if pending and w < pending[-1]:
            insort(pending, w)  # a requeued job goes back to its place in submission order
        else:
            pending.append(w)
        if self._index is not None:
            self._index.add(w)

    def dispatch(self) -> None:
        """Ask the policy what to do now, and do it; then record the queue length.

        Every change to the queue is followed by a dispatch, so the queue-length level is
        updated here only, once per event.
        """
        pending = self._pending
        now = self.env.now
        # Skip the call when nothing waits or the policy could not act: it never evicts and
        # no chip is free, or it starts nothing unless the first job fits and that one does not.
        act = False
        if pending:
            free = self.free
            if self._head_blocking:
                for fit in pending[0].fits:
                    if fit.chips <= free[fit.pool]:
                        act = True
                        break
            else:
                act = not self._starts_only or any(free)
        if act:
            snap = QueueSnapshot(
                now, self._pending_view, tuple(self.free), self._running_view, self._index
            )
            for decision in self._scheduler(snap):
                if isinstance(decision, Start):
                    self._start(decision.job, decision.pool)
                else:
                    job = self._jobs.get(decision.job_id)
                    if job is None or job.pool < 0:
                        raise RuntimeError(f"scheduler evicted job {decision.job_id}, not running")
                    self._interrupt(job, "policy")
        queue = self._rec.queue
        if len(pending) != queue.value:  # an unchanged level needs no new segment
            queue.set(now, len(pending))

    # -- attempts ---------------------------------------------------------------------------

    def _claim(self, w: Waiting, p: int) -> tuple[_Job, Fit]:
        """Take waiting job ``w`` off the queue with its chips of pool ``p``, checking that
        the scheduler's choice is a waiting job, on a pool it may use, with enough free."""
        job = self._jobs.get(w.job_id)
        if job is None or job.waiting is None:
            raise RuntimeError(f"scheduler started job {w.job_id}, which is not waiting")
        w = job.waiting
        for fit in w.fits:
            if fit.pool == p:
                break
        else:
            raise RuntimeError(f"scheduler started job {w.job_id} on pool {p}, not one it may use")
        chips = fit.chips
        if chips > self.free[p]:
            raise RuntimeError(
                f"scheduler started job {w.job_id} on pool {p}, where it needs {chips} chips "
                f"and {self.free[p]} are free"
            )
        pending = self._pending
        if pending[0] is w:  # the head (always under fifo): no search
            del pending[0]
        else:
            del pending[bisect_left(pending, w)]
        if self._index is not None:
            self._index.remove(w)
        self.free[p] -= chips
        return job, fit

    def _start(self, w: Waiting, p: int) -> None:
        """Start ``w`` on pool ``p``: an attempt of its restart, then its work in segments."""
        job, fit = self._claim(w, p)
        chips = fit.chips
        now = self.env.now
        spec = job.spec
        job.waiting = None
        job.pool = p
        job.alloc = chips
        job.started = now
        if self._hold is not None:
            self._hold.start(spec.job_id, chips, now, p)
        compute = job.remaining_work / self.pools[p].speed
        if job.plain:
            job.partial = compute  # and full == 0 (never changes for a plain job)
            duration = job.restart_due + compute
        else:
            full, interval, partial = segments(compute, spec.checkpoint_interval_hours)
            job.full, job.interval, job.partial = full, interval, partial
            duration = attempt_hours(
                job.restart_due, full, interval, partial, spec.checkpoint_write_hours
            )
        if self._track_running:
            self._running[spec.job_id] = Running(
                spec.job_id,
                p,
                chips,
                spec.priority,
                spec.submit_hours,
                now,
                now + fit.hours,
                spec.preemptible,
            )
        self._by_pool[p][spec.job_id] = job
        rec = self._rec
        if job.first_start != job.first_start:  # nan: the first start
            # the clock reaches a submission as t + (s - t), which can fall an ulp short
            # of s: the record never starts before its submission
            job.first_start = now if now > spec.submit_hours else spec.submit_hours
            if spec.submit_hours >= self._warmup:
                wait = now - spec.submit_hours
                rec.wait_hours.append(wait if wait > 0.0 else 0.0)  # float noise at 0
        rec.pools[p].busy.set(now, self.up[p] - self.free[p])
        job.attempt = wakeup(self.env, duration, self._finish_callback, job)
        if self._log is not None:
            self._event("start", p, spec.job_id)

    def _on_finish(self, event: Event) -> None:
        job = cast(_Job, event.value)
        if job.attempt is not event:
            return  # the attempt was interrupted before it could finish
        self._finish(job)
        self.dispatch()

    def _release(self, job: _Job) -> int:
        """End the running attempt: return its chips to the pool; give its pool index."""
        p = job.pool
        job_id = job.spec.job_id
        if self._track_running:
            del self._running[job_id]
        del self._by_pool[p][job_id]
        if self._hold is not None:
            self._hold.stop(job_id, self.env.now)
        self.free[p] += job.alloc
        job.attempt = None
        job.pool = -1
        return p

    def _before_warmup(self, job: _Job) -> float:
        """Compute the running attempt did before the warm-up ended (outside the window). [h]"""
        if job.started >= self._warmup:
            return 0.0
        return progress(
            self._warmup - job.started,
            job.restart_due,
            job.full,
            job.interval,
            job.partial,
            job.spec.checkpoint_write_hours,
        )[0]

    def _credit(self, job: _Job, p: int, saved: float) -> None:
        """Count ``saved`` compute hours of the attempt, minus any done before the warm-up."""
        before = self._before_warmup(job)
        self._rec.pools[p].useful_chip_hours += job.spec.chips * (saved - min(saved, before))

    def _finish(self, job: _Job) -> None:
        now = self.env.now
        spec = job.spec
        compute = job.full * job.interval + job.partial
        if job.started >= self._warmup:
            self._rec.pools[job.pool].useful_chip_hours += spec.chips * compute
        else:
            self._credit(job, job.pool, compute)
        alloc = job.alloc
        p = self._release(job)
        del self._jobs[spec.job_id]
        rec = self._rec
        rec.completed += 1
        if spec.submit_hours >= self._warmup:
            rec.jct_sum_hours += now - spec.submit_hours
            rec.jct_count += 1
        rec.pools[p].busy.set(now, self.up[p] - self.free[p])
        if rec.jobs is not None:
            rec.jobs.append(self._record(job, p, alloc, now))
        if self._log is not None:
            self._event("finish", p, spec.job_id)

    def _interrupt(self, job: _Job, cause: Cause) -> None:
        """Stop a running attempt: keep the saved segments, lose the rest, requeue."""
        now = self.env.now
        spec = job.spec
        write = spec.checkpoint_write_hours
        done, saved = progress(
            now - job.started, job.restart_due, job.full, job.interval, job.partial, write
        )
        if saved >= job.full * job.interval + job.partial:  # every write done: it has finished
            self._finish(job)
            return
        before = self._before_warmup(job)
        tally = self._rec.pools[job.pool]
        tally.useful_chip_hours += spec.chips * (saved - min(saved, before))
        # Lost: compute done after the last completed write; in the window, after the warm-up.
        tally.lost_chip_hours += spec.chips * max(done - max(saved, before), 0.0)
        speed = self.pools[job.pool].speed
        job.remaining_work -= saved * speed
        job.remaining_estimate = max(job.remaining_estimate - saved * speed, 0.0)
        job.lost += done - saved
        job.interruptions += 1
        job.restart_due = spec.restart_hours
        p = self._release(job)
        if now >= self._warmup:
            tally.interruptions[cause] += 1
        tally.busy.set(now, self.up[p] - self.free[p])
        if self._log is not None:
            self._event("interrupt", p, spec.job_id, cause)
        self._enqueue(job)

    def holds(self, job_id: int) -> bool:
        """Whether the job is in the system now (arrived, not over)."""
        return job_id in self._jobs

    def withdraw(self, job_id: int) -> None:
        """End a job now wherever it is: a reservation whose time window closed.

        A running attempt keeps the compute it did (counted as useful) and releases its
        chips; a waiting job leaves the queue. Either way the job is over (counted as
        completed at ``now``); a job that already finished is left alone.
        """
        job = self._jobs.get(job_id)
        if job is None:
            return
        now = self.env.now
        spec = job.spec
        p, alloc = job.pool, job.alloc
        if p >= 0:
            done = progress(
                now - job.started,
                job.restart_due,
                job.full,
                job.interval,
                job.partial,
                spec.checkpoint_write_hours,
            )[0]
            self._credit(job, p, done)
            self._release(job)
            self._rec.pools[p].busy.set(now, self.up[p] - self.free[p])
        else:
            assert job.waiting is not None
            del self._pending[bisect_left(self._pending, job.waiting)]
            if self._index is not None:
                self._index.remove(job.waiting)
            job.waiting = None
            alloc = 0
        del self._jobs[job_id]
        rec = self._rec
        rec.completed += 1
        if spec.submit_hours >= self._warmup:
            rec.jct_sum_hours += now - spec.submit_hours
            rec.jct_count += 1
        if rec.jobs is not None:
            rec.jobs.append(self._record(job, p, alloc, now))
        if self._log is not None:
            self._event("finish", p, job_id)
        self.dispatch()

    # -- capacity ---------------------------------------------------------------------------

    def deliver(self, p: int) -> None:
        """The pool's chips arrive (end of its lead time)."""
        chips = self.pools[p].chips
        self.up[p] += chips
        self.free[p] += chips
        self._rec.pools[p].up.set(self.env.now, self.up[p])
        if self._log is not None:
            self._event("deliver", p, -1)
        self.dispatch()

    def chip_down(self, p: int, position: int, cause: Cause, stays_down: bool) -> bool:
        """A failure or preemption strikes chip ``position`` of ``pool.chips`` (thinning).

        Positions ``[0, busy)`` are allocated chips, ``[busy, up)`` idle ones and ``[up,
        chips)`` chips already down, which a new strike leaves as they are. Returns whether
        an up chip was struck (so a repair or return must follow if ``stays_down``).
        """
        up = self.up[p]
        if position >= up:
            return False
        now = self.env.now
        tally = self._rec.pools[p]
        if now >= self._warmup:
            tally.chip_downs[cause] += 1
        victim = None
        if position < up - self.free[p]:
            for job in self._by_pool[p].values():  # start order: a deterministic walk
                position -= job.alloc
                if position < 0:
                    victim = job
                    break
        if victim is not None:
            self._interrupt(victim, cause)  # all its chips go back, the struck one included
        if stays_down:  # ... and the struck chip, now idle, goes down
            self.up[p] -= 1
            self.free[p] -= 1
            tally.up.set(now, self.up[p])
        if self._log is not None:
            kind: EventKind = "fail" if cause == "failure" else "preempt"
            self._event(kind, p, -1)
        if victim is not None:
            self.dispatch()
        return True

    def chip_up(self, p: int, cause: Cause) -> None:
        """A repaired or returned chip is back."""
        self.up[p] += 1
        self.free[p] += 1
        self._rec.pools[p].up.set(self.env.now, self.up[p])
        if self._log is not None:
            self._event("repair" if cause == "failure" else "return", p, -1)
        self.dispatch()

    # -- the end ----------------------------------------------------------------------------

    def close(self) -> tuple[int, int]:
        """At the horizon: credit running attempts, close levels; (running, queued) counts."""
        now = self._rec.horizon_hours
        rec = self._rec
        for job in self._jobs.values():
            if job.pool >= 0:
                done = progress(
                    now - job.started,
                    job.restart_due,
                    job.full,
                    job.interval,
                    job.partial,
                    job.spec.checkpoint_write_hours,
                )[0]
                self._credit(job, job.pool, done)
        for p, tally in enumerate(rec.pools):
            tally.busy.set(now, self.up[p] - self.free[p])
            tally.up.set(now, self.up[p])
        rec.queue.set(now, len(self._pending))
        # A job still waiting for its first start has waited at least until the horizon:
        # leaving it out would report less wait the more the fleet is overloaded.
        for w in self._pending:
            job = self._jobs[w.job_id]
            if job.first_start != job.first_start and w.submitted_hours >= self._warmup:
                rec.wait_hours.append(max(now - w.submitted_hours, 0.0))
                rec.censored_waits += 1
        # Likewise a job unfinished at the horizon has taken at least until the horizon.
        for job in self._jobs.values():
            if job.spec.submit_hours >= self._warmup:
                rec.jct_censored_sum_hours += max(now - job.spec.submit_hours, 0.0)
                rec.jct_censored_count += 1
        if rec.jobs is not None:
            rec.jobs.extend(
                self._record(job, job.pool, job.alloc if job.pool >= 0 else 0, math.nan)
                for job in self._jobs.values()
            )
        return sum(len(jobs) for jobs in self._by_pool), len(self._pending)

    # -- records ----------------------------------------------------------------------------

    def _record(self, job: _Job, p: int, alloc: int, end: float) -> JobRecord:
        spec = job.spec
        return JobRecord(
            spec.job_id,
            spec.submit_hours,
            spec.chips,
            spec.priority,
            spec.work_hours,
            p,
            alloc,
            job.first_start,
            end,
            job.interruptions,
            job.lost,
        )

    def _event(self, kind: EventKind, p: int, job_id: int, cause: Cause = "") -> None:
        assert self._log is not None
        busy = self.up[p] - self.free[p] if p >= 0 else 0
        up = self.up[p] if p >= 0 else 0
        self._log.append(
            EventRecord(self.env.now, kind, p, job_id, busy, up, len(self._pending), cause)
        )


__all__ = ["Cluster", "Holder", "wakeup"]
