"""Prefill interference: the time prompts add to a colocated replica's decode token gaps.

Part of :mod:`accelsim.models.serving` (private), used by
:func:`~accelsim.models.serving.latency_under_load`. Under continuous batching a decoding
sequence emits one token per iteration it takes part in. Iterations that also carry prompt
work are longer (chunked prefill: a chunk shares the iteration; ``max(compute, memory)``
turns a memory-bound decode step into a compute-bound one), or do not decode at all
(prefill-first: a prompt's iteration stalls every decoding sequence). Each prompt of length
``P`` therefore adds ``x(P)`` seconds to the token gaps of every sequence decoding while it
is prefilled, all through :func:`~accelsim.models.serving.iteration_seconds` (the formula
the request DES plays). Units: seconds [s], tokens [tokens], rates [1/s].
"""

from __future__ import annotations

import dataclasses

import numpy as np

from accelsim._typing import FloatArray
from accelsim.models.serving._iteration import IterationCost, _f, iteration_seconds
from accelsim.models.serving._mixture import hyperexponential_wait, wait_mixture_quantiles
from accelsim.models.serving._prefill_queue import Single, split_prompts


def prompt_interference_seconds(
    cost: IterationCost,
    decode_batch: FloatArray,
    kv_tokens: FloatArray,
    prompt_tokens: FloatArray,
    chunk_tokens: FloatArray,
    *,
    pieces: tuple[Single, Single] | None = None,
) -> FloatArray:
    """Seconds one prompt adds to the token gap of the sequences decoding while it prefills.

    Parameters
    ----------
    cost : IterationCost
        The replica's coefficients.
    decode_batch : FloatArray
        Sequences decoding in the prompt's iterations, shape ``(...)``. [count]
    kv_tokens : FloatArray
        Their cached tokens, summed, shape ``(...)``. [tokens]
    prompt_tokens : FloatArray
        Prompt lengths, shape ``(..., n)`` (nodes of the prompt-length law). [tokens]
    chunk_tokens : FloatArray
        Prefill chunk, shape ``(...)``; 0: prefill-first. [tokens]
    pieces : tuple of arrays, optional
        The prompts' full chunks and last pieces under ``chunk_tokens`` if already cut
        (:func:`~accelsim.models.serving._prefill_queue.split_prompts`). [count], [tokens]

    Returns
    -------
    FloatArray
        ``x(P)``, shape ``(..., n)``, >= 0. [s]

    Notes
    -----
    With ``T(b, k, c)`` the :func:`iteration_seconds` of ``b`` decoding sequences and ``k``
    prompt tokens each attending to ``c`` tokens, and ``T₀ = T(b, 0, 0)``:

    - chunked prefill (chunk ``C``), the prompt alone in its iterations (a short prompt
      packed with others shares an iteration: charged alone, its cost is at most the
      roofline's step from memory- to compute-bound): ``n = ⌈P/C⌉ − 1`` full chunks
      attending to ``n·C/2`` tokens on average and a last piece ``L = P − n·C``
      attending to ``n·C + L/2``: ``x = n·(T(b, C, n·C/2) − T₀) + T(b, L, n·C + L/2) − T₀``;
    - prefill-first: the prompt's own iteration, in which nothing decodes:
      ``x = T(0, P, P/2)`` (alone; prompts that arrive during one iteration share the
      next, which the decode fixed point accounts for by the part of ``x`` an iteration
      pays once, ``_decode._batched_stalls``).
    """
    cost = IterationCost(
        *(getattr(cost, f.name)[..., None] for f in dataclasses.fields(IterationCost))
    )  # coefficients per run, against the prompt nodes' last axis
    b = _f(decode_batch)[..., None]
    kv = _f(kv_tokens)[..., None]
    p = _f(prompt_tokens)
    c = _f(chunk_tokens)[..., None]
    chunked = c > 0.0
    if not np.any(chunked):
        return _f(iteration_seconds(cost, 0.0, p, 0.0, p / 2.0))
    size = np.where(chunked, c, 1.0)
    cut = split_prompts(p, chunk_tokens) if pieces is None else pieces
    full, last = (_f(v) for v in cut)  # double: mixed-precision operations are slow
    base = iteration_seconds(cost, b, 0.0, kv, 0.0)
    done = full * size  # the tokens the full chunks prefill
    with_chunk = iteration_seconds(cost, b, size, kv, done / 2.0) - base
    done += last / 2.0
    with_last = iteration_seconds(cost, b, last, kv, done) - base
    steps = full * with_chunk + with_last
    if np.all(chunked):
        return _f(steps)
    return _f(np.where(chunked, steps, iteration_seconds(cost, 0.0, p, 0.0, p / 2.0)))


def interference_moments(
    x_nodes: FloatArray, weights: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Raw moments 1-3 of ``x(P)`` over the prompt-length law's nodes (last axis). [s^k]"""
    return (
        _f(np.sum(weights * x_nodes, axis=-1)),
        _f(np.sum(weights * x_nodes**2, axis=-1)),
        _f(np.sum(weights * x_nodes**3, axis=-1)),
    )


def tpot_quantiles(
    decode_p50: FloatArray,
    decode_tail: FloatArray,
    counts: tuple[FloatArray, FloatArray, FloatArray],
    none: FloatArray,
    moments: tuple[FloatArray, FloatArray, FloatArray],
    gaps: FloatArray,
    percentile: FloatArray,
) -> tuple[FloatArray, FloatArray]:
    """Median and tail TPOT: a request's decode iterations plus the prompts it decodes through.

    Parameters
    ----------
    decode_p50, decode_tail : FloatArray
        Time of a decode iteration at the mean batch and at the batch's tail quantile. [s]
    counts : tuple of FloatArray
        Cumulants 1-3 of the number ``N`` of independent jumps ``Z`` a request's decode holds
        (Poisson of mean ``m``: ``(m, m, m)``). [count]
    none : FloatArray
        ``P(N = 0)`` (Poisson: ``e^{−m}``). [fraction]
    moments : tuple of FloatArray
        Raw moments 1-3 of one jump ``Z``. [s^k]
    gaps : FloatArray
        Token gaps of the request, ``out − 1`` (at least 1). [count]
    percentile : FloatArray
        Tail level, in (0.5, 1). [fraction]

    Returns
    -------
    tuple of FloatArray
        TPOT p50 and at ``percentile``. [s]

    Notes
    -----
    A request's TPOT is its decode iterations' mean plus ``S/(out − 1)``, ``S = Σᵢ Zᵢ``
    over the ``N`` jumps (a random sum: cumulants ``κ₁ = c₁μ₁``, ``κ₂ = c₁σ² + c₂μ₁²``,
    ``κ₃ = c₁κ₃(Z) + 3c₂μ₁σ² + c₃μ₁³`` from the count's ``cᵢ`` and the jump's mean ``μ₁``,
    variance ``σ²`` and third cumulant). ``S`` is 0 with probability ``none``, else the
    two-phase hyperexponential of its three moments given ``N ≥ 1`` (the three-moment fit,
    :func:`hyperexponential_wait`); where its coefficient of variation given ``N ≥ 1`` is
    below 1 (many prompts per request, a narrow law), it is that conditional mean less one
    sd plus an exponential of mean sd (two moments; its tail is then heavier than a
    compound Poisson's), continuous with the hyperexponential at cv = 1. The
    quantiles are those of the decode iteration plus that law
    (:func:`wait_mixture_quantiles`), the tail at the batch's tail quantile (an upper
    estimate: a request's TPOT averages its iterations).
    """
    any_prompt, s1, s2, phases = interference_law(counts, none, moments, gaps)
    shape = np.broadcast_shapes(np.shape(any_prompt), np.shape(s1), np.shape(decode_p50))
    zero = np.zeros((*shape, 1))
    levels: tuple[FloatArray, FloatArray] = (_f(0.5), _f(percentile))
    waits = wait_mixture_quantiles(
        zero, zero + 1.0, np.broadcast_to(any_prompt, shape), phases, levels
    )
    # Given a prompt, S's coefficient of variation below 1 (many prompts per request, a
    # narrow law): S is its conditional mean less one sd plus an exponential of mean sd
    # (its first two moments), whose quantile is closed form; at cv = 1 both are the same
    # exponential, so the quantiles are continuous across the switch.
    mean = s1 / any_prompt
    sd = np.sqrt(np.maximum(s2 / any_prompt - mean * mean, 0.0))
    narrow = sd < mean
    out = []
    for level, wait in zip(levels, waits, strict=True):
        tail = np.log(any_prompt / np.maximum(1.0 - level, 1e-300))
        shifted = np.where(tail > 0.0, mean - sd + sd * tail, 0.0)
        out.append(np.where(narrow, shifted, wait))
    return _f(decode_p50 + out[0]), _f(decode_tail + out[1])


def interference_law(
    counts: tuple[FloatArray, FloatArray, FloatArray],
    none: FloatArray,
    moments: tuple[FloatArray, FloatArray, FloatArray],
    gaps: FloatArray,
) -> tuple[FloatArray, FloatArray, FloatArray, tuple[FloatArray, FloatArray, FloatArray]]:
    """The law of ``S/gaps``, the interference a request's TPOT carries (arguments as in
    :func:`tpot_quantiles`): ``(P(N >= 1), E[S/gaps], E[(S/gaps)²], (p₁, r₁, r₂))``, the
    last the hyperexponential of its three moments given ``N >= 1``. [–], [s], [s²], [–, 1/s, 1/s]
    """
    c1, c2, c3 = (np.maximum(_f(c), 0.0) for c in counts)
    mu1, mu2, mu3 = moments
    var = np.maximum(mu2 - mu1 * mu1, 0.0)
    skew = mu3 - 3.0 * mu1 * mu2 + 2.0 * mu1**3
    k1 = c1 * mu1
    k2 = c1 * var + c2 * mu1 * mu1
    k3 = c1 * skew + 3.0 * c2 * mu1 * var + c3 * mu1**3
    scale = 1.0 / _f(gaps)
    s1 = k1 * scale
    s2 = (k2 + k1 * k1) * scale**2
    s3 = (k3 + 3.0 * k2 * k1 + k1**3) * scale**3
    any_prompt = np.clip(1.0 - _f(none), 1e-300, 1.0 - 1e-12)
    return any_prompt, s1, s2, hyperexponential_wait(any_prompt, s1, s2, s3)
