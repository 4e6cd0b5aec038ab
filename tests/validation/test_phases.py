"""A run that changes size (``TrainingRun.phases``): hand-computed compute and chip-hours,
bit-identity with the one-phase run, and the validation at the boundary."""

from __future__ import annotations

import numpy as np
import pydantic
import pytest

import accelsim as acs

_NO_FAILURES = {
    "mfu": 0.4,
    "failure_rate_per_chip_hour": 0.0,
    "instability_events_per_day": 0.0,
    "badput_fraction": 0.0,
    "lead_time_days": 2.0,
    "porting_hours": 0.0,
    "checkpoint_write_hours": 0.05,
    "startup_hours": 0.1,  # paid once, by the first phase
    "price_change_per_year": 0.0,  # fixed prices: the rent is chip-hours x one price
}


def _scenario(
    phases: list[acs.TrainingPhase] | None, count: int = 1024, **assumptions: float
) -> acs.Scenario:
    return acs.Scenario(
        name="phased",
        workload=acs.TrainingRun(params=70e9, tokens=2e12, phases=phases),
        fleet=[acs.Pool(chip="h100-sxm", count=count, provider="aws")],
        assumptions=acs.Assumptions(**assumptions),
    )


def test_two_phases_by_hand() -> None:
    """Oracle: each phase 6·N·D·share / (chips · peak · MFU), the run's startup once on the
    first phase; chip-hours sum chips x hours."""
    phases = [
        acs.TrainingPhase(chips=256, token_share=0.25),
        acs.TrainingPhase(chips=1024, token_share=0.75),
    ]
    res = acs.simulate(_scenario(phases, **_NO_FAILURES), runs=16, seed=3)
    peak = acs.catalog.chip("h100-sxm").bf16_tflops * 1e12
    flops = 6 * 70e9 * 2e12
    h1 = flops * 0.25 / (256 * peak * 0.4) / 3600
    h2 = flops * 0.75 / (1024 * peak * 0.4) / 3600
    np.testing.assert_allclose(res.samples("compute_days"), (h1 + h2) / 24, rtol=1e-12)
    # no failure: each phase is one segment ending with a save (the next phase reshards)
    # and the run's startup once, on the first phase's chips
    np.testing.assert_allclose(
        res.samples("training_days"), (h1 + h2 + 2 * 0.05 + 0.1) / 24, rtol=1e-12
    )
    np.testing.assert_allclose(
        res.samples("chip_hours"), 256 * (h1 + 0.05 + 0.1) + 1024 * (h2 + 0.05), rtol=1e-12
    )
    np.testing.assert_allclose(res.samples("mfu"), 0.4, rtol=1e-12)
    assert np.all(res.samples("interruptions") == 0)
    assert np.all(res.samples("finished") == 1)
    # the pool is held whole: the rent is the full pool over the whole training
    rate = res.samples("hardware_cost_usd") / (1024 * (h1 + h2 + 2 * 0.05 + 0.1))
    np.testing.assert_allclose(rate, rate[0], rtol=1e-12)
    whole = acs.simulate(_scenario(None, **_NO_FAILURES), runs=16, seed=3)
    per_chip_hour = whole.samples("hardware_cost_usd") / whole.samples("chip_hours")
    np.testing.assert_allclose(rate, per_chip_hour, rtol=1e-12)


def test_fewer_chips_take_longer_with_failures() -> None:
    """With failures, a phase on fewer chips takes longer and is interrupted less often."""
    few = [
        acs.TrainingPhase(chips=256, token_share=0.5),
        acs.TrainingPhase(chips=1024, token_share=0.5),
    ]
    a = acs.simulate(_scenario(few, mfu=0.4, failure_rate_per_chip_hour=1e-4), runs=400, seed=5)
    b = acs.simulate(_scenario(None, mfu=0.4, failure_rate_per_chip_hour=1e-4), runs=400, seed=5)
    assert a.samples("compute_days").mean() > b.samples("compute_days").mean()
    assert np.all(np.isfinite(a.samples("training_days")))
    assert np.all(a.samples("training_days") >= a.samples("compute_days"))
    assert a.samples("chip_hours").mean() < 1024 * 24 * a.samples("training_days").mean()


@pytest.mark.parametrize("assumptions", [{}, _NO_FAILURES, {"failure_rate_per_chip_hour": 1e-3}])
def test_no_phases_and_one_whole_phase_are_bit_identical(assumptions: dict[str, float]) -> None:
    """One phase of share 1 on the whole pool is the run without phases, bit for bit."""
    one = [acs.TrainingPhase(chips=1024, token_share=1.0)]
    a = acs.simulate(_scenario(None, **assumptions), runs=64, seed=11)
    b = acs.simulate(_scenario(one, **assumptions), runs=64, seed=11)
    for metric in a.metrics:
        np.testing.assert_array_equal(a.samples(metric), b.samples(metric), err_msg=metric)


def test_horizon_applies_to_the_total() -> None:
    """Two phases each shorter than the horizon but together longer are not finished."""
    phases = [
        acs.TrainingPhase(chips=8, token_share=0.5),
        acs.TrainingPhase(chips=8, token_share=0.5),
    ]
    peak = acs.catalog.chip("h100-sxm").bf16_tflops * 1e12
    each_days = 6 * 1e9 * 1e11 * 0.5 / (8 * peak * 0.4) / 86400
    s = acs.Scenario(
        name="long",
        workload=acs.TrainingRun(
            params=1e9, tokens=1e11, phases=phases, horizon_days=1.5 * each_days
        ),
        fleet=[acs.Pool(chip="h100-sxm", count=8, provider="aws")],
        assumptions=acs.Assumptions(**_NO_FAILURES),
    )
    res = acs.simulate(s, runs=8, seed=2)
    assert np.all(res.samples("finished") == 0)
    np.testing.assert_allclose(res.samples("training_days"), 1.5 * each_days, rtol=1e-12)
    np.testing.assert_allclose(res.samples("chip_hours"), 8 * 36 * each_days, rtol=1e-12)


@pytest.mark.parametrize(
    ("phases", "field"),
    [
        ([], "phases"),
        ([{"chips": 8, "token_share": 0.5}, {"chips": 8, "token_share": 0.4}], "token_share"),
        ([{"chips": 0, "token_share": 1.0}], "chips"),
        ([{"chips": 8, "token_share": 0.0}, {"chips": 8, "token_share": 1.0}], "token_share"),
        ([{"chips": 8, "token_share": 1 / 17}] * 17, "phases"),
    ],
)
def test_invalid_phases_are_refused(phases: list[dict[str, float]], field: str) -> None:
    with pytest.raises(pydantic.ValidationError, match=field):
        acs.TrainingRun(params=7e9, tokens=1e11, phases=phases)


def test_phase_beyond_the_pool_is_refused() -> None:
    with pytest.raises(pydantic.ValidationError, match=r"phases\[1\]\.chips=2048"):
        _scenario(
            [
                acs.TrainingPhase(chips=512, token_share=0.5),
                acs.TrainingPhase(chips=2048, token_share=0.5),
            ]
        )


def test_phases_refuse_the_des() -> None:
    s = _scenario([acs.TrainingPhase(chips=512, token_share=1.0)], **_NO_FAILURES)
    with pytest.raises(ValueError, match=r"workload\.phases"):
        acs.simulate(s, runs=8, seed=1, engine="des")
