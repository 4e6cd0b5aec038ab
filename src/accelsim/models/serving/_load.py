"""Latency of one serving replica under Poisson load, and its capacity under an SLO.

Part of :mod:`accelsim.models.serving` (import the names from there):
:func:`latency_under_load` (TPOT and TTFT percentiles at a request rate) and
:func:`slo_capacity_rps` (the largest rate meeting a latency SLO). Units: seconds [s],
rates [1/s].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from accelsim._typing import ArrayLike, BoolArray, FloatArray
from accelsim.models._poisson import poisson_quantile
from accelsim.models.serving._interference import (
    interference_moments,
    prompt_interference_seconds,
    tpot_quantiles,
)
from accelsim.models.serving._iteration import (
    IterationCost,
    _f,
    iteration_seconds,
)
from accelsim.models.serving._memory import batch_limit, offline_tokens_per_s
from accelsim.models.serving._mixture import (
    _SINGLE,
    hyperexponential_wait,
    three_point,
    two_point,
    wait_mixture_quantiles,
    weighted_sum,
)
from accelsim.models.serving._prefill_queue import (
    Pieces,
    mg1_wait_moments,
    own_iterations_excess,
    pieces_per_prompt,
    prompt_pieces,
    wait_phases,
)

# Iterations of the fixed-iteration bisection on the rate: the bracket shrinks by 2**-40, far
# below any tolerance a rate is quoted to.
_RATE_ITERATIONS = 40
_SCAN_SHARES = np.linspace(0.05, 1.0, 20)
"""Shares of ``λ_sat`` :func:`slo_capacity_rps` scans before it bisects."""
# Newton steps for the MoE memory side of the iteration fixed point, started above the root
# (monotone, quadratic): 6 reach 1e-12 relative on the catalog's MoE models (tested).
_NEWTON_STEPS = 6
# Prompts per iteration in the TTFT model's Poisson sums (0..3, the last takes the tail).
_PROMPT_TERMS = 4


@dataclass(frozen=True)
class LoadLatency:
    """Latency of one replica under Poisson load (:func:`latency_under_load`).

    Every field is finite. Where ``saturated`` is True the rate is beyond what the replica
    serves: the other fields are then evaluated at the batch limit and are lower bounds,
    not predictions.
    """

    decode_batch: FloatArray
    """Mean sequences in decode (Little's law: rate · output tokens · TPOT). [count]"""
    tpot_mean_s: FloatArray
    """Mean time per output token: decode iterations plus the prompt work between them. [s]"""
    tpot_p50_s: FloatArray
    """Median time per output token over requests. [s]"""
    tpot_tail_s: FloatArray
    """TPOT at the requested percentile (Poisson batch-size quantile). [s]"""
    ttft_mean_s: FloatArray
    """Mean time to first token: residual iteration + prefill queue wait + own prefill. [s]"""
    ttft_p50_s: FloatArray
    """Median time to first token. [s]"""
    ttft_tail_s: FloatArray
    """Time to first token at the requested percentile. [s]"""
    prefill_utilization: FloatArray
    """Load of the prefill queue: rate · prefill work of one mean prompt. [fraction]"""
    saturated: BoolArray
    """True where no steady state exists (the batch slots, the decode iterations or the
    prefill queue overflow)."""
    admission_wait_mean_s: FloatArray
    """Mean wait for a batch slot (M/G/L admission queue; in ``ttft_mean_s``). [s]"""


def _iteration_root(
    cost: IterationCost,
    rate: FloatArray,
    inp: FloatArray,
    out: FloatArray,
    prefill_share: ArrayLike = 1.0,
    decode_share: ArrayLike = 1.0,
) -> tuple[FloatArray, BoolArray]:
    """Steady-state iteration time T = f(T) under load with no batch limit, and whether a
    root exists (else the work arriving exceeds the replica at any batch).

    ``prefill_share`` is 1 where the prompts' tokens are averaged into every iteration and
    0 where the iterations only decode (a disaggregated decode replica; the colocated
    replica, whose prompt work enters through ``decode_share``). ``decode_share`` ``s`` is
    the share of the replica's time left to decode iterations: the fixed point is then
    ``s·T = f(T)`` (``T`` the mean time per output token; 1: no other work).

    With ``n(t) = 1 + λ(in + out)t`` tokens, :func:`iteration_seconds` at the fixed-point
    arguments is ``max(c(t), m(t)) + comm·n(t) + overhead`` with ``c`` affine in ``t`` and
    ``m(t) = W·s_byte·(1 − (1 − a)^n(t)) + affine``, concave (affine for a dense model).
    Each excess ``g(t) = piece(t) + comm·n(t) + overhead − t`` is positive at 0 and concave,
    so ``{g ≥ 0} = [0, r]`` and the fixed point of the max is the larger root. The compute
    root is closed form; the memory root is Newton's method started at the root of the
    affine upper bound ``W·s_byte + affine`` (exact for a dense model): on a concave
    function Newton from the right of the root decreases monotonically to it, with
    quadratic convergence (tested against a 200-step bisection to 1e-12 relative).
    """
    ctx = inp + out / 2.0
    share = _f(prefill_share)
    s = np.maximum(_f(decode_share), 1e-12)
    token_rate = rate * (share * inp + out)
    s_flop, s_byte = cost.seconds_per_flop, cost.seconds_per_byte
    attention = cost.attention_flops_per_context_token
    fixed0 = cost.comm_seconds_per_token + cost.overhead_seconds
    fixed1 = cost.comm_seconds_per_token * token_rate
    compute0 = (cost.flops_per_token + attention * ctx) * s_flop + fixed0
    compute1 = (
        cost.flops_per_token * token_rate + attention * rate * (out * ctx + share * inp * inp / 2.0)
    ) * (s_flop) + (fixed1 - s)
    weights = cost.weight_bytes * s_byte
    memory0 = cost.kv_bytes_per_token * ctx * s_byte + fixed0
    memory1 = cost.kv_bytes_per_token * rate * out * ctx * s_byte + (fixed1 - s)
    untouched = 1.0 - cost.active_fraction
    log_untouched = np.log(np.maximum(untouched, 1e-300))  # u = 0 (dense): u^n = 0, no term
    stable_c, stable_m = compute1 < 0.0, memory1 < 0.0
    root_c = compute0 / np.where(stable_c, -compute1, 1.0)
    slope_m = np.where(stable_m, memory1, -1.0)
    t = (weights + memory0) / -slope_m
    for _ in range(_NEWTON_STEPS):
        power = np.power(untouched, 1.0 + token_rate * t)
        excess = weights * (1.0 - power) + memory0 + slope_m * t
        t = t - excess / (slope_m - weights * log_untouched * power * token_rate)
    return _f(np.maximum(root_c, t)), np.asarray(stable_c & stable_m, dtype=np.bool_)


def _solve_iteration(
    cost: IterationCost,
    rate: FloatArray,
    inp: FloatArray,
    out: FloatArray,
    limit: FloatArray,
    prefill_share: ArrayLike = 1.0,
    decode_share: ArrayLike = 1.0,
) -> tuple[FloatArray, BoolArray]:
    """Steady-state iteration time T = f(T) under load, and whether it exists within the
    batch limit (:func:`_iteration_root`; saturated where its batch ``λ·out·T`` passes
    ``limit − 1``, and then ``T = (limit − 1)/(λ·out)``). The disaggregated decode replica's
    fixed point; the colocated replica caps the batch at the limit instead and queues the
    admissions (:func:`latency_under_load`)."""
    root, stable = _iteration_root(cost, rate, inp, out, prefill_share, decode_share)
    t_max = np.maximum(limit - 1.0, 0.0) / (rate * out)
    feasible = stable & (root <= t_max)
    return _f(np.where(feasible, root, t_max)), ~feasible


def _decode_fixed_point(
    cost: IterationCost,
    rate: FloatArray,
    inp: FloatArray,
    out: FloatArray,
    limit: FloatArray,
    chunk: FloatArray,
    p_values: FloatArray,
    p_probs: FloatArray,
    admit: ArrayLike = 1.0,
) -> tuple[FloatArray, BoolArray, tuple[FloatArray, FloatArray, FloatArray], Pieces]:
    """Mean TPOT of a colocated replica whose prompts interfere with its decoding.

    Returns ``(T, overflow, raw moments 1-3 of x, the prompts' pieces)``, cut by the room
    ``C − B̄`` of a chunk's token budget ``C`` beside the mean decode batch ``B̄`` at the
    mean-field point (``Pieces.chunk``; 1, unchunked, prefill-first). Prompts take
    ``E = φ·λ·E[x(P)]`` of the
    replica's time (:func:`prompt_interference_seconds` over the prompt-length nodes; ``φ``
    = ``admit``, the share of the admissions that can land beside a decoding sequence, 1
    unless the batch limit is small), so
    the decode fixed point is ``(1 − E)·T = iteration_seconds(1 + B, 0, (1 + B)·ctx)``,
    ``B = λ·out·T``, solved in closed form (:func:`_iteration_root`). ``x`` depends on the
    batch only through the decode iteration a chunk shares (prefill-first: not at all); it
    is taken at the batch ``B̄`` of the mean-field point with every prompt token averaged
    into every iteration (``T̄ = iteration_seconds(1 + B̄, λ·in·T̄, …)``, below ``T``), so one
    closed-form solve gives ``T``, with no iteration on ``E`` (which oscillates for MoE
    models, whose chunk steps shrink as a larger batch touches more experts). The batch a
    sequence decodes in is capped at the limit ``L``: where the root's ``B`` passes ``L −
    1``, ``T = iteration_seconds(L, 0, L·ctx)/(1 − E)`` (continuous there; whether the
    slots hold the load is the admission queue's question, :func:`latency_under_load`).
    No root (the work arriving exceeds the replica at any batch), ``E >= 1`` (the prompts
    alone fill the replica) or ``L < 1`` overflows.
    """
    ctx = inp + out / 2.0
    chunked = np.any(chunk > 0.0)
    cap = np.maximum(limit - 1.0, 0.0)
    if chunked:
        mean_field, averaged_stable = _iteration_root(cost, rate, inp, out)
        # Sequences decoding beside a prompt: at most the limit less the prompt's slot.
        decoding = np.where(averaged_stable, np.minimum(rate * out * mean_field, cap), cap)
        averaged_overflow = ~averaged_stable
    else:
        decoding, averaged_overflow = np.zeros(np.shape(rate)), np.zeros((), dtype=np.bool_)
    b = 1.0 + decoding
    # The budget's prompt room: a token of it goes to each sequence decoding (the mean
    # batch; >= 1 as the batch limit is at most the budget).
    room = _f(np.where(chunk > 0.0, chunk - decoding, 0.0))
    pieces = prompt_pieces(p_values, room)
    x = prompt_interference_seconds(
        cost, b, b * ctx, p_values, room, pieces=(pieces.full, pieces.last)
    )
    moments = interference_moments(x, p_probs)
    busy = _f(admit) * rate * moments[0]
    root, stable = _iteration_root(cost, rate, inp, out, prefill_share=0.0, decode_share=1.0 - busy)
    within = stable & (root * rate * out <= cap)
    full = np.maximum(limit, 1.0)
    at_limit = iteration_seconds(cost, full, 0.0, full * ctx, 0.0) / np.maximum(1.0 - busy, 1e-12)
    t = _f(np.where(within, root, at_limit))
    overflow = ~stable | (busy >= 1.0) | averaged_overflow | (limit < 1.0)
    return t, np.asarray(overflow, dtype=np.bool_), moments, pieces


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
        floor = 1e-6 * theta  # (rounding at the branch point must not send θ to 0)
        # Newton on log M(θ) + θ²σ²/2 − log(1 + θ/λ) = 0 (M the nodes' transform of S/L):
        # convex (a cumulant generating function less a concave log), 0 at 0 and falling
        # there, so from the right it falls monotonically to the root; near-linear where
        # the longest node dominates (the transform itself, exponential there, crawled).
        for _ in range(_NEWTON_STEPS + 4):
            exponent = theta[:, None] * at
            top = np.max(exponent, axis=-1)
            grow = w * np.exp(exponent - top[:, None])
            total = np.sum(grow, axis=-1)
            value = top + np.log(total) + theta * theta * half_var - np.log1p(theta / lam_)
            slope = np.sum(grow * at, axis=-1) / total + 2.0 * theta * half_var
            slope -= 1.0 / (lam_ + theta)
            step = value / np.maximum(slope, 1e-300)
            theta = np.maximum(theta - np.maximum(step, 0.0), floor)
        rate_tail[need] = np.maximum(theta, 1e-300)
    # π = θ·E[A] (at most 1); no wait where C is negligible.
    waits = _f(np.where(need, np.minimum(rate_tail * mean_wait, 1.0), 0.0))
    scale = 1.0 / rate_tail
    moments = [_f(waits * k * scale**j) for j, k in ((1, 1.0), (2, 2.0), (3, 6.0))]
    return moments, waits, saturated


def _cumulants(m1: FloatArray, m2: FloatArray, m3: FloatArray, m4: FloatArray) -> list[FloatArray]:
    """The first four cumulants from the first four raw moments."""
    var = m2 - m1 * m1
    central4 = m4 - 4.0 * m1 * m3 + 6.0 * m1 * m1 * m2 - 3.0 * m1**4
    return [m1, var, m3 - 3.0 * m1 * m2 + 2.0 * m1**3, central4 - 3.0 * var * var]


def _poisson_weights(mean: FloatArray) -> list[FloatArray]:
    """Poisson probabilities of 0 .. _PROMPT_TERMS − 1, the last holding the tail mass."""
    weights = [np.exp(-mean)]
    for j in range(1, _PROMPT_TERMS):
        weights.append(weights[-1] * mean / j)
    weights[-1] = np.maximum(1.0 - np.sum(weights[:-1], axis=0), 0.0)
    return weights


def _mixture_moments(
    weights: list[FloatArray], values: list[FloatArray], order: int
) -> list[FloatArray]:
    """Raw moments 1 .. order of a discrete mixture (``values[j]`` with ``weights[j]``)."""
    moments = []
    for k in range(1, order + 1):
        total = np.zeros(np.broadcast_shapes(*(np.shape(v) for v in values + weights)))
        for w, v in zip(weights, values, strict=True):
            total = total + w * v**k
        moments.append(_f(total))
    return moments


def _tpot_under_load(
    cost: IterationCost,
    x_moments: tuple[FloatArray, FloatArray, FloatArray],
    *,
    rate: FloatArray,
    admit: FloatArray,
    t: FloatArray,
    ctx: FloatArray,
    q: FloatArray,
    out: FloatArray,
    own: FloatArray,
    wait: tuple[FloatArray, FloatArray, FloatArray],
    wait_prob: FloatArray,
    phases: tuple[FloatArray, FloatArray, FloatArray],
    seen: FloatArray,
    slots: FloatArray,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """TPOT p50 and tail of a request and the decode batch's tail quantile it takes.

    ``rate`` λ, ``admit`` φ the share of admissions that land beside a decoding sequence,
    ``t`` the decode fixed point's ``T``, ``ctx`` the mean context, ``q`` the tail level and
    ``out`` the mean output; ``own`` the tagged prompt's own prefill ``D(M = 0)``, ``wait``
    the raw moments 1-3 of its prefill wait ``W`` (the queue of admitted prompts),
    ``wait_prob`` its probability and ``phases`` the wait's; ``seen`` the others a
    decoding sequence sees at the fixed point and ``slots`` the batch limit ``L``.

    A request's decode starts as its prompt leaves the prefill queue, so the prompts it
    decodes through are not a random stretch's Poisson count: (i) those that arrived
    during its own wait and prefill are left behind it, ``~Poisson(λ'·(W + D))`` given its
    wait; (ii) those arriving during its decode-only iterations, ``~Poisson(λ'·gaps·T₀)``
    (``T₀ = (1 − E)·T``, ``λ' = φ·λ``). Each lengthens the window by ``x`` and so brings
    the prompts arriving meanwhile: its jump is an M/G/1 busy period of the services ``x``
    at rate ``λ'`` (``E = λ'·E[x]``; moments ``μ₁/(1 − E)``, ``μ₂/(1 − E)³``, ``μ₃/(1 −
    E)⁴ + 3λ'μ₂²/(1 − E)⁵``). The count ``N`` has cumulants ``c₁ = a + λ'E[W]``, ``c₂ =
    c₁ + λ'²Var W``, ``c₃ = c₁ + 3λ'²Var W + λ'³κ₃(W)`` (``a`` the Poisson part), and
    ``P(N = 0) = e^{−a}·E[e^{−λ'W}]`` from the wait's phases. With no wait and no own
    prefill this is the old Poisson count of mean ``λ'·gaps·T``. Measured in an
    instrumented request DES (Llama 3.1 8B FP8 on one H100, 4,000-token prompts, 20 output
    tokens, 5-8 requests/s): prompts per request's decode 3.0-12.7 against the Poisson
    count's 1.9-6.3, and the ones left behind at its first token, 0.68-2.32, match
    ``λ·(E[W] + D)``, 0.74-2.24. Against the request DES on those runs the TPOT p99 went
    from 1.7-2.1x the fast path's to 0.92-1.04x
    (``tests/agreement/test_serving_tpot_prefill_heavy_agree.py``).
    """
    w1, w2, w3 = wait
    p1, r1, r2 = phases
    rho, full_slots = wait_prob, slots
    gaps = np.maximum(out - 1.0, 1.0)
    lam = admit * rate  # prompts admitted beside a decoding sequence
    mu1, mu2, mu3 = x_moments
    free = 1.0 - np.clip(lam * mu1, 0.0, 1.0 - 1e-9)
    z_moments = (mu1 / free, mu2 / free**3, mu3 / free**4 + 3.0 * lam * mu2 * mu2 / free**5)
    roots = lam * gaps * t * free + lam * own  # the Poisson part of the count's mean
    var_w = np.maximum(w2 - w1 * w1, 0.0)
    k3_w = w3 - 3.0 * w1 * w2 + 2.0 * w1**3
    c1 = roots + lam * w1
    c2 = c1 + lam**2 * var_w
    c3 = c1 + 3.0 * lam**2 * var_w + lam**3 * k3_w
    no_arrival = (1.0 - rho) + rho * (p1 * r1 / (r1 + lam) + (1.0 - p1) * r2 / (r2 + lam))
    none = np.exp(-roots) * no_arrival
    t_req = t * free + c1 * z_moments[0] / gaps  # >= t: what the request's window takes
    # The decode batch of Little's law over that window, the others at most L − 1.
    batch = np.maximum(np.minimum(rate * out * t_req, full_slots - 1.0), seen)
    tail_batch = np.minimum(1.0 + poisson_quantile(q, np.maximum(batch, 1e-12)), full_slots)
    p50, tail = tpot_quantiles(
        iteration_seconds(cost, 1.0 + batch, 0.0, (1.0 + batch) * ctx, 0.0),
        iteration_seconds(cost, tail_batch, 0.0, tail_batch * ctx, 0.0),
        (c1, c2, c3),
        none,
        z_moments,
        gaps,
        q,
    )
    return p50, tail, tail_batch


def latency_under_load(
    cost: IterationCost,
    rate_rps: ArrayLike,
    input_tokens: ArrayLike,
    output_tokens: ArrayLike,
    batch_limit: ArrayLike,
    percentile: ArrayLike = 0.99,
    *,
    prefill_chunk_tokens: ArrayLike = 0.0,
    input_variance: ArrayLike = 0.0,
    input_third_moment: ArrayLike = 0.0,
    input_fourth_moment: ArrayLike | None = None,
    input_nodes: ArrayLike | None = None,
    input_weights: ArrayLike | None = None,
) -> LoadLatency:
    """TTFT and TPOT of one replica under Poisson arrivals (the analytic fast path).

    Parameters
    ----------
    cost : IterationCost
        The replica's coefficients.
    rate_rps : array_like
        Poisson arrival rate at this replica (> 0). [1/s]
    input_tokens, output_tokens : array_like
        Mean prompt and output lengths (> 0). [tokens]
    batch_limit : array_like
        Largest number of concurrent sequences (:func:`batch_limit`). [count]
    percentile : array_like, optional
        Tail quantile for ``*_tail_s``, in (0.5, 1). [fraction]
    prefill_chunk_tokens : array_like, optional
        Chunked prefill's token budget per iteration (vLLM's ``max_num_batched_tokens``,
        >= ``batch_limit``): a token for each decoding sequence, the rest, ``C − B̄`` at the
        mean decode batch ``B̄``, for prompt tokens; 0 = prefill-first (whole prompts in
        an iteration without decode). [tokens]
    input_variance, input_third_moment, input_fourth_moment : array_like, optional
        Second, third and fourth central moments of the per-request prompt length (0: every
        prompt has the mean length; the fourth defaults to ``3·variance²``, a normal's).
        Used where ``input_nodes`` is None. [tokens²], [tokens³], [tokens⁴]
    input_nodes, input_weights : array_like, optional
        Prompt lengths at nodes of the per-request law (last axis, e.g. conditional means
        over quantile cells) and their probabilities (default equal); when given, the
        prefill work's moments and the TTFT quantiles are taken over them. [tokens], [–]

    Returns
    -------
    LoadLatency
        Batch, TPOT and TTFT percentiles, prefill load and a saturation flag.

    Raises
    ------
    ValueError
        Where chunked, a ``batch_limit`` above ``prefill_chunk_tokens``.

    Notes
    -----
    With chunked prefill, ``C`` below is the prompt room of an iteration: the token budget
    less the mean decode batch at the mean-field point (the request DES gives a prompt the
    budget less the decode batch of each iteration; the mean stands for it here).

    *Decode.* A tagged request shares each decode iteration with the ``B`` others in decode
    (Poisson arrivals see time averages), and each prompt adds ``x(P)`` to the token gaps of
    every sequence decoding while it prefills
    (:func:`~accelsim.models.serving._interference.prompt_interference_seconds`: chunked,
    its chunks' roofline step over the decode iteration they share; prefill-first, its whole
    stall). Prompts take ``E = λ·E[x]`` of the replica's time, so the mean TPOT is the fixed
    point ``(1 − E)·T = iteration_seconds(1 + B, 0, (1 + B)·(in + out/2))`` with ``B =
    λ·out·T`` (Little's law), solved per roofline side in closed form (Newton for the MoE
    weight share, :func:`_solve_iteration`; ``x`` at the batch of the mean-field point with
    the prompts averaged into every iteration, a slight underestimate of ``B``); no root
    below ``(limit − 1)/(λ·out)``, ``E >= 1``, or (chunked) an averaged point beyond the
    batch limit means saturation. A request's TPOT is its decode iterations plus ``S/(out −
    1)``, ``S`` the interference of the prompts it decodes through: those left behind it in
    the prefill queue and those arriving while it decodes, each a busy period of prompt
    work (:func:`_tpot_under_load`); 0 with probability ``P(N = 0)``, else a three-moment
    hyperexponential (a shifted exponential of two moments where its cv given a prompt is
    below 1); p50 and tail are its quantiles, the tail with the decode iteration at the
    exact Poisson quantile of the batch, ``1 + F⁻¹(q; B)``, and (chunked) no longer than
    an iteration with a full chunk (a request's TPOT averages its iterations). Against the
    request DES (median DES/fast over 24 runs, 4-12 requests/s of Llama 3.1 8B on one
    H100, ``tests/agreement``): 400-token prompts, p50 1.00 and p99 1.00 chunked, 1.00 and
    0.97 prefill-first; ``LogNormal(low=50, high=8000)`` prompts, p50 0.96 and p99 1.00
    chunked, 0.98 and 0.89 prefill-first (with the prompts a request decodes through taken
    as a Poisson count of a random stretch of time: p99 1.13 and 1.75; prompts averaged
    into every iteration: 5.0 and 10.2).

    *First token.* A request is admitted only at an iteration boundary, so
    ``TTFT = R + W + D`` (independent parts):

    - ``R``, the residual of the iteration in progress at arrival where the prefill queue
      is idle (no wait): a decode iteration ``I_0 = iteration_seconds(B)``, running with
      probability ``1 − e^{−B}`` (some sequence decodes), so ``E[R^k] = (1 −
      e^{−B})·I_0^k/(k + 1)``. An iteration carries prompt pieces only while the queue is
      busy, and then what is left of it is part of ``W`` (the M/G/1 wait's residual
      service); charging every arrival a length-biased residual of the prompt-carrying
      iterations counted it twice and overstated the no-wait first token of short
      prompts (at 35 % and 59 % prefill load on ``LogNormal(50, 8000)``: 27 and 44 ms
      against the DES's 20 and ~21 ms).
    - ``D``, the tagged prompt's own prefill: ``⌈in/C⌉ − 1`` full-chunk iterations, then
      the last piece in an iteration shared with the ``M ~ Poisson(λ·E[I²]/E[I])`` prompts
      that arrived during the same iteration (``I`` the iteration in progress: ``j ~
      Poisson(ν = λT·E[⌈P/C⌉])`` prompt pieces of ``in/E[⌈P/C⌉]`` tokens; prefill-first
      ``ν = λT``, ``I_j`` prefills only), each bringing its first piece, ``E[min(P, C)]``
      tokens (prefill-first its prompt): ``D = (⌈in/C⌉ − 1)·I_C + O_M``. A prompt of
      length ``P`` adds ``X(P) − X(in)`` to it (its own prefill work, below) and, chunked,
      the change in its own iterations' fixed parts: ``⌈P/C⌉ − 1`` full chunks and a last
      piece ``p`` at the roofline ``max(I(1), I_C − δ'·(C − p))``
      (:func:`~accelsim.models.serving._prefill_queue.own_iterations_excess`; a prompt
      shorter than a chunk pays one iteration, not ``δ·P``). Light traffic: exact.
    - ``W``, queueing for the prefill (M/G/1 FCFS): prompt work ``X(P) = δ·P`` (``δ`` the
      marginal time per prompt token; prefill-first: the prompt's compute; chunked:
      ``P/C`` full-chunk iterations), plus ``a·P·(P − in)/2`` over the law's nodes (``a``
      the attention time per token pair: a 10⁵-token prompt's attention to itself is
      most of its work), load ``ρ = λ·E[X]``, waiting-time moments by Takács' recursion
      ``E[W^k] = λ/(1 − ρ) Σᵢ C(k, i) E[X^{i+1}]/(i + 1) E[W^{k−i}]`` (``k = 1``:
      Pollaczek–Khinchine).

    *Admission* (a slot of the ``L``, :func:`_admission_wait`). A request holds a slot from
    admission to its last token, ``S = W' + D + (out − 1)·T``; arrivals that find all ``L``
    held wait FCFS (the request DES: admission at a boundary while ``admitted < L``,
    head-of-line): an M/G/L queue, stable below ``λ·E[S] = L`` (``saturated`` beyond; the
    decode batch alone no longer saturates, it is capped at ``L``). The prefill queue holds
    admitted prompts only, so its geometric count of prompts ahead is truncated at ``L −
    1``: ``W'`` is ``W`` with its wait probability times ``1 − ρ^(L−1)`` (0 at ``L = 1``,
    where the replica is M/G/1 in ``S``). Prompts that join a tagged prompt's iteration or
    interrupt a decoding sequence are admitted beside it at most ``L − 1`` per holding
    time: their rates carry ``φ = min(1, (L − 1)/(λ·out·I(1)))`` (1 wherever the batch stays
    below ``L − 1``). The two waits ``A`` (admission) and ``W'`` add, independent: one wait
    ``V``, zero with probability ``(1 − π)(1 − ρ')``, else the three-moment H₂ of its
    exact first three moments (a mixture of exponentials, so the fit is well posed; it
    returns ``W'``'s own H₂ where ``A`` vanishes and ``A``'s exponential where ``W'`` does);
    where ``E[A]`` is below 1e-9 of the TTFT, ``W``'s law is kept as is, so a limit far
    above the batch reproduces the unlimited replica to float noise. Oracles: M/D/1
    (Pollaczek–Khinchine, exact to rounding; p50 and p99 within 3-4 % of a Lindley
    simulation) and the request DES at ``L = 1-8`` (``tests/agreement/
    test_serving_small_batch_agree.py``: TTFT p50 0.67-1.01, p99 0.87-1.22, TPOT p50 1.00).

    *Quantiles* (the one TTFT quantile formula, shared with the disaggregated prefill
    replica): ``Z = R + D`` as the three-point law of its first four cumulants with the
    middle point at its mean (a bounded residual keeps its median; rare multi-prompt
    iterations keep their weight at the tail), floored at ``D(M = 0)``; ``P`` over
    ``input_nodes`` (or, given only moments, the two-point law of its first three);
    ``W`` zero with probability ``1 − ρ``, else a two-phase hyperexponential matching
    the wait given a wait's mean, second moment and Pollaczek–Khinchine transform at
    ``1/E[X]`` (:func:`~accelsim.models.serving._prefill_queue.wait_phases`; a third
    moment, set by the rarest prompts, put most of it near 0 and understated the median
    wait 2-4x against the exact M/G/1 wait). The p50 and tail are the exact quantiles of
    that mixture (segment by segment between its nodes; no expansion). Oracles: the
    request DES (``tests/agreement``, median DES/fast ratio over 24 runs): fixed
    400-token prompts, 4-16 % load, chunked: p50 0.99, p99 1.03;
    ``LogNormal(low=50, high=8000)`` prompts at 20-50 % load: p50 0.94 and p99 0.84
    chunked (0.93 and 0.86 with the three-moment wait and the prompt-carrying residual
    in ``R``; 0.76 and 0.86 with every prompt's own iterations at ``δ·P``), 0.83 and
    1.23 prefill-first (before, 0.84 and 1.26; the Cornish–Fisher expansion this
    replaced: 1.08 and 3.0, 1.21 and 4.1); the mean with fixed iterations and no prefill
    work is ``T/2 + D`` exactly; ``W`` is the M/G/1 wait's (Pollaczek–Khinchine,
    Takács). Where it is weakest: (a) the median on a wide law at high prefill load. On
    one-hour runs at one rate (one replica, DES/fast median), ``LogNormal(50, 8000)``
    with 2048-token chunks: 0.99, 0.98, 1.15 at 12, 35, 59 % prefill load (0.93, 1.00,
    1.39 before), with 512: 0.97, 0.99, 1.18 (1.01, 1.25, 1.75); ``LogNormal(100,
    20000)``: 1.11, 0.93, 0.77 at 14, 42, 71 % (1.08, 1.09, 0.74), chunk 512 1.10, 0.83,
    0.76 (1.09, 1.15, 0.74): there the model overstates the median above 40 % load.
    Packing prompts into one chunk is not the gap: with iterations affine in
    their tokens, ``f + δ'·x``, the tagged prompt ends at iteration ``⌈(V + P)/C⌉`` with
    ``V`` tokens queued ahead, and the M/G/1 wait ``δ·V = (δ' + f/C)·V`` errs by at most
    one fixed part ``f`` (2-3 ms of a 61 ms chunk on Llama 3.1 8B / H100);
    (b) the p99 prefill-first (understated ~20 %); (c) near saturation of the prefill
    (``ρ → 1``) or of the batch limit, where FCFS batching of prompts and KV admission
    depart from M/G/1; (d) the prefill-first median at high prompt load (DES/fast 0.87 at
    4 requests/s on DistServe's 13B / A100 setup: the DES runs all queued prompts in one
    iteration, the model queues them one by one); (e) the nodes (conditional means)
    understate the law's spread within a cell: against 4,096 cells (test_serving_nodes)
    the p99 is within 7.1 %, the median within 9.5 % (where a chunked prompt's own time
    steps up at multiples of a short chunk).
    """
    rate = np.maximum(_f(rate_rps), 1e-300)
    inp = _f(input_tokens)
    out = _f(output_tokens)
    limit = _f(batch_limit)
    q = _f(percentile)
    chunk = _f(prefill_chunk_tokens)
    var, m3 = _f(input_variance), _f(input_third_moment)
    if input_nodes is None:
        p_values, p_probs = two_point(inp, var, m3)
    else:
        p_values = _f(input_nodes)
        p_probs = np.broadcast_to(
            _f(np.full(p_values.shape[-1], 1.0 / p_values.shape[-1]))
            if input_weights is None
            else _f(input_weights),
            p_values.shape,
        )
    ctx = inp + out / 2.0
    if np.any((chunk > 0.0) & (limit > chunk)):
        raise ValueError(
            "batch_limit exceeds prefill_chunk_tokens where chunked: each running sequence "
            "takes one token of the iteration's budget (vLLM: max_num_seqs <= "
            "max_num_batched_tokens)"
        )
    full_slots = np.maximum(limit, 1.0)
    admit = _admission_share(cost, rate, out, ctx, full_slots)
    t, overflow, x_moments, node_pieces = _decode_fixed_point(
        cost, rate, inp, out, limit, chunk, p_values, p_probs, admit
    )
    # From here ``chunk`` is the prompt room of a chunked iteration (0 prefill-first).
    chunk = np.where(node_pieces.chunked, node_pieces.chunk, 0.0)
    # Mean sequences decoding (at most the limit), and the others a decoding one sees (at
    # most the limit less its own slot).
    batch = np.minimum(rate * out * t, full_slots)
    seen = np.minimum(batch, full_slots - 1.0)

    chunked = chunk > 0.0
    piece = np.where(chunked, np.minimum(inp, chunk), inp)  # a prompt's tokens per iteration
    # The pieces of the tagged mean prompt, by the nodes' rule.
    mean_pieces = prompt_pieces(inp[..., None], chunk)
    full_chunks = np.where(chunked, _f(mean_pieces.full[..., 0]), 0.0)
    last = np.where(chunked, _f(mean_pieces.last[..., 0]), inp)
    # Decoding sequences in an iteration with prompts: all of them (chunked), none (prefill-first).
    with_prompts = np.where(chunked, seen, 0.0)
    # The iteration in progress at an arrival carries j ~ Poisson(ν) prompt pieces: a
    # prompt of P tokens runs in ⌈P/C⌉ of them, the mean piece in/E[⌈P/C⌉] (token flow kept).
    per_prompt = pieces_per_prompt(node_pieces, p_probs)
    nu = rate * t * per_prompt
    in_piece = inp / per_prompt
    # An iteration's prompt tokens: at most the budget's room (chunked), every prompt whole
    # prefill-first.
    room = np.where(chunked, chunk, np.inf)
    in_progress = [iteration_seconds(cost, batch, 0.0, batch * ctx, 0.0)] + [
        iteration_seconds(
            cost, with_prompts, np.minimum(j * in_piece, room), with_prompts * ctx, in_piece / 2.0
        )
        for j in range(1, _PROMPT_TERMS)
    ]
    i_moments = _mixture_moments(_poisson_weights(nu), in_progress, 5)
    # The iteration in progress carries prompt pieces only while the prefill queue is busy,
    # and then its residual is inside W (the M/G/1 wait's residual service); with no wait
    # (the queue idle) it is a decode iteration, running if any sequence decodes.
    # (Little's law over the decode phase, ``out − 1`` token gaps: none for one-token outputs.)
    decoding = 1.0 - np.exp(-batch * (np.maximum(out - 1.0, 0.0) / out))
    residual = [decoding * in_progress[0] ** k / (k + 1) for k in (1, 2, 3, 4)]
    # The tagged prompt: its full chunks, then its last piece with M ~ Poisson joining it.
    # Arrivals during the iteration in progress (those a free slot admits).
    joining = admit * rate * i_moments[1] / i_moments[0]
    full_chunk = iteration_seconds(
        cost, with_prompts, np.where(chunked, chunk, 0.0), with_prompts * ctx, inp / 2.0
    )
    full = full_chunks * full_chunk
    # A prompt joining the tagged one's last iteration brings its first piece, min(P, C).
    first = np.where(
        chunked,
        weighted_sum(np.minimum(p_values, np.where(chunked, chunk, np.inf)[..., None]), p_probs),
        piece,
    )
    # The tagged prompt's last piece goes first; the prompts joining it fill the room left.
    own = [
        full
        + iteration_seconds(
            cost, with_prompts, np.minimum(last + m * first, room), with_prompts * ctx, last / 2.0
        )
        for m in range(_PROMPT_TERMS)
    ]
    d_moments = _mixture_moments(_poisson_weights(joining), own, 4)

    # The queue's time per prompt token: chunked, a full chunk's per-token share (a busy
    # prefill queue fills every iteration's room); prefill-first, what one more whole
    # prompt adds to an iteration (own[1] is not capped there).
    full_rate = full_chunk / np.where(chunked, chunk, 1.0)
    per_token = np.where(chunked, full_rate, (own[1] - own[0]) / first)
    if input_nodes is None:
        # Moments only: the prompt work X = δ·P, its raw moments from P's central ones, and
        # the prompt law for the quantiles the two-point law of its first three moments.
        m4 = 3.0 * var * var if input_fourth_moment is None else _f(input_fourth_moment)
        work = per_token * inp
        x2 = per_token**2 * (inp**2 + var)
        x3 = per_token**3 * (inp**3 + 3.0 * inp * var + m3)
        x4 = per_token**4 * (inp**4 + 6.0 * inp**2 * var + 4.0 * inp * m3 + m4)
        x_nodes = per_token[..., None] * p_values
        extra = x_nodes - (per_token * inp)[..., None]
    else:
        # Over the law's nodes, a prompt's work also grows with its attention to itself:
        # X(P) = δ·P + a·P·(P − in)/2, a the attention time per token pair (compute-bound),
        # so X(in) = δ·in; the long prompts of a wide law weigh their quadratic cost.
        pair = (cost.attention_flops_per_context_token * cost.seconds_per_flop)[..., None]
        x_nodes = (
            per_token[..., None] * p_values + pair * p_values * (p_values - inp[..., None]) / 2.0
        )
        x_nodes = np.maximum(x_nodes, 0.0)
        sq = x_nodes * x_nodes
        work, x2, x3, x4 = (weighted_sum(t, p_probs) for t in (x_nodes, sq, sq * x_nodes, sq * sq))
        extra = x_nodes - (per_token * inp)[..., None]
    if np.any(chunked):
        # A prompt's own iterations by its length: a short one pays one iteration's fixed
        # part, not a full chunk's per-token share (0 prefill-first).
        half = iteration_seconds(cost, with_prompts, chunk / 2.0, with_prompts * ctx, inp / 2.0)
        one = iteration_seconds(cost, with_prompts, 1.0, with_prompts * ctx, 0.5)  # weights read
        excess = (per_token, full_chunk, half, one)
        extra = (extra - own_iterations_excess(mean_pieces, *excess)) + (
            own_iterations_excess(node_pieces, *excess)
        )
    rho_raw = rate * work
    rho = np.clip(rho_raw, 0.0, 1.0 - 1e-9)
    wait, w2, w3 = mg1_wait_moments(rate, rho, x2, x3, x4)
    phases = wait_phases(rate, rho, wait, w2, x_nodes, p_probs)
    # The prefill queue holds admitted prompts only, at most L − 1 ahead of the tagged one:
    # the M/G/1 queue's geometric count of prompts ahead truncated there (the rest wait
    # for a slot instead): a wait with probability ρ·(1 − ρ^(L−1)), its law given one kept.
    kept = 1.0 - np.power(rho, full_slots - 1.0)
    rho_kept = rho * kept
    tpot_p50, tpot_tail, tail_batch = _tpot_under_load(
        cost,
        x_moments,
        rate=rate,
        admit=admit,
        t=t,
        ctx=ctx,
        q=q,
        out=out,
        own=own[0],
        wait=(kept * wait, kept * w2, kept * w3),
        wait_prob=rho_kept,
        phases=phases,
        seen=seen,
        slots=full_slots,
    )
    r, d = _cumulants(*residual), _cumulants(*d_moments)

    w_moments = [rho_kept * m for m in _h2_moments(phases)]
    # A slot is held from admission to the last token: prefill wait, own prefill, decode.
    extra_mean = weighted_sum(extra, p_probs)
    extra_var = np.maximum(weighted_sum(extra * extra, p_probs) - extra_mean**2, 0.0)
    gaps_exact = np.maximum(out - 1.0, 0.0)
    hold = w_moments[0] + d[0] + extra_mean + gaps_exact * t
    hold_var = (
        np.maximum(w_moments[1] - w_moments[0] ** 2, 0.0)
        + d[1]
        + extra_var
        + admit * rate * gaps_exact * t * x_moments[1]
    )
    admission = _admission_wait(rate, full_slots, hold, hold_var, extra, p_probs)
    a_moments, waits_any, adm_saturated = admission
    # One wait V = A + W (independent): no wait with probability (1 − C)(1 − ρ'), else the
    # three-moment H₂ of V given a wait; where the admission wait is negligible, the
    # prefill wait's own law (unchanged from the unlimited replica).
    v1 = a_moments[0] + w_moments[0]
    v2 = a_moments[1] + 2.0 * a_moments[0] * w_moments[0] + w_moments[1]
    v3 = (
        a_moments[2]
        + 3.0 * a_moments[1] * w_moments[0]
        + 3.0 * a_moments[0] * w_moments[1]
        + w_moments[2]
    )
    any_wait = 1.0 - (1.0 - waits_any) * (1.0 - rho_kept)
    queued = a_moments[0] > 1e-9 * (r[0] + d[0] + w_moments[0])
    rho = _f(np.where(queued, any_wait, rho_kept))
    if np.any(queued):
        shape = np.shape(rho)
        merged = hyperexponential_wait(
            *(np.broadcast_to(m, shape)[queued] for m in (any_wait, v1, v2, v3))
        )
        phases = (
            np.array(np.broadcast_to(phases[0], shape)),
            np.array(np.broadcast_to(phases[1], shape)),
            np.array(np.broadcast_to(phases[2], shape)),
        )
        for ph, m in zip(phases, merged, strict=True):
            ph[queued] = m
    mean = r[0] + d[0] + wait * kept + a_moments[0]
    shortest = own[0]
    # Z = R + D (the light, bounded part) as the three-point law of its first four
    # cumulants; the prompt adds δ·(P − in) over the prompt-length law's nodes.
    var_z = r[1] + d[1]
    z_values, z_probs = three_point(
        r[0] + d[0], var_z, r[2] + d[2], r[3] + d[3] + 3.0 * var_z * var_z
    )
    # A request needs at least the iteration that prefills its own last piece.
    # In the recursion's single precision; Z points outer, prompt nodes inner (long loops).
    z_floor = np.maximum(z_values, shortest[..., None])[..., :, None].astype(_SINGLE)
    floor = in_progress[0][..., None, None].astype(_SINGLE)
    nodes = z_floor + extra[..., None, :].astype(_SINGLE)
    np.maximum(nodes, floor, out=nodes)
    probs = z_probs[..., :, None].astype(_SINGLE) * p_probs[..., None, :].astype(_SINGLE)
    nodes = nodes.reshape(*nodes.shape[:-2], -1)  # (…, Z point x prompt node), any order
    probs = probs.reshape(*probs.shape[:-2], -1)
    p50, tail = wait_mixture_quantiles(nodes, probs, rho, phases, (0.5, q))
    # A request's TPOT averages its iterations, none longer (chunked) than one with a full
    # chunk beside the tail batch, its prompt tokens attending to a prompt token's mean
    # context E[P²]/(2·E[P]): the interference's tail cannot pass it.
    reach = weighted_sum(p_values * p_values, p_probs) / (2.0 * weighted_sum(p_values, p_probs))
    widest = iteration_seconds(cost, tail_batch, chunk, tail_batch * ctx, reach)
    longest = np.where(chunked, widest, np.inf)
    tpot_p50, tpot_tail = np.minimum(tpot_p50, longest), np.minimum(tpot_tail, longest)
    saturated = overflow | (rho_raw >= 1.0) | adm_saturated

    return LoadLatency(
        decode_batch=_f(batch),
        tpot_mean_s=_f(t),
        # One-token outputs (mean 1: every output) have no token gap to time: TPOT 0, as
        # the request DES reports it, and no TPOT bound to meet.
        tpot_p50_s=_f(np.where(out > 1.0, tpot_p50, 0.0)),
        tpot_tail_s=_f(np.where(out > 1.0, np.maximum(tpot_tail, tpot_p50), 0.0)),
        ttft_mean_s=_f(np.maximum(mean, shortest)),
        ttft_p50_s=p50,
        ttft_tail_s=tail,
        prefill_utilization=_f(rho_raw),
        saturated=np.asarray(saturated, dtype=np.bool_),
        admission_wait_mean_s=_f(a_moments[0]),
    )


@dataclass(frozen=True)
class SloCapacity:
    """Largest Poisson rate per replica meeting an SLO (:func:`slo_capacity_rps`)."""

    rate_rps: FloatArray
    """Largest rate meeting both bounds; 0 where infeasible. [1/s]"""
    saturated_rps: FloatArray
    """Saturated (offline) request rate of the replica, the upper end of the search. [1/s]"""
    feasible: BoolArray
    """False where even a vanishing rate misses the SLO (or the model does not fit)."""


def slo_capacity_rps(
    cost: IterationCost,
    input_tokens: ArrayLike,
    output_tokens: ArrayLike,
    kv_capacity_tokens: ArrayLike,
    max_batch: ArrayLike,
    ttft_s: ArrayLike,
    tpot_s: ArrayLike,
    percentile: ArrayLike = 0.99,
    *,
    prefill_chunk_tokens: ArrayLike = 0.0,
    input_variance: ArrayLike = 0.0,
    input_third_moment: ArrayLike = 0.0,
    input_fourth_moment: ArrayLike | None = None,
    input_nodes: ArrayLike | None = None,
    input_weights: ArrayLike | None = None,
) -> SloCapacity:
    """Largest Poisson rate one replica serves with TTFT and TPOT within bounds at a percentile.

    Parameters
    ----------
    cost : IterationCost
        The replica's coefficients.
    input_tokens, output_tokens : array_like
        Mean prompt and output lengths (> 0). [tokens]
    kv_capacity_tokens : array_like
        KV-cache capacity. [tokens]
    max_batch : array_like
        Scheduler cap on running sequences. [count]
    ttft_s, tpot_s : array_like
        SLO bounds on time to first token and time per output token. [s]
    percentile : array_like, optional
        Percentile the bounds apply at (MLPerf: 0.99). [fraction]
    prefill_chunk_tokens, input_variance, input_third_moment, input_fourth_moment : optional
    input_nodes, input_weights : optional
        The scheduler's prefill chunk and the prompt-length law (central moments, or
        nodes and their probabilities), as in :func:`latency_under_load`. [tokens],
        [tokens²], [tokens³], [tokens⁴], [tokens], [–]
    Returns
    -------
    SloCapacity
        Rate, saturated rate and feasibility per run.

    Notes
    -----
    A scan of ``λ_sat`` at shares 0.05, 0.1, ..., 1, then bisection (fixed iteration
    count, vectorised over runs) between the last share that meets the SLO and the first
    that does not, with ``λ_sat = offline_tokens_per_s / output_tokens`` (under the chunk's
    token budget); no rate above a failing share counts (near saturation the model's TPOT
    can dip), and the result never exceeds ``λ_sat``. Infeasible (rate 0) where the SLO
    fails already at ``10⁻⁶ · λ_sat`` or the model does not fit.
    """
    inp = _f(input_tokens)
    out = _f(output_tokens)
    limit = batch_limit(kv_capacity_tokens, inp, out, max_batch)
    saturated_rps = (
        offline_tokens_per_s(cost, kv_capacity_tokens, inp, out, max_batch, prefill_chunk_tokens)
        / out
    )
    ttft_bound = _f(ttft_s)
    tpot_bound = _f(tpot_s)

    def meets(rate: FloatArray) -> BoolArray:
        lat = latency_under_load(
            cost,
            rate,
            inp,
            out,
            limit,
            percentile,
            prefill_chunk_tokens=prefill_chunk_tokens,
            input_variance=input_variance,
            input_third_moment=input_third_moment,
            input_fourth_moment=input_fourth_moment,
            input_nodes=input_nodes,
            input_weights=input_weights,
        )
        ok = (~lat.saturated) & (lat.ttft_tail_s <= ttft_bound) & (lat.tpot_tail_s <= tpot_bound)
        return np.asarray(ok, dtype=np.bool_)

    hi_rate = np.maximum(saturated_rps, 1e-300)
    feasible = meets(hi_rate * 1e-6) & (limit >= 1.0)
    # The model's latency need not rise with the rate all the way to λ_sat (beyond ~0.9 of
    # it a prompt's interference falls as the averaged batch grows: engines.serving._usage._rising),
    # so the search stops at the first failing share of a scan, as the fast path's SLO load
    # does at its first failing load node: no rate above a failing one counts.
    lo = hi_rate * 1e-6
    hi = hi_rate.copy()
    top_ok = np.ones(np.shape(hi_rate), dtype=np.bool_)
    for share in _SCAN_SHARES:
        ok = top_ok & meets(hi_rate * share)
        failed_here = top_ok & ~ok
        hi = np.where(failed_here, hi_rate * share, hi)
        top_ok = ok
        lo = np.where(ok, hi_rate * share, lo)
    for _ in range(_RATE_ITERATIONS):
        mid = 0.5 * (lo + hi)
        ok = meets(mid)
        lo = np.where(ok, mid, lo)
        hi = np.where(ok, hi, mid)
    rate = np.where(top_ok, hi_rate, lo)
    rate, saturated_rps, feasible = np.broadcast_arrays(
        np.where(feasible, rate, 0.0), np.where(limit >= 1.0, saturated_rps, 0.0), feasible
    )
    return SloCapacity(
        rate_rps=_f(rate.copy()),
        saturated_rps=_f(saturated_rps.copy()),
        feasible=np.array(feasible, dtype=np.bool_),
    )
