"""Invariants of the performance model over chip counts, chip specs and model sizes.

Slack: 1e-12 relative where one side is a different arithmetic path to the same number
(float rounding of a handful of operations); 1e-9 for round trips through local_mfu, whose
closed-form inverse divides by 1 − k·MFU and so amplifies rounding near the feasibility edge.
Everything else is exact.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

from accelsim.models import perf

ROUNDING = 1e-12

params = st.floats(1e8, 2e12)
tokens = st.floats(1e9, 3e13)
batch_tokens = st.floats(2.5e5, 6.4e7)
peak = st.floats(50.0, 5000.0)
mfu = st.floats(0.05, 1.0)
overlap = st.floats(0.0, 1.0)
layout = st.sampled_from([1, 2, 4, 8, 16, 64, 128, 512])
domain = st.sampled_from([1, 2, 4, 8, 16, 64, 72, 256, 4096, 8960])
H100 = {
    "peak_tflops": 989.0,
    "scale_up_domain_chips": 8,
    "scale_up_gbps": 900.0,
    "scale_out_gbps": 50.0,
}
sharded = st.sampled_from(["zero1", "zero2", "zero3", "fsdp"])
any_sharding = st.sampled_from(["none", "zero1", "zero2", "zero3", "fsdp"])


@st.composite
def networks(draw: st.DrawFn) -> dict[str, Any]:
    """Chip specs with scale-up at least as fast per direction as scale-out (physical: the
    scale-up fabric is the fast one; the model's monotonicity relies on it)."""
    out = draw(st.floats(1.0, 200.0))
    return {
        "peak_tflops": draw(peak),
        "scale_up_domain_chips": draw(domain),
        "scale_up_gbps": 2.0 * out * draw(st.floats(1.0, 40.0)),
        "scale_out_gbps": out,
    }


@given(
    params,
    batch_tokens,
    mfu,
    overlap,
    layout,
    networks(),
    st.lists(st.integers(1, 4096), min_size=2, max_size=12),
)
@example(7e9, 4e6, 0.45, 0.0, 1, H100, [7, 8, 9, 16, 17])  # across the 8-GPU domain
def test_efficiency_in_unit_interval_and_non_increasing_in_chips(
    n_params: float,
    batch: float,
    mfu_local: float,
    phi: float,
    mp: int,
    network: dict[str, Any],
    replicas: list[int],
) -> None:
    """0 < η ≤ 1, η = 1 for one replica, and η never rises as whole replicas are added."""
    chips = mp * np.array(sorted(replicas), dtype=float)
    eff = perf.scaling_efficiency(
        chips,
        params=n_params,
        global_batch_tokens=batch,
        mfu_local=mfu_local,
        overlap=phi,
        model_parallel_chips=mp,
        **network,
    )
    assert np.all(eff > 0.0)
    assert np.all(eff <= 1.0)
    assert np.all(np.diff(eff) <= ROUNDING * eff[:-1])
    one = perf.scaling_efficiency(
        mp,
        params=n_params,
        global_batch_tokens=batch,
        mfu_local=mfu_local,
        overlap=phi,
        model_parallel_chips=mp,
        **network,
    )
    assert float(one) == 1.0


@given(params, tokens, peak, mfu, st.integers(1, 100_000))
def test_compute_hours_halve_when_chips_double(
    n_params: float, n_tokens: float, peak_tflops: float, m: float, chips: int
) -> None:
    """At a fixed MFU (efficiency) twice the chips take half the time."""
    flops = perf.training_flops(n_params, n_tokens)
    one = float(perf.compute_hours(flops, chips, peak_tflops, m))
    two = float(perf.compute_hours(flops, 2 * chips, peak_tflops, m))
    assert abs(two - one / 2.0) <= ROUNDING * one


@given(
    params, sharded, st.lists(st.integers(1, 100_000), min_size=2, max_size=10), st.floats(0, 50)
)
def test_sharded_memory_never_grows_with_chips(
    n_params: float, sharding: perf.Sharding, chips: list[int], activation: float
) -> None:
    """More chips to shard over never need more memory per chip; unsharded states stay put."""
    n = np.array(sorted(chips), dtype=float)
    mem = perf.memory_per_chip_gib(n_params, n, sharding=sharding, activation_gib=activation)
    assert np.all(np.diff(mem) <= 0.0)
    flat = perf.memory_per_chip_gib(n_params, n, sharding="none", activation_gib=activation)
    assert np.all(flat == flat[0])


@given(params, st.floats(8.0, 300.0), any_sharding, st.floats(0.5, 1.0), st.floats(0.0, 20.0))
def test_min_chips_to_fit_fits_and_is_minimal(
    n_params: float, hbm: float, sharding: perf.Sharding, usable: float, activation: float
) -> None:
    """The answer fits in the usable HBM and one chip fewer does not; inf only when even the
    replicated part alone overflows."""
    n = float(
        perf.min_chips_to_fit(
            n_params, hbm, sharding=sharding, usable_fraction=usable, activation_gib=activation
        )
    )
    capacity = usable * hbm
    if np.isinf(n):
        huge = perf.memory_per_chip_gib(
            n_params, 1e30, sharding=sharding, activation_gib=activation
        )
        assert float(huge) > capacity * (1 - ROUNDING)
        return
    assert n >= 1.0
    assert n == np.floor(n)
    need = float(
        perf.memory_per_chip_gib(n_params, n, sharding=sharding, activation_gib=activation)
    )
    assert need <= capacity * (1 + ROUNDING)
    if n > 1.0:
        fewer = float(
            perf.memory_per_chip_gib(
                n_params, n - 1.0, sharding=sharding, activation_gib=activation
            )
        )
        assert fewer > capacity * (1 - ROUNDING)


@given(
    params, batch_tokens, mfu, overlap, layout, networks(), st.integers(1, 512), st.integers(1, 512)
)
def test_carry_mfu_is_consistent(
    n_params: float,
    batch: float,
    m: float,
    phi: float,
    mp: int,
    network: dict[str, Any],
    ref_replicas: int,
    replicas: int,
) -> None:
    """Carrying to the reference scale returns the reference; carrying a result back returns
    the start; a carried MFU never exceeds the local MFU (reached at one replica)."""
    kw = {
        "params": n_params,
        "global_batch_tokens": batch,
        "overlap": phi,
        "model_parallel_chips": mp,
        **network,
    }
    n_ref, n = mp * ref_replicas, mp * replicas
    there = float(perf.carry_mfu(m, n_ref, n, **kw))
    if np.isnan(there):  # the reference is inconsistent with the model: nan, never clipped
        local = float(perf.local_mfu(m, n_ref, **kw))
        assert np.isnan(local) or local > 1.0
        return
    assert abs(float(perf.carry_mfu(m, n_ref, n_ref, **kw)) - m) <= 1e-9 * m
    assert 0.0 < there <= float(perf.local_mfu(m, n_ref, **kw)) * (1 + ROUNDING)
    back = float(perf.carry_mfu(there, n, n_ref, **kw))
    assert abs(back - m) <= 1e-9 * m


@given(
    params,
    mfu,
    layout,
    networks(),
    st.floats(64.0, 65536.0),
    st.floats(5e5, 2e7),
    st.floats(128.0, 8192.0),
    st.floats(0.5, 0.95),
    st.lists(st.integers(1, 100_000), min_size=1, max_size=8),
)
def test_mfu_at_scale_is_bounded_by_the_reference_over_the_floor(
    n_params: float,
    m: float,
    mp: int,
    network: dict[str, Any],
    chips_ref: float,
    base: float,
    per_chip: float,
    floor: float,
    chips: list[int],
) -> None:
    """Over wide model, network and scale ranges: every MFU is finite, positive and at
    most mfu_ref / eta* (the floor on the reference's efficiency), never a nan."""
    got = perf.mfu_at_scale(
        m,
        np.array(chips, dtype=float),
        params=n_params,
        chips_ref=chips_ref,
        params_ref=1.75e11,
        model_parallel_chips=float(mp),
        batch=perf.BatchPrior(
            base_tokens=base,
            tokens_per_chip=per_chip,
            ceiling_tokens=6e7,
            reference_efficiency=floor,
        ),
        layout=lambda g: {
            "pipeline_chips": np.maximum(np.asarray(g, dtype=float) / 8.0, 1.0),
            "micro_batch_tokens": 4096.0,
            "virtual_stages": 1.0,
        },
        network={**network, "overlap": 0.0},
    )
    assert np.all(np.isfinite(got))
    assert np.all(got > 0.0)
    assert np.all(got <= max(m / floor, m) * (1 + ROUNDING))
