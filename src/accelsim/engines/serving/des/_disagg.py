"""Request-level DES of disaggregated serving: a prefill pool, KV transfer, a decode pool.

The colocated fleet of ``accelsim.engines.serving.des._run`` (router, queues, reserve-on-admit,
hourly plan, cold start, ties) played twice, once per pool, with one rule changed per pool:

*Prefill pool.* A prefill replica is a prefill-first replica (``prefill_chunk_tokens = 0``)
whose requests end at their first token: each iteration prefills every admitted prompt
whole (batched, up to ``max_batch`` prompts whose tokens fit its KV capacity) and decodes
nothing; a prompt leaves the replica, its reservation freed, at the end of that iteration.
Its reservation is ``input_tokens + 1`` (the prompt and the first token's KV).

*KV transfer.* The prompt's cache then crosses the scale-out network for the caller's
``transfer_s`` (the fast path's :func:`~accelsim.models.serving.kv_transfer_seconds`, not a
formula of its own). The first token counts when the cache reaches the decode side:
``TTFT = wait + prefill + transfer``, the fast path's definition
(:func:`~accelsim.models.serving.prefill_latency`). A one-token request completes there.

*Decode pool.* A request with ``output_tokens >= 2`` arrives at the decode pool's router at
that instant and is dispatched as a colocated one (same routers); a decode replica
(``decode_only``) admits it with the same reserve-on-admit rule (``input + output`` tokens)
and decodes its other ``output_tokens - 1`` tokens in decode-only iterations;
``TPOT = (completion - first token) / (output_tokens - 1)`` includes that admission wait.

No back-pressure: a finished prefill never waits for decode room (its cache is assumed to
be held off the prefill replica until a decode replica admits it), so the decode pool's
arrivals depend on the prefill pool only, and the two fleets are played one after the
other, each in its own SimPy environment, giving the trace a joint simulation would. A
request whose full context exceeds the decode replica's KV capacity is rejected on arrival
(never prefilled); one whose prompt exceeds the prefill replica's is rejected there.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from accelsim._typing import FloatArray, IntArray
from accelsim.engines.serving.des._run import _check, fleet_peak, fleet_trace, play_fleet
from accelsim.engines.serving.des._types import (
    _SECONDS_PER_HOUR,
    DisaggregatedTrace,
    ReplicaModel,
    ReplicaPlan,
    RequestStream,
    Router,
    ServingTrace,
)


def _check_pools(prefill: ReplicaModel, decode: ReplicaModel, n: int, transfer: FloatArray) -> None:
    if prefill.decode_only or prefill.prefill_chunk_tokens != 0:
        raise ValueError(
            "the prefill model runs whole prompts: prefill_chunk_tokens must be 0 and "
            "decode_only False"
        )
    if not decode.decode_only:
        raise ValueError("the decode model must be decode_only")
    if transfer.shape != (n,) or not bool(np.all(np.isfinite(transfer) & (transfer >= 0.0))):
        raise ValueError("transfer_s must hold one finite time >= 0 per request")


def _subset(requests: RequestStream, index: IntArray, arrival: FloatArray) -> RequestStream:
    return RequestStream(arrival, requests.input_tokens[index], requests.output_tokens[index])


def _scatter(trace: ServingTrace, index: IntArray, n: int) -> ServingTrace:
    """``trace`` of the requests ``index`` widened to all ``n`` (zero, False elsewhere)."""
    wide: dict[str, object] = {}
    for field in dataclasses.fields(trace):
        value = getattr(trace, field.name)
        if isinstance(value, np.ndarray):
            full = np.zeros(n, dtype=value.dtype)
            full[index] = value
            wide[field.name] = full
        else:
            wide[field.name] = value
    return ServingTrace(**wide)  # type: ignore[arg-type]


def simulate_serving_disaggregated(
    prefill: ReplicaModel,
    decode: ReplicaModel,
    requests: RequestStream,
    transfer_s: FloatArray,
    plans: tuple[ReplicaPlan, ReplicaPlan],
    horizon_hours: float,
    *,
    router: Router = "least_loaded",
    max_events: int = 50_000_000,
) -> DisaggregatedTrace:
    """Simulate requests on a prefill pool and a decode pool up to a horizon.

    Parameters
    ----------
    prefill, decode : ReplicaModel
        One replica of each pool: the prefill one with ``prefill_chunk_tokens = 0``, the
        decode one ``decode_only`` (module docstring).
    requests : RequestStream
        Pre-drawn arrivals [h] and token counts [tokens].
    transfer_s : FloatArray
        Each request's KV transfer time from its prefill to its decode replica. [s]
    plans : (ReplicaPlan, ReplicaPlan)
        Replicas wanted per hour and cold start of the prefill and the decode pool.
    horizon_hours : float
        End of the simulation (> 0). [h]
    router : {"least_loaded", "round_robin"}
        How a request picks a replica, in each pool.
    max_events : int
        Most events of both pools together before a ``RuntimeError``.

    Returns
    -------
    DisaggregatedTrace
        End to end per request, and each pool's own trace and usage.

    Examples
    --------
    One 100-token prompt, one replica per pool, a 2 ms transfer: TTFT = prefill + 2 ms.

    >>> from accelsim.models.serving import iteration_cost, prefill_seconds
    >>> cost = iteration_cost(active_params=8e9, total_params=8e9, layers=32, d_model=4096,
    ...     weight_bytes=16e9, kv_bytes_per_token=131072.0, chips=1, peak_tflops=989,
    ...     hbm_tbps=3.35, interconnect_gbps=900, efficiency=0.5, overhead_seconds=0.005)
    >>> out = simulate_serving_disaggregated(
    ...     ReplicaModel(cost, 10_000.0, max_batch=8, prefill_chunk_tokens=0),
    ...     ReplicaModel(cost, 10_000.0, max_batch=8, prefill_chunk_tokens=0, decode_only=True),
    ...     RequestStream(np.zeros(1), np.array([100]), np.array([5])), np.array([0.002]),
    ...     (ReplicaPlan(np.array([1])), ReplicaPlan(np.array([1]))), horizon_hours=1.0)
    >>> bool(abs(out.trace.ttft_s[0] - float(prefill_seconds(cost, 100)) - 0.002) < 1e-9)
    True
    """
    n = len(requests.arrival_hours)
    transfer = np.asarray(transfer_s, dtype=np.float64)
    _check_pools(prefill, decode, n, transfer)
    _check(prefill, requests, plans[0], horizon_hours)  # the stream, before it is split
    inputs, outputs = requests.input_tokens, requests.output_tokens
    fits = inputs + outputs <= decode.kv_capacity_tokens
    first = np.flatnonzero(fits)
    ones = np.ones(first.size, dtype=np.int64)
    stream_p = RequestStream(requests.arrival_hours[first], inputs[first], ones)
    played_p = play_fleet(prefill, stream_p, plans[0], horizon_hours, router, max_events)
    pool_p = _scatter(fleet_trace(played_p, horizon_hours), first, n)
    pool_p = dataclasses.replace(pool_p, rejected=pool_p.rejected | ~fits)

    prefilled = np.full(n, -1.0)
    prefilled[first] = played_p.req["done"]
    handoff = prefilled + transfer / _SECONDS_PER_HOUR
    reached = (prefilled >= 0.0) & (handoff < horizon_hours)
    moved = np.flatnonzero(reached & (outputs >= 2))
    moved = moved[np.argsort(handoff[moved], kind="stable")]
    stream_d = _subset(requests, moved, handoff[moved])
    events_p = int(played_p.fleet["events"][0])  # one budget for both pools
    played_d = play_fleet(
        decode, stream_d, plans[1], horizon_hours, router, max_events, events_before=events_p
    )
    pool_d = _scatter(fleet_trace(played_d, horizon_hours), moved, n)

    done = np.where(reached & (outputs == 1), handoff, -1.0)
    decoded = np.full(n, -1.0)
    decoded[moved] = played_d.req["done"]
    done = np.where(decoded >= 0.0, decoded, done)
    generated = np.zeros(n, dtype=np.int64)
    # an admitted sequence's count includes its first token; a queued one holds just it
    generated[moved] = np.maximum(played_d.req["generated"], 1)
    trace = _joined(requests, handoff, reached, done, generated, pool_p.rejected)
    both = [played.reps[: int(played.fleet["replicas"][0])] for played in (played_p, played_d)]
    trace = dataclasses.replace(
        trace,
        replica_hours=pool_p.replica_hours + pool_d.replica_hours,
        busy_replica_hours=pool_p.busy_replica_hours + pool_d.busy_replica_hours,
        replicas_peak=fleet_peak(
            np.concatenate([r["start"] for r in both]),
            np.concatenate([r["stop"] for r in both]),
            horizon_hours,
        ),
        iterations=pool_p.iterations + pool_d.iterations,
        output_tokens_total=int(reached.sum()) + int(played_d.fleet["tokens"][0]),
    )
    return DisaggregatedTrace(trace=trace, prefill=pool_p, decode=pool_d, transfer_s=transfer)


def _joined(
    requests: RequestStream,
    handoff: FloatArray,
    reached: np.ndarray,
    done: FloatArray,
    generated: IntArray,
    rejected: np.ndarray,
) -> ServingTrace:
    """The end-to-end per-request trace (fleet fields left at zero for the caller)."""
    arrival = np.asarray(requests.arrival_hours, dtype=np.float64)
    outputs = requests.output_tokens
    completed = done >= 0.0
    per_token = completed & (outputs > 1)
    decode_s = (done - handoff) * _SECONDS_PER_HOUR / np.maximum(outputs - 1, 1)
    return ServingTrace(
        ttft_s=np.where(reached, (handoff - arrival) * _SECONDS_PER_HOUR, 0.0),
        tpot_s=np.where(per_token, decode_s, 0.0),
        e2e_s=np.where(completed, (done - arrival) * _SECONDS_PER_HOUR, 0.0),
        first_token=np.asarray(reached, dtype=np.bool_),
        completed=np.asarray(completed, dtype=np.bool_),
        replica_hours=0.0,
        busy_replica_hours=0.0,
        replicas_peak=0,
        iterations=0,
        tokens_generated=np.where(completed, outputs, np.where(reached, generated, 0)),
        rejected=np.asarray(rejected, dtype=np.bool_),
        output_tokens_total=0,
    )


__all__ = ["simulate_serving_disaggregated"]
