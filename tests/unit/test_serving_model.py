"""Unit tests of accelsim.models.serving against closed forms (tolerances: float rounding)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from tests.oracles.scalar_formulas import scalar_decode_stretch_seconds

from accelsim.models import serving as sv
from accelsim.models.serving._decode import _JOINT_TOLERANCE
from accelsim.models.serving._interference import prompt_interference_seconds

H100 = {"peak_tflops": 989.0, "hbm_tbps": 3.35, "interconnect_gbps": 900.0}


def _cost(chips: float = 1.0, eff: float = 0.5, overhead: float = 0.0, active: float = 70e9):
    return sv.iteration_cost(
        active_params=active, total_params=70e9, layers=80, d_model=8192,
        weight_bytes=140e9, kv_bytes_per_token=327680.0, chips=chips,
        efficiency=eff, overhead_seconds=overhead, **H100,
    )  # fmt: skip


def test_kv_bytes_llama31_70b_bf16() -> None:
    assert float(sv.kv_bytes_per_token(80, 8, 128, 2)) == 2 * 80 * 8 * 128 * 2 == 327_680


def test_kv_bytes_mla_deepseek() -> None:
    assert float(sv.kv_bytes_per_token_from_values(61, 512 + 64, 2)) == 61 * 576 * 2


def test_kv_capacity_sign_flags_a_model_that_does_not_fit() -> None:
    cap = sv.kv_capacity_tokens([80e9, 160e9], 140e9, 327680.0, 0.9)
    assert cap[0] < 0 < cap[1]
    assert cap[1] == pytest.approx((0.9 * 160e9 - 140e9) / 327680.0, rel=1e-12)


def test_batch1_decode_is_memory_bound_closed_form() -> None:
    eff, overhead = 0.5, 0.003
    t = float(sv.iteration_seconds(_cost(eff=eff, overhead=overhead), 1, 0, 0))
    assert t == pytest.approx(140e9 / (3.35e12 * eff) + overhead, rel=1e-12)


def test_large_prefill_is_compute_bound_closed_form() -> None:
    eff, tokens = 0.4, 8192.0
    t = float(sv.iteration_seconds(_cost(eff=eff), 0, tokens, 0))
    assert t == pytest.approx(2 * 70e9 * tokens / (989e12 * eff), rel=1e-12)


def test_tensor_parallel_allreduce_term() -> None:
    one = float(sv.iteration_seconds(_cost(chips=1), 0, 4096, 0))
    four = sv.iteration_cost(
        active_params=70e9, total_params=70e9, layers=80, d_model=8192, weight_bytes=140e9,
        kv_bytes_per_token=327680.0, chips=4, efficiency=0.5, overhead_seconds=0.0, **H100,
    )  # fmt: skip
    ring = 80 * 2 * 4096 * 8192 * 2 * (2 * 3 / 4) / (900e9 / 2)
    assert float(sv.iteration_seconds(four, 0, 4096, 0)) == pytest.approx(one / 4 + ring, rel=1e-12)


def test_moe_single_token_reads_only_active_weights() -> None:
    cost = _cost(active=14e9)
    t = float(sv.iteration_seconds(cost, 1, 0, 0))
    assert t == pytest.approx(140e9 * 0.2 / (3.35e12 * 0.5), rel=1e-12)


def test_broadcasting_and_scalars_agree() -> None:
    cost = _cost(eff=np.array([0.3, 0.6]))
    arr = sv.iteration_seconds(cost, np.array([1.0, 64.0])[:, None], 0, 0)
    assert arr.shape == (2, 2)
    scalar = float(sv.iteration_seconds(_cost(eff=0.6), 64.0, 0, 0))
    assert arr[1, 1] == pytest.approx(scalar, rel=1e-15)


def test_offline_is_zero_where_nothing_fits() -> None:
    out = sv.offline_tokens_per_s(_cost(), np.array([-5.0, 1e6]), 222, 290, 256)
    assert out[0] == 0.0
    assert out[1] > 0.0


def _stall(cost: sv.IterationCost, inp: float) -> float:
    """Prefill-first: a prompt's own iteration, in which nothing decodes. [s]"""
    return float(sv.iteration_seconds(cost, 0, inp, 0, inp / 2))


def _batched_stall(cost: sv.IterationCost, rate: float, inp: float, out: float) -> float:
    """Prefill-first: a prompt's stall with the prompts arriving during one iteration
    prefilled together, ``x(T) = x − f·(1 − 1/b̄)``: ``f = 2·T(0, P, P/2) − T(0, 2P, P/2)``
    the part an iteration pays once, ``b̄ = m/(1 − e^{−m})``, ``m = λ·T`` at the joint fixed
    point ``T = T₁(x(T))`` (``T₁(x)`` the bisected fixed point with stall ``x``; an outer
    bisection of ``T − T₁(x(T))``, which rises with ``T``). [s]"""
    alone = _stall(cost, inp)
    shared = 2.0 * alone - float(sv.iteration_seconds(cost, 0, 2.0 * inp, 0, inp / 2))

    def stall(t: float) -> float:
        m = rate * t
        return alone - shared * (1.0 - 1.0 / (m / -math.expm1(-m)))

    lo, hi = 1e-9, 1e3
    for _ in range(100):
        mid = math.sqrt(lo * hi)
        if _bisected_iteration(cost, rate, inp, out, stall(mid)) <= mid:
            hi = mid
        else:
            lo = mid
    return stall(hi)


def test_littles_law_fixed_point_holds() -> None:
    """Prefill-first: ``(1 − λ·x)·T = iteration_seconds(1 + B, 0, (1 + B)·ctx)``, ``B = λ·out·T``,
    ``x`` the prompt's stall, its own iteration less its share of what the prompts of one
    prefill iteration pay once (closed form, float rounding)."""
    cost = _cost(chips=2, overhead=0.002)
    rate, inp, out = 5.0, 222.0, 290.0
    lat = sv.latency_under_load(cost, rate, inp, out, 1000)
    assert not lat.saturated
    batch = float(lat.decode_batch)
    t = float(lat.tpot_mean_s)
    assert batch == pytest.approx(rate * out * t, rel=1e-9)
    decode = sv.iteration_seconds(cost, 1 + batch, 0, (1 + batch) * (inp + out / 2), 0)
    stall = _batched_stall(cost, rate, inp, out)
    assert (1.0 - rate * stall) * t == pytest.approx(float(decode), rel=1e-9)


def _bisected_iteration(
    cost: sv.IterationCost, rate: float, inp: float, out: float, stall: float
) -> float:
    """The prefill-first fixed point ``(1 − λ·x)·T = iteration_seconds(1 + λ·out·T, 0, …)``
    for a stall ``x``, by 200 bisection steps."""
    ctx = inp + out / 2.0
    share = 1.0 - rate * stall

    def excess(t: float) -> float:
        batch = 1.0 + rate * out * t
        return float(sv.iteration_seconds(cost, batch, 0, batch * ctx, 0)) - share * t

    if share <= 0.0:
        return math.inf  # the prompts alone fill the replica
    lo, hi = 0.0, 1.0
    while excess(hi) > 0.0:
        hi *= 2.0
        if hi > 1e9:
            return math.inf  # no fixed point
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if excess(mid) > 0.0 else (lo, mid)
    return hi


@pytest.mark.parametrize("active", [70e9, 14e9, 3e9])  # dense, and MoE weight shares 0.2, 0.04
@pytest.mark.parametrize("rate", [0.05, 1.0, 5.0])
def test_fixed_point_matches_bisection(active: float, rate: float) -> None:
    """Closed form per roofline side (Newton for the MoE share) against a 200-step bisection;
    prefill-first the stalls and the decode point are one fixed point, bisected to a relative
    width of ``_JOINT_TOLERANCE`` (1e-7; measured within 7e-10 here)."""
    cost = _cost(chips=4, overhead=0.002, active=active)
    lat = sv.latency_under_load(cost, rate, 1000.0, 300.0, 1e6)
    assert not lat.saturated
    assert float(lat.tpot_mean_s) == pytest.approx(
        _bisected_iteration(cost, rate, 1000.0, 300.0, _batched_stall(cost, rate, 1000.0, 300.0)),
        rel=_JOINT_TOLERANCE,
    )


@pytest.mark.parametrize("chunk", [0, 512])
def test_zero_load_tpot_is_the_bare_decode_iteration(chunk: int) -> None:
    """λ → 0: one sequence decodes alone and no prompt interferes: mean, median and tail
    TPOT are ``iteration_seconds(1, 0, in + out/2)``."""
    cost = _cost(chips=2, overhead=0.002)
    inp, out = 2000.0, 300.0
    lat = sv.latency_under_load(cost, 1e-12, inp, out, 500, prefill_chunk_tokens=chunk)
    bare = float(sv.iteration_seconds(cost, 1, 0, inp + out / 2, 0))
    for value in (lat.tpot_mean_s, lat.tpot_p50_s, lat.tpot_tail_s):
        assert float(value) == pytest.approx(bare, rel=1e-9)


def test_no_prefill_work_leaves_the_decode_tpot_unchanged() -> None:
    """One-token prompts in chunks on one chip: the chunk adds no roofline time to a
    memory-bound decode iteration (x = 0), so TPOT is the decode-only replica's exactly."""
    cost = _cost(chips=1, overhead=0.002)
    inp, out, rate = 1.0, 300.0, 2.0
    lat = sv.latency_under_load(cost, rate, inp, out, 512, prefill_chunk_tokens=512)
    dec = sv.decode_latency(cost, rate, inp, out, 512)
    assert float(lat.tpot_mean_s) == pytest.approx(float(dec.tpot_p50_s), rel=1e-12)
    assert float(lat.tpot_p50_s) == pytest.approx(float(dec.tpot_p50_s), rel=1e-12)


def test_prompt_interference_closed_forms() -> None:
    """x(P): prefill-first, the prompt's own iteration; chunked (C = 700, P = 2000): two full
    chunks attending to 700 tokens on average, the last 600 attending to 1700, each less
    the decode iteration it shares."""
    cost = _cost(chips=2, overhead=0.002)
    b, kv = np.float64(40.0), np.float64(40.0 * 3000.0)
    nodes = np.array([2000.0])
    first = prompt_interference_seconds(cost, b, kv, nodes, np.float64(0.0))
    assert float(first[0]) == pytest.approx(_stall(cost, 2000.0), rel=1e-15)
    base = float(sv.iteration_seconds(cost, b, 0, kv, 0))
    full = float(sv.iteration_seconds(cost, b, 700, kv, 700)) - base
    last = float(sv.iteration_seconds(cost, b, 600, kv, 1400 + 300)) - base
    chunked = prompt_interference_seconds(cost, b, kv, nodes, np.float64(700.0))
    assert float(chunked[0]) == pytest.approx(2 * full + last, rel=1e-12)


def test_prefill_first_tpot_is_stretched_by_the_prompts_share() -> None:
    """Prefill-first, fixed prompts: TPOT = decode iteration / (1 − λ·x) at the batch of
    that TPOT, well above the decode iteration when the prompts take a third of the time
    (``x`` the batched stall, within 2 % of the prompt's own iteration here)."""
    cost = _cost(chips=2, overhead=0.002)
    inp, out = 2000.0, 200.0
    rate = 0.33 / _stall(cost, inp)
    stall = _batched_stall(cost, rate, inp, out)
    assert stall == pytest.approx(_stall(cost, inp), rel=0.02)
    lat = sv.latency_under_load(cost, rate, inp, out, 1e6)
    batch = float(lat.decode_batch)
    decode = float(sv.iteration_seconds(cost, 1 + batch, 0, (1 + batch) * (inp + out / 2), 0))
    assert float(lat.tpot_mean_s) == pytest.approx(decode / (1.0 - rate * stall), rel=1e-9)
    assert float(lat.tpot_mean_s) > 1.4 * decode


@pytest.mark.parametrize(("chunk", "pieces"), [(0, 1), (4096, 1), (700, 3)])
def test_light_load_ttft_is_the_prompts_own_prefill(chunk: int, pieces: int) -> None:
    """λ → 0: no iteration in progress, no queue, nobody decoding: TTFT is the prompt's
    own iterations, ``(k − 1)`` full chunks and the last piece (closed forms)."""
    cost = _cost(chips=2, overhead=0.002)
    inp = 2000.0
    lat = sv.latency_under_load(cost, 1e-14, inp, 300.0, 500, prefill_chunk_tokens=chunk)
    piece = inp if chunk == 0 else min(inp, chunk)
    last = inp - (pieces - 1) * piece
    full = float(sv.iteration_seconds(cost, 0, chunk, 0, inp / 2)) if pieces > 1 else 0.0
    alone = (pieces - 1) * full + float(sv.iteration_seconds(cost, 0, last, 0, last / 2))
    for value in (lat.ttft_mean_s, lat.ttft_p50_s, lat.ttft_tail_s):
        assert float(value) == pytest.approx(alone, rel=1e-5)


def test_ttft_mean_adds_half_an_iteration_when_prefill_is_free() -> None:
    """Busy replica, prompt work ~0: an arrival waits the residual of a fixed iteration, T/2
    on average (length bias of a constant), then its own iteration: mean ``T/2 + D``."""
    cost = _cost(chips=2, overhead=0.002)
    rate, inp, out = 2.0, 1.0, 2000.0
    lat = sv.latency_under_load(cost, rate, inp, out, 512, prefill_chunk_tokens=512)
    batch = float(lat.decode_batch)
    busy = 1.0 - math.exp(-(batch + rate * float(lat.tpot_mean_s)))
    decode = float(sv.iteration_seconds(cost, batch, 0, batch * (inp + out / 2), 0))
    own = float(sv.iteration_seconds(cost, batch, inp, batch * (inp + out / 2), inp / 2))
    assert busy > 1 - 1e-9
    assert float(lat.ttft_mean_s) == pytest.approx(decode / 2 + own, rel=1e-3)


def test_prompt_length_variability_lengthens_the_tail() -> None:
    """Same mean prompt, more variance (M/G/1 instead of M/D/1): a later TTFT tail."""
    cost = _cost(chips=2, overhead=0.002)
    fixed = sv.latency_under_load(cost, 1.0, 2000.0, 300.0, 1000)
    spread = sv.latency_under_load(
        cost, 1.0, 2000.0, 300.0, 1000, input_variance=2000.0**2, input_third_moment=2e10
    )
    assert float(spread.ttft_tail_s) > float(fixed.ttft_tail_s)
    assert float(spread.ttft_mean_s) >= float(fixed.ttft_mean_s)


def test_saturation_is_flagged_with_finite_values() -> None:
    lat = sv.latency_under_load(_cost(), np.array([0.1, 1e6]), 222, 290, 64)
    assert lat.saturated.tolist() == [False, True]
    for name in ("tpot_mean_s", "tpot_p50_s", "tpot_tail_s", "ttft_p50_s", "ttft_tail_s",
                 "decode_batch"):  # fmt: skip
        assert np.all(np.isfinite(getattr(lat, name)))


def test_slo_capacity_feasible_and_bounded_by_saturation() -> None:
    cost = _cost(chips=2, overhead=0.002)
    cap = sv.slo_capacity_rps(cost, 222, 290, 5e5, 1024, [2.0, 1e-4], [0.2, 0.2])
    assert cap.feasible.tolist() == [True, False]
    assert cap.rate_rps[1] == 0.0
    assert 0 < cap.rate_rps[0] <= cap.saturated_rps[0]
    lat = sv.latency_under_load(cost, cap.rate_rps[0], 222, 290, 1024)
    assert float(lat.ttft_tail_s) <= 2.0
    assert float(lat.tpot_tail_s) <= 0.2


def _stretch_oracle(cost: sv.IterationCost, batch: int, kv: int, steps: int) -> float:
    """The sum of the per-iteration formula over a decode stretch (exactly rounded: fsum)."""
    each = sv.iteration_seconds(cost, batch, 0, kv + batch * np.arange(steps))
    return math.fsum(np.atleast_1d(each).tolist())


def _compute_bound(cost: sv.IterationCost, batch: int, kv: float) -> bool:
    flops = (cost.flops_per_token * batch + cost.attention_flops_per_context_token * kv) * (
        cost.seconds_per_flop
    )
    touched = 1.0 - (1.0 - cost.active_fraction) ** batch
    memory = (cost.weight_bytes * touched + cost.kv_bytes_per_token * kv) * cost.seconds_per_byte
    return bool(flops >= memory)


@pytest.mark.parametrize("active", [70e9, 13e9])  # dense; MoE (constant touched share)
def test_decode_stretch_is_the_sum_of_its_iterations(active: float) -> None:
    """Closed form against the per-iteration sum, across the compute/memory crossover.

    Tolerance 1e-12 relative: every iteration time and the closed form are sums of a few
    positive products, each rounded to ~2**-53 relative, so they differ by a few 1e-16
    (the oracle is summed exactly with fsum); 1e-12 is that bound with a wide margin.
    """
    cost = _cost(chips=4, eff=0.6, overhead=0.004, active=active)
    rng = np.random.default_rng(11)
    crossings = 0
    for _ in range(400):
        batch = int(rng.integers(1, 4096))
        kv = int(rng.integers(0, 2_000_000))
        steps = int(rng.integers(1, 1500))
        expected = _stretch_oracle(cost, batch, kv, steps)
        got = float(sv.decode_stretch_seconds(cost, batch, kv, steps))
        assert got == pytest.approx(expected, rel=1e-12)
        end = kv + batch * (steps - 1)
        crossings += _compute_bound(cost, batch, kv) != _compute_bound(cost, batch, end)
    assert crossings >= 5  # the crossover inside a stretch is exercised, not just one side


def test_decode_stretch_crossing_inside_by_construction() -> None:
    """Batch 512 from an empty cache: compute-bound first, memory-bound once KV has grown."""
    cost = _cost(chips=4, eff=0.6, overhead=0.004)
    batch, steps = 512, 2000
    assert _compute_bound(cost, batch, 0)
    assert not _compute_bound(cost, batch, batch * steps)
    expected = _stretch_oracle(cost, batch, 0, steps)
    assert float(sv.decode_stretch_seconds(cost, batch, 0, steps)) == pytest.approx(
        expected, rel=1e-12
    )


def test_decode_stretch_broadcasts_and_scalar_version_is_bit_identical() -> None:
    cost = _cost(chips=2, overhead=0.002, active=13e9)
    batch, kv, steps = np.array([1, 8, 300]), np.array([0, 5000, 900_000]), np.array([0, 7, 450])
    vector = sv.decode_stretch_seconds(cost, batch, kv, steps)
    assert vector.shape == (3,)
    assert vector[0] == 0.0  # an empty stretch takes no time
    f = scalar_decode_stretch_seconds(cost)
    assert [f(int(b), int(k), int(s)) for b, k, s in zip(batch, kv, steps, strict=True)] == (
        vector.tolist()
    )
    assert vector[1] == pytest.approx(_stretch_oracle(cost, 8, 5000, 7), rel=1e-12)
