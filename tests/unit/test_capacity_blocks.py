"""Capacity blocks (issue 16): a window bought ahead, paid whole whether used or not.

``Pool(pricing="capacity_block", block_days=N)`` buys windows of ``N`` days at the offer's
price per chip-hour; ``N`` must be a length the offer sells (AWS: 1-14 d, then weekly to
182 d). A run that outlasts its window buys consecutive windows of the same length, each
paid whole. The oracle is the hand-computed bill: chips x price x 24 x days bought.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

import accelsim as acs
from accelsim.catalog import BlockLengths, BlockTerms, Offer
from accelsim.engines._pricing import reserved_term_hours

CHIP, PROVIDER = "h100-sxm", "aws"


def rate() -> float:
    offer = acs.catalog.price(CHIP, provider=PROVIDER, pricing="capacity_block")
    assert offer.usd_per_chip_hour is not None
    return offer.usd_per_chip_hour


def block_pool(days: int, count: int = 64, **extra: object) -> acs.Pool:
    return acs.Pool(
        chip=CHIP,
        count=count,
        provider=PROVIDER,
        pricing="capacity_block",
        block_days=days,
        **extra,  # type: ignore[arg-type]
    )


def stream(days: float, block_days: int, **extra: object) -> acs.Scenario:
    """A shared fleet held exactly ``days`` (no lead time): the held hours are known."""
    return acs.Scenario(
        name="block-stream",
        workload=acs.JobStream(interarrival_hours=6.0, chips=8, duration_hours=4.0),
        fleet=[block_pool(block_days, count=16, **extra)],
        horizon_days=days,
        assumptions=acs.Assumptions(lead_time_days=0),
    )


def test_a_10_day_run_in_a_14_day_block_pays_14_days() -> None:
    res = acs.simulate(stream(10.0, 14), runs=4, seed=1)
    np.testing.assert_allclose(res.samples("held_hours_pool0"), 10 * 24, rtol=1e-12)
    # by hand: 16 chips x $/chip-h x 14 d x 24 h, not the 10 days held
    np.testing.assert_allclose(res.samples("hardware_cost_usd"), 16 * rate() * 14 * 24, rtol=1e-12)


def test_a_run_that_outlasts_its_block_buys_consecutive_blocks() -> None:
    res = acs.simulate(stream(17.0, 14), runs=4, seed=1)
    # 17 days need two 14-day blocks: 28 days paid
    np.testing.assert_allclose(res.samples("hardware_cost_usd"), 16 * rate() * 28 * 24, rtol=1e-12)
    exact = acs.simulate(stream(14.0, 14), runs=4, seed=1)
    # a run that ends exactly at the window's end buys one block, not two
    np.testing.assert_allclose(
        exact.samples("hardware_cost_usd"), 16 * rate() * 14 * 24, rtol=1e-12
    )


def test_a_training_run_pays_whole_blocks_of_its_held_hours() -> None:
    scenario = acs.Scenario(
        name="block-train",
        workload=acs.TrainingRun(params=7e9, tokens=1e11),
        fleet=[block_pool(7)],
    )
    res = acs.simulate(scenario, runs=200, seed=2)
    held = res.samples("held_hours")
    blocks = np.maximum(1, np.ceil(held / (7 * 24) * (1 - 1e-9)))
    np.testing.assert_allclose(
        res.samples("hardware_cost_usd"), 64 * rate() * blocks * 7 * 24, rtol=1e-12
    )
    assert np.all(res.samples("hardware_cost_usd") >= 64 * rate() * held - 1e-6)


def test_term_share_charges_the_users_share_of_the_block() -> None:
    res = acs.simulate(stream(3.0, 14, term_share=0.5), runs=4, seed=1)
    # max(held 3 d, half of 14 d) = 7 d
    np.testing.assert_allclose(res.samples("hardware_cost_usd"), 16 * rate() * 7 * 24, rtol=1e-12)


@given(
    held_days=st.floats(0.0, 3660.0, allow_nan=False),
    block_days=st.sampled_from(
        acs.catalog.price(CHIP, provider=PROVIDER, pricing="capacity_block").block.allowed_days()  # type: ignore[union-attr]
    ),
)
def test_blocks_bought_cover_the_run_and_waste_less_than_one_block(
    held_days: float, block_days: int
) -> None:
    pool = block_pool(block_days)
    term = float(reserved_term_hours(pool, held_days * 24.0))
    window = block_days * 24.0
    assert term >= window  # at least one block
    assert term / window == math.floor(term / window)  # whole blocks
    assert term >= held_days * 24.0 * (1 - 1e-9)  # the run fits
    # never a spare block: every block after the first is needed (one block fewer would not
    # hold the run)
    blocks = round(term / window)
    assert blocks == 1 or (blocks - 1) * window < held_days * 24.0
    assert np.isfinite(term)


@pytest.mark.parametrize("days", [0, 15, 20, 183, 189, -1])
def test_a_window_the_offer_does_not_sell_is_refused_naming_the_lengths(days: int) -> None:
    with pytest.raises(ValidationError, match=r"block_days|greater than or equal"):
        block_pool(days)


@pytest.mark.parametrize("days", [1, 14, 21, 28, 182])
def test_the_windows_the_offer_sells_are_accepted(days: int) -> None:
    assert block_pool(days).block_days == days


def test_block_days_is_required_and_only_for_capacity_blocks() -> None:
    with pytest.raises(ValidationError, match="needs block_days"):
        acs.Pool(chip=CHIP, count=8, provider=PROVIDER, pricing="capacity_block")
    with pytest.raises(ValidationError, match="1-14 d"):
        acs.Pool(chip=CHIP, count=8, provider=PROVIDER, pricing="capacity_block", block_days=15)
    with pytest.raises(ValidationError, match="block_days is the window"):
        acs.Pool(chip=CHIP, count=8, provider=PROVIDER, pricing="on_demand", block_days=14)
    with pytest.raises(ValidationError, match="term_share=0"):
        block_pool(14, term_share=0.0)


def test_block_terms_list_every_allowed_length() -> None:
    terms = acs.catalog.price(CHIP, provider=PROVIDER, pricing="capacity_block").block
    assert terms is not None
    days = terms.allowed_days()
    assert days[:14] == tuple(range(1, 15))
    assert days[14:] == tuple(range(21, 183, 7))
    assert days[-1] == 182


def test_block_lengths_and_offer_fields_are_checked() -> None:
    with pytest.raises(ValidationError, match="max_days"):
        BlockLengths(min_days=14, max_days=7)
    with pytest.raises(ValidationError, match="whole number of steps"):
        BlockLengths(min_days=7, max_days=20, step_days=7)
    terms = BlockTerms(
        lengths=(BlockLengths(min_days=1, max_days=3),), source="https://x.org", as_of="2025-01-01"
    )
    base = {
        "provider": "x",
        "chip": CHIP,
        "usd_per_chip_hour": 2.0,
        "as_of": "2025-01-01",
        "source": "https://x.org",
    }
    with pytest.raises(ValidationError, match="needs block"):
        Offer(**base, pricing="capacity_block")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="capacity_block offers only"):
        Offer(**base, pricing="on_demand", block=terms)  # type: ignore[arg-type]
    assert Offer(**base, pricing="capacity_block", block=terms).block == terms  # type: ignore[arg-type]


def test_credits_cover_a_block_over_its_window() -> None:
    base = stream(10.0, 14)
    scenario = acs.Scenario(
        name=base.name,
        workload=base.workload,
        fleet=base.fleet,
        horizon_days=base.horizon_days,
        assumptions=base.assumptions,
        credits=[acs.Credit(usd=1e9)],
    )
    res = acs.simulate(scenario, runs=4, seed=1)
    # a credit larger than the bill pays all of the 14-day block
    np.testing.assert_allclose(res.samples("credits_usd"), -res.samples("hardware_cost_usd"))


def test_the_report_names_the_window_a_block_is_paid_by() -> None:
    from accelsim.report._assumptions import prices

    scenario = stream(3.0, 14)
    res = acs.simulate(scenario, runs=2, seed=1)
    (row,) = prices({"block": res}, {"block": scenario})
    assert row.pricing == "capacity_block"
    assert row.price == f"${rate():,.2f} per chip-hour, in 14-day blocks paid whole"
    training = acs.Scenario(
        name="block-train", workload=acs.TrainingRun(params=7e9, tokens=1e11), fleet=[block_pool(7)]
    )
    info_only = acs.simulate(training, runs=2, seed=1)
    (unnamed,) = prices({"t": info_only}, {})  # from the result's info: the window is unknown
    assert unnamed.price.endswith(", in blocks paid whole")


def test_the_cli_price_listing_names_the_windows_of_each_block(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from accelsim.cli import main

    assert main(["catalog", "prices", "--provider", "aws"]) == 0
    out = capsys.readouterr().out
    blocks = acs.catalog.offers(provider="aws", pricing="capacity_block")
    assert blocks
    for offer in blocks:
        assert offer.block is not None
        line = f"capacity-block windows of aws {offer.chip}: {offer.block.describe()}"
        assert line in out
    assert main(["catalog", "prices", "--provider", "gcp"]) == 0
    assert "capacity-block windows" not in capsys.readouterr().out  # GCP sells none here
