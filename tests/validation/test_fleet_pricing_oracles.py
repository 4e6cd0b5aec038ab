"""Every pricing model, priced by hand from the catalog's numbers and the run's own usage.

Oracle: the pricing rules as the docs state them (``models/cost.py`` and
``engines/_pricing.py`` module docstrings, DESIGN.md), written out here apart from the code
with the catalog's published figures read through ``acs.catalog`` (offers, on-prem site,
chip TDP) and each run's drawn inputs read from ``Result.inputs`` (power fraction, PUE,
wages...). The usage each formula prices (chip-hours, held hours, days) comes from the
same result: physics is not under test here, economics is.

Tolerance: 1e-12 relative, float rounding only. Each line is a product or sum of a few
numbers, so any rule change (a missing factor, the wrong price, hours instead of days, a
term not paid whole, energy priced on a cloud pool) is a relative error far above that.
"""

from __future__ import annotations

import numpy as np
import pytest

import accelsim as acs
from accelsim.catalog import Pricing
from accelsim.errors import OfferNotFoundError

HOURS_PER_YEAR = 365.25 * 24.0  # Julian year, the convention of terms and lives (cost.py)
HOURS_PER_MONTH = HOURS_PER_YEAR / 12.0
RTOL = 1e-12
RUNS = 12


def _rate(chip: str, provider: str, pricing: Pricing) -> float:
    offer = acs.catalog.price(chip, provider=provider, pricing=pricing)
    assert offer.usd_per_chip_hour is not None
    return offer.usd_per_chip_hour


def _training(
    chip: str, provider: str, pricing: Pricing, count: int = 64, **pool: object
) -> acs.Result:
    scenario = acs.Scenario(
        name=f"{chip}-{provider}-{pricing}",
        workload=acs.TrainingRun(params=7e9, tokens=2e11),
        fleet=[acs.Pool(chip=chip, count=count, provider=provider, pricing=pricing, **pool)],  # type: ignore[arg-type]
    )
    return acs.simulate(scenario, runs=RUNS, seed=11)


def _moved(res: acs.Result, start_days: np.ndarray, end_days: np.ndarray) -> np.ndarray:
    """Mean of (1 + g)**t over the usage window [start, end] (years), g the run's drawn
    assumptions.price_change_per_year: ((1+g)**b - (1+g)**a) / ((b - a) ln(1+g))."""
    g = res.inputs["assumptions.price_change_per_year"]
    a, b = start_days / 365.25, end_days / 365.25
    return ((1 + g) ** b - (1 + g) ** a) / ((b - a) * np.log(1 + g))


def _cloud_energy_kwh(res: acs.Result, chip: str) -> np.ndarray:
    """kWh = chip-hours x TDP x (draw + host share of TDP) x PUE / 1000 (cloud priors)."""
    tdp = acs.catalog.chip(chip).tdp_watts
    power = res.inputs["priors.power_fraction_of_tdp"]
    host = res.inputs["priors.host_power_fraction_of_tdp"]
    return res.samples("chip_hours") * tdp * (power + host) * res.inputs["assumptions.pue"] / 1e3


def _check_common_lines(res: acs.Result) -> None:
    """Engineering, delay, emissions and the TCO, priced from the run's drawn inputs."""
    s, x = res.samples, res.inputs
    np.testing.assert_allclose(
        s("engineering_cost_usd"),
        s("engineering_hours") * x["assumptions.engineer_usd_per_hour"],
        rtol=RTOL,
    )
    np.testing.assert_allclose(
        s("delay_cost_usd"), s("time_to_train_days") * x["assumptions.delay_usd_per_day"], rtol=RTOL
    )
    np.testing.assert_allclose(
        s("emissions_kg_co2e"), s("energy_kwh") * x["assumptions.emission_kg_per_kwh"], rtol=RTOL
    )
    parts = (
        s("hardware_cost_usd")
        + s("energy_cost_usd")
        + s("engineering_cost_usd")
        + s("delay_cost_usd")
    )
    np.testing.assert_allclose(s("tco_usd"), parts, rtol=RTOL)


@pytest.mark.parametrize(
    ("chip", "provider", "pricing"),
    [
        ("h100-sxm", "gcp", "on_demand"),
        ("h100-sxm", "gcp", "spot"),
        ("tpu-v5e", "gcp", "on_demand"),
        ("a100-80gb", "aws", "on_demand"),
    ],
)
def test_rental_is_allocated_chip_hours_times_the_offer_price(
    chip: str, provider: str, pricing: Pricing
) -> None:
    """On-demand and spot: hardware = chip-hours x price, the price moved by the drawn yearly
    change and averaged over the training phase; energy reported, priced at 0."""
    res = _training(chip, provider, pricing)
    end = res.samples("time_to_train_days")
    moved = _moved(res, end - res.samples("training_days"), end)
    hardware = res.samples("chip_hours") * _rate(chip, provider, pricing) * moved
    np.testing.assert_allclose(res.samples("hardware_cost_usd"), hardware, rtol=RTOL)
    np.testing.assert_allclose(res.samples("energy_kwh"), _cloud_energy_kwh(res, chip), rtol=RTOL)
    assert np.all(res.samples("energy_cost_usd") == 0.0)
    assert np.all(res.samples("energy_kwh") > 0.0)
    _check_common_lines(res)


@pytest.mark.parametrize(("pricing", "years"), [("commit_1y", 1.0), ("commit_3y", 3.0)])
def test_a_commitment_pays_its_whole_term_for_a_short_run(pricing: Pricing, years: float) -> None:
    """count x committed price x max(held hours, term): a run of weeks pays the full years."""
    res = _training("h100-sxm", "gcp", pricing)
    held = res.samples("held_hours")
    assert np.all(held < years * HOURS_PER_YEAR)  # the case: the term is mostly idle
    want = 64 * _rate("h100-sxm", "gcp", pricing) * np.maximum(held, years * HOURS_PER_YEAR)
    np.testing.assert_allclose(res.samples("hardware_cost_usd"), want, rtol=RTOL)
    assert np.all(res.samples("energy_cost_usd") == 0.0)
    _check_common_lines(res)


def test_a_commitments_term_share_charges_that_share() -> None:
    """``term_share=0.25`` of a 1-year term: a quarter-year of reserved hours, unless the
    run holds the chips longer (then the hours held)."""
    res = _training("h100-sxm", "gcp", "commit_1y", term_share=0.25)
    held = res.samples("held_hours")
    want = 64 * _rate("h100-sxm", "gcp", "commit_1y") * np.maximum(held, 0.25 * HOURS_PER_YEAR)
    np.testing.assert_allclose(res.samples("hardware_cost_usd"), want, rtol=RTOL)


def test_committed_prices_are_discounts_on_demand() -> None:
    """Catalog sanity for every chip and provider selling several terms: spot < on-demand,
    commit_3y <= commit_1y <= on-demand per chip-hour (a longer commitment never costs
    more per hour). A swapped or mistyped offer in the data breaks it."""
    checked = 0
    for chip_id in acs.catalog.chips():
        for provider in acs.catalog.price_sheets():
            rates: dict[str, float] = {}
            for pricing in ("on_demand", "spot", "commit_1y", "commit_3y"):
                try:
                    rates[pricing] = _rate(chip_id, provider, pricing)  # type: ignore[arg-type]
                except OfferNotFoundError:  # not sold: nothing to compare
                    continue
            if "on_demand" not in rates:
                continue
            od = rates["on_demand"]
            if "spot" in rates:
                assert rates["spot"] < od, (chip_id, provider, rates)
                checked += 1
            if "commit_1y" in rates:
                assert rates["commit_1y"] <= od, (chip_id, provider, rates)
                checked += 1
            if "commit_1y" in rates and "commit_3y" in rates:
                assert rates["commit_3y"] <= rates["commit_1y"], (chip_id, provider, rates)
                checked += 1
    assert checked >= 10  # the catalog has at least this many such pairs


def test_on_prem_is_amortisation_hosting_operations_and_metered_energy() -> None:
    """Owned chips held ``h`` hours (term_share unset: 0, the hours held):

    hardware = n [P h / (L 8766) + (TDP + host) / 1000 kW x r_kW_month x h / 730.5
    + ops_year x h / 8766], energy = chip-hours x (TDP x draw + host) x PUE / 1000 x
    usd/kWh, with P, L from the offer and host, rates and PUE from the on-prem site.
    """
    chip = "h100-sxm"
    res = _training(chip, "on_prem", "on_prem")
    offer = acs.catalog.price(chip, provider="on_prem", pricing="on_prem")
    site = acs.catalog.site("on_prem")
    tdp = acs.catalog.chip(chip).tdp_watts
    assert offer.purchase_usd_per_chip is not None
    assert offer.amortization_years is not None
    h = res.samples("held_hours")
    capex = offer.purchase_usd_per_chip * h / (offer.amortization_years * HOURS_PER_YEAR)
    hosting = (tdp + site.host_watts_per_chip) / 1e3 * site.hosting_usd_per_kw_month
    hosting = hosting * h / HOURS_PER_MONTH
    ops = site.ops_usd_per_chip_year * h / HOURS_PER_YEAR
    np.testing.assert_allclose(
        res.samples("hardware_cost_usd"), 64 * (capex + hosting + ops), rtol=RTOL
    )
    draw = res.inputs["priors.power_fraction_of_tdp"]
    pue = res.inputs["assumptions.pue"]
    kwh = res.samples("chip_hours") * (tdp * draw + site.host_watts_per_chip) * pue / 1e3
    np.testing.assert_allclose(res.samples("energy_kwh"), kwh, rtol=RTOL)
    np.testing.assert_allclose(res.samples("energy_cost_usd"), kwh * site.usd_per_kwh, rtol=RTOL)
    assert np.all(pue == site.pue)  # the site's PUE when the user sets none
    _check_common_lines(res)


def test_on_prem_electricity_price_and_pue_set_by_the_user_are_used() -> None:
    """A user's electricity price and PUE replace the site's, for energy only."""
    chip = "h100-sxm"
    scenario = acs.Scenario(
        name="owned",
        workload=acs.TrainingRun(params=7e9, tokens=2e11),
        fleet=[acs.Pool(chip=chip, count=64, provider="on_prem", pricing="on_prem")],
        assumptions=acs.Assumptions(electricity_usd_per_kwh=0.2, pue=1.1),
    )
    res = acs.simulate(scenario, runs=RUNS, seed=11)
    site = acs.catalog.site("on_prem")
    tdp = acs.catalog.chip(chip).tdp_watts
    draw = res.inputs["priors.power_fraction_of_tdp"]
    kwh = res.samples("chip_hours") * (tdp * draw + site.host_watts_per_chip) * 1.1 / 1e3
    np.testing.assert_allclose(res.samples("energy_kwh"), kwh, rtol=RTOL)
    np.testing.assert_allclose(res.samples("energy_cost_usd"), 0.2 * kwh, rtol=RTOL)


@pytest.mark.parametrize("block_days", [1, 7, 14, 28])
def test_a_capacity_block_pays_whole_windows_covering_the_hours_held(block_days: int) -> None:
    """count x block price x k windows of ``block_days``, k the fewest (>= 1) that cover
    the hours held, each paid whole (the assumption of ``reserved_term_hours``)."""
    res = _training("h200", "aws", "capacity_block", count=64, block_days=block_days)
    held = res.samples("held_hours")
    window = 24.0 * block_days
    blocks = np.maximum(1.0, np.ceil(held / window))
    want = 64 * _rate("h200", "aws", "capacity_block") * blocks * window
    np.testing.assert_allclose(res.samples("hardware_cost_usd"), want, rtol=RTOL)
    assert np.all(blocks * window >= held)
    assert np.all((blocks - 1) * window < held)
    _check_common_lines(res)


def test_a_mixed_stream_fleet_pays_each_pool_by_its_own_rule() -> None:
    """A commitment (whole term, used or not) next to an on-demand pool (held hours) and
    an on-prem pool (amortisation, hosting and operations over the hours held, energy of
    its allocated chip-hours): hardware and energy are the sums of the three hand-priced
    pools, and the TCO their sum plus the (free) wait."""
    fleet = [
        acs.Pool(chip="a100-80gb", count=16, provider="aws", pricing="commit_1y"),
        acs.Pool(chip="h100-sxm", count=8, provider="gcp", pricing="on_demand"),
        acs.Pool(chip="h100-sxm", count=8, provider="on_prem", pricing="on_prem"),
    ]
    scenario = acs.Scenario(
        name="mixed",
        workload=acs.JobStream(interarrival_hours=3.0, chips=4, duration_hours=6.0),
        fleet=fleet,
        horizon_days=20,
    )
    res = acs.simulate(scenario, runs=4, seed=5)
    s = res.samples
    commit = (
        16
        * _rate("a100-80gb", "aws", "commit_1y")
        * np.maximum(s("held_hours_pool0"), HOURS_PER_YEAR)
    )
    held = s("held_hours_pool1")
    od = 8 * _rate("h100-sxm", "gcp", "on_demand") * held * _moved(res, 0.0 * held, held / 24)
    offer = acs.catalog.price("h100-sxm", provider="on_prem", pricing="on_prem")
    site = acs.catalog.site("on_prem")
    tdp = acs.catalog.chip("h100-sxm").tdp_watts
    assert offer.purchase_usd_per_chip is not None
    assert offer.amortization_years is not None
    h = s("held_hours_pool2")
    owned = 8 * (
        offer.purchase_usd_per_chip * h / (offer.amortization_years * HOURS_PER_YEAR)
        + (tdp + site.host_watts_per_chip) / 1e3 * site.hosting_usd_per_kw_month * h
        / HOURS_PER_MONTH
        + site.ops_usd_per_chip_year * h / HOURS_PER_YEAR
    )  # fmt: skip
    np.testing.assert_allclose(s("hardware_cost_usd"), commit + od + owned, rtol=RTOL)
    draw = res.inputs["priors.power_fraction_of_tdp"]
    owned_kwh = s("allocated_chip_hours_pool2") * (tdp * draw + site.host_watts_per_chip)
    owned_kwh = owned_kwh * site.pue / 1e3  # no user PUE: the site's
    np.testing.assert_allclose(s("energy_cost_usd"), owned_kwh * site.usd_per_kwh, rtol=RTOL)
    assert np.all(s("wait_cost_usd") == 0.0)  # unset price of waiting: free
    np.testing.assert_allclose(
        s("tco_usd"), s("hardware_cost_usd") + s("energy_cost_usd"), rtol=RTOL
    )
    np.testing.assert_allclose(
        s("usd_per_completed_job"), s("tco_usd") / np.maximum(s("jobs_completed"), 1.0), rtol=RTOL
    )


def test_a_priced_wait_is_the_queue_area_times_the_price() -> None:
    """``wait_usd_per_job_hour`` x the job-hours spent queueing (the queue-length area), on
    a fleet at 86 % offered load."""
    scenario = acs.Scenario(
        name="busy",
        workload=acs.JobStream(interarrival_hours=1.0, chips=4, duration_hours=6.0),
        fleet=[acs.Pool(chip="h100-sxm", count=28, provider="gcp", pricing="on_demand")],
        horizon_days=10,
        assumptions=acs.Assumptions(wait_usd_per_job_hour=12.5),
    )
    res = acs.simulate(scenario, runs=4, seed=5)
    wait = res.samples("queue_wait_job_hours")
    assert np.all(wait > 0.0)  # a loaded fleet: the line is exercised
    np.testing.assert_allclose(res.samples("wait_cost_usd"), 12.5 * wait, rtol=RTOL)
    np.testing.assert_allclose(
        res.samples("tco_usd"),
        res.samples("hardware_cost_usd") + res.samples("energy_cost_usd") + 12.5 * wait,
        rtol=RTOL,
    )
