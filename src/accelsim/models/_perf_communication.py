"""What a training step spends outside compute: the data-parallel gradient all-reduce (over
the scale-up domain and the scale-out network) and the pipeline bubble.

Part of :mod:`accelsim.models.perf`, the public module.
"""

from __future__ import annotations

import numpy as np

from accelsim._typing import ArrayLike, FloatArray
from accelsim.models._perf_compute import _f

# Backward share of a training step's FLOPs: the backward pass costs twice the forward (4ND of
# the 6ND), and gradient traffic can only hide behind it.
_BACKWARD_SHARE = 2.0 / 3.0


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
