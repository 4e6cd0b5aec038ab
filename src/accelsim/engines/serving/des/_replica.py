"""One replica of the serving DES: its queue, admitted sequences and batch iterations.

Compiled (``_jit``); the state is in the record arrays of ``_state``. The
rules a replica follows (admission, iterations, runs) are in
``accelsim.engines.serving.des._run``.

A replica is not a SimPy process: between two router instants nothing outside touches it,
so its iterations are played when the router next needs its state (:func:`advance`), each
at its own boundary time, in order. ``end`` is the boundary of the iteration (or run) in
progress, ``inf`` when idle; a wake-up is a boundary at the instant it happens. A *run* is
a stretch of iterations in which nothing joins or leaves the batch: decode-only iterations
up to the next completion, or (chunked prefill) the full chunks of the head prompt before
the one that ends it (each the budget less the decode batch, constant along the run), up
to the next completion; the prompts behind the head wait for its last chunk either way.
Its terms are prepared once at its start (:func:`~accelsim.models.serving.
terms_iteration_run`) and it is one state change, cut short at a boundary when an
admissible request arrives (:func:`cut`).

Functions take what they touch, in one order: ``req`` (the requests' records), ``reps``
(every replica's) or ``rp`` (one replica's record), ``fleet`` (the one-record array),
``hs``/``hr`` (the heaps' steps and requests, a row per replica), the replica's index
``r``, ``terms`` (the iteration formula's coefficients), then times [h].
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from accelsim.engines.serving.des._jit import (
    BadIteration,
    OverBudget,
    jit,
    prepare,
    run_time,
    seconds,
)
from accelsim.engines.serving.des._state import DRAINING, NONE, SERVING, STOPPED
from accelsim.engines.serving.des._types import _SECONDS_PER_HOUR
from accelsim.models.serving import IterationTerms

# Shortest run timed in closed form: any two or more iterations in which nothing joins or
# leaves (one iteration is timed by the iteration formula itself).
_MIN_RUN = 2
# A replica's request lists (push_back): dispatched and waiting for admission; admitted,
# prompt being prefilled; prompt prefilled by the iteration in progress.
QUEUE, PREFILL, FINISHING = 0, 1, 2
Arr = np.ndarray
Rec = Any  # one record of a state array (numba: a Record, read and written in place)


@jit
def heap_push(steps: Arr, requests: Arr, size: int, step: int, request: int) -> None:
    """Push ``(step, request)`` on a binary heap of ``size`` entries (a row's arrays)."""
    i = size
    while i > 0:
        parent = (i - 1) >> 1
        if steps[parent] <= step:
            break
        steps[i], requests[i] = steps[parent], requests[parent]
        i = parent
    steps[i], requests[i] = step, request


@jit
def heap_pop(steps: Arr, requests: Arr, size: int) -> int:
    """Remove the entry of least step from a heap of ``size`` (>= 1) entries; its request."""
    top = int(requests[0])
    size -= 1
    step, request = steps[size], requests[size]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and steps[child + 1] < steps[child]:
            child += 1
        if steps[child] >= step:
            break
        steps[i], requests[i] = steps[child], requests[child]
        i = child
    steps[i], requests[i] = step, request
    return top


@jit
def push_back(req: Arr, rp: Rec, which: int, k: int) -> None:
    """Append request ``k`` to the replica's list ``which`` (``QUEUE``, ``PREFILL`` or
    ``FINISHING``), linked through the requests' ``next``."""
    req[k].next = NONE
    if which == QUEUE:
        if rp.queue_head == NONE:
            rp.queue_head = k
        else:
            req[rp.queue_tail].next = k
        rp.queue_tail = k
    elif which == PREFILL:
        if rp.prefill_head == NONE:
            rp.prefill_head = k
        else:
            req[rp.prefill_tail].next = k
        rp.prefill_tail = k
    else:
        if rp.finish_head == NONE:
            rp.finish_head = k
        else:
            req[rp.finish_tail].next = k
        rp.finish_tail = k
        rp.finishing += 1


@jit
def advance(
    req: Arr, reps: Arr, fleet: Arr, hs: Arr, hr: Arr, r: int, terms: IterationTerms, hours: float
) -> None:
    """Play every boundary of replica ``r`` before ``hours``: end the iteration or run,
    start the next.

    Boundaries at ``hours`` itself wait: the router acts first at an instant, so an arrival
    exactly at a boundary is admitted there. At each boundary, in the order of the rules in
    ``accelsim.engines.serving.des._run``: (a) the iteration or run ending now emits its tokens,
    (b) admission, (c) the next run, iteration, idle or stop.
    """
    rp = reps[r]
    now = rp.end
    while now < hours:
        rp.busy += now - rp.begun
        if rp.run_steps:
            _end_run(req, rp, fleet, hs, hr, r, now)
        elif rp.iteration_decode or rp.finishing:
            _end_iteration(req, rp, fleet, hs, hr, r, now)
        if rp.queue_head != NONE and rp.state == SERVING:
            _admit(req, rp, fleet, hs, hr, r, now)
        _start_next(req, rp, fleet, hs, hr, r, terms, now)
        now = rp.end


@jit
def _end_run(req: Arr, rp: Rec, fleet: Arr, hs: Arr, hr: Arr, r: int, now: float) -> None:
    """(a) The run ending at ``now``: its iterations' tokens and prefill, then the
    completions (a run completes sequences only at its end)."""
    fl = fleet[0]
    steps, batch = rp.run_steps, rp.batch
    fl.iterations += steps
    fl.tokens += batch * steps
    rp.steps += steps
    rp.kv_tokens += batch * steps
    if rp.run_prefill:
        req[rp.prefill_head].prefilled += rp.run_prefill * steps
    rp.run_steps = 0
    if rp.batch and hs[r, 0] <= rp.steps:
        _complete(req, rp, hs, hr, r, now)


@jit
def _end_iteration(req: Arr, rp: Rec, fleet: Arr, hs: Arr, hr: Arr, r: int, now: float) -> None:
    """(a) The single iteration ending at ``now``: a token for each decoding sequence, the
    completions, then the first token of each prompt whose prefill it ended (a one-token
    request completes there, the others join the batch)."""
    fl = fleet[0]
    decode = rp.iteration_decode
    if decode:
        fl.tokens += decode
        rp.steps += 1
        rp.kv_tokens += decode
        rp.iteration_decode = 0  # a wake-up boundary after it emits nothing
        if hs[r, 0] <= rp.steps:
            _complete(req, rp, hs, hr, r, now)
    if not rp.finishing:
        return
    fl.tokens += rp.finishing
    k = rp.finish_head
    while k != NONE:
        following = req[k].next
        req[k].first = now
        if req[k].output == 1:
            req[k].done = now
            rp.reserved -= req[k].context
            rp.admitted -= 1
            rp.load -= 1
        else:
            join(req, rp, hs, hr, r, k)
        k = following
    rp.finish_head = rp.finish_tail = NONE
    rp.finishing = 0


@jit
def join(req: Arr, rp: Rec, hs: Arr, hr: Arr, r: int, k: int) -> None:
    """Request ``k`` joins the decode batch at the current decode step, its prompt cached."""
    req[k].joined = rp.steps
    heap_push(hs[r], hr[r], rp.batch, rp.steps + req[k].output - 1, k)
    rp.batch += 1
    rp.kv_tokens += req[k].input + 1


@jit
def _complete(req: Arr, rp: Rec, hs: Arr, hr: Arr, r: int, now: float) -> None:
    """Retire the sequences whose last decode step is the current one, at ``now``."""
    steps, row_steps, row_requests = rp.steps, hs[r], hr[r]
    freed = count = 0
    while rp.batch and row_steps[0] <= steps:
        k = heap_pop(row_steps, row_requests, rp.batch)
        rp.batch -= 1
        freed += req[k].context
        count += 1
        req[k].done = now
    rp.kv_tokens -= freed
    rp.reserved -= freed
    rp.admitted -= count
    rp.load -= count


@jit
def _admit(req: Arr, rp: Rec, fleet: Arr, hs: Arr, hr: Arr, r: int, now: float) -> None:
    """(b) Admission at ``now``: FCFS while the batch and the KV reservation allow;
    head-of-line (nothing skips the head). A ``decode_only`` replica's request arrives with
    its prompt's KV cache, so it joins the decode batch at once (its first token counts
    now); otherwise its prompt waits for prefill."""
    fl = fleet[0]
    while rp.queue_head != NONE and rp.admitted < fl.max_batch:
        k = rp.queue_head
        if rp.reserved + req[k].context > fl.kv_capacity:
            break
        rp.admitted += 1
        rp.reserved += req[k].context
        rp.queue_head = req[k].next
        if rp.queue_head == NONE:
            rp.queue_tail = NONE
        if fl.decode_only:
            req[k].first = now
            join(req, rp, hs, hr, r, k)
        else:
            req[k].prefilled = 0
            push_back(req, rp, PREFILL, k)


@jit
def _run_length(req: Arr, rp: Rec, fleet: Arr, hs: Arr, r: int) -> int:
    """Iterations of the run that could start now (sets ``run_prefill``): the head prompt's
    full chunks before its last, or decode-only iterations, either to the next completion;
    below ``_MIN_RUN``, one iteration is played instead."""
    chunk, batch, steps = fleet[0].chunk, rp.batch, 0
    if rp.prefill_head != NONE:
        # the prompt room of an iteration: the budget less a token per decoding sequence
        room = chunk - batch if chunk else 0
        rp.run_prefill = room
        if room:
            head = req[rp.prefill_head]
            steps = (head.input - head.prefilled - 1) // room
            if batch and hs[r, 0] - rp.steps < steps:
                steps = hs[r, 0] - rp.steps
    elif batch:
        rp.run_prefill = 0
        steps = hs[r, 0] - rp.steps
    return steps


@jit
def _start_next(
    req: Arr, rp: Rec, fleet: Arr, hs: Arr, hr: Arr, r: int, terms: IterationTerms, now: float
) -> None:
    """(c) At ``now``, start the next run, else one iteration, else idle (a draining
    replica stops). A run's terms are prepared once and its end is in closed form; the
    events it counts stop at the iteration the horizon cuts."""
    steps = _run_length(req, rp, fleet, hs, r)
    if steps < _MIN_RUN:
        if rp.prefill_head != NONE or rp.batch:
            _start_iteration(req, rp, fleet, terms, now)
        else:
            rp.end = math.inf
            if rp.state == DRAINING:
                rp.state = STOPPED
                rp.stop = now
        return
    prefill = rp.run_prefill
    attends = req[rp.prefill_head].prefilled + prefill / 2.0 if prefill else 0.0
    run = prepare(terms, rp.batch, rp.kv_tokens, prefill, attends)
    rp.run_first0, rp.run_first1, rp.run_then0, rp.run_then1 = run[0], run[1], run[2], run[3]
    rp.run_leading, rp.run_per_iteration = run[4], run[5]
    length = run_time(run, steps)
    if not length > 0.0:
        _bad(fleet, length, rp.batch, prefill)
    rp.begun, rp.run_steps = now, steps
    rp.end = now + length / _SECONDS_PER_HOUR
    fl = fleet[0]
    if rp.end >= fl.horizon:
        fl.events += boundary(rp, fl.horizon)
    else:
        fl.events += steps
    if fl.events > fl.max_events:
        raise OverBudget()


@jit
def _start_iteration(req: Arr, rp: Rec, fleet: Arr, terms: IterationTerms, now: float) -> None:
    """Start one iteration at ``now``, timed by the iteration formula: the decode batch
    (none prefill-first) and the prompt tokens it prefills, with the sum over them of the
    context each attends to. Prefill-first (``chunk`` 0) takes every admitted prompt whole;
    chunked prefill takes them FCFS up to ``chunk`` tokens less one per decoding sequence
    (the iteration's token budget, the decodes first). The prompts it ends go to the
    finishing list."""
    fl = fleet[0]
    fl.events += 1
    if fl.events > fl.max_events:
        raise OverBudget()
    fl.iterations += 1
    chunk = fl.chunk
    decode = rp.batch if chunk or rp.prefill_head == NONE else 0
    prefill, pairs = 0, 0.0
    if not chunk:
        k = rp.prefill_head
        while k != NONE:
            following = req[k].next
            size = req[k].input
            prefill += size
            pairs += size * (size / 2.0)
            push_back(req, rp, FINISHING, k)
            k = following
        rp.prefill_head = rp.prefill_tail = NONE
    budget = chunk - decode  # one token of the budget per decoding sequence first
    while rp.prefill_head != NONE and budget:
        k = rp.prefill_head
        done = req[k].prefilled
        left = req[k].input - done
        take = left if left < budget else budget
        pairs += take * (done + take / 2.0)
        prefill += take
        budget -= take
        if take == left:
            rp.prefill_head = req[k].next
            if rp.prefill_head == NONE:
                rp.prefill_tail = NONE
            push_back(req, rp, FINISHING, k)
        else:
            req[k].prefilled = done + take
    rp.iteration_decode = decode
    kv = rp.kv_tokens if decode else 0
    length = seconds(terms, decode, prefill, kv, pairs / prefill if prefill else 0.0)
    if not length > 0.0:
        _bad(fleet, length, decode, prefill)
    rp.begun = now
    rp.end = now + length / _SECONDS_PER_HOUR


@jit
def _bad(fleet: Arr, length: float, decode: int, prefill: int) -> None:
    fl = fleet[0]
    fl.bad_seconds, fl.bad_decode, fl.bad_prefill = length, decode, prefill
    raise BadIteration()


@jit
def wake(rp: Rec, hours: float) -> None:
    """Idle until now: a boundary at ``hours`` (after the router's other actions there)."""
    if rp.end == math.inf and rp.state != STOPPED:
        rp.begun = rp.end = hours


@jit
def cut(rp: Rec, hours: float) -> None:
    """An admissible request arrived at ``hours``: the run ends at the first boundary at or
    after it (an arrival exactly at a boundary joins there)."""
    rp.run_steps = boundary(rp, hours)
    rp.end = _run_end(rp, rp.run_steps)


@jit
def _run_end(rp: Rec, steps: int) -> float:
    """End of the run's first ``steps`` iterations. [h]"""
    run = (
        rp.run_first0,
        rp.run_first1,
        rp.run_then0,
        rp.run_then1,
        rp.run_leading,
        rp.run_per_iteration,
    )
    return float(rp.begun + run_time(run, steps) / _SECONDS_PER_HOUR)


@jit
def boundary(rp: Rec, hours: float) -> int:
    """The run's first iteration (from 1) that ends at or after ``hours``.

    Iterations lengthen along a run (KV and prefill context grow), so the cumulative time
    is convex and the chord from the run's start to its end guesses the answer to within an
    iteration or two: two closed-form evaluations check it; bisection (O(log k)) covers a
    miss.
    """
    steps = int(rp.run_steps)
    share: float = (hours - rp.begun) / (rp.end - rp.begun)
    guess = min(max(math.ceil(steps * share), 1), steps)
    if _run_end(rp, guess) >= hours:
        if guess == 1 or _run_end(rp, guess - 1) < hours:
            return guess
        return _first_ending(rp, hours, 1, guess - 2)
    if guess == steps or _run_end(rp, guess + 1) >= hours:
        return guess + 1
    return _first_ending(rp, hours, guess + 2, steps)


@jit
def _first_ending(rp: Rec, hours: float, low: int, high: int) -> int:
    """The least iteration in ``[low, high]`` that ends at or after ``hours`` (``high + 1``
    when none does); bisection, as ``bisect.bisect_left``."""
    high += 1
    while low < high:
        middle = (low + high) // 2
        if _run_end(rp, middle) < hours:
            low = middle + 1
        else:
            high = middle
    return low


@jit
def admits(req: Arr, rp: Rec, fleet: Arr, k: int) -> bool:
    """Whether request ``k`` would be admitted now (batch and KV room)."""
    fl = fleet[0]
    return bool(rp.admitted < fl.max_batch and rp.reserved + req[k].context <= fl.kv_capacity)


@jit
def close(req: Arr, rp: Rec, fleet: Arr, hr: Arr, r: int, horizon: float) -> None:
    """At the horizon: the cut iteration or run; tokens of the sequences decoding."""
    fl = fleet[0]
    if rp.end < math.inf:  # in progress at the horizon: begun before it, ends at or after
        if rp.run_steps:  # a run: count the iterations that ended before it
            # (its last iteration, the one the horizon cuts, is never one of them)
            done = min(boundary(rp, horizon) - 1, rp.run_steps - 1)
            # they complete nothing: a run completes sequences only at its end
            fl.iterations += done + 1  # and the cut one, begun before the horizon
            fl.tokens += rp.batch * done
            rp.steps += done
            rp.run_steps = 0
        rp.busy += horizon - rp.begun
    for j in range(rp.batch):
        k = hr[r, j]
        req[k].generated = 1 + rp.steps - req[k].joined


@jit
def close_all(
    req: Arr, reps: Arr, fleet: Arr, hs: Arr, hr: Arr, terms: IterationTerms, horizon: float
) -> None:
    """At the horizon: every replica played up to it, then closed (:func:`close`)."""
    for r in range(fleet[0].replicas):
        advance(req, reps, fleet, hs, hr, r, terms, horizon)
        close(req, reps[r], fleet, hr, r, horizon)
