"""Strict FIFO on one reliable pool without the event loop: start times by recursion.

When a run qualifies (:func:`fifo_recursion_applies`), every job's start follows from the
arrival and duration sequence alone, so :func:`simulate_fifo` computes the starts in one
tight loop over a heap and the metrics with numpy, and returns the same
:class:`~accelsim.engines.des._metrics.DesResult` as the event loop on the same jobs.

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

Memory: unlike the event loop, this path holds every job read (their specs, then a few
arrays), about 250 bytes per job.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections.abc import Iterable, Sequence

import numpy as np

from accelsim._typing import FloatArray
from accelsim.engines.des._attempts import attempt_hours, progress, segments
from accelsim.engines.des._metrics import DesResult, summarize
from accelsim.engines.des._records import JobRecord, Level, Recorder
from accelsim.engines.des._schedulers import Scheduler, fifo
from accelsim.engines.des._specs import JobSpec, PoolSpec, check_job


def fifo_recursion_applies(
    pools: Sequence[PoolSpec], policy: Scheduler, *, keep_events: bool
) -> bool:
    """Whether a run reduces exactly to the FIFO start-time recursion (module docstring).

    Conditions, all required:

    1. the scheduler is :func:`~accelsim.engines.des._schedulers.fifo` (strict submission
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
    FIFO. One condition is checked on the jobs as read: ids increasing in submission order
    (the usual case); otherwise :func:`simulate_fifo` hands them back to the event loop,
    whose rules then order ties and reject an id reused while its job is in the system.
    """
    if policy is not fifo or len(pools) != 1 or keep_events:
        return False
    pool = pools[0]
    return (
        pool.failure_rate_per_chip_hour == 0.0
        and pool.preemptions_per_chip_hour == 0.0
        and pool.lead_time_hours == 0.0
    )


def kiefer_wolfowitz_starts(
    arrive_hours: Sequence[float], service_hours: Sequence[float], servers: int, until: float
) -> list[float]:
    """FIFO start times of single-server jobs on ``servers`` servers (``inf``: not by ``until``).

    ``S_i = max(a_i, V_i[0])`` with ``V`` the heap of server-free times. [h]

    Examples
    --------
    >>> kiefer_wolfowitz_starts([0.0, 0.5, 1.0], [2.0, 2.0, 2.0], 2, 10.0)
    [0.0, 0.5, 2.0]
    """
    free = [0.0] * servers
    starts: list[float] = []
    push = starts.append
    replace = heapq.heapreplace
    for a, d in zip(arrive_hours, service_hours, strict=True):
        f = free[0]
        s = a if a >= f else f
        if s >= until:
            break
        push(s)
        replace(free, s + d)
    starts.extend([math.inf] * (len(arrive_hours) - len(starts)))
    return starts


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
    running: list[tuple[float, int]] = []
    pop, push = heapq.heappop, heapq.heappush
    free = capacity
    prev = 0.0
    starts: list[float] = []
    keep = starts.append
    for a, c, d in zip(arrive_hours, chips, service_hours, strict=True):
        s = a if a > prev else prev
        while free < c:  # earlier jobs hold the chips: wait for ends, earliest first
            e, k = pop(running)
            free += k
            if e > s:
                s = e
        if s >= until:
            break
        free -= c
        push(running, (s + d, c))
        keep(s)
        prev = s
    starts.extend([math.inf] * (len(arrive_hours) - len(starts)))
    return starts


def _read(
    pool: PoolSpec, jobs: Iterable[JobSpec], horizon_hours: float
) -> tuple[list[JobSpec], list[float]]:
    """The jobs the event loop would submit, checked as it checks them, and their clock times.

    Stops where the event loop stops reading: at a submission at or after the horizon, or
    at an arrival whose clock time (``t_prev + (s - t_prev)``) is.
    """
    read: list[JobSpec] = []
    times: list[float] = []
    keep, stamp = read.append, times.append
    last = 0.0
    t = 0.0
    for spec in jobs:
        s = spec.submit_hours
        if s != last or not read:
            if s >= horizon_hours:
                break
            if not s >= last:  # also catches nan
                check_job(spec)
                raise ValueError(
                    f"jobs must come in order of submission: job {spec.job_id} is submitted "
                    f"at {s} h, after a job submitted at {last} h"
                )
            last = s
            t = t + (s - t)
            if t >= horizon_hours:
                break
        check_job(spec)
        keep(spec)
        stamp(t)
    return read, times


def _alloc_and_hours(pool: PoolSpec, specs: Sequence[JobSpec]) -> tuple[list[int], FloatArray]:
    """Chips held and failure-free attempt length of each job, as ``Cluster`` computes them."""
    alloc: list[int] = []
    hours = np.empty(len(specs))
    speed = pool.speed
    for i, spec in enumerate(specs):
        if spec.pools is not None:
            for p in spec.pools:
                if p != 0:
                    raise ValueError(f"job {spec.job_id} lists pool {p}; there are 1")
        c = pool.allocation_chips(spec.chips, True) if spec.whole_domains else spec.chips
        if c > pool.chips:
            raise ValueError(
                f"job {spec.job_id} needs {spec.chips} chips, more than any pool it may use holds"
            )
        alloc.append(c)
        compute = spec.work_hours / speed
        if spec.checkpoint_interval_hours is None and spec.checkpoint_write_hours == 0.0:
            hours[i] = 0.0 + compute
        else:
            full, interval, partial = segments(compute, spec.checkpoint_interval_hours)
            hours[i] = attempt_hours(0.0, full, interval, partial, spec.checkpoint_write_hours)
    return alloc, hours


def _breakpoints(times: FloatArray, deltas: FloatArray) -> tuple[FloatArray, FloatArray]:
    """(distinct times, level after every change at each) of a level changed by ``deltas``."""
    order = np.argsort(times, kind="stable")
    t = times[order]
    v = np.cumsum(deltas[order])
    last = np.ones(t.size, dtype=bool)
    last[:-1] = t[1:] != t[:-1]
    return t[last], v[last]


def _drive(level: Level, times: FloatArray, values: FloatArray, horizon: float, end: float) -> None:
    """Apply ``level.set`` at every breakpoint, then at the horizon, as the event loop does.

    A plain :class:`Level` is integrated in numpy with its own arithmetic (``value * (now -
    max(last, from))``, summed in order); any other kind is driven call by call.
    """
    if type(level) is not Level:
        for now, value in zip(times.tolist(), values.tolist(), strict=True):
            level.set(now, value)
        level.set(horizon, end)
        return
    frm = level._from  # our own class: the start of the window it clips at
    now = np.append(times, horizon)
    last = np.concatenate(([level.last_hours], times))
    value = np.concatenate(([level.value], values))
    part = value * (now - np.where(last > frm, last, frm))
    part = part[now > frm]
    if part.size:
        level.area = float(np.cumsum(np.concatenate(([level.area], part)))[-1])
    level.last_hours = horizon
    level.value = end


def simulate_fifo(
    pools: Sequence[PoolSpec],
    jobs: Iterable[JobSpec],
    *,
    horizon_hours: float,
    warmup_hours: float,
    keep_jobs: bool,
    utilization_resolution_hours: float | None,
) -> DesResult | list[JobSpec]:
    """The result of a qualifying run (:func:`fifo_recursion_applies`) without the event loop.

    Returns the jobs read, for the event loop, when their ids do not increase in
    submission order (the one condition checked on the jobs themselves).
    """
    pool = pools[0]
    H = horizon_hours
    specs, clock = _read(pool, jobs, H)
    n = len(specs)
    ids = np.fromiter((j.job_id for j in specs), np.int64, n)
    if n > 1 and not bool(np.all(ids[1:] > ids[:-1])):
        return specs
    alloc_list, hours = _alloc_and_hours(pool, specs)
    if all(c == 1 for c in alloc_list):
        start_list = kiefer_wolfowitz_starts(clock, hours.tolist(), pool.chips, H)
    else:
        start_list = gang_fifo_starts(clock, alloc_list, hours.tolist(), pool.chips, H)
    starts = np.asarray(start_list, dtype=float)
    ends = starts + hours
    m = int(np.count_nonzero(starts < H))  # a prefix: FIFO starts in order
    submit = np.fromiter((j.submit_hours for j in specs), float, n)
    asked = np.fromiter((j.chips for j in specs), float, n)
    alloc = np.asarray(alloc_list, dtype=float)
    rec = Recorder(
        1,
        warmup_hours=warmup_hours,
        horizon_hours=H,
        bin_hours=utilization_resolution_hours,
        keep_jobs=keep_jobs,
        keep_events=False,
    )
    tally = rec.pools[0]
    tally.up.set(0.0, pool.chips)  # the delivery at time 0
    in_window = submit >= warmup_hours
    rec.arrived = n
    rec.arrived_in_window = int(np.count_nonzero(in_window))
    # Waits, in order of first start (submission order), clipped at 0 like the event loop.
    wait = starts[:m] - submit[:m]
    wait = np.where(wait > 0.0, wait, 0.0)[in_window[:m]]
    rec.wait_hours = array("d", wait.tobytes())
    # Completions in the engine's order: by end time, ties in order of start.
    done = np.flatnonzero(ends[:m] < H)
    done = done[np.argsort(ends[done], kind="stable")]
    rec.completed = int(done.size)
    jct = (ends[done] - submit[done])[in_window[done]]
    rec.jct_count = int(jct.size)
    if jct.size:
        rec.jct_sum_hours = float(np.cumsum(jct)[-1])
    # Useful chip-hours: completions in order, then the attempts running at the horizon.
    running = np.flatnonzero(ends[:m] >= H)
    useful = (
        _useful(specs, pool, starts, done, running, H, warmup_hours)
        * asked[np.concatenate((done, running))]
    )
    if useful.size:
        tally.useful_chip_hours = float(np.cumsum(useful)[-1])
    # Busy chips: +alloc at each start, -alloc at each end before the horizon.
    t_busy, v_busy = _breakpoints(
        np.concatenate((starts[:m], ends[done])), np.concatenate((alloc[:m], -alloc[done]))
    )
    _drive(tally.busy, t_busy, v_busy, H, float(v_busy[-1]) if v_busy.size else 0)
    # Queue length: +1 at each arrival, -1 at each start; set only where it changes.
    t_q, v_q = _breakpoints(
        np.concatenate((np.asarray(clock, dtype=float), starts[:m])),
        np.concatenate((np.ones(n), -np.ones(m))),
    )
    changed = v_q != np.concatenate(([0.0], v_q[:-1]))
    _drive(rec.queue, t_q[changed], v_q[changed], H, n - m)
    tally.up.set(H, pool.chips)
    _censored(rec, submit, asked, specs, m, running, in_window, H)
    if rec.jobs is not None:
        rec.jobs.extend(_records(specs, alloc_list, starts, ends, m, H))
    return summarize(rec, pools, int(running.size), n - m)


def _censored(
    rec: Recorder,
    submit: FloatArray,
    asked: FloatArray,
    specs: Sequence[JobSpec],
    started: int,
    running: np.ndarray,
    in_window: np.ndarray,
    horizon: float,
) -> None:
    """The offered load, and the waits and completion times censored at the horizon, where
    the recorder keeps them, summed in the event loop's order (that of arrival)."""
    if hasattr(rec, "offered_chip_hours"):
        work = np.fromiter((j.work_hours for j in specs), float, len(specs))
        offered = (asked * work)[in_window]
        if offered.size:
            rec.offered_chip_hours = float(np.cumsum(offered)[-1])
    if hasattr(rec, "censored_waits"):
        late = np.maximum(horizon - submit[started:], 0.0)[in_window[started:]]
        rec.wait_hours.extend(late.tolist())
        rec.censored_waits = int(late.size)
    if hasattr(rec, "jct_censored_sum_hours"):
        unfinished = np.zeros(submit.size, dtype=bool)
        unfinished[started:] = True
        unfinished[running] = True
        cut = np.maximum(horizon - submit, 0.0)[unfinished & in_window]
        rec.jct_censored_count = int(cut.size)
        if cut.size:
            rec.jct_censored_sum_hours = float(np.cumsum(cut)[-1])


def _useful(
    specs: Sequence[JobSpec],
    pool: PoolSpec,
    starts: FloatArray,
    done: np.ndarray,
    running: np.ndarray,
    horizon: float,
    warmup: float,
) -> FloatArray:
    """Compute kept per attempt (completed, then running at the horizon), as ``Cluster``
    credits it: minus the part before the warm-up. [h]"""
    both = np.concatenate((done, running))
    s = starts[both]
    compute = np.fromiter((specs[i].work_hours for i in both.tolist()), float, both.size)
    compute = compute / pool.speed
    # Plain attempts (one stretch of compute, no writes): progress(x) = min(x, compute).
    x = compute.copy()
    x[done.size :] = np.minimum(horizon - s[done.size :], compute[done.size :])
    before = np.where(s >= warmup, 0.0, np.minimum(warmup - s, compute))
    for k, i in enumerate(both.tolist()):
        spec = specs[i]
        if spec.checkpoint_interval_hours is None and spec.checkpoint_write_hours == 0.0:
            continue
        full, interval, partial = segments(compute[k], spec.checkpoint_interval_hours)
        write = spec.checkpoint_write_hours
        at = float(s[k])
        x[k] = (
            full * interval + partial
            if k < done.size
            else progress(horizon - at, 0.0, full, interval, partial, write)[0]
        )
        before[k] = (
            0.0 if at >= warmup else progress(warmup - at, 0.0, full, interval, partial, write)[0]
        )
    out: FloatArray = x - np.minimum(x, before)
    return out


def _records(
    specs: Sequence[JobSpec],
    alloc: Sequence[int],
    starts: FloatArray,
    ends: FloatArray,
    started: int,
    horizon: float,
) -> list[JobRecord]:
    """One record per job read, as the event loop keeps them (``keep_jobs``)."""
    out = []
    nan = math.nan
    for i, spec in enumerate(specs):
        if i < started:
            s, e = float(starts[i]), float(ends[i])
            pool, held, end = 0, alloc[i], (e if e < horizon else nan)
        else:
            s, pool, held, end = nan, -1, 0, nan
        out.append(
            JobRecord(
                spec.job_id,
                spec.submit_hours,
                spec.chips,
                spec.priority,
                spec.work_hours,
                pool,
                held,
                s,
                end,
                0,
                0.0,
            )
        )
    return out


__all__ = [
    "fifo_recursion_applies",
    "gang_fifo_starts",
    "kiefer_wolfowitz_starts",
    "simulate_fifo",
]
