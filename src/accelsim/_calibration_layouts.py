"""Parallel layouts and speculation of a serving calibration row (an extra, with
:mod:`accelsim.serving_calibration`).

A row's replica serves as tensor parallelism (every weight split over its chips, an
all-reduce per layer) or, for a mixture of experts whose preset gives its expert layout and
a row that states expert parallelism (as the engines: never chosen by the model alone), as
wide expert parallelism with data-parallel attention (:mod:`accelsim.models.serving`'s
``expert_parallel_cost``): a copy of the non-expert weights and a scheduler per chip, the
experts split and reached by an all-to-all over the scale-up links, the busiest rank's
routed load charged at the row's saturated iteration. A row whose submitter
states speculative decoding / MTP (the optional ``speculative_draft_tokens`` column of the
validation set) decodes with that many draft tokens, at the serving priors' acceptance
rate and draft cost. The one rule of both engines (:mod:`accelsim.engines.serving._rack`).
"""

from __future__ import annotations

import dataclasses
import re
import zlib
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

import numpy as np

from accelsim._typing import FloatArray
from accelsim.catalog import (
    BYTES_PER_VALUE,
    Chip,
    ModelPreset,
    Precision,
    attention_peak_tflops,
    serving_priors,
)
from accelsim.models import serving

_SPEC_SEED = 20261129
_STATED_TP = re.compile(r"\bTP\s*=\s*\d", re.IGNORECASE)
_STATED_EP = re.compile(r"\b(?:wide[- ])?EP\s*(?:=\s*\d+)?\b|expert[- ]parallel", re.IGNORECASE)
_STATED_EP_SIZE = re.compile(r"\bEP\s*=\s*(\d+)|expert[- ]parallel(?:ism)?\s+(\d+)", re.IGNORECASE)
EP_NOTE = "expert parallel, data-parallel attention"
"""The calibration page's note on a row served as wide expert parallelism."""


class _Row(Protocol):
    """What the layout choice reads of a calibration row's case."""

    @property
    def row(self) -> dict[str, str]: ...
    @property
    def chip(self) -> Chip: ...
    @property
    def model(self) -> ModelPreset: ...
    @property
    def chips(self) -> int: ...
    @property
    def largest(self) -> int: ...
    @property
    def expert_parallel(self) -> bool: ...
    @property
    def input_tokens(self) -> float: ...
    @property
    def output_tokens(self) -> float: ...
    @property
    def max_batch(self) -> float: ...


RowT = TypeVar("RowT", bound=_Row)
Nuisance = tuple[FloatArray, FloatArray, FloatArray]
"""Overhead [s], memory share and compute-memory overlap [fraction], per draw."""


def nuisance_medians() -> Nuisance:
    """The serving priors' medians of overhead, memory share and overlap, one draw each."""
    p = serving_priors()
    return (
        np.array([p.overhead_seconds.dist().ppf(0.5)]),
        np.array([p.memory_share.dist().ppf(0.5)]),
        np.array([p.overlap_prior().dist().ppf(0.5)]),
    )


def nuisance_draws(rng: np.random.Generator, n: int) -> Nuisance:
    """``n`` draws of overhead, memory share and overlap from the serving priors."""
    p = serving_priors()
    return (
        p.overhead_seconds.dist().sample(rng, n),
        p.memory_share.dist().sample(rng, n),
        p.overlap_prior().dist().sample(rng, n),
    )


def note(expert_parallel: bool) -> str:
    """The page's note on a row's layout: :data:`EP_NOTE` or nothing."""
    return EP_NOTE if expert_parallel else ""


def median_efficiency(chip: Chip) -> FloatArray:
    """The median of the chip's shipped serving efficiency prior, as a 1-run array: the
    efficiency at which an Offline row's layout is chosen. [fraction]"""
    prior = serving_priors().efficiency_for(chip.id, chip.software_stack)
    return np.array([float(prior.dist().ppf(0.5))])


def has_expert_layout(model: ModelPreset) -> bool:
    """Whether the row's model can serve as wide expert parallelism."""
    return model.has_expert_layout()


def held_weight_bytes(
    model: ModelPreset, precision: str, chips: int, expert_parallel: bool
) -> float:
    """Weight bytes the replica's chips hold together. [B]"""
    per = BYTES_PER_VALUE[precision]  # type: ignore[index]
    if not expert_parallel or model.expert_params is None:
        return float(model.params * per)
    dense = (model.params - model.expert_params) * per
    return float(serving.expert_parallel_weight_bytes(chips, dense, model.expert_params * per))


def held_kv_bytes(
    model: ModelPreset, kv_bytes_per_token: float, chips: int, expert_parallel: bool
) -> float:
    """KV-cache bytes the replica's chips hold (and read) together per cached token: the
    model's ``kv_bytes_per_token`` times :func:`accelsim.models.serving.
    tensor_parallel_kv_copies` under tensor parallelism (MLA: the whole latent on every
    chip), one copy under data-parallel attention (each rank its own sequences). [B]"""
    heads = model.kv_cache_heads()
    if (expert_parallel and model.expert_params is not None) or heads is None:
        return kv_bytes_per_token
    return kv_bytes_per_token * float(serving.tensor_parallel_kv_copies(heads, chips))


def scheduler_ranks(chips: int, expert_parallel: bool) -> float:
    """Schedulers of the replica: one per chip under data-parallel attention. [count]"""
    return float(chips) if expert_parallel else 1.0


def layout_cost(
    model: ModelPreset,
    chip: Chip,
    precision: str,
    chips: int,
    expert_parallel: bool,
    kv_bytes_per_token: float,
    efficiency: FloatArray,
    overhead: FloatArray,
    step_tokens: float = 0.0,
    *,
    overlap: FloatArray | float = 1.0,
    input_tokens: float = 0.0,
    output_tokens: float = 1.0,
    kv_precision: str | None = None,
) -> serving.IterationCost:
    """The replica's coefficients on its layout (``kv_bytes_per_token``: the model's, one
    copy; the layout's copies, :func:`held_kv_bytes`, are read): tensor parallel, or expert
    parallel with data-parallel attention, whose busiest rank's routed load is charged at
    ``step_tokens`` tokens per iteration (:func:`accelsim.models.serving.
    expert_load_imbalance`, with the serving priors' median ``expert_residual_spread``;
    0: balanced) as are the slowest rank's whole prompts, at the mean ``input_tokens`` and
    ``output_tokens`` (:func:`accelsim.models.serving.rank_straggle_flops_per_token`).
    ``overlap``: the share of the shorter of compute and memory time the longer hides (1:
    the roofline max). The attention runs at the KV cache's precision ``kv_precision``
    (unset: the serving priors' rule for ``precision``), at least the weights'
    (:func:`accelsim.catalog.attention_peak_tflops`), as in the engines."""
    weights: Precision = precision  # type: ignore[assignment]
    kv: Precision = kv_precision or serving_priors().kv_precision_for(weights)  # type: ignore[assignment]
    per = BYTES_PER_VALUE[weights]
    tensor_parallel = serving.iteration_cost(
        active_params=model.active_params,
        total_params=model.params,
        layers=model.layers,
        d_model=model.d_model,
        weight_bytes=serving.weight_bytes(model.params, per),
        kv_bytes_per_token=held_kv_bytes(model, kv_bytes_per_token, chips, expert_parallel),
        chips=chips,
        peak_tflops=chip.peak_tflops(weights),
        attention_peak_tflops=attention_peak_tflops(chip, weights, kv),
        hbm_tbps=chip.hbm_tbps,
        interconnect_gbps=chip.interconnect_gbps,
        efficiency=efficiency,
        overhead_seconds=overhead,
        overlap=overlap,
        attention=serving.attention_flops_per_context_token(
            d_model=model.d_model, layers=model.layers, **model.attention_widths()
        ),
    )
    if not expert_parallel or model.expert_params is None:
        return tensor_parallel
    return _expert_parallel(tensor_parallel, model, chip, chips, per, step_tokens,
                            (input_tokens, output_tokens))  # fmt: skip


def _expert_parallel(
    tensor_parallel: serving.IterationCost,
    model: ModelPreset,
    chip: Chip,
    chips: int,
    per: float,
    step_tokens: float,
    lengths: tuple[float, float],
) -> serving.IterationCost:
    """:func:`layout_cost`'s expert-parallel coefficients from the tensor-parallel ones."""
    assert model.expert_params is not None
    experts, top_k = float(model.experts or 1), float(model.experts_per_token or 1)
    spread = serving_priors().expert_residual_spread
    rho = 0.0 if spread is None else float(spread.dist().ppf(0.5))
    hot = (
        serving.expert_load_imbalance(step_tokens, chips, experts, top_k, rho)
        if step_tokens > 0.0
        else np.ones(1)
    )
    return serving.expert_parallel_cost(
        tensor_parallel,
        chips=chips,
        dense_weight_bytes=(model.params - model.expert_params) * per,
        expert_weight_bytes=model.expert_params * per,
        expert_share=(model.experts_per_token or 1) / (model.experts or 1),
        moe_layers=model.moe_layers or 0,
        experts_per_token=model.experts_per_token or 1,
        d_model=model.d_model,
        interconnect_gbps=chip.interconnect_gbps,
        routed_active_params=model.expert_params * top_k / experts,
        imbalance=hot,
        step_tokens=step_tokens,
        input_tokens=lengths[0],
        output_tokens=lengths[1],
    )


def saturated_step_tokens(
    case: RowT, capacity: Callable[[RowT, FloatArray], FloatArray], share: float
) -> float:
    """Tokens of the row's saturated iteration at memory ``share``: the batch limit's
    decodes and ``input/output`` prompt tokens per decode (steady state), the batch cap
    per scheduler rank; 0 where the replica is tensor parallel. [tokens]"""
    if not case.expert_parallel:
        return 0.0
    cap = case.max_batch * scheduler_ranks(case.chips, True)
    seqs = serving.batch_limit(
        capacity(case, np.array([share])), case.input_tokens, case.output_tokens, cap
    )
    return float(np.max(seqs)) * (1.0 + case.input_tokens / case.output_tokens)


def speculated(
    cost: serving.IterationCost, row_id: str, draft_tokens: int, runs: int
) -> serving.IterationCost:
    """``cost`` per emitted token where the row speculates (``draft_tokens > 0``), the
    acceptance rate and draft cost drawn from the serving priors (a stream of the row's
    own, so rows that do not speculate draw exactly as before); else ``cost``."""
    if draft_tokens <= 0:
        return cost
    priors = serving_priors()
    if priors.speculative_acceptance is None or priors.speculative_draft_cost is None:
        raise ValueError("the serving priors give no speculative_acceptance / _draft_cost")
    rng = np.random.default_rng([_SPEC_SEED, zlib.crc32(row_id.encode())])
    acceptance: FloatArray = priors.speculative_acceptance.dist().sample(rng, runs)
    draft_cost: FloatArray = priors.speculative_draft_cost.dist().sample(rng, runs)
    return serving.speculative_cost(cost, acceptance, draft_tokens, draft_cost)


def best_layout(candidates: Sequence[tuple[int, bool]], rates: Sequence[float]) -> tuple[int, bool]:
    """The (chips, expert parallel) pair of highest median rate per chip by
    :func:`accelsim.models.serving.best_replica_size` (pairs coded ``2·chips + layout``, so
    the smaller replica, then tensor parallelism, wins a tie)."""
    codes = [2 * chips + int(ep) for chips, ep in candidates]
    code = serving.best_replica_size(codes, list(rates))
    return code // 2, bool(code % 2)


def expert_parallel_options(
    case: RowT, capacity: Callable[[RowT, FloatArray], FloatArray], share: FloatArray
) -> list[RowT]:
    """``case`` (a frozen dataclass) at each wide expert-parallel size
    (:func:`expert_parallel_sizes` from 2 to its ``largest``) whose KV ``capacity`` at the
    memory ``share`` holds a sequence; none for a model without an expert layout, a row
    whose software states its tensor parallelism (``TP=8``: the submitter's layout), or a
    row that does not state expert parallelism (``EP``, ``wide EP``, ``expert parallel`` in
    its software or scenario): the engines' rule, which never picks it by itself. A row that
    states its size (``EP=8``, ``expert parallel 8``) is tried at that size only."""
    stated = " ".join(case.row.get(k, "") for k in ("software", "scenario"))
    if not case.model.has_expert_layout() or _STATED_TP.search(stated):
        return []
    if not _STATED_EP.search(stated):
        return []  # as the engines: expert parallelism only where it is stated
    sizes = expert_parallel_sizes(2, case.largest)
    size = _STATED_EP_SIZE.search(stated)
    if size:  # the submitter's own size (``EP=8``, ``expert parallel 8``), as a stated TP
        sizes = [n for n in sizes if n == int(size.group(1) or size.group(2))]
    options = [
        dataclasses.replace(case, chips=t, expert_parallel=True)  # type: ignore[type-var]
        for t in sizes
    ]
    context = case.input_tokens + case.output_tokens
    return [c for c in options if float(np.min(capacity(c, share))) >= context]


def offline_layout(
    case: RowT,
    capacity: Callable[[RowT, FloatArray], FloatArray],
    rate: Callable[[RowT, FloatArray, Nuisance], FloatArray],
    medians: Nuisance,
) -> RowT:
    """The layout an Offline submitter of a mixture of experts picks: ``case`` (the memory
    rule's tensor-parallel replica) or a wide expert-parallel one
    (:func:`expert_parallel_options`), whichever has the highest per-chip ``rate``
    (efficiency; overhead, memory share, overlap) at the chip's median efficiency and the
    ``medians`` of overhead, memory share and overlap: the model's own figure at fixed
    inputs, never the published one."""
    options = [case, *expert_parallel_options(case, capacity, medians[1])]
    eff = median_efficiency(case.chip)
    rates = [float(rate(c, eff, medians)[0]) for c in options]
    best = best_layout([(c.chips, c.expert_parallel) for c in options], rates)
    return next(c for c in options if (c.chips, c.expert_parallel) == best)


def pick_by_median(kept: Sequence[tuple[RowT, FloatArray]]) -> tuple[RowT, FloatArray]:
    """The (case, rate draws) pair a Server / Interactive submitter picks: the highest median
    rate per chip by :func:`best_layout`."""
    rates = [float(np.median(r)) for _, r in kept]
    best = best_layout([(c.chips, c.expert_parallel) for c, _ in kept], rates)
    return next((c, r) for c, r in kept if (c.chips, c.expert_parallel) == best)


def expert_parallel_sizes(smallest: int, largest: int) -> list[int]:
    """The expert-parallel sizes tried: doublings of ``smallest`` up to ``largest`` (the
    system within its scale-up domain), and ``largest`` itself (a whole NVL72 rack)."""
    start = max(2, smallest)
    if start > largest:
        return []
    sizes = serving.replica_sizes(start, largest)
    return sizes if largest in sizes else [*sizes, largest]


__all__ = [
    "EP_NOTE",
    "Nuisance",
    "best_layout",
    "expert_parallel_options",
    "expert_parallel_sizes",
    "has_expert_layout",
    "held_kv_bytes",
    "held_weight_bytes",
    "layout_cost",
    "median_efficiency",
    "note",
    "nuisance_draws",
    "nuisance_medians",
    "offline_layout",
    "pick_by_median",
    "saturated_step_tokens",
    "scheduler_ranks",
    "speculated",
]
