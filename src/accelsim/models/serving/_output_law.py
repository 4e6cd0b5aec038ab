"""TPOT quantiles over requests whose output lengths follow a law (nodes and weights).

Part of :mod:`accelsim.models.serving` (private; used by :func:`~._decode._tpot_under_load`
where ``output_nodes`` are given). A request of ``n`` output tokens averages ``n − 1`` token
gaps: the prompts it decodes through are a count whose Poisson part scales with ``n − 1``,
and their interference is divided by ``n − 1``, so a short request's TPOT moves more with
one prompt. The TPOT quantile over requests is that of the mixture over the output law's
nodes, not the TPOT of a request of the mean length. Units: seconds [s].
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from accelsim._typing import FloatArray
from accelsim.models.serving._interference import interference_law
from accelsim.models.serving._iteration import _f

_STEPS = 10
"""Safeguarded Newton steps for the mixture's quantile (:func:`_mixture_root`), started at
the least of the nodes' lower bounds: against 60 steps, equal on unsaturated cells and
within 1.3e-9 relative on saturated ones (Llama-8B-like cost, 0.1-30 requests/s,
``LogNormal`` outputs 20-1000, 5-4000, 100-300, 2-20000 tokens, prefill-first and
chunked); 8 steps left 8e-4 on a saturated cell."""


def tpot_mixture_quantiles(
    decode: tuple[FloatArray, FloatArray],
    counts: tuple[FloatArray, FloatArray, FloatArray],
    none: FloatArray,
    moments: tuple[FloatArray, FloatArray, FloatArray],
    out_nodes: FloatArray,
    out_weights: FloatArray,
    percentile: FloatArray,
) -> tuple[FloatArray, FloatArray]:
    """Median and tail TPOT over requests of the output law's nodes. [s]

    Parameters
    ----------
    decode : tuple of FloatArray
        Time of a decode iteration at the mean batch and at the batch's tail quantile
        (cells). [s]
    counts : tuple of FloatArray
        Cumulants 1-3 of the count of prompt jumps a request of each node decodes through
        (cells, nodes). [count]
    none : FloatArray
        Its ``P(N = 0)`` (cells, nodes). [fraction]
    moments : tuple of FloatArray
        Raw moments 1-3 of one jump (cells). [s^k]
    out_nodes, out_weights : FloatArray
        Output lengths at the law's nodes and their probabilities (last axis). [tokens], [–]
    percentile : FloatArray
        Tail level, in (0.5, 1). [fraction]

    Notes
    -----
    A node's interference per gap ``U = S/(n − 1)`` is the law of
    :func:`~._interference.tpot_quantiles` (0 with probability ``P(N = 0)``, else a
    three-moment hyperexponential, or where its cv given a prompt is below 1 the shifted
    exponential of two moments), so its survival is closed form and the mixture's is their
    weighted sum ``G(u) = Σⱼ wⱼ·P(Uⱼ > u)``, decreasing. The level-``q`` quantile is 0
    where ``G(0) <= 1 − q``, else the root of ``G(u) = 1 − q`` in
    ``[0, max_j u_j]`` (``u_j`` an upper bound of node ``j``'s own quantile, where every
    node's survival is at most ``1 − q``) by Newton's method on ``log G``, safeguarded.
    Nodes with one output token (no gap) have TPOT
    0, as the request DES reports them. With one node this is :func:`tpot_quantiles`'s
    law (tested to 1e-5 relative, the single precision of its mixture recursion).
    """
    nodes, weights = _f(out_nodes), _f(out_weights)
    gaps = np.maximum(nodes - 1.0, 1.0)
    cell = tuple(m[..., None] for m in moments)
    any_prompt, s1, s2, (p1, r1, r2) = interference_law(counts, none, cell, gaps)  # type: ignore[arg-type]
    mean = s1 / any_prompt
    sd = np.sqrt(np.maximum(s2 / any_prompt - mean * mean, 0.0))
    narrow = sd < mean
    # Each node's survival given a prompt as p·e^{−r₁(u − a)⁺} + (1 − p)·e^{−r₂(u − a)⁺}:
    # the hyperexponential (a = 0), or the shifted exponential (p = 1, r₁ = 1/sd, a = mean − sd).
    shift = np.where(narrow, mean - sd, 0.0)
    r1 = np.where(narrow, 1.0 / np.maximum(sd, 1e-300), r1)
    one_token = np.where(nodes > 1.0, 0.0, weights)
    w = np.where(nodes > 1.0, weights, 0.0) * any_prompt
    w1, w2 = w * np.where(narrow, 1.0, p1), w * np.where(narrow, 0.0, 1.0 - p1)
    zero_mass = np.sum(one_token, axis=-1)

    def survival(u: FloatArray) -> tuple[FloatArray, FloatArray]:
        """``G(u)`` and ``−G'(u)``."""
        x = np.maximum(u[..., None] - shift, 0.0)
        e1, e2 = w1 * np.exp(-r1 * x), w2 * np.exp(-r2 * x)
        slope = np.where(x > 0.0, r1 * e1 + r2 * e2, 0.0)
        return _f(np.sum(e1 + e2, axis=-1)), _f(np.sum(slope, axis=-1))

    out = []
    for level, base in ((_f(0.5), decode[0]), (_f(percentile), decode[1])):
        miss = 1.0 - level  # survival the quantile leaves above it
        # Each node's quantile lies between those of its slowest and fastest phase: the
        # mixture's between the least lower and the largest upper bound of its nodes
        # (the lower at the level given the nodes with a gap, mass ``kept``).
        ratio = np.log(np.maximum(any_prompt, 1e-300) / np.maximum(miss[..., None], 1e-300))
        kept = np.log(np.maximum(1.0 - zero_mass, 1e-300))[..., None]
        slow = np.maximum(np.where(narrow, r1, np.minimum(r1, r2)), 1e-300)
        fast = np.maximum(np.where(narrow, r1, np.maximum(r1, r2)), 1e-300)
        upper = np.where(w > 0.0, np.maximum(shift + ratio / slow, 0.0), 0.0)
        lower = np.where(w > 0.0, np.maximum(shift + (ratio + kept) / fast, 0.0), np.inf)
        bottom = np.minimum(np.min(lower, axis=-1), np.max(upper, axis=-1))
        u = _mixture_root(survival, (bottom, np.max(upper, axis=-1)), miss)
        out.append(_f(np.where(level > zero_mass, base + u, 0.0)))
    return out[0], out[1]


def _mixture_root(
    survival: Callable[[FloatArray], tuple[FloatArray, FloatArray]],
    bracket: tuple[FloatArray, FloatArray],
    miss: FloatArray,
) -> FloatArray:
    """``u`` in ``bracket`` with ``G(u) = miss`` (0 where ``G(0) <= miss``), ``G`` the
    decreasing survival: Newton's method on ``log G`` from the bracket's low end, a halving
    where its step leaves the bracket (flat stretches of a shifted node; geometric where
    the bracket spans decades), :data:`_STEPS` steps. [s]"""
    hi = bracket[1] * np.ones(np.shape(miss))
    lo = np.minimum(bracket[0], hi) * np.ones(np.shape(miss))
    target = np.log(np.maximum(miss, 1e-300))
    g0, _ = survival(np.zeros(np.shape(hi)))
    u = lo
    for _ in range(_STEPS):
        g, slope = survival(u)
        above = g > miss
        lo, hi = np.where(above, u, lo), np.where(above, hi, u)
        step = u + (np.log(np.maximum(g, 1e-300)) - target) * g / np.maximum(slope, 1e-300)
        inside = (step >= lo) & (step <= hi)
        # Halved in log space where the bracket spans decades (its top is a loose bound).
        half = np.where(hi > 4.0 * lo, np.sqrt(np.maximum(lo, 1e-12 * hi) * hi), 0.5 * (lo + hi))
        u = np.where(inside, step, half)
    return _f(np.where(g0 > miss, u, 0.0))
