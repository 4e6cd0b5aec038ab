"""The prefill queue of a serving replica: its waiting time and a prompt's own iterations.

Part of :mod:`accelsim.models.serving`: :func:`mg1_wait_moments` (public, import it from
there), the one queueing formula of the colocated and disaggregated prefill;
:func:`wait_phases` (private), the law of that wait given a wait; and
:func:`own_iterations_excess` (private), the time a chunked prompt's own iterations take
beyond its work; :func:`prompt_pieces` and :func:`split_prompts` (private), the one rule
that cuts prompts into a chunked prefill's pieces. Units: seconds [s], tokens.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from accelsim._typing import ArrayLike, BoolArray, FloatArray
from accelsim.models.serving._iteration import _f
from accelsim.models.serving._mixture import _SINGLE, two_point, weighted_sum

_NO_CHUNK = 2.0**60  # a chunk no prompt reaches, in single precision [tokens]

Single = npt.NDArray[np.float32]
"""Single-precision arrays: the per-node arrays, the large ones (why: ``_mixture._SINGLE``)."""


class Pieces(NamedTuple):
    """The pieces a chunked prefill cuts prompts into (:func:`prompt_pieces`)."""

    full: Single
    """Full chunks ``n − 1 = ⌈P/C⌉ − 1`` per node; 0 prefill-first (single). [count]"""
    last: Single
    """The last piece ``P − (n − 1)·C`` per node; ``P`` prefill-first (single). [tokens]"""
    chunk: FloatArray
    """The chunk ``C`` per cell; 1 prefill-first. [tokens]"""
    chunked: BoolArray
    """Whether the cell prefills in chunks."""
    spread: Single
    """The node's share ``min(1, w/C)`` of its cell's width ``w`` (half the gap between its
    neighbours) in chunks; 0 within the first chunk, where the last piece is the prompt
    itself and the rule is smooth in ``P`` (single). [–]"""


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


def wait_phases(
    rate: FloatArray,
    load: FloatArray,
    w1: FloatArray,
    w2: FloatArray,
    work: FloatArray,
    probs: FloatArray,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Two-phase hyperexponential law of the M/G/1 wait given a wait, ``W₊``: ``(p₁, r₁, r₂)``.

    Parameters
    ----------
    rate : FloatArray
        Poisson arrival rate ``λ``. [1/s]
    load : FloatArray
        ``ρ = λ·E[X]``, in [0, 1). [fraction]
    w1, w2 : FloatArray
        ``E[W]`` and ``E[W²]`` (:func:`mg1_wait_moments`). [s], [s²]
    work, probs : FloatArray
        The service time ``X`` at nodes of its law (last axis) and their probabilities.
        [s], [–]

    Returns
    -------
    tuple of FloatArray
        ``p₁`` and the rates ``r₁ >= r₂`` of the phases (the short phase first). [–], [1/s]

    Notes
    -----
    ``W₊`` matches three exact properties of the M/G/1 wait: its mean ``m = E[W]/ρ``,
    second moment ``E[W²]/ρ = 2sm²``, and its Laplace transform at ``1/E[X]``, the rate of
    one mean service. By Pollaczek–Khinchine, ``E[e^{−σW₊/m}] = L = ((1 − ρ)/(1 − ρ(1 −
    E[e^{−X/E[X]}])) − (1 − ρ))/ρ`` with ``σ = m/E[X]``, a bounded functional of the
    common waits (those behind one or a few ordinary services). A third moment in its place
    is set by the rarest, longest services (``E[X⁴]``): with a wide prompt law it sends
    most of ``W₊``'s mass to a short phase near 0 and understates the median wait 2-4x
    (against a Lindley simulation of the same queue, tests/unit/test_serving_wait_law.py).

    In units of ``m``, with ``z = 1 + σμ`` for a phase mean ``μ``, the phases' law ``p``
    has ``E[z] = 1 + σ``, ``E[z²] = 1 + 2σ + σ²s`` and ``E[1/z] = L``; under ``q ∝ p/z``,
    ``E_q[z^k] = E_p[z^{k−1}]/L`` for ``k = 1, 2, 3``, so ``q`` is the two-point law of
    those three moments (:func:`~accelsim.models.serving._mixture.two_point`, closed form)
    and ``p = L·q·z``. ``L`` is clipped to what an H2 with these two moments can reach:
    from ``1/(1 + σ)`` (an exponential) to ``1 − 1/s + 1/(s(1 + σs))`` (the short phase
    an atom at 0); ``s < 1`` is taken as 1 (an exponential). M/M/1: exactly the
    exponential wait.
    """
    busy = np.maximum(_f(load), 1e-300)
    rho = _f(load)
    mean = np.maximum(_f(w1) / busy, 1e-300)
    # s = E[W₊²]/(2·E[W₊]²) = E[W²]·ρ/(2·E[W]²); no wait at all (an empty prompt's zero
    # work, E[W] = 0 or below the square's range) is the exponential's s = 1, not 0/0.
    square = _f(w1) * _f(w1)
    waits = square > 0.0
    s = np.maximum(np.where(waits, _f(w2) * busy / (2.0 * np.where(waits, square, 1.0)), 1.0), 1.0)
    x = _f(work)
    x_mean = np.maximum(weighted_sum(x, _f(probs)), 1e-300)
    sigma = mean / x_mean
    # E[e^{−X/E[X]}] in single precision (absolute error ~1e-7; the exponentials over the
    # nodes are most of this function's time).
    decay = x.astype(_SINGLE)
    # (1/E[X] capped within single precision: work of ~0 has no wait to shape)
    decay *= (-np.minimum(1.0 / x_mean, 1e30)).astype(_SINGLE)[..., None]
    np.exp(decay, out=decay)
    weights = _f(probs).astype(_SINGLE)
    transform = _f(decay @ weights if weights.ndim == 1 else np.sum(decay * weights, axis=-1))
    empty = 1.0 - rho
    target = np.where(rho > 0.0, (empty / (1.0 - rho * (1.0 - transform)) - empty) / busy, 0.0)
    exponential = 1.0 / (1.0 + sigma)
    atom = 1.0 - 1.0 / s + 1.0 / (s * (1.0 + sigma * s))
    # Just inside the edges, so both moments stay matched (at the exponential's edge the
    # long phase's weight tends to 0 as its mean grows, carrying the second moment).
    lst = np.clip(target, exponential * (1.0 + 1e-6), np.maximum(atom * (1.0 - 1e-9), exponential))
    a = 1.0 / lst
    second = (1.0 + sigma) / lst
    third_raw = (1.0 + 2.0 * sigma + sigma * sigma * s) / lst
    var = np.maximum(second - a * a, 0.0)
    spread = var > 1e-12 * a * a  # else one phase: the exponential (s <= 1)
    third = np.where(spread, third_raw - 3.0 * a * second + 2.0 * a**3, 0.0)
    values, q = two_point(a, np.where(spread, var, 0.0), third)
    z = np.maximum(values, 1.0)
    p = lst[..., None] * q * z
    p1 = np.clip(p[..., 0] / np.maximum(p[..., 0] + p[..., 1], 1e-300), 0.0, 1.0)
    mu = (z - 1.0) / np.maximum(sigma, 1e-300)[..., None]
    long = np.maximum(mu[..., 1], 1e-12)
    short = np.clip(mu[..., 0], 1e-12, long)
    return _f(p1), _f(1.0 / (short * mean)), _f(1.0 / (long * mean))


def own_iterations_excess(
    pieces: Pieces,
    per_token: FloatArray,
    full_chunk: FloatArray,
    half_chunk: FloatArray,
    floor: FloatArray,
) -> Single:
    """Time a prompt's own prefill iterations take beyond its work ``δ·P``, per node. [s]

    Parameters
    ----------
    pieces : Pieces
        The prompts' pieces under the chunk ``C`` (:func:`prompt_pieces`).
    per_token, full_chunk, half_chunk, floor : FloatArray
        The queue's time per prompt token ``δ``, and the iterations (with the decoding
        sequences) that prefill ``C``, ``C/2`` and one prompt token, ``I(C)``, ``I(C/2)``,
        ``I(1)``, broadcast against the chunk. [s], [s], [s], [s]

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
    full, last, c, chunked, spread = pieces
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
    piece: Single = np.maximum(low_, line_ + slope_ * last)
    piece -= delta_ * last
    piece += spread * (mean_ - piece)
    chunks = np.divide(last, c[..., None].astype(_SINGLE), dtype=_SINGLE)
    piece += per_chunk_ * (full + spread * chunks)
    return piece


def prompt_pieces(prompt_tokens: FloatArray, chunk_tokens: FloatArray) -> Pieces:
    """The pieces of the prompt-length nodes (last axis of ``prompt_tokens``) under the chunk
    of each cell (``chunk_tokens``, 0: prefill-first), computed once for
    :func:`own_iterations_excess` and :func:`pieces_per_prompt`. [tokens]"""
    chunk = _f(chunk_tokens)
    chunked = chunk > 0.0
    c = np.where(chunked, chunk, 1.0)
    node = _f(prompt_tokens)
    # The cells' widths depend on the nodes alone (their shape, before the broadcast).
    order = np.argsort(node, axis=-1)
    ranked = np.take_along_axis(node, order, axis=-1)
    padded = np.concatenate([ranked[..., :1], ranked, ranked[..., -1:]], axis=-1)
    width = np.empty_like(ranked)
    np.put_along_axis(width, order, (padded[..., 2:] - padded[..., :-2]) / 2.0, axis=-1)
    full, last, size = _split(node, chunk)
    spread = np.minimum(width.astype(_SINGLE) / size, 1.0)
    spread *= full > 0.0
    return Pieces(full, last, _f(c), np.asarray(chunked), spread)


def split_prompts(prompt_tokens: FloatArray, chunk_tokens: FloatArray) -> tuple[Single, Single]:
    """Full chunks ``⌈P/C⌉ − 1`` and the last piece of each prompt node (last axis) under the
    chunk of each cell, as the request DES cuts them; prefill-first (``C = 0``): 0 and ``P``.
    The one rule the prefill queue and the prompt interference take. Single precision.
    [count], [tokens]"""
    full, last, _ = _split(_f(prompt_tokens), _f(chunk_tokens))
    return full, last


def _split(node: FloatArray, chunk: FloatArray) -> tuple[Single, Single, Single]:
    """:func:`split_prompts`, and the chunk per cell against the nodes (single)."""
    # Per node and cell (the chunk varies with the load), in single precision: prefill-first
    # as one piece of a chunk far beyond any prompt (full = 0, last = P).
    size = np.where(chunk > 0.0, chunk, _NO_CHUNK)[..., None].astype(_SINGLE)
    node_ = node.astype(_SINGLE)
    full = np.ceil(node_ / size)
    full -= 1.0
    np.maximum(full, 0.0, out=full)
    return full, node_ - full * size, size


def pieces_per_prompt(pieces: Pieces, probs: FloatArray) -> FloatArray:
    """Mean iterations ``E[⌈P/C⌉]`` a prompt's prefill takes over the law's nodes (1
    prefill-first); a node above the first chunk blends toward its cell's mean,
    ``P/C + 1/2``, by its spread (as :func:`own_iterations_excess`). [count]"""
    full, last, c, chunked, spread = pieces
    count = full + 1.0 + spread * (last / c[..., None].astype(_SINGLE) - 0.5)
    return _f(np.where(chunked, np.sum(_f(probs) * count, axis=-1), 1.0))
