"""Training performance: FLOPs, memory per chip, failure-free compute time and scaling.

Pure, vectorised formulas (arrays in, arrays out, broadcast by numpy). The scaling model
carries an MFU measured at one scale to another: per training step, compute shrinks with the
chip count while the data-parallel gradient all-reduce does not, crossing a scale-up
domain (an NVLink node or rack, a TPU pod or slice) moves that traffic onto the slower
scale-out network, and at a fixed global batch the pipeline's micro-batches per replica
shrink, so its bubble grows; tensor-parallel activation collectives
(:func:`tensor_parallel_seconds`) cost a fixed share of compute per tensor degree and link.
:func:`mfu_at_scale` carries the MFU of a reference
configuration (the published runs behind the priors) up or down to a run's chips, with a
global batch that grows with scale (:func:`batch_prior_tokens`). Its calibrated parameters
(``overlap``, the interleaving) are arguments; their sourced defaults are
:func:`accelsim.catalog.scaling_defaults` (``catalog/data/scaling.yaml``).
"""

from __future__ import annotations

from accelsim.models._perf_communication import (
    gradient_allreduce_seconds,
    pipeline_bubble_fraction,
)
from accelsim.models._perf_compute import (
    Sharding,
    compute_hours,
    delivered_tflops,
    memory_per_chip_gib,
    min_chips_to_fit,
    training_flops,
)
from accelsim.models._perf_reference import (
    BatchPrior,
    batch_prior_tokens,
    critical_batch_tokens,
    mfu_at_scale,
    reference_chips,
    tokens_to_target,
)
from accelsim.models._perf_scaling import carry_mfu, local_mfu, scaling_efficiency
from accelsim.models._perf_tensor import TensorTraffic, tensor_parallel_seconds

__all__ = [
    "BatchPrior",
    "Sharding",
    "TensorTraffic",
    "batch_prior_tokens",
    "carry_mfu",
    "compute_hours",
    "critical_batch_tokens",
    "delivered_tflops",
    "gradient_allreduce_seconds",
    "local_mfu",
    "memory_per_chip_gib",
    "mfu_at_scale",
    "min_chips_to_fit",
    "pipeline_bubble_fraction",
    "reference_chips",
    "scaling_efficiency",
    "tensor_parallel_seconds",
    "tokens_to_target",
    "training_flops",
]
