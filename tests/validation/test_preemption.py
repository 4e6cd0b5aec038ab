"""Spot preemption per VM or TPU host with correlated bursts, against a brute-force simulation.

The oracle simulates each unit's own preemptions and the shared zone bursts as separate
Poisson processes event by event (numpy), merges them, and counts the events that stop the
job (a burst once, however many units it takes) and each unit's own preemptions. The
counts are Poisson, so the closed form must lie within 5 standard errors, sqrt(count).
"""

from __future__ import annotations

import numpy as np
import pytest

from accelsim.models import reliability


def _brute_force(
    rng: np.random.Generator, units: int, unit_rate: float, share: float, hours: float
) -> tuple[int, np.ndarray]:
    """(job-stopping events, preemptions per unit) over ``hours``, event by event."""
    times = []
    per_unit = np.zeros(units)
    for u in range(units):  # each unit's own preemptions
        own = rng.uniform(0.0, hours, rng.poisson((1.0 - share) * unit_rate * hours))
        per_unit[u] += own.size
        times.append(own)
    bursts = rng.uniform(0.0, hours, rng.poisson(share * unit_rate * hours))
    per_unit += bursts.size  # a burst takes every unit of the job
    times.append(bursts)  # ... and stops the job once
    return int(np.unique(np.concatenate(times)).size), per_unit


@pytest.mark.parametrize(
    ("chips", "unit_chips", "per_chip", "share"),
    [(1024, 8, 0.05, 0.0), (1024, 8, 0.05, 0.8), (256, 4, 0.02, 0.92), (8, 8, 0.05, 0.5)],
)
def test_events_per_hour_matches_an_event_simulation(
    chips: int, unit_chips: int, per_chip: float, share: float
) -> None:
    rng = np.random.default_rng(7)
    hours = 2000.0
    units = int(np.ceil(chips / unit_chips))
    events, per_unit = _brute_force(rng, units, per_chip * unit_chips, share, hours)
    rate = float(reliability.preemption_events_per_hour(chips, unit_chips, per_chip, share))
    assert abs(events - rate * hours) <= 5.0 * np.sqrt(rate * hours)
    # each unit keeps its own marginal rate, per_chip * unit_chips, whatever the share
    unit_mean = per_chip * unit_chips * hours
    assert abs(per_unit.mean() - unit_mean) <= 5.0 * np.sqrt(unit_mean)


def test_no_correlation_is_the_per_chip_sum_and_full_correlation_one_unit() -> None:
    """share 0: chips x rate (the old rule, whole units); share 1: one unit's rate."""
    assert float(reliability.preemption_events_per_hour(1024, 8, 0.05, 0.0)) == pytest.approx(
        float(reliability.interruption_rate_per_hour(1024, 0.0, 0.05))
    )
    assert float(reliability.preemption_events_per_hour(1024, 8, 0.05, 1.0)) == pytest.approx(0.4)
