"""One replica of the serving DES: its queue, admitted sequences and batch iterations.

Plus the per-request records and the event budget the replicas and the router share. The
rules a replica follows (admission, iterations, runs) are in
``accelsim.engines.des._serving``.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Callable
from heapq import heappop, heappush

from accelsim.engines.des._serving_types import _SECONDS_PER_HOUR, ReplicaModel, RequestStream
from accelsim.models.serving import IterationRun, run_seconds

_STARTING, _SERVING, _DRAINING, _STOPPED = range(4)
# Shortest run (decode-only iterations to the next completion, or full prefill chunks of one
# prompt) timed in closed form: from 2 iterations on, one run costs less than playing them
# one by one (measured).
_MIN_RUN = 2
_NOT_YET = -1.0  # a first-token or completion time not reached (times are >= 0) [h]


class _Requests:
    """Per-request inputs and records, as Python lists (the hot loop reads plain ints).

    ``first_hours`` / ``done_hours`` hold ``_NOT_YET`` until the first token / completion,
    so they also say whether it happened; ``generated`` is written only for the sequences
    still decoding at the horizon (a completed one generated its ``outputs``).
    """

    __slots__ = (
        "arrival_hours",
        "contexts",
        "done_hours",
        "first_hours",
        "generated",
        "inputs",
        "joined_step",
        "outputs",
        "rejected",
    )

    def __init__(self, requests: RequestStream) -> None:
        n = len(requests.arrival_hours)
        self.arrival_hours: list[float] = requests.arrival_hours.tolist()
        self.inputs: list[int] = requests.input_tokens.tolist()
        self.outputs: list[int] = requests.output_tokens.tolist()
        self.contexts: list[int] = (requests.input_tokens + requests.output_tokens).tolist()
        self.first_hours = [_NOT_YET] * n
        self.done_hours = [_NOT_YET] * n
        self.generated = [0] * n
        self.joined_step = [0] * n  # decode step of the replica when the sequence joined
        self.rejected = [False] * n


class _Counter:
    """Events created so far, against the run's budget."""

    __slots__ = ("events", "iterations", "max_events", "tokens")

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
    A *run* is a stretch of iterations in which nothing joins or leaves the batch: decode-only
    iterations up to the next completion, or (chunked prefill) the full chunks of the head
    prompt before the one that ends it (each the budget less the decode batch, constant
    along the run), up to the next completion; the prompts behind the head wait for its
    last chunk either way. Its terms are prepared once at its start
    (``run``, :func:`~accelsim.models.serving.scalar_iteration_run`) and it is one state
    change, cut short at a boundary when an admissible request arrives (:meth:`cut`).
    """

    __slots__ = (
        "admitted",
        "begun",
        "busy_hours",
        "chunk",
        "contexts",
        "counter",
        "decode_batch",
        "decode_only",
        "decode_steps",
        "decoding",
        "end",
        "finishing",
        "horizon_hours",
        "index",
        "inputs",
        "iteration_decode",
        "kv_capacity",
        "kv_tokens",
        "load",
        "max_batch",
        "outputs",
        "prefilling",
        "prepare",
        "queue",
        "req",
        "reserved",
        "run",
        "run_prefill",
        "run_steps",
        "seconds",
        "start_hours",
        "state",
        "stop_hours",
    )

    def __init__(
        self,
        index: int,
        model: ReplicaModel,
        seconds: Callable[[float, float, float, float], float],
        prepare: Callable[[int, int, int, float], IterationRun],
        req: _Requests,
        counter: _Counter,
        start_hours: float,
        horizon_hours: float,
    ) -> None:
        self.index, self.req, self.counter = index, req, counter
        self.inputs, self.outputs, self.contexts = req.inputs, req.outputs, req.contexts
        self.seconds, self.prepare = seconds, prepare
        self.kv_capacity = float(model.kv_capacity_tokens)
        self.max_batch = int(model.max_batch)
        self.chunk = int(model.prefill_chunk_tokens)
        self.decode_only = bool(model.decode_only)
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
        self.begun = 0.0  # start of the iteration or run in progress [h]
        self.end = math.inf  # its end [h]; inf: idle, nothing in progress
        self.run_steps = 0  # iterations of the run in progress (0: none)
        self.run_prefill = 0  # prompt tokens it prefills per iteration (0: decode only)
        self.run: IterationRun = (0.0, 0.0, 0.0, 0.0, 0, 0.0)  # its prepared terms

    def advance(self, hours: float) -> None:
        """Play every boundary before ``hours``: end the iteration or run, start the next.

        Boundaries at ``hours`` itself wait: the router acts first at an instant, so an
        arrival exactly at a boundary is admitted there. At each boundary, in the order of
        the rules in ``accelsim.engines.des._serving``: (a) the iteration or run ending now
        emits its tokens (:meth:`_end_run`, :meth:`_end_iteration`), (b) admission
        (:meth:`_admit`), (c) the next run, iteration, idle or stop (:meth:`_start_next`,
        :meth:`_start_iteration`).
        """
        queue, now = self.queue, self.end
        while now < hours:
            self.busy_hours += now - self.begun
            if self.run_steps:
                self._end_run(now)
            elif self.iteration_decode or self.finishing:
                self._end_iteration(now)
            if queue and self.state == _SERVING:
                self._admit(now)
            self._start_next(now)
            now = self.end

    def _end_run(self, now: float) -> None:
        """(a) The run ending at ``now``: its iterations' tokens and prefill, then the
        completions (a run completes sequences only at its end)."""
        steps, batch, counter = self.run_steps, self.decode_batch, self.counter
        counter.iterations += steps
        counter.tokens += batch * steps
        self.decode_steps += steps
        self.kv_tokens += batch * steps
        if self.run_prefill:
            self.prefilling[0][1] += self.run_prefill * steps
        self.run_steps = 0
        if self.decoding and self.decoding[0][0] <= self.decode_steps:
            self._complete(now)

    def _end_iteration(self, now: float) -> None:
        """(a) The single iteration ending at ``now``: a token for each decoding sequence,
        the completions, then the first token of each prompt whose prefill it ended (a
        one-token request completes there, the others join the batch)."""
        decode = self.iteration_decode
        if decode:
            self.counter.tokens += decode
            self.decode_steps += 1
            self.kv_tokens += decode
            self.iteration_decode = 0  # a wake-up boundary after it emits nothing
            if self.decoding[0][0] <= self.decode_steps:
                self._complete(now)
        finishing = self.finishing
        if not finishing:
            return
        req, steps = self.req, self.decode_steps
        first_hours, outputs, contexts = req.first_hours, self.outputs, self.contexts
        self.counter.tokens += len(finishing)
        for request in finishing:
            first_hours[request] = now
            output = outputs[request]
            if output == 1:
                req.done_hours[request] = now
                self.reserved -= contexts[request]
                self.admitted -= 1
                self.load -= 1
            else:
                self._join(request, steps)
        finishing.clear()

    def _join(self, request: int, steps: int) -> None:
        """``request`` joins the decode batch at decode step ``steps``, its prompt cached."""
        output = self.outputs[request]
        self.req.joined_step[request] = steps
        heappush(self.decoding, (steps + output - 1, request))
        self.decode_batch += 1
        self.kv_tokens += self.inputs[request] + 1

    def _complete(self, now: float) -> None:
        """Retire the sequences whose last decode step is the current one, at ``now``."""
        heap, steps = self.decoding, self.decode_steps
        contexts, done_hours = self.contexts, self.req.done_hours
        freed = count = 0
        while heap and heap[0][0] <= steps:
            request = heappop(heap)[1]
            freed += contexts[request]
            count += 1
            done_hours[request] = now
        self.kv_tokens -= freed
        self.reserved -= freed
        self.decode_batch -= count
        self.admitted -= count
        self.load -= count

    def _admit(self, now: float) -> None:
        """(b) Admission at ``now``: FCFS while the batch and the KV reservation allow;
        head-of-line (nothing skips the head). A ``decode_only`` replica's request arrives
        with its prompt's KV cache, so it joins the decode batch at once (its first token
        counts now); otherwise its prompt waits for prefill."""
        queue, contexts = self.queue, self.contexts
        max_batch, capacity = self.max_batch, self.kv_capacity
        while queue and self.admitted < max_batch:
            context = contexts[queue[0]]
            if self.reserved + context > capacity:
                break
            self.admitted += 1
            self.reserved += context
            request = queue.popleft()
            if self.decode_only:
                self.req.first_hours[request] = now
                self._join(request, self.decode_steps)
            else:
                self.prefilling.append([request, 0])

    def _start_next(self, now: float) -> None:
        """(c) At ``now``, start the next run, else one iteration, else idle (a draining
        replica stops).

        A run is two or more iterations in which nothing joins or leaves: the head prompt's
        full chunks before its last, or decode-only iterations, either to the next
        completion. Its terms are prepared once and its end is in closed form; the events it
        counts stop at the iteration the horizon cuts.
        """
        prefilling, batch, steps = self.prefilling, self.decode_batch, 0
        if prefilling:
            # the prompt room of an iteration: the budget less a token per decoding sequence
            self.run_prefill = room = self.chunk - batch if self.chunk else 0
            if room:
                head = prefilling[0]
                steps = (self.inputs[head[0]] - head[1] - 1) // room
                if batch and self.decoding[0][0] - self.decode_steps < steps:
                    steps = self.decoding[0][0] - self.decode_steps
        elif batch:
            self.run_prefill = 0
            steps = self.decoding[0][0] - self.decode_steps
        if steps < _MIN_RUN:
            if prefilling or batch:
                self._start_iteration(now)
            else:
                self.end = math.inf
                if self.state == _DRAINING:
                    self.state = _STOPPED
                    self.stop_hours = now
            return
        prefill = self.run_prefill
        attends = prefilling[0][1] + prefill / 2.0 if prefill else 0.0
        self.run = run = self.prepare(batch, self.kv_tokens, prefill, attends)
        length = run_seconds(run, steps)
        if not length > 0.0:
            raise _bad_iteration(length, batch, prefill)
        self.begun, self.run_steps = now, steps
        self.end = now + length / _SECONDS_PER_HOUR  # = self._run_end(steps)
        counter = self.counter
        if self.end >= self.horizon_hours:
            counter.events += self._boundary(self.horizon_hours)
        else:
            counter.events += steps
        if counter.events > counter.max_events:
            raise counter.over()

    def _start_iteration(self, now: float) -> None:
        """Start one iteration at ``now``, timed by the iteration formula: the decode batch
        (none prefill-first) and the prompt tokens it prefills, with the sum over them of
        the context each attends to. Prefill-first (``chunk`` 0) takes every admitted prompt
        whole; chunked prefill takes them FCFS up to ``chunk`` tokens less one per decoding
        sequence (the iteration's token budget, the decodes first). The prompts it ends
        go to ``finishing``."""
        counter = self.counter
        counter.events += 1
        if counter.events > counter.max_events:
            raise counter.over()
        counter.iterations += 1
        prefilling, chunk = self.prefilling, self.chunk
        decode = self.decode_batch if chunk or not prefilling else 0
        prefill, pairs = 0, 0.0
        if prefilling:
            inputs, finishing = self.inputs, self.finishing
            if not chunk:
                for request, _ in prefilling:
                    size = inputs[request]
                    prefill += size
                    pairs += size * (size / 2.0)
                    finishing.append(request)
                prefilling.clear()
            budget = chunk - decode  # one token of the budget per decoding sequence first
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
        self.iteration_decode = decode
        length = self.seconds(
            decode, prefill, self.kv_tokens if decode else 0, pairs / prefill if prefill else 0.0
        )
        if not length > 0.0:
            raise _bad_iteration(length, decode, prefill)
        self.begun = now
        self.end = now + length / _SECONDS_PER_HOUR

    def wake(self, hours: float) -> None:
        """Idle until now: a boundary at ``hours`` (after the router's other actions there)."""
        if self.end == math.inf and self.state != _STOPPED:
            self.begun = self.end = hours

    def cut(self, hours: float) -> None:
        """An admissible request arrived at ``hours``: the run ends at the first boundary at
        or after it (an arrival exactly at a boundary joins there)."""
        self.run_steps = self._boundary(hours)
        self.end = self._run_end(self.run_steps)

    def _run_end(self, steps: int) -> float:
        """End of the run's first ``steps`` iterations. [h]"""
        return self.begun + run_seconds(self.run, steps) / _SECONDS_PER_HOUR

    def _boundary(self, hours: float) -> int:
        """The run's first iteration (from 1) that ends at or after ``hours``.

        Iterations lengthen along a run (KV and prefill context grow), so the cumulative
        time is convex and the chord from the run's start to its end guesses the answer to
        within an iteration or two: two closed-form evaluations check it; bisection
        (O(log k)) covers a miss.
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

    def admits(self, request: int) -> bool:
        """Whether ``request`` would be admitted now (batch and KV room)."""
        return (
            self.admitted < self.max_batch
            and self.reserved + self.contexts[request] <= self.kv_capacity
        )

    def close(self, horizon_hours: float) -> None:
        """At the horizon: the cut iteration or run; tokens of the sequences decoding."""
        req, counter = self.req, self.counter
        if self.end < math.inf:  # in progress at the horizon: begun before it, ends at or after
            if self.run_steps:  # a run: count the iterations that ended before it
                # (its last iteration, the one the horizon cuts, is never one of them)
                done = min(self._boundary(horizon_hours) - 1, self.run_steps - 1)
                # they complete nothing: a run completes sequences only at its end
                counter.iterations += done + 1  # and the cut one, begun before the horizon
                counter.tokens += self.decode_batch * done
                self.decode_steps += done
                self.run_steps = 0
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
