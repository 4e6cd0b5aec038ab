"""Request-level discrete-event simulation of LLM serving: routing, continuous batching.

Continuous batching at iteration granularity: every batch iteration of every replica is
a state change at its own boundary time, never per token, except inside a *run* of
``_MIN_RUN`` or more iterations in which nothing joins or leaves the batch (decode-only
iterations up to the next completion; with chunked prefill, the full chunks of the head
prompt before its last one, each the budget less the decode batch, up to the next
completion): a run is one state change, cut short at the next iteration boundary when an
admissible request arrives. An iteration lasts
:func:`accelsim.models.serving.iteration_seconds` of its batch (evaluated by
:func:`~accelsim.models.serving.terms_iteration_seconds`, the same formula on floats, bit
for bit); a run lasts the closed-form sum of its iterations
(:func:`~accelsim.models.serving.terms_iteration_run` and
:func:`~accelsim.models.serving.run_seconds`), equal to the iteration by iteration sum to
float rounding (~1e-15 relative), not bit for bit.

One SimPy process, the router, drives in time order the fleet plan (one decision at the
start of every hour) and cold-started replicas coming up, one event each, and between those
the pre-drawn arrivals, in order, without an event each. Replicas are not processes: a
replica changes only at its own iteration boundaries and when the router acts on it, and
its boundaries depend on nothing else, so the router plays them (in time order, each at its
own time) up to an instant just before it reads or changes that replica there. This is the
same trace a process per replica would give, without a SimPy event per iteration or per
arrival. No RNG inside: the caller draws the requests. The arrivals and the replicas'
iterations between two router events are played by a kernel compiled with numba
(``_fleet``, ``_replica``; why and how in ``_jit``), which calls the
model's own plain-float iteration formulas.

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

*Decode-only replicas* (``ReplicaModel.decode_only``, the decode pool of disaggregated
serving): a request arrives with its prompt's KV cache and first token; admission (same
rule) joins it to the decode batch at once, and it completes after ``output_tokens - 1``
decode iterations. No iteration prefills.

*Iterations.* With ``prefill_chunk_tokens = C > 0`` (chunked prefill) ``C`` is the
iteration's token budget, vLLM's ``max_num_batched_tokens``: every iteration decodes one
token of each of the ``B`` sequences past their prefill and prefills up to ``C − B`` prompt
tokens of admitted sequences in admission order (a prompt may span iterations; several
short prompts may share one). vLLM's scheduler takes its running requests before its
waiting ones, a token each, and requires ``C >= max_num_seqs``; so does this
(``max_batch <= C``), which leaves a prompt at least one token whenever one waits. With
``C = 0`` (prefill-first) an iteration that starts with admitted-but-unprefilled prompts
prefills all of them whole and decodes nothing; decoding resumes in the next iteration.
A prompt's last prefill iteration emits its first output token at its end (TTFT); each
later iteration in which it decodes emits one more; it completes at the end of the
iteration that emits its ``output_tokens``-th token.

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

import math

import numpy as np
import simpy

from accelsim._typing import FloatArray
from accelsim.engines.serving.des._state import FleetState, as_plain_records, new_state
from accelsim.engines.serving.des._types import (
    _ROUTERS,
    _SECONDS_PER_HOUR,
    EventBudgetError,
    ReplicaModel,
    ReplicaPlan,
    RequestStream,
    Router,
    ServingTrace,
)


def _check(model: ReplicaModel, requests: RequestStream, plan: ReplicaPlan, horizon: float) -> None:
    """Reject inputs that would make the trace meaningless, naming the field."""
    if not (math.isfinite(horizon) and horizon > 0.0):
        raise ValueError(f"horizon_hours must be finite and > 0, got {horizon}")
    if not model.kv_capacity_tokens > 0:
        raise ValueError(f"kv_capacity_tokens must be > 0, got {model.kv_capacity_tokens}")
    if model.max_batch < 1 or model.prefill_chunk_tokens < 0:
        raise ValueError("max_batch must be >= 1 and prefill_chunk_tokens >= 0")
    if 0 < model.prefill_chunk_tokens < model.max_batch:
        raise ValueError(
            f"prefill_chunk_tokens ({model.prefill_chunk_tokens}), the iteration's token "
            f"budget, must be >= max_batch ({model.max_batch}) or 0: each running sequence "
            "takes one token of it (vLLM: max_num_batched_tokens >= max_num_seqs)"
        )
    if any(np.size(getattr(model.cost, f)) != 1 for f in model.cost.__dataclass_fields__):
        raise ValueError("ReplicaModel.cost must hold one run's (0-d) coefficients")
    t = np.asarray(requests.arrival_hours, dtype=np.float64)
    if not (len(t) == len(requests.input_tokens) == len(requests.output_tokens)):
        raise ValueError("arrival_hours, input_tokens and output_tokens differ in length")
    if t.size and (t[0] < 0 or not t[-1] < horizon or np.any(np.diff(t) < 0)):
        raise ValueError("arrival_hours must be sorted ascending within [0, horizon_hours)")
    if np.any(requests.input_tokens < 1) or np.any(requests.output_tokens < 1):
        raise ValueError("input_tokens and output_tokens must be >= 1")
    if model.decode_only and np.any(requests.output_tokens < 2):
        raise ValueError(
            "a decode_only replica decodes the tokens after the first: output_tokens must "
            "be >= 2 (a one-token request ends at its prefill)"
        )
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
        run), arrival instants and router steps; bounds the CPU time of a run.

    Returns
    -------
    ServingTrace
        Per-request TTFT, TPOT, end-to-end latency [s] and status; fleet usage [h].

    Raises
    ------
    ValueError
        Inputs outside the contract (unsorted arrivals, tokens < 1, a plan of the wrong
        length, ...), naming the field.
    EventBudgetError
        More than ``max_events`` events (a ``RuntimeError``).
    RuntimeError
        An iteration time that is not > 0.

    Notes
    -----
    The rules (queues, admission, chunked or prefill-first iterations, plan, ties) are in
    the module docstring. Cost: ~0.1 µs of compiled code per batch iteration outside runs,
    per run and per arrival (~0.8 µs per arrival on 32 replicas, whose loads the router
    reads), one SimPy event per plan hour and cold start; the first call in a process loads
    the compiled kernel (~0.2 s; ~6 s to compile it in a fresh install). Memory: a record
    of 81 bytes per request, and per replica a record and a heap row of
    ``min(max_batch, requests, KV capacity / shortest context)`` entries.

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
    state = play_fleet(model, requests, plan, horizon_hours, router, max_events)
    return fleet_trace(state, horizon_hours)


def play_fleet(
    model: ReplicaModel,
    requests: RequestStream,
    plan: ReplicaPlan,
    horizon_hours: float,
    router: Router,
    max_events: int,
    events_before: int = 0,
) -> FleetState:
    """Check the inputs, then run one fleet's SimPy environment to the horizon and close
    its replicas; returns the played state. ``events_before`` counts against ``max_events``
    (a second pool's budget is what the first left)."""
    # The compiled kernel (numba) is imported on first use: ``import accelsim`` stays ~0.1 s
    # lighter for studies that never run the request DES.
    from accelsim.engines.serving.des._fleet import route
    from accelsim.engines.serving.des._jit import COMPILED, BadIteration, OverBudget
    from accelsim.engines.serving.des._replica import close_all

    if router not in _ROUTERS:
        raise ValueError(f"router must be one of {_ROUTERS}, got {router!r}")
    _check(model, requests, plan, horizon_hours)
    state = new_state(
        model,
        requests,
        plan.replicas_per_hour,
        float(plan.cold_start_hours),
        horizon_hours,
        router == "least_loaded",
        max_events,
    )
    if not COMPILED:  # plain Python reads records by attribute as numba does: np.record
        state = as_plain_records(state)
    state.fleet["events"] = events_before
    env = simpy.Environment()
    env.process(route(env, state, plan.replicas_per_hour.tolist(), horizon_hours))
    try:
        env.run(until=horizon_hours)
        close_all(*state.arrays()[:5], state.terms, horizon_hours)
    except OverBudget:
        raise EventBudgetError(max_events, int(state.fleet["iterations"][0])) from None
    except BadIteration:
        fl = state.fleet[0]
        raise RuntimeError(
            f"iteration time must be > 0 s, got {float(fl['bad_seconds'])!r} (decode batch "
            f"{int(fl['bad_decode'])}, {int(fl['bad_prefill'])} prefill tokens): check the "
            "IterationCost coefficients"
        ) from None
    return state


def fleet_peak(starts: FloatArray, stops: FloatArray, horizon_hours: float) -> int:
    """Most replicas provisioned at once (a stop and a start at one instant: stop first)."""
    changes = sorted(
        [(float(t), 1) for t in starts] + [(float(t), -1) for t in stops if t < horizon_hours]
    )
    running = peak = 0
    for _, step in changes:
        running += step
        peak = max(peak, running)
    return peak


def fleet_trace(state: FleetState, horizon_hours: float) -> ServingTrace:
    """The :class:`ServingTrace` of one played fleet."""
    req, fl = state.req, state.fleet[0]
    reps = state.reps[: int(fl["replicas"])]
    arrival, first, done = req["arrival"], req["first"], req["done"]
    outputs = req["output"]
    first_token = first >= 0.0  # times are >= 0; not reached: NOT_YET (< 0)
    completed = done >= 0.0
    per_token = completed & (outputs > 1)
    decode_s = (done - first) * _SECONDS_PER_HOUR / np.maximum(outputs - 1, 1)
    provisioned = np.minimum(reps["stop"], horizon_hours) - reps["start"]
    return ServingTrace(
        ttft_s=np.where(first_token, (first - arrival) * _SECONDS_PER_HOUR, 0.0),
        tpot_s=np.where(per_token, decode_s, 0.0),
        e2e_s=np.where(completed, (done - arrival) * _SECONDS_PER_HOUR, 0.0),
        first_token=first_token,
        completed=completed,
        replica_hours=float(sum(provisioned.tolist())),
        busy_replica_hours=float(sum(reps["busy"].tolist())),
        replicas_peak=fleet_peak(reps["start"], reps["stop"], horizon_hours),
        iterations=int(fl["iterations"]),
        tokens_generated=np.where(completed, outputs, req["generated"]),
        rejected=req["rejected"].copy(),
        output_tokens_total=int(fl["tokens"]),
    )


__all__ = ["simulate_serving"]
