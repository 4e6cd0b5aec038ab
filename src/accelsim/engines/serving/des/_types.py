"""The serving DES's contract types: one replica, the requests, the fleet plan, the trace.

Inputs and output of :func:`accelsim.engines.serving.des.simulate_serving` (rules in
``accelsim.engines.serving.des._run``); re-exported by :mod:`accelsim.engines.serving.des`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from accelsim._typing import BoolArray, FloatArray, IntArray
from accelsim.models.serving import IterationCost

_SECONDS_PER_HOUR = 3600.0
_ROUTERS = ("least_loaded", "round_robin")

Router = Literal["least_loaded", "round_robin"]


class EventBudgetError(RuntimeError):
    """A serving DES run needed more than its ``max_events`` events (a ``RuntimeError``)."""

    def __init__(self, max_events: int, iterations: int) -> None:
        self.max_events, self.iterations = max_events, iterations
        super().__init__(
            f"serving DES stopped after max_events={max_events:,} events ({iterations:,} "
            "batch iterations): the horizon holds more iterations and arrivals than allowed; "
            "raise max_events or shorten the horizon"
        )


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
    """Chunked prefill: the iteration's token budget, one token per decoding sequence and
    the rest for prompts (vLLM's ``max_num_batched_tokens``; >= ``max_batch``); 0 = whole
    prompts, prefill-first (no chunking). [tokens]"""
    decode_only: bool = False
    """A disaggregated decode replica: its requests arrive with their prompt's KV cache and
    first token (every ``output_tokens >= 2``), so admission joins them to the decode batch
    directly; no iteration prefills. ``first_token`` then marks admission (``ttft_s``: the
    wait for it) and the first token is not counted in ``output_tokens_total``."""


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

    def provisioned_hours(self, horizon_hours: float) -> float:
        """Replica-hours the plan provisions before ``horizon_hours``: each hour's replicas
        for the share of it inside the horizon (a fleet that serves nothing, an infeasible
        replica, is still paid for). [h]"""
        hours = np.arange(self.replicas_per_hour.size, dtype=float)
        inside = np.clip(horizon_hours - hours, 0.0, 1.0)
        return float(self.replicas_per_hour @ inside)


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


@dataclass(frozen=True)
class DisaggregatedTrace:
    """One :func:`simulate_serving_disaggregated` run: end to end and each pool's own.

    Per-request arrays are indexed as the caller's :class:`RequestStream` in all three.
    """

    trace: ServingTrace
    """End to end: ``ttft_s`` from arrival to the first token, counted when the prompt's
    KV cache reaches the decode side (prefill end + transfer); ``tpot_s`` from there to
    completion; ``rejected`` where the request fits either pool's KV capacity never. Fleet
    fields: both pools' sums, ``replicas_peak`` the most of both provisioned at once."""
    prefill: ServingTrace
    """The prefill pool's own trace: ``ttft_s`` = queue wait + prefill, ``completed`` =
    prefilled before the horizon (a request the decode pool can never hold is never
    queued: ``rejected``); its replica-hours, busy hours and peak."""
    decode: ServingTrace
    """The decode pool's own trace over the requests that reached it (zero elsewhere):
    ``ttft_s`` = wait from the KV cache's arrival to admission, ``e2e_s`` = arrival of
    the cache to completion; its replica-hours, busy hours and peak."""
    transfer_s: FloatArray
    """Each request's KV transfer time, as given. [s]"""


__all__ = [
    "DisaggregatedTrace",
    "ReplicaModel",
    "ReplicaPlan",
    "RequestStream",
    "ServingTrace",
]
