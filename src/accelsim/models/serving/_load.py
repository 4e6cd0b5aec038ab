"""Latency of one serving replica under Poisson load: TTFT and TPOT percentiles at a rate.

Part of :mod:`accelsim.models.serving` (import the names from there):
:func:`latency_under_load` and its result :class:`LoadLatency`. The decode fixed point is in
:mod:`._decode`, the batch slots' admission queue in :mod:`._admission`, the capacity under
an SLO in :mod:`._capacity`. Units: seconds [s], rates [1/s].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from accelsim._typing import ArrayLike, BoolArray, FloatArray
from accelsim.models.serving._decode import _decode_state
from accelsim.models.serving._first_token import (
    _iteration_in_progress,
    _own_prefill,
    _prefill_wait,
    _prompt_work,
    _tpot,
    _ttft,
)
from accelsim.models.serving._iteration import IterationCost, _f
from accelsim.models.serving._mixture import two_point, weighted_sum


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
    output_nodes: ArrayLike | None = None,
    output_weights: ArrayLike | None = None,
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
    output_nodes, output_weights : array_like, optional
        Output lengths at nodes of the per-request law (last axis) and their probabilities
        (default equal); when given, the TPOT quantiles are those over requests of the
        mixture over the nodes (a request of ``n`` tokens averages ``n − 1`` gaps), while
        the batch and context keep ``output_tokens``, the mean. None: every request has
        the mean output. [tokens], [–]

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
    if np.any((_f(prefill_chunk_tokens) > 0.0) & (_f(batch_limit) > _f(prefill_chunk_tokens))):
        raise ValueError(
            "batch_limit exceeds prefill_chunk_tokens where chunked: each running sequence "
            "takes one token of the iteration's budget (vLLM: max_num_seqs <= "
            "max_num_batched_tokens)"
        )
    var, m3 = _f(input_variance), _f(input_third_moment)
    p_values, p_probs = _prompt_law(_f(input_tokens), var, m3, input_nodes, input_weights)
    out_law = (
        None
        if output_nodes is None
        else _prompt_law(_f(output_tokens), var, m3, output_nodes, output_weights)
    )
    # A decoding sequence's request is length-biased: its mean context is in + E[n²]/(2E[n]).
    lived = (
        None
        if out_law is None
        else weighted_sum(out_law[0] ** 2, out_law[1]) / weighted_sum(*out_law)
    )
    s = _decode_state(cost, rate_rps, input_tokens, output_tokens, batch_limit,
                      prefill_chunk_tokens, p_values, p_probs, lived)  # fmt: skip
    progress = _iteration_in_progress(s)
    prefill = _own_prefill(s, progress.i_moments)
    fourth = None if input_fourth_moment is None else _f(input_fourth_moment)
    work = _prompt_work(s, prefill, input_nodes is None, (var, m3, fourth))
    queue = _prefill_wait(s, work)
    ttft = _ttft(s, progress, prefill, work, queue, _f(percentile))
    tpot_p50, tpot_tail = _tpot(s, prefill, queue, _f(percentile), out_law)
    saturated = s.overflow | (work.rho_raw >= 1.0) | ttft.admission_saturated
    out = s.out
    return LoadLatency(
        decode_batch=_f(s.batch),
        tpot_mean_s=_f(s.t),
        # One-token outputs (mean 1: every output) have no token gap to time: TPOT 0, as
        # the request DES reports it, and no TPOT bound to meet.
        tpot_p50_s=_f(np.where(out > 1.0, tpot_p50, 0.0)),
        tpot_tail_s=_f(np.where(out > 1.0, np.maximum(tpot_tail, tpot_p50), 0.0)),
        ttft_mean_s=_f(np.maximum(ttft.mean, prefill.own[0])),
        ttft_p50_s=ttft.p50,
        ttft_tail_s=ttft.tail,
        prefill_utilization=_f(work.rho_raw),
        saturated=np.asarray(saturated, dtype=np.bool_),
        admission_wait_mean_s=_f(ttft.admission_mean),
    )


def _prompt_law(
    inp: FloatArray,
    var: FloatArray,
    m3: FloatArray,
    input_nodes: ArrayLike | None,
    input_weights: ArrayLike | None,
) -> tuple[FloatArray, FloatArray]:
    """The prompt-length law as nodes and probabilities (last axis): the given nodes (equal
    weights by default), else the two-point law of its first three moments. [tokens], [–]"""
    if input_nodes is None:
        return two_point(inp, var, m3)
    p_values = _f(input_nodes)
    p_probs = np.broadcast_to(
        _f(np.full(p_values.shape[-1], 1.0 / p_values.shape[-1]))
        if input_weights is None
        else _f(input_weights),
        p_values.shape,
    )
    return p_values, p_probs
