"""Wide expert parallelism with data-parallel attention against its closed forms.

Oracles: the per-chip memory written out (a copy of the non-expert weights per chip, the
experts once); the all-to-all traffic per token written out; the two limits at which the
folded weight term is exact (one token; every expert touched on every rank) and its stated
error in between; and the rack-scale effect the layout exists for: per chip, a 72-chip
domain holds more sequences and reads fewer weight bytes per iteration than 8 chips.
Tolerances: float rounding.
"""

from __future__ import annotations

import pytest

from accelsim.models import serving as sv

GB200_FP4 = {"peak_tflops": 10000.0, "hbm_tbps": 8.0, "interconnect_gbps": 1800.0}
# DeepSeek-R1 at FP4: 654.1e9 routed-expert parameters (58 MoE layers x 256 experts x
# 3 x 7168 x 2048), the rest (16.9e9) attention, dense layers, shared experts, embeddings.
EXPERTS_B, DENSE_B, SHARE = 654.1e9 * 0.5, 16.9e9 * 0.5, 8 / 256


def _ep(chips: int, eff: float = 0.5) -> sv.IterationCost:
    tp = sv.iteration_cost(
        active_params=37e9, total_params=671e9, layers=61, d_model=7168,
        weight_bytes=335.5e9, kv_bytes_per_token=35136.0, chips=chips,
        efficiency=eff, overhead_seconds=0.0, **GB200_FP4,
    )  # fmt: skip
    return sv.expert_parallel_cost(
        tp, chips=chips, dense_weight_bytes=DENSE_B, expert_weight_bytes=EXPERTS_B,
        expert_share=SHARE, moe_layers=58, experts_per_token=8, d_model=7168,
        interconnect_gbps=GB200_FP4["interconnect_gbps"],
    )  # fmt: skip


def test_memory_per_chip_written_out() -> None:
    for n in (8, 72):
        cap = float(sv.expert_parallel_kv_capacity(186e9, n, DENSE_B, EXPERTS_B, 35136.0, 0.9))
        per_chip = 0.9 * 186e9 - DENSE_B - EXPERTS_B / n
        assert cap == pytest.approx(n * per_chip / 35136.0, rel=1e-12)


def test_all_to_all_written_out() -> None:
    t = float(sv.all_to_all_seconds_per_token(72, 58, 8, 7168, 1800))
    assert t == pytest.approx(58 * 8 * 7168 * 3 * (71 / 72) / (72 * 900e9), rel=1e-12)
    assert float(sv.all_to_all_seconds_per_token(1, 58, 8, 7168, 1800)) == 0.0


def test_all_to_all_per_chip_falls_with_the_domain_unlike_the_all_reduce() -> None:
    # per chip and iteration of b tokens per chip: the all-to-all stays about level, the
    # tensor-parallel all-reduce of N*b tokens grows with N
    b = 256
    a2a = [float(sv.all_to_all_seconds_per_token(n, 58, 8, 7168, 1800)) * n * b for n in (8, 72)]
    assert a2a[1] == pytest.approx(a2a[0] * (71 / 72) / (7 / 8), rel=1e-12)
    tp = [float(_tp_comm(n)) * n * b for n in (8, 72)]
    assert tp[1] > 8 * tp[0]


def _tp_comm(chips: int) -> float:
    cost = sv.iteration_cost(
        active_params=37e9, total_params=671e9, layers=61, d_model=7168,
        weight_bytes=335.5e9, kv_bytes_per_token=35136.0, chips=chips,
        efficiency=0.5, overhead_seconds=0.0, **GB200_FP4,
    )  # fmt: skip
    return float(cost.comm_seconds_per_token)


def _weight_seconds(cost: sv.IterationCost, tokens: float) -> float:
    """Memory time of an iteration of ``tokens`` decode tokens with an empty cache."""
    share = float(cost.active_fraction)
    return float(cost.weight_bytes) * (1 - (1 - share) ** tokens) * float(cost.seconds_per_byte)


@pytest.mark.parametrize("chips", [8, 72])
def test_weight_term_exact_at_one_token_and_at_a_full_touch(chips: int) -> None:
    cost = _ep(chips)
    s_byte = float(cost.seconds_per_byte)
    assert _weight_seconds(cost, 1) == pytest.approx((DENSE_B + SHARE * EXPERTS_B) * s_byte)
    full = (chips * DENSE_B + EXPERTS_B) * s_byte
    assert _weight_seconds(cost, 1e6) == pytest.approx(full, rel=1e-12)


def test_weight_term_error_in_between_as_documented() -> None:
    cost, n = _ep(72), 72
    s_byte = float(cost.seconds_per_byte)

    def exact(tokens: float) -> float:
        return (n * DENSE_B + EXPERTS_B * (1 - (1 - SHARE) ** tokens)) * s_byte

    one_per_rank = _weight_seconds(cost, n) / exact(n)
    assert 0.75 < one_per_rank < 0.85  # "a fifth fewer"
    assert 0.99 < _weight_seconds(cost, 4 * n) / exact(4 * n) <= 1.0  # "under 1 %"


def test_rack_scale_domain_holds_more_per_chip_and_reads_less_per_chip() -> None:
    cap = {n: float(sv.expert_parallel_kv_capacity(186e9, n, DENSE_B, EXPERTS_B, 35136.0, 0.9))
           for n in (8, 72)}  # fmt: skip
    assert cap[72] / 72 > 1.25 * cap[8] / 8
    # a loaded iteration of 64 sequences per chip: the time to read the weight bytes on each
    # chip (all chips read at once)
    per_chip = {n: _weight_seconds(_ep(n), 64 * n) for n in (8, 72)}
    assert per_chip[72] < 0.3 * per_chip[8]


def test_expert_parallel_rack_decodes_more_per_chip_within_a_tight_tpot() -> None:
    # The tokens/s per chip at the largest batch per chip whose decode iteration stays
    # within 15 ms: 72 chips beat 8 (the rack-scale effect of issue 28).
    def best_per_chip(n: int) -> float:
        cost, best = _ep(n), 0.0
        for b in range(1, 2049):
            t = float(sv.iteration_seconds(cost, b * n, 0, b * n * 2500.0))
            if t <= 0.015:
                best = b / t
        return best

    assert best_per_chip(72) > 1.5 * best_per_chip(8)
