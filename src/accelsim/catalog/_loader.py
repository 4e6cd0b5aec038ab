"""Build catalogs from the shipped data files and from user files, and hold the active one.

The built-in catalog is read once per process (``functools.cache``) from
``accelsim/catalog/data/chips.yaml``, ``data/prices/*.yaml`` and the priors files through
:mod:`importlib.resources`, so it works from a wheel or a zip as well as from a checkout.
:func:`load` merges a user file over it and makes the result the *active* catalog of this
process; :func:`reset` goes back to the built-ins. The active catalog is only the default of
the studies started in this process: a study snapshots it once, at call time, and carries
that :class:`Catalog` (chips, price sheets, priors) to every worker, so no worker ever reads
this module's state.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast, get_args

from pydantic import BaseModel, ConfigDict, ValidationError

from accelsim._yaml import line_of, load_yaml, load_yaml_text, to_plain
from accelsim.catalog._model_presets import ModelPreset, model_presets
from accelsim.catalog._priors import Prior, Priors, priors
from accelsim.catalog._scaling import ScalingDefaults, scaling_defaults
from accelsim.catalog._schema import (
    PRICING_MODELS,
    Chip,
    Offer,
    OnPremSite,
    PriceSheet,
    Pricing,
)
from accelsim.catalog._serving_priors import ServingPriors, serving_priors
from accelsim.catalog.posterior import CalibratedPrior
from accelsim.errors import (
    OfferNotFoundError,
    ScenarioFileError,
    UnknownChipError,
    UnknownModelError,
    close_matches,
)

_HOURS_PER_YEAR = 365.25 * 24.0  # calendar constant, for ranking purchases per hour


QUOTABLE = ("on_demand", "spot", "commit_1y", "commit_3y")
"""Pricing models a quote states as one price per chip-hour (``accelsim catalog quote``)."""


def quote_command(chip: str, provider: str, pricing: str, region: str | None = None) -> str:
    """The sentence that ends an error naming a missing offer: the ``accelsim catalog quote``
    command that writes a sheet for it, filled in but for the price (empty for pricing a
    quote cannot state: capacity blocks have windows, on-prem offers a purchase price)."""
    if pricing not in QUOTABLE:
        return ""
    where = f" --region {region}" if region is not None else ""
    today = datetime.date.today().isoformat()
    return (
        f" With a quoted price, write a sheet and pass it with --prices: accelsim catalog quote "
        f"--chip {chip} --provider {provider} --pricing {pricing}{where} "
        f"--usd-per-chip-hour PRICE --as-of {today} -o my_prices.yaml"
    )


class _CatalogFile(BaseModel):
    """Shape of a catalog file: optional ``chips`` and ``price_sheets`` lists, and the
    priors of a saved catalog (:func:`save`): ``priors``, ``serving_priors`` (whole) and
    the ``calibration`` records."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    chips: tuple[Chip, ...] = ()
    price_sheets: tuple[PriceSheet, ...] = ()
    priors: Priors | None = None
    serving_priors: ServingPriors | None = None
    calibration: tuple[CalibratedPrior, ...] = ()


def _check_pricing(pricing: str) -> Pricing:
    if pricing not in get_args(Pricing):
        raise ValueError(
            f"unknown pricing {pricing!r}; expected one of {', '.join(PRICING_MODELS)}"
        )
    return cast(Pricing, pricing)


def _offer_rank(offer: Offer) -> tuple[float, str]:
    # Rented offers rank by hourly price, bought ones by purchase price spread over their life.
    if offer.usd_per_chip_hour is not None:
        hourly = offer.usd_per_chip_hour
    else:
        purchase = offer.purchase_usd_per_chip or math.inf
        hourly = purchase / ((offer.amortization_years or math.inf) * _HOURS_PER_YEAR)
    return hourly, f"{offer.provider}/{offer.region or ''}"


@dataclass(frozen=True)
class Catalog:
    """Everything a study reads from the catalog: chips, price sheets, priors, defaults.

    Immutable and picklable: a study carries its catalog to every worker. Build one with
    :func:`builtin_catalog` or :func:`load`, or directly from validated models (the priors,
    scaling defaults, serving priors and model presets default to the built-ins; use
    ``dataclasses.replace(cat, priors=...)`` for others); construction checks that every
    offer names a chip of the catalog and that every sheet with ``on_prem`` offers carries
    site assumptions.
    """

    chips: Mapping[str, Chip]
    sheets: Mapping[str, PriceSheet]
    priors: Priors = field(default_factory=priors)
    """The sourced priors behind unset assumptions."""
    scaling: ScalingDefaults = field(default_factory=scaling_defaults)
    """Defaults of the scaling model (communication overlap)."""
    serving_priors: ServingPriors = field(default_factory=serving_priors)
    """The priors of serving workloads."""
    model_presets: Mapping[str, ModelPreset] = field(default_factory=model_presets)
    """Model presets by id."""
    calibration: tuple[CalibratedPrior, ...] = ()
    """What :func:`accelsim.catalog.calibrate` changed: each calibrated prior with its
    evidence, prior and posterior, by name; empty for a catalog not calibrated."""
    _index: Mapping[tuple[str, str, str], tuple[Offer, ...]] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "chips", MappingProxyType(dict(self.chips)))
        object.__setattr__(self, "sheets", MappingProxyType(dict(self.sheets)))
        object.__setattr__(self, "model_presets", MappingProxyType(dict(self.model_presets)))
        index: dict[tuple[str, str, str], list[Offer]] = {}
        for sheet in self.sheets.values():
            if sheet.site is None and any(o.pricing == "on_prem" for o in sheet.offers):
                raise ValueError(
                    f"price sheet {sheet.provider!r} has on_prem offers but no site assumptions"
                )
            for offer in sheet.offers:
                if offer.chip not in self.chips:
                    raise UnknownChipError(offer.chip, self.chips)
                index.setdefault((offer.chip, offer.provider, offer.pricing), []).append(offer)
        frozen = {k: tuple(sorted(v, key=_offer_rank)) for k, v in index.items()}
        object.__setattr__(self, "_index", MappingProxyType(frozen))

    def __reduce__(self) -> tuple[Any, ...]:
        # Mapping proxies do not pickle: rebuild from plain dicts (the index is recomputed).
        args = (
            dict(self.chips),
            dict(self.sheets),
            self.priors,
            self.scaling,
            self.serving_priors,
            dict(self.model_presets),
            self.calibration,
        )
        return (type(self), args)

    def digest(self) -> str:
        """SHA-256 of everything in the catalog that decides a study's numbers: chips,
        price sheets (offers, sites, dates), priors, scaling defaults, serving priors and
        model presets, as canonical JSON. Two catalogs with one digest price alike; a
        study store records it, so a resume with an edited price sheet is refused.

        Examples
        --------
        >>> len(builtin_catalog().digest())
        64
        """

        def plain(value: Any) -> Any:
            if isinstance(value, BaseModel):
                return value.model_dump(mode="json")
            return asdict(value)

        doc = {
            "chips": {k: plain(v) for k, v in sorted(self.chips.items())},
            "sheets": {k: plain(v) for k, v in sorted(self.sheets.items())},
            "priors": plain(self.priors),
            "scaling": plain(self.scaling),
            "serving_priors": plain(self.serving_priors),
            "model_presets": {k: plain(v) for k, v in sorted(self.model_presets.items())},
        }
        text = json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    @classmethod
    def from_models(cls, chips: Iterable[Chip], sheets: Iterable[PriceSheet]) -> Catalog:
        """Catalog from chip and sheet models; ids must be unique."""
        chip_map: dict[str, Chip] = {}
        for c in chips:
            if c.id in chip_map:
                raise ValueError(f"duplicate chip id {c.id!r}")
            chip_map[c.id] = c
        sheet_map: dict[str, PriceSheet] = {}
        for s in sheets:
            if s.provider in sheet_map:
                raise ValueError(f"duplicate price sheet for provider {s.provider!r}")
            sheet_map[s.provider] = s
        return cls(chips=chip_map, sheets=sheet_map)

    def chip(self, chip_id: str) -> Chip:
        """The chip with id ``chip_id`` (case-insensitive); unknown ids name close matches."""
        try:
            return self.chips[chip_id.strip().lower()]
        except KeyError:
            raise UnknownChipError(chip_id, self.chips) from None

    def model_preset(self, model_id: str) -> ModelPreset:
        """The model preset with id ``model_id`` (case-insensitive); unknown ids name close
        matches."""
        try:
            return self.model_presets[model_id.strip().lower()]
        except KeyError:
            raise UnknownModelError(model_id, self.model_presets) from None

    def offers(
        self, chip: str | None = None, provider: str | None = None, pricing: str | None = None
    ) -> list[Offer]:
        """Offers matching every given filter, cheapest first within each (chip, provider)."""
        chip_id = self.chip(chip).id if chip is not None else None
        prov = provider.strip().lower() if provider is not None else None
        price_model = _check_pricing(pricing) if pricing is not None else None
        return [
            o
            for (c, p, m), group in self._index.items()
            if (chip_id is None or c == chip_id)
            and (prov is None or p == prov)
            and (price_model is None or m == price_model)
            for o in group
        ]

    def price(
        self, chip: str, provider: str, pricing: str = "on_demand", region: str | None = None
    ) -> Offer:
        """The offer for (chip, provider, pricing); the cheapest region unless one is given."""
        chip_id = self.chip(chip).id
        prov = provider.strip().lower()
        price_model = _check_pricing(pricing)
        quote = quote_command(chip_id, prov, price_model, region)
        if prov not in self.sheets:
            hint = close_matches(prov, self.sheets)
            raise OfferNotFoundError(
                f"unknown provider {provider!r}"
                + (f"; did you mean {', '.join(map(repr, hint))}?" if hint else "")
                + f" (known providers: {', '.join(sorted(self.sheets))}).{quote}"
            )
        group = self._index.get((chip_id, prov, price_model), ())
        if region is not None:
            group = tuple(o for o in group if (o.region or "").lower() == region.strip().lower())
        if group:
            return group[0]
        missing = self._missing_message(chip_id, prov, price_model, region) + quote
        unpublished = self.sheets[prov].unpublished(chip_id, price_model, region)
        if unpublished is not None:  # the data says the provider publishes no such price
            raise OfferNotFoundError(f"{unpublished.message(prov)} {missing}")
        raise OfferNotFoundError(missing)

    def _missing_message(self, chip_id: str, prov: str, pricing: str, region: str | None) -> str:
        where = f" in region {region!r}" if region is not None else ""
        others = sorted({p for (c, p, m) in self._index if c == chip_id and m == pricing})
        models = [m for m in PRICING_MODELS if (chip_id, prov, m) in self._index]
        regions = sorted({o.region or "-" for o in self._index.get((chip_id, prov, pricing), ())})
        msg = f"no {pricing} offer for chip {chip_id!r} from provider {prov!r}{where}. "
        msg += f"Providers offering {chip_id!r} at {pricing}: "
        msg += (", ".join(others) if others else "none") + ". "
        msg += f"Pricing models {prov!r} has for {chip_id!r}: "
        msg += (", ".join(models) if models else "none") + "."
        if region is not None and regions:
            msg += f" Regions {prov!r} has for it at {pricing}: {', '.join(regions)}."
        return msg

    def cheapest(self, chip: str, pricing: str = "on_demand") -> Offer | None:
        """Cheapest offer for ``chip`` at ``pricing`` over all providers, or None if none."""
        found = self.offers(chip=chip, pricing=pricing)
        return min(found, key=_offer_rank) if found else None

    def site(self, provider: str = "on_prem") -> OnPremSite:
        """Site assumptions of the ``provider`` price sheet."""
        sheet = self.sheets.get(provider.strip().lower())
        if sheet is None or sheet.site is None:
            with_site = sorted(p for p, s in self.sheets.items() if s.site is not None)
            raise OfferNotFoundError(
                f"price sheet {provider!r} has no on-prem site assumptions; "
                f"sheets with a site: {', '.join(with_site) or 'none'}"
            )
        return sheet.site

    def calibrated(
        self,
        records: Iterable[CalibratedPrior],
        *,
        efficiency: Mapping[str, Prior] | None = None,
        efficiency_workload: Mapping[str, Prior] | None = None,
        mfu: Mapping[str, Prior] | None = None,
        mfu_chips: Mapping[str, Prior] | None = None,
        failure_rate: Prior | None = None,
    ) -> Catalog:
        """This catalog with posteriors laid over its priors and ``records`` added to
        :attr:`calibration` (a record of the same name replaced): serving efficiencies by
        chip and by measured configuration (``efficiency_by_chip``,
        ``efficiency_by_workload``), reference MFUs and their measured scales
        (``mfu_reference_by_chip``, ``mfu_reference_chips_by_chip``) and the job
        interruption rate (``failure_rate_per_chip_hour``)."""
        sp, p = self.serving_priors, self.priors
        serving = sp.model_copy(
            update={
                "efficiency_by_chip": {**sp.efficiency_by_chip, **(efficiency or {})},
                "efficiency_by_workload": {
                    **sp.efficiency_by_workload,
                    **(efficiency_workload or {}),
                },
            }
        )
        priors = p.model_copy(
            update={
                "mfu_reference_by_chip": {**p.mfu_reference_by_chip, **(mfu or {})},
                "mfu_reference_chips_by_chip": {
                    **p.mfu_reference_chips_by_chip,
                    **(mfu_chips or {}),
                },
                "failure_rate_per_chip_hour": failure_rate or p.failure_rate_per_chip_hour,
            }
        )
        new = {r.name: r for r in records}
        kept = [r for r in self.calibration if r.name not in new]
        ordered = tuple(sorted([*kept, *new.values()], key=lambda r: r.name))
        return replace(self, serving_priors=serving, priors=priors, calibration=ordered)

    def merged(self, chips: Iterable[Chip], sheets: Iterable[PriceSheet]) -> Catalog:
        """This catalog with ``chips`` and ``sheets`` laid over it.

        A chip replaces the chip of the same id. A sheet's offers replace every offer of the
        same (provider, chip, pricing); its name and site (if given) replace the sheet's. The
        built-in sheet's ``not_published`` entries stay unless the new sheet says otherwise:
        an offer or a ``not_published`` entry of the new sheet for the same (chip, pricing)
        replaces them.
        """
        chip_map = dict(self.chips)
        chip_map.update({c.id: c for c in chips})
        sheet_map = dict(self.sheets)
        for new in sheets:
            old = sheet_map.get(new.provider)
            if old is None:
                sheet_map[new.provider] = new
                continue
            replaced = {(o.chip, o.pricing) for o in new.offers}
            kept = tuple(o for o in old.offers if (o.chip, o.pricing) not in replaced)
            restated = replaced | {(e.chip, e.pricing) for e in new.not_published}
            still = tuple(e for e in old.not_published if (e.chip, e.pricing) not in restated)
            sheet_map[new.provider] = PriceSheet(
                provider=new.provider,
                name=new.name,
                offers=kept + new.offers,
                site=new.site if new.site is not None else old.site,
                not_published=still + new.not_published,
            )
        return replace(self, chips=chip_map, sheets=sheet_map)


def _format_errors(source: str, doc: Any, exc: ValidationError) -> str:
    lines = []
    for err in exc.errors(include_url=False):
        loc = tuple(err["loc"])
        line = line_of(doc, loc)
        where = f"{source}:{line}" if line is not None else source
        path = ".".join(str(part) for part in loc) or "<root>"
        lines.append(f"{where}: {path}: {err['msg']}")
    return "\n".join(lines)


def _parse(doc: Any, source: str) -> _CatalogFile:
    if doc is None:
        return _CatalogFile()
    try:
        return _CatalogFile.model_validate(to_plain(doc))
    except ValidationError as exc:
        raise ScenarioFileError(_format_errors(source, doc, exc)) from None


def _data_dir() -> Any:
    return resources.files("accelsim.catalog").joinpath("data")


@functools.cache
def builtin_catalog() -> Catalog:
    """The catalog shipped with accelsim (read once per process)."""
    data = _data_dir()
    chips_file = data.joinpath("chips.yaml")
    text = chips_file.read_text("utf-8")
    parsed = _parse(load_yaml_text(text, "chips.yaml", aliases=True), "chips.yaml")
    sheets: list[PriceSheet] = []
    for entry in sorted(data.joinpath("prices").iterdir(), key=lambda t: t.name):
        if not entry.name.endswith(".yaml"):
            continue
        name = f"prices/{entry.name}"
        doc = load_yaml_text(entry.read_text("utf-8"), name, aliases=True)
        try:
            sheets.append(PriceSheet.model_validate(to_plain(doc)))
        except ValidationError as exc:
            raise ScenarioFileError(_format_errors(name, doc, exc)) from None
    return Catalog.from_models(parsed.chips, sheets)


_active: Catalog | None = None


def active() -> Catalog:
    """The catalog lookups use: the last :func:`load`-ed one, else the built-in catalog."""
    return _active if _active is not None else builtin_catalog()


def load(path: str | Path) -> Catalog:
    """Read a user catalog file, merge it over the built-ins and make it the active catalog.

    The file (YAML 1.2) may hold a ``chips:`` list and a ``price_sheets:`` list with the same
    fields as the built-in data. User chips replace built-in chips of the same id; user offers
    replace built-in offers of the same (provider, chip, pricing). A user sheet keeps its
    provider's built-in ``not_published`` entries except those it restates (an offer or a
    ``not_published`` entry for the same chip and pricing). From then on every lookup in
    *this process* (``chip``, ``price``, ``offers``, ...) uses the merged catalog, until
    :func:`reset` or the next :func:`load`; loading twice merges over the built-ins each time,
    not over the previous load. Worker processes started with ``spawn`` do not inherit it.

    Raises
    ------
    ScenarioFileError
        If the file cannot be parsed or validated; the message names file, line and field.
    """
    global _active
    source = str(path)
    doc = load_yaml(path)
    parsed = _parse(doc, source)
    try:
        catalog = builtin_catalog().merged(parsed.chips, parsed.price_sheets)
    except UnknownChipError as exc:
        raise _merge_error(source, doc, _offer_loc(parsed, exc.chip_id), exc) from None
    except ValueError as exc:  # a sheet with on_prem offers and no site, here or built in
        raise _merge_error(source, doc, _sheet_loc(parsed, str(exc)), exc) from None
    catalog = replace(
        catalog,
        priors=parsed.priors or catalog.priors,
        serving_priors=parsed.serving_priors or catalog.serving_priors,
        calibration=parsed.calibration,
    )
    _active = catalog
    return catalog


def save(catalog: Catalog, path: str | Path) -> Path:
    """Write ``catalog`` to ``path`` so that :func:`load` gives it back: its chips, price
    sheets, priors, serving priors and calibration records (JSON, which is YAML 1.2). The
    scaling defaults and model presets are the built-ins' and are not written."""
    doc = {
        "chips": [c.model_dump(mode="json") for c in catalog.chips.values()],
        "price_sheets": [s.model_dump(mode="json") for s in catalog.sheets.values()],
        "priors": catalog.priors.model_dump(mode="json"),
        "serving_priors": catalog.serving_priors.model_dump(mode="json"),
        "calibration": [r.model_dump(mode="json") for r in catalog.calibration],
    }
    out = Path(path)
    out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return out


def _merge_error(source: str, doc: Any, loc: tuple[str | int, ...], exc: Exception) -> Exception:
    line = line_of(doc, loc) if loc else None
    where = f"{source}:{line}" if line is not None else source
    return ScenarioFileError(f"{where}: {'.'.join(map(str, loc)) or 'price_sheets'}: {exc}")


def _offer_loc(parsed: _CatalogFile, chip_id: str) -> tuple[str | int, ...]:
    for i, sheet in enumerate(parsed.price_sheets):
        for j, offer in enumerate(sheet.offers):
            if offer.chip == chip_id:
                return ("price_sheets", i, "offers", j, "chip")
    return ()


def _sheet_loc(parsed: _CatalogFile, message: str) -> tuple[str | int, ...]:
    for i, sheet in enumerate(parsed.price_sheets):
        if repr(sheet.provider) in message:
            return ("price_sheets", i, "provider")
    return ()


def activate(catalog: Catalog | None) -> None:
    """Make ``catalog`` the active catalog (``None``: the built-ins), as :func:`load` does.

    For readers of other formats (:func:`accelsim.catalog.load_skypilot`) and for a caller
    that puts back the catalog it found (the CLI's ``--prices``).
    """
    global _active
    _active = catalog


def reset() -> Catalog:
    """Make the built-in catalog the active one again (undoes :func:`load`)."""
    global _active
    _active = None
    return builtin_catalog()


__all__ = ["Catalog", "activate", "active", "builtin_catalog", "load", "reset", "save"]
