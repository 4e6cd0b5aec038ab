"""Training performance: FLOPs, memory per chip, failure-free compute time and scaling.

Pure, vectorised formulas (arrays in, arrays out, broadcast by numpy). The scaling model
carries an MFU measured at one scale to another: per training step, compute shrinks with the
chip count while the data-parallel gradient all-reduce does not, crossing a scale-up
domain (an NVLink node or rack, a TPU pod or slice) moves that traffic onto the slower
scale-out network, and at a fixed global batch the pipeline's micro-batches per replica
shrink, so its bubble grows. Its calibrated parameters (``overlap``, the interleaving) are
arguments; their sourced defaults are :func:`accelsim.catalog.scaling_defaults`
(``catalog/data/scaling.yaml``).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from accelsim._typing import ArrayLike, FloatArray

Sharding = Literal["none", "zero1", "zero2", "zero3", "fsdp"]

_BYTES_PER_GIB = 2.0**30
_SECONDS_PER_HOUR = 3600.0
# Backward share of a training step's FLOPs: the backward pass costs twice the forward (4ND of
# the 6ND), and gradient traffic can only hide behind it.
_BACKWARD_SHARE = 2.0 / 3.0

# Which of (parameters, gradients, optimizer states) each strategy shards across the chips,
# after Rajbhandari et al. (2020): ZeRO-1 = P_os, ZeRO-2 = P_os+g, ZeRO-3 = P_os+g+p; PyTorch
# FSDP FULL_SHARD shards all three, like ZeRO-3 (Zhao et al. 2023).
_SHARDED: dict[str, tuple[bool, bool, bool]] = {
    "none": (False, False, False),
    "zero1": (False, False, True),
    "zero2": (False, True, True),
    "zero3": (True, True, True),
    "fsdp": (True, True, True),
}


def _f(x: ArrayLike) -> FloatArray:
    return np.asarray(x, dtype=np.float64)


def training_flops(
    params: ArrayLike,
    tokens: ArrayLike,
    *,
    layers: ArrayLike | None = None,
    seq_len: ArrayLike | None = None,
    d_model: ArrayLike | None = None,
) -> FloatArray:
    """Model FLOPs of training a dense transformer: 6·N·D, plus attention if its shape is given.

    The 6·N·D count (forward 2N, backward 4N per token) is the convention MFU is reported in;
    it ignores attention score FLOPs and activation recomputation. Giving ``layers``,
    ``seq_len`` and ``d_model`` together adds the attention term of PaLM's MFU definition.

    Parameters
    ----------
    params : array_like
        Parameters active per token (for a mixture of experts, the active ones). [count]
    tokens : array_like
        Training tokens. [count]
    layers, seq_len, d_model : array_like, optional
        Transformer layers [count], sequence length [tokens] and attention width
        (heads × head dimension) [count]. All three, or none for the plain 6·N·D.

    Returns
    -------
    ndarray
        Training FLOPs. [FLOP]

    Notes
    -----
    .. math:: F = 6 N D + 12 L T d \\cdot D

    The attention term is PaLM's (Chowdhery et al. 2022, appendix B): QKᵀ and scores·V of
    every layer over the full T×T matrix, forward and backward, 12·L·H·Q·T per token with
    H·Q = d (Kaplan et al. 2020 count QKᵀ only, half of it). Oracle: Narayanan et al. (2021)
    eq. 3 without recomputation or logit layer, 72·B·s·l·h²·(1 + s/6h), with N = 12·l·h².

    References
    ----------
    Chowdhery et al. (2022), PaLM, arXiv:2204.02311, appendix B.
    Narayanan et al. (2021), Efficient large-scale language model training on GPU clusters
    using Megatron-LM, arXiv:2104.04473.

    Examples
    --------
    >>> float(training_flops(175e9, 300e9))
    3.15e+23
    >>> float(training_flops(175e9, 300e9, layers=96, seq_len=2048, d_model=12288))  # +2.8 %
    3.237e+23
    """
    flops = 6.0 * _f(params) * _f(tokens)
    if layers is None or seq_len is None or d_model is None:
        return flops
    return flops + 12.0 * _f(layers) * _f(seq_len) * _f(d_model) * _f(tokens)


def _state_bytes(
    params: ArrayLike,
    sharding: Sharding,
    bytes_per_param: ArrayLike,
    optimizer_bytes_per_param: ArrayLike,
    grad_bytes_per_param: ArrayLike,
) -> tuple[FloatArray, FloatArray]:
    """(bytes every chip holds in full, bytes sharded over the chips) of the model states."""
    try:
        sharded_flags = _SHARDED[sharding]
    except KeyError:
        raise ValueError(f"sharding must be one of {sorted(_SHARDED)}, got {sharding!r}") from None
    per_param = (_f(bytes_per_param), _f(grad_bytes_per_param), _f(optimizer_bytes_per_param))
    replicated = np.zeros(())
    sharded = np.zeros(())
    for size, is_sharded in zip(per_param, sharded_flags, strict=True):
        if is_sharded:
            sharded = sharded + size
        else:
            replicated = replicated + size
    n = _f(params)
    return n * replicated, n * sharded


def memory_per_chip_gib(
    params: ArrayLike,
    chips: ArrayLike,
    *,
    sharding: Sharding,
    bytes_per_param: ArrayLike = 2.0,
    optimizer_bytes_per_param: ArrayLike = 12.0,
    grad_bytes_per_param: ArrayLike = 2.0,
    activation_gib: ArrayLike = 0.0,
) -> FloatArray:
    """HBM one chip needs for the model states of mixed-precision Adam, after ZeRO.

    Data parallelism over ``chips`` with the chosen sharding of parameters, gradients and
    optimizer states. Activations are per chip and are not sharded.

    Parameters
    ----------
    params : array_like
        Model parameters. [count]
    chips : array_like
        Chips the states are sharded over (the data-parallel group). [count]
    sharding : {"none", "zero1", "zero2", "zero3", "fsdp"}
        Sharded: nothing; optimizer states; + gradients; + parameters ("fsdp" = FULL_SHARD).
    bytes_per_param, grad_bytes_per_param : array_like, optional
        Weights and gradients in bf16/fp16. [B per parameter]
    optimizer_bytes_per_param : array_like, optional
        fp32 master weights, Adam momentum and variance (K = 12). [B per parameter]
    activation_gib : array_like, optional
        Activations and buffers per chip. [GiB]

    Returns
    -------
    ndarray
        Memory per chip. [GiB]

    Notes
    -----
    With Ψ parameters, K optimizer bytes and N_d chips (Rajbhandari et al. 2020, fig. 1):
    none (2 + 2 + K)Ψ; zero1 2Ψ + 2Ψ + KΨ/N_d; zero2 2Ψ + (2 + K)Ψ/N_d;
    zero3 (2 + 2 + K)Ψ/N_d. Oracle: the paper's figure 1 at Ψ = 7.5 B, N_d = 64, K = 12:
    120, 31.4, 16.6 and 1.9 GB.

    References
    ----------
    Rajbhandari et al. (2020), ZeRO: memory optimizations toward training trillion
    parameter models, arXiv:1910.02054.

    Examples
    --------
    >>> float(memory_per_chip_gib(7.5e9, 64, sharding="zero2") * 2**30 / 1e9)
    16.640625
    """
    replicated, sharded = _state_bytes(
        params, sharding, bytes_per_param, optimizer_bytes_per_param, grad_bytes_per_param
    )
    return (replicated + sharded / _f(chips)) / _BYTES_PER_GIB + _f(activation_gib)


def min_chips_to_fit(
    params: ArrayLike,
    hbm_gib: ArrayLike,
    *,
    sharding: Sharding,
    usable_fraction: ArrayLike = 1.0,
    bytes_per_param: ArrayLike = 2.0,
    optimizer_bytes_per_param: ArrayLike = 12.0,
    grad_bytes_per_param: ArrayLike = 2.0,
    activation_gib: ArrayLike = 0.0,
) -> FloatArray:
    """Fewest chips whose HBM holds the model states under a sharding strategy.

    Parameters
    ----------
    params : array_like
        Model parameters. [count]
    hbm_gib : array_like
        HBM per chip. [GiB]
    sharding : {"none", "zero1", "zero2", "zero3", "fsdp"}
        As in :func:`memory_per_chip_gib`.
    usable_fraction : array_like, optional
        Share of the HBM the training states may use (the rest holds the runtime context,
        communication buffers and fragmentation). [fraction]
    bytes_per_param, optimizer_bytes_per_param, grad_bytes_per_param, activation_gib
        As in :func:`memory_per_chip_gib`.

    Returns
    -------
    ndarray
        Minimum chips, a whole number ≥ 1; ``inf`` where no chip count fits (the replicated
        part alone exceeds the usable HBM). [count]

    Notes
    -----
    With R the replicated bytes plus activations and S the sharded bytes, the states fit on
    n chips when R + S/n ≤ f·HBM, so n = max(1, ⌈S / (f·HBM − R)⌉). Oracle: the result fits
    (:func:`memory_per_chip_gib` ≤ f·HBM) and one chip fewer does not (property test).

    Examples
    --------
    >>> float(min_chips_to_fit(70e9, 80, sharding="zero3"))
    14.0
    >>> float(min_chips_to_fit(70e9, 80, sharding="none"))
    inf
    """
    replicated, sharded = _state_bytes(
        params, sharding, bytes_per_param, optimizer_bytes_per_param, grad_bytes_per_param
    )
    capacity = _f(usable_fraction) * _f(hbm_gib) * _BYTES_PER_GIB
    spare = capacity - replicated - _f(activation_gib) * _BYTES_PER_GIB
    with np.errstate(divide="ignore", invalid="ignore"):
        needed = np.maximum(np.ceil(sharded / spare), 1.0)
    fits_unsharded = (sharded == 0.0) & (spare >= 0.0)
    return np.where(spare > 0.0, needed, np.where(fits_unsharded, 1.0, np.inf))


def delivered_tflops(peak_tflops: ArrayLike, mfu: ArrayLike) -> FloatArray:
    """Model FLOP/s one chip delivers: its dense peak [TFLOP/s] times the MFU [fraction].

    Returns [TFLOP/s]. Notes: the definition of MFU (Chowdhery et al. 2022, appendix B).

    Examples
    --------
    >>> float(delivered_tflops(989.0, 0.4))
    395.6
    """
    return _f(peak_tflops) * _f(mfu)


def compute_hours(
    flops: ArrayLike, chips: ArrayLike, peak_tflops: ArrayLike, mfu: ArrayLike
) -> FloatArray:
    """Failure-free training time: the FLOPs at the fleet's delivered throughput.

    Parameters
    ----------
    flops : array_like
        Training FLOPs (e.g. :func:`training_flops`). [FLOP]
    chips : array_like
        Chips training together. [count]
    peak_tflops : array_like
        Dense peak per chip at the training precision. [TFLOP/s]
    mfu : array_like
        MFU of the run at this scale (see :func:`carry_mfu`). [fraction]

    Returns
    -------
    ndarray
        Wall-clock hours without failures, restarts or checkpoints. [h]

    Notes
    -----
    .. math:: t = F / (n \\cdot P \\cdot 10^{12} \\cdot \\mathrm{MFU}) / 3600

    Oracle: ``derived_ideal_days_at_reported_mfu`` of ../shared/reference/validation/
    training_runs.csv (GLM-130B: 46.4 days), recomputed in the validation tests.

    Examples
    --------
    >>> round(float(compute_hours(3.12e23, 768, 312.0, 0.325)) / 24, 1)
    46.4
    """
    delivered = _f(chips) * _f(peak_tflops) * 1e12 * _f(mfu)
    return _f(flops) / delivered / _SECONDS_PER_HOUR


def gradient_allreduce_seconds(
    chips: ArrayLike,
    *,
    params: ArrayLike,
    scale_up_domain_chips: ArrayLike,
    scale_up_gbps: ArrayLike,
    scale_out_gbps: ArrayLike,
    model_parallel_chips: ArrayLike = 1.0,
    bytes_per_grad: ArrayLike = 2.0,
) -> FloatArray:
    """Time of one step's data-parallel gradient all-reduce, hierarchical ring.

    Each chip all-reduces the gradients of its 1/``model_parallel_chips`` of the model with
    its replicas: reduce-scatter inside each scale-up domain, all-reduce of the shard across
    domains on the scale-out network, all-gather inside the domain.

    Parameters
    ----------
    chips : array_like
        Chips training together; a multiple of ``model_parallel_chips``. [count]
    params : array_like
        Model parameters. [count]
    scale_up_domain_chips : array_like
        Chips in one scale-up domain (8 for an HGX node, 72 for an NVL72 rack, 8960 for a
        TPU v5p pod). [count]
    scale_up_gbps : array_like
        Scale-up bandwidth per chip, aggregate bidirectional as datasheets quote NVLink and
        ICI (the catalog's ``interconnect_gbps``); the ring uses half of it per direction.
        [GB/s]
    scale_out_gbps : array_like
        Scale-out bandwidth per chip and direction (a 400 Gb/s NIC per chip is 50), as the
        catalog's ``scale_out_gbps``. [GB/s]
    model_parallel_chips : array_like, optional
        Chips holding one model replica (tensor × pipeline × context parallel). [count]
    bytes_per_grad : array_like, optional
        Bytes per gradient element on the wire (2 for bf16, 4 for fp32). [B]

    Returns
    -------
    ndarray
        Seconds per step; 0 for a single replica, ``nan`` where ``chips`` <
        ``model_parallel_chips``. [s]

    Notes
    -----
    With g = N·b/p gradient bytes per chip, r = n/p replicas, m = ⌈n / max(d, p)⌉ domain
    groups the replicas span and per-direction bandwidths B_up = scale_up/2, B_out:

    .. math:: T = \\frac{2g}{r}\\left(\\frac{r - m}{B_{up}} + \\frac{m - 1}{B_{out}}\\right)

    (reduce-scatter and all-gather move (k−1)/k·g each inside groups of k = r/m, the
    cross-domain all-reduce moves 2(m−1)/m of the g/k shard). Oracle: for m = 1 it is the
    ring all-reduce 2(r−1)/r·g/B_up (Patarasuk & Yuan 2009); for p ≥ d the flat ring over
    the scale-out network. A job that does not fill its last domain is charged as if its
    replicas were spread evenly over ⌈n/d⌉ domains.

    References
    ----------
    Patarasuk & Yuan (2009), Bandwidth optimal all-reduce algorithms for clusters of
    workstations, J. Parallel Distrib. Comput. 69(2).

    Examples
    --------
    Eight H100 in one NVLink node versus sixteen across two nodes (7B model, bf16 grads):

    >>> h100 = dict(params=7e9, scale_up_domain_chips=8, scale_up_gbps=900, scale_out_gbps=50)
    >>> [round(float(gradient_allreduce_seconds(n, **h100)), 3) for n in (8, 16)]
    [0.054, 0.089]
    """
    n = _f(chips)
    p = _f(model_parallel_chips)
    grad_bytes = _f(params) * _f(bytes_per_grad) / p
    replicas = n / p
    groups = np.ceil(n / np.maximum(_f(scale_up_domain_chips), p))
    up = _f(scale_up_gbps) * 0.5e9
    out = _f(scale_out_gbps) * 1e9
    inside = replicas - groups
    # Chips without a scale-up link (L4, CPU servers: domain 1) move nothing inside a
    # domain: that term is 0, not 0/0. A link of 0 GB/s with traffic on it takes forever.
    with np.errstate(divide="ignore", invalid="ignore"):
        up_term = np.where(inside > 0, inside / up, 0.0)
    seconds = 2.0 * grad_bytes / replicas * (up_term + (groups - 1.0) / out)
    return np.where(replicas >= 1.0, seconds, np.nan)


def _comm_over_compute_at_peak(
    chips: ArrayLike,
    params: ArrayLike,
    batch_tokens: ArrayLike,
    peak_tflops: ArrayLike,
    network: tuple[ArrayLike, ArrayLike, ArrayLike, ArrayLike, ArrayLike],
) -> FloatArray:
    """k = T / C₁: the all-reduce time over one step's 6·N·B FLOPs per chip at 100 % of peak."""
    domain, up, out, layout, grad_bytes = network
    comm = gradient_allreduce_seconds(
        chips,
        params=params,
        scale_up_domain_chips=domain,
        scale_up_gbps=up,
        scale_out_gbps=out,
        model_parallel_chips=layout,
        bytes_per_grad=grad_bytes,
    )
    return comm * _f(chips) * _f(peak_tflops) * 1e12 / (6.0 * _f(params) * _f(batch_tokens))


def _exposed_ratio(comm_over_compute: FloatArray, overlap: FloatArray) -> FloatArray:
    """Exposed communication over compute: what cannot hide behind the backward pass."""
    hidden = np.minimum(overlap * comm_over_compute, _BACKWARD_SHARE)
    return comm_over_compute - hidden


def pipeline_bubble_fraction(
    micro_batches: ArrayLike, pipeline_stages: ArrayLike, virtual_stages: ArrayLike = 1.0
) -> FloatArray:
    """Idle time of a pipeline-parallel step over its compute time (the "bubble").

    Parameters
    ----------
    micro_batches : array_like
        Micro-batches per replica and step, m ≥ 1. [count]
    pipeline_stages : array_like
        Pipeline-parallel degree p (chips along the pipeline), ≥ 1. [count]
    virtual_stages : array_like, optional
        Model chunks per chip v of the interleaved schedule (1: plain 1F1B). [count]

    Returns
    -------
    ndarray
        Bubble time over ideal compute time, ≥ 0; 0 without a pipeline. [fraction]

    Notes
    -----
    .. math:: b = \\frac{p - 1}{v \\, m}

    Narayanan et al. (2021), sections 2.2.1-2.2.2: with m micro-batches and p stages the
    1F1B schedule idles (p − 1) micro-batch slots per step, and the interleaved schedule with
    v chunks per device cuts that by v. At a fixed global batch, m = B / (replicas · micro-
    batch) shrinks as chips grow, so the bubble grows: the strong-scaling loss the
    data-parallel all-reduce does not explain. Oracle: the paper's 1F1B bubble fraction
    (p−1)/m (unit test), 0 for p = 1.

    References
    ----------
    Narayanan et al. (2021), Efficient large-scale language model training on GPU clusters
    using Megatron-LM, arXiv:2104.04473.

    Examples
    --------
    >>> round(float(pipeline_bubble_fraction(8, 8)), 4), float(pipeline_bubble_fraction(8, 1))
    (0.875, 0.0)
    """
    m = np.maximum(_f(micro_batches), 1.0)
    stages = np.maximum(_f(pipeline_stages), 1.0)
    return _f((stages - 1.0) / (np.maximum(_f(virtual_stages), 1.0) * m))


def _bubble(
    chips: ArrayLike,
    global_batch_tokens: ArrayLike,
    model_parallel_chips: ArrayLike,
    pipeline: tuple[ArrayLike, ArrayLike | None, ArrayLike],
) -> FloatArray:
    """b of :func:`pipeline_bubble_fraction` for ``pipeline`` = (p, micro-batch tokens, v)."""
    stages, micro_tokens, virtual = pipeline
    if micro_tokens is None:
        return np.zeros(())
    replicas = np.maximum(_f(chips) / _f(model_parallel_chips), 1.0)
    micro = _f(global_batch_tokens) / (replicas * _f(micro_tokens))
    return pipeline_bubble_fraction(micro, stages, virtual)


def scaling_efficiency(
    chips: ArrayLike,
    *,
    params: ArrayLike,
    global_batch_tokens: ArrayLike,
    peak_tflops: ArrayLike,
    mfu_local: ArrayLike,
    scale_up_domain_chips: ArrayLike,
    scale_up_gbps: ArrayLike,
    scale_out_gbps: ArrayLike,
    model_parallel_chips: ArrayLike = 1.0,
    bytes_per_grad: ArrayLike = 2.0,
    overlap: ArrayLike,
    pipeline_chips: ArrayLike = 1.0,
    micro_batch_tokens: ArrayLike | None = None,
    virtual_stages: ArrayLike = 1.0,
) -> FloatArray:
    """Share of a training step spent computing, with gradient communication and bubbles.

    Data-parallel scaling at a fixed global batch: compute per chip shrinks as 1/n, the
    gradient all-reduce (:func:`gradient_allreduce_seconds`) does not, and past the scale-up
    domain it moves onto the scale-out network. Tensor-, pipeline- and context-parallel
    traffic is proportional to the compute per chip at a fixed model-parallel layout, so it
    is part of ``mfu_local`` rather than modelled here.

    Parameters
    ----------
    chips : array_like
        Chips training together; a multiple of ``model_parallel_chips``. [count]
    params : array_like
        Model parameters. [count]
    global_batch_tokens : array_like
        Tokens per optimizer step over all chips. [tokens]
    peak_tflops : array_like
        Dense peak per chip at the training precision. [TFLOP/s]
    mfu_local : array_like
        MFU of the step's compute alone, with no exposed data-parallel traffic
        (:func:`local_mfu` infers it from a measurement at scale). [fraction]
    scale_up_domain_chips, scale_up_gbps, scale_out_gbps, model_parallel_chips, bytes_per_grad
        As in :func:`gradient_allreduce_seconds`.
    overlap : array_like
        Fraction of the all-reduce that can hide behind the backward pass; the calibrated
        default is :func:`accelsim.catalog.scaling_defaults` ``().overlap``. [fraction]
    pipeline_chips : array_like, optional
        Pipeline-parallel degree p inside ``model_parallel_chips`` (1: no pipeline). [count]
    micro_batch_tokens : array_like, optional
        Tokens per micro-batch; ``None`` leaves the pipeline bubble out. [tokens]
    virtual_stages : array_like, optional
        Interleaved-schedule chunks per chip v (:func:`pipeline_bubble_fraction`). [count]

    Returns
    -------
    ndarray
        Efficiency in (0, 1], exactly 1 for one replica without a pipeline and
        non-increasing in ``chips`` over whole replicas when scale-up is at least as fast
        as scale-out; ``nan`` where ``chips`` < ``model_parallel_chips``. [fraction]

    Notes
    -----
    Per step, compute C = 6·N·B / (n·P·10¹²·MFU_local) and communication T as in
    :func:`gradient_allreduce_seconds`. At most ``overlap``·T hides, and never more than
    the backward pass (2/3 of C):

    .. math:: \\eta = \\frac{C}{C(1 + b) + T - \\min(\\phi T, \\tfrac{2}{3} C)}

    with b the pipeline bubble of :func:`pipeline_bubble_fraction` at m = B / (replicas ·
    micro-batch) micro-batches (0 without a pipeline or micro-batch size).

    T/C grows with n, so η falls; the first chip past a domain (n = d + 1) adds a
    scale-out hop and T jumps. A TPU pod (d in the thousands) keeps the whole all-reduce on
    ICI where an 8-GPU NVLink node cannot. The pipeline bubble grows as the micro-batches
    per replica shrink. Stragglers and synchronisation are not modelled separately; the
    calibrated ``overlap`` = 0 (``catalog/data/scaling.yaml``) lets the exposed term stand
    in for them. Oracle: MLPerf Training LLM throughput scaling (v3.0-v5.1), within ±10 %
    on 22 of 28 assessable pairs (21 without the bubble; tests/validation/test_perf_mlperf.py).

    Examples
    --------
    A 70B model split over 8 chips per replica, 4M-token batch, at 4,096 chips: H100
    (8-GPU NVLink nodes, 50 GB/s per GPU scale-out) against TPU v5p (8,960-chip ICI pod):

    >>> common = dict(params=70e9, global_batch_tokens=4e6, mfu_local=0.45,
    ...               model_parallel_chips=8, overlap=0.0)
    >>> h100 = dict(peak_tflops=989, scale_up_domain_chips=8, scale_up_gbps=900,
    ...             scale_out_gbps=50)
    >>> v5p = dict(peak_tflops=459, scale_up_domain_chips=8960, scale_up_gbps=1200,
    ...            scale_out_gbps=6.25)
    >>> round(float(scaling_efficiency(4096, **common, **h100)), 3)
    0.569
    >>> round(float(scaling_efficiency(4096, **common, **v5p)), 3)
    0.972
    """
    network = (
        scale_up_domain_chips,
        scale_up_gbps,
        scale_out_gbps,
        model_parallel_chips,
        bytes_per_grad,
    )
    k = _comm_over_compute_at_peak(chips, params, global_batch_tokens, peak_tflops, network)
    pipeline = (pipeline_chips, micro_batch_tokens, virtual_stages)
    bubble = _bubble(chips, global_batch_tokens, model_parallel_chips, pipeline)
    return 1.0 / (1.0 + bubble + _exposed_ratio(k * _f(mfu_local), _f(overlap)))


def local_mfu(
    mfu_ref: ArrayLike,
    chips_ref: ArrayLike,
    *,
    params: ArrayLike,
    global_batch_tokens: ArrayLike,
    peak_tflops: ArrayLike,
    scale_up_domain_chips: ArrayLike,
    scale_up_gbps: ArrayLike,
    scale_out_gbps: ArrayLike,
    model_parallel_chips: ArrayLike = 1.0,
    bytes_per_grad: ArrayLike = 2.0,
    overlap: ArrayLike,
    pipeline_chips: ArrayLike = 1.0,
    micro_batch_tokens: ArrayLike | None = None,
    virtual_stages: ArrayLike = 1.0,
) -> FloatArray:
    """MFU of the compute alone, inferred from an MFU measured at ``chips_ref``.

    Solves MFU_ref = MFU_local · η(chips_ref; MFU_local) for MFU_local, where η is
    :func:`scaling_efficiency` (which depends on MFU_local through the compute time).

    Parameters
    ----------
    mfu_ref : array_like
        MFU measured at ``chips_ref``, communication included. [fraction]
    chips_ref : array_like
        Chips of the measurement. [count]
    params, global_batch_tokens, peak_tflops, scale_up_domain_chips, scale_up_gbps, \
scale_out_gbps, model_parallel_chips, bytes_per_grad, overlap, pipeline_chips, \
micro_batch_tokens, virtual_stages
        As in :func:`scaling_efficiency`, for the measured run.

    Returns
    -------
    ndarray
        Local MFU ≥ ``mfu_ref``; ``nan`` where no finite solution exists (the measured MFU
        is higher than the model allows even for infinitely fast compute). Values above 1
        mean the measurement and the model's communication costs disagree. [fraction]

    Notes
    -----
    With k = T/C₁ (communication over compute at 100 % MFU) the exposed share is
    x(1−φ) while φx ≤ 2/3 and x − 2/3 beyond, for x = k·MFU_local; so

    .. math:: \\mathrm{MFU_{local}} = \\frac{(1 + b) m}{1 - (1-\\phi) k m}
              \\quad\\text{or}\\quad \\frac{(1 + b - \\tfrac{2}{3}) m}{1 - k m}

    with b the pipeline bubble at the measured run's batch and layout.

    Oracle: feeding the result back into :func:`scaling_efficiency` returns ``mfu_ref``
    (unit test).

    Examples
    --------
    >>> kw = dict(params=70e9, global_batch_tokens=4e6, peak_tflops=989,
    ...           scale_up_domain_chips=8, scale_up_gbps=900, scale_out_gbps=50, overlap=0.0)
    >>> round(float(local_mfu(0.40, 1024, **kw)), 4)
    0.5704
    """
    network = (
        scale_up_domain_chips,
        scale_up_gbps,
        scale_out_gbps,
        model_parallel_chips,
        bytes_per_grad,
    )
    k = _comm_over_compute_at_peak(chips_ref, params, global_batch_tokens, peak_tflops, network)
    pipeline = (pipeline_chips, micro_batch_tokens, virtual_stages)
    b = _bubble(chips_ref, global_batch_tokens, model_parallel_chips, pipeline)
    m = _f(mfu_ref)
    phi = _f(overlap)
    with np.errstate(divide="ignore", invalid="ignore"):
        partial = (1.0 + b) * m / (1.0 - (1.0 - phi) * k * m)  # overlap not capped
        capped = (1.0 + b - _BACKWARD_SHARE) * m / (1.0 - k * m)  # hidden part = backward
    partial_ok = (partial > 0.0) & (phi * k * partial <= _BACKWARD_SHARE)
    capped_ok = (capped > 0.0) & np.isfinite(capped)
    return np.where(partial_ok, partial, np.where(capped_ok, capped, np.nan))


def carry_mfu(
    mfu_ref: ArrayLike,
    chips_ref: ArrayLike,
    chips: ArrayLike,
    *,
    params: ArrayLike,
    global_batch_tokens: ArrayLike,
    peak_tflops: ArrayLike,
    scale_up_domain_chips: ArrayLike,
    scale_up_gbps: ArrayLike,
    scale_out_gbps: ArrayLike,
    model_parallel_chips: ArrayLike = 1.0,
    bytes_per_grad: ArrayLike = 2.0,
    overlap: ArrayLike,
    global_batch_tokens_ref: ArrayLike | None = None,
    model_parallel_chips_ref: ArrayLike | None = None,
    pipeline_chips: ArrayLike = 1.0,
    micro_batch_tokens: ArrayLike | None = None,
    virtual_stages: ArrayLike = 1.0,
    pipeline_chips_ref: ArrayLike | None = None,
) -> FloatArray:
    """Carry an MFU measured at ``chips_ref`` chips to ``chips`` chips.

    Same model and chip type; the chip count changes, and the batch and model-parallel
    layout may too (the ``*_ref`` arguments describe the measured run).

    Parameters
    ----------
    mfu_ref, chips_ref
        As in :func:`local_mfu`.
    chips : array_like
        Chips of the run to predict. [count]
    params, global_batch_tokens, peak_tflops, scale_up_domain_chips, scale_up_gbps, \
scale_out_gbps, model_parallel_chips, bytes_per_grad, overlap
        As in :func:`scaling_efficiency`, for the run to predict.
    global_batch_tokens_ref, model_parallel_chips_ref : array_like, optional
        Batch [tokens] and layout [count] of the measured run; ``None``: the same as the run
        to predict.
    pipeline_chips, micro_batch_tokens, virtual_stages : array_like, optional
        The pipeline of :func:`scaling_efficiency` (default: none), for both runs.
    pipeline_chips_ref : array_like, optional
        Pipeline degree of the measured run; ``None``: ``pipeline_chips``. [count]

    Returns
    -------
    ndarray
        MFU at ``chips``. [fraction]

    Notes
    -----
    .. math:: \\mathrm{MFU}(n) = \\mathrm{MFU_{ref}}\\,\\eta(n)/\\eta(n_{ref})
              = \\mathrm{MFU_{local}}\\,\\eta(n)

    with both efficiencies evaluated at the local MFU of :func:`local_mfu`. Scaling down
    gives a ratio above 1 and an MFU above ``mfu_ref``, which is physical (fewer replicas
    exchange less); it is bounded by the local MFU, reached for a single replica. No
    clipping: where the local MFU is not in (0, 1] the reference and the model's
    communication costs are inconsistent (e.g. a pure data-parallel reference at a scale
    its batch cannot feed) and the result is ``nan``.
    Oracle: the identity at ``chips == chips_ref`` and MLPerf scaling series
    (tests/validation/test_perf_mlperf.py).

    Examples
    --------
    >>> kw = dict(params=70e9, global_batch_tokens=4e6, peak_tflops=989,
    ...           scale_up_domain_chips=8, scale_up_gbps=900, scale_out_gbps=50, overlap=0.0)
    >>> [round(float(carry_mfu(0.40, 1024, n, **kw)), 3) for n in (1024, 2048, 512)]
    [0.4, 0.308, 0.471]
    """
    chip: dict[str, Any] = {
        "params": params,
        "peak_tflops": peak_tflops,
        "scale_up_domain_chips": scale_up_domain_chips,
        "scale_up_gbps": scale_up_gbps,
        "scale_out_gbps": scale_out_gbps,
        "bytes_per_grad": bytes_per_grad,
        "overlap": overlap,
        "micro_batch_tokens": micro_batch_tokens,
        "virtual_stages": virtual_stages,
    }
    mu = local_mfu(
        mfu_ref,
        chips_ref,
        global_batch_tokens=global_batch_tokens
        if global_batch_tokens_ref is None
        else global_batch_tokens_ref,
        model_parallel_chips=model_parallel_chips
        if model_parallel_chips_ref is None
        else model_parallel_chips_ref,
        pipeline_chips=pipeline_chips if pipeline_chips_ref is None else pipeline_chips_ref,
        **chip,
    )
    carried = mu * scaling_efficiency(
        chips,
        global_batch_tokens=global_batch_tokens,
        model_parallel_chips=model_parallel_chips,
        mfu_local=mu,
        pipeline_chips=pipeline_chips,
        **chip,
    )
    return np.where((mu > 0.0) & (mu <= 1.0), carried, np.nan)


__all__ = [
    "Sharding",
    "carry_mfu",
    "compute_hours",
    "delivered_tflops",
    "gradient_allreduce_seconds",
    "local_mfu",
    "memory_per_chip_gib",
    "min_chips_to_fit",
    "pipeline_bubble_fraction",
    "scaling_efficiency",
    "training_flops",
]
