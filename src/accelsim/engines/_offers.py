"""Priors that depend on what a pool's offer publishes: one rule, read by both engines."""

from __future__ import annotations

from accelsim.catalog import Catalog
from accelsim.dists import Uncertain
from accelsim.scenario import Pool


def spot_preemption_prior(cat: Catalog, pool: Pool) -> Uncertain:
    """Prior of a spot pool's preemptions per chip-hour: the offer's rate, else the generic one.

    An offer that publishes ``preemptions_per_chip_hour`` (a provider's own figure for that
    chip) is more specific than the catalog-wide prior, so it wins; an unpriced pool or an
    offer without a figure falls back to ``priors.spot_preemptions_per_chip_hour``. The
    analytic engine and the DES both call this, so a spot pool means the same in each.
    [1/(chip*h)]
    """
    if pool.provider is not None:
        offer = cat.price(pool.chip, provider=pool.provider, pricing=pool.pricing)
        if offer.preemptions_per_chip_hour is not None:
            return offer.preemptions_per_chip_hour
    return cat.priors.spot_preemptions_per_chip_hour.value


__all__ = ["spot_preemption_prior"]
