"""The analytic engine: every run of one training run on a dedicated fleet at once, in numpy.

It reads as DESIGN.md's flow. First every uncertain input of the chunk is drawn once, into
one table (:func:`~accelsim.engines.training._inputs.draw_training_inputs`, a
:class:`~accelsim.engines.training._inputs.TrainingInputs`); then a pipeline of pure
:mod:`accelsim.models` calls turns the table into usage -- perf (:func:`run_mfu`, the
failure-free compute), engineering (:func:`engineering_phases`), reliability
(:func:`training_hours`), per phase of a run that changes size, joined by
:func:`accelsim.engines.training._phases.join_phases` -- and :func:`simulate_training` assembles the
**usage** (phases, chip-hours, held hours, interruptions); :mod:`accelsim.engines._pricing`
prices it.

Calendar phases, in order: capacity lead time (quota wait or procurement) in parallel with
porting then optimisation; then the queue wait (none on a dedicated fleet); then training
with failures and checkpoint/restart, sampled exactly by
:func:`accelsim.models.reliability.sample_completion_hours`, stretched by the badput that is
not hardware failure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from accelsim._typing import FloatArray, IntArray
from accelsim.catalog import Catalog, Chip
from accelsim.engines._inputs import InputDraws, InputPlan, as_plan, constant
from accelsim.engines.training._convergence import token_factor
from accelsim.engines.training._inputs import (
    TrainingInputs,
    draw_training_inputs,
    run_info,
    training_flops,
)
from accelsim.engines.training._phases import PhaseRun, join_phases
from accelsim.engines.training._recovery import RecoveryInputs, draw_recovery_inputs, recover
from accelsim.models import engineering, instability, perf, reliability
from accelsim.scenario import Scenario, TrainingPhase, TrainingRun
from accelsim.seeding import child

_HOURS_PER_DAY = 24.0
# Share of HBM that training state may fill; the rest holds activations and buffers. A
# convention for the model-parallel group size, not a measured figure.
_USABLE_HBM_FRACTION = 0.9


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
    Layers are the scenario's, else N / (12 d²), else from the depth-to-width prior; the
    width is the scenario's, else √(N / (12 L)). ``tensor_chips``, ``layers`` and
    ``d_model`` feed the tensor-parallel term of :func:`accelsim.models.perf.mfu_at_scale`.
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
    layers = max(layers, 1.0)
    width = (
        float(work.d_model) if work.d_model is not None else (work.params / (12.0 * layers)) ** 0.5
    )
    return {
        "pipeline_chips": stages,
        "micro_batch_tokens": s.micro_batch_sequences * seq,
        "virtual_stages": virtual,
        "tensor_chips": tensor,
        "layers": layers,
        "d_model": width,
    }


def run_mfu(
    inputs: TrainingInputs, work: TrainingRun, chip: Chip, chips: int, cat: Catalog
) -> FloatArray:
    """MFU of the run at its own scale, per run. [fraction]

    The learning curve (:func:`accelsim.models.engineering.mfu_after_optimization`) gives
    the MFU the team reaches in the reference configuration of the published runs behind
    the ceiling; :func:`accelsim.models.perf.mfu_at_scale` (validated against MLPerf
    scaling series) carries it up or down to the run's chips. The reference configuration
    is the run's own model at the scale published runs of its size had
    (``mfu_reference_chips`` x params / ``mfu_reference_params``) with the batch the prior
    gives there; the run keeps the model-parallel group its training state needs (ZeRO-3
    over the fewest chips that hold it, every expert included), at its own batch (the
    scenario's, else the prior, which grows with the chips up to the compute-optimal
    batch), with the pipeline bubble of :func:`pipeline_layout`. The reference is never
    less efficient than ``scaling.yaml`` ``reference_efficiency``, which bounds small
    runs. For a mixture of experts the per-step traffic is modelled on the active
    parameters; the MoE ceiling carries its all-to-all cost.
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
    s = cat.scaling
    ceiling_tokens = perf.critical_batch_tokens(
        training_flops(work, 1)[0],
        coefficient=s.critical_batch_coefficient,
        exponent=s.critical_batch_exponent,
    )
    batch = perf.BatchPrior(
        base_tokens=m.global_batch_tokens,
        tokens_per_chip=m.tokens_per_chip,
        ceiling_tokens=ceiling_tokens,
        fixed_tokens=m.global_batch_tokens if m.batch_fixed else None,
        reference_efficiency=s.reference_efficiency,
    )
    return perf.mfu_at_scale(
        mfu_ref,
        float(chips),
        params=work.params,
        chips_ref=m.reference_chips,
        params_ref=work.params if m.reference_params is None else m.reference_params,
        model_parallel_chips=model_parallel,
        batch=batch,
        layout=lambda group: pipeline_layout(work, chip, group, cat),
        network={
            "peak_tflops": chip.peak_tflops(work.precision),
            "scale_up_domain_chips": chip.scale_up_domain_chips,
            "scale_up_gbps": chip.interconnect_gbps,
            "scale_out_gbps": chip.scale_out_gbps,
            "overlap": s.overlap,
        },
        tensor=perf.TensorTraffic(
            collectives_per_layer=s.tensor_parallel_collectives_per_layer,
            overlap=s.tensor_parallel_overlap,
            bytes_per_activation=s.activation_bytes,
        ),
    )


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
    completion: CompletionSampler, draws: InputDraws, *params: FloatArray, stream: str = ""
) -> tuple[FloatArray, FloatArray | IntArray]:
    """``completion`` on each block's runs with the block's own ``"failures"`` stream
    (``"failures" + stream``: a later phase of a run has its own)."""
    pieces = draws.block_rngs("failures" + stream)
    if len(pieces) == 1:
        return completion(pieces[0][1], *params)
    hours = np.empty(draws.runs)
    count = np.empty(draws.runs)
    for runs, rng in pieces:
        hours[runs], count[runs] = completion(rng, *(p[runs] for p in params))
    return hours, count


def _interval(inputs: TrainingInputs, rate: FloatArray) -> FloatArray:
    """The user's checkpoint interval, else Daly's optimum for ``rate`` (``inf``, one
    segment, where nothing interrupts the run). [h]"""
    if inputs.checkpoint_interval_hours is not None:
        return inputs.checkpoint_interval_hours
    failing = rate > 0
    with np.errstate(over="ignore"):  # a subnormal rate: an infinite MTBF, no checkpoint
        daly = reliability.daly_interval_hours(
            inputs.checkpoint_write_hours, 1.0 / np.where(failing, rate, 1.0)
        )
    return np.where(failing, daly, np.inf)


def _interruption_rates(
    inputs: TrainingInputs, chips: int, rec: RecoveryInputs
) -> tuple[FloatArray, FloatArray]:
    """Hardware failures and spot preemptions interrupting the run, per run. [1/h]

    Preemptions are per VM or TPU host, bursts counted once; none where the run falls back
    to on-demand before the first one (it never runs on spot).
    """
    preemptions = reliability.preemption_events_per_hour(
        float(chips),
        inputs.spot_unit_chips,
        inputs.preemptions_per_chip_hour,
        inputs.spot_correlated_share,
    )
    if rec.after_preemptions == 0:  # falls back before the first preemption: never on spot
        preemptions = np.zeros_like(preemptions)
    failures = reliability.interruption_rate_per_hour(
        float(chips), inputs.failure_rate_per_chip_hour
    )
    return failures, preemptions


def _billed_shares(
    r: dict[str, FloatArray],
    rate: FloatArray,
    badput: FloatArray,
    running: FloatArray,
    lost: FloatArray,
    total: FloatArray,
    finished: FloatArray,
    horizon_hours: float,
) -> dict[str, FloatArray]:
    """Shares of the calendar billed at the pool's own price and at on-demand, and the
    recovery wait inside the horizon. [fraction], [h]

    ``r`` is :func:`accelsim.engines.training._recovery.recover`'s output, ``rate`` the interruption
    rate [1/h], ``running`` the hours training (rented plus on-demand) [h], ``lost`` the
    rollback hours [h], ``total`` the uncensored training time [h] and ``finished`` 1 or 0.
    Rollbacks are billed like the running time around them.
    """
    # the share of the calendar not spent waiting: the run's own, else (a time beyond
    # float64) the long-run share, calendar rate over running rate
    on_rate = rate * (1.0 - badput)
    expected = np.divide(r["calendar_rate"], on_rate, out=np.ones_like(on_rate), where=on_rate > 0)
    whole = np.isfinite(total) & (total > 0)
    billed = np.divide(running + lost, total, out=expected.copy(), where=whole)
    rented = np.divide(
        r["rented_hours"],
        running,
        out=np.isinf(r["rented_hours"]).astype(float),
        where=np.isfinite(running) & (running > 0),
    )
    rented = np.where(running > 0, rented, r["on_demand_hours"] <= 0)
    wait_share = np.divide(r["wait_hours"], total, out=1.0 - expected, where=whole)
    return {
        "rented_share": rented * billed,
        "on_demand_share": (1.0 - rented) * billed,
        "recovery_wait_hours": np.where(finished > 0, r["wait_hours"], wait_share * horizon_hours),
    }


def training_hours(
    inputs: TrainingInputs,
    compute_hours: FloatArray,
    chips: int,
    draws: InputDraws,
    completion: CompletionSampler,
    horizon_hours: float = np.inf,
    stream: str = "",
    recovery: RecoveryInputs | None = None,
    startup_hours: FloatArray | float = 0.0,
) -> dict[str, FloatArray]:
    """Training time with failures, checkpoint/restart, recovery waits and badput, per run. [h]

    Interruptions arrive at :func:`~accelsim.models.reliability.interruption_rate_per_hour`
    (failures) plus :func:`~accelsim.models.reliability.preemption_events_per_hour` (spot
    preemptions per VM or TPU host, bursts counted once); the checkpoint interval
    is the user's, else Daly's optimum (one segment, a final save only, with no
    interruptions at all); ``completion`` samples each block's runs from its own stream.
    ``recovery`` adds the waits for spot capacity or repaired hosts and a fallback to
    on-demand (:func:`accelsim.engines.training._recovery.recover`; ``None``: none of them).
    A run longer than ``horizon_hours`` is censored there (:func:`censor_at_horizon`).
    ``stream`` suffixes the names of the random streams (failures, rollbacks): each phase of
    a run that changes size draws from its own (the first phase, ``""``, from the run's).
    ``startup_hours`` (launch to first step, the run's first phase only) adds to the time
    and is billed as training; nothing fails during it that the restart prior does not
    already carry.
    """
    rec = RecoveryInputs() if recovery is None else recovery
    failures, preemptions = _interruption_rates(inputs, chips, rec)
    rate = failures + preemptions
    write = inputs.checkpoint_write_hours
    interval = _interval(inputs, rate)
    hours, interruptions = _per_block_completion(
        completion,
        draws,
        compute_hours,
        interval,
        write,
        inputs.restart_hours,
        rate,
        stream=stream,
    )
    badput = inputs.badput_fraction
    r = recover(
        rec,
        draws,
        stream,
        running_hours=np.asarray(hours, dtype=float),
        interruptions=np.asarray(interruptions, dtype=float),
        badput=badput,
        work_hours=compute_hours,
        interval_hours=interval,
        write_hours=write,
        restart_hours=inputs.restart_hours,
        failure_rate=failures,
        preemption_rate=preemptions,
        fallback_interval_hours=_interval(inputs, failures) if rec.falls_back else interval,
    )
    hours = r["hours"]
    running = r["rented_hours"] + r["on_demand_hours"]  # rollbacks happen while training
    lost = _instability_hours(inputs, np.minimum(running, horizon_hours), draws, stream)
    startup = np.broadcast_to(np.asarray(startup_hours, dtype=float), lost.shape)
    total = hours + lost + startup
    out = censor_at_horizon(total, r["interruptions"], r["calendar_rate"], horizon_hours)
    # a censored run: the horizon's share of rollbacks, as in its uncensored time
    share = np.divide(lost, total, out=np.zeros_like(lost), where=lost > 0)
    out["instability_hours"] = np.where(out["finished"] > 0, lost, share * horizon_hours)
    out["checkpoint_interval_hours"] = interval  # inf: one segment, a final save only
    out["rate_per_hour"] = rate
    out["calendar_rate_per_hour"] = r["calendar_rate"]
    out.update(
        _billed_shares(
            r, rate, badput, running, lost + startup, total, out["finished"], horizon_hours
        )
    )
    out["spare_chips"] = np.full_like(total, rec.spare_chips)
    return out


def _instability_hours(
    inputs: TrainingInputs, hours: FloatArray, draws: InputDraws, stream: str = ""
) -> FloatArray:
    """Hours lost to loss-spike and divergence rollbacks over ``hours`` of training
    (:func:`accelsim.models.instability.rollback_days`). [h]

    Every run takes its count from its own uniform of the input stream
    ``instability.events`` and its events' costs from uniforms addressed by its run index
    (:func:`accelsim.models.instability.event_uniforms`), not from a per-block generator:
    the DES training path runs chunks smaller than a block, and a run's loss must not
    depend on the chunk it falls in (bit-identical results whatever the chunking).
    """
    rate = np.broadcast_to(np.asarray(inputs.instability_events_per_day, float), hours.shape)
    if not np.any(rate > 0):
        return np.zeros_like(hours)
    median, sigma = instability.lognormal_params(*inputs.instability_event_days)
    days = hours / _HOURS_PER_DAY
    counts = instability.event_counts(draws.uniforms("instability.events" + stream), days, rate)
    events = instability.event_uniforms(
        child(draws.root, "instability.event" + stream), draws.start, counts
    )
    many = counts.max(initial=0.0) > instability.EXACT_EVENTS_MAX
    tail = draws.uniforms("instability.tail" + stream) if many else 0.5
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


def _phase_run(
    inputs: TrainingInputs,
    index: int,
    phase: TrainingPhase,
    chip: Chip,
    cat: Catalog,
    work: TrainingRun,
    flops: FloatArray,
    draws: InputDraws,
    completion: CompletionSampler,
    horizon_hours: float,
    rec: RecoveryInputs,
) -> tuple[PhaseRun, FloatArray]:
    """Phase ``index`` of the run and its training FLOPs [FLOP]: perf (its MFU [fraction]
    and failure-free compute [h] for its share of ``flops`` [FLOP], at its own global batch if
    it sets one; a run to a target loss needs more tokens at a larger batch,
    :func:`accelsim.engines.training._convergence.token_factor`), then reliability
    (:func:`training_hours`, from the phase's own random streams: the first phase's are the
    run's, phase ``i``'s are suffixed ``.phase<i>``). The first phase pays the run's startup.
    """
    phase_inputs = inputs
    if phase.global_batch_tokens is not None:
        batch = constant(phase.global_batch_tokens, draws.runs)
        phase_inputs = replace(
            inputs, mfu=replace(inputs.mfu, global_batch_tokens=batch, batch_fixed=True)
        )
    mfu_i = run_mfu(phase_inputs, work, chip, phase.chips, cat)
    flops_i = flops * phase.token_share * token_factor(phase_inputs, work, chip, phase.chips, cat)
    compute_i = perf.compute_hours(
        flops_i, float(phase.chips), chip.peak_tflops(work.precision), mfu_i
    )
    stream = "" if index == 0 else f".phase{index}"
    startup = inputs.startup_hours if index == 0 else 0.0
    reliable_i = training_hours(
        inputs, compute_i, phase.chips, draws, completion, horizon_hours, stream, rec, startup
    )
    return PhaseRun(phase.chips, mfu_i, compute_i, reliable_i), flops_i


def _training_usage(
    inputs: TrainingInputs,
    run: PhaseRun,
    eng: dict[str, FloatArray],
    flops: FloatArray,
    runs: int,
) -> dict[str, FloatArray]:
    """The usage of the joined run: calendar phases [days], engineering [h, days],
    chip-hours and held hours [h], interruptions, MFU and goodput [fraction], per run.

    ``eng`` is :func:`engineering_phases`'s output, ``flops`` the training FLOPs [FLOP].
    """
    mfu, compute_h, reliable = run.mfu, run.compute_hours, run.reliable
    # usage: capacity wait and porting overlap; no queue on a dedicated fleet
    lead_days = inputs.lead_time_days
    queue_days = constant(0.0, runs)
    before_days = np.maximum(lead_days, eng["preparation_days"]) + queue_days
    training_h = reliable["training_hours"]
    finished = reliable["finished"] > 0
    goodput = np.where(finished, compute_h / training_h, reliable["goodput_unfinished"])
    # a run cut at the horizon did the compute of its goodput share of the days it trained,
    # so compute and failure overhead add up to training_days in every run
    training_days = training_h / _HOURS_PER_DAY
    compute_days = np.where(finished, compute_h, training_h * goodput) / _HOURS_PER_DAY
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
        "chip_hours": reliable["chip_hours"],
        # waits for spot capacity to return or for a repaired host: inside training_days
        "recovery_wait_days": reliable["recovery_wait_hours"] / _HOURS_PER_DAY,
        # chips are held from delivery (end of the lead time) to the last step
        "held_hours": (before_days - lead_days) * _HOURS_PER_DAY + training_h,
        "interruptions": reliable["interruptions"],
        "mfu": mfu,
        "goodput": goodput,
        "finished": reliable["finished"],
        # no checkpoint before the end (an infinite interval): the whole work is one segment
        "checkpoint_interval_hours": reliable["checkpoint_interval_hours"],
        "training_flops": flops,
    }
    return usage


def simulate_training(
    scenario: Scenario,
    cat: Catalog,
    plan: InputPlan | np.random.SeedSequence,
    start: int,
    stop: int,
    completion: CompletionSampler = reliability.sample_completion_hours,
    *,
    per_run_streams: bool = False,
) -> tuple[dict[str, FloatArray], InputDraws]:
    """Usage of the runs ``[start, stop)`` of a training scenario, in one vectorised pass.

    ``cat`` is the study's catalog and ``plan`` how it draws (a bare seed: plain Monte
    Carlo). The runs may span several blocks (:data:`accelsim.engines._inputs.BLOCK_RUNS`),
    whole ones but for the study's last: each input takes these runs' values of its own
    stream and failures are sampled per block from the block's own stream, so the result
    does not depend on how runs are grouped. Returns the usage arrays by name and the input
    draws (which pricing reads too). ``completion`` samples the failure-laden training time
    of one block's runs; the DES engine passes an event-by-event simulation of the same
    model (one block at a time), which is how the two engines are held to agree. Both then
    add the same recovery waits and fallback (:mod:`accelsim.engines.training._recovery`);
    ``per_run_streams`` draws a fallback's on-demand remainder per run (the DES's chunks
    need not be whole blocks).
    """
    work, pool = scenario.training, scenario.fleet[0]
    chip, info = cat.chip(pool.chip), run_info(scenario, cat)
    draws = as_plan(plan).draws(start, stop)
    inputs = draw_training_inputs(scenario, cat, draws, info)
    rec = draw_recovery_inputs(scenario, cat, draws, per_run_streams=per_run_streams)
    # perf -> engineering -> reliability, per phase of the run (one unless it changes size)
    flops = training_flops(work, draws.runs)
    horizon_h = work.horizon_days * _HOURS_PER_DAY
    phases = work.phases or [TrainingPhase(chips=pool.count, token_share=1.0)]
    runs, phase_flops = zip(
        *(
            _phase_run(inputs, i, phase, chip, cat, work, flops, draws, completion, horizon_h, rec)
            for i, phase in enumerate(phases)
        ),
        strict=True,
    )
    run = join_phases(inputs, list(runs), horizon_h)
    if work.target == "loss":  # the FLOPs of the tokens its batch needs
        flops = np.sum(phase_flops, axis=0)
    usage = _training_usage(inputs, run, engineering_phases(inputs), flops, draws.runs)
    if rec.falls_back:  # after a fallback: days and chip-hours on on-demand capacity
        usage["fallback_days"] = run.reliable["fallback_hours"] / _HOURS_PER_DAY
        usage["fallback_chip_hours"] = run.reliable["fallback_chip_hours"]
    return usage, draws


__all__ = [
    "engineering_phases",
    "pipeline_layout",
    "run_mfu",
    "simulate_training",
    "training_hours",
]
