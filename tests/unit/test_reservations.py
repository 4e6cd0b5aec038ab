"""Reservation semantics (issue 16, item 3): a commitment is paid for its whole term, used or
not; a run shorter than the term pays the idle rest unless the user says the capacity is
reused, through ``Pool.term_share`` (an explicit assumption: only that share is charged)."""

from __future__ import annotations

import numpy as np
import pytest

import accelsim as acs
from accelsim.catalog import Pricing
from accelsim.models.cost import HOURS_PER_YEAR

CHIP, PROVIDER = "a100-80gb", "aws"


def rate(pricing: Pricing) -> float:
    offer = acs.catalog.price(CHIP, provider=PROVIDER, pricing=pricing)
    assert offer.usd_per_chip_hour is not None
    return offer.usd_per_chip_hour


def stream(pricing: Pricing, days: float = 30.0, **pool: object) -> acs.Scenario:
    return acs.Scenario(
        name=f"stream-{pricing}",
        workload=acs.JobStream(interarrival_hours=6.0, chips=8, duration_hours=4.0),
        fleet=[acs.Pool(chip=CHIP, count=16, provider=PROVIDER, pricing=pricing, **pool)],  # type: ignore[arg-type]
        horizon_days=days,
    )


def training(pricing: Pricing, **pool: object) -> acs.Scenario:
    return acs.Scenario(
        name=f"train-{pricing}",
        workload=acs.TrainingRun(params=7e9, tokens=1e11),
        fleet=[acs.Pool(chip=CHIP, count=64, provider=PROVIDER, pricing=pricing, **pool)],  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(("pricing", "years"), [("commit_1y", 1.0), ("commit_3y", 3.0)])
def test_a_30_day_window_on_a_commitment_pays_the_whole_term(
    pricing: Pricing, years: float
) -> None:
    res = acs.simulate(stream(pricing), runs=6, seed=1)
    assert np.all(res.samples("held_hours_pool0") <= 30 * 24)
    np.testing.assert_allclose(
        res.samples("hardware_cost_usd"), 16 * rate(pricing) * years * HOURS_PER_YEAR, rtol=1e-12
    )


def test_the_same_window_on_demand_pays_only_the_held_hours() -> None:
    fixed = stream("on_demand").replace("assumptions.price_change_per_year", 0.0)
    res = acs.simulate(fixed, runs=6, seed=1)
    np.testing.assert_allclose(
        res.samples("hardware_cost_usd"),
        16 * rate("on_demand") * res.samples("held_hours_pool0"),
        rtol=1e-12,
    )
    assert np.all(res.samples("hardware_cost_usd") < 16 * rate("on_demand") * HOURS_PER_YEAR)


def test_a_short_training_run_on_commit_1y_pays_365_days_of_reserved_chips() -> None:
    res = acs.simulate(training("commit_1y"), runs=100, seed=2)
    held = res.samples("held_hours")
    assert np.all(held < HOURS_PER_YEAR)
    assert np.all(res.samples("time_to_train_days") < 365)
    np.testing.assert_allclose(
        res.samples("hardware_cost_usd"), 64 * rate("commit_1y") * HOURS_PER_YEAR, rtol=1e-12
    )


def test_term_share_prices_only_the_share_the_user_says_is_theirs() -> None:
    share = 0.25
    res = acs.simulate(training("commit_1y", term_share=share), runs=100, seed=2)
    held = res.samples("held_hours")
    expected = 64 * rate("commit_1y") * np.maximum(held, share * HOURS_PER_YEAR)
    np.testing.assert_allclose(res.samples("hardware_cost_usd"), expected, rtol=1e-12)
    full = acs.simulate(training("commit_1y"), runs=100, seed=2)
    assert np.all(res.samples("hardware_cost_usd") < full.samples("hardware_cost_usd"))


def test_stream_term_share_charges_that_share() -> None:
    res = acs.simulate(stream("commit_1y", term_share=0.5), runs=6, seed=3)
    np.testing.assert_allclose(
        res.samples("hardware_cost_usd"), 16 * rate("commit_1y") * 0.5 * HOURS_PER_YEAR, rtol=1e-12
    )


def test_term_share_is_refused_where_nothing_is_reserved() -> None:
    with pytest.raises(ValueError, match="term_share"):
        acs.Pool(chip=CHIP, count=8, provider=PROVIDER, pricing="on_demand", term_share=0.5)
    with pytest.raises(ValueError, match="term_share=0"):
        acs.Pool(chip=CHIP, count=8, provider=PROVIDER, pricing="commit_1y", term_share=0.0)
