"""One replica of the serving DES: its queue, admitted sequences and batch iterations.

Plus the per-request records and the event budget the replicas and the router share. The
rules a replica follows (admission, iterations, decode stretches) are in
``accelsim.engines.des._serving``.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections import deque
from collections.abc import Callable

from accelsim.engines.des._serving_types import _SECONDS_PER_HOUR, ReplicaModel, RequestStream

_STARTING, _SERVING, _DRAINING, _STOPPED = range(4)
# Shortest decode run (iterations to the next completion) timed as one closed-form stretch:
# from 2 iterations on, one stretch costs less than playing them one by one (measured).
_MIN_RUN = 2


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


def _bad_iteration(seconds: float, decode: int, prefill: int) -> RuntimeError:
    return RuntimeError(
        f"iteration time must be > 0 s, got {seconds!r} (decode batch {decode}, "
        f"{prefill} prefill tokens): check the IterationCost coefficients"
    )
