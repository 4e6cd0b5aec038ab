"""TPOT quantiles over requests whose output lengths follow a law (nodes and weights).

Part of :mod:`accelsim.models.serving` (private; used by :func:`~._decode._tpot_under_load`
where ``output_nodes`` are given). A request of ``n`` output tokens averages ``n − 1`` token
gaps: the prompts it decodes through are a count whose Poisson part scales with ``n − 1``,
and their interference is divided by ``n − 1``, so a short request's TPOT moves more with
one prompt. The TPOT quantile over requests is that of the mixture over the output law's
nodes, not the TPOT of a request of the mean length. Units: seconds [s].
"""

from __future__ import annotations

import numpy as np

from accelsim._typing import FloatArray
from accelsim.models.serving._interference import interference_law
from accelsim.models.serving._iteration import _f

_BISECTIONS = 48
"""Halvings of the quantile's bracket ``[0, u_max]``: 2⁻⁴⁸ of the widest node's quantile,
far below any tolerance a TPOT is quoted to."""


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
    where ``G(0) <= 1 − q``, else the root of ``G(u) = 1 − q`` by bisection of
    ``[0, max_j u_j]`` (``u_j`` an upper bound of node ``j``'s own quantile, where every
    node's survival is at most ``1 − q``). Nodes with one output token (no gap) have TPOT
    0, as the request DES reports them. With one node this is :func:`tpot_quantiles`'s
    law (tested to 1e-9 relative).
    """
    nodes, weights = _f(out_nodes), _f(out_weights)
    gaps = np.maximum(nodes - 1.0, 1.0)
    cell = tuple(m[..., None] for m in moments)
    any_prompt, s1, s2, (p1, r1, r2) = interference_law(counts, none, cell, gaps)  # type: ignore[arg-type]
    mean = s1 / any_prompt
    sd = np.sqrt(np.maximum(s2 / any_prompt - mean * mean, 0.0))
    narrow = sd < mean
    shift = np.where(narrow, mean - sd, 0.0)
    scale = np.maximum(sd, 1e-300)
    one_token = np.where(nodes > 1.0, 0.0, weights)
    w = np.where(nodes > 1.0, weights, 0.0) * any_prompt
    zero_mass = np.sum(one_token, axis=-1)

    def survival(u: FloatArray) -> FloatArray:
        x = u[..., None]
        h2 = p1 * np.exp(-r1 * x) + (1.0 - p1) * np.exp(-r2 * x)
        shifted = np.exp(-np.maximum(x - shift, 0.0) / scale)
        return _f(np.sum(w * np.where(narrow, shifted, h2), axis=-1))

    out = []
    for level, base in ((_f(0.5), decode[0]), (_f(percentile), decode[1])):
        miss = 1.0 - level  # survival the quantile leaves above it
        ratio = np.log(np.maximum(any_prompt, 1e-300) / np.maximum(miss[..., None], 1e-300))
        bound = np.where(narrow, shift + sd * ratio, ratio / np.maximum(np.minimum(r1, r2), 1e-300))
        hi = np.max(np.maximum(bound, 0.0), axis=-1) * np.ones(np.shape(miss))
        lo = np.zeros(np.shape(hi))
        for _ in range(_BISECTIONS):
            mid = 0.5 * (lo + hi)
            above = survival(mid) > miss
            lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
        u = np.where(survival(np.zeros(np.shape(hi))) > miss, hi, 0.0)
        out.append(_f(np.where(level > zero_mass, base + u, 0.0)))
    return out[0], out[1]
