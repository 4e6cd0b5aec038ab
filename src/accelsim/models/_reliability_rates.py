"""Interruption rates of a job (failures, preemptions) and checkpoint intervals (Young, Daly).

Part of :mod:`accelsim.models.reliability`, which holds the model and is the public module.
"""

from __future__ import annotations

import numpy as np

from accelsim._typing import ArrayLike, FloatArray


def _f(x: ArrayLike) -> FloatArray:
    return np.asarray(x, dtype=float)


def interruption_rate_per_hour(
    chips: ArrayLike,
    failure_rate_per_chip_hour: ArrayLike,
    preemptions_per_chip_hour: ArrayLike = 0.0,
) -> FloatArray:
    """Rate at which a job spread over ``chips`` chips is interrupted.

    Any failure or preemption of any chip stops the whole synchronous job, so the rates add.

    Parameters
    ----------
    chips : array_like
        Chips the job runs on. [chips]
    failure_rate_per_chip_hour : array_like
        Failures of one chip per hour it runs. [1/(chip h)]
    preemptions_per_chip_hour : array_like, optional
        Spot preemptions of one chip per hour it is held. [1/(chip h)]

    Returns
    -------
    FloatArray
        Interruptions of the job per hour. [1/h]

    Notes
    -----
    ``lambda = chips * (failure + preemption)``. Oracle: the Llama 3 405B snapshot (419
    unexpected interruptions in 54 days on 16,384 GPUs, Dubey et al. 2024) recovered from its
    own per-chip rate, in ``tests/validation/test_reliability_oracles.py``.

    Examples
    --------
    >>> float(interruption_rate_per_hour(16384, 2e-5))
    0.32768
    >>> interruption_rate_per_hour([8, 16], 1e-3, 1e-3)
    array([0.016, 0.032])
    """
    rate = _f(failure_rate_per_chip_hour) + _f(preemptions_per_chip_hour)
    return _f(chips) * rate


def preemption_events_per_hour(
    chips: ArrayLike,
    unit_chips: ArrayLike,
    preemptions_per_chip_hour: ArrayLike,
    correlated_share: ArrayLike,
) -> FloatArray:
    """Rate of distinct spot preemption events a job sees, preempted per VM or per slice.

    Clouds reclaim spot capacity a whole VM (8 GPUs) or TPU host at a time, and reclaim
    many VMs of one type and zone together. A job on ``u = ceil(chips / unit_chips)`` units
    is stopped by each event that takes any of its units; a burst that takes several counts
    once.

    Parameters
    ----------
    chips : array_like
        Chips the job runs on. [chips]
    unit_chips : array_like
        Chips per preemption unit (a VM, a TPU host). [chips]
    preemptions_per_chip_hour : array_like
        Preemptions per chip-hour held, so a unit is preempted at ``rate * unit_chips``.
        [1/(chip h)]
    correlated_share : array_like
        Share of a unit's preemptions that come in zone-wide bursts taking every unit of the
        job at once. [fraction]

    Returns
    -------
    FloatArray
        Preemption events that interrupt the job, per hour. [1/h]

    Notes
    -----
    With ``lambda_u = rate * unit_chips`` and share ``rho``: each unit is preempted alone at
    ``(1 - rho) lambda_u`` and in bursts at ``rho lambda_u`` (one burst process shared by all
    units), so the job sees ``lambda_u (u (1 - rho) + rho)``; each unit's own rate stays
    ``lambda_u``. ``rho = 0`` gives independent units, ``rho = 1`` one event per burst.
    Oracle: a brute-force event simulation of units and bursts
    (tests/validation/test_preemption.py).

    Examples
    --------
    >>> float(preemption_events_per_hour(1024, 8, 0.05, 0.0))  # 128 independent VMs
    51.2
    >>> round(float(preemption_events_per_hour(1024, 8, 0.05, 0.9)), 6)  # bursts once
    5.48
    """
    units = np.ceil(_f(chips) / _f(unit_chips))
    unit_rate = _f(preemptions_per_chip_hour) * _f(unit_chips)
    share = _f(correlated_share)
    return unit_rate * (units * (1.0 - share) + share)


def young_interval_hours(write_hours: ArrayLike, mtbf_hours: ArrayLike) -> FloatArray:
    """Checkpoint interval that minimises expected lost time, after Young (1974).

    First-order estimate, good when the write time is small against the MTBF.

    Parameters
    ----------
    write_hours : array_like
        Time to write one checkpoint. [h]
    mtbf_hours : array_like
        Mean time between interruptions of the whole job, ``1 / lambda``. [h]

    Returns
    -------
    FloatArray
        Work between checkpoints. [h]

    Notes
    -----
    ``tau = sqrt(2 * C * M)``. Oracle: the argmin over ``tau`` of the exact expected time
    (:func:`expected_completion_hours`); with ``eps = sqrt(C / (2 M))`` Young is too long by a
    relative ``2 eps / 3 + eps**2 / 3 + O(eps**3)``.

    References
    ----------
    J. W. Young, "A first order approximation to the optimum checkpoint interval",
    Commun. ACM 17(9), 1974.

    Examples
    --------
    >>> float(young_interval_hours(0.1, 5.0))
    1.0
    """
    return np.sqrt(2.0 * _f(write_hours) * _f(mtbf_hours))


def daly_interval_hours(write_hours: ArrayLike, mtbf_hours: ArrayLike) -> FloatArray:
    """Checkpoint interval after Daly's (2006) higher-order estimate.

    Closer to the exact optimum than Young's when the write time is not negligible; the
    restart time does not enter, because it scales the expected time of every interval by the
    same factor ``exp(R / M)`` and so leaves the optimum where it is.

    Parameters
    ----------
    write_hours : array_like
        Time to write one checkpoint. [h]
    mtbf_hours : array_like
        Mean time between interruptions of the whole job. [h]

    Returns
    -------
    FloatArray
        Work between checkpoints. [h]

    Notes
    -----
    With ``x = C / (2 M)``: ``tau = sqrt(2 C M) * (1 + sqrt(x) / 3 + x / 9) - C`` for
    ``C < 2 M``, else ``tau = M``. Oracle: the argmin of :func:`expected_completion_hours`,
    whose series ``tau*/M = 2 eps (1 - 2 eps/3 + eps**2/9 + 4 eps**3/135 + ...)`` with
    ``eps = sqrt(x)`` Daly matches to ``eps**3``: his relative error is ``-4 eps**3 / 135``.

    References
    ----------
    J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart
    dumps", Future Generation Computer Systems 22(3), 2006.

    Examples
    --------
    >>> float(daly_interval_hours(0.1, 5.0))  # Young: 1.0
    0.93444...
    >>> daly_interval_hours([1.0, 30.0], 10.0)
    array([ 3.83031449, 10.        ])
    """
    write = _f(write_hours)
    mtbf = _f(mtbf_hours)
    x = write / (2.0 * mtbf)
    higher_order = np.sqrt(2.0 * write * mtbf) * (1.0 + np.sqrt(x) / 3.0 + x / 9.0) - write
    return np.where(write < 2.0 * mtbf, higher_order, mtbf)
