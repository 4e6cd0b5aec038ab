"""Iteration coefficients the serving tests share (one definition, not a copy per file)."""

from __future__ import annotations

from accelsim.models import serving


def llama_8b_fp8_h100(
    chips: float = 1.0, *, active_params: float = 8e9, overhead_seconds: float = 0.003
) -> serving.IterationCost:
    """Llama 3.1 8B at FP8 (8 GB of weights, 64 KiB of KV per token) on H100s (1,979 dense
    FP8 TFLOP/s, 3.35 TB/s) at half the roofline, 3 ms of fixed overhead per iteration
    (``active_params`` below 8e9: a mixture of experts of the same size)."""
    return serving.iteration_cost(
        active_params=active_params, total_params=8e9, layers=32, d_model=4096,
        weight_bytes=8e9, kv_bytes_per_token=65536.0, chips=chips, peak_tflops=1979,
        hbm_tbps=3.35, interconnect_gbps=900, efficiency=0.5, overhead_seconds=overhead_seconds,
    )  # fmt: skip
