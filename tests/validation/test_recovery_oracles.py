"""Recovery after interruptions (models/recovery.py, engines/training/_recovery.py) against oracles.

Oracles: Erlang's loss formula as an explicit sum; a brute-force event simulation of failures,
spare hosts and exponential repairs (the long-run mean wait per failure, within 5 batch-means
standard errors); and a brute-force event simulation of a whole spot run, segment by segment,
with preemptions, waits for capacity and the fallback to on-demand, against the sampler the
engines run (:func:`accelsim.engines.training._recovery.recover` on top of
:func:`accelsim.models.reliability.sample_completion_hours`).

The run-level tolerance is 5 standard errors of the difference of the two means plus one
checkpoint segment and restart (``tau + C + R``): the sampler takes the work done before a
switch as linear in the run's time and rounds a preemption's to its last checkpoint, which
is right in the mean up to the position inside one segment.
"""

from __future__ import annotations

import heapq
import math

import numpy as np
import pytest

from accelsim.engines._inputs import InputPlan
from accelsim.engines.training._recovery import RecoveryInputs, recover
from accelsim.models import recovery, reliability


@pytest.mark.parametrize(("servers", "load"), [(0, 0.3), (1, 0.5), (3, 2.0), (10, 7.5), (40, 30.0)])
def test_erlang_b_is_the_explicit_sum(servers: int, load: float) -> None:
    terms = [load**k / math.factorial(k) for k in range(servers + 1)]
    assert float(recovery.erlang_b(servers, load)) == pytest.approx(terms[-1] / sum(terms), 1e-12)


def _spare_queue(
    rng: np.random.Generator, spares: int, rate: float, repair: float, failures: int
) -> np.ndarray:
    """Wait for a repaired host at each failure, event by event (running-time clock)."""
    now, busy, waits = 0.0, [], np.empty(failures)
    for i in range(failures):
        now += rng.exponential(1.0 / rate)  # the job runs until its next failure
        while busy and busy[0] <= now:
            heapq.heappop(busy)
        heapq.heappush(busy, now + rng.exponential(repair))
        wait = 0.0
        if len(busy) > spares:  # every spare is in repair: wait for the first to return
            wait = heapq.heappop(busy) - now
            now += wait
        waits[i] = wait
    return waits


@pytest.mark.parametrize(
    ("spares", "rate", "repair"), [(0, 0.1, 24.0), (1, 0.064, 38.0), (2, 0.1, 10.0), (6, 0.5, 8.0)]
)
def test_mean_wait_per_failure_matches_an_event_simulation(
    spares: int, rate: float, repair: float
) -> None:
    waits = _spare_queue(np.random.default_rng(11), spares, rate, repair, 200_000)[1000:]
    batches = waits.reshape(100, -1).mean(axis=1)  # batch means: the waits are correlated
    se = batches.std(ddof=1) / np.sqrt(batches.size)
    expected = float(recovery.spare_wait_hours_per_failure(spares, rate, repair))
    assert abs(waits.mean() - expected) <= 5.0 * se


def _spot_run(
    rng: np.random.Generator,
    work: float,
    tau: float,
    write: float,
    restart: float,
    fail: float,
    preempt: float,
    ret: float,
    after: int | None,
    deadline: float | None,
) -> float:
    """Calendar hours of one spot run with its fallback policy, event by event."""
    t, done, preempted = 0.0, 0.0, 0
    spot = after != 0
    restarting = False
    while True:
        lam = fail + (preempt if spot else 0.0)
        length = restart if restarting else min(tau, work - done) + write
        x = rng.exponential(1.0 / lam)
        if spot and deadline is not None and t + min(x, length) > deadline:
            if not restarting:  # a planned switch keeps the work done so far
                done += min(deadline - t, length - write)
            t, spot, restarting = deadline, False, True
            continue
        if x >= length:
            t += length
            if restarting:
                restarting = False
            else:
                done += length - write
                if done >= work * (1.0 - 1e-12):
                    return t
            continue
        t += x
        restarting = True
        if spot and rng.random() < preempt / lam:
            preempted += 1
            if after is not None and preempted >= after:
                spot = False  # moves on to on-demand: no wait for spot capacity
            else:
                t += rng.exponential(ret)


_CASES = [
    # work, tau, write, restart, failures/h, preemptions/h, return h, after k, deadline h
    (100.0, 2.0, 0.1, 0.2, 0.01, 0.3, 2.0, None, None),
    (100.0, 2.0, 0.1, 0.2, 0.01, 0.3, 2.0, 5, None),
    (200.0, 1.0, 0.05, 0.1, 0.02, 0.5, 1.0, 20, None),
    (100.0, 2.0, 0.1, 0.2, 0.01, 0.3, 2.0, None, 60.0),
    (100.0, 2.0, 0.1, 0.2, 0.01, 0.3, 2.0, 10, 80.0),
    (100.0, 2.0, 0.1, 0.2, 0.01, 0.3, 2.0, 0, None),
]


@pytest.mark.parametrize("case", _CASES)
def test_spot_run_with_fallback_matches_an_event_simulation(case: tuple) -> None:  # type: ignore[type-arg]
    work, tau, write, restart, fail, preempt, ret, after, deadline = case
    runs = 4000
    rng = np.random.default_rng(5)
    brute = np.array(
        [
            _spot_run(rng, work, tau, write, restart, fail, preempt, ret, after, deadline)
            for _ in range(runs)
        ]
    )
    draws = InputPlan(np.random.SeedSequence(9), total_runs=runs).draws(0, runs)
    full = np.full(runs, 1.0)
    spot_rate = 0.0 if after == 0 else preempt
    hours, count = reliability.sample_completion_hours(
        np.random.default_rng(3), work, tau, write, restart, fail + spot_rate, size=runs
    )
    rec = RecoveryInputs(
        return_hours=ret * full,
        after_preemptions=after,
        after_hours=deadline,
    )
    out = recover(
        rec,
        draws,
        "",
        running_hours=hours,
        interruptions=count,
        badput=0.0 * full,
        work_hours=work * full,
        interval_hours=tau * full,
        write_hours=write * full,
        restart_hours=restart * full,
        failure_rate=fail * full,
        preemption_rate=spot_rate * full,
        fallback_interval_hours=tau * full,
    )
    model = out["hours"]
    se = math.sqrt(brute.var(ddof=1) / runs + model.var(ddof=1) / runs)
    assert abs(model.mean() - brute.mean()) <= 5.0 * se + tau + write + restart


def _spares_run(
    rng: np.random.Generator,
    work: float,
    tau: float,
    write: float,
    restart: float,
    fail: float,
    spares: int,
    repair: float,
) -> float:
    """Calendar hours of one run on a pool with spare hosts, event by event."""
    t, done, restarting, busy = 0.0, 0.0, False, []
    while True:
        length = restart if restarting else min(tau, work - done) + write
        x = rng.exponential(1.0 / fail)
        if x >= length:
            t += length
            if restarting:
                restarting = False
            else:
                done += length - write
                if done >= work * (1.0 - 1e-12):
                    return t
            continue
        t += x
        restarting = True
        while busy and busy[0] <= t:
            heapq.heappop(busy)
        heapq.heappush(busy, t + rng.exponential(repair))
        if len(busy) > spares:
            t = heapq.heappop(busy)


@pytest.mark.parametrize(("spares", "repair"), [(0, 10.0), (1, 20.0), (3, 30.0)])
def test_run_with_spares_is_bounded_by_the_long_run_rate(spares: int, repair: float) -> None:
    """Exact at 0 spares (every failure waits one repair); above, the sampler takes the
    long-run blocking share after the first ``s`` failures, which a run starting with every
    spare free reaches from below: its mean lies between the event simulation's (within 5 SE)
    and the event simulation's plus the run's waits at the long-run share for the ``s``
    failures after the first ``s`` (the transient, bounded by one more spare's worth)."""
    work, tau, write, restart, fail = 200.0, 2.0, 0.1, 0.2, 0.1
    runs = 3000
    rng = np.random.default_rng(21)
    brute = np.array(
        [_spares_run(rng, work, tau, write, restart, fail, spares, repair) for _ in range(runs)]
    )
    draws = InputPlan(np.random.SeedSequence(4), total_runs=runs).draws(0, runs)
    full = np.full(runs, 1.0)
    hours, count = reliability.sample_completion_hours(
        np.random.default_rng(8), work, tau, write, restart, fail, size=runs
    )
    rec = RecoveryInputs(spares=spares, repair_hours=repair * full)
    out = recover(
        rec,
        draws,
        "",
        running_hours=hours,
        interruptions=count,
        badput=0.0 * full,
        work_hours=work * full,
        interval_hours=tau * full,
        write_hours=write * full,
        restart_hours=restart * full,
        failure_rate=fail * full,
        preemption_rate=0.0 * full,
        fallback_interval_hours=tau * full,
    )
    model = out["hours"]
    se = math.sqrt(brute.var(ddof=1) / runs + model.var(ddof=1) / runs)
    per_failure = float(recovery.spare_wait_hours_per_failure(spares, fail, repair))
    assert model.mean() >= brute.mean() - 5.0 * se
    assert model.mean() <= brute.mean() + 5.0 * se + spares * per_failure
