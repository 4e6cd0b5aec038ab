"""An LLM endpoint (:class:`Serving`) and its latency objective (:class:`SLO`)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import (
    Field,
    model_validator,
)

from accelsim import catalog
from accelsim.dists import Uncertain
from accelsim.errors import AccelsimError
from accelsim.scenario._common import (
    MIX_NAME_PATTERN,
    Framework,
    _check_range,
    _Model,
    _support,
)
from accelsim.scenario._speculative import Speculative

ServingPrecision = Literal["bf16", "fp8", "int8", "fp4"]
Scaling = Literal["fixed", "follow_demand"]
Router = Literal["least_loaded", "round_robin"]
_MODEL_FIELDS = ("params", "active_params", "layers", "d_model", "kv_heads", "head_dim")
_MINUTES_PER_HOUR = 60.0


class SloUnitWarning(UserWarning):
    """An SLO bound below what any serving system delivers: likely a unit mistake."""


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

    @model_validator(mode="after")
    def _plausible_units(self) -> SLO:
        """Warn (:class:`SloUnitWarning`) on a bound below what any serving system
        delivers (the catalog's ``slo_floor_ttft_ms`` and ``slo_floor_tpot_ms``): most
        likely seconds typed where milliseconds are expected."""
        priors = catalog.serving_priors()
        for field, floor in (
            ("ttft_ms", priors.slo_floor_ttft_ms),
            ("tpot_ms", priors.slo_floor_tpot_ms),
        ):
            value = float(getattr(self, field))
            if floor is None or not isinstance(floor.value, int | float):
                continue
            if value < float(floor.value):
                warnings.warn(
                    f"SLO {field}={value:g} is below {float(floor.value):g} ms, faster than "
                    f"any published serving system: {field} is in milliseconds (did you mean "
                    f"{field}={value * 1000:g}, i.e. {value:g} s?)",
                    SloUnitWarning,
                    stacklevel=2,
                )
        return self


class Disaggregation(_Model):
    """Prefill and decode on separate pools of the fleet (DistServe, Splitwise, Mooncake).

    ``Serving(..., disaggregated=Disaggregation(prefill_pool=0, decode_pool=1))``: prefill
    replicas on ``fleet[prefill_pool]`` run whole prompts (no decode in their iterations)
    and send each prompt's KV cache over the chips' scale-out network to a decode replica
    on ``fleet[decode_pool]``, which decodes with no prefill in its iterations. Each pool
    has its own chip, replica size and offer (see :doc:`/serving`).
    """

    prefill_pool: int = Field(default=0, ge=0)
    """Index in ``Scenario.fleet`` of the pool running prefill [index]."""
    decode_pool: int = Field(default=1, ge=0)
    """Index in ``Scenario.fleet`` of the pool running decode [index]."""
    prefill_chips_per_replica: int | None = Field(default=None, gt=0)
    """Chips of one prefill replica; unset: the rule of ``Serving.chips_per_replica`` on the
    prefill pool's chip."""
    decode_chips_per_replica: int | None = Field(default=None, gt=0)
    """Chips of one decode replica; unset: the rule of ``Serving.chips_per_replica`` on the
    decode pool's chip."""

    @model_validator(mode="after")
    def _distinct(self) -> Disaggregation:
        if self.prefill_pool == self.decode_pool:
            raise ValueError(
                f"disaggregated.prefill_pool and decode_pool must name two pools, both are "
                f"{self.prefill_pool}"
            )
        return self


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
    """Key/value heads per layer [count], the heads tensor parallelism splits the KV cache
    by: a chip holds ``ceil(kv_heads / chips_per_replica)`` of them, so more chips than KV
    heads replicate the cache. Multi-head latent attention caches one latent head shared by
    every query head: give ``kv_heads=1`` and ``head_dim`` half its cached width
    (DeepSeek-V3: (512 + 64) / 2 = 288)."""
    head_dim: int | None = Field(default=None, gt=0)
    """Dimension of one attention head [count]."""
    attention_heads: int | None = Field(default=None, gt=0)
    """Query heads per layer [count] (explicit architecture, optional): with ``head_dim``
    (or the MLA widths) it sets the attention FLOPs per context token; unset: ``4·d_model``
    per layer, exact only for heads as wide as the hidden size."""
    kv_lora_rank: int | None = Field(default=None, gt=0)
    """Multi-head latent attention: rank of the cached KV latent [count] (optional; with
    ``qk_rope_head_dim``, ``qk_nope_head_dim``, ``v_head_dim`` and ``attention_heads``)."""
    qk_rope_head_dim: int | None = Field(default=None, gt=0)
    """MLA: decoupled RoPE width of a query/key head [count] (optional)."""
    qk_nope_head_dim: int | None = Field(default=None, gt=0)
    """MLA: non-RoPE width of a query/key head, decompressed [count] (optional)."""
    v_head_dim: int | None = Field(default=None, gt=0)
    """MLA: width of a value head, decompressed [count] (optional)."""
    full_attention_layers: int | None = Field(default=None, gt=0)
    """Layers attending to the whole context, the others to a sliding window [count]
    (optional; unset: all)."""
    framework: Framework = "pytorch"
    """Framework of the serving stack's code; decides the porting hours to the chip's stack."""
    precision: ServingPrecision = "bf16"
    """Weights and matmuls: ``bf16``, ``fp8``, ``int8`` or ``fp4``, where the chip publishes
    that peak."""
    kv_precision: ServingPrecision | None = None
    """KV-cache values; unset = the catalog's convention for the weights' precision
    (``kv_precision`` in ``serving.yaml``: FP8 for FP4 weights, as NVFP4 checkpoints
    declare; otherwise ``precision``)."""
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
    within the chip's scale-up domain. Unset: the engines try the smallest power of two
    whose usable memory holds the weights in at most ``replica_weight_share_max`` (serving
    prior) and its doublings within the pool and the domain, and serve on the one whose
    fleet, at the inputs' medians, meets the SLO's attainment on the fewest chip-hours (then,
    on a fixed pool, the highest SLO rate per chip; following the demand, the smallest); the
    metric ``chips_per_replica`` reports it. Disaggregated
    pools (unset ``prefill_/decode_chips_per_replica``) take the smallest."""
    kv_share: Uncertain | None = None
    """Share of the memory left after the weights that holds KV cache, in (0, 1]; unset =
    the serving prior ``memory_share`` (share of all memory for weights and KV cache)."""
    max_batch: int | None = Field(default=None, gt=0)
    """Most sequences a replica runs at once; unset = the serving prior of the chip's stack,
    capped with chunked prefill at the token budget ``prefill_chunk_tokens``. Set, it must
    not exceed that budget (vLLM's ``max_num_seqs <= max_num_batched_tokens``)."""
    prefill_chunk_tokens: int | None = Field(default=None, ge=0)
    """Chunked prefill's token budget per iteration of a colocated replica (vLLM's
    ``max_num_batched_tokens``) [tokens]: one token for each running sequence's decode, the
    rest for prompts, so a batch of ``B`` leaves ``budget − B`` prompt tokens an iteration.
    Unset = the serving prior ``prefill_chunk_tokens`` for the pool's chip: vLLM's default
    of ``vllm serve`` (8192 on GPUs with >= 70 GiB other than A100, 2048 on A100 and smaller
    GPUs, TPU v6e 1024, v5e 512, v5p 256, CPU 2048); 0 = prefill-first (whole prompts in
    iterations without decode); > 0 = that budget. Not with ``disaggregated`` pools."""
    speculative: Speculative | None = None
    """Speculative decoding / multi-token prediction (:class:`Speculative`); unset = none.
    Colocated endpoints only."""
    expert_parallel: bool | None = None
    """A mixture of experts whose preset gives its expert layout: ``True`` serves each
    replica as wide expert parallelism with data-parallel attention (every chip holds the
    non-expert weights and its own sequences' KV cache, the experts are split over the
    chips and reached by an all-to-all over the scale-up links) at the replica size the
    replica-size rule picks among the doublings and the whole scale-up domain (the metric
    ``chips_per_replica`` reports it); unset or ``False``: tensor parallelism only (the
    model's expert-parallel rack-scale gain is not in the published results, so it is
    never chosen automatically). Colocated endpoints only."""
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
    disaggregated: Disaggregation | None = None
    """Prefill and decode on two pools of the fleet (:class:`Disaggregation`); unset =
    colocated on the one pool (continuous batching of both in every replica)."""

    name: str | None = Field(default=None, pattern=MIX_NAME_PATTERN)
    """In a mix (``Scenario.workloads``): the endpoint's name, prefixing its metrics
    (``<name>.slo_attainment``); unset = ``serving``. Not for a lone workload."""
    priority: int | None = Field(default=None, ge=-1000, le=1000)
    """In a mix: the priority of its replicas under the ``priority`` schedulers (larger
    first); unset = 2. Not for a lone workload."""
    chips: int | None = Field(default=None, ge=1, le=10_000_000)
    """In a mix: chips of the first pool the endpoint may hold [count] (its replicas'
    pool: ``fixed`` serves ``chips // chips_per_replica`` replicas); unset = the whole
    pool. Not for a lone workload."""

    @model_validator(mode="after")
    def _checks(self) -> Serving:
        self._check_model()
        self._check_load()
        self._check_scheduler()
        return self

    def _check_model(self) -> None:
        """A preset or a whole architecture, never both; experts within the parameters;
        the optional attention widths consistent."""
        fields = (*_MODEL_FIELDS, *catalog.ATTENTION_FIELDS)
        given = [f for f in fields if getattr(self, f) is not None]
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
            problem = catalog.attention_widths_problem(self.attention_widths(), self.layers)
            if problem is not None:
                raise ValueError(problem)
            if self.kv_lora_rank is not None and self.kv_heads != 1:
                raise ValueError(
                    f"kv_heads={self.kv_heads} with multi-head latent attention: the cached "
                    "latent is one head all query heads share, give kv_heads=1 and head_dim "
                    "half its cached width, (kv_lora_rank + qk_rope_head_dim) / 2"
                )
            active, total = self.active_params, self.params
            if active is not None and total is not None and active > total:
                raise ValueError(
                    f"active_params={active:.3g} exceeds params={total:.3g}: params counts "
                    f"every expert"
                )

    def _check_load(self) -> None:
        """The demand's profile, burst windows, rates and token lengths are in range."""
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

    def _check_scheduler(self) -> None:
        """Autoscaling fields only where replicas follow the demand; the disaggregated
        pools' own sizes; replica bounds in order; the batch within the token budget."""
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
        if self.disaggregated is not None:
            for name, why in (
                ("chips_per_replica", "set disaggregated.prefill_/decode_chips_per_replica"),
                (
                    "prefill_chunk_tokens",
                    "a prefill replica runs whole prompts, a decode replica none",
                ),
                ("speculative", "speculation is modelled on colocated replicas only"),
                ("expert_parallel", "disaggregated pools serve tensor-parallel replicas"),
            ):
                if getattr(self, name) is not None:
                    raise ValueError(f"{name} does not apply with disaggregated pools: {why}")
        if self.expert_parallel:
            preset = catalog.model_presets().get(self.model.lower()) if self.model else None
            if preset is None or not preset.has_expert_layout():
                raise ValueError(
                    "expert_parallel=True needs a mixture-of-experts preset that gives its "
                    "expert layout (experts, experts_per_token, moe_layers, expert_params), "
                    f"got model={self.model!r}"
                )
        if self.max_replicas is not None and self.max_replicas < self.min_replicas:
            raise ValueError(
                f"max_replicas ({self.max_replicas}) is below min_replicas ({self.min_replicas})"
            )
        chunk, batch = self.prefill_chunk_tokens, self.max_batch
        if chunk and batch is not None and batch > chunk:
            raise ValueError(
                f"max_batch ({batch}) exceeds prefill_chunk_tokens ({chunk}), the iteration's "
                "token budget: each running sequence takes one token of it (vLLM refuses "
                "max_num_seqs > max_num_batched_tokens); raise the budget, lower max_batch, "
                "or set prefill_chunk_tokens=0 (prefill-first)"
            )

    def attention_widths(self) -> dict[str, int | None]:
        """The explicit architecture's attention widths, as
        :meth:`accelsim.catalog.ModelPreset.attention_widths` (None: unknown)."""
        widths = {f: getattr(self, f) for f in catalog.ATTENTION_FIELDS}
        return {"head_dim": self.head_dim, **widths}

    @property
    def preset(self) -> catalog.ModelPreset | None:
        """The model preset of the shipped catalog, or None for an explicit architecture."""
        return self.preset_in()

    def preset_in(self, cat: catalog.Catalog | None = None) -> catalog.ModelPreset | None:
        """The model preset of the study's catalog ``cat`` (unset: the shipped one), or None
        for an explicit architecture."""
        if self.model is None:
            return None
        return catalog.model_preset(self.model) if cat is None else cat.model_preset(self.model)

    @property
    def total_params(self) -> float:
        """Parameters held in memory, every expert included (shipped presets) [count]."""
        return self.total_params_in()

    def total_params_in(self, cat: catalog.Catalog | None = None) -> float:
        """Parameters held in memory, every expert included, with the presets of ``cat``
        (unset: the shipped ones) [count]."""
        preset = self.preset_in(cat)
        return preset.params if preset is not None else float(self.params or 0.0)

    def weight_bytes(self, cat: catalog.Catalog | None = None) -> float:
        """Bytes of one copy of the weights at ``precision``, with the presets of ``cat``
        (unset: the shipped ones) [B]."""
        return self.total_params_in(cat) * catalog.BYTES_PER_VALUE[self.precision]

    def replica_chips(
        self,
        chip: catalog.Chip,
        pool_count: int,
        role: str | None = None,
        cat: catalog.Catalog | None = None,
    ) -> int:
        """Chips per replica: the user's, or the memory rule of the serving priors
        (:meth:`~accelsim.catalog.ServingPriors.auto_replica_chips`: the smallest power of
        two within the pool and the scale-up domain that holds the weights), read from the
        study's catalog ``cat`` (unset: the shipped one); the largest such power of two if
        none holds them (the scenario's validation then reports the fit). A colocated endpoint's
        engines start from this size and may serve on a doubling of it (``chips_per_replica``
        above). ``role`` (``"prefill"``, ``"decode"``) reads the :class:`Disaggregation`
        field of that pool instead of ``chips_per_replica``."""
        given = self.chips_per_replica
        if role is not None and self.disaggregated is not None:
            given = getattr(self.disaggregated, f"{role}_chips_per_replica")
        if given is not None:
            return given
        priors = catalog.serving_priors() if cat is None else cat.serving_priors
        most = min(pool_count, chip.scale_up_domain_chips)
        return priors.auto_replica_chips(self.weight_bytes(cat), chip, most, pool_count)


def check_replica_pool(
    work: Serving, pool: Any, chips: int, where: str, *, replicas: str = "replicas the pool holds"
) -> None:
    """Raise ``ValueError`` unless replicas of ``chips`` chips of ``pool`` hold the model,
    and, under ``follow_demand``, ``min_replicas``/``max_replicas`` fit in the pool.

    ``where`` names the field of the replica size in the message (e.g.
    ``"workload.chips_per_replica"``), ``replicas`` the pool's replicas (``"replicas the
    pool holds"``). Checked: the precision's peak on the chip, whole
    replicas in the pool, one scale-up domain per replica, and weights that fit the memory
    the engine may use (the upper end of the ``memory_share`` prior unless ``kv_share`` is
    set).
    """
    chip = catalog.chip(pool.chip)
    try:
        chip.peak_tflops(work.precision)
    except catalog.PrecisionUnavailableError as exc:
        raise ValueError(f"workload.precision: {exc}") from None
    if chips > pool.count or pool.count % chips:
        raise ValueError(
            f"{where}={chips} must divide the pool's count ({pool.count}) into whole replicas"
        )
    if chips > chip.scale_up_domain_chips:
        raise ValueError(
            f"{where}={chips} exceeds the scale-up domain of {chip.id} "
            f"({chip.scale_up_domain_chips} chips): tensor parallelism needs one domain"
        )
    if work.kv_share is None:
        share = _support(catalog.serving_priors().memory_share.value)[1]
        usable = f"at most {share:.0%} of it usable for weights and KV cache (prior)"
    else:
        share, usable = 1.0, "all of it"
    hbm_bytes = chip.hbm_bytes * chips
    need = work.weight_bytes()
    if need >= share * hbm_bytes:
        # Only the remedies that exist: a replica spans one scale-up domain within the pool.
        field = where.rsplit(".", 1)[-1]
        if chips < chip.scale_up_domain_chips and chips < pool.count:
            more = f"use more {field}, "
        elif chips < chip.scale_up_domain_chips:
            more = f"give the pool more chips (a replica may span {chip.scale_up_domain_chips}), "
        else:
            more = f"a replica spans at most {chips} {chip.id} (one scale-up domain): "
        raise ValueError(
            f"the weights ({need / 1e9:,.1f} GB at {work.precision}) do not fit a replica "
            f"of {chips} x {chip.id}: HBM {hbm_bytes / 1e9:,.1f} GB, {usable}; {more}"
            f"use a lower precision or a chip with more memory"
        )
    if work.scaling == "follow_demand":
        most = pool.count // chips
        for name in ("min_replicas", "max_replicas"):
            value = getattr(work, name)
            if value is not None and value > most:
                raise ValueError(
                    f"workload.{name}={value} exceeds the {most} {replicas} "
                    f"({pool.count} chips / {chips} per replica)"
                )


def check_disaggregated(work: Serving, fleet: Sequence[Any]) -> None:
    """Raise ``ValueError`` unless the fleet holds the two pools ``work.disaggregated`` names,
    each fitting the model (:func:`check_replica_pool`), and no other pool."""
    dis = work.disaggregated
    if dis is None:
        return
    if len(fleet) != 2:
        raise ValueError(
            f"disaggregated serving runs on two pools (prefill and decode), but the fleet has "
            f"{len(fleet)}"
        )
    if len({pool.provider is None for pool in fleet}) > 1:
        raise ValueError(
            "disaggregated serving prices both pools or neither: give both a provider, or "
            "neither (no cost metrics)"
        )
    for role in ("prefill", "decode"):
        index = getattr(dis, f"{role}_pool")
        if index >= len(fleet):
            raise ValueError(
                f"workload.disaggregated.{role}_pool={index} names no pool: the fleet has "
                f"pools 0 and 1"
            )
        pool = fleet[index]
        chips = work.replica_chips(catalog.chip(pool.chip), pool.count, role)
        where = f"workload.disaggregated.{role}_chips_per_replica"
        check_replica_pool(work, pool, chips, where, replicas=f"{role} replicas pool {index} holds")
