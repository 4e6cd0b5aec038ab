"""A training run that changes size: its phases, one after the other, joined into one run.

Each phase is trained by :func:`accelsim.engines.training._analytic.training_hours`;
:func:`join_phases` sums their time, chip-hours, interruptions and waits inside the horizon.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from accelsim._typing import FloatArray
from accelsim.engines.training._inputs import TrainingInputs
from accelsim.models import reliability


def _expected_goodput(
    inputs: TrainingInputs, compute_hours: FloatArray, reliable: dict[str, FloatArray]
) -> FloatArray:
    """Per run, its goodput: the realised ``W / T`` where it finished, else (censored before it
    ended) the expected ``W / E[T]`` with badput and waits. [fraction]

    The expected goodput is computed for the unfinished runs only (none, in most studies).
    """
    hours = reliable["training_hours"]
    goodput = compute_hours / np.where(hours > 0, hours, 1.0)
    at = np.flatnonzero(reliable["finished"] <= 0)
    if at.size == 0:
        return goodput

    def unfinished(x: FloatArray) -> FloatArray:
        return np.broadcast_to(x, hours.shape)[at]

    badput = unfinished(inputs.badput_fraction)
    rate = unfinished(reliable["rate_per_hour"])
    expected = reliability.goodput_fraction(
        unfinished(compute_hours),
        unfinished(reliable["checkpoint_interval_hours"]),
        unfinished(inputs.checkpoint_write_hours),
        unfinished(inputs.restart_hours),
        rate,
    )
    running = rate * (1.0 - badput)
    # waits for capacity or repairs take their share of the calendar
    calendar = unfinished(reliable["calendar_rate_per_hour"])
    waiting = np.divide(calendar, running, out=np.ones_like(running), where=running > 0)
    goodput[at] = np.nan_to_num(expected, nan=0.0) * (1.0 - badput) * waiting
    return goodput


@dataclass(frozen=True)
class PhaseRun:
    """One phase of a run: its chips, MFU, failure-free compute [h] and training time."""

    chips: int
    mfu: FloatArray
    compute_hours: FloatArray
    reliable: dict[str, FloatArray]


def _joined_rates(
    phases: list[PhaseRun],
    goodputs: list[FloatArray],
    useful: FloatArray,
    training_h: FloatArray,
    flop_weight: FloatArray,
    chip_compute: FloatArray,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """MFU [fraction], goodput of an unfinished run [fraction] and checkpoint interval [h]
    of the phases joined.

    One phase keeps its own MFU, goodput (``goodputs``' one, :func:`_expected_goodput`: the
    expected one where it did not finish) and interval (capped at its compute).
    Several: the MFU weighted by failure-free chip-hours (``flop_weight`` over
    ``chip_compute`` [chip-h]), ``useful`` hours [h] over the ``training_h`` inside the
    horizon [h], and the interval of the phase with the most compute.
    """
    if len(phases) == 1:
        (ph,) = phases
        mfu, unfinished_goodput = ph.mfu, goodputs[0]
        interval = np.minimum(ph.reliable["checkpoint_interval_hours"], ph.compute_hours)
        return mfu, unfinished_goodput, interval
    unfinished_goodput = np.divide(
        useful, training_h, out=np.zeros_like(useful), where=training_h > 0
    )
    longest = np.argmax(np.stack([ph.compute_hours for ph in phases]), axis=0)
    intervals = np.stack(
        [np.minimum(ph.reliable["checkpoint_interval_hours"], ph.compute_hours) for ph in phases]
    )
    interval = np.take_along_axis(intervals, longest[None, :], axis=0)[0]
    return flop_weight / chip_compute, unfinished_goodput, interval


def join_phases(inputs: TrainingInputs, phases: list[PhaseRun], horizon_hours: float) -> PhaseRun:
    """The run's training from its phases, one after the other; the horizon is the total's.

    A phase starts when the previous one ends; the part of each phase inside the horizon
    counts (its interruptions and rollbacks pro rata to the time inside, at the phase's rate,
    as :func:`accelsim.engines.training._analytic.censor_at_horizon` does). ``chip_hours`` sums
    chips x hours of the phases; ``mfu`` is weighted by the failure-free chip-hours; the
    checkpoint interval reported is that of the phase with the most compute. One phase comes
    back as it is.
    """
    zeros = np.zeros_like(phases[0].compute_hours)
    begun = zeros
    finished = np.ones_like(zeros, dtype=bool)
    compute_h, training_h, interruptions, lost = zeros, zeros, zeros, zeros
    chip_hours, useful = zeros, zeros
    on_demand_ch, on_demand_h, waits = zeros, zeros, zeros
    chip_compute, flop_weight = zeros, zeros
    goodputs = [_expected_goodput(inputs, ph.compute_hours, ph.reliable) for ph in phases]
    for ph, rate_done in zip(phases, goodputs, strict=True):
        r = ph.reliable
        hours = r["training_hours"]
        inside = np.clip(horizon_hours - begun, 0.0, hours)  # this phase's hours in horizon
        whole = inside >= hours
        begun = begun + hours
        done = r["finished"] > 0
        finished = finished & done
        compute_h = compute_h + ph.compute_hours
        training_h = training_h + inside
        rate = r["calendar_rate_per_hour"]
        interruptions = interruptions + np.where(whole, r["interruptions"], rate * inside)
        per_hour = np.divide(
            r["instability_hours"], hours, out=np.zeros_like(hours), where=hours > 0
        )
        lost = lost + np.where(whole, r["instability_hours"], per_hour * inside)
        used = ph.chips * (r["rented_share"] + r["on_demand_share"]) + r["spare_chips"]
        chip_hours = chip_hours + used * inside
        on_demand_ch = on_demand_ch + ph.chips * r["on_demand_share"] * inside
        per_wait = np.divide(
            r["recovery_wait_hours"], hours, out=np.zeros_like(hours), where=hours > 0
        )
        waits = waits + np.where(whole, r["recovery_wait_hours"], per_wait * inside)
        on_demand_h = on_demand_h + r["on_demand_share"] * inside
        useful = useful + np.where(whole & done, ph.compute_hours, rate_done * inside)
        chip_compute = chip_compute + ph.chips * ph.compute_hours
        flop_weight = flop_weight + ph.chips * ph.compute_hours * ph.mfu
    finished = finished & (begun <= horizon_hours)
    mfu, unfinished_goodput, interval = _joined_rates(
        phases, goodputs, useful, training_h, flop_weight, chip_compute
    )
    reliable = {
        "training_hours": training_h,
        "interruptions": interruptions,
        "finished": finished.astype(float),
        "instability_hours": lost,
        "chip_hours": chip_hours,
        "fallback_chip_hours": on_demand_ch,
        "fallback_hours": on_demand_h,
        "recovery_wait_hours": waits,
        "goodput_unfinished": unfinished_goodput,
        "checkpoint_interval_hours": interval,
    }
    return PhaseRun(sum(ph.chips for ph in phases), mfu, compute_h, reliable)


__all__ = ["PhaseRun", "join_phases"]
