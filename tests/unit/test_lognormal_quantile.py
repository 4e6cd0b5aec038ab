"""The log-normal quantile table: its stated guarantee against scipy's ``ndtr``.

Oracle: ``Phi(ln Q̂(p) / s)`` against ``p`` (``scipy.special.ndtr``), and scipy's
``lognorm`` for the scaled prior. The bound is the module's own: ``1e-9 min(p, 1 - p)``.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from accelsim.dists._lognormal_quantile import (
    _error_ratio,
    exact_lognormal_quantile,
    lognormal_quantile,
    lognormal_quantile_table,
)
from accelsim.dists._types import LogNormal

TOL = 1e-9
INTERIOR = (2.0**-5, 1.0 - 2.0**-5)
# shapes of LogNormal priors in priors.yaml are 0.3-1.6; the others span the attempted range
SHAPES = [1e-3, 0.05, 0.3, 0.59, 1.04, 1.4, 2.5, 5.0]


def _grid(seed: int) -> np.ndarray:
    """200,000 uniforms, every knot and cell quarter of the interior, and the ends."""
    quarters = (128 + np.arange(4 * 3840 + 1) / 4.0) / 4096.0
    ends = [0.0, 2.0**-53, 2.0**-6, INTERIOR[0], np.nextafter(INTERIOR[0], 0), 0.5]
    ends += [INTERIOR[1], np.nextafter(INTERIOR[1], 1), 1.0 - 2.0**-53, 1.0]
    rng = np.random.default_rng(seed)
    return np.sort(np.concatenate([rng.random(200_000), quarters, ends]))


@pytest.mark.parametrize("sigma", SHAPES)
def test_table_meets_its_bound_and_is_the_exact_path_outside_the_interior(sigma: float) -> None:
    """Interior: |Phi(ln Q̂ / s) - p| <= 1e-9 min(p, 1 - p); outside it (and at 0 and 1),
    bit for bit the exact path; non-decreasing over the whole sorted grid."""
    assert lognormal_quantile_table(sigma) is not None
    p = _grid(int(sigma * 1000))
    x = lognormal_quantile(sigma, p)
    inside = (p >= INTERIOR[0]) & (p < INTERIOR[1])
    assert np.all(_error_ratio(sigma, p[inside], x[inside]) <= TOL)
    np.testing.assert_array_equal(x[~inside], exact_lognormal_quantile(sigma, p[~inside]))
    assert x[0] == 0.0
    assert x[-1] == np.inf
    assert np.all(np.diff(x) >= 0.0)


@given(sigma=st.floats(0.01, 6.0), p=st.floats(INTERIOR[0], INTERIOR[1], exclude_max=True))
@settings(max_examples=200, deadline=None)
def test_any_shape_with_a_table_meets_the_bound(sigma: float, p: float) -> None:
    """Whatever the shape in the range tried: a table that exists meets its bound."""
    x = lognormal_quantile(sigma, np.array([p]))
    assert _error_ratio(sigma, np.array([p]), x)[0] <= TOL


def test_shapes_without_a_table_take_the_exact_path() -> None:
    """Outside (0, 8] (or where a check fails) there is no table: exact values, bit for bit."""
    p = _grid(3)
    for sigma in (8.5, 20.0):
        assert lognormal_quantile_table(sigma) is None
        np.testing.assert_array_equal(
            lognormal_quantile(sigma, p), np.exp(sigma * scipy.special.ndtri(p))
        )


@pytest.mark.parametrize("d", [LogNormal(low=0.5, high=30.0), LogNormal(low=1e-3, high=1e6)])
def test_lognormal_prior_quantiles_meet_the_bound_against_scipy(d: LogNormal) -> None:
    """``LogNormal.ppf`` = exp(mu) Q̂_s: scipy's lognorm cdf of it is p to the table's bound
    (plus rounding of the scaling, ~1e-16 relative in x, i.e. < 1e-15 s/phi in p)."""
    p = _grid(5)
    x = d.ppf(p)
    frozen = d._frozen()
    inside = (p > 0.0) & (p < 1.0)
    q = np.minimum(p, 1.0 - p)[inside]
    side = np.where(p[inside] > 0.5, frozen.sf(x[inside]), frozen.cdf(x[inside]))
    assert np.all(np.abs(side - q) <= TOL * q + 1e-14 * q)
    assert x[0] == 0.0
    assert x[-1] == np.inf
