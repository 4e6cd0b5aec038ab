"""The analytic engine: every run of one training run on a dedicated fleet at once, in numpy.

It reads as DESIGN.md's flow. First every uncertain input of the chunk is drawn once, into
one table (:func:`draw_training_inputs`, a :class:`TrainingInputs`); then a pipeline of pure
:mod:`accelsim.models` calls turns the table into usage -- perf (:func:`run_mfu`, the
failure-free compute), engineering (:func:`engineering_phases`), reliability
(:func:`training_hours`) -- and :func:`simulate_training` assembles the **usage** (phases,
chip-hours, held hours, interruptions); :mod:`accelsim.engines._pricing` prices it.

Calendar phases, in order: capacity lead time (quota wait or procurement) in parallel with
porting then optimisation; then the queue wait (none on a dedicated fleet); then training
with failures and checkpoint/restart, sampled exactly by
:func:`accelsim.models.reliability.sample_completion_hours`, stretched by the badput that is
not hardware failure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from accelsim._typing import FloatArray, IntArray
from accelsim.catalog import Catalog, Chip, Fit, Kind, Pricing, Stack
from accelsim.dists import LogNormal
from accelsim.engines._inputs import InputDraws, InputPlan, as_plan, constant
from accelsim.engines._offers import lead_time_days, spot_preemption_prior
from accelsim.models import engineering, instability, perf, reliability
from accelsim.scenario import Framework, Pool, Scenario, Stage, TrainingRun

_HOURS_PER_DAY = 24.0
# Share of HBM that training state may fill; the rest holds activations and buffers. A
# convention for the model-parallel group size, not a measured figure.
_USABLE_HBM_FRACTION = 0.9


@dataclass(frozen=True)
class RunInfo:
    """Facts about the option that the recommendation reasons with (not uncertain)."""

    chip: str
    kind: Kind
    vendor: str
    provider: str | None
    pricing: Pricing
    chips: int
    framework: Framework
    stack: Stack
    fit: Fit
    stage: Stage


def run_info(scenario: Scenario, cat: Catalog) -> RunInfo:
    """The fixed facts of a training scenario's first pool, in catalog ``cat``."""
    work = scenario.training
    pool = scenario.fleet[0]
    chip = cat.chip(pool.chip)
    fit = cat.priors.framework_fit.table[work.framework][chip.software_stack]
    return RunInfo(
        chip=chip.id,
        kind=chip.kind,
        vendor=chip.vendor,
        provider=pool.provider,
        pricing=pool.pricing,
        chips=pool.count,
        framework=work.framework,
        stack=chip.software_stack,
        fit=fit,
        stage=work.stage,
    )


@dataclass(frozen=True)
class MfuInputs:
    """Draws behind the MFU: the user's MFU, or the learning curve and its reference scale."""

    user_mfu: FloatArray | None
    """The user's MFU at the run's own scale (then the fields below are unused)."""
    ceiling: FloatArray | None = None
    """MFU ceiling at the reference scale. [fraction]"""
    start_fraction: FloatArray | None = None
    """Share of the ceiling reached before optimisation. [fraction]"""
    hours_scale: FloatArray | None = None
    """Optimisation hours per e-fold of the remaining gap. [h]"""
    global_batch_tokens: FloatArray | None = None
    """Global batch. [tokens]"""
    reference_chips: FloatArray | None = None
    """Scale of the published runs behind the ceiling. [chips]"""


@dataclass(frozen=True)
class TrainingInputs:
    """One chunk's draws of every uncertain input of a training run: one array per input."""

    porting_hours: FloatArray
    optimization_hours: FloatArray
    mfu: MfuInputs
    architecture_changes: FloatArray | None
    """Prototype only (else ``None``), with ``reoptimization_hours_per_change``."""
    reoptimization_hours_per_change: FloatArray | None
    engineers: FloatArray
    engineer_hours_per_week: FloatArray
    lead_time_days: FloatArray
    failure_rate_per_chip_hour: FloatArray
    preemptions_per_chip_hour: FloatArray
    checkpoint_write_hours: FloatArray
    restart_hours: FloatArray
    checkpoint_interval_hours: FloatArray | None
    """The user's interval, or ``None`` for Daly's optimum."""
    badput_fraction: FloatArray
    spot_unit_chips: float = 1.0
    """Chips per spot preemption unit (VM or TPU host); 1 off spot. [chips]"""
    spot_correlated_share: FloatArray | float = 0.0
    """Share of a unit's preemptions in bursts that take all the job's units. [fraction]"""
    instability_events_per_day: FloatArray | float = 0.0
    """Loss-spike and divergence rollbacks per day of training; 0: none. [1/d]"""
    instability_event_days: tuple[float, float] = (1.0, 1.0)
    """5 % and 95 % quantiles of one rollback's cost, a log-normal over events. [d]"""


def spot_unit_chips(cat: Catalog, pool: Pool) -> float:
    """Chips per spot preemption unit of ``pool`` (``priors.spot_unit_chips`` by chip kind);
    1 off spot or without the prior. [chips]"""
    units = cat.priors.spot_unit_chips
    if pool.pricing != "spot" or not units:
        return 1.0
    return float(units[cat.chip(pool.chip).kind].value)  # type: ignore[arg-type]


def _draw_mfu(
    scenario: Scenario, cat: Catalog, draws: InputDraws, info: RunInfo
) -> tuple[MfuInputs, FloatArray]:
    """The MFU draws and the optimisation hours invested."""
    a, work, p = scenario.assumptions, scenario.training, cat.priors
    if a.mfu is not None:
        # The user's MFU is the run's own, at its own scale: used as is, and it replaces the
        # learning curve, so optimisation hours count only if the user states them too.
        mfu = draws.get("assumptions.mfu", a.mfu, a.mfu)
        if a.optimization_hours is None:
            return MfuInputs(mfu), draws.fixed("assumptions.optimization_hours", 0.0)
        return MfuInputs(mfu), draws.get(
            "assumptions.optimization_hours", a.optimization_hours, 0.0
        )
    by_chip = p.mfu_ceiling_by_chip.get(info.chip)
    if work.total_params is not None and p.mfu_ceiling_moe is not None:
        # A mixture of experts: routing, all-to-all and small expert matmuls keep its MFU
        # (on active parameters) well below a dense model's. On every chip kind: keeping a
        # dense ceiling for chips without published MoE figures would favour them unfairly.
        ceiling = draws.get("priors.mfu_ceiling_moe", None, p.mfu_ceiling_moe.value)
    elif by_chip is not None:
        ceiling = draws.get(f"priors.mfu_ceiling_by_chip.{info.chip}", None, by_chip.value)
    else:
        ceiling = draws.get(f"priors.mfu_ceiling.{info.kind}", None, p.mfu_ceiling[info.kind].value)
    # The ceilings are BF16 figures: carried to the run's precision's peak.
    ceiling = ceiling * _precision_factor(scenario, cat, draws, info)
    start = draws.get(f"priors.start_fraction.{info.fit}", None, p.start_fraction[info.fit].value)
    scale = draws.get(
        f"priors.optimization_hours_scale.{info.fit}",
        None,
        p.optimization_hours_scale[info.fit].value,
    )
    hours = draws.get(
        "assumptions.optimization_hours", a.optimization_hours, p.optimization_hours.value
    )
    batch = draws.get(
        "workload.global_batch_tokens", work.global_batch_tokens, p.global_batch_tokens.value
    )
    chips_ref = draws.get("priors.mfu_reference_chips", None, p.mfu_reference_chips.value)
    if a.optimization_hours is None:
        hours = _hours_at_stake(scenario, cat, draws, info, ceiling * start, hours)
    return MfuInputs(None, ceiling, start, scale, batch, chips_ref), hours


def precision_mfu_factor(gain: FloatArray | float, peak_ratio: float) -> FloatArray | float:
    """MFU over a precision's peak as a multiple of the BF16 MFU. [dimensionless]

    A run at a precision whose peak is ``peak_ratio`` = R times the BF16 one trains
    ``1 + gain (R - 1)`` times as fast as in BF16 (``gain``: the share of the peak gain it
    realises, ``priors.mfu_precision_gain``), so its MFU over its own peak is the BF16 one
    times ``(1 + gain (R - 1)) / R``; exactly 1 at R = 1 (a chip listing FP8 equal to BF16).

    Examples
    --------
    >>> precision_mfu_factor(0.3, 2.0)  # H100 FP8: 1.3x the BF16 speed on twice the peak
    0.65
    >>> precision_mfu_factor(0.3, 1.0)  # TPU v5p FP8 = BF16 peak
    1.0
    """
    return (1.0 + gain * (peak_ratio - 1.0)) / peak_ratio


def _precision_factor(
    scenario: Scenario, cat: Catalog, draws: InputDraws, info: RunInfo
) -> FloatArray | float:
    """:func:`precision_mfu_factor` of the run's precision on its chip; 1 (nothing drawn)
    where the precision's peak is the BF16 one or the priors have no precision gains."""
    precision = scenario.training.precision
    gains = cat.priors.mfu_precision_gain
    chip = cat.chip(info.chip)
    ratio = chip.peak_tflops(precision) / chip.bf16_tflops
    if ratio == 1.0 or not gains:
        return 1.0
    gain = draws.get(f"priors.mfu_precision_gain.{precision}", None, gains[precision].value)
    return precision_mfu_factor(gain, ratio)


def _hours_at_stake(
    scenario: Scenario, cat: Catalog, draws: InputDraws, info: RunInfo, mfu: FloatArray,
    hours: FloatArray,
) -> FloatArray:  # fmt: skip
    """The prior's optimisation hours scaled to the chip-hours the run puts at stake.

    The stake is the failure-free chip-hours at the un-optimised MFU ``mfu`` (the chip count
    cancels); :func:`accelsim.models.engineering.effort_at_stake` does the rest. A priors
    file without the stake priors keeps the hours as drawn.
    """
    p = cat.priors
    ref = p.optimization_reference_chip_hours
    eps, floor = p.optimization_stake_elasticity, p.optimization_threshold_chip_hours
    if ref is None or eps is None or floor is None:
        return hours
    peak = cat.chip(info.chip).peak_tflops(scenario.training.precision) * 1e12
    stake = training_flops(scenario.training, draws.runs) / (peak * mfu * 3600.0)
    return engineering.effort_at_stake(
        hours,
        stake,
        reference_chip_hours=draws.get("priors.optimization_reference_chip_hours", None, ref.value),
        elasticity=draws.get("priors.optimization_stake_elasticity", None, eps.value),
        threshold_chip_hours=draws.get(
            "priors.optimization_threshold_chip_hours", None, floor.value
        ),
    )


def _draw_reliability(
    scenario: Scenario, cat: Catalog, draws: InputDraws
) -> dict[str, FloatArray | None]:
    """The failure, preemption and checkpoint draws (fields of :class:`TrainingInputs`)."""
    a, p, pool = scenario.assumptions, cat.priors, scenario.fleet[0]
    out: dict[str, FloatArray | None] = {}
    out["failure_rate_per_chip_hour"] = draws.get(
        "assumptions.failure_rate_per_chip_hour",
        a.failure_rate_per_chip_hour,
        p.failure_rate_per_chip_hour.value,
    )
    out["preemptions_per_chip_hour"] = (
        draws.get(
            "assumptions.spot_preemptions_per_hour",
            a.spot_preemptions_per_hour,
            spot_preemption_prior(cat, pool),
        )
        if pool.pricing == "spot"
        else draws.fixed("assumptions.spot_preemptions_per_hour", 0.0)
    )
    if pool.pricing == "spot" and p.spot_correlated_share is not None:
        out["spot_correlated_share"] = draws.get(
            "priors.spot_correlated_share", None, p.spot_correlated_share.value
        )
    out["checkpoint_write_hours"] = draws.get(
        "assumptions.checkpoint_write_hours",
        a.checkpoint_write_hours,
        p.checkpoint_write_hours.value,
    )
    out["restart_hours"] = draws.get(
        "assumptions.restart_hours", a.restart_hours, p.restart_hours.value
    )
    tau = a.checkpoint_interval_hours
    out["checkpoint_interval_hours"] = (
        None if tau is None else draws.get("assumptions.checkpoint_interval_hours", tau, tau)
    )
    event = p.instability_days_per_event
    if p.instability_events_per_day and event is not None:
        stage = scenario.training.stage
        user = a.instability_events_per_day
        out["instability_events_per_day"] = draws.get(
            "assumptions.instability_events_per_day"
            if user is not None
            else f"priors.instability_events_per_day.{stage}",
            user,
            p.instability_events_per_day[stage].value,
        )
        dist = event.dist()  # a log-normal (the priors' schema checks it)
        if isinstance(dist, LogNormal):
            out["instability_event_days"] = (dist.low, dist.high)  # type: ignore[assignment]
    return out


def draw_training_inputs(
    scenario: Scenario, cat: Catalog, draws: InputDraws, info: RunInfo
) -> TrainingInputs:
    """Every uncertain input of a training run for the chunk of ``draws``, drawn once.

    Each input is the user's value if set, else its prior in ``cat``; ``draws`` records
    them by name.
    """
    a, p, fit = scenario.assumptions, cat.priors, info.fit
    porting = draws.get(
        f"assumptions.porting_hours.{fit}", a.porting_hours, p.porting_hours[fit].value
    )
    mfu, optimization = _draw_mfu(scenario, cat, draws, info)
    changes = per_change = None
    if scenario.training.stage == "prototype":
        changes = draws.get(
            "assumptions.architecture_changes",
            a.architecture_changes,
            p.architecture_changes.value,
        )
        per_change = draws.get(
            f"priors.reoptimization_hours_per_change.{fit}",
            None,
            p.reoptimization_hours_per_change[fit].value,
        )
    else:
        draws.fixed("engineering.reoptimization_hours", 0.0)
    engineers = draws.get("assumptions.engineers", a.engineers, p.engineers.value)
    week = draws.get("priors.engineer_hours_per_week", None, p.engineer_hours_per_week.value)
    lead = lead_time_days(cat, scenario.fleet[0], a.lead_time_days, draws)
    reliability_inputs = _draw_reliability(scenario, cat, draws)
    badput = draws.get("assumptions.badput_fraction", a.badput_fraction, p.badput_fraction.value)
    return TrainingInputs(
        porting_hours=porting,
        optimization_hours=optimization,
        mfu=mfu,
        architecture_changes=changes,
        reoptimization_hours_per_change=per_change,
        engineers=engineers,
        engineer_hours_per_week=week,
        lead_time_days=lead,
        badput_fraction=badput,
        spot_unit_chips=spot_unit_chips(cat, scenario.fleet[0]),
        **reliability_inputs,  # type: ignore[arg-type]
    )


# Sequence length assumed for the micro-batch when the scenario gives none (judgement: the
# 4,096-token context of Llama 2, arXiv:2307.09288; only the pipeline bubble depends on it).
_DEFAULT_SEQ_LEN = 4096.0
# Largest tensor-parallel group on a GPU: one 8-GPU NVLink node, Megatron's practice
# (Narayanan et al. 2021, section 3.3: tensor parallelism inside a node, pipeline across).
_GPU_TENSOR_PARALLEL = 8.0


def pipeline_layout(
    work: TrainingRun, chip: Chip, model_parallel: FloatArray, cat: Catalog
) -> dict[str, FloatArray | float]:
    """Pipeline stages, micro-batch tokens and interleaving of the model-parallel group.

    Tensor parallelism fills the group up to a node on GPUs (the whole scale-up domain on a
    TPU, which shards over ICI without a pipeline inside a pod); the rest is pipeline stages,
    each of ``layers / stages`` layers split into chunks of ``layers_per_virtual_stage``.
    Layers are the scenario's, else N / (12 d²), else from the depth-to-width prior.
    """
    s = cat.scaling
    if work.layers is not None:
        layers = float(work.layers)
    elif work.d_model is not None:
        layers = max(1.0, work.params / (12.0 * float(work.d_model) ** 2))
    else:
        layers = (work.params * s.layers_per_d_model**2 / 12.0) ** (1.0 / 3.0)
    domain = float(chip.scale_up_domain_chips)
    cap = domain if chip.kind == "tpu" else min(domain, _GPU_TENSOR_PARALLEL)
    tensor = np.minimum(model_parallel, max(cap, 1.0))
    stages = np.minimum(np.ceil(model_parallel / tensor), max(layers, 1.0))
    virtual = np.maximum(layers / (stages * s.layers_per_virtual_stage), 1.0)
    seq = float(work.seq_len) if work.seq_len is not None else _DEFAULT_SEQ_LEN
    return {
        "pipeline_chips": stages,
        "micro_batch_tokens": s.micro_batch_sequences * seq,
        "virtual_stages": virtual,
    }


def run_mfu(
    inputs: TrainingInputs, work: TrainingRun, chip: Chip, chips: int, cat: Catalog
) -> FloatArray:
    """MFU of the run at its own scale, per run. [fraction]

    The learning curve (:func:`accelsim.models.engineering.mfu_after_optimization`) gives
    the MFU the team reaches at the reference scale of the published runs behind the
    ceiling; :func:`accelsim.models.perf.carry_mfu` (validated against MLPerf scaling
    series) carries it up to a larger run's chip count. A run below the reference scale keeps
    the reference MFU: carried down with the run's own model and batch, the reference
    configuration (a small model's batch spread over thousands of chips) is not the one the
    published runs had, and the carried MFU of small runs came out above any published MFU
    on the chip (0.82 on H100 for a 7B model on 64 chips) and fell as optimisation hours rose.
    A draw the model cannot carry keeps the reference MFU (``carry_mfu`` is ``nan``: the
    reference is out of its reach). The run keeps the
    model-parallel group its training state needs (ZeRO-3 over the fewest chips that hold
    it, every expert included), at its own global batch, with the pipeline bubble of
    :func:`pipeline_layout`. For a mixture of experts the
    per-step traffic is modelled on the active parameters; the MoE ceiling carries its
    all-to-all cost at the reference scale.
    """
    m = inputs.mfu
    if m.user_mfu is not None:
        return m.user_mfu
    assert m.ceiling is not None
    assert m.start_fraction is not None
    assert m.hours_scale is not None
    assert m.reference_chips is not None
    assert m.global_batch_tokens is not None
    mfu_ref = engineering.mfu_after_optimization(
        m.ceiling, m.start_fraction, inputs.optimization_hours, m.hours_scale
    )
    model_parallel = perf.min_chips_to_fit(
        work.state_params, chip.hbm_gib, sharding="zero3", usable_fraction=_USABLE_HBM_FRACTION
    )
    # Carried up from the reference scale only (see the docstring); at chips_ref == chips
    # carry_mfu is the identity.
    chips_ref = np.minimum(m.reference_chips, chips)
    mp_ref = np.minimum(model_parallel, chips_ref)
    carried = perf.carry_mfu(
        mfu_ref,
        chips_ref,
        chips,
        params=work.params,
        global_batch_tokens=m.global_batch_tokens,
        peak_tflops=chip.peak_tflops(work.precision),
        scale_up_domain_chips=chip.scale_up_domain_chips,
        scale_up_gbps=chip.interconnect_gbps,
        scale_out_gbps=chip.scale_out_gbps,
        model_parallel_chips=np.minimum(model_parallel, chips),
        model_parallel_chips_ref=mp_ref,
        overlap=cat.scaling.overlap,
        pipeline_chips_ref=pipeline_layout(work, chip, mp_ref, cat)["pipeline_chips"],
        **pipeline_layout(work, chip, np.minimum(model_parallel, chips), cat),
    )
    # carry_mfu is nan where the draw is inconsistent with the communication model (no local
    # MFU in (0, 1] reaches mfu_ref at the reference scale; ~0.2 % of LLaMA-65B's draws):
    # the model cannot carry such a run across scale, so it keeps its reference MFU.
    return np.asarray(np.where(np.isnan(carried), mfu_ref, carried), dtype=float)


def training_flops(work: TrainingRun, runs: int) -> FloatArray:
    """The run's training FLOPs (the user's, else the model's count), per run. [FLOP]"""
    if work.flops is not None:
        return constant(work.flops, runs)
    flops = perf.training_flops(
        work.params, work.tokens, layers=work.layers, seq_len=work.seq_len, d_model=work.d_model
    )
    return constant(float(flops), runs)


def engineering_phases(inputs: TrainingInputs) -> dict[str, FloatArray]:
    """Engineering hours (porting, optimisation, prototype re-optimisation) and their days.

    ``preparation_days``: the calendar days of porting and optimisation, which precede the
    first step (the run trains at the MFU the optimisation bought), overlapping the lead time.
    """
    if inputs.architecture_changes is not None:
        assert inputs.reoptimization_hours_per_change is not None
        reopt = engineering.reoptimization_hours(
            inputs.architecture_changes, inputs.reoptimization_hours_per_change
        )
    else:
        reopt = constant(0.0, inputs.porting_hours.size)
    hours = inputs.porting_hours + inputs.optimization_hours + reopt
    team, week = inputs.engineers, inputs.engineer_hours_per_week
    before = inputs.porting_hours + inputs.optimization_hours
    return {
        "engineering_hours": hours,
        "porting_days": engineering.calendar_days(inputs.porting_hours, team, week),
        # porting, then the optimisation whose MFU the run uses, before the first step
        "preparation_days": engineering.calendar_days(before, team, week),
        "engineering_days": engineering.calendar_days(hours, team, week),
    }


CompletionSampler = Callable[..., tuple[FloatArray, FloatArray | IntArray]]
"""``(rng, work, interval, write, restart, rate) -> (hours, interruptions)`` per run."""


def _per_block_completion(
    completion: CompletionSampler, draws: InputDraws, *params: FloatArray
) -> tuple[FloatArray, FloatArray | IntArray]:
    """``completion`` on each block's runs with the block's own ``"failures"`` stream."""
    pieces = draws.block_rngs("failures")
    if len(pieces) == 1:
        return completion(pieces[0][1], *params)
    hours = np.empty(draws.runs)
    count = np.empty(draws.runs)
    for runs, rng in pieces:
        hours[runs], count[runs] = completion(rng, *(p[runs] for p in params))
    return hours, count


def training_hours(
    inputs: TrainingInputs,
    compute_hours: FloatArray,
    chips: int,
    draws: InputDraws,
    completion: CompletionSampler,
    horizon_hours: float = np.inf,
) -> dict[str, FloatArray]:
    """Training time with failures, checkpoint/restart and badput, per run. [h]

    Interruptions arrive at :func:`~accelsim.models.reliability.interruption_rate_per_hour`
    (failures) plus :func:`~accelsim.models.reliability.preemption_events_per_hour` (spot
    preemptions per VM or TPU host, bursts counted once); the checkpoint interval
    is the user's, else Daly's optimum (one segment, a final save only, with no
    interruptions at all); ``completion`` samples each block's runs from its own stream.
    A run longer than ``horizon_hours`` is censored there (:func:`censor_at_horizon`).
    """
    preemptions = reliability.preemption_events_per_hour(
        float(chips),
        inputs.spot_unit_chips,
        inputs.preemptions_per_chip_hour,
        inputs.spot_correlated_share,
    )
    rate = (
        reliability.interruption_rate_per_hour(float(chips), inputs.failure_rate_per_chip_hour)
        + preemptions
    )
    write = inputs.checkpoint_write_hours
    interval = inputs.checkpoint_interval_hours
    if interval is None:
        failing = rate > 0
        with np.errstate(over="ignore"):  # a subnormal rate: an infinite MTBF, no checkpoint
            daly = reliability.daly_interval_hours(write, 1.0 / np.where(failing, rate, 1.0))
        interval = np.where(failing, daly, np.inf)
    hours, interruptions = _per_block_completion(
        completion, draws, compute_hours, interval, write, inputs.restart_hours, rate
    )
    hours = np.asarray(hours, dtype=float) / (1.0 - inputs.badput_fraction)
    lost = _instability_hours(inputs, np.minimum(hours, horizon_hours), draws)
    out = censor_at_horizon(
        hours + lost,
        np.asarray(interruptions, dtype=float),
        rate * (1.0 - inputs.badput_fraction),
        horizon_hours,
    )
    # a censored run: the horizon's share of rollbacks, as in its uncensored time
    share = np.divide(lost, hours + lost, out=np.zeros_like(lost), where=lost > 0)
    out["instability_hours"] = np.where(out["finished"] > 0, lost, share * horizon_hours)
    out["checkpoint_interval_hours"] = interval  # inf: one segment, a final save only
    out["rate_per_hour"] = rate
    return out


def _instability_hours(inputs: TrainingInputs, hours: FloatArray, draws: InputDraws) -> FloatArray:
    """Hours lost to loss-spike and divergence rollbacks over ``hours`` of training
    (:func:`accelsim.models.instability.rollback_days`). [h]

    Every run takes its count and its events' costs from its own uniforms of named streams
    (``instability.events``, ``instability.event.<j>``), not from a per-block generator:
    the DES training path runs chunks smaller than a block, and a run's loss must not
    depend on the chunk it falls in (bit-identical results whatever the chunking).
    """
    rate = np.broadcast_to(np.asarray(inputs.instability_events_per_day, float), hours.shape)
    if not np.any(rate > 0):
        return np.zeros_like(hours)
    median, sigma = instability.lognormal_params(*inputs.instability_event_days)
    days = hours / _HOURS_PER_DAY
    counts = instability.event_counts(draws.uniforms("instability.events"), days, rate)
    k = int(min(counts.max(initial=0.0), instability.EXACT_EVENTS_MAX))
    events = np.empty((k, hours.size))
    for j in range(k):
        events[j] = draws.uniforms(f"instability.event.{j}")
    tail = draws.uniforms("instability.tail") if k == instability.EXACT_EVENTS_MAX else 0.5
    lost = instability.rollback_days(counts, events, tail, median, sigma)
    return lost * _HOURS_PER_DAY


def censor_at_horizon(
    hours: FloatArray, interruptions: FloatArray, rate_per_hour: FloatArray, horizon_hours: float
) -> dict[str, FloatArray]:
    """Runs that end after the horizon are not finished: their time is the horizon.

    A censored run reports ``horizon_hours`` of training (it is at least that long) and the
    interruptions expected up to then: every event of the interruption process during the
    run interrupts something, so by the horizon there are on average ``rate * horizon``
    (``rate_per_hour`` is per hour of training, badput included). ``finished`` is 1 or 0.
    """
    finished = hours <= horizon_hours  # inf (a mean beyond float64) is not finished
    return {
        "training_hours": np.where(finished, hours, horizon_hours),
        "interruptions": np.where(finished, interruptions, rate_per_hour * horizon_hours),
        "finished": finished.astype(float),
    }


def _expected_goodput(
    inputs: TrainingInputs, compute_hours: FloatArray, reliable: dict[str, FloatArray]
) -> FloatArray:
    """``W / E[T]`` with badput: the goodput of a run censored before it ended. [fraction]"""
    expected = reliability.goodput_fraction(
        compute_hours,
        reliable["checkpoint_interval_hours"],
        inputs.checkpoint_write_hours,
        inputs.restart_hours,
        reliable["rate_per_hour"],
    )
    return np.nan_to_num(expected, nan=0.0) * (1.0 - inputs.badput_fraction)


def simulate_training(
    scenario: Scenario,
    cat: Catalog,
    plan: InputPlan | np.random.SeedSequence,
    start: int,
    stop: int,
    completion: CompletionSampler = reliability.sample_completion_hours,
) -> tuple[dict[str, FloatArray], InputDraws]:
    """Usage of the runs ``[start, stop)`` of a training scenario, in one vectorised pass.

    ``cat`` is the study's catalog and ``plan`` how it draws (a bare seed: plain Monte
    Carlo). The runs may span several blocks (:data:`accelsim.engines._inputs.BLOCK_RUNS`),
    whole ones but for the study's last: each input takes these runs' values of its own
    stream and failures are sampled per block from the block's own stream, so the result
    does not depend on how runs are grouped. Returns the usage arrays by name and the input
    draws (which pricing reads too). ``completion`` samples the failure-laden training time
    of one block's runs; the DES engine passes an event-by-event simulation of the same
    model (one block at a time), which is how the two engines are held to agree.
    """
    work, pool = scenario.training, scenario.fleet[0]
    chip, info = cat.chip(pool.chip), run_info(scenario, cat)
    draws = as_plan(plan).draws(start, stop)
    inputs = draw_training_inputs(scenario, cat, draws, info)
    # perf -> engineering -> reliability
    mfu = run_mfu(inputs, work, chip, pool.count, cat)
    flops = training_flops(work, draws.runs)
    compute_h = perf.compute_hours(flops, float(pool.count), chip.peak_tflops(work.precision), mfu)
    eng = engineering_phases(inputs)
    horizon_h = work.horizon_days * _HOURS_PER_DAY
    reliable = training_hours(inputs, compute_h, pool.count, draws, completion, horizon_h)
    # usage: capacity wait and porting overlap; no queue on a dedicated fleet
    lead_days = inputs.lead_time_days
    queue_days = constant(0.0, draws.runs)
    before_days = np.maximum(lead_days, eng["preparation_days"]) + queue_days
    training_h = reliable["training_hours"]
    training_days, compute_days = training_h / _HOURS_PER_DAY, compute_h / _HOURS_PER_DAY
    finished = reliable["finished"] > 0
    goodput = np.where(
        finished, compute_h / training_h, _expected_goodput(inputs, compute_h, reliable)
    )
    usage: dict[str, FloatArray] = {
        "time_to_train_days": before_days + training_days,
        "training_days": training_days,
        "compute_days": compute_days,
        # loss-spike and divergence rollbacks: inside training_days and failure_overhead_days
        "instability_days": reliable["instability_hours"] / _HOURS_PER_DAY,
        # an unfinished run: the share of its horizon lost, at the expected goodput
        "failure_overhead_days": np.where(
            finished, training_days - compute_days, training_days * (1.0 - goodput)
        ),
        "wait_days": lead_days + queue_days,
        "lead_time_days": lead_days,
        "porting_days": eng["porting_days"],
        # porting then optimisation: what precedes the first step beside the lead time
        "preparation_days": eng["preparation_days"],
        "engineering_days": eng["engineering_days"],
        "engineering_hours": eng["engineering_hours"],
        "chip_hours": pool.count * training_h,
        # chips are held from delivery (end of the lead time) to the last step
        "held_hours": (before_days - lead_days) * _HOURS_PER_DAY + training_h,
        "interruptions": reliable["interruptions"],
        "mfu": mfu,
        "goodput": goodput,
        "finished": reliable["finished"],
        # no checkpoint before the end (an infinite interval): the whole work is one segment
        "checkpoint_interval_hours": np.minimum(reliable["checkpoint_interval_hours"], compute_h),
        "training_flops": flops,
    }
    return usage, draws


__all__ = [
    "MfuInputs",
    "RunInfo",
    "TrainingInputs",
    "draw_training_inputs",
    "engineering_phases",
    "pipeline_layout",
    "precision_mfu_factor",
    "run_info",
    "run_mfu",
    "simulate_training",
    "training_flops",
    "training_hours",
]
