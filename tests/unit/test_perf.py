"""Unit tests of accelsim.models.perf: closed forms, broadcasting, edge values, error text.

Exact formulas are compared at rtol 1e-12 (float rounding of a few operations); the ZeRO
figure is compared at the paper's own rounding (0.05 GB).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from accelsim import catalog
from accelsim._yaml import load_yaml, to_plain
from accelsim.models import perf

EXACT = 1e-12

H100: dict[str, Any] = {
    "peak_tflops": 989.0,
    "scale_up_domain_chips": 8,
    "scale_up_gbps": 900.0,
    "scale_out_gbps": 50.0,
}
V5P: dict[str, Any] = {
    "peak_tflops": 459.0,
    "scale_up_domain_chips": 8960,
    "scale_up_gbps": 1200.0,
    "scale_out_gbps": 6.25,
}
RUN: dict[str, Any] = {"params": 70e9, "global_batch_tokens": 4e6}


def _network(chip: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in chip.items() if k != "peak_tflops"}


# ---------------------------------------------------------------- FLOPs


def test_six_n_d_scalar_and_broadcast() -> None:
    assert float(perf.training_flops(175e9, 300e9)) == pytest.approx(3.15e23, rel=EXACT)
    got = perf.training_flops(np.array([[1e9], [2e9]]), np.array([1e12, 2e12, 3e12]))
    assert got.shape == (2, 3)
    np.testing.assert_allclose(got, 6 * np.outer([1e9, 2e9], [1e12, 2e12, 3e12]), rtol=EXACT)


def test_attention_term_matches_narayanan_without_recomputation() -> None:
    """Oracle: Narayanan et al. (2021) eq. 3 with a forward+backward factor of 3 (72, not 96)
    and no logit layer: 72·B·s·l·h²·(1 + s/(6h)) per iteration, with N = 12·l·h²."""
    layers, hidden, seq, batch = 96, 12288, 2048, 1536
    params = 12 * layers * hidden**2
    tokens = batch * seq
    megatron = 72 * batch * seq * layers * hidden**2 * (1 + seq / (6 * hidden))
    got = perf.training_flops(params, tokens, layers=layers, seq_len=seq, d_model=hidden)
    assert float(got) == pytest.approx(megatron, rel=EXACT)


def test_attention_term_omitted_unless_all_three_are_given() -> None:
    plain = perf.training_flops(7e9, 1e12)
    assert float(perf.training_flops(7e9, 1e12, layers=32, seq_len=4096)) == float(plain)


# ---------------------------------------------------------------- memory


@pytest.mark.parametrize(
    ("sharding", "gigabytes"),
    [("none", 120.0), ("zero1", 31.4), ("zero2", 16.6), ("zero3", 1.9), ("fsdp", 1.9)],
)
def test_zero_paper_figure_1(sharding: perf.Sharding, gigabytes: float) -> None:
    """Oracle: Rajbhandari et al. (2020) fig. 1, Ψ = 7.5B, N_d = 64, K = 12, in GB (1e9 B)
    rounded to 0.1 by the paper, hence the 0.05 GB tolerance."""
    got = float(perf.memory_per_chip_gib(7.5e9, 64, sharding=sharding)) * 2**30 / 1e9
    assert got == pytest.approx(gigabytes, abs=0.05)


def test_memory_broadcasts_and_adds_activations() -> None:
    got = perf.memory_per_chip_gib(
        np.array([7e9, 70e9])[:, None], np.array([8, 64]), sharding="zero3", activation_gib=5.0
    )
    expected = 16 * np.outer([7e9, 70e9], [1 / 8, 1 / 64]) / 2**30 + 5.0
    np.testing.assert_allclose(got, expected, rtol=EXACT)


def test_unknown_sharding_names_the_allowed_ones() -> None:
    with pytest.raises(ValueError, match=r"sharding must be one of .*'zero3'.*got 'zero4'"):
        perf.memory_per_chip_gib(1e9, 8, sharding="zero4")  # type: ignore[arg-type]


def test_min_chips_closed_form_and_edges() -> None:
    # zero3: 16 B/param over n chips <= 80 GiB  ->  n = ceil(16 * 70e9 / (80 * 2**30)) = 14
    assert float(perf.min_chips_to_fit(70e9, 80, sharding="zero3")) == 14.0
    # the replicated 16 B/param of a 70B model never fit in 80 GiB
    assert float(perf.min_chips_to_fit(70e9, 80, sharding="none")) == np.inf
    # a 1B model fits on one chip unsharded
    assert float(perf.min_chips_to_fit(1e9, 80, sharding="none")) == 1.0
    # zero1 keeps 4 B/param replicated: 70B needs 260.8 GiB > 80 GiB, impossible
    assert float(perf.min_chips_to_fit(70e9, 80, sharding="zero1")) == np.inf
    got = perf.min_chips_to_fit(
        70e9, np.array([40.0, 80.0, 141.0]), sharding="fsdp", usable_fraction=0.9
    )
    np.testing.assert_array_equal(got, np.ceil(16 * 70e9 / (0.9 * np.array([40, 80, 141]) * 2**30)))


# ---------------------------------------------------------------- throughput and time


def test_delivered_and_compute_hours() -> None:
    assert float(perf.delivered_tflops(989.0, 0.4)) == pytest.approx(395.6, rel=EXACT)
    hours = perf.compute_hours(3.15e23, np.array([1024, 2048]), 989.0, 0.4)
    np.testing.assert_allclose(
        hours, 3.15e23 / (np.array([1024, 2048]) * 395.6e12) / 3600, rtol=EXACT
    )
    assert hours[0] == pytest.approx(2 * hours[1], rel=EXACT)


# ---------------------------------------------------------------- all-reduce


def test_allreduce_inside_one_domain_is_the_ring() -> None:
    """Oracle: ring all-reduce, 2(n−1)/n · bytes / per-direction bandwidth (Patarasuk & Yuan)."""
    n = np.arange(1, 9)
    got = perf.gradient_allreduce_seconds(n, params=7e9, **_network(H100))
    np.testing.assert_allclose(got, 2 * (n - 1) / n * 14e9 / 450e9, rtol=EXACT)
    assert got[0] == 0.0


def test_allreduce_across_domains_for_large_replicas_is_the_scale_out_ring() -> None:
    """Model parallel over ≥ one domain: replicas talk only over the scale-out network."""
    r = np.array([1.0, 2.0, 16.0])
    got = perf.gradient_allreduce_seconds(
        r * 64, params=405e9, model_parallel_chips=64, bytes_per_grad=4, **_network(H100)
    )
    np.testing.assert_allclose(got, 2 * (r - 1) / r * (405e9 * 4 / 64) / 50e9, rtol=EXACT)


def test_allreduce_is_nan_below_one_replica() -> None:
    got = perf.gradient_allreduce_seconds(
        [4, 8], params=1e9, model_parallel_chips=8, **_network(H100)
    )
    assert np.isnan(got[0])
    assert got[1] == 0.0


def test_crossing_the_domain_boundary_is_a_jump() -> None:
    """At n = d + 1 the all-reduce gains a scale-out hop: the step from d to d + 1 is larger
    than all the growth inside the domain (from 2 to d chips)."""
    t = perf.gradient_allreduce_seconds(np.arange(1, 11), params=7e9, **_network(H100))
    assert t[8] - t[7] > t[7] - t[1] > 0.0


# ---------------------------------------------------------------- scaling efficiency


def test_efficiency_is_one_for_one_replica_and_below_one_beyond() -> None:
    eff = perf.scaling_efficiency([1, 8, 16, 4096], mfu_local=0.45, overlap=0.0, **RUN, **H100)
    assert eff[0] == 1.0
    assert np.all(np.diff(eff) < 0)
    assert np.all((eff > 0) & (eff <= 1))


def test_efficiency_closed_form() -> None:
    """η = C / (C + T − min(φT, 2C/3)) with C = 6NB/(n·P·MFU), in both overlap regimes."""
    n, mu = 4096.0, 0.45
    c = 6 * 70e9 * 4e6 / (n * 989e12 * mu)
    t = float(perf.gradient_allreduce_seconds(n, params=70e9, **_network(H100)))
    for phi in (0.0, 0.3, 1.0):
        expected = c / (c + t - min(phi * t, 2 * c / 3))
        got = float(perf.scaling_efficiency(n, mfu_local=mu, overlap=phi, **RUN, **H100))
        assert got == pytest.approx(expected, rel=EXACT)
    assert t > 2 * c / 3  # so phi = 1.0 above exercised the backward-pass cap


def test_exposed_communication_jumps_past_the_domain() -> None:
    """1/η − 1 (exposed comm over compute) rises by more from d to d + 1 chips than over
    the whole inside of the domain."""
    exposed = (
        1 / perf.scaling_efficiency(np.arange(1, 11), mfu_local=0.45, overlap=0.0, **RUN, **H100)
        - 1
    )
    assert exposed[8] - exposed[7] > exposed[7] - exposed[1]


def test_a_tpu_pod_scales_further_than_nvlink_nodes() -> None:
    """Same model, batch and local MFU at 4,096 chips: the 8,960-chip ICI pod keeps the
    all-reduce on ICI, the 8-GPU NVLink node sends it over 50 GB/s NICs."""
    kw = {"mfu_local": 0.45, "overlap": 0.0, "model_parallel_chips": 8, **RUN}
    assert (
        float(perf.scaling_efficiency(4096, **kw, **V5P))
        > float(perf.scaling_efficiency(4096, **kw, **H100)) + 0.3
    )


def test_overlap_is_an_argument_with_a_catalog_default() -> None:
    """The model reads no file: overlap is required, its sourced default is in the catalog."""
    kw = {"mfu_local": 0.45, **RUN, **H100}
    with pytest.raises(TypeError, match="overlap"):
        perf.scaling_efficiency(2048, **kw)  # type: ignore[call-arg]
    default = catalog.scaling_defaults().overlap
    assert float(perf.scaling_efficiency(2048, overlap=default, **kw)) <= float(
        perf.scaling_efficiency(2048, overlap=1.0, **kw)
    )


def test_full_overlap_hides_small_traffic_completely() -> None:
    eff = perf.scaling_efficiency(16, mfu_local=0.45, overlap=1.0, **RUN, **H100)
    assert float(eff) == 1.0


# ---------------------------------------------------------------- local and carried MFU


LLAMA3: dict[str, Any] = {
    "params": 405e9,
    "global_batch_tokens": 16 * 2**20,
    "model_parallel_chips": 128,
}


@pytest.mark.parametrize("overlap", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("chips_ref", [128, 1024, 16384])
def test_local_mfu_round_trips_through_the_efficiency(overlap: float, chips_ref: int) -> None:
    """Oracle: μ·η(n_ref; μ) = MFU_ref for the μ that local_mfu returns."""
    kw = {"overlap": overlap, **LLAMA3, **H100}
    mu = perf.local_mfu(0.4, chips_ref, **kw)
    back = mu * perf.scaling_efficiency(chips_ref, mfu_local=mu, **kw)
    assert float(back) == pytest.approx(0.4, rel=1e-12)
    assert float(mu) >= 0.4


def test_local_mfu_round_trips_where_the_backward_pass_caps_the_overlap() -> None:
    """70B pure data parallel on 1,024 H100: comm is 0.75 of compute at full MFU, so a
    reference of 0.9 with full overlap puts the hidden part at the 2/3 cap."""
    kw = {"overlap": 1.0, **RUN, **H100}
    mu = perf.local_mfu(0.9, 1024, **kw)
    k_mu = float(perf.gradient_allreduce_seconds(1024, params=70e9, **_network(H100))) / (
        6 * 70e9 * 4e6 / (1024 * 989e12 * float(mu))
    )
    assert k_mu > 2 / 3  # in the capped regime
    back = mu * perf.scaling_efficiency(1024, mfu_local=mu, **kw)
    assert float(back) == pytest.approx(0.9, rel=1e-12)


def test_local_mfu_is_nan_when_no_compute_speed_explains_the_reference() -> None:
    """At 16k H100s of pure DP a 70B model's all-reduce alone exceeds the step time an MFU of
    0.9 would leave, so no local MFU reproduces it."""
    mu = perf.local_mfu(0.9, 16384, overlap=0.0, **RUN, **H100)
    assert np.isnan(mu)


def test_carry_identity_and_direction() -> None:
    kw = {"overlap": 0.0, **RUN, **H100}
    got = perf.carry_mfu(0.4, 1024, np.array([1, 512, 1024, 2048]), **kw)
    assert got[2] == pytest.approx(0.4, rel=1e-12)
    assert got[0] == pytest.approx(float(perf.local_mfu(0.4, 1024, **kw)), rel=1e-12)
    assert got[0] > got[1] > got[2] > got[3]


def test_carry_is_the_ratio_of_efficiencies() -> None:
    """MFU(n) = MFU_ref · η(n)/η(n_ref), both at the local MFU (the brief's definition)."""
    kw = {"overlap": 0.2, "model_parallel_chips": 16, **RUN, **H100}
    mu = perf.local_mfu(0.35, 2048, **kw)
    ratio = perf.scaling_efficiency(8192, mfu_local=mu, **kw) / perf.scaling_efficiency(
        2048, mfu_local=mu, **kw
    )
    assert float(perf.carry_mfu(0.35, 2048, 8192, **kw)) == pytest.approx(
        0.35 * float(ratio), rel=1e-12
    )


def test_carry_is_nan_not_clipped_when_the_reference_is_inconsistent() -> None:
    """A reference MFU whose local MFU would exceed 1 gives nan, never a clipped value."""
    kw = {"overlap": 0.0, **RUN, **H100}
    assert float(perf.local_mfu(0.95, 1024, **kw)) > 1.0
    assert np.isnan(perf.carry_mfu(0.95, 1024, 512, **kw))


def test_carry_broadcasts_over_runs() -> None:
    mfu_ref = np.array([0.3, 0.4, 0.5])
    chips_ref = np.array([1024.0, 512.0, 2048.0])
    got = perf.carry_mfu(
        mfu_ref, chips_ref, 2048, overlap=0.0, model_parallel_chips=8, **RUN, **H100
    )
    assert got.shape == (3,)
    assert np.all(np.isfinite(got))
    assert got[0] < 0.3
    assert got[1] < 0.4
    assert got[2] == pytest.approx(0.5, rel=1e-12)


# ---------------------------------------------------------------- calibrated defaults


def test_scaling_yaml_entries_name_their_source() -> None:
    path = Path(perf.__file__).parents[1] / "catalog" / "data" / "scaling.yaml"
    doc = to_plain(load_yaml(path))
    assert set(doc) == {
        "overlap",
        "layers_per_virtual_stage",
        "micro_batch_sequences",
        "layers_per_d_model",
        "critical_batch_coefficient",
        "critical_batch_exponent",
        "reference_efficiency",
        "tensor_parallel_collectives_per_layer",
        "tensor_parallel_overlap",
        "activation_bytes",
    }
    for entry in doc.values():
        assert entry["note"]
        if entry["assumption"]:
            continue  # a stated judgement: its note says how it was chosen
        assert entry["sources"]
        assert all(s["url"].startswith("https://") and s["as_of"] for s in entry["sources"])
    assert 0.0 <= catalog.scaling_defaults().overlap <= 1.0
    assert catalog.scaling_defaults().layers_per_virtual_stage >= 1.0


def test_bubble_is_megatrons_1f1b_and_interleaved_fraction() -> None:
    """Oracle: Narayanan et al. (2021) sec. 2.2: (p-1)/m for 1F1B, divided by v interleaved."""
    assert float(perf.pipeline_bubble_fraction(32, 8)) == pytest.approx(7 / 32)
    assert float(perf.pipeline_bubble_fraction(32, 8, 4)) == pytest.approx(7 / 128)
    assert float(perf.pipeline_bubble_fraction(5, 1)) == 0.0


def test_bubble_grows_as_the_fixed_batch_spreads_over_more_replicas() -> None:
    """At a fixed 4M-token batch of 4k-token micro-batches, PP 8 inside 64-chip replicas:
    efficiency falls with chips even on a network so fast the all-reduce costs nothing,
    and equals 1/(1 + (p-1)/m) with m = 1024 / replicas."""
    kw = {"params": 70e9, "global_batch_tokens": 4 * 2**20, "mfu_local": 0.5, "overlap": 0.0}
    fast = {"peak_tflops": 989, "scale_up_domain_chips": 8, "scale_up_gbps": 1e12}
    chips = np.array([64.0, 512.0, 4096.0])
    eff = perf.scaling_efficiency(
        chips,
        model_parallel_chips=64,
        pipeline_chips=8,
        micro_batch_tokens=4096,
        scale_out_gbps=1e12,
        **kw,
        **fast,
    )
    m = 1024 / (chips / 64)
    np.testing.assert_allclose(eff, 1 / (1 + 7 / m), rtol=1e-6)
    assert np.all(np.diff(eff) < 0)


def test_local_mfu_round_trips_with_a_pipeline() -> None:
    kw = {"params": 175e9, "global_batch_tokens": 6e6, "overlap": 0.0, **H100}
    pipe = {"pipeline_chips": 8, "micro_batch_tokens": 2048, "virtual_stages": 12}
    mu = perf.local_mfu(0.4, 768, model_parallel_chips=32, **pipe, **kw)
    back = mu * perf.scaling_efficiency(768, mfu_local=mu, model_parallel_chips=32, **pipe, **kw)
    assert float(back) == pytest.approx(0.4, rel=1e-9)


def test_carry_takes_the_reference_batch_and_layout_apart() -> None:
    """With *_ref given, the local MFU comes from the reference's own batch and layout and
    the efficiency from the target's."""
    kw = {"params": 405e9, "overlap": 0.0, **H100}
    mu = perf.local_mfu(0.4, 16384, global_batch_tokens=16e6, model_parallel_chips=128, **kw)
    expected = mu * perf.scaling_efficiency(
        2048, global_batch_tokens=4e6, model_parallel_chips=64, mfu_local=mu, **kw
    )
    got = perf.carry_mfu(
        0.4,
        16384,
        2048,
        global_batch_tokens=4e6,
        model_parallel_chips=64,
        global_batch_tokens_ref=16e6,
        model_parallel_chips_ref=128,
        **kw,
    )
    assert float(got) == pytest.approx(float(expected), rel=1e-12)


def test_chips_without_a_scale_up_link_have_finite_allreduce_time() -> None:
    """L4 (interconnect 0 GB/s, domain 1): all traffic crosses the scale-out network, so
    the scale-up term is 0 rather than 0/0 (found by the scenario property tests)."""
    l4 = {"params": 1e9, "scale_up_domain_chips": 1, "scale_up_gbps": 0.0, "scale_out_gbps": 8.0}
    t = perf.gradient_allreduce_seconds(np.array([1.0, 8.0]), **l4)
    assert np.isfinite(t).all()
    assert t[0] == 0.0
    assert t[1] > 0.0
