"""Quantiles of a delay ``Y + W``: a discrete law ``Y`` plus an independent queueing wait.

Part of :mod:`accelsim.models.serving` (private): the one quantile formula of the time to
first token, used by the colocated replica (:func:`~accelsim.models.serving.latency_under_load`)
and by the disaggregated prefill replica (:func:`~accelsim.models.serving.prefill_latency`).
``Y`` takes values ``y_i`` with probabilities ``w_i`` (nodes of the prompt-length law);
``W`` is 0 with probability ``1 − ρ`` and otherwise a two-phase hyperexponential ``W₊``
(for the prefill queue, :func:`~accelsim.models.serving._prefill_queue.wait_phases`: the
M/G/1 wait's two first moments given a wait and its transform; exact for M/M/1, where
``W₊`` is exponential). Units: seconds [s].
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from accelsim._typing import ArrayLike, FloatArray
from accelsim.models.serving._iteration import _f

_SINGLE = np.float32
"""Precision of the nodes and their recursion (the bulk of the work; a quantile's relative
error from it is ~1e-6, far below the model's): the segment's root is then solved in
double. In double precision (nodes, recursion and the prompt pieces of ``_prefill_queue``,
sorted by an argsort and two gathers) ``bench_serving_fast``'s study is 1.26-1.33x slower
(paired medians over 9 rounds in two sessions, 10-90 % 1.22-1.34; metrics within 1.9e-5
relative; ``benchmarks/bench_paths.py``)."""
_KEY, _HALF = np.dtype("<u8"), np.dtype("<u4")  # a sort key and its halves, low first
_NEWTON_STEPS = 6
"""Newton steps on ``−log`` of the CDF's exponential tail inside one segment
(:func:`_segment_root`)."""


def hyperexponential_wait(
    rho: FloatArray, w1: FloatArray, w2: FloatArray, w3: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Phases of ``W₊`` from the wait's unconditional moments: ``(p₁, r₁, r₂)``. [–], [1/s]

    ``W₊`` (the wait given a wait) has raw moments ``E[W^k]/ρ``; a two-phase
    hyperexponential has ``E[W₊^k] = k!(p₁μ₁^k + p₂μ₂^k)`` (``μ = 1/r`` the phase means),
    so ``(μ₁, μ₂)`` with ``(p₁, p₂)`` is the two-point law (:func:`two_point`) of mean
    ``E[W₊]``, second moment ``E[W₊²]/2`` and third ``E[W₊³]/6``: all three moments are
    matched (used for the compound-Poisson prompt interference of the TPOT; the prefill
    queue's wait, whose third moment the rarest prompts set, is fitted to its transform
    instead: :func:`~accelsim.models.serving._prefill_queue.wait_phases`). Where the
    moments admit no such law: squared coefficient of variation below 1 is taken as 1
    (an exponential), and a third moment below the least an H₂ can have is raised to it
    (its short phase then vanishes: an atom at no wait).
    """
    busy = np.maximum(rho, 1e-300)
    a1 = np.maximum(w1 / busy, 1e-300)
    a2 = np.maximum(w2 / busy / 2.0, a1 * a1)  # cv² >= 1
    var = a2 - a1 * a1
    sd = np.sqrt(var)
    cv = sd / a1
    third = w3 / busy / 6.0 - 3.0 * a1 * a2 + 2.0 * a1**3
    least = (cv - 1.0 / np.maximum(cv, 1e-100)) * sd**3  # lower phase mean 0
    means, probs = two_point(a1, var, np.maximum(third, least))
    short = np.maximum(means[..., 0], 1e-12 * a1)
    return _f(probs[..., 0]), _f(1.0 / short), _f(1.0 / np.maximum(means[..., 1], short))


def two_point(
    mean: FloatArray, variance: FloatArray, third: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """The two-point law with a given mean, variance and third central moment.

    Values ``μ + σx₁₂``, ``x₁₂ = (γ ∓ sqrt(γ² + 4))/2`` (``γ`` the skewness), with
    probabilities ``x₂/(x₂ − x₁)`` and ``−x₁/(x₂ − x₁)``: its first three moments are the
    given ones exactly (``x₁x₂ = −1``, ``x₁ + x₂ = γ``). Returns ``(values, probabilities)``
    on a new last axis of length 2 (both values at ``μ`` where ``σ = 0``).
    """
    sd = np.sqrt(np.maximum(_f(variance), 0.0))
    gamma = _f(third) / np.maximum(sd, 1e-100) ** 3
    gamma = np.where(sd > 0.0, gamma, 0.0)
    root = np.sqrt(gamma * gamma + 4.0)
    x1, x2 = (gamma - root) / 2.0, (gamma + root) / 2.0
    values = np.stack(np.broadcast_arrays(mean + sd * x1, mean + sd * x2), axis=-1)
    probs = np.stack(np.broadcast_arrays(x2 / root, -x1 / root), axis=-1)
    return _f(values), _f(probs)


def three_point(
    mean: FloatArray, variance: FloatArray, third: FloatArray, fourth: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """The three-point law with a given mean and second to fourth central moments whose
    middle point is the mean (the Gauss–Hermite rule for a normal's moments).

    With skewness ``γ`` and kurtosis ``κ`` (raised to Pearson's bound ``γ² + 1`` where the
    moments given fall below it), values ``μ − σa``, ``μ``, ``μ + σb`` with ``ab = κ − γ²``
    and ``b − a = γ``, probabilities ``1/((a + b)a)``, ``1 − 1/(κ − γ²)``,
    ``1/((a + b)b)``: mean, variance, third and fourth moments are matched exactly. Its
    median is the mean (for a bounded, near-symmetric delay, a residual iteration) while
    its outer points carry a rare jump's weight (probability ``~1/κ``) where a two-point
    law would move its median. Returns ``(values, probabilities)`` on a new last axis of
    length 3.
    """
    mean = _f(mean)
    var = np.maximum(_f(variance), 0.0)
    # A variance at rounding level of the mean's square is no spread: its third and fourth
    # moments are rounding noise too, and would give a skewness of ~1e8.
    spread = var > 1e-12 * mean * mean
    var = np.where(spread, var, 0.0)
    sd = np.sqrt(var)
    unit = np.where(spread, np.maximum(var, 1e-200), 1.0)  # no 0/0 in the unused branch
    gamma = np.where(spread, _f(third) / (unit * np.sqrt(unit)), 0.0)
    excess = np.maximum(np.where(spread, _f(fourth) / (unit * unit), 3.0) - gamma * gamma, 1.0)
    # a·b = κ − γ², b − a = γ: the larger root directly, the smaller as the product over it
    # (no cancellation at a large |γ|).
    big = (np.sqrt(4.0 * excess + gamma * gamma) + np.abs(gamma)) / 2.0
    small = excess / big
    low = np.where(gamma >= 0.0, small, big)
    high = np.where(gamma >= 0.0, big, small)
    values = np.stack(np.broadcast_arrays(mean - sd * low, mean + 0.0 * sd, mean + sd * high), -1)
    outer = 1.0 / (low + high)
    probs = np.stack(
        np.broadcast_arrays(outer / low, 1.0 - outer * (1.0 / low + 1.0 / high), outer / high), -1
    )
    return _f(values), _f(probs)


def weighted_sum(values: FloatArray, weights: FloatArray) -> FloatArray:
    """``Σ_i w_i·v_i`` over the last axis; one matrix-vector product where the weights are
    one vector for all cells (a short last axis makes ``np.sum`` slow per element)."""
    if np.ndim(weights) == 1:
        return _f(values @ weights)
    return _f(np.sum(weights * values, axis=-1))


def wait_mixture_quantiles(
    nodes: ArrayLike,
    weights: ArrayLike,
    rho: FloatArray,
    phases: tuple[FloatArray, FloatArray, FloatArray],
    levels: tuple[ArrayLike, ...],
) -> list[FloatArray]:
    """Quantiles of ``Y + W`` at ``levels`` (exact for the discrete ``Y`` and ``W`` above). [s]

    Parameters
    ----------
    nodes : array_like
        Values ``y_i`` of ``Y`` (delays, >= 0) on the last axis, in any order; single or
        double precision (the recursion runs in single). [s]
    weights : array_like
        Their probabilities (summing to 1 on the last axis), broadcast against ``nodes``.
    rho : FloatArray
        Probability of a wait, in [0, 1), broadcast against ``nodes[..., 0]``.
    phases : tuple of FloatArray
        ``(p₁, r₁, r₂)`` of :func:`hyperexponential_wait`. [–], [1/s], [1/s]
    levels : tuple of array_like
        Quantile levels in (0, 1), each broadcast against ``rho``.

    Notes
    -----
    ``F(t) = Σ_{y_i ≤ t} w_i (1 − ρ(p₁e^{−r₁(t − y_i)} + p₂e^{−r₂(t − y_i)}))``. Between two
    nodes, ``F(t) = S_k − A_k e^{−r₁(t − y_k)} − B_k e^{−r₂(t − y_k)}`` with ``S_k`` the
    weight up to node ``k`` and ``A_k = ρp₁Σ_{i≤k} w_i e^{−r₁(y_k − y_i)}`` (``B_k`` alike),
    by the recursion ``A_k = A_{k−1}e^{−r₁(y_k − y_{k−1})} + ρp₁w_k`` (decaying factors
    only: no overflow). The quantile lies in the segment of the last node with
    ``F(y_k) <= level``: on the jump at ``y_{k+1}`` if the segment's supremum ``S_k`` does
    not exceed ``level``, else at the root of ``−log(A_k e^{−r₁τ} + B_k e^{−r₂τ}) =
    −log(S_k − level)`` (Newton, monotone from ``τ = 0``). No bisection: a handful of array
    operations per node, shared by all levels.
    """
    p1, r1, r2 = (np.asarray(v) for v in phases)
    shape = np.broadcast_shapes(
        np.shape(nodes), np.shape(weights), (*np.shape(rho), 1), (*p1.shape, 1)
    )
    n, rest = shape[-1], shape[:-1]
    # Single or double floats as given (single: built for the recursion, no copy).
    flat_y = np.broadcast_to(np.asarray(nodes, dtype=np.result_type(nodes, _SINGLE)), shape)
    flat_w = np.broadcast_to(np.asarray(weights, dtype=np.result_type(weights, _SINGLE)), shape)
    flat_y, flat_w = flat_y.reshape(-1, n), flat_w.reshape(-1, n)
    busy, p1_, r1_, r2_ = (
        np.broadcast_to(np.asarray(v), rest).reshape(-1) for v in (rho, p1, r1, r2)
    )
    qs = [np.broadcast_to(_f(level), rest).reshape(-1) for level in levels]
    # One pass over all cells: the fast path hands over at most RUN_BLOCK runs' cells
    # (accelsim.engines.serving._usage); blocks of 8,192 cells here made no study measurably
    # faster (benchmarks/bench_paths.py, the disaggregated study's 196,608 cells: blocked/one
    # pass 1.03 [10-90 % 1.02, 1.10] and 0.96 [0.84, 1.09] in two sessions).
    got = _block_quantiles(flat_y, flat_w, busy, p1_, r1_, r2_, qs)
    return [_f(v.reshape(rest)) for v in got]


def _sorted_single(
    flat_y: FloatArray, flat_w: FloatArray
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """Nodes ascending with their weights, in single precision, nodes on the first axis
    (each step of the recursion is then a contiguous 1-D slice).

    One sort of 64-bit keys, a node's bits above its weight's: the bits of a non-negative
    single float order as its value, so the sort carries each weight with its node, with no
    index gather (an argsort and two gathers were most of a block's time). Nodes are
    delays (>= 0), rounded up to single precision (relative 6e-8).
    """
    exact = np.maximum(flat_y, flat_y.dtype.type(0.0)) + flat_y.dtype.type(0.0)  # no −0.0
    y = exact.astype(_SINGLE, copy=False)
    # Rounded up, never below the node: a quantile is then never below the shortest delay.
    if exact.dtype != _SINGLE:
        np.nextafter(y, _SINGLE(np.inf), out=y, where=y < exact)
    # Each key written as its two little-endian 32-bit halves in place (node bits high,
    # weight bits low) and read back the same way: no shifted or masked temporaries.
    key = np.empty(y.shape, _KEY)
    halves = key.view(_HALF).reshape(*y.shape, 2)
    halves[..., 1] = y.view(np.uint32)
    halves[..., 0] = flat_w.astype(_SINGLE, copy=False).view(np.uint32)
    key.sort(axis=-1)
    nodes = np.ascontiguousarray(halves[..., 1].T, dtype=np.uint32).view(_SINGLE)
    return nodes, np.ascontiguousarray(halves[..., 0].T, dtype=np.uint32).view(_SINGLE)


def _block_quantiles(
    flat_y: FloatArray,
    flat_w: FloatArray,
    busy: FloatArray,
    p1: FloatArray,
    r1: FloatArray,
    r2: FloatArray,
    qs: list[FloatArray],
) -> list[FloatArray]:
    """:func:`wait_mixture_quantiles` on (cells, nodes) arrays and per-cell parameters."""
    n = flat_y.shape[1]
    y, w = _sorted_single(flat_y, flat_w)
    fast, slow = (busy * p1).astype(_SINGLE), (busy * (1.0 - p1)).astype(_SINGLE)
    a_k, b_k, s_k = (np.empty(y.shape, _SINGLE) for _ in range(3))
    at_nodes = np.empty(y.shape, _SINGLE)
    a_k[0], b_k[0], s_k[0] = fast * w[0], slow * w[0], w[0]
    at_nodes[0] = s_k[0] - a_k[0] - b_k[0]
    # One node at a time over (runs, …) slices, into preallocated buffers (the recursion
    # is most of the latency table's cost).
    # A phase rate past 1e30/s (a vanishing wait) decays to 0 over any positive step in
    # single precision as it would in double, without overflowing the cast.
    neg_r1 = np.broadcast_to(-np.minimum(r1, 1e30), y.shape[1:]).astype(_SINGLE)
    neg_r2 = np.broadcast_to(-np.minimum(r2, 1e30), y.shape[1:]).astype(_SINGLE)
    step, scratch = np.empty(y.shape[1:], _SINGLE), np.empty(y.shape[1:], _SINGLE)
    for i in range(1, n):
        np.subtract(y[i], y[i - 1], out=step)
        for acc, neg, share in ((a_k, neg_r1, fast), (b_k, neg_r2, slow)):
            np.multiply(neg, step, out=scratch)
            np.exp(scratch, out=scratch)
            np.multiply(acc[i - 1], scratch, out=acc[i])
            np.multiply(share, w[i], out=scratch)
            acc[i] += scratch
        np.add(s_k[i - 1], w[i], out=s_k[i])
        np.subtract(s_k[i], a_k[i], out=at_nodes[i])
        at_nodes[i] -= b_k[i]
    out = []
    for q in qs:
        k = np.maximum(np.sum(at_nodes <= q, axis=0) - 1, 0)[None]

        def pick(v: np.ndarray, at: np.ndarray = k) -> FloatArray:
            return _f(np.take_along_axis(v, at, axis=0)[0])

        y_k, s, a, b = pick(y), pick(s_k), pick(a_k), pick(b_k)
        nxt = pick(y, np.minimum(k + 1, n - 1))
        last = k[0] == n - 1
        gap = s - q
        inside = gap > 0.0
        target = -np.log(np.where(inside, gap, 1.0))
        root = y_k + _segment_root(a, b, r1, r2, target)
        result = np.where(inside, np.where(last, root, np.minimum(root, nxt)), nxt)
        out.append(_f(np.where(at_nodes[0] > q, y[0], result)))
    return out


def _segment_root(
    a: FloatArray, b: FloatArray, r1: FloatArray, r2: FloatArray, target: FloatArray
) -> FloatArray:
    """``τ >= 0`` with ``−log(A e^{−r₁τ} + B e^{−r₂τ}) = target`` inside a segment. [s]

    Newton's method from ``τ = 0``: the left side is concave and nearly affine (exactly
    affine for one phase), so the steps rise monotonically to the root; ``_NEWTON_STEPS``
    fixed steps reach 1e-9 relative (tested against a 200-step bisection of the CDF), each
    clamped at ``τ >= 0`` (a cell whose quantile is on a jump, where the caller does not use
    the root, has its root below 0). A hand-written loop: the six steps are 4.6 % of
    ``bench_serving_fast``'s study (median over 7 paired rounds against no steps, 16,384
    runs), and ``scipy.optimize.newton`` in their place (vectorised, tolerance 1e-12 on
    ``τ·min(r₁, r₂)``) agrees to 7.6e-13 relative but makes that study 1.40-1.66x slower
    (paired medians over 9 rounds in two sessions, 10-90 % 1.38-1.67;
    ``benchmarks/bench_paths.py``).
    """
    tau = np.zeros(np.shape(target))
    for _ in range(_NEWTON_STEPS):
        ea, eb = a * np.exp(-r1 * tau), b * np.exp(-r2 * tau)
        total = np.maximum(ea + eb, 1e-300)
        slope = np.maximum((r1 * ea + r2 * eb) / total, 1e-300)
        tau = np.maximum(tau + (target + np.log(total)) / slope, 0.0)
    return _f(tau)
