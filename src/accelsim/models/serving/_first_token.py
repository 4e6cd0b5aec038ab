"""The first token of a serving replica under Poisson load: TTFT = R + V + D.

Part of :mod:`accelsim.models.serving`, the stages of :func:`._load.latency_under_load`
after the decode fixed point (:class:`~._decode._DecodeState`): the iteration in progress at
an arrival (``R``), the tagged prompt's own prefill (``D``), the prompt work of the prefill
queue and its wait (``W``), the admission wait for a batch slot (``A``), merged into one
wait ``V``, and the TTFT's mean and quantiles; and the TPOT's cap. Units: seconds [s].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from accelsim._typing import BoolArray, FloatArray
from accelsim.models.serving._admission import _admission_wait, _h2_moments
from accelsim.models.serving._decode import _DecodeState, _tpot_under_load
from accelsim.models.serving._iteration import _f, iteration_seconds
from accelsim.models.serving._mixture import (
    _SINGLE,
    hyperexponential_wait,
    three_point,
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

# Prompts per iteration in the TTFT model's Poisson sums: 0..2 exactly, then the tail
# (:func:`_poisson_terms`).
_PROMPT_TERMS = 4


def _cumulants(m1: FloatArray, m2: FloatArray, m3: FloatArray, m4: FloatArray) -> list[FloatArray]:
    """The first four cumulants from the first four raw moments."""
    var = m2 - m1 * m1
    central4 = m4 - 4.0 * m1 * m3 + 6.0 * m1 * m1 * m2 - 3.0 * m1**4
    return [m1, var, m3 - 3.0 * m1 * m2 + 2.0 * m1**3, central4 - 3.0 * var * var]


def _poisson_terms(mean: FloatArray) -> tuple[list[FloatArray], list[FloatArray]]:
    """A Poisson count of mean ``mean`` as a discrete law: its probabilities of 0 ..
    ``_PROMPT_TERMS − 2`` at those counts, then its tail (``N >= _PROMPT_TERMS − 1``) as two
    equal-weight points at the tail's mean ± its standard deviation (the lower one no lower
    than the tail's least count, the upper one moved as much the other way), so that the
    law keeps the Poisson mean and, where the lower point is not raised, its variance (less
    where it is, below ~4 prompts per iteration).

    A busy iteration holds several prompts: at 4 on average a quarter of the mass lies
    beyond 3, which one point at 3 understated (400-token prompts on one H100 at 0.9 of
    saturation: TTFT p99 1.49x short of the request DES; 1.27x with this law, 1.26x with 12
    exact terms, at the same speed as 4). Returns ``(weights, counts)``. [1], [count]"""
    mean = _f(mean)
    last = _PROMPT_TERMS - 1
    weights = [np.exp(-mean)]
    for j in range(1, last):
        weights.append(weights[-1] * mean / j)
    tail = np.maximum(1.0 - np.sum(weights, axis=0), 0.0)
    head1 = np.sum([j * w for j, w in enumerate(weights)], axis=0)
    head2 = np.sum([j * j * w for j, w in enumerate(weights)], axis=0)
    big = tail > 1e-9
    safe = np.where(big, tail, 1.0)
    t_mean = np.where(big, np.maximum((mean - head1) / safe, last), float(last))
    t_var = np.where(big, np.maximum((mean + mean * mean - head2) / safe - t_mean**2, 0.0), 0.0)
    spread = np.sqrt(t_var)
    counts = [np.full_like(mean, float(j)) for j in range(last)]
    lower = np.maximum(t_mean - spread, float(last))
    counts += [lower, 2.0 * t_mean - lower]  # the pair's mean stays the tail's
    return [*weights, 0.5 * tail, 0.5 * tail], counts


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


@dataclass(frozen=True)
class _InProgress:
    """The iteration in progress at an arrival (``R`` of the TTFT)."""

    in_progress: list[FloatArray]
    """Its length at each count of prompt pieces of :func:`_poisson_terms`. [s]"""
    i_moments: list[FloatArray]
    """Raw moments 1-5 of its length. [s^k]"""
    residual: list[FloatArray]
    """Raw moments 1-4 of ``R``, the residual where the prefill queue is idle. [s^k]"""


def _iteration_in_progress(s: _DecodeState) -> _InProgress:
    """The iteration in progress at an arrival carries ``j ~ Poisson(ν)`` prompt pieces: a
    prompt of P tokens runs in ⌈P/C⌉ of them, the mean piece in/E[⌈P/C⌉] (token flow kept).
    It carries pieces only while the prefill queue is busy, and then its residual is inside
    W (the M/G/1 wait's residual service); with no wait (the queue idle) it is a decode
    iteration, running if any sequence decodes."""
    cost, chunked, with_prompts = s.cost, s.chunked, s.with_prompts
    per_prompt = pieces_per_prompt(s.node_pieces, s.p_probs)
    nu = s.rate * s.t * per_prompt
    in_piece = s.inp / per_prompt
    # An iteration's prompt tokens: at most the budget's room (chunked), every prompt whole
    # prefill-first.
    room = np.where(chunked, s.chunk, np.inf)
    weights, counts = _poisson_terms(nu)
    in_progress = [iteration_seconds(cost, s.batch, 0.0, s.batch * s.ctx, 0.0)] + [
        iteration_seconds(
            cost, with_prompts, np.minimum(j * in_piece, room), with_prompts * s.ctx, in_piece / 2.0
        )
        for j in counts[1:]
    ]
    i_moments = _mixture_moments(weights, in_progress, 5)
    # (Little's law over the decode phase, ``out − 1`` token gaps: none for one-token outputs.)
    decoding = 1.0 - np.exp(-s.batch * (np.maximum(s.out - 1.0, 0.0) / s.out))
    residual = [decoding * in_progress[0] ** k / (k + 1) for k in (1, 2, 3, 4)]
    return _InProgress(in_progress=in_progress, i_moments=i_moments, residual=residual)


@dataclass(frozen=True)
class _OwnPrefill:
    """The tagged prompt's own prefill ``D`` (its full chunks, then its last piece)."""

    own: list[FloatArray]
    """``D`` at each count of prompts joining its last iteration (:func:`_poisson_terms`). [s]"""
    d_moments: list[FloatArray]
    """Raw moments 1-4 of ``D``. [s^k]"""
    mean_pieces: Pieces
    """The mean prompt's pieces, by the nodes' rule."""
    full_chunk: FloatArray
    """An iteration with a full chunk of prompt beside the decoding sequences. [s]"""
    first: FloatArray
    """A joining prompt's first piece, ``E[min(P, C)]`` (prefill-first: the prompt). [tokens]"""


def _own_prefill(s: _DecodeState, i_moments: list[FloatArray]) -> _OwnPrefill:
    """``D``: the tagged prompt's full chunks, then its last piece with ``M ~ Poisson``
    prompts joining it (arrivals during the iteration in progress that a free slot admits);
    the tagged prompt's last piece goes first, the joining prompts fill the room left."""
    cost, chunked, with_prompts, inp, ctx = s.cost, s.chunked, s.with_prompts, s.inp, s.ctx
    piece = np.where(chunked, np.minimum(inp, s.chunk), inp)  # a prompt's tokens per iteration
    mean_pieces = prompt_pieces(inp[..., None], s.chunk)
    full_chunks = np.where(chunked, _f(mean_pieces.full[..., 0]), 0.0)
    last = np.where(chunked, _f(mean_pieces.last[..., 0]), inp)
    room = np.where(chunked, s.chunk, np.inf)
    joining = s.admit * s.rate * i_moments[1] / i_moments[0]
    full_chunk = iteration_seconds(
        cost, with_prompts, np.where(chunked, s.chunk, 0.0), with_prompts * ctx, inp / 2.0
    )
    full = full_chunks * full_chunk
    first = np.where(
        chunked,
        weighted_sum(np.minimum(s.p_values, np.where(chunked, s.chunk, np.inf)[..., None]),
                     s.p_probs),
        piece,
    )  # fmt: skip
    weights, counts = _poisson_terms(joining)
    own = [
        full
        + iteration_seconds(
            cost, with_prompts, np.minimum(last + m * first, room), with_prompts * ctx, last / 2.0
        )
        for m in counts
    ]
    d_moments = _mixture_moments(weights, own, 4)
    return _OwnPrefill(own, d_moments, mean_pieces, full_chunk, first)


@dataclass(frozen=True)
class _PromptWork:
    """The prefill queue's service: a prompt's work ``X(P)`` and its moments."""

    moments: tuple[FloatArray, FloatArray, FloatArray, FloatArray]
    """Raw moments 1-4 of ``X``. [s^k]"""
    x_nodes: FloatArray
    """``X`` at the prompt law's nodes. [s]"""
    extra: FloatArray
    """What a prompt of each node adds to the mean prompt's first token. [s]"""
    rho_raw: FloatArray
    """The prefill queue's load, ``λ·E[X]`` (unclipped). [fraction]"""


def _prompt_work(
    s: _DecodeState,
    prefill: _OwnPrefill,
    moments_only: bool,
    law: tuple[FloatArray, FloatArray, FloatArray | None],
) -> _PromptWork:
    """The queue's time per prompt token (chunked: a full chunk's per-token share, as a busy
    prefill queue fills every iteration's room; prefill-first: what one more whole prompt
    adds to an iteration), a prompt's work over the law and its own iterations' excess."""
    cost, chunked, inp, own = s.cost, s.chunked, s.inp, prefill.own
    full_rate = prefill.full_chunk / np.where(chunked, s.chunk, 1.0)
    per_token = np.where(chunked, full_rate, (own[1] - own[0]) / prefill.first)
    var, m3, fourth = law
    if moments_only:
        # The prompt work X = δ·P, its raw moments from P's central ones.
        m4 = 3.0 * var * var if fourth is None else fourth
        work = per_token * inp
        x2 = per_token**2 * (inp**2 + var)
        x3 = per_token**3 * (inp**3 + 3.0 * inp * var + m3)
        x4 = per_token**4 * (inp**4 + 6.0 * inp**2 * var + 4.0 * inp * m3 + m4)
        x_nodes = per_token[..., None] * s.p_values
    else:
        # Over the law's nodes, a prompt's work also grows with its attention to itself:
        # X(P) = δ·P + a·P·(P − in)/2, a the attention time per token pair (compute-bound),
        # so X(in) = δ·in; the long prompts of a wide law weigh their quadratic cost.
        per_pair = cost.prefill_attention_flops_per_context_token * cost.attention_seconds_per_flop
        pair = per_pair[..., None]
        p = s.p_values
        x_nodes = np.maximum(per_token[..., None] * p + pair * p * (p - inp[..., None]) / 2.0, 0.0)
        sq = x_nodes * x_nodes
        work, x2, x3, x4 = (
            weighted_sum(t, s.p_probs) for t in (x_nodes, sq, sq * x_nodes, sq * sq)
        )
    extra = x_nodes - (per_token * inp)[..., None]
    if np.any(chunked):
        # A prompt's own iterations by its length: a short one pays one iteration's fixed
        # part, not a full chunk's per-token share (0 prefill-first).
        wp, ctx = s.with_prompts, s.ctx
        half = iteration_seconds(cost, wp, s.chunk / 2.0, wp * ctx, inp / 2.0)
        one = iteration_seconds(cost, wp, 1.0, wp * ctx, 0.5)  # weights read
        excess = (per_token, prefill.full_chunk, half, one)
        extra = (extra - own_iterations_excess(prefill.mean_pieces, *excess)) + (
            own_iterations_excess(s.node_pieces, *excess)
        )
    return _PromptWork((work, x2, x3, x4), x_nodes, extra, s.rate * work)


@dataclass(frozen=True)
class _PrefillWait:
    """The wait ``W`` in the queue of admitted prompts (M/G/1 FCFS, truncated at ``L − 1``)."""

    wait: tuple[FloatArray, FloatArray, FloatArray]
    """Raw moments 1-3 of the untruncated M/G/1 wait. [s^k]"""
    phases: tuple[FloatArray, FloatArray, FloatArray]
    """The wait given a wait, a two-phase hyperexponential ``(p₁, r₁, r₂)``."""
    kept: FloatArray
    """The share of waits kept by the truncation, ``1 − ρ^(L−1)``. [fraction]"""
    rho_kept: FloatArray
    """Probability of a wait, ``ρ·(1 − ρ^(L−1))``. [fraction]"""


def _prefill_wait(s: _DecodeState, work: _PromptWork) -> _PrefillWait:
    """Takács' moments of the M/G/1 wait and its two-phase law; the prefill queue holds
    admitted prompts only, at most L − 1 ahead of the tagged one: the geometric count of
    prompts ahead truncated there (the rest wait for a slot instead)."""
    _, x2, x3, x4 = work.moments
    rho = np.clip(work.rho_raw, 0.0, 1.0 - 1e-9)
    wait = mg1_wait_moments(s.rate, rho, x2, x3, x4)
    phases = wait_phases(s.rate, rho, wait[0], wait[1], work.x_nodes, s.p_probs)
    kept = 1.0 - np.power(rho, s.slots - 1.0)
    return _PrefillWait(wait=wait, phases=phases, kept=kept, rho_kept=rho * kept)


@dataclass(frozen=True)
class _Ttft:
    """The first token: mean, p50 and tail, and the admission queue's part in it."""

    mean: FloatArray
    p50: FloatArray
    tail: FloatArray
    admission_mean: FloatArray
    admission_saturated: BoolArray


def _ttft(
    s: _DecodeState,
    progress: _InProgress,
    prefill: _OwnPrefill,
    work: _PromptWork,
    queue: _PrefillWait,
    q: FloatArray,
) -> _Ttft:
    """TTFT = R + V + D: the residual, one wait ``V = A + W`` (admission and prefill,
    independent) and the own prefill, with its exact mixture quantiles."""
    r, d = _cumulants(*progress.residual), _cumulants(*prefill.d_moments)
    w_moments = [queue.rho_kept * m for m in _h2_moments(queue.phases)]
    a_moments, rho, phases, adm_saturated = _with_admission(s, work, queue, w_moments, r, d)
    mean = r[0] + d[0] + queue.wait[0] * queue.kept + a_moments[0]
    # Z = R + D (the light, bounded part) as the three-point law of its first four
    # cumulants; the prompt adds δ·(P − in) over the prompt-length law's nodes.
    var_z = r[1] + d[1]
    z_values, z_probs = three_point(
        r[0] + d[0], var_z, r[2] + d[2], r[3] + d[3] + 3.0 * var_z * var_z
    )
    # A request needs at least the iteration that prefills its own last piece.
    # In the recursion's single precision; Z points outer, prompt nodes inner (long loops).
    z_floor = np.maximum(z_values, prefill.own[0][..., None])[..., :, None].astype(_SINGLE)
    floor = progress.in_progress[0][..., None, None].astype(_SINGLE)
    nodes = z_floor + work.extra[..., None, :].astype(_SINGLE)
    np.maximum(nodes, floor, out=nodes)
    probs = z_probs[..., :, None].astype(_SINGLE) * s.p_probs[..., None, :].astype(_SINGLE)
    nodes = nodes.reshape(*nodes.shape[:-2], -1)  # (…, Z point x prompt node), any order
    probs = probs.reshape(*probs.shape[:-2], -1)
    p50, tail = wait_mixture_quantiles(nodes, probs, rho, phases, (0.5, q))
    return _Ttft(mean, p50, tail, a_moments[0], adm_saturated)


def _with_admission(
    s: _DecodeState,
    work: _PromptWork,
    queue: _PrefillWait,
    w_moments: list[FloatArray],
    r: list[FloatArray],
    d: list[FloatArray],
) -> tuple[list[FloatArray], FloatArray, tuple[FloatArray, FloatArray, FloatArray], BoolArray]:
    """The admission wait ``A`` (a slot is held from admission to the last token: prefill
    wait, own prefill, decode) merged with the prefill wait into one wait ``V``: no wait
    with probability (1 − C)(1 − ρ'), else the three-moment H₂ of V given a wait; where the
    admission wait is negligible, the prefill wait's own law (the unlimited replica's).
    Returns A's moments, V's probability and phases, and where the slots overflow."""
    extra, probs = work.extra, s.p_probs
    extra_mean = weighted_sum(extra, probs)
    extra_var = np.maximum(weighted_sum(extra * extra, probs) - extra_mean**2, 0.0)
    gaps_exact = np.maximum(s.out - 1.0, 0.0)
    hold = w_moments[0] + d[0] + extra_mean + gaps_exact * s.t
    hold_var = (
        np.maximum(w_moments[1] - w_moments[0] ** 2, 0.0)
        + d[1]
        + extra_var
        + s.admit * s.rate * gaps_exact * s.t * s.x_moments[1]
    )
    a_moments, waits_any, adm_saturated = _admission_wait(
        s.rate, s.slots, hold, hold_var, extra, probs
    )
    v1 = a_moments[0] + w_moments[0]
    v2 = a_moments[1] + 2.0 * a_moments[0] * w_moments[0] + w_moments[1]
    v3 = (
        a_moments[2]
        + 3.0 * a_moments[1] * w_moments[0]
        + 3.0 * a_moments[0] * w_moments[1]
        + w_moments[2]
    )
    any_wait = 1.0 - (1.0 - waits_any) * (1.0 - queue.rho_kept)
    queued = a_moments[0] > 1e-9 * (r[0] + d[0] + w_moments[0])
    rho = _f(np.where(queued, any_wait, queue.rho_kept))
    phases = queue.phases
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
    return a_moments, rho, phases, adm_saturated


def _tpot(
    s: _DecodeState,
    prefill: _OwnPrefill,
    queue: _PrefillWait,
    q: FloatArray,
    out_law: tuple[FloatArray, FloatArray] | None = None,
) -> tuple[FloatArray, FloatArray]:
    """TPOT p50 and tail (:func:`~._decode._tpot_under_load`), none longer (chunked) than an
    iteration with a full chunk beside the tail batch, its prompt tokens attending to a
    prompt token's mean context E[P²]/(2·E[P]): a request's TPOT averages its iterations,
    so the interference's tail cannot pass it. ``out_law``: the output law's nodes and
    weights (None: the mean output)."""
    kept, wait = queue.kept, queue.wait
    p50, tail, tail_batch = _tpot_under_load(
        s.cost,
        s.x_moments,
        rate=s.rate,
        admit=s.admit,
        t=s.t,
        ctx=s.ctx,
        q=q,
        out=s.out,
        own=prefill.own[0],
        wait=(kept * wait[0], kept * wait[1], kept * wait[2]),
        wait_prob=queue.rho_kept,
        phases=queue.phases,
        seen=s.seen,
        slots=s.slots,
        out_law=out_law,
    )
    p_values, p_probs = s.p_values, s.p_probs
    reach = weighted_sum(p_values * p_values, p_probs) / (2.0 * weighted_sum(p_values, p_probs))
    widest = iteration_seconds(s.cost, tail_batch, s.chunk, tail_batch * s.ctx, reach)
    longest = np.where(s.chunked, widest, np.inf)
    return np.minimum(p50, longest), np.minimum(tail, longest)
