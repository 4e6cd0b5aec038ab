"""Rack-scale serving options end to end: speculative decoding and wide expert parallelism.

The scenario boundary (ranges, where each option applies), the presets' expert layouts, the
engines' replica physics (each folded coefficient traced to its model function) and the
layout choice on a 72-chip scale-up domain, and the serving calibration's layout rules.
"""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

import accelsim as acs
from accelsim import _calibration_layouts as rack
from accelsim import catalog
from accelsim.engines._inputs import InputDraws
from accelsim.engines.serving._layout import median_draws, planned_setup
from accelsim.engines.serving._setup import build_replica, draw_replica_inputs
from accelsim.models import serving as sv

CAT = catalog.builtin_catalog()


def _deepseek(count: int = 72, chip: str = "gb200", **kw: object) -> acs.Scenario:
    work = acs.Serving(
        model="deepseek-r1", precision="fp4", rate_rps=1.0, input_tokens=804,
        output_tokens=3700, slo=acs.SLO(ttft_ms=1500, tpot_ms=15), **kw,
    )  # fmt: skip
    pool = acs.Pool(chip=chip, count=count, provider="on_prem", pricing="on_prem")
    return acs.Scenario(name="r1", workload=work, fleet=[pool])


def _slo_per_chip(s: acs.Scenario) -> float:
    return float(
        np.median(acs.serving_capacity(s, runs=64, seed=3).samples("slo_tokens_per_s_per_chip"))
    )


def test_speculative_ranges_are_checked_at_the_boundary() -> None:
    assert acs.Speculative(draft_tokens=3, acceptance=acs.Uniform(low=0.6, high=0.9))
    for bad in (
        {"draft_tokens": 0},
        {"draft_tokens": 17},
        {"draft_tokens": 2, "acceptance": 1.2},
        {"draft_tokens": 2, "draft_cost": -0.1},
    ):
        with pytest.raises(ValidationError) as err:
            acs.Speculative(**bad)  # type: ignore[arg-type]
        field = next(k for k in bad if k != "draft_tokens") if len(bad) > 1 else "draft_tokens"
        assert field in str(err.value)


def test_expert_parallel_needs_a_preset_with_an_expert_layout() -> None:
    with pytest.raises(ValidationError, match="expert_parallel=True needs"):
        acs.Serving(
            model="llama-3.1-70b", rate_rps=1.0, input_tokens=100, output_tokens=100,
            slo=acs.SLO(ttft_ms=1000, tpot_ms=50), expert_parallel=True,
        )  # fmt: skip


def test_rack_options_are_colocated_only() -> None:
    for field, value in (
        ("speculative", acs.Speculative(draft_tokens=1)),
        ("expert_parallel", True),
    ):
        with pytest.raises(ValidationError, match=field):
            acs.Serving(
                model="deepseek-r1", precision="fp4", rate_rps=1.0, input_tokens=100,
                output_tokens=100, slo=acs.SLO(ttft_ms=1000, tpot_ms=50),
                disaggregated=acs.Disaggregation(prefill_pool=0, decode_pool=1),
                **{field: value},
            )  # fmt: skip


def test_preset_expert_layouts_match_their_configs() -> None:
    r1 = catalog.model_preset("deepseek-r1")
    assert r1.expert_params == pytest.approx(58 * 256 * 3 * 7168 * 2048, rel=1e-3)
    assert (r1.experts, r1.experts_per_token, r1.moe_layers) == (256, 8, 58)
    assert catalog.model_preset("mixtral-8x7b").expert_params == pytest.approx(
        32 * 8 * 3 * 4096 * 14336, rel=1e-3
    )
    assert not catalog.model_preset("llama-3.1-70b").has_expert_layout()


def test_preset_expert_layout_is_all_or_none() -> None:
    base = catalog.model_preset("deepseek-r1").model_dump()
    with pytest.raises(ValidationError, match="all of experts"):
        catalog.ModelPreset(**{**base, "experts": None})
    with pytest.raises(ValidationError, match="below params"):
        catalog.ModelPreset(**{**base, "expert_params": 700e9})


def test_replica_folds_expert_parallel_then_speculation() -> None:
    s = _deepseek(expert_parallel=True, speculative=acs.Speculative(draft_tokens=3))
    setup = planned_setup(s, CAT)
    assert setup.expert_parallel
    draws = median_draws()
    inputs = draw_replica_inputs(setup, draws, CAT.serving_priors)
    assert inputs.speculation is not None
    assert draws.source["workload.speculative.acceptance"] == "prior"
    replica = build_replica(setup, inputs)
    plain = build_replica(setup, type(inputs)(**{**inputs.__dict__, "speculation": None}))
    spec = inputs.speculation
    expected = sv.speculative_cost(plain.cost, spec.acceptance, 3, spec.draft_cost)
    for field in ("flops_per_token", "weight_bytes", "active_fraction", "overhead_seconds"):
        assert np.allclose(getattr(replica.cost, field), getattr(expected, field), rtol=1e-12)
    # expert parallel memory: the non-expert weights on each of the 72 chips, experts once
    n, exp = setup.chips_per_replica, setup.experts
    assert exp is not None
    held = n * exp.dense_weight_bytes + exp.expert_weight_bytes
    share = inputs.memory_share
    assert share is not None
    capacity = (share * setup.chip.hbm_bytes * n - held) / setup.kv_bytes_per_token
    assert np.allclose(replica.kv_capacity_tokens, capacity, rtol=1e-12)
    # one scheduler per attention rank: the batch cap scales with the chips
    assert np.allclose(replica.max_batch, inputs.max_batch * n)


def test_a_rack_domain_serves_a_tight_tpot_far_better_per_chip_only_when_asked() -> None:
    # DeepSeek-R1 on 72 GB200 under TTFT <= 1.5 s, TPOT <= 15 ms (issue 28's class)
    tp_only = _slo_per_chip(_deepseek(expert_parallel=False))
    rack_wide = _slo_per_chip(_deepseek(expert_parallel=True))
    eight = _slo_per_chip(_deepseek(count=8))
    assert planned_setup(_deepseek(expert_parallel=True), CAT).chips_per_replica == 72
    assert rack_wide > 5.0 * tp_only
    assert rack_wide > 5.0 * eight
    # unset: the automatic choice keeps tensor parallelism (no published rack-scale gain)
    auto = planned_setup(_deepseek(), CAT)
    assert not auto.expert_parallel
    assert _slo_per_chip(_deepseek()) == pytest.approx(tp_only, rel=1e-12)


def test_busiest_rank_load_is_charged_at_the_saturated_step() -> None:
    s = _deepseek(expert_parallel=True)
    setup = planned_setup(s, CAT)
    inputs = draw_replica_inputs(setup, median_draws(), CAT.serving_priors)
    exp = setup.experts
    assert exp is not None
    assert exp.residual_spread > 0.0
    replica = build_replica(setup, inputs)
    balanced = sv.expert_parallel_cost(
        sv.iteration_cost(
            active_params=setup.active_params, total_params=setup.total_params,
            layers=setup.layers, d_model=setup.d_model, weight_bytes=setup.weight_bytes,
            kv_bytes_per_token=setup.kv_bytes_per_token, chips=setup.chips_per_replica,
            peak_tflops=setup.peak_tflops, hbm_tbps=setup.chip.hbm_tbps,
            interconnect_gbps=setup.chip.interconnect_gbps, efficiency=inputs.efficiency,
            overhead_seconds=inputs.overhead_seconds, attention=setup.attention,
        ),
        chips=setup.chips_per_replica, dense_weight_bytes=exp.dense_weight_bytes,
        expert_weight_bytes=exp.expert_weight_bytes, expert_share=exp.expert_share,
        moe_layers=exp.moe_layers, experts_per_token=exp.experts_per_token,
        d_model=setup.d_model, interconnect_gbps=setup.chip.interconnect_gbps,
    )  # fmt: skip
    n = setup.chips_per_replica
    seqs = sv.batch_limit(
        replica.kv_capacity_tokens, setup.input_mean, setup.output_mean, inputs.max_batch * n
    )
    tokens, chunk = (
        seqs * (1.0 + setup.input_mean / setup.output_mean),
        inputs.prefill_chunk_tokens * n,
    )
    step = np.where(chunk > 0.0, np.minimum(tokens, chunk), tokens)
    hot = sv.expert_load_imbalance(step, n, exp.experts, exp.experts_per_token,
                                   exp.residual_spread)  # fmt: skip
    assert np.all(hot > 1.0)
    routed = 2.0 * exp.routed_active_params
    # the slowest rank's prompts: a prompt token's non-routed FLOPs and its attention to
    # half its prompt, charged at the same step
    attention = (
        balanced.prefill_attention_flops_per_context_token * replica.cost.attention_peak_ratio
    )
    own = (balanced.flops_per_token - routed) + attention * setup.input_mean / 2.0
    straggle = sv.rank_straggle_flops_per_token(
        step, n, setup.input_mean, setup.output_mean, own, chunk
    )
    assert np.all(straggle > 0.0)
    extra = routed * (hot - 1.0) + straggle
    assert np.allclose(replica.cost.flops_per_token, balanced.flops_per_token + extra, rtol=1e-12)
    assert np.allclose(
        replica.cost.comm_seconds_per_token, balanced.comm_seconds_per_token * hot, rtol=1e-12
    )


def test_speculation_raises_the_rate_under_a_tight_tpot_and_costs_without_acceptance() -> None:
    base = _slo_per_chip(_deepseek(count=8, expert_parallel=False))
    spec = _slo_per_chip(
        _deepseek(count=8, expert_parallel=False, speculative=acs.Speculative(draft_tokens=3))
    )
    assert spec > 2.0 * base

    def offline(**kw: object) -> float:
        cap = acs.serving_capacity(_deepseek(count=8, expert_parallel=False, **kw), runs=32, seed=3)
        return float(np.median(cap.samples("offline_tokens_per_s_per_chip")))

    useless = acs.Speculative(draft_tokens=3, acceptance=0.0, draft_cost=0.05)
    assert offline(speculative=useless) < offline()


def test_speculative_inputs_recorded_under_their_names() -> None:
    s = _deepseek(count=8, speculative=acs.Speculative(draft_tokens=2, acceptance=0.8))
    setup = planned_setup(s, CAT)
    draws = InputDraws(np.random.SeedSequence(1), 0, 16)
    inputs = draw_replica_inputs(setup, draws, CAT.serving_priors)
    assert inputs.speculation is not None
    assert np.all(inputs.speculation.acceptance == 0.8)
    assert draws.source["workload.speculative.acceptance"] == "user"
    assert draws.source["workload.speculative.draft_cost"] == "prior"


def test_calibration_layout_rules() -> None:
    assert rack.expert_parallel_sizes(2, 72) == [2, 4, 8, 16, 32, 64, 72]
    assert rack.expert_parallel_sizes(2, 8) == [2, 4, 8]
    assert rack.expert_parallel_sizes(4, 2) == []
    assert rack.best_layout([(8, False), (8, True)], [100.0, 100.0]) == (8, False)
    assert rack.best_layout([(8, False), (72, True)], [100.0, 300.0]) == (72, True)


def test_calibration_rows_keep_tensor_parallelism_unless_they_state_expert_parallelism() -> None:
    import csv
    from pathlib import Path

    from accelsim import serving_calibration as sc

    path = Path(__file__).resolve().parents[1] / "validation" / "data" / "inference.csv"
    with open(path, newline="", encoding="utf-8") as handle:
        rows = {r["id"]: r for r in csv.DictReader(handle)}
    stated = sc._case(rows["tpurecipes-qwen3-coder-480b-fp8-1k1k-tpu-v7x4"])
    r1 = rows["mlperf51-deepseek-r1-offline-gb200x72-nvidia"]
    open_row = sc._case({**r1, "software": "TensorRT 10.11, CUDA 12.9"})
    assert not isinstance(stated, str)
    assert not isinstance(open_row, str)
    share = np.array([0.9])
    assert rack.expert_parallel_options(stated, sc._capacity, share) == []
    # a row that does not state expert parallelism keeps tensor parallelism, as the engines
    assert rack.expert_parallel_options(open_row, sc._capacity, share) == []
    ep_case = sc._case({**r1, "software": "wide EP"})
    assert not isinstance(ep_case, str)
    chips = [c.chips for c in rack.expert_parallel_options(ep_case, sc._capacity, share)]
    assert 72 in chips
    # a row that states its size (the submitter's config: EP 8 on a 72-chip rack) keeps it
    for software in ("EP=8", "expert parallel 8 with data-parallel attention", r1["software"]):
        sized = sc._case({**r1, "software": software})
        assert not isinstance(sized, str)
        options = rack.expert_parallel_options(sized, sc._capacity, share)
        assert [c.chips for c in options] == [8], software


def test_calibration_charges_the_slowest_ranks_prompts_on_expert_parallelism_only() -> None:
    model, chip = catalog.model_preset("deepseek-r1"), CAT.chip("b200")
    eff, overhead = np.array([0.3]), np.array([0.002])

    def cost(ep: bool, **kw: float) -> sv.IterationCost:
        return rack.layout_cost(model, chip, "fp4", 8, ep, 35136.0, eff, overhead, 4977.0, **kw)

    lengths = {"input_tokens": 803.8, "output_tokens": 3736.0}
    # tensor parallelism: the workload's lengths change no bit
    tp, tp_lengths = cost(False), cost(False, **lengths)
    for field in ("flops_per_token", "weight_bytes", "comm_seconds_per_token"):
        assert np.array_equal(getattr(tp, field), getattr(tp_lengths, field))
    # expert parallel: the slowest of 8 ranks' whole prompts, as the models' formula gives
    plain, charged = cost(True), cost(True, **lengths)
    routed = 2.0 * model.expert_params * 8 / 256  # type: ignore[operator]
    # its attention at the FP8 peak (FP8 cache), charged at the FP4 peak's rate: x2 on B200
    attention = float(plain.prefill_attention_flops_per_context_token[0])
    assert np.allclose(plain.attention_peak_ratio, 2.0)
    own = (2.0 * model.active_params - routed) + attention * 2.0 * 803.8 / 2.0
    straggle = sv.rank_straggle_flops_per_token(4977.0, 8, 803.8, 3736.0, own)
    assert float(straggle) > 0.1 * float(plain.flops_per_token[0])
    assert np.allclose(charged.flops_per_token, plain.flops_per_token + straggle, rtol=1e-12)
