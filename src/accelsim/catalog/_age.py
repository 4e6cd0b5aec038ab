"""How old the prices are: list the offers whose ``as_of`` date is older than a threshold.

Cloud prices move by tens of percent within months; every offer carries the date it was
observed, and :func:`stale_offers` names those a study should not trust silently.

Examples
--------
>>> import datetime
>>> from accelsim import catalog
>>> old = catalog.stale_offers(as_of=datetime.date(2026, 11, 25), max_age_days=182)
>>> all((datetime.date(2026, 11, 25) - o.as_of).days > 182 for o in old)
True
>>> old == sorted(old, key=lambda o: (o.as_of, o.provider, o.chip, o.pricing, o.region or ""))
True
"""

from __future__ import annotations

import datetime

from accelsim.catalog._loader import Catalog, active
from accelsim.catalog._schema import Offer

DEFAULT_MAX_AGE_DAYS = 182
"""Default staleness threshold: about six months [days]."""


def stale_offers(
    as_of: datetime.date | None = None,
    max_age_days: int = DEFAULT_MAX_AGE_DAYS,
    catalog: Catalog | None = None,
) -> list[Offer]:
    """Offers observed more than ``max_age_days`` before ``as_of``, oldest first.

    Parameters
    ----------
    as_of : datetime.date, optional
        Reference date; by default today.
    max_age_days : int, default 182
        An offer is stale when ``(as_of - offer.as_of).days > max_age_days``. [days]
    catalog : Catalog, optional
        Catalog to inspect; by default the active one (built-ins or the last ``load``).

    Returns
    -------
    list of Offer
        Stale offers of every provider and pricing model (``on_prem`` included), sorted by
        date, then provider, chip, pricing and region.

    Raises
    ------
    ValueError
        If ``max_age_days`` is negative.
    """
    if max_age_days < 0:
        raise ValueError(f"max_age_days must be >= 0, got {max_age_days}")
    today = as_of if as_of is not None else datetime.date.today()
    cat = catalog if catalog is not None else active()
    old = [
        o
        for sheet in cat.sheets.values()
        for o in sheet.offers
        if (today - o.as_of).days > max_age_days
    ]
    return sorted(old, key=lambda o: (o.as_of, o.provider, o.chip, o.pricing, o.region or ""))


__all__ = ["DEFAULT_MAX_AGE_DAYS", "stale_offers"]
