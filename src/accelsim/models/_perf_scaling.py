"""Carrying an MFU measured at one scale to another: scaling efficiency, the local MFU behind
a measured one, and :func:`carry_mfu`.

Part of :mod:`accelsim.models.perf`, the public module.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from accelsim._typing import ArrayLike, FloatArray
from accelsim.models._perf_communication import (
    _BACKWARD_SHARE,
    _bubble,
    _comm_over_compute_at_peak,
    _exposed_ratio,
)
from accelsim.models._perf_compute import _f


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
