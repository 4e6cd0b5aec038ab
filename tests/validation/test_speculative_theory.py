"""Speculative decoding against its closed forms and a Monte Carlo of acceptances.

Oracles: the geometric sum of Leviathan et al. (2023, eq. 1) for the tokens a verification
step emits; a simulation of Bernoulli acceptances (tolerance: 5 standard errors of the
sample mean, so any seed passes and a wrong formula fails); the step's time written out
term by term; and the folded coefficients of ``speculative_cost`` against the step time
over the tokens emitted (float rounding where the roofline side agrees, the stated bound
elsewhere).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from accelsim.models import serving as sv

B200_FP4 = {"peak_tflops": 9000.0, "hbm_tbps": 8.0, "interconnect_gbps": 1800.0}


def _moe(chips: float = 8.0, eff: float = 0.5, overhead: float = 0.002) -> sv.IterationCost:
    return sv.iteration_cost(
        active_params=37e9, total_params=671e9, layers=61, d_model=7168,
        weight_bytes=335.5e9, kv_bytes_per_token=35136.0, chips=chips,
        efficiency=eff, overhead_seconds=overhead, **B200_FP4,
    )  # fmt: skip


def _dense() -> sv.IterationCost:
    return sv.iteration_cost(
        active_params=70e9, total_params=70e9, layers=80, d_model=8192,
        weight_bytes=70e9, kv_bytes_per_token=163840.0, chips=2,
        efficiency=0.6, overhead_seconds=0.003, **B200_FP4,
    )  # fmt: skip


@given(st.floats(0.0, 1.0), st.integers(0, 12))
def test_expected_tokens_is_the_geometric_sum(a: float, k: int) -> None:
    direct = sum(a**i for i in range(k + 1))
    assert float(sv.expected_accepted_tokens(a, k)) == pytest.approx(direct, rel=1e-12)
    assert 1.0 <= float(sv.expected_accepted_tokens(a, k)) <= k + 1.0


def test_deepseek_v3_reported_second_token_acceptance() -> None:
    # DeepSeek-V3 report §5.4.3: one MTP draft accepted 85-90 % of the time, "1.8 times TPS".
    assert sv.expected_accepted_tokens([0.85, 0.90], 1).tolist() == pytest.approx([1.85, 1.9])


@pytest.mark.parametrize(("a", "k"), [(0.85, 1), (0.7, 3), (0.9, 5), (0.3, 4)])
def test_expected_tokens_matches_a_monte_carlo_of_acceptances(a: float, k: int) -> None:
    rng = np.random.default_rng(2026)
    steps = 200_000
    accepted = rng.random((steps, k)) < a
    # the leading run of accepted drafts, plus the target's own token
    run = np.where(accepted.all(axis=1), k, np.argmin(accepted, axis=1))
    emitted = run + 1.0
    se = emitted.std(ddof=1) / np.sqrt(steps)
    assert abs(emitted.mean() - float(sv.expected_accepted_tokens(a, k))) <= 5 * se


def test_step_without_drafts_is_the_plain_iteration() -> None:
    cost = _moe()
    for batch, kv in [(1, 900), (64, 64 * 2500), (512, 512 * 3000)]:
        plain = float(sv.iteration_seconds(cost, batch, 0, kv))
        got = float(sv.speculative_step_seconds(cost, batch, kv, 0, 0.05))
        assert got == pytest.approx(plain, rel=1e-14)


def test_step_time_written_out() -> None:
    cost, batch, kv, k, c = _dense(), 32.0, 32 * 1500.0, 3.0, 0.04
    n = batch * (k + 1)
    flops = 2 * 70e9 * n + 4 * 80 * 8192 * (k + 1) * kv
    compute = flops / (2 * 9000e12 * 0.6)
    memory = (70e9 + 163840.0 * kv) / (2 * 8e12 * 0.6)
    comm = float(cost.comm_seconds_per_token) * n
    draft = k * c * float(sv.iteration_seconds(cost, batch, 0, kv))
    expected = max(compute, memory) + comm + 0.003 + draft
    got = float(sv.speculative_step_seconds(cost, batch, kv, k, c))
    assert got == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("batch", [1.0, 4.0, 16.0])
def test_folded_cost_is_the_step_per_emitted_token_when_memory_bound(batch: float) -> None:
    # Small batches of a dense model: verification and draft passes both memory-bound.
    cost, a, k, c = _dense(), 0.8, 3.0, 0.03
    kv = batch * 2000.0
    folded = sv.speculative_cost(cost, a, k, c)
    step = float(sv.speculative_step_seconds(cost, batch, kv, k, c))
    emitted = float(sv.expected_accepted_tokens(a, k))
    per_token = float(sv.iteration_seconds(folded, batch, 0, kv))
    assert per_token == pytest.approx(step / emitted, rel=1e-12)


@pytest.mark.parametrize("batch", [1.0, 4.0, 16.0])
def test_folded_moe_cost_charges_drafts_the_verification_weights(batch: float) -> None:
    # A mixture of experts, memory-bound: the folded cost charges each draft pass the expert
    # bytes the k + 1 verified positions touch, not the fewer one position touches.
    cost, a, k, c = _moe(), 0.8, 3.0, 0.03
    kv = batch * 2000.0
    step = float(sv.speculative_step_seconds(cost, batch, kv, k, c))
    emitted = float(sv.expected_accepted_tokens(a, k))
    per_token = float(sv.iteration_seconds(sv.speculative_cost(cost, a, k, c), batch, 0, kv))
    share = float(cost.active_fraction)
    touched = (1 - share) ** batch - (1 - share) ** (batch * (k + 1))
    excess = k * c * float(cost.weight_bytes) * touched * float(cost.seconds_per_byte) / emitted
    assert per_token - step / emitted == pytest.approx(excess, rel=1e-9)


def test_folded_cost_within_its_bound_when_sides_differ() -> None:
    cost, a, k, c = _dense(), 0.75, 3.0, 0.05
    emitted = float(sv.expected_accepted_tokens(a, k))
    for batch in [8.0, 64.0, 256.0, 1024.0]:
        kv = batch * 1000.0
        step = float(sv.speculative_step_seconds(cost, batch, kv, k, c))
        folded = float(sv.iteration_seconds(sv.speculative_cost(cost, a, k, c), batch, 0, kv))
        n = batch
        compute = (2 * 70e9 * n + 4 * 80 * 8192 * kv) * float(cost.seconds_per_flop)
        memory = (70e9 + 163840.0 * kv) * float(cost.seconds_per_byte)
        bound = k * c * abs(compute - memory) / emitted
        assert abs(folded - step / emitted) <= bound * (1 + 1e-9) + 1e-15


def test_speculation_raises_tokens_per_second_of_a_memory_bound_decode() -> None:
    cost = _moe()
    plain = sv.throughput_at_batch(cost, 16, 800, 3700)
    spec = sv.throughput_at_batch(sv.speculative_cost(cost, 0.8, 3, 0.03), 16, 800, 3700)
    # under 3x the tokens per step: the 4 verified positions of each sequence touch more
    # experts than one does, so a memory-bound MoE step reads more weight bytes
    assert 1.5 * float(plain) < float(spec) < 2.95 * float(plain)
    # and no acceptance at all only pays for the extra positions and drafts
    waste = sv.throughput_at_batch(sv.speculative_cost(cost, 0.0, 3, 0.03), 16, 800, 3700)
    assert float(waste) < float(plain)
