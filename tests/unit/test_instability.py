"""models.instability: the compound Poisson rollback loss against its closed form.

Oracle: for ``N ~ Poisson(r D)`` events of log-normal cost (median ``m``, log-sd ``s``) the
sum has mean ``r D m exp(s^2/2)``, variance ``r D m^2 exp(2 s^2)`` and
``P(sum = 0) = exp(-r D)``; the sampler's moments must match within a few standard errors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from accelsim.catalog import priors
from accelsim.models.instability import (
    expected_instability_days,
    lognormal_params,
    sample_instability_days,
)

N = 200_000


@pytest.mark.parametrize(("days", "rate", "median", "sigma"), [
    (50.0, 0.04, 0.28, 1.19),
    (10.0, 0.5, 0.1, 0.5),
    (200.0, 3.0, 0.2, 1.0),  # ~600 events a run: the normal-limit path
])  # fmt: skip
def test_moments_match_the_compound_poisson_closed_form(
    days: float, rate: float, median: float, sigma: float
) -> None:
    rng = np.random.default_rng(12)
    lost, events = sample_instability_days(rng, np.full(N, days), rate, median, sigma)
    mean = float(expected_instability_days(days, rate, median, sigma))
    var = rate * days * median**2 * math.exp(2 * sigma**2)
    assert abs(lost.mean() - mean) < 5 * math.sqrt(var / N)
    assert abs(events.mean() - rate * days) < 5 * math.sqrt(rate * days / N)
    # the variance: a looser check (the fourth moment of a log-normal is large)
    assert lost.var() == pytest.approx(var, rel=0.15)
    p0 = math.exp(-rate * days)
    assert abs(np.mean(lost == 0.0) - p0) < 5 * math.sqrt(p0 * (1 - p0) / N) + 1e-12


def test_no_rate_or_no_time_loses_nothing() -> None:
    rng = np.random.default_rng(0)
    lost, events = sample_instability_days(rng, [0.0, 30.0, 30.0], [1.0, 0.0, 0.2], 0.3, 1.0)
    assert lost[0] == lost[1] == 0.0
    assert events[0] == events[1] == 0.0
    assert np.all(np.isfinite(lost))
    assert np.all(lost >= 0.0)


def test_one_event_is_the_lognormal_of_its_quantiles() -> None:
    """Given exactly one event (conditioned on N = 1), its cost has the stated 5 %, 50 %
    and 95 % quantiles."""
    median, sigma = lognormal_params(0.04, 2.0)
    rng = np.random.default_rng(3)
    lost, events = sample_instability_days(rng, np.full(N, 1.0), 1.0, median, sigma)
    one = lost[events == 1]
    q = np.quantile(one, [0.05, 0.5, 0.95])
    np.testing.assert_allclose(q, [0.04, math.sqrt(0.08), 2.0], rtol=0.05)


def test_huge_exposure_stays_finite_and_bounded() -> None:
    """A run of a century at 10 events a day is drawn from the normal limit: finite,
    non-negative, at its mean within a few standard errors."""
    rng = np.random.default_rng(1)
    lost, _ = sample_instability_days(rng, np.full(64, 36_500.0), 10.0, 0.3, 1.2)
    mean = float(expected_instability_days(36_500.0, 10.0, 0.3, 1.2))
    assert np.all(np.isfinite(lost))
    assert np.all(lost >= 0)
    assert abs(lost.mean() / mean - 1.0) < 0.05


def test_shipped_priors_are_sourced_and_production_is_calmer() -> None:
    p = priors()
    rates = p.instability_events_per_day
    assert set(rates) == {"prototype", "production"}
    assert rates["prototype"].dist().expected_value() > rates["production"].dist().expected_value()
    assert rates["production"].assumption is False
    assert rates["prototype"].assumption is True
    event = p.instability_days_per_event
    assert event is not None
    assert len(event.sources) >= 2


def test_the_engine_reports_instability_inside_training_days() -> None:
    """instability_days is part of training_days and of failure_overhead_days, and
    time_to_train_days stays the sum of its phases."""
    from accelsim import simulate
    from accelsim.scenario import Pool, Scenario, TrainingRun

    sc = Scenario(
        name="t",
        workload=TrainingRun(params=7e9, tokens=1e12),
        fleet=[Pool(chip="h100-sxm", count=256, provider=None)],
    )
    res = simulate(sc, runs=512, seed=5, progress=False)
    inst = res.samples("instability_days")
    assert np.all(inst >= 0)
    assert inst.max() > 0
    overhead = res.samples("training_days") - res.samples("compute_days")
    assert np.all(inst <= overhead + 1e-9)
    np.testing.assert_allclose(overhead, res.samples("failure_overhead_days"), rtol=1e-9)


def test_rollback_days_by_inversion_has_the_compound_poisson_mean() -> None:
    """The engine's inverse-transform form (one uniform per run for the count, one per
    event) has the closed-form mean r D m exp(s^2/2), within 5 standard errors, and the
    zero-event share is exp(-r D). (That a run's draw does not depend on its chunk is held
    by tests/unit/test_study_des.py: the DES runs sub-block chunks and must equal the
    analytic engine run for run.)"""
    from accelsim.models import instability

    rng = np.random.default_rng(11)
    n, d, r, m, s = 200_000, 40.0, 0.1, 0.3, 1.0
    counts = instability.event_counts(rng.random(n), d, r)
    k = int(counts.max())
    days = instability.rollback_days(counts, rng.random((k, n)), rng.random(n), m, s)
    mean = float(instability.expected_instability_days(d, r, m, s))
    se = days.std(ddof=1) / np.sqrt(n)
    assert abs(days.mean() - mean) <= 5 * se
    assert abs(np.mean(counts == 0) - np.exp(-r * d)) <= 5 * np.sqrt(np.exp(-r * d) / n)
