"""The event budget of a cluster DES run: a run stops, with a clear error, after a set
number of events rather than running without end.

Every state change of the cluster DES is a SimPy event (an arrival, an attempt's end, a
chip failure or repair, a preemption or return, a delivery, a withdrawal). A run of a
scenario that :func:`~accelsim.engines.cluster._checks.check_runnable` accepts needs at most
a few tens of millions of them: at most ``MAX_JOBS`` (10^6) jobs, each an arrival and an end
per attempt, and at most ``MAX_EXPECTED_STRIKES`` (10^7) expected chip failures and
preemptions, each a strike and a return. :data:`MAX_EVENTS` sits above that, as the
serving request DES's ``max_events`` does; with the queue index
(:mod:`~accelsim.engines.cluster.des._queue`) an event costs microseconds to tens of
microseconds, so the budget bounds a run to minutes, whatever the input.
"""

from __future__ import annotations

import simpy

from accelsim.errors import AccelsimError

MAX_EVENTS = 50_000_000
"""Events a cluster DES run may play by default (``max_events`` of :func:`~accelsim.engines.
cluster.des.run`). [count]"""


class ClusterBudgetError(AccelsimError, RuntimeError):
    """A cluster DES run needed more than its ``max_events`` events before its horizon."""

    def __init__(
        self, max_events: int, stopped_hours: float, horizon_hours: float, queued: int
    ) -> None:
        self.max_events = max_events
        self.stopped_hours = stopped_hours
        self.horizon_hours = horizon_hours
        super().__init__(
            f"cluster DES stopped after max_events={max_events:,} events at "
            f"{stopped_hours:,.4g} h of its {horizon_hours:,.4g} h horizon ({queued:,} jobs "
            "queued): the horizon holds more arrivals, attempts, failures and repairs than "
            "allowed; shorten the horizon, lower the load or the failure rates, or raise "
            "max_events"
        )


def play(env: simpy.Environment, horizon_hours: float, max_events: int) -> bool:
    """Process the events before ``horizon_hours``, at most ``max_events`` of them; whether
    the run reached its horizon.

    The same events, in the same order, as ``env.run(until=horizon_hours)`` (which stops
    before any event at the horizon itself); the clock then stands at the horizon.
    """
    step, peek = env.step, env.peek
    for _ in range(max_events):
        if peek() >= horizon_hours:
            break
        step()
    else:
        if peek() < horizon_hours:
            return False
    env.run(until=horizon_hours)  # no event left before it: moves the clock only
    return True


__all__ = ["MAX_EVENTS", "ClusterBudgetError", "play"]
