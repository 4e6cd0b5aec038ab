"""The sourced priors of LLM serving: achieved efficiency, iteration overhead, memory share.

The figures live in ``data/serving.yaml``; this module validates and loads them, with the
same :class:`~accelsim.catalog.Prior` entries (value, unit, assumption flag, dated sources,
note) as ``data/priors.yaml``. Efficiency is keyed by software stack (which also names the
chip kind: ``xla`` is a TPU) with optional per-chip overrides, because per-chip serving
throughput is not a chip constant.

Examples
--------
>>> p = serving_priors()
>>> p.efficiency_for("h100-sxm", "cuda").unit
'fraction'
>>> p.prefill_chunk_for("a100-80gb", "cuda")[0]
'prefill_chunk_tokens_by_chip.a100-80gb'
>>> BYTES_PER_VALUE["fp4"]
0.5
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import get_args

from pydantic import BaseModel, ConfigDict, model_validator

from accelsim.catalog._priors import Prior, Stack, load_validated, shipped
from accelsim.catalog._schema import Chip, Precision, Source
from accelsim.dists import Fixed, as_dist

_SHIPPED = "serving.yaml"

BYTES_PER_VALUE: dict[Precision, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "fp4": 0.5,
}
"""Storage per value of each number format [B] (a definition, not a measurement; block
scales of MX/NV FP4 formats add ~1/16 B per value and are left out)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(
        frozen=True, extra="forbid", allow_inf_nan=False, use_attribute_docstrings=True
    )


class ServingStack(_Frozen):
    """The maintained LLM serving engines of one software stack, with their sources."""

    engines: tuple[str, ...]
    """Engine names, most used first, e.g. ``("vLLM", "TensorRT-LLM", "SGLang")``."""
    sources: tuple[Source, ...]
    """Where each engine documents the stack (at least one)."""
    note: str = ""
    """What a model code base needs to serve on the stack."""

    @model_validator(mode="after")
    def _sourced(self) -> ServingStack:
        if not self.engines or not self.sources:
            raise ValueError("a serving stack names at least one engine and one source")
        return self


class KvPrecisionRule(_Frozen):
    """The KV-cache precision a deployment uses when the scenario does not set one."""

    by_weights: dict[Precision, Precision]
    """KV-cache precision per weight precision, e.g. ``{"fp4": "fp8"}``; a weight
    precision missing here keeps its own precision for the cache."""
    sources: tuple[Source, ...]
    """The published checkpoints and engine documents the convention is read from."""
    note: str = ""
    """Why this convention."""

    @model_validator(mode="after")
    def _sourced(self) -> KvPrecisionRule:
        if not self.sources:
            raise ValueError("the KV-cache precision convention needs at least one source")
        return self


class ServingPriors(_Frozen):
    """Every serving prior, as shipped in ``data/serving.yaml``."""

    efficiency: dict[Stack, Prior]
    """Achieved fraction of the roofline (compute and memory time), per software stack.
    [fraction]"""
    efficiency_by_chip: dict[str, Prior] = {}
    """Per chip id, where evidence separates a chip from its stack. [fraction]"""
    efficiency_by_precision: dict[Precision, Prior] = {}
    """Per weight precision, where evidence separates a number format from its stack (FP4:
    its tensor peak is reached less than FP8's); a chip's own entry comes first. [fraction]"""
    efficiency_by_group: dict[str, Prior] = {}
    """Per group ``<stack>-<precision>-<dense|moe>`` (e.g. ``cuda-fp4-moe``): the published
    rows' partially pooled predictive law of a new deployment of the group, written by
    :mod:`accelsim._serving_groups` (the law ``docs/serving_calibration.md`` scores leave one
    out); read after a chip's own entry, before the precision's and the stack's. [fraction]"""
    efficiency_by_workload: dict[str, Prior] = {}
    """Per measured configuration, keyed by :func:`serving_workload_key` (chip, model,
    precision, chips per replica): the team's own measurements of it
    (:func:`accelsim.catalog.calibrate`); it comes before ``efficiency_by_chip``. The shipped
    file has none. [fraction]"""
    overhead_seconds: Prior
    """Fixed time per continuous-batching iteration (scheduling, launches, sampling). [s]"""
    memory_share: Prior
    """Share of device memory the engine gives to weights plus KV cache. [fraction]"""
    compute_memory_overlap: Prior | None = None
    """Share of the shorter of an iteration's compute and memory times hidden under the
    longer (1: the roofline max; 0: their sum); a user file may leave it out (the shipped
    prior is used: :meth:`overlap_prior`). [fraction]"""
    max_batch: dict[Stack, Prior]
    """Scheduler cap on concurrently running sequences per replica, capped in turn at a
    chunked iteration's token budget. [count]"""
    prefill_chunk_tokens: dict[Stack, Prior]
    """Default chunked-prefill budget of a colocated replica, per software stack: tokens
    per iteration, a decode token of each running sequence first, then prompt tokens;
    vLLM's default ``max_num_batched_tokens`` for the API server. [tokens]"""
    prefill_chunk_tokens_by_chip: dict[str, Prior] = {}
    """Per chip id, where vLLM's rule sets the budget otherwise than for the stack (device
    memory below 70 GiB, an A100, a TPU generation). [tokens]"""
    mixed_batch_tokens: Prior
    """Token budget per iteration (decode and prompt tokens together) of an in-flight
    (mixed) batching scheduler, as MLPerf submissions run it (the serving calibration's
    Server/Interactive rows). [tokens]"""
    replica_weight_share_max: Prior
    """Largest share of a replica's usable memory the weights may take when the replica size
    is chosen automatically (the rest is KV cache). [fraction]"""
    power_fraction_of_tdp: Prior
    """Average chip draw while serving over the chip's TDP. [fraction]"""
    speculative_acceptance: Prior | None = None
    """Per-token acceptance rate of draft tokens (speculative decoding, MTP) where a
    scenario speculates and leaves it unset; a user file may leave it out. [fraction]"""
    speculative_draft_cost: Prior | None = None
    """One draft pass as a share of a target decode iteration of the same batch, where a
    scenario speculates and leaves it unset. [fraction]"""
    expert_residual_spread: Prior | None = None
    """Relative standard deviation of an expert-parallel rank's routed load that routing
    skew leaves after load balancing (EPLB), on top of the sampling spread; a user file may
    leave it out (then 0: equally popular experts). [fraction]"""
    kv_precision: KvPrecisionRule | None = None
    """The KV-cache precision that goes with each weight precision when a scenario leaves
    ``kv_precision`` unset; a user file may leave it out (the shipped rule is used)."""
    slo_floor_ttft_ms: Prior | None = None
    """Smallest TTFT bound any serving system plausibly meets: an SLO below it warns that
    it was likely typed in seconds. [ms]"""
    slo_floor_tpot_ms: Prior | None = None
    """Smallest TPOT bound any serving system plausibly meets (as ``slo_floor_ttft_ms``).
    [ms]"""
    serving_stacks: dict[Stack, ServingStack] = {}
    """The serving engines of each software stack (the recommendation's stack-fit words);
    a user file may leave it out (the shipped table is used), or must name every stack."""

    @model_validator(mode="after")
    def _complete(self) -> ServingPriors:
        for name in ("efficiency", "max_batch", "prefill_chunk_tokens", "serving_stacks"):
            if name == "serving_stacks" and not self.serving_stacks:
                continue
            missing = [k for k in get_args(Stack) if k not in getattr(self, name)]
            if missing:
                raise ValueError(f"{name} must name every stack; missing {missing}")
        chunks = [*self.prefill_chunk_tokens.items(), *self.prefill_chunk_tokens_by_chip.items()]
        for key, prior in chunks:
            value = prior.dist()
            if not (isinstance(value, Fixed) and value.value >= 1 and value.value.is_integer()):
                raise ValueError(
                    f"prefill_chunk_tokens of {key!r} must be a whole number of tokens >= 1 "
                    f"(0, prefill-first, is the scenario's to choose), got {prior.value!r}"
                )
        return self

    def efficiency_for(self, chip_id: str, stack: Stack) -> Prior:
        """The efficiency prior of a chip: its own entry if any, else its stack's."""
        return self.efficiency_by_chip.get(chip_id, self.efficiency[stack])

    def efficiency_entry(
        self,
        chip_id: str,
        stack: Stack,
        precision: Precision,
        workload: str | None = None,
        *,
        moe: bool = False,
    ) -> tuple[str, Prior]:
        """The efficiency prior of a deployment and its dotted name: the measured
        configuration's (``workload``, a :func:`serving_workload_key`; the team's own
        measurements), else the chip's own entry, else its group's (stack, weight precision,
        ``moe``: a mixture of experts), else its weight precision's, else its stack's.

        >>> p = serving_priors()
        >>> [p.efficiency_entry("b200", "cuda", bits)[0] for bits in ("fp4", "fp8")]
        ['efficiency_by_group.cuda-fp4-dense', 'efficiency_by_group.cuda-fp8-dense']
        >>> p.efficiency_entry("b200", "cuda", "fp4", moe=True)[0]
        'efficiency_by_group.cuda-fp4-moe'
        """
        if workload is not None and workload in self.efficiency_by_workload:
            return f"efficiency_by_workload.{workload}", self.efficiency_by_workload[workload]
        if chip_id in self.efficiency_by_chip:
            return f"efficiency_by_chip.{chip_id}", self.efficiency_by_chip[chip_id]
        group = serving_group_key(stack, precision, moe)
        if group in self.efficiency_by_group:
            return f"efficiency_by_group.{group}", self.efficiency_by_group[group]
        if precision in self.efficiency_by_precision:
            return f"efficiency_by_precision.{precision}", self.efficiency_by_precision[precision]
        return f"efficiency.{stack}", self.efficiency[stack]

    def kv_precision_for(self, weights: Precision) -> Precision:
        """The KV-cache precision of a deployment whose weights are in ``weights`` and whose
        scenario sets none: the file's rule, else the shipped one; the weights' own
        precision where the rule names none.

        >>> serving_priors().kv_precision_for("fp4"), serving_priors().kv_precision_for("bf16")
        ('fp8', 'bf16')
        """
        rule = self.kv_precision or serving_priors().kv_precision
        return weights if rule is None else rule.by_weights.get(weights, weights)

    def prefill_chunk_for(self, chip_id: str, stack: Stack) -> tuple[str, Prior]:
        """The default chunked-prefill budget of a chip and its dotted name: the chip's own
        entry if any (``"prefill_chunk_tokens_by_chip.a100-80gb"``), else its stack's
        (``"prefill_chunk_tokens.cuda"``)."""
        if chip_id in self.prefill_chunk_tokens_by_chip:
            name = f"prefill_chunk_tokens_by_chip.{chip_id}"
            return name, self.prefill_chunk_tokens_by_chip[chip_id]
        return f"prefill_chunk_tokens.{stack}", self.prefill_chunk_tokens[stack]

    def auto_replica_chips(
        self, weight_bytes: float, chip: Chip, most: int, pool_count: int | None = None
    ) -> int:
        """Chips of a replica whose size is not given: the smallest power of two, at most
        ``most`` (and dividing ``pool_count`` when given), whose usable memory (the mean
        ``memory_share`` of its HBM) holds ``weight_bytes`` in at most the mean
        ``replica_weight_share_max``; if none does, the largest such power of two, so that
        the scenario's validation reports the fit (tensor parallelism over a size like 3 or
        5 would not divide a model's attention heads: it is the user's to set). [count]

        The one rule of the automatic layout: the engines (through
        :meth:`accelsim.Serving.replica_chips`) and the serving calibration both call it.

        >>> from accelsim import catalog
        >>> h100, h200 = catalog.chip("h100-sxm"), catalog.chip("h200")
        >>> p = serving_priors()
        >>> p.auto_replica_chips(70e9, h100, 8), p.auto_replica_chips(70e9, h200, 8)
        (2, 1)
        """
        share = as_dist(self.memory_share.value).expected_value()
        limit = as_dist(self.replica_weight_share_max.value).expected_value()
        per_chip = limit * share * chip.hbm_bytes
        chips, largest = 1, 1
        while chips <= most:
            if pool_count is None or pool_count % chips == 0:
                if weight_bytes <= per_chip * chips:
                    return chips
                largest = chips
            chips *= 2
        return largest

    def overlap_prior(self) -> Prior:
        """The compute-memory overlap prior: this file's, else the shipped one."""
        if self.compute_memory_overlap is not None:
            return self.compute_memory_overlap
        shipped = serving_priors().compute_memory_overlap
        assert shipped is not None, "the shipped serving.yaml sets compute_memory_overlap"
        return shipped

    def by_name(self) -> dict[str, Prior]:
        """Every prior by dotted name (``"efficiency.cuda"``, ``"overhead_seconds"``)."""
        out: dict[str, Prior] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, Prior):
                out[name] = value
            elif isinstance(value, dict):
                out.update(
                    {f"{name}.{k}": prior for k, prior in value.items() if isinstance(prior, Prior)}
                )
        return out


def serving_workload_key(chip_id: str, model: str | None, precision: str, chips: int) -> str:
    """Key of a measured serving configuration: ``"<chip>/<model>/<precision>/x<chips>"``.

    >>> serving_workload_key("h100-sxm", "llama-3.1-70b", "fp8", 2)
    'h100-sxm/llama-3.1-70b/fp8/x2'
    """
    return f"{chip_id}/{model or 'custom'}/{precision}/x{chips}"


def serving_group_key(stack: str, precision: str, moe: bool) -> str:
    """Key of a serving efficiency group (``ServingPriors.efficiency_by_group``):
    ``"<stack>-<precision>-<dense|moe>"``.

    >>> serving_group_key("cuda", "fp4", moe=True)
    'cuda-fp4-moe'
    """
    return f"{stack}-{precision}-{'moe' if moe else 'dense'}"


def load_serving_priors(path: str | Path) -> ServingPriors:
    """Read and validate a serving-priors file laid out like the shipped ``serving.yaml``."""
    return load_validated(path, ServingPriors, "serving priors")


@functools.cache
def serving_priors() -> ServingPriors:
    """The shipped serving priors, read once per process (frozen, so sharing is safe)."""
    return shipped(_SHIPPED, load_serving_priors)


__all__ = [
    "BYTES_PER_VALUE",
    "KvPrecisionRule",
    "ServingPriors",
    "load_serving_priors",
    "serving_group_key",
    "serving_priors",
    "serving_workload_key",
]
