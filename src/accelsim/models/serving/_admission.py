"""Admission to a serving replica's batch slots: the M/G/L queue of the ``L`` slots.

Part of :mod:`accelsim.models.serving` (used by :func:`._load.latency_under_load`):
:func:`_admission_share` (the admissions that can land beside a decoding sequence),
:func:`_admission_wait` (the wait for a slot: its moments, probability and overflow) and
:func:`_h2_moments` (a two-phase hyperexponential's moments). Units: seconds [s], rates [1/s].
"""

from __future__ import annotations

import numpy as np
from scipy import special

from accelsim._typing import BoolArray, FloatArray
from accelsim.models.serving._iteration import IterationCost, _f, iteration_seconds

# Newton steps on the wait's tail-decay equation (:func:`_tail_decay_rate`).
_THETA_STEPS = 10


def _admission_share(
    cost: IterationCost, rate: FloatArray, out: FloatArray, ctx: FloatArray, slots: FloatArray
) -> FloatArray:
    """Share ``φ`` of the admissions that can land beside a decoding sequence. [fraction]

    While a tagged sequence holds one of the ``L`` slots, admissions go to the other
    ``L − 1``, which turn over at most ``L − 1`` times per slot holding time ``S``: the
    admission rate beside it is ``min(λ, (L − 1)/E[S])``, ``φ = min(1, (L − 1)/a)`` with
    ``a = λ·E[S]`` the offered load in slots. ``a`` is taken at its lower bound
    ``λ·out·I(1)`` (``I(1)`` a lone sequence's decode iteration), so ``φ = 1`` wherever
    the batch stays below ``L − 1`` (the unlimited replica's results unchanged) and ``φ =
    0`` at ``L = 1`` (no prompt ever joins or interrupts a decoding sequence).
    """
    lone = iteration_seconds(cost, 1.0, 0.0, ctx, 0.0)
    low = rate * out * lone
    free = slots - 1.0
    return _f(np.where(low > free, free / np.maximum(low, 1e-300), 1.0))


def _h2_moments(phases: tuple[FloatArray, FloatArray, FloatArray]) -> list[FloatArray]:
    """Raw moments 1-3 of the two-phase hyperexponential ``(p₁, r₁, r₂)``. [s], [s²], [s³]"""
    p1, r1, r2 = phases
    mu1, mu2 = 1.0 / r1, 1.0 / r2
    return [_f(k * (p1 * mu1**n + (1.0 - p1) * mu2**n)) for n, k in ((1, 1.0), (2, 2.0), (3, 6.0))]


def _admission_wait(
    rate: FloatArray,
    slots: FloatArray,
    hold: FloatArray,
    hold_var: FloatArray,
    nodes: FloatArray,
    probs: FloatArray,
) -> tuple[list[FloatArray], FloatArray, BoolArray]:
    """Wait ``A`` for one of ``L`` batch slots (M/G/L, FCFS): its raw moments 1-3, the
    probability ``π`` of a wait in its law, and where the slots overflow.

    Parameters
    ----------
    rate : FloatArray
        Poisson arrival rate ``λ``. [1/s]
    slots : FloatArray
        The batch limit ``L`` (>= 1). [count]
    hold, hold_var : FloatArray
        Mean and variance of the slot holding time ``S``. [s], [s²]
    nodes, probs : FloatArray
        ``S``'s dependence on the prompt length at the nodes of its law (last axis; any
        offset) and their probabilities. [s], [–]

    Notes
    -----
    Offered load ``a = λ·E[S]``; stable for ``a < L``. The probability of a wait is Erlang
    C, ``C = L·B/(L − a(1 − B))``, from Erlang B ``B = p(L; a)/P(N <= L)`` of a Poisson
    count (log-space and the regularized gamma: no overflow at any ``L``); the mean wait
    ``E[A] = C·k·E[S]/(L − a)``, ``k`` Allen–Cunneen's ``(1 + c_S²)/2`` for ``c_S² >= 1``,
    else Tijms' ``c_S² + (1 − c_S²)·k_D`` with Cosmetatos' M/D/L factor ``k_D = (1 + (1 −
    ρ)(L − 1)(sqrt(4 + 5L) − 2)/(16ρL))/2`` (exact for M/G/1 and M/M/L; the plain (1 +
    c_S²)/2 understated an M/D/4 queue's mean wait by 30 % at 30 % load). Its law: 0 with
    probability ``1 − π``, else exponential of rate ``θ``, the decay rate of the wait's
    tail, root of ``λ(E[e^{θS/L}] − 1) = θ``
    (the M/G/1 queue of service ``S/L`` at the same load: Cramér–Lundberg, exact for M/G/1,
    M/M/L and M/D/L, whose wait is the E_L/D/1 queue's, Crommelin), and ``π = θ·E[A]``
    (the mean kept; ``π = C`` for M/M/L). For M/D/1 at 30-80 % load the p50 and p99 of
    this law are within 3 % of the exact wait's (a fit to the wait's transform and second
    moment overstated the p99 by 10-30 %: the wait given a wait of a near-constant
    service has a coefficient of variation below 1, which no hyperexponential has).
    ``S``'s law: the prompt-length nodes, centred on ``hold``, plus an independent normal
    part carrying the rest of ``hold_var``. ``θ``: Newton's method from the root for a
    constant ``S`` (Lambert W, an upper bound: a constant has the least transform of its
    mean), monotone on the convex equation; solved only where a wait is not negligible
    (``C > 1e-12``).
    """
    shape = np.broadcast_shapes(np.shape(rate), np.shape(slots), np.shape(hold))
    lam, n, s1, v = (np.broadcast_to(_f(x), shape) for x in (rate, slots, hold, hold_var))
    offered = lam * s1
    saturated = np.asarray(offered >= n, dtype=np.bool_)
    load = np.clip(offered / n, 0.0, 1.0 - 1e-9)
    a = load * n
    pmf = np.exp(n * np.log(np.maximum(a, 1e-300)) - a - special.gammaln(n + 1.0))
    cdf = special.gammaincc(n + 1.0, a)
    blocking = np.clip(pmf / np.maximum(cdf, 1e-300), 0.0, 1.0)
    erlang_c = _f(np.clip(n * blocking / (n - a * (1.0 - blocking)), 0.0, 1.0))
    var = v
    # M/M/L's mean wait times a factor for the service's variability: Allen–Cunneen's (1 +
    # c²)/2 for c² >= 1; below, Tijms' interpolation c² + (1 − c²)·M/D/L with Cosmetatos'
    # M/D/L factor (1 + (1 − ρ)(L − 1)(sqrt(4 + 5L) − 2)/(16ρL))/2 (both exact at L = 1).
    cv2 = var / np.maximum(s1 * s1, 1e-300)
    deterministic = 0.5 * (
        1.0
        + (1.0 - load)
        * (n - 1.0)
        * (np.sqrt(4.0 + 5.0 * n) - 2.0)
        / (16.0 * np.maximum(load, 1e-300) * n)
    )
    factor = np.where(cv2 >= 1.0, (1.0 + cv2) / 2.0, cv2 + (1.0 - cv2) * deterministic)
    mean_wait = erlang_c * factor * s1 / (n - a)
    rate_tail = np.ones(shape)  # (unused where no wait)
    need = erlang_c > 1e-12
    if np.any(need):
        full = (*shape, np.shape(nodes)[-1])
        w = np.broadcast_to(_f(probs), full)[need]
        lam_, n_, s1_, v_, rho_ = lam[need], n[need], s1[need], v[need], load[need]
        dev = _f(np.broadcast_to(nodes, full)[need])
        dev -= np.sum(w * dev, axis=-1)[:, None]
        # The normal part: what the nodes' spread leaves of the variance.
        half_var = np.maximum(v_ - np.sum(w * dev * dev, axis=-1), 0.0) / (2.0 * n_ * n_)
        at = np.maximum(s1_[:, None] + dev, 0.0) / n_[:, None]  # S/L at the nodes
        # Two upper bounds on the root in x = θ·E[S]/L, the smaller kept: a constant
        # service's, ρ(e^x − 1) = x, x = −W₋₁(−ρe^{−ρ}) − ρ; and the quadratic's,
        # e^y >= 1 + y + y²/2: x = 2(1 − ρ)/(ρ(1 + c²)) (small where S is widely spread).
        x = -special.lambertw(-rho_ * np.exp(-rho_), -1).real - rho_
        spread = 1.0 + v_ / np.maximum(s1_ * s1_, 1e-300)
        x = np.minimum(x, 2.0 * (1.0 - rho_) / (np.maximum(rho_, 1e-300) * spread))
        theta = x * n_ / np.maximum(s1_, 1e-300)
        theta = _tail_decay_rate(theta, w, at, half_var, lam_)
        rate_tail[need] = np.maximum(theta, 1e-300)
    # π = θ·E[A] (at most 1); no wait where C is negligible.
    waits = _f(np.where(need, np.minimum(rate_tail * mean_wait, 1.0), 0.0))
    scale = 1.0 / rate_tail
    moments = [_f(waits * k * scale**j) for j, k in ((1, 1.0), (2, 2.0), (3, 6.0))]
    return moments, waits, saturated


def _tail_decay_rate(
    theta: FloatArray, w: FloatArray, at: FloatArray, half_var: FloatArray, lam: FloatArray
) -> FloatArray:
    """Root ``θ > 0`` of ``log M(θ) + θ²σ²/2 − log(1 + θ/λ) = 0`` from ``theta`` above it. [1/s]

    ``M`` is the transform of ``S/L`` at its nodes ``at`` (last axis) with probabilities
    ``w``; ``σ²/2`` is ``half_var``, ``λ`` is ``lam``. Newton's method from the right: the
    equation is convex (a cumulant generating function less a concave log), 0 at 0 and
    falling there, so from the right it falls monotonically to the root; near-linear where
    the longest node dominates (the transform itself, exponential there, crawled).
    ``_THETA_STEPS`` steps, each clamped never to rise and not below ``1e-6`` of the start
    (rounding at the branch point must not send ``θ`` to 0; left of the equation's minimum
    an unclamped step heads for the root at 0).

    A hand-written loop, not ``scipy.optimize.newton``: scipy's vectorised Newton raises
    ``RuntimeError`` when no element of a call meets its tolerance within its steps, which
    the cells at the admission load's clip (``1 − 1e-9``: saturated, the equation flat at
    rounding level over decades of ``θ``) do (``test_a_far_limit_reproduces_the_unlimited_
    replica`` raised it); where it converged it agreed with this loop to 6e-9 on
    ``bench_serving_fast``'s study with ``max_batch`` 8-64 (4,096 runs), so there is no
    accuracy to gain. Known limit: at ``ρ >= 0.9999`` the Lambert-W start can fall below
    the root (``ρ = 0.99995``: start 1.54e-4/s, root 3.06e-4/s by ``brentq``), and the
    clamped loop stays at the start.
    """
    floor = 1e-6 * theta
    for _ in range(_THETA_STEPS):
        exponent = theta[:, None] * at
        top = np.max(exponent, axis=-1)
        grow = w * np.exp(exponent - top[:, None])
        total = np.sum(grow, axis=-1)
        value = top + np.log(total) + theta * theta * half_var - np.log1p(theta / lam)
        slope = np.sum(grow * at, axis=-1) / total + 2.0 * theta * half_var
        slope -= 1.0 / (lam + theta)
        step = value / np.maximum(slope, 1e-300)
        theta = np.maximum(theta - np.maximum(step, 0.0), floor)
    return _f(theta)
