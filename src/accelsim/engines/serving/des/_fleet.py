"""The serving DES's router: the fleet of replicas, dispatch, the hourly plan, its process.

One SimPy process (:func:`route`) drives the plan hours and replicas coming up as events
and, between them, hands the arrivals to the compiled kernel below (:func:`play_arrivals`),
which dispatches them in order and plays the replicas' iterations (``_replica``) by
the *Queues* and *Fleet plan* rules of ``accelsim.engines.serving.des._run``.

The router's kernel functions take ``st``, the tuple of state arrays of
:meth:`~accelsim.engines.serving.des._state.FleetState.arrays` (``req, reps, fleet, hs, hr,
serving, starting_at, starting``), then ``terms``; each unpacks what it touches.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any

import numpy as np
import simpy

from accelsim.engines.serving.des._jit import OverBudget, jit
from accelsim.engines.serving.des._replica import (
    QUEUE,
    admits,
    advance,
    cut,
    push_back,
    wake,
)
from accelsim.engines.serving.des._state import (
    DRAINING,
    NONE,
    SERVING,
    STARTING,
    STOPPED,
    FleetArrays,
    FleetState,
)
from accelsim.models.serving import IterationTerms

Arr = np.ndarray


@jit
def advance_all(
    req: Arr, reps: Arr, fleet: Arr, hs: Arr, hr: Arr, terms: IterationTerms, hours: float
) -> None:
    """Bring every replica's state to the instant ``hours`` (see ``advance``)."""
    for r in range(fleet[0].replicas):
        advance(req, reps, fleet, hs, hr, r, terms, hours)


@jit
def play_arrivals(st: FleetArrays, terms: IterationTerms, first: int, until: float) -> int:
    """Dispatch the arrivals before ``until`` from index ``first``, one event per arrival
    instant; return the next request's index. Only the replicas the router reads are
    brought to each instant: every serving one for ``least_loaded`` (their loads), the
    chosen one for ``round_robin``; the others catch up at the router's next instant."""
    req, reps, fleet, hs, hr, serving = st[:6]
    fl = fleet[0]
    i, n = first, req.shape[0]
    while i < n and req[i].arrival < until:  # ties: the plan, then replicas up, arrivals
        fl.events += 1
        if fl.events > fl.max_events:
            raise OverBudget()
        hours = req[i].arrival
        if fl.least_loaded:
            for j in range(fl.serving):
                if reps[serving[j]].end < hours:  # most are mid-iteration: skip the call
                    advance(req, reps, fleet, hs, hr, serving[j], terms, hours)
        while i < n and req[i].arrival == hours:
            if req[i].context > fl.kv_capacity:
                req[i].rejected = True
            else:
                dispatch(st, terms, i, hours)
            i += 1
    return i


@jit
def dispatch(st: FleetArrays, terms: IterationTerms, k: int, hours: float) -> None:
    """Send request ``k`` to a serving replica's queue (or the router's, if none serve):
    ``least_loaded`` the fewest outstanding requests, ties to the lowest index."""
    req, reps, fleet, hs, hr, serving = st[:6]
    fl = fleet[0]
    if fl.serving == 0:
        req[k].next = NONE
        if fl.waiting_head == NONE:
            fl.waiting_head = k
        else:
            req[fl.waiting_tail].next = k
        fl.waiting_tail = k
        return
    if fl.least_loaded:
        r = serving[0]
        for j in range(1, fl.serving):
            if reps[serving[j]].load < reps[r].load:
                r = serving[j]
    else:
        r = serving[fl.turn % fl.serving]
        fl.turn += 1
        advance(req, reps, fleet, hs, hr, r, terms, hours)
    rp = reps[r]
    if rp.queue_head == NONE and rp.run_steps and admits(req, rp, fleet, k):
        cut(rp, hours)
    push_back(req, rp, QUEUE, k)
    rp.load += 1
    wake(rp, hours)


@jit
def activate(st: FleetArrays, terms: IterationTerms, r: int, hours: float) -> None:
    """Replica ``r`` starts serving: it takes the router's waiting requests first."""
    req, reps, fleet, serving = st[0], st[1], st[2], st[5]
    fl = fleet[0]
    reps[r].state = SERVING
    serving[fl.serving] = r  # the newest replica has the highest index: order kept
    fl.serving += 1
    wake(reps[r], hours)
    k = fl.waiting_head
    fl.waiting_head = fl.waiting_tail = NONE
    while k != NONE:
        following = req[k].next
        dispatch(st, terms, k, hours)
        k = following


@jit
def activate_next(st: FleetArrays, terms: IterationTerms, hours: float) -> None:
    """The replica that has started longest comes up at ``hours``."""
    fleet, starting = st[2], st[7]
    fl = fleet[0]
    r = starting[fl.starting_head]
    fl.starting_head += 1
    activate(st, terms, r, hours)


@jit
def scale(st: FleetArrays, terms: IterationTerms, wanted: int, hours: float) -> None:
    """Apply one hour's plan (the module's *Fleet plan* rule): provision new replicas
    (warm at hour 0 or without a cold start), else cancel the newest still starting, then
    drain the highest-index serving ones."""
    reps, fleet, starting_at, starting = st[1], st[2], st[6], st[7]
    fl = fleet[0]
    change = wanted - fl.serving - (fl.starting_tail - fl.starting_head)
    warm = hours == 0.0 or fl.cold_start == 0.0
    for _ in range(max(change, 0)):
        r = fl.replicas
        fl.replicas += 1
        rp = reps[r]
        rp.state, rp.start, rp.stop, rp.end = STARTING, hours, math.inf, math.inf
        rp.queue_head = rp.queue_tail = rp.prefill_head = rp.prefill_tail = NONE
        rp.finish_head = rp.finish_tail = NONE
        if warm:
            activate(st, terms, r, hours)
        else:
            starting_at[fl.starting_tail] = hours + fl.cold_start
            starting[fl.starting_tail] = r
            fl.starting_tail += 1
    excess = max(-change, 0)
    while excess and fl.starting_tail > fl.starting_head:
        fl.starting_tail -= 1
        rp = reps[starting[fl.starting_tail]]
        rp.state, rp.stop = STOPPED, hours
        excess -= 1
    if excess:
        _drain(st, terms, excess, hours)


@jit
def _drain(st: FleetArrays, terms: IterationTerms, excess: int, hours: float) -> None:
    """Stop routing to the ``excess`` highest-index serving replicas; hand their queues
    back to the router in arrival (index) order."""
    req, reps, fleet, serving = st[0], st[1], st[2], st[5]
    fl = fleet[0]
    fl.serving -= excess
    queued = 0
    for j in range(fl.serving, fl.serving + excess):
        queued += reps[serving[j]].load - reps[serving[j]].admitted
    returned = np.empty(queued, dtype=np.int64)
    queued = 0
    for j in range(fl.serving, fl.serving + excess):
        rp = reps[serving[j]]
        rp.state = DRAINING
        k = rp.queue_head
        while k != NONE:
            returned[queued] = k
            queued += 1
            rp.load -= 1
            k = req[k].next
        rp.queue_head = rp.queue_tail = NONE
        wake(rp, hours)  # an idle replica wakes to stop
    for k in np.sort(returned):
        dispatch(st, terms, k, hours)


@jit
def next_up(fleet: Arr, starting_at: Arr) -> float:
    """When the replica that has started longest comes up; inf when none is starting."""
    fl = fleet[0]
    return starting_at[fl.starting_head] if fl.starting_tail > fl.starting_head else math.inf


def route(
    env: simpy.Environment, state: FleetState, plan: list[int], horizon_hours: float
) -> Generator[simpy.Event, Any, None]:
    """The router's process: plan hours and replicas coming up as SimPy events, the arrivals
    between them in order (no event each: replicas change only at the router's instants and
    their own boundaries, which the kernel plays in time order)."""
    st, terms = state.arrays(), state.terms
    req, reps, fleet, hs, hr, _, starting_at, _ = st
    i = hour = 0
    while True:
        next_hour = float(hour) if hour < len(plan) else math.inf
        t = min(next_hour, next_up(fleet, starting_at), horizon_hours)
        i = play_arrivals(st, terms, i, t)
        if t >= horizon_hours:
            return
        if t > env.now:
            fleet["events"][0] += 1
            yield env.timeout(t - env.now)
        advance_all(req, reps, fleet, hs, hr, terms, t)
        if next_hour == t:
            scale(st, terms, plan[hour], t)
            hour += 1
        else:
            activate_next(st, terms, t)
