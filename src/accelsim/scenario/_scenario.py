"""The scenario: a workload on a fleet under assumptions, with its cross-field rules."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any

import numpy as np
from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from accelsim import catalog
from accelsim.scenario._applies import check_applies
from accelsim.scenario._common import (
    _GIB,
    _MAX_HORIZON_DAYS,
    _MIN_SEQUENCE_TOKENS,
    FROZEN_BYTES_PER_PARAM,
    MAX_NAME_CHARS,
    SchedulerName,
    _Model,
    _runs_natively,
    _support,
    check_label,
)
from accelsim.scenario._fleet import Assumptions, Credit, Pool
from accelsim.scenario._recovery_rules import check_recovery
from accelsim.scenario._serving import Serving, check_disaggregated, check_replica_pool
from accelsim.scenario._streams import JobStream, Trace
from accelsim.scenario._training import TrainingRun
from accelsim.scenario._workloads_mix import _MAX_MIX, check_lone, check_mix

Workload = Annotated[TrainingRun | JobStream | Trace | Serving, Field(discriminator="kind")]
Background = Annotated[JobStream | Trace, Field(discriminator="kind")]
_UNSET: Any = object()


class Scenario(_Model):
    """A workload on a fleet under assumptions: the input of every study."""

    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    """A short label used in tables and plots (at most 200 characters)."""
    workload: Workload | None = None
    """``TrainingRun``, ``JobStream``, ``Trace`` or ``Serving`` (``kind:`` in scenario files);
    exactly one of ``workload`` and ``workloads``."""
    workloads: list[Workload] | None = Field(default=None, min_length=1, max_length=_MAX_MIX)
    """Several workloads sharing the fleet, each named and prioritised (``name``,
    ``priority``): one DES run holds them all, with one TCO and its chargeback per workload
    (:mod:`accelsim.scenario._workloads_mix` has the rules); requires ``horizon_days``."""
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

    @field_validator("name")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        return check_label(value)

    @model_validator(mode="after")
    def _cross_checks(self) -> Scenario:
        work = self.workload
        check_recovery(self)
        if work is None or self.workloads is not None:
            check_mix(self)  # several workloads on one fleet: their own rules
            return self
        check_lone(work)
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
                self._check_stream(where, stream)
        return self

    def _check_stream(self, where: str, stream: JobStream) -> None:
        """A job stream's jobs can start: none larger than the largest pool, some pool runs
        each framework without a port, and whole domains have TPU slice shapes."""
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
            and not (catalog.chip(p.chip).slice_sizes or catalog.chip(p.chip).slice_multiple)
        ]
        mix = stream.framework if isinstance(stream.framework, dict) else {stream.framework: 1.0}
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

    def _check_applies(self, work: Any) -> None:
        """A field that does not apply to this scenario is an error, never silently ignored
        (the table of which engine reads which field: :mod:`accelsim.scenario._applies`)."""
        del work  # the rules look at the whole scenario
        check_applies(self)

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
        if work.fine_tune in ("lora", "qlora"):
            # frozen base weights: replicated but under zero3/fsdp; the adapters as above
            frozen = params * FROZEN_BYTES_PER_PARAM[work.fine_tune]
            frozen /= 1.0 if work.sharding in ("none", "zero1", "zero2") else chips
            need_gib = (frozen + work.adapter_params * (replicated + sharded / chips)) / _GIB
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
        need_gib = work.state_gib
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
        need_gib = work.state_gib
        have = {p.chip: catalog.chip(p.chip).hbm_gib * p.count for p in self.fleet}
        best_chip, best_gib = max(have.items(), key=lambda kv: kv[1])
        if need_gib > best_gib:
            field = "params" if work.total_params is None else "total_params"
            what, remedy = "weights, gradients and Adam state", "add chips"
            if work.fine_tune in ("lora", "qlora"):
                what = f"frozen {work.fine_tune} base weights and adapter state"
            elif work.fine_tune is None or work.fine_tune == "full":
                remedy = "add chips (or, for a fine-tune, set fine_tune='lora' or 'qlora')"
            raise ValueError(
                f"workload.{field}={work.state_params:.3g} needs about {need_gib:,.0f} GiB of "
                f"{what} even fully sharded, but the largest pool ({best_chip}) has "
                f"{best_gib:,.0f} GiB of HBM in total; {remedy}"
            )

    def _check_serving(self, work: Serving) -> None:
        if work.disaggregated is None and len(self.fleet) != 1:
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
        if work.disaggregated is not None:
            check_disaggregated(work, self.fleet)
            return
        pool = self.fleet[0]
        chip = catalog.chip(pool.chip)
        try:
            chip.peak_tflops(work.precision)
        except catalog.PrecisionUnavailableError as exc:
            raise ValueError(f"workload.precision: {exc}") from None
        chips = work.replica_chips(chip, pool.count)
        check_replica_pool(work, pool, chips, "workload.chips_per_replica")

    @property
    def workload_kind(self) -> str:
        """The workload's ``kind``, or ``"mixed"`` for several workloads (``workloads``)."""
        return "mixed" if self.workload is None else self.workload.kind

    @property
    def training(self) -> TrainingRun:
        """The workload as a :class:`TrainingRun` (error if it is a stream or trace)."""
        if not isinstance(self.workload, TrainingRun):
            raise TypeError(f"scenario {self.name!r} has a {self.workload_kind} workload")
        return self.workload

    def replace(self, path: str | Mapping[str, Any], value: Any = _UNSET) -> Scenario:
        """A validated copy with the field at dotted ``path`` set, e.g. ``"fleet.0.count"``.

        ``path`` may also be a mapping of several paths to their values, applied together
        and validated once at the end: for changes that are valid only together, e.g.
        ``s.replace({"background": None, "horizon_days": None})`` (a background needs
        ``horizon_days`` and a training run alone has none, so neither change is valid on
        its own).
        """
        if isinstance(path, Mapping):
            if value is not _UNSET:
                raise TypeError("replace(mapping) takes no value: the mapping holds them")
            changes = dict(path)
        elif value is _UNSET:
            raise TypeError(f"replace({path!r}) needs a value")
        else:
            changes = {path: value}
        data = self.model_dump(mode="python")
        for key, new in changes.items():
            _set_path(data, key, new, self.name)
        return Scenario.model_validate(data)


def _set_path(data: dict[str, Any], path: str, value: Any, name: str) -> None:
    """Set the field at dotted ``path`` of a dumped scenario ``data`` in place."""
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
        raise KeyError(f"no field at path {path!r} in scenario {name!r}") from None
