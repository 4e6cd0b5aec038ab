"""The tensor-parallel term of the training scaling model (issue 29): Megatron-style
activation collectives against the closed-form ring all-reduce, and how
:func:`accelsim.models.perf.mfu_at_scale` carries them between tensor layouts."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from accelsim.catalog import builtin_catalog, scaling_defaults
from accelsim.engines import pipeline_layout
from accelsim.models import perf
from accelsim.models._perf_tensor import carry_tensor, tensor_over_compute_at_peak
from accelsim.scenario import TrainingRun

EXACT = 1e-12
H100 = {
    "peak_tflops": 989.0,
    "scale_up_domain_chips": 8,
    "scale_up_gbps": 900.0,
    "scale_out_gbps": 50.0,
    "overlap": 0.0,
}


def _ring_allreduce(p: float, size_bytes: float, gbps: float) -> float:
    """Patarasuk & Yuan (2009): 2 (p - 1) / p x bytes / bandwidth."""
    return 2.0 * (p - 1.0) / p * size_bytes / (gbps * 1e9)


@pytest.mark.parametrize("t", [2, 4, 8, 16, 64])
def test_one_collective_is_the_ring_all_reduce(t: int) -> None:
    """One layer, one collective: exactly the ring all-reduce of tokens x d x bytes."""
    got = perf.tensor_parallel_seconds(
        8192, tensor_chips=t, layers=1, d_model=12288, link_gbps=450.0, collectives_per_layer=1
    )
    want = _ring_allreduce(t, 8192 * 12288 * 2.0, 450.0)
    assert float(got) == pytest.approx(want, rel=EXACT)


def test_megatron_layer_is_four_all_reduces_per_layer() -> None:
    """Llama 3 405B per chip of TP 8: 4 all-reduces x 126/16 layers of one micro-batch."""
    d = scaling_defaults()
    got = perf.tensor_parallel_seconds(
        8192,
        tensor_chips=8,
        layers=126 / 16,
        d_model=16384,
        link_gbps=450.0,
        collectives_per_layer=d.tensor_parallel_collectives_per_layer,
        bytes_per_activation=d.activation_bytes,
    )
    want = 4.0 * 126 / 16 * _ring_allreduce(8, 8192 * 16384 * 2.0, 450.0)
    assert float(got) == pytest.approx(want, rel=EXACT)


def test_exposed_share_is_the_closed_form_and_uses_the_slowest_link() -> None:
    """a = 2c(t-1) L d b P / (6 N B); past the 8-GPU domain the ring runs at the NIC."""
    traffic = perf.TensorTraffic(collectives_per_layer=4.0, overlap=0.0, bytes_per_activation=2.0)
    model = {"layers": 126.0, "d_model": 16384.0}
    inside = tensor_over_compute_at_peak(405e9, {"tensor_chips": 8, **model}, H100, traffic)
    across = tensor_over_compute_at_peak(405e9, {"tensor_chips": 16, **model}, H100, traffic)
    closed = 2 * 4 * 7 * 126 * 16384 * 2 * 989e12 / (6 * 405e9 * 450e9)
    assert float(inside) == pytest.approx(closed, rel=EXACT)
    closed16 = 2 * 4 * 15 * 126 * 16384 * 2 * 989e12 / (6 * 405e9 * 50e9)
    assert float(across) == pytest.approx(closed16, rel=EXACT)
    half = perf.TensorTraffic(collectives_per_layer=4.0, overlap=0.5, bytes_per_activation=2.0)
    hidden = tensor_over_compute_at_peak(405e9, {"tensor_chips": 8, **model}, H100, half)
    assert float(hidden) == pytest.approx(0.5 * closed, rel=EXACT)
    assert float(tensor_over_compute_at_peak(405e9, {}, H100, traffic)) == 0.0


def _mfu(
    chips: float,
    mp: float,
    layout: Any,
    tensor: perf.TensorTraffic | None,
    network: dict[str, float] = H100,
) -> float:
    batch = perf.BatchPrior(base_tokens=4e6, tokens_per_chip=1024.0, ceiling_tokens=6e7)
    return float(
        perf.mfu_at_scale(
            0.40,
            chips,
            params=70e9,
            chips_ref=4096.0,
            params_ref=1.75e11,
            model_parallel_chips=mp,
            batch=batch,
            layout=layout,
            network=network,
            tensor=tensor,
        )
    )


def _layout(tensor_cap: float) -> Any:
    def layout(group: Any) -> dict[str, Any]:
        t = np.minimum(np.asarray(group, dtype=float), tensor_cap)
        return {
            "pipeline_chips": np.maximum(np.asarray(group) / t, 1.0),
            "micro_batch_tokens": 4096.0,
            "virtual_stages": 4.0,
            "tensor_chips": t,
            "layers": 80.0,
            "d_model": 8192.0,
        }

    return layout


@pytest.mark.parametrize("chips", [16.0, 512.0, 4096.0, 32768.0])
def test_same_tensor_layout_changes_nothing(chips: float) -> None:
    """Reference and run share the tensor degree and link: the carried MFU is the one
    without the term (it was inside the reference MFU already)."""
    traffic = perf.TensorTraffic()
    with_term = _mfu(chips, 16.0, _layout(8.0), traffic)
    without = _mfu(chips, 16.0, _layout(8.0), None)
    assert with_term == pytest.approx(without, rel=EXACT)


def test_a_smaller_tensor_group_off_the_network_gains_by_the_closed_form() -> None:
    """TP 16 across two 8-GPU nodes (400 GB/s NICs) at the reference, TP 8 inside NVLink
    for a run of one node: the run's local MFU is mu_c / (1 + a' mu_c) with
    mu_c = mu / (1 - a mu)."""
    traffic = perf.TensorTraffic()
    layout = _layout(16.0)
    net = {**H100, "scale_out_gbps": 400.0}
    model = {"layers": 80.0, "d_model": 8192.0}
    a16 = tensor_over_compute_at_peak(70e9, {"tensor_chips": 16.0, **model}, net, traffic)
    a8 = tensor_over_compute_at_peak(70e9, {"tensor_chips": 8.0, **model}, net, traffic)
    assert float(a16) > float(a8) > 0.0
    run = _mfu(8.0, 16.0, layout, traffic, net)
    before = _mfu(8.0, 16.0, layout, None, net)
    # 8 chips, one replica (the group shrinks to the run): no data-parallel traffic, and
    # the pipeline of 1 stage has no bubble, so the MFU is the carried local MFU itself.
    mu = before
    compute_only = mu / (1.0 - float(a16) * mu)
    assert run == pytest.approx(compute_only / (1.0 + float(a8) * compute_only), rel=1e-9)
    assert run > before


def test_carry_tensor_flags_a_reference_that_cannot_hold_its_traffic() -> None:
    """a mu >= 1: no compute-only MFU explains the reference; nan, never a number."""
    got = carry_tensor(np.asarray(0.5), np.asarray(2.5), np.asarray(0.1))
    assert np.isnan(got)


def test_engine_layout_keeps_tensor_parallelism_inside_the_domain() -> None:
    """H100: TP 8 in the 8-GPU node, 126 layers of width 16,384; TPU v5p: the whole
    group on ICI; width from N = 12 L d^2 when not given."""
    cat = builtin_catalog()
    work = TrainingRun(params=405e9, tokens=1e12, layers=126, d_model=16384, seq_len=8192)
    h100 = pipeline_layout(work, cat.chip("h100-sxm"), np.asarray(128.0), cat)
    assert float(h100["tensor_chips"]) == 8.0
    assert float(h100["layers"]) == 126.0
    assert float(h100["d_model"]) == 16384.0
    v5p = pipeline_layout(work, cat.chip("tpu-v5p"), np.asarray(256.0), cat)
    assert float(v5p["tensor_chips"]) == 256.0
    bare = pipeline_layout(TrainingRun(params=7e9, tokens=1e12), cat.chip("h100-sxm"),
                           np.asarray(1.0), cat)  # fmt: skip
    width, depth = float(bare["d_model"]), float(bare["layers"])
    assert 12.0 * depth * width**2 == pytest.approx(7e9, rel=EXACT)


def test_a_reference_its_tensor_traffic_cannot_explain_keeps_the_reference_mfu() -> None:
    """TP 16 over 50 GB/s NICs costs 7x compute at peak (a = 7.4): no compute-only MFU in
    (0, 1] gives 0.40 there, so the run keeps the reference MFU, never nan or above 1."""
    got = _mfu(8.0, 16.0, _layout(16.0), perf.TensorTraffic())
    assert got == 0.40
