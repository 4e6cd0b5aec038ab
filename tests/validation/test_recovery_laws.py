"""The recovery primitives (models/recovery.py) against the laws they claim to draw from.

``binomial_counts``, ``exponential_sum_hours``, ``spare_waits_hours`` and ``spot_split`` turn a
run's uniforms into counts, waits and fallback positions by inversion. Each docstring names a
law (binomial, gamma, Erlang's loss formula, the beta law of the ``k``-th of ``K`` Poisson
points); these tests hold the draws to those laws with oracles written apart from the module:

- ``scipy.stats`` distributions (KS tests, chi-square tests, exact moments);
- Erlang's loss formula as a ratio of Poisson probabilities, ``B(s, a) = P(N = s) / P(N <= s)``
  for ``N ~ Poisson(a)`` (a scipy-independent route from the recursion the module uses);
- the order statistics of uniform points, simulated directly.

Tolerances: 5 standard errors of a sample mean (false alarm ~6e-7 per check under the CLT),
and ``p > 1e-3`` for KS and chi-square tests, whose p-value is uniform under a correct law
whatever the seed (a wrong law drives it to ~0 at these sizes); the seeds were not tuned.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from accelsim.models import recovery

K_SE = 5.0
ALPHA = 1e-3


def _uniforms(seed: int, n: int) -> np.ndarray:
    return np.random.default_rng(seed).random(n)


def _within_se(sample: np.ndarray, exact: float) -> bool:
    se = sample.std(ddof=1) / math.sqrt(sample.size)
    return abs(float(sample.mean()) - exact) <= K_SE * se + 1e-12 * abs(exact)


# ------------------------------------------------------------------ Erlang's loss formula


@pytest.mark.parametrize(
    ("servers", "load"),
    [(0, 0.7), (1, 0.05), (4, 4.0), (16, 3.0), (64, 80.0), (200, 150.0), (500, 20.0)],
)
def test_erlang_b_is_the_truncated_poisson_ratio(servers: int, load: float) -> None:
    """Oracle: ``B(s, a) = P(N = s) / P(N <= s)``, ``N ~ Poisson(a)`` (the Erlang product form
    is the Poisson law truncated to ``0..s``), from scipy's pmf and cdf. Relative 1e-10: both
    sides are a handful of correctly rounded operations per term; at ``s = 500, a = 20``
    the ratio is ~1e-400 and underflows to 0 on both sides."""
    oracle = stats.poisson.pmf(servers, load) / stats.poisson.cdf(servers, load)
    got = float(recovery.erlang_b(servers, load))
    assert got == pytest.approx(oracle, rel=1e-10, abs=1e-300)


def test_erlang_b_heavy_and_light_load_limits() -> None:
    """As ``a -> inf``, ``B -> 1 - s / a + O(1/a^2)`` (every server busy); as ``a -> 0``,
    ``B ~ a^s / s!`` (the top state is the rarest). Both from the product form, to the
    first neglected order."""
    for servers in (1, 3, 8):
        a = 1e6
        assert float(recovery.erlang_b(servers, a)) == pytest.approx(1 - servers / a, abs=1e-10)
        a = 1e-4
        leading = a**servers / math.factorial(servers)
        assert float(recovery.erlang_b(servers, a)) == pytest.approx(leading, rel=2 * a)


def test_spare_wait_per_failure_is_the_first_of_s_plus_one_repairs() -> None:
    """Given all ``s`` spares busy, the wait is the minimum of ``s + 1`` exponential repairs
    (mean ``R / (s + 1)``); unconditionally it is that times ``B(s, lambda R)``. Oracle: the
    minimum simulated directly, times the truncated-Poisson ratio."""
    rng = np.random.default_rng(31)
    for spares, rate, repair in ((0, 0.2, 12.0), (2, 0.1, 10.0), (5, 0.4, 30.0)):
        first = rng.exponential(repair, size=(100_000, spares + 1)).min(axis=1)
        blocked = stats.poisson.pmf(spares, rate * repair) / stats.poisson.cdf(
            spares, rate * repair
        )
        got = float(recovery.spare_wait_hours_per_failure(spares, rate, repair))
        se = first.std(ddof=1) / math.sqrt(first.size) * blocked
        assert abs(got - first.mean() * blocked) <= K_SE * se


# ------------------------------------------------------------------------- binomial counts


@pytest.mark.parametrize(("trials", "p"), [(1.0, 0.3), (12.0, 0.25), (40.0, 0.9), (300.0, 0.02)])
def test_binomial_counts_have_the_binomial_law(trials: float, p: float) -> None:
    """Counts drawn from 100,000 uniforms against ``Binomial(trials, p)``: chi-square test of
    the observed frequencies (cells with an expected count below 5 pooled into the tails)."""
    counts = recovery.binomial_counts(trials, p, _uniforms(41, 100_000))
    assert np.all(counts == np.floor(counts))
    assert counts.min() >= 0
    assert counts.max() <= trials
    values = np.arange(int(trials) + 1)
    expected = stats.binom.pmf(values, int(trials), p) * counts.size
    observed = np.bincount(counts.astype(int), minlength=values.size).astype(float)
    keep = expected >= 5.0
    low_tail = values < values[keep].min()
    high_tail = values > values[keep].max()
    obs = np.concatenate([observed[keep], [observed[low_tail].sum(), observed[high_tail].sum()]])
    exp = np.concatenate([expected[keep], [expected[low_tail].sum(), expected[high_tail].sum()]])
    used = exp > 0
    chi2 = float(((obs[used] - exp[used]) ** 2 / exp[used]).sum())
    dof = int(used.sum()) - 1
    assert stats.chi2.sf(chi2, dof) > ALPHA


@pytest.mark.parametrize(
    ("trials", "p"),
    [
        (4e9, 0.5),  # the normal limit
        (4e12, 1e-10),  # the Poisson limit of the rarer outcome (mean 400)
        (4e12, 1.0 - 1e-10),  # the same, counted from the other side
        (1e30, 0.3),  # a censored run's count beyond any exact method
    ],
)
def test_binomial_counts_beyond_the_exact_range_keep_the_binomial_moments(
    trials: float, p: float
) -> None:
    """Above 1e9 trials the draw comes from a limit law; its mean and variance must still be
    ``n p`` and ``n p (1 - p)``. Mean within 5 SE; the variance within 5 SE of the sample
    variance (``sqrt(2 / n)`` relative for a near-normal law)."""
    n = 50_000
    counts = recovery.binomial_counts(trials, p, _uniforms(43, n))
    assert np.all(np.isfinite(counts))
    assert counts.min() >= 0.0
    assert counts.max() <= trials
    mean, var = trials * p, trials * p * (1.0 - p)
    assert abs(counts.mean() - mean) <= K_SE * math.sqrt(var / n) + 1e-15 * mean
    assert counts.var(ddof=1) == pytest.approx(var, rel=K_SE * math.sqrt(2.0 / n))


def test_binomial_counts_are_monotone_in_the_uniform() -> None:
    """Inversion: a larger uniform never gives a smaller count, on every branch (exact, the
    Poisson limit counted from either side, the normal limit)."""
    u = np.linspace(1e-9, 1.0 - 1e-9, 4001)
    for trials, p in ((30.0, 0.4), (4e12, 1e-10), (4e12, 1.0 - 1e-10), (4e9, 0.5)):
        counts = recovery.binomial_counts(trials, p, u)
        assert np.all(np.diff(counts) >= 0.0), (trials, p)


# ------------------------------------------------------------------------ exponential sums


@pytest.mark.parametrize(("count", "mean_hours"), [(1.0, 2.0), (3.0, 0.5), (40.0, 7.0)])
def test_exponential_sums_have_the_gamma_law(count: float, mean_hours: float) -> None:
    """The sum of ``k`` exponential waits of mean ``W`` is ``Gamma(k, W)``: one-sample KS test
    against scipy's gamma CDF, and the mean ``k W`` within 5 SE. Oracle for the gamma law
    itself: a direct sum of ``k`` numpy exponentials (two-sample KS)."""
    n = 20_000
    drawn = recovery.exponential_sum_hours(np.full(n, count), mean_hours, _uniforms(51, n))
    assert stats.kstest(drawn, stats.gamma(count, scale=mean_hours).cdf).pvalue > ALPHA
    direct = np.random.default_rng(52).exponential(mean_hours, (n, int(count))).sum(axis=1)
    assert stats.ks_2samp(drawn, direct).pvalue > ALPHA
    assert _within_se(drawn, count * mean_hours)


def test_exponential_sums_of_nothing_are_zero_and_never_nan() -> None:
    """No wait is drawn for no preemption, whatever the uniform (even 0, whose gamma
    quantile is 0, and at an infinite mean); an infinite count gives an infinite wait, never
    nan."""
    u = np.array([0.0, 0.3, 0.999999])
    np.testing.assert_array_equal(recovery.exponential_sum_hours(np.zeros(3), 5.0, u), 0.0)
    assert np.all(recovery.exponential_sum_hours(np.zeros(3), np.inf, u) == 0.0)
    huge = recovery.exponential_sum_hours(np.array([np.inf]), 2.0, np.array([0.5]))
    assert not np.isnan(huge).any()


# -------------------------------------------------------------------------- spare waits


@pytest.mark.parametrize(
    ("failures", "spares", "rate", "repair"),
    [(10.0, 0, 0.1, 24.0), (30.0, 2, 0.1, 10.0), (80.0, 4, 0.5, 8.0), (3.0, 5, 0.5, 8.0)],
)
def test_spare_waits_have_the_stated_mean(
    failures: float, spares: int, rate: float, repair: float
) -> None:
    """Mean total wait ``max(K - s, 0) B(s, lambda R) R / (s + 1)`` (Wald: a binomial count
    of exponential waits), with ``B`` from the truncated-Poisson oracle; within 5 SE. A run
    with no more failures than spares never waits."""
    n = 60_000
    waits = recovery.spare_waits_hours(
        np.full(n, failures), spares, rate, repair, _uniforms(61, n), _uniforms(62, n)
    )
    load = rate * repair
    blocked = stats.poisson.pmf(spares, load) / stats.poisson.cdf(spares, load)
    exact = max(failures - spares, 0.0) * blocked * repair / (spares + 1.0)
    if exact == 0.0:
        assert np.all(waits == 0.0)
    else:
        assert _within_se(waits, exact)


# ------------------------------------------------------------------------ spot fallback


def test_spot_split_without_a_policy_thins_interruptions_into_preemptions() -> None:
    """No fallback rule: the preemptions are ``Binomial(K, share)`` (mean ``K share``) and
    their waits ``Gamma`` (mean ``K share W``); the run stays on spot (share 1, its own
    hours and work)."""
    n = 40_000
    count, share, ret = 25.0, 0.6, 1.5
    split = recovery.spot_split(
        np.full(n, 100.0),
        np.full(n, count),
        share,
        ret,
        np.full(n, 90.0),
        None,
        None,
        (_uniforms(71, n), _uniforms(72, n), _uniforms(73, n)),
    )
    assert np.all(split.share == 1.0)
    assert np.all(split.fell_back == 0.0)
    np.testing.assert_array_equal(split.spot_hours, 100.0)
    np.testing.assert_array_equal(split.work_done_hours, 90.0)
    assert _within_se(split.preemptions, count * share)
    assert _within_se(split.wait_hours, count * share * ret)


@pytest.mark.parametrize(("k", "count"), [(1, 1.0), (1, 9.0), (4, 10.0), (10, 10.0)])
def test_the_kth_preemption_falls_at_its_order_statistic(k: int, count: float) -> None:
    """With every interruption a preemption and ``K >= k`` of them, the switch comes at the
    ``k``-th of ``K`` uniform points of the running time: ``Beta(k, K - k + 1)``. Oracle:
    the ``k``-th smallest of ``K`` numpy uniforms, two-sample KS, and the beta mean
    ``k / (K + 1)`` within 5 SE. Only ``k - 1`` waits come before the switch."""
    n = 20_000
    split = recovery.spot_split(
        np.full(n, 50.0),
        np.full(n, count),
        1.0,
        2.0,
        np.full(n, 40.0),
        k,
        None,
        (_uniforms(81, n), _uniforms(82, n), _uniforms(83, n)),
    )
    assert np.all(split.fell_back == 1.0)
    points = np.sort(np.random.default_rng(84).random((n, int(count))), axis=1)[:, k - 1]
    assert stats.ks_2samp(split.share, points).pvalue > ALPHA
    assert _within_se(split.share, k / (count + 1.0))
    np.testing.assert_allclose(split.spot_hours, 50.0 * split.share, rtol=1e-12)
    np.testing.assert_allclose(split.work_done_hours, 40.0 * split.share, rtol=1e-12)
    np.testing.assert_array_equal(split.preemptions, float(k))
    assert _within_se(split.wait_hours, (k - 1) * 2.0)


def test_a_deadline_switch_is_at_the_deadline_in_calendar_time() -> None:
    """Past ``d`` calendar hours on spot (running plus waits) the run switches: its spot
    running and waiting time then add to exactly ``d``; a run that ends before never
    switches."""
    n = 2000
    hours = np.linspace(10.0, 200.0, n)
    split = recovery.spot_split(
        hours,
        np.full(n, 12.0),
        0.5,
        3.0,
        hours * 0.9,
        None,
        80.0,
        (_uniforms(91, n), _uniforms(92, n), _uniforms(93, n)),
    )
    fell = split.fell_back == 1.0
    assert fell.any()
    assert (~fell).any()
    np.testing.assert_allclose(split.spot_hours[fell] + split.wait_hours[fell], 80.0, rtol=1e-12)
    assert np.all(split.spot_hours[~fell] + split.wait_hours[~fell] <= 80.0 * (1 + 1e-12))
    np.testing.assert_array_equal(split.share[~fell], 1.0)


def test_a_zero_uniform_draws_the_least_count_not_minus_one() -> None:
    """Inversion at ``u = 0`` gives the bottom of the support: 0 preemptions, or all
    ``trials`` where ``p = 1`` (scipy's discrete ``ppf(0)`` is -1, below the support; a
    Generator's ``random()`` returns 0.0 with probability 2**-53 per draw)."""
    counts = recovery.binomial_counts([0.0, 5.0, 5.0, 5.0, 5e9], [0.0, 0.5, 1.0, 0.0, 0.5], 0.0)
    np.testing.assert_array_equal(counts, [0.0, 0.0, 5.0, 0.0, 0.0])


@pytest.mark.xfail(
    strict=True,
    raises=RuntimeWarning,
    reason="scipy.stats.binom.ppf (boost) cannot bracket a uniform within ~5e-14 of 1 when p "
    "is tiny: it warns 'Unable to bracket root' and lands one step past the quantile",
)
def test_the_far_upper_tail_at_a_tiny_success_probability_is_exact_and_quiet() -> None:
    """``Binomial(1000, 1e-13)`` at ``u = 1 - 2**-52`` (a value ``Generator.random`` can
    return): ``P(K <= 0) = (1 - p)^n = 1 - 1e-10 < u <= P(K <= 1)`` (1 in float64), so the
    quantile is 1. scipy warns and returns 2: a draw in ~5e-14 per run, where ``p`` is a
    spare-host blocking probability ``B(s, a)`` or a small preemption share."""
    assert float(recovery.binomial_counts(1000.0, 1e-13, 1.0 - 2.0**-52)) == 1.0
