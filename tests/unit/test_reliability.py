"""Unit tests of accelsim.models.reliability: scalars, arrays, broadcasting, edge values."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest
from scipy import stats

from accelsim.models import (
    _reliability_expected,
    _reliability_rates,
    _reliability_sampling,
    reliability,
)
from accelsim.models.reliability import (
    daly_interval_hours,
    expected_completion_hours,
    expected_interruptions,
    goodput_fraction,
    interruption_rate_per_hour,
    sample_completion_hours,
    young_interval_hours,
)

CASE = (10.0, 2.0, 0.1, 0.5, 0.05)  # work, interval, write, restart [h], rate [1/h]


def test_doctests_run() -> None:
    """Every Examples block of the model runs and prints what it shows (no NUMBER flag)."""
    flags = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS
    modules = (_reliability_rates, _reliability_expected, _reliability_sampling)
    results = [doctest.testmod(m, optionflags=flags) for m in modules]
    assert sum(r.attempted for r in results) >= 10
    assert sum(r.failed for r in results) == 0


def test_interruption_rate_adds_failures_and_preemptions() -> None:
    """chips x (failure + preemption), broadcast."""
    assert float(interruption_rate_per_hour(1000, 1e-5)) == pytest.approx(0.01)
    rates = interruption_rate_per_hour(np.array([[1.0], [2.0]]), [1e-3, 2e-3], 1e-3)
    np.testing.assert_allclose(rates, [[2e-3, 3e-3], [4e-3, 6e-3]])


def test_young_and_daly_values() -> None:
    """Young sqrt(2 C M); Daly's series by hand; Daly falls back to M when C >= 2 M."""
    assert float(young_interval_hours(0.5, 4.0)) == pytest.approx(2.0)
    x = 0.5 / 8.0
    daly = 2.0 * (1 + math.sqrt(x) / 3 + x / 9) - 0.5
    assert float(daly_interval_hours(0.5, 4.0)) == pytest.approx(daly)
    np.testing.assert_array_equal(daly_interval_hours([2.0, 3.0], 1.0), [1.0, 1.0])
    assert daly_interval_hours(np.ones((2, 3)), np.ones(3) * 10).shape == (2, 3)


def test_divisible_work_matches_classic_formula() -> None:
    """When tau divides W: E[T] = (W/tau) e^{lam R} (e^{lam (tau + C)} - 1) / lam."""
    work, tau, write, restart, rate = CASE
    classic = (work / tau) * math.exp(rate * restart) * math.expm1(rate * (tau + write)) / rate
    assert float(expected_completion_hours(*CASE)) == pytest.approx(classic, rel=1e-13)


def test_partial_segment_is_its_own_segment() -> None:
    """W = 2.5 tau: two full segments and one of half length, each with its write."""
    rate, write, restart, tau = 0.1, 0.2, 0.3, 2.0

    def segment(s: float) -> float:
        return math.exp(rate * restart) * math.expm1(rate * (s + write)) / rate

    value = float(expected_completion_hours(5.0, tau, write, restart, rate))
    assert value == pytest.approx(2 * segment(tau) + segment(1.0), rel=1e-13)


def test_wald_identity() -> None:
    """E[interruptions] = lam E[T] for a Poisson process stopped at completion."""
    rates = np.array([0.0, 1e-3, 0.1, 0.7])
    counts = expected_interruptions(13.0, 3.0, 0.2, 0.4, rates)
    np.testing.assert_allclose(
        counts, rates * expected_completion_hours(13.0, 3.0, 0.2, 0.4, rates)
    )


def test_zero_rate_is_exact_and_continuous() -> None:
    """lam = 0 gives W + writes with no nan; tiny lam is within 1e-9 of it (no cancellation)."""
    at_zero = float(expected_completion_hours(10.0, 3.0, 0.1, 0.5, 0.0))
    assert at_zero == 10.0 + 4 * 0.1
    near_zero = float(expected_completion_hours(10.0, 3.0, 0.1, 0.5, 1e-12))
    assert near_zero == pytest.approx(at_zero, rel=1e-9)
    assert near_zero > at_zero
    assert float(goodput_fraction(10.0, 3.0, 0.1, 0.5, 0.0)) == pytest.approx(10.0 / 10.4)


def test_snapping_and_single_segment_edges() -> None:
    """0.3 / 0.1 counts as 3 segments; tau = inf or tau > W is one segment; W = 0 is 0."""
    assert float(expected_completion_hours(0.3, 0.1, 1.0, 0.0, 0.0)) == pytest.approx(3.3)
    one = float(expected_completion_hours(4.0, 100.0, 0.5, 0.0, 0.2))
    assert float(expected_completion_hours(4.0, math.inf, 0.5, 0.0, 0.2)) == one
    assert one == pytest.approx(math.expm1(0.2 * 4.5) / 0.2)
    assert float(expected_completion_hours(0.0, 2.0, 0.5, 1.0, 0.3)) == 0.0
    assert math.isnan(float(goodput_fraction(0.0, 2.0, 0.5, 1.0, 0.3)))
    hours, counts = sample_completion_hours(np.random.default_rng(0), 0.0, 2.0, 0.5, 1.0, 0.3)
    assert float(hours) == 0.0
    assert int(counts) == 0


def test_overflow_gives_inf_without_warning() -> None:
    """An absurd lam (tau + C) returns inf rather than raising (warnings are errors here)."""
    assert math.isinf(float(expected_completion_hours(10.0, 10.0, 1.0, 0.0, 100.0)))


def test_expected_functions_broadcast() -> None:
    """Scalars give 0-d results; arrays broadcast like numpy."""
    for function in (expected_completion_hours, expected_interruptions, goodput_fraction):
        assert np.ndim(function(*CASE)) == 0
        out = function(np.array([[10.0], [20.0]]), [1.0, 2.0, 5.0], 0.1, 0.5, 0.05)
        assert out.shape == (2, 3)
        assert float(out[1, 1]) == pytest.approx(float(function(20.0, 2.0, 0.1, 0.5, 0.05)))


def test_sampler_shapes_and_types() -> None:
    """Broadcast shape by default, ``size`` on request, float64 counts, 0-d for scalars."""
    rng = np.random.default_rng(1)
    hours, counts = sample_completion_hours(rng, [[10.0], [20.0]], [1.0, 2.0, 5.0], 0.1, 0.5, 0.05)
    assert hours.shape == counts.shape == (2, 3)
    assert hours.dtype == np.float64
    assert counts.dtype == np.float64
    hours, counts = sample_completion_hours(rng, *CASE, size=(4, 5))
    assert hours.shape == (4, 5)
    hours, _ = sample_completion_hours(rng, *CASE)
    assert hours.shape == ()
    with pytest.raises(ValueError, match="broadcast"):
        sample_completion_hours(rng, [1.0, 2.0], *CASE[1:], size=3)


def test_sampler_elements_follow_their_own_inputs() -> None:
    """Broadcast runs keep their own parameters: a failure-free element is exact."""
    hours, counts = sample_completion_hours(
        np.random.default_rng(2), 10.0, 2.0, 0.1, 0.5, np.array([0.0, 0.3, 0.0])
    )
    assert hours[0] == hours[2] == pytest.approx(10.5)
    assert counts[0] == counts[2] == 0
    assert hours[1] >= 10.5


class _RecordingGenerator:
    """A numpy Generator that keeps a copy of every uniform it hands out, in order."""

    def __init__(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)
        self.uniforms: list[np.ndarray] = []

    def random(self, size: int | None = None, out: np.ndarray | None = None) -> np.ndarray:
        values = self._rng.random(size, out=out)
        self.uniforms.append(np.array(values, copy=True))
        return values


class _ConstantGenerator:
    """Hands out the same 'uniform' every time: each loss is then a known number."""

    def __init__(self, value: float) -> None:
        self.value = value

    def random(self, size: int | None = None, out: np.ndarray | None = None) -> np.ndarray:
        values = np.empty(() if size is None else size) if out is None else out
        values.fill(self.value)
        return values


# Group sizes and lengths (rate 1/h) that exercise full columns of 64 factors, remainders of
# every size, an empty group and columns shortened to keep products from underflowing
# (rate x length 12 -> 50 factors a column, 50 -> 12).
LOSS_COUNTS = np.array([5, 0, 100, 200, 300, 64, 1, 4096], dtype=np.int64)
LOSS_LENGTHS = np.array([0.001, 1.0, 0.3, 12.0, 50.0, 2.0, 0.7, 0.05])
# Every group within one column (at most 64 factors and, at length 12, at most 50): no
# group is cut.
FEW_LOSS_COUNTS = np.array([5, 0, 17, 50, 64, 1, 3, 0], dtype=np.int64)


@pytest.mark.parametrize("loss_counts", [LOSS_COUNTS, FEW_LOSS_COUNTS], ids=["cut", "one"])
def test_lost_time_sums_are_exact_per_group(loss_counts: np.ndarray) -> None:
    """With every uniform equal to v, group i sums to counts[i] x -log1p(-c_i v) / rate.

    Checks the bookkeeping of columns (full, remainder, shortened): a loss
    missing, counted twice or given another group's ``c`` would be off by a whole loss
    (>= 1e-4 relative here). Tolerance 1e-12 relative: the factor ``1 - c v`` is rounded
    to 1.1e-16, i.e. 1.1e-16 / (c v) <= 2.2e-13 of a loss at the smallest c v = 5e-4
    (the same error in every factor, so it does not average out), plus <= 64 roundings
    (1.1e-16 each) per column product.
    """
    rate = np.ones(LOSS_COUNTS.size)
    value = 0.5
    sums = _reliability_sampling._sum_truncated_exponentials(
        _ConstantGenerator(value),  # type: ignore[arg-type]
        loss_counts,
        LOSS_LENGTHS,
        rate,
        np.expm1(rate * LOSS_LENGTHS),
    )
    one_loss = -np.log1p(np.expm1(-rate * LOSS_LENGTHS) * value) / rate
    np.testing.assert_allclose(sums, loss_counts * one_loss, rtol=1e-12)
    assert sums[1] == 0.0


def test_each_loss_takes_one_uniform_of_its_own() -> None:
    """Exactly one fresh uniform per loss, each used once: the sums add up to the per-draw
    inversion of every uniform drawn.

    Same ``c`` for all groups, so the total does not depend on which uniform went to which
    loss. Extra or missing draws fail the count; a uniform used twice in place of another
    changes the total by the difference of two losses, ~2e-4 of it on average (below the
    tolerance with probability ~1e-9). Tolerance 1e-12 relative: rounding of ``1 - c u``
    (1.1e-16 / (c u) of a loss, ~1e-15 for typical u at c = 0.26) and of up to 64-factor
    products.
    """
    counts = np.array([5, 0, 100, 200, 300, 64, 1, 4096], dtype=np.int64)
    length, rate = np.full(counts.size, 0.3), np.ones(counts.size)
    rng = _RecordingGenerator(5)
    sums = _reliability_sampling._sum_truncated_exponentials(
        rng,  # type: ignore[arg-type]
        counts,
        length,
        rate,
        np.expm1(rate * length),
    )
    uniforms = np.concatenate(rng.uniforms)
    assert uniforms.size == counts.sum()
    direct = -np.log1p(np.expm1(-0.3) * uniforms).sum()
    assert sums.sum() == pytest.approx(direct, rel=1e-12)
    assert np.all(sums[counts > 0] < counts[counts > 0] * length[counts > 0])


def test_many_losses_use_the_normal_limit_and_keep_the_exact_mean() -> None:
    """~80,000 failures per run take the CLT path; its mean is still the exact E[T].

    The normal limit has the exact mean K·m of the sum, so the sample mean of 2,000 runs
    lies within 5 standard errors of the closed form (clipping at 0 moves ~1e-600 mass).
    """
    work, tau, write, restart, rate = 1000.0, 0.1, 0.01, 0.02, 20.0
    hours, count = reliability.sample_completion_hours(
        np.random.default_rng(5), work, tau, write, restart, rate, size=2000
    )
    assert count.min() > 4096
    exact = reliability.expected_completion_hours(work, tau, write, restart, rate)
    se = hours.std(ddof=1) / np.sqrt(hours.size)
    assert abs(hours.mean() - float(exact)) <= 5 * se


def test_a_hopeless_run_gets_a_finite_time_and_a_float_count() -> None:
    """e^{λR} alone is e^{50}: more than 1e12 interruptions expected, drawn from the
    rare-success limit: finite, far beyond any horizon, a float count lambda*T (no int64
    overflow); a run whose mean time overflows float64 is inf (the engines censor it)."""
    hours, count = reliability.sample_completion_hours(
        np.random.default_rng(1), [100.0, 100.0, 100.0], 1.0, 0.1, 1.0, [50.0, 0.01, 1e4]
    )
    assert count.dtype == np.float64
    assert np.isfinite(hours[:2]).all()
    assert hours[0] > 1e15  # E[T] ~ 100 e^50 / 50 ~ 1e22 h
    assert count[0] == pytest.approx(50.0 * hours[0])
    assert np.isinf(hours[2])


@pytest.mark.parametrize(
    ("work", "tau", "write", "restart", "rate"),
    [(100.0, 1.0, 0.1, 0.2, 5.0), (50.0, 2.0, 0.1, 2.0, 3.0), (20.0, 20.0, 0.5, 0.1, 0.5)],
)
def test_rare_success_limit_agrees_with_the_exact_sampler_where_both_apply(
    work: float, tau: float, write: float, restart: float, rate: float
) -> None:
    """In the overlap (a segment fails almost surely: p = e^{-λL} <= 0.004), the limit law
    and the exact sampler agree: the limit's mean is exact by construction (within 5 SE of
    the closed form) and a two-sample KS test at 4,000 runs each does not reject (p > 1e-3;
    the limit's exponential extra time is off by O(p) in the Kolmogorov distance)."""
    size = 4000
    args = (work, tau, write, restart, rate)
    exact_h, _ = reliability.sample_completion_hours(np.random.default_rng(2), *args, size=size)
    full, interval, partial = reliability.checkpoint_segments(np.full(size, work), tau)
    limit_h, limit_n = _reliability_sampling._sample_rare_success(
        np.random.default_rng(3), full, interval, partial, *(np.full(size, x) for x in args[2:])
    )
    mean = float(reliability.expected_completion_hours(*args))
    se = limit_h.std(ddof=1) / np.sqrt(size)
    assert abs(limit_h.mean() - mean) <= 5 * se
    assert stats.ks_2samp(exact_h, limit_h).pvalue > 1e-3
    np.testing.assert_allclose(limit_n, rate * limit_h)


@pytest.mark.parametrize(
    ("successes", "log_p"),
    [(1.0, -0.4), (3.0, -0.1), (15.0, -0.005), (200.0, -0.004), (1.0, -0.69), (40.0, -1e-6)],
)
def test_small_mean_negative_binomial_by_inversion_has_the_exact_law(
    successes: float, log_p: float
) -> None:
    """Inversion draws (means 0.5 ... 1.0, and ~4e-5) against scipy's pmf, chi-square test.

    200,000 draws per case, bins 0..5 and >= 6; the test fails by chance with probability
    1e-6 per case (a fixed seed makes it deterministic), while a sampler off by a bin
    probability of 0.002 at these counts fails it with certainty.
    """
    from scipy import stats

    n_draws = 200_000
    n = np.full(n_draws, successes)
    odds = np.full(n_draws, math.expm1(-log_p))  # q / p = 1 / p - 1
    exponent = np.full(n_draws, -log_p)
    draws = _reliability_sampling._negative_binomial(np.random.default_rng(4), n, odds, exponent)
    p = math.exp(log_p)
    assert (
        successes * (1 - p) / p <= _reliability_sampling._INVERSION_MEAN_MAX
    )  # the inversion path
    observed = np.bincount(np.minimum(draws, 6), minlength=7)
    expected = np.append(
        stats.nbinom.pmf(np.arange(6), successes, p), stats.nbinom.sf(5, successes, p)
    )
    keep = expected * n_draws >= 5
    pooled_obs = np.append(observed[keep], observed[~keep].sum())
    pooled_exp = np.append(expected[keep], expected[~keep].sum()) * n_draws
    if pooled_exp[-1] == 0:
        pooled_obs, pooled_exp = pooled_obs[:-1], pooled_exp[:-1]
    assert stats.chisquare(pooled_obs, pooled_exp).pvalue > 1e-6


def test_inversion_steps_cover_all_but_rounding() -> None:
    """Mean <= 1, any n >= 1: P(count >= steps) <= 2**-64 (n = 1), far below u's 2**-53 grid."""
    from scipy import stats

    steps = _reliability_sampling._INVERSION_STEPS
    for n in [1, 2, 5, 30, 1000, 10**6]:
        p = n / (n + _reliability_sampling._INVERSION_MEAN_MAX)  # mean n (1 - p) / p = the limit
        assert stats.nbinom.sf(steps - 1, n, p) <= 2.0**-64 * (1 + 1e-9)


def test_negative_binomial_mixes_both_methods_in_one_call() -> None:
    """Large and small means and zero successes side by side: each element its own law."""
    rng = np.random.default_rng(5)
    n = np.tile([0.0, 2.0, 50.0], 60_000)
    log_p = np.tile([-0.1, -0.05, -0.5], 60_000)  # means 0, 0.103, 32.4
    draws = _reliability_sampling._negative_binomial(rng, n, np.expm1(-log_p), -log_p).reshape(
        -1, 3
    )
    assert (draws[:, 0] == 0).all()
    for col, (k, lp) in enumerate([(2.0, -0.05), (50.0, -0.5)], start=1):
        p = math.exp(lp)
        mean, var = k * (1 - p) / p, k * (1 - p) / p**2
        se = math.sqrt(var / draws.shape[0])
        assert abs(draws[:, col].mean() - mean) < 5 * se


@pytest.mark.parametrize("exponent", [1e-6, 0.01, 0.2, 0.69, 0.7, 3.0, 25.0])
def test_geometric_by_closed_form_inversion_has_the_exact_law(exponent: float) -> None:
    """Failures before one success, p = e^-x: against scipy's pmf, chi-square test.

    200,000 draws, bins 0..7 and >= 8 (pooled where expected < 5); fails by chance with
    probability 1e-6 per case (fixed seed), while a sampler off by 0.002 in a bin's
    probability fails with certainty. Exponents on both sides of ln 2 (the two forms of
    log q) and large enough (25: q = 1 - 1.4e-11) that log(odds) - x would have cancelled.
    Absent runs (``present`` 0) stay 0.
    """
    from scipy import stats

    n_draws = 200_000
    present = np.tile([1.0, 0.0], n_draws)
    x = np.full(present.size, exponent)
    draws = _reliability_sampling._geometric(np.random.default_rng(6), present, np.expm1(x), x)
    assert (draws[1::2] == 0).all()
    got = draws[0::2]
    p = math.exp(-exponent)
    if exponent >= 3.0:  # heavy: compare the mean (q / p) within 5 standard errors
        mean, sd = math.expm1(exponent), math.sqrt(1 - p) / p
        assert abs(got.mean() - mean) <= 5 * sd / math.sqrt(n_draws)
        return
    observed = np.bincount(np.minimum(got, 8), minlength=9)
    expected = np.append(stats.geom.pmf(np.arange(1, 9), p), stats.geom.sf(8, p)) * n_draws
    keep = expected >= 5
    pooled_obs = np.append(observed[keep], observed[~keep].sum())
    pooled_exp = np.append(expected[keep], expected[~keep].sum())
    if pooled_exp[-1] == 0:
        pooled_obs, pooled_exp = pooled_obs[:-1], pooled_exp[:-1]
    assert stats.chisquare(pooled_obs, pooled_exp).pvalue > 1e-6
