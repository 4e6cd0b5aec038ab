"""Usage -> cost: the economics step shared by both engines (physics never reads a price).

Cloud pools pay for allocated chip-hours (on-demand, spot) or for the reserved share of a
committed term or capacity block, used or not (:func:`reserved_term_hours`); their energy
is inside the rental price, so its cost is zero in the TCO while its kWh are still
reported. On-prem pools pay straight-line amortisation
of the purchase price over the hours the chips are held for this scenario (or the share of
their life the pool's ``term_share`` reserves), hosting per provisioned kW-month, operations
per chip-year, and electricity at the site's PUE. An unpriced pool (``provider=None``)
reports energy only.

Waiting is priced too when the user values it (``Assumptions.wait_usd_per_job_hour``, unset
= 0): :func:`wait_cost_usd` turns job-hours of queue wait into the ``wait_cost_usd`` line of
the TCO.

Credits (``Scenario.credits``, :class:`~accelsim.scenario.Credit`) offset hardware cost
only, and only of cloud pools (on-demand, spot, commitments; never on-prem hardware,
energy, engineering, delay or wait): :func:`credits_usd`. Each pool's hardware cost is
spread evenly over its billing window (a training run's rented hours: its training phase;
a commitment: from the end of the lead time for the charged term, or the hours held if
longer; a stream or serving fleet: its held hours from day 0). A credit covers the part of
that cost billed before ``expires_days``, up to its amount (dollars, or chip-hours valued
at the pool's price per chip-hour), in order of expiry (earliest first, then as listed),
each pool in fleet order. The offset is the negative line ``credits_usd``, so ``tco_usd``
stays the sum of its lines.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from accelsim._typing import FloatArray
from accelsim.catalog import Catalog
from accelsim.engines._inputs import InputDraws
from accelsim.engines._price_inputs import (
    CostInputs,
    PoolPriceInputs,
    PriceInputs,
    draw_price_inputs,
)
from accelsim.engines.training._recovery import host_chips, on_demand_pool
from accelsim.models import cost
from accelsim.scenario import Pool, Scenario

_COMMIT_YEARS = {"commit_1y": 1.0, "commit_3y": 3.0}


def _term_share(pool: Pool) -> float:
    """Share of a term charged: the user's, else all of a commitment and none of a life."""
    if pool.term_share is not None:
        return pool.term_share
    return 0.0 if pool.pricing == "on_prem" else 1.0


# A run that ends a hair past a window's end (float rounding of a computed duration) does not
# buy another whole block.
_BLOCK_RTOL = 1e-9


def is_reserved(pool: Pool) -> bool:
    """True for pricing paid by the term whether used or not (commitments, capacity blocks)."""
    return pool.pricing in _COMMIT_YEARS or pool.pricing == "capacity_block"


def reserved_term_hours(pool: Pool, held_hours: FloatArray | float) -> FloatArray:
    """Length of the reservation a pool held ``held_hours`` buys, per run. [h]

    A commitment buys its term (1 or 3 years). A capacity block buys windows of
    ``pool.block_days``: at least one, and as many consecutive windows of that length as
    the hours held need (a 10-day run in a 14-day block buys 14 days; a 17-day run buys
    two blocks, 28 days), each paid whole. That a next window of the same size is free when
    the first ends is an assumption (providers sell windows subject to availability).
    The engines charge ``max(held, term_share * term)`` chip-hours at the offer's price
    (:func:`accelsim.models.cost.commitment_cost_usd`).
    """
    held = np.asarray(held_hours, dtype=float)
    if pool.pricing == "capacity_block":
        assert pool.block_days is not None  # the Pool boundary requires it
        window_h = 24.0 * pool.block_days
        blocks = np.maximum(1.0, np.ceil(held / window_h * (1.0 - _BLOCK_RTOL)))
        term: FloatArray = blocks * window_h
        return term
    return np.full_like(held, _COMMIT_YEARS[pool.pricing] * cost.HOURS_PER_YEAR)


def pool_energy_kwh(
    pool: Pool, inputs: PoolPriceInputs, chip_hours: FloatArray, *, cat: Catalog
) -> FloatArray:
    """Energy of a pool's allocated chip-hours, hosts and facility overhead included. [kWh]

    ``inputs`` are the pool's drawn power share, PUE and host power
    (:func:`~accelsim.engines._price_inputs.draw_pool_price_inputs`: on-prem pools use their
    site's host power and PUE, cloud and unpriced pools the priors; a user-set ``pue``
    wins); ``cat`` is the study's catalog.
    """
    chip = cat.chip(pool.chip)
    return cost.energy_kwh(
        chip_hours, chip.tdp_watts, inputs.power_fraction, inputs.pue, inputs.host_watts_per_chip
    )


def price_change(
    pool: Pool,
    costs: CostInputs,
    window_days: tuple[FloatArray | float, FloatArray | float],
) -> FloatArray | float:
    """Mean price over a rented pool's usage window relative to the catalog's, per run.

    On-demand and spot prices move by ``costs.price_change_per_year``
    (``Assumptions.price_change_per_year``, unset: the catalog prior) from the decision
    (day 0) on; usage is spread evenly over ``window_days`` = (start, end) [d]
    (:func:`accelsim.models.cost.price_change_factor`). Other pricing keeps its price: 1.
    [ratio]
    """
    if pool.pricing not in ("on_demand", "spot"):
        return 1.0
    g = costs.price_change_per_year
    if g is None:
        raise ValueError(f"the price change of a {pool.pricing} pool was not drawn")
    start, end = (np.asarray(d, dtype=float) * 24.0 / cost.HOURS_PER_YEAR for d in window_days)
    return cost.price_change_factor(start, end, g)


def price_pool(
    pool: Pool,
    inputs: PoolPriceInputs,
    costs: CostInputs,
    *,
    chip_hours: FloatArray,
    held_hours: FloatArray,
    kwh: FloatArray,
    cat: Catalog,
    window_days: tuple[FloatArray | float, FloatArray | float] | None = None,
) -> dict[str, FloatArray]:
    """Hardware and energy cost of one priced pool's usage, at ``cat``'s prices. [USD]

    ``inputs`` are the pool's drawn energy inputs, ``costs`` the scenario's. On-demand and
    spot prices move over ``window_days`` (start, end of the usage, days after the
    decision; default: held from day 0 for ``held_hours``) by :func:`price_change`.
    """
    assert pool.provider is not None
    chip = cat.chip(pool.chip)
    offer = cat.price(pool.chip, pool.provider, pool.pricing, pool.region)
    if pool.pricing == "on_prem":
        site = cat.site(pool.provider)
        assert offer.purchase_usd_per_chip is not None
        assert offer.amortization_years is not None
        life_hours = offer.amortization_years * cost.HOURS_PER_YEAR
        charged_h = np.maximum(held_hours, _term_share(pool) * life_hours)
        usd_per_kwh = inputs.usd_per_kwh
        if usd_per_kwh is None:
            raise ValueError(
                f"the electricity price of on-prem site {pool.provider!r} was not drawn"
            )
        hardware = (
            cost.onprem_capex_usd(
                pool.count, offer.purchase_usd_per_chip, offer.amortization_years, charged_h
            )
            + cost.hosting_cost_usd(
                pool.count,
                chip.tdp_watts,
                site.host_watts_per_chip,
                site.hosting_usd_per_kw_month,
                charged_h,
            )
            + cost.ops_cost_usd(pool.count, site.ops_usd_per_chip_year, charged_h)
        )
        energy_usd = cost.energy_cost_usd(kwh, usd_per_kwh)
    else:
        assert offer.usd_per_chip_hour is not None
        energy_usd = np.zeros(costs.runs)  # inside the rental price
        if is_reserved(pool):
            hardware = cost.commitment_cost_usd(
                pool.count,
                offer.usd_per_chip_hour,
                reserved_term_hours(pool, held_hours) / cost.HOURS_PER_YEAR,
                held_hours,
                _term_share(pool),
            )
        else:
            window = (0.0, held_hours / 24.0) if window_days is None else window_days
            moved = offer.usd_per_chip_hour * price_change(pool, costs, window)
            hardware = cost.rental_cost_usd(chip_hours, moved)
    return {  # a scalar (e.g. a whole committed term) stands for every run
        "hardware_cost_usd": np.broadcast_to(np.asarray(hardware, dtype=float), (costs.runs,)),
        "energy_cost_usd": np.broadcast_to(np.asarray(energy_usd, dtype=float), (costs.runs,)),
    }


@dataclass(frozen=True)
class Billing:
    """A priced pool's hardware cost and the calendar window it is billed over. [USD], [d]"""

    pool: Pool
    hardware_usd: FloatArray
    start_days: FloatArray | float
    window_days: FloatArray | float


def _share_before(expires: float | None, start: FloatArray, window: FloatArray) -> FloatArray:
    """Share of a window ``[start, start + window]`` that lies before ``expires``. [fraction]"""
    if expires is None:
        return np.ones_like(start)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(window > 0, (expires - start) / np.where(window > 0, window, 1.0), 1.0)
    covered: FloatArray = np.clip(np.where(start < expires, share, 0.0), 0.0, 1.0)
    return covered


def credits_usd(scenario: Scenario, cat: Catalog, billings: list[Billing], runs: int) -> FloatArray:
    """Hardware cost the scenario's credits pay for, as a negative line. [USD]

    See the module docstring for the rule. No credits, or none that applies: zeros.
    """
    total = np.zeros(runs)
    if not scenario.credits:
        return total
    used = [np.zeros(runs) for _ in billings]
    order = sorted(
        enumerate(scenario.credits),
        key=lambda ic: (math.inf if ic[1].expires_days is None else ic[1].expires_days, ic[0]),
    )
    for _, credit in order:
        left_usd = np.full(runs, credit.usd if credit.usd is not None else 0.0)
        left_ch = np.full(runs, credit.chip_hours if credit.chip_hours is not None else 0.0)
        for k, b in enumerate(billings):
            pool = b.pool
            if pool.provider is None or pool.pricing == "on_prem":
                continue
            if credit.provider is not None and credit.provider != pool.provider:
                continue
            if credit.chip is not None and credit.chip != pool.chip:
                continue
            start = np.broadcast_to(np.asarray(b.start_days, dtype=float), (runs,))
            window = np.broadcast_to(np.asarray(b.window_days, dtype=float), (runs,))
            hw = np.broadcast_to(np.asarray(b.hardware_usd, dtype=float), (runs,))
            open_usd = np.maximum(
                hw * _share_before(credit.expires_days, start, window) - used[k], 0.0
            )
            if credit.usd is not None:
                take = np.minimum(left_usd, open_usd)
                left_usd = left_usd - take
            else:
                rate = cat.price(pool.chip, pool.provider, pool.pricing, pool.region)
                usd_per_ch = rate.usd_per_chip_hour or 0.0
                if usd_per_ch <= 0:
                    continue
                take = np.minimum(left_ch * usd_per_ch, open_usd)
                left_ch = left_ch - take / usd_per_ch
            used[k] = used[k] + take
            total = total + take
    out: FloatArray = -total
    return out


def charged_term_hours(pool: Pool, held_hours: FloatArray | float) -> FloatArray:
    """Hours a pool held ``held_hours`` pays for: its charged share of the reserved term of a
    commitment or capacity block (``term_share``, all of it by default), or the hours held
    if longer; the hours held for any other pricing. [h]"""
    held = np.asarray(held_hours, dtype=float)
    if not is_reserved(pool):
        return held
    charged: FloatArray = np.maximum(held, _term_share(pool) * reserved_term_hours(pool, held))
    return charged


def pool_billing(
    pool: Pool, hardware_usd: FloatArray, held_hours: FloatArray | float, start_days: float = 0.0
) -> Billing:
    """The billing window of a pool held ``held_hours`` from ``start_days`` (streams, serving):
    its held hours, or the charged term of a commitment or capacity block if longer."""
    held = np.asarray(held_hours, dtype=float)
    if is_reserved(pool):
        held = np.maximum(held, _term_share(pool) * reserved_term_hours(pool, held))
    return Billing(pool, hardware_usd, start_days, held / 24.0)


def _region_rule(cat: Catalog, pool: Pool) -> str:
    """How the region of a pool's offer was chosen, in words (see :attr:`Pool.region`)."""
    if pool.region is not None:
        return "set by the pool"
    assert pool.provider is not None
    regions = {o.region for o in cat.offers(pool.chip, pool.provider, pool.pricing)}
    if len(regions) <= 1:
        return "the only region listed"
    return f"cheapest of {len(regions)} regions listed (Pool.region unset)"


def prices_used(scenario: Scenario, cat: Catalog) -> list[dict[str, str]]:
    """The catalog offers a study of ``scenario`` prices with, oldest first.

    One entry per priced pool's offer (``provider``, ``chip``, ``pricing``, ``region``,
    ``region_rule`` (how the region was chosen: "set by the pool", "the only region
    listed", or "cheapest of N regions listed"), ``as_of`` as an ISO date, ``source``), plain
    strings so a study's store and JSON output
    keep them. The study records them in ``Result.extras["prices_used"]`` and the oldest
    date in ``extras["oldest_price_as_of"]``; :meth:`Result.summary` and the CLI warn when
    one is older than a threshold (issue 16 item 5).
    """
    seen: dict[tuple[str, str, str, str], dict[str, str]] = {}
    # a spot pool that falls back to on-demand (Pool.fallback_after_*) prices with both
    falls_back = [
        on_demand_pool(p)
        for p in scenario.fleet
        if p.fallback_after_preemptions is not None or p.fallback_after_days is not None
    ]
    for pool in [*scenario.fleet, *falls_back]:
        if pool.provider is None:
            continue
        o = cat.price(pool.chip, pool.provider, pool.pricing, pool.region)
        key = (o.provider, o.chip, o.pricing, o.region or "")
        seen[key] = {
            "provider": o.provider,
            "chip": o.chip,
            "pricing": o.pricing,
            "region": o.region or "",
            "region_rule": _region_rule(cat, pool),
            "as_of": o.as_of.isoformat(),
            "source": str(o.source),
        }
    return sorted(seen.values(), key=lambda d: (d["as_of"], d["provider"], d["chip"]))


def wait_cost_usd(costs: CostInputs, job_hours: FloatArray) -> FloatArray:
    """Cost of ``job_hours`` of queue wait at ``Assumptions.wait_usd_per_job_hour``. [USD]

    The price is a user valuation, not a catalog prior: unset, it is 0 (recorded as the
    input ``assumptions.wait_usd_per_job_hour`` like every other). A free hour costs
    nothing however many there are (no ``inf * 0``).
    """
    price = costs.wait_usd_per_job_hour
    if price is None:
        raise ValueError("the price of queue wait was not drawn")
    with np.errstate(invalid="ignore"):
        out: FloatArray = np.where(price > 0, np.asarray(job_hours, dtype=float) * price, 0.0)
    return out


def _rented_costs(
    scenario: Scenario,
    cat: Catalog,
    usage: dict[str, FloatArray],
    prices: PriceInputs,
    kwh: FloatArray,
) -> dict[str, FloatArray]:
    """Hardware and energy costs [USD] of a training run's priced first pool, per run.

    The pool is billed with its spare hosts, and whole over the training when it changes
    size; chip-hours after a fallback to on-demand are billed at the on-demand price.
    ``kwh`` is the run's energy [kWh].
    """
    pool = scenario.fleet[0]
    # a run that changes size holds its pool whole: rented chip-hours are the pool's count
    # over the training, whatever share of it a phase trains on
    phases = scenario.training.phases or []
    # spare hosts (Pool.spare_hosts) are held and paid for with the pool
    spares = 0.0 if pool.spare_hosts is None else pool.spare_hosts * host_chips(cat, pool)
    charged = pool.model_copy(update={"count": pool.count + round(spares)}) if spares else pool
    billed = (
        charged.count * (usage["training_days"] * 24.0)
        if any(p.chips < pool.count for p in phases)
        else usage["chip_hours"]
    )
    # after a fallback to on-demand (Pool.fallback_after_*), those chip-hours at its price
    on_demand = usage.get("fallback_chip_hours")
    # rented hours fall in the training phase: from its first step to the trained model
    end = usage["time_to_train_days"]
    window = (end - usage.get("training_days", end), end)
    inputs = prices.pool(0)
    out = price_pool(
        charged,
        inputs,
        prices.costs,
        chip_hours=billed if on_demand is None else billed - on_demand,
        held_hours=usage["held_hours"],
        kwh=kwh,
        cat=cat,
        window_days=window,
    )
    if on_demand is not None:
        fallback = price_pool(
            on_demand_pool(pool),
            inputs,
            prices.costs,
            chip_hours=on_demand,
            held_hours=usage["held_hours"],
            kwh=kwh,
            cat=cat,
            window_days=window,
        )
        out["hardware_cost_usd"] = out["hardware_cost_usd"] + fallback["hardware_cost_usd"]
    return out


def price_training(
    scenario: Scenario, cat: Catalog, usage: dict[str, FloatArray], draws: InputDraws
) -> dict[str, FloatArray]:
    """Cost breakdown [USD], energy [kWh] and emissions [kg CO2e] of a training run's usage.

    Draws the run's :class:`~accelsim.engines._price_inputs.PriceInputs` (what is priced
    depends on the usage: a queue wait only for a run sharing a fleet) and prices with
    :func:`price_training_inputs`.
    """
    priced = scenario.fleet[0].provider is not None
    prices = draw_price_inputs(
        scenario,
        cat,
        draws,
        used=(0,),
        engineering=priced,
        wait=priced and "queue_wait_days" in usage,
    )
    return price_training_inputs(scenario, cat, usage, prices)


def price_training_inputs(
    scenario: Scenario, cat: Catalog, usage: dict[str, FloatArray], prices: PriceInputs
) -> dict[str, FloatArray]:
    """Cost breakdown [USD], energy [kWh] and emissions [kg CO2e] of a training run's usage,
    from its drawn price inputs (pure).

    An unpriced pool (``provider=None``) yields energy and emissions only: no cost metric
    is made up for it.
    """
    pool = scenario.fleet[0]
    costs = prices.costs
    kwh = pool_energy_kwh(pool, prices.pool(0), usage["chip_hours"], cat=cat)
    out = {
        "energy_kwh": kwh,
        "emissions_kg_co2e": costs.emissions_kg(kwh),
    }
    if pool.provider is None:
        return out
    out |= _rented_costs(scenario, cat, usage, prices, kwh)
    wage, delay = _engineering_prices(costs)
    out["engineering_cost_usd"] = cost.engineering_cost_usd(usage["engineering_hours"], wage)
    out["delay_cost_usd"] = cost.delay_cost_usd(usage["time_to_train_days"], delay)
    out["tco_usd"] = (
        out["hardware_cost_usd"]
        + out["energy_cost_usd"]
        + out["engineering_cost_usd"]
        + out["delay_cost_usd"]
    )
    if "queue_wait_days" in usage:  # a training run sharing a fleet: one job, waiting
        out["wait_cost_usd"] = wait_cost_usd(costs, 24.0 * usage["queue_wait_days"])
        out["tco_usd"] = out["tco_usd"] + out["wait_cost_usd"]
    if scenario.credits:
        out["credits_usd"] = credits_usd(
            scenario, cat, [_training_billing(pool, usage, out["hardware_cost_usd"])], costs.runs
        )
        out["tco_usd"] = out["tco_usd"] + out["credits_usd"]
    return out


def _engineering_prices(costs: CostInputs) -> tuple[FloatArray, FloatArray]:
    """The drawn engineer wage [USD/h] and delay cost [USD/day]."""
    if costs.engineer_usd_per_hour is None or costs.delay_usd_per_day is None:
        raise ValueError("the engineer wage and delay cost were not drawn")
    return costs.engineer_usd_per_hour, costs.delay_usd_per_day


def _training_billing(pool: Pool, usage: dict[str, FloatArray], hardware: FloatArray) -> Billing:
    """A training run's billing window: the training phase for rented hours; for a
    commitment or capacity block, from the end of the lead time for the charged term (or
    the held hours)."""
    end = usage["time_to_train_days"]
    training = usage.get("training_days", end)
    if is_reserved(pool):
        start = usage.get("lead_time_days", end - training)
        return replace(pool_billing(pool, hardware, usage["held_hours"]), start_days=start)
    return Billing(pool, hardware, end - training, training)


def add_serving_costs(
    metrics: dict[str, FloatArray],
    scenario: Scenario,
    cat: Catalog,
    costs: CostInputs,
    *,
    porting_hours: FloatArray,
    launch_days: FloatArray,
    bills: list[Billing],
    served: FloatArray,
    tokens_per_request: tuple[float, float],
) -> None:
    """Engineering, delay and credits, the TCO and the cost per million (output) tokens of a
    serving study, added to ``metrics``, which already holds its hardware and energy costs.

    ``costs`` are the drawn cost inputs; ``bills`` the pools' billing windows (read only
    with credits); ``served`` the requests served per run; ``tokens_per_request`` the mean
    (input, output) tokens. [USD]
    """
    wage, delay = _engineering_prices(costs)
    metrics["engineering_cost_usd"] = cost.engineering_cost_usd(porting_hours, wage)
    metrics["delay_cost_usd"] = cost.delay_cost_usd(launch_days, delay)
    tco = (
        metrics["hardware_cost_usd"]
        + metrics["energy_cost_usd"]
        + metrics["engineering_cost_usd"]
        + metrics["delay_cost_usd"]
    )
    if scenario.credits:
        metrics["credits_usd"] = credits_usd(scenario, cat, bills, costs.runs)
        tco = tco + metrics["credits_usd"]
    metrics["tco_usd"] = tco
    input_mean, output_mean = tokens_per_request
    out_tokens = served * output_mean
    all_tokens = served * (input_mean + output_mean)
    metrics["usd_per_million_output_tokens"] = tco * 1e6 / np.maximum(out_tokens, 1.0)
    metrics["usd_per_million_tokens"] = tco * 1e6 / np.maximum(all_tokens, 1.0)


__all__ = [
    "Billing",
    "add_serving_costs",
    "credits_usd",
    "is_reserved",
    "pool_billing",
    "pool_energy_kwh",
    "price_change",
    "price_pool",
    "price_training",
    "price_training_inputs",
    "prices_used",
    "reserved_term_hours",
    "wait_cost_usd",
]
