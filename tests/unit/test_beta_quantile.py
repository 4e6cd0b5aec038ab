"""Unit tests of accelsim.dists._beta_quantile: the tabulated beta quantile against ``betainc``.

The contract (module docstring): ``Q̂(p)`` lies within one float64 spacing of some ``x`` with
``|I_x(a, b) - p| <= 1e-9 * min(p, 1 - p)``, ``I`` the regularised incomplete beta function;
``Q̂`` is non-decreasing, ``Q̂(0) = 0``, ``Q̂(1) = 1``. The oracle here is written apart from
the module's own build check: ``I_x`` from ``scipy.special.betainc``, and for ``p > 1/2`` the
complement ``1 - I_x`` as ``1 - betainc`` where ``1 - p >= 2**-5`` (absolute error about
1e-15, under 1e-4 of the tolerance there) and as ``scipy.special.betaincc`` (no cancellation)
above.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import scipy.special
from hypothesis import given
from hypothesis import strategies as st

import accelsim.dists._beta_quantile as bq
from accelsim._typing import BoolArray, FloatArray
from accelsim.dists._beta_quantile import beta_quantile, beta_quantile_table, exact_beta_quantile

REL_TOL = 1e-9
P_TAIL = 2.0**-5
SMALLEST_NORMAL = float(np.finfo(np.float64).tiny)  # below it betainc returns garbage


def _pert_shape(low: float, mode: float, high: float, lamb: float = 4.0) -> tuple[float, float]:
    """``(alpha, beta)`` of PERT(low, mode, high, lamb), as ``dists.PERT`` computes them."""
    width = high - low
    return 1.0 + lamb * (mode - low) / width, 1.0 + lamb * (high - mode) / width


PERT_SHAPES = [
    _pert_shape(1, 3, 8),
    _pert_shape(20, 30, 40),
    _pert_shape(0.6, 0.8, 0.95),
    _pert_shape(1.1, 1.4, 1.6),
    _pert_shape(0.2, 0.45, 0.8),
    _pert_shape(0, 0, 1),  # mode at the low end: alpha = 1
    _pert_shape(0, 1, 1),  # mode at the high end: beta = 1
]
SHIPPED_SHAPES = [*PERT_SHAPES, (1.3, 12.0)]  # the priors we ship must take the fast path
OTHER_SHAPES = [_pert_shape(0, 0.5, 1, lamb=0.0), (0.5, 0.5), (2.0, 5.0), (0.1, 3.0), (50.0, 50.0)]


@pytest.fixture
def fresh_cache() -> Iterator[None]:
    """Empty the table cache before and after, so a patched build cannot leak."""
    beta_quantile_table.cache_clear()
    yield
    beta_quantile_table.cache_clear()


def _complement_side(
    a: float, b: float, x: FloatArray, q: FloatArray, upper: BoolArray
) -> FloatArray:
    """``I_x(a, b)`` where ``p <= 1/2``, ``1 - I_x(a, b)`` elsewhere (``q = min(p, 1 - p)``)."""
    out = scipy.special.betainc(a, b, x)
    out = np.where(upper, 1.0 - out, out)
    far = upper & (q < P_TAIL)
    out[far] = scipy.special.betaincc(a, b, x[far])
    return np.asarray(out, dtype=np.float64)


def _excess(a: float, b: float, p: FloatArray, x: FloatArray) -> FloatArray:
    """How far ``p`` lies outside the contract's reach from ``x``, in units of the tolerance.

    ``<= 1`` means ``x`` is within one float64 spacing of a number whose ``I`` is within
    ``1e-9 * min(p, 1 - p)`` of ``p``; where ``x`` itself is, the value is ``|I_x - p| / tol``.
    At ``p`` = 0 or 1 (tolerance 0) it is 0 if ``x`` is exactly the end, else inf.
    """
    upper = p > 0.5
    q = np.where(upper, 1.0 - p, p)
    tol = REL_TOL * q
    with np.errstate(divide="ignore", invalid="ignore"):
        excess = np.abs(_complement_side(a, b, x, q, upper) - q) / tol
        bad = np.flatnonzero(~(excess <= 1.0))
        if bad.size:
            xb, qb, ub = x[bad], q[bad], upper[bad]
            ends = [
                _complement_side(a, b, np.clip(np.nextafter(xb, to), 0.0, 1.0), qb, ub)
                for to in (-1.0, 2.0)
            ]
            lo, hi = np.minimum(*ends), np.maximum(*ends)
            excess[bad] = np.maximum(np.maximum(lo - qb, qb - hi), 0.0) / tol[bad]
    ends_exact = ((p == 0.0) & (x == 0.0)) | ((p == 1.0) & (x == 1.0))
    excess[ends_exact] = 0.0
    return np.where((q == 0.0) & ~ends_exact, np.inf, excess)


def _dense_grid() -> FloatArray:
    """200,001 uniform points, log-spaced tails down to 1e-300 and to 1 - 1e-16, the ends."""
    return np.concatenate(
        [
            np.linspace(0.0, 1.0, 200_001),
            np.logspace(-300.0, np.log10(P_TAIL), 3_000),
            1.0 - np.logspace(-16.0, np.log10(P_TAIL), 2_000),
            [0.0, 1.0, P_TAIL, 1.0 - P_TAIL, 2.0**-53, 1.0 - 2.0**-53, 2.0**-70],
        ]
    )


def _assert_monotone(p: FloatArray, x: FloatArray) -> None:
    """Non-decreasing up to the evaluation's rounding: relative ``1e-15 * (1 + |log x|)``.

    That is the bound of the module docstring (Horner on ``log Q`` in the tails, whose
    rounding is relative to ``|log Q| <= 745``); the exact path's own rounding is an ulp.
    """
    order = np.argsort(p, kind="stable")
    xs = x[order]
    tiny = np.maximum(xs[:-1], np.finfo(np.float64).smallest_subnormal)
    slack = 1e-15 * (1.0 + np.abs(np.log(tiny))) * xs[:-1]
    assert np.all(np.diff(xs) >= -slack)


@pytest.mark.parametrize("shape", SHIPPED_SHAPES, ids=repr)
def test_shipped_shapes_have_tables(shape: tuple[float, float]) -> None:
    """PERT (lamb = 4) and Beta(1.3, 12) priors get a checked table: the fast path is taken."""
    table = beta_quantile_table(*shape)
    assert table is not None
    p = np.linspace(0.0, 1.0, 101)
    np.testing.assert_array_equal(beta_quantile(*shape, p), table(p))


@pytest.mark.parametrize("shape", SHIPPED_SHAPES + OTHER_SHAPES, ids=repr)
def test_dense_grid_meets_contract(shape: tuple[float, float]) -> None:
    """Every point of a 205,000-point grid (tails to 1e-300 and 1 - 1e-16) is within the bound,
    whichever path serves the shape; values lie in [0, 1] and are non-decreasing."""
    p = _dense_grid()
    x = beta_quantile(*shape, p)
    assert np.all((x >= 0.0) & (x <= 1.0))
    excess = _excess(*shape, p, x)
    assert excess.max() <= 1.0, p[np.argmax(excess)]
    _assert_monotone(p, x)


@pytest.mark.parametrize("shape", SHIPPED_SHAPES, ids=repr)
def test_knots_and_boundaries_meet_contract(shape: tuple[float, float]) -> None:
    """Every interior knot k / 4096, every tail knot 2**-(5 + j/16) and its mirror 1 - 2**-(5
    + j/16), the interior's ends 2**-5 and 1 - 2**-5 and their float64 neighbours: within the
    bound and non-decreasing across the joins."""
    knots = np.arange(4097) / 4096.0
    tail = np.exp2(-5.0 - np.arange(65 * 16 + 1) / 16.0)
    ends = np.array([P_TAIL, 1.0 - P_TAIL])
    neighbours = [np.nextafter(ends, to) for to in (0.0, 1.0)]
    p = np.concatenate([knots, tail, 1.0 - tail, ends, *neighbours])
    x = beta_quantile(*shape, p)
    assert _excess(*shape, p, x).max() <= 1.0
    _assert_monotone(p, x)
    around = np.sort(np.concatenate([ends, *neighbours]))
    assert np.all(np.diff(beta_quantile(*shape, around)) >= 0.0)


@pytest.mark.parametrize("shape", SHIPPED_SHAPES + OTHER_SHAPES + [(0.05, 0.05)], ids=repr)
def test_ends_are_exact(shape: tuple[float, float]) -> None:
    """Q(0) = 0 and Q(1) = 1 exactly, with a table and without."""
    out = beta_quantile(*shape, np.array([0.0, 1.0, 1.0, 0.0]))
    assert out.tolist() == [0.0, 1.0, 1.0, 0.0]


def test_output_keeps_the_shape_of_p() -> None:
    """A 2-D or 0-D array of probabilities comes back in the same shape, same values."""
    p = np.linspace(0.0, 1.0, 12).reshape(3, 4)
    out = beta_quantile(2.0, 5.0, p)
    assert out.shape == (3, 4)
    np.testing.assert_array_equal(out.ravel(), beta_quantile(2.0, 5.0, p.ravel()))
    assert beta_quantile(2.0, 5.0, np.array(0.5)).shape == ()


def test_long_arrays_match_short_ones() -> None:
    """Arrays past the 16,384-value chunk give, value for value, what short arrays give."""
    p = np.linspace(0.0, 1.0, 40_001)
    pieces = [beta_quantile(2.0, 5.0, p[i : i + 1000]) for i in range(0, p.size, 1000)]
    np.testing.assert_array_equal(beta_quantile(2.0, 5.0, p), np.concatenate(pieces))


def test_shapes_outside_the_range_use_the_exact_path() -> None:
    """No table below 0.15 or above 1e4; the front function is then the exact path itself."""
    assert beta_quantile_table(0.1, 3.0) is None
    assert beta_quantile_table(3.0, 2e4) is None
    p = np.linspace(0.0, 1.0, 33)
    np.testing.assert_array_equal(beta_quantile(0.1, 3.0, p), exact_beta_quantile(0.1, 3.0, p))


def test_a_table_that_fails_its_check_falls_back(
    fresh_cache: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a tolerance of 1e-15 the cubic pieces (errors near 1e-10 relative) fail the build
    check: no table, and the front function returns exactly the exact path's values."""
    assert beta_quantile_table(2.0, 5.0) is not None
    beta_quantile_table.cache_clear()
    monkeypatch.setattr(bq, "_REL_TOL", 1e-15)
    assert beta_quantile_table(2.0, 5.0) is None
    p = np.concatenate([np.linspace(0.0, 1.0, 65), [1e-30, 1.0 - 1e-12]])
    np.testing.assert_array_equal(beta_quantile(2.0, 5.0, p), exact_beta_quantile(2.0, 5.0, p))


def test_exact_path_repairs_scipy_and_reaches_subnormals() -> None:
    """scipy's inverse returns nan at Beta(1.03125, 0.75), p = 1e-20; the repair matches the
    leading term ``(p a B(a, b))**(1/a)`` (relative error O(x) < 1e-15) to 1e-12. Below the
    smallest normal float the answer is a subnormal or 0, within the contract."""
    a, b = 1.03125, 0.75
    p = np.array([1e-300, 1e-100, 1e-20])
    leading = (p * a * np.exp(scipy.special.betaln(a, b))) ** (1.0 / a)
    np.testing.assert_allclose(exact_beta_quantile(a, b, p), leading, rtol=1e-12)
    tiny = np.array([1e-300, 1e-200])  # Beta(0.5, 0.5): Q(p) ~ (pi p / 2)**2 underflows
    x = exact_beta_quantile(0.5, 0.5, tiny)
    assert np.all(x < np.finfo(np.float64).tiny)
    assert _excess(0.5, 0.5, tiny, x).max() <= 1.0


shape_values = st.floats(0.05, 500.0, allow_nan=False)
pert_shapes = st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 8.0, exclude_min=True)).map(
    lambda m: _pert_shape(0.0, m[0], 1.0, lamb=m[1])
)
shapes = st.one_of(st.tuples(shape_values, shape_values), pert_shapes)
probabilities = st.lists(
    st.one_of(
        st.floats(0.0, 1.0).filter(lambda v: v == 0.0 or v >= SMALLEST_NORMAL),
        st.floats(-70.0, -5.0).map(lambda e: 2.0**e),
        st.floats(-53.0, -5.0).map(lambda e: 1.0 - 2.0**e),
    ),
    min_size=1,
    max_size=40,
)


@given(shape=shapes, values=probabilities)
def test_any_shape_meets_contract(shape: tuple[float, float], values: list[float]) -> None:
    """For any shape in [0.05, 500]**2 or of a PERT, and any probabilities (tails included),
    table or exact path: within the bound, in [0, 1], non-decreasing, ends exact. Subnormal
    probabilities are left out: there ``betainc`` itself is wrong (it returns 0 or 1e-308), so
    no oracle can judge an answer."""
    p = np.array([0.0, 1.0, *values])
    x = beta_quantile(*shape, p)
    assert x[0] == 0.0
    assert x[1] == 1.0
    assert np.all((x >= 0.0) & (x <= 1.0))
    assert _excess(*shape, p, x).max() <= 1.0
    _assert_monotone(p, x)
