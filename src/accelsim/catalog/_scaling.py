"""The scaling model's calibrated defaults, from ``data/scaling.yaml`` (source and date there)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources

from accelsim._yaml import load_yaml_text, to_plain


@dataclass(frozen=True)
class ScalingDefaults:
    """Calibrated defaults of :mod:`accelsim.models.perf`'s scaling model."""

    overlap: float
    """Fraction of the gradient all-reduce hidden behind the backward pass. [fraction]"""
    layers_per_virtual_stage: float = 1.0
    """Transformer layers per interleaved-pipeline chunk. [layers]"""
    micro_batch_sequences: float = 1.0
    """Sequences per pipeline micro-batch. [sequences]"""
    layers_per_d_model: float = 1.0 / 128.0
    """Depth over width, to estimate layers from the parameter count. [ratio]"""
    critical_batch_coefficient: float = 0.2920
    """a of the compute-optimal batch a * C^b. [tokens / FLOP^b]"""
    critical_batch_exponent: float = 0.3271
    """b of the compute-optimal batch a * C^b. [dimensionless]"""
    reference_efficiency: float = 0.85
    """Least scaling efficiency of the MFU priors' reference configuration. [fraction]"""
    tensor_parallel_collectives_per_layer: float = 4.0
    """All-reduce equivalents of activations per layer and micro-batch, fwd + bwd. [count]"""
    tensor_parallel_overlap: float = 0.0
    """Fraction of the tensor-parallel collectives hidden behind compute. [fraction]"""
    activation_bytes: float = 2.0
    """Bytes per activation element in the tensor-parallel collectives. [B]"""


@functools.cache
def scaling_defaults() -> ScalingDefaults:
    """Load the scaling model's calibrated defaults (each with its source in the YAML file).

    Examples
    --------
    >>> scaling_defaults().overlap
    0.0
    """
    resource = resources.files("accelsim").joinpath("catalog/data/scaling.yaml")
    doc = to_plain(
        load_yaml_text(resource.read_text(encoding="utf-8"), str(resource), aliases=True)
    )
    return ScalingDefaults(
        overlap=float(doc["overlap"]["value"]),
        layers_per_virtual_stage=float(doc["layers_per_virtual_stage"]["value"]),
        micro_batch_sequences=float(doc["micro_batch_sequences"]["value"]),
        layers_per_d_model=float(doc["layers_per_d_model"]["value"]),
        critical_batch_coefficient=float(doc["critical_batch_coefficient"]["value"]),
        critical_batch_exponent=float(doc["critical_batch_exponent"]["value"]),
        reference_efficiency=float(doc["reference_efficiency"]["value"]),
        tensor_parallel_collectives_per_layer=float(
            doc["tensor_parallel_collectives_per_layer"]["value"]
        ),
        tensor_parallel_overlap=float(doc["tensor_parallel_overlap"]["value"]),
        activation_bytes=float(doc["activation_bytes"]["value"]),
    )


__all__ = ["ScalingDefaults", "scaling_defaults"]
