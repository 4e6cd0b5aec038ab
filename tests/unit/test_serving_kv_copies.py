"""The KV cache a tensor-parallel replica replicates: heads per chip, capacity and KV reads.

A chip holds ``ceil(kv_heads / t)`` KV heads, so tensor parallelism beyond the KV heads (GQA)
and any tensor parallelism of multi-head latent attention (one shared latent head) holds
more than one copy of each token's cache. Hand figures for the closed form, then the same
copies traced through the engines' replica (KV capacity, the iteration's KV read) and the
serving calibration's layouts, and the data-parallel-attention layout that holds one copy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

import accelsim as acs
from accelsim import _calibration_layouts as rack
from accelsim import catalog
from accelsim.engines.serving._layout import median_draws, planned_setup, with_replica_size
from accelsim.engines.serving._rack import replica_kv_bytes_per_token
from accelsim.engines.serving._setup import build_replica, draw_replica_inputs, serving_setup
from accelsim.models import serving as sv

CAT = catalog.builtin_catalog()


@pytest.mark.parametrize(
    ("heads", "chips", "copies", "per_chip_bytes"),
    [
        # Llama-3.1-70B, bf16: 2·80·8·128·2 = 327,680 B per token; TP8 one head per chip
        (8, 8, 1.0, 2 * 80 * 1 * 128 * 2),
        # TP16: still one whole head per chip (no half heads), two copies of the cache
        (8, 16, 2.0, 2 * 80 * 1 * 128 * 2),
        # TP4: two heads per chip, one copy
        (8, 4, 1.0, 2 * 80 * 2 * 128 * 2),
    ],
)
def test_llama_70b_heads_per_chip_by_hand(
    heads: int, chips: int, copies: float, per_chip_bytes: int
) -> None:
    model = float(sv.kv_bytes_per_token(80, heads, 128, 2))
    assert model == 327_680.0
    got = float(sv.tensor_parallel_kv_copies(heads, chips))
    assert got == copies
    assert model * got / chips == per_chip_bytes


def test_deepseek_latent_is_held_whole_on_every_chip_by_hand() -> None:
    r1 = catalog.model_preset("deepseek-r1")
    assert r1.kv_heads == 1
    assert r1.kv_cache_heads() == 1
    one_copy = r1.kv_bytes_per_token(1.0)  # fp8 latent: 61 layers · (512 + 64) values
    assert one_copy == 61 * 576
    copies = float(sv.tensor_parallel_kv_copies(r1.kv_cache_heads() or 0, 8))
    assert copies == 8.0
    assert one_copy * copies / 8 == 35_136.0  # every chip: the whole 35,136 B per token


def test_gqa_with_four_kv_heads_at_tp8_and_uneven_splits() -> None:
    assert float(sv.tensor_parallel_kv_copies(4, 8)) == 2.0  # 4 heads, each on 2 chips
    # 8 heads over 3 chips: the busiest holds 3 heads (3/8 of the cache), and every rank
    # reserves as much: 9/8 copies
    assert float(sv.tensor_parallel_kv_copies(8, 3)) == pytest.approx(9 / 8)
    # 8 heads over 12 chips: one head each, 12/8 copies
    assert float(sv.tensor_parallel_kv_copies(8, 12)) == pytest.approx(1.5)
    assert sv.tensor_parallel_kv_copies([8, 1], [1, 1]).tolist() == [1.0, 1.0]


def test_presets_state_their_cache_heads_and_mla_needs_one() -> None:
    for preset in catalog.model_presets().values():
        heads = preset.kv_cache_heads()
        assert heads is not None, preset.id
        if preset.kv_lora_rank is not None:
            assert heads == 1, preset.id
    fields = catalog.model_preset("deepseek-v3").model_dump()
    with pytest.raises(ValidationError, match="kv_heads"):
        catalog.ModelPreset.model_validate({**fields, "kv_heads": 128})


def _serving(model: str, chips: int, chip: str = "b200", **kw: object) -> acs.Scenario:
    work = acs.Serving(
        model=model, precision="fp8", rate_rps=1.0, input_tokens=1000, output_tokens=1000,
        slo=acs.SLO(ttft_ms=5000, tpot_ms=200), chips_per_replica=chips, **kw,
    )  # fmt: skip
    pool = acs.Pool(chip=chip, count=chips, provider="on_prem", pricing="on_prem")
    return acs.Scenario(name="kv", workload=work, fleet=[pool])


@pytest.mark.parametrize(("model", "chips", "copies"), [("deepseek-r1", 8, 8.0),
                                                         ("llama-3.1-70b", 8, 1.0),
                                                         ("llama-3.1-405b", 16, 2.0)])  # fmt: skip
def test_engine_replica_holds_and_reads_the_copies(model: str, chips: int, copies: float) -> None:
    chip = "gb200" if chips > 8 else "b200"
    setup = serving_setup(_serving(model, chips, chip), CAT)
    inputs = draw_replica_inputs(setup, median_draws(), CAT.serving_priors)
    replica = build_replica(setup, inputs)
    held = setup.kv_bytes_per_token * copies
    # the iteration reads the copies (each chip its own heads, at its own bandwidth)
    np.testing.assert_allclose(replica.cost.kv_bytes_per_token, held, rtol=1e-12)
    # the capacity holds them: (share · HBM − W) / (copies · bytes), the closed form
    assert inputs.memory_share is not None
    hbm = setup.chip.hbm_bytes * chips
    expected = (float(inputs.memory_share[0]) * hbm - setup.weight_bytes) / held
    assert float(replica.kv_capacity_tokens[0]) == pytest.approx(expected, rel=1e-12)


def test_data_parallel_attention_holds_one_copy() -> None:
    scenario = _serving("deepseek-r1", 8, expert_parallel=True)
    setup = planned_setup(scenario, CAT)
    assert setup.expert_parallel
    assert setup.experts is not None
    inputs = draw_replica_inputs(setup, median_draws(), CAT.serving_priors)
    replica = build_replica(setup, inputs)
    assert np.all(replica.cost.kv_bytes_per_token == setup.kv_bytes_per_token)
    assert inputs.memory_share is not None
    expected = sv.expert_parallel_kv_capacity(
        setup.chip.hbm_bytes, setup.chips_per_replica, setup.experts.dense_weight_bytes,
        setup.experts.expert_weight_bytes, setup.kv_bytes_per_token, inputs.memory_share,
    )  # fmt: skip
    np.testing.assert_allclose(replica.kv_capacity_tokens, expected, rtol=1e-12)
    # the same replica under tensor parallelism holds the latent on all 8 chips
    tp = with_replica_size(setup, 8, 8, expert_parallel=False)
    tp_bytes = replica_kv_bytes_per_token(
        tp.kv_bytes_per_token, tp.kv_heads, 8, tp.experts, tp.expert_parallel
    )
    assert tp_bytes == 8 * setup.kv_bytes_per_token


def test_explicit_architecture_replicates_by_its_kv_heads() -> None:
    work = acs.Serving(
        params=70e9, layers=80, d_model=8192, kv_heads=8, head_dim=128, rate_rps=1.0,
        input_tokens=1000, output_tokens=1000, slo=acs.SLO(ttft_ms=5000, tpot_ms=200),
        chips_per_replica=16,
    )  # fmt: skip
    pool = acs.Pool(chip="gb200", count=16, provider="on_prem", pricing="on_prem")
    setup = serving_setup(acs.Scenario(name="x", workload=work, fleet=[pool]), CAT)
    replica = build_replica(setup, draw_replica_inputs(setup, median_draws(), CAT.serving_priors))
    assert setup.kv_heads == 8
    assert np.all(replica.cost.kv_bytes_per_token == 2 * setup.kv_bytes_per_token)


def test_an_explicit_mla_architecture_states_its_one_latent_head() -> None:
    arch: dict[str, Any] = {
        "params": 671e9, "active_params": 37e9, "layers": 61, "d_model": 7168,
        "attention_heads": 128, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128, "v_head_dim": 128, "rate_rps": 1.0, "input_tokens": 100,
        "output_tokens": 100, "slo": acs.SLO(ttft_ms=5000, tpot_ms=200), "precision": "fp8",
    }  # fmt: skip
    with pytest.raises(ValidationError, match="kv_heads=128 with multi-head latent"):
        acs.Serving(**arch, kv_heads=128, head_dim=128)
    work = acs.Serving(**arch, kv_heads=1, head_dim=288, chips_per_replica=8)
    pool = acs.Pool(chip="b200", count=8, provider="on_prem", pricing="on_prem")
    setup = serving_setup(acs.Scenario(name="x", workload=work, fleet=[pool]), CAT)
    preset = serving_setup(_serving("deepseek-r1", 8), CAT)
    assert setup.kv_bytes_per_token == preset.kv_bytes_per_token  # 61 · 576 · 1 B
    replica = build_replica(setup, draw_replica_inputs(setup, median_draws(), CAT.serving_priors))
    assert np.all(replica.cost.kv_bytes_per_token == 8 * setup.kv_bytes_per_token)


def test_calibration_layouts_hold_the_same_copies() -> None:
    r1, llama = catalog.model_preset("deepseek-r1"), catalog.model_preset("llama-3.1-405b")
    one = r1.kv_bytes_per_token(1.0)
    assert rack.held_kv_bytes(r1, one, 4, False) == 4 * one
    assert rack.held_kv_bytes(r1, one, 72, True) == one  # data-parallel attention
    assert rack.held_kv_bytes(llama, 2.0, 8, False) == 2.0
    assert rack.held_kv_bytes(llama, 2.0, 16, False) == 4.0
    cost = rack.layout_cost(
        r1, CAT.chip("b200"), "fp4", 8, False, one, np.array([0.3]), np.array([0.0])
    )
    assert np.all(cost.kv_bytes_per_token == 8 * one)
