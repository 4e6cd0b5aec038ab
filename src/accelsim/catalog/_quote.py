"""A quoted price as a price sheet: what ``accelsim catalog quote`` writes and ``--prices`` reads.

A planner often has a price no public sheet shows (a sales quote for a commitment, a
negotiated rate). :func:`quote_document` turns one into the same YAML document
:func:`accelsim.catalog.load` reads, validated the way a loaded sheet is (the chip must be
in the catalog, the offer must be a valid :class:`~accelsim.catalog.Offer`), and merged into
an existing sheet file when there is one: an offer with the same (provider, chip, pricing,
region) is replaced, every other entry is kept.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from accelsim._yaml import load_yaml, to_plain
from accelsim.catalog._loader import QUOTABLE, Catalog, _CatalogFile, builtin_catalog
from accelsim.catalog._schema import Offer
from accelsim.errors import AccelsimError, ScenarioFileError


def _existing(path: Path | None) -> dict[str, Any]:
    """The sheet file at ``path`` as plain data (validated), or an empty document."""
    if path is None or not path.exists():
        return {"price_sheets": []}
    doc = to_plain(load_yaml(path)) or {}
    try:
        _CatalogFile.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        msg = f"{path}: {where}: {first['msg']} (not a price-sheet file)"
        raise ScenarioFileError(msg) from None
    if not isinstance(doc, dict):
        raise ScenarioFileError(f"{path}: not a price-sheet file")
    doc.setdefault("price_sheets", [])
    return doc


def quote_document(
    *,
    chip: str,
    provider: str,
    pricing: str,
    usd_per_chip_hour: float,
    as_of: datetime.date,
    source: str,
    region: str | None = None,
    note: str = "",
    into: Path | None = None,
    base: Catalog | None = None,
) -> dict[str, Any]:
    """The price-sheet document holding the quoted offer (plain data, ready to dump as YAML).

    Parameters
    ----------
    chip, provider, pricing : str
        The offer's chip id (any case), provider id and pricing model (one of
        ``on_demand``, ``spot``, ``commit_1y``, ``commit_3y``).
    usd_per_chip_hour : float
        The quoted price per chip-hour, > 0. [USD/(chip h)]
    as_of : datetime.date
        The day the quote holds for; not after today.
    source : str
        Where the quote comes from: an ``http(s)://`` or ``file://`` URL.
    region, note : str, optional
        The region the quote applies to; what the quote says (terms, volume, expiry).
    into : Path, optional
        An existing sheet file to merge the offer into.
    base : Catalog, optional
        The catalog the sheet is checked against (default: the built-ins).

    Raises
    ------
    AccelsimError
        If the pricing cannot be quoted per chip-hour, the chip is unknown, the date is in
        the future or the offer is invalid (the message names the field).
    """
    cat = builtin_catalog() if base is None else base
    if pricing not in QUOTABLE:
        raise AccelsimError(
            f"--pricing {pricing!r} cannot be quoted per chip-hour; quotable: "
            f"{', '.join(QUOTABLE)} (capacity blocks and on-prem purchases need a sheet "
            f"entry with their terms: see docs/howto.md)"
        )
    if as_of > datetime.date.today():
        raise AccelsimError(f"--as-of {as_of.isoformat()} is in the future")
    chip_id = cat.chip(chip).id
    prov = provider.strip().lower()
    try:
        offer = Offer(
            provider=prov,
            chip=chip_id,
            pricing=pricing,  # type: ignore[arg-type]  # checked against QUOTABLE above
            usd_per_chip_hour=usd_per_chip_hour,
            region=region,
            as_of=as_of,
            source=source,
            note=note
            or f"Quoted price, entered with 'accelsim catalog quote' on "
            f"{datetime.date.today().isoformat()}.",
        )
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        raise AccelsimError(f"{'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    doc = _existing(into)
    entry = offer.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
    entry.pop("provider")
    sheets: list[dict[str, Any]] = doc["price_sheets"]
    sheet = next((s for s in sheets if s.get("provider") == prov), None)
    if sheet is None:
        name = cat.sheets[prov].name if prov in cat.sheets else prov
        sheet = {"provider": prov, "name": name, "offers": []}
        sheets.append(sheet)
    key = (chip_id, pricing, region)
    sheet["offers"] = [
        o
        for o in sheet.get("offers", [])
        if (o.get("chip"), o.get("pricing"), o.get("region")) != key
    ] + [entry]
    parsed = _CatalogFile.model_validate(doc)  # the whole file, as --prices will read it
    cat.merged(parsed.chips, parsed.price_sheets)  # every chip and site is known
    return doc


__all__ = ["quote_document"]
