"""What the user asks about: a workload on a fleet under assumptions (validated at the boundary).

A :class:`Scenario` is a frozen pydantic model. Everything a simulation needs is checked here,
once: chip ids exist, every pool's provider offers its chip at its pricing model, counts are
positive, MFU lies in (0, 1], and a training run fits in the fleet's memory at all. Errors
name the field path and the allowed range; :func:`load_scenario` adds the file and the line.
Downstream code trusts these types and does not re-check them.
"""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from accelsim import catalog
from accelsim._yaml import line_of, load_yaml_text, to_plain
from accelsim.catalog import Pricing
from accelsim.dists import Choice, Dist, Fixed, Uncertain, as_dist
from accelsim.errors import AccelsimError, ScenarioFileError

Framework = Literal["pytorch", "jax", "tensorflow"]
Stage = Literal["prototype", "production"]
Precision = Literal["bf16", "fp8", "fp32"]
Sharding = Literal["none", "zero1", "zero2", "zero3", "fsdp"]
SchedulerName = Literal["fifo", "backfill", "smallest_first", "priority", "priority_preemptive"]

# Bytes of training state per parameter for mixed-precision Adam: bf16 weights (2) and
# gradients (2) plus fp32 master weights, momentum and variance (12) -- Rajbhandari et al.,
# "ZeRO", SC'20, section 3.1. Used only for the boundary check "can this fit at all".
_STATE_BYTES_PER_PARAM = 16.0
_GIB = 2.0**30
_MFU_MIN = 1e-3
TRAINING_HORIZON_DAYS = 3 * 365.25
"""Default :attr:`TrainingRun.horizon_days`: 3 years, a judgement (see there). [d]"""
# Physical ranges of the boundary (pattern 6): far outside practice, well inside float64, so
# that every metric stays finite. The largest published runs are ~5e25 FLOP, ~2e12 active
# parameters, ~4e13 tokens and ~1e5 chips.
_MAX_CHIPS = 10_000_000
_MAX_PARAMS = 1e15
_MAX_TOKENS = 1e17
_MAX_TRAINING_FLOPS = 1e32
# The shortest training sequence assumed when seq_len is unset (BERT's and GPT-2's contexts
# are 512 and 1,024 tokens): a data-parallel replica needs one whole sequence per step.
_MIN_SEQUENCE_TOKENS = 512
# One minute: a checkpoint every second would spend the run writing checkpoints.
_MIN_CHECKPOINT_INTERVAL_HOURS = 1.0 / 60.0
# A tenth of one person's time: fewer engineers would stretch engineering days to no end.
_MIN_ENGINEERS = 0.1
# A mean inter-arrival below 3.6 s means millions of jobs a day: a units mistake.
_MIN_MEAN_INTERARRIVAL_HOURS = 1e-3
_MAX_HORIZON_DAYS = 3660.0


class _Model(BaseModel):
    # strict: YAML's `true` is not a count and a quoted "7e9" is not a number (pattern 6);
    # an int is still accepted where a float is asked.
    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        use_attribute_docstrings=True,
        allow_inf_nan=False,
        strict=True,
    )


def _support(value: float | Dist) -> tuple[float, float]:
    if isinstance(value, int | float):
        return float(value), float(value)
    return value.support()


def _check_range(
    name: str, value: float | Dist | None, low: float, high: float, *, low_open: bool
) -> None:
    """Raise ``ValueError`` unless every value ``value`` can take lies in the interval."""
    if value is None:
        return
    lo, hi = _support(value)
    if hi == math.inf and high < math.inf and not isinstance(value, int | float):
        # An unbounded law (LogNormal, Exponential) is judged by its 1 - 1e-9 quantile: a
        # study draws far fewer values, and any draw is finite.
        hi = float(value.ppf(1.0 - 1e-9))
    # An open bound is reached only by a point mass: a continuous law whose support starts
    # at the bound (LogNormal at 0) draws it with probability zero.
    atomic = isinstance(value, int | float | Fixed | Choice)
    bad_low = lo < low or (low_open and lo == low and atomic)
    if bad_low or hi > high:
        bracket = "(" if low_open else "["
        raise ValueError(
            f"{name} must lie in {bracket}{low:g}, {high:g}], but it can take values in "
            f"[{lo:g}, {hi:g}]"
        )


def _runs_natively(framework: str, chip_id: str) -> bool:
    """A framework's code runs on a chip's stack without a port (the catalog's fit table)."""
    stack = catalog.chip(chip_id).software_stack
    return catalog.priors().framework_fit.table[framework][stack] != "ported"  # type: ignore[index]


def training_state_gib(params: float) -> float:
    """Weights, gradients and Adam state of ``params`` parameters, fully sharded. [GiB]

    The floor of HBM a fleet needs to train the model at all (16 bytes per parameter,
    ZeRO section 3.1); activations come on top.
    """
    return params * _STATE_BYTES_PER_PARAM / _GIB


_MAX_PHASES = 16
"""Most phases of a :class:`TrainingRun` (a run that changes size a few times, not a schedule)."""


class TrainingPhase(_Model):
    """A stretch of a training run on a given number of chips (a run that changes size).

    ``token_share`` of the run's tokens (and of its training FLOPs) are trained on
    ``chips`` chips of the run's pool (its first), at the MFU carried to that chip count
    (:func:`accelsim.engines.run_mfu`), optionally at its own ``global_batch_tokens``.
    """

    chips: int = Field(ge=1, le=10_000_000)
    """Chips training in this phase [count]: at least 1, at most the pool's count (a phase
    may use fewer chips than the pool holds; the pool is still held, and priced, whole)."""
    token_share: float = Field(gt=0, le=1)
    """Share of the run's tokens trained in this phase [fraction]; the shares sum to 1."""
    global_batch_tokens: float | None = Field(default=None, gt=0, le=_MAX_TOKENS)
    """Global batch of this phase [tokens]; unset = the run's (``TrainingRun.global_batch_tokens``
    or the catalog prior)."""


class TrainingRun(_Model):
    """One training run: a model of ``params`` parameters trained on ``tokens`` tokens."""

    kind: Literal["training"] = "training"
    params: float = Field(gt=0, le=_MAX_PARAMS)
    """Model parameters [count]; for a mixture of experts, the parameters active per token
    (they set the FLOPs, 6 x params x tokens)."""
    total_params: float | None = Field(default=None, gt=0, le=_MAX_PARAMS)
    """All parameters of a mixture of experts, every expert included [count]. Unset: a dense
    model. When set, the run's training state (memory) counts every parameter, and its MFU
    prior is the mixture-of-experts one (``priors.mfu_ceiling_moe``)."""
    tokens: float = Field(gt=0, le=_MAX_TOKENS)
    """Training tokens [count]."""
    framework: Framework = "pytorch"
    """The framework the code base is written in; decides porting hours per chip stack."""
    stage: Stage = "production"
    """``prototype``: many changing experiments; ``production``: one long, locked run."""
    precision: Precision = "bf16"
    """Arithmetic precision whose peak FLOP/s the MFU refers to."""
    sharding: Sharding = "fsdp"
    """How training state is sharded across chips (for the memory fit check)."""
    flops: float | None = Field(default=None, gt=0, le=_MAX_TRAINING_FLOPS)
    """Total training FLOPs, overriding 6·N·D [FLOP]."""
    layers: int | None = Field(default=None, gt=0, le=10_000_000)
    """Transformer layers, to add the attention term to the FLOPs [count]."""
    seq_len: int | None = Field(default=None, gt=0, le=10_000_000)
    """Sequence length, to add the attention term to the FLOPs [tokens]."""
    d_model: int | None = Field(default=None, gt=0, le=10_000_000)
    """Model width, to add the attention term to the FLOPs [count]."""
    global_batch_tokens: Uncertain | None = None
    """Global batch size [tokens]; unset = catalog prior. Drives the scaling model."""
    horizon_days: float = Field(default=TRAINING_HORIZON_DAYS, gt=0, le=36_525)
    """Longest training (first step to last) counted [d]. A run that would take longer is
    not finished (``finished`` = 0) and its time, chip-hours and costs are censored at the
    horizon: at least this much, never a made-up number. Default 3 years (a judgement: no
    one plans a training run beyond that). Not ``Scenario.horizon_days``, the window over
    which a shared fleet is measured."""
    phases: list[TrainingPhase] | None = Field(default=None, min_length=1, max_length=_MAX_PHASES)
    """A run that changes size: its phases in order, each ``token_share`` of the tokens on
    ``chips`` chips of the first pool (shares > 0 summing to 1; chips at most the pool's
    count); unset = one phase on the whole pool. Analytic engine only. Each phase's
    failure-free compute is its share of the training FLOPs / (its chips x peak x the MFU
    carried to its chip count); failures, checkpoints and rollbacks are sampled per phase
    at its chip count; ``training_days`` is the sum of the phases' days (the horizon
    applies to the sum), ``chip_hours`` the sum of chips x hours of each phase, ``mfu`` the
    MFU weighted by the phases' failure-free chip-hours, ``interruptions`` the sum. The pool
    is held whole throughout: held hours, rental and reservation costs count the pool's
    full count over the whole training (chips a phase leaves idle are paid for, not
    released); energy follows ``chip_hours`` (the chips training)."""

    @model_validator(mode="after")
    def _phases_add_up(self) -> TrainingRun:
        if self.phases is None:
            return self
        total = math.fsum(p.token_share for p in self.phases)
        if abs(total - 1.0) > 1e-9:
            raise ValueError(
                f"phases: the token_share values sum to {total:.12g}, not 1; each phase trains "
                f"its share of the run's tokens"
            )
        for i, p in enumerate(self.phases):
            if p.global_batch_tokens is not None and p.global_batch_tokens > self.tokens:
                raise ValueError(
                    f"phases[{i}].global_batch_tokens={p.global_batch_tokens:.3g} exceeds the "
                    f"run's tokens ({self.tokens:.3g})"
                )
        return self

    @model_validator(mode="after")
    def _total_at_least_active(self) -> TrainingRun:
        if self.total_params is not None and self.total_params < self.params:
            raise ValueError(
                f"total_params={self.total_params:.3g} is below params={self.params:.3g}: "
                f"params is the active count, total_params every expert's"
            )
        return self

    @property
    def state_params(self) -> float:
        """Parameters whose weights, gradients and optimizer state are held [count]:
        ``total_params`` for a mixture of experts, else ``params``."""
        return self.params if self.total_params is None else self.total_params

    @model_validator(mode="after")
    def _attention_fields_together(self) -> TrainingRun:
        given = [f for f in ("layers", "seq_len", "d_model") if getattr(self, f) is not None]
        if given and len(given) != 3:
            missing = sorted({"layers", "seq_len", "d_model"} - set(given))
            raise ValueError(
                f"the attention FLOPs term needs layers, seq_len and d_model together; "
                f"missing {', '.join(missing)}"
            )
        return self

    @model_validator(mode="after")
    def _finite_work(self) -> TrainingRun:
        flops = 6.0 * self.params * self.tokens
        if self.layers is not None and self.seq_len is not None and self.d_model is not None:
            flops += 12.0 * self.layers * self.seq_len * self.d_model * self.tokens
        if self.flops is None and not flops <= _MAX_TRAINING_FLOPS:
            raise ValueError(
                f"the run needs {flops:.3g} FLOP (6·params·tokens plus attention), above "
                f"the bound {_MAX_TRAINING_FLOPS:.0e}: check the units of params and tokens"
            )
        _check_range("global_batch_tokens", self.global_batch_tokens, 0, self.tokens, low_open=True)
        return self


class JobStream(_Model):
    """Synthetic job arrivals for a shared cluster (durations are on the first pool's chip)."""

    kind: Literal["job_stream"] = "job_stream"
    interarrival_hours: Uncertain
    """Time between arrivals [h]; an ``Exponential`` makes a Poisson stream."""
    chips: Uncertain
    """Chips per job [count], e.g. ``Choice(values=[1, 2, 4, 8], ...)``."""
    duration_hours: Uncertain
    """Failure-free run time on the first pool's chip [h]."""
    priority: Uncertain = 0.0
    """Job priority (higher runs first under the ``priority`` scheduler)."""
    framework: Framework | dict[Framework, float] = "pytorch"
    """Framework of the jobs, or a mix given as weights (``{pytorch: 0.7, jax: 0.3}``); a
    job cannot run on a pool whose stack its framework would need a port to."""
    whole_domains: bool = False
    """Allocate whole scale-up domains (NVLink nodes, TPU slices) to each job."""

    @model_validator(mode="after")
    def _positive(self) -> JobStream:
        if isinstance(self.framework, dict):
            weights = list(self.framework.values())
            if not weights or any(not (w >= 0) for w in weights) or sum(weights) <= 0:
                raise ValueError(
                    "framework weights must be >= 0 with a positive sum, e.g. "
                    "{pytorch: 0.7, jax: 0.3}"
                )
        # Continuous laws such as Exponential have 0 in their support but draw it with
        # probability zero, so times are checked on [0, inf); a job needs at least one chip.
        _check_range("interarrival_hours", self.interarrival_hours, 0, math.inf, low_open=False)
        mean_gap = as_dist(self.interarrival_hours).expected_value()
        if not mean_gap >= _MIN_MEAN_INTERARRIVAL_HOURS:
            raise ValueError(
                f"interarrival_hours must have a mean >= {_MIN_MEAN_INTERARRIVAL_HOURS:g} h "
                f"(3.6 s), but its mean is {mean_gap:.3g} h"
            )
        _check_range("chips", self.chips, 1, math.inf, low_open=False)
        # A job of zero duration is no job (a continuous law from 0 draws 0 with probability 0).
        _check_range("duration_hours", self.duration_hours, 0, math.inf, low_open=True)
        return self


class Trace(_Model):
    """Replay of a CSV of jobs (submit time, chips, duration; column names mappable)."""

    kind: Literal["trace"] = "trace"
    path: str
    """CSV file; relative paths are resolved against the scenario file's folder."""
    columns: dict[str, str] | Literal["helios", "acme"] | None = None
    """Mapping from accelsim's fields (``submit``, ``chips``, ``duration``, ``priority``,
    ``chip_type``, ``estimate``) to the file's column names, or a preset for a public trace."""
    time_unit: Literal["s", "min", "h"] = "s"
    """Unit of the submit and duration columns."""
    framework: Framework = "pytorch"
    """Framework of the traced jobs."""
    chip_types: dict[str, str] | None = None
    """Trace chip-type label -> catalog chip id (e.g. ``{"V100": "v100"}``), when a
    ``chip_type`` column is mapped; a job then runs only on pools of that chip. Labels that
    already are catalog ids need no entry."""
    skip_zero: bool = False
    """Skip rows with zero chips or zero duration (CPU-only or instantly failed jobs, common
    in public traces) instead of reporting them as bad rows."""

    @field_validator("path", mode="before")
    @classmethod
    def _path_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, Path) else value

    @field_validator("chip_types")
    @classmethod
    def _known_chip_types(cls, mapping: dict[str, str] | None) -> dict[str, str] | None:
        for label, chip_id in (mapping or {}).items():
            try:
                catalog.chip(chip_id)
            except AccelsimError as exc:
                raise ValueError(f"chip_types[{label!r}]: {exc}") from None
        return mapping


ServingPrecision = Literal["bf16", "fp8", "int8", "fp4"]
Scaling = Literal["fixed", "follow_demand"]
Router = Literal["least_loaded", "round_robin"]
_MODEL_FIELDS = ("params", "active_params", "layers", "d_model", "kv_heads", "head_dim")
_MINUTES_PER_HOUR = 60.0


class SLO(_Model):
    """A latency objective: TTFT and TPOT bounds at a percentile, and the share of requests
    that must be served in windows meeting them.

    ``SLO(ttft_ms=2000, tpot_ms=100, percentile=99, attainment=0.99)`` reads: in each window
    (``Serving.burst_window_minutes``) the 99th percentile of time to first token is at most
    2 s and that of time per output token at most 100 ms, and at least 99 % of all requests
    arrive in such windows (see :doc:`/serving`).
    """

    ttft_ms: float = Field(gt=0)
    """Bound on time to first token at ``percentile`` [ms]."""
    tpot_ms: float = Field(gt=0)
    """Bound on time per output token at ``percentile`` [ms]."""
    percentile: float = Field(default=99.0, gt=50, lt=100)
    """Percentile the bounds apply at, in (50, 100) [%] (MLPerf Server and Interactive: 99)."""
    attainment: float = Field(default=0.99, gt=0, le=1)
    """Share of requests that must arrive in windows meeting the bounds [fraction]."""


class Serving(_Model):
    """An LLM endpoint: a model served to a stream of requests under a latency SLO.

    The model is a preset id of :func:`accelsim.catalog.model_presets` (``model=``) or its
    architecture given explicitly (``params``, ``layers``, ``d_model``, ``kv_heads``,
    ``head_dim`` and, for a mixture of experts, ``active_params``), never both. Requests
    arrive at ``rate_rps`` times the hour's ``daily_profile`` multiplier, growing by
    ``growth_per_month``; within each burst window the rate is that mean times a gamma
    multiplier of mean 1 and variance ``burstiness - 1`` (1: a Poisson stream). The scenario
    serves on its one pool, in replicas of ``chips_per_replica`` chips.
    """

    kind: Literal["serving"] = "serving"
    model: str | None = None
    """Model preset id, e.g. ``"llama-3.1-70b"``; unknown ids are an error naming close ones."""
    params: float | None = Field(default=None, gt=0)
    """Total parameters, every expert included [count] (explicit architecture)."""
    active_params: float | None = Field(default=None, gt=0)
    """Parameters used per token [count]; unset = ``params`` (a dense model)."""
    layers: int | None = Field(default=None, gt=0)
    """Transformer layers [count]."""
    d_model: int | None = Field(default=None, gt=0)
    """Hidden size [count]."""
    kv_heads: int | None = Field(default=None, gt=0)
    """Key/value heads per layer [count]."""
    head_dim: int | None = Field(default=None, gt=0)
    """Dimension of one attention head [count]."""
    framework: Framework = "pytorch"
    """Framework of the serving stack's code; decides the porting hours to the chip's stack."""
    precision: ServingPrecision = "bf16"
    """Weights and matmuls: ``bf16``, ``fp8``, ``int8`` or ``fp4``, where the chip publishes
    that peak."""
    kv_precision: ServingPrecision | None = None
    """KV-cache values; unset = ``precision``."""
    rate_rps: Uncertain
    """Mean request rate over the day, at the start of the horizon [1/s]."""
    daily_profile: list[float] | None = None
    """24 hourly multipliers of the rate with mean 1 (hour 0 first); unset = flat."""
    burstiness: Uncertain = 1.0
    """1 + the squared coefficient of variation of the request rate between burst windows,
    in [1, 100]: 1 = Poisson; 2 = each window's rate exponentially distributed about the
    mean. [ratio]"""
    burst_window_minutes: float = 5.0
    """Length of a burst window, also the window the SLO percentiles are judged over; a
    divisor of 60. [min]"""
    growth_per_month: Uncertain = 0.0
    """Growth of the rate per 30.4-day month, compounded hourly [fraction], > -1."""
    input_tokens: Uncertain
    """Prompt length of one request [tokens]: a number or the distribution each request's
    length is drawn from (rounded, clipped to [1, the preset's max_context])."""
    output_tokens: Uncertain
    """Output length of one request [tokens], like ``input_tokens``."""
    slo: SLO
    """The latency objective."""
    chips_per_replica: int | None = Field(default=None, gt=0)
    """Chips of one replica (tensor / expert parallel group); a divisor of the pool's count
    within the chip's scale-up domain. Unset: the smallest power of two whose usable memory
    holds the weights in at most ``replica_weight_share_max`` (serving prior)."""
    kv_share: Uncertain | None = None
    """Share of the memory left after the weights that holds KV cache, in (0, 1]; unset =
    the serving prior ``memory_share`` (share of all memory for weights and KV cache)."""
    max_batch: int | None = Field(default=None, gt=0)
    """Most sequences a replica runs at once; unset = the serving prior of the chip's stack."""
    prefill_chunk_tokens: int = Field(default=0, ge=0)
    """Prompt tokens prefilled per iteration (chunked prefill); 0 = off (whole prompts)."""
    router: Router = "least_loaded"
    """How the request DES routes a request to a replica."""
    scaling: Scaling = "fixed"
    """``fixed``: the pool's count // chips_per_replica replicas all the time;
    ``follow_demand``: each hour ``ceil(rate / (target_utilization x SLO capacity))``
    replicas, within ``min_replicas`` and ``max_replicas``."""
    min_replicas: int = Field(default=1, ge=0)
    """Fewest replicas under ``follow_demand`` [count]."""
    max_replicas: int | None = Field(default=None, gt=0)
    """Most replicas under ``follow_demand`` [count]; unset = all the pool holds."""
    cold_start_minutes: float = Field(default=0.0, ge=0, le=60)
    """Time from a scale-up decision to the new replica serving (billed) [min]."""
    target_utilization: float = Field(default=1.0, gt=0, le=1)
    """Load per replica under ``follow_demand``, as a share of its SLO capacity (the largest
    Poisson rate meeting the SLO): 1 = the fewest replicas meeting it; less leaves headroom
    for bursts [fraction]."""
    horizon_days: float = Field(default=30.0, gt=0, le=3660)
    """Time served [d]."""

    @model_validator(mode="after")
    def _checks(self) -> Serving:
        given = [f for f in _MODEL_FIELDS if getattr(self, f) is not None]
        if self.model is not None:
            if given:
                raise ValueError(
                    f"give model= (a preset) or the architecture ({', '.join(_MODEL_FIELDS)}), "
                    f"not both: model={self.model!r} with {', '.join(given)}"
                )
            try:
                catalog.model_preset(self.model)
            except AccelsimError as exc:
                raise ValueError(str(exc)) from None
        else:
            need = [f for f in _MODEL_FIELDS if f != "active_params" and f not in given]
            if need:
                raise ValueError(
                    f"give model= (a preset id such as 'llama-3.1-70b') or the architecture; "
                    f"missing {', '.join(need)}"
                )
            active, total = self.active_params, self.params
            if active is not None and total is not None and active > total:
                raise ValueError(
                    f"active_params={active:.3g} exceeds params={total:.3g}: params counts "
                    f"every expert"
                )
        if self.daily_profile is not None:
            profile = self.daily_profile
            if len(profile) != 24 or any(not (0 <= v < math.inf) for v in profile):
                raise ValueError(
                    f"daily_profile must be 24 hourly multipliers >= 0, got {len(profile)} values"
                )
            mean = sum(profile) / 24.0
            if abs(mean - 1.0) > 1e-3:
                raise ValueError(
                    f"daily_profile must have mean 1 (it multiplies rate_rps), but its mean is "
                    f"{mean:.4g}: divide each value by {mean:.4g}"
                )
        windows = _MINUTES_PER_HOUR / self.burst_window_minutes
        if not (1 <= windows <= 3600) or abs(windows - round(windows)) > 1e-9:
            raise ValueError(
                f"burst_window_minutes must divide an hour (e.g. 1, 5, 15, 60), not "
                f"{self.burst_window_minutes:g}"
            )
        _check_range("rate_rps", self.rate_rps, 0, math.inf, low_open=True)
        _check_range("burstiness", self.burstiness, 1, 100, low_open=False)
        _check_range("growth_per_month", self.growth_per_month, -1, 10, low_open=True)
        # Lengths are rounded and clipped to [1, the preset's max_context] per request, so a
        # continuous law with support from 0 (LogNormal) is fine; negative lengths are not.
        _check_range("input_tokens", self.input_tokens, 0, math.inf, low_open=False)
        _check_range("output_tokens", self.output_tokens, 0, math.inf, low_open=False)
        _check_range("kv_share", self.kv_share, 0, 1, low_open=True)
        autoscaling = ("min_replicas", "max_replicas", "cold_start_minutes", "target_utilization")
        if self.scaling == "fixed":
            # Judged by value, not by model_fields_set: a dumped scenario holds every field.
            defaults = {f: Serving.model_fields[f].default for f in autoscaling}
            set_here = sorted(f for f in autoscaling if getattr(self, f) != defaults[f])
            if set_here:
                raise ValueError(
                    f"{', '.join(set_here)} apply to scaling='follow_demand'; with "
                    f"scaling='fixed' the pool's count // chips_per_replica replicas serve"
                )
        if self.max_replicas is not None and self.max_replicas < self.min_replicas:
            raise ValueError(
                f"max_replicas ({self.max_replicas}) is below min_replicas ({self.min_replicas})"
            )
        return self

    @property
    def preset(self) -> catalog.ModelPreset | None:
        """The model preset, or None for an explicit architecture."""
        return None if self.model is None else catalog.model_preset(self.model)

    @property
    def total_params(self) -> float:
        """Parameters held in memory, every expert included [count]."""
        preset = self.preset
        return preset.params if preset is not None else float(self.params or 0.0)

    def weight_bytes(self) -> float:
        """Bytes of one copy of the weights at ``precision`` [B]."""
        return self.total_params * catalog.BYTES_PER_VALUE[self.precision]

    def replica_chips(self, chip: catalog.Chip, pool_count: int) -> int:
        """Chips per replica: the user's, or the smallest power of two (within the pool and
        the scale-up domain) whose usable memory holds the weights in at most the prior
        ``replica_weight_share_max``; the pool's count if none does (the scenario's
        validation then reports the fit)."""
        if self.chips_per_replica is not None:
            return self.chips_per_replica
        priors = catalog.serving_priors()
        share = as_dist(priors.memory_share.value).expected_value()
        weight_share = as_dist(priors.replica_weight_share_max.value).expected_value()
        need = self.weight_bytes()
        most = min(pool_count, chip.scale_up_domain_chips)
        chips = 1
        while chips <= most:
            if (
                pool_count % chips == 0
                and need <= weight_share * share * chip.hbm_gib * _GIB * chips
            ):
                return chips
            chips *= 2
        return most


Workload = Annotated[TrainingRun | JobStream | Trace | Serving, Field(discriminator="kind")]
Background = Annotated[JobStream | Trace, Field(discriminator="kind")]


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
    """``on_demand``, ``spot``, ``commit_1y``, ``commit_3y`` or ``on_prem``."""
    term_share: float | None = Field(default=None, ge=0, le=1)
    """Share of a committed term (or of on-prem hardware life) charged to this scenario,
    used or not. Unset: the whole term of a commitment, and for on-prem only the hours the
    chips are held (they are assumed reused afterwards)."""

    @field_validator("chip")
    @classmethod
    def _known_chip(cls, chip_id: str) -> str:
        try:
            return catalog.chip(chip_id).id
        except AccelsimError as exc:
            raise ValueError(str(exc)) from None

    @model_validator(mode="after")
    def _offered(self) -> Pool:
        if self.term_share is not None and self.pricing in ("on_demand", "spot"):
            raise ValueError(
                f"term_share applies to commit_1y, commit_3y and on_prem pools; a "
                f"{self.pricing} pool pays for the hours it holds: remove term_share"
            )
        if self.term_share == 0 and self.pricing.startswith("commit"):
            raise ValueError(
                f"term_share=0 charges none of the {self.pricing} term, yet the committed "
                f"price needs the commitment: use a share in (0, 1] or pricing on_demand"
            )
        if self.provider is None:
            return self
        try:
            catalog.price(self.chip, provider=self.provider, pricing=self.pricing)
        except AccelsimError as exc:
            raise ValueError(str(exc)) from None
        return self


# Upper ends of the non-negative assumptions: beyond these a value is a units mistake
# (a chip failing or preempted more than once an hour, a ten-year lead time...).
_ASSUMPTION_HIGH = {
    "failure_rate_per_chip_hour": 1.0,
    "spot_preemptions_per_hour": 1.0,
    "restart_hours": 1e4,
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


class Scenario(_Model):
    """A workload on a fleet under assumptions: the input of every study."""

    name: str = Field(min_length=1)
    """A short label used in tables and plots."""
    workload: Workload
    """``TrainingRun``, ``JobStream``, ``Trace`` or ``Serving`` (``kind:`` in scenario files)."""
    fleet: list[Pool] = Field(min_length=1)
    """The pools of chips; a training run uses the first."""
    assumptions: Assumptions = Assumptions()
    """Uncertain inputs; unset fields take the catalog priors."""
    background: Background | None = None
    """Other work sharing the fleet with a training run (``kind: job_stream`` or ``trace``);
    requires ``horizon_days``. The training run then competes with it on the first pool as
    one gang job of priority 1 (the background keeps its own priorities), and its
    time-to-train includes its queue wait. The background starts at time 0 and the
    training run's clock (the decision) at ``warmup_days``, so it meets a busy cluster."""
    scheduler: SchedulerName = "fifo"
    """Queue policy of the shared-cluster engine."""
    horizon_days: float | None = Field(default=None, gt=0, le=_MAX_HORIZON_DAYS)
    """Simulated time for a job stream, a trace or a background [d]."""
    warmup_days: float = Field(default=0.0, ge=0, le=_MAX_HORIZON_DAYS)
    """Initial period excluded from stream metrics; with a background, the time the
    background runs before the training run's decision [d]."""
    credits: list[Credit] = Field(default_factory=list)
    """Credits and grants that offset cloud hardware cost (:class:`Credit`); reported as
    the ``credits_usd`` line."""
    description: str = ""
    """Free text for the reader of the scenario file."""

    @model_validator(mode="after")
    def _cross_checks(self) -> Scenario:
        work = self.workload
        if self.background is not None and not isinstance(work, TrainingRun):
            raise ValueError(
                f"background is other work sharing the fleet with a training run; a "
                f"{work.kind} workload has no training run to compete with, so put that work "
                f"in the workload itself"
            )
        if self.background is not None and self.horizon_days is None:
            raise ValueError(
                "horizon_days is required with a background: it is the time over which the "
                "shared fleet's metrics are measured"
            )
        self._check_applies(work)
        if isinstance(work, TrainingRun):
            self._check_fits(work)
            self._check_layout(work)
            self._check_phases(work)
            for pool in self.fleet:
                chip = catalog.chip(pool.chip)
                if work.precision != "bf16" and getattr(chip, f"{work.precision}_tflops") is None:
                    raise ValueError(
                        f"fleet: chip {chip.id!r} has no published {work.precision} peak; "
                        f"use precision 'bf16' or another chip"
                    )
        elif isinstance(work, Serving):
            self._check_serving(work)
        elif self.horizon_days is None:
            raise ValueError(f"horizon_days is required for a {work.kind} workload")
        if self.horizon_days is not None and self.warmup_days >= self.horizon_days:
            raise ValueError(
                f"warmup_days ({self.warmup_days:g}) must be less than horizon_days "
                f"({self.horizon_days:g})"
            )
        for where, stream in (("workload", work), ("background", self.background)):
            if isinstance(stream, JobStream):
                _, most = _support(stream.chips)
                biggest = max(pool.count for pool in self.fleet)
                if most > biggest:
                    raise ValueError(
                        f"{where}.chips can reach {most:g} chips but the largest pool has "
                        f"{biggest}; such jobs could never start"
                    )
                unsliced = [
                    p.chip
                    for p in self.fleet
                    if catalog.chip(p.chip).kind == "tpu"
                    and not (
                        catalog.chip(p.chip).slice_sizes or catalog.chip(p.chip).slice_multiple
                    )
                ]
                mix = (
                    stream.framework
                    if isinstance(stream.framework, dict)
                    else {stream.framework: 1.0}
                )
                for framework in (f for f, weight in mix.items() if weight > 0):
                    if not any(_runs_natively(framework, p.chip) for p in self.fleet):
                        raise ValueError(
                            f"{where}.framework: no pool runs {framework} code without a "
                            f"port; add a pool whose chip stack fits"
                        )
                if stream.whole_domains and unsliced:
                    # A TPU's scale-up domain is its whole pod: without the chip's valid slice
                    # shapes, rounding to domains would hand every job a pod.
                    raise ValueError(
                        f"{where}.whole_domains needs valid slice shapes for TPU pools, and the "
                        f"catalog has none for {', '.join(unsliced)} (its domain is a whole "
                        f"pod): set whole_domains: false or give the chip slice_sizes"
                    )
        return self

    def _check_applies(self, work: Any) -> None:
        """A field that does not apply to this scenario is an error, never silently ignored."""
        a = self.assumptions
        if not any(p.pricing == "spot" for p in self.fleet):
            for name in ("spot_preemptions_per_hour", "spot_return_hours"):
                if getattr(a, name) is not None:
                    raise ValueError(
                        f"assumptions.{name} applies to spot pools and the fleet has none: "
                        f"remove it or use pricing spot"
                    )
        if a.electricity_usd_per_kwh is not None and not any(
            p.pricing == "on_prem" for p in self.fleet
        ):
            raise ValueError(
                "assumptions.electricity_usd_per_kwh applies to on_prem pools (a cloud price "
                "includes power) and the fleet has none: remove it"
            )
        if isinstance(work, TrainingRun) and self.background is None:
            if self.warmup_days and self.horizon_days is None:
                raise ValueError(
                    "warmup_days applies with horizon_days (a measured window: a stream, a "
                    "trace or a background); a training run alone has none: remove it"
                )
            if self.scheduler != "fifo":
                raise ValueError(
                    f"scheduler={self.scheduler!r} applies to a shared fleet (a job stream, "
                    f"a trace or a background); a training run alone has no queue"
                )

    def _check_layout(self, work: TrainingRun) -> None:
        """The run's sharding fits the first pool, and its batch feeds every replica."""
        pool = self.fleet[0]
        chip = catalog.chip(pool.chip)
        params, chips = work.state_params, pool.count
        # ZeRO figure 1 (Rajbhandari et al. 2020): bf16 weights 2, gradients 2, Adam 12 bytes.
        replicated, sharded = {
            "none": (16.0, 0.0),
            "zero1": (4.0, 12.0),
            "zero2": (2.0, 14.0),
        }.get(work.sharding, (0.0, 16.0))
        need_gib = params * (replicated + sharded / chips) / _GIB
        if need_gib > chip.hbm_gib:
            raise ValueError(
                f"workload.sharding={work.sharding!r}: the training state needs "
                f"{need_gib:,.0f} GiB per chip but {chip.id} has {chip.hbm_gib:g} GiB of HBM; "
                f"use zero3/fsdp or more chips"
            )
        if work.global_batch_tokens is None:
            return
        # Fewest chips per replica: one scale-up domain, or the chips holding the state.
        per_replica = max(
            min(chip.scale_up_domain_chips, chips), math.ceil(need_gib / chip.hbm_gib), 1
        )
        replicas = max(chips // per_replica, 1)
        sequence = work.seq_len or _MIN_SEQUENCE_TOKENS
        smallest = _support(work.global_batch_tokens)[0]
        if smallest < sequence * replicas:
            raise ValueError(
                f"workload.global_batch_tokens can be {smallest:.3g}, less than one sequence "
                f"({sequence} tokens) per data-parallel replica ({replicas:,} replicas of "
                f"{per_replica} x {chip.id}): raise it to >= {sequence * replicas:.3g}"
            )

    def _check_phases(self, work: TrainingRun) -> None:
        """Phases run on the first pool, alone on it (the analytic engine), and fit it."""
        if work.phases is None:
            return
        if len(self.fleet) != 1 or self.background is not None:
            raise ValueError(
                "workload.phases needs the analytic engine: one training run on one pool "
                "without a background; remove the phases or the other pools and background"
            )
        pool = self.fleet[0]
        hbm = catalog.chip(pool.chip).hbm_gib
        need_gib = training_state_gib(work.state_params)
        for i, phase in enumerate(work.phases):
            if phase.chips > pool.count:
                raise ValueError(
                    f"workload.phases[{i}].chips={phase.chips} exceeds the pool's count "
                    f"({pool.count}): a phase uses chips of the run's pool"
                )
            if need_gib > hbm * phase.chips:
                raise ValueError(
                    f"workload.phases[{i}].chips={phase.chips}: the training state needs "
                    f"about {need_gib:,.0f} GiB even fully sharded, but {phase.chips} x "
                    f"{pool.chip} have {hbm * phase.chips:,.0f} GiB of HBM; add chips"
                )

    def _check_fits(self, work: TrainingRun) -> None:
        need_gib = training_state_gib(work.state_params)
        have = {p.chip: catalog.chip(p.chip).hbm_gib * p.count for p in self.fleet}
        best_chip, best_gib = max(have.items(), key=lambda kv: kv[1])
        if need_gib > best_gib:
            field = "params" if work.total_params is None else "total_params"
            raise ValueError(
                f"workload.{field}={work.state_params:.3g} needs about {need_gib:,.0f} GiB of "
                f"weights, gradients and Adam state even fully sharded, but the largest pool "
                f"({best_chip}) has {best_gib:,.0f} GiB of HBM in total; add chips"
            )

    def _check_serving(self, work: Serving) -> None:
        if len(self.fleet) != 1:
            raise ValueError(
                f"a serving workload runs on one pool, but the fleet has {len(self.fleet)}: "
                f"compare one scenario per pool"
            )
        if self.horizon_days is not None and self.horizon_days != work.horizon_days:
            raise ValueError(
                f"horizon_days ({self.horizon_days:g}) differs from workload.horizon_days "
                f"({work.horizon_days:g}): a serving scenario's horizon is the workload's"
            )
        if self.warmup_days:
            raise ValueError("warmup_days must be 0 for serving: every hour of it is priced")
        pool = self.fleet[0]
        chip = catalog.chip(pool.chip)
        try:
            chip.peak_tflops(work.precision)
        except catalog.PrecisionUnavailableError as exc:
            raise ValueError(f"workload.precision: {exc}") from None
        chips = work.replica_chips(chip, pool.count)
        if chips > pool.count or pool.count % chips:
            raise ValueError(
                f"workload.chips_per_replica={chips} must divide the pool's count "
                f"({pool.count}) into whole replicas"
            )
        if chips > chip.scale_up_domain_chips:
            raise ValueError(
                f"workload.chips_per_replica={chips} exceeds the scale-up domain of {chip.id} "
                f"({chip.scale_up_domain_chips} chips): tensor parallelism needs one domain"
            )
        if work.kv_share is None:
            share = _support(catalog.serving_priors().memory_share.value)[1]
            usable = f"at most {share:.0%} of it usable for weights and KV cache (prior)"
        else:
            share, usable = 1.0, "all of it"
        hbm_bytes = chip.hbm_gib * _GIB * chips
        need = work.weight_bytes()
        if need >= share * hbm_bytes:
            raise ValueError(
                f"the weights ({need / 1e9:,.1f} GB at {work.precision}) do not fit a replica "
                f"of {chips} x {chip.id}: HBM {hbm_bytes / 1e9:,.1f} GB, {usable}; use more "
                f"chips_per_replica, a lower precision or a chip with more memory"
            )
        if work.scaling == "follow_demand":
            most = pool.count // chips
            for name in ("min_replicas", "max_replicas"):
                value = getattr(work, name)
                if value is not None and value > most:
                    raise ValueError(
                        f"workload.{name}={value} exceeds the {most} replicas the pool holds "
                        f"({pool.count} chips / {chips} per replica)"
                    )

    @property
    def training(self) -> TrainingRun:
        """The workload as a :class:`TrainingRun` (error if it is a stream or trace)."""
        if not isinstance(self.workload, TrainingRun):
            raise TypeError(f"scenario {self.name!r} has a {self.workload.kind} workload")
        return self.workload

    def replace(self, path: str, value: Any) -> Scenario:
        """A validated copy with the field at dotted ``path`` set, e.g. ``"fleet.0.count"``."""
        data = self.model_dump(mode="python")
        node: Any = data
        keys = path.split(".")
        if isinstance(value, np.generic):  # a grid from numpy: its Python number (strict types)
            value = value.item()
        try:
            for key in keys[:-1]:
                node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
            if isinstance(node, list):
                node[int(keys[-1])] = value
            else:
                node[keys[-1]] = value
        except (IndexError, ValueError, AttributeError, TypeError):
            raise KeyError(f"no field at path {path!r} in scenario {self.name!r}") from None
        return Scenario.model_validate(data)


class Goals(_Model):
    """What an option must achieve, and how sure the study must be that it does.

    Each goal is optional and reads one metric, whatever the workload (an option whose
    result lacks the metric is an error naming the goal, the option and the metric):

    ==================  ======================  =======  ===================================
    goal                metric                  met if   applies to
    ==================  ======================  =======  ===================================
    ``deadline_days``   ``time_to_train_days``  ``<=``   training runs (serving and streams
                                                         have no end date: an error)
    ``budget_usd``      ``tco_usd``             ``<=``   every workload
    ``slo_attainment``  ``slo_attainment``      ``>=``   serving
    ``max_wait_hours``  ``mean_wait_hours``     ``<=``   job streams, traces, a training
                                                         run's shared fleet
    ==================  ======================  =======  ===================================

    A run with ``finished == 0`` (when the metric is present) never meets a deadline, and a
    run whose metric is not a number meets no goal on it. An option *meets the goals* when
    the share of its runs meeting all of them at once is at least ``confidence``.

    Examples
    --------
    >>> Goals(deadline_days=120, budget_usd=4e6, confidence=0.9).names
    ('deadline_days', 'budget_usd')
    """

    deadline_days: float | None = Field(default=None, gt=0)
    """Latest time to a trained model, from the decision [d]."""
    budget_usd: float | None = Field(default=None, gt=0)
    """Largest total cost of ownership [USD]."""
    slo_attainment: float | None = Field(default=None, gt=0, le=1)
    """Smallest share of requests meeting the serving SLO [fraction]."""
    max_wait_hours: float | None = Field(default=None, ge=0)
    """Largest mean queue wait of a job stream's jobs [h]."""
    confidence: float = Field(default=0.9, gt=0, lt=1)
    """Smallest share of runs that must meet every goal at once [fraction]."""

    @model_validator(mode="after")
    def _some_goal(self) -> Goals:
        if not self.names:
            raise ValueError(
                "Goals needs at least one of deadline_days, budget_usd, slo_attainment, "
                "max_wait_hours"
            )
        return self

    @property
    def names(self) -> tuple[str, ...]:
        """The goals set, in field order (``confidence`` is not a goal)."""
        goals = ("deadline_days", "budget_usd", "slo_attainment", "max_wait_hours")
        return tuple(g for g in goals if getattr(self, g) is not None)


def _read(path: Path) -> tuple[Any, Any]:
    """(plain data, YAML document or None) from a .yaml/.yml/.json/.toml file."""
    text = path.read_text(encoding="utf-8")
    suffix = path.suffix.lower()
    if suffix in {".yaml", ".yml"}:
        doc = load_yaml_text(text, source=str(path))
        return to_plain(doc), doc
    if suffix == ".json":
        try:
            return json.loads(text), None
        except json.JSONDecodeError as exc:
            raise ScenarioFileError(f"{path}:{exc.lineno}:{exc.colno}: {exc.msg}") from None
    if suffix == ".toml":
        try:
            return tomllib.loads(text), None
        except tomllib.TOMLDecodeError as exc:
            raise ScenarioFileError(f"{path}: {exc}") from None
    raise ScenarioFileError(
        f"{path}: unknown scenario file type {suffix!r}; use .yaml, .json or .toml"
    )


def format_validation_error(exc: ValidationError, source: str, doc: Any = None) -> str:
    """One line per problem: ``file:line: field.path: message``."""
    lines = []
    for err in exc.errors():
        loc = [part for part in err["loc"] if not (isinstance(part, str) and "[" in part)]
        field = ".".join(str(p) for p in loc) or "(top level)"
        line = line_of(doc, loc) if doc is not None else None
        where = f"{source}:{line}" if line is not None else source
        lines.append(f"{where}: {field}: {err['msg']}")
    return "\n".join(lines)


def load_scenario(path: str | Path) -> Scenario:
    """Read a scenario from YAML, JSON or TOML; errors name the file, line and field path.

    A relative ``Trace.path`` (of the workload or the background) is resolved against the
    scenario file's folder.
    """
    p = Path(path)
    if not p.is_file():
        raise ScenarioFileError(f"{p}: no such scenario file")
    data, doc = _read(p)
    if not isinstance(data, dict):
        raise ScenarioFileError(f"{p}: a scenario file must hold a mapping at the top level")
    for key in ("workload", "background"):
        work = data.get(key)
        if isinstance(work, dict) and work.get("kind") == "trace" and "path" in work:
            trace_path = Path(str(work["path"]))
            if not trace_path.is_absolute():
                work["path"] = str((p.parent / trace_path).resolve())
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise ScenarioFileError(format_validation_error(exc, str(p), doc)) from exc


__all__ = [
    "SLO",
    "Assumptions",
    "Background",
    "Credit",
    "Framework",
    "Goals",
    "JobStream",
    "Pool",
    "Precision",
    "Router",
    "Scaling",
    "Scenario",
    "SchedulerName",
    "Serving",
    "ServingPrecision",
    "Sharding",
    "Stage",
    "Trace",
    "TrainingPhase",
    "TrainingRun",
    "Workload",
    "format_validation_error",
    "load_scenario",
]
