"""Attention FLOPs at the attention's precision (the KV cache's), not the weights'.

The rule (catalog/_attention_peak.py): the attention matmuls run at the wider of the KV
cache's and the weights' precision, at the chip's peak there (BF16 where it has none), never
faster than the weights' own peak. :func:`iteration_cost` carries it as
``attention_peak_ratio`` (dense peak over attention peak), and every formula charges the
attention FLOPs at ``seconds_per_flop · ratio``.

Oracles: closed forms (FP4 weights with an FP8 cache on a B200, whose FP8 peak is half its
FP4 one: the attention time is exactly twice the one at the FP4 peak, checked on an
iteration charged as the sum of compute and memory, where the difference is the attention
time alone); the catalog's peaks by hand; the DES's float forms against the array form, bit
for bit (one iteration) or to 1e-12 (runs, sums of a few positive products each).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from tests.oracles.scalar_formulas import scalar_decode_stretch_seconds

import accelsim as acs
from accelsim import _calibration_layouts as rack
from accelsim import catalog
from accelsim.engines.serving._disagg import disaggregated_pools
from accelsim.engines.serving._layout import median_draws, planned_setup
from accelsim.engines.serving._setup import draw_replica
from accelsim.models import serving as sv
from accelsim.models.serving._decode import _iteration_root

CAT = catalog.builtin_catalog()
_DSR1 = sv.attention_flops_per_context_token(
    d_model=7168, attention_heads=128, kv_lora_rank=512, qk_rope_head_dim=64,
    qk_nope_head_dim=128, v_head_dim=128,
)  # fmt: skip


def _cost(
    attention_peak: float | None, *, overlap: float = 1.0, peak: float = 9000.0
) -> sv.IterationCost:
    """DeepSeek-R1 (MLA) on 8 B200s at FP4 (9,000 dense TFLOP/s per chip)."""
    return sv.iteration_cost(
        active_params=37e9, total_params=671e9, layers=61, d_model=7168, weight_bytes=335.5e9,
        kv_bytes_per_token=61 * 576.0, chips=8, peak_tflops=peak, hbm_tbps=8.0,
        interconnect_gbps=1800, efficiency=0.4, overhead_seconds=0.002, overlap=overlap,
        attention=_DSR1, attention_peak_tflops=attention_peak,
    )  # fmt: skip


# --- the rule -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("weights", "kv", "expected"),
    [
        ("fp4", "fp8", "fp8"),  # NVFP4 checkpoints declare an FP8 cache
        ("fp4", "fp4", "fp4"),
        ("fp8", "fp8", "fp8"),
        ("fp8", "bf16", "bf16"),  # a wider cache: its precision
        ("bf16", "fp8", "bf16"),  # a narrower cache than the activations: theirs
        ("bf16", "bf16", "bf16"),
        ("int8", "fp8", "fp8"),  # a tie: the cache's
        ("fp8", "int8", "int8"),
    ],
)
def test_the_attention_runs_at_the_wider_of_cache_and_weights(
    weights: catalog.Precision, kv: catalog.Precision, expected: str
) -> None:
    assert catalog.attention_precision(weights, kv) == expected


def test_the_attention_peak_by_hand() -> None:
    b200, b300, a100 = catalog.chip("b200"), catalog.chip("b300"), catalog.chip("a100-80gb")
    h100 = catalog.chip("h100-sxm")
    assert catalog.attention_peak_tflops(b200, "fp4", "fp8") == 4500.0  # half of FP4's 9,000
    assert catalog.attention_peak_tflops(b300, "fp4", "fp8") == 4500.0  # of FP4's 13,125
    assert catalog.attention_peak_tflops(h100, "fp8", "fp8") == 1979.0
    assert catalog.attention_peak_tflops(h100, "fp8", "bf16") == 989.0
    assert catalog.attention_peak_tflops(h100, "bf16", "fp8") == 989.0
    # the A100 has no FP8 peak: an FP8 cache attends in BF16
    assert catalog.attention_peak_tflops(a100, "int8", "fp8") == 312.0
    # never faster than the weights' own matmuls (B300's INT8 is its slow format)
    assert catalog.attention_peak_tflops(b300, "int8", "fp8") == b300.peak_tflops("int8")


def test_a_cache_at_the_weights_precision_attends_at_their_peak_on_every_chip() -> None:
    for chip_id in CAT.chips:
        chip = CAT.chip(chip_id)
        for p in ("bf16", "fp8", "int8", "fp4"):
            try:
                own = chip.peak_tflops(p)  # type: ignore[arg-type]
            except catalog.PrecisionUnavailableError:
                continue
            assert catalog.attention_peak_tflops(chip, p, p) == own, (chip_id, p)  # type: ignore[arg-type]


# --- the iteration formula ----------------------------------------------------------------


def test_unset_and_equal_peaks_are_the_same_coefficients_bit_for_bit() -> None:
    unset, equal = _cost(None), _cost(9000.0)
    for f in dataclasses.fields(sv.IterationCost):
        np.testing.assert_array_equal(getattr(unset, f.name), getattr(equal, f.name), f.name)
    assert float(unset.attention_peak_ratio) == 1.0
    assert float(unset.attention_seconds_per_flop) == float(unset.seconds_per_flop)


def test_an_fp4_replica_charges_attention_twice_the_time_at_the_fp8_peak() -> None:
    """Compute and memory summed (overlap 0): the iteration's difference between attention
    at the FP8 and at the FP4 peak is the attention time at the FP4 peak, exactly once."""
    fp8_attention, fp4_attention = _cost(4500.0, overlap=0.0), _cost(None, overlap=0.0)
    assert float(fp8_attention.attention_peak_ratio) == 2.0
    assert float(fp8_attention.attention_seconds_per_flop) == 2.0 * float(
        fp4_attention.seconds_per_flop
    )
    decode, prefill, kv, context = 256, 1024, 256 * 2700, 600.0
    pairs = 61 * 278_528 * kv + 61 * 81_920 * prefill * context  # [FLOP]
    at_fp4 = pairs / (8 * 9000e12 * 0.4)  # [s]
    slow = float(sv.iteration_seconds(fp8_attention, decode, prefill, kv, context))
    fast = float(sv.iteration_seconds(fp4_attention, decode, prefill, kv, context))
    assert slow - fast == pytest.approx(at_fp4, rel=1e-9)
    # DeepSeek-R1's absorbed decode at a 2.7k context: ~38 % of an iteration's FLOPs
    share = 61 * 278_528 * 2700 / (2 * 37e9 + 61 * 278_528 * 2700)
    assert share == pytest.approx(0.383, abs=1e-3)


@pytest.mark.parametrize("peak", [4500.0, 9000.0 / 2.9166])
@pytest.mark.parametrize(("decode", "prefill"), [(0, 512), (48, 0), (300, 2048), (1, 1)])
def test_the_des_float_forms_charge_the_same_attention(
    peak: float, decode: int, prefill: int
) -> None:
    cost = _cost(peak, overlap=0.4)
    terms = sv.iteration_terms(cost)
    for kv, context in ((0, 0.0), (5000, 12.5), (10**6, 3000.0)):
        expected = float(sv.iteration_seconds(cost, decode, prefill, kv, context))
        assert sv.terms_iteration_seconds(terms, decode, prefill, kv, context) == expected
    kv, done, n = decode * 2500, 1024, 40
    run = sv.terms_iteration_run(terms, decode, kv, prefill, done + prefill / 2.0)
    each = []
    for i in range(n):
        context = (done + prefill * i) + prefill / 2.0 if prefill else 0.0
        each.append(float(sv.iteration_seconds(cost, decode, prefill, kv + decode * i, context)))
    assert sv.run_seconds(run, n) == pytest.approx(math.fsum(each), rel=1e-12)


@pytest.mark.parametrize("overlap", [1.0, 0.0, 0.4])
def test_the_closed_forms_sum_the_iterations_at_the_attention_rate(overlap: float) -> None:
    cost = _cost(4500.0, overlap=overlap)
    decode, kv, n = 64, 64 * 3000, 500
    each = math.fsum(
        float(sv.iteration_seconds(cost, decode, 0, kv + decode * i)) for i in range(n)
    )
    stretch = float(sv.decode_stretch_seconds(cost, decode, kv, n))
    assert stretch == pytest.approx(each, rel=1e-12)
    assert scalar_decode_stretch_seconds(cost)(decode, kv, n) == pytest.approx(each, rel=1e-12)
    # speculation without drafts is the plain iteration
    plain = float(sv.iteration_seconds(cost, decode, 0, kv))
    assert float(sv.speculative_step_seconds(cost, decode, kv, 0, 0.05)) == pytest.approx(
        plain, rel=1e-14
    )


def test_the_decode_fixed_point_is_an_iteration_at_the_attention_rate() -> None:
    cost = _cost(4500.0, overlap=0.3)
    rate, inp, out = np.array([0.5, 2.0, 5.0]), np.array(6000.0), np.array(800.0)
    t, stable = _iteration_root(cost, rate, inp, out)
    assert stable.all()
    batch = 1.0 + rate * out * t
    f = sv.iteration_seconds(cost, batch, rate * inp * t, batch * (inp + out / 2.0), inp / 2.0)
    np.testing.assert_allclose(f, t, rtol=1e-12)
    assert np.all(t > _iteration_root(_cost(None, overlap=0.3), rate, inp, out)[0])


# --- the engines and the calibration ------------------------------------------------------


def _serving(model: str, precision: str, chip: str, count: int = 8, **kw: object) -> acs.Scenario:
    work = acs.Serving(
        model=model, precision=precision, rate_rps=1.0, input_tokens=1000,  # type: ignore[arg-type]
        output_tokens=1000, slo=acs.SLO(ttft_ms=2000, tpot_ms=50), **kw,
    )  # fmt: skip
    pool = acs.Pool(chip=chip, count=count, provider="on_prem", pricing="on_prem")
    return acs.Scenario(name="attnprec", workload=work, fleet=[pool])


@pytest.mark.parametrize(
    ("model", "precision", "chip", "ratio"),
    [
        ("llama-3.1-70b", "fp4", "b200", 2.0),
        ("deepseek-r1", "fp4", "gb200", 2.0),
        ("llama-3.1-70b", "fp8", "b200", 1.0),
        ("llama-3.1-70b", "fp8", "h100-sxm", 1.0),
        ("llama-3.1-8b", "bf16", "a100-80gb", 1.0),
    ],
)
def test_the_engines_charge_attention_at_the_kv_cache_precision(
    model: str, precision: str, chip: str, ratio: float
) -> None:
    setup = planned_setup(_serving(model, precision, chip), CAT)
    assert setup.kv_precision == ("fp8" if precision == "fp4" else precision)
    cost = draw_replica(setup, median_draws(), CAT.serving_priors).cost
    np.testing.assert_array_equal(cost.attention_peak_ratio, ratio)


def test_an_explicit_cache_precision_sets_the_attention_peak() -> None:
    setup = planned_setup(_serving("llama-3.1-70b", "fp8", "h100-sxm", kv_precision="bf16"), CAT)
    assert (setup.peak_tflops, setup.attention_peak_tflops) == (1979.0, 989.0)
    setup = planned_setup(_serving("llama-3.1-70b", "fp4", "b200", kv_precision="fp4"), CAT)
    assert setup.attention_peak_tflops == setup.peak_tflops == 9000.0


def test_each_disaggregated_pool_attends_at_its_own_chip_peak() -> None:
    work = acs.Serving(
        model="llama-3.1-70b", precision="fp4", rate_rps=1.0, input_tokens=1000,
        output_tokens=1000, slo=acs.SLO(ttft_ms=2000, tpot_ms=50),
        disaggregated=acs.Disaggregation(prefill_pool=0, decode_pool=1),
    )  # fmt: skip
    fleet = [
        acs.Pool(chip="gb200", count=8, provider="on_prem", pricing="on_prem"),
        acs.Pool(chip="b200", count=8, provider="on_prem", pricing="on_prem"),
    ]
    _, ((_, prefill), (_, decode)) = disaggregated_pools(
        acs.Scenario(name="dis", workload=work, fleet=fleet), CAT
    )
    assert (prefill.peak_tflops, prefill.attention_peak_tflops) == (10000.0, 5000.0)
    assert (decode.peak_tflops, decode.attention_peak_tflops) == (9000.0, 4500.0)


def test_the_calibration_layouts_use_the_same_rule() -> None:
    model, b200 = catalog.model_preset("deepseek-r1"), catalog.chip("b200")
    kv = model.kv_bytes_per_token(1.0)
    one = np.array([0.4])

    def cost(precision: str, kv_precision: str | None = None) -> sv.IterationCost:
        return rack.layout_cost(
            model, b200, precision, 8, False, kv, one, one * 0.002, kv_precision=kv_precision
        )

    np.testing.assert_array_equal(cost("fp4").attention_peak_ratio, 2.0)
    np.testing.assert_array_equal(cost("fp4", "fp4").attention_peak_ratio, 1.0)
    np.testing.assert_array_equal(cost("fp8").attention_peak_ratio, 1.0)
