"""Training instability: loss spikes, divergences and rollbacks, a compound Poisson loss.

Beyond hardware failures (:mod:`accelsim.models.reliability`) and the steady badput of
evaluation pauses and stragglers, real runs lose time to discrete *instability events*: a
loss spike or divergence that is detected, investigated and fixed by restarting from an
earlier good checkpoint (often with data skipped or settings changed). Each event costs
the progress rolled back plus the time to diagnose and restart; most cost hours, a few
cost days (PaLM's ~20 spikes were rolled back ~100 steps each; OPT-175B spent weeks on
divergences). The model: events arrive as a Poisson process of rate ``r`` [1/d] over the
``D`` days of training, and each costs an independent log-normal number of days with
median ``m`` and log-standard deviation ``s``. The sum is a compound Poisson variable
with a heavy (log-normal) right tail.
"""

from __future__ import annotations

import numpy as np

from accelsim._typing import ArrayLike, FloatArray

_Z95 = 1.6448536269514722  # Phi^-1(0.95): the catalog's 5-95 % convention for log-normals
# Above this many events in one run, that run's sum is drawn from its normal limit (mean
# and variance of the compound Poisson law) instead of event by event, so a run's cost and
# memory are bounded whatever the rate and horizon (a run of 1e4 years at 1 event a day).
# The sum of K log-normals of log-sd s is close to normal once K >> exp(s^2) (its skewness
# falls as 1/sqrt(K)); at s = 1.25 and K = 512 the skewness is below 0.5.
_EXACT_EVENTS_MAX = 512


def _f(x: ArrayLike) -> FloatArray:
    return np.asarray(x, dtype=float)


def lognormal_params(p5: ArrayLike, p95: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """Median and log-standard deviation of the log-normal with these 5 % and 95 % quantiles.

    Parameters
    ----------
    p5, p95 : array_like
        The 5 % and 95 % quantiles, ``0 < p5 <= p95``. [any unit]

    Returns
    -------
    tuple of FloatArray
        ``(median, sigma)``: median in the quantiles' unit, ``sigma`` dimensionless.

    Notes
    -----
    ``median = sqrt(p5 * p95)``, ``sigma = ln(p95 / p5) / (2 z)`` with ``z = Phi^-1(0.95)``:
    the convention of :class:`accelsim.dists.LogNormal`.

    Examples
    --------
    >>> m, s = lognormal_params(0.05, 3.0)
    >>> round(float(m), 4), round(float(s), 4)
    (0.3873, 1.2446)
    """
    lo, hi = _f(p5), _f(p95)
    return np.sqrt(lo * hi), np.log(hi / lo) / (2.0 * _Z95)


def expected_instability_days(
    training_days: ArrayLike,
    events_per_day: ArrayLike,
    event_median_days: ArrayLike,
    event_sigma: ArrayLike,
) -> FloatArray:
    """Mean days lost to instability events: ``r D m exp(s^2 / 2)``. [d]

    Parameters
    ----------
    training_days : array_like
        Days of training exposed to instability. [d]
    events_per_day : array_like
        Instability events per day of training. [1/d]
    event_median_days : array_like
        Median days one event costs. [d]
    event_sigma : array_like
        Log-standard deviation of one event's cost. [dimensionless]

    Returns
    -------
    FloatArray
        Expected days lost. [d]

    Notes
    -----
    A compound Poisson sum of ``N ~ Poisson(r D)`` costs ``X``: ``E = r D E[X]`` with
    ``E[X] = m exp(s^2 / 2)`` (log-normal mean); its variance is ``r D E[X^2]`` with
    ``E[X^2] = m^2 exp(2 s^2)``. Oracle: these closed forms against the sampler's moments
    (``tests/unit/test_instability.py``).

    Examples
    --------
    >>> float(expected_instability_days(100.0, 0.1, 1.0, 0.0))
    10.0
    """
    mean_cost = _f(event_median_days) * np.exp(0.5 * _f(event_sigma) ** 2)
    return _f(training_days) * _f(events_per_day) * mean_cost


def sample_instability_days(
    rng: np.random.Generator,
    training_days: ArrayLike,
    events_per_day: ArrayLike,
    event_median_days: ArrayLike,
    event_sigma: ArrayLike,
) -> tuple[FloatArray, FloatArray]:
    """Days lost to instability events and their number, one draw per run.

    Parameters
    ----------
    rng : numpy.random.Generator
        The only source of randomness.
    training_days : array_like
        Days of training exposed to instability, per run (finite, >= 0). [d]
    events_per_day : array_like
        Instability events per day of training, per run (>= 0). [1/d]
    event_median_days : array_like
        Median days one event costs (rollback, investigation, restart), per run. [d]
    event_sigma : array_like
        Log-standard deviation of one event's cost, per run (>= 0). [dimensionless]

    Returns
    -------
    tuple of FloatArray
        ``(days, events)`` per run: days lost [d] and events [count].

    Notes
    -----
    ``N ~ Poisson(r D)`` events, each costing ``X_i = m exp(s Z_i)`` days with ``Z_i``
    standard normal; the run loses ``sum_i X_i``. Mean ``r D m exp(s^2/2)``, variance
    ``r D m^2 exp(2 s^2)`` (:func:`expected_instability_days`). A run with more than
    ``_EXACT_EVENTS_MAX`` events draws its sum from the normal with those moments given
    ``N`` (``N E[X]``, ``N Var[X]``), clipped at 0. Oracle: the closed-form moments, and
    the zero-event probability ``exp(-r D)``, in ``tests/unit/test_instability.py``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> days, n = sample_instability_days(rng, [0.0, 50.0], 0.1, 0.4, 1.2)
    >>> float(days[0]), float(n[0])
    (0.0, 0.0)
    """
    d, r, m, s = np.broadcast_arrays(
        _f(training_days), _f(events_per_day), _f(event_median_days), _f(event_sigma)
    )
    shape = d.shape
    d, r, m, s = (np.ravel(x) for x in (d, r, m, s))
    counts = rng.poisson(np.maximum(r * d, 0.0))
    days = np.zeros(counts.shape)
    exact = counts <= _EXACT_EVENTS_MAX
    n_exact = np.where(exact, counts, 0)
    total = int(n_exact.sum())
    if total:
        owner = np.repeat(np.arange(counts.size), n_exact)
        costs = m[owner] * np.exp(s[owner] * rng.standard_normal(total))
        days += np.bincount(owner, weights=costs, minlength=counts.size)
    big = ~exact
    if big.any():
        k, mb, sb = counts[big].astype(float), m[big], s[big]
        mean_x = mb * np.exp(0.5 * sb**2)
        var_x = mb**2 * np.exp(sb**2) * np.expm1(sb**2)
        z = rng.standard_normal(k.size)
        days[big] = np.maximum(k * mean_x + np.sqrt(k * var_x) * z, 0.0)
    return days.reshape(shape), counts.astype(float).reshape(shape)


__all__ = [
    "expected_instability_days",
    "lognormal_params",
    "sample_instability_days",
]
