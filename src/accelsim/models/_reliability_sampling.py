"""The reliability model drawn run by run: completion time and interruption count, exactly,
without a loop over events (negative binomial counts, summed truncated exponentials).

Part of :mod:`accelsim.models.reliability`, which holds the model and is the public module.
"""

from __future__ import annotations

import math
from itertools import pairwise
from typing import cast

import numpy as np

from accelsim._typing import ArrayLike, FloatArray, IntArray
from accelsim.models._reliability_expected import _mean_attempt_time, _segments
from accelsim.models._reliability_rates import _f

# Summing lost times: a run's losses in one phase are cut into columns of at most
# _FACTORS_PER_LOG factors ``1 - c u`` (fewer where a product could fall below
# exp(-_LOG_FLOOR); the smallest normal float64 is about exp(-708)), one logarithm per column.
_FACTORS_PER_LOG = 64
_LOG_FLOOR = 600.0
# Columns are drawn and multiplied in passes of about this many losses (64 KiB of float64):
# the passes' arrays stay in the CPU cache and below glibc's initial mmap threshold, so a
# study of many losses neither streams through memory nor maps fresh pages for temporaries.
_LOSSES_PER_PASS = 1 << 13
# Above this many losses in one run and phase, their sum is drawn from its normal limit
# (central limit theorem) instead of one uniform per loss. Each loss is bounded, so by the
# Berry-Esseen theorem the Kolmogorov distance of the sum from the normal is at most
# 0.56 * rho / (sigma^3 sqrt(K)), with rho / sigma^3 <= 3 for an exponential truncated to any
# interval: <= 0.026 at K = 4096, and the lost time is only one part of the run's time.
_EXACT_LOSSES_MAX = 4096
# Above this many expected interruptions (numpy's negative binomial refuses such means, and
# counts near int64's range would overflow), a run is drawn from the rare-success limit of
# the model (:func:`_sample_rare_success`) instead of failure by failure: a failing segment's
# extra time is exponential in that limit, so the cost per run is bounded whatever the rate.
_HOPELESS_INTERRUPTIONS = 1e12
# A negative binomial count of mean at most _INVERSION_MEAN_MAX (failed restarts, mostly 0) is
# drawn by inversion from 0, one uniform each, a few steps of its probability recursion:
# cheaper than numpy's gamma-Poisson mixture. After _INVERSION_STEPS steps the CDF of such a
# count is within 2**-64 of 1 (n = 1, a geometric of mean 1, is the heaviest tail), below the
# 2**-53 grid of the uniforms: a uniform not yet placed by then lies where rounding decides and
# takes the last step's value.
_INVERSION_MEAN_MAX = 1.0
_INVERSION_STEPS = 64
_LN2 = math.log(2.0)


def sample_completion_hours(
    rng: np.random.Generator,
    work_hours: ArrayLike,
    interval_hours: ArrayLike,
    write_hours: ArrayLike,
    restart_hours: ArrayLike,
    rate_per_hour: ArrayLike,
    size: int | tuple[int, ...] | None = None,
) -> tuple[FloatArray, FloatArray]:
    """Draw the wall-clock time and interruption count of independent runs, exactly.

    Same model as :func:`expected_completion_hours`; each element of the broadcast inputs
    (or of ``size``, which the inputs must broadcast to) is one independent run.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of every draw.
    work_hours, interval_hours, write_hours, restart_hours : array_like
        As in :func:`expected_completion_hours`. [h]
    rate_per_hour : array_like
        Interruption rate of the whole job, small enough that ``exp(lambda (tau + C))`` and
        ``exp(lambda R)`` stay well inside float64 and int64. [1/h]
    size : int or tuple of int, optional
        Shape of the output; default: the broadcast shape of the inputs.

    Returns
    -------
    completion_hours : FloatArray
        Wall-clock time to finish the work, failures included. [h]
    interruptions : FloatArray
        Interruptions suffered, in work, writes and restarts, as float64 (whole numbers below
        1e12; above, ``lambda * T``, the count's mean given ``T``, never an overflowed
        integer). [count]

    Notes
    -----
    No loop over events. Per run: work-phase failures of the full segments,
    ``K ~ NegativeBinomial(n, exp(-lambda (tau + C)))`` (a sum of ``n`` geometric counts),
    likewise (one geometric count) for the partial segment; failures during the ``K`` restarts,
    ``J ~ NegativeBinomial(K, exp(-lambda R))``. Each failure loses an exponential time
    truncated to its phase, ``[0, tau + C)``, ``[0, r + C)`` or ``[0, R)``, drawn by inversion,
    ``-log(1 - u (1 - exp(-lambda L))) / lambda``, and summed per run and phase as the log of
    a product (one logarithm per column of up to 64 draws, see
    ``_sum_truncated_exponentials``); a phase with more than 4,096 losses takes the normal
    limit of their sum instead (Kolmogorov distance <= 0.026 by Berry-Esseen). Then ``T = n
    (tau + C) + [r > 0] (r + C) + K R + losses`` and the count is ``K + J``. Cost: one uniform
    per interruption, ~4.7 ns per interruption all in: ~360,000 runs/s of a 60-day
    16,384-chip job (~580 interruptions per run) on one core. A run expecting more than 1e12
    interruptions is drawn from the rare-success limit instead (:func:`_sample_rare_success`,
    a handful of draws per run): its time is finite unless its mean overflows float64 (then
    ``inf``, which the engines censor at their horizon). Oracles:
    :func:`expected_completion_hours` (mean within 5 SE) and an event-by-event simulation
    (two-sample KS), in the validation tests.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> hours, count = sample_completion_hours(rng, 100.0, 2.0, 0.1, 0.2, 0.05, size=4)
    >>> hours.shape, count.dtype.name, bool((hours >= 105.0).all())
    ((4,), 'float64', True)
    >>> sample_completion_hours(rng, 10.0, 2.0, 0.1, 0.5, 0.0)  # no failures: exact
    (array(10.5), array(0.))
    """
    inputs = [
        _f(a) for a in (work_hours, interval_hours, write_hours, restart_hours, rate_per_hour)
    ]
    shape = np.broadcast_shapes(*(a.shape for a in inputs)) if size is None else size
    full, interval, has_partial, partial = _segments(
        np.broadcast_to(inputs[0], shape).ravel(), np.broadcast_to(inputs[1], shape).ravel()
    )
    write, restart, rate = (np.broadcast_to(a, shape).ravel() for a in inputs[2:])
    full_length, partial_length = interval + write, partial + write
    # Per phase, the exponent lambda L (a success has probability e^{-lambda L}) and the
    # failure odds e^{lambda L} - 1, the mean failures per success: every count's law follows
    # from them (one transcendental pass per phase).
    exponents = [rate * full_length, rate * partial_length, rate * restart]
    with np.errstate(over="ignore", invalid="ignore"):
        full_odds, partial_odds, restart_odds = (np.expm1(x) for x in exponents)
        expected_fails = (full * full_odds + has_partial * partial_odds) * (1.0 + restart_odds)
    hopeless = ~(expected_fails <= _HOPELESS_INTERRUPTIONS)
    any_hopeless = bool(hopeless.any())
    if any_hopeless:  # drawn as failure-free here, then from the rare-success limit
        for x in (full_odds, partial_odds, restart_odds, *exponents):
            x[hopeless] = 0.0
    full_fails = _negative_binomial(rng, full, full_odds, exponents[0])
    partial_fails = _geometric(rng, has_partial, partial_odds, exponents[1])
    work_fails = full_fails + partial_fails
    restart_fails = _negative_binomial(rng, work_fails.astype(float), restart_odds, exponents[2])
    runs = full.size
    lost = _sum_truncated_exponentials(
        rng,
        np.concatenate([full_fails, partial_fails, restart_fails]),
        np.concatenate([full_length, partial_length, restart]),
        np.concatenate([rate, rate, rate]),
        np.concatenate([full_odds, partial_odds, restart_odds]),
    )
    hours = full * full_length
    hours += has_partial * partial_length
    hours += work_fails * restart
    hours += lost[:runs]
    hours += lost[runs : 2 * runs]
    hours += lost[2 * runs :]
    count = (work_fails + restart_fails).astype(float)
    if any_hopeless:
        at = np.flatnonzero(hopeless)
        hours[at], count[at] = _sample_rare_success(
            rng, full[at], interval[at], partial[at], write[at], restart[at], rate[at]
        )
    return hours.reshape(shape), count.reshape(shape)


def _sample_rare_success(
    rng: np.random.Generator,
    full: FloatArray,
    interval_hours: FloatArray,
    partial_hours: FloatArray,
    write_hours: FloatArray,
    restart_hours: FloatArray,
    rate_per_hour: FloatArray,
) -> tuple[FloatArray, FloatArray]:
    """Time and count of runs far too failure-prone to draw failure by failure.

    A segment of length ``L`` (work and write) fails at its first attempt with probability
    ``q = 1 - exp(-lambda L)``; given that, its extra time (losses and restarts until it
    succeeds) has mean ``(g - L) / q``, ``g`` the segment's mean time
    (:mod:`accelsim.models.reliability`).
    In the limit of this regime -- success so rare that many attempts fail (``p -> 0``), or
    restarts so long that one failure's recovery dominates -- that extra time is exponential
    (a geometric sum of iid times is exponential as its success probability tends to 0,
    Renyi's theorem), so the run's time is ``n L + r L' + Gamma(m, (g - L) / q) + ...`` with
    ``m ~ Binomial(n, q)`` failing segments: exact in mean, a few draws per run. The count is
    its mean given the time, ``lambda T`` (every event of the Poisson process interrupts
    something). A mean that overflows float64 gives ``inf`` (the engines censor it).
    Oracle: the exact sampler in the overlap of both regimes (tests/unit/test_reliability.py).
    """
    hours = np.zeros(full.size)
    restart_factor = np.exp(np.minimum(rate_per_hour * restart_hours, 709.0))
    for n, work in ((full, interval_hours), ((partial_hours > 0.0).astype(float), partial_hours)):
        length = np.where(n > 0, work + write_hours, 0.0)
        q = -np.expm1(-rate_per_hour * length)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            mean = restart_factor * _mean_attempt_time(length, rate_per_hour)
            extra = np.where(q > 0.0, (mean - length) / np.where(q > 0.0, q, 1.0), 0.0)
        failing = rng.binomial(np.minimum(n, 2.0**62).astype(np.int64), q)
        shape = np.where(failing > 0, failing, 1).astype(float)
        with np.errstate(over="ignore", invalid="ignore"):
            drawn = np.where(failing > 0, rng.standard_gamma(shape) * extra, 0.0)
        hours += n * length + np.where(np.isnan(drawn), np.inf, drawn)
    with np.errstate(over="ignore", invalid="ignore"):
        return hours, rate_per_hour * hours


def _negative_binomial(
    rng: np.random.Generator, successes: FloatArray, odds: FloatArray, exponent: FloatArray
) -> IntArray:
    """Failures before ``successes`` successes of probability ``p = e^-exponent`` each.

    ``odds = e^exponent - 1 = q / p`` (the caller has both), so the mean is
    ``successes * odds``. 0 where that mean is 0 (numpy needs ``successes > 0``). Counts of
    mean at most ``_INVERSION_MEAN_MAX`` are drawn by inversion
    (:func:`_negative_binomial_by_inversion`), the others by numpy's gamma-Poisson mixture;
    both are exact.
    """
    draws = np.zeros(successes.shape, dtype=np.int64)
    mean = successes * odds
    large = np.flatnonzero(mean > _INVERSION_MEAN_MAX)
    if large.size:
        draws[large] = rng.negative_binomial(successes[large], 1.0 / (1.0 + odds[large]))
    small = np.flatnonzero((mean > 0.0) & (mean <= _INVERSION_MEAN_MAX))
    if small.size:
        draws[small] = _negative_binomial_by_inversion(
            rng, successes[small], odds[small], exponent[small]
        )
    return draws


def _geometric(
    rng: np.random.Generator, present: FloatArray, odds: FloatArray, exponent: FloatArray
) -> IntArray:
    """Failures before one success (``NegativeBinomial(1, p)``, ``p = e^-exponent``) where
    ``present`` is 1, else 0, by closed-form inversion, one uniform each.

    With ``q = 1 - p = odds / (1 + odds)``, ``P(G >= k) = q**k``, so ``G = floor(log(1 - u) /
    log q)``; it is 0 unless ``u >= p``, so the logarithms are taken only there (a share
    ``q`` of the draws, a few percent between checkpoints).
    """
    draws = np.zeros(present.shape, dtype=np.int64)
    some = np.flatnonzero((present > 0.0) & (odds > 0.0))
    if some.size == 0:
        return draws
    u = rng.random(some.size)
    # u >= p, with room for the rounding of p: the formula itself gives 0 below p
    tail = np.flatnonzero(u * (1.0 + odds[some]) >= 1.0 - 1e-9)
    if tail.size:
        at = some[tail]
        x = exponent[at]
        # log q = log(1 - e^-x), each form where it keeps its precision (Maechler 2012)
        log_q = np.where(x < _LN2, np.log(-np.expm1(-x)), np.log1p(-np.exp(-x)))
        draws[at] = np.floor(np.log1p(-u[tail]) / log_q)
    return draws


def _negative_binomial_by_inversion(
    rng: np.random.Generator, successes: FloatArray, odds: FloatArray, exponent: FloatArray
) -> IntArray:
    """Negative binomial counts as ``min{j : u < F(j)}``, one uniform ``u`` per count.

    ``P(0) = p^n = e^(-n exponent)`` and ``P(j) = P(j - 1) (n + j - 1) q / j`` with
    ``q = odds / (1 + odds)``; only the counts not yet placed are carried from one step to
    the next (most of them stop at 0 for small means).
    """
    u = rng.random(successes.size)
    pmf = np.exp(-successes * exponent)
    cdf = pmf.copy()
    draws = np.zeros(successes.size, dtype=np.int64)
    at = np.flatnonzero(u >= cdf)
    u, pmf, cdf = u[at], pmf[at], cdf[at]
    n, q = successes[at], odds[at] / (1.0 + odds[at])
    for j in range(1, _INVERSION_STEPS + 1):
        if at.size == 0:
            break
        draws[at] = j
        pmf *= (n + (j - 1)) * q / j
        cdf += pmf
        going = u >= cdf
        at, u, pmf, cdf, n, q = at[going], u[going], pmf[going], cdf[going], n[going], q[going]
    return draws


def _sum_truncated_exponentials(
    rng: np.random.Generator,
    counts: IntArray,
    length_hours: FloatArray,
    rate_per_hour: FloatArray,
    odds: FloatArray,
) -> FloatArray:
    """Per group ``i``, the sum of ``counts[i]`` iid Exp(rate) variables truncated to [0, L).

    ``odds`` is ``exp(rate L) - 1`` (the caller has it). By inversion each variable is
    ``-log(1 - c u) / rate`` with ``c = 1 - exp(-rate L) = odds / (1 + odds)`` and
    ``u`` uniform, so a group's sum is ``-log(prod(1 - c u)) / rate``: one uniform per loss,
    and a logarithm per column of up to ``_FACTORS_PER_LOG`` factors instead of per loss.
    A group's losses are cut into full columns and one shorter remainder; all columns are
    laid end to end and taken in passes of about ``_LOSSES_PER_PASS`` losses: a pass draws
    its uniforms in one call and takes its columns' products by ``np.multiply.reduceat``.
    Each factor is at least ``exp(-rate L)`` and columns are shortened so their product
    stays above ``exp(-_LOG_FLOOR)``, far from underflow.
    Rounding of ``1 - c u`` costs at most ~1e-16 / rate hours per loss, ~1e-16 of the run's
    time when failures are as frequent as the rate says. The layout only decides which
    uniform goes to which loss: the sums are exact in law whatever it is. Groups of more
    than ``_EXACT_LOSSES_MAX`` losses take the normal limit
    (:func:`_normal_sum_truncated_exponentials`).
    """
    sums = np.zeros(counts.shape)
    many = counts > _EXACT_LOSSES_MAX
    if many.any():
        sums[many] = _normal_sum_truncated_exponentials(
            rng, counts[many], length_hours[many], rate_per_hour[many]
        )
        counts = np.where(many, 0, counts)
    groups = np.flatnonzero(counts)
    if groups.size == 0:
        return sums
    group_counts = counts[groups]
    rate = rate_per_hour[groups]
    group_odds = odds[groups]
    minus_kept = -group_odds / (1.0 + group_odds)  # expm1(-rate L), from the odds
    tallest = np.floor(_LOG_FLOOR / (rate * length_hours[groups]))
    whole = np.clip(tallest, 1, _FACTORS_PER_LOG).astype(np.int64)
    full = group_counts // whole
    remainder = group_counts - full * whole
    short = np.flatnonzero(remainder)
    heights = np.concatenate([np.repeat(whole, full), remainder[short]])
    owners = np.concatenate([np.repeat(np.arange(groups.size), full), short])
    ends = np.cumsum(heights)
    cuts = np.searchsorted(ends, np.arange(_LOSSES_PER_PASS, ends[-1], _LOSSES_PER_PASS))
    column_logs = np.empty(heights.size)
    for first, last in pairwise([0, *np.unique(cuts).tolist(), heights.size]):
        if last == first:
            continue
        at = slice(first, last)
        offset = ends[first] - heights[first]
        factors = rng.random(int(ends[last - 1] - offset))
        factors *= np.repeat(minus_kept[owners[at]], heights[at])
        factors += 1.0
        column_logs[at] = np.log(np.multiply.reduceat(factors, ends[at] - heights[at] - offset))
    log_sums = cast(FloatArray, np.bincount(owners, column_logs, minlength=groups.size))
    sums[groups] = -log_sums / rate
    return sums


def _normal_sum_truncated_exponentials(
    rng: np.random.Generator, counts: IntArray, length_hours: FloatArray, rate_per_hour: FloatArray
) -> FloatArray:
    """Sum of ``counts`` iid Exp(rate) truncated to [0, L), from its normal limit (K > 4096).

    With ``a = rate L``: mean ``m = 1/rate - L/expm1(a)`` and variance
    ``v = 1/rate^2 - L^2 e^a / expm1(a)^2``; the sum is drawn as ``N(K m, K v)`` clipped to
    ``[0, K L]``, the support of the exact sum (clipping moves mass ~1e-600 at K > 4096).
    """
    a = rate_per_hour * length_hours
    em1 = np.expm1(a)
    with np.errstate(over="ignore", invalid="ignore"):
        mean = 1.0 / rate_per_hour - length_hours / em1
        var = 1.0 / rate_per_hour**2 - length_hours**2 * np.exp(a) / em1**2
    # For very large a the loss is a plain exponential (truncation irrelevant).
    mean = np.where(np.isfinite(mean), mean, 1.0 / rate_per_hour)
    var = np.where(np.isfinite(var), np.maximum(var, 0.0), 1.0 / rate_per_hour**2)
    k = counts.astype(float)
    draws = rng.normal(k * mean, np.sqrt(k * var))
    return np.clip(draws, 0.0, k * length_hours)
