"""The Poisson quantile, exactly and cheaply: one implementation for every model that inverts
a Poisson CDF (the serving batch tail, the instability event counts)."""

from __future__ import annotations

import numpy as np
from scipy import special, stats

from accelsim._typing import ArrayLike, FloatArray

# A pass moves every unsettled quantile one step; from the Cornish-Fisher guess one or two
# passes settle q in [2**-53, 1 - 2**-53] (the grid of a double uniform). What is still
# unsettled after this many passes (a q far outside that range) is handed to scipy.
_STEPS_MAX = 64
# Means up to this are first searched upwards from k = 0 for this many steps of the pmf
# recursion, which needs no incomplete gamma function (scipy's pdtr, ~0.1-0.15 us a value, is
# most of the guess-and-check's cost); the unsettled carry on to the guess and check. The
# active quantiles are gathered every _SEARCH_GATHER steps (a gather costs ~4 steps' work).
# Kept as a second path because the default training study takes it (98 % of the instability
# means of examples/llama70b_h100_aws.yaml are <= 16): without it that study (16,384 runs) is
# 1.045-1.077x slower (paired medians of 9-15 rounds in three sessions, 10-90 % 1.004-1.090;
# benchmarks/bench_paths.py); scipy.stats.poisson.ppf in place of the whole function makes it
# 2.31-2.48x slower and bench_serving_fast's study 1.18-1.21x.
_SEARCH_STEPS = 16
_SEARCH_GATHER = 4
# The search's CDF, a sum of at most _SEARCH_STEPS + 1 pmf terms each two roundings from the
# last, is within (3 _SEARCH_STEPS + 2) ulp of the exact one, relative: a comparison with q
# closer than this (4x that) is left to the guess and check.
_SEARCH_TOLERANCE = 4.0 * (3 * _SEARCH_STEPS + 2) * 2.0**-52


def poisson_quantile(q: ArrayLike, mean: ArrayLike) -> FloatArray:
    """Smallest integer ``k`` with ``P(N <= k) >= q`` for ``N ~ Poisson(mean)``. [count]

    Parameters
    ----------
    q : array_like
        Probabilities in ``[0, 1)``. ``q = 0`` gives 0.
    mean : array_like
        Poisson means, finite and ``>= 0``; a mean of 0 gives 0.

    Returns
    -------
    FloatArray
        The quantiles (whole numbers, float64), broadcast shape of the inputs.

    Notes
    -----
    Means up to 16 are first searched upwards from 0 by the pmf recursion
    (:func:`_search_from_zero`), a quantile kept only where the sum's rounding cannot have
    moved it (all but ~1e-13 of uniform draws, within 16 steps). The others: a
    Cornish-Fisher guess ``floor(mean + sqrt(mean) z + (z^2 - 1) / 6)``, ``z = Phi^-1(q)``,
    then whole steps checked on the CDF (``scipy.special.pdtr`` once at the guess, then
    updated by the pmf; above the median on minus the survival function, ``pdtrc``, which
    keeps its precision where the CDF rounds to 1) until ``P(N <= k - 1) < q <= P(N <= k)``;
    only the elements not yet settled are carried from one step to the next. Oracles
    (tests/unit/test_poisson.py): the exact quantile in 60-digit decimal arithmetic; the
    defining inequalities on scipy's CDF, hypothesis over ``q`` and means up to 1e7;
    ``scipy.stats.poisson.ppf``, equal on 200,000 uniforms of a Generator, at about a
    tenth of its cost (in the far upper tail scipy's ppf can be a step low: at ``q = 1 -
    2**-53``, mean 100, it says 192, the quantile is 193). Above means of ~1e6 scipy's
    ``pdtrc`` loses relative accuracy in the tails (3.7 % at mean 1e7 and a 1e-6 tail), and
    so does this quantile there (tens of steps in 1e7).

    Examples
    --------
    >>> poisson_quantile([0.0, 0.1, 0.5, 0.9], [3.0, 3.0, 3.0, 0.0]).tolist()
    [0.0, 1.0, 3.0, 0.0]
    """
    q_all, mean_all = np.broadcast_arrays(np.asarray(q, dtype=float), np.asarray(mean, dtype=float))
    if not (np.all((q_all >= 0.0) & (q_all < 1.0)) and np.all(mean_all >= 0.0)):
        raise ValueError("poisson_quantile needs q in [0, 1) and a mean >= 0")
    if not np.all(np.isfinite(mean_all)):
        raise ValueError("poisson_quantile needs a finite mean")
    out = np.zeros(q_all.shape)
    at = np.flatnonzero((q_all > 0.0) & (mean_all > 0.0))
    if at.size == 0:
        return out
    qs, lam = q_all.ravel()[at], mean_all.ravel()[at]
    k = np.full(at.size, -1.0)
    small = np.flatnonzero(lam <= _SEARCH_STEPS)
    k[small] = _search_from_zero(qs[small], lam[small])
    rest = np.flatnonzero(k < 0.0)
    k[rest] = _guess_and_check(qs[rest], lam[rest])
    out.reshape(-1)[at] = k
    return out


def _search_from_zero(q: FloatArray, mean: FloatArray) -> FloatArray:
    """The quantiles found within ``_SEARCH_STEPS`` steps up from 0, -1 for the others.

    ``k`` counts the CDF values below ``q``, ``P(N <= j) = sum_{i <= j} p_i`` with ``p_0 =
    e^-mean`` and ``p_j = p_{j-1} mean / j`` (``mean <= _SEARCH_STEPS``: ``p_0`` is a normal
    float), once against ``q (1 - t)`` and once against ``q (1 + t)``, ``t`` the rounding
    bound ``_SEARCH_TOLERANCE``: where both counts agree and the last CDF is ``>= q (1 + t)``,
    no rounding of the sum can move the answer. The others (~1e-13 of uniform ``q``, and the
    quantiles beyond the last step) are -1.
    """
    q_lo, q_hi = q * (1.0 - _SEARCH_TOLERANCE), q * (1.0 + _SEARCH_TOLERANCE)
    pmf = np.exp(-mean)
    cdf = pmf.copy()
    k_lo, k_hi = (cdf < q_lo).astype(float), (cdf < q_hi).astype(float)
    out = np.full(q.size, -1.0)
    at = np.arange(q.size)
    for j in range(1, _SEARCH_STEPS + 2):
        if j % _SEARCH_GATHER == 0 or j > _SEARCH_STEPS:
            done = cdf >= q_hi
            stop = np.flatnonzero(done)
            out[at[stop]] = np.where(k_lo[stop] == k_hi[stop], k_hi[stop], -1.0)
            go = np.flatnonzero(~done)
            if go.size == 0 or j > _SEARCH_STEPS:
                break
            at, q_lo, q_hi, mean = at[go], q_lo[go], q_hi[go], mean[go]
            pmf, cdf, k_lo, k_hi = pmf[go], cdf[go], k_lo[go], k_hi[go]
        pmf *= mean / j
        cdf += pmf
        k_lo += cdf < q_lo
        k_hi += cdf < q_hi
    return out


def _guess_and_check(q: FloatArray, mean: FloatArray) -> FloatArray:
    """The quantiles from the Cornish-Fisher guess, checked and stepped on the CDF.

    Subsets are taken by index arrays: a random boolean mask costs several times more.
    """
    out = np.empty(q.size)
    at = np.arange(q.size)
    qs, lam = q, mean
    z = special.ndtri(qs)
    k = np.maximum(np.floor(lam + np.sqrt(lam) * z + (z * z - 1.0) / 6.0), 0.0)
    # Above the median the CDF is near 1, where float64 cannot tell its last steps apart:
    # there the test is on minus the survival function, P(N <= k) >= q <=> -P(N > k) >= q - 1
    # (q - 1 exact), which steps by the same pmf terms, at full relative precision.
    upper = qs > 0.5
    above_median, below_median = np.flatnonzero(upper), np.flatnonzero(~upper)
    qs = qs.copy()
    qs[above_median] -= 1.0
    cdf = np.empty(k.shape)
    cdf[above_median] = -special.pdtrc(k[above_median], lam[above_median])
    cdf[below_median] = special.pdtr(k[below_median], lam[below_median])
    log_mean = np.log(lam)
    for _ in range(_STEPS_MAX):
        here = np.exp(k * log_mean - lam - special.gammaln(k + 1.0))
        up = cdf < qs
        moving = up | ((k > 0.0) & (cdf - here >= qs))
        settled = np.flatnonzero(~moving)
        out[at[settled]] = k[settled]
        if settled.size == at.size:
            return out
        go = np.flatnonzero(moving)
        at, qs, lam, log_mean, upper = at[go], qs[go], lam[go], log_mean[go], upper[go]
        k, cdf, here, up = k[go], cdf[go], here[go], up[go]
        above = np.exp((k + 1.0) * log_mean - lam - special.gammaln(k + 2.0))
        cdf = np.where(up, cdf + above, cdf - here)
        k = np.where(up, k + 1.0, k - 1.0)
    qs = np.where(upper, qs + 1.0, qs)
    out[at] = stats.poisson.ppf(qs, lam)
    return out


__all__ = ["poisson_quantile"]
