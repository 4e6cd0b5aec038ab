"""Every distribution against scipy.stats: closed-form moments, quantiles and draws.

``expected_value()`` and ``variance()`` are closed forms written apart from the scipy object
each type maps onto (STYLE.md pattern 4); here the oracle is the other way round: scipy's own
moments (``.stats("mv")``, computed by scipy from its shape parameters) and CDFs, over the
whole parameter space hypothesis draws (:mod:`accelsim.strategies`), extremes included.

Tolerances, from floating point and not tuned:

- moments: relative ``1e-9`` plus an absolute ``1e-12`` times the scale of the parameters
  (a mean ``1e6`` computed two ways differs by a few ulp of ``1e6``); the variance is
  translation invariant, so its slack is relative to the squared width only, which is what a
  formula measured from the location cannot meet (the Triangular and PERT variance of a narrow
  window far from 0 lost every digit to cancellation before they were measured from ``low``);
- ``cdf(ppf(q)) == q``: ``1e-9`` absolute in probability, the documented accuracy of the beta
  inversion table (u-error below 1e-10) with margin; elsewhere the quantile is a closed form;
- KS and chi-square tests at ``p > 1e-3`` (uniform p-value under the right law, any seed).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from scipy import integrate, special, stats

from accelsim import strategies as acst
from accelsim.dists import (
    PERT,
    Beta,
    Choice,
    Dist,
    Exponential,
    LogNormal,
    Normal,
    Triangular,
    Uniform,
)

ALPHA = 1e-3
MOMENT_REL = 1e-9


def scipy_law(d: Dist) -> stats.rv_continuous:
    """The frozen scipy distribution ``d`` should follow, built from its fields here (not
    through the module's own mapping), so a wrong mapping cannot hide behind itself."""
    if isinstance(d, Uniform):
        return stats.uniform(loc=d.low, scale=d.high - d.low)
    if isinstance(d, Triangular):
        width = d.high - d.low
        return stats.triang((d.mode - d.low) / width, loc=d.low, scale=width)
    if isinstance(d, PERT):
        width = d.high - d.low
        a = 1.0 + d.lamb * (d.mode - d.low) / width
        b = 1.0 + d.lamb * (d.high - d.mode) / width
        return stats.beta(a, b, loc=d.low, scale=width)
    if isinstance(d, Beta):
        return stats.beta(d.alpha, d.beta, loc=d.low, scale=d.high - d.low)
    if isinstance(d, Exponential):
        return stats.expon(scale=d.mean)
    if isinstance(d, LogNormal):
        z = stats.norm.ppf(0.95)
        mu = 0.5 * (math.log(d.low) + math.log(d.high))
        sigma = (math.log(d.high) - math.log(d.low)) / (2.0 * z)
        return stats.lognorm(s=sigma, scale=math.exp(mu))
    if isinstance(d, Normal):
        if d.low is None and d.high is None:
            return stats.norm(loc=d.mean, scale=d.sd)
        a = -np.inf if d.low is None else (d.low - d.mean) / d.sd
        b = np.inf if d.high is None else (d.high - d.mean) / d.sd
        return stats.truncnorm(a, b, loc=d.mean, scale=d.sd)
    raise TypeError(type(d).__name__)


def _scale(d: Dist) -> float:
    low, high = d.support()
    ends = [abs(x) for x in (low, high) if math.isfinite(x)]
    return max([*ends, abs(d.expected_value()), 1e-300])


def _width(d: Dist) -> float:
    low, high = d.support()
    return high - low if math.isfinite(high - low) else math.sqrt(d.variance())


BOUNDED = [Uniform, Triangular, PERT, Beta]
UNBOUNDED = [Exponential, LogNormal, Normal]


def _truncated_normal_moments(d: Normal) -> tuple[float, float]:
    """Mean and variance of a truncated Normal by quadrature of the standard density.

    scipy's ``truncnorm.stats`` loses digits on narrow windows (1e-9 relative at a window of
    0.008 sd, where quadrature and the module agree to 1e-16), so quadrature is the oracle
    here; beyond 40 sd the density is 0 in float64, so the window is clipped there.
    """
    a = -40.0 if d.low is None else max((d.low - d.mean) / d.sd, -40.0)
    b = 40.0 if d.high is None else min((d.high - d.mean) / d.sd, 40.0)

    def moment(k: int, centre: float, mass: float = 1.0) -> float:
        # absolute accuracy relative to the window: (z - centre)**k is at most (b - a)**k
        return float(
            integrate.quad(
                lambda z: (z - centre) ** k * math.exp(-0.5 * z * z),
                a,
                b,
                points=[0.0] if a < 0.0 < b else None,
                epsabs=1e-14 * mass * (b - a) ** k,
                epsrel=1e-13,
                limit=200,
            )[0]
        )

    mass = float(
        integrate.quad(lambda z: math.exp(-0.5 * z * z), a, b, epsabs=0.0, epsrel=1e-13)[0]
    )
    mid = 0.5 * (a + b)
    mean_z = mid + moment(1, mid, mass) / mass
    return d.mean + d.sd * mean_z, d.sd**2 * moment(2, mean_z, mass) / mass


def _is_truncated_normal(d: Dist) -> bool:
    return isinstance(d, Normal) and (d.low is not None or d.high is not None)


def _truncated_normal_cdf(d: Normal) -> Callable[[float], float]:
    """CDF of a truncated Normal by quadrature of the standard density (no cancellation:
    the integrand is positive), in standard units clipped at 40 sd."""
    a = -40.0 if d.low is None else max((d.low - d.mean) / d.sd, -40.0)
    b = 40.0 if d.high is None else min((d.high - d.mean) / d.sd, 40.0)

    def mass(lo: float, hi: float) -> float:
        if hi <= lo:
            return 0.0
        return float(
            integrate.quad(lambda z: math.exp(-0.5 * z * z), lo, hi, epsabs=0.0, epsrel=1e-13)[0]
        )

    total = mass(a, b)
    return lambda x: mass(a, min(max((x - d.mean) / d.sd, a), b)) / total


def _truncated_normal_resolution(d: Dist) -> float:
    """Resolution in probability of a quantile computed through ``Phi``: 8 ulps of the
    larger ``Phi`` at the window's ends over the window's mass; 0 for other laws."""
    if not _is_truncated_normal(d):
        return 0.0
    assert isinstance(d, Normal)
    a = -np.inf if d.low is None else (d.low - d.mean) / d.sd
    b = np.inf if d.high is None else (d.high - d.mean) / d.sd
    mass = (
        float(special.ndtr(b) - special.ndtr(a))
        if a < 0 < b
        else float(abs(special.erf(b / math.sqrt(2)) - special.erf(a / math.sqrt(2))) / 2)
    )
    top = max(float(special.ndtr(a)), float(special.ndtr(min(b, 40.0))))
    return 8.0 * float(np.spacing(top)) / max(mass, 1e-300)


def _close_moments(d: Dist) -> None:
    assume(math.isfinite(d.expected_value()) and math.isfinite(d.variance()))
    if _is_truncated_normal(d):
        mean, var = _truncated_normal_moments(d)  # type: ignore[arg-type]
    else:
        mean, var = (float(x) for x in scipy_law(d).stats("mv"))
    assume(math.isfinite(mean) and math.isfinite(var))  # scipy's own overflow, not ours
    assert abs(d.expected_value() - mean) <= MOMENT_REL * abs(mean) + 1e-12 * _scale(d)
    assert abs(d.variance() - var) <= MOMENT_REL * var + 1e-12 * _width(d) ** 2


@given(acst.dists(-1e6, 1e6, kinds=BOUNDED))
def test_bounded_laws_have_scipys_moments(d: Dist) -> None:
    """Uniform, Triangular, PERT and Beta: closed-form mean and variance equal scipy's."""
    _close_moments(d)


@given(acst.dists(1e-3, 1e4, unbounded=True, kinds=UNBOUNDED))
def test_unbounded_laws_have_scipys_moments(d: Dist) -> None:
    """Exponential, LogNormal (90 % interval) and Normal (open, or truncated on one or both
    sides): closed-form mean and variance equal scipy's (quadrature for truncations)."""
    _close_moments(d)


@pytest.mark.parametrize(
    "d",
    [
        Triangular(low=1e6, mode=1e6 + 1e-3, high=1e6 + 2e-3),
        Triangular(low=-1e8, mode=-1e8, high=-1e8 + 3e-3),
        PERT(low=1e6, mode=1e6 + 1e-3, high=1e6 + 4e-3, lamb=4.0),
        Uniform(low=1e9, high=1e9 + 1e-4),
    ],
    ids=repr,
)
def test_narrow_windows_far_from_zero_keep_their_variance(d: Dist) -> None:
    """The variance does not depend on the location. A formula in the raw ends
    (``a² + b² + c² - ab - ac - bc``) returns 0 for the first two (the squares cancel to
    nothing at 1e12 against a 1e-7 result); the oracle is scipy's, at 1e-6 relative (the
    ends themselves are rounded to an ulp of 1e6-1e9 when the window is written down)."""
    var = float(scipy_law(d).var())
    assert d.variance() == pytest.approx(var, rel=1e-6)
    assert d.variance() > 0.0


@settings(max_examples=40)
@given(
    acst.dists(-1e3, 1e3, unbounded=True, kinds=BOUNDED + UNBOUNDED),
    st.floats(1e-6, 1.0 - 1e-6),
)
@example(Beta(alpha=0.5, beta=0.03125, low=-1.0, high=0.0), 0.5)  # mass against high
@example(Normal(mean=0.0, sd=4.0, low=0.0, high=1e-06), 0.5)  # a window of 2.5e-7 sd
@example(Normal(mean=0.0, sd=18.0, low=0.0, high=1e-06), 0.5)  # 5.6e-8 sd: resolution
def test_cdf_of_the_quantile_is_the_probability(d: Dist, q: float) -> None:
    """``F(ppf(q)) = q`` with ``F`` scipy's CDF (by quadrature for a truncated Normal:
    scipy's ``truncnorm.cdf`` is off by 1e-9 in a window of 2.5e-7 sd, where the module's
    quantile is right to 7e-10), to 1e-9 in probability (the beta inversion
    table's stated u-error is below 1e-10; every other quantile is a closed form). Where the
    law is so steep that the resolution of its representation moves ``F`` by more, the check
    is that ``q`` lies between ``F`` a resolution step either side of ``x``. That step is
    two ulps of ``x``, and for the bounded laws (a standard variate ``Q`` on [0, 1] mapped
    to ``low + w Q``) also two ulps of 1 times the width ``w``: e.g. Beta(0.5, 0.03125) piles
    its mass against ``high``, where ``Q`` near 1 is resolved to 1.1e-16 only. A truncated
    Normal's quantile goes through ``Phi`` (scipy's ``truncnorm.ppf``), resolved to an ulp of
    ``Phi`` at the window over the window's mass: ~2e-16 / width in sd units, which exceeds
    1e-9 for windows narrower than ~2e-7 sd (a known limit, a strict xfail below)."""
    cdf = _truncated_normal_cdf(d) if _is_truncated_normal(d) else scipy_law(d).cdf
    x = float(d.ppf(q))
    low, high = d.support()
    if x in (low, high):  # a quantile pinned to an end of the support (an atom in float64)
        return
    got = float(cdf(x))
    if abs(got - q) <= 1e-9 + _truncated_normal_resolution(d):
        return
    step = 2.0 * (np.spacing(abs(x)) + (np.spacing(1.0) * (high - low) if high < np.inf else 0))
    below, above = float(cdf(x - step)), float(cdf(x + step))
    assert below - 1e-9 <= q <= above + 1e-9, (got, q)


KS_CASES = [
    Uniform(low=-2.0, high=5.0),
    Triangular(low=0.1, mode=0.1, high=0.9),  # mode at the low end
    Triangular(low=-3.0, mode=4.0, high=4.5),
    Exponential(mean=17.0),
    LogNormal(low=0.03, high=1.0),  # the restart prior
    LogNormal(low=8e-6, high=8e-5),  # the failure-rate prior
    Normal(mean=0.4, sd=0.3, low=0.0),
    Normal(mean=-1.0, sd=2.0, low=-1.5, high=0.5),
    Normal(mean=3.0, sd=0.5, high=3.2),
]


@pytest.mark.parametrize("d", KS_CASES, ids=repr)
def test_draws_follow_the_scipy_law(d: Dist) -> None:
    """20,000 draws, one-sample KS test against scipy's CDF at p > 1e-3, plus every draw in
    the support. A wrong mapping (sd for variance, the 90 % interval read as 95 %, a mode
    measured from 0 instead of ``low``) fails by far at this size."""
    x = d.sample(np.random.default_rng(2026), 20_000)
    low, high = d.support()
    assert np.all((x >= low) & (x <= high))
    assert stats.kstest(x, scipy_law(d).cdf).pvalue > ALPHA


@pytest.mark.parametrize(
    "d",
    [
        Choice(values=[1, 2, 8], weights=[0.5, 0.3, 0.2]),
        Choice(values=[5.0, -1.0, 5.0, 2.0], weights=[1.0, 2.0, 3.0, 0.0]),  # repeat, zero
        Choice(values=[0.25, 0.5, 0.75, 1.0]),
    ],
    ids=repr,
)
def test_choice_frequencies_and_moments(d: Choice) -> None:
    """Oracle: the weights as written (a repeated value's weights add, a zero weight never
    draws). Frequencies of 50,000 draws by chi-square at p > 1e-3; the mean and variance
    of the listed values under their normalised weights, to 1e-12."""
    values = np.asarray(d.values, dtype=float)
    weights = np.ones_like(values) if d.weights is None else np.asarray(d.weights, dtype=float)
    p = weights / weights.sum()
    mean = float(np.sum(p * values))
    var = float(np.sum(p * (values - mean) ** 2))
    assert d.expected_value() == pytest.approx(mean, rel=1e-12, abs=1e-12)
    assert d.variance() == pytest.approx(var, rel=1e-12, abs=1e-12)
    distinct = np.unique(values[p > 0])
    probs = np.array([p[values == v].sum() for v in distinct])
    x = d.sample(np.random.default_rng(5), 50_000)
    assert set(np.unique(x)) <= set(distinct.tolist())
    observed = np.array([(x == v).sum() for v in distinct])
    if distinct.size > 1:
        assert stats.chisquare(observed, probs * x.size).pvalue > ALPHA
    else:
        assert observed[0] == x.size


@given(acst.dists(-1e6, 1e6, unbounded=True), st.floats(-1e3, 1e3), st.floats(0.5, 4.0))
@example(Choice(values=[0.0, 2.785612229107797e-102]), 1.0, 1.0)  # a spread below an ulp
@example(Uniform(low=0.0, high=2.220446049250313e-16), 0.00390625, 1.134765625)  # ends rounded
def test_location_and_scale_move_the_moments_as_they_must(
    d: Dist, shift: float, factor: float
) -> None:
    """Metamorphic: the same law written at ``a + b X`` (each type rebuilt from its shifted
    and scaled fields) has mean ``a + b E[X]`` and variance ``b² Var[X]``. LogNormal and
    Exponential are scaled only (their location is 0)."""
    moved = _affine(d, shift, factor)
    assume(moved is not None)
    # a law with a moment beyond float64 (a LogNormal over 300 decades) has nothing to move
    assume(math.isfinite(d.variance()) and math.isfinite(moved.variance()))  # type: ignore[union-attr]
    assert moved is not None
    only_scaled = isinstance(d, (LogNormal, Exponential))
    a = 0.0 if only_scaled else shift
    mean = a + factor * d.expected_value()
    tol = 1e-9 * (abs(a) + factor * _scale(d))
    assert abs(moved.expected_value() - mean) <= tol
    var = factor**2 * d.variance()
    # moving the values rounds each to an ulp of where it lands: a spread below that is lost
    resolution = 4.0 * float(np.spacing(abs(a) + factor * _scale(d)))
    width = factor * _width(d)
    slack = 1e-12 * width**2 + (width + resolution) ** 2 - width**2
    assert moved.variance() == pytest.approx(var, rel=1e-8, abs=slack)


def _affine(d: Dist, shift: float, factor: float) -> Dist | None:
    """``shift + factor * X`` as a model of the same type, or None where it cannot be one."""

    def at(x: float | None) -> float | None:
        return None if x is None else shift + factor * x

    try:
        if isinstance(d, Uniform):
            return Uniform(low=at(d.low), high=at(d.high))
        if isinstance(d, Triangular):
            return Triangular(low=at(d.low), mode=at(d.mode), high=at(d.high))
        if isinstance(d, PERT):
            return PERT(low=at(d.low), mode=at(d.mode), high=at(d.high), lamb=d.lamb)
        if isinstance(d, Beta):
            return Beta(alpha=d.alpha, beta=d.beta, low=at(d.low), high=at(d.high))
        if isinstance(d, Normal):
            return Normal(mean=at(d.mean), sd=factor * d.sd, low=at(d.low), high=at(d.high))
        if isinstance(d, Exponential):
            return Exponential(mean=factor * d.mean)
        if isinstance(d, LogNormal):
            return LogNormal(low=factor * d.low, high=factor * d.high)
        if isinstance(d, Choice):
            return Choice(values=[at(v) for v in d.values], weights=d.weights)
    except ValueError:  # rounding closed a window (e.g. low == mode == high)
        return None
    return None  # Fixed: nothing to check beyond its value


@pytest.mark.xfail(
    strict=True,
    reason="a truncated Normal's quantile goes through Phi (scipy truncnorm.ppf): in a window "
    "of 6.5e-10 sd it is off by 8.6e-8 in probability (~2e-16 / width); exact inversion of a "
    "narrow window would need a local expansion, not written (no physical input is this narrow)",
)
def test_the_median_of_a_hair_thin_truncated_normal_window_is_exact() -> None:
    """Normal(0, 1) on [0, 6.5e-10]: the density is flat to 1e-19 across the window, so the
    median is the midpoint to far below 1e-9 of the width; found by hypothesis (dev profile)."""
    d = Normal(mean=0.0, sd=1.0, low=0.0, high=6.528372407781863e-10)
    assert float(d.ppf(0.5)) == pytest.approx(0.5 * 6.528372407781863e-10, rel=1e-9, abs=0.0)
