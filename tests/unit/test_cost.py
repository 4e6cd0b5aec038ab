"""Unit tests for accelsim.models.cost: hand-computed examples, zeros, arrays, broadcasting."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from accelsim.models.cost import (
    HOURS_PER_MONTH,
    HOURS_PER_YEAR,
    CostBreakdown,
    commitment_cost_usd,
    delay_cost_usd,
    emissions_kg,
    energy_cost_usd,
    energy_kwh,
    engineering_cost_usd,
    hosting_cost_usd,
    onprem_capex_usd,
    ops_cost_usd,
    rental_cost_usd,
)


def test_calendar_conventions() -> None:
    """A Julian year is 365.25·24 = 8766 h and a month a twelfth of it, 730.5 h (exact)."""
    assert HOURS_PER_YEAR == 8766.0
    assert HOURS_PER_MONTH == 730.5


# --- rental ----------------------------------------------------------------------------


def test_rental_1024_h100_for_a_month_on_demand() -> None:
    """1024 chips × 720 h × 3.93 USD/chip-h = 2 897 510.4 USD by hand; rtol 1e-15 (one product
    of exact integers with one rounded price)."""
    assert rental_cost_usd(1024 * 720.0, 3.93) == pytest.approx(2_897_510.4, rel=1e-15)


def test_rental_zero_hours_or_free_costs_nothing() -> None:
    """Either factor zero gives exactly zero."""
    assert np.array_equal(rental_cost_usd([0.0, 100.0], [3.93, 0.0]), [0.0, 0.0])


def test_rental_broadcasts() -> None:
    """Column of chip-hours × row of prices gives the outer product."""
    got = rental_cost_usd(np.array([[1.0], [10.0]]), np.array([2.0, 3.0, 4.0]))
    assert np.array_equal(got, [[2.0, 3.0, 4.0], [20.0, 30.0, 40.0]])


# --- commitment ------------------------------------------------------------------------


def test_commitment_pays_the_whole_term_when_underused() -> None:
    """8 chips × 2 USD/h × 8766 h = 140 256 USD for a 1-year term used 100 h (exact integers)."""
    assert commitment_cost_usd(8, 2.0, 1.0, 100.0) == 140_256.0


def test_commitment_at_least_rental_for_same_hours() -> None:
    """Committed capacity is never cheaper than renting the used hours at the same rate;
    equal once use covers the reserved share."""
    used = np.array([0.0, 1.0, 1000.0, 8766.0, 20_000.0, 30_000.0])
    chips = np.array([[1.0], [64.0]])
    commit = commitment_cost_usd(chips, 1.7, 3.0, used)
    rent = rental_cost_usd(chips * used, 1.7)
    assert np.all(commit >= rent)
    beyond_term = used >= 3.0 * HOURS_PER_YEAR
    np.testing.assert_allclose(commit[:, beyond_term], rent[:, beyond_term], rtol=1e-15)
    assert np.all(commit[:, ~beyond_term] > rent[:, ~beyond_term])


def test_commitment_term_share_scales_reserved_hours() -> None:
    """Half of a 3-year term attributed: 1.5·8766 = 13 149 reserved hours; none attributed
    (share 0) is plain rental of the used hours. Exact: small integer products."""
    got = commitment_cost_usd(1, 1.0, 3.0, [10.0, 10.0], term_share=[0.5, 0.0])
    assert np.array_equal(got, [13_149.0, 10.0])


def test_commitment_zero_chips() -> None:
    """No chips reserved, nothing paid."""
    assert commitment_cost_usd(0, 5.0, 1.0, 1000.0) == 0.0


# --- on-prem capex, hosting, ops --------------------------------------------------------


def test_capex_over_full_life_equals_purchase_price_exactly() -> None:
    """Holding for the whole amortisation life charges the purchase price exactly: the held
    share is formed first (x/x = 1 exactly), then multiplied."""
    years = np.array([3.0, 4.5, 5.0, 5.5, 6.0])
    purchase = np.array([33_750.0, 31_120.0, 17_349.0, 25_734.0, 47_409.0])
    chips = np.array([8.0, 1024.0, 72.0, 1.0, 16_384.0])
    got = onprem_capex_usd(chips, purchase, years, years * HOURS_PER_YEAR)
    assert np.array_equal(got, chips * purchase)


def test_capex_is_straight_line() -> None:
    """One year of a 5-year life is a fifth of the price: 8 × 33 750 / 5 = 54 000 USD (exact);
    zero hours held costs nothing."""
    assert np.array_equal(
        onprem_capex_usd(8, 33_750.0, 5.0, [HOURS_PER_YEAR, 0.0]), [54_000.0, 0.0]
    )


def test_capex_broadcasts_over_lives() -> None:
    """Row of lives × column of held hours; each cell equals the scalar call."""
    lives = np.array([4.0, 5.0, 6.0])
    held = np.array([[720.0], [8766.0]])
    got = onprem_capex_usd(16, 30_000.0, lives, held)
    assert got.shape == (2, 3)
    assert got[1, 2] == onprem_capex_usd(16, 30_000.0, 6.0, 8766.0)


def test_hosting_one_month_is_kw_times_rate() -> None:
    """8 × (700 + 575) W = 10.2 kW for one month at 184.06 USD/kW-month = 1877.412 USD;
    a year (12 months) is 22 528.944 USD. rtol 1e-14 (a handful of roundings)."""
    got = hosting_cost_usd(8, 700.0, 575.0, 184.06, [HOURS_PER_MONTH, HOURS_PER_YEAR])
    np.testing.assert_allclose(got, [1877.412, 22_528.944], rtol=1e-14)


def test_hosting_zero_cases() -> None:
    """Nothing held, or a free facility, costs nothing."""
    assert np.array_equal(hosting_cost_usd(8, 700.0, 100.0, [184.06, 0.0], [0.0, 1e4]), [0.0, 0.0])


def test_ops_full_year_is_the_annual_rate_exactly() -> None:
    """8766 h of a chip-year rate is exactly the rate: 8 × 1000 = 8000 USD; half a year 4000."""
    got = ops_cost_usd(8, 1_000.0, [HOURS_PER_YEAR, HOURS_PER_YEAR / 2, 0.0])
    assert np.array_equal(got, [8000.0, 4000.0, 0.0])


# --- energy, emissions -----------------------------------------------------------------


def test_energy_kwh_hand_values() -> None:
    """8 GPUs × 24 h × 700 W × 1.5 PUE = 201.6 kWh; adding 575 W of host per GPU gives
    8 × 24 × 1275 × 1.5 / 1000 = 367.2 kWh. rtol 1e-15 (one or two roundings)."""
    got = energy_kwh(8 * 24.0, 700.0, 1.0, 1.5, host_watts_per_chip=[0.0, 575.0])
    np.testing.assert_allclose(got, [201.6, 367.2], rtol=1e-15)


def test_energy_kwh_default_host_is_zero_and_fraction_scales_chip_power() -> None:
    """Without host power, 1000 chip-h at 400 W × 0.75 and PUE 1 is 300 kWh exactly."""
    assert energy_kwh(1000.0, 400.0, 0.75, 1.0) == 300.0


def test_energy_kwh_zero_hours() -> None:
    """No chip-hours, no energy, whatever the power."""
    assert energy_kwh(0.0, 1000.0, 1.0, 1.6, 500.0) == 0.0


def test_energy_cost_and_emissions_hand_values() -> None:
    """1000 kWh × 0.0892 USD/kWh = 89.2 USD; × 0.4 kg/kWh = 400 kg. rtol 1e-15."""
    assert energy_cost_usd(1000.0, 0.0892) == pytest.approx(89.2, rel=1e-15)
    assert emissions_kg(1000.0, 0.4) == pytest.approx(400.0, rel=1e-15)
    assert np.array_equal(energy_cost_usd([0.0, 5.0], [1.0, 0.0]), [0.0, 0.0])


# --- engineering, delay ----------------------------------------------------------------


def test_engineering_and_delay_cost_hand_values() -> None:
    """160 h × 106 USD/h = 16 960 USD; 30 d × 10 000 USD/d = 300 000 USD (exact integers)."""
    assert np.array_equal(engineering_cost_usd([0.0, 160.0], 106.0), [0.0, 16_960.0])
    assert np.array_equal(delay_cost_usd(30.0, [0.0, 10_000.0]), [0.0, 300_000.0])


# --- CostBreakdown ---------------------------------------------------------------------


def test_breakdown_total_is_sum_of_parts() -> None:
    """total_usd adds the four parts element-wise (exact for these integers)."""
    breakdown = CostBreakdown(
        hardware_usd=np.array([100.0, 200.0]),
        energy_usd=np.array([0.0, 7.0]),
        engineering_usd=np.array([50.0, 0.0]),
        delay_usd=np.array([1.0, 2.0]),
    )
    assert np.array_equal(breakdown.total_usd, [151.0, 209.0])


def test_breakdown_is_frozen() -> None:
    """Results are records: assigning a field raises."""
    breakdown = CostBreakdown(np.zeros(1), np.zeros(1), np.zeros(1), np.zeros(1))
    with pytest.raises(dataclasses.FrozenInstanceError):
        breakdown.hardware_usd = np.ones(1)  # type: ignore[misc]


def test_cloud_breakdown_reports_kwh_but_prices_no_energy() -> None:
    """The cloud convention from the module docstring: kWh is computed, energy_usd is 0 and the
    total is the rental alone (exact)."""
    chip_hours = 1024 * 720.0
    kwh = energy_kwh(chip_hours, 700.0, 0.8, 1.1, 150.0)
    assert kwh > 0.0
    rent = rental_cost_usd(chip_hours, 3.93)
    zeros = np.zeros_like(rent)
    breakdown = CostBreakdown(rent, zeros, zeros, zeros)
    assert breakdown.total_usd == rent


def test_free_delay_costs_nothing_even_for_a_run_that_never_finishes() -> None:
    """0 USD/day x inf days is 0 by the model's meaning, not nan."""
    out = delay_cost_usd(np.array([np.inf, 10.0, np.inf]), np.array([0.0, 5.0, 5.0]))
    assert out[0] == 0.0
    assert out[1] == 50.0
    assert np.isinf(out[2])
