"""Hypothesis invariants of accelsim.models.cost: non-negative, monotone, linear in prices.

Strategies are explicit and finite. Positive magnitudes are drawn from [1e-3, 1e6] (or 0), so
products of up to six factors stay far from float64 underflow and overflow. That is what
makes the exact checks below honest: multiplying by 2 is exact in binary floating point, and
round-to-nearest is monotone, so a formula built from products, quotients, sums and max of
non-negative terms is exactly homogeneous in a price and exactly monotone in each input.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from accelsim.models.cost import (
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

NON_NEGATIVE = st.one_of(st.just(0.0), st.floats(1e-3, 1e6, allow_nan=False, allow_infinity=False))
YEARS = st.floats(0.25, 10.0, allow_nan=False, allow_infinity=False)
FRACTION = st.floats(0.0, 1.0, allow_nan=False, allow_infinity=False)
PUE = st.floats(1.0, 3.0, allow_nan=False, allow_infinity=False)


@dataclass(frozen=True)
class Spec:
    """A cost function, a strategy per argument, and which arguments are prices."""

    function: Callable[..., object]
    arguments: dict[str, st.SearchStrategy[float]]
    prices: tuple[str, ...]
    rising_in: tuple[str, ...]  # arguments the output must be non-decreasing in


SPECS = [
    Spec(
        rental_cost_usd,
        {"chip_hours": NON_NEGATIVE, "usd_per_chip_hour": NON_NEGATIVE},
        ("usd_per_chip_hour",),
        ("chip_hours", "usd_per_chip_hour"),
    ),
    Spec(
        commitment_cost_usd,
        {
            "chips": NON_NEGATIVE,
            "usd_per_chip_hour": NON_NEGATIVE,
            "term_years": YEARS,
            "used_hours": NON_NEGATIVE,
            "term_share": FRACTION,
        },
        ("usd_per_chip_hour",),
        ("chips", "usd_per_chip_hour", "term_years", "used_hours", "term_share"),
    ),
    Spec(
        onprem_capex_usd,
        {
            "chips": NON_NEGATIVE,
            "purchase_usd_per_chip": NON_NEGATIVE,
            "amortization_years": YEARS,
            "held_hours": NON_NEGATIVE,
        },
        ("purchase_usd_per_chip",),
        ("chips", "purchase_usd_per_chip", "held_hours"),
    ),
    Spec(
        hosting_cost_usd,
        {
            "chips": NON_NEGATIVE,
            "tdp_watts": NON_NEGATIVE,
            "host_watts_per_chip": NON_NEGATIVE,
            "hosting_usd_per_kw_month": NON_NEGATIVE,
            "held_hours": NON_NEGATIVE,
        },
        ("hosting_usd_per_kw_month",),
        ("chips", "tdp_watts", "host_watts_per_chip", "hosting_usd_per_kw_month", "held_hours"),
    ),
    Spec(
        ops_cost_usd,
        {"chips": NON_NEGATIVE, "ops_usd_per_chip_year": NON_NEGATIVE, "held_hours": NON_NEGATIVE},
        ("ops_usd_per_chip_year",),
        ("chips", "ops_usd_per_chip_year", "held_hours"),
    ),
    Spec(
        energy_cost_usd,
        {"kwh": NON_NEGATIVE, "usd_per_kwh": NON_NEGATIVE},
        ("usd_per_kwh",),
        ("kwh", "usd_per_kwh"),
    ),
    Spec(
        engineering_cost_usd,
        {"hours": NON_NEGATIVE, "usd_per_hour": NON_NEGATIVE},
        ("usd_per_hour",),
        ("hours", "usd_per_hour"),
    ),
    Spec(
        delay_cost_usd,
        {"days": NON_NEGATIVE, "usd_per_day": NON_NEGATIVE},
        ("usd_per_day",),
        ("days", "usd_per_day"),
    ),
    Spec(
        emissions_kg,
        {"kwh": NON_NEGATIVE, "kg_per_kwh": NON_NEGATIVE},
        ("kg_per_kwh",),
        ("kwh", "kg_per_kwh"),
    ),
    Spec(
        energy_kwh,
        {
            "chip_hours": NON_NEGATIVE,
            "tdp_watts": NON_NEGATIVE,
            "power_fraction_of_tdp": FRACTION,
            "pue": PUE,
            "host_watts_per_chip": NON_NEGATIVE,
        },
        (),
        ("chip_hours", "tdp_watts", "power_fraction_of_tdp", "pue", "host_watts_per_chip"),
    ),
]
PRICED = [spec for spec in SPECS if spec.prices]


def _ids(specs: list[Spec]) -> list[str]:
    return [getattr(spec.function, "__name__", "?") for spec in specs]


def _draw_arguments(data: st.DataObject, spec: Spec) -> dict[str, float]:
    return {name: data.draw(strategy, label=name) for name, strategy in spec.arguments.items()}


def _value(spec: Spec, arguments: dict[str, float]) -> float:
    return float(np.asarray(spec.function(**arguments)))


@pytest.mark.parametrize("spec", SPECS, ids=_ids(SPECS))
@given(data=st.data())
def test_costs_are_finite_and_non_negative(spec: Spec, data: st.DataObject) -> None:
    """Non-negative, finite inputs give a non-negative, finite output."""
    value = _value(spec, _draw_arguments(data, spec))
    assert np.isfinite(value)
    assert value >= 0.0


@pytest.mark.parametrize("spec", SPECS, ids=_ids(SPECS))
@given(data=st.data())
def test_costs_rise_with_prices_hours_and_quantities(spec: Spec, data: st.DataObject) -> None:
    """Raising any one price, hour count or quantity never lowers the output (exact: rounding
    is monotone, see the module docstring)."""
    arguments = _draw_arguments(data, spec)
    name = data.draw(st.sampled_from(spec.rising_in), label="raised")
    bound = 1.0 if name in ("term_share", "power_fraction_of_tdp") else 1e6
    raised = data.draw(
        st.floats(arguments[name], bound, allow_nan=False, allow_infinity=False), label="to"
    )
    assert _value(spec, {**arguments, name: raised}) >= _value(spec, arguments)


@pytest.mark.parametrize("spec", PRICED, ids=_ids(PRICED))
@given(data=st.data(), factor=st.sampled_from([0.5, 2.0, 4.0]))
def test_costs_are_homogeneous_of_degree_one_in_prices(
    spec: Spec, data: st.DataObject, factor: float
) -> None:
    """Scaling every price by a power of two scales the cost by it, bit-for-bit."""
    arguments = _draw_arguments(data, spec)
    scaled = {**arguments, **{p: arguments[p] * factor for p in spec.prices}}
    assert _value(spec, scaled) == factor * _value(spec, arguments)


@given(
    chips=NON_NEGATIVE,
    held_hours=NON_NEGATIVE,
    used_fraction=FRACTION,
    engineering_hours=NON_NEGATIVE,
    days=NON_NEGATIVE,
    purchase=NON_NEGATIVE,
    colo=NON_NEGATIVE,
    ops=NON_NEGATIVE,
    electricity=NON_NEGATIVE,
    wage=NON_NEGATIVE,
    delay=NON_NEGATIVE,
)
def test_onprem_total_doubles_when_all_prices_double(
    chips: float,
    held_hours: float,
    used_fraction: float,
    engineering_hours: float,
    days: float,
    purchase: float,
    colo: float,
    ops: float,
    electricity: float,
    wage: float,
    delay: float,
) -> None:
    """A whole on-prem TCO, assembled from the functions into a CostBreakdown, doubles exactly
    when every price doubles (sums of doubled terms are doubled sums, exactly)."""

    def total(k: float) -> float:
        kwh = energy_kwh(chips * held_hours * used_fraction, 700.0, 0.8, 1.3, 300.0)
        breakdown = CostBreakdown(
            hardware_usd=onprem_capex_usd(chips, k * purchase, 5.0, held_hours)
            + hosting_cost_usd(chips, 700.0, 300.0, k * colo, held_hours)
            + ops_cost_usd(chips, k * ops, held_hours),
            energy_usd=energy_cost_usd(kwh, k * electricity),
            engineering_usd=engineering_cost_usd(engineering_hours, k * wage),
            delay_usd=delay_cost_usd(days, k * delay),
        )
        return float(breakdown.total_usd)

    base = total(1.0)
    assert base >= 0.0
    assert total(2.0) == 2.0 * base
