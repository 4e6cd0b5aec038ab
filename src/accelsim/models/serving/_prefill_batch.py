"""A prefill replica that batches its queued prompts: the iteration's shared part paid once.

Part of :mod:`accelsim.models.serving`, the queue of
:func:`~accelsim.models.serving.prefill_latency` when it is given the shared part of a
prefill iteration. A prefill-only replica (disaggregated serving, and the request DES's
prefill pool) does not serve one prompt per iteration: when an iteration ends, the next
takes every prompt that arrived meanwhile (a gated batch). An iteration over prompts
``P₁ … P_k`` takes ``f + Σ x(P_i)``: a part ``f`` paid once per iteration (the fixed
overhead and, where compute and memory times add, the weights' read) and a part ``x(P)``
per prompt (its compute). Treating each prompt as one iteration charges ``f`` to every
queued prompt, so the tail of the wait grows with ``f`` where a batching engine's does
not. Units: seconds [s], rates [1/s].
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import gammainc

from accelsim._typing import ArrayLike, FloatArray
from accelsim.models.serving._iteration import IterationCost, _f, iteration_seconds
from accelsim.models.serving._mixture import hyperexponential_wait

_P0_STEPS = 40  # outer iterations on P(no arrival in a cycle); contraction, see Notes
_BISECTION_STEPS = 40  # quantile bisection halvings (2^-40 of the bracket)


def shared_prefill_seconds(cost: IterationCost, prompt_tokens: ArrayLike) -> FloatArray:
    """The part of a prefill-only iteration paid once however many prompts it holds. [s]

    ``2·I(P) − I(2P)`` with ``I`` the one iteration formula (no decode, each prompt's
    tokens attending to half of it), at ``P`` the prompt length (the law's mean): exact
    where the iteration is affine in its prompt tokens (``I = f + δ·S``, compute and memory
    times added, or one side dominating at both sizes); the fixed overhead and TP traffic
    latency, plus the weights' read where the overlap prior leaves it exposed. Clipped to
    ``[0, I(P)]``.
    """
    prompt = _f(prompt_tokens)
    one = iteration_seconds(cost, 0.0, prompt, 0.0, prompt / 2.0)
    two = iteration_seconds(cost, 0.0, 2.0 * prompt, 0.0, prompt / 2.0)
    return _f(np.clip(2.0 * one - two, 0.0, one))


class BatchWait(NamedTuple):
    """The wait of a prompt in a gated batch queue (:func:`batch_wait`)."""

    busy: FloatArray
    """Probability an arrival finds an iteration running, ``U``. [fraction]"""
    mean: FloatArray
    """``E[W₊]``, the wait's mean given a wait (to its own iteration's start, plus the
    other prompts of its iteration). [s]"""
    shape: FloatArray
    """Gamma shape ``1/cv²`` of ``W₊`` where its coefficient of variation is below 1,
    else 0 (``W₊`` is then the hyperexponential of ``phases``). [–]"""
    phases: tuple[FloatArray, FloatArray, FloatArray]
    """``W₊`` as a two-phase hyperexponential ``(p₁, r₁, r₂)`` where ``shape`` is 0. [–],
    [1/s], [1/s]"""


def batch_wait(rate: ArrayLike, shared: ArrayLike, work: ArrayLike, probs: ArrayLike) -> BatchWait:
    """Law of the wait ``W`` in a gated batch queue with Poisson arrivals.

    Parameters
    ----------
    rate : array_like
        Arrival rate ``λ``, broadcast against ``shared``. [1/s]
    shared : array_like
        ``f``, paid once per iteration. [s]
    work : array_like
        ``x(P)`` at the prompt law's nodes (last axis). [s]
    probs : array_like
        The nodes' probabilities (last axis, summing to 1). [–]

    Returns
    -------
    BatchWait

    Notes
    -----
    A prompt's first token comes at the end of its iteration: ``TTFT = Y + W`` with
    ``Y = f + x(P)`` its own part and ``W`` the rest. Arriving while idle (probability
    ``1 − U``), ``W = 0``. Arriving during an iteration of length ``T̃`` (length-biased,
    at a uniform point ``V``), ``W₊ = (1 − V)·T̃ + C(T̃)``, ``C`` the work ``x`` of the
    others arriving during ``T̃`` (compound Poisson). The cycle ``T`` obeys
    ``T' = f + C(T)``, or ``f + x`` after an idle spell when nothing arrived
    (``P(N = 0) = p₀ = E[e^{−λT}]``): its first four raw moments solve a triangular linear
    system given ``p₀``, which is taken from a gamma law of ``T``'s first two moments and
    iterated (a contraction: ``p₀`` moves ``m₁`` by at most ``x̄/(1 − λx̄)``). ``U =
    E[T]/(E[T] + p₀/λ)``. ``W₊`` is a shifted exponential matching its mean and variance
    where its coefficient of variation is below 1 (a residual plus a sum: it usually is),
    else a two-phase hyperexponential of its first three moments. Checked against a
    simulation of the queue (tests/unit/test_serving_prefill_batch.py): p99 within 10 %,
    p50 within 5 % away from the atom's edge.
    """
    lam = np.maximum(_f(rate), 1e-300)
    f = _f(shared)
    x, p = _f(work), _f(probs)
    ex = [np.sum(p * x**k, axis=-1) for k in (1, 2, 3, 4)]
    fx = [np.sum(p * (f[..., None] + x) ** k, axis=-1) - f**k for k in (1, 2, 3, 4)]
    a, b, c, d = (lam * e for e in ex)
    p0 = np.exp(-lam * (f + ex[0]))
    for _ in range(_P0_STEPS):
        m = _cycle_moments(f, a, b, c, d, p0, fx)
        var = np.maximum(m[1] - m[0] ** 2, 0.0)
        theta = var / np.maximum(m[0], 1e-300)
        # gamma law of T: E[e^{−λT}] = (1 + λθ)^(−m₁/θ) (θ -> 0: e^{−λm₁})
        spread = theta * lam > 1e-9
        safe = np.where(spread, theta, 1.0)  # (both branches are evaluated)
        p0 = np.where(spread, np.exp(-m[0] / safe * np.log1p(lam * safe)), np.exp(-lam * m[0]))
    m = _cycle_moments(f, a, b, c, d, p0, fx)
    busy = m[0] / (m[0] + p0 / lam)
    t1, t2, t3 = (m[k] / m[0] for k in (1, 2, 3))  # length-biased cycle moments
    w1 = (0.5 + a) * m[1] / m[0]
    w2 = t2 * (1.0 / 3.0 + a + a * a) + b * t1
    w3 = t3 * (0.25 + a + 1.5 * a * a + a**3) + t2 * (1.5 * b + 3.0 * a * b) + c * t1
    cv2 = np.maximum(w2 - w1 * w1, 0.0) / np.maximum(w1 * w1, 1e-300)
    narrow = cv2 < 1.0
    # the H₂ is read only where cv >= 1; elsewhere it is fitted to an exponential's moments
    h2_w2 = np.where(narrow, 2.0 * w1 * w1, w2)
    h2_w3 = np.where(narrow, 6.0 * w1**3, w3)
    phases = hyperexponential_wait(busy, busy * w1, busy * h2_w2, busy * h2_w3)
    shape = np.where(narrow, 1.0 / np.maximum(cv2, 1e-12), 0.0)
    return BatchWait(_f(busy), _f(w1), _f(shape), phases)


def _cycle_moments(
    f: FloatArray,
    a: FloatArray,
    b: FloatArray,
    c: FloatArray,
    d: FloatArray,
    p0: FloatArray,
    fx: list[FloatArray],
) -> list[FloatArray]:
    """Raw moments 1-4 of the cycle ``T`` given ``p₀`` (``T' = f + C(T)``, or ``f + x``
    after an empty cycle; ``C``'s moments given ``T`` from its cumulants ``λE[x^k]·T``)."""
    m1 = (f + p0 * fx[0]) / (1.0 - a)
    c1 = a * m1
    m2 = (f * f + 2.0 * f * c1 + b * m1 + p0 * fx[1]) / (1.0 - a * a)
    c2 = b * m1 + a * a * m2
    m3 = (f**3 + 3.0 * f * f * c1 + 3.0 * f * c2 + c * m1 + 3.0 * a * b * m2 + p0 * fx[2]) / (
        1.0 - a**3
    )
    c3 = c * m1 + 3.0 * a * b * m2 + a**3 * m3
    lower4 = d * m1 + (4.0 * a * c + 3.0 * b * b) * m2 + 6.0 * a * a * b * m3
    m4 = (f**4 + 4.0 * f**3 * c1 + 6.0 * f * f * c2 + 4.0 * f * c3 + lower4 + p0 * fx[3]) / (
        1.0 - a**4
    )
    return [m1, m2, m3, m4]


def batch_quantiles(
    nodes: ArrayLike, probs: ArrayLike, wait: BatchWait, levels: tuple[float, ...]
) -> list[FloatArray]:
    """Quantiles of ``Y + W`` (``Y`` at ``nodes``, last axis, with ``probs``; ``W`` of
    :func:`batch_wait`) by bisection on ``F(t) = (1 − U)P(Y ≤ t) + U·P(Y + W₊ ≤ t)``,
    monotone in ``t``. [s]"""
    y, p = _f(nodes), _f(probs)
    u, mean, k = (v[..., None] for v in (wait.busy, wait.mean, wait.shape))
    p1, r1, r2 = (v[..., None] for v in wait.phases)
    gamma = k > 0.0
    rate = np.where(gamma, k / np.maximum(mean, 1e-300), 0.0)
    # beyond the last node, W₊'s survival is below (1 − q)/U: a gamma's within
    # mean + 40 sd, an H₂'s within its slow phase's log
    slow = np.minimum(r1, r2)
    reach = np.where(
        gamma,
        mean * (1.0 + 40.0 / np.sqrt(np.maximum(k, 1e-12))),
        np.log1p(np.maximum(u, 1e-300) / (1.0 - np.max(levels))) / np.maximum(slow, 1e-300),
    )
    out = []
    for q in levels:
        lo = np.min(y, axis=-1, keepdims=True) + 0.0 * u
        hi = np.max(y, axis=-1, keepdims=True) + reach
        for _ in range(_BISECTION_STEPS):
            t = 0.5 * (lo + hi)
            gap = np.maximum(t - y, 0.0)
            spread = 1.0 - p1 * np.exp(-r1 * gap) - (1.0 - p1) * np.exp(-r2 * gap)
            waited = np.where(gamma, gammainc(np.where(gamma, k, 1.0), rate * gap), spread)
            cdf = np.sum(p * ((1.0 - u) * (y <= t) + u * waited), axis=-1, keepdims=True)
            below = cdf < q
            lo, hi = np.where(below, t, lo), np.where(below, hi, t)
        out.append(_f(hi[..., 0]))
    return out
