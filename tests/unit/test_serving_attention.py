"""Attention FLOPs from a model's widths (models/serving/_attention.py) and where they enter.

Oracles: the hand figures of DeepSeek-V3's MLA (2·128·576 + 2·128·512 = 278,528 FLOPs per
pair and layer in the weight-absorbed decode; 2·128·192 + 2·128·128 = 81,920 in the
decompressed prefill; FlashMLA's benchmark counts ``h_q·(d + dv)·2`` with d = 576,
dv = 512), ``4·heads·head_dim`` for grouped-query attention (Qwen3-32B 64 x 128 = 8,192 wide
against d_model 5,120) and the unchanged ``4·d_model`` where the widths are unknown or the
heads are as wide as the hidden size. Formulas that split decode and prompt pairs are held
to :func:`iteration_seconds` (bit for bit for the DES's float form, 1e-12 for sums).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from accelsim import catalog
from accelsim.catalog import ModelPreset
from accelsim.models import serving as sv
from accelsim.models.serving._decode import _iteration_root
from accelsim.scenario import SLO, Serving

_MLA = {
    "attention_heads": 128,
    "kv_lora_rank": 512,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128,
    "v_head_dim": 128,
}


def _preset_flops(model_id: str) -> sv.AttentionFlops:
    m = catalog.model_preset(model_id)
    return sv.attention_flops_per_context_token(
        d_model=m.d_model, layers=m.layers, **m.attention_widths()
    )


def test_deepseek_mla_decode_and_prefill_are_the_hand_figures() -> None:
    for model_id in ("deepseek-v3", "deepseek-r1"):
        a = _preset_flops(model_id)
        assert float(a.decode) == 2 * 128 * (512 + 64) + 2 * 128 * 512 == 278_528
        assert float(a.prefill) == 2 * 128 * (128 + 64) + 2 * 128 * 128 == 81_920
        # 9.7x the 4·d_model the iteration charged before the widths were known
        assert float(a.decode) / (4 * 7168) == pytest.approx(9.714, abs=1e-3)


@pytest.mark.parametrize(
    ("model_id", "ratio"),
    [
        ("llama-3.1-8b", 1.0),
        ("llama-3.1-70b", 1.0),
        ("llama-3.1-405b", 1.0),
        ("llama-2-70b", 1.0),
        ("mixtral-8x7b", 1.0),
        ("gpt-j-6b", 1.0),
        ("qwen3-32b", 64 * 128 / 5120),  # 1.6
        ("qwen3-coder-480b-a35b", 96 * 128 / 6144),  # 2.0
        ("gpt-oss-120b", 64 * 64 / 2880 * 18 / 36),  # wider heads, half the layers slide
    ],
)
def test_grouped_query_presets_against_4_d_model(model_id: str, ratio: float) -> None:
    m = catalog.model_preset(model_id)
    a = _preset_flops(model_id)
    assert float(a.decode) == float(a.prefill)
    assert float(a.decode) / (4.0 * m.d_model) == pytest.approx(ratio, rel=1e-15)


def test_every_preset_gives_its_query_heads() -> None:
    """No shipped preset falls back to the 4·d_model assumption."""
    for m in catalog.model_presets().values():
        assert m.attention_heads is not None, m.id


def test_unknown_widths_are_4_d_model() -> None:
    a = sv.attention_flops_per_context_token(d_model=np.array([4096.0, 7168.0]))
    np.testing.assert_array_equal(a.decode, [4 * 4096.0, 4 * 7168.0])
    np.testing.assert_array_equal(a.prefill, a.decode)


@pytest.mark.parametrize(
    "widths",
    [
        {"attention_heads": 64},  # no head_dim, no MLA
        {"attention_heads": 128, "kv_lora_rank": 512, "qk_rope_head_dim": 64},  # part of MLA
    ],
)
def test_incomplete_widths_are_refused(widths: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="attention_heads needs head_dim"):
        sv.attention_flops_per_context_token(d_model=4096, **widths)


def _preset(**extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "tiny",
        "name": "Tiny",
        "params": 1e9,
        "active_params": 1e9,
        "layers": 4,
        "d_model": 64,
        "kv_values_per_token_per_layer": 576,
        "max_context": 128,
        "sources": [{"url": "https://example.org", "as_of": "2024-01-01"}],
    }
    return base | extra


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"attention_heads": 8, "kv_lora_rank": 512}, "missing qk_rope_head_dim"),
        ({k: v for k, v in _MLA.items() if k != "attention_heads"}, "need attention_heads"),
        ({"attention_heads": 8}, "attention_heads needs head_dim"),
        ({**_MLA, "full_attention_layers": 5}, "full_attention_layers .5. exceeds layers .4."),
    ],
)
def test_a_preset_with_inconsistent_widths_is_refused(extra: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ModelPreset.model_validate(_preset(**extra))
    assert ModelPreset.model_validate(_preset(**_MLA)).attention_widths()["kv_lora_rank"] == 512


def _cost(attention: sv.AttentionFlops | None, hbm_tbps: float = 3.35) -> sv.IterationCost:
    return sv.iteration_cost(
        active_params=37e9, total_params=671e9, layers=61, d_model=7168, weight_bytes=671e9,
        kv_bytes_per_token=61 * 576.0, chips=8, peak_tflops=1979, hbm_tbps=hbm_tbps,
        interconnect_gbps=900, efficiency=0.5, overhead_seconds=0.002, attention=attention,
    )  # fmt: skip


_DSV3 = sv.attention_flops_per_context_token(d_model=7168, **_MLA)


def test_iteration_cost_carries_both_coefficients_over_the_layers() -> None:
    cost = _cost(_DSV3)
    assert float(cost.attention_flops_per_context_token) == 61 * 278_528
    assert float(cost.prefill_attention_flops_per_context_token) == pytest.approx(
        61 * 81_920, rel=1e-15
    )
    plain = _cost(None)
    assert float(plain.attention_flops_per_context_token) == 4 * 61 * 7168
    assert float(plain.prefill_attention_ratio) == 1.0


def test_a_compute_bound_iteration_charges_decode_and_prompt_pairs_their_own_form() -> None:
    """With memory free (huge bandwidth), the iteration is its FLOPs at the achieved peak."""
    cost = _cost(_DSV3, hbm_tbps=1e9)
    decode, prefill, kv, context = 64, 2048, 64 * 3000, 1024.0
    flops = 2 * 37e9 * (decode + prefill) + 61 * 278_528 * kv + 61 * 81_920 * prefill * context
    seconds = flops / (8 * 1979e12 * 0.5)
    comm = float(cost.comm_seconds_per_token) * (decode + prefill)
    got = float(sv.iteration_seconds(cost, decode, prefill, kv, context))
    assert got == pytest.approx(seconds + comm + 0.002, rel=1e-9)


@pytest.mark.parametrize("decode", [0, 1, 37])
@pytest.mark.parametrize("prefill", [0, 1, 4096])
def test_the_des_float_form_is_the_array_form_bit_for_bit(decode: int, prefill: int) -> None:
    cost = _cost(_DSV3)
    terms = sv.iteration_terms(cost)
    for kv, context in ((0, 0.0), (5000, 12.5), (10**6, 3000.0)):
        expected = float(sv.iteration_seconds(cost, decode, prefill, kv, context))
        assert sv.terms_iteration_seconds(terms, decode, prefill, kv, context) == expected


@pytest.mark.parametrize(("decode", "prefill"), [(0, 512), (48, 512), (48, 0), (300, 2048)])
def test_a_run_with_mla_prompt_pairs_is_the_sum_of_its_iterations(
    decode: int, prefill: int
) -> None:
    cost = _cost(_DSV3)
    terms = sv.iteration_terms(cost)
    kv, done, n = decode * 2500, 1024, 40
    run = sv.terms_iteration_run(terms, decode, kv, prefill, done + prefill / 2.0)
    each = []
    for i in range(n):
        context = (done + prefill * i) + prefill / 2.0 if prefill else 0.0
        cached = kv + decode * i if decode else 0
        each.append(float(sv.iteration_seconds(cost, decode, prefill, cached, context)))
    assert sv.run_seconds(run, n) == pytest.approx(math.fsum(each), rel=1e-12)


@pytest.mark.parametrize("overlap", [1.0, 0.3])
def test_the_decode_fixed_point_charges_prompt_pairs_the_prefill_form(overlap: float) -> None:
    cost = sv.iteration_cost(
        active_params=37e9, total_params=37e9, layers=61, d_model=7168, weight_bytes=37e9,
        kv_bytes_per_token=61 * 576.0, chips=8, peak_tflops=1979, hbm_tbps=3.35,
        interconnect_gbps=900, efficiency=0.5, overhead_seconds=0.002, overlap=overlap,
        attention=_DSV3,
    )  # fmt: skip
    rate, inp, out = np.array([0.5, 2.0, 5.0]), np.array(6000.0), np.array(800.0)
    t, stable = _iteration_root(cost, rate, inp, out)
    assert stable.all()
    batch = 1.0 + rate * out * t
    f = sv.iteration_seconds(cost, batch, rate * inp * t, batch * (inp + out / 2.0), inp / 2.0)
    np.testing.assert_allclose(f, t, rtol=1e-12)


def _serving(**model: Any) -> Serving:
    return Serving(
        rate_rps=1.0, input_tokens=1000, output_tokens=200,
        slo=SLO(ttft_ms=2000, tpot_ms=100), **model,
    )  # fmt: skip


def test_an_explicit_architecture_takes_the_widths_optionally() -> None:
    arch = {"params": 32.8e9, "layers": 64, "d_model": 5120, "kv_heads": 8, "head_dim": 128}
    assert _serving(**arch).attention_widths()["attention_heads"] is None
    wide = _serving(**arch, attention_heads=64)
    assert wide.attention_widths() == catalog.model_preset("qwen3-32b").attention_widths()
    with pytest.raises(ValidationError, match="missing qk_nope_head_dim, v_head_dim"):
        _serving(**arch, attention_heads=64, kv_lora_rank=512, qk_rope_head_dim=64)
    with pytest.raises(ValidationError, match="not both"):
        _serving(model="qwen3-32b", attention_heads=64)


def _scenario(**model: Any) -> Any:
    import accelsim as acs

    work = acs.Serving(
        precision="fp8", rate_rps=1.0, input_tokens=804, output_tokens=3700,
        slo=acs.SLO(ttft_ms=2000, tpot_ms=80), chips_per_replica=8, **model,
    )  # fmt: skip
    pool = acs.Pool(chip="h200", count=8, provider="on_prem", pricing="on_prem")
    return acs.Scenario(name="attn", workload=work, fleet=[pool])


def test_the_engines_build_the_replica_from_the_same_function() -> None:
    """A preset's widths and an explicit architecture's reach the replica's coefficients."""
    from accelsim.engines.serving._layout import median_draws
    from accelsim.engines.serving._setup import draw_replica, serving_setup

    cat = catalog.builtin_catalog()
    setup = serving_setup(_scenario(model="deepseek-r1"), cat)
    assert setup.attention is not None
    assert (float(setup.attention.decode), float(setup.attention.prefill)) == (278_528, 81_920)
    cost = draw_replica(setup, median_draws(), cat.serving_priors).cost
    np.testing.assert_array_equal(cost.attention_flops_per_context_token, 61 * 278_528)
    np.testing.assert_allclose(cost.prefill_attention_flops_per_context_token, 61 * 81_920)
    arch = {"params": 671e9, "active_params": 37e9, "layers": 61, "d_model": 7168}
    explicit = serving_setup(_scenario(**arch, kv_heads=1, head_dim=288, **_MLA), cat)
    assert explicit.attention is not None
    assert float(explicit.attention.decode) == 278_528
    unknown = serving_setup(_scenario(**arch, kv_heads=1, head_dim=288), cat)
    assert unknown.attention is not None
    assert float(unknown.attention.decode) == 4 * 7168
