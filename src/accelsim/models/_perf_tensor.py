"""Tensor-parallel (Megatron-style) activation traffic of a training step and its exposed
share of compute, which :func:`accelsim.models.perf.mfu_at_scale` carries between a
reference configuration and a run.

Part of :mod:`accelsim.models.perf`, the public module.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from accelsim._typing import ArrayLike, FloatArray
from accelsim.models._perf_compute import _f


def tensor_parallel_seconds(
    tokens: ArrayLike,
    *,
    tensor_chips: ArrayLike,
    layers: ArrayLike,
    d_model: ArrayLike,
    link_gbps: ArrayLike,
    collectives_per_layer: ArrayLike = 4.0,
    bytes_per_activation: ArrayLike = 2.0,
) -> FloatArray:
    """Time one chip of a tensor-parallel group spends in its activation collectives.

    Parameters
    ----------
    tokens : array_like
        Tokens the chip's model replica processes (per step: the batch per replica). [tokens]
    tensor_chips : array_like
        Tensor-parallel degree t, ≥ 1. [count]
    layers : array_like
        Transformer layers the chip holds (the model's layers over the pipeline stages).
        [count]
    d_model : array_like
        Hidden size. [count]
    link_gbps : array_like
        Bandwidth per chip and direction of the slowest link of the group's ring. [GB/s]
    collectives_per_layer : array_like, optional
        All-reduce equivalents per layer, forward and backward (Megatron: 2 + 2;
        ``scaling.yaml`` ``tensor_parallel_collectives_per_layer``). [count]
    bytes_per_activation : array_like, optional
        Bytes per activation element on the wire (2: bf16). [B]

    Returns
    -------
    ndarray
        Seconds, ≥ 0; exactly 0 for t = 1. [s]

    Notes
    -----
    Each collective all-reduces tokens·d·bytes of activations over the t chips; a ring
    all-reduce moves 2(t−1)/t of that per chip (Patarasuk & Yuan 2009):

    .. math:: T_{TP} = c\\,L\\,\\frac{2(t-1)}{t}\\,\\frac{S\\,d\\,b}{B}

    With sequence parallelism (Korthikanti et al. 2022, section 4.2.2) each all-reduce is a
    reduce-scatter plus an all-gather, (t−1)/t each: the same volume, so the same time.
    Oracle: the closed-form ring all-reduce (unit test).

    Examples
    --------
    Llama 3 405B (126 layers over 16 stages, d 16,384) with TP 8 on NVLink (450 GB/s per
    direction), one 8,192-token micro-batch:

    >>> round(float(tensor_parallel_seconds(8192, tensor_chips=8, layers=126 / 16,
    ...     d_model=16384, link_gbps=450.0)) * 1e3, 2)
    32.88
    """
    t = np.maximum(_f(tensor_chips), 1.0)
    volume = _f(tokens) * _f(d_model) * _f(bytes_per_activation)
    per_chip = 2.0 * (t - 1.0) / t * volume
    with np.errstate(divide="ignore", invalid="ignore"):
        seconds = _f(collectives_per_layer) * _f(layers) * per_chip / (_f(link_gbps) * 1e9)
    # t = 1 moves nothing, even over a missing link (0/0 is 0 here, not nan).
    return _f(np.where(t > 1.0, seconds, 0.0))


@dataclass(frozen=True)
class TensorTraffic:
    """Constants of the tensor-parallel term of :func:`mfu_at_scale` (``scaling.yaml``)."""

    collectives_per_layer: ArrayLike = 4.0
    """All-reduce equivalents per layer and micro-batch, forward and backward. [count]"""
    overlap: ArrayLike = 0.0
    """Fraction hidden behind compute. [fraction]"""
    bytes_per_activation: ArrayLike = 2.0
    """Bytes per activation element on the wire. [B]"""


def tensor_link_gbps(
    tensor_chips: ArrayLike,
    scale_up_domain_chips: ArrayLike,
    scale_up_gbps: ArrayLike,
    scale_out_gbps: ArrayLike,
) -> FloatArray:
    """Per-direction bandwidth of a tensor-parallel ring: half the aggregate scale-up link
    inside one domain (as :func:`gradient_allreduce_seconds`), the scale-out NIC per chip
    once the group spans domains (a ring is as slow as its slowest hop). [GB/s]"""
    inside = _f(tensor_chips) <= _f(scale_up_domain_chips)
    return _f(np.where(inside, 0.5 * _f(scale_up_gbps), _f(scale_out_gbps)))


def tensor_over_compute_at_peak(
    params: ArrayLike,
    layout: Mapping[str, ArrayLike],
    network: Mapping[str, ArrayLike],
    traffic: TensorTraffic,
) -> FloatArray:
    """a = exposed T_TP / C₁: exposed tensor-parallel time over compute at 100 % of peak.

    Per chip and step the replica's B_r tokens cost C₁ = 6·N·B_r / (t·p·P) of compute at
    peak P over its t·p chips, and L/p layers of :func:`tensor_parallel_seconds` each; B_r
    and p cancel:

    .. math:: a = (1-\\phi)\\,\\frac{2c\\,(t-1)\\,L\\,d\\,b\\,P}{6\\,N\\,B}

    so the exposed share at a compute-only MFU μ is a·μ, independent of the batch. 0 where
    ``layout`` has no ``tensor_chips`` (or t = 1). [ratio]
    """
    if "tensor_chips" not in layout:
        return np.zeros(())
    t = np.maximum(_f(layout["tensor_chips"]), 1.0)
    link = tensor_link_gbps(
        t,
        network["scale_up_domain_chips"],
        network["scale_up_gbps"],
        network["scale_out_gbps"],
    )
    seconds_per_token = tensor_parallel_seconds(
        1.0,
        tensor_chips=t,
        layers=layout["layers"],
        d_model=layout["d_model"],
        link_gbps=link,
        collectives_per_layer=traffic.collectives_per_layer,
        bytes_per_activation=traffic.bytes_per_activation,
    )
    compute_per_token = 6.0 * _f(params) / (t * _f(network["peak_tflops"]) * 1e12)
    return _f((1.0 - _f(traffic.overlap)) * seconds_per_token / compute_per_token)


def carry_tensor(local: FloatArray, a_ref: FloatArray, a_run: FloatArray) -> FloatArray:
    """The local MFU (tensor-parallel traffic inside) of the reference, carried to the run's
    tensor-parallel layout.

    A step costs (C + T_TP)(1 + b) + T_DP,exposed: the bubble idles micro-batch slots that
    include their tensor-parallel collectives, the data-parallel all-reduce does not
    depend on them. So with μ_c the MFU of compute alone, the local MFU is
    μ = μ_c / (1 + a μ_c), μ_c = μ / (1 − a μ), and the run's is μ_c / (1 + a' μ_c).
    Exactly ``local`` where a' = a; ``nan`` where the reference cannot hold its own
    traffic (a μ ≥ 1). [fraction]
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        compute_only = local / (1.0 - a_ref * local)
        carried = compute_only / (1.0 + a_run * compute_only)
    same = a_ref == a_run
    ok = (compute_only > 0.0) & np.isfinite(compute_only)
    return _f(np.where(same, local, np.where(ok, carried, np.nan)))
