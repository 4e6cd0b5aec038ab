"""Serving fast path, setup: the scenario's fixed figures and each run's drawn replica.

Part of the serving engines (``accelsim.engines.serving._fast`` describes the fast path):
:func:`serving_setup` reads the workload, model and chip once; :func:`draw_replica` draws
the replica's uncertain inputs and builds its physics per run. Also the usage record both
serving engines fill (:class:`ServingUsage`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from accelsim import catalog
from accelsim._typing import BoolArray, FloatArray
from accelsim.catalog import Catalog, Chip, ServingPriors, serving_workload_key
from accelsim.dists import Dist, Fixed, as_dist
from accelsim.engines._inputs import InputDraws, constant
from accelsim.engines.serving._rack import (
    ExpertLayout,
    Speculation,
    draw_speculation,
    replica_kv_bytes_per_token,
    replica_layout_physics,
    replica_weight_bytes,
    saturated_step_tokens,
    scheduler_ranks,
)
from accelsim.models import serving as physics
from accelsim.scenario import Scenario, Serving

SECONDS_PER_HOUR = 3600.0
HOURS_PER_DAY = 24.0
HOURS_PER_MONTH = 730.5
"""A mean Gregorian month, 365.25 · 24 / 12 hours: the unit of ``growth_per_month``."""


_LENGTH_GRID = 1 << 14
"""Midpoints of a uniform grid whose ppf values give the mean per-request length."""
BODY_CELLS = 16
"""Cells of equal width ``1/16`` on the quantile axis below the tail (one centred on the
median), so a median is not taken at a cell's edge."""
TAIL_SPLIT = 3
"""Cells per halving of the upper-tail mass above ``_TAIL_START`` (cell widths shrink by
``2^(1/3)`` toward the top), so the prompts that set a TTFT p99 get their own nodes."""
_TAIL_LEVEL = 0.99
"""Level the tail cells are centred on (the reported p99: :data:`METRIC_PERCENTILE` of
the usage module)."""
_TAIL_START = 0.875
_TAIL_END = 2.0**-11
"""Upper-tail mass of the top cell (the length grid holds 8 of its points there)."""


def node_edges(body: int = BODY_CELLS, split: int = TAIL_SPLIT) -> FloatArray:
    """Cell edges on the prompt-length law's quantile axis, from 0 to 1. [fraction]

    The tail: edges ``1 − 0.01·2^((j + 1/2)/split)`` between the 87.5th percentile and
    ``1 − 2^−11`` (each halving of the tail mass in ``split`` cells, one centred on the
    99th percentile); below them, cells of width ``1/body`` with one centred on the
    median. Every cell narrows as ``body`` and ``split`` grow, so a quantile of the
    mixture over the cells' nodes converges to the law's (tests/unit/test_serving_nodes.py
    against 4,096 equiprobable cells). The rule of both serving paths (colocated and
    disaggregated) and both engines' fast paths.
    """
    j = np.arange(-32 * split, 32 * split)
    tail = 1.0 - (1.0 - _TAIL_LEVEL) * 2.0 ** ((j + 0.5) / split)
    tail = np.sort(tail[(tail >= _TAIL_START) & (tail <= 1.0 - _TAIL_END)])
    k = np.arange(-body, body)
    body_edges = 0.5 + (k + 0.5) / body
    body_edges = body_edges[(body_edges > 0.0) & (body_edges < tail[0] - 0.5 / body)]
    return np.concatenate([[0.0], body_edges, tail, [1.0]])


_NODE_EDGES = node_edges()
"""The cells of :func:`node_edges` at the fast path's resolution (39 cells: 16 to the 88.7th
percentile, 23 above; bench_serving_fast's fixed fleet prefill-first: 13,700-16,500 runs/s
on the shared 2-core VM at load ~2; with the default chunked prefill, 10,100-10,600 idle)."""


@dataclass(frozen=True)
class ServingSetup:
    """The fixed facts of a serving scenario (not uncertain), resolved once per chunk."""

    work: Serving
    cat: Catalog
    """The study's catalog: prices and priors come from it, never from a process global."""
    chip: Chip
    chips_per_replica: int
    replicas_pool: int
    """Replicas the pool holds: its count // chips per replica. [count]"""
    horizon_hours: float
    hours: int
    """Hourly steps, ``ceil(horizon_hours)`` (the last may be partial). [count]"""
    profile: FloatArray
    """24 hourly multipliers (ones when flat). [ratio]"""
    input_mean: float
    """Mean prompt length per request, after rounding and clipping. [tokens]"""
    input_variance: float
    """Variance of the per-request prompt length, after rounding and clipping. [tokens²]"""
    input_third_moment: float
    """Third central moment of the per-request prompt length. [tokens³]"""
    input_fourth_moment: float
    """Fourth central moment of the per-request prompt length. [tokens⁴]"""
    input_nodes: FloatArray
    """Prompt lengths at the nodes of the law (conditional means over the quantile cells of
    :func:`node_edges`, ascending; one node for a fixed length). [tokens]"""
    input_weights: FloatArray
    """Probabilities of :attr:`input_nodes` (sum 1). [fraction]"""
    output_mean: float
    """Mean output length per request, after rounding and clipping. [tokens]"""
    max_tokens: float
    """Longest prompt or output a request can have (the preset's context). [tokens]"""
    weight_bytes: float
    kv_bytes_per_token: float
    """The model's KV-cache bytes per cached token, one copy (a replica's layout may hold
    more: :func:`~accelsim.engines.serving._rack.replica_kv_bytes_per_token`). [B]"""
    active_params: float
    total_params: float
    layers: float
    d_model: float
    peak_tflops: float
    kv_precision: catalog.Precision
    """The KV cache's precision: the scenario's, else the serving priors' rule for the
    weights' precision."""
    attention_peak_tflops: float
    """Peak per chip at which the attention matmuls run: at the KV cache's precision, at
    least the weights' (:func:`accelsim.catalog.attention_peak_tflops`). [TFLOP/s]"""
    ttft_s: float
    tpot_s: float
    percentile: float
    """The SLO's percentile as a fraction. [fraction]"""
    windows_per_hour: int
    experts: ExpertLayout | None = None
    """The routed-expert layout of a mixture of experts whose preset gives it (colocated
    endpoints; set by the engines' :func:`~accelsim.engines.serving._layout.
    planned_setup`), else None."""
    expert_parallel: bool = False
    """Replicas serve as wide expert parallelism with data-parallel attention."""
    attention: physics.AttentionFlops | None = None
    """Attention FLOPs per (query token, context token) pair and layer, decode and prefill,
    from the model's attention widths (None: ``4·d_model``, the widths unknown)."""
    kv_heads: int | None = None
    """Heads tensor parallelism splits the KV cache by (1 under MLA; None: unknown, an even
    split). [count]"""
    output_nodes: FloatArray | None = None
    """Output lengths at the nodes of the law (as :attr:`input_nodes`), or None for a fixed
    length: the fast path's TPOT quantiles are then those of the mean output. [tokens]"""
    output_weights: FloatArray | None = None
    """Probabilities of :attr:`output_nodes` (sum 1), or None. [fraction]"""


def token_lengths(value: Dist, uniforms: FloatArray, max_tokens: float) -> FloatArray:
    """Per-request lengths from uniforms: ``ppf``, rounded, clipped to [1, max_tokens]."""
    lengths = np.rint(np.asarray(value.ppf(uniforms), dtype=float))
    return np.asarray(np.clip(lengths, 1.0, max_tokens), dtype=float)


def _length_moments(value: Dist, max_tokens: float) -> tuple[float, float, float, float]:
    """Mean and second to fourth central moments of the per-request length law."""
    if isinstance(value, Fixed):
        return float(np.clip(np.rint(value.value), 1.0, max_tokens)), 0.0, 0.0, 0.0
    u = (np.arange(_LENGTH_GRID) + 0.5) / _LENGTH_GRID
    lengths = token_lengths(value, u, max_tokens)
    mean = float(lengths.mean())
    centred = lengths - mean
    squared = centred**2
    return (
        mean,
        float(squared.mean()),
        float(np.mean(squared * centred)),
        float(np.mean(squared**2)),
    )


def length_nodes(
    value: Dist, max_tokens: float, edges: FloatArray = _NODE_EDGES
) -> tuple[FloatArray, FloatArray]:
    """Nodes and weights of the per-request length law over the quantile cells ``edges``.

    Each node is the law's mean over its cell (``ppf`` at the midpoints of a uniform grid of
    :data:`_LENGTH_GRID` levels, rounded and clipped as per-request lengths), its weight
    the cell's share of the grid; a cell narrower than the grid's step is merged into its
    neighbour (no empty cell). [tokens], [fraction]
    """
    if isinstance(value, Fixed):
        return np.array([float(np.clip(np.rint(value.value), 1.0, max_tokens))]), np.ones(1)
    u = (np.arange(_LENGTH_GRID) + 0.5) / _LENGTH_GRID
    lengths = token_lengths(value, u, max_tokens)
    cells = np.searchsorted(edges, u, side="right") - 1
    count = np.bincount(cells, minlength=edges.size - 1)
    total = np.bincount(cells, lengths, minlength=edges.size - 1)
    kept = count > 0
    nodes = total[kept] / count[kept]
    return np.asarray(nodes, dtype=float), np.asarray(count[kept] / count.sum(), dtype=float)


def serving_setup(scenario: Scenario, cat: Catalog) -> ServingSetup:
    """Resolve a serving scenario's model, replica layout, horizon and token means against
    the study's catalog ``cat`` (which travels with the study to every worker)."""
    work = scenario.workload
    if not isinstance(work, Serving):
        kind = scenario.workload_kind
        raise TypeError(f"scenario {scenario.name!r} has a {kind} workload, not serving")
    pool = scenario.fleet[0]
    chip = cat.chip(pool.chip)
    chips = work.replica_chips(chip, pool.count, cat=cat)
    arch = _architecture(work, cat)
    layers, d_model, max_tokens = arch.layers, arch.d_model, arch.max_tokens
    horizon = work.horizon_days * HOURS_PER_DAY
    profile = np.ones(24) if work.daily_profile is None else np.array(work.daily_profile)
    input_mean, input_variance, input_third, input_fourth = _length_moments(
        as_dist(work.input_tokens), max_tokens
    )
    input_nodes, input_weights = length_nodes(as_dist(work.input_tokens), max_tokens)
    output_law = as_dist(work.output_tokens)
    output_nodes, output_weights = (
        (None, None) if isinstance(output_law, Fixed) else length_nodes(output_law, max_tokens)
    )
    return ServingSetup(
        work=work,
        cat=cat,
        chip=chip,
        chips_per_replica=chips,
        replicas_pool=pool.count // chips,
        horizon_hours=horizon,
        hours=math.ceil(horizon - 1e-9),
        profile=profile,
        input_mean=input_mean,
        input_variance=input_variance,
        input_third_moment=input_third,
        input_fourth_moment=input_fourth,
        input_nodes=input_nodes,
        input_weights=input_weights,
        output_mean=_length_moments(output_law, max_tokens)[0],
        output_nodes=output_nodes,
        output_weights=output_weights,
        max_tokens=max_tokens,
        weight_bytes=work.weight_bytes(cat),
        kv_bytes_per_token=arch.kv_bytes_per_token,
        active_params=arch.active_params,
        total_params=work.total_params_in(cat),
        layers=layers,
        d_model=d_model,
        peak_tflops=chip.peak_tflops(work.precision),
        kv_precision=arch.kv_precision,
        attention_peak_tflops=catalog.attention_peak_tflops(
            chip, work.precision, arch.kv_precision
        ),
        ttft_s=work.slo.ttft_ms / 1e3,
        tpot_s=work.slo.tpot_ms / 1e3,
        percentile=work.slo.percentile / 100.0,
        windows_per_hour=round(60.0 / work.burst_window_minutes),
        attention=arch.attention,
        kv_heads=arch.kv_heads,
    )


@dataclass(frozen=True)
class _Architecture:
    """What the serving physics reads of a model: its preset's, or the scenario's own."""

    layers: float
    d_model: float
    active_params: float
    kv_bytes_per_token: float
    """KV-cache bytes per token of the whole model, at the KV precision. [B]"""
    max_tokens: float
    """Longest context (inf for an explicit architecture). [tokens]"""
    attention: physics.AttentionFlops
    kv_heads: int | None
    kv_precision: catalog.Precision
    """The KV cache's precision: the scenario's, else the serving priors' rule."""


def _architecture(work: Serving, cat: Catalog) -> _Architecture:
    """The model's layers, widths, KV bytes per token (at the KV precision: the scenario's,
    else the serving priors' rule for the weights' precision) and attention FLOPs."""
    preset = work.preset_in(cat)
    kv_precision = work.kv_precision or cat.serving_priors.kv_precision_for(work.precision)
    kv_value_bytes = catalog.BYTES_PER_VALUE[kv_precision]
    widths = preset.attention_widths() if preset is not None else work.attention_widths()
    if preset is not None:
        layers, d_model = float(preset.layers), float(preset.d_model)
        kv_bytes = float(preset.kv_bytes_per_token(kv_value_bytes))
        active = float(preset.active_params)
        max_tokens = float(preset.max_context)
        kv_heads = preset.kv_cache_heads()
    else:
        layers, d_model = float(work.layers or 0), float(work.d_model or 0)
        kv_bytes = float(
            physics.kv_bytes_per_token(
                layers, work.kv_heads or 0, work.head_dim or 0, kv_value_bytes
            )
        )
        active = float(work.active_params or work.total_params_in(cat))
        max_tokens = math.inf
        kv_heads = work.kv_heads
    attention = physics.attention_flops_per_context_token(d_model=d_model, layers=layers, **widths)
    return _Architecture(
        layers, d_model, active, kv_bytes, max_tokens, attention, kv_heads, kv_precision
    )


@dataclass(frozen=True)
class Replica:
    """One replica per run: coefficients, limits and rates (arrays over the chunk's runs)."""

    cost: physics.IterationCost
    kv_capacity_tokens: FloatArray
    max_batch: FloatArray
    """Scheduler cap on running sequences, at most a chunked iteration's budget. [count]"""
    batch_limit: FloatArray
    saturated_rps: FloatArray
    """Saturated request rate (offline throughput / output tokens); 0 where infeasible. [1/s]"""
    feasible: BoolArray
    """The weights and one mean-length sequence fit in the replica's memory."""
    prefill_chunk_tokens: FloatArray
    """Token budget of a chunked-prefill iteration, decodes first, 0 = prefill-first (a
    replica of disaggregated pools: 0, its pool's role decides). [tokens]"""


def prefill_chunk(setup: ServingSetup, draws: InputDraws, serving: ServingPriors) -> FloatArray:
    """The chunked-prefill budget of a colocated replica, per run, recorded with the draws.

    The scenario's ``prefill_chunk_tokens`` when set (0: prefill-first), else the serving
    prior for the pool's chip (:meth:`~accelsim.catalog.ServingPriors.prefill_chunk_for`,
    vLLM's default). The one place both engines and ``serving_capacity`` read it. [tokens]
    """
    work = setup.work
    if work.disaggregated is not None:
        return constant(0.0, draws.runs)
    if work.prefill_chunk_tokens is not None:
        return draws.fixed("workload.prefill_chunk_tokens", float(work.prefill_chunk_tokens))
    name, prior = serving.prefill_chunk_for(setup.chip.id, setup.chip.software_stack)
    return draws.get(f"priors.serving.{name}", None, prior.value)


def _max_batch(
    setup: ServingSetup, draws: InputDraws, serving: ServingPriors, chunk: FloatArray
) -> FloatArray:
    """The scheduler's cap on running sequences, per run, as set or drawn: the scenario's
    ``max_batch``, else the stack's prior (:func:`build_replica` caps it at a chunked
    iteration's token budget). A set ``max_batch`` above the chip's default budget is an
    error naming both. [count]"""
    work, stack = setup.work, setup.chip.software_stack
    if work.max_batch is None:
        return np.floor(
            draws.get(f"priors.serving.max_batch.{stack}", None, serving.max_batch[stack].value)
        )
    if np.any((chunk > 0.0) & (chunk < work.max_batch)):
        raise ValueError(
            f"max_batch ({work.max_batch}) exceeds the token budget of a chunked iteration on "
            f"{setup.chip.id}, prefill_chunk_tokens {float(np.min(chunk)):g} (vLLM's default "
            "there; each running sequence takes one token of it): set prefill_chunk_tokens "
            ">= max_batch, lower max_batch, or set prefill_chunk_tokens=0 (prefill-first)"
        )
    return draws.fixed("workload.max_batch", float(work.max_batch))


@dataclass(frozen=True)
class ReplicaInputs:
    """A replica's uncertain inputs, drawn once per run (arrays over the chunk's runs); the
    same for every replica size of a chip (:func:`build_replica` sizes them)."""

    efficiency: FloatArray
    """Share of the roofline the serving stack reaches, at most 1. [fraction]"""
    overhead_seconds: FloatArray
    """Fixed time per iteration (scheduling, sampling, launch). [s]"""
    memory_share: FloatArray | None
    """Share of the replica's memory usable for weights and KV cache (the prior's), or None
    where the scenario sets ``kv_share``. [fraction]"""
    kv_share: FloatArray | None
    """The scenario's share of the memory beyond the weights given to KV cache, or None.
    [fraction]"""
    prefill_chunk_tokens: FloatArray
    """Token budget of a chunked-prefill iteration (0: prefill-first). [tokens]"""
    max_batch: FloatArray
    """Scheduler cap on running sequences as set or drawn, before a chunked iteration's
    token budget caps it (:func:`build_replica`). [count]"""
    speculation: Speculation | None = None
    """Speculative decoding's acceptance and draft cost, where the endpoint speculates."""
    overlap: FloatArray | float = 1.0
    """Share of the shorter of an iteration's compute and memory times hidden under the
    longer (1: the roofline max). [fraction]"""


def draw_replica_inputs(
    setup: ServingSetup, draws: InputDraws, serving: ServingPriors
) -> ReplicaInputs:
    """Draw a replica's uncertain inputs, per run: efficiency, overhead, compute-memory
    overlap, memory share, chunked-prefill budget and batch cap (each recorded under its
    input name)."""
    work, chip = setup.work, setup.chip
    stack = chip.software_stack
    measured = serving_workload_key(chip.id, work.model, work.precision, setup.chips_per_replica)
    moe = setup.active_params < setup.total_params
    entry, prior = serving.efficiency_entry(chip.id, stack, work.precision, measured, moe=moe)
    name = f"priors.serving.{entry}"
    # Efficiency is a share of the roofline: a draw of the prior's upper tail past 1 is 1.
    efficiency = np.minimum(draws.get(name, None, prior.value), 1.0)
    overhead = draws.get("priors.serving.overhead_seconds", None, serving.overhead_seconds.value)
    overlap = draws.get(
        "priors.serving.compute_memory_overlap", None, serving.overlap_prior().value
    )
    share = kv_share = None
    if work.kv_share is None:
        share = draws.get("priors.serving.memory_share", None, serving.memory_share.value)
    else:
        kv_share = draws.get("workload.kv_share", work.kv_share, work.kv_share)
    chunk = prefill_chunk(setup, draws, serving)
    return ReplicaInputs(
        efficiency=efficiency,
        overhead_seconds=overhead,
        memory_share=share,
        kv_share=kv_share,
        prefill_chunk_tokens=chunk,
        max_batch=_max_batch(setup, draws, serving, chunk),
        speculation=draw_speculation(work, draws, serving),
        overlap=overlap,
    )


def _expert_step_tokens(
    setup: ServingSetup,
    hbm: float,
    held: float,
    share: FloatArray,
    max_batch: FloatArray,
    chunk: FloatArray,
) -> FloatArray | None:
    """Tokens of an expert-parallel replica's saturated iteration, at which its busiest
    rank's routed load is charged; None under tensor parallelism. [tokens]"""
    if not setup.expert_parallel or setup.experts is None:
        return None
    capacity = physics.kv_capacity_tokens(hbm, held, setup.kv_bytes_per_token, share)
    return saturated_step_tokens(capacity, setup.input_mean, setup.output_mean, max_batch, chunk)


def build_replica(setup: ServingSetup, inputs: ReplicaInputs) -> Replica:
    """The replica's physics per run from its drawn inputs (pure: no draw): the batch cap
    under the chunk budget, iteration coefficients, KV capacity, batch limit, saturated
    rate."""
    chip = setup.chip
    chips = float(setup.chips_per_replica)
    hbm = chip.hbm_bytes * chips
    held = replica_weight_bytes(
        setup.weight_bytes, setup.chips_per_replica, setup.experts, setup.expert_parallel
    )
    share = _memory_share(inputs, hbm, held)
    ranks = scheduler_ranks(setup.chips_per_replica, setup.experts, setup.expert_parallel)
    # each running sequence takes one token of a chunked iteration's budget (vLLM refuses
    # max_num_seqs > max_num_batched_tokens); an expert-parallel replica runs one scheduler
    # per attention rank
    per_rank = physics.budget_batch_cap(inputs.max_batch, inputs.prefill_chunk_tokens)
    chunk, max_batch = inputs.prefill_chunk_tokens * ranks, per_rank * ranks
    kv_bytes = replica_kv_bytes_per_token(
        setup.kv_bytes_per_token,
        setup.kv_heads,
        setup.chips_per_replica,
        setup.experts,
        setup.expert_parallel,
    )
    iteration = _iteration_cost(setup, inputs, kv_bytes)
    step = _expert_step_tokens(setup, hbm, held, share, max_batch, chunk)
    layout = replica_layout_physics(
        iteration,
        chip=chip,
        chips=setup.chips_per_replica,
        d_model=setup.d_model,
        weight_bytes=setup.weight_bytes,
        kv_bytes_per_token=kv_bytes,
        share=share,
        experts=setup.experts,
        expert_parallel=setup.expert_parallel,
        speculation=inputs.speculation,
        step_tokens=step,
        input_tokens=setup.input_mean,
        output_tokens=setup.output_mean,
        chunk_tokens=chunk,
    )
    iteration, capacity = layout.cost, layout.kv_capacity_tokens
    inp, out = setup.input_mean, setup.output_mean
    limit = physics.batch_limit(capacity, inp, out, max_batch)
    saturated = physics.offline_tokens_per_s(iteration, capacity, inp, out, max_batch, chunk) / out
    return Replica(
        cost=iteration,
        kv_capacity_tokens=np.asarray(capacity, dtype=float),
        max_batch=np.asarray(max_batch, dtype=float),
        batch_limit=limit,
        saturated_rps=saturated,
        feasible=np.asarray(limit >= 1.0),
        prefill_chunk_tokens=chunk,
    )


def _iteration_cost(
    setup: ServingSetup, inputs: ReplicaInputs, kv_bytes: FloatArray | float
) -> physics.IterationCost:
    """The replica's iteration coefficients at its drawn efficiency, overhead and overlap,
    ``kv_bytes`` [B] the KV cache a chip holds per token (with its tensor-parallel copies)."""
    return physics.iteration_cost(
        active_params=setup.active_params,
        total_params=setup.total_params,
        layers=setup.layers,
        d_model=setup.d_model,
        weight_bytes=setup.weight_bytes,
        kv_bytes_per_token=kv_bytes,
        chips=float(setup.chips_per_replica),
        peak_tflops=setup.peak_tflops,
        attention_peak_tflops=setup.attention_peak_tflops,
        hbm_tbps=setup.chip.hbm_tbps,
        interconnect_gbps=setup.chip.interconnect_gbps,
        efficiency=inputs.efficiency,
        overhead_seconds=inputs.overhead_seconds,
        overlap=inputs.overlap,
        attention=setup.attention,
    )


def _memory_share(inputs: ReplicaInputs, hbm: float, held: FloatArray | float) -> FloatArray:
    """The share of the replica's memory ``hbm`` [B] for weights plus KV cache: drawn, or
    from the drawn share ``kv_share`` of what the held weights [B] leave (a pool's role)."""
    if inputs.memory_share is not None:
        return np.asarray(inputs.memory_share, dtype=float)
    if inputs.kv_share is not None:
        return np.asarray((held + inputs.kv_share * (hbm - held)) / hbm, dtype=float)
    raise ValueError("a replica's inputs hold memory_share or kv_share; got neither")


def draw_replica(setup: ServingSetup, draws: InputDraws, serving: ServingPriors) -> Replica:
    """:func:`build_replica` of :func:`draw_replica_inputs`: a replica drawn and built in one
    call."""
    return build_replica(setup, draw_replica_inputs(setup, draws, serving))


@dataclass(frozen=True)
class ServingUsage:
    """What either engine measured per run, before pricing (arrays over runs)."""

    demand_requests: FloatArray
    """Requests that arrived within the horizon. [count]"""
    served_requests: FloatArray
    """Requests served: fast path, those not shed; DES, the output tokens emitted over the
    mean output length (the per-token prices' measure: a request decoding at the horizon
    counts in part). [count]"""
    dropped_requests: FloatArray
    """Requests that got no service: fast path, those shed (demand less served); DES,
    rejected or left without a first token (:class:`~accelsim.engines.serving._requests.
    WindowUsage`). [count]"""
    compliant_requests: FloatArray
    """Requests that arrived in windows whose TTFT and TPOT percentiles met the SLO. [count]"""
    replica_hours: FloatArray
    """Provisioned replica-hours, cold starts included. [h]"""
    replicas_peak: FloatArray
    ttft_p50_s: FloatArray
    ttft_p99_s: FloatArray
    tpot_p50_s: FloatArray
    tpot_p99_s: FloatArray
    finished: BoolArray
    """Feasible and every request that arrived was served."""
    stage_hours: tuple[FloatArray, ...]
    """Provisioned replica-hours of each stage of the layout (colocated: one; disaggregated:
    prefill, decode), cold starts included; ``replica_hours`` is their sum. [h]"""
    stage_peaks: tuple[FloatArray, ...]
    """Most replicas of each stage provisioned at once; ``replicas_peak`` is the most of all
    stages at once. [count]"""


__all__ = [
    "BODY_CELLS",
    "HOURS_PER_DAY",
    "HOURS_PER_MONTH",
    "SECONDS_PER_HOUR",
    "TAIL_SPLIT",
    "Replica",
    "ReplicaInputs",
    "ServingSetup",
    "ServingUsage",
    "build_replica",
    "draw_replica",
    "draw_replica_inputs",
    "length_nodes",
    "node_edges",
    "prefill_chunk",
    "serving_setup",
    "token_lengths",
]
