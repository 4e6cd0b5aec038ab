"""Priors that depend on what a pool's offer publishes: one rule, read by both engines."""

from __future__ import annotations

import numpy as np

from accelsim._typing import FloatArray
from accelsim.catalog import Catalog, ProviderKind
from accelsim.dists import Uncertain
from accelsim.engines._inputs import InputDraws
from accelsim.scenario import Pool

# The scenario boundary's upper end of Assumptions.lead_time_days (a ten-year wait is a units
# mistake): a prior draw never exceeds what a user may state.
MAX_LEAD_TIME_DAYS = 3660.0


def spot_preemption_prior(cat: Catalog, pool: Pool) -> Uncertain:
    """Prior of a spot pool's preemptions per chip-hour: the offer's rate, else the generic one.

    An offer that publishes ``preemptions_per_chip_hour`` (a provider's own figure for that
    chip) is more specific than the catalog-wide prior, so it wins; an unpriced pool or an
    offer without a figure falls back to ``priors.spot_preemptions_per_chip_hour``. The
    analytic engine and the DES both call this, so a spot pool means the same in each.
    [1/(chip*h)]
    """
    if pool.provider is not None:
        offer = cat.price(pool.chip, pool.provider, pool.pricing, pool.region)
        if offer.preemptions_per_chip_hour is not None:
            return offer.preemptions_per_chip_hour
    return cat.priors.spot_preemptions_per_chip_hour.value


def provider_kind(cat: Catalog, pool: Pool) -> ProviderKind:
    """``"on_prem"`` for owned hardware, ``"hyperscaler"`` for the clouds listed in
    ``priors.lead_time_hyperscalers`` (and an unpriced pool), else ``"neocloud"``."""
    if pool.pricing == "on_prem" or pool.provider == "on_prem":
        return "on_prem"
    listed = cat.priors.lead_time_hyperscalers
    if pool.provider is None or listed is None or pool.provider in listed.value:
        return "hyperscaler"
    return "neocloud"


def _capped_size(cat: Catalog, chips: int, draws: InputDraws) -> FloatArray | float:
    """``chips``, at most ``priors.lead_time_size_saturation_chips`` where given (recorded
    with the draws, so reports list it with its sources). [chips]"""
    cap = cat.priors.lead_time_size_saturation_chips
    if cap is None:
        return float(chips)
    limit = draws.get("priors.lead_time_size_saturation_chips", None, cap.value)
    return np.minimum(float(chips), limit)


def lead_time_days(
    cat: Catalog, pool: Pool, user: Uncertain | None, draws: InputDraws
) -> FloatArray:
    """Capacity, quota or procurement wait of ``pool`` before its first step, per run. [d]

    The user's value (``Assumptions.lead_time_days``) is this request's wait, used as is.
    Else: ``priors.lead_time_days`` of the pool's pricing model (a reference-size request on
    a hyperscaler) x ``(min(chips, lead_time_size_saturation_chips) /
    lead_time_reference_chips) ** lead_time_size_elasticity`` x
    ``lead_time_provider_factor`` of the provider's kind, at most
    :data:`MAX_LEAD_TIME_DAYS`. A spot request draws the on-demand wait from the same named
    stream and multiplies it by ``spot_lead_time_factor`` (>= 1), so in paired runs spot is
    never sooner than on demand for the same request. The analytic engine, the DES and the
    serving engine all call this.
    """
    if user is not None:
        return draws.get(f"assumptions.lead_time_days.{pool.pricing}", user, user)
    p = cat.priors
    spot = pool.pricing == "spot" and p.spot_lead_time_factor is not None
    base = "on_demand" if spot else pool.pricing
    lead = draws.get(f"assumptions.lead_time_days.{base}", None, p.lead_time_days[base].value)
    if p.lead_time_reference_chips is not None and p.lead_time_size_elasticity is not None:
        ref = draws.get("priors.lead_time_reference_chips", None, p.lead_time_reference_chips.value)
        e = draws.get("priors.lead_time_size_elasticity", None, p.lead_time_size_elasticity.value)
        lead = lead * (_capped_size(cat, pool.count, draws) / ref) ** e
    if p.lead_time_provider_factor:
        kind = provider_kind(cat, pool)
        factor = p.lead_time_provider_factor[kind].value
        lead = lead * draws.get(f"priors.lead_time_provider_factor.{kind}", None, factor)
    if spot:
        assert p.spot_lead_time_factor is not None
        lead = lead * draws.get("priors.spot_lead_time_factor", None, p.spot_lead_time_factor.value)
    bounded: FloatArray = np.minimum(np.asarray(lead, dtype=float), MAX_LEAD_TIME_DAYS)
    return bounded


__all__ = ["MAX_LEAD_TIME_DAYS", "lead_time_days", "provider_kind", "spot_preemption_prior"]
