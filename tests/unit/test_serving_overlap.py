"""The partial overlap of compute and memory time in an iteration (models/serving/_iteration.py).

``iteration_seconds`` is ``max(c, m) + (1 − overlap)·min(c, m) + comm·n + overhead``: the
pure roofline at ``overlap = 1``, the sum of compute and memory time at 0. Oracles: that
closed form written out here from the cost's coefficients; the sum of
:func:`iteration_seconds` over a run (``math.fsum``, ``rel = 1e-12`` as in
test_serving_runs.py: a few 1e-16 of rounding per term, while a side switched at the wrong
iteration moves a run by far more); the fixed point ``T = f(T)`` of the decode model to
``1e-12`` relative (Newton's quadratic convergence; one step too few leaves ~1e-6).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.oracles.scalar_formulas import (
    scalar_decode_stretch_seconds,
    scalar_iteration_run,
    scalar_iteration_seconds,
)

from accelsim import catalog
from accelsim.catalog import serving_priors
from accelsim.catalog._serving_priors import load_serving_priors
from accelsim.models import serving as sv
from accelsim.models.serving._decode import _iteration_root


def _cost(
    active: float, overlap: float, overhead: float = 0.002, chips: int = 2
) -> sv.IterationCost:
    return sv.iteration_cost(
        active_params=active, total_params=70e9, layers=80, d_model=8192,
        weight_bytes=70e9, kv_bytes_per_token=163840.0, chips=chips, peak_tflops=989,
        hbm_tbps=3.35, interconnect_gbps=900, efficiency=0.5, overhead_seconds=overhead,
        overlap=overlap,
    )  # fmt: skip


def _by_hand(cost: sv.IterationCost, decode: float, prefill: float, kv: float, ctx: float) -> float:
    n = decode + prefill
    flops = float(cost.flops_per_token) * n + float(cost.attention_flops_per_context_token) * (
        kv + prefill * ctx
    )
    touched = 1.0 - (1.0 - float(cost.active_fraction)) ** n
    nbytes = float(cost.weight_bytes) * touched + float(cost.kv_bytes_per_token) * kv
    c, m = flops * float(cost.seconds_per_flop), nbytes * float(cost.seconds_per_byte)
    hidden = 1.0 - float(cost.exposed_fraction)
    fixed = float(cost.comm_seconds_per_token) * n + float(cost.overhead_seconds)
    return max(c, m) + (1.0 - hidden) * min(c, m) + fixed


@given(
    active=st.sampled_from([70e9, 13e9]),
    overlap=st.floats(0.0, 1.0),
    decode=st.integers(0, 4096),
    prefill=st.integers(0, 8192),
    kv=st.integers(0, 10**7),
)
def test_iteration_is_the_max_plus_the_exposed_share_of_the_min(
    active: float, overlap: float, decode: int, prefill: int, kv: int
) -> None:
    cost = _cost(active, overlap)
    got = float(sv.iteration_seconds(cost, decode, prefill, kv, 300.0))
    assert got == pytest.approx(_by_hand(cost, decode, prefill, kv, 300.0), rel=1e-12)
    # the plain-float formula the request DES runs, bit for bit
    assert scalar_iteration_seconds(cost)(decode, prefill, kv, 300.0) == got


def test_overlap_limits_are_the_roofline_and_the_sum() -> None:
    roof, half, none = (_cost(70e9, o) for o in (1.0, 0.5, 0.0))
    args = (64, 0, 64 * 600, 0.0)  # memory-bound decode: weights + cache
    t_roof, t_half, t_none = (float(sv.iteration_seconds(c, *args)) for c in (roof, half, none))
    c = 2 * 70e9 * 64 * float(roof.seconds_per_flop) + 4 * 80 * 8192 * 64 * 600 * float(
        roof.seconds_per_flop
    )
    fixed = float(roof.comm_seconds_per_token) * 64 + 0.002
    assert t_none - t_roof == pytest.approx(c, rel=1e-9)  # the whole compute time exposed
    assert t_half - t_roof == pytest.approx(c / 2.0, rel=1e-9)
    assert t_roof > fixed
    assert t_none > t_half > t_roof


@given(
    active=st.sampled_from([70e9, 13e9, 1e6]),
    overlap=st.sampled_from([0.0, 0.3, 0.5, 1.0]),
    decode=st.integers(1, 4096),
    kv=st.integers(0, 10**7),
    iterations=st.integers(0, 3000),
)
def test_decode_stretch_and_runs_with_overlap_sum_their_iterations(
    active: float, overlap: float, decode: int, kv: int, iterations: int
) -> None:
    cost = _cost(active, overlap)
    each = math.fsum(
        float(sv.iteration_seconds(cost, decode, 0, kv + decode * i, 0.0))
        for i in range(iterations)
    )
    stretch = float(sv.decode_stretch_seconds(cost, decode, kv, iterations))
    assert stretch == pytest.approx(each, rel=1e-12, abs=1e-300)
    run = scalar_iteration_run(cost)(decode, kv, 0, 0.0)
    assert sv.run_seconds(run, iterations) == scalar_decode_stretch_seconds(cost)(
        decode, kv, iterations
    )


@pytest.mark.parametrize("active", [70e9, 13e9])
@pytest.mark.parametrize("overlap", [0.0, 0.4, 1.0])
def test_decode_fixed_point_holds_with_partial_overlap(active: float, overlap: float) -> None:
    cost = _cost(active, overlap)
    rate, inp, out = np.array([0.5, 2.0, 6.0]), np.array(400.0), np.array(200.0)
    t, stable = _iteration_root(cost, rate, inp, out)
    assert stable.all()
    batch = 1.0 + rate * out * t
    f = sv.iteration_seconds(cost, batch, rate * inp * t, batch * (inp + out / 2.0), inp / 2.0)
    np.testing.assert_allclose(f, t, rtol=1e-12)


def test_less_overlap_costs_more_at_a_tight_bound_than_offline() -> None:
    """The class issue 28 reports: with the roofline max a tight TPOT bound costs almost
    nothing (a compute-bound batch has no fixed part); exposing the weights' read makes
    the small batches a tight bound forces pay for it."""
    inp, out, capacity = 222.0, 272.0, 2e6

    def kept(overlap: float) -> float:
        cost = _cost(70e9, overlap, chips=2)
        cap = sv.slo_capacity_rps(cost, inp, out, capacity, 2048.0, 0.45, 0.04, 0.99,
                                  prefill_chunk_tokens=8192.0)  # fmt: skip
        return float(cap.rate_rps / cap.saturated_rps)

    assert kept(0.0) < kept(0.5) < kept(1.0)


def test_the_shipped_prior_is_sourced_and_a_user_file_may_omit_it(tmp_path: Path) -> None:
    prior = serving_priors().overlap_prior()
    dist = prior.dist()
    assert 0.0 <= float(dist.ppf(0.01)) <= float(dist.ppf(0.99)) <= 1.0
    assert prior.sources
    assert prior.assumption
    shipped = Path(catalog.__file__).parent / "data" / "serving.yaml"
    lines = shipped.read_text(encoding="utf-8")
    start = lines.index("compute_memory_overlap:")
    end = lines.index("memory_share:")
    user = tmp_path / "serving.yaml"
    user.write_text(lines[:start] + lines[end:], encoding="utf-8")
    loaded = load_serving_priors(user)
    assert loaded.compute_memory_overlap is None
    assert loaded.overlap_prior() == prior


@pytest.mark.parametrize("active", [70e9, 13e9])
@pytest.mark.parametrize("overlap", [0.0, 0.4, 1.0])
def test_speculation_without_drafts_is_the_iteration_at_any_overlap(
    active: float, overlap: float
) -> None:
    """``k = 0``: the verification step is the plain iteration, overlap included (to the
    rounding of the fixed terms' order of addition, a few 1e-16)."""
    cost = _cost(active, overlap)
    batch, kv = np.array([1.0, 8.0, 256.0]), np.array([2e3, 8e4, 1e6])
    plain = sv.iteration_seconds(cost, batch, 0.0, kv)
    np.testing.assert_allclose(
        sv.speculative_step_seconds(cost, batch, kv, 0, 0.05), plain, 1e-15, 0
    )


@pytest.mark.parametrize("expert_parallel", [False, True])
def test_the_calibration_layouts_carry_the_overlap(expert_parallel: bool) -> None:
    """The serving calibration's layout coefficients keep the drawn overlap on either layout."""
    from accelsim import _calibration_layouts as rack

    model, chip = catalog.model_preset("deepseek-r1"), catalog.chip("b200")
    overlap = np.array([0.0, 0.3, 1.0])
    cost = rack.layout_cost(
        model, chip, "fp8", 8, expert_parallel, 70272.0, np.full(3, 0.5), np.full(3, 0.002),
        256.0, overlap=overlap,
    )  # fmt: skip
    np.testing.assert_array_equal(cost.exposed_fraction, 1.0 - overlap)
