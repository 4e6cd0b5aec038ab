"""Recovery from interruptions: waiting for spot capacity, spare hosts, fallback to on-demand.

:mod:`accelsim.models.reliability` gives a run's running time and interruption count when
every interruption is followed by ``restart_hours`` and nothing else. Two waits come on top,
during which the job holds no running capacity and so is not interrupted again (they add to
the calendar, not to the interruption process):

- **Spot capacity.** A preempted spot job waits for capacity to return before restarting.
  Each wait is exponential with the run's mean ``spot_return_hours`` (a memoryless return of
  capacity, as in the renewal of held and lost periods the prior is derived from).
- **Spare hosts.** A fixed pool keeps ``s`` spare hosts. A failed host goes to repair for an
  exponential time of mean ``repair_hours`` (one repair each, none waits for another) and a
  free spare takes its place, so the job restarts after ``restart_hours``. When all ``s``
  spares are in repair, the job waits until the first repair ends. With failures at ``lambda``
  per running hour and offered load ``a = lambda R``, the chain of hosts in repair has the
  Erlang product form, and a failure finds every spare busy with probability
  ``B(s, a)`` (Erlang's loss formula; failures arrive only while the job runs, in states
  ``0..s``); it then waits ``R / (s + 1)`` on average (the first of ``s + 1`` exponential
  repairs). ``s = 0``: every failure waits one whole repair.

And a policy: **fall back to on-demand** capacity of the same chip after the ``k``-th
preemption or past ``d`` hours of training on spot, whichever comes first
(:func:`spot_split`); the rest of the work runs on on-demand at the failure rate alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from accelsim._typing import ArrayLike, FloatArray

# binomial_counts: scipy's exact quantile up to this many trials (it can search without end
# near 1e13 and beyond); the Poisson limit of the rarer outcome up to this mean, then normal.
_EXACT_TRIALS_MAX = 1e9
_POISSON_MEAN_MAX = 1e3

_U_FLOOR = 1e-200
"""Smallest uniform the exact binomial quantile inverts (see :func:`binomial_counts`)."""


def _f(x: ArrayLike) -> FloatArray:
    return np.asarray(x, dtype=float)


def erlang_b(servers: int, offered_load: ArrayLike) -> FloatArray:
    """Erlang's loss formula: the probability that all ``servers`` are busy. [fraction]

    Parameters
    ----------
    servers : int
        Servers (spare hosts), ``>= 0``. [count]
    offered_load : array_like
        Arrival rate times mean service time (failures per hour x repair hours). [Erlang]

    Returns
    -------
    FloatArray
        ``B(s, a)``; 1 at ``s = 0``.

    Notes
    -----
    The recursion ``B(0) = 1``, ``B(k) = a B(k-1) / (k + a B(k-1))``, stable for any load.
    Oracle: the explicit sum ``(a^s / s!) / sum_k a^k / k!`` and a brute-force simulation of
    spares in repair (tests/validation/test_recovery_oracles.py).

    Examples
    --------
    >>> round(float(erlang_b(2, 1.0)), 6)  # (1/2) / (1 + 1 + 1/2)
    0.2
    >>> erlang_b(0, [0.5, 3.0])
    array([1., 1.])
    """
    a = _f(offered_load)
    b = np.ones_like(a)
    for k in range(1, servers + 1):
        b = a * b / (k + a * b)
    return b


def spare_wait_hours_per_failure(
    spares: int, failures_per_hour: ArrayLike, repair_hours: ArrayLike
) -> FloatArray:
    """Mean wait for a repaired host per failure, beyond the restart. [h]

    Parameters
    ----------
    spares : int
        Spare hosts kept in reserve. [count]
    failures_per_hour : array_like
        Failures of the job per hour it runs (each takes one host out). [1/h]
    repair_hours : array_like
        Mean time a failed host is in repair (exponential). [h]

    Returns
    -------
    FloatArray
        ``B(s, lambda R) * R / (s + 1)``: the long-run mean over failures. [h]

    Notes
    -----
    Exact for exponential repairs in the long run; a run starts with every spare free, so
    its first failures wait less often (the mean is an upper bound for short runs). Oracle:
    a brute-force event simulation of failures, spares and repairs
    (tests/validation/test_recovery_oracles.py, within 5 batch-means SE).

    Examples
    --------
    >>> float(spare_wait_hours_per_failure(0, 0.1, 24.0))  # no spare: one whole repair
    24.0
    >>> round(float(spare_wait_hours_per_failure(2, 0.1, 10.0)), 6)  # B(2, 1) = 0.2
    0.666667
    """
    repair = _f(repair_hours)
    return erlang_b(spares, _f(failures_per_hour) * repair) * repair / (spares + 1.0)


def binomial_counts(trials: ArrayLike, p: ArrayLike, u: ArrayLike) -> FloatArray:
    """``Binomial(trials, p)`` counts by inversion of the uniforms ``u``. [count]

    ``trials`` are whole numbers held as floats; the inversion keeps a run's draw a function
    of its own uniform (chunk-invariant). Exact (scipy's quantile) up to
    :data:`_EXACT_TRIALS_MAX` trials; beyond (censored runs drawn from the rare-success limit
    may count 1e30 interruptions, where scipy's quantile search does not end), the minority
    outcome's count from its Poisson limit while its mean is at most
    :data:`_POISSON_MEAN_MAX` (Le Cam: total variation <= n min(p, 1-p)^2 <= 1e-3), else
    the normal limit (skewness below 0.03). Infinite trials give ``trials * p``.

    Examples
    --------
    >>> binomial_counts([0.0, 10.0, 10.0], [0.5, 0.0, 1.0], 0.5)
    array([ 0.,  0., 10.])
    >>> float(binomial_counts(1e30, 0.5, 0.5)[()])
    5e+29
    """
    n, q, v = np.broadcast_arrays(np.floor(_f(trials)), _f(p), _f(u))
    out = np.zeros(n.shape)
    finite = np.isfinite(n)
    with np.errstate(invalid="ignore"):
        out[~finite] = np.nan_to_num(n[~finite] * q[~finite], nan=0.0, posinf=np.inf)
    exact = finite & (n <= _EXACT_TRIALS_MAX)
    if exact.any():
        ne, qe, ve = n[exact], q[exact], v[exact]
        # scipy's discrete ppf(0) is -1, below the support: a uniform of 0 (probability
        # 2**-53 a draw) takes the least count, 0 (all of them where p = 1)
        lowest = np.where(qe >= 1.0, ne, 0.0)
        # scipy's (boost's) quantile search may not end below a CDF that underflows
        # (Binomial(745800, 0.001) at u = 2e-313): such a uniform, probability 1e-200 a
        # draw, takes the quantile of _U_FLOOR, which keeps the inversion monotone
        floored = np.maximum(ve, _U_FLOOR)
        out[exact] = np.where(ve > 0.0, stats.binom.ppf(floored, ne, qe), lowest)
    large = finite & ~exact
    if large.any():
        nl, ql, vl = n[large], q[large], v[large]
        minority = np.minimum(ql, 1.0 - ql)
        mean = nl * minority
        flip = ql > 0.5  # count the rarer outcome; a low u gives few of the majority one
        vm = np.where(flip, 1.0 - vl, vl)
        normal = mean > _POISSON_MEAN_MAX
        drawn = np.where(
            normal,
            np.rint(mean + np.sqrt(mean * (1.0 - minority)) * special.ndtri(vm)),
            stats.poisson.ppf(vm, np.where(normal, 0.0, mean)),
        )
        drawn = np.clip(np.nan_to_num(drawn, nan=0.0), 0.0, nl)
        out[large] = np.where(flip, nl - drawn, drawn)
    return np.asarray(np.nan_to_num(out, nan=0.0, posinf=np.inf), dtype=float)


def exponential_sum_hours(counts: ArrayLike, mean_hours: ArrayLike, u: ArrayLike) -> FloatArray:
    """Sum of ``counts`` independent exponential waits of mean ``mean_hours``. [h]

    A Gamma(``counts``, ``mean_hours``) variate by inversion of ``u``; 0 where ``counts`` is 0.

    Examples
    --------
    >>> exponential_sum_hours([0.0, 1.0], 2.0, 1.0 - np.exp(-1.0))  # Exp(2): 2 at F = 1 - 1/e
    array([0., 2.])
    """
    k, mean = _f(counts), _f(mean_hours)
    some = k > 0
    shape = np.where(some, k, 1.0)
    finite = np.isfinite(k)
    shape = np.where(finite, shape, 1.0)
    with np.errstate(over="ignore", invalid="ignore"):  # beyond float64: an infinite wait
        drawn = np.where(finite, special.gammaincinv(shape, _f(u)) * mean, k * mean)
    return np.where(some, np.nan_to_num(drawn, nan=0.0, posinf=np.inf), 0.0)


def _times(x: FloatArray, share: FloatArray) -> FloatArray:
    """``x * share`` with a zero share taking none of an infinite ``x`` (not nan)."""
    with np.errstate(invalid="ignore"):
        return np.where(share > 0, x * share, 0.0)


@dataclass(frozen=True)
class SpotSplit:
    """Where a spot run falls back to on-demand (per run)."""

    share: FloatArray
    """Share of the spot run's running time (and work) done on spot; 1: no fallback."""
    work_done_hours: FloatArray
    """Work done on spot, kept at the switch (all of it without a fallback). [h]"""
    wait_hours: FloatArray
    """Waits for spot capacity before the switch (or over the whole run). [h]"""
    preemptions: FloatArray
    """Preemptions on spot, the one that triggers the fallback included. [count]"""
    fell_back: FloatArray
    """1 where the run falls back, else 0."""
    spot_hours: FloatArray
    """Running hours on spot (the share of the run's, or of an endless run's). [h]"""


def spot_split(
    running_hours: ArrayLike,
    interruptions: ArrayLike,
    preemption_share: ArrayLike,
    return_hours: ArrayLike,
    work_hours: ArrayLike,
    after_preemptions: int | None,
    after_hours: float | None,
    uniforms: tuple[FloatArray, FloatArray, FloatArray],
    preemptions_per_hour: ArrayLike = 0.0,
) -> SpotSplit:
    """A spot run's waits for capacity and, under a fallback policy, its switch to on-demand.

    Parameters
    ----------
    running_hours, interruptions : array_like
        The whole run on spot, as :func:`accelsim.models.reliability.sample_completion_hours`
        draws it (time running or restarting, and interruptions). [h], [count]
    preemption_share : array_like
        Share of interruptions that are preemptions, ``lambda_p / (lambda_f + lambda_p)``.
    return_hours : array_like
        Mean wait for spot capacity after a preemption. [h]
    work_hours : array_like
        The run's work. [h]
    after_preemptions : int or None
        Fall back at the ``k``-th preemption (0: never on spot); ``None``: no such rule.
    after_hours : float or None
        Fall back once the run has trained this long on spot, waits included; ``None``: no
        such rule. [h]
    uniforms : tuple of three FloatArray
        The run's uniforms for the preemption count, the waits and the trigger's position.
    preemptions_per_hour : array_like, optional
        Preemptions per running hour (as ``running_hours`` counts them), for runs whose time
        is beyond float64 (:func:`_endless_split`). [1/h]

    Returns
    -------
    SpotSplit

    Notes
    -----
    Interruptions are preemptions independently with probability ``lambda_p / lambda``, so
    ``K_p ~ Binomial(K, lambda_p / lambda)``; the waits sum to ``Gamma(K_p, W)``. Given
    ``K_p`` events of a Poisson process in the running time, the ``k``-th lies at a
    ``Beta(k, K_p - k + 1)`` share of it. The work kept at the switch is that share of the
    work: progress is taken as linear in the running time, which already holds the losses
    since the last checkpoint on average (rounding it down to a checkpoint counted the loss
    twice: +1 h against the oracle at a 2 h interval). A deadline switch is planned; its share
    is ``after_hours`` over the spot run's calendar time (running plus waits, the waits
    spread evenly). The first trigger wins; the switch costs one restart on the new
    capacity. Oracle: a brute-force event simulation of the policy
    (tests/validation/test_recovery_oracles.py): mean time within 5 SE plus one checkpoint segment
    and restart (observed: within 5 SE alone on every case there).
    """
    hours, count = _f(running_hours), _f(interruptions)
    u_count, u_wait, u_order = uniforms
    preempted = binomial_counts(count, preemption_share, u_count)
    waits = exponential_sum_hours(preempted, return_hours, u_wait)
    share = np.ones_like(hours)
    waited = waits
    before = preempted
    by_count = np.zeros(hours.shape, dtype=bool)
    if after_preemptions is not None:
        k = float(after_preemptions)
        by_count = preempted >= k
        counted = by_count & np.isfinite(preempted)
        rest = np.where(counted, preempted - k + 1.0, 1.0)
        # infinitely many preemptions (a time beyond float64): see _endless_split
        position = (
            np.where(counted, np.nan_to_num(special.betaincinv(max(k, 1.0), rest, u_order)), 0.0)
            if k > 0
            else 0.0
        )
        share = np.where(by_count, position, 1.0)
        # the k - 1 waits before it (the k-th preemption waits for no spot capacity)
        frac = np.divide(max(k - 1.0, 0.0), preempted, out=np.zeros_like(preempted), where=counted)
        waited = np.where(by_count, _times(waits, frac), waits)
        before = np.where(by_count, k, preempted)
    if after_hours is not None:
        calendar = hours + waits
        reached_at = _times(hours, share) + waited  # the count trigger's calendar time
        late = (calendar > after_hours) & ~(by_count & (reached_at <= after_hours))
        by_time = np.where(late, after_hours / np.where(late, calendar, 1.0), 1.0)
        share = np.where(late, by_time, share)
        waited = np.where(late, _times(waits, by_time), waited)
        before = np.where(late, _times(preempted, by_time), before)
    fell_back = share < 1.0
    work = _f(work_hours) * share
    split = SpotSplit(
        share=share,
        work_done_hours=np.where(fell_back, work, _f(work_hours)),
        wait_hours=waited,
        preemptions=before,
        fell_back=fell_back.astype(float),
        spot_hours=_times(hours, share),
    )
    endless = ~np.isfinite(hours)
    if (after_preemptions or after_hours is not None) and endless.any():
        split = _endless_split(
            split, endless, preemptions_per_hour, return_hours, after_preemptions, after_hours,
            u_wait, u_order,
        )  # fmt: skip
    return split


def _endless_split(
    split: SpotSplit,
    endless: np.ndarray,
    preemptions_per_hour: ArrayLike,
    return_hours: ArrayLike,
    after_preemptions: int | None,
    after_hours: float | None,
    u_wait: FloatArray,
    u_order: FloatArray,
) -> SpotSplit:
    """The switch of runs whose time on spot is beyond float64 (no share of it is defined).

    Such a run commits no measurable work on spot. Its ``k``-th preemption comes after a
    ``Gamma(k, 1 / lambda_p)`` running time and ``k - 1`` waits; a deadline first at
    ``after_hours``, split between running and waiting as ``1 : lambda_p W``.
    """
    rate = np.broadcast_to(_f(preemptions_per_hour), endless.shape)[endless]
    mean_wait = np.broadcast_to(_f(return_hours), endless.shape)[endless]
    running = np.full(rate.shape, np.inf)
    waits = np.zeros(rate.shape)
    count = np.zeros(rate.shape)
    if after_preemptions:
        k = float(after_preemptions)
        with np.errstate(divide="ignore"):
            running = special.gammaincinv(k, u_order[endless]) / rate
        waits = exponential_sum_hours(np.full(rate.shape, k - 1.0), mean_wait, u_wait[endless])
        count = np.full(rate.shape, k)
    if after_hours is not None:
        late = running + waits > after_hours
        on = after_hours / (1.0 + rate * mean_wait)
        running = np.where(late, on, running)
        waits = np.where(late, after_hours - on, waits)
        count = np.where(late, rate * on, count)
    fell = np.isfinite(running)
    out = {f: np.array(getattr(split, f), dtype=float) for f in SpotSplit.__dataclass_fields__}
    out["share"][endless] = np.where(fell, 0.0, 1.0)
    out["work_done_hours"][endless] = np.where(fell, 0.0, out["work_done_hours"][endless])
    out["wait_hours"][endless] = np.where(fell, waits, out["wait_hours"][endless])
    out["preemptions"][endless] = np.where(fell, count, out["preemptions"][endless])
    out["fell_back"][endless] = fell.astype(float)
    out["spot_hours"][endless] = running
    return SpotSplit(**out)


def spare_waits_hours(
    failures: ArrayLike,
    spares: int,
    failures_per_hour: ArrayLike,
    repair_hours: ArrayLike,
    u_blocked: ArrayLike,
    u_wait: ArrayLike,
) -> FloatArray:
    """Total wait of a run's ``failures`` for repaired hosts, with ``spares`` in reserve. [h]

    The first ``s`` failures of a run always find a spare (it starts with all of them free);
    each later one finds every spare in repair with probability ``B(s, lambda R)``
    (:func:`erlang_b`), independently, and then waits an exponential time of mean
    ``R / (s + 1)``: the blocked count is ``Binomial(K - s, B)`` and the sum of its waits a
    gamma variate, each by inversion of the run's uniforms. ``B`` is the long-run share: a
    run's early failures after the first ``s`` find fewer spares busy than that, so the mean
    wait is an upper bound for runs with few failures per spare, exact in the long run;
    consecutive failures are also correlated through the hosts in repair, which the
    independent draws leave out (they change the spread, not the mean).

    Examples
    --------
    >>> u = np.array([0.5])
    >>> float(spare_waits_hours([0.0], 2, 0.1, 10.0, u, u)[0])
    0.0
    """
    repair = _f(repair_hours)
    exposed = np.maximum(_f(failures) - spares, 0.0)
    blocked = binomial_counts(exposed, erlang_b(spares, _f(failures_per_hour) * repair), u_blocked)
    return exponential_sum_hours(blocked, repair / (spares + 1.0), u_wait)


__all__ = [
    "SpotSplit",
    "binomial_counts",
    "erlang_b",
    "exponential_sum_hours",
    "spare_wait_hours_per_failure",
    "spare_waits_hours",
    "spot_split",
]
