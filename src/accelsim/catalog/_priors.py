"""The sourced priors behind :class:`accelsim.Assumptions`: what an unset assumption means.

Each prior is a number or a distribution (:mod:`accelsim.dists`) with its unit, whether it is
our judgement (``assumption``) or rests on published figures, at least one dated source and a
note that says why the range is what it is. The figures live in ``data/priors.yaml``; this
module only validates and loads them. Priors the engine looks up by chip kind, framework fit
or pricing model are keyed maps, and each map must name every key.

Examples
--------
>>> p = priors()
>>> p.framework_fit.fit("pytorch", "xla")
'ported'
>>> p.failure_rate_per_chip_hour.unit
'1/(chip*h)'
>>> "lead_time_days.on_prem" in p.by_name()
True
"""

from __future__ import annotations

import functools
import importlib.resources
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Literal, TypeAlias, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from accelsim._yaml import load_yaml, to_plain
from accelsim.catalog._schema import Pricing, Source
from accelsim.dists import Dist, LogNormal, Uncertain, as_dist
from accelsim.errors import ScenarioFileError

_M = TypeVar("_M", bound=BaseModel)

Kind: TypeAlias = Literal["gpu", "tpu", "cpu"]
"""Chip kind, as in :attr:`accelsim.catalog._schema.Chip.kind`."""
Stack: TypeAlias = Literal["cuda", "rocm", "xla", "cpu"]
"""Software stack a chip runs, as in :attr:`accelsim.catalog._schema.Chip.software_stack`."""
Framework: TypeAlias = Literal["pytorch", "jax", "tensorflow"]
"""Framework a code base is written in."""
Fit: TypeAlias = Literal["native", "supported", "ported"]
"""How well a framework fits a stack: its own stack, officially supported, or needs a port."""
RunStage: TypeAlias = Literal["prototype", "production"]
"""Stage of a training run, as in :data:`accelsim.scenario.Stage`."""
TrainingPrecision: TypeAlias = Literal["bf16", "fp8", "fp32"]
"""Arithmetic precision of a training run, as in :data:`accelsim.scenario.Precision`."""
ProviderKind: TypeAlias = Literal["hyperscaler", "neocloud", "on_prem"]
"""Kind of a pool's provider, for its capacity lead time."""

PriorSource = Source
"""A prior's source: ``Source(url, as_of, note)`` from :mod:`accelsim.catalog._schema`."""

_SHIPPED = "priors.yaml"


class _Frozen(BaseModel):
    model_config = ConfigDict(
        frozen=True, extra="forbid", allow_inf_nan=False, use_attribute_docstrings=True
    )


def _require_keys(name: str, present: Collection[str], keys: tuple[str, ...]) -> None:
    missing = [k for k in keys if k not in present]
    if missing:
        raise ValueError(f"{name} must name every one of {list(keys)}; missing {missing}")


class Prior(_Frozen):
    """One prior: a value with its unit, provenance and reasoning.

    Examples
    --------
    >>> p = Prior(value={"dist": "uniform", "low": 1, "high": 3}, unit="h", assumption=True,
    ...           sources=[{"url": "https://example.org", "as_of": "2024-01-01"}], note="why")
    >>> p.dist().expected_value()
    2.0
    """

    value: Uncertain
    """A number or a distribution tagged by ``dist``. [unit]"""
    unit: str = Field(min_length=1)
    """Unit of ``value``, e.g. ``"h"`` or ``"1/(chip*h)"``."""
    assumption: bool
    """True when no published figure exists and the value is our judgement."""
    sources: tuple[Source, ...] = Field(min_length=1)
    """Where the value comes from, each with its date; at least one."""
    note: str = Field(min_length=1)
    """Why this value or range: the arithmetic, the judgement, what is left out."""

    def dist(self) -> Dist:
        """The value as a distribution (a number becomes ``Fixed``)."""
        return as_dist(self.value)


class FitTable(_Frozen):
    """Which fit (native, supported, ported) each framework has on each software stack.

    Examples
    --------
    >>> priors().framework_fit.fit("jax", "xla")
    'native'
    """

    table: dict[Framework, dict[Stack, Fit]]
    """``table[framework][stack]`` is the fit; every framework and stack must appear."""
    sources: tuple[Source, ...] = Field(min_length=1)
    """Where the table comes from; at least one."""
    note: str = Field(min_length=1)
    """What each fit means and why each cell is what it is."""

    @model_validator(mode="after")
    def _complete(self) -> FitTable:
        _require_keys("framework_fit.table", self.table, get_args(Framework))
        for framework, row in self.table.items():
            _require_keys(f"framework_fit.table.{framework}", row, get_args(Stack))
        return self

    def fit(self, framework: Framework, stack: Stack) -> Fit:
        """The fit of ``framework`` on ``stack``."""
        return self.table[framework][stack]


class ProviderList(_Frozen):
    """A list of provider ids with its sources (e.g. which clouds are hyperscalers)."""

    value: tuple[str, ...] = Field(min_length=1)
    """Provider ids, as in the price sheets."""
    sources: tuple[Source, ...] = Field(min_length=1)
    """Where the list comes from; at least one."""
    note: str = Field(min_length=1)
    """What the list means."""


class Priors(_Frozen):
    """Every prior the engines read, as shipped in ``data/priors.yaml``.

    Keyed maps (by chip kind, framework fit or pricing model) name every key; the model
    rejects a map with one missing.
    """

    mfu_ceiling: dict[Kind, Prior]
    """MFU a well-optimised native code reaches in large runs at ``mfu_reference_chips``;
    it is a ceiling, and runs larger than that lose efficiency by the scaling model.
    [fraction]"""
    mfu_reference_chips: Prior
    """Chip count at which the ``mfu_ceiling`` figures are typical. [chips]"""
    mfu_ceiling_by_chip: dict[str, Prior] = {}
    """Per chip generation, where published MFUs separate it from its kind (Ampere runs
    reach higher MFU than Hopper runs), keyed by chip id; other chips use ``mfu_ceiling``.
    [fraction]"""
    mfu_reference_by_chip: dict[str, Prior] = {}
    """MFU a team's own code reaches at ``mfu_reference_chips`` on a chip, from its
    measurements (:func:`accelsim.catalog.calibrate`), keyed by :func:`mfu_reference_key`:
    a measured model size (``"<chip>/<params>"``) first, else the chip (``"<chip>"``,
    ``"<chip>:moe"`` for a mixture of experts). Where present it replaces the ceiling and
    the learning curve of runs of that kind on that chip (the measured code is already
    optimised, as the user's own ``Assumptions.mfu``). The shipped file has none.
    [fraction]"""
    mfu_reference_chips_by_chip: dict[str, Prior] = {}
    """Scale of the measured runs behind ``mfu_reference_by_chip`` (their geometric mean), in
    place of ``mfu_reference_chips``, under the same keys. [chips]"""
    mfu_ceiling_moe: Prior | None = None
    """MFU ceiling of mixture-of-experts training on GPUs (6 x active parameters x tokens
    over the BF16 peak), in place of the dense ceilings; ``None`` in a priors file without
    it. [fraction]"""
    mfu_precision_gain: dict[TrainingPrecision, Prior] = {}
    """Share of a precision's peak gain over BF16 that training realises (the MFU ceilings
    are BF16 figures); empty: the ceiling applies to every precision's peak. [fraction]"""
    framework_fit: FitTable
    """Fit of each framework on each software stack."""
    start_fraction: dict[Fit, Prior]
    """Share of the ceiling reached with zero optimisation hours. [fraction]"""
    optimization_hours_scale: dict[Fit, Prior]
    """Engineering hours per e-fold of closing the gap to the ceiling. [engineer*h]"""
    optimization_hours: Prior
    """Default optimisation hours a team invests for a production run. [engineer*h]"""
    porting_hours: dict[Fit, Prior]
    """Engineering hours before the first step on a stack. [engineer*h]"""
    optimization_reference_chip_hours: Prior | None = None
    """Chip-hours at stake for which ``optimization_hours`` holds in full; ``None``: effort
    does not scale with the job. [chip*h]"""
    optimization_stake_elasticity: Prior | None = None
    """Exponent of optimisation effort in the chip-hours at stake. [dimensionless]"""
    optimization_threshold_chip_hours: Prior | None = None
    """Chip-hours at stake below which nobody optimises. [chip*h]"""
    fine_tune_porting_share: Prior | None = None
    """Share of ``porting_hours`` a fine-tune pays (a script moved onto a maintained recipe,
    not a code base); ``None``: the whole porting prior. [fraction]"""
    lora_trainable_fraction: Prior | None = None
    """Adapter parameters of a LoRA or QLoRA fine-tune over the base model's, a number;
    ``None``: 0.01. [fraction]"""
    reoptimization_hours_per_change: dict[Fit, Prior]
    """Re-optimisation hours per architecture change (prototype stage). [engineer*h]"""
    architecture_changes: Prior
    """Architecture changes per prototyping project. [count]"""
    failure_rate_per_chip_hour: Prior
    """Job interruptions per chip-hour. [1/(chip*h)]"""
    checkpoint_write_hours: Prior
    """Training time stalled per checkpoint. [h]"""
    restart_hours: Prior
    """Time from an interruption to training again. [h]"""
    repair_hours: Prior
    """Time a failed chip's node is out of service. [h]"""
    startup_hours: Prior | None = None
    """Time from a run's first launch to its first training step (loading weights or a
    checkpoint, compilation, data-loader warm-up), once per run; restarts carry their own in
    ``restart_hours``. ``None``: no startup time. [h]"""
    frontier_checkpoint_write_hours: Prior | None = None
    """Training time stalled per checkpoint under frontier recovery (asynchronous or
    in-memory checkpoints); ``None``: every run uses ``checkpoint_write_hours``. [h]"""
    frontier_restart_hours: Prior | None = None
    """Time from an interruption to training again under frontier recovery (warm spares,
    state reloaded from peers); ``None``: every run uses ``restart_hours``. [h]"""
    frontier_recovery_min_chips: Prior | None = None
    """Chips from which a run with ``TrainingRun.recovery`` unset uses frontier recovery;
    ``None``: such runs use standard recovery. [chips]"""
    frontier_recovery_from_year: Prior | None = None
    """Year from which a run with ``TrainingRun.recovery`` unset may use frontier recovery
    (a run with an earlier ``TrainingRun.start_year`` uses standard recovery); ``None``: no
    year rule. [year]"""
    badput_fraction: Prior
    """Share of allocated time lost to causes other than hardware failures. [fraction]"""
    instability_events_per_day: dict[RunStage, Prior] = {}
    """Loss-spike and divergence rollbacks per day of training, by run stage; empty: no
    instability term. [1/d]"""
    instability_days_per_event: Prior | None = None
    """Days one instability event costs (rollback, investigation, restart): a log-normal
    whose 5-95 % range is the spread over events, not an uncertainty; ``None``: no
    instability term. [d]"""
    spot_preemptions_per_chip_hour: Prior
    """Spot preemptions per chip-hour. [1/(chip*h)]"""
    spot_return_hours: Prior
    """Time until preempted spot capacity can be had again. [h]"""
    spot_unit_chips: dict[Kind, Prior] = {}
    """Chips per preemption unit (a VM, a TPU host), by chip kind; empty: 1 (every chip
    alone). [chips]"""
    spot_correlated_share: Prior | None = None
    """Share of a unit's spot preemptions that come in bursts taking all of a job's units at
    once; ``None``: 0 (independent units). [fraction]"""
    lead_time_days: dict[Pricing, Prior]
    """Quota, capacity or procurement wait before the first step of a reference-size request
    on a hyperscaler, by pricing model; every model but spot, which is on-demand's wait times
    ``spot_lead_time_factor`` where that is given. [d]"""
    spot_lead_time_factor: Prior | None = None
    """A spot request's wait over the same on-demand one's, >= 1. [ratio]"""
    lead_time_reference_chips: Prior | None = None
    """Request size the ``lead_time_days`` figures describe; ``None``: no size effect. [chips]"""
    lead_time_size_elasticity: Prior | None = None
    """Exponent of the lead time in chips / ``lead_time_reference_chips``. [dimensionless]"""
    lead_time_size_saturation_chips: Prior | None = None
    """Request size beyond which a larger request waits no longer (the size law applies to
    ``min(chips, this)``); ``None``: no cap. [chips]"""
    lead_time_provider_factor: dict[ProviderKind, Prior] = {}
    """Lead time multiple by provider kind; empty: 1. [ratio]"""
    lead_time_hyperscalers: ProviderList | None = None
    """Providers of the hyperscaler kind (other clouds are neoclouds)."""
    engineers: Prior
    """Engineers on porting and optimisation. [count]"""
    engineer_usd_per_hour: Prior
    """Fully loaded engineering cost. [USD/h]"""
    engineer_hours_per_week: Prior
    """Productive hours per engineer-week. [h/week]"""
    electricity_usd_per_kwh: Prior
    """On-prem electricity price. [USD/kWh]"""
    pue: Prior
    """Power usage effectiveness. [ratio >= 1]"""
    emission_kg_per_kwh: Prior
    """Grid emission factor. [kg CO2/kWh]"""
    power_fraction_of_tdp: Prior
    """Average chip draw in training over the chip's TDP. [fraction]"""
    host_power_fraction_of_tdp: Prior
    """Host (CPU, memory, network) draw per chip over the chip's TDP. [fraction]"""
    delay_usd_per_day: Prior
    """Cost of a day's delay of the trained model; 0 unless the user sets it. [USD/d]"""
    price_change_per_year: Prior
    """Yearly change of on-demand and spot prices over the horizon, compounded. [1/year]"""
    global_batch_tokens: Prior
    """Global batch size of large LLM pretraining, for the scaling model. [tokens]"""
    global_batch_tokens_per_chip: Prior | None = None
    """Tokens per chip and step that large runs keep as they grow (the batch prior grows
    with the chips beyond ``global_batch_tokens``); ``None``: the batch does not grow.
    [tokens]"""
    mfu_reference_params: Prior | None = None
    """Model size of the published runs behind the MFU ceilings: a model of N parameters
    has its reference configuration at ``mfu_reference_chips`` x N / this; ``None``: every
    model at ``mfu_reference_chips``. [count]"""
    mfu_ceiling_benchmark: dict[str, Prior] = {}
    """MFU of tuned benchmark runs (``TrainingRun.regime = "benchmark"``) by chip id where
    a generation stands apart, else by chip kind, in place of the production ceilings; a
    kind not listed keeps its production ceiling. [fraction]"""
    mfu_fine_tune_factor: Prior | None = None
    """MFU of a fine-tune over the production ceiling (``TrainingRun.fine_tune`` set); ``None``:
    1. [fraction]"""

    @model_validator(mode="after")
    def _complete(self) -> Priors:
        _require_keys("mfu_ceiling", self.mfu_ceiling, get_args(Kind))
        for name in (
            "start_fraction",
            "optimization_hours_scale",
            "porting_hours",
            "reoptimization_hours_per_change",
        ):
            _require_keys(name, getattr(self, name), get_args(Fit))
        pricing = get_args(Pricing)
        if self.spot_lead_time_factor is not None:
            pricing = tuple(k for k in pricing if k != "spot")
            if float(self.spot_lead_time_factor.dist().support()[0]) < 1.0:
                raise ValueError("spot_lead_time_factor must be >= 1: spot is never sooner")
        _require_keys("lead_time_days", self.lead_time_days, pricing)
        if self.lead_time_provider_factor:
            _require_keys(
                "lead_time_provider_factor", self.lead_time_provider_factor, get_args(ProviderKind)
            )
        if (self.lead_time_reference_chips is None) != (self.lead_time_size_elasticity is None):
            raise ValueError("lead_time_reference_chips and lead_time_size_elasticity go together")
        saturation = self.lead_time_size_saturation_chips
        if saturation is not None:
            if self.lead_time_reference_chips is None:
                raise ValueError("lead_time_size_saturation_chips needs the size law's priors")
            if not isinstance(saturation.value, int | float):
                raise ValueError("lead_time_size_saturation_chips must be a number of chips")
        if self.spot_unit_chips:
            _require_keys("spot_unit_chips", self.spot_unit_chips, get_args(Kind))
        if self.instability_events_per_day:
            _require_keys(
                "instability_events_per_day", self.instability_events_per_day, get_args(RunStage)
            )
            event = self.instability_days_per_event
            if event is None or not isinstance(event.dist(), LogNormal):
                raise ValueError("instability_days_per_event must be a lognormal distribution")
        frontier = (self.frontier_checkpoint_write_hours, self.frontier_restart_hours)
        if (frontier[0] is None) != (frontier[1] is None):
            raise ValueError(
                "frontier_checkpoint_write_hours and frontier_restart_hours go together"
            )
        threshold = self.frontier_recovery_min_chips
        if threshold is not None:
            if frontier[0] is None:
                raise ValueError("frontier_recovery_min_chips needs the frontier_* priors")
            if not isinstance(threshold.value, int | float):
                raise ValueError("frontier_recovery_min_chips must be a number of chips")
        since = self.frontier_recovery_from_year
        if since is not None and (threshold is None or not isinstance(since.value, int | float)):
            raise ValueError(
                "frontier_recovery_from_year must be a year and needs frontier_recovery_min_chips"
            )
        lora = self.lora_trainable_fraction
        if lora is not None and not (isinstance(lora.value, int | float) and 0 < lora.value <= 1):
            raise ValueError("lora_trainable_fraction must be a number in (0, 1]")
        if self.mfu_precision_gain:
            _require_keys(
                "mfu_precision_gain", self.mfu_precision_gain, get_args(TrainingPrecision)
            )
        return self

    def by_name(self) -> dict[str, Prior]:
        """Every prior by dotted name (``"mfu_ceiling.gpu"``, ``"pue"``), in file order.

        Examples
        --------
        >>> names = list(priors().by_name())
        >>> names[0], len(names) > 30
        ('mfu_ceiling.gpu', True)
        """
        out: dict[str, Prior] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, Prior):
                out[name] = value
            elif isinstance(value, dict):
                out.update({f"{name}.{key}": prior for key, prior in value.items()})
        return out


def mfu_reference_key(chip_id: str, moe: bool, params: float | None = None) -> str:
    """The key of a calibrated reference MFU: the chip id, ``"<chip>:moe"`` for a mixture of
    experts (whose routing and all-to-all keep its MFU apart from a dense model's); with
    ``params``, the key of one measured model size on it, ``"<chip>/<params>"``.

    >>> mfu_reference_key("h100-sxm", False), mfu_reference_key("h100-sxm", True, 37e9)
    ('h100-sxm', 'h100-sxm:moe/3.7e+10')
    """
    chip = f"{chip_id}:moe" if moe else chip_id
    return chip if params is None else f"{chip}/{params:.6g}"


def load_priors(path: str | Path) -> Priors:
    """Read and validate a priors file laid out like the shipped ``data/priors.yaml``.

    A syntax error, a duplicate key or a value out of its allowed range raises
    :class:`~accelsim.errors.ScenarioFileError` naming the file and the field.
    """
    return load_validated(path, Priors, "priors")


def load_validated(path: str | Path, model: type[_M], what: str) -> _M:
    """A YAML file validated as ``model``; errors name the file and say what it should hold."""
    raw = to_plain(load_yaml(path, aliases=True))  # the shipped files share priors by anchor
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise ScenarioFileError(f"{path}: invalid {what}\n{exc}") from None


def shipped(name: str, load: Callable[[Path], _M]) -> _M:
    """The shipped data file ``data/<name>`` read by ``load`` (works from a wheel or a zip)."""
    resource = importlib.resources.files("accelsim.catalog").joinpath("data", name)
    with importlib.resources.as_file(resource) as path:
        return load(path)


@functools.cache
def priors() -> Priors:
    """The shipped priors, read once per process (the result is frozen, so sharing is safe)."""
    return shipped(_SHIPPED, load_priors)


__all__ = [
    "Fit",
    "FitTable",
    "Framework",
    "Kind",
    "Prior",
    "PriorSource",
    "Priors",
    "ProviderKind",
    "ProviderList",
    "RunStage",
    "Stack",
    "TrainingPrecision",
    "load_priors",
    "mfu_reference_key",
    "priors",
]
