"""Chip catalog, price sheets and priors: specs, per-chip-hour prices, on-prem site assumptions.

Every built-in figure lives in ``catalog/data/`` with its source URL and as-of date. Lookups go
to the *active* catalog: the built-ins, or the result of the last :func:`load` of a user file
in this process (:func:`reset` goes back to the built-ins). A study (``simulate``, ``compare``,
``sweep``, ``sensitivity``) snapshots the active catalog once, when it is called, and carries
that :class:`Catalog` (chips, price sheets, priors) to every worker it uses.

Examples
--------
>>> from accelsim import catalog
>>> catalog.chip("TPU-v5p").scale_up_domain_chips
8960
>>> catalog.price("h100-sxm", provider="aws").usd_per_chip_hour
6.88
>>> sorted({o.provider for o in catalog.offers(chip="tpu-v6e")})
['gcp']
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from accelsim.catalog._age import stale_offers
from accelsim.catalog._attention_peak import attention_peak_tflops, attention_precision
from accelsim.catalog._loader import Catalog, activate, active, builtin_catalog, save
from accelsim.catalog._loader import load as _load
from accelsim.catalog._loader import reset as _reset
from accelsim.catalog._measurements import Measurements, ServingMeasurement, TrainingMeasurement
from accelsim.catalog._model_presets import (
    ATTENTION_FIELDS,
    ModelPreset,
    attention_widths_problem,
    model_preset,
    model_presets,
)
from accelsim.catalog._priors import (
    Fit,
    Framework,
    Kind,
    Prior,
    Priors,
    ProviderKind,
    Stack,
    mfu_reference_key,
)
from accelsim.catalog._quote import quote_document
from accelsim.catalog._scaling import ScalingDefaults, scaling_defaults
from accelsim.catalog._schema import (
    PRICING_MODELS,
    BlockLengths,
    BlockTerms,
    Chip,
    NotPublished,
    Offer,
    OnPremSite,
    Precision,
    PrecisionUnavailableError,
    PriceSheet,
    Pricing,
    Source,
)
from accelsim.catalog._serving_priors import (
    BYTES_PER_VALUE,
    ServingPriors,
    serving_group_key,
    serving_priors,
    serving_workload_key,
)
from accelsim.catalog._skypilot import (
    SkyPilotFeed,
    UnmappedAccelerator,
    UnmappedAcceleratorWarning,
    read_skypilot,
)
from accelsim.catalog._skypilot import load_skypilot as _load_skypilot
from accelsim.catalog.posterior import CalibratedPrior


def chips() -> dict[str, Chip]:
    """All chips of the active catalog, keyed by id (a fresh dict; edit it freely)."""
    return dict(active().chips)


def chip(chip_id: str) -> Chip:
    """The chip with id ``chip_id`` (case-insensitive).

    Raises
    ------
    accelsim.errors.UnknownChipError
        If no chip has that id; the message lists the closest ids.
    """
    return active().chip(chip_id)


def price_sheets() -> dict[str, PriceSheet]:
    """All price sheets of the active catalog, keyed by provider id (a fresh dict)."""
    return dict(active().sheets)


def price(
    chip: str, provider: str, pricing: Pricing = "on_demand", region: str | None = None
) -> Offer:
    """The offer for ``chip`` from ``provider`` under ``pricing``.

    Parameters
    ----------
    chip : str
        Chip id (case-insensitive).
    provider : str
        Provider id, e.g. ``"gcp"``, ``"aws"``, ``"azure"``, ``"lambda"``, ``"on_prem"``.
    pricing : {"on_demand", "spot", "commit_1y", "commit_3y", "capacity_block", "on_prem"}
        Pricing model.
    region : str, optional
        Region to price in; by default the cheapest region the provider lists.

    Returns
    -------
    Offer
        The matching offer (``usd_per_chip_hour`` in [USD/chip-h]).

    Raises
    ------
    accelsim.errors.UnknownChipError
        If the chip id is unknown.
    accelsim.errors.OfferNotFoundError
        If the provider has no such offer; the message names the providers that offer the
        chip at that pricing and the pricing models this provider has for it, and says "not
        published by <provider> (as of <date>, <source>)" where the sheet states that.
    """
    return active().price(chip, provider, pricing, region)


def offers(
    chip: str | None = None, provider: str | None = None, pricing: Pricing | None = None
) -> list[Offer]:
    """Offers of the active catalog matching every filter given (all offers if none)."""
    return active().offers(chip=chip, provider=provider, pricing=pricing)


def cheapest(chip: str, pricing: Pricing = "on_demand") -> Offer | None:
    """Cheapest offer for ``chip`` at ``pricing`` across providers, or None if nobody offers it.

    Rented offers compare by ``usd_per_chip_hour``; ``on_prem`` offers by purchase price per
    year of amortisation.
    """
    return active().cheapest(chip, pricing)


def site(provider: str = "on_prem") -> OnPremSite:
    """On-prem site assumptions (PUE, electricity, hosting, staff, host power) of a sheet."""
    return active().site(provider)


def priors() -> Priors:
    """The sourced priors of the active catalog (see :mod:`accelsim.catalog._priors`)."""
    return active().priors


def load(path: str | Path) -> Catalog:
    """Merge a user catalog file over the built-ins and make it the active catalog.

    The YAML file may hold a ``chips:`` list and a ``price_sheets:`` list (same fields as the
    built-in data). Chips replace built-ins of the same id; offers replace built-in offers of
    the same (provider, chip, pricing). Every later lookup in this process uses the result
    until :func:`reset`. A bad file raises :class:`accelsim.errors.ScenarioFileError` naming
    file, line and field path.
    """
    return _load(path)


def load_skypilot(path: str | Path) -> Catalog:
    """Merge SkyPilot's price feed (``<path>/<cloud>/vms.csv``) over the built-ins and make it
    the active catalog, like :func:`load`.

    ``path`` is a folder of cloud folders (``~/.sky/catalogs/v7``, or ``catalogs/v7`` of a
    checkout of skypilot-org/skypilot-catalog), a folder holding ``catalogs/v<N>``, one
    cloud's folder or one ``vms.csv``. Each accelerator row becomes a price per chip-hour per
    region, on demand and spot: a GPU instance's price over its GPU count, a TPU slice
    ``tpu-v5p-8`` over its chips (the number counts cores: 2 per chip on v5p, v4 and v3; on
    v5litepod and v6e it counts chips). The cheapest zone and instance type of a region is
    its offer. Offers are dated with the file's git commit date inside an unmodified
    checkout, else its modification date; their source is the file (``file://``) and their
    note starts with "SkyPilot catalog". Accelerators that map to no chip are named in an
    :class:`UnmappedAcceleratorWarning`, never guessed (:func:`read_skypilot` lists them).

    Raises
    ------
    accelsim.errors.ScenarioFileError
        If no ``vms.csv`` is found there, or a file is not in SkyPilot's layout.
    """
    return _load_skypilot(path)


calibrate: Callable[..., Catalog]
"""``calibrate(measurements, *, catalog=None) -> Catalog``: the priors updated by a team's
own measurements (:class:`Measurements`), a Bayesian update carried through the model.

Implemented in :func:`accelsim.study.calibrate` and bound here by ``accelsim/__init__``:
inverting a measurement needs the model and the studies, which sit above the catalog, so
the catalog layer cannot import it; the public name stays with the catalog it returns.
"""


def reset() -> Catalog:
    """Go back to the built-in catalog (undoes :func:`load`)."""
    return _reset()


__all__ = [
    "ATTENTION_FIELDS",
    "BYTES_PER_VALUE",
    "PRICING_MODELS",
    "BlockLengths",
    "BlockTerms",
    "CalibratedPrior",
    "Catalog",
    "Chip",
    "Fit",
    "Framework",
    "Kind",
    "Measurements",
    "ModelPreset",
    "NotPublished",
    "Offer",
    "OnPremSite",
    "Precision",
    "PrecisionUnavailableError",
    "PriceSheet",
    "Pricing",
    "Prior",
    "Priors",
    "ProviderKind",
    "ScalingDefaults",
    "ServingMeasurement",
    "ServingPriors",
    "SkyPilotFeed",
    "Source",
    "Stack",
    "TrainingMeasurement",
    "UnmappedAccelerator",
    "UnmappedAcceleratorWarning",
    "activate",
    "active",
    "attention_peak_tflops",
    "attention_precision",
    "attention_widths_problem",
    "builtin_catalog",
    "calibrate",
    "cheapest",
    "chip",
    "chips",
    "load",
    "load_skypilot",
    "mfu_reference_key",
    "model_preset",
    "model_presets",
    "offers",
    "price",
    "price_sheets",
    "priors",
    "quote_document",
    "read_skypilot",
    "reset",
    "save",
    "scaling_defaults",
    "serving_group_key",
    "serving_priors",
    "serving_workload_key",
    "site",
    "stale_offers",
]
