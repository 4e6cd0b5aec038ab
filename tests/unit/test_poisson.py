"""models._poisson.poisson_quantile: the exact Poisson quantile both the serving batch tail and
the instability event counts invert.

Oracles: the defining inequalities ``P(N <= k - 1) < q <= P(N <= k)`` in 60-digit decimal
arithmetic (exact to far below float64's rounding), and ``scipy.stats.poisson.ppf``, which
it equals except in the far upper tail, where scipy's can be one step low.
"""

from __future__ import annotations

from decimal import Decimal, localcontext

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import special, stats

from accelsim.models._poisson import _guess_and_check, poisson_quantile


def _exact_quantile(q: float, mean: float) -> int:
    """Smallest k with P(N <= k) >= q, summing the pmf in 60-digit decimals (mean <= ~300)."""
    with localcontext() as ctx:
        ctx.prec = 60
        lam, target = Decimal(mean), Decimal(q)
        pmf = (-lam).exp()
        cdf, k = pmf, 0
        while cdf < target:
            k += 1
            pmf = pmf * lam / k
            cdf += pmf
        return k


TAIL_Q = (1e-300, 1e-16, 0.01, 0.5, 0.9, 0.99, 0.999999, 1.0 - 2.0**-50, 1.0 - 2.0**-53)


@pytest.mark.parametrize("q", TAIL_Q)
@pytest.mark.parametrize("mean", [1e-12, 1e-3, 0.5, 1.0, 7.0, 29.0, 100.0, 250.0])
def test_exact_against_decimal_arithmetic(q: float, mean: float) -> None:
    assert float(poisson_quantile(q, mean)) == _exact_quantile(q, mean)


def _exact_cdf(k: int, mean: float) -> float:
    """P(N <= k) in 60-digit decimals, rounded once to float64."""
    with localcontext() as ctx:
        ctx.prec = 60
        lam = Decimal(mean)
        pmf = (-lam).exp()
        cdf = pmf
        for i in range(1, k + 1):
            pmf = pmf * lam / i
            cdf += pmf
        return float(cdf)


@pytest.mark.parametrize("mean", [1e-3, 0.5, 3.0, 7.5, 15.9, 16.0, 16.5])
def test_the_search_from_zero_decides_as_the_guess_and_check_at_the_steps(mean: float) -> None:
    """q on the float64 nearest each CDF value, a few ulps either side, and far enough away
    (1e-12, relative) for float64 to decide: where the search up from 0 cannot be sure its
    rounded sum is on the right side, it leaves q to the guess and check, so the quantile is
    the guess and check's (pdtr's rounding) at the step and the exact one away from it."""
    for k in range(40):
        step = _exact_cdf(k, mean)
        if step >= 1.0:
            break
        near = [step]
        for _ in range(4):
            near = [np.nextafter(near[0], 0.0), *near, np.nextafter(near[-1], 1.0)]
        q = np.array([x for x in near if 0.0 < x < 1.0])
        np.testing.assert_array_equal(poisson_quantile(q, mean), _guess_and_check(q, mean + 0 * q))
        for far in (step * (1.0 - 1e-12), step * (1.0 + 1e-12)):
            if 0.0 < far < 1.0:
                assert float(poisson_quantile(far, mean)) == _exact_quantile(far, mean)


def test_the_search_from_zero_changes_no_quantile() -> None:
    """200,000 uniforms against means spread over both paths (the search takes means up to 16):
    the same quantiles as the guess and check alone."""
    rng = np.random.default_rng(11)
    q = rng.random(200_000)
    mean = np.exp(rng.normal(np.log(3.0), 1.5, q.size))
    np.testing.assert_array_equal(poisson_quantile(q, mean), _guess_and_check(q, mean))


def test_scipy_is_one_step_low_in_the_far_tail_where_this_is_exact() -> None:
    """q = 1 - 2**-53 and mean 100: P(N > 192) = 1.114e-16 > 2**-53, so the quantile is 193
    (decimal arithmetic); scipy.stats.poisson.ppf says 192. Found by the hypothesis test."""
    q = 1.0 - 2.0**-53
    assert _exact_quantile(q, 100.0) == 193
    assert float(poisson_quantile(q, 100.0)) == 193.0
    assert float(stats.poisson.ppf(q, 100.0)) == 192.0


def test_equals_scipy_away_from_the_far_tail() -> None:
    """Means up to 1e5: beyond, scipy's own CDF drifts in the tails (pdtrc is 3.7 % off at
    mean 1e7 and a 1e-6 tail, against a float64 sum of the pmf), and so do both quantiles."""
    mean = np.concatenate([np.geomspace(1e-12, 1e5, 400), [0.5, 1.0, 7.0, 100.0]])
    for q in (1e-16, 0.01, 0.5, 0.9, 0.99, 0.999999):
        assert np.array_equal(poisson_quantile(np.asarray(q), mean), stats.poisson.ppf(q, mean))


def test_equals_scipy_on_the_engines_draws() -> None:
    """Uniforms on the 2**-53 grid of Generator.random against means spread as the
    instability term's counts (log-normal rates times days of training): 200,000 draws,
    the instability counts drawn before this function replaced scipy's, equal."""
    rng = np.random.default_rng(4)
    q = rng.random(200_000)
    mean = np.exp(rng.normal(np.log(2.0), 2.5, q.size))
    assert np.array_equal(poisson_quantile(q, mean), stats.poisson.ppf(q, mean))


_REL = 1e-9  # scipy's pdtr/pdtrc are accurate to far better than this relative error


@given(
    q=st.floats(0.0, 1.0, exclude_max=True),
    mean=st.one_of(st.just(0.0), st.floats(1e-300, 1e7)),
)
def test_defining_inequalities_over_the_whole_domain(q: float, mean: float) -> None:
    """``P(N <= k - 1) < q <= P(N <= k)`` on scipy's CDF (below the median) or survival
    function (above it, where the CDF rounds to 1), within its rounding."""
    k = float(poisson_quantile(q, mean))
    assert k == int(k) >= 0.0
    if mean == 0.0 or q == 0.0:
        assert k == 0.0
        return
    if q <= 0.5:
        assert special.pdtr(k, mean) >= q * (1 - _REL)
        assert k == 0.0 or special.pdtr(k - 1.0, mean) < q * (1 + _REL)
    else:
        assert special.pdtrc(k, mean) <= (1.0 - q) * (1 + _REL)
        assert k == 0.0 or special.pdtrc(k - 1.0, mean) > (1.0 - q) * (1 - _REL)


def test_zero_probability_or_zero_mean_is_zero_and_shapes_broadcast() -> None:
    got = poisson_quantile([[0.0], [0.7]], [0.0, 2.0, 50.0])
    assert got.shape == (2, 3)
    assert got[0].tolist() == [0.0, 0.0, 0.0]
    assert got[1].tolist() == [0.0, _exact_quantile(0.7, 2.0), _exact_quantile(0.7, 50.0)]
    assert float(poisson_quantile(0.5, 0.0)) == 0.0


@pytest.mark.parametrize(
    ("q", "mean"), [(1.0, 2.0), (-0.1, 2.0), (np.nan, 2.0), (0.5, -1.0), (0.5, np.inf)]
)
def test_out_of_domain_is_an_error(q: float, mean: float) -> None:
    with pytest.raises(ValueError, match="poisson_quantile needs"):
        poisson_quantile(q, mean)
