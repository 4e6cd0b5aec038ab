"""Prices that move over the horizon: Assumptions.price_change_per_year.

Oracle: with prices p(t) = p0 (1 + g)^t (t in years after the decision), rent over a window
[a, b] held evenly costs chip-hours x p0 x mean of (1 + g)^t over [a, b], which is
((1 + g)^b - (1 + g)^a) / ((b - a) ln(1 + g)); integrated numerically here by scipy's
quad and written out by hand, independently of models.cost.price_change_factor's
expm1/log1p form. A three-year on-demand serving fleet held from day 0 checks the study end
to end; setting 0 gives the fixed-price bill exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.integrate import quad

import accelsim as acs
from accelsim.models.cost import HOURS_PER_YEAR, price_change_factor

YEARS = 3.0


@pytest.mark.parametrize("g", [-0.44, -0.2, -1e-9, 0.0, 1e-9, 0.15, 0.9])
@pytest.mark.parametrize(("a", "b"), [(0.0, 3.0), (0.25, 0.5), (1.0, 1.0 + 1e-10), (2.0, 2.0)])
def test_the_factor_is_the_mean_of_the_moved_price_over_the_window(
    g: float, a: float, b: float
) -> None:
    if b > a:
        expected = quad(lambda t: (1.0 + g) ** t, a, b, epsabs=0, epsrel=1e-13)[0] / (b - a)
    else:  # an empty window: the price at its start
        expected = (1.0 + g) ** a
    assert float(price_change_factor(a, b, g)) == pytest.approx(expected, rel=1e-9)


def test_the_factor_broadcasts_and_is_one_without_change() -> None:
    a = np.array([0.0, 0.5, 1.0])
    out = price_change_factor(a, a + 1.0, np.array([[0.0], [-0.3]]))
    assert out.shape == (2, 3)
    np.testing.assert_array_equal(out[0], 1.0)
    assert (np.diff(out[1]) < 0).all()  # a falling price: later windows are cheaper


@given(
    st.floats(0.0, 5.0),
    st.floats(0.0, 5.0),
    st.floats(-0.9, 1.0),
    st.floats(-0.9, 1.0),
)
def test_the_factor_rises_with_the_yearly_change(
    a: float, width: float, g1: float, g2: float
) -> None:
    low, high = sorted((g1, g2))
    f_low = float(price_change_factor(a, a + width, low))
    f_high = float(price_change_factor(a, a + width, high))
    assert np.isfinite(f_low)
    assert 0.0 < f_low <= f_high * (1 + 1e-12)


def _serving(g: float | None, pricing: str = "on_demand") -> acs.Scenario:
    svc = acs.Serving(
        model="llama-3.1-8b",
        precision="fp8",
        rate_rps=5.0,
        input_tokens=500,
        output_tokens=100,
        slo=acs.SLO(ttft_ms=2000, tpot_ms=100),
        horizon_days=YEARS * 365.25,
    )
    pool = acs.Pool(chip="h100-sxm", count=8, provider="aws", pricing=pricing)  # type: ignore[arg-type]
    a = acs.Assumptions() if g is None else acs.Assumptions(price_change_per_year=g)
    return acs.Scenario(name="serve-3y", workload=svc, fleet=[pool], assumptions=a)


def _rate(pricing: str = "on_demand") -> float:
    offer = acs.catalog.price("h100-sxm", provider="aws", pricing=pricing)  # type: ignore[arg-type]
    assert offer.usd_per_chip_hour is not None
    return offer.usd_per_chip_hour


def test_a_three_year_on_demand_bill_follows_the_closed_form() -> None:
    """8 chips held three years from day 0, prices falling 20 % a year:
    8 x p0 x hours/year x ((1 + g)^3 - 1) / ln(1 + g)."""
    g = -0.2
    res = acs.simulate(_serving(g), runs=4, seed=1)
    chip_hours = res.samples("chip_hours")
    np.testing.assert_allclose(chip_hours, 8 * YEARS * HOURS_PER_YEAR, rtol=1e-12)
    closed = 8 * _rate() * HOURS_PER_YEAR * ((1 + g) ** YEARS - 1) / np.log(1 + g)
    np.testing.assert_allclose(res.samples("hardware_cost_usd"), closed, rtol=1e-12)
    # 27 % below the fixed-price bill: later months are priced at later prices
    fixed = acs.simulate(_serving(0.0), runs=4, seed=1)
    ratio = res.samples("hardware_cost_usd") / fixed.samples("hardware_cost_usd")
    np.testing.assert_allclose(ratio, (0.8**3 - 1) / (3 * np.log(0.8)), rtol=1e-12)


def test_zero_turns_it_off() -> None:
    res = acs.simulate(_serving(0.0), runs=4, seed=1)
    np.testing.assert_allclose(
        res.samples("hardware_cost_usd"), _rate() * res.samples("chip_hours"), rtol=1e-12
    )
    assert res.price_change_note() is None
    assert "Prices move" not in res.summary()


def test_unset_draws_the_catalog_prior_and_the_summary_says_prices_moved() -> None:
    res = acs.simulate(_serving(None), runs=64, seed=3)
    g = res.inputs["assumptions.price_change_per_year"]
    prior = acs.catalog.priors().price_change_per_year.dist()
    low, high = prior.support()
    assert ((g >= low) & (g <= high)).all()
    assert np.unique(g).size == g.size  # a distribution, not a constant
    per_run = 8 * _rate() * HOURS_PER_YEAR * ((1 + g) ** YEARS - 1) / np.log(1 + g)
    np.testing.assert_allclose(res.samples("hardware_cost_usd"), per_run, rtol=1e-12)
    note = res.price_change_note()
    assert note is not None
    assert f"{float(np.mean(g)):+.1%} a year on average" in note
    assert note in res.summary()


def test_a_training_run_prices_its_training_phase_at_its_own_months() -> None:
    """The rent of a training run falls in its training phase [start, end] (days): a run that
    waits longer for capacity starts at later prices."""
    s = acs.Scenario(
        name="t",
        workload=acs.TrainingRun(params=7e9, tokens=2e11),
        fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")],
        assumptions=acs.Assumptions(price_change_per_year=-0.3),
    )
    res = acs.simulate(s, runs=32, seed=2)
    end = res.samples("time_to_train_days") / 365.25
    start = end - res.samples("training_days") / 365.25
    assert (start > 0).all()  # the lead time comes first
    mean_price = (0.7**end - 0.7**start) / ((end - start) * np.log(0.7))
    np.testing.assert_allclose(
        res.samples("hardware_cost_usd"),
        res.samples("chip_hours") * _rate() * mean_price,
        rtol=1e-12,
    )


def test_a_commitment_keeps_its_price_and_refuses_the_field() -> None:
    """A commitment's price holds for its term: no prior is drawn for it, and a value set
    on a fleet with no on-demand or spot pool is an error, never silently ignored."""
    s = acs.Scenario(
        name="c",
        workload=acs.TrainingRun(params=7e9, tokens=2e11),
        fleet=[acs.Pool(chip="a100-80gb", count=64, provider="aws", pricing="commit_1y")],
    )
    res = acs.simulate(s, runs=4, seed=1)
    assert "assumptions.price_change_per_year" not in res.inputs
    with pytest.raises(ValueError, match="price_change_per_year moves on-demand and spot"):
        s.replace("assumptions.price_change_per_year", -0.1)


@pytest.mark.parametrize("bad", [-1.0, -0.95, 1.5])
def test_the_boundary_refuses_a_units_mistake(bad: float) -> None:
    with pytest.raises(ValueError, match=r"price_change_per_year must lie in \[-0.9, 1\]"):
        acs.Assumptions(price_change_per_year=bad)
