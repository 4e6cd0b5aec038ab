"""LLM serving on one replica: memory, iteration time, throughput and latency under load.

Pure, vectorised formulas (arrays in, arrays out, broadcast by numpy; no SimPy, no I/O, no
RNG). A *replica* is the group of ``chips`` that holds one copy of the weights (tensor or
expert parallel) and runs continuous batching: every iteration decodes one token for each
running sequence and prefills a chunk of new prompt tokens.

One formula, :func:`iteration_seconds`, gives the time of such an iteration. Everything else
is built on it, so the request-level DES (one call per iteration, plain floats) and the
analytic fast path (arrays of runs) share it. :func:`iteration_cost` turns a replica's
hardware, model and uncertain efficiency into an :class:`IterationCost` of per-run
coefficients once; each iteration then costs a handful of multiplications.

Units: bytes [B], seconds [s], rates [1/s]; ``peak_tflops`` [TFLOP/s], ``hbm_tbps`` [TB/s],
``interconnect_gbps`` [GB/s] as in :class:`accelsim.catalog.Chip`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import special

from accelsim._typing import ArrayLike, BoolArray, FloatArray

_TERA = 1e12
_GIGA = 1e9
# Iterations of the fixed-iteration bisection on the rate: the bracket shrinks by 2**-40, far
# below any tolerance a rate is quoted to.
_RATE_ITERATIONS = 40
# Newton steps for the MoE memory side of the iteration fixed point, started above the root
# (monotone, quadratic): 6 reach 1e-12 relative on the catalog's MoE models (tested).
_NEWTON_STEPS = 6
# Prompts per iteration in the TTFT model's Poisson sums (0..3, the last takes the tail).
_PROMPT_TERMS = 4


def _f(x: ArrayLike) -> FloatArray:
    return np.asarray(x, dtype=np.float64)


def weight_bytes(params: ArrayLike, bytes_per_param: ArrayLike) -> FloatArray:
    """Bytes of model weights.

    Parameters
    ----------
    params : array_like
        Total parameters (all experts of a mixture of experts). [count]
    bytes_per_param : array_like
        Storage per parameter: 2 for bf16, 1 for fp8/int8, 0.5 for fp4. [B]

    Returns
    -------
    FloatArray
        Weight bytes. [B]

    Examples
    --------
    >>> float(weight_bytes(70e9, 1.0))
    70000000000.0
    """
    return _f(params) * _f(bytes_per_param)


def kv_bytes_per_token(
    layers: ArrayLike, kv_heads: ArrayLike, head_dim: ArrayLike, bytes_per_value: ArrayLike
) -> FloatArray:
    """Bytes of KV cache one token occupies across all layers (keys and values).

    Parameters
    ----------
    layers : array_like
        Transformer layers that keep a KV cache. [count]
    kv_heads : array_like
        Key/value heads per layer (GQA groups; equal to the query heads for MHA). [count]
    head_dim : array_like
        Dimension of one head. [count]
    bytes_per_value : array_like
        Bytes per cached value (2 for bf16, 1 for fp8). [B]

    Returns
    -------
    FloatArray
        KV-cache bytes per token. [B]

    Notes
    -----
    ``2 · L · h_kv · d_head · b``: one key and one value vector per KV head and layer. Oracle:
    the closed form for Llama-3.1-70B at bf16, ``2·80·8·128·2 = 327,680`` B. For MLA
    (DeepSeek-V3/R1) the cache holds one latent per layer instead; pass the per-layer values
    through :func:`kv_bytes_per_token_from_values`.

    Examples
    --------
    >>> float(kv_bytes_per_token(80, 8, 128, 2))
    327680.0
    """
    return 2.0 * _f(layers) * _f(kv_heads) * _f(head_dim) * _f(bytes_per_value)


def kv_bytes_per_token_from_values(
    layers: ArrayLike, values_per_token_per_layer: ArrayLike, bytes_per_value: ArrayLike
) -> FloatArray:
    """KV-cache bytes per token from the cached values per layer (MLA latents, windows).

    Parameters
    ----------
    layers : array_like
        Transformer layers. [count]
    values_per_token_per_layer : array_like
        Values cached per token and layer, keys and values together (DeepSeek-V3 MLA: the
        512-value latent plus the 64-value decoupled RoPE key = 576). [count]
    bytes_per_value : array_like
        Bytes per cached value. [B]

    Returns
    -------
    FloatArray
        KV-cache bytes per token. [B]

    Examples
    --------
    >>> float(kv_bytes_per_token_from_values(61, 576, 1))
    35136.0
    """
    return _f(layers) * _f(values_per_token_per_layer) * _f(bytes_per_value)


def kv_capacity_tokens(
    hbm_bytes_per_replica: ArrayLike,
    weight_bytes: ArrayLike,
    kv_bytes_per_token: ArrayLike,
    memory_share: ArrayLike,
) -> FloatArray:
    """Tokens of KV cache one replica holds.

    Parameters
    ----------
    hbm_bytes_per_replica : array_like
        Device memory of all chips of the replica. [B]
    weight_bytes : array_like
        Bytes of the weights (one copy, sharded over the replica). [B]
    kv_bytes_per_token : array_like
        KV-cache bytes per token (> 0). [B]
    memory_share : array_like
        Share of device memory the serving engine may use for weights and KV cache together
        (vLLM's ``gpu_memory_utilization``); the rest holds activations, workspace and the
        runtime. [fraction]

    Returns
    -------
    FloatArray
        KV-cache capacity [tokens]. Zero or negative means the weights do not fit: the caller
        must report the replica infeasible, never use the number.

    Notes
    -----
    ``(share · HBM − W) / kv_bytes``. Oracle: the closed form.

    Examples
    --------
    >>> float(kv_capacity_tokens(160e9, 70e9, 163840.0, 0.9))
    451660.15625
    """
    usable = _f(memory_share) * _f(hbm_bytes_per_replica) - _f(weight_bytes)
    return usable / _f(kv_bytes_per_token)


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
    """Attention FLOPs per (query token, cached token) pair, 4 · layers · d_model. [FLOP]"""
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

    Returns
    -------
    IterationCost
        Coefficients, each broadcast over the inputs.

    Notes
    -----
    The tensor-parallel term is two all-reduces per layer of ``tokens · d_model ·
    activation_bytes`` each, ring algorithm: every chip sends and receives ``2(t−1)/t`` of
    the buffer over one direction of its link (half the bidirectional figure).
    """
    t = _f(chips)
    link_bytes_per_s = np.maximum(_f(interconnect_gbps), 1e-300) * _GIGA / 2.0
    ring = 2.0 * (t - 1.0) / t
    comm = _f(layers) * 2.0 * _f(d_model) * _f(activation_bytes) * ring / link_bytes_per_s
    eff = _f(efficiency)
    parts = np.broadcast_arrays(
        1.0 / (t * _f(peak_tflops) * _TERA * eff),
        1.0 / (t * _f(hbm_tbps) * _TERA * eff),
        2.0 * _f(active_params),
        4.0 * _f(layers) * _f(d_model),
        _f(weight_bytes),
        _f(active_params) / _f(total_params),
        _f(kv_bytes_per_token),
        comm,
        _f(overhead_seconds),
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

        flops = 2·N_active·n + 4·L·d·(kv_tokens + prefill_tokens·prefill_context_tokens)
        bytes = W·(1 − (1 − N_active/N)^n) + kv_bytes·kv_tokens
        time  = max(flops·s_flop, bytes·s_byte) + comm·n + overhead

    The roofline is the max of compute and memory time, each divided by one efficiency.
    ``W·(1 − (1 − a)^n)`` is the expected weight bytes read when each token touches a share
    ``a`` of the weights at random: all of them for a dense model (``a = 1``), ``a·W`` for a
    single MoE token, approaching ``W`` as the batch grows. Attention FLOPs use ``d_model``
    for the query width (exact for MHA/GQA with ``heads · head_dim = d_model``).
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
    flops = cost.flops_per_token * n + cost.attention_flops_per_context_token * (
        kv + prefill * _f(prefill_context_tokens)
    )
    touched = 1.0 - np.power(1.0 - cost.active_fraction, n)
    memory_bytes = cost.weight_bytes * touched + cost.kv_bytes_per_token * kv
    roofline = np.maximum(flops * cost.seconds_per_flop, memory_bytes * cost.seconds_per_byte)
    return _f(roofline + cost.comm_seconds_per_token * n + cost.overhead_seconds)


def scalar_iteration_seconds(cost: IterationCost) -> Callable[[float, float, float, float], float]:
    """:func:`iteration_seconds` of one run as a plain-float function, for the DES inner loop.

    The same formula, term by term in the same order, on Python floats: it returns exactly
    (bit for bit) what :func:`iteration_seconds` returns for the same inputs, in about a
    twentieth of the time (no numpy call per iteration).

    Parameters
    ----------
    cost : IterationCost
        Coefficients of one run (every field of shape ``()`` or size 1).

    Returns
    -------
    callable
        ``f(decode_batch, prefill_tokens, kv_tokens, prefill_context_tokens) -> seconds``,
        arguments as in :func:`iteration_seconds` ([count], [tokens], [tokens], [tokens]),
        result [s].

    Examples
    --------
    >>> c = iteration_cost(active_params=8e9, total_params=8e9, layers=32, d_model=4096,
    ...     weight_bytes=16e9, kv_bytes_per_token=131072.0, chips=1, peak_tflops=989,
    ...     hbm_tbps=3.35, interconnect_gbps=900, efficiency=1.0, overhead_seconds=0.0)
    >>> scalar_iteration_seconds(c)(1.0, 0.0, 0.0, 0.0) == float(iteration_seconds(c, 1, 0, 0))
    True
    """
    flops_per_token = float(cost.flops_per_token)
    attention = float(cost.attention_flops_per_context_token)
    untouched = 1.0 - float(cost.active_fraction)
    weight = float(cost.weight_bytes)
    kv_bytes = float(cost.kv_bytes_per_token)
    s_flop = float(cost.seconds_per_flop)
    s_byte = float(cost.seconds_per_byte)
    comm = float(cost.comm_seconds_per_token)
    overhead = float(cost.overhead_seconds)

    def seconds(decode: float, prefill: float, kv: float, prefill_context: float) -> float:
        n = decode + prefill
        flops = flops_per_token * n + attention * (kv + prefill * prefill_context)
        memory_bytes = weight * (1.0 - untouched**n) + kv_bytes * kv
        compute_s = flops * s_flop
        memory_s = memory_bytes * s_byte
        roofline = compute_s if compute_s >= memory_s else memory_s
        return roofline + comm * n + overhead

    return seconds


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
    ``i* = (m0 − c0) / (c1 − m1)``. The stretch is the sum of one affine term on each side
    of ``i*`` plus ``iterations · (comm·n + overhead)``; each affine sum is
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
    compute0 = (cost.flops_per_token * batch + cost.attention_flops_per_context_token * kv) * (
        cost.seconds_per_flop
    )
    compute1 = cost.attention_flops_per_context_token * batch * cost.seconds_per_flop
    touched = 1.0 - np.power(1.0 - cost.active_fraction, batch)
    memory0 = (cost.weight_bytes * touched + cost.kv_bytes_per_token * kv) * cost.seconds_per_byte
    memory1 = cost.kv_bytes_per_token * batch * cost.seconds_per_byte
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


def scalar_decode_stretch_seconds(cost: IterationCost) -> Callable[[int, int, int], float]:
    """:func:`decode_stretch_seconds` of one run as a plain-float function, for the DES.

    The same closed form on Python floats (no numpy call per stretch).

    Parameters
    ----------
    cost : IterationCost
        Coefficients of one run (every field of shape ``()`` or size 1).

    Returns
    -------
    callable
        ``f(decode_batch, kv_tokens, iterations) -> seconds``, arguments as in
        :func:`decode_stretch_seconds` ([count], [tokens], [count]), result [s].

    Examples
    --------
    >>> c = iteration_cost(active_params=8e9, total_params=8e9, layers=32, d_model=4096,
    ...     weight_bytes=16e9, kv_bytes_per_token=131072.0, chips=1, peak_tflops=989,
    ...     hbm_tbps=3.35, interconnect_gbps=900, efficiency=1.0, overhead_seconds=0.001)
    >>> f = scalar_decode_stretch_seconds(c)
    >>> bool(abs(f(8, 800, 100) / float(decode_stretch_seconds(c, 8, 800, 100)) - 1) < 1e-15)
    True
    """
    flops_per_token = float(cost.flops_per_token)
    attention = float(cost.attention_flops_per_context_token)
    untouched = 1.0 - float(cost.active_fraction)
    weight = float(cost.weight_bytes)
    kv_bytes = float(cost.kv_bytes_per_token)
    s_flop = float(cost.seconds_per_flop)
    s_byte = float(cost.seconds_per_byte)
    comm = float(cost.comm_seconds_per_token)
    overhead = float(cost.overhead_seconds)

    def seconds(decode: int, kv: int, iterations: int) -> float:
        compute0 = (flops_per_token * decode + attention * kv) * s_flop
        compute1 = attention * decode * s_flop
        memory0 = (weight * (1.0 - untouched**decode) + kv_bytes * kv) * s_byte
        memory1 = kv_bytes * decode * s_byte
        gap0, gap1 = compute0 - memory0, compute1 - memory1
        if gap0 >= 0.0:  # compute-bound first, until the gap turns negative
            leading = iterations if gap1 >= 0.0 else math.floor(-gap0 / gap1) + 1
            first0, first1, then0, then1 = compute0, compute1, memory0, memory1
        else:  # memory-bound first, until the gap reaches 0
            leading = iterations if gap1 <= 0.0 else math.ceil(-gap0 / gap1)
            first0, first1, then0, then1 = memory0, memory1, compute0, compute1
        leading = min(max(leading, 0), iterations)
        before = leading * first0 + first1 * (leading * (leading - 1) / 2.0)
        after = (iterations - leading) * then0 + then1 * (
            (iterations * (iterations - 1) - leading * (leading - 1)) / 2.0
        )
        roofline = before + after
        return roofline + iterations * (comm * decode + overhead)

    return seconds


def batch_limit(
    kv_capacity_tokens: ArrayLike,
    input_tokens: ArrayLike,
    output_tokens: ArrayLike,
    max_batch: ArrayLike,
) -> FloatArray:
    """Largest number of concurrent sequences a replica runs: KV cache or scheduler cap.

    Parameters
    ----------
    kv_capacity_tokens : array_like
        KV-cache capacity (:func:`kv_capacity_tokens`). [tokens]
    input_tokens, output_tokens : array_like
        Mean prompt and output lengths. [tokens]
    max_batch : array_like
        Scheduler cap on running sequences (vLLM ``max_num_seqs``). [count]

    Returns
    -------
    FloatArray
        ``floor(min(capacity / (input + output), max_batch))``, at least 0 [count]; 0 means
        not even one sequence of full length fits (infeasible).

    Examples
    --------
    >>> float(batch_limit(451660.0, 222.0, 290.0, 256))
    256.0
    """
    per_sequence = _f(input_tokens) + _f(output_tokens)
    fit = np.floor(np.maximum(_f(kv_capacity_tokens), 0.0) / per_sequence)
    return _f(np.minimum(fit, np.floor(_f(max_batch))))


def throughput_at_batch(
    cost: IterationCost, batch: ArrayLike, input_tokens: ArrayLike, output_tokens: ArrayLike
) -> FloatArray:
    """Output tokens per second of a replica running ``batch`` sequences in steady state.

    Parameters
    ----------
    cost : IterationCost
        The replica's coefficients.
    batch : array_like
        Concurrent sequences. [count]
    input_tokens, output_tokens : array_like
        Mean prompt and output lengths (> 0). [tokens]

    Returns
    -------
    FloatArray
        Output tokens per second of the replica. [tokens/s]

    Notes
    -----
    Steady state of continuous batching: every iteration decodes ``B`` tokens and, since a
    sequence finishes every ``output`` iterations on average, prefills
    ``B · input / output`` prompt tokens (each attending to ``input / 2`` on average);
    the decoding sequences hold ``B · (input + output / 2)`` cached tokens on average.
    Throughput = ``B / iteration_seconds``. Oracle: at batch 1 with ``input → 0`` it is the
    inverse of the batch-1 decode time.
    """
    b = _f(batch)
    inp = _f(input_tokens)
    out = _f(output_tokens)
    seconds = iteration_seconds(cost, b, b * inp / out, b * (inp + out / 2.0), inp / 2.0)
    return _f(b / seconds)


def offline_tokens_per_s(
    cost: IterationCost,
    kv_capacity_tokens: ArrayLike,
    input_tokens: ArrayLike,
    output_tokens: ArrayLike,
    max_batch: ArrayLike,
) -> FloatArray:
    """Saturated (offline) output tokens per second of a replica, no latency bound.

    Parameters
    ----------
    cost : IterationCost
        The replica's coefficients.
    kv_capacity_tokens : array_like
        KV-cache capacity. [tokens]
    input_tokens, output_tokens : array_like
        Mean prompt and output lengths (> 0). [tokens]
    max_batch : array_like
        Scheduler cap on running sequences. [count]

    Returns
    -------
    FloatArray
        Output tokens per second of the replica at :func:`batch_limit` [tokens/s]; 0 where
        the batch limit is 0 (the model or one sequence does not fit: infeasible).

    Notes
    -----
    MLPerf Offline issues every query at t = 0, so the replica runs at its batch limit.
    """
    limit = batch_limit(kv_capacity_tokens, input_tokens, output_tokens, max_batch)
    batch = np.maximum(limit, 1.0)
    return _f(
        np.where(limit >= 1.0, throughput_at_batch(cost, batch, input_tokens, output_tokens), 0.0)
    )


@dataclass(frozen=True)
class LoadLatency:
    """Latency of one replica under Poisson load (:func:`latency_under_load`).

    Every field is finite. Where ``saturated`` is True the rate is beyond what the replica
    serves: the other fields are then evaluated at the batch limit and are lower bounds,
    not predictions.
    """

    decode_batch: FloatArray
    """Mean sequences in decode (Little's law: rate · output tokens · TPOT). [count]"""
    tpot_p50_s: FloatArray
    """Median time per output token: the steady-state iteration time. [s]"""
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
) -> tuple[FloatArray, BoolArray]:
    """Steady-state iteration time T = f(T) under load, and whether it exists.

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
    token_rate = rate * (inp + out)
    s_flop, s_byte = cost.seconds_per_flop, cost.seconds_per_byte
    attention = cost.attention_flops_per_context_token
    fixed0 = cost.comm_seconds_per_token + cost.overhead_seconds
    fixed1 = cost.comm_seconds_per_token * token_rate
    compute0 = (cost.flops_per_token + attention * ctx) * s_flop + fixed0
    compute1 = (
        cost.flops_per_token * token_rate + attention * rate * (out * ctx + inp * inp / 2.0)
    ) * (s_flop) + (fixed1 - 1.0)
    weights = cost.weight_bytes * s_byte
    memory0 = cost.kv_bytes_per_token * ctx * s_byte + fixed0
    memory1 = cost.kv_bytes_per_token * rate * out * ctx * s_byte + (fixed1 - 1.0)
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


def _poisson_quantile(q: FloatArray, mean: FloatArray) -> FloatArray:
    """Smallest integer ``k`` with ``P(N <= k) >= q`` for ``N ~ Poisson(mean > 0)``, exactly.

    A Cornish–Fisher guess (off by at most one step for ``q <= 0.99``), then whole steps
    checked on the CDF, ``scipy.special.pdtr`` once and updated by the pmf, until
    ``P(N <= k − 1) < q <= P(N <= k)``: the quantile ``scipy.stats.poisson.ppf`` returns
    (tested equal), at about a third of its cost.
    """
    z = special.ndtri(q)
    log_mean = np.log(mean)
    k = np.maximum(np.floor(mean + np.sqrt(mean) * z + (z * z - 1.0) / 6.0), 0.0)
    cdf = special.pdtr(k, mean)

    def pmf(j: FloatArray) -> FloatArray:
        return _f(np.exp(j * log_mean - mean - special.gammaln(j + 1.0)))

    for _ in range(64):  # a pass moves each element one step; one or two passes suffice
        at = pmf(k)
        up = cdf < q
        down = (k > 0.0) & (cdf - at >= q)
        if not (up.any() or down.any()):
            break
        cdf = np.where(up, cdf + pmf(k + 1.0), np.where(down, cdf - at, cdf))
        k = k + up - down
    return _f(k)


def _cumulants(m1: FloatArray, m2: FloatArray, m3: FloatArray) -> list[FloatArray]:
    """Mean, variance and third cumulant from the first three raw moments."""
    return [m1, m2 - m1 * m1, m3 - 3.0 * m1 * m2 + 2.0 * m1**3]


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
        Prompt tokens prefilled per iteration (chunked prefill, sharing the iteration with
        decode); 0 = prefill-first (whole prompts in an iteration without decode). [tokens]
    input_variance, input_third_moment, input_fourth_moment : array_like, optional
        Second, third and fourth central moments of the per-request prompt length (0: every
        prompt has the mean length; the fourth defaults to ``3·variance²``, a normal's).
        [tokens²], [tokens³], [tokens⁴]

    Returns
    -------
    LoadLatency
        Batch, TPOT and TTFT percentiles, prefill load and a saturation flag.

    Notes
    -----
    *Decode.* A tagged request shares each iteration with the ``B`` others in decode
    (Poisson arrivals see time averages), so the iteration time is the fixed point
    ``T = iteration_seconds(1 + B, λ·in·T, (1 + B)·(in + out/2))`` with ``B = λ·out·T``
    (Little's law), solved per roofline side in closed form (Newton for the MoE weight
    share, :func:`_solve_iteration`); no root below ``(limit − 1)/(λ·out)`` means the batch
    limit overflows (saturated). TPOT p50 is ``T``; the tail takes the exact Poisson
    quantile of the batch, ``1 + F⁻¹(q; B)``, at the same prefill load (an upper estimate:
    a request's TPOT averages its iterations).

    *First token.* A request is admitted only at an iteration boundary, so
    ``TTFT = R + W + D`` (independent parts):

    - ``R``, the residual of the iteration in progress at arrival. An iteration carries
      ``j ~ Poisson(ν = λT)`` prompt chunks (chunked prefill: ``I_j =
      iteration_seconds(B, j·c)``, ``c = min(in, C)``; prefill-first: ``I_0`` decodes,
      ``I_j`` prefills only). Arrivals see it length-biased:
      ``E[R^k] = π·E[I^{k+1}] / ((k + 1)·E[I])``, with ``π = 1 − exp(−(B + ν))`` the
      chance the replica is busy (idle: no wait).
    - ``D``, the tagged prompt's own prefill: ``⌈in/C⌉ − 1`` full-chunk iterations, then
      the last piece in an iteration shared with the ``M ~ Poisson(λ·E[I²]/E[I])`` prompts
      that arrived during the same iteration: ``D = (⌈in/C⌉ − 1)·I_C + O_M``. Prompt-length
      variability adds ``δ·(P − in)``, ``δ`` the marginal time per prompt token.
    - ``W``, queueing for the prefill (M/G/1 FCFS): prompt work ``X = δ·P`` (prefill-first:
      the prompt's compute; chunked: ``P/C`` full-chunk iterations), load ``ρ = λ·E[X]``,
      waiting-time moments by Takács' recursion ``E[W^k] = λ/(1 − ρ) Σᵢ C(k, i)
      E[X^{i+1}]/(i + 1) E[W^{k−i}]`` (``k = 1``: Pollaczek–Khinchine). ``R`` already
      holds the residual of one iteration's prompt work, ``λ(δ·c)²/2``, so ``W`` is that
      wait scaled to the rest of its mean.

    Their cumulants add; the percentiles are the Cornish–Fisher expansion to the third
    cumulant, ``κ₁ + σ(z + (z² − 1)γ/6)``, floored at the shortest TTFT ``D(M = 0)``.
    Oracles: the request DES (``tests/agreement``: median DES/fast ratio over runs 1.13 at
    p50 and 1.05 at p99 on chunked prefill at 4-16 % load; 0.99-1.17 and 1.01-1.06 on
    prefill-first, multi-chunk prompts, log-normal prompts and 20-50 % load); the mean
    with fixed iterations and no prefill work is ``T/2 + D`` exactly; ``W`` is the M/G/1
    wait's (Pollaczek–Khinchine, Takács) scaled. The expansion is exact for a normal and
    within 4 % of an exponential's median and 99th percentile. It breaks (a) where rare
    multi-prompt iterations (probability ``ν``, ``λE[I²]/E[I]``) make TTFT multimodal: the
    skew they add lowers the expanded median by ``σγ/6`` though the median does not see
    them (the p50 is understated by up to ~20 % at light load); (b) at light load with a
    bounded, flat residual, where the p99 of that part is overstated by up to ``0.17·T``
    (a uniform's is ``0.99T``, the expansion's ``(0.5 + 0.67)T``); (c) near saturation of
    the prefill (``ρ → 1``), where FCFS batching of prompts in one iteration departs from
    M/G/1 and the iterations' lengths are no longer independent of the queue.
    """
    rate = np.maximum(_f(rate_rps), 1e-300)
    inp = _f(input_tokens)
    out = _f(output_tokens)
    limit = _f(batch_limit)
    q = _f(percentile)
    t, overflow = _solve_iteration(cost, rate, inp, out, limit)
    batch = rate * out * t
    ctx = inp + out / 2.0
    prefill = rate * inp * t
    tail_batch = 1.0 + _poisson_quantile(q, np.maximum(batch, 1e-12))
    tpot_tail = iteration_seconds(cost, tail_batch, prefill, tail_batch * ctx, inp / 2.0)

    chunk = _f(prefill_chunk_tokens)
    chunked = chunk > 0.0
    piece = np.where(chunked, np.minimum(inp, chunk), inp)  # a prompt's tokens per iteration
    pieces = np.where(chunked, np.ceil(inp / np.where(chunked, chunk, 1.0)), 1.0)
    last = inp - (pieces - 1.0) * piece
    # Decoding sequences in an iteration with prompts: all of them (chunked), none (prefill-first).
    with_prompts = np.where(chunked, batch, 0.0)
    # The iteration in progress at an arrival carries j ~ Poisson(ν) prompt pieces.
    nu = rate * t
    in_progress = [iteration_seconds(cost, batch, 0.0, batch * ctx, 0.0)] + [
        iteration_seconds(cost, with_prompts, j * piece, with_prompts * ctx, piece / 2.0)
        for j in range(1, _PROMPT_TERMS)
    ]
    i_moments = _mixture_moments(_poisson_weights(nu), in_progress, 4)
    busy = 1.0 - np.exp(-(batch + nu))
    residual = [busy * i_moments[k] / ((k + 1) * i_moments[0]) for k in (1, 2, 3)]
    # The tagged prompt: its full chunks, then its last piece with M ~ Poisson joining it.
    joining = rate * i_moments[1] / i_moments[0]  # arrivals during the iteration in progress
    full_chunk = iteration_seconds(
        cost, with_prompts, np.where(chunked, chunk, 0.0), with_prompts * ctx, inp / 2.0
    )
    full = np.where(chunked, (pieces - 1.0) * full_chunk, 0.0)
    own = [
        full
        + iteration_seconds(cost, with_prompts, last + m * piece, with_prompts * ctx, last / 2.0)
        for m in range(_PROMPT_TERMS)
    ]
    d_moments = _mixture_moments(_poisson_weights(joining), own, 3)

    marginal = (own[1] - own[0]) / piece  # time per prompt token once compute-bound [s]
    full_rate = np.where(chunked, full_chunk / np.where(chunked, chunk, 1.0), 0.0)
    per_token = np.maximum(marginal, full_rate)
    work = per_token * inp
    rho_raw = rate * work
    saturated = overflow | (rho_raw >= 1.0)
    rho = np.clip(rho_raw, 0.0, 1.0 - 1e-9)
    var, m3 = _f(input_variance), _f(input_third_moment)
    m4 = 3.0 * var * var if input_fourth_moment is None else _f(input_fourth_moment)
    x2 = per_token**2 * (inp**2 + var)  # raw moments of the prompt work X = δ·P
    x3 = per_token**3 * (inp**3 + 3.0 * inp * var + m3)
    x4 = per_token**4 * (inp**4 + 6.0 * inp**2 * var + 4.0 * inp * m3 + m4)
    # M/G/1 waiting-time moments (Takács): E[W^k] = λ/(1−ρ) Σ C(k,i) E[X^{i+1}]/(i+1) E[W^{k−i}]
    load = rate / (1.0 - rho)
    w1 = load * x2 / 2.0
    w2 = load * (x2 * w1 + x3 / 3.0)
    w3 = load * (1.5 * x2 * w2 + x3 * w1 + x4 / 4.0)
    # The residual of one iteration's prompt work is already in R: W keeps the rest of the
    # Pollaczek–Khinchine mean, with the shape (moments given W > 0) of the M/G/1 wait.
    wait = np.maximum(w1 - rate * (per_token * piece) ** 2 / 2.0, 0.0)
    scale = wait / np.maximum(w1, 1e-300)
    w_moments = (wait, w2 * scale**2, w3 * scale**3)

    r, d, w = _cumulants(*residual), _cumulants(*d_moments), _cumulants(*w_moments)
    mean = r[0] + d[0] + w[0]
    variance = r[1] + d[1] + w[1] + per_token**2 * var
    sd = np.sqrt(np.maximum(variance, 0.0))
    # Chance that other prompts share the in-progress or the tagged iteration (the jumps
    # behind R's and D's skew).
    decoding_only = np.exp(-nu) * in_progress[0] / i_moments[0]  # length-biased, j = 0
    jumps = busy * (1.0 - decoding_only * np.exp(-joining))
    shortest = own[0]

    def quantile(level: FloatArray) -> FloatArray:
        z = special.ndtri(level)
        # A rare jump (probability p) skews the sum whatever p; it moves the quantile at
        # this level only if p is comparable to 1 − level: weight its skew by that ratio.
        seen = np.minimum(jumps / (1.0 - level), 1.0)
        waits = np.minimum(rho / (1.0 - level), 1.0)  # W > 0 with probability ρ
        third = seen * (r[2] + d[2]) + waits * w[2] + per_token**3 * m3
        skew = np.maximum(third, 0.0) / np.maximum(sd**3, 1e-300)
        return _f(np.maximum(mean + sd * (z + (z * z - 1.0) * skew / 6.0), shortest))

    return LoadLatency(
        decode_batch=_f(batch),
        tpot_p50_s=_f(t),
        tpot_tail_s=_f(np.maximum(tpot_tail, t)),
        ttft_mean_s=_f(np.maximum(mean, shortest)),
        ttft_p50_s=quantile(np.asarray(0.5)),
        ttft_tail_s=quantile(q),
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
        The scheduler's prefill chunk and the prompt-length law's central moments, as in
        :func:`latency_under_load`. [tokens], [tokens²], [tokens³], [tokens⁴]

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


__all__ = [
    "IterationCost",
    "LoadLatency",
    "SloCapacity",
    "batch_limit",
    "decode_stretch_seconds",
    "iteration_cost",
    "iteration_seconds",
    "kv_bytes_per_token",
    "kv_bytes_per_token_from_values",
    "kv_capacity_tokens",
    "latency_under_load",
    "offline_tokens_per_s",
    "scalar_decode_stretch_seconds",
    "scalar_iteration_seconds",
    "slo_capacity_rps",
    "throughput_at_batch",
    "weight_bytes",
]
