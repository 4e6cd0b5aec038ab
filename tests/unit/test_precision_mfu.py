"""Precision-aware MFU (issue 14 item 8): the BF16 MFU ceilings carried to a precision's peak.

An FP8 run on a chip with twice the BF16 peak trains ``1 + g`` times as fast as in BF16
(``g``: ``priors.mfu_precision_gain.fp8``), not twice; a chip that lists FP8 equal to BF16
(TPU v5p, v6e) trains exactly as in BF16.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import accelsim as acs
from accelsim.catalog import builtin_catalog
from accelsim.dists import Fixed
from accelsim.engines.training._inputs import precision_mfu_factor

GAIN = "priors.mfu_precision_gain.fp8"


def _scenario(precision: str, chip: str, provider: str, chips: int) -> acs.Scenario:
    return acs.Scenario(
        name=f"{chip}-{precision}",
        workload=acs.TrainingRun(params=70e9, tokens=2e12, precision=precision),  # type: ignore[arg-type]
        fleet=[acs.Pool(chip=chip, count=chips, provider=provider)],
        assumptions=acs.Assumptions(optimization_hours=200.0),
    )


def _at_reference(chips: int) -> acs.catalog.Catalog:
    """The built-in catalog with the MFU reference configuration fixed at ``chips`` chips
    for the 70B model of ``_scenario``: there ``mfu_at_scale`` is the identity, so the
    run's MFU is the learning curve's."""
    cat = builtin_catalog()
    ref = cat.priors.mfu_reference_chips.model_copy(update={"value": Fixed(value=float(chips))})
    size = cat.priors.mfu_reference_params
    assert size is not None
    size = size.model_copy(update={"value": Fixed(value=70e9)})
    return dataclasses.replace(
        cat,
        # the reference is the run itself: no floor on its efficiency, and no
        # compute-optimal cap on the run's batch that the reference does not have
        scaling=dataclasses.replace(
            cat.scaling, reference_efficiency=0.0, critical_batch_coefficient=1e30
        ),
        priors=cat.priors.model_copy(
            update={"mfu_reference_chips": ref, "mfu_reference_params": size}
        ),
    )


def _delivered(res: acs.Result) -> np.ndarray:
    """Delivered FLOP/s of the fleet, per run (failure-free compute)."""
    return res.samples("training_flops") / (res.samples("compute_days") * 86400.0)


def test_factor_is_the_realised_share_of_the_peak_gain() -> None:
    assert precision_mfu_factor(0.0, 2.0) == 0.5  # no gain realised: same speed, half the MFU
    assert precision_mfu_factor(1.0, 2.0) == 1.0  # the whole peak gain: BF16's MFU
    assert precision_mfu_factor(0.37, 1.0) == 1.0  # the peak does not change: nothing does
    assert precision_mfu_factor(1.0, 0.068) == pytest.approx(1.0)  # FP32 (judgement g = 1)
    g = np.array([0.1, 0.3, 0.6])
    np.testing.assert_allclose(2.0 * precision_mfu_factor(g, 2.0), 1.0 + g)


def test_h100_fp8_delivers_one_plus_gain_times_bf16_not_twice() -> None:
    """Paired runs at the reference scale: FP8 delivers exactly (1 + g) x the BF16 FLOP/s,
    run by run; on average 1 + E[g] (1.32 with the shipped PERT), well below the 2x peak."""
    chips = 1024
    cat = _at_reference(chips)
    bf16 = acs.simulate(_scenario("bf16", "h100-sxm", "aws", chips), runs=400, seed=5, catalog=cat)
    fp8 = acs.simulate(_scenario("fp8", "h100-sxm", "aws", chips), runs=400, seed=5, catalog=cat)
    ratio = _delivered(fp8) / _delivered(bf16)
    g = fp8.inputs[GAIN]
    # carry_mfu inverts its step-time model numerically: the identity holds to ~1e-3
    np.testing.assert_allclose(ratio, 1.0 + g, rtol=2e-3)
    assert GAIN not in bf16.inputs  # BF16 draws nothing new: its answer is unchanged
    expected = 1.0 + cat.priors.mfu_precision_gain["fp8"].dist().expected_value()
    se = g.std(ddof=1) / np.sqrt(g.size)
    assert abs(ratio.mean() - expected) <= 5 * se
    assert ratio.max() < 2.0
    # the MFU is over the FP8 peak: (1 + g) / 2 of the BF16 one
    np.testing.assert_allclose(fp8.samples("mfu"), bf16.samples("mfu") * (1.0 + g) / 2.0, rtol=2e-3)


def test_h100_fp8_is_faster_than_bf16_but_not_twice_at_any_scale() -> None:
    """With the drawn reference scale (the carry across scale at work) the median speedup
    stays between 1 and 2."""
    for chips in (64, 8192):
        bf16 = acs.simulate(_scenario("bf16", "h100-sxm", "aws", chips), runs=400, seed=2)
        fp8 = acs.simulate(_scenario("fp8", "h100-sxm", "aws", chips), runs=400, seed=2)
        median = float(np.median(_delivered(fp8) / _delivered(bf16)))
        assert 1.0 < median < 1.7, (chips, median)


@pytest.mark.parametrize("chip", ["tpu-v5p", "tpu-v6e"])
def test_tpu_fp8_listed_equal_to_bf16_trains_as_bf16(chip: str) -> None:
    """The catalog lists FP8 = BF16 peak on TPU v5p and v6e: FP8 is BF16 bit for bit."""
    cat = builtin_catalog()
    assert cat.chip(chip).peak_tflops("fp8") == cat.chip(chip).bf16_tflops
    bf16 = acs.simulate(_scenario("bf16", chip, "gcp", 256), runs=200, seed=9)
    fp8 = acs.simulate(_scenario("fp8", chip, "gcp", 256), runs=200, seed=9)
    for metric in ("compute_days", "mfu", "training_days", "tco_usd"):
        np.testing.assert_array_equal(fp8.samples(metric), bf16.samples(metric))
    assert GAIN not in fp8.inputs


def test_fp8_on_h100_beats_tpu_v5p_by_less_than_the_peak_ratio_says() -> None:
    """The bias the item removes: H100 FP8 over v5p FP8 was 2 x 989 / 459 x (MFU ratio);
    now it is (1 + g) x 989 / 459 x (MFU ratio), the same as BF16's ratio times 1 + g."""
    h_bf16 = acs.simulate(_scenario("bf16", "h100-sxm", "aws", 256), runs=300, seed=4)
    h_fp8 = acs.simulate(_scenario("fp8", "h100-sxm", "aws", 256), runs=300, seed=4)
    t_fp8 = acs.simulate(_scenario("fp8", "tpu-v5p", "gcp", 256), runs=300, seed=4)
    t_bf16 = acs.simulate(_scenario("bf16", "tpu-v5p", "gcp", 256), runs=300, seed=4)
    before = np.median(2.0 * _delivered(h_bf16) / _delivered(t_fp8))
    now = np.median(_delivered(h_fp8) / _delivered(t_fp8))
    assert now < 0.8 * before
    assert np.median(_delivered(h_fp8) / _delivered(t_bf16)) == pytest.approx(now)


def test_priors_name_every_training_precision() -> None:
    from typing import get_args

    from accelsim.catalog import _priors
    from accelsim.scenario import Precision

    assert get_args(_priors.TrainingPrecision) == get_args(Precision)
    gains = builtin_catalog().priors.mfu_precision_gain
    assert set(gains) == set(get_args(Precision))
    fp8 = gains["fp8"].dist()
    assert float(fp8.ppf(0.0)) > 0.0
    assert float(fp8.ppf(1.0)) < 1.0
