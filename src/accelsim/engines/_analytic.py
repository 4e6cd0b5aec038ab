"""The analytic engine: every run of one training run on a dedicated fleet at once, in numpy.

Calendar phases, in order (DESIGN.md): capacity lead time (quota wait or procurement) and
porting run in parallel; then the queue wait (none on a dedicated fleet); then training
with failures and checkpoint/restart, sampled exactly by
:func:`accelsim.models.reliability.sample_completion_hours`, stretched by the badput that
is not hardware failure. The engine produces **usage** (phases, chip-hours, held hours,
kWh, engineering hours, interruptions); :mod:`accelsim.engines._pricing` prices it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from accelsim import catalog
from accelsim._typing import FloatArray, IntArray
from accelsim.catalog import Fit, Kind, Pricing, Priors, Stack
from accelsim.engines._inputs import InputDraws, constant
from accelsim.models import engineering, perf, reliability
from accelsim.scenario import Framework, Scenario, Stage, TrainingRun

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


def run_info(scenario: Scenario) -> RunInfo:
    """The fixed facts of a training scenario's first pool."""
    work = scenario.training
    pool = scenario.fleet[0]
    chip = catalog.chip(pool.chip)
    fit = catalog.priors().framework_fit.table[work.framework][chip.software_stack]
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


def _mfu(
    draws: InputDraws, scenario: Scenario, work: TrainingRun, priors: Priors, info: RunInfo
) -> tuple[FloatArray, FloatArray]:
    """(MFU of the run at its scale, optimisation hours invested) per run."""
    a = scenario.assumptions
    chip = catalog.chip(info.chip)
    if a.mfu is not None:
        # The user's MFU is the run's own, at its own scale: used as is, and it replaces the
        # learning curve, so optimisation hours count only if the user states them too.
        mfu = draws.get("assumptions.mfu", a.mfu, a.mfu)
        hours = (
            draws.get("assumptions.optimization_hours", a.optimization_hours, 0.0)
            if a.optimization_hours is not None
            else draws.fixed("assumptions.optimization_hours", 0.0)
        )
        return mfu, hours
    by_chip = priors.mfu_ceiling_by_chip.get(info.chip)
    if work.total_params is not None and priors.mfu_ceiling_moe is not None:
        # A mixture of experts: routing, all-to-all and small expert matmuls keep its MFU
        # (on active parameters) well below a dense model's. On every chip kind: keeping a
        # dense ceiling for chips without published MoE figures would favour them unfairly.
        ceiling = draws.get("priors.mfu_ceiling_moe", None, priors.mfu_ceiling_moe.value)
    elif by_chip is not None:
        ceiling = draws.get(f"priors.mfu_ceiling_by_chip.{info.chip}", None, by_chip.value)
    else:
        ceiling = draws.get(
            f"priors.mfu_ceiling.{info.kind}", None, priors.mfu_ceiling[info.kind].value
        )
    start = draws.get(
        f"priors.start_fraction.{info.fit}", None, priors.start_fraction[info.fit].value
    )
    scale = draws.get(
        f"priors.optimization_hours_scale.{info.fit}",
        None,
        priors.optimization_hours_scale[info.fit].value,
    )
    hours = draws.get(
        "assumptions.optimization_hours", a.optimization_hours, priors.optimization_hours.value
    )
    mfu_local = engineering.mfu_after_optimization(ceiling, start, hours, scale)
    batch = draws.get(
        "workload.global_batch_tokens", work.global_batch_tokens, priors.global_batch_tokens.value
    )
    # The ceiling holds at the reference scale of the published runs behind it. A larger
    # run loses what the scaling model says it loses relative to that scale; a smaller one
    # keeps the ceiling (running smaller does not lift a code above its ceiling). The run
    # keeps the model-parallel group its training state needs (ZeRO-3 over the fewest
    # chips that hold it, every expert included), at its own global batch. For a mixture of
    # experts the per-step traffic is modelled on the active parameters: its all-to-all and
    # per-expert gradient reduction are not modelled apart; the MoE ceiling carries their
    # cost at the reference scale.
    chips_ref = draws.get("priors.mfu_reference_chips", None, priors.mfu_reference_chips.value)
    model_parallel = perf.min_chips_to_fit(
        work.state_params, chip.hbm_gib, sharding="zero3", usable_fraction=_USABLE_HBM_FRACTION
    )
    scaling: dict[str, Any] = {
        "params": work.params,
        "global_batch_tokens": batch,
        "peak_tflops": chip.peak_tflops(work.precision),
        "mfu_local": mfu_local,
        "scale_up_domain_chips": chip.scale_up_domain_chips,
        "scale_up_gbps": chip.interconnect_gbps,
        "scale_out_gbps": chip.scale_out_gbps,
        "overlap": catalog.scaling_defaults().overlap,
    }
    at_run = perf.scaling_efficiency(
        info.chips, model_parallel_chips=np.minimum(model_parallel, info.chips), **scaling
    )
    at_ref = perf.scaling_efficiency(
        chips_ref, model_parallel_chips=np.minimum(model_parallel, chips_ref), **scaling
    )
    mfu = mfu_local * np.minimum(1.0, at_run / at_ref)
    return np.asarray(mfu, dtype=float), hours


# Bytes of one array allocated and freed before the first pass (see _prime_heap): more than
# a pass's transient arrays need (~4 MiB at 16,384 runs), and at most glibc's 32 MiB ceiling
# for the adjustment below.
_HEAP_PRIMER_BYTES = 8 << 20
_heap_primed = False


def _prime_heap() -> None:
    """Once per process, allocate and free one ``_HEAP_PRIMER_BYTES`` array.

    glibc's malloc serves blocks above its mmap threshold (128 KiB at start) by ``mmap`` and
    returns freed memory at the top of its heap to the OS once it exceeds twice that
    threshold; freeing an mmapped block raises the threshold to the block's size (mallopt(3),
    "dynamic mmap threshold"). A pass over a 4-block chunk frees a few MiB of temporaries at
    the top of the heap, so without this every study gave them back and faulted them in again
    the next time -- ~900 page faults a study of 16,384 runs when an earlier result is still
    held, at ~3-4 us a page on a VM: ~0.2 us a run, a quarter of the pass
    (benchmarks/bench_analytic.py). Freeing one large block moves the threshold once, as any
    numpy program's first large free does. Other allocators simply allocate and free it.
    """
    global _heap_primed
    if not _heap_primed:
        _heap_primed = True
        np.empty(_HEAP_PRIMER_BYTES // 8)  # never touched: costs no page


CompletionSampler = Callable[..., tuple[FloatArray, IntArray]]
"""``(rng, work, interval, write, restart, rate) -> (hours, interruptions)`` per run."""


def _per_block_completion(
    completion: CompletionSampler, draws: InputDraws, *params: FloatArray
) -> tuple[FloatArray, IntArray]:
    """``completion`` on each block's runs with the block's own ``"failures"`` stream."""
    pieces = draws.block_rngs("failures")
    if len(pieces) == 1:
        return completion(pieces[0][1], *params)
    hours = np.empty(draws.runs)
    count = np.empty(draws.runs, dtype=np.int64)
    for runs, rng in pieces:
        hours[runs], count[runs] = completion(rng, *(p[runs] for p in params))
    return hours, count


def simulate_training(
    scenario: Scenario,
    root: np.random.SeedSequence,
    start: int,
    stop: int,
    completion: CompletionSampler = reliability.sample_completion_hours,
) -> tuple[dict[str, FloatArray], InputDraws]:
    """Usage of the runs ``[start, stop)`` of a training scenario, in one vectorised pass.

    The runs may span several blocks (:data:`accelsim.engines._inputs.BLOCK_RUNS`), whole
    ones but for the study's last: each input takes these runs' values of its own stream and
    failures are sampled per block from the block's own stream, so the result does not
    depend on how runs are grouped.
    Returns the usage arrays by name and the input draws (which pricing reads too).
    ``completion`` samples the failure-laden training time of one block's runs; the DES
    engine passes an event-by-event simulation of the same model (one block at a time),
    which is how the two engines are held to agree.
    """
    _prime_heap()
    work = scenario.training
    pool = scenario.fleet[0]
    chip = catalog.chip(pool.chip)
    priors = catalog.priors()
    info = run_info(scenario)
    a = scenario.assumptions
    draws = InputDraws(root=root, start=start, stop=stop)
    chips = float(pool.count)

    # Engineering: porting before the first step; optimisation; prototype re-optimisation.
    porting_h = draws.get(
        f"assumptions.porting_hours.{info.fit}",
        a.porting_hours,
        priors.porting_hours[info.fit].value,
    )
    mfu, optimization_h = _mfu(draws, scenario, work, priors, info)
    if work.stage == "prototype":
        changes = draws.get(
            "assumptions.architecture_changes",
            a.architecture_changes,
            priors.architecture_changes.value,
        )
        per_change = draws.get(
            f"priors.reoptimization_hours_per_change.{info.fit}",
            None,
            priors.reoptimization_hours_per_change[info.fit].value,
        )
        reopt_h = engineering.reoptimization_hours(changes, per_change)
    else:
        reopt_h = draws.fixed("engineering.reoptimization_hours", 0.0)
    engineers = draws.get("assumptions.engineers", a.engineers, priors.engineers.value)
    week_h = draws.get("priors.engineer_hours_per_week", None, priors.engineer_hours_per_week.value)
    engineering_h = porting_h + optimization_h + reopt_h
    porting_days = engineering.calendar_days(porting_h, engineers, week_h)
    engineering_days = engineering.calendar_days(engineering_h, engineers, week_h)

    # Calendar before the first step: capacity wait and porting overlap; no queue on a
    # dedicated fleet.
    lead_days = draws.get(
        f"assumptions.lead_time_days.{pool.pricing}",
        a.lead_time_days,
        priors.lead_time_days[pool.pricing].value,
    )
    queue_days = constant(0.0, draws.runs)
    before_days = np.maximum(lead_days, porting_days) + queue_days

    # Compute: FLOPs at delivered throughput, failure-free.
    if work.flops is not None:
        flops = constant(work.flops, draws.runs)
    else:
        flops = constant(
            float(
                perf.training_flops(
                    work.params,
                    work.tokens,
                    layers=work.layers,
                    seq_len=work.seq_len,
                    d_model=work.d_model,
                )
            ),
            draws.runs,
        )
    peak = chip.peak_tflops(work.precision)
    compute_h = perf.compute_hours(flops, chips, peak, mfu)

    # Failures and checkpoint/restart, then badput that is not hardware failure.
    fail = draws.get(
        "assumptions.failure_rate_per_chip_hour",
        a.failure_rate_per_chip_hour,
        priors.failure_rate_per_chip_hour.value,
    )
    if pool.pricing == "spot":
        offer = (
            None
            if pool.provider is None
            else catalog.price(pool.chip, provider=pool.provider, pricing=pool.pricing)
        )
        spot_prior = (
            offer.preemptions_per_chip_hour
            if offer is not None and offer.preemptions_per_chip_hour is not None
            else priors.spot_preemptions_per_chip_hour.value
        )
        preempt = draws.get(
            "assumptions.spot_preemptions_per_hour", a.spot_preemptions_per_hour, spot_prior
        )
    else:
        preempt = draws.fixed("assumptions.spot_preemptions_per_hour", 0.0)
    rate = reliability.interruption_rate_per_hour(chips, fail, preempt)
    write_h = draws.get(
        "assumptions.checkpoint_write_hours",
        a.checkpoint_write_hours,
        priors.checkpoint_write_hours.value,
    )
    restart_h = draws.get("assumptions.restart_hours", a.restart_hours, priors.restart_hours.value)
    if a.checkpoint_interval_hours is not None:
        interval_h = draws.get(
            "assumptions.checkpoint_interval_hours",
            a.checkpoint_interval_hours,
            a.checkpoint_interval_hours,
        )
    else:
        # Daly's optimum; with no interruptions at all, one segment (a final save only).
        failing = rate > 0
        mtbf_h = 1.0 / np.where(failing, rate, 1.0)
        daly_h = reliability.daly_interval_hours(write_h, mtbf_h)
        interval_h = np.where(failing, daly_h, np.inf)
    completion_h, interruptions = _per_block_completion(
        completion, draws, compute_h, interval_h, write_h, restart_h, rate
    )
    badput = draws.get(
        "assumptions.badput_fraction", a.badput_fraction, priors.badput_fraction.value
    )
    training_h = np.asarray(completion_h, dtype=float) / (1.0 - badput)

    training_days = training_h / _HOURS_PER_DAY
    compute_days = compute_h / _HOURS_PER_DAY
    # Chips are held from delivery (end of the lead time) to the last step.
    held_h = (before_days - lead_days) * _HOURS_PER_DAY + training_h
    usage: dict[str, FloatArray] = {
        "time_to_train_days": before_days + training_days,
        "training_days": training_days,
        "compute_days": compute_days,
        "failure_overhead_days": training_days - compute_days,
        "wait_days": lead_days + queue_days,
        "lead_time_days": lead_days,
        "porting_days": porting_days,
        "engineering_days": engineering_days,
        "engineering_hours": engineering_h,
        "chip_hours": chips * training_h,
        "held_hours": held_h,
        "interruptions": np.asarray(interruptions, dtype=float),
        "mfu": mfu,
        "goodput": compute_h / training_h,
        "checkpoint_interval_hours": interval_h,
        "training_flops": flops,
    }
    return usage, draws


__all__ = ["RunInfo", "run_info", "simulate_training"]
