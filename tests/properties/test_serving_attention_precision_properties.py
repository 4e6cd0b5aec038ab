"""Attention at the KV cache's precision (catalog/_attention_peak.py, models/serving/_iteration.py)
over every catalog chip, weight and cache precision and a wide range of iterations: the
attention is never charged faster than at the weights' own peak, so no iteration, decode
stretch or DES run is shorter than with the attention at the weights' peak; with the cache at
the weights' precision, they are the same bits."""

from __future__ import annotations

import math

from hypothesis import assume, given
from hypothesis import strategies as st

from accelsim import catalog
from accelsim.models import serving as sv

CAT = catalog.builtin_catalog()
PRECISIONS: tuple[catalog.Precision, ...] = ("bf16", "fp8", "int8", "fp4")


def _peak(chip: catalog.Chip, precision: catalog.Precision) -> float | None:
    try:
        return chip.peak_tflops(precision)
    except catalog.PrecisionUnavailableError:
        return None


def _cost(
    peak: float, attention_peak: float | None, overlap: float, efficiency: float
) -> sv.IterationCost:
    return sv.iteration_cost(
        active_params=37e9, total_params=671e9, layers=61, d_model=7168, weight_bytes=335.5e9,
        kv_bytes_per_token=61 * 576.0, chips=8, peak_tflops=peak, hbm_tbps=8.0,
        interconnect_gbps=1800, efficiency=efficiency, overhead_seconds=0.002,
        overlap=overlap, attention_peak_tflops=attention_peak,
        attention=sv.attention_flops_per_context_token(
            d_model=7168, attention_heads=128, kv_lora_rank=512, qk_rope_head_dim=64,
            qk_nope_head_dim=128, v_head_dim=128,
        ),
    )  # fmt: skip


@given(
    chip_id=st.sampled_from(sorted(CAT.chips)),
    weights=st.sampled_from(PRECISIONS),
    kv=st.sampled_from(PRECISIONS),
    decode=st.integers(0, 4096),
    prefill=st.integers(0, 8192),
    kv_tokens=st.integers(0, 10**7),
    context=st.floats(0.0, 1e5),
    overlap=st.floats(0.0, 1.0),
    efficiency=st.floats(0.05, 1.0),
    iterations=st.integers(0, 10**4),
)
def test_attention_is_never_charged_faster_than_at_the_weights_peak(
    chip_id: str,
    weights: catalog.Precision,
    kv: catalog.Precision,
    decode: int,
    prefill: int,
    kv_tokens: int,
    context: float,
    overlap: float,
    efficiency: float,
    iterations: int,
) -> None:
    chip = CAT.chip(chip_id)
    peak = _peak(chip, weights)
    assume(peak is not None and _peak(chip, "bf16") is not None)
    assert peak is not None
    attention_peak = catalog.attention_peak_tflops(chip, weights, kv)
    assert 0.0 < attention_peak <= peak
    rule, own = (_cost(peak, p, overlap, efficiency) for p in (attention_peak, None))
    assert float(rule.attention_seconds_per_flop) >= float(own.seconds_per_flop)
    args = (decode, prefill, kv_tokens, context)
    slow, fast = (float(sv.iteration_seconds(c, *args)) for c in (rule, own))
    assert math.isfinite(slow)
    assert slow >= fast
    # a decode stretch and the DES's run of the same iterations
    batch = max(decode, 1)
    stretch, stretch_own = (
        float(sv.decode_stretch_seconds(c, batch, kv_tokens, iterations)) for c in (rule, own)
    )
    assert stretch >= stretch_own * (1.0 - 1e-12)
    runs = (
        sv.run_seconds(
            sv.terms_iteration_run(sv.iteration_terms(c), batch, kv_tokens, 0, 0.0), iterations
        )
        for c in (rule, own)
    )
    run, run_own = runs
    assert run >= run_own * (1.0 - 1e-12)
    if kv == weights:
        assert (slow, stretch, run) == (fast, stretch_own, run_own)
