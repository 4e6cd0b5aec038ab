"""Engineering effort: the MFU learning curve, its inverse, and the hours-versus-dollars optimum.

A team that invests optimisation hours in a codebase on a given chip raises its model-FLOPs
utilisation (MFU) from a starting level towards a ceiling, with diminishing returns. This module
holds that learning curve, the hours needed to reach a target MFU, the re-optimisation hours of a
prototyping stage, the conversion of engineering hours into calendar days, and the number of
optimisation hours that minimises hardware plus engineering cost.

All functions are pure and vectorised: array-likes in, float64 arrays out, broadcast by numpy.
Every default number (hours per week, hours scale, rates) comes in as an argument; the catalog
priors are wired to these functions by the caller.
"""

from __future__ import annotations

import numpy as np

from accelsim._typing import ArrayLike, FloatArray

__all__ = [
    "calendar_days",
    "effort_at_stake",
    "mfu_after_optimization",
    "optimal_optimization_hours",
    "optimization_hours_for_mfu",
    "reoptimization_hours",
    "total_cost_usd_at",
]

_DAYS_PER_WEEK = 7.0


def _f(x: ArrayLike) -> FloatArray:
    return np.asarray(x, dtype=float)


def _mfu_fraction_of_ceiling(
    start_fraction: ArrayLike, optimization_hours: ArrayLike, hours_scale: ArrayLike
) -> FloatArray:
    """Share of the ceiling reached after some optimisation hours. [fraction]

    ``start + (1 - start) * (1 - exp(-h / s))``, written with ``expm1`` so that h = 0 gives
    ``start`` exactly; capped at 1 because ``1 - start`` is rounded and the sum can otherwise
    exceed 1 by one unit in the last place.
    """
    start = _f(start_fraction)
    gained = -np.expm1(-_f(optimization_hours) / _f(hours_scale))
    return np.minimum(start + (1.0 - start) * gained, 1.0)


def mfu_after_optimization(
    mfu_ceiling: ArrayLike,
    start_fraction: ArrayLike,
    optimization_hours: ArrayLike,
    hours_scale: ArrayLike,
) -> FloatArray:
    """MFU reached after investing optimisation hours, on a saturating learning curve.

    Applies to one codebase on one chip: a team starts at a fraction of the achievable MFU
    and closes the remaining gap exponentially in the hours it invests.

    Parameters
    ----------
    mfu_ceiling : array_like
        Best MFU reachable on this chip with unlimited effort, in (0, 1]. [fraction]
    start_fraction : array_like
        MFU before any optimisation, as a share of the ceiling, in (0, 1]. [fraction]
    optimization_hours : array_like
        Engineering hours invested in optimisation, >= 0 (``inf`` allowed). [h]
    hours_scale : array_like
        Hours that close 63 % (1 - 1/e) of the remaining gap, > 0. [h]

    Returns
    -------
    numpy.ndarray
        MFU after optimisation, in [start_fraction * mfu_ceiling, mfu_ceiling]. [fraction]

    Notes
    -----
    .. math:: m(h) = c \\left(1 - (1 - s_0)\\, e^{-h/\\tau}\\right)

    with ceiling :math:`c`, start fraction :math:`s_0` and scale :math:`\\tau`. The curve is
    non-decreasing in :math:`h`, equals :math:`c s_0` at :math:`h = 0` (exactly, since it is
    evaluated with ``expm1``) and tends to :math:`c`.

    Oracle: the closed-form inverse :func:`optimization_hours_for_mfu` (round trip), and the
    limits h = 0 and h = inf. The form is an assumption: no published estimate of the effort
    to raise MFU exists (``reference/onprem_and_labor.csv``, row "Effort to optimise MFU").

    Examples
    --------
    >>> mfu_after_optimization(0.5, 0.6, [0.0, 100.0, np.inf], 100.0)
    array([0.3       , 0.42642411, 0.5       ])
    """
    fraction = _mfu_fraction_of_ceiling(start_fraction, optimization_hours, hours_scale)
    return _f(mfu_ceiling) * fraction


def optimization_hours_for_mfu(
    target_mfu: ArrayLike,
    mfu_ceiling: ArrayLike,
    start_fraction: ArrayLike,
    hours_scale: ArrayLike,
) -> FloatArray:
    """Optimisation hours needed to reach a target MFU: the inverse of the learning curve.

    Parameters
    ----------
    target_mfu : array_like
        MFU the team wants to reach, >= 0. [fraction]
    mfu_ceiling : array_like
        Best MFU reachable on this chip, in (0, 1]. [fraction]
    start_fraction : array_like
        MFU before optimisation as a share of the ceiling, in (0, 1]. [fraction]
    hours_scale : array_like
        Hours that close 63 % of the remaining gap, > 0. [h]

    Returns
    -------
    numpy.ndarray
        Hours to reach the target: 0 where the target is at most the starting MFU
        (``start_fraction * mfu_ceiling``), ``inf`` where it is at or above the ceiling
        and not already reached. [h]

    Notes
    -----
    .. math:: h(m) = \\tau \\ln \\frac{1 - s_0}{1 - m / c}, \\qquad c s_0 < m < c

    written as :math:`-\\tau\\,\\mathrm{log1p}(-g)` with :math:`g = (m/c - s_0)/(1 - s_0)`,
    the share of the gap to close. When ``start_fraction == 1`` the ceiling is reached at
    h = 0, so 0 takes precedence over ``inf``.

    Oracle: :func:`mfu_after_optimization` evaluated at the returned hours gives back the
    target (round trip).

    Examples
    --------
    >>> optimization_hours_for_mfu([0.2, 0.45, 0.5], 0.5, 0.6, 100.0)
    array([  0.        , 138.62943611,          inf])
    """
    ratio = _f(target_mfu) / _f(mfu_ceiling)
    start = _f(start_fraction)
    # Out-of-range targets make log1p(-1) or 0/0 (start == 1); np.where then picks 0 or inf.
    with np.errstate(divide="ignore", invalid="ignore"):
        gap_share = np.clip((ratio - start) / (1.0 - start), 0.0, 1.0)
        hours = -_f(hours_scale) * np.log1p(-gap_share)
    reached = ratio <= start
    return np.where(reached, 0.0, np.where(ratio >= 1.0, np.inf, hours))


def effort_at_stake(
    hours: ArrayLike,
    stake_chip_hours: ArrayLike,
    *,
    reference_chip_hours: ArrayLike,
    elasticity: ArrayLike,
    threshold_chip_hours: ArrayLike,
) -> FloatArray:
    """Optimisation hours a team invests given what the run puts at stake.

    Parameters
    ----------
    hours : array_like
        Hours invested in a run of ``reference_chip_hours``. [engineer*h]
    stake_chip_hours : array_like
        Failure-free chip-hours of the run at its un-optimised MFU. [chip*h]
    reference_chip_hours : array_like
        Stake at which ``hours`` holds in full. [chip*h]
    elasticity : array_like
        Exponent of the effort in the stake, ≥ 0. [dimensionless]
    threshold_chip_hours : array_like
        Stake below which nobody optimises. [chip*h]

    Returns
    -------
    ndarray
        Hours, never more than ``hours``; 0 below the threshold. [engineer*h]

    Notes
    -----
    .. math:: h = h_0 \\min\\!\\left(1, (S / S_0)^{\\epsilon}\\right) \\, [S \\ge S_{min}]

    Oracle: ``hours`` at and above the reference, 0 below the threshold, monotone in S
    (unit test). The priors behind the arguments are stated judgements (``priors.yaml``).

    Examples
    --------
    >>> [float(effort_at_stake(200.0, s, reference_chip_hours=1e6, elasticity=0.5,
    ...                        threshold_chip_hours=1e3)) for s in (1e2, 1e4, 1e6, 1e7)]
    [0.0, 20.0, 200.0, 200.0]
    """
    stake = _f(stake_chip_hours)
    share = np.minimum(1.0, (stake / _f(reference_chip_hours)) ** _f(elasticity))
    return np.where(stake >= _f(threshold_chip_hours), _f(hours) * share, 0.0)


def reoptimization_hours(
    architecture_changes: ArrayLike, hours_per_change: ArrayLike
) -> FloatArray:
    """Engineering hours spent re-optimising after architecture changes while prototyping.

    In the prototyping stage every change of model architecture invalidates part of the
    tuning (kernels, sharding, compiler flags) and costs a fresh round of optimisation.

    Parameters
    ----------
    architecture_changes : array_like
        Number of architecture changes over the project, >= 0. [count]
    hours_per_change : array_like
        Re-optimisation hours each change costs on this chip, >= 0. [h]

    Returns
    -------
    numpy.ndarray
        Total re-optimisation hours. [h]

    Notes
    -----
    .. math:: h = n \\cdot h_{\\text{change}}

    Oracle: the product itself (hand-computed examples in the unit tests).

    Examples
    --------
    >>> reoptimization_hours([0, 3, 10], 40.0)
    array([  0., 120., 400.])
    """
    return _f(architecture_changes) * _f(hours_per_change)


def calendar_days(hours: ArrayLike, engineers: ArrayLike, hours_per_week: ArrayLike) -> FloatArray:
    """Calendar days that engineering hours take when a team works on them in parallel.

    Assumes the work divides evenly among the engineers (no coordination loss); a caller
    that wants Brooks's-law effects passes an effective headcount.

    Parameters
    ----------
    hours : array_like
        Engineering hours of work, >= 0. [h]
    engineers : array_like
        Engineers working on it at once, > 0. [count]
    hours_per_week : array_like
        Working hours per engineer per week, > 0. [h/week]

    Returns
    -------
    numpy.ndarray
        Elapsed calendar time, weekends included. [d]

    Notes
    -----
    .. math:: d = \\frac{h}{n \\cdot h_{\\text{week}}} \\cdot 7

    Oracle: 40 h of work for one engineer at 40 h/week is one calendar week (7 d).

    Examples
    --------
    >>> calendar_days([40.0, 400.0], 2, 40.0)
    array([ 3.5, 35. ])
    """
    weeks = _f(hours) / (_f(engineers) * _f(hours_per_week))
    return weeks * _DAYS_PER_WEEK


def total_cost_usd_at(
    optimization_hours: ArrayLike,
    hardware_usd_at_ceiling: ArrayLike,
    engineer_usd_per_hour: ArrayLike,
    start_fraction: ArrayLike,
    hours_scale: ArrayLike,
) -> FloatArray:
    """Hardware plus engineering cost of a run after a given number of optimisation hours.

    Hardware cost scales as 1/MFU (a fixed amount of work, paid per chip-hour), so it is
    ``hardware_usd_at_ceiling * ceiling / m(h)``; the ceiling cancels and is not an argument.

    Parameters
    ----------
    optimization_hours : array_like
        Optimisation hours invested, >= 0. [h]
    hardware_usd_at_ceiling : array_like
        Hardware cost of the run if it ran at the MFU ceiling, >= 0. [USD]
    engineer_usd_per_hour : array_like
        Fully loaded cost of one engineering hour, >= 0. [USD/h]
    start_fraction : array_like
        MFU before optimisation as a share of the ceiling, in (0, 1]. [fraction]
    hours_scale : array_like
        Hours that close 63 % of the remaining MFU gap, > 0. [h]

    Returns
    -------
    numpy.ndarray
        Hardware plus engineering cost. [USD]

    Notes
    -----
    .. math:: C(h) = \\frac{H}{s_0 + (1 - s_0)(1 - e^{-h/\\tau})} + w h
              = H \\frac{c}{m(h)} + w h

    Oracle: ``H * c / mfu_after_optimization(c, s0, h, tau) + w * h`` for any ceiling c.

    Examples
    --------
    >>> total_cost_usd_at([0.0, 100.0], 1e6, 100.0, 0.5, 100.0)
    array([2000000.        , 1235399.67356056])
    """
    fraction = _mfu_fraction_of_ceiling(start_fraction, optimization_hours, hours_scale)
    engineering_usd = _f(engineer_usd_per_hour) * _f(optimization_hours)
    return _f(hardware_usd_at_ceiling) / fraction + engineering_usd


def optimal_optimization_hours(
    hardware_usd_at_ceiling: ArrayLike,
    engineer_usd_per_hour: ArrayLike,
    start_fraction: ArrayLike,
    hours_scale: ArrayLike,
) -> FloatArray:
    """Optimisation hours that minimise hardware plus engineering cost, in closed form.

    The trade at the heart of "cheap but hard to program" hardware: each optimisation hour
    costs an engineer's rate and saves hardware cost by raising MFU. The MFU ceiling does not
    move the optimum (it cancels in :func:`total_cost_usd_at`), so it is not an argument.

    Parameters
    ----------
    hardware_usd_at_ceiling : array_like
        Hardware cost of the run if it ran at the MFU ceiling, >= 0. [USD]
    engineer_usd_per_hour : array_like
        Fully loaded cost of one engineering hour, > 0. [USD/h]
    start_fraction : array_like
        MFU before optimisation as a share of the ceiling, in (0, 1]. [fraction]
    hours_scale : array_like
        Hours that close 63 % of the remaining MFU gap, > 0. [h]

    Returns
    -------
    numpy.ndarray
        Cost-minimising optimisation hours, >= 0; 0 where even the first hour does not
        pay for itself. [h]

    Notes
    -----
    With :math:`x = e^{-h/\\tau}`, :math:`a = 1 - s_0` and :math:`y = a x`, the cost is
    :math:`C = H/(1 - y) + w h`, and

    .. math:: C'(h) = w - \\frac{H}{\\tau} \\frac{y}{(1 - y)^2}.

    :math:`y/(1-y)^2` rises with :math:`y` and :math:`y` falls with :math:`h`, so
    :math:`C'` rises with :math:`h`: :math:`C` is convex and has one minimum on
    :math:`h \\ge 0`. Setting :math:`C' = 0` with :math:`k = H/(\\tau w)` gives the quadratic
    :math:`y^2 - (2 + k) y + 1 = 0`, whose root in (0, 1] is

    .. math:: y^* = \\frac{2}{2 + k + \\sqrt{k (k + 4)}}

    (the product of the roots is 1; this form avoids cancellation for large k). Then
    :math:`h^* = \\tau \\ln(a / y^*)` when :math:`y^* < a`. When :math:`y^* \\ge a`, i.e.
    :math:`C'(0) \\ge 0`, the optimum is clipped to :math:`h^* = 0`; both cases are
    :math:`h^* = \\tau \\ln(\\max(a, y^*) / y^*)`.

    Oracle: numerical minimisation of :func:`total_cost_usd_at` with
    ``scipy.optimize.minimize_scalar`` (tests/unit/test_engineering.py).

    Examples
    --------
    >>> optimal_optimization_hours([1e3, 1e6], 100.0, 0.5, 100.0)
    array([  0.       , 393.1729502])
    """
    k = _f(hardware_usd_at_ceiling) / (_f(hours_scale) * _f(engineer_usd_per_hour))
    y_star = 2.0 / (2.0 + k + np.sqrt(k * (k + 4.0)))
    gap_at_start = 1.0 - _f(start_fraction)
    return _f(hours_scale) * np.log(np.maximum(gap_at_start, y_star) / y_star)
