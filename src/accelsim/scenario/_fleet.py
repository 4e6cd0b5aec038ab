"""The fleet (:class:`Pool`), the uncertain inputs (:class:`Assumptions`) and credits."""

from __future__ import annotations

import math

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from accelsim import catalog
from accelsim.catalog import Pricing
from accelsim.dists import Uncertain
from accelsim.errors import AccelsimError
from accelsim.scenario._common import (
    _MAX_CHIPS,
    _MAX_HORIZON_DAYS,
    _MFU_MIN,
    _MIN_CHECKPOINT_INTERVAL_HOURS,
    _MIN_ENGINEERS,
    _check_range,
    _Model,
)


class Pool(_Model):
    """Chips of one kind from one provider under one pricing model."""

    chip: str
    """Chip id from the catalog, e.g. ``"h100-sxm"`` or ``"tpu-v5p"``."""
    count: int = Field(gt=0, le=_MAX_CHIPS)
    """Chips in the pool [count]."""
    provider: str | None
    """Price sheet id: ``gcp``, ``aws``, ``azure``, a neocloud, or ``on_prem``. ``None``
    simulates the pool unpriced: time, chip-hours and energy only, and no cost metrics
    (for chips kept only to validate against published runs, such as ``v100``)."""
    pricing: Pricing = "on_demand"
    """``on_demand``, ``spot``, ``commit_1y``, ``commit_3y``, ``capacity_block`` or
    ``on_prem``."""
    region: str | None = None
    """Region (or market) whose offer prices the pool, e.g. ``us-east-1``; it must be one the
    provider's sheet lists for the chip and pricing. Unset: the cheapest region listed (ties
    go to the region name first in alphabetical order), and the study's
    ``extras["prices_used"]`` names the region chosen and this rule."""
    term_share: float | None = Field(default=None, ge=0, le=1)
    """Share of a committed term or capacity block (or of on-prem hardware life) charged to
    this scenario, used or not. Unset: the whole term or block, and for on-prem only the
    hours the chips are held (they are assumed reused afterwards)."""
    block_days: int | None = Field(default=None, ge=1, le=_MAX_HORIZON_DAYS)
    """Window length of a ``capacity_block`` pool, one the offer sells (e.g. 1-14 d, then
    weekly to 182 d on AWS) [d]. The window is paid whole; a run that outlasts it buys the
    next window of the same length (consecutive blocks)."""

    spare_hosts: int | None = Field(default=None, ge=0, le=_MAX_CHIPS)
    """Spare hosts a training run keeps in reserve beside ``count`` [hosts]; a host is the
    VM or TPU host of ``priors.spot_unit_chips`` (8 GPUs, 4 TPU chips). The spares are held
    and paid for the whole training (chip-hours and cost include them). A failed host goes
    to repair for ``Assumptions.repair_hours`` and a free spare takes its place, so the run
    restarts after ``restart_hours``; with every spare in repair it waits for a repair
    (0: every failure waits one). Unset: a failed host is replaced from outside the pool
    (the provider's or cluster's capacity) within ``restart_hours``, as in the runs that
    prior comes from. Not on spot pools (spares would be preempted with the run)."""
    fallback_after_preemptions: int | None = Field(default=None, ge=0, le=10**9)
    """Spot pools: move the run to on-demand capacity of the same chip and provider at its
    k-th preemption (0: never on spot) [count]. Unset: no such rule."""
    fallback_after_days: float | None = Field(default=None, gt=0, le=_MAX_HORIZON_DAYS)
    """Spot pools: move the run to on-demand once it has trained this long on spot, waits
    for capacity included [d]. Unset: no such rule. With both rules the first wins."""

    @field_validator("chip")
    @classmethod
    def _known_chip(cls, chip_id: str) -> str:
        try:
            return catalog.chip(chip_id).id
        except AccelsimError as exc:
            raise ValueError(str(exc)) from None

    @model_validator(mode="after")
    def _recovery_policy(self) -> Pool:
        falls_back = (
            self.fallback_after_preemptions is not None or self.fallback_after_days is not None
        )
        if falls_back and self.pricing != "spot":
            raise ValueError(
                f"fallback_after_preemptions and fallback_after_days apply to spot pools; a "
                f"{self.pricing} pool is not preempted: remove them or use pricing spot"
            )
        if self.spare_hosts is not None and self.pricing == "spot":
            raise ValueError(
                "spare_hosts applies to on_demand, commit and on_prem pools: spare spot hosts "
                "would be preempted with the run; use fallback_after_preemptions instead"
            )
        if falls_back and self.provider is not None:
            try:
                catalog.price(
                    self.chip, provider=self.provider, pricing="on_demand", region=self.region
                )
            except AccelsimError as exc:
                raise ValueError(
                    f"fallback to on-demand needs an on-demand offer of {self.chip} from "
                    f"{self.provider}: {exc}"
                ) from None
        return self

    @model_validator(mode="after")
    def _offered(self) -> Pool:
        if self.term_share is not None and self.pricing in ("on_demand", "spot"):
            raise ValueError(
                f"term_share applies to commit_1y, commit_3y, capacity_block and on_prem "
                f"pools; a {self.pricing} pool pays for the hours it holds: remove term_share"
            )
        if self.term_share == 0 and self.pricing in ("commit_1y", "commit_3y", "capacity_block"):
            raise ValueError(
                f"term_share=0 charges none of the {self.pricing} term, yet the reserved "
                f"price needs the reservation: use a share in (0, 1] or pricing on_demand"
            )
        if self.block_days is not None and self.pricing != "capacity_block":
            raise ValueError(
                f"block_days is the window of a capacity_block pool; pricing {self.pricing} "
                f"has none: remove block_days or use pricing capacity_block"
            )
        if self.provider is None:
            if self.region is not None:
                raise ValueError("region picks a provider's offer; an unpriced pool has none")
            if self.pricing == "capacity_block" and self.block_days is None:
                raise ValueError("a capacity_block pool needs block_days (its window) [d]")
            return self
        try:
            offer = catalog.price(
                self.chip, provider=self.provider, pricing=self.pricing, region=self.region
            )
        except AccelsimError as exc:
            raise ValueError(str(exc)) from None
        if offer.block is not None:
            allowed = offer.block.allowed_days()
            if self.block_days is None or self.block_days not in allowed:
                got = (
                    "a capacity_block pool needs block_days (its window)"
                    if self.block_days is None
                    else f"block_days={self.block_days} is not a window {self.provider} sells"
                )
                raise ValueError(
                    f"{got}; {self.provider} sells {self.chip} capacity blocks of "
                    f"{offer.block.describe()} ({offer.block.source}, as of "
                    f"{offer.block.as_of.isoformat()})"
                )
        return self


# Upper ends of the non-negative assumptions: beyond these a value is a units mistake
# (a chip failing or preempted more than once an hour, a ten-year lead time...).
_ASSUMPTION_HIGH = {
    "failure_rate_per_chip_hour": 1.0,
    "spot_preemptions_per_hour": 1.0,
    "restart_hours": 1e4,
    "startup_hours": 1e4,
    "repair_hours": 1e5,
    "spot_return_hours": 1e5,
    "lead_time_days": 3660.0,
    "porting_hours": 1e7,
    "optimization_hours": 1e7,
    "engineer_usd_per_hour": 1e5,
    "electricity_usd_per_kwh": 100.0,
    "delay_usd_per_day": 1e12,
    "wait_usd_per_job_hour": 1e9,
    "architecture_changes": 1e4,
    "emission_kg_per_kwh": 10.0,
}


class Assumptions(_Model):
    """Uncertain inputs; each is a number or a distribution, and unset means the catalog prior.

    Rates are per chip-hour; times are hours unless the name says days.
    """

    mfu: Uncertain | None = None
    """Model-FLOPs utilisation of the whole run at its own scale [fraction]; overrides the
    scaling model and the engineering learning curve."""
    failure_rate_per_chip_hour: Uncertain | None = None
    """Hardware interruptions per chip-hour [1/(chip·h)]."""
    checkpoint_interval_hours: Uncertain | None = None
    """Work between checkpoints [h]; unset = Young/Daly optimum."""
    checkpoint_write_hours: Uncertain | None = None
    """Time to write one checkpoint [h]."""
    restart_hours: Uncertain | None = None
    """Time from an interruption to training again [h]."""
    startup_hours: Uncertain | None = None
    """Time from a training run's first launch to its first step (weights or checkpoint
    loaded, step compiled, data loader warm), once per run [h]; restarts pay theirs in
    ``restart_hours``."""
    repair_hours: Uncertain | None = None
    """Time a failed chip is out of service [h] (shared-cluster engine)."""
    spot_preemptions_per_hour: Uncertain | None = None
    """Spot preemptions per chip-hour of a spot pool [1/(chip·h)]."""
    spot_return_hours: Uncertain | None = None
    """Time until preempted spot capacity returns (shared-cluster engine) [h]."""
    lead_time_days: Uncertain | None = None
    """Capacity, quota or procurement wait before the first step [d]."""
    porting_hours: Uncertain | None = None
    """Engineering hours to run the code on the pool's chip stack [h]."""
    optimization_hours: Uncertain | None = None
    """Engineering hours invested in raising MFU [h]."""
    engineers: Uncertain | None = None
    """Engineers working on porting and optimisation [count]."""
    engineer_usd_per_hour: Uncertain | None = None
    """Fully loaded engineering cost [USD/h]."""
    electricity_usd_per_kwh: Uncertain | None = None
    """Electricity price for on-prem pools [USD/kWh]."""
    pue: Uncertain | None = None
    """Power usage effectiveness of the data centre [ratio >= 1]."""
    delay_usd_per_day: Uncertain | None = None
    """Cost of a day's delay of the trained model [USD/d]."""
    wait_usd_per_job_hour: Uncertain | None = None
    """The price of a job-hour spent queueing [USD/(job·h)]: a user valuation (researchers'
    time, a product waiting for its jobs), not a catalog prior, so unset means 0 and waiting
    is free. Job streams and traces price the window's queue wait in job-hours (jobs still
    waiting at the horizon count until the horizon); a training run sharing a fleet prices
    its own queue wait. The line is ``wait_cost_usd``, included in ``tco_usd``. A training
    run's queue wait also lengthens its time to train, which ``delay_usd_per_day`` prices:
    set one or the other for the same loss, not both."""
    badput_fraction: Uncertain | None = None
    """Share of training time lost to causes other than hardware failures [fraction]."""
    architecture_changes: Uncertain | None = None
    """Architecture changes that each need re-optimisation (prototype stage) [count]."""
    emission_kg_per_kwh: Uncertain | None = None
    """Grid emission factor [kg CO2e/kWh]."""
    instability_events_per_day: Uncertain | None = None
    """Loss-spike and divergence rollbacks per day of training (0 switches them off; unset =
    the catalog prior for the run's stage) [1/d]."""
    price_change_per_year: Uncertain | None = None
    """Yearly change of on-demand and spot prices, compounded, from the decision (day 0, at
    the catalog's prices) over the usage window (-0.1: 10 % cheaper a year) [1/year].
    Commitments, capacity blocks and bought hardware keep the price of their term. 0 keeps
    prices fixed; unset = the catalog prior (published price cuts and rental indices)."""

    @model_validator(mode="after")
    def _ranges(self) -> Assumptions:
        # Below 0.1 % no real run operates, and compute time would overflow float64.
        _check_range("mfu", self.mfu, _MFU_MIN, 1, low_open=False)
        _check_range("badput_fraction", self.badput_fraction, 0, 0.99, low_open=False)
        _check_range("pue", self.pue, 1, 5, low_open=False)
        # More than 1,000 rollbacks a day is no training run at all (the prototype prior's
        # 1 - 1e-9 quantile, where the boundary judges an unbounded law, is ~180).
        _check_range(
            "instability_events_per_day", self.instability_events_per_day, 0, 1e3, low_open=False
        )
        _check_range("engineers", self.engineers, _MIN_ENGINEERS, 1e5, low_open=False)
        # Beyond a 90 % fall or a doubling a year, a rate is a units mistake (percent for
        # a fraction); -1 would make a price reach 0.
        _check_range("price_change_per_year", self.price_change_per_year, -0.9, 1.0, low_open=False)
        _check_range(
            "checkpoint_interval_hours",
            self.checkpoint_interval_hours,
            _MIN_CHECKPOINT_INTERVAL_HOURS,
            1e5,
            low_open=False,
        )
        # A checkpoint write always takes time; zero would make the optimal interval zero.
        _check_range("checkpoint_write_hours", self.checkpoint_write_hours, 0, 1e3, low_open=True)
        nonneg = (
            "failure_rate_per_chip_hour",
            "restart_hours",
            "startup_hours",
            "repair_hours",
            "spot_preemptions_per_hour",
            "spot_return_hours",
            "lead_time_days",
            "porting_hours",
            "optimization_hours",
            "engineer_usd_per_hour",
            "electricity_usd_per_kwh",
            "delay_usd_per_day",
            "wait_usd_per_job_hour",
            "architecture_changes",
            "emission_kg_per_kwh",
        )
        for name in nonneg:
            high = _ASSUMPTION_HIGH.get(name, math.inf)
            _check_range(name, getattr(self, name), 0, high, low_open=False)
        return self


class Credit(_Model):
    """A credit or grant that pays for cloud hardware: dollars or chip-hours, until it expires.

    Research credits, startup credits and free TPU programmes (e.g. TPU Research Cloud:
    ``provider="gcp"``, ``chip="tpu-v4"``). A credit offsets the ``hardware_cost_usd`` of the
    cloud pools it applies to (never on-prem hardware, energy, engineering, delay or wait),
    up to its amount, for usage before it expires; the study reports the offset as its own
    negative line ``credits_usd`` (``tco_usd`` includes it). See the howto, "Credits".
    """

    usd: float | None = Field(default=None, gt=0, le=1e13)
    """Amount in dollars (exactly one of ``usd`` and ``chip_hours``). [USD]"""
    chip_hours: float | None = Field(default=None, gt=0, le=1e13)
    """Amount in chip-hours, valued at the price of the pool that uses them. [chip·h]"""
    provider: str | None = None
    """Price sheet the credit applies to (``None``: any cloud provider)."""
    chip: str | None = None
    """Chip id the credit applies to (``None``: any chip)."""
    expires_days: float | None = Field(default=None, gt=0, le=_MAX_HORIZON_DAYS)
    """Days from the decision after which usage is no longer covered (``None``: never). [d]"""
    name: str = ""
    """Label for the reader (e.g. ``"TRC grant"``)."""

    @field_validator("chip")
    @classmethod
    def _known_credit_chip(cls, chip_id: str | None) -> str | None:
        if chip_id is None:
            return None
        try:
            return catalog.chip(chip_id).id
        except AccelsimError as exc:
            raise ValueError(str(exc)) from None

    @model_validator(mode="after")
    def _one_amount(self) -> Credit:
        if (self.usd is None) == (self.chip_hours is None):
            raise ValueError("a credit has exactly one amount: usd or chip_hours")
        if self.provider is not None and self.provider not in catalog.price_sheets():
            known = ", ".join(sorted(catalog.price_sheets()))
            raise ValueError(f"credit provider {self.provider!r} is not a price sheet ({known})")
        if self.provider == "on_prem":
            raise ValueError("credits pay for cloud usage; an on_prem pool is bought hardware")
        return self
