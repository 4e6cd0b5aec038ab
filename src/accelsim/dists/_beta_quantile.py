"""Quantile function of the beta distribution from a per-shape table checked when built.

Inverse-transform sampling ``x = Q(u)`` of PERT and Beta priors needs the beta quantile
``Q = Q_{a,b}`` at millions of probabilities; scipy's ``betaincinv`` costs 2-3 us a value.
:func:`beta_quantile` evaluates cubic pieces instead (about 10 ns a value in the interior, 17
ns on average over 4096 uniforms, the tails taking a slower path), and takes the exact path,
:func:`exact_beta_quantile`, for shapes whose table fails a check. One table per shape:

- interior ``p`` in ``[2**-5, 1 - 2**-5]``: 3840 cells of width ``2**-12`` (the cell
  ``floor(4096 p)`` and the position in it are exact), cubic Hermite in ``p`` with knot values
  ``Q(p_k)`` and exact slopes ``dQ/dp = 1 / f(Q)``, ``f`` the beta density;
- lower tail ``p < 2**-5``: ``y = log Q`` cubic Hermite in ``log2 p``, 16 cells per octave down
  to ``p = 2**-70``, slopes ``dy/dlog2(p) = ln 2 * p / (f(Q) Q)``; ``y`` is nearly linear
  there, as ``Q ~ (a B(a, b) p)**(1/a)`` near 0. Below ``2**-70`` (``Generator.random`` never
  goes below ``2**-53`` but for 0), at 0 and at 1: the exact path;
- upper tail: ``1 - Q_{a,b}(p) = Q_{b,a}(1 - p)`` (``1 - p`` exact), the lower-tail table of
  the swapped shape, down to ``1 - p = 2**-53``.

Knots come from the exact path at every 8th knot, cubic interpolation, then two Newton steps
on ``I_x(a, b) = p`` (on ``log x`` in the tails); where ``Q < 1e-280``, ``log Q`` is the
leading term above, exact in float64. The interior's end knots are the tails' own values.

Guarantee, checked at build (a shape failing any check gets no table: the exact path), with
``I`` the regularised incomplete beta function and ``tol = 1e-9 * min(p, 1 - p)``:

1. For ``p = 0`` and every ``p >= 2.2e-308`` (below, ``betainc`` itself returns 0 or wrong
   values, so no answer can be checked; such ``p`` take the exact path), ``Q̂(p)`` lies within
   one float64 spacing of some ``x`` with ``|I_x(a, b) - p| <= tol``; ``x = Q̂(p)`` itself
   does except where float64 cannot resolve the quantile to the tolerance (quantiles that are
   subnormal, or within ulps of 1). For ``p > 1/2`` the probability is measured as ``1 - I_x
   = I_{1-x}(b, a)`` without cancellation, so the bound is relative to ``1 - p``: stricter
   than the exact path's own acceptance test (``1e-9 * p``). Checked with ``betainc`` at every
   knot and at ``t = 1/4, 1/2, 3/4`` of every cell a float64 ``p`` can reach, evaluating the
   table as callers do, against ``0.95 tol``: a cubic Hermite's error is ``t**2 (1 - t)**2
   h**4 / 24`` times a fourth derivative, whose peak between check points exceeds the largest
   checked value by under 5% unless that derivative changes fourfold across one cell (at most
   1/128 of ``p`` in the interior, 1/16 octave in the tails). The largest error found is 0.2
   tol for PERT shapes, 0.81 tol for Beta(0.153, 6.47) at the edge of the shape range; the
   tests hold the bound on grids of 200,000 points.
2. Non-decreasing: every cell's cubic is monotone (its derivative is checked at the cell's
   ends and vertex) and adjacent pieces share knots, so ``Q̂`` is non-decreasing up to the
   rounding of its evaluation (relative ``1e-15 * |log Q|`` at most; none seen in tests).
3. ``Q̂(0) = 0``, ``Q̂(1) = 1`` exactly, and every value lies in ``[0, 1]`` (each cell's
   Horner rounding bound ``6u * sum |c_k|`` is checked against the ends).

Tables are attempted for ``a, b`` in ``[0.15, 1e4]`` (every shape tried there got one; below,
``Q ~ p**(1/a)`` is too curved near ``2**-5``). A build takes 4-40 ms, median 11 ms.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import scipy.special

from accelsim._typing import BoolArray, FloatArray

_REL_TOL = 1e-9  # accepted error of I_x(a, b) relative to min(p, 1 - p), as in the exact path
_SHAPE_MIN, _SHAPE_MAX = 0.15, 1e4
_TAIL_OCTAVES = 5  # the interior is [2**-5, 1 - 2**-5]
_CELLS_PER_UNIT_P = 4096  # interior cell width 2**-12: cell index and position are exact
_CELLS_PER_OCTAVE = 16
_N_UPPER = (54 - _TAIL_OCTAVES) * _CELLS_PER_OCTAVE  # 1 - p >= 2**-53 for float64 p < 1
_N_LOWER = (70 - _TAIL_OCTAVES) * _CELLS_PER_OCTAVE  # down to p = 2**-70, then the exact path
# Rows of BetaQuantileTable.coef: [0, 4096] interior cells by floor(4096 p) (the rows of tail
# p unused), then the upper-tail cells, the lower-tail cells, and a nan row past the grid.
_FIRST_INTERIOR = _CELLS_PER_UNIT_P >> _TAIL_OCTAVES
_LAST_INTERIOR = _CELLS_PER_UNIT_P - _FIRST_INTERIOR  # the first row past the interior
_UPPER_ROW = _CELLS_PER_UNIT_P + 1
_LOWER_ROW = _UPPER_ROW + _N_UPPER
_PAST_ROW = _LOWER_ROW + _N_LOWER
_TOP_U = _TAIL_OCTAVES * _CELLS_PER_OCTAVE  # -16 log2 p at the top of a tail
_SMALLEST = float(np.finfo(np.float64).smallest_subnormal)
_ASYMPTOTIC_BELOW = 1e-280  # I_x = x**a / (a B) * (1 + O(b x)): exact in float64 below this
_CHECK_MARGIN = 0.95  # the error's peak may lie between check points (module docstring)
_COARSE = 8  # knots come from the exact path at every 8th, Newton steps at the others
_NEWTON_STEPS = 2
_CHUNK = 16384  # probabilities per pass: larger arrays run 2x slower per value
_HORNER_GAMMA = 6.0 * 2.0**-53 / (1.0 - 6.0 * 2.0**-53)  # error bound of a cubic's Horner


def exact_beta_quantile(alpha: float, beta: float, p: FloatArray) -> FloatArray:
    """Quantile of the standard beta distribution, repaired where scipy's inverse fails.

    Parameters
    ----------
    alpha, beta : float
        Shape parameters, > 0. [-]
    p : FloatArray
        Probabilities in [0, 1], no nan. [-]

    Returns
    -------
    FloatArray
        ``x`` with ``I_x(alpha, beta) = p``, same shape as ``p``. [-]

    Notes
    -----
    scipy 1.17's inverse (boost ``ibeta_inv``) returns nan or a wrong tiny value for some
    shapes at small ``p`` (e.g. ``alpha=1.03, beta=0.75, p=1e-20``) while ``betainc`` stays
    accurate; so answers off by more than ``1e-9 * p`` in ``betainc`` are found again by
    bisection on ``log x`` (64 halvings of ``[log 5e-324, 0]``: full precision). This is
    ``dists._beta_ppf`` except that the bisection starts at the smallest subnormal, not the
    smallest normal float: quantiles below ``2.2e-308`` come out subnormal or 0, not
    ``2.2e-308``. Oracle: ``scipy.special.betainc``.

    Examples
    --------
    >>> import numpy as np
    >>> exact_beta_quantile(2.0, 1.0, np.array([0.0, 0.25, 1.0]))  # Q(p) = sqrt(p)
    array([0. , 0.5, 1. ])
    """
    x = np.asarray(scipy.special.betaincinv(alpha, beta, p), dtype=np.float64)
    wrong = ~(np.abs(scipy.special.betainc(alpha, beta, x) - p) <= 1e-9 * p)  # nan is wrong too
    wrong &= (p > 0.0) & (p < 1.0)
    if wrong.any():
        target = p[wrong]
        lo = np.full(target.shape, math.log(_SMALLEST))
        hi = np.zeros(target.shape)
        for _ in range(64):
            mid = 0.5 * (lo + hi)
            below = scipy.special.betainc(alpha, beta, np.exp(mid)) < target
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        x[wrong] = np.exp(0.5 * (lo + hi))
    return x


@dataclass(frozen=True, eq=False)
class BetaQuantileTable:
    """Cubic pieces of the quantile of Beta(alpha, beta); call it on probabilities.

    Build it with :func:`beta_quantile_table`, which checks it (see the module docstring).

    Attributes
    ----------
    alpha, beta : float
        Shape parameters. [-]
    coef : FloatArray
        ``(4, rows)``: ``coef[k, r]`` multiplies ``t**k`` in row ``r``, ``t`` in [0, 1) the
        position in the cell. Rows 0-4096 hold ``Q`` in the interior cell ``floor(4096 p)``,
        then come the cells of ``log Q_{b,a}(1 - p)`` (upper tail) and of ``log Q_{a,b}(p)``
        (lower tail) along ``-16 log2(min(p, 1 - p))``, then a nan row past the grid.
    tail_row : BoolArray
        ``(4097,)``: whether ``floor(4096 p)`` lies outside the interior.
    """

    alpha: float
    beta: float
    coef: FloatArray
    tail_row: BoolArray

    def __call__(self, p: FloatArray) -> FloatArray:
        """Quantile at probabilities ``p`` in [0, 1] (no nan), same shape as ``p``. [-]"""
        flat = p.reshape(-1)
        if flat.size <= _CHUNK:
            return self._evaluate(flat).reshape(p.shape)
        x = np.empty_like(flat)  # in chunks whose temporaries stay in cache
        for start in range(0, flat.size, _CHUNK):
            x[start : start + _CHUNK] = self._evaluate(flat[start : start + _CHUNK])
        return x.reshape(p.shape)

    def _evaluate(self, flat: FloatArray) -> FloatArray:
        """Quantile at the 1-D probabilities ``flat``."""
        t = flat * float(_CELLS_PER_UNIT_P)  # exact, and so are the row and position below
        row_float = np.floor(t)
        t -= row_float
        row = row_float.astype(np.intp)
        tail = np.flatnonzero(self.tail_row.take(row))
        if tail.size:  # the tail cells' rows and positions replace the interior's
            p_tail = flat.take(tail)
            q = np.minimum(p_tail, 1.0 - p_tail)  # exact
            upper = q != p_tail
            u = np.log2(np.maximum(q, _SMALLEST))  # p = 0 and 1 go past the grid
            u *= -float(_CELLS_PER_OCTAVE)
            u += np.where(upper, _UPPER_ROW - _TOP_U, _LOWER_ROW - _TOP_U)
            np.minimum(u, _PAST_ROW, out=u)
            tail_row_float = np.floor(u)
            u -= tail_row_float
            t.put(tail, u)
            row.put(tail, tail_row_float.astype(np.intp))
        x: FloatArray = self.coef[3].take(row)
        for c in self.coef[2::-1]:  # Horner, in place
            x *= t
            x += c.take(row)
        if tail.size:  # x holds log Q_{a,b}(p) or log Q_{b,a}(1 - p) there
            x.put(tail, np.abs(np.subtract(upper, np.exp(x.take(tail)))))  # z or 1 - z
            past = tail_row_float >= _PAST_ROW
            if np.count_nonzero(past):
                x.put(tail[past], exact_beta_quantile(self.alpha, self.beta, p_tail[past]))
        return x


def _log_density(alpha: float, beta: float, log_x: FloatArray) -> FloatArray:
    """``log f(x)`` of Beta(alpha, beta) from ``log x``, finite wherever ``0 < x < 1``."""
    log1m_x = np.log1p(-np.exp(log_x))
    log_beta = float(scipy.special.betaln(alpha, beta))
    return (alpha - 1.0) * log_x + (beta - 1.0) * log1m_x - log_beta


def hermite_coefficients(value: FloatArray, slope: FloatArray) -> FloatArray:
    """``(n, 4)`` coefficients in ``t`` in [0, 1] of the cubics through ``n + 1`` knots.

    ``slope`` is the derivative at each knot per cell (per unit of ``t``). Shared with
    :mod:`accelsim.dists._lognormal_quantile`.
    """
    step = np.diff(value)
    c2 = 3.0 * step - 2.0 * slope[:-1] - slope[1:]
    c3 = -2.0 * step + slope[:-1] + slope[1:]
    return np.stack([value[:-1], slope[:-1], c2, c3], axis=1)


def is_monotone(coef: FloatArray, sign: float) -> bool:
    """Whether ``sign`` times every cubic of ``(n, 4)`` coefficients is non-decreasing on
    [0, 1] (derivative >= 0 at both ends and at the vertex)."""
    c1, c2, c3 = (sign * coef[:, k] for k in (1, 2, 3))
    ends = (c1 >= 0.0) & (c1 + 2.0 * c2 + 3.0 * c3 >= 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        vertex = -c2 / (3.0 * c3)
        inside = (c3 > 0.0) & (vertex > 0.0) & (vertex < 1.0)  # c3 > 0: vertex is a minimum
        dip = c1 + vertex * (2.0 * c2 + 3.0 * c3 * vertex)
    return bool(np.all(ends & (~inside | (dip >= 0.0))))


def _fill(value: FloatArray, slope: FloatArray) -> FloatArray:
    """Newton's start at every knot: the cubics through every 8th (``slope`` per knot step)."""
    coef = hermite_coefficients(value, slope * _COARSE)
    t = np.arange(_COARSE) / _COARSE
    fine = coef[:, :1] + t * (coef[:, 1:2] + t * (coef[:, 2:3] + t * coef[:, 3:]))
    return np.append(fine.ravel(), value[-1])


def _interior_coef(alpha: float, beta: float, first: float, last: float) -> FloatArray:
    """``(cells, 4)`` coefficients of ``Q`` on the interior cells; end knots as given."""

    def dx_dp(x: FloatArray) -> FloatArray:
        return np.exp(-_log_density(alpha, beta, np.log(x)))

    p = np.arange(_FIRST_INTERIOR, _LAST_INTERIOR + 1) / float(_CELLS_PER_UNIT_P)
    x = exact_beta_quantile(alpha, beta, p[::_COARSE])
    x = _fill(x, dx_dp(x) / _CELLS_PER_UNIT_P)
    for _ in range(_NEWTON_STEPS):  # 1e-6 relative, then 1e-12, then below rounding
        x -= (scipy.special.betainc(alpha, beta, x) - p) * dx_dp(x)
    x[0], x[-1] = first, last  # the tails' values there: no step back where pieces meet
    return hermite_coefficients(x, dx_dp(x) / _CELLS_PER_UNIT_P)


def _tail_coef(alpha: float, beta: float, cells: int) -> FloatArray:
    """``(cells, 4)`` coefficients of ``log Q`` in the lower tail, along ``-16 log2 p``.

    Where ``x = Q(p) < 1e-280``, ``log x`` is the leading term of the series of ``I_x``
    near 0, ``(log p + log(a B(a, b))) / a``, whose relative error ``O(b x)`` is below
    rounding; elsewhere Newton steps on ``y = log x`` polish the interpolated start.
    """
    s = -_TAIL_OCTAVES - np.arange(cells + 1) / _CELLS_PER_OCTAVE
    log_p = s * math.log(2.0)
    p = np.exp(log_p)
    asymptotic = (log_p + math.log(alpha) + scipy.special.betaln(alpha, beta)) / alpha
    # dy/du = -ln 2 / 16 * p / (f(x) x): y = log x, u = -16 log2 p - 80 the cell coordinate
    scale = -math.log(2.0) / _CELLS_PER_OCTAVE

    def spread(y: FloatArray, log_p: FloatArray) -> FloatArray:  # p / (f(x) x)
        return np.exp(log_p - _log_density(alpha, beta, y) - y)

    x = exact_beta_quantile(alpha, beta, p[::_COARSE])
    y = np.where(x < _ASYMPTOTIC_BELOW, asymptotic[::_COARSE], np.log(x))
    y = _fill(y, scale * spread(y, log_p[::_COARSE]))
    for _ in range(_NEWTON_STEPS):
        y -= (scipy.special.betainc(alpha, beta, np.exp(y)) / p - 1.0) * spread(y, log_p)
    y = np.where(asymptotic < math.log(_ASYMPTOTIC_BELOW), asymptotic, y)
    return hermite_coefficients(y, scale * spread(y, log_p))


def _probability_side(alpha: float, beta: float, x: FloatArray, upper: BoolArray) -> FloatArray:
    """``I_x(a, b)`` where not ``upper``, ``1 - I_x(a, b)`` where ``upper``, both accurate.

    ``1 - I_x(a, b) = I_{1-x}(b, a)``. ``d = 1 - x`` rounded is off by ``e = (1 - d) - x``
    (both subtractions exact: Sterbenz), so ``I_{1-x}(b, a) = I_d(b, a) + f(x) e`` up to
    ``f' e**2``, negligible for ``x > 1e-8``; there scipy's ``betaincc`` (10 times slower).
    """
    out = np.empty_like(x)
    lower = ~upper
    out[lower] = scipy.special.betainc(alpha, beta, x[lower])
    big = upper & (x >= 0.5)
    out[big] = scipy.special.betainc(beta, alpha, 1.0 - x[big])
    mid = upper & (x > 1e-8) & (x < 0.5)
    x_mid = x[mid]
    d = 1.0 - x_mid
    e = (1.0 - d) - x_mid
    density = np.exp(_log_density(alpha, beta, np.log(x_mid)))
    out[mid] = scipy.special.betainc(beta, alpha, d) + density * e
    small = upper & ~(x > 1e-8)  # nan too
    out[small] = scipy.special.betaincc(alpha, beta, x[small])
    return out


def _meets_contract(
    alpha: float, beta: float, p: FloatArray, x: FloatArray, rel_tol: float
) -> BoolArray:
    """Whether ``x`` is within a float64 spacing of an ``x'`` with ``|I_x' - p| <= tol``."""
    upper = p > 0.5
    q = np.where(upper, 1.0 - p, p)
    tol = rel_tol * q
    ok = np.abs(_probability_side(alpha, beta, x, upper) - q) <= tol
    bad = np.flatnonzero(~ok)
    if bad.size:
        side = upper[bad]
        near = [np.clip(np.nextafter(x[bad], to), 0.0, 1.0) for to in (-1.0, 2.0)]
        ends = [_probability_side(alpha, beta, end, side) for end in near]
        lo, hi = np.minimum(*ends), np.maximum(*ends)
        ok[bad] = (lo - tol[bad] <= q[bad]) & (q[bad] <= hi + tol[bad])
    return ok


def _build(alpha: float, beta: float, rel_tol: float) -> BetaQuantileTable | None:
    """The table of Beta(alpha, beta), or None if it fails a check (module docstring)."""
    upper = _tail_coef(beta, alpha, _N_UPPER)
    lower = _tail_coef(alpha, beta, _N_LOWER)
    interior = _interior_coef(alpha, beta, np.exp(lower[0, 0]), 1.0 - np.exp(upper[0, 0]))
    coef = np.full((_PAST_ROW + 1, 4), np.nan)
    coef[:_UPPER_ROW] = 0.0
    coef[_FIRST_INTERIOR:_LAST_INTERIOR] = interior
    coef[_UPPER_ROW:_LOWER_ROW] = upper
    coef[_LOWER_ROW:_PAST_ROW] = lower
    tails = coef[_UPPER_ROW:_PAST_ROW]
    # rounded Horner is within gamma * sum |c_k| of the cubic, monotone on [0, 1]
    slack = 2.0 * _HORNER_GAMMA * np.abs(coef).sum(axis=1)
    bounded = (
        np.all(interior[:, 0] >= slack[_FIRST_INTERIOR:_LAST_INTERIOR])
        and np.all(interior.sum(axis=1) + slack[_FIRST_INTERIOR:_LAST_INTERIOR] <= 1.0)
        and np.all(tails[:, 0] + slack[_UPPER_ROW:_PAST_ROW] <= 0.0)
    )
    if not (bounded and is_monotone(interior, 1.0) and is_monotone(tails, -1.0)):
        return None
    tail_row = np.ones(_UPPER_ROW, dtype=np.bool_)
    tail_row[_FIRST_INTERIOR:_LAST_INTERIOR] = False
    coef = np.ascontiguousarray(coef.T)
    coef.flags.writeable = tail_row.flags.writeable = False
    table = BetaQuantileTable(alpha, beta, coef, tail_row)

    def quarters(cells: int) -> FloatArray:  # every knot and cell quarter, in cell units
        return np.arange(4 * cells + 1) / 4.0

    check = np.concatenate(
        [
            (_FIRST_INTERIOR + quarters(_LAST_INTERIOR - _FIRST_INTERIOR)) / _CELLS_PER_UNIT_P,
            np.exp2(-_TAIL_OCTAVES - quarters(_N_LOWER) / _CELLS_PER_OCTAVE),
            1.0 - np.exp2(-_TAIL_OCTAVES - quarters(_N_UPPER) / _CELLS_PER_OCTAVE),
        ]
    )
    if not np.all(_meets_contract(alpha, beta, check, table(check), _CHECK_MARGIN * rel_tol)):
        return None
    return table


@lru_cache(maxsize=64)
def beta_quantile_table(alpha: float, beta: float) -> BetaQuantileTable | None:
    """The checked quantile table of Beta(alpha, beta), or None (then use the exact path).

    Parameters
    ----------
    alpha, beta : float
        Shape parameters, > 0. [-]

    Returns
    -------
    BetaQuantileTable or None
        None outside ``[0.15, 1e4]**2`` or when a build check fails (module docstring).
    """
    if not (_SHAPE_MIN <= alpha <= _SHAPE_MAX and _SHAPE_MIN <= beta <= _SHAPE_MAX):
        return None
    with np.errstate(all="ignore"):  # overflow and nan fail the checks instead
        return _build(alpha, beta, _REL_TOL)


def beta_quantile(alpha: float, beta: float, p: FloatArray) -> FloatArray:
    """Quantile of Beta(alpha, beta) at ``p``: the checked table, else the exact path.

    Parameters
    ----------
    alpha, beta : float
        Shape parameters, > 0. [-]
    p : FloatArray
        Probabilities in [0, 1], no nan (checked by the caller). [-]

    Returns
    -------
    FloatArray
        Quantiles in [0, 1], same shape as ``p``; ``Q(0) = 0``, ``Q(1) = 1``. [-]

    Notes
    -----
    Accuracy as stated in the module docstring. Oracle: ``scipy.special.betainc``.

    Examples
    --------
    >>> import numpy as np
    >>> beta_quantile(2.0, 1.0, np.array([0.0, 0.25, 0.5, 1.0]))  # Q(p) = sqrt(p)
    array([0.        , 0.5       , 0.70710678, 1.        ])
    """
    table = beta_quantile_table(float(alpha), float(beta))
    return exact_beta_quantile(alpha, beta, p) if table is None else table(p)
