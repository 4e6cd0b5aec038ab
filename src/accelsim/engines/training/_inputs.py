"""The analytic engine's input table: every uncertain input of a training run, drawn once.

:func:`draw_training_inputs` draws, for one chunk of runs, each input of a training run on a
dedicated fleet (the user's value if set, else its prior in the catalog) into one
:class:`TrainingInputs`: engineering hours, the MFU learning curve (:class:`MfuInputs`,
carried to the run's precision), lead time, failures, preemptions, checkpoints and
instability. :class:`RunInfo` holds the option's fixed facts the draws depend on;
:mod:`accelsim.engines.training._analytic` turns the table into usage.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from accelsim._typing import FloatArray
from accelsim.catalog import Catalog, Fit, Kind, Pricing, Stack, mfu_reference_key
from accelsim.dists import LogNormal
from accelsim.engines._inputs import InputDraws, constant
from accelsim.engines._offers import lead_time_days, spot_preemption_prior
from accelsim.models import engineering, perf
from accelsim.scenario import (
    FineTune,
    Framework,
    Pool,
    Recovery,
    Scenario,
    Stage,
    TrainingRun,
    fleet_in_service,
)


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
    fine_tune: FineTune | None = None
    """The run's ``TrainingRun.fine_tune`` (``None``: pretraining)."""


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
        fine_tune=work.fine_tune,
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
    batch_fixed: bool = False
    """Whether ``global_batch_tokens`` is the run's own (else the prior's base batch)."""
    tokens_per_chip: FloatArray | float = 0.0
    """Tokens per chip and step a growing batch keeps; 0: the batch does not grow. [tokens]"""
    reference_params: FloatArray | None = None
    """Model size of the runs behind the ceiling; ``None``: no size class. [count]"""


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
    startup_hours: FloatArray | float = 0.0
    """Launch to first step, once per run (``priors.startup_hours``); 0: none. [h]"""


def recovery_technique(scenario: Scenario, cat: Catalog) -> Recovery:
    """The training run's recovery technique: its own, else by its size.

    ``TrainingRun.recovery`` when set; else ``"frontier"`` from
    ``priors.frontier_recovery_min_chips`` chips of the run (its ``chips`` in a mix, else its
    pool's count) and ``"standard"`` below it, before ``priors.frontier_recovery_from_year``
    (a run whose ``start_year`` is earlier), or with priors that have no frontier priors.
    """
    work = scenario.training
    if work.recovery is not None:
        if work.recovery == "frontier" and cat.priors.frontier_restart_hours is None:
            raise ValueError(
                "workload.recovery='frontier' needs priors.frontier_checkpoint_write_hours "
                "and frontier_restart_hours, which this catalog's priors do not have"
            )
        return work.recovery
    threshold = cat.priors.frontier_recovery_min_chips
    if threshold is None:
        return "standard"
    since = cat.priors.frontier_recovery_from_year
    if work.start_year is not None and since is not None and work.start_year < float(since.value):  # type: ignore[arg-type]
        return "standard"
    chips = work.chips if work.chips is not None else scenario.fleet[0].count
    return "frontier" if chips >= float(threshold.value) else "standard"  # type: ignore[arg-type]


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
        mfu = _user_mfu_inputs(scenario, cat, draws)
        if a.optimization_hours is None:
            return mfu, draws.fixed("assumptions.optimization_hours", 0.0)
        return mfu, draws.get("assumptions.optimization_hours", a.optimization_hours, 0.0)
    moe = work.total_params is not None
    for key in (mfu_reference_key(info.chip, moe, work.params), mfu_reference_key(info.chip, moe)):
        if key in p.mfu_reference_by_chip:  # the measured model size first, then the chip
            return _calibrated_mfu(scenario, cat, draws, info, key)
    ceiling = _draw_ceiling(scenario, cat, draws, info)
    # The ceilings are BF16 figures: carried to the run's precision's peak.
    ceiling = ceiling * _precision_factor(scenario, cat, draws, info)
    if work.regime == "benchmark":
        # A tuned benchmark runs its published recipe: the end of the learning curve.
        start = draws.fixed(f"priors.start_fraction.{info.fit}", 1.0)
    else:
        start = draws.get(
            f"priors.start_fraction.{info.fit}", None, p.start_fraction[info.fit].value
        )
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
    per_chip = p.global_batch_tokens_per_chip
    tokens_per_chip = (
        0.0
        if per_chip is None
        else draws.get("priors.global_batch_tokens_per_chip", None, per_chip.value)
    )
    ref_params = p.mfu_reference_params
    if a.optimization_hours is None:
        hours = _hours_at_stake(scenario, cat, draws, info, ceiling * start, hours)
    return MfuInputs(
        None,
        ceiling,
        start,
        scale,
        batch,
        chips_ref,
        batch_fixed=work.global_batch_tokens is not None,
        tokens_per_chip=tokens_per_chip,
        reference_params=None
        if ref_params is None
        else draws.get("priors.mfu_reference_params", None, ref_params.value),
    ), hours


def _user_mfu_inputs(scenario: Scenario, cat: Catalog, draws: InputDraws) -> MfuInputs:
    """The user's MFU; a run to a target loss also draws the batch prior, which sets the
    tokens it needs (:func:`accelsim.engines.training._convergence.run_batch_tokens`)."""
    a, work, p = scenario.assumptions, scenario.training, cat.priors
    assert a.mfu is not None  # the caller's branch
    mfu = draws.get("assumptions.mfu", a.mfu, a.mfu)
    if work.target != "loss":
        return MfuInputs(mfu)
    per_chip = p.global_batch_tokens_per_chip
    return MfuInputs(
        mfu,
        global_batch_tokens=draws.get(
            "workload.global_batch_tokens", work.global_batch_tokens, p.global_batch_tokens.value
        ),
        batch_fixed=work.global_batch_tokens is not None,
        tokens_per_chip=0.0
        if per_chip is None
        else draws.get("priors.global_batch_tokens_per_chip", None, per_chip.value),
    )


def _draw_ceiling(scenario: Scenario, cat: Catalog, draws: InputDraws, info: RunInfo) -> FloatArray:
    """The MFU ceiling of the run's regime, chip and architecture (BF16, before precision).

    A mixture of experts takes the MoE prior on every chip kind (routing, all-to-all and
    small expert matmuls keep its MFU well below a dense model's; a dense ceiling for chips
    without published MoE figures would favour them); a tuned benchmark the benchmark prior
    of its chip, else of its kind; otherwise the chip generation's prior, else the kind's.
    A fine-tune scales the pretraining ceiling by ``mfu_fine_tune_factor``.
    """
    work, p = scenario.training, cat.priors
    by_chip = p.mfu_ceiling_by_chip.get(info.chip)
    tuned = p.mfu_ceiling_benchmark
    key = info.chip if info.chip in tuned else info.kind
    benchmark = tuned.get(key)
    if work.total_params is not None and p.mfu_ceiling_moe is not None:
        return draws.get("priors.mfu_ceiling_moe", None, p.mfu_ceiling_moe.value)
    if work.regime == "benchmark" and benchmark is not None:
        return draws.get(f"priors.mfu_ceiling_benchmark.{key}", None, benchmark.value)
    if by_chip is not None:
        ceiling = draws.get(f"priors.mfu_ceiling_by_chip.{info.chip}", None, by_chip.value)
    else:
        ceiling = draws.get(f"priors.mfu_ceiling.{info.kind}", None, p.mfu_ceiling[info.kind].value)
    factor = p.mfu_fine_tune_factor
    if work.fine_tune is not None and factor is not None:
        ceiling = ceiling * draws.get("priors.mfu_fine_tune_factor", None, factor.value)
    return ceiling


def _calibrated_mfu(
    scenario: Scenario, cat: Catalog, draws: InputDraws, info: RunInfo, key: str
) -> tuple[MfuInputs, FloatArray]:
    """The MFU draws of a chip calibrated on the team's measurements: the calibrated MFU at
    the reference scale (the measured runs' own, where calibration gives it) in place of
    ceiling x learning curve (a start fraction of 1 keeps it as drawn), carried across scale
    as any reference MFU. Like the user's own MFU, it is the
    team's optimised code: optimisation hours count only if the user states them."""
    a, work, p = scenario.assumptions, scenario.training, cat.priors
    prior = p.mfu_reference_by_chip[key]
    reference = draws.get(f"priors.mfu_reference_by_chip.{key}", None, prior.value)
    reference = reference * _precision_factor(scenario, cat, draws, info)
    ones = np.ones_like(reference)
    batch = draws.get(
        "workload.global_batch_tokens", work.global_batch_tokens, p.global_batch_tokens.value
    )
    scale = p.mfu_reference_chips_by_chip.get(key)
    name = f"priors.mfu_reference_chips_by_chip.{key}"
    if scale is None:
        scale, name = p.mfu_reference_chips, "priors.mfu_reference_chips"
    chips_ref = draws.get(name, None, scale.value)
    per_chip = p.global_batch_tokens_per_chip
    mfu = MfuInputs(
        None,
        reference,
        ones,
        ones,
        batch,
        chips_ref,
        batch_fixed=work.global_batch_tokens is not None,
        tokens_per_chip=0.0
        if per_chip is None
        else draws.get("priors.global_batch_tokens_per_chip", None, per_chip.value),
    )
    if a.optimization_hours is None:
        return mfu, draws.fixed("assumptions.optimization_hours", 0.0)
    return mfu, draws.get("assumptions.optimization_hours", a.optimization_hours, 0.0)


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


def _draw_recovery_times(
    scenario: Scenario, cat: Catalog, draws: InputDraws
) -> tuple[FloatArray, FloatArray]:
    """Checkpoint stall and restart time per run [h], each the user's value if set, else the
    prior of the run's recovery technique (:func:`recovery_technique`): ``frontier`` draws
    from its own named streams, so its draws are not a standard run's rescaled."""
    a, p = scenario.assumptions, cat.priors
    threshold = p.frontier_recovery_min_chips
    if scenario.training.recovery is None and threshold is not None:
        # the rule that chose the technique, listed (with its sources) beside the draws
        draws.get("priors.frontier_recovery_min_chips", None, threshold.value)
        since = p.frontier_recovery_from_year
        if scenario.training.start_year is not None and since is not None:
            draws.get("priors.frontier_recovery_from_year", None, since.value)
    write_name, restart_name = "assumptions.checkpoint_write_hours", "assumptions.restart_hours"
    write, restart = p.checkpoint_write_hours, p.restart_hours
    if recovery_technique(scenario, cat) == "frontier":
        assert p.frontier_checkpoint_write_hours is not None  # the resolver checks them
        assert p.frontier_restart_hours is not None
        write, restart = p.frontier_checkpoint_write_hours, p.frontier_restart_hours
        if a.checkpoint_write_hours is None:
            write_name = "priors.frontier_checkpoint_write_hours"
        if a.restart_hours is None:
            restart_name = "priors.frontier_restart_hours"
    return (
        draws.get(write_name, a.checkpoint_write_hours, write.value),
        draws.get(restart_name, a.restart_hours, restart.value),
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
    out["checkpoint_write_hours"], out["restart_hours"] = _draw_recovery_times(scenario, cat, draws)
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


def _draw_reoptimization(
    scenario: Scenario, cat: Catalog, draws: InputDraws, info: RunInfo, mfu: MfuInputs
) -> tuple[FloatArray | None, FloatArray | None]:
    """A prototype's architecture changes and re-optimisation hours per change, or
    ``(None, None)`` (recorded as 0 hours) for a production run or any fine-tune, whose
    architecture is its base model's. Re-optimising after a change is optimisation work, so
    the hours per change scale with the chip-hours at stake at the un-optimised MFU, as the
    optimisation hours do (:func:`_hours_at_stake`; none below the threshold)."""
    a, p, fit = scenario.assumptions, cat.priors, info.fit
    if scenario.training.stage != "prototype" or scenario.training.fine_tune is not None:
        draws.fixed("engineering.reoptimization_hours", 0.0)
        return None, None
    changes = draws.get(
        "assumptions.architecture_changes", a.architecture_changes, p.architecture_changes.value
    )
    per_change = draws.get(
        f"priors.reoptimization_hours_per_change.{fit}",
        None,
        p.reoptimization_hours_per_change[fit].value,
    )
    unoptimised = mfu.user_mfu
    if unoptimised is None:
        assert mfu.ceiling is not None
        assert mfu.start_fraction is not None
        unoptimised = mfu.ceiling * mfu.start_fraction
    return changes, _hours_at_stake(scenario, cat, draws, info, unoptimised, per_change)


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
    if scenario.training.fine_tune is not None and a.porting_hours is None:
        porting = porting * _fine_tune_porting_share(cat, draws)
    mfu, optimization = _draw_mfu(scenario, cat, draws, info)
    changes, per_change = _draw_reoptimization(scenario, cat, draws, info, mfu)
    engineers = draws.get("assumptions.engineers", a.engineers, p.engineers.value)
    week = draws.get("priors.engineer_hours_per_week", None, p.engineer_hours_per_week.value)
    # one rule of when a fleet exists (accelsim.scenario.fleet_in_service): a fleet that
    # already runs a background is in service from day 0, so the run waits for no lead time
    lead = (
        np.zeros(draws.runs)
        if fleet_in_service(scenario)
        else lead_time_days(cat, scenario.fleet[0], a.lead_time_days, draws)
    )
    reliability_inputs = _draw_reliability(scenario, cat, draws)
    badput = draws.get("assumptions.badput_fraction", a.badput_fraction, p.badput_fraction.value)
    startup = _draw_startup(scenario, cat, draws)
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
        startup_hours=startup,
        **reliability_inputs,  # type: ignore[arg-type]
    )


def _draw_startup(scenario: Scenario, cat: Catalog, draws: InputDraws) -> FloatArray | float:
    """The run's startup time: the user's, else ``priors.startup_hours``, else 0. [h]"""
    user, prior = scenario.assumptions.startup_hours, cat.priors.startup_hours
    if prior is not None:
        return draws.get("assumptions.startup_hours", user, prior.value)
    if user is None:
        return 0.0
    return draws.get("assumptions.startup_hours", user, user)


def _fine_tune_porting_share(cat: Catalog, draws: InputDraws) -> FloatArray | float:
    """``priors.fine_tune_porting_share`` drawn, or 1 in priors without it. [fraction]"""
    share = cat.priors.fine_tune_porting_share
    if share is None:
        return 1.0
    return draws.get("priors.fine_tune_porting_share", None, share.value)


def training_flops(work: TrainingRun, runs: int) -> FloatArray:
    """The run's training FLOPs (the user's, else the model's count), per run. [FLOP]

    A LoRA or QLoRA fine-tune computes no weight gradients for its frozen base: ``4 N + 2 T``
    FLOPs per token for ``N`` base and ``T`` adapter parameters, in place of 6 N (forward
    2 N, input gradients 2 N, weight gradients 2 N of which only the adapters' remain); the
    attention term, all activation work, stays whole.
    """
    if work.flops is not None:
        return constant(work.flops, runs)
    flops = perf.training_flops(
        work.params, work.tokens, layers=work.layers, seq_len=work.seq_len, d_model=work.d_model
    )
    if work.fine_tune in ("lora", "qlora"):
        flops = flops - 2.0 * (work.params - work.adapter_params) * work.tokens
    return constant(float(flops), runs)


__all__ = [
    "MfuInputs",
    "RunInfo",
    "TrainingInputs",
    "draw_training_inputs",
    "precision_mfu_factor",
    "recovery_technique",
    "run_info",
    "training_flops",
]
