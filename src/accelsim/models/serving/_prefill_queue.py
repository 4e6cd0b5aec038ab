"""The prefill queue of a serving replica: its waiting time and a prompt's own iterations.

Part of :mod:`accelsim.models.serving`: :func:`mg1_wait_moments` (public, import it from
there), the one queueing formula of the colocated and disaggregated prefill;
:func:`own_iterations_excess` (private), the time a chunked prompt's own iterations take
beyond its work. Units: seconds [s], tokens.
"""

from __future__ import annotations

import numpy as np

from accelsim._typing import ArrayLike, FloatArray
from accelsim.models.serving._iteration import _f
from accelsim.models.serving._mixture import _SINGLE


def mg1_wait_moments(
    rate: ArrayLike, load: ArrayLike, x2: ArrayLike, x3: ArrayLike, x4: ArrayLike
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """First three raw moments of the FCFS M/G/1 waiting time (Takács' recursion).

    The one queueing formula of the serving model: the prefill queue of a colocated replica
    (:func:`~accelsim.models.serving.latency_under_load`) and of a disaggregated prefill replica
    (:func:`accelsim.models.serving.prefill_latency`) both call it.

    Parameters
    ----------
    rate : array_like
        Poisson arrival rate. [1/s]
    load : array_like
        ``ρ = rate · E[X]``, in [0, 1). [fraction]
    x2, x3, x4 : array_like
        Second to fourth raw moments of the service time X. [s²], [s³], [s⁴]

    Returns
    -------
    tuple of FloatArray
        ``E[W]``, ``E[W²]``, ``E[W³]``. [s], [s²], [s³]

    Notes
    -----
    ``E[W^k] = λ/(1 − ρ) Σ_{i=1..k} C(k, i) E[X^{i+1}]/(i + 1) E[W^{k−i}]`` (Takács 1962);
    ``k = 1`` is Pollaczek–Khinchine, ``λE[X²]/(2(1 − ρ))``.

    Examples
    --------
    >>> w1, _, _ = mg1_wait_moments(0.5, 0.5, 2.0, 6.0, 24.0)  # M/M/1, mean service 1 s
    >>> float(w1)  # ρ/(μ − λ) = 0.5/0.5
    1.0
    """
    lam = _f(rate)
    x2_, x3_, x4_ = _f(x2), _f(x3), _f(x4)
    scale = lam / (1.0 - _f(load))
    w1 = scale * x2_ / 2.0
    w2 = scale * (x2_ * w1 + x3_ / 3.0)
    w3 = scale * (1.5 * x2_ * w2 + x3_ * w1 + x4_ / 4.0)
    return _f(w1), _f(w2), _f(w3)


def own_iterations_excess(
    prompt_tokens: FloatArray,
    chunk_tokens: FloatArray,
    per_token: FloatArray,
    full_chunk: FloatArray,
    half_chunk: FloatArray,
    floor: FloatArray,
) -> FloatArray:
    """Time a prompt's own prefill iterations take beyond its work ``δ·P``, per node. [s]

    Parameters
    ----------
    prompt_tokens : FloatArray
        Prompt lengths ``P``, last axis the nodes of the law. [tokens]
    chunk_tokens, per_token, full_chunk, half_chunk, floor : FloatArray
        The chunk ``C`` (0: prefill-first), the queue's time per prompt token ``δ``, and
        the iterations (with the decoding sequences) that prefill ``C``, ``C/2`` and one
        prompt token, ``I(C)``, ``I(C/2)``, ``I(1)``, broadcast against
        ``prompt_tokens[..., 0]``. [tokens], [s], [s], [s], [s]

    Returns
    -------
    FloatArray
        ``(n − 1)·(I(C) − δC) + I(p) − δp``, ``n = ⌈P/C⌉``, ``p = P − (n − 1)·C`` its last
        piece; 0 prefill-first (one iteration of ``δ·P``). Single precision. [s]

    Notes
    -----
    The chunked prompt takes ``n − 1`` full chunks and its last piece, as in the request
    DES. The iteration time is a roofline: a compute line in the prompt tokens above the
    memory floor of an iteration that reads the weights, so ``I(p) = max(I(1), I(C) −
    δ'·(C − p))``, ``δ' = (I(C) − I(C/2))/(C/2)`` the compute slope (exact for a dense
    model where half a chunk is compute-bound; a memory-bound one flattens the line, as it
    does the iteration). A prompt shorter than a chunk thus pays one iteration's fixed
    part, not ``δ·P``, the per-token share of full chunks the queue's work counts (the
    prompt work ``X(P)`` and its wait are unchanged).

    A node stands for a cell of the law: above the first chunk, where the last piece
    cycles through ``(0, C]`` as ``P`` grows, its excess blends toward the average over a
    uniform last piece by the share ``min(1, w/C)`` of the cell's width ``w`` (half the
    gap between its neighbours) in chunks, so coarse cells of a wide law do not put every
    prompt of a cell at one phase of the cycle. One node (a fixed length): exact.
    """
    full, last, c, chunked, spread = _pieces(prompt_tokens, chunk_tokens)
    delta, top = _f(per_token), _f(full_chunk)
    slope = np.where(chunked, (top - _f(half_chunk)) / (c / 2.0), 0.0)
    low = np.where(chunked, _f(floor), 0.0)
    line = np.where(chunked, top - slope * c, 0.0)
    # The last piece's law-average (uniform on (0, C]): the integral of max(low, line + slope·p).
    kink = np.clip((low - line) / np.where(slope > 0.0, slope, 1.0), 0.0, c)
    kink = np.where(slope > 0.0, kink, np.where(low >= line, c, 0.0))
    mean_piece = (low * kink + line * (c - kink) + slope * (c * c - kink * kink) / 2.0) / c
    per_chunk = np.where(chunked, top - delta * c, 0.0)
    spread_mean = mean_piece - delta * c / 2.0 - per_chunk / 2.0
    # Per cell, then per node in single precision (the nodes' arrays are the large ones).
    low_, line_, slope_, delta_, per_chunk_, mean_ = (
        np.where(chunked, v, 0.0)[..., None].astype(_SINGLE)
        for v in (low, line, slope, delta, per_chunk, spread_mean)
    )
    piece = np.maximum(low_, line_ + slope_ * last)
    piece -= delta_ * last
    piece += spread * (mean_ - piece)
    return piece + per_chunk_ * (full + spread * (last / c[..., None].astype(_SINGLE)))


def _pieces(
    prompt_tokens: FloatArray, chunk_tokens: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
    """Full chunks ``n − 1`` and last piece ``p`` of each node (single precision; 0 and
    ``P`` prefill-first), the chunk (1 prefill-first), whether chunked (per cell), and
    the node's spread: the share ``min(1, w/C)`` of its cell's width ``w`` (half the gap
    between its neighbours) in chunks, 0 within the first chunk, where the last piece is
    the prompt itself and the rule is smooth in ``P``."""
    chunk = _f(chunk_tokens)
    chunked = chunk > 0.0
    c = np.where(chunked, chunk, 1.0)
    node = _f(prompt_tokens)
    full = np.where(chunked[..., None], np.maximum(np.ceil(node / c[..., None]) - 1.0, 0.0), 0.0)
    last = node - full * c[..., None]
    order = np.argsort(node, axis=-1)
    ranked = np.take_along_axis(node, order, axis=-1)
    padded = np.concatenate([ranked[..., :1], ranked, ranked[..., -1:]], axis=-1)
    width = np.empty_like(ranked)
    np.put_along_axis(width, order, (padded[..., 2:] - padded[..., :-2]) / 2.0, axis=-1)
    spread = np.where(full > 0.0, np.minimum(width / c[..., None], 1.0), 0.0)
    return (
        full.astype(_SINGLE),
        last.astype(_SINGLE),
        _f(c),
        np.asarray(chunked),
        spread.astype(_SINGLE),
    )


def pieces_per_prompt(
    prompt_tokens: FloatArray, probs: FloatArray, chunk_tokens: FloatArray
) -> FloatArray:
    """Mean iterations ``E[⌈P/C⌉]`` a prompt's prefill takes over the law's nodes (1
    prefill-first); a node above the first chunk blends toward its cell's mean,
    ``P/C + 1/2``, by its spread (as :func:`own_iterations_excess`). [count]"""
    full, last, c, chunked, spread = _pieces(prompt_tokens, chunk_tokens)
    count = full + 1.0 + spread * (last / c[..., None].astype(_SINGLE) - 0.5)
    return _f(np.where(chunked, np.sum(_f(probs) * count, axis=-1), 1.0))
