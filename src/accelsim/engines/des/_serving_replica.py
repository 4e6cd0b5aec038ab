"""One replica of the serving DES: its queue, admitted sequences and batch iterations.

Plus the per-request records and the event budget the replicas and the router share. The
rules a replica follows (admission, iterations, runs) are in
``accelsim.engines.des._serving``.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections import deque
from collections.abc import Callable

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
    prompt before the one that ends it, up to the next completion; the prompts behind the
    head wait for its last chunk either way. Its terms are prepared once at its start
    (``run``, :func:`~accelsim.models.serving.scalar_iteration_run`) and it is one state
    change, cut short at a boundary when an admissible request arrives (:meth:`cut`).
    """

    __slots__ = (
        "admitted",
        "begun",
        "busy_hours",
        "chunk",
        "counter",
        "decode_batch",
        "decode_only",
        "decode_steps",
        "decoding",
        "end",
        "finishing",
        "fixed",
        "horizon_hours",
        "index",
        "iteration_decode",
        "kv_capacity",
        "kv_tokens",
        "load",
        "max_batch",
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
        # what advance() reads and never rebinds, unpacked there in one statement (it runs
        # once per router instant per replica: its set-up is a fifth of the DES's work)
        self.fixed = (
            req.contexts, req.inputs, req.outputs, req.first_hours, req.done_hours,
            req.joined_step, self.decoding, self.queue, self.prefilling, seconds, prepare,
            heapq.heappush, heapq.heappop, self.chunk, self.max_batch, self.kv_capacity,
            counter,
        )  # fmt: skip

    def advance(self, hours: float) -> None:
        """Play every boundary before ``hours``: end the iteration or run, start the next.

        Boundaries at ``hours`` itself wait: the router acts first at an instant, so an
        arrival exactly at a boundary is admitted there. One loop over the boundaries with
        the state in locals (written back on the way out): at each, the iteration's tokens
        (completions, first tokens), admission, then the next run, iteration, idle or stop,
        as the module ``accelsim.engines.des._serving`` states the rules.
        """
        end = self.end
        if not end < hours:
            return
        (
            contexts, inputs, outputs, first_hours, done_hours, joined, heap, queue,
            prefilling, seconds, prepare, push, pop, chunk, max_batch, capacity, counter,
        ) = self.fixed  # fmt: skip
        events, max_events = counter.events, counter.max_events
        iterations, tokens = counter.iterations, counter.tokens
        begun, busy = self.begun, self.busy_hours
        run_steps, run_prefill = self.run_steps, self.run_prefill
        decode, finishing = self.iteration_decode, self.finishing
        batch, steps, kv = self.decode_batch, self.decode_steps, self.kv_tokens
        reserved, admitted, load = self.reserved, self.admitted, self.load
        serving = self.state == _SERVING
        while end < hours:
            now = end
            busy += now - begun
            # the iteration or run ending now emits its tokens
            if run_steps:
                iterations += run_steps
                tokens += batch * run_steps
                steps += run_steps
                kv += batch * run_steps
                if run_prefill:
                    prefilling[0][1] += run_prefill * run_steps
                run_steps = 0
                while heap and heap[0][0] <= steps:
                    request = pop(heap)[1]
                    context = contexts[request]
                    kv -= context
                    batch -= 1
                    done_hours[request] = now
                    reserved -= context
                    admitted -= 1
                    load -= 1
            else:
                if decode:
                    tokens += decode
                    steps += 1
                    kv += decode
                    decode = 0  # a wake-up boundary after it emits nothing
                    while heap and heap[0][0] == steps:
                        request = pop(heap)[1]
                        context = contexts[request]
                        kv -= context
                        batch -= 1
                        done_hours[request] = now
                        reserved -= context
                        admitted -= 1
                        load -= 1
                if finishing:
                    tokens += len(finishing)
                    for request in finishing:
                        first_hours[request] = now
                        output = outputs[request]
                        if output == 1:
                            done_hours[request] = now
                            reserved -= contexts[request]
                            admitted -= 1
                            load -= 1
                        else:
                            joined[request] = steps
                            push(heap, (steps + output - 1, request))
                            batch += 1
                            kv += inputs[request] + 1
                    finishing = []
            # admission: FCFS while the batch and the KV reservation allow
            if queue and serving:
                while queue and admitted < max_batch:
                    context = contexts[queue[0]]
                    if reserved + context > capacity:
                        break  # head-of-line: nothing skips the head
                    admitted += 1
                    reserved += context
                    if self.decode_only:  # its prompt's KV cache arrived with it
                        request = queue.popleft()
                        first_hours[request] = now
                        joined[request] = steps
                        push(heap, (steps + outputs[request] - 1, request))
                        batch += 1
                        kv += inputs[request] + 1
                    else:
                        prefilling.append([queue.popleft(), 0])
            # the next run, iteration, idle or stop
            if prefilling:
                run_prefill = chunk
                if chunk:  # the head prompt's full chunks before its last, to a completion
                    run_steps = (inputs[prefilling[0][0]] - prefilling[0][1] - 1) // chunk
                    if batch and heap[0][0] - steps < run_steps:
                        run_steps = heap[0][0] - steps
                    if run_steps < _MIN_RUN:
                        run_steps = 0
            elif batch:  # decode only, to the next completion
                run_prefill = 0
                run_steps = heap[0][0] - steps
                if run_steps < _MIN_RUN:
                    run_steps = 0
            if run_steps:
                attends = prefilling[0][1] + chunk / 2.0 if run_prefill else 0.0
                self.run = run = prepare(batch, kv, run_prefill, attends)
                length = run_seconds(run, run_steps)
                if not length > 0.0:
                    raise _bad_iteration(length, batch, run_prefill)
                begun = now
                end = now + length / _SECONDS_PER_HOUR  # = self._run_end(run_steps)
                if end >= self.horizon_hours:  # count iterations up to the one it cuts
                    self.begun, self.end, self.run_steps = begun, end, run_steps
                    events += self._boundary(self.horizon_hours)
                else:
                    events += run_steps
                if events > max_events:
                    counter.events, counter.iterations = events, iterations
                    raise counter.over()
            elif prefilling or batch:
                events += 1
                if events > max_events:
                    counter.events, counter.iterations = events, iterations
                    raise counter.over()
                iterations += 1
                prefill = 0
                pairs = 0.0  # sum over prefilled tokens of the context each attends to
                if not prefilling:
                    decode = batch
                elif chunk == 0:  # prefill-first: every admitted prompt, whole, no decode
                    decode = 0
                    for request, _ in prefilling:
                        size = inputs[request]
                        prefill += size
                        pairs += size * (size / 2.0)
                        finishing.append(request)
                    prefilling.clear()
                else:
                    decode = batch
                    budget = chunk
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
                length = seconds(
                    decode, prefill, kv if decode else 0, pairs / prefill if prefill else 0.0
                )
                if not length > 0.0:
                    raise _bad_iteration(length, decode, prefill)
                begun = now
                end = now + length / _SECONDS_PER_HOUR
            else:
                end = math.inf
                if self.state == _DRAINING:
                    self.state = _STOPPED
                    self.stop_hours = now
        self.end, self.begun, self.busy_hours = end, begun, busy
        self.run_steps, self.run_prefill = run_steps, run_prefill
        self.iteration_decode, self.finishing = decode, finishing
        self.decode_batch, self.decode_steps, self.kv_tokens = batch, steps, kv
        self.reserved, self.admitted, self.load = reserved, admitted, load
        counter.events, counter.iterations, counter.tokens = events, iterations, tokens

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
            and self.reserved + self.req.contexts[request] <= self.kv_capacity
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
