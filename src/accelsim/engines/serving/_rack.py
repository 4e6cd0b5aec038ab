"""Rack-scale serving options of a colocated replica: wide expert parallelism and speculation.

Part of the serving engines. :func:`expert_layout` reads a mixture of experts' routed-expert
layout from its preset once per scenario; :func:`replica_layout_physics` turns a replica's
tensor-parallel iteration coefficients and memory into those of the layout it serves on
(:func:`accelsim.models.serving.expert_parallel_cost`, :func:`accelsim.models.serving.
expert_parallel_kv_capacity`) and, where the endpoint speculates, into the coefficients per
emitted token (:func:`accelsim.models.serving.speculative_cost`). :func:`draw_speculation`
draws the acceptance rate and draft cost, recorded with the other inputs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from accelsim import catalog
from accelsim._typing import FloatArray
from accelsim.catalog import Chip, ServingPriors
from accelsim.engines._inputs import InputDraws
from accelsim.models import serving as physics
from accelsim.scenario import Serving


@dataclass(frozen=True)
class ExpertLayout:
    """A mixture of experts' routed experts, as wide expert parallelism needs them."""

    dense_weight_bytes: float
    """Bytes of the non-expert weights (attention, dense layers, shared experts,
    embeddings): copied on every chip under data-parallel attention. [B]"""
    expert_weight_bytes: float
    """Bytes of all routed experts: split over the chips. [B]"""
    expert_share: float
    """Share of the routed experts one token uses, ``top-k / experts``. [fraction]"""
    moe_layers: float
    """Layers with routed experts. [count]"""
    experts_per_token: float
    """Routed experts per token, ``top-k``. [count]"""
    experts: float = 1.0
    """Routed experts per MoE layer, ``E``. [count]"""
    routed_active_params: float = 0.0
    """Routed-expert parameters one token uses. [count]"""
    residual_spread: float = 0.0
    """Routing skew's relative spread of a rank's load after load balancing (median of the
    serving priors' ``expert_residual_spread``; 0 where they have none). [fraction]"""


def expert_layout(work: Serving, cat: catalog.Catalog) -> ExpertLayout | None:
    """The endpoint's expert layout, or None: a dense model, an explicit architecture, a
    preset without its layout, or disaggregated pools (tensor parallel only)."""
    preset = work.preset_in(cat)
    if preset is None or work.disaggregated is not None or preset.expert_params is None:
        return None
    per_param = catalog.BYTES_PER_VALUE[work.precision]
    experts, top_k = float(preset.experts or 1), float(preset.experts_per_token or 1)
    spread = cat.serving_priors.expert_residual_spread
    return ExpertLayout(
        dense_weight_bytes=(preset.params - preset.expert_params) * per_param,
        expert_weight_bytes=preset.expert_params * per_param,
        expert_share=top_k / experts,
        moe_layers=float(preset.moe_layers or 0),
        experts_per_token=top_k,
        experts=experts,
        routed_active_params=preset.expert_params * top_k / experts,
        residual_spread=0.0 if spread is None else float(spread.dist().ppf(0.5)),
    )


@dataclass(frozen=True)
class Speculation:
    """Per-run speculation inputs of a replica (arrays over the chunk's runs)."""

    draft_tokens: float
    """Draft tokens per sequence and step. [count]"""
    acceptance: FloatArray
    """Per-token acceptance rate. [fraction]"""
    draft_cost: FloatArray
    """A draft pass as a share of a decode iteration. [fraction]"""


def draw_speculation(
    work: Serving, draws: InputDraws, serving: ServingPriors
) -> Speculation | None:
    """The endpoint's speculation inputs, per run, or None where it does not speculate."""
    spec = work.speculative
    if spec is None:
        return None
    acceptance_prior, cost_prior = serving.speculative_acceptance, serving.speculative_draft_cost
    if (spec.acceptance is None and acceptance_prior is None) or (
        spec.draft_cost is None and cost_prior is None
    ):
        raise ValueError(
            "the serving priors have no speculative_acceptance / speculative_draft_cost: set "
            "speculative.acceptance and speculative.draft_cost, or use a catalog that has them"
        )
    acceptance = draws.get(
        "workload.speculative.acceptance",
        spec.acceptance,
        acceptance_prior.value if acceptance_prior is not None else 0.0,
    )
    cost = draws.get(
        "workload.speculative.draft_cost",
        spec.draft_cost,
        cost_prior.value if cost_prior is not None else 0.0,
    )
    return Speculation(float(spec.draft_tokens), acceptance, cost)


@dataclass(frozen=True)
class LayoutPhysics:
    """A replica's iteration coefficients and memory on its layout."""

    cost: physics.IterationCost
    weight_bytes: float
    """Weight bytes all chips of the replica hold together. [B]"""
    kv_capacity_tokens: FloatArray


def replica_weight_bytes(
    weight_bytes: float, chips: int, experts: ExpertLayout | None, expert_parallel: bool
) -> float:
    """Weight bytes a replica's chips hold together: one copy, or under expert parallelism
    the non-expert weights on every chip and the experts once. [B]"""
    if not expert_parallel or experts is None:
        return weight_bytes
    return float(
        physics.expert_parallel_weight_bytes(
            chips, experts.dense_weight_bytes, experts.expert_weight_bytes
        )
    )


def replica_kv_bytes_per_token(
    kv_bytes_per_token: float,
    kv_heads: int | None,
    chips: int,
    experts: ExpertLayout | None,
    expert_parallel: bool,
) -> float:
    """KV-cache bytes a replica's chips hold (and read) together per cached token: under
    tensor parallelism the model's bytes times :func:`accelsim.models.serving.
    tensor_parallel_kv_copies` (a chip holds ``ceil(kv_heads/chips)`` heads, the whole
    latent under MLA); under data-parallel attention one copy, each rank holding its own
    sequences' cache; one copy where ``kv_heads`` is unknown. [B]"""
    if (expert_parallel and experts is not None) or kv_heads is None:
        return kv_bytes_per_token
    return kv_bytes_per_token * float(physics.tensor_parallel_kv_copies(kv_heads, chips))


def scheduler_ranks(chips: int, experts: ExpertLayout | None, expert_parallel: bool) -> float:
    """Schedulers a replica runs at once: one per chip under data-parallel attention (each
    rank batches its own requests, so the batch cap and a chunked iteration's token budget
    are per rank), else one. [count]"""
    return float(chips) if expert_parallel and experts is not None else 1.0


def expert_step_imbalance(
    experts: ExpertLayout, chips: int, step_tokens: FloatArray | None
) -> FloatArray:
    """Busiest rank's routed load over the mean at ``step_tokens`` tokens per iteration
    (:func:`accelsim.models.serving.expert_load_imbalance`); 1 where None. [ratio]"""
    if step_tokens is None:
        return np.ones(1)
    return physics.expert_load_imbalance(
        np.maximum(step_tokens, 1.0),
        chips,
        experts.experts,
        experts.experts_per_token,
        experts.residual_spread,
    )


def saturated_step_tokens(
    capacity: FloatArray,
    input_mean: float,
    output_mean: float,
    max_batch: FloatArray,
    chunk: FloatArray,
) -> FloatArray:
    """Tokens of a saturated iteration: the batch limit's decodes and, in steady state,
    ``input/output`` prompt tokens per decode, within a chunked iteration's budget. [tokens]"""
    limit = physics.batch_limit(capacity, input_mean, output_mean, max_batch)
    tokens = limit * (1.0 + input_mean / output_mean)
    return np.where(chunk > 0.0, np.minimum(tokens, np.maximum(chunk, 1.0)), tokens)


def replica_layout_physics(
    tensor_parallel: physics.IterationCost,
    *,
    chip: Chip,
    chips: int,
    d_model: float,
    weight_bytes: float,
    kv_bytes_per_token: float,
    share: FloatArray,
    experts: ExpertLayout | None,
    expert_parallel: bool,
    speculation: Speculation | None,
    step_tokens: FloatArray | None = None,
    input_tokens: float = 0.0,
    output_tokens: float = 1.0,
    chunk_tokens: FloatArray | float = 0.0,
) -> LayoutPhysics:
    """The replica's coefficients and KV capacity on its layout (``share``: of the device
    memory for weights and KV cache), speculation folded in where it speculates. The KV
    capacity is :func:`accelsim.models.serving.kv_capacity_tokens` of the weights the
    layout holds (under expert parallelism, :func:`accelsim.models.serving.
    expert_parallel_kv_capacity`). Under expert parallelism the busiest rank's routed load
    (:func:`expert_step_imbalance`) and the slowest rank's prompts (:func:`accelsim.models.
    serving.rank_straggle_flops_per_token`, at the mean ``input_tokens`` and
    ``output_tokens`` and the iteration budget ``chunk_tokens`` over all ranks, 0: whole
    prompts) are charged at ``step_tokens``, the tokens of the replica's saturated iteration
    (None: balanced)."""
    cost = tensor_parallel
    held = replica_weight_bytes(weight_bytes, chips, experts, expert_parallel)
    hbm = chip.hbm_bytes * float(chips)
    if expert_parallel and experts is not None:
        cost = physics.expert_parallel_cost(
            cost,
            chips=chips,
            dense_weight_bytes=experts.dense_weight_bytes,
            expert_weight_bytes=experts.expert_weight_bytes,
            expert_share=experts.expert_share,
            moe_layers=experts.moe_layers,
            experts_per_token=experts.experts_per_token,
            d_model=d_model,
            interconnect_gbps=chip.interconnect_gbps,
            routed_active_params=experts.routed_active_params,
            imbalance=expert_step_imbalance(experts, chips, step_tokens),
            step_tokens=0.0 if step_tokens is None else step_tokens,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            chunk_tokens=chunk_tokens,
        )
    capacity = physics.kv_capacity_tokens(hbm, held, kv_bytes_per_token, share)
    if speculation is not None:
        cost = physics.speculative_cost(
            cost, speculation.acceptance, speculation.draft_tokens, speculation.draft_cost
        )
    return LayoutPhysics(cost=cost, weight_bytes=held, kv_capacity_tokens=np.asarray(capacity))


__all__ = [
    "ExpertLayout",
    "LayoutPhysics",
    "Speculation",
    "draw_speculation",
    "expert_layout",
    "expert_step_imbalance",
    "replica_kv_bytes_per_token",
    "replica_layout_physics",
    "replica_weight_bytes",
    "saturated_step_tokens",
    "scheduler_ranks",
]
