"""A training run and its phases (a run that changes size)."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import (
    Field,
    model_validator,
)

from accelsim import catalog
from accelsim.dists import Uncertain
from accelsim.scenario._common import (
    _LORA_TRAINABLE_FRACTION,
    _MAX_PARAMS,
    _MAX_TOKENS,
    _MAX_TRAINING_FLOPS,
    MIX_NAME_PATTERN,
    TRAINING_HORIZON_DAYS,
    FineTune,
    Framework,
    Precision,
    Recovery,
    Regime,
    Sharding,
    Stage,
    _check_range,
    _Model,
    adapter_state_gib,
    training_state_gib,
)

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
    """Training tokens [count]: the run's own count, or with :attr:`target` ``"loss"`` the
    tokens its target loss takes at a small batch."""
    target: Literal["tokens", "loss"] = "tokens"
    """What the run trains to. ``tokens`` (the default): exactly :attr:`tokens`, whatever the
    batch. ``loss``: the loss that :attr:`tokens` reach at a batch much smaller than the
    gradient noise scale; a larger global batch B needs more tokens,
    E = tokens x (1 + B / B_noise) (McCandlish et al. 2018, arXiv:1812.06162), with B the
    engine's batch at the run's chips and B_noise the critical batch of the run's compute
    (``scaling.yaml`` ``critical_batch_*``; :func:`accelsim.models.perf.tokens_to_target`)."""
    framework: Framework = "pytorch"
    """The framework the code base is written in; decides porting hours per chip stack."""
    stage: Stage = "production"
    """``prototype``: many changing experiments; ``production``: one long, locked run."""
    fine_tune: FineTune | None = None
    """A fine-tune of an existing model rather than a pretraining run. ``full``: every
    parameter trained (the memory of pretraining). ``lora``: the base weights frozen in bf16
    and low-rank adapters trained; ``qlora``: the base weights frozen in 4-bit NF4. LoRA and
    QLoRA train on ``4 N + 2 T`` FLOPs per token (no weight gradients for the frozen base;
    ``T`` adapter parameters) and hold ``2`` or ``0.52`` bytes per base parameter plus 16
    per adapter parameter. Every fine-tune pays ``priors.fine_tune_porting_share`` of the
    porting hours on a stack its framework does not fit (a script moved onto a maintained
    recipe, not a code base) and no re-optimisation per architecture change (its
    architecture is the base model's). Unset: a pretraining run."""
    trainable_params: float | None = Field(default=None, gt=0, le=_MAX_PARAMS)
    """Adapter parameters of a ``lora`` or ``qlora`` fine-tune [count]; unset =
    ``priors.lora_trainable_fraction`` (1 %) of the base model's parameters."""
    recovery: Recovery | None = None
    """How the team recovers from interruptions. ``standard``: synchronous checkpoints to
    persistent storage and a whole-job restart that reloads them
    (``priors.checkpoint_write_hours``, ``priors.restart_hours``). ``frontier``: asynchronous
    or in-memory checkpoints (the training stalls only for the snapshot), warm spare hosts
    in place of failed ones (no wait for a repair) and a restart from peers' memory
    (``priors.frontier_*``). Unset: ``frontier`` at ``priors.frontier_recovery_min_chips``
    chips or more (and from ``priors.frontier_recovery_from_year`` on, see
    :attr:`start_year`), else ``standard``. ``Assumptions.checkpoint_write_hours`` and
    ``restart_hours``, when set, override either technique's prior."""
    start_year: int | None = Field(default=None, ge=1990, le=2100)
    """Calendar year the run starts [year]. With :attr:`recovery` unset, a run that starts
    before ``priors.frontier_recovery_from_year`` uses ``standard`` recovery at any size:
    frontier recovery was not yet how large runs were run. Unset: a run planned now."""
    regime: Regime = "pretraining"
    """Which MFU prior applies: ``pretraining`` (production runs, the default) or
    ``benchmark`` (a tuned throughput run such as MLPerf or a framework's reference recipe:
    ``priors.mfu_ceiling_benchmark``). A fine-tune (:attr:`fine_tune` set) takes
    ``priors.mfu_fine_tune_factor`` of the production ceiling."""
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

    name: str | None = Field(default=None, pattern=MIX_NAME_PATTERN)
    """In a mix (``Scenario.workloads``): the run's name, prefixing its metrics
    (``<name>.time_to_train_days``); unset = ``training``. Not for a lone workload."""
    priority: int | None = Field(default=None, ge=-1000, le=1000)
    """In a mix: the run's priority under the ``priority`` schedulers (larger first); unset
    = 1. Not for a lone workload."""
    chips: int | None = Field(default=None, ge=1, le=10_000_000)
    """In a mix: chips of the first pool the run trains on [count]; unset = the whole pool.
    Not for a lone workload (it trains on its first pool's count)."""

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

    @model_validator(mode="after")
    def _adapters_only_with_adapter_fine_tunes(self) -> TrainingRun:
        if self.trainable_params is None:
            return self
        if self.fine_tune not in ("lora", "qlora"):
            raise ValueError(
                f"trainable_params applies to fine_tune 'lora' or 'qlora' (the adapters); "
                f"fine_tune is {self.fine_tune!r}: remove it or set fine_tune"
            )
        if self.trainable_params > self.state_params:
            raise ValueError(
                f"trainable_params={self.trainable_params:.3g} exceeds the model's "
                f"{self.state_params:.3g} parameters: adapters are a small share of them"
            )
        return self

    @property
    def adapter_params(self) -> float:
        """Trainable adapter parameters of a LoRA or QLoRA fine-tune, else 0 [count]: the
        user's ``trainable_params``, else ``priors.lora_trainable_fraction`` of the model's."""
        if self.fine_tune not in ("lora", "qlora"):
            return 0.0
        if self.trainable_params is not None:
            return self.trainable_params
        prior = catalog.priors().lora_trainable_fraction
        share = _LORA_TRAINABLE_FRACTION if prior is None else float(prior.value)  # type: ignore[arg-type]
        return share * self.state_params

    @property
    def state_gib(self) -> float:
        """HBM the run's training state needs, fully sharded [GiB]: weights, gradients and
        Adam state of every parameter, or for LoRA/QLoRA the frozen base weights plus the
        adapters' state. Activations come on top."""
        if self.fine_tune in ("lora", "qlora"):
            return adapter_state_gib(self.state_params, self.adapter_params, self.fine_tune)
        return training_state_gib(self.state_params)

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
