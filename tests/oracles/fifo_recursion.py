"""Test oracle: strict FIFO on one reliable pool without the event loop, by recursion.

An independent implementation of the cluster DES's FIFO case, kept in tests/ to check the
SimPy event loop bit for bit (it was once a fast path of ``des.run``; no default study took
it, since the default priors always have failures and a lead time, so the library runs the
event loop alone). When a run qualifies (:func:`fifo_recursion_applies`), every job's start
follows from the arrival and duration sequence alone, so :func:`simulate_fifo` computes the
starts in one
tight loop over a heap and the metrics with numpy, and returns the same
:class:`~accelsim.engines.cluster.des._metrics.DesResult` as the event loop on the same jobs.

The recursion
-------------
Jobs ``i = 0, 1, ...`` in queue order (submission time, then id), arriving at ``a_i``,
holding ``c_i <= C`` chips of a pool of ``C`` for ``d_i`` hours once started. Strict FIFO
(head-of-line blocking, no backfill) starts them in order, so when job ``i`` reaches the
head, at ``T_i = max(a_i, S_{i-1})``, every earlier job has started and none after it has;
the chips free at ``t >= T_i`` are ``F_i(t) = C - sum_{j < i, E_j > t} c_j``, which only
grows with ``t``. Hence

    S_i = min { t >= max(a_i, S_{i-1}) : F_i(t) >= c_i },    E_i = S_i + d_i,

the earliest time at which ``c_i`` chips are free at once and every earlier job has
started. The minimum is ``T_i`` or one of the ends ``E_j``: pop the running jobs from a
heap by end time until ``c_i`` chips are free; ``S_i`` is ``T_i`` or the last end popped,
whichever is later. With ``c_i = 1`` for all jobs the heap holds the ``C`` server-free
times and this is the Kiefer-Wolfowitz workload-vector recursion
``S_i = max(a_i, V_i[0])``, ``V_{i+1} = sort(V_i[1:] + [S_i + d_i])`` (Kiefer and
Wolfowitz 1955), which is FIFO-monotone by itself. Both are exact because nothing else
changes the free chips: no failures, preemptions, lead times or evictions.

Equal to the event loop, float for float
----------------------------------------
The recursion uses the event loop's own arithmetic: a job arrives at the engine's clock
time ``t_prev + (s_i - t_prev)`` (SimPy schedules the next arrival as a delay from the
previous one), its attempt lasts ``attempt_hours(0, *segments(work / speed, interval),
write)`` (plain jobs: ``0.0 + work / speed``), ends at ``S_i + d_i``, and events at or after
the horizon are not processed. Levels (busy chips, queue length) are integrated over the
same breakpoints in the same order, and sums (useful chip-hours, completion times) are
accumulated in completion order, sequentially (``numpy.cumsum``), so a run's metrics equal
the event loop's bit for bit unless several events share an instant (then to rounding).
``tests/validation/test_des_fifo.py`` and ``tests/properties/test_des_fifo_properties.py``
hold the two to that.

Jobs are read and integrated in blocks of :data:`BLOCK`: an event before the last arrival
of a block is final (later jobs start and end after it), so it is integrated then, and
memory grows with the jobs in the system (running or queued), never with those finished,
as in the event loop. Jobs submitted at one instant are queued by id, as the event loop
queues them; an id reused while a job with it is in the system is rejected with the event
loop's error (a job ending at the very instant its id's next job arrives counts as gone).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from accelsim._typing import FloatArray
from accelsim.engines.cluster.des._attempts import attempt_hours, progress, segments
from accelsim.engines.cluster.des._metrics import DesResult, summarize
from accelsim.engines.cluster.des._records import JobRecord, Level, Recorder
from accelsim.engines.cluster.des._schedulers import Scheduler, fifo
from accelsim.engines.cluster.des._specs import JobSpec, PoolSpec, check_job


def fifo_recursion_applies(
    pools: Sequence[PoolSpec], policy: Scheduler, *, keep_events: bool
) -> bool:
    """Whether a run reduces exactly to the FIFO start-time recursion (module docstring).

    Conditions, all required:

    1. the scheduler is :func:`~accelsim.engines.cluster.des._schedulers.fifo` (strict submission
       order, head-of-line blocking, no backfill, no eviction);
    2. one pool, so every job runs there (a job listing another pool, or needing more
       chips than the pool holds, is an error on either path);
    3. that pool never loses a chip: no failures and no preemptions (rates 0);
    4. its chips are there from time 0 (lead time 0);
    5. no per-event log is asked for (``keep_events``; per-job records and the
       utilisation series are computed from the recursion).

    Per job nothing else matters: without interruptions an attempt is one stretch
    (checkpoint writes and whole-domain rounding only set its length and its chips), and
    restart times, estimates, priorities and preemptibility never come into play under
    FIFO.
    """
    if policy is not fifo or len(pools) != 1 or keep_events:
        return False
    pool = pools[0]
    return (
        pool.failure_rate_per_chip_hour == 0.0
        and pool.preemptions_per_chip_hour == 0.0
        and pool.lead_time_hours == 0.0
    )


BLOCK = 1024
"""Jobs per block: read, recursed and integrated together (never splitting a batch of equal
submission times)."""


class _Recursion:
    """The recursion's state between blocks: the Kiefer-Wolfowitz heap of server-free times
    while every job so far held one chip, then the heap of running jobs' (end, chips)."""

    __slots__ = ("blocked", "free", "free_times", "gang", "prev", "running")

    def __init__(self, capacity: int) -> None:
        self.free_times = [0.0] * capacity
        self.running: list[tuple[float, int]] = []
        self.free = capacity
        self.prev = 0.0
        self.gang = False
        self.blocked = False  # a job could not start before the horizon: nor can later ones

    def starts(
        self, arrive: list[float], chips: list[int], hours: list[float], until: float
    ) -> list[float]:
        """Start times of the next jobs in queue order (``inf``: not before ``until``). [h]"""
        out: list[float] = []
        keep = out.append
        if not self.blocked and not self.gang and any(c != 1 for c in chips):
            # Every server-free time becomes a one-chip job ending then: the same state.
            self.running = [(f, 1) for f in self.free_times]  # still a heap
            self.free = 0
            self.gang = True
        if self.blocked:
            pass
        elif not self.gang:
            times = self.free_times
            replace = heapq.heapreplace
            for a, d in zip(arrive, hours, strict=True):
                f = times[0]
                s = a if a >= f else f
                if s >= until:
                    self.blocked = True
                    break
                keep(s)
                replace(times, s + d)
            if out:
                self.prev = out[-1]
        else:
            running = self.running
            pop, push = heapq.heappop, heapq.heappush
            free = self.free
            prev = self.prev
            for a, c, d in zip(arrive, chips, hours, strict=True):
                s = a if a > prev else prev
                while free < c:  # earlier jobs hold the chips: wait for ends, earliest first
                    e, k = pop(running)
                    free += k
                    if e > s:
                        s = e
                if s >= until:
                    self.blocked = True
                    break
                free -= c
                push(running, (s + d, c))
                keep(s)
                prev = s
            self.free, self.prev = free, prev
        out.extend([math.inf] * (len(arrive) - len(out)))
        return out


def kiefer_wolfowitz_starts(
    arrive_hours: Sequence[float], service_hours: Sequence[float], servers: int, until: float
) -> list[float]:
    """FIFO start times of one-chip jobs on ``servers`` servers (``inf``: not by ``until``).

    ``S_i = max(a_i, V_i[0])`` with ``V`` the heap of server-free times. [h]

    Examples
    --------
    >>> kiefer_wolfowitz_starts([0.0, 0.5, 1.0], [2.0, 2.0, 2.0], 2, 10.0)
    [0.0, 0.5, 2.0]
    """
    n = len(arrive_hours)
    return _Recursion(servers).starts(list(arrive_hours), [1] * n, list(service_hours), until)


def gang_fifo_starts(
    arrive_hours: Sequence[float],
    chips: Sequence[int],
    service_hours: Sequence[float],
    capacity: int,
    until: float,
) -> list[float]:
    """Strict-FIFO start times of gang jobs on ``capacity`` chips (``inf``: not by ``until``).

    ``S_i = min {t >= max(a_i, S_{i-1}) : chips free at t >= c_i}``; each ``c_i <= capacity``.
    [h]

    Examples
    --------
    Two 4-chip jobs on 6 chips: the second starts when the first ends.

    >>> gang_fifo_starts([0.0, 0.5], [4, 4], [2.0, 1.0], 6, 10.0)
    [0.0, 2.0]
    """
    state = _Recursion(capacity)
    state.running, state.free, state.gang = [], capacity, True
    return state.starts(list(arrive_hours), list(chips), list(service_hours), until)


class _Block:
    """The jobs of one block as read (submission order as given), checked like ``Cluster``."""

    __slots__ = ("alloc", "clock", "hours", "specs", "uneven")

    def __init__(self) -> None:
        self.specs: list[JobSpec] = []
        self.clock: list[float] = []
        self.alloc: list[int] = []
        self.uneven: list[int] = []  # positions of jobs with checkpoints or whole domains


def _alloc_check(pool: PoolSpec, spec: JobSpec) -> int:
    """Chips the job holds on the one pool; the event loop's errors where it cannot run."""
    if spec.pools is not None:
        for p in spec.pools:
            if p != 0:
                raise ValueError(f"job {spec.job_id} lists pool {p}; there are 1")
    c = pool.allocation_chips(spec.chips, True) if spec.whole_domains else spec.chips
    if c > pool.chips:
        raise ValueError(
            f"job {spec.job_id} needs {spec.chips} chips, more than any pool it may use holds"
        )
    return c


def _blocks(pool: PoolSpec, jobs: Iterable[JobSpec], horizon_hours: float) -> Iterator[_Block]:
    """The jobs the event loop would submit, in blocks, checked in its order.

    Stops where the event loop stops reading: at a submission at or after the horizon, or
    at an arrival whose clock time (``t_prev + (s - t_prev)``) is.
    """
    block = _Block()
    specs, clock, alloc = block.specs, block.clock, block.alloc
    last = 0.0
    t = 0.0
    first = True
    cap = pool.chips
    limit = BLOCK
    for spec in jobs:
        # One unpacking instead of attribute reads: this loop runs once per job.
        _, s, chips, _, _, pools, _, whole, tau, write, _, _ = spec
        if s != last or first:
            if s >= horizon_hours:
                break
            if not s >= last:  # also catches nan
                check_job(spec)
                raise ValueError(
                    f"jobs must come in order of submission: job {spec.job_id} is submitted "
                    f"at {s} h, after a job submitted at {last} h"
                )
            if len(specs) >= limit:
                yield block
                block = _Block()
                specs, clock, alloc = block.specs, block.clock, block.alloc
            last = s
            t = t + (s - t)
            first = False
            if t >= horizon_hours:
                break
        check_job(spec)
        c = chips if pools is None and not whole and chips <= cap else _alloc_check(pool, spec)
        if tau is not None or write != 0.0 or c != chips:
            block.uneven.append(len(specs))
        specs.append(spec)
        clock.append(t)
        alloc.append(c)
    if specs:
        yield block


def _breakpoints(times: FloatArray, deltas: FloatArray) -> tuple[FloatArray, FloatArray]:
    """(distinct times, net change up to and including each) of a level changed by ``deltas``."""
    order = np.argsort(times, kind="stable")
    t = times[order]
    v = np.cumsum(deltas[order])
    last = np.ones(t.size, dtype=bool)
    last[:-1] = t[1:] != t[:-1]
    return t[last], v[last]


def _drive(level: Level, times: FloatArray, values: FloatArray) -> None:
    """Apply ``level.set`` at every breakpoint in order, as the event loop does.

    A plain :class:`Level` is integrated in numpy with its own arithmetic (``value * (now -
    max(last, from))``, summed in order); any other kind is driven call by call.
    """
    if not times.size:
        return
    if type(level) is not Level:
        for now, value in zip(times.tolist(), values.tolist(), strict=True):
            level.set(now, value)
        return
    frm = level._from  # our own class: the start of the window it clips at
    last = np.concatenate(([level.last_hours], times[:-1]))
    value = np.concatenate(([level.value], values[:-1]))
    part = (value * (times - np.where(last > frm, last, frm)))[times > frm]
    if part.size:
        level.area = _running_sum(level.area, part)
    level.last_hours = float(times[-1])
    level.value = float(values[-1])


def _running_sum(start: float, terms: FloatArray) -> float:
    """``start + terms[0] + terms[1] + ...`` added one at a time, as the event loop adds."""
    if not terms.size:
        return start
    return float(np.cumsum(np.concatenate(([start], terms)))[-1])


class _Pending:
    """Jobs whose end is not yet integrated (queue order): columns of numpy arrays."""

    COLUMNS = ("clock", "start", "end", "alloc", "asked", "submit", "compute", "pos", "ids")

    def __init__(self) -> None:
        for name in self.COLUMNS:
            setattr(self, name, np.empty(0))
        self.steps: dict[int, tuple[int, float, float, float]] = {}  # pos: checkpoint layout

    def add(self, **columns: FloatArray) -> None:
        for name in self.COLUMNS:
            setattr(self, name, np.concatenate((getattr(self, name), columns[name])))

    def keep(self, mask: np.ndarray) -> None:
        for name in self.COLUMNS:
            setattr(self, name, getattr(self, name)[mask])

    def col(self, name: str) -> FloatArray:
        out: FloatArray = getattr(self, name)
        return out


def _kept(pend: _Pending, idx: np.ndarray, at: FloatArray | None, warmup: float) -> FloatArray:
    """Compute kept by the attempts ``idx``, completed (``at`` None) or cut ``at`` hours in,
    minus the part before the warm-up, as ``Cluster`` credits it. [h]"""
    start = pend.col("start")[idx]
    compute = pend.col("compute")[idx]  # what a completed attempt keeps
    # A plain attempt (one stretch, no writes): progress(x) = min(x, compute).
    x = compute.copy() if at is None else np.minimum(at, compute)
    before = np.where(start >= warmup, 0.0, np.minimum(warmup - start, compute))
    if pend.steps:
        for k, i in enumerate(pend.col("pos")[idx].tolist()):
            layout = pend.steps.get(int(i))
            if layout is None:
                continue
            full, interval, partial, write = layout
            s = float(start[k])
            if at is not None:
                x[k] = progress(float(at[k]), 0.0, full, interval, partial, write)[0]
            if s < warmup:
                before[k] = progress(warmup - s, 0.0, full, interval, partial, write)[0]
    out: FloatArray = x - np.minimum(x, before)
    return out


class _Run:
    """Integrates the recursion's starts and ends into a :class:`Recorder`, block by block."""

    def __init__(self, pool: PoolSpec, rec: Recorder, horizon: float, warmup: float) -> None:
        self.pool, self.rec, self.horizon, self.warmup = pool, rec, horizon, warmup
        self.pend = _Pending()
        self.lo = -math.inf  # events before this time are integrated
        self.busy = 0
        self.queued = 0
        self.max_id = -math.inf

    def flush(self, hi: float) -> None:
        """Integrate every event in ``[lo, hi)``: arrivals, starts and ends (all final)."""
        lo, p, rec = self.lo, self.pend, self.rec
        tally = rec.pools[0]
        clock, start, end = p.col("clock"), p.col("start"), p.col("end")
        arr = (clock >= lo) & (clock < hi)
        sta = (start >= lo) & (start < hi)
        fin = (end >= lo) & (end < hi)
        alloc = p.col("alloc")
        times = np.concatenate((start[sta], end[fin]))
        if times.size:
            t, v = _breakpoints(times, np.concatenate((alloc[sta], -alloc[fin])))
            v += self.busy
            _drive(tally.busy, t, v)
            self.busy = int(v[-1])
        times = np.concatenate((clock[arr], start[sta]))
        if times.size:
            ones = np.ones(int(np.count_nonzero(arr)))
            t, v = _breakpoints(times, np.concatenate((ones, -np.ones(times.size - ones.size))))
            v += self.queued
            changed = v != np.concatenate(([self.queued], v[:-1]))
            _drive(rec.queue, t[changed], v[changed])
            self.queued = int(v[-1])
        # Completions in the engine's order: by end time, ties in order of start.
        done = np.flatnonzero(fin)
        done = done[np.argsort(end[done], kind="stable")]
        if done.size:
            rec.completed += int(done.size)
            submit = p.col("submit")[done]
            window = submit >= self.warmup
            jct = (end[done] - submit)[window]
            rec.jct_count += int(jct.size)
            rec.jct_sum_hours = _running_sum(rec.jct_sum_hours, jct)
            kept = _kept(p, done, None, self.warmup)
            tally.useful_chip_hours = _running_sum(
                tally.useful_chip_hours, p.col("asked")[done] * kept
            )
            for i in p.col("pos")[done].tolist():
                p.steps.pop(int(i), None)
        p.keep(end >= hi)
        self.lo = hi

    def add(self, block: _Block, state: _Recursion, first_pos: int) -> None:
        """Recurse over a block, record its waits and records, and queue it for integration."""
        rec, pool, specs = self.rec, self.pool, block.specs
        n = len(specs)
        ids = np.fromiter((j.job_id for j in specs), np.int64, n)
        submit = np.fromiter((j.submit_hours for j in specs), float, n)
        asked = np.fromiter((j.chips for j in specs), float, n)
        work = np.fromiter((j.work_hours for j in specs), float, n)
        compute = work / pool.speed
        hours = 0.0 + compute
        steps: dict[int, tuple[int, float, float, float]] = {}
        for i in block.uneven:
            spec = specs[i]
            if spec.checkpoint_interval_hours is None and spec.checkpoint_write_hours == 0.0:
                continue  # whole domains only: a plain attempt on more chips
            full, interval, partial = segments(compute[i], spec.checkpoint_interval_hours)
            write = spec.checkpoint_write_hours
            steps[first_pos + i] = (full, interval, partial, write)
            hours[i] = attempt_hours(0.0, full, interval, partial, write)
            compute[i] = full * interval + partial
        window = submit >= self.warmup
        rec.arrived += n
        rec.arrived_in_window += int(np.count_nonzero(window))
        # offered chip-hours: summed in order of arrival
        rec.offered_chip_hours = _running_sum(rec.offered_chip_hours, (asked * work)[window])
        # Queue order: by submission, then id (the event loop's order within a batch).
        increasing = bool(np.all(ids[1:] > ids[:-1])) and (n == 0 or ids[0] > self.max_id)
        order = np.arange(n) if increasing else np.lexsort((ids, submit))
        clock = np.asarray(block.clock)[order]
        alloc = np.asarray(block.alloc, dtype=float)[order]
        starts = np.asarray(
            state.starts(
                clock.tolist(),
                [block.alloc[i] for i in order.tolist()],
                hours[order].tolist(),
                self.horizon,
            )
        )
        ends = starts + hours[order]
        if not increasing:
            self._check_ids(ids[order], clock, ends)
        self.max_id = max(self.max_id, int(ids.max()))
        started = starts < self.horizon
        wait = starts - submit[order]
        wait = np.where(wait > 0.0, wait, 0.0)[started & window[order]]
        rec.wait_hours.frombytes(wait.tobytes())
        if rec.jobs is not None:
            rec.jobs.extend(_records(specs, order, alloc, starts, ends, self.horizon))
        self.pend.steps.update(steps)
        self.pend.add(
            clock=clock,
            start=starts,
            end=ends,
            alloc=alloc,
            asked=asked[order],
            submit=submit[order],
            compute=compute[order],
            pos=(first_pos + order).astype(float),
            ids=ids[order].astype(float),
        )
        self.flush(float(clock[-1]))

    def _check_ids(self, ids: np.ndarray, clock: FloatArray, ends: FloatArray) -> None:
        """Reject an id reused while a job with that id is in the system (event loop rule;
        a job that ends at the instant the next one with its id arrives counts as gone)."""
        p = self.pend  # the earlier jobs that may still be in the system
        alive = dict(
            zip(p.col("ids").astype(np.int64).tolist(), p.col("end").tolist(), strict=True)
        )
        for i, t, e in zip(ids.tolist(), clock.tolist(), ends.tolist(), strict=True):
            if alive.get(i, -math.inf) > t:
                raise ValueError(f"job id {i} is already in the system; ids must be unique")
            alive[i] = e

    def close(self) -> tuple[int, int]:
        """At the horizon: integrate the rest, credit running attempts; (running, queued)."""
        H, rec, p = self.horizon, self.rec, self.pend
        self.flush(H)
        tally = rec.pools[0]
        tally.busy.set(H, self.busy)
        tally.up.set(H, self.pool.chips)
        rec.queue.set(H, self.queued)
        start = p.col("start")
        by_arrival = np.argsort(p.col("pos"), kind="stable")
        running = by_arrival[start[by_arrival] < H]
        if running.size:
            kept = _kept(p, running, H - start[running], self.warmup)
            tally.useful_chip_hours = _running_sum(
                tally.useful_chip_hours, p.col("asked")[running] * kept
            )
        submit = p.col("submit")
        # Waits censored at the horizon (jobs never started), in queue order; completion
        # times censored likewise (every job still in the system), in order of arrival.
        late = np.maximum(H - submit, 0.0)[(start >= H) & (submit >= self.warmup)]
        rec.wait_hours.frombytes(late.tobytes())
        rec.censored_waits = int(late.size)
        cut = np.maximum(H - submit[by_arrival], 0.0)[submit[by_arrival] >= self.warmup]
        rec.jct_censored_count = int(cut.size)
        rec.jct_censored_sum_hours = _running_sum(rec.jct_censored_sum_hours, cut)
        return int(running.size), int(np.count_nonzero(start >= H))


def simulate_fifo(
    pools: Sequence[PoolSpec],
    jobs: Iterable[JobSpec],
    *,
    horizon_hours: float,
    warmup_hours: float,
    keep_jobs: bool,
    utilization_resolution_hours: float | None,
) -> DesResult:
    """The result of a qualifying run (:func:`fifo_recursion_applies`) without the event loop.

    Reads the jobs in blocks of :data:`BLOCK`, so memory grows with the jobs in the system
    (running or queued), not with those finished, as in the event loop.
    """
    pool = pools[0]
    rec = Recorder(
        1,
        warmup_hours=warmup_hours,
        horizon_hours=horizon_hours,
        bin_hours=utilization_resolution_hours,
        keep_jobs=keep_jobs,
        keep_events=False,
    )
    rec.pools[0].up.set(0.0, pool.chips)  # the delivery at time 0
    state = _Recursion(pool.chips)
    run = _Run(pool, rec, horizon_hours, warmup_hours)
    read = 0
    for block in _blocks(pool, jobs, horizon_hours):
        run.add(block, state, read)
        read += len(block.specs)
    running, queued = run.close()
    return summarize(rec, pools, running, queued)


def _records(
    specs: Sequence[JobSpec],
    order: np.ndarray,
    alloc: FloatArray,
    starts: FloatArray,
    ends: FloatArray,
    horizon: float,
) -> list[JobRecord]:
    """One record per job of a block (in queue order), as the event loop keeps them."""
    out = []
    nan = math.nan
    for k, i in enumerate(order.tolist()):
        spec = specs[i]
        s, e = float(starts[k]), float(ends[k])
        if s < horizon:
            first = s if s > spec.submit_hours else spec.submit_hours  # as the event loop
            pool, held, end = 0, int(alloc[k]), (e if e < horizon else nan)
        else:
            pool, held, first, end = -1, 0, nan, nan
        out.append(
            JobRecord(
                spec.job_id,
                spec.submit_hours,
                spec.chips,
                spec.priority,
                spec.work_hours,
                pool,
                held,
                first,
                end,
                0,
                0.0,
            )
        )
    return out


__all__ = [
    "BLOCK",
    "fifo_recursion_applies",
    "gang_fifo_starts",
    "kiefer_wolfowitz_starts",
    "simulate_fifo",
]
