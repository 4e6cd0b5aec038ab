"""Recovery of a training run after interruptions, for both training engines.

The waits of :mod:`accelsim.models.recovery` on top of the failure model: a spot run waits
for capacity to return after each preemption (``Assumptions.spot_return_hours``) and may fall
back to on-demand (``Pool.fallback_after_preemptions`` / ``fallback_after_days``); a pool
with ``Pool.spare_hosts`` swaps a spare in for a failed host and waits for a repair
(``Assumptions.repair_hours``) when none is free. The analytic engine and the DES hero run
both call :func:`recover` on the completion they sampled (the DES's comes from its event
loop), so the two engines mean the same thing.

Every draw here is a function of the run's own uniforms of named streams (chunk-invariant),
but the on-demand remainder after a fallback, which is a whole failure-laden run: it is
drawn per block (the analytic engine runs whole blocks) or, for the DES, which runs chunks of
any size, per run from the run's own addressed stream.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from accelsim._typing import FloatArray
from accelsim.catalog import Catalog
from accelsim.engines._inputs import InputDraws
from accelsim.models import recovery, reliability
from accelsim.scenario import Pool, Scenario
from accelsim.seeding import stream as addressed_stream

_HOURS_PER_DAY = 24.0


@dataclass(frozen=True)
class RecoveryInputs:
    """What a run's recovery depends on (fixed by the pool, or drawn per run)."""

    return_hours: FloatArray | None = None
    """Mean wait for spot capacity after a preemption (spot pools). [h]"""
    spares: int | None = None
    """Spare hosts in reserve (``None``: a failed host is replaced from outside)."""
    spare_chips: float = 0.0
    """Chips of the spare hosts, held and paid for beside the pool's count. [chips]"""
    repair_hours: FloatArray | None = None
    """Mean time a failed host is in repair (with spares). [h]"""
    after_preemptions: int | None = None
    after_hours: float | None = None
    per_run_streams: bool = False
    """Draw the on-demand remainder per run (the DES's chunks), not per block."""

    @property
    def falls_back(self) -> bool:
        return self.after_preemptions is not None or self.after_hours is not None


def host_chips(cat: Catalog, pool: Pool) -> float:
    """Chips per host of ``pool``'s chip: the VM or TPU host of ``priors.spot_unit_chips``
    (the unit a spot VM is reclaimed in is the unit a failed node is drained in); 1 without
    the prior. [chips]"""
    units = cat.priors.spot_unit_chips
    if not units:
        return 1.0
    return float(units[cat.chip(pool.chip).kind].value)  # type: ignore[arg-type]


def draw_recovery_inputs(
    scenario: Scenario, cat: Catalog, draws: InputDraws, *, per_run_streams: bool = False
) -> RecoveryInputs:
    """The recovery inputs of a training scenario's first pool for the chunk of ``draws``."""
    a, p, pool = scenario.assumptions, cat.priors, scenario.fleet[0]
    out = RecoveryInputs(per_run_streams=per_run_streams)
    if pool.pricing == "spot":
        ret = draws.get(
            "assumptions.spot_return_hours", a.spot_return_hours, p.spot_return_hours.value
        )
        days = pool.fallback_after_days
        out = RecoveryInputs(
            return_hours=ret,
            after_preemptions=pool.fallback_after_preemptions,
            after_hours=None if days is None else days * _HOURS_PER_DAY,
            per_run_streams=per_run_streams,
        )
    if pool.spare_hosts is not None:
        repair = draws.get("assumptions.repair_hours", a.repair_hours, p.repair_hours.value)
        out = RecoveryInputs(
            spares=pool.spare_hosts,
            spare_chips=pool.spare_hosts * host_chips(cat, pool),
            repair_hours=repair,
            per_run_streams=per_run_streams,
        )
    return out


def on_demand_pool(pool: Pool) -> Pool:
    """The on-demand pool a spot pool falls back to: same chip, count and provider."""
    return pool.model_copy(
        update={
            "pricing": "on_demand",
            "fallback_after_preemptions": None,
            "fallback_after_days": None,
        }
    )


def _remainder(
    rec: RecoveryInputs,
    draws: InputDraws,
    stream: str,
    work: FloatArray,
    interval: FloatArray,
    write: FloatArray,
    restart: FloatArray,
    rate: FloatArray,
) -> tuple[FloatArray, FloatArray]:
    """The on-demand part's running hours and interruptions (0 where ``work`` is 0)."""
    hours, count = np.zeros(work.size), np.zeros(work.size)
    name = "fallback" + stream
    if rec.per_run_streams:
        for i in np.flatnonzero(work > 0):
            rng = addressed_stream(draws.root, name, draws.start + int(i))
            h, c = reliability.sample_completion_hours(
                rng, work[i], interval[i], write[i], restart[i], rate[i]
            )
            hours[i], count[i] = float(h), float(c)
        return hours, count
    for runs, rng in draws.block_rngs(name):
        h, c = reliability.sample_completion_hours(
            rng, work[runs], interval[runs], write[runs], restart[runs], rate[runs]
        )
        some = work[runs] > 0
        hours[runs] = np.where(some, h, 0.0)
        count[runs] = np.where(some, c, 0.0)
    return hours, count


def recover(
    rec: RecoveryInputs,
    draws: InputDraws,
    stream: str,
    *,
    running_hours: FloatArray,
    interruptions: FloatArray,
    badput: FloatArray,
    work_hours: FloatArray,
    interval_hours: FloatArray,
    write_hours: FloatArray,
    restart_hours: FloatArray,
    failure_rate: FloatArray,
    preemption_rate: FloatArray,
    fallback_interval_hours: FloatArray,
) -> dict[str, FloatArray]:
    """A run's calendar hours with the waits and the fallback, from its sampled completion.

    ``running_hours`` and ``interruptions`` are the completion of the whole work at the
    pool's rate (failures plus preemptions); ``badput`` stretches running time only (a wait
    for capacity is not slowed by evaluation pauses). Returns ``hours`` (calendar),
    ``interruptions``, ``rented_hours`` (hours the pool's chips are held and billed at its own
    price: waits for spot capacity excluded), ``on_demand_hours`` (hours after a fallback,
    billed at on-demand), ``wait_hours`` (waits for capacity or repairs, inside ``hours``) and
    ``calendar_rate`` (interruptions per calendar hour, for a run censored at its horizon).
    ``fallback_interval_hours`` is the checkpoint interval after a fallback (the user's, else
    Daly's for the failure rate alone). A policy that falls back before the first preemption
    (``after_preemptions`` 0) never runs on spot: the caller passes no preemptions and the
    whole run is on-demand.
    """
    stretched = running_hours / (1.0 - badput)
    rate = failure_rate + preemption_rate
    if rec.spares is not None:
        return _with_spares(
            rec, draws, stream, stretched, interruptions, badput, failure_rate, rate
        )
    if rec.after_preemptions == 0 or rec.return_hours is None:
        return _without_waits(rec, stretched, interruptions, badput, rate)
    share = np.divide(preemption_rate, rate, out=np.zeros_like(rate), where=rate > 0)
    split = _spot_split(
        rec, draws, stream, stretched, interruptions, share, work_hours,
        preemption_rate * (1.0 - badput),
    )  # fmt: skip
    calendar_rate = _calendar_rate(rate, badput, share * rec.return_hours)
    if not rec.falls_back:
        hours = stretched + split.wait_hours
        return {
            "hours": hours,
            "interruptions": interruptions,
            "rented_hours": stretched,
            "on_demand_hours": np.zeros_like(stretched),
            "wait_hours": split.wait_hours,
            "calendar_rate": calendar_rate,
        }
    return _fall_back(
        rec,
        draws,
        stream,
        split,
        interruptions,
        badput,
        rate,
        calendar_rate,
        work_hours=work_hours,
        interval_hours=fallback_interval_hours,
        write_hours=write_hours,
        restart_hours=restart_hours,
        failure_rate=failure_rate,
    )


def _spot_split(
    rec: RecoveryInputs,
    draws: InputDraws,
    stream: str,
    stretched: FloatArray,
    interruptions: FloatArray,
    share: FloatArray,
    work_hours: FloatArray,
    running_preemption_rate: FloatArray,
) -> recovery.SpotSplit:
    """:func:`accelsim.models.recovery.spot_split` on the run's own recovery streams."""
    assert rec.return_hours is not None  # recover() takes this path only with a return law
    return recovery.spot_split(
        stretched,
        interruptions,
        share,
        rec.return_hours,
        work_hours,
        rec.after_preemptions,
        rec.after_hours,
        (
            draws.uniforms("recovery.spot.preempted" + stream),
            draws.uniforms("recovery.spot.wait" + stream),
            draws.uniforms("recovery.spot.trigger" + stream),
        ),
        running_preemption_rate,
    )


def _with_spares(
    rec: RecoveryInputs,
    draws: InputDraws,
    stream: str,
    stretched: FloatArray,
    interruptions: FloatArray,
    badput: FloatArray,
    failure_rate: FloatArray,
    rate: FloatArray,
) -> dict[str, FloatArray]:
    """:func:`recover` on a pool with spare hosts: each failure waits for a repaired host
    when no spare is free (:func:`accelsim.models.recovery.spare_waits_hours`), billed at the
    pool's own price. ``stretched`` is the running time with badput [h], ``failure_rate``
    the failures and ``rate`` all interruptions per hour of training [1/h]; the waits [h]
    come from the run's own uniforms.
    """
    assert rec.spares is not None
    assert rec.repair_hours is not None
    waits = recovery.spare_waits_hours(
        interruptions,
        rec.spares,
        failure_rate,
        rec.repair_hours,
        draws.uniforms("recovery.spares.blocked" + stream),
        draws.uniforms("recovery.spares.wait" + stream),
    )
    mean_wait = recovery.spare_wait_hours_per_failure(rec.spares, failure_rate, rec.repair_hours)
    hours = stretched + waits
    return {
        "hours": hours,
        "interruptions": interruptions,
        "rented_hours": hours,
        "on_demand_hours": np.zeros_like(stretched),
        "wait_hours": waits,
        "calendar_rate": _calendar_rate(rate, badput, mean_wait),
    }


def _without_waits(
    rec: RecoveryInputs,
    stretched: FloatArray,
    interruptions: FloatArray,
    badput: FloatArray,
    rate: FloatArray,
) -> dict[str, FloatArray]:
    """:func:`recover` where nothing waits: no spot return time, or a fallback before the
    first preemption (``after_preemptions`` 0: the whole run on-demand, ``fell_back`` 1).
    ``stretched`` is the running time with badput [h]; ``rate`` the interruptions [1/h].
    """
    zeros = np.zeros_like(stretched)
    on_demand = rec.after_preemptions == 0
    out = {
        "hours": stretched,
        "interruptions": interruptions,
        "rented_hours": zeros if on_demand else stretched,
        "on_demand_hours": stretched if on_demand else zeros,
        "wait_hours": zeros,
        "calendar_rate": rate * (1.0 - badput),
    }
    if on_demand:
        out["fell_back"] = np.ones_like(stretched)
    return out


def _fall_back(
    rec: RecoveryInputs,
    draws: InputDraws,
    stream: str,
    split: recovery.SpotSplit,
    interruptions: FloatArray,
    badput: FloatArray,
    rate: FloatArray,
    calendar_rate: FloatArray,
    *,
    work_hours: FloatArray,
    interval_hours: FloatArray,
    write_hours: FloatArray,
    restart_hours: FloatArray,
    failure_rate: FloatArray,
) -> dict[str, FloatArray]:
    """:func:`recover` on a spot run that may fall back to on-demand: the spot part of
    ``split`` [h], then the work it left [h] run on-demand (:func:`_remainder`, at the
    failure rate alone [1/h] and ``interval_hours`` [h]) after a restart; badput stretches
    the on-demand part too. ``rate`` is the spot part's interruptions per hour [1/h],
    ``calendar_rate`` per calendar hour [1/h].
    """
    spot_hours = split.spot_hours
    with np.errstate(invalid="ignore"):  # none of an infinite count: 0, not nan
        spot_count = np.where(
            np.isfinite(interruptions),
            np.where(split.share > 0, split.share * interruptions, 0.0),
            rate * (1.0 - badput) * spot_hours,
        )
    rest = np.where(split.fell_back > 0, np.maximum(work_hours - split.work_done_hours, 0.0), 0.0)
    od_hours, od_count = _remainder(
        rec, draws, stream, rest, interval_hours, write_hours, restart_hours, failure_rate
    )
    # the switch itself: a restart on the new capacity
    od_hours = np.where(split.fell_back > 0, od_hours + restart_hours, 0.0) / (1.0 - badput)
    hours = spot_hours + split.wait_hours + od_hours
    spot_count = np.where(split.fell_back > 0, spot_count, interruptions)
    return {
        "hours": hours,
        "interruptions": spot_count + od_count,
        "rented_hours": spot_hours,
        "on_demand_hours": od_hours,
        "wait_hours": split.wait_hours,
        "calendar_rate": calendar_rate,
        "fell_back": split.fell_back,
    }


def _calendar_rate(rate: FloatArray, badput: FloatArray, mean_wait: FloatArray) -> FloatArray:
    """Interruptions per calendar hour when each costs ``mean_wait`` hours of waiting. [1/h]"""
    running = rate * (1.0 - badput)
    out: FloatArray = running / (1.0 + running * mean_wait)
    return out


__all__ = [
    "RecoveryInputs",
    "draw_recovery_inputs",
    "host_chips",
    "on_demand_pool",
    "recover",
]
