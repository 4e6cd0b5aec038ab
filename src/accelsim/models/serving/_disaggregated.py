"""Disaggregated serving: prefill replicas and decode replicas on separate pools.

Part of :mod:`accelsim.models.serving` (import the names from there). A request waits in
the FCFS queue of a prefill replica, which runs its whole prompt in one prefill-only
iteration (:func:`prefill_seconds`, the one iteration formula with no decode), then its KV
cache crosses the scale-out network to a decode replica (:func:`kv_transfer_seconds`),
which decodes with no prefill in its iterations (:func:`decode_latency`). This is the
layout of DistServe (Zhong et al., OSDI'24, arXiv 2401.09670), Splitwise (Patel et al.,
ISCA'24, arXiv 2311.18677) and Mooncake (arXiv 2407.00079). Units: seconds [s], rates
[1/s], bytes [B].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from accelsim._typing import ArrayLike, BoolArray, FloatArray
from accelsim.models._poisson import poisson_quantile
from accelsim.models.serving._decode import _solve_iteration
from accelsim.models.serving._iteration import IterationCost, _f, iteration_seconds
from accelsim.models.serving._mixture import wait_mixture_quantiles
from accelsim.models.serving._prefill_batch import batch_quantiles, batch_wait
from accelsim.models.serving._prefill_queue import mg1_wait_moments, wait_phases

_GIGA = 1e9


def prefill_seconds(cost: IterationCost, prompt_tokens: ArrayLike) -> FloatArray:
    """Time of a prefill replica's iteration over one whole prompt, nothing else. [s]

    :func:`~accelsim.models.serving.iteration_seconds` with no decode, ``prompt_tokens``
    prefilled, each attending to half the prompt on average.
    """
    prompt = _f(prompt_tokens)
    return iteration_seconds(cost, 0.0, prompt, 0.0, prompt / 2.0)


def kv_transfer_seconds(
    prompt_tokens: ArrayLike, kv_bytes_per_token: ArrayLike, link_gbps: ArrayLike
) -> FloatArray:
    """Time to move one prompt's KV cache from a prefill to a decode replica. [s]

    ``prompt_tokens · kv_bytes_per_token / (link_gbps · 10⁹)``: the whole cache at the line
    rate of the narrower side, ``link_gbps`` = min over the two replicas of chips ·
    the catalog's ``scale_out_gbps`` (an assumption: no overlap of the transfer with the
    prefill, as DistServe's layer-wise pipelining would give, and no protocol overhead).
    """
    return _f(_f(prompt_tokens) * _f(kv_bytes_per_token) / (_f(link_gbps) * _GIGA))


@dataclass(frozen=True)
class PrefillLatency:
    """Time to first token through a prefill replica under Poisson load (every field
    finite; where ``saturated``, the fields are evaluated just below saturation and are
    lower bounds, not predictions)."""

    ttft_mean_s: FloatArray
    """Mean time to first token: queue wait + own prefill + KV transfer. [s]"""
    ttft_p50_s: FloatArray
    """Median time to first token. [s]"""
    ttft_tail_s: FloatArray
    """Time to first token at the requested percentile. [s]"""
    utilization: FloatArray
    """``ρ = rate · E[prefill time]``, the share of time the replica is busy. [fraction]"""
    saturated: BoolArray
    """True where ``ρ >= 1``: the queue grows without bound."""


def prefill_latency(
    rate_rps: ArrayLike,
    service_s: ArrayLike,
    transfer_s: ArrayLike,
    percentile: ArrayLike = 0.99,
    *,
    weights: ArrayLike | None = None,
    shared_s: ArrayLike | None = None,
) -> PrefillLatency:
    """TTFT of a prefill replica serving Poisson arrivals: FCFS one prompt at a time, or
    (``shared_s`` given) every queued prompt in the next iteration.

    Parameters
    ----------
    rate_rps : array_like
        Arrival rate at this replica (> 0), broadcast against ``service_s[..., 0]``. [1/s]
    service_s : array_like
        Prefill time of a prompt at nodes of the prompt-length law, on the last axis
        (``prefill_seconds`` at those lengths): a quadrature of the law, so every moment
        is over the law itself, not the formula at its mean. [s]
    transfer_s : array_like
        KV transfer time at the same nodes (0: none). [s]
    percentile : float, optional
        Tail quantile for ``ttft_tail_s``, in (0.5, 1). [fraction]
    weights : array_like, optional
        Probabilities of the nodes (last axis, summing to 1; default equal), e.g. the
        serving setup's ``input_weights``, whose cells narrow toward the upper tail. [–]
    shared_s : array_like, optional
        The part of a prefill iteration paid once however many prompts it holds
        (:func:`~accelsim.models.serving._prefill_batch.shared_prefill_seconds`), broadcast
        against ``rate_rps``. Given, the replica batches: an iteration takes every prompt
        waiting when it starts, ``shared_s`` plus each prompt's own part (the request DES's
        prefill replica); None (default), one prompt per iteration. [s]

    Returns
    -------
    PrefillLatency

    Notes
    -----
    ``TTFT = W + Y`` with ``Y = S + K`` the request's own prefill and transfer (a function
    of its prompt length, taken over the nodes: the median of a mixture is not the formula
    at the mean prompt) and ``W`` the FCFS M/G/1 wait, independent of the request's own
    service. ``W = 0`` with probability ``1 − ρ``; otherwise ``W₊`` is a two-phase
    hyperexponential matching the M/G/1 moments given a wait, ``E[W^k]/ρ`` for
    ``k = 1, 2`` (by :func:`~accelsim.models.serving.mg1_wait_moments`, the
    colocated TTFT's queue formula, with the service moments over the nodes), and its
    Pollaczek–Khinchine transform at ``1/E[X]``
    (:func:`~accelsim.models.serving._prefill_queue.wait_phases`); exact for M/M/1,
    where ``W₊`` is exponential. Quantiles solve ``(1 − ρ)P(Y ≤ t) + ρP(Y + W₊ ≤
    t) = q`` exactly, segment by segment between the nodes (the colocated TTFT's quantile
    formula, ``_mixture.wait_mixture_quantiles``).
    With ``shared_s``, the wait is that of a gated batch queue
    (:func:`~accelsim.models.serving._prefill_batch.batch_wait`): a queued prompt no longer
    pays the shared part (overhead, and the weights' read where compute and memory times
    add) once per prompt ahead of it. ``utilization`` stays ``λ·E[service]`` (one prompt
    per iteration; the batching replica's busy share is below it). Oracles (one prompt per
    iteration): the mean is
    Pollaczek–Khinchine's exactly (DistServe §3.1's M/D/1 ``D + λD²/(2(1 − λD))`` for one
    prompt length); the percentiles against a Lindley-recursion simulation of the queue
    (tests/unit/test_serving_disaggregated.py, stated tolerance).
    """
    service = _f(service_s)
    total = service + _f(transfer_s)
    rate = np.maximum(_f(rate_rps), 1e-300)
    n = service.shape[-1]
    probs = np.broadcast_to(_f(np.full(n, 1.0 / n) if weights is None else weights), service.shape)
    x = [np.sum(probs * service**k, axis=-1) for k in (1, 2, 3, 4)]
    rho_raw = rate * x[0]
    saturated = rho_raw >= 1.0
    rho = np.clip(rho_raw, 0.0, 1.0 - 1e-9)
    levels = np.unique(_f(percentile))
    if levels.size != 1:
        raise ValueError(f"percentile must be one level, got {levels}")
    if shared_s is None:
        w1, w2, _ = mg1_wait_moments(rate, rho, x[1], x[2], x[3])
        phases = wait_phases(rate, rho, w1, w2, service, probs)
        p50, tail = wait_mixture_quantiles(total, probs, rho, phases, (0.5, float(levels[0])))
    else:
        shape = np.broadcast_shapes(np.shape(rate), service.shape[:-1])
        shared = np.broadcast_to(np.minimum(_f(shared_s), np.min(service, axis=-1)), shape)
        own = np.maximum(service - shared[..., None], 0.0)
        # saturated (ρ >= 1): just below it, as the one-prompt queue (lower bounds)
        below = np.minimum(rate, (1.0 - 1e-9) / np.maximum(x[0], 1e-300))
        batch = batch_wait(np.broadcast_to(below, shape), shared, own, probs)
        w1 = batch.busy * batch.mean
        p50, tail = batch_quantiles(total, probs, batch, (0.5, float(levels[0])))
    return PrefillLatency(
        ttft_mean_s=_f(w1 + np.sum(probs * total, axis=-1)),
        ttft_p50_s=p50,
        ttft_tail_s=tail,
        utilization=_f(rho_raw),
        saturated=np.asarray(saturated, dtype=np.bool_),
    )


@dataclass(frozen=True)
class DecodeLatency:
    """Time per output token of a decode-only replica under Poisson load (finite; where
    ``saturated`` the batch limit overflows and the fields are evaluated at it)."""

    decode_batch: FloatArray
    """Mean sequences in decode (Little's law). [count]"""
    tpot_p50_s: FloatArray
    """Median time per output token: the steady-state iteration time. [s]"""
    tpot_tail_s: FloatArray
    """TPOT at the requested percentile (Poisson batch-size quantile). [s]"""
    saturated: BoolArray
    """True where no steady state exists within the batch limit."""


def decode_latency(
    cost: IterationCost,
    rate_rps: ArrayLike,
    input_tokens: ArrayLike,
    output_tokens: ArrayLike,
    batch_limit: ArrayLike,
    percentile: ArrayLike = 0.99,
) -> DecodeLatency:
    """TPOT of a decode replica that never prefills (its prompts arrive as KV cache).

    The colocated decode model of :func:`~accelsim.models.serving.latency_under_load` with
    no prompt tokens in any iteration: the fixed point ``T = iteration_seconds(1 + B, 0,
    (1 + B)(in + out/2))``, ``B = λ·out·T`` (the same solver), the tail at the exact Poisson
    quantile of the batch. Arguments as there. [1/s], [tokens], [count], [fraction]
    """
    rate = np.maximum(_f(rate_rps), 1e-300)
    inp, out, limit = _f(input_tokens), _f(output_tokens), _f(batch_limit)
    t, overflow = _solve_iteration(cost, rate, inp, out, limit, prefill_share=0.0)
    batch = rate * out * t
    tail_batch = 1.0 + poisson_quantile(_f(percentile), np.maximum(batch, 1e-12))
    tail = iteration_seconds(cost, tail_batch, 0.0, tail_batch * (inp + out / 2.0), 0.0)
    return DecodeLatency(
        decode_batch=_f(batch),
        # one-token outputs (mean 1: every output) have no token gap to time: TPOT 0, as
        # in the colocated model and the request DES
        tpot_p50_s=_f(np.where(out > 1.0, t, 0.0)),
        tpot_tail_s=_f(np.where(out > 1.0, np.maximum(tail, t), 0.0)),
        saturated=np.asarray(overflow, dtype=np.bool_),
    )


def decode_saturated_rps(
    cost: IterationCost, batch_limit: ArrayLike, input_tokens: ArrayLike, output_tokens: ArrayLike
) -> FloatArray:
    """Request rate of a decode replica running its batch limit (0 where it is below 1).

    ``limit / (out · iteration_seconds(limit, 0, limit · (in + out/2)))``. [1/s]
    """
    limit = _f(batch_limit)
    inp, out = _f(input_tokens), _f(output_tokens)
    batch = np.maximum(limit, 1.0)
    step = iteration_seconds(cost, batch, 0.0, batch * (inp + out / 2.0), 0.0)
    return _f(np.where(limit >= 1.0, batch / (out * step), 0.0))
