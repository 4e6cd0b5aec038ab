"""Latency of one serving replica under Poisson load, and its capacity under an SLO.

Part of :mod:`accelsim.models.serving` (import the names from there):
:func:`latency_under_load` (TPOT and TTFT percentiles at a request rate) and
:func:`slo_capacity_rps` (the largest rate meeting a latency SLO). Units: seconds [s],
rates [1/s].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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
    """True where no steady state exists (batch limit or prefill queue overflows)."""


def _solve_iteration(
    cost: IterationCost,
    rate: FloatArray,
    inp: FloatArray,
    out: FloatArray,
    limit: FloatArray,
    prefill_share: ArrayLike = 1.0,
    decode_share: ArrayLike = 1.0,
) -> tuple[FloatArray, BoolArray]:
    """Steady-state iteration time T = f(T) under load, and whether it exists.

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
    root = np.maximum(root_c, t)
    t_max = np.maximum(limit - 1.0, 0.0) / (rate * out)
    feasible = stable_c & stable_m & (root <= t_max)
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
) -> tuple[FloatArray, BoolArray, tuple[FloatArray, FloatArray, FloatArray], Pieces]:
    """Mean TPOT of a colocated replica whose prompts interfere with its decoding.

    Returns ``(T, overflow, raw moments 1-3 of x, the prompts' pieces)``, cut by the room
    ``C − B̄`` of a chunk's token budget ``C`` beside the mean decode batch ``B̄`` at the
    mean-field point (``Pieces.chunk``; 1, unchunked, prefill-first). Prompts take
    ``E = λ·E[x(P)]`` of the
    replica's time (:func:`prompt_interference_seconds` over the prompt-length nodes), so
    the decode fixed point is ``(1 − E)·T = iteration_seconds(1 + B, 0, (1 + B)·ctx)``,
    ``B = λ·out·T``, solved in closed form (:func:`_solve_iteration`). ``x`` depends on the
    batch only through the decode iteration a chunk shares (prefill-first: not at all); it
    is taken at the batch ``B̄`` of the mean-field point with every prompt token averaged
    into every iteration (``T̄ = iteration_seconds(1 + B̄, λ·in·T̄, …)``, below ``T``), so one
    closed-form solve gives ``T``, with no iteration on ``E`` (which oscillates for MoE
    models, whose chunk steps shrink as a larger batch touches more experts). ``E >= 1``
    (the prompts alone fill the replica) overflows.
    """
    ctx = inp + out / 2.0
    chunked = np.any(chunk > 0.0)
    mean_field, averaged_overflow = (
        _solve_iteration(cost, rate, inp, out, limit) if chunked else (0.0, False)
    )
    decoding = rate * out * mean_field
    b = 1.0 + decoding
    # The budget's prompt room: a token of it goes to each sequence decoding (the mean
    # batch; >= 1 as the batch limit is at most the budget).
    room = _f(np.where(chunk > 0.0, chunk - decoding, 0.0))
    pieces = prompt_pieces(p_values, room)
    x = prompt_interference_seconds(
        cost, b, b * ctx, p_values, room, pieces=(pieces.full, pieces.last)
    )
    moments = interference_moments(x, p_probs)
    busy = rate * moments[0]
    t, overflow = _solve_iteration(
        cost, rate, inp, out, limit, prefill_share=0.0, decode_share=1.0 - busy
    )
    # Where even the averaged point overflows the batch limit, x at that limit's batch
    # (a memory-bound iteration hiding a chunk) would understate it: saturated.
    return t, overflow | (busy >= 1.0) | averaged_overflow, moments, pieces


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
    1)``, ``S`` the compound-Poisson interference of the ``~Poisson(λ·(out − 1)·T)`` prompts
    it decodes through (0 with probability ``e^{−m}``, else a three-moment hyperexponential;
    a shifted exponential of two moments where its cv given a prompt is below 1); p50 and
    tail are its quantiles, the tail with the decode iteration at the exact Poisson quantile
    of the batch, ``1 + F⁻¹(q; B)`` (an upper estimate: a request's TPOT averages its
    iterations). Against the request DES (median DES/fast over 24 runs, 4-12 requests/s of
    Llama 3.1 8B on one H100, ``tests/agreement``): 400-token prompts, p50 1.00 and p99 0.99
    chunked, 1.00 and 0.98 prefill-first; ``LogNormal(low=50, high=8000)`` prompts, p50 1.00
    and p99 1.14 chunked, 0.98 and 1.76 prefill-first (prompts averaged into every iteration
    before: 1.47 and 5.0, 1.83 and 10.2).

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
    t, overflow, x_moments, node_pieces = _decode_fixed_point(
        cost, rate, inp, out, limit, chunk, p_values, p_probs
    )
    # From here ``chunk`` is the prompt room of a chunked iteration (0 prefill-first).
    chunk = np.where(node_pieces.chunked, node_pieces.chunk, 0.0)
    batch = rate * out * t
    tail_batch = 1.0 + poisson_quantile(q, np.maximum(batch, 1e-12))
    gaps = np.maximum(out - 1.0, 1.0)
    tpot_p50, tpot_tail = tpot_quantiles(
        iteration_seconds(cost, 1.0 + batch, 0.0, (1.0 + batch) * ctx, 0.0),
        iteration_seconds(cost, tail_batch, 0.0, tail_batch * ctx, 0.0),
        rate * gaps * t,
        x_moments,
        gaps,
        q,
    )

    chunked = chunk > 0.0
    piece = np.where(chunked, np.minimum(inp, chunk), inp)  # a prompt's tokens per iteration
    # The pieces of the tagged mean prompt, by the nodes' rule.
    mean_pieces = prompt_pieces(inp[..., None], chunk)
    full_chunks = np.where(chunked, _f(mean_pieces.full[..., 0]), 0.0)
    last = np.where(chunked, _f(mean_pieces.last[..., 0]), inp)
    # Decoding sequences in an iteration with prompts: all of them (chunked), none (prefill-first).
    with_prompts = np.where(chunked, batch, 0.0)
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
    decoding = 1.0 - np.exp(-batch)
    residual = [decoding * in_progress[0] ** k / (k + 1) for k in (1, 2, 3, 4)]
    # The tagged prompt: its full chunks, then its last piece with M ~ Poisson joining it.
    joining = rate * i_moments[1] / i_moments[0]  # arrivals during the iteration in progress
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
    saturated = overflow | (rho_raw >= 1.0)
    rho = np.clip(rho_raw, 0.0, 1.0 - 1e-9)
    wait, w2, _ = mg1_wait_moments(rate, rho, x2, x3, x4)
    phases = wait_phases(rate, rho, wait, w2, x_nodes, p_probs)

    r, d = _cumulants(*residual), _cumulants(*d_moments)
    mean = r[0] + d[0] + wait
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

    return LoadLatency(
        decode_batch=_f(batch),
        tpot_mean_s=_f(t),
        tpot_p50_s=tpot_p50,
        tpot_tail_s=_f(np.maximum(tpot_tail, tpot_p50)),
        ttft_mean_s=_f(np.maximum(mean, shortest)),
        ttft_p50_s=p50,
        ttft_tail_s=tail,
        prefill_utilization=_f(rho_raw),
        saturated=np.asarray(saturated, dtype=np.bool_),
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
    Bisection (fixed iteration count, vectorised over runs) on ``[0, λ_sat]`` with
    ``λ_sat = offline_tokens_per_s / output_tokens``, assuming latency rises with the rate;
    the result never exceeds ``λ_sat``. Infeasible (rate 0) where the SLO fails already at
    ``10⁻⁶ · λ_sat`` or the model does not fit.
    """
    inp = _f(input_tokens)
    out = _f(output_tokens)
    limit = batch_limit(kv_capacity_tokens, inp, out, max_batch)
    saturated_rps = offline_tokens_per_s(cost, kv_capacity_tokens, inp, out, max_batch) / out
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
    lo = hi_rate * 1e-6
    hi = hi_rate.copy()
    top_ok = meets(hi)
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
