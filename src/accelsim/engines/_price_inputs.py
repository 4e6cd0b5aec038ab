"""The pricing step's uncertain inputs, drawn once into a typed record.

Pricing (:mod:`accelsim.engines._pricing`) is pure: it reads a :class:`PriceInputs` record
and never an :class:`~accelsim.engines.InputDraws`. :func:`draw_price_inputs` is the one
builder, called where a workload draws its inputs (the serving record,
:func:`accelsim.engines.serving._inputs.draw_serving_inputs`) or, for engines whose usage
decides what is priced, at the start of their pricing step. Every value is drawn under its
input name, so a run's values are the same whichever builder draws them and in what order
(:mod:`accelsim.engines._inputs`).

What is drawn, per run:

- per pool (:class:`PoolPriceInputs`): the chips' power draw as a share of TDP, the PUE
  (the site's for an on-prem pool, else the data-centre prior; a user-set ``pue`` wins),
  the host power per chip, and for a priced on-prem pool the site's electricity price;
- for the scenario (:class:`CostInputs`): the grid's emission factor; where a rented
  on-demand or spot pool (or a fallback to on-demand) is priced, the yearly price change;
  where engineering and delay are priced, the engineer wage and the delay cost per day;
  where a queue wait is priced, its price per job-hour.
"""

from __future__ import annotations

from dataclasses import dataclass

from accelsim._typing import FloatArray
from accelsim.catalog import Catalog, Prior
from accelsim.engines._inputs import InputDraws
from accelsim.models import cost
from accelsim.scenario import Pool, Scenario

TRAINING_POWER = "priors.power_fraction_of_tdp"
"""Input name of the chips' draw as a share of TDP while training."""
SERVING_POWER = "priors.serving.power_fraction_of_tdp"
"""Input name of the chips' draw as a share of TDP while serving (decode is memory-bound)."""


@dataclass(frozen=True)
class PoolPriceInputs:
    """One pool's energy and electricity inputs per run (arrays over the chunk's runs)."""

    power_fraction: FloatArray
    """The chips' mean draw while busy. [fraction of TDP]"""
    pue: FloatArray
    """Facility power over IT power. [ratio]"""
    host_watts_per_chip: FloatArray | float
    """Host (CPU, NIC, memory) power per chip. [W]"""
    usd_per_kwh: FloatArray | None
    """Electricity price of a priced on-prem pool; ``None`` otherwise (in the rent). [USD/kWh]"""


@dataclass(frozen=True)
class CostInputs:
    """The scenario's cost inputs per run; ``None`` where nothing reads them."""

    runs: int
    """Runs in the chunk."""
    emission_kg_per_kwh: FloatArray | None
    """Grid emission factor, where emissions are reported. [kg CO2e/kWh]"""
    price_change_per_year: FloatArray | None
    """Yearly change of on-demand and spot prices from day 0. [fraction/year]"""
    engineer_usd_per_hour: FloatArray | None
    """Engineer wage, loaded. [USD/h]"""
    delay_usd_per_day: FloatArray | None
    """Cost of a day's delay to the result. [USD/day]"""
    wait_usd_per_job_hour: FloatArray | None
    """The user's valuation of an hour of queue wait (unset: 0). [USD/(job*h)]"""

    def emissions_kg(self, kwh: FloatArray) -> FloatArray:
        """Emissions of ``kwh`` at the drawn grid factor. [kg CO2e]"""
        if self.emission_kg_per_kwh is None:
            raise ValueError("the grid emission factor was not drawn")
        return cost.emissions_kg(kwh, self.emission_kg_per_kwh)


@dataclass(frozen=True)
class PriceInputs:
    """Everything the pricing step reads: the scenario's inputs and each pool's, in fleet
    order (``None`` for a pool the workload does not use)."""

    costs: CostInputs
    pools: tuple[PoolPriceInputs | None, ...]

    def pool(self, index: int) -> PoolPriceInputs:
        """Pool ``index``'s inputs (drawn: the workload uses the pool)."""
        drawn = self.pools[index]
        if drawn is None:
            raise ValueError(f"pool {index}'s price inputs were not drawn")
        return drawn


def draw_pool_price_inputs(
    pool: Pool, scenario: Scenario, cat: Catalog, draws: InputDraws, power: tuple[str, Prior]
) -> PoolPriceInputs:
    """One pool's energy inputs; ``power`` is the input name and prior of the chips' draw."""
    a, priors = scenario.assumptions, cat.priors
    name, prior = power
    fraction = draws.get(name, None, prior.value)
    if pool.pricing == "on_prem" and pool.provider is not None:
        site = cat.site(pool.provider)
        usd_per_kwh = draws.get(
            "assumptions.electricity_usd_per_kwh", a.electricity_usd_per_kwh, site.usd_per_kwh
        )
        return PoolPriceInputs(
            power_fraction=fraction,
            pue=draws.get("assumptions.pue", a.pue, site.pue),
            host_watts_per_chip=site.host_watts_per_chip,
            usd_per_kwh=usd_per_kwh,
        )
    pue = draws.get("assumptions.pue", a.pue, priors.pue.value)
    host = draws.get(
        "priors.host_power_fraction_of_tdp", None, priors.host_power_fraction_of_tdp.value
    )
    return PoolPriceInputs(
        power_fraction=fraction,
        pue=pue,
        host_watts_per_chip=host * cat.chip(pool.chip).tdp_watts,
        usd_per_kwh=None,
    )


def _rented(pool: Pool) -> bool:
    """True when the pool pays a moving market price: on-demand or spot, or a fallback to
    on-demand (``Pool.fallback_after_*``)."""
    falls_back = pool.fallback_after_preemptions is not None or pool.fallback_after_days is not None
    return pool.provider is not None and (pool.pricing in ("on_demand", "spot") or falls_back)


def draw_cost_inputs(
    scenario: Scenario,
    cat: Catalog,
    draws: InputDraws,
    pools: tuple[Pool, ...],
    *,
    engineering: bool,
    wait: bool,
    emissions: bool = True,
) -> CostInputs:
    """The scenario's cost inputs for the ``pools`` a workload uses; wage and delay when
    ``engineering`` is priced, the wait price when a queue wait is (``wait``), the grid
    factor when emissions are reported (``emissions``)."""
    a, priors = scenario.assumptions, cat.priors
    change = None
    if any(_rented(p) for p in pools):
        change = draws.get(
            "assumptions.price_change_per_year",
            a.price_change_per_year,
            priors.price_change_per_year.value,
        )
    wage = delay = wait_price = None
    if engineering:
        wage = draws.get(
            "assumptions.engineer_usd_per_hour",
            a.engineer_usd_per_hour,
            priors.engineer_usd_per_hour.value,
        )
        delay = draws.get(
            "assumptions.delay_usd_per_day", a.delay_usd_per_day, priors.delay_usd_per_day.value
        )
    if wait:
        wait_price = draws.get("assumptions.wait_usd_per_job_hour", a.wait_usd_per_job_hour, 0.0)
    factor = None
    if emissions:
        factor = draws.get(
            "assumptions.emission_kg_per_kwh",
            a.emission_kg_per_kwh,
            priors.emission_kg_per_kwh.value,
        )
    return CostInputs(
        runs=draws.runs,
        emission_kg_per_kwh=factor,
        price_change_per_year=change,
        engineer_usd_per_hour=wage,
        delay_usd_per_day=delay,
        wait_usd_per_job_hour=wait_price,
    )


def draw_price_inputs(
    scenario: Scenario,
    cat: Catalog,
    draws: InputDraws,
    *,
    used: tuple[int, ...] | None = None,
    power: str = TRAINING_POWER,
    engineering: bool = False,
    wait: bool = False,
    emissions: bool = True,
) -> PriceInputs:
    """The pricing record of a workload on ``scenario``'s pools ``used`` (all by default),
    whose chips draw ``power`` (:data:`TRAINING_POWER` or :data:`SERVING_POWER`); see
    :func:`draw_cost_inputs` for ``engineering``, ``wait`` and ``emissions``."""
    fleet = scenario.fleet
    indices = tuple(range(len(fleet))) if used is None else used
    priors = cat.priors
    prior = (
        priors.power_fraction_of_tdp
        if power == TRAINING_POWER
        else cat.serving_priors.power_fraction_of_tdp
    )
    pools = tuple(
        draw_pool_price_inputs(p, scenario, cat, draws, (power, prior)) if i in indices else None
        for i, p in enumerate(fleet)
    )
    costs = draw_cost_inputs(
        scenario,
        cat,
        draws,
        tuple(fleet[i] for i in indices),
        engineering=engineering,
        wait=wait,
        emissions=emissions,
    )
    return PriceInputs(costs=costs, pools=pools)


__all__ = [
    "SERVING_POWER",
    "TRAINING_POWER",
    "CostInputs",
    "PoolPriceInputs",
    "PriceInputs",
    "draw_cost_inputs",
    "draw_pool_price_inputs",
    "draw_price_inputs",
]
