"""models.instability: the compound Poisson rollback loss against its closed form.

Oracle: for ``N ~ Poisson(r D)`` events of log-normal cost (median ``m``, log-sd ``s``) the
sum has mean ``r D m exp(s^2/2)``, variance ``r D m^2 exp(2 s^2)`` and
``P(sum = 0) = exp(-r D)``; the sampler's moments must match within a few standard errors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import special, stats

from accelsim.catalog import priors
from accelsim.models import instability
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
    """The engine's inverse-transform form (one uniform per run for the count, one addressed
    uniform per event) has the closed-form mean r D m exp(s^2/2) and variance
    r D m^2 exp(2 s^2), within 5 standard errors, and the zero-event share is exp(-r D)."""
    rng = np.random.default_rng(11)
    n, d, r, m, s = 200_000, 40.0, 0.1, 0.3, 1.0
    counts = instability.event_counts(rng.random(n), d, r)
    events = instability.event_uniforms(np.random.SeedSequence(4), 0, counts)
    days = instability.rollback_days(counts, events, rng.random(n), m, s)
    mean = float(instability.expected_instability_days(d, r, m, s))
    se = days.std(ddof=1) / np.sqrt(n)
    assert abs(days.mean() - mean) <= 5 * se
    assert days.var() == pytest.approx(r * d * m**2 * math.exp(2 * s**2), rel=0.15)
    assert abs(np.mean(counts == 0) - np.exp(-r * d)) <= 5 * np.sqrt(np.exp(-r * d) / n)


@pytest.mark.parametrize(
    ("n", "d", "r", "m", "s"), [(100_000, 40.0, 0.1, 0.3, 1.0), (10_000, 60.0, 3.0, 0.1, 1.25)]
)
def test_the_engines_draws_have_the_law_of_a_direct_sampler(
    n: int, d: float, r: float, m: float, s: float
) -> None:
    """Two-sample KS: the engine's form (Poisson quantile of a uniform, addressed event
    uniforms) against numpy's Poisson and log-normal drawn directly, ``n`` runs each; a
    correct pair fails with probability 1e-4. The second case, ~180 events a run, exercises
    runs with many events."""
    rng = np.random.default_rng(21)
    counts = instability.event_counts(rng.random(n), d, r)
    events = instability.event_uniforms(np.random.SeedSequence(8), 1_000, counts)
    engine = instability.rollback_days(counts, events, 0.5, m, s)
    direct_counts = rng.poisson(r * d, n)
    costs = rng.lognormal(math.log(m), s, int(direct_counts.sum()))
    direct = np.bincount(np.repeat(np.arange(n), direct_counts), costs, minlength=n)
    assert stats.ks_2samp(engine, direct).pvalue > 1e-4


def test_rollback_days_is_the_sum_of_each_runs_event_costs() -> None:
    """Brute force, run by run and event by event, with per-run medians and sigmas."""
    rng = np.random.default_rng(2)
    counts = np.array([0.0, 3.0, 1.0, 0.0, 5.0])
    m, s = rng.uniform(0.1, 1.0, 5), rng.uniform(0.0, 1.5, 5)
    u = rng.random(int(counts.sum()))
    u[0] = 0.0  # the 2**-53 chance of a zero uniform: no cost, even at s = 0
    got = instability.rollback_days(counts, u, 0.5, m, s)
    want, at = [], 0
    for i, c in enumerate(counts.astype(int)):
        total = 0.0
        for x in u[at : at + c]:
            total += 0.0 if x == 0.0 else m[i] * math.exp(s[i] * float(special.ndtri(x)))
        want.append(total)
        at += c
    np.testing.assert_allclose(got, want, rtol=1e-14)
    with pytest.raises(ValueError, match="event uniforms"):
        instability.rollback_days(counts, u[:-1], 0.5, m, s)


@given(
    counts=st.lists(st.integers(0, 600), min_size=1, max_size=40),
    first=st.integers(0, 10**9),
    cut=st.integers(0, 40),
)
def test_a_runs_event_uniforms_do_not_depend_on_its_chunk(
    counts: list[int], first: int, cut: int
) -> None:
    """Runs [first, first + n) in one chunk or two give each run the same event uniforms;
    runs above 512 events (the normal limit) take none."""
    seq = np.random.SeedSequence(5)
    c = np.array(counts, dtype=float)
    cut = min(cut, c.size)
    whole = instability.event_uniforms(seq, first, c)
    parts = np.concatenate(
        [
            instability.event_uniforms(seq, first, c[:cut]),
            instability.event_uniforms(seq, first + cut, c[cut:]),
        ]
    )
    assert np.array_equal(whole, parts)
    assert whole.size == int(np.sum(c[c <= instability.EXACT_EVENTS_MAX]))


def test_the_engines_rollbacks_do_not_depend_on_the_chunking() -> None:
    """engines.training._analytic._instability_hours on runs [0, 5000) at once and in chunks that
    cut blocks (as the DES does): bit-identical, at rates where some runs have > 512
    events (the normal limit, its own stream)."""
    from types import SimpleNamespace

    from accelsim.engines._inputs import InputDraws
    from accelsim.engines.training._analytic import _instability_hours

    root = np.random.SeedSequence(9)
    n = 5000
    rng = np.random.default_rng(0)
    hours = rng.uniform(0.0, 24.0 * 400.0, n)
    rate = rng.lognormal(math.log(0.3), 1.5, n)

    def lost(start: int, stop: int) -> np.ndarray:  # type: ignore[type-arg]
        # the two fields the rollback step reads of a TrainingInputs
        inputs = SimpleNamespace(
            instability_events_per_day=rate[start:stop], instability_event_days=(0.04, 2.0)
        )
        draws = InputDraws(root, start, stop, total_runs=n)
        return _instability_hours(inputs, hours[start:stop], draws)  # type: ignore[arg-type]

    whole = lost(0, n)
    counts = instability.event_counts(
        InputDraws(root, 0, n).uniforms("instability.events"), hours / 24.0, rate
    )
    assert np.any(counts > instability.EXACT_EVENTS_MAX)
    assert np.all((whole > 0.0) == (counts > 0.0))
    pieces = np.concatenate([lost(a, b) for a, b in ((0, 700), (700, 4100), (4100, n))])
    assert np.array_equal(whole, pieces)
