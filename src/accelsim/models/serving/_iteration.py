"""Iteration time of one serving replica: the formula every serving result is built on.

Part of :mod:`accelsim.models.serving` (import the names from there).
:func:`iteration_cost` turns a replica's hardware, model and uncertain efficiency into an
:class:`IterationCost` of per-run coefficients once; :func:`iteration_seconds` (arrays) and
:func:`terms_iteration_seconds` (plain floats of :func:`iteration_terms`, which the request
DES's compiled kernel runs) give the time of one iteration, :func:`decode_stretch_seconds`
that of a run of decode-only iterations.

Units: seconds [s], bytes [B]; ``peak_tflops`` [TFLOP/s], ``hbm_tbps`` [TB/s],
``interconnect_gbps`` [GB/s] as in :class:`accelsim.catalog.Chip`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from accelsim._typing import ArrayLike, FloatArray
from accelsim.models.serving._attention import AttentionFlops

_TERA = 1e12
_GIGA = 1e9


def _f(x: ArrayLike) -> FloatArray:
    return np.asarray(x, dtype=np.float64)


@dataclass(frozen=True)
class IterationCost:
    """Per-run coefficients of one replica's iteration time (built by :func:`iteration_cost`).

    Every field is a float64 array of the broadcast shape of the inputs (shape ``()`` for
    scalar inputs); ``float(field)`` or indexing gives the plain floats a DES uses.
    """

    seconds_per_flop: FloatArray
    """Achieved compute time per FLOP of the replica: 1 / (chips · peak · efficiency). [s]"""
    seconds_per_byte: FloatArray
    """Achieved memory time per byte read: 1 / (chips · bandwidth · efficiency). [s]"""
    flops_per_token: FloatArray
    """Dense-layer FLOPs per processed token, 2 · active parameters. [FLOP]"""
    attention_flops_per_context_token: FloatArray
    """Attention FLOPs per (decoded token, cached token) pair over all layers: ``layers ·``
    :attr:`AttentionFlops.decode` (``4 · layers · d_model`` when the widths are unknown). [FLOP]"""
    weight_bytes: FloatArray
    """Bytes of all weights of the replica. [B]"""
    active_fraction: FloatArray
    """Share of the weights one token reads: active / total parameters (1 for dense). [fraction]"""
    kv_bytes_per_token: FloatArray
    """KV-cache bytes per cached token. [B]"""
    comm_seconds_per_token: FloatArray
    """Tensor-parallel all-reduce time per processed token (0 on one chip). [s]"""
    overhead_seconds: FloatArray
    """Fixed time per iteration: kernel launches, scheduling, sampling, collective latency. [s]"""
    exposed_fraction: FloatArray = field(default_factory=lambda: np.zeros(()))
    """Share of the shorter of an iteration's compute and memory times that the longer does
    not hide: ``1 − overlap`` (0: the roofline max; 1: their sum). [fraction]"""
    prefill_attention_ratio: FloatArray = field(default_factory=lambda: np.ones(()))
    """Attention FLOPs per (prompt token, context token) pair as a multiple of the decode
    pair's: :attr:`AttentionFlops.prefill` / :attr:`AttentionFlops.decode` (MLA prefills
    decompressed, DeepSeek-V3 81,920 / 278,528; 1 where both phases run the same form).
    [fraction]"""
    attention_peak_ratio: FloatArray = field(default_factory=lambda: np.ones(()))
    """Time per attention FLOP as a multiple of :attr:`seconds_per_flop`: the dense peak
    over the peak the attention matmuls run at (2 for FP4 weights whose attention runs in
    FP8 on B200, ~2.9 on B300; 1 where both run at one precision). [ratio]"""

    @property
    def prefill_attention_flops_per_context_token(self) -> FloatArray:
        """Attention FLOPs per (prompt token, context token) pair over all layers. [FLOP]"""
        return _f(self.attention_flops_per_context_token * self.prefill_attention_ratio)

    @property
    def attention_seconds_per_flop(self) -> FloatArray:
        """Achieved time per attention FLOP (QKᵀ and PV against the cache): 1 / (chips ·
        attention peak · efficiency), the one rate every formula charges attention at. [s]"""
        return _f(self.seconds_per_flop * self.attention_peak_ratio)


def iteration_cost(
    *,
    active_params: ArrayLike,
    total_params: ArrayLike,
    layers: ArrayLike,
    d_model: ArrayLike,
    weight_bytes: ArrayLike,
    kv_bytes_per_token: ArrayLike,
    chips: ArrayLike,
    peak_tflops: ArrayLike,
    hbm_tbps: ArrayLike,
    interconnect_gbps: ArrayLike,
    efficiency: ArrayLike,
    overhead_seconds: ArrayLike,
    activation_bytes: ArrayLike = 2.0,
    overlap: ArrayLike = 1.0,
    attention: AttentionFlops | None = None,
    attention_peak_tflops: ArrayLike | None = None,
) -> IterationCost:
    """Coefficients of :func:`iteration_seconds` for one replica (vectorised over runs).

    Parameters
    ----------
    active_params, total_params : array_like
        Parameters used per token and in total (equal for a dense model). [count]
    layers : array_like
        Transformer layers. [count]
    d_model : array_like
        Hidden size. [count]
    weight_bytes : array_like
        Bytes of all weights (:func:`weight_bytes`). [B]
    kv_bytes_per_token : array_like
        KV-cache bytes per token (:func:`kv_bytes_per_token`). [B]
    chips : array_like
        Chips in the replica (tensor / expert parallel group). [count]
    peak_tflops : array_like
        Dense peak per chip at the precision the matmuls run in. [TFLOP/s]
    hbm_tbps : array_like
        Memory bandwidth per chip. [TB/s]
    interconnect_gbps : array_like
        Scale-up bandwidth per chip, bidirectional aggregate as in the catalog; must be > 0
        when ``chips > 1``. [GB/s]
    efficiency : array_like
        Achieved fraction of the roofline, in (0, 1] (uncertain; catalog prior). [fraction]
    overhead_seconds : array_like
        Fixed time per iteration. [s]
    activation_bytes : array_like, optional
        Bytes per activation value in the all-reduces (2: bf16). [B]
    overlap : array_like, optional
        Share of the shorter of an iteration's compute and memory times hidden under the
        longer, in [0, 1] (1: the roofline max; 0: their sum; catalog prior
        ``compute_memory_overlap``). [fraction]
    attention : AttentionFlops, optional
        Attention FLOPs per (query token, context token) pair and layer, decode and prefill
        (:func:`attention_flops_per_context_token` of the model's widths); unset:
        ``4 · d_model`` for both (exact for attention heads as wide as the hidden size).
        [FLOP]
    attention_peak_tflops : array_like, optional
        Dense peak per chip at the precision the attention matmuls run in (the serving
        engines: :func:`accelsim.catalog.attention_peak_tflops`, the KV cache's precision);
        unset: ``peak_tflops``. [TFLOP/s]

    Returns
    -------
    IterationCost
        Coefficients, each broadcast over the inputs.

    Notes
    -----
    The tensor-parallel term is two all-reduces per layer of ``tokens · d_model ·
    activation_bytes`` each, ring algorithm: every chip sends and receives ``2(t−1)/t`` of
    the buffer over one direction of its link (half the bidirectional figure).
    Attention FLOPs are charged at ``attention_peak_tflops`` with the same efficiency:
    :attr:`IterationCost.attention_peak_ratio` is ``peak_tflops / attention_peak_tflops``.
    """
    t = _f(chips)
    link_bytes_per_s = np.maximum(_f(interconnect_gbps), 1e-300) * _GIGA / 2.0
    ring = 2.0 * (t - 1.0) / t
    comm = _f(layers) * 2.0 * _f(d_model) * _f(activation_bytes) * ring / link_bytes_per_s
    eff = _f(efficiency)
    peak = _f(peak_tflops)
    # exactly 1.0 when unset, so the attention rate is seconds_per_flop bit for bit
    ratio = np.ones(()) if attention_peak_tflops is None else peak / _f(attention_peak_tflops)
    if attention is None:
        per_pair, prefill_ratio = 4.0 * _f(layers) * _f(d_model), np.ones(())
    else:
        per_pair = _f(layers) * attention.decode
        prefill_ratio = attention.prefill / attention.decode
    parts = np.broadcast_arrays(
        1.0 / (t * peak * _TERA * eff),
        1.0 / (t * _f(hbm_tbps) * _TERA * eff),
        2.0 * _f(active_params),
        per_pair,
        _f(weight_bytes),
        _f(active_params) / _f(total_params),
        _f(kv_bytes_per_token),
        comm,
        _f(overhead_seconds),
        1.0 - _f(overlap),
        prefill_ratio,
        ratio,
    )
    return IterationCost(*(np.array(p, dtype=np.float64) for p in parts))


def iteration_seconds(
    cost: IterationCost,
    decode_batch: ArrayLike,
    prefill_tokens: ArrayLike,
    kv_tokens: ArrayLike,
    prefill_context_tokens: ArrayLike = 0.0,
) -> FloatArray:
    """Time of one continuous-batching iteration: the one formula every engine calls.

    Applies to a replica that decodes ``decode_batch`` sequences (one token each) holding
    ``kv_tokens`` cached tokens in total and, in the same iteration, prefills
    ``prefill_tokens`` prompt tokens (chunked prefill). Works on floats and arrays alike.

    Parameters
    ----------
    cost : IterationCost
        The replica's coefficients (:func:`iteration_cost`).
    decode_batch : array_like
        Sequences decoded in this iteration. [count]
    prefill_tokens : array_like
        Prompt tokens prefilled in this iteration. [tokens]
    kv_tokens : array_like
        Cached tokens the decoding sequences attend to, summed over them. [tokens]
    prefill_context_tokens : array_like, optional
        Mean number of tokens each prefilled token attends to (about half the prompt when a
        whole prompt is prefilled at once). [tokens]

    Returns
    -------
    FloatArray
        Iteration time. [s]

    Notes
    -----
    With ``n = decode_batch + prefill_tokens`` tokens processed::

        pairs = A_d·kv_tokens + A_p·prefill_tokens·prefill_context_tokens
        c     = 2·N_active·n·s_flop + pairs·s_attn
        bytes = W·(1 − (1 − N_active/N)^n) + kv_bytes·kv_tokens
        m     = bytes·s_byte
        time  = max(c + e·m, m + e·c) + comm·n + overhead     (= max(c, m) + e·min(c, m))

    The roofline is the max of compute and memory time, each divided by one efficiency,
    plus the share ``e = 1 − overlap`` of the shorter that the longer does not hide
    (:attr:`IterationCost.exposed_fraction`): serving engines run an iteration's GEMMs,
    attention, norms and collectives one kernel after another, so the memory-bound kernels
    do not hide under the compute-bound ones (NanoFlow, Zhu et al., OSDI 2025), while
    within a GEMM loads and arithmetic are pipelined. ``e = 0`` is the pure roofline.
    ``W·(1 − (1 − a)^n)`` is the expected weight bytes read when each token touches a share
    ``a`` of the weights at random: all of them for a dense model (``a = 1``), ``a·W`` for a
    single MoE token, approaching ``W`` as the batch grows. ``A_d`` and ``A_p`` are the
    attention FLOPs per (decoded, resp. prompt, token, context token) pair over all layers
    (:attr:`IterationCost.attention_flops_per_context_token`,
    :attr:`IterationCost.prefill_attention_flops_per_context_token`): ``4·L·d_model`` each
    when the model's attention widths are unknown; ``s_attn`` is
    :attr:`IterationCost.attention_seconds_per_flop`, the time per FLOP at the attention's
    peak (``s_flop`` unless :func:`iteration_cost` was given ``attention_peak_tflops``).
    Oracles: batch-1 decode of a dense model is ``W / bandwidth / efficiency + overhead``;
    a large prefill is ``2·N·tokens / peak / efficiency + overhead``.

    Examples
    --------
    >>> c = iteration_cost(active_params=8e9, total_params=8e9, layers=32, d_model=4096,
    ...     weight_bytes=16e9, kv_bytes_per_token=131072.0, chips=1, peak_tflops=989,
    ...     hbm_tbps=3.35, interconnect_gbps=900, efficiency=1.0, overhead_seconds=0.0)
    >>> round(float(iteration_seconds(c, 1, 0, 0)) * 1e3, 3)  # 16 GB at 3.35 TB/s
    4.776
    """
    decode = _f(decode_batch)
    prefill = _f(prefill_tokens)
    kv = _f(kv_tokens)
    n = decode + prefill
    # Seconds of compute, grouped so that the terms of the small arguments combine before
    # the largest (a prompt law's context per node) joins: two operations on its grid.
    per_token = cost.flops_per_token * cost.seconds_per_flop
    s_attention = cost.attention_seconds_per_flop
    per_pair = cost.attention_flops_per_context_token * s_attention
    per_prompt_pair = cost.prefill_attention_flops_per_context_token * s_attention
    compute_s = (per_token * n + per_pair * kv) + (per_prompt_pair * prefill) * _f(
        prefill_context_tokens
    )
    if np.all(cost.active_fraction == 1.0):
        # A dense model reads all its weights whenever it runs a token: (1 − 1)^n is 0 for
        # n > 0 and 1 at n = 0. The same bits without the power, and with tokens everywhere
        # (the usual case) in the weights' and the cache's shape, not the tokens' grid.
        weights = cost.weight_bytes
        if not np.all(n > 0.0):
            weights = weights * (n > 0.0)
    else:
        weights = cost.weight_bytes * (1.0 - np.power(1.0 - cost.active_fraction, n))
    memory_s = (weights + cost.kv_bytes_per_token * kv) * cost.seconds_per_byte
    # max(c, m) + e·min(c, m), as the side that leads plus the exposed share of the other
    # (the form the closed-form runs and the fixed point use, bit for bit).
    exposed = cost.exposed_fraction
    if np.all(exposed == 1.0):  # the sum (overlap 0), the same bits in fewer steps
        roofline = compute_s + memory_s
    elif np.all(exposed == 0.0):  # the pure roofline (the shipped prior, overlap 1)
        roofline = np.maximum(compute_s, memory_s)
    else:
        roofline = np.where(
            compute_s >= memory_s, compute_s + exposed * memory_s, memory_s + exposed * compute_s
        )
    return _f(roofline + (cost.comm_seconds_per_token * n + cost.overhead_seconds))


class IterationTerms(NamedTuple):
    """One run's :class:`IterationCost` as plain floats, for the scalar (DES) formulas
    (:func:`iteration_terms`). [s], [B], [FLOP] as in :class:`IterationCost`."""

    flops_per_token: float
    attention_flops_per_context_token: float
    prefill_attention_flops_per_context_token: float
    untouched_fraction: float
    """``1 − active_fraction``: the share of the weights a token does not read. [1]"""
    weight_bytes: float
    kv_bytes_per_token: float
    seconds_per_flop: float
    attention_peak_ratio: float
    """Time per attention FLOP over :attr:`seconds_per_flop`
    (:attr:`IterationCost.attention_peak_ratio`). [ratio]"""
    seconds_per_byte: float
    comm_seconds_per_token: float
    overhead_seconds: float
    exposed_fraction: float = 0.0
    """Share of the shorter of compute and memory time not hidden (``1 − overlap``). [1]"""


def iteration_terms(cost: IterationCost) -> IterationTerms:
    """The plain-float terms of one run's ``cost`` (every field of shape ``()`` or size 1)."""
    return IterationTerms(
        flops_per_token=float(cost.flops_per_token),
        attention_flops_per_context_token=float(cost.attention_flops_per_context_token),
        prefill_attention_flops_per_context_token=float(
            cost.prefill_attention_flops_per_context_token
        ),
        untouched_fraction=1.0 - float(cost.active_fraction),
        weight_bytes=float(cost.weight_bytes),
        kv_bytes_per_token=float(cost.kv_bytes_per_token),
        seconds_per_flop=float(cost.seconds_per_flop),
        attention_peak_ratio=float(cost.attention_peak_ratio),
        seconds_per_byte=float(cost.seconds_per_byte),
        comm_seconds_per_token=float(cost.comm_seconds_per_token),
        overhead_seconds=float(cost.overhead_seconds),
        exposed_fraction=float(cost.exposed_fraction),
    )


def terms_iteration_seconds(
    terms: IterationTerms, decode: float, prefill: float, kv: float, prefill_context: float
) -> float:
    """:func:`iteration_seconds` of one iteration on plain floats, bit for bit.

    The same formula, term by term in the same order (the MoE weight share's power taken
    on a float exponent, as numpy does). It is plain Python with no closure, so the request
    DES's compiled kernel runs this very function (``accelsim.engines.serving.des._jit``).
    Arguments as in :func:`iteration_seconds`: [count], [tokens], [tokens], [tokens]; [s].
    """
    n = decode + prefill
    per_token = terms.flops_per_token * terms.seconds_per_flop
    s_attention = terms.seconds_per_flop * terms.attention_peak_ratio
    per_pair = terms.attention_flops_per_context_token * s_attention
    per_prompt_pair = terms.prefill_attention_flops_per_context_token * s_attention
    compute_s = (per_token * n + per_pair * kv) + (per_prompt_pair * prefill) * prefill_context
    memory_bytes = (
        terms.weight_bytes * (1.0 - terms.untouched_fraction ** float(n))
        + terms.kv_bytes_per_token * kv
    )
    memory_s: float = memory_bytes * terms.seconds_per_byte
    exposed = terms.exposed_fraction
    if compute_s >= memory_s:
        roofline = compute_s + exposed * memory_s
    else:
        roofline = memory_s + exposed * compute_s
    return roofline + (terms.comm_seconds_per_token * n + terms.overhead_seconds)


def _affine_sum(first: FloatArray, slope: FloatArray, lo: ArrayLike, hi: ArrayLike) -> FloatArray:
    """``sum(first + slope·i for i in range(lo, hi))``, in closed form (``lo <= hi``)."""
    low, high = _f(lo), _f(hi)
    return _f((high - low) * first + slope * ((high * (high - 1.0) - low * (low - 1.0)) / 2.0))


def decode_stretch_seconds(
    cost: IterationCost, decode_batch: ArrayLike, kv_tokens: ArrayLike, iterations: ArrayLike
) -> FloatArray:
    """Time of ``iterations`` decode-only iterations of a fixed batch, in closed form.

    Applies between two state changes of a replica (admission, completion, prefill): the
    same ``decode_batch`` sequences decode one token each per iteration, so iteration ``i``
    (from 0) holds ``kv_tokens + decode_batch·i`` cached tokens. Equals the sum of
    :func:`iteration_seconds` over the stretch, at a cost independent of its length.

    Parameters
    ----------
    cost : IterationCost
        The replica's coefficients (:func:`iteration_cost`).
    decode_batch : array_like
        Sequences decoded in every iteration of the stretch (>= 1). [count]
    kv_tokens : array_like
        Cached tokens the decoding sequences attend to in the first iteration. [tokens]
    iterations : array_like
        Iterations in the stretch (>= 0, whole). [count]

    Returns
    -------
    FloatArray
        Total time of the stretch. [s]

    Notes
    -----
    With ``n = decode_batch`` fixed, iteration ``i``'s compute time ``c0 + c1·i`` and memory
    time ``m0 + m1·i`` are affine in ``i`` (the MoE weight share ``1 − (1 − a)^n`` is
    constant), and so is their gap, so the roofline ``max`` switches side at most once, at
    ``i* = (m0 − c0) / (c1 − m1)`` (each side carrying the exposed share ``e`` of the
    other, ``c + e·m`` and ``m + e·c``, still affine). The stretch is the sum of one affine
    term on each side of ``i*`` plus ``iterations · (comm·n + overhead)``; each affine sum is
    ``(hi − lo)·p0 + p1·(hi(hi − 1) − lo(lo − 1))/2``. Oracle: the sum of
    :func:`iteration_seconds` over the stretch, equal to float rounding (a few units of
    2**-53 relative: every term and the closed form are sums of positive products).

    Examples
    --------
    >>> c = iteration_cost(active_params=8e9, total_params=8e9, layers=32, d_model=4096,
    ...     weight_bytes=16e9, kv_bytes_per_token=131072.0, chips=1, peak_tflops=989,
    ...     hbm_tbps=3.35, interconnect_gbps=900, efficiency=1.0, overhead_seconds=0.001)
    >>> each = sum(float(iteration_seconds(c, 8, 0, 800 + 8 * i)) for i in range(100))
    >>> bool(abs(float(decode_stretch_seconds(c, 8, 800, 100)) / each - 1.0) < 1e-12)
    True
    """
    batch, kv, steps = _f(decode_batch), _f(kv_tokens), _f(iterations)
    # attention FLOPs weighted by their time ratio, in dense-FLOP time (x·1.0 is exact: at
    # ratio 1 these are the bits of the plain FLOP count)
    attention, ratio = cost.attention_flops_per_context_token, cost.attention_peak_ratio
    compute0 = (cost.flops_per_token * batch + attention * kv * ratio) * cost.seconds_per_flop
    compute1 = attention * batch * ratio * cost.seconds_per_flop
    touched = 1.0 - np.power(1.0 - cost.active_fraction, batch)
    memory0 = (cost.weight_bytes * touched + cost.kv_bytes_per_token * kv) * cost.seconds_per_byte
    memory1 = cost.kv_bytes_per_token * batch * cost.seconds_per_byte
    # Each side with the exposed share of the other (max(c, m) + e·min(c, m)): still affine.
    exposed = cost.exposed_fraction
    compute0, memory0 = compute0 + exposed * memory0, memory0 + exposed * compute0
    compute1, memory1 = compute1 + exposed * memory1, memory1 + exposed * compute1
    gap0, gap1 = compute0 - memory0, compute1 - memory1
    compute_first = gap0 >= 0.0  # iteration 0 is compute-bound (ties go to compute, as there)
    with np.errstate(divide="ignore", invalid="ignore"):
        root = -gap0 / gap1  # where the gap changes sign
        # iterations before the switch: compute stays while gap >= 0, memory while gap < 0
        switch = np.where(compute_first, np.floor(root) + 1.0, np.ceil(root))
    stays = np.where(compute_first, gap1 >= 0.0, gap1 <= 0.0)
    leading = np.where(stays, steps, np.clip(switch, 0.0, steps))
    first0, first1 = (
        np.where(compute_first, compute0, memory0),
        np.where(compute_first, compute1, memory1),
    )
    then0, then1 = (
        np.where(compute_first, memory0, compute0),
        np.where(compute_first, memory1, compute1),
    )
    roofline = _affine_sum(first0, first1, 0.0, leading) + _affine_sum(then0, then1, leading, steps)
    return _f(roofline + steps * (cost.comm_seconds_per_token * batch + cost.overhead_seconds))
