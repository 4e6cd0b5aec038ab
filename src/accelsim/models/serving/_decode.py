"""The decode side of a serving replica under Poisson load: the iteration fixed point.

Part of :mod:`accelsim.models.serving` (the names are used by :mod:`._load` and
:mod:`._disaggregated`): :func:`_iteration_root` (the steady-state iteration time with no
batch limit), :func:`_solve_iteration` (within a batch limit), :func:`_decode_fixed_point`
(a colocated replica whose prompts interfere with its decoding) and :func:`_tpot_under_load`
(a request's TPOT quantiles). Units: seconds [s], rates [1/s].
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from accelsim._typing import ArrayLike, BoolArray, FloatArray
from accelsim.models._poisson import poisson_quantile
from accelsim.models._roots import newton_roots
from accelsim.models.serving._admission import _admission_share
from accelsim.models.serving._interference import (
    interference_moments,
    prompt_interference_seconds,
    tpot_quantiles,
)
from accelsim.models.serving._iteration import IterationCost, _f, iteration_seconds
from accelsim.models.serving._output_law import tpot_mixture_quantiles
from accelsim.models.serving._prefill_queue import Pieces, prompt_pieces

# Newton steps at most for the MoE sides of the iteration fixed point, started above the root
# (monotone, quadratic): 5-7 reach 1e-13 relative on the catalog's MoE models.
_NEWTON_STEPS = 20


def _iteration_root(
    cost: IterationCost,
    rate: FloatArray,
    inp: FloatArray,
    out: FloatArray,
    prefill_share: ArrayLike = 1.0,
    decode_share: ArrayLike = 1.0,
    lived: ArrayLike | None = None,
) -> tuple[FloatArray, BoolArray]:
    """Steady-state iteration time T = f(T) under load with no batch limit, and whether a
    root exists (else the work arriving exceeds the replica at any batch).

    ``lived`` is the output length a decoding sequence's request has, length-biased,
    ``E[out²]/E[out]`` (None: ``out``, every request of the mean length): a decode
    iteration's mean context is ``in + lived/2``. [tokens]

    ``prefill_share`` is 1 where the prompts' tokens are averaged into every iteration and
    0 where the iterations only decode (a disaggregated decode replica; the colocated
    replica, whose prompt work enters through ``decode_share``). ``decode_share`` ``s`` is
    the share of the replica's time left to decode iterations: the fixed point is then
    ``s·T = f(T)`` (``T`` the mean time per output token; 1: no other work).

    With ``n(t) = 1 + λ(in + out)t`` tokens, :func:`iteration_seconds` at the fixed-point
    arguments is ``max(c(t) + e·m(t), m(t) + e·c(t)) + comm·n(t) + overhead`` (``e`` the
    exposed share, 0 for the pure roofline) with ``c`` affine in ``t`` and ``m(t) =
    W·s_byte·(1 − (1 − a)^n(t)) + affine``, concave (affine for a dense model).
    Each excess ``g(t) = piece(t) + comm·n(t) + overhead − t`` is positive at 0 and concave,
    so ``{g ≥ 0} = [0, r]`` and the fixed point of the max is the larger root. The compute
    root is closed form where ``e = 0``; each root with a weight term is Newton's method
    (:func:`_concave_root`) started at the root of the
    affine upper bound ``W·s_byte + affine`` (exact for a dense model): on a concave
    function Newton from the right of the root decreases monotonically to it, with
    quadratic convergence (tested against a 200-step bisection to 1e-12 relative).
    """
    ctx = inp + (out if lived is None else _f(lived)) / 2.0
    share = _f(prefill_share)
    s = np.maximum(_f(decode_share), 1e-12)
    token_rate = rate * (share * inp + out)
    s_flop, s_byte = cost.seconds_per_flop, cost.seconds_per_byte
    attention = cost.attention_flops_per_context_token
    fixed0 = cost.comm_seconds_per_token + cost.overhead_seconds
    fixed1 = cost.comm_seconds_per_token * token_rate
    # attention FLOPs weighted by their time ratio (the attention's peak), in dense-FLOP time
    ratio = cost.attention_peak_ratio
    flops0 = (cost.flops_per_token + attention * ctx * ratio) * s_flop
    # prompt pairs at the prefill form's FLOPs (MLA: decompressed), as a share of decode's
    prompt_pairs = cost.prefill_attention_ratio * (share * inp * inp / 2.0)
    flops1 = (
        cost.flops_per_token * token_rate + attention * rate * (out * ctx + prompt_pairs) * ratio
    ) * s_flop
    bytes0 = cost.kv_bytes_per_token * ctx * s_byte
    bytes1 = cost.kv_bytes_per_token * rate * out * ctx * s_byte
    # Each side carries the exposed share e of the other (iteration_seconds: max(c + e·m,
    # m + e·c)); the compute side's weight term is e·W, 0 for the pure roofline.
    exposed = cost.exposed_fraction
    weights = cost.weight_bytes * s_byte
    compute0 = flops0 + exposed * bytes0 + fixed0
    compute1 = flops1 + exposed * bytes1 + (fixed1 - s)
    memory0 = bytes0 + exposed * flops0 + fixed0
    memory1 = bytes1 + exposed * flops1 + (fixed1 - s)
    untouched = 1.0 - cost.active_fraction
    stable_c, stable_m = compute1 < 0.0, memory1 < 0.0
    # A dense model's weight term is the constant e·W (n >= 1): the root in closed form.
    root_c = (exposed * weights + compute0) / np.where(stable_c, -compute1, 1.0)
    if np.any((exposed > 0.0) & (untouched > 0.0)):
        root_c = _concave_root(exposed * weights, compute0, compute1, untouched, token_rate)
    t = _concave_root(weights, memory0, memory1, untouched, token_rate)
    return _f(np.maximum(root_c, t)), np.asarray(stable_c & stable_m, dtype=np.bool_)


def _concave_root(
    weights: FloatArray,
    intercept: FloatArray,
    slope: FloatArray,
    untouched: FloatArray,
    token_rate: FloatArray,
) -> FloatArray:
    """Root ``t`` of the concave excess ``W(1 − u^{1 + r·t}) + a + s·t`` (``W`` the weight
    term, ``a`` the intercept, ``s`` the slope), by Newton's method from the root of its
    affine upper bound (``u^n`` at 0), on the right of the root; where ``s >= 0`` (no root)
    the slope is taken as −1 (the caller marks it unstable). [s]

    ``scipy.optimize.newton`` (vectorised, :func:`accelsim.models._roots.newton_roots`) on
    ``v = t/start``, so its absolute tolerance ``1e-13`` is relative to ``t``: a dense model
    (``u = 0``) starts at its root, a MoE model takes 5-7 evaluations (Mixtral 8x7B,
    Qwen3-Coder 480B, gpt-oss-120b on ``bench_serving_fast``'s study; tested against a
    200-step bisection to 1e-12 relative). It replaced 6 fixed hand-written steps: same
    roots to 4e-16 relative, and the MoE study (Mixtral, 16,384 runs) no faster with the
    loop (paired ratio loop/scipy 0.99 in two sessions, 10-90 % 0.94-1.02;
    ``benchmarks/bench_paths.py``).
    """
    log_untouched = np.log(np.maximum(untouched, 1e-300))  # u = 0 (dense): u^n = 0, no term
    slope_m = np.where(slope < 0.0, slope, -1.0)
    scale = np.maximum((weights + intercept) / -slope_m, 1e-300)

    def excess(v: FloatArray, *a: FloatArray) -> FloatArray:
        w, a0, s, log_u, rate, t0 = a
        return w * -np.expm1(log_u * (1.0 + rate * t0 * v)) + a0 + s * t0 * v

    def derivative(v: FloatArray, *a: FloatArray) -> FloatArray:
        w, _, s, log_u, rate, t0 = a
        return t0 * (s - w * log_u * np.exp(log_u * (1.0 + rate * t0 * v)) * rate)

    args = (weights, intercept, slope_m, log_untouched, token_rate, scale)
    return _f(scale * newton_roots(excess, derivative, 1.0, args, tol=1e-13, maxiter=_NEWTON_STEPS))


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
    lived: ArrayLike | None = None,
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
    alone fill the replica) or ``L < 1`` overflows. Prefill-first, the prompts that arrive
    during one iteration are prefilled together, as the request DES does, so ``x`` is
    solved twice: alone, then with the part an iteration pays once shared by the prompts
    per prefill iteration at the first ``T`` (:func:`_batched_stalls`). ``lived``: the
    length-biased output (:func:`_iteration_root`; None: ``out``).
    """
    ctx = inp + (out if lived is None else _f(lived)) / 2.0
    chunked = np.any(chunk > 0.0)
    cap = np.maximum(limit - 1.0, 0.0)
    if chunked:
        mean_field, averaged_stable = _iteration_root(cost, rate, inp, out, lived=lived)
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
    root, stable = _iteration_root(
        cost, rate, inp, out, prefill_share=0.0, decode_share=1.0 - busy, lived=lived
    )
    first = _f(chunk) <= 0.0  # prefill-first cells (a chunked one keeps its steps)
    if np.any(first):
        solve = _JointStalls(cost, p_values, p_probs, x, _f(admit) * rate, (rate, inp, out, lived))
        t_joint = solve.root()
        x = _f(
            np.where(np.broadcast_to(first, np.shape(root))[..., None], solve.stalls(t_joint), x)
        )
        moments = interference_moments(x, p_probs)
        busy = _f(admit) * rate * moments[0]
        root, stable = _iteration_root(
            cost, rate, inp, out, prefill_share=0.0, decode_share=1.0 - busy, lived=lived
        )
    within = stable & (root * rate * out <= cap)
    full = np.maximum(limit, 1.0)
    at_limit = iteration_seconds(cost, full, 0.0, full * ctx, 0.0) / np.maximum(1.0 - busy, 1e-12)
    t = _f(np.where(within, root, at_limit))
    overflow = ~stable | (busy >= 1.0) | averaged_overflow | (limit < 1.0)
    return t, np.asarray(overflow, dtype=np.bool_), moments, pieces


_JOINT_TOLERANCE = 1e-7
"""Relative width at which :class:`_JointStalls` stops bisecting the log of ``T`` (far below
the model's accuracy). The joint point costs speed on prefill-first replicas only
(``bench_serving_fast``'s prefill-first case: 6,300-6,600 runs/s, against 16,979 with the
two passes it replaces and 4,845 at 1e-12; the chunked fixed fleet is unchanged, ~13-14k).
An Illinois regula falsi was tried and was no faster: each step re-solves the decode point
over the prompt nodes, and the widest bracket (past the unshared stalls' fold) sets the
count."""


class _JointStalls:
    """Prefill-first: the mean TPOT ``T`` and the batched stalls as one fixed point.

    The stalls shrink as ``T`` grows (more prompts arrive during an iteration and share its
    once-paid part, :func:`_batched_stalls`), and the root ``R`` of the decode point grows
    with the stalls: ``T = R(T)`` with ``R`` non-increasing, so ``T − R(T)`` rises and has
    one zero. It lies between ``R(∞)`` (every stall fully shared) and ``R(R(∞))``, and
    between ``R(T₁)`` and ``T₁ = R(0)`` (no stall shared) where that exists; solved
    by bisection of the log on that bracket (where ``R(R(∞))`` does not exist, up to
    ``10⁶·R(∞)``). Two passes (a root with the
    stalls unshared, then one with them shared at that root) made ``T`` fall with the load
    near the first pass's fold, and called the replica saturated past it."""

    def __init__(
        self,
        cost: IterationCost,
        p_values: FloatArray,
        p_probs: FloatArray,
        x: FloatArray,
        lam: FloatArray,
        load: tuple[FloatArray, FloatArray, FloatArray, ArrayLike | None],
    ) -> None:
        self.cost, self.p_values, self.p_probs, self.x, self.lam = cost, p_values, p_probs, x, lam
        self.load = load

    def stalls(self, t: FloatArray) -> FloatArray:
        """Each prompt node's stall with the prompts of an iteration of ``t`` shared. [s]"""
        return _batched_stalls(self.cost, self.p_values, self.x, self.lam, t)

    def decode_root(self, t: FloatArray) -> tuple[FloatArray, BoolArray]:
        """``R(t)`` and whether it exists, the stalls shared at ``t``. [s]"""
        rate, inp, out, lived = self.load
        busy = self.lam * interference_moments(self.stalls(t), self.p_probs)[0]
        root, stable = _iteration_root(
            self.cost, rate, inp, out, prefill_share=0.0, decode_share=1.0 - busy, lived=lived
        )
        return root, stable & (busy < 1.0)

    def root(self) -> FloatArray:
        """The joint ``T`` where it exists, else 0 (the caller's solve then overflows). [s]"""
        lo, ok = self.decode_root(np.full(np.shape(self.lam), 1e12))
        lo = np.where(ok, lo, 1.0)
        hi, ok_hi = self.decode_root(lo)
        # R(R(∞)) bounds the zero where it exists; else the zero lies further up
        hi = np.where(ok_hi, np.maximum(hi, lo), 1e6 * lo)
        # tighter where the stalls unshared have a root T₁ = R(0): T₁ >= T >= R(T₁)
        first, ok_first = self.decode_root(np.zeros(np.shape(self.lam)))
        second, ok_second = self.decode_root(np.where(ok_first, first, 0.0))
        tight = ok_first & ok_second & (second >= lo) & (first <= hi)
        lo, hi = np.where(tight, second, lo), np.where(tight, np.maximum(first, second), hi)
        for _ in range(80):
            mid = np.sqrt(lo * hi)
            r, fine = self.decode_root(mid)
            above = fine & (r <= mid)
            lo, hi = np.where(above, lo, mid), np.where(above, mid, hi)
            if np.all(hi <= lo * (1.0 + _JOINT_TOLERANCE)):
                break
        r, fine = self.decode_root(hi)
        return _f(np.where(ok & fine & (r <= hi * (1.0 + 1e-9)), hi, 0.0))


def _batched_stalls(
    cost: IterationCost, p_values: FloatArray, x: FloatArray, lam: FloatArray, t: FloatArray
) -> FloatArray:
    """Prefill-first stalls with the prompts that arrive during one iteration prefilled
    together: each prompt's stall ``x(P)`` less the share ``f·(1 − 1/b̄)`` of the part an
    iteration pays once (``f = 2·T(0, P, P/2) − T(0, 2P, P/2)``), ``b̄ = λ'T/(1 − e^{−λ'T})``
    the prompts per prefill iteration (the arrivals during an iteration of length ``T``,
    given one). [s]"""
    one = x
    two = iteration_seconds(
        IterationCost(
            *(getattr(cost, f.name)[..., None] for f in dataclasses.fields(IterationCost))
        ),
        0.0,
        2.0 * p_values,
        0.0,
        p_values / 2.0,
    )
    shared = np.clip(2.0 * one - two, 0.0, one)
    m = np.maximum(lam * t, 1e-12)[..., None]
    per_batch = m / -np.expm1(-m)
    return _f(one - shared * (1.0 - 1.0 / per_batch))


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
    out_law: tuple[FloatArray, FloatArray] | None = None,
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

    ``out_law`` (the output law's nodes and weights, last axis; None: every request has the
    mean output ``out``): a request of ``n`` tokens has ``n − 1`` gaps, the Poisson part of
    its count scales with them, and the quantiles are those of the mixture over the nodes
    (:func:`~._output_law.tpot_mixture_quantiles`); the decode batch stays Little's law's
    at the mean output.
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
    decode_p50 = iteration_seconds(cost, 1.0 + batch, 0.0, (1.0 + batch) * ctx, 0.0)
    decode_tail = iteration_seconds(cost, tail_batch, 0.0, tail_batch * ctx, 0.0)
    if out_law is not None:
        # Per node of the output law (last axis): the count's Poisson part scales with the
        # node's gaps, the wait and own-prefill parts do not.
        node_gaps = np.maximum(_f(out_law[0]) - 1.0, 1.0)
        node_roots = (lam * t * free)[..., None] * node_gaps + (lam * own)[..., None]
        n1 = node_roots + (lam * w1)[..., None]
        n2 = n1 + (lam**2 * var_w)[..., None]
        n3 = n1 + (3.0 * lam**2 * var_w + lam**3 * k3_w)[..., None]
        p50, tail = tpot_mixture_quantiles(
            (decode_p50, decode_tail),
            (n1, n2, n3),
            np.exp(-node_roots) * no_arrival[..., None],
            z_moments,
            _f(out_law[0]),
            _f(out_law[1]),
            q,
        )
        return p50, tail, tail_batch
    p50, tail = tpot_quantiles(decode_p50, decode_tail, (c1, c2, c3), none, z_moments, gaps, q)
    return p50, tail, tail_batch


@dataclass(frozen=True)
class _DecodeState:
    """The replica at its decode fixed point: what every TTFT and TPOT stage reads."""

    cost: IterationCost
    rate: FloatArray
    inp: FloatArray
    out: FloatArray
    ctx: FloatArray
    slots: FloatArray
    """The batch limit, at least 1. [count]"""
    admit: FloatArray
    t: FloatArray
    overflow: BoolArray
    x_moments: tuple[FloatArray, FloatArray, FloatArray]
    node_pieces: Pieces
    chunk: FloatArray
    """A chunked iteration's prompt room (0 prefill-first). [tokens]"""
    chunked: BoolArray
    batch: FloatArray
    """Mean sequences decoding, at most the limit. [count]"""
    seen: FloatArray
    """The others a decoding sequence sees, at most the limit less its own slot. [count]"""
    with_prompts: FloatArray
    """Sequences decoding in an iteration with prompts: all (chunked), none (prefill-first)."""
    p_values: FloatArray
    p_probs: FloatArray


def _decode_state(
    cost: IterationCost,
    rate_rps: ArrayLike,
    input_tokens: ArrayLike,
    output_tokens: ArrayLike,
    batch_limit: ArrayLike,
    prefill_chunk_tokens: ArrayLike,
    p_values: FloatArray,
    p_probs: FloatArray,
    lived: FloatArray | None = None,
) -> _DecodeState:
    """The decode fixed point (:func:`~._decode._decode_fixed_point`), the admissions that
    land beside a decoding sequence and the batches that follow from them (``lived``: the
    length-biased output, :func:`_iteration_root`; None: the mean)."""
    rate = np.maximum(_f(rate_rps), 1e-300)
    inp, out, limit = _f(input_tokens), _f(output_tokens), _f(batch_limit)
    ctx = inp + (out if lived is None else lived) / 2.0
    full_slots = np.maximum(limit, 1.0)
    admit = _admission_share(cost, rate, out, ctx, full_slots)
    t, overflow, x_moments, node_pieces = _decode_fixed_point(
        cost, rate, inp, out, limit, _f(prefill_chunk_tokens), p_values, p_probs, admit, lived
    )
    chunk = np.where(node_pieces.chunked, node_pieces.chunk, 0.0)
    batch = np.minimum(rate * out * t, full_slots)
    seen = np.minimum(batch, full_slots - 1.0)
    chunked = chunk > 0.0
    return _DecodeState(
        cost=cost, rate=rate, inp=inp, out=out, ctx=ctx, slots=full_slots, admit=admit, t=t,
        overflow=overflow, x_moments=x_moments, node_pieces=node_pieces, chunk=chunk,
        chunked=chunked, batch=batch, seen=seen, with_prompts=np.where(chunked, seen, 0.0),
        p_values=p_values, p_probs=p_probs,
    )  # fmt: skip
