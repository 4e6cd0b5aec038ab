"""Quantile of the log-normal distribution from a per-shape table checked when built.

A ``LogNormal`` prior is sampled by inverse transform, ``x = exp(mu) Q_s(u)`` with
``Q_s(p) = exp(s Phi^-1(p))`` the quantile of the standard log-normal of shape ``s``
(``sigma``). scipy's ``ndtri`` then numpy's ``exp`` cost ~20 ns a value on the benchmark
machine (neither is vectorised there); a cubic piece costs ~8. So, as
:mod:`accelsim.dists._beta_quantile` does for the beta distribution, each shape gets a table on the
interior ``p`` in ``[2**-5, 1 - 2**-5]`` (94 % of uniforms): 3840 cells of width ``2**-12``
(cell ``floor(4096 p)`` and the position in it are exact), cubic Hermite in ``p`` with knot
values ``Q_s(p_k)`` and exact slopes ``dQ/dp = s Q / phi(Phi^-1(p))``. Probabilities outside
the interior take the exact path, ``exp(s ndtri(p))``: they are few, and the tails are
where a table would need care.

Guarantee, checked at build (a shape failing any check gets no table and every ``p`` takes
the exact path): for ``p`` in the interior, ``|Phi(ln Q̂(p) / s) - p| <= 1e-9 min(p, 1 - p)``
(for ``p > 1/2`` measured as ``Phi(-ln Q̂ / s)`` against ``1 - p``, exact there, without
cancellation), the bound of the beta table and of the exact beta path. Checked with scipy's
``ndtr`` at every knot and at ``t = 1/4, 1/2, 3/4`` of every cell, against ``0.95 tol``
(a cubic Hermite's error is ``t**2 (1 - t)**2 h**4 / 24`` times a fourth derivative; see
:mod:`accelsim.dists._beta_quantile` for why the peak between check points exceeds the largest
checked value by under 5 %). Every cell's cubic is checked monotone, so ``Q̂`` is
non-decreasing up to the rounding of its evaluation; and it meets the exact path at the
interior's ends within the same tolerance. Tables are attempted for ``s`` in ``(0, 8]``; a
build takes ~2 ms.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import scipy.special

from accelsim._typing import BoolArray, FloatArray
from accelsim.dists._beta_quantile import hermite_coefficients, is_monotone

_REL_TOL = 1e-9  # accepted error of Phi(ln x / s) relative to min(p, 1 - p)
_SIGMA_MAX = 8.0
_CELLS_PER_UNIT_P = 4096  # cell width 2**-12: cell index and position are exact
_FIRST_ROW = _CELLS_PER_UNIT_P >> 5  # the interior is [2**-5, 1 - 2**-5]
_LAST_ROW = _CELLS_PER_UNIT_P - _FIRST_ROW  # the first row past the interior
_CHECK_MARGIN = 0.95


def exact_lognormal_quantile(sigma: float, p: FloatArray) -> FloatArray:
    """``exp(sigma * Phi^-1(p))``, the quantile of the standard log-normal of shape sigma.

    Parameters
    ----------
    sigma : float
        Shape (standard deviation of the logarithm), > 0. [-]
    p : FloatArray
        Probabilities in [0, 1], no nan. [-]

    Returns
    -------
    FloatArray
        Quantiles, same shape as ``p``: 0 at ``p = 0``, inf at ``p = 1``. [-]

    Examples
    --------
    >>> import numpy as np
    >>> exact_lognormal_quantile(1.0, np.array([0.0, 0.5, 1.0]))
    array([ 0.,  1., inf])
    """
    with np.errstate(over="ignore"):
        return np.asarray(np.exp(sigma * scipy.special.ndtri(p)), dtype=np.float64)


@dataclass(frozen=True, eq=False)
class LogNormalQuantileTable:
    """Cubic pieces of ``exp(sigma * Phi^-1(p))`` on the interior; call it on probabilities.

    Build it with :func:`lognormal_quantile_table`, which checks it (module docstring).

    Attributes
    ----------
    sigma : float
        Shape. [-]
    coef : FloatArray
        ``(4, 4097)``: ``coef[k, r]`` multiplies ``t**k`` in cell ``r = floor(4096 p)``, ``t``
        in [0, 1) the position in the cell; rows outside the interior are 0 (unused).
    tail_row : BoolArray
        ``(4097,)``: whether cell ``r`` lies outside the interior (the exact path).
    """

    sigma: float
    coef: FloatArray
    tail_row: BoolArray

    def __call__(self, p: FloatArray) -> FloatArray:
        """Quantile at probabilities ``p`` in [0, 1] (no nan), same shape as ``p``. [-]"""
        flat = p.reshape(-1)
        t = flat * float(_CELLS_PER_UNIT_P)  # exact, and so are the row and position below
        row_float = np.floor(t)
        t -= row_float
        row = row_float.astype(np.intp)
        x: FloatArray = self.coef[3].take(row)
        for c in self.coef[2::-1]:  # Horner, in place
            x *= t
            x += c.take(row)
        tail = np.flatnonzero(self.tail_row.take(row))
        if tail.size:
            x.put(tail, exact_lognormal_quantile(self.sigma, flat.take(tail)))
        return x.reshape(p.shape)


def _interior_knots(sigma: float) -> tuple[FloatArray, FloatArray]:
    """``(p, Q_s(p))`` at the interior's knots ``k / 4096``."""
    p = np.arange(_FIRST_ROW, _LAST_ROW + 1) / float(_CELLS_PER_UNIT_P)
    return p, exact_lognormal_quantile(sigma, p)


def _error_ratio(sigma: float, p: FloatArray, x: FloatArray) -> FloatArray:
    """``|Phi(ln x / s) - p| / min(p, 1 - p)``, measured on the side of the smaller one."""
    z = np.log(x) / sigma
    upper = p > 0.5
    q = np.where(upper, 1.0 - p, p)  # exact for p in [1/2, 1]
    side = scipy.special.ndtr(np.where(upper, -z, z))
    return np.asarray(np.abs(side - q) / q, dtype=np.float64)


def _build(sigma: float) -> LogNormalQuantileTable | None:
    """The table of shape ``sigma``, or None if it fails a check (module docstring)."""
    p, x = _interior_knots(sigma)
    z = scipy.special.ndtri(p)
    density = np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    slope = sigma * x / density / _CELLS_PER_UNIT_P  # dQ/dp per cell
    interior = hermite_coefficients(x, slope)
    if not (np.all(np.isfinite(interior)) and np.all(x > 0.0) and is_monotone(interior, 1.0)):
        return None
    coef = np.zeros((_CELLS_PER_UNIT_P + 1, 4))
    coef[_FIRST_ROW:_LAST_ROW] = interior
    tail_row = np.ones(_CELLS_PER_UNIT_P + 1, dtype=np.bool_)
    tail_row[_FIRST_ROW:_LAST_ROW] = False
    coef = np.ascontiguousarray(coef.T)
    coef.flags.writeable = tail_row.flags.writeable = False
    table = LogNormalQuantileTable(sigma, coef, tail_row)
    # every knot and cell quarter, the interior's last knot (exact path) included
    check = (_FIRST_ROW + np.arange(4 * (_LAST_ROW - _FIRST_ROW) + 1) / 4.0) / _CELLS_PER_UNIT_P
    if not np.all(_error_ratio(sigma, check, table(check)) <= _CHECK_MARGIN * _REL_TOL):
        return None
    return table


@lru_cache(maxsize=64)
def lognormal_quantile_table(sigma: float) -> LogNormalQuantileTable | None:
    """The checked interior table of shape ``sigma``, or None (then use the exact path).

    Parameters
    ----------
    sigma : float
        Shape, > 0. [-]

    Returns
    -------
    LogNormalQuantileTable or None
        None outside ``(0, 8]`` or when a build check fails (module docstring).
    """
    if not 0.0 < sigma <= _SIGMA_MAX:
        return None
    with np.errstate(all="ignore"):  # overflow and nan fail the checks instead
        return _build(sigma)


def lognormal_quantile(sigma: float, p: FloatArray) -> FloatArray:
    """Quantile of the standard log-normal of shape ``sigma`` (median 1) at ``p``.

    The checked table in the interior, the exact path elsewhere and for shapes without a
    table.

    Parameters
    ----------
    sigma : float
        Shape (standard deviation of the logarithm), > 0. [-]
    p : FloatArray
        Probabilities in [0, 1], no nan (checked by the caller). [-]

    Returns
    -------
    FloatArray
        Quantiles, same shape as ``p``; 0 at ``p = 0``, inf at ``p = 1``. [-]

    Examples
    --------
    >>> import numpy as np
    >>> lognormal_quantile(1.0, np.array([0.0, 0.5, 1.0]))
    array([ 0.,  1., inf])
    """
    table = lognormal_quantile_table(float(sigma))
    return exact_lognormal_quantile(sigma, p) if table is None else table(p)


__all__ = [
    "LogNormalQuantileTable",
    "exact_lognormal_quantile",
    "lognormal_quantile",
    "lognormal_quantile_table",
]
