"""The serving DES's router: the fleet of replicas, dispatch, the hourly plan, its process.

One SimPy process (:func:`_route`) drives the plan hours and replicas coming up as events
and the arrivals between them in order; :class:`_Fleet` holds the replicas and applies the
*Queues* and *Fleet plan* rules of ``accelsim.engines.des._serving``.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Generator
from operator import attrgetter
from typing import Any

import simpy

from accelsim.engines.des._serving_replica import (
    _DRAINING,
    _SERVING,
    _STOPPED,
    _Counter,
    _Replica,
    _Requests,
)
from accelsim.engines.des._serving_types import ReplicaModel, Router
from accelsim.models.serving import scalar_iteration_run, scalar_iteration_seconds


class _Fleet:
    """The router and the fleet plan: replicas by index, the serving ones, waiting requests."""

    def __init__(
        self,
        model: ReplicaModel,
        req: _Requests,
        counter: _Counter,
        router: Router,
        cold_start_hours: float,
        horizon_hours: float,
    ) -> None:
        self.horizon_hours = horizon_hours
        self.model, self.req, self.counter = model, req, counter
        self.seconds = scalar_iteration_seconds(model.cost)
        self.prepare = scalar_iteration_run(model.cost)
        self.least_loaded = router == "least_loaded"
        self.cold_start_hours = cold_start_hours
        self.replicas: list[_Replica] = []  # every replica ever provisioned, by index
        self.serving: list[_Replica] = []  # in index order
        self.starting: deque[tuple[float, _Replica]] = deque()  # (serves at [h], replica)
        self.waiting: deque[int] = deque()  # the router's queue: no replica serving
        self.turn = 0  # round-robin position

    def advance(self, hours: float) -> None:
        """Bring every replica's state to the instant ``hours`` (see :meth:`_Replica.advance`)."""
        for replica in self.replicas:
            replica.advance(hours)

    def arrive(self, first: int, hours: float) -> int:
        """Dispatch the requests arriving at ``hours`` from index ``first``; return the next.

        Only the replicas the router reads are brought to ``hours``: every serving one for
        ``least_loaded`` (their loads), the chosen one for ``round_robin``; the others are
        independent until the router's next instant, when :meth:`advance` catches them up.
        """
        req, capacity = self.req, self.model.kv_capacity_tokens
        arrivals, contexts = req.arrival_hours, req.contexts
        if self.least_loaded:
            for replica in self.serving:
                if replica.end < hours:  # most are mid-iteration: skip the call
                    replica.advance(hours)
        i, n = first, len(arrivals)
        while i < n and arrivals[i] == hours:
            if contexts[i] > capacity:
                req.rejected[i] = True
            else:
                self.dispatch(i, hours)
            i += 1
        return i

    def dispatch(self, request: int, hours: float) -> None:
        """Send a request to a serving replica's queue (or the router's, if none serve)."""
        serving = self.serving
        if not serving:
            self.waiting.append(request)
            return
        if self.least_loaded:
            replica = min(serving, key=_LOAD)  # first minimum: the lowest index
        else:
            replica = serving[self.turn % len(serving)]
            self.turn += 1
            replica.advance(hours)
        queue = replica.queue
        if not queue and replica.run_steps and replica.admits(request):
            replica.cut(hours)
        queue.append(request)
        replica.load += 1
        replica.wake(hours)

    def activate(self, replica: _Replica, hours: float) -> None:
        """A replica starts serving: it takes the router's waiting requests first."""
        replica.state = _SERVING
        self.serving.append(replica)  # newest replica has the highest index: order kept
        replica.wake(hours)
        waiting, self.waiting = self.waiting, deque()
        for request in waiting:
            self.dispatch(request, hours)

    def scale(self, wanted: int, hours: float) -> None:
        """Apply one hour's plan (see the module's *Fleet plan* rule)."""
        change = wanted - len(self.serving) - len(self.starting)
        warm = hours == 0.0 or self.cold_start_hours == 0.0
        for _ in range(max(change, 0)):
            replica = _Replica(
                len(self.replicas),
                self.model,
                self.seconds,
                self.prepare,
                self.req,
                self.counter,
                hours,
                self.horizon_hours,
            )
            self.replicas.append(replica)
            if warm:
                self.activate(replica, hours)
            else:
                self.starting.append((hours + self.cold_start_hours, replica))
        excess = max(-change, 0)
        while excess and self.starting:
            replica = self.starting.pop()[1]
            replica.state, replica.stop_hours = _STOPPED, hours
            excess -= 1
        if excess:
            self._drain(self.serving[-excess:], hours)

    def _drain(self, replicas: list[_Replica], hours: float) -> None:
        """Stop routing to ``replicas``; hand their queues back to the router in order."""
        returned: list[int] = []
        for replica in replicas:
            replica.state = _DRAINING
            self.serving.remove(replica)
            returned.extend(replica.queue)
            replica.load -= len(replica.queue)
            replica.queue.clear()
            replica.wake(hours)  # an idle replica wakes to stop
        for request in sorted(returned):
            self.dispatch(request, hours)


_LOAD = attrgetter("load")


def _route(
    env: simpy.Environment, fleet: _Fleet, plan: list[int], horizon_hours: float
) -> Generator[simpy.Event, Any, None]:
    """The router's process: plan hours and replicas coming up as SimPy events, the arrivals
    between them in order (no event each: replicas change only at the router's instants and
    their own boundaries, which :meth:`_Replica.advance` plays in time order)."""
    req, counter = fleet.req, fleet.counter
    arrivals = req.arrival_hours
    n = len(arrivals)
    i = hour = 0
    while True:
        next_hour = float(hour) if hour < len(plan) else math.inf
        next_up = fleet.starting[0][0] if fleet.starting else math.inf
        t = min(next_hour, next_up, horizon_hours)
        while i < n and arrivals[i] < t:  # ties: the plan, then replicas up, then arrivals
            counter.events += 1
            if counter.events > counter.max_events:
                raise counter.over()
            i = fleet.arrive(i, arrivals[i])
        if t >= horizon_hours:
            return
        if t > env.now:
            counter.events += 1
            yield env.timeout(t - env.now)
        fleet.advance(t)
        if next_hour == t:
            fleet.scale(plan[hour], t)
            hour += 1
        else:
            fleet.activate(fleet.starting.popleft()[1], t)
