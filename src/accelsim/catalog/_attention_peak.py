"""The peak a serving replica's attention matmuls run at: the one rule every serving reader uses.

The attention matmuls (QKᵀ and PV against the cached context) take their keys and values
from the KV cache and their queries from the layer's activations, so they run at the wider
of the cache's and the weights' precision, never below either: FP4 weights with the FP8
cache of NVFP4 checkpoints attend in FP8 (TensorRT-LLM's MLPerf Inference v6.0 configs pair
``precision: 'fp4'`` with ``kv_cache_dtype: 'fp8'`` and ``use_fp8_context_fmha: 'enable'``,
e.g. ``closed/NVIDIA/configs/B300-SXM-270GBx8/Offline/deepseek-r1.py``, as of 2026-11-29),
FP8 weights with a BF16 cache attend in BF16. A chip without a peak at that precision runs
the attention in BF16, and the attention never runs faster than the weights' own matmuls
(its operands are no narrower than theirs; this matters only where a chip's narrower format
is the slower one, as INT8 on B300).

Examples
--------
>>> from accelsim import catalog
>>> b200 = catalog.chip("b200")
>>> attention_precision("fp4", "fp8"), b200.peak_tflops("fp4") / attention_peak_tflops(
...     b200, "fp4", "fp8")
('fp8', 2.0)
"""

from __future__ import annotations

from accelsim.catalog._schema import Chip, Precision, PrecisionUnavailableError
from accelsim.catalog._serving_priors import BYTES_PER_VALUE


def attention_precision(weights: Precision, kv: Precision) -> Precision:
    """The precision the attention matmuls run in: the wider of the KV cache's ``kv`` and
    the weights' ``weights`` (the cache's on a tie: INT8 weights with an FP8 cache attend in
    FP8)."""
    return weights if BYTES_PER_VALUE[weights] > BYTES_PER_VALUE[kv] else kv


def attention_peak_tflops(chip: Chip, weights: Precision, kv: Precision) -> float:
    """Dense peak per chip at which a replica with ``weights`` and a ``kv`` cache runs its
    attention matmuls: the chip's peak at :func:`attention_precision`, else its BF16 peak
    (a chip without that format computes the attention in BF16), at most its peak at
    ``weights``. Equal to ``chip.peak_tflops(weights)`` where ``kv`` is ``weights``.
    [TFLOP/s]

    Raises
    ------
    PrecisionUnavailableError
        If the chip has no peak at ``weights``, or neither the attention's nor a BF16 one.
    """
    own = chip.peak_tflops(weights)
    try:
        attention = chip.peak_tflops(attention_precision(weights, kv))
    except PrecisionUnavailableError:
        attention = chip.peak_tflops("bf16")
    return min(own, attention)


__all__ = ["attention_peak_tflops", "attention_precision"]
