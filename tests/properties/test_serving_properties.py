"""Hypothesis invariants of accelsim.models.serving: finite, monotone, infeasible flagged."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from accelsim.models import serving as sv
from accelsim.models.serving._interference import prompt_interference_seconds
from accelsim.models.serving._mixture import two_point

effs = st.floats(0.01, 1.0)
bandwidths = st.floats(0.1, 10.0)
rates = st.floats(1e-3, 1e4)
lengths = st.floats(1.0, 20000.0)
overheads = st.floats(0.0, 0.01)


def _cost(eff: float, bw: float, overhead: float, chips: float = 2.0) -> sv.IterationCost:
    return sv.iteration_cost(
        active_params=8e9, total_params=8e9, layers=32, d_model=4096, weight_bytes=16e9,
        kv_bytes_per_token=131072.0, chips=chips, peak_tflops=989.0, hbm_tbps=bw,
        interconnect_gbps=900.0, efficiency=eff, overhead_seconds=overhead,
    )  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(effs, bandwidths, overheads, rates, lengths, lengths)
def test_latency_outputs_are_finite(eff, bw, overhead, rate, inp, out) -> None:  # type: ignore[no-untyped-def]
    lat = sv.latency_under_load(_cost(eff, bw, overhead), rate, inp, out, 512)
    for value in (lat.decode_batch, lat.tpot_p50_s, lat.tpot_tail_s, lat.ttft_p50_s,
                  lat.ttft_tail_s, lat.ttft_mean_s, lat.prefill_utilization):  # fmt: skip
        assert np.all(np.isfinite(value))
    assert np.all(lat.tpot_tail_s >= lat.tpot_p50_s)
    assert np.all(lat.ttft_tail_s >= lat.ttft_p50_s)


@settings(max_examples=60, deadline=None)
@given(effs, bandwidths, bandwidths, st.floats(1, 4096), lengths)
def test_more_bandwidth_is_not_slower(eff, bw1, bw2, batch, context) -> None:  # type: ignore[no-untyped-def]
    lo, hi = sorted((bw1, bw2))
    slow = sv.iteration_seconds(_cost(eff, lo, 0.001), batch, 0, batch * context)
    fast = sv.iteration_seconds(_cost(eff, hi, 0.001), batch, 0, batch * context)
    assert fast <= slow * (1 + 1e-12)


@settings(max_examples=40, deadline=None)
@given(effs, rates, rates, st.floats(10, 4000), st.floats(10, 2000))
def test_higher_rate_is_not_faster(eff, r1, r2, inp, out) -> None:  # type: ignore[no-untyped-def]
    lo, hi = sorted((r1, r2))
    cost = _cost(eff, 3.35, 0.002)
    a = sv.latency_under_load(cost, lo, inp, out, 1024)
    b = sv.latency_under_load(cost, hi, inp, out, 1024)
    if not b.saturated:
        assert b.tpot_mean_s >= a.tpot_mean_s * (1 - 1e-9)
        assert b.ttft_mean_s >= a.ttft_mean_s * (1 - 1e-9)


@settings(max_examples=25, deadline=None)
@given(effs, st.floats(10, 4000), st.floats(10, 2000), st.floats(1e-3, 10), st.floats(1e-3, 1))
def test_slo_capacity_within_saturation_and_flagged(eff, inp, out, ttft, tpot) -> None:  # type: ignore[no-untyped-def]
    cap = sv.slo_capacity_rps(_cost(eff, 3.35, 0.002), inp, out, 4e5, 512, ttft, tpot)
    assert np.isfinite(cap.rate_rps)
    assert np.isfinite(cap.saturated_rps)
    assert 0.0 <= cap.rate_rps <= cap.saturated_rps * (1 + 1e-12)
    if not cap.feasible:
        assert cap.rate_rps == 0.0


@settings(max_examples=60, deadline=None)
@example(1.0, 0.002, 1.0, 1.0, 1.0, 0, 0.0, 1.0)  # two prompts in one iteration share it
@given(effs, overheads, rates, lengths, lengths, st.sampled_from([0, 256, 2048]),
       st.floats(0.0, 4.0), st.floats(0.02, 1.0))  # fmt: skip
def test_prompt_law_and_chunks_keep_latency_finite_and_ordered(  # type: ignore[no-untyped-def]
    eff, overhead, rate, inp, out, chunk, cv, active_share
) -> None:
    cost = sv.iteration_cost(
        active_params=8e9 * active_share, total_params=8e9, layers=32, d_model=4096,
        weight_bytes=16e9, kv_bytes_per_token=131072.0, chips=2, peak_tflops=989.0,
        hbm_tbps=3.35, interconnect_gbps=900.0, efficiency=eff, overhead_seconds=overhead,
    )  # fmt: skip
    var = (cv * inp) ** 2
    lat = sv.latency_under_load(
        cost, rate, inp, out, min(512, chunk or 512), prefill_chunk_tokens=chunk,
        input_variance=var, input_third_moment=3.0 * cv * var ** 1.5,
    )  # fmt: skip
    for value in (lat.ttft_p50_s, lat.ttft_tail_s, lat.ttft_mean_s, lat.tpot_tail_s,
                  lat.tpot_p50_s, lat.tpot_mean_s):  # fmt: skip
        assert np.all(np.isfinite(value))
    assert np.all(lat.ttft_tail_s >= lat.ttft_p50_s)
    assert np.all(lat.tpot_tail_s >= lat.tpot_p50_s)
    if not lat.saturated:
        # TPOT is never below the decode iteration it takes part in (prompt work only adds)
        t = float(lat.tpot_mean_s)
        batch = 1.0 + rate * out * t
        decode = float(sv.iteration_seconds(cost, batch, 0, batch * (inp + out / 2), 0))
        assert t >= decode * (1 - 1e-9)
        if out > 1.0:
            assert float(lat.tpot_p50_s) >= decode * (1 - 1e-9)
        else:  # one-token outputs have no token gap to time
            assert float(lat.tpot_tail_s) == 0.0
        if chunk == 0:  # prefill-first: (1 − λ·E[x])·T = decode iteration, x the own iteration
            nodes, probs = two_point(
                np.float64(inp), np.float64(var), np.float64(3.0 * cv * var**1.5)
            )
            stall = sv.iteration_seconds(cost, 0, nodes, 0, nodes / 2)
            share = 1.0 - rate * float(np.sum(probs * stall))
            # Prompts that arrive during one iteration are prefilled together and share its
            # fixed part, so a prompt stalls the decode at most its own iteration: equality
            # when it prefills alone, and within the chance that another joins it (~λ·T).
            assert share * t <= decode * (1 + 1e-9)
            assert share * t == pytest.approx(decode, rel=max(1e-9, rate * t))


@settings(max_examples=60, deadline=None)
@given(effs, overheads, st.floats(0.02, 1.0), st.floats(0.0, 2048.0), st.floats(0.0, 1e6),
       st.lists(st.floats(1.0, 131072.0), min_size=2, max_size=8),
       st.sampled_from([0, 256, 2048, 8192]))  # fmt: skip
def test_prompt_interference_is_finite_nonnegative_and_grows_with_the_prompt(  # type: ignore[no-untyped-def]
    eff, overhead, active_share, batch, kv, prompts, chunk
) -> None:
    cost = sv.iteration_cost(
        active_params=8e9 * active_share, total_params=8e9, layers=32, d_model=4096,
        weight_bytes=16e9, kv_bytes_per_token=131072.0, chips=2, peak_tflops=989.0,
        hbm_tbps=3.35, interconnect_gbps=900.0, efficiency=eff, overhead_seconds=overhead,
    )  # fmt: skip
    p = np.sort(np.asarray(prompts))
    x = prompt_interference_seconds(cost, np.float64(batch), np.float64(kv), p, np.float64(chunk))
    assert np.all(np.isfinite(x))
    assert np.all(x >= 0.0)
    assert np.all(np.diff(x) >= -1e-12 * np.maximum(x[1:], 1e-300))


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 256), st.integers(1, 512))
def test_tensor_parallel_kv_copies_bounds(heads: int, chips: int) -> None:
    copies = float(sv.tensor_parallel_kv_copies(heads, chips))
    # never less than one copy, never more than one per chip; exact on vLLM's two layouts
    assert 1.0 <= copies <= chips + 1e-12
    if heads % chips == 0:
        assert copies == 1.0
    if chips % heads == 0:
        assert copies == pytest.approx(chips / heads)
    # a chip holds whole heads: at least one head's share, at most all heads
    per_chip = copies / chips
    assert 1.0 / heads - 1e-12 <= per_chip <= 1.0 + 1e-12
    # one more chip never holds more per chip
    assert float(sv.tensor_parallel_kv_copies(heads, chips + 1)) / (chips + 1) <= per_chip + 1e-12
