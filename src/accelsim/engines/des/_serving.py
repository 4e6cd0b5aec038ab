"""Request-level discrete-event simulation of LLM serving: routing, continuous batching.

Continuous batching at iteration granularity: every batch iteration of every replica is
a state change at its own boundary time, never per token; a decode-only stretch of
``_MIN_RUN`` or more iterations up to the next completion is one state change, cut short at
the next iteration boundary when an admissible request arrives. An iteration lasts
:func:`accelsim.models.serving.iteration_seconds` of its batch (evaluated by
:func:`~accelsim.models.serving.scalar_iteration_seconds`, the same formula on floats, bit
for bit); a decode stretch lasts the closed-form sum of those iterations
(:func:`~accelsim.models.serving.scalar_decode_stretch_seconds`), equal to the iteration
by iteration sum to float rounding (~1e-15 relative), not bit for bit.

One SimPy process, the router, drives in time order the fleet plan (one decision at the
start of every hour) and cold-started replicas coming up, one event each, and between those
the pre-drawn arrivals, in order, without an event each. Replicas are not processes: a
replica changes only at its own iteration boundaries and when the router acts on it, and
its boundaries depend on nothing else, so the router plays them (in time order, each at its
own time) up to an instant just before it reads or changes that replica there. This is the
same trace a process per replica would give, without a SimPy event per iteration or per
arrival. No RNG inside: the caller draws the requests.

Rules (the contract the fast path and the tests rely on)
--------------------------------------------------------
*Queues.* Each request is dispatched on arrival to one *serving* replica, into that
replica's FIFO queue: ``least_loaded`` picks the replica with the fewest outstanding
requests (queued + admitted), ties to the lowest replica index; ``round_robin`` cycles
over the serving replicas in index order. With no serving replica (zero-replica hours,
cold start) requests wait in the router's FIFO queue and are dispatched, in arrival order,
as soon as one comes up.

*Admission (reserve-on-admit).* At the start of each iteration a serving replica admits
requests from the head of its queue, in order, while fewer than ``max_batch`` sequences
are admitted and the head's full context (input + output tokens) fits in the KV capacity
not yet reserved; the head blocks those behind it (FCFS, no skipping). A sequence keeps its
reservation until it completes, so KV never overflows and nothing is preempted. A request
with ``input + output > kv_capacity_tokens`` can never fit: it is rejected on arrival
(``ServingTrace.rejected``), never queued, and counted as never served.

*Iterations.* With ``prefill_chunk_tokens = C > 0`` (chunked prefill) every iteration
decodes one token of every sequence past its prefill and prefills up to ``C`` prompt
tokens of admitted sequences in admission order (a prompt may span iterations; several
short prompts may share one). With ``C = 0`` (prefill-first) an iteration that starts with
admitted-but-unprefilled prompts prefills all of them whole and decodes nothing; decoding
resumes in the next iteration. A prompt's last prefill iteration emits its first output
token at its end (TTFT); each later iteration in which it decodes emits one more; it
completes at the end of the iteration that emits its ``output_tokens``-th token.

*Iteration time.* ``iteration_seconds(cost, decode_batch, prefill_tokens, kv_tokens,
prefill_context_tokens)`` with ``kv_tokens`` the tokens cached by the decoding sequences
(prompt + tokens emitted so far, summed) and ``prefill_context_tokens`` the mean context a
prefilled token attends to (a chunk of ``c`` tokens after ``p`` prefilled ones counts
``p + c/2``; a whole prompt ``input/2``, as in the fast path).

*Fleet plan.* At the start of hour ``h`` the router compares ``replicas_per_hour[h]`` with
the replicas serving or starting. Scale-up provisions new replicas (new, higher indices)
that serve ``cold_start_hours`` later; the fleet of hour 0 serves from time 0 (warm).
Scale-down first cancels replicas still starting (newest first), then drains serving ones
(highest index first): a draining replica takes no new requests (its queue goes back to
the router, in arrival order), finishes the sequences it admitted, then stops. A replica
is provisioned (``replica_hours``) from its scale-up decision until it stops or the
horizon.

*Ties.* At equal times the router handles the hour's plan first, then replicas coming up,
then arrivals (several requests with the same arrival time are dispatched together, in
index order), and only then do replicas end the iterations that end at that instant: an
arrival exactly at a boundary is admitted there, and the router's loads there are those
before the boundary's completions. Same inputs, same trace.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections import deque
from collections.abc import Callable, Generator
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Literal

import numpy as np
import simpy

from accelsim._typing import BoolArray, FloatArray, IntArray
from accelsim.models.serving import (
    IterationCost,
    scalar_decode_stretch_seconds,
    scalar_iteration_seconds,
)

_SECONDS_PER_HOUR = 3600.0
_STARTING, _SERVING, _DRAINING, _STOPPED = range(4)
_ROUTERS = ("least_loaded", "round_robin")
# Shortest decode run (iterations to the next completion) timed as one closed-form stretch:
# from 2 iterations on, one stretch costs less than playing them one by one (measured).
_MIN_RUN = 2

Router = Literal["least_loaded", "round_robin"]


@dataclass(frozen=True)
class ReplicaModel:
    """What one replica is: iteration coefficients, KV capacity, scheduler limits."""

    cost: IterationCost
    """Scalar (0-d) coefficients of :func:`~accelsim.models.serving.iteration_seconds`."""
    kv_capacity_tokens: float
    """KV-cache tokens one replica holds (> 0). [tokens]"""
    max_batch: int
    """Most sequences admitted at once, prefilling or decoding (>= 1). [count]"""
    prefill_chunk_tokens: int
    """Prompt tokens prefilled per iteration (chunked prefill); 0 = whole prompts,
    prefill-first (no chunking). [tokens]"""


@dataclass(frozen=True)
class RequestStream:
    """Requests drawn by the caller (the DES draws nothing)."""

    arrival_hours: FloatArray
    """Arrival times, float64, sorted ascending, within ``[0, horizon)``. [h]"""
    input_tokens: IntArray
    """Prompt lengths, int64 >= 1. [tokens]"""
    output_tokens: IntArray
    """Output lengths, int64 >= 1. [tokens]"""


@dataclass(frozen=True)
class ReplicaPlan:
    """Replicas wanted hour by hour, and how long a new one takes to serve."""

    replicas_per_hour: IntArray
    """Replicas wanted in each hour, int64 >= 0, length ``ceil(horizon_hours)``. [count]"""
    cold_start_hours: float = 0.0
    """Time from a scale-up decision to the new replica serving (>= 0). [h]"""


@dataclass(frozen=True)
class ServingTrace:
    """Per-request latencies and fleet usage of one :func:`simulate_serving` run.

    Every array has one entry per request. A request is exactly one of: completed;
    in flight at the horizon (queued, admitted or decoding); rejected (never fits).
    Latencies are 0 where they are not meaningful (never nan).
    """

    ttft_s: FloatArray
    """Arrival to first output token (end of its last prefill iteration); 0 where not
    ``first_token``. [s]"""
    tpot_s: FloatArray
    """(Completion − first token) / (output_tokens − 1); 0 for 1-token outputs and where not
    ``completed``. [s]"""
    e2e_s: FloatArray
    """Arrival to completion; 0 where not ``completed``. [s]"""
    first_token: BoolArray
    """Got its first token before the horizon."""
    completed: BoolArray
    """Finished before the horizon."""
    replica_hours: float
    """Provisioned replica-hours, cold start and draining included. [h]"""
    busy_replica_hours: float
    """Replica-hours spent in iterations (an iteration cut by the horizon up to it). [h]"""
    replicas_peak: int
    """Most replicas provisioned at once. [count]"""
    iterations: int
    """Batch iterations begun before the horizon, all replicas. [count]"""
    tokens_generated: IntArray
    """Output tokens each request received before the horizon (its ``output_tokens`` where
    ``completed``). [tokens]"""
    rejected: BoolArray
    """Never fits a replica (input + output > KV capacity): never queued, never served."""
    output_tokens_total: int
    """Output tokens emitted by all iterations, counted per iteration (equals
    ``tokens_generated.sum()``; kept apart as a conservation check). [tokens]"""


class _Requests:
    """Per-request inputs and records, as Python lists (the hot loop reads plain ints)."""

    def __init__(self, requests: RequestStream) -> None:
        n = len(requests.arrival_hours)
        self.arrival_hours: list[float] = requests.arrival_hours.tolist()
        self.inputs: list[int] = requests.input_tokens.tolist()
        self.outputs: list[int] = requests.output_tokens.tolist()
        self.contexts: list[int] = (requests.input_tokens + requests.output_tokens).tolist()
        self.first_hours = [0.0] * n
        self.done_hours = [0.0] * n
        self.first_token = [False] * n
        self.completed = [False] * n
        self.generated = [0] * n
        self.joined_step = [0] * n  # decode step of the replica when the sequence joined
        self.rejected = [False] * n


class _Counter:
    """Events created so far, against the run's budget."""

    def __init__(self, max_events: int) -> None:
        self.events = 0
        self.max_events = max_events
        self.iterations = 0
        self.tokens = 0

    def over(self) -> RuntimeError:
        return RuntimeError(
            f"serving DES stopped after max_events={self.max_events:,} events "
            f"({self.iterations:,} batch iterations): the horizon holds more iterations "
            "and arrivals than allowed; raise max_events or shorten the horizon"
        )


class _Replica:
    """One replica: its queue, its admitted sequences, and its batch iterations.

    Not a SimPy process: between two router instants nothing outside touches a replica, so
    its iterations are played when the router next needs its state (:meth:`advance`), each
    at its own boundary time, in order. ``end`` is the boundary of the iteration (or decode
    run) in progress, ``inf`` when idle; a wake-up is a boundary at the instant it happens.
    """

    __slots__ = (
        "admitted",
        "begun",
        "busy_hours",
        "chunk",
        "counter",
        "decode_batch",
        "decode_steps",
        "decoding",
        "end",
        "finishing",
        "horizon_hours",
        "index",
        "iteration_decode",
        "kv_capacity",
        "kv_tokens",
        "load",
        "max_batch",
        "prefilling",
        "queue",
        "req",
        "reserved",
        "run_batch",
        "run_kv",
        "run_steps",
        "seconds",
        "start_hours",
        "state",
        "stop_hours",
        "stretch",
    )

    def __init__(
        self,
        index: int,
        model: ReplicaModel,
        seconds: Callable[[float, float, float, float], float],
        stretch: Callable[[int, int, int], float],
        req: _Requests,
        counter: _Counter,
        start_hours: float,
        horizon_hours: float,
    ) -> None:
        self.index, self.req, self.counter = index, req, counter
        self.seconds, self.stretch = seconds, stretch
        self.kv_capacity = float(model.kv_capacity_tokens)
        self.max_batch = int(model.max_batch)
        self.chunk = int(model.prefill_chunk_tokens)
        self.start_hours = start_hours
        self.stop_hours = math.inf
        self.horizon_hours = horizon_hours
        self.state = _STARTING
        self.queue: deque[int] = deque()  # dispatched, not admitted (request indices)
        self.prefilling: deque[list[int]] = deque()  # [request, prompt tokens prefilled]
        self.decoding: list[tuple[int, int]] = []  # heap of (last decode step, request)
        self.finishing: list[int] = []  # prompts whose prefill ends with this iteration
        self.load = 0  # outstanding requests: queued + admitted
        self.admitted = self.decode_batch = self.decode_steps = self.iteration_decode = 0
        self.kv_tokens = 0  # tokens cached by the decoding sequences
        self.reserved = 0  # full contexts of the admitted sequences
        self.busy_hours = 0.0
        self.begun = 0.0  # start of the iteration or decode run in progress [h]
        self.end = math.inf  # its end [h]; inf: idle, nothing in progress
        # the decode run in progress: batch, KV tokens, iterations (0: none)
        self.run_batch = self.run_kv = self.run_steps = 0

    def advance(self, hours: float) -> None:
        """Play every boundary before ``hours``: end the iteration or run, start the next.

        Boundaries at ``hours`` itself wait: the router acts first at an instant, so an
        arrival exactly at a boundary is admitted there.
        """
        while self.end < hours:
            now = self.end
            self.busy_hours += now - self.begun
            if self.run_steps:
                self._end_run(self.run_steps, now)
            else:
                self._end(now)
            self._next(now)

    def wake(self, hours: float) -> None:
        """Idle until now: a boundary at ``hours`` (after the router's other actions there)."""
        if self.end == math.inf and self.state != _STOPPED:
            self.begun = self.end = hours

    def _next(self, now: float) -> None:
        """At a boundary: admit, then start an iteration or a decode run, idle, or stop."""
        if self.queue and self.state == _SERVING:
            self._admit()
        if self.prefilling or (
            self.decode_batch and self.decoding[0][0] - self.decode_steps < _MIN_RUN
        ):
            counter = self.counter
            counter.events += 1
            if counter.events > counter.max_events:
                raise counter.over()
            counter.iterations += 1
            self.begun = now
            self.end = now + self._begin() / _SECONDS_PER_HOUR
        elif self.decode_batch:
            self._start_run(now)
        else:
            self.end = math.inf
            if self.state == _DRAINING:
                self.state = _STOPPED
                self.stop_hours = now

    def _start_run(self, now: float) -> None:
        """Decode-only iterations up to the next completion, timed as one closed-form stretch.

        Nothing changes the batch before that completion unless a request arrives that
        could be admitted: :meth:`cut` then ends the run at the next iteration boundary.
        """
        counter = self.counter
        steps = self.decoding[0][0] - self.decode_steps
        self.begun, self.run_batch, self.run_kv = now, self.decode_batch, self.kv_tokens
        self.run_steps = steps
        seconds = self.stretch(self.run_batch, self.run_kv, steps)
        if not seconds > 0.0:
            raise _bad_iteration(seconds, self.run_batch, 0)
        self.end = now + seconds / _SECONDS_PER_HOUR  # = self._run_end(steps), same floats
        # every iteration counts as an event, up to the one the horizon cuts
        over = self.end >= self.horizon_hours
        counter.events += self._boundary(self.horizon_hours) if over else steps
        if counter.events > counter.max_events:
            raise counter.over()

    def cut(self, hours: float) -> None:
        """An admissible request arrived at ``hours``: the run ends at the first boundary at
        or after it (an arrival exactly at a boundary joins there)."""
        self.run_steps = self._boundary(hours)
        self.end = self._run_end(self.run_steps)

    def _run_end(self, steps: int) -> float:
        """End of the run's first ``steps`` iterations. [h]"""
        return self.begun + self.stretch(self.run_batch, self.run_kv, steps) / _SECONDS_PER_HOUR

    def _boundary(self, hours: float) -> int:
        """The run's first iteration (from 1) that ends at or after ``hours``.

        Iterations lengthen along a run (KV grows), so the cumulative time is convex and the
        chord from the run's start to its end guesses the answer to within an iteration or
        two: two closed-form evaluations check it; bisection (O(log k)) covers a miss.
        """
        steps, run_end = self.run_steps, self._run_end
        ends = range(1, steps + 1)
        share = (hours - self.begun) / (self.end - self.begun)
        guess = min(max(math.ceil(steps * share), 1), steps)
        if run_end(guess) >= hours:
            if guess == 1 or run_end(guess - 1) < hours:
                return guess
            return bisect.bisect_left(ends, hours, 0, guess - 2, key=run_end) + 1
        if guess == steps or run_end(guess + 1) >= hours:
            return guess + 1
        return bisect.bisect_left(ends, hours, guess + 1, steps, key=run_end) + 1

    def _end_run(self, steps: int, now: float) -> None:
        """Account ``steps`` decode-only iterations ending at ``now``; complete sequences."""
        decode = self.decode_batch
        self.run_steps = 0
        self.counter.iterations += steps
        self.counter.tokens += decode * steps
        self.decode_steps += steps
        self.kv_tokens += decode * steps
        heap, contexts = self.decoding, self.req.contexts
        while heap and heap[0][0] <= self.decode_steps:
            request = heapq.heappop(heap)[1]
            self.kv_tokens -= contexts[request]
            self.decode_batch -= 1
            self._complete(request, now)

    def admits(self, request: int) -> bool:
        """Whether ``request`` would be admitted now (batch and KV room)."""
        return (
            self.admitted < self.max_batch
            and self.reserved + self.req.contexts[request] <= self.kv_capacity
        )

    def _admit(self) -> None:
        """Admit queued requests in order while the batch and the KV reservation allow."""
        queue, contexts = self.queue, self.req.contexts
        while queue and self.admitted < self.max_batch:
            context = contexts[queue[0]]
            if self.reserved + context > self.kv_capacity:
                return  # head-of-line: FCFS, nothing skips the head
            self.prefilling.append([queue.popleft(), 0])
            self.admitted += 1
            self.reserved += context

    def _begin(self) -> float:
        """Admit, plan this iteration's prefill and decode, return its length. [s]"""
        prefilling, inputs = self.prefilling, self.req.inputs
        finishing: list[int] = []
        prefill = 0
        pairs = 0.0  # sum over prefilled tokens of the context each attends to
        if not prefilling:
            decode = self.decode_batch
        elif self.chunk == 0:  # prefill-first: every admitted prompt, whole, no decode
            decode = 0
            for request, _ in prefilling:
                tokens = inputs[request]
                prefill += tokens
                pairs += tokens * (tokens / 2.0)
                finishing.append(request)
            prefilling.clear()
        else:
            decode = self.decode_batch
            budget = self.chunk
            while prefilling and budget:
                entry = prefilling[0]
                request, done = entry
                left = inputs[request] - done
                take = left if left < budget else budget
                pairs += take * (done + take / 2.0)
                prefill += take
                budget -= take
                if take == left:
                    finishing.append(request)
                    prefilling.popleft()
                else:
                    entry[1] = done + take
        self.finishing = finishing
        self.iteration_decode = decode
        kv = self.kv_tokens if decode else 0
        context = pairs / prefill if prefill else 0.0
        seconds = self.seconds(decode, prefill, kv, context)
        if not seconds > 0.0:
            raise _bad_iteration(seconds, decode, prefill)
        return seconds

    def _end(self, now: float) -> None:
        """Emit the iteration's tokens: complete finished sequences, start decoding new ones."""
        req = self.req
        decode, finishing = self.iteration_decode, self.finishing
        self.iteration_decode = 0  # a wake-up boundary after it emits nothing
        self.counter.tokens += decode + len(finishing)
        heap = self.decoding
        if decode:
            self.decode_steps = step = self.decode_steps + 1
            self.kv_tokens += decode
            while heap and heap[0][0] == step:
                request = heapq.heappop(heap)[1]
                self.kv_tokens -= req.contexts[request]
                self.decode_batch -= 1
                self._complete(request, now)
        if not finishing:
            return
        step, outputs, first_hours = self.decode_steps, req.outputs, req.first_hours
        for request in finishing:
            first_hours[request] = now
            req.first_token[request] = True
            output = outputs[request]
            if output == 1:
                self._complete(request, now)
            else:
                req.joined_step[request] = step
                heapq.heappush(heap, (step + output - 1, request))
                self.decode_batch += 1
                self.kv_tokens += req.inputs[request] + 1
        self.finishing = []

    def _complete(self, request: int, now: float) -> None:
        req = self.req
        req.done_hours[request] = now
        req.completed[request] = True
        req.generated[request] = req.outputs[request]
        self.reserved -= req.contexts[request]
        self.admitted -= 1
        self.load -= 1

    def close(self, horizon_hours: float) -> None:
        """At the horizon: the cut iteration or run; tokens of the sequences decoding."""
        req = self.req
        if self.end < math.inf:  # in progress at the horizon: begun before it, ends at or after
            if self.run_steps:  # a decode run: count the iterations that ended before it
                # (its last iteration, the one the horizon cuts, is never one of them)
                done = min(self._boundary(horizon_hours) - 1, self.run_steps - 1)
                ended = self._run_end(done) if done else self.begun
                self._end_run(done, ended)  # completes nothing: a run completes at its end
                self.counter.iterations += 1  # the cut iteration, begun before the horizon
            self.busy_hours += horizon_hours - self.begun
        for _, request in self.decoding:
            req.generated[request] = 1 + self.decode_steps - req.joined_step[request]

    def provisioned_hours(self, horizon_hours: float) -> float:
        return min(self.stop_hours, horizon_hours) - self.start_hours


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
        self.stretch = scalar_decode_stretch_seconds(model.cost)
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
                self.stretch,
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


def _bad_iteration(seconds: float, decode: int, prefill: int) -> RuntimeError:
    return RuntimeError(
        f"iteration time must be > 0 s, got {seconds!r} (decode batch {decode}, "
        f"{prefill} prefill tokens): check the IterationCost coefficients"
    )


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


def _check(model: ReplicaModel, requests: RequestStream, plan: ReplicaPlan, horizon: float) -> None:
    """Reject inputs that would make the trace meaningless, naming the field."""
    if not (math.isfinite(horizon) and horizon > 0.0):
        raise ValueError(f"horizon_hours must be finite and > 0, got {horizon}")
    if not model.kv_capacity_tokens > 0:
        raise ValueError(f"kv_capacity_tokens must be > 0, got {model.kv_capacity_tokens}")
    if model.max_batch < 1 or model.prefill_chunk_tokens < 0:
        raise ValueError("max_batch must be >= 1 and prefill_chunk_tokens >= 0")
    if any(np.size(getattr(model.cost, f)) != 1 for f in model.cost.__dataclass_fields__):
        raise ValueError("ReplicaModel.cost must hold one run's (0-d) coefficients")
    t = np.asarray(requests.arrival_hours, dtype=np.float64)
    if not (len(t) == len(requests.input_tokens) == len(requests.output_tokens)):
        raise ValueError("arrival_hours, input_tokens and output_tokens differ in length")
    if t.size and (t[0] < 0 or not t[-1] < horizon or np.any(np.diff(t) < 0)):
        raise ValueError("arrival_hours must be sorted ascending within [0, horizon_hours)")
    if np.any(requests.input_tokens < 1) or np.any(requests.output_tokens < 1):
        raise ValueError("input_tokens and output_tokens must be >= 1")
    hours = math.ceil(horizon)
    if len(plan.replicas_per_hour) != hours or np.any(plan.replicas_per_hour < 0):
        raise ValueError(
            f"replicas_per_hour must hold {hours} counts >= 0 (one per started hour of the "
            f"horizon), got {len(plan.replicas_per_hour)}"
        )
    if not (math.isfinite(plan.cold_start_hours) and plan.cold_start_hours >= 0):
        raise ValueError(f"cold_start_hours must be >= 0, got {plan.cold_start_hours}")


def simulate_serving(
    model: ReplicaModel,
    requests: RequestStream,
    plan: ReplicaPlan,
    horizon_hours: float,
    *,
    router: Router = "least_loaded",
    max_events: int = 50_000_000,
) -> ServingTrace:
    """Simulate requests on a fleet of identical replicas up to a horizon.

    Parameters
    ----------
    model : ReplicaModel
        One replica: iteration coefficients, KV capacity, batch and prefill limits.
    requests : RequestStream
        Pre-drawn arrivals [h] and token counts [tokens].
    plan : ReplicaPlan
        Replicas wanted per hour [count] and the cold start [h].
    horizon_hours : float
        End of the simulation (> 0). [h]
    router : {"least_loaded", "round_robin"}
        How an arriving request picks a replica (module docstring, *Queues*).
    max_events : int
        Most events before a ``RuntimeError``: batch iterations (each counted, also inside a
        decode run), arrival instants and router steps; bounds the CPU time of a run.

    Returns
    -------
    ServingTrace
        Per-request TTFT, TPOT, end-to-end latency [s] and status; fleet usage [h].

    Raises
    ------
    ValueError
        Inputs outside the contract (unsorted arrivals, tokens < 1, a plan of the wrong
        length, ...), naming the field.
    RuntimeError
        More than ``max_events`` events, or an iteration time that is not > 0.

    Notes
    -----
    The rules (queues, admission, chunked or prefill-first iterations, plan, ties) are in
    the module docstring. Cost: a few microseconds per batch iteration outside decode
    runs, per decode run and per arrival, one SimPy event per plan hour and cold start;
    memory: a few lists of one entry per request.

    Examples
    --------
    One replica, batch 1, two one-token requests at t = 0: the second waits for the first.

    >>> from accelsim.models.serving import iteration_cost
    >>> cost = iteration_cost(active_params=8e9, total_params=8e9, layers=32, d_model=4096,
    ...     weight_bytes=16e9, kv_bytes_per_token=131072.0, chips=1, peak_tflops=989,
    ...     hbm_tbps=3.35, interconnect_gbps=900, efficiency=0.5, overhead_seconds=0.005)
    >>> trace = simulate_serving(
    ...     ReplicaModel(cost, kv_capacity_tokens=10_000.0, max_batch=1, prefill_chunk_tokens=0),
    ...     RequestStream(np.zeros(2), np.array([100, 100]), np.array([1, 1])),
    ...     ReplicaPlan(np.array([1])), horizon_hours=1.0)
    >>> trace.completed.tolist(), round(float(trace.ttft_s[1] / trace.ttft_s[0]), 6)
    ([True, True], 2.0)
    """
    if router not in _ROUTERS:
        raise ValueError(f"router must be one of {_ROUTERS}, got {router!r}")
    _check(model, requests, plan, horizon_hours)
    env = simpy.Environment()
    req = _Requests(requests)
    counter = _Counter(max_events)
    fleet = _Fleet(model, req, counter, router, float(plan.cold_start_hours), horizon_hours)
    env.process(_route(env, fleet, plan.replicas_per_hour.tolist(), horizon_hours))
    env.run(until=horizon_hours)
    fleet.advance(horizon_hours)
    for replica in fleet.replicas:
        replica.close(horizon_hours)
    return _trace(req, fleet, counter, horizon_hours)


def _peak(fleet: _Fleet, horizon_hours: float) -> int:
    """Most replicas provisioned at once (a stop and a start at one instant: stop first)."""
    changes = sorted(
        [(r.start_hours, 1) for r in fleet.replicas]
        + [(r.stop_hours, -1) for r in fleet.replicas if r.stop_hours < horizon_hours]
    )
    running = peak = 0
    for _, step in changes:
        running += step
        peak = max(peak, running)
    return peak


def _trace(req: _Requests, fleet: _Fleet, counter: _Counter, horizon_hours: float) -> ServingTrace:
    arrival = np.asarray(req.arrival_hours, dtype=np.float64)
    first = np.asarray(req.first_hours, dtype=np.float64)
    done = np.asarray(req.done_hours, dtype=np.float64)
    outputs = np.asarray(req.outputs, dtype=np.int64)
    first_token = np.asarray(req.first_token, dtype=np.bool_)
    completed = np.asarray(req.completed, dtype=np.bool_)
    per_token = completed & (outputs > 1)
    decode_s = (done - first) * _SECONDS_PER_HOUR / np.maximum(outputs - 1, 1)
    return ServingTrace(
        ttft_s=np.where(first_token, (first - arrival) * _SECONDS_PER_HOUR, 0.0),
        tpot_s=np.where(per_token, decode_s, 0.0),
        e2e_s=np.where(completed, (done - arrival) * _SECONDS_PER_HOUR, 0.0),
        first_token=first_token,
        completed=completed,
        replica_hours=float(sum(r.provisioned_hours(horizon_hours) for r in fleet.replicas)),
        busy_replica_hours=float(sum(r.busy_hours for r in fleet.replicas)),
        replicas_peak=_peak(fleet, horizon_hours),
        iterations=counter.iterations,
        tokens_generated=np.asarray(req.generated, dtype=np.int64),
        rejected=np.asarray(req.rejected, dtype=np.bool_),
        output_tokens_total=counter.tokens,
    )


__all__ = [
    "ReplicaModel",
    "ReplicaPlan",
    "RequestStream",
    "ServingTrace",
    "simulate_serving",
]
