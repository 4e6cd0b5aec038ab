"""The ``accelsim catalog`` command: the built-in chips, prices and priors as tables, and
``quote``, which writes a quoted price as a price sheet (:mod:`accelsim._cli_quote`).

Registered on the typer app by :mod:`accelsim.cli`.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Annotated

import typer

from accelsim import catalog
from accelsim._cli_output import _show
from accelsim._cli_quote import (
    QuoteChip,
    QuoteDate,
    QuoteNote,
    QuoteOutput,
    QuotePrice,
    QuotePricing,
    QuoteRegion,
    QuoteSource,
    write_quote,
)
from accelsim.demo import catalog_table
from accelsim.errors import AccelsimError
from accelsim.results import Table

_MaxPriceAge = Annotated[
    int,
    typer.Option(min=0, help="Warn about (or list) prices observed more than this many days ago."),
]


class Listing(StrEnum):
    """What ``accelsim catalog`` lists."""

    chips = "chips"
    prices = "prices"
    priors = "priors"
    quote = "quote"


def catalog_(
    what: Annotated[Listing, typer.Argument(help="What to list.", show_default=False)],
    provider: Annotated[
        str | None,
        typer.Option(
            help="Only this provider's offers (prices); the quote's provider (quote).",
            show_default=False,
        ),
    ] = None,
    mfu: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="MFU for USD per delivered PFLOP-hour (chips).")
    ] = 0.4,
    stale: Annotated[
        bool, typer.Option("--stale", help="Only prices older than --max-age-days (prices).")
    ] = False,
    max_age_days: _MaxPriceAge = 182,
    chip: QuoteChip = None,
    pricing: QuotePricing = None,
    region: QuoteRegion = None,
    usd_per_chip_hour: QuotePrice = None,
    as_of: QuoteDate = None,
    source: QuoteSource = None,
    note: QuoteNote = None,
    output: QuoteOutput = None,
) -> None:
    """The built-in chips, prices or priors with their sources and dates, or 'quote'.

    'quote' writes a quoted price as a price sheet for --prices, for example:
      accelsim catalog quote --chip tpu-v5p --provider gcp --pricing commit_1y
      --usd-per-chip-hour 2.9 --as-of 2026-11-01 -o my_prices.yaml
    """
    given = {
        "chip": chip,
        "provider": provider,
        "pricing": pricing,
        "region": region,
        "usd_per_chip_hour": usd_per_chip_hour,
        "as_of": as_of,
        "source": source,
        "note": note,
    }
    if what is Listing.quote:
        write_quote(given, output)
        return
    stray = [k for k, v in given.items() if v is not None and k != "provider"]
    if stray or output is not None:
        flags = [f"--{k.replace('_', '-')}" for k in stray] + (["-o"] if output else [])
        raise AccelsimError(f"{', '.join(flags)} belong to 'accelsim catalog quote'")
    if not 0.0 < mfu <= 1.0:
        raise AccelsimError(f"--mfu must lie in (0, 1], got {mfu:g}")
    if what is Listing.chips:
        _show(catalog_table(mfu=mfu))
        return
    if what is Listing.priors:
        _show_priors()
        return
    _show_prices(provider, stale, max_age_days)


def _show_priors() -> None:
    """The priors table: name, value, unit, published or assumption, first source."""
    rows = [
        [
            name,
            _describe(prior.value),
            prior.unit,
            "assumption" if prior.assumption else "published",
            prior.sources[0].url,
        ]
        for name, prior in catalog.priors().by_name().items()
    ]
    _show(Table(("prior", "value", "unit", "basis", "first source"), _cells(rows)))


def _show_prices(provider: str | None, stale: bool, max_age_days: int) -> None:
    """The offers table (one provider's, or only those older than ``max_age_days``), with
    the windows each capacity block is sold in."""
    offers = catalog.offers(provider=provider)
    if stale:
        old = {id(o) for o in catalog.stale_offers(max_age_days=max_age_days)}
        offers = [o for o in offers if id(o) in old]
        if not offers:
            print(f"no offer is older than {max_age_days} days")
            return
    if not offers:
        raise AccelsimError(
            f"no offers for provider {provider!r}; providers: {', '.join(catalog.price_sheets())}"
        )
    rows = [
        [
            o.provider,
            o.chip,
            o.pricing,
            f"{o.usd_per_chip_hour:.3f}"
            if o.usd_per_chip_hour is not None
            else f"buy {o.purchase_usd_per_chip:,.0f}",
            str(o.as_of),
            o.source,
        ]
        for o in sorted(offers, key=lambda o: (o.provider, o.chip, o.pricing))
    ]
    header = ("provider", "chip", "pricing", "USD/chip-h", "as of", "source")
    # a capacity block is bought by the window: say which windows each one is sold in
    windows = [
        f"capacity-block windows of {o.provider} {o.chip}: {o.block.describe()} "
        f"({o.block.source}, as of {o.block.as_of})"
        for o in sorted(offers, key=lambda o: (o.provider, o.chip, o.region or ""))
        if o.block is not None
    ]
    _show(Table(header, _cells(rows), note="\n".join(windows)))


def _cells(rows: Sequence[Sequence[object]]) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(str(c) for c in row) for row in rows)


def _describe(value: object) -> str:
    """A prior's value as its YAML form, e.g. ``pert(low=0.3, mode=0.42, high=0.56)``."""
    if isinstance(value, int | float):
        return f"{value:g}"
    fields = value.model_dump(exclude={"dist"})  # type: ignore[attr-defined]
    inner = ", ".join(
        f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in fields.items()
    )
    return f"{value.dist}({inner})"  # type: ignore[attr-defined]
