"""The reliability model in closed form: mean completion time, mean interruptions, goodput,
and the cutting of the work into checkpoint segments that every sampler shares.

Part of :mod:`accelsim.models.reliability`, which holds the model and is the public module.
"""

from __future__ import annotations

import numpy as np

from accelsim._typing import ArrayLike, FloatArray
from accelsim.models._reliability_rates import _f

# A quotient W / tau within this relative distance of a positive integer counts as that
# integer: float rounding of the division must not add a near-empty last segment (and a whole
# checkpoint write). At most this share of the work is dropped.
_SEGMENT_SNAP = 1e-12


def expected_completion_hours(
    work_hours: ArrayLike,
    interval_hours: ArrayLike,
    write_hours: ArrayLike,
    restart_hours: ArrayLike,
    rate_per_hour: ArrayLike,
) -> FloatArray:
    """Exact expected wall-clock time to finish ``work_hours`` of work under interruptions.

    Applies to the model of :mod:`accelsim.models.reliability`: exponential interruptions, a
    checkpoint after every ``interval_hours`` of work and at the end, restarts exposed to
    interruptions.

    Parameters
    ----------
    work_hours : array_like
        Failure-free compute time of the job. [h]
    interval_hours : array_like
        Work between checkpoints (> 0; ``inf`` means one checkpoint, at the end). [h]
    write_hours : array_like
        Time to write one checkpoint. [h]
    restart_hours : array_like
        Time to restart from the last checkpoint after an interruption. [h]
    rate_per_hour : array_like
        Interruption rate of the whole job, ``lambda``. [1/h]

    Returns
    -------
    FloatArray
        Expected wall-clock time, failures included; ``inf`` when it overflows. [h]

    Notes
    -----
    A segment of work ``s`` takes on average ``g(s) = exp(lambda R) (exp(lambda (s + C)) - 1)
    / lambda`` (renewal argument: an attempt succeeds with probability ``exp(-lambda (s+C))``,
    a failed one loses a truncated-exponential time and then a restart whose own expected
    length is ``(exp(lambda R) - 1) / lambda``). Then ``E[T] = n g(tau) + g(r)`` with
    ``n = floor(W / tau)`` and ``r = W - n tau`` (no ``g(r)`` when ``r = 0``); when ``tau``
    divides ``W`` this is the classic ``(W / tau) exp(lambda R) (exp(lambda (tau + C)) - 1) /
    lambda``. As ``lambda -> 0``, ``g(s) -> s + C``, reached exactly at ``lambda = 0``.
    Oracles: an event-by-event simulation and the sampler :func:`sample_completion_hours`
    (within 5 standard errors), in ``tests/validation/test_reliability_oracles.py``.

    References
    ----------
    J. T. Daly (2006), see :func:`daly_interval_hours`; M. Bougeret et al., "Checkpointing
    strategies for parallel jobs", SC 2011 (their result with downtime ``D = 0``).

    Examples
    --------
    >>> float(expected_completion_hours(10.0, 2.0, 0.1, 0.5, 0.0))  # 5 writes, no failures
    10.5
    >>> expected_completion_hours(10.0, [2.0, 3.0], 0.1, 0.5, 0.05)
    array([11.35132628, 11.4735735 ])
    """
    full, interval, has_partial, partial = _segments(work_hours, interval_hours)
    write = _f(write_hours)
    per_full = _mean_attempt_time(interval + write, rate_per_hour)
    per_partial = _mean_attempt_time(partial + write, rate_per_hour)
    with np.errstate(over="ignore", invalid="ignore"):
        restart_factor = np.exp(_f(rate_per_hour) * _f(restart_hours))
        # no segment of a kind adds nothing, even where its attempt time overflows (0 x inf)
        fulls = np.where(full > 0, full * per_full, 0.0)
        partials = np.where(has_partial > 0, has_partial * per_partial, 0.0)
        out: FloatArray = restart_factor * (fulls + partials)
        return out


def expected_interruptions(
    work_hours: ArrayLike,
    interval_hours: ArrayLike,
    write_hours: ArrayLike,
    restart_hours: ArrayLike,
    rate_per_hour: ArrayLike,
) -> FloatArray:
    """Exact expected number of interruptions before ``work_hours`` of work are done.

    Same model and parameters as :func:`expected_completion_hours`.

    Parameters
    ----------
    work_hours, interval_hours, write_hours, restart_hours : array_like
        As in :func:`expected_completion_hours`. [h]
    rate_per_hour : array_like
        Interruption rate of the whole job. [1/h]

    Returns
    -------
    FloatArray
        Expected interruptions, in work, writes and restarts. [count]

    Notes
    -----
    A segment of work ``s`` fails ``exp(lambda (s + C)) - 1`` times on average (geometric);
    each failure's restart fails ``exp(lambda R) - 1`` times on average, so the segment sees
    ``exp(lambda R) (exp(lambda (s + C)) - 1)`` interruptions. This is ``lambda E[T]``, as
    Wald's identity for a Poisson process stopped at the end of the job requires; that
    identity and the sampler's mean count are the oracles.

    Examples
    --------
    >>> float(expected_interruptions(10.0, 2.0, 0.1, 0.5, 0.0))
    0.0
    >>> float(expected_interruptions(10.0, 2.0, 0.1, 0.5, 0.05))  # = 0.05 * E[T]
    0.56756...
    """
    full, interval, has_partial, partial = _segments(work_hours, interval_hours)
    rate = _f(rate_per_hour)
    write = _f(write_hours)
    with np.errstate(over="ignore"):
        per_full = np.expm1(rate * (interval + write))
        per_partial = np.expm1(rate * (partial + write))
        return np.exp(rate * _f(restart_hours)) * (full * per_full + has_partial * per_partial)


def goodput_fraction(
    work_hours: ArrayLike,
    interval_hours: ArrayLike,
    write_hours: ArrayLike,
    restart_hours: ArrayLike,
    rate_per_hour: ArrayLike,
) -> FloatArray:
    """Share of the expected wall-clock time that is useful work, ``W / E[T]``.

    Parameters
    ----------
    work_hours, interval_hours, write_hours, restart_hours : array_like
        As in :func:`expected_completion_hours`. [h]
    rate_per_hour : array_like
        Interruption rate of the whole job. [1/h]

    Returns
    -------
    FloatArray
        Goodput; ``nan`` where there is no work. [fraction]

    Notes
    -----
    ``W / E[T]`` with ``E[T]`` from :func:`expected_completion_hours` (its oracles apply).
    It is the ratio of means, not the mean of per-run ratios.

    Examples
    --------
    >>> float(goodput_fraction(10.0, 2.0, 0.1, 0.5, 0.0))
    0.952...
    """
    work = _f(work_hours)
    expected = expected_completion_hours(
        work, interval_hours, write_hours, restart_hours, rate_per_hour
    )
    work, expected = np.broadcast_arrays(work, expected)
    goodput = np.full(work.shape, np.nan)
    np.divide(work, expected, out=goodput, where=expected > 0)
    return goodput


def checkpoint_segments(
    work_hours: ArrayLike, interval_hours: ArrayLike
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Cut the work into checkpoint segments: the one rule of both engines.

    Parameters
    ----------
    work_hours : array_like
        Failure-free compute of the job (or of what is left of it). [h]
    interval_hours : array_like
        Work between checkpoints, ``inf`` for none (one segment, a final save only). [h]

    Returns
    -------
    full : FloatArray
        Number of full segments of ``interval_hours`` work. [count]
    interval : FloatArray
        Work of a full segment, 0 where there is none (keeps ``inf * 0`` out of sums). [h]
    partial : FloatArray
        Work of the last, partial segment, 0 where there is none. [h]

    Notes
    -----
    ``full = floor(W / tau (1 + 1e-12))`` and ``partial = W - full tau`` unless that is at
    most ``1e-12 W``: a quotient within 1e-12, relative, of an integer counts as that
    integer, so float rounding never adds a near-empty last segment (and a whole
    checkpoint write). Used by :func:`expected_completion_hours`,
    :func:`sample_completion_hours` and the DES (``engines/cluster/des/_attempts.py``).

    Examples
    --------
    >>> [x.tolist() for x in checkpoint_segments([10.0, 12.0, 5.0], [4.0, 4.0, np.inf])]
    [[2.0, 3.0, 0.0], [4.0, 4.0, 0.0], [2.0, 0.0, 5.0]]
    """
    work = _f(work_hours)
    interval = _f(interval_hours)
    full = np.floor(work / interval * (1.0 + _SEGMENT_SNAP))
    interval_used = np.where(full > 0, interval, 0.0)
    remainder = work - full * interval_used
    partial = np.where(remainder > _SEGMENT_SNAP * work, remainder, 0.0)
    return full, interval_used, partial


def _segments(
    work_hours: ArrayLike, interval_hours: ArrayLike
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """:func:`checkpoint_segments` and 1.0 where there is a partial segment."""
    full, interval, partial = checkpoint_segments(work_hours, interval_hours)
    return full, interval, (partial > 0.0).astype(float), partial


def _mean_attempt_time(length_hours: ArrayLike, rate_per_hour: ArrayLike) -> FloatArray:
    """``expm1(lambda L) / lambda``, the mean time to get ``L`` failure-free hours (no restart).

    Written as ``L * expm1(x) / x`` with ``x = lambda L`` so that ``lambda = 0`` gives ``L``
    exactly and small ``x`` keeps full precision.
    """
    length = _f(length_hours)
    x = _f(rate_per_hour) * length
    nonzero = x != 0.0
    safe_x = np.where(nonzero, x, 1.0)
    with np.errstate(over="ignore"):
        return length * np.where(nonzero, np.expm1(safe_x) / safe_x, 1.0)
