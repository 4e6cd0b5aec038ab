"""Frozen pydantic models of the catalog: chips, offers, on-prem site assumptions, price sheets.

Every model forbids unknown keys (a typo is an error, not a silent default) and carries its
source: a chip lists :class:`Source` entries, an offer names its source URL and as-of date.
Cross-field rules live in ``model_validator`` methods on the model they constrain.
"""

from __future__ import annotations

import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)

from accelsim.errors import AccelsimError

Pricing = Literal["on_demand", "spot", "commit_1y", "commit_3y", "capacity_block", "on_prem"]
"""How capacity is paid for: by the hour (on-demand, spot), for a committed term (1 or 3
years), for a window bought ahead (``capacity_block``: e.g. EC2 Capacity Blocks for ML, paid
whole whether used or not), or bought."""

Precision = Literal["bf16", "fp8", "fp32", "int8", "fp4"]
"""Arithmetic precision of a peak-throughput figure (int8 in TOP/s, counted like TFLOP/s)."""

PRICING_MODELS: tuple[Pricing, ...] = (
    "on_demand",
    "spot",
    "commit_1y",
    "commit_3y",
    "capacity_block",
    "on_prem",
)

Url = Annotated[str, StringConstraints(pattern=r"^https?://\S+$")]
# An offer read from a file on disk (a price feed such as SkyPilot's catalog) names that file.
OfferUrl = Annotated[str, StringConstraints(pattern=r"^(https?|file)://\S+$")]
ChipId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9.\-]*$", max_length=64)]
ProviderId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_\-]*$", max_length=64)]
PositiveFloat = Annotated[float, Field(gt=0)]
NonNegativeFloat = Annotated[float, Field(ge=0)]


class PrecisionUnavailableError(AccelsimError, ValueError):
    """A chip has no published peak for the requested precision (e.g. FP8 on an A100)."""


def _not_in_future(day: datetime.date) -> datetime.date:
    """An as-of date is when a figure was known to hold: not after today (UTC, a day of
    slack for the time zones east of it)."""
    latest = datetime.datetime.now(datetime.UTC).date() + datetime.timedelta(days=1)
    if day > latest:
        raise ValueError(
            f"as_of {day.isoformat()} is in the future (today is "
            f"{datetime.datetime.now(datetime.UTC).date().isoformat()}): it is the date a figure "
            "was known to hold"
        )
    return day


AsOf = Annotated[datetime.date, AfterValidator(_not_in_future)]
"""A date a figure is known to hold as of: not in the future."""


class _Frozen(BaseModel):
    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        allow_inf_nan=False,
        use_attribute_docstrings=True,
        str_max_length=10_000,  # ids and notes; a 1 MB id would slow every message
    )


class Source(_Frozen):
    """Where a figure comes from, and the date it is known to hold."""

    url: Url
    """Address of the source document."""
    as_of: AsOf
    """Date the figure was published or retrieved."""
    note: str = ""
    """What the source says, derivations, conflicts and assumptions."""


class Chip(_Frozen):
    """One accelerator (or the CPU-server baseline) with its peak rates and fabric.

    Throughputs are dense (no structured sparsity). ``interconnect_gbps`` is the scale-up
    (chip-to-chip) bandwidth per chip, bidirectional aggregate; ``scale_out_gbps`` is the
    per-chip bandwidth across scale-up domains (NIC or TPU DCN share).
    """

    id: ChipId
    """Catalog id, lower case, e.g. ``h100-sxm``."""
    name: str
    """Human-readable product name."""
    vendor: str
    """Manufacturer."""
    kind: Literal["gpu", "tpu", "cpu"]
    """Device class."""
    software_stack: Literal["cuda", "rocm", "xla", "cpu"]
    """Native programming stack (a TPU runs XLA programs)."""
    bf16_tflops: PositiveFloat
    """Dense BF16 peak [TFLOP/s] (V100: its FP16 tensor-core peak; it has no BF16)."""
    fp8_tflops: PositiveFloat | None
    """Dense FP8 peak [TFLOP/s]; None where the chip has no FP8."""
    fp32_tflops: PositiveFloat | None
    """Non-tensor FP32 peak [TFLOP/s]; None where not published."""
    int8_tflops: PositiveFloat | None = None
    """Dense INT8 peak [TOP/s]; None where the chip has none or no figure is published."""
    fp4_tflops: PositiveFloat | None = None
    """Dense FP4 peak [TFLOP/s]; None where the chip has no FP4 (only Blackwell in the catalog)."""
    hbm_gib: PositiveFloat
    """Device memory per chip [GiB] (host DRAM for the CPU baseline)."""
    hbm_tbps: PositiveFloat
    """Device memory bandwidth per chip [TB/s]."""
    interconnect_gbps: NonNegativeFloat
    """Scale-up chip-to-chip bandwidth per chip, bidirectional aggregate [GB/s]."""
    scale_up_domain_chips: int = Field(ge=1)
    """Chips in one scale-up domain (NVLink node/rack, TPU pod) [chips]."""
    slice_sizes: tuple[int, ...] | None = None
    """TPU only: the valid slice sizes below ``slice_multiple`` (e.g. 4, 8, 16, 32) [chips];
    a job asking for whole domains gets the smallest valid slice that holds it."""
    slice_multiple: int | None = Field(default=None, ge=1)
    """TPU only: above ``slice_sizes``, any multiple of this is a valid slice [chips]."""
    scale_out_gbps: PositiveFloat
    """Bandwidth per chip across scale-up domains (NIC share or TPU DCN share) [GB/s]."""
    tdp_watts: PositiveFloat
    """Power per chip [W]: rated TDP, or Google's measured maximum for TPU v3/v4."""
    tdp_is_assumption: bool
    """True where the vendor publishes no power figure and ``tdp_watts`` is an assumption."""
    year: int = Field(ge=2000, le=2100)
    """Release year."""
    sources: tuple[Source, ...] = Field(min_length=1)
    """Sources of the figures above, with notes on derived or conflicting values."""

    @model_validator(mode="after")
    def _stack_matches_kind(self) -> Chip:
        allowed = {"gpu": ("cuda", "rocm"), "tpu": ("xla",), "cpu": ("cpu",)}[self.kind]
        if self.software_stack not in allowed:
            msg = f"software_stack {self.software_stack!r} does not fit kind {self.kind!r}"
            raise ValueError(f"{msg}; allowed: {', '.join(allowed)}")
        return self

    @property
    def hbm_bytes(self) -> float:
        """Device memory of one chip, ``hbm_gib`` in bytes. [B]"""
        return self.hbm_gib * 2.0**30

    def peak_tflops(self, precision: Precision) -> float:
        """Dense peak throughput at ``precision``.

        Parameters
        ----------
        precision : {"bf16", "fp8", "fp32", "int8", "fp4"}
            Arithmetic precision (INT8 peaks are in TOP/s).

        Returns
        -------
        float
            Peak throughput per chip. [TFLOP/s]

        Raises
        ------
        PrecisionUnavailableError
            If the catalog has no peak at that precision for this chip (e.g. FP8 on an A100).

        Examples
        --------
        >>> from accelsim import catalog
        >>> catalog.chip("h100-sxm").peak_tflops("fp8")
        1979.0
        """
        peaks = {
            "bf16": self.bf16_tflops,
            "fp8": self.fp8_tflops,
            "fp32": self.fp32_tflops,
            "int8": self.int8_tflops,
            "fp4": self.fp4_tflops,
        }
        if precision not in peaks:
            raise PrecisionUnavailableError(
                f"unknown precision {precision!r}; expected one of {', '.join(peaks)}"
            )
        value = peaks[precision]
        if value is None:
            have = ", ".join(p for p, v in peaks.items() if v is not None)
            raise PrecisionUnavailableError(
                f"chip {self.id!r} ({self.name}) has no {precision} peak in the catalog; "
                f"available precisions: {have}"
            )
        return value


class BlockLengths(_Frozen):
    """A run of allowed window lengths: ``min_days``, ``min_days + step_days``, ... ``max_days``."""

    min_days: int = Field(ge=1)
    """Shortest window of the run [d]."""
    max_days: int = Field(ge=1)
    """Longest window of the run [d]."""
    step_days: int = Field(default=1, ge=1)
    """Increment between allowed windows [d]."""

    @model_validator(mode="after")
    def _ordered(self) -> BlockLengths:
        if self.max_days < self.min_days:
            raise ValueError(f"max_days {self.max_days} < min_days {self.min_days}")
        if (self.max_days - self.min_days) % self.step_days:
            raise ValueError(
                f"max_days {self.max_days} is not min_days {self.min_days} plus a whole number "
                f"of steps of {self.step_days} d"
            )
        return self


class BlockTerms(_Frozen):
    """The window lengths a provider sells a capacity block in, with their source."""

    lengths: tuple[BlockLengths, ...] = Field(min_length=1)
    """Allowed window lengths, as runs of evenly spaced days."""
    source: Url
    """Address of the page stating the allowed lengths."""
    as_of: AsOf
    """Date the allowed lengths were known to hold."""
    note: str = ""
    """Other terms (start times, advance booking, payment)."""

    def allowed_days(self) -> tuple[int, ...]:
        """Every allowed window length, ascending [d].

        Examples
        --------
        >>> BlockTerms(lengths=[{"min_days": 1, "max_days": 3}, {"min_days": 7, "max_days": 21,
        ...     "step_days": 7}], source="https://example.com", as_of="2025-01-01").allowed_days()
        (1, 2, 3, 7, 14, 21)
        """
        days = {d for r in self.lengths for d in range(r.min_days, r.max_days + 1, r.step_days)}
        return tuple(sorted(days))

    def describe(self) -> str:
        """The allowed lengths as text, e.g. ``"1-14 d (every 1 d), 21-182 d (every 7 d)"``."""
        return ", ".join(
            f"{r.min_days}-{r.max_days} d (every {r.step_days} d)"
            if r.max_days > r.min_days
            else f"{r.min_days} d"
            for r in self.lengths
        )


class Offer(_Frozen):
    """One price for one chip from one provider under one pricing model.

    Rented capacity (every pricing but ``on_prem``) has ``usd_per_chip_hour``; bought capacity
    (``on_prem``) has ``purchase_usd_per_chip`` and ``amortization_years`` instead. A
    ``capacity_block`` offer also states the window lengths it is sold in (``block``).
    """

    provider: ProviderId
    """Provider id, e.g. ``gcp`` (the price sheet's provider)."""
    chip: ChipId
    """Catalog chip id."""
    pricing: Pricing
    """Pricing model."""
    usd_per_chip_hour: PositiveFloat | None = None
    """Price per chip-hour (instance price / chips per instance) [USD/chip-h]."""
    purchase_usd_per_chip: PositiveFloat | None = None
    """Purchase price per chip, server share included where the source says so [USD]."""
    amortization_years: PositiveFloat | None = None
    """Depreciation life of a purchase [years]."""
    region: str | None = None
    """Cloud region or market the price applies to."""
    instance: str | None = None
    """Instance or product name the price was read from."""
    preemptions_per_chip_hour: NonNegativeFloat | None = None
    """Spot preemption rate per chip-hour [1/(chip h)]; spot only; None = not known."""
    preemption_note: str | None = None
    """Evidence behind (or absence of) a preemption rate; spot only."""
    block: BlockTerms | None = None
    """The window lengths a capacity block is sold in; ``capacity_block`` offers only."""
    as_of: AsOf
    """Date the price was observed."""
    source: OfferUrl
    """Address of the price source (``file://`` for a price feed read from disk)."""
    note: str = ""
    """Derivation (e.g. instance price divided by chips) and caveats."""

    @model_validator(mode="after")
    def _pricing_fields(self) -> Offer:
        if self.pricing == "on_prem":
            if self.usd_per_chip_hour is not None:
                raise ValueError("an on_prem offer has no usd_per_chip_hour; give a purchase price")
            if self.purchase_usd_per_chip is None or self.amortization_years is None:
                raise ValueError(
                    "an on_prem offer needs purchase_usd_per_chip and amortization_years"
                )
        else:
            if self.usd_per_chip_hour is None:
                raise ValueError(f"a {self.pricing} offer needs usd_per_chip_hour (> 0)")
            if self.purchase_usd_per_chip is not None or self.amortization_years is not None:
                raise ValueError(
                    "purchase_usd_per_chip and amortization_years are for on_prem offers only"
                )
        if self.pricing != "spot" and (
            self.preemptions_per_chip_hour is not None or self.preemption_note is not None
        ):
            raise ValueError("preemptions_per_chip_hour and preemption_note are for spot only")
        if self.preemptions_per_chip_hour is not None and not self.preemption_note:
            raise ValueError("a preemption rate needs a preemption_note naming its evidence")
        if (self.block is None) == (self.pricing == "capacity_block"):
            raise ValueError(
                "a capacity_block offer needs block (the window lengths it is sold in, with "
                "their source)"
                if self.block is None
                else "block (window lengths) is for capacity_block offers only"
            )
        return self


class OnPremSite(_Frozen):
    """Site assumptions for owned hardware: facility efficiency, energy, hosting and staff."""

    pue: float = Field(ge=1)
    """Power usage effectiveness: facility power / IT power [ratio]."""
    usd_per_kwh: PositiveFloat
    """Electricity price [USD/kWh]."""
    hosting_usd_per_kw_month: NonNegativeFloat
    """Colocation fee per kW of IT load [USD/(kW month)]."""
    ops_usd_per_chip_year: NonNegativeFloat
    """Operations staff cost per chip [USD/(chip year)]."""
    host_watts_per_chip: NonNegativeFloat
    """Server power beyond the accelerator (CPUs, NICs, fans) per chip [W]."""
    sources: tuple[Source, ...] = Field(min_length=1)
    """Sources of each figure above."""


class NotPublished(_Frozen):
    """A (chip, pricing) combination a provider publishes no price for, stated in the data.

    A planner tries such combinations first (e.g. spot for a chip the provider rents only
    on demand); listing them lets a lookup say "not published by <provider>" instead of
    "unknown", with the evidence that the provider publishes no price.
    """

    chip: ChipId
    """Catalog chip id."""
    pricing: Pricing
    """Pricing model the provider publishes no price for."""
    region: str | None = None
    """Region the statement is limited to; None: every region of the provider."""
    as_of: AsOf
    """Date the statement was known to hold."""
    source: Url
    """Address of the page that shows the price is not published (or how it is sold instead)."""
    note: str = Field(min_length=1)
    """What the provider publishes instead (e.g. "capacity blocks only", "by contract")."""

    def message(self, provider: str) -> str:
        """The sentence a failed lookup reports, e.g. ``spot price for chip 'b200' not
        published by aws (as of 2025-05-15, https://...): ...``."""
        where = f" in region {self.region!r}" if self.region is not None else ""
        return (
            f"{self.pricing} price for chip {self.chip!r}{where} not published by {provider} "
            f"(as of {self.as_of.isoformat()}, {self.source}): {self.note.rstrip('.')}."
        )


class PriceSheet(_Frozen):
    """All offers of one provider; the on-prem sheet also carries its site assumptions."""

    provider: ProviderId
    """Provider id, e.g. ``gcp``, ``aws``, ``lambda``, ``on_prem``."""
    name: str
    """Human-readable provider name."""
    offers: tuple[Offer, ...]
    """The provider's offers."""
    site: OnPremSite | None = None
    """Site assumptions; a catalog requires them of a sheet with ``on_prem`` offers (a user
    sheet may omit them to keep the built-in sheet's)."""
    not_published: tuple[NotPublished, ...] = ()
    """Combinations this provider publishes no price for (see :class:`NotPublished`); none may
    also have an offer."""

    @model_validator(mode="before")
    @classmethod
    def _offers_inherit_provider(cls, data: Any) -> Any:
        # An offer inside a sheet may omit ``provider``: it is the sheet's.
        if isinstance(data, dict) and isinstance(data.get("offers"), list | tuple):
            provider = data.get("provider")
            data = {
                **data,
                "offers": [
                    {"provider": provider, **o} if isinstance(o, dict) else o
                    for o in data["offers"]
                ],
            }
        return data

    @model_validator(mode="after")
    def _consistent(self) -> PriceSheet:
        seen: set[tuple[str, str, str | None]] = set()
        for i, offer in enumerate(self.offers):
            if offer.provider != self.provider:
                raise ValueError(
                    f"offers[{i}] has provider {offer.provider!r} in sheet {self.provider!r}"
                )
            key = (offer.chip, offer.pricing, offer.region)
            if key in seen:
                raise ValueError(f"offers[{i}] duplicates (chip, pricing, region) {key}")
            seen.add(key)
        stated: set[tuple[str, str, str | None]] = set()
        for i, entry in enumerate(self.not_published):
            key = (entry.chip, entry.pricing, entry.region)
            if key in stated:
                raise ValueError(f"not_published[{i}] duplicates (chip, pricing, region) {key}")
            stated.add(key)
            priced = [
                o.region
                for o in self.offers
                if (o.chip, o.pricing) == (entry.chip, entry.pricing)
                and (entry.region is None or o.region == entry.region)
            ]
            if priced:
                raise ValueError(
                    f"not_published[{i}] says {entry.pricing} for chip {entry.chip!r} is not "
                    f"published, but the sheet has such an offer (region {priced[0]!r})"
                )
        return self

    def unpublished(
        self, chip: str, pricing: str, region: str | None = None
    ) -> NotPublished | None:
        """The entry saying ``pricing`` for ``chip`` (in ``region``) is not published, if any.

        An entry without a region covers every region; with a region, only that one
        (compared case-insensitively).
        """
        want = region.strip().lower() if region is not None else None
        for entry in self.not_published:
            if (entry.chip, entry.pricing) != (chip, pricing):
                continue
            if entry.region is None or (want is not None and entry.region.lower() == want):
                return entry
        return None


__all__ = [
    "PRICING_MODELS",
    "BlockLengths",
    "BlockTerms",
    "Chip",
    "NotPublished",
    "Offer",
    "OnPremSite",
    "Precision",
    "PrecisionUnavailableError",
    "PriceSheet",
    "Pricing",
    "Source",
]
