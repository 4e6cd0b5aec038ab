"""Invariants of the reliability model: time never below the work, monotone costs, seeds.

The only slack is 1e-11 relative: the model counts a quotient W / tau within 1e-12 of a
positive integer as that integer (dropping at most 1e-12 of the work), plus float rounding
where two sides are computed by different sums. Everything else is exact.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from accelsim import catalog
from accelsim.catalog import Prior
from accelsim.models.reliability import (
    daly_interval_hours,
    expected_completion_hours,
    expected_interruptions,
    goodput_fraction,
    sample_completion_hours,
)

ROUNDING = 1e-11

work_hours = st.floats(0.0, 500.0)
interval_hours = st.floats(0.05, 50.0)
write_hours = st.floats(0.0, 2.0)
restart_hours = st.floats(0.0, 3.0)
rate_per_hour = st.floats(0.0, 2.0)
positive_step = st.floats(1e-6, 1.0)


@given(work_hours, interval_hours, write_hours, restart_hours, rate_per_hour)
def test_expected_time_at_least_work(
    work: float, interval: float, write: float, restart: float, rate: float
) -> None:
    """E[T] >= W, the count is >= 0, goodput lies in (0, 1] (or is nan with no work)."""
    expected = float(expected_completion_hours(work, interval, write, restart, rate))
    assert expected >= work * (1 - ROUNDING)
    assert float(expected_interruptions(work, interval, write, restart, rate)) >= 0.0
    goodput = float(goodput_fraction(work, interval, write, restart, rate))
    assert np.isnan(goodput) if work == 0 else 0.0 <= goodput <= 1.0 + ROUNDING


@given(
    work_hours.filter(lambda w: w > 0),
    interval_hours,
    write_hours,
    restart_hours,
    rate_per_hour,
    positive_step,
    st.sampled_from(["write", "restart", "rate"]),
)
def test_expected_time_rises_with_rate_write_and_restart(
    work: float,
    interval: float,
    write: float,
    restart: float,
    rate: float,
    step: float,
    which: str,
) -> None:
    """E[T] does not fall when the rate, the write time or the restart time grows.

    Every factor of E[T] = sum e^{lam R} expm1(lam (s + C)) / lam is non-decreasing in each.
    """
    base = {"write": write, "restart": restart, "rate": rate}
    more = {**base, which: base[which] + step}
    before = float(expected_completion_hours(work, interval, **_named(base)))
    after = float(expected_completion_hours(work, interval, **_named(more)))
    assert after >= before * (1 - ROUNDING)


def _named(values: dict[str, float]) -> dict[str, float]:
    return {
        "write_hours": values["write"],
        "restart_hours": values["restart"],
        "rate_per_hour": values["rate"],
    }


@settings(max_examples=25)
@given(
    st.floats(0.0, 100.0),
    interval_hours,
    write_hours,
    restart_hours,
    st.floats(0.0, 0.5),
    st.integers(0, 2**32 - 1),
)
def test_samples_at_least_work_and_reproducible(
    work: float, interval: float, write: float, restart: float, rate: float, seed: int
) -> None:
    """Every sampled time >= W, counts >= 0, and the same seed gives identical output."""
    args = (work, interval, write, restart, rate)
    hours, counts = sample_completion_hours(np.random.default_rng(seed), *args, size=50)
    again_hours, again_counts = sample_completion_hours(np.random.default_rng(seed), *args, size=50)
    assert (hours >= work * (1 - ROUNDING)).all()
    assert (counts >= 0).all()
    np.testing.assert_array_equal(hours, again_hours)
    np.testing.assert_array_equal(counts, again_counts)


@given(work_hours, interval_hours, write_hours, restart_hours, st.integers(0, 2**32 - 1))
def test_no_failures_means_work_plus_writes(
    work: float, interval: float, write: float, restart: float, seed: int
) -> None:
    """At lam = 0 the time is W plus one write per segment, exactly, and nothing is random.

    The segment count is worked out here by its own rule: ceil(W / tau), except that a
    quotient within 1e-12 (relative) of a positive integer counts as that integer.
    """
    quotient = work / interval
    nearest = round(quotient)
    snaps = nearest >= 1 and abs(quotient - nearest) <= 1e-12 * quotient
    segments = nearest if snaps else math.ceil(quotient)
    target = work + segments * write
    expected = float(expected_completion_hours(work, interval, write, restart, 0.0))
    assert abs(expected - target) <= ROUNDING * max(target, 1.0)
    hours, counts = sample_completion_hours(
        np.random.default_rng(seed), work, interval, write, restart, 0.0, size=3
    )
    assert np.all(np.abs(hours - target) <= ROUNDING * max(target, 1.0))
    assert (counts == 0).all()
    assert float(expected_interruptions(work, interval, write, restart, 0.0)) == 0.0


@given(
    st.floats(0.01, 0.99),
    st.floats(0.01, 0.99),
    st.integers(1, 1_000_000),
    st.floats(8e-7, 8e-4),
)
@settings(max_examples=200)
def test_frontier_priors_never_lose_to_standard_at_the_same_quantiles(
    q_write: float, q_restart: float, chips: int, rate_per_chip_hour: float
) -> None:
    """At any chip count and failure rate, the frontier technique's write and restart times
    at quantiles (q_w, q_r) give at least the goodput of the standard technique's at the
    same quantiles, each at its own Daly interval: both priors are ordered quantile by
    quantile and goodput falls in write and restart time. A prior edited so that frontier
    recovery loses somewhere fails here."""
    p = catalog.priors()
    assert p.frontier_checkpoint_write_hours is not None
    assert p.frontier_restart_hours is not None
    rate = chips * rate_per_chip_hour

    def goodput(write_prior: Prior, restart_prior: Prior) -> float:
        write = float(write_prior.dist().ppf(q_write))
        restart = float(restart_prior.dist().ppf(q_restart))
        tau = float(daly_interval_hours(write, 1.0 / rate))
        with np.errstate(over="ignore"):
            return float(goodput_fraction(100.0, tau, write, restart, rate))

    frontier = goodput(p.frontier_checkpoint_write_hours, p.frontier_restart_hours)
    standard = goodput(p.checkpoint_write_hours, p.restart_hours)
    assert frontier >= standard * (1 - ROUNDING) or standard == 0.0
