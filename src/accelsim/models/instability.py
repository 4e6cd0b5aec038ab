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
from scipy import special

from accelsim._typing import ArrayLike, FloatArray, IntArray
from accelsim.models._poisson import poisson_quantile
from accelsim.seeding import addressed_uniforms

_Z95 = 1.6448536269514722  # Phi^-1(0.95): the catalog's 5-95 % convention for log-normals
# Above this many events in one run, that run's sum is drawn from its normal limit (mean
# and variance of the compound Poisson law) instead of event by event, so a run's cost and
# memory are bounded whatever the rate and horizon (a run of 1e4 years at 1 event a day).
# The sum of K log-normals of log-sd s is close to normal once K >> exp(s^2) (its skewness
# falls as 1/sqrt(K)); at s = 1.25 and K = 512 the skewness is below 0.5.
EXACT_EVENTS_MAX = 512


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
    ``EXACT_EVENTS_MAX`` events draws its sum from the normal with those moments given
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
    counts = event_counts(rng.random(d.shape), d, r)
    events = rng.random(int(exact_events(counts).sum()))
    days = rollback_days(counts, events, rng.random(d.shape), m, s)
    return days, counts


def event_counts(
    uniforms: ArrayLike, training_days: ArrayLike, events_per_day: ArrayLike
) -> FloatArray:
    """Instability events of each run by inversion: the Poisson(``r D``) quantile of a U(0, 1)
    variate. [count]

    One uniform per run, so an engine can take each run's from its own addressed stream and
    a run's count does not depend on the other runs of its chunk.

    Examples
    --------
    >>> event_counts([0.1, 0.9], [0.0, 100.0], 0.1).tolist()
    [0.0, 14.0]
    """
    mean = np.maximum(_f(training_days) * _f(events_per_day), 0.0)
    return poisson_quantile(uniforms, mean)


def exact_events(counts: ArrayLike) -> IntArray:
    """Events of each run drawn one by one: its count, or 0 above ``EXACT_EVENTS_MAX`` (that
    run's sum comes from the normal limit). [count]

    Examples
    --------
    >>> exact_events([0.0, 3.0, 600.0]).tolist()
    [0, 3, 0]
    """
    n = _f(counts)
    return np.where(n <= EXACT_EVENTS_MAX, n, 0.0).astype(np.int64)


def event_uniforms(seq: np.random.SeedSequence, first_run: int, counts: ArrayLike) -> FloatArray:
    """The U(0, 1) variate of every event drawn one by one, run after run, each addressed by
    its run's index in the study and its own index in the run.

    Event ``j`` of run ``first_run + i`` (the ``i``-th of ``counts``) takes the value at
    index ``(first_run + i) * EXACT_EVENTS_MAX + j`` of the stream ``seq``
    (:func:`accelsim.seeding.addressed_uniforms`), so a run's events do not depend on the
    other runs of its chunk, and only the events that happened cost a draw. Laid out as
    :func:`rollback_days` reads them: run 0's events, then run 1's, ...

    Examples
    --------
    >>> seq = np.random.SeedSequence(1)
    >>> whole = event_uniforms(seq, 0, [2.0, 1.0, 3.0])
    >>> bool((event_uniforms(seq, 2, [3.0]) == whole[3:]).all())
    True
    """
    n = exact_events(counts).ravel()
    # event j of run i sits at position starts[i] + j of the output: its index is that
    # position plus the run's offset, one repeat of a value per run
    offset = (np.arange(n.size, dtype=np.int64) + first_run) * EXACT_EVENTS_MAX - (np.cumsum(n) - n)
    index = np.arange(int(n.sum()), dtype=np.int64) + np.repeat(offset, n)
    return addressed_uniforms(seq, index)


def rollback_days(
    counts: ArrayLike,
    event_uniforms: ArrayLike,
    tail_uniforms: ArrayLike,
    event_median_days: ArrayLike,
    event_sigma: ArrayLike,
) -> FloatArray:
    """Days lost by each run to its ``counts`` instability events, by inverse transform. [d]

    ``event_uniforms`` holds the U(0, 1) variate of every event of the runs with at most
    ``EXACT_EVENTS_MAX`` (512) events, run after run (:func:`exact_events` of each run: run
    0's events first; e.g. :func:`event_uniforms`); event ``j`` costs ``m exp(s Phi^-1(u_j))``
    (no cost where ``u_j = 0``, probability ``2**-53``). A run with more than 512 events
    takes its sum from the normal limit given its count (``N E[X]``, ``N Var[X]``) at
    ``Phi^-1(tail_uniforms)``, clipped at 0. Each run's loss depends only on its own
    uniforms. ``event_median_days`` and ``event_sigma`` broadcast to ``counts``.

    Examples
    --------
    >>> float(rollback_days([2.0], [0.5, 0.5], [0.5], 0.25, 1.0)[0])
    0.5
    """
    n = _f(counts)
    per_run = exact_events(n).ravel()
    u = _f(event_uniforms).ravel()
    if u.size != per_run.sum():
        raise ValueError(f"{u.size} event uniforms for {per_run.sum()} events drawn one by one")
    m, s = _f(event_median_days), _f(event_sigma)
    run = np.repeat(np.arange(per_run.size), per_run)

    def per_event(x: FloatArray) -> FloatArray:
        return x if x.ndim == 0 else np.broadcast_to(x, n.shape).ravel()[run]

    with np.errstate(invalid="ignore"):  # u = 0 and s = 0: 0 * -inf, no cost below
        costs = per_event(m) * np.exp(per_event(s) * special.ndtri(u))
    costs[u == 0.0] = 0.0
    days = np.asarray(np.bincount(run, costs, minlength=per_run.size), dtype=float)
    days = days.reshape(n.shape)
    exact = n <= EXACT_EVENTS_MAX
    if exact.all():
        return days
    mean_x = m * np.exp(0.5 * s**2)
    var_x = m**2 * np.exp(s**2) * np.expm1(s**2)
    limit = n * mean_x + np.sqrt(n * var_x) * special.ndtri(_f(tail_uniforms))
    return np.asarray(np.where(exact, days, np.maximum(limit, 0.0)), dtype=float)


__all__ = [
    "EXACT_EVENTS_MAX",
    "event_counts",
    "event_uniforms",
    "exact_events",
    "expected_instability_days",
    "lognormal_params",
    "rollback_days",
    "sample_instability_days",
]
