"""Economics: turn usage (chip-hours, held hours, kWh, engineering hours, days) into USD.

Physics produces usage; this module prices it, so repricing never needs re-simulation. Each
pricing model is one formula: cloud rental (on-demand, spot) pays for allocated chip-hours;
commitments pay for the reserved term whether used or not; on-prem pays straight-line
amortisation, colocation and operations over the hours the chips are held, plus the energy
they draw. Energy (kWh) and emissions are reported for every option.

**Cloud energy.** A cloud price already includes the provider's energy, so for a cloud pool
the caller reports :func:`energy_kwh` (with the provider's PUE) but puts 0 in
:attr:`CostBreakdown.energy_usd`; for on-prem the caller prices the kWh with
:func:`energy_cost_usd`. Which one applies is the caller's choice, made once per pricing
model; no function here branches on it.

All functions are pure and vectorised: array-likes in, float64 arrays out, broadcast by numpy.
Every output is non-negative for non-negative inputs, linear and non-decreasing in every price.

Calendar conventions (constants, not data): a year is a Julian year of 365.25 d = 8766 h, and
a month is a twelfth of it, 730.5 h, as cloud and colocation price sheets use.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from accelsim._typing import ArrayLike, FloatArray

__all__ = [
    "HOURS_PER_MONTH",
    "HOURS_PER_YEAR",
    "CostBreakdown",
    "commitment_cost_usd",
    "delay_cost_usd",
    "emissions_kg",
    "energy_cost_usd",
    "energy_kwh",
    "engineering_cost_usd",
    "hosting_cost_usd",
    "onprem_capex_usd",
    "ops_cost_usd",
    "price_change_factor",
    "rental_cost_usd",
]

HOURS_PER_YEAR = 365.25 * 24.0
"""Hours in a Julian year (365.25 d), the convention for terms and lives in years. [h]"""

HOURS_PER_MONTH = HOURS_PER_YEAR / 12.0
"""Hours in an average month (730.5 h), the convention of monthly price sheets. [h]"""

_WATTS_PER_KW = 1000.0


def _f(x: ArrayLike) -> FloatArray:
    return np.asarray(x, dtype=float)


def rental_cost_usd(chip_hours: ArrayLike, usd_per_chip_hour: ArrayLike) -> FloatArray:
    """Cost of renting chips by the hour: on-demand and spot pricing.

    Rental pays for allocated chip-hours, busy or idle, and nothing else; energy is in the
    price.

    Parameters
    ----------
    chip_hours : array_like
        Chip-hours allocated (chips times wall-clock hours held), >= 0. [chip·h]
    usd_per_chip_hour : array_like
        Price of one chip for one hour, >= 0. [USD/(chip·h)]

    Returns
    -------
    numpy.ndarray
        Rental cost. [USD]

    Notes
    -----
    .. math:: C = N_{\\text{chip-h}} \\cdot p

    Oracle: hand-computed, e.g. 1024 chips × 720 h × 3.93 USD = 2 897 510.4 USD.

    Examples
    --------
    >>> rental_cost_usd(1024 * 720.0, [3.93, 2.0])
    array([2897510.4, 1474560. ])
    """
    return _f(chip_hours) * _f(usd_per_chip_hour)


def price_change_factor(
    start_years: ArrayLike, end_years: ArrayLike, change_per_year: ArrayLike
) -> FloatArray:
    """Mean price over a usage window, relative to today's, when prices move every year.

    A price that changes by ``change_per_year`` a year, compounded,
    ``p(t) = p0 * (1 + g) ** t``, averaged over usage spread evenly from ``start_years`` to
    ``end_years`` after the decision (t = 0, when ``p0`` holds). On-demand and spot usage
    is billed at the price of its month; a commitment's price is fixed for its term, so it
    takes no factor.

    Parameters
    ----------
    start_years : array_like
        Start of the usage window after the decision, >= 0. [year]
    end_years : array_like
        End of the usage window, >= ``start_years``. [year]
    change_per_year : array_like
        Relative price change per year, > -1 (-0.1: prices fall 10 % a year). [fraction/year]

    Returns
    -------
    numpy.ndarray
        Mean price over the window divided by ``p0``, > 0; 1 when ``change_per_year`` is 0.
        [ratio]

    Notes
    -----
    .. math:: f = \\frac{1}{b - a}\\int_a^b (1 + g)^t \\, dt
              = (1 + g)^a \\, \\frac{e^{x} - 1}{x}, \\quad x = (b - a) \\ln(1 + g)

    with :math:`(e^x - 1)/x = 1` at :math:`x = 0` (an empty window, or no change): then
    :math:`f = (1 + g)^a`, the price at the window's start. ``expm1`` and ``log1p`` keep it
    exact near 0.

    Oracle: the closed form itself against numerical quadrature (tests/unit/test_cost.py);
    e.g. g = -0.2 over three years from the decision: (0.8**3 - 1) / (3 ln 0.8) = 0.7290.

    Examples
    --------
    >>> round(float(price_change_factor(0.0, 3.0, -0.2)), 4)
    0.729
    >>> float(price_change_factor(0.5, 2.0, 0.0))
    1.0
    """
    a, b, g = _f(start_years), _f(end_years), _f(change_per_year)
    x = (b - a) * np.log1p(g)
    small = np.abs(x) < 1e-12
    mean_growth = np.where(small, 1.0 + x / 2.0, np.expm1(x) / np.where(small, 1.0, x))
    out: FloatArray = np.exp(a * np.log1p(g)) * mean_growth
    return out


def commitment_cost_usd(
    chips: ArrayLike,
    usd_per_chip_hour: ArrayLike,
    term_years: ArrayLike,
    used_hours: ArrayLike,
    term_share: ArrayLike = 1.0,
) -> FloatArray:
    """Cost of committed-use capacity (1- or 3-year terms), paid whether used or not.

    The project is charged for the share of the reserved term it owns; if it uses the chips
    for longer than that share, the extra hours are paid at the same committed rate.

    Parameters
    ----------
    chips : array_like
        Chips reserved, >= 0. [chip]
    usd_per_chip_hour : array_like
        Committed price of one chip for one hour, >= 0. [USD/(chip·h)]
    term_years : array_like
        Length of the commitment, > 0. [yr]
    used_hours : array_like
        Wall-clock hours the project uses the reserved chips, >= 0. [h]
    term_share : array_like, optional
        Share of the term attributed to this project, in [0, 1]; 1 (the default) charges
        the whole term to it. [fraction]

    Returns
    -------
    numpy.ndarray
        Commitment cost. [USD]

    Notes
    -----
    .. math:: C = n \\cdot p \\cdot \\max(h_{\\text{used}}, f \\cdot T \\cdot 8766)

    with 8766 h per Julian year (:data:`HOURS_PER_YEAR`). Always >= the rental cost of the
    used hours at the same rate.

    Oracle: at ``used_hours = term_share * term_years * 8766`` the cost equals rental of
    the same chip-hours (unit tests).

    Examples
    --------
    >>> commitment_cost_usd(8, 2.0, 1.0, [100.0, 10_000.0])
    array([140256., 160000.])
    """
    reserved_hours = _f(term_share) * _f(term_years) * HOURS_PER_YEAR
    return _f(chips) * _f(usd_per_chip_hour) * np.maximum(_f(used_hours), reserved_hours)


def onprem_capex_usd(
    chips: ArrayLike,
    purchase_usd_per_chip: ArrayLike,
    amortization_years: ArrayLike,
    held_hours: ArrayLike,
) -> FloatArray:
    """Share of the purchase price of owned chips charged to a project: straight-line.

    Held hours run from delivery to the end of training, whether the chips are busy or not.
    Holding beyond the amortisation life is charged at the same rate, as if the hardware
    were replaced at the end of its life; this keeps the cost linear in hours.

    Parameters
    ----------
    chips : array_like
        Chips owned for the project, >= 0. [chip]
    purchase_usd_per_chip : array_like
        All-in purchase price per chip (server share, networking if included), >= 0.
        [USD/chip]
    amortization_years : array_like
        Useful life over which the price is written off, > 0. [yr]
    held_hours : array_like
        Hours the chips are held for this project, >= 0. [h]

    Returns
    -------
    numpy.ndarray
        Amortised capital cost. [USD]

    Notes
    -----
    .. math:: C = n \\cdot P \\cdot \\frac{h_{\\text{held}}}{L \\cdot 8766}

    The ratio is formed first, so holding for exactly the life charges exactly the price.

    Oracle: ``held_hours = amortization_years * 8766`` gives ``chips * purchase`` exactly.

    Examples
    --------
    >>> onprem_capex_usd(8, 33_750.0, 5.0, [5 * 8766.0, 8766.0])
    array([270000.,  54000.])
    """
    life_share = _f(held_hours) / (_f(amortization_years) * HOURS_PER_YEAR)
    return _f(chips) * _f(purchase_usd_per_chip) * life_share


def energy_kwh(
    chip_hours: ArrayLike,
    tdp_watts: ArrayLike,
    power_fraction_of_tdp: ArrayLike,
    pue: ArrayLike,
    host_watts_per_chip: ArrayLike = 0.0,
) -> FloatArray:
    """Facility energy drawn by chips and their share of the host, cooling included.

    Reported for every option, cloud included (there with the provider's PUE), even where
    the price already covers it.

    Parameters
    ----------
    chip_hours : array_like
        Chip-hours drawing power, >= 0. [chip·h]
    tdp_watts : array_like
        Thermal design power of one chip, >= 0. [W]
    power_fraction_of_tdp : array_like
        Average draw as a share of TDP while running, >= 0. [fraction]
    pue : array_like
        Power usage effectiveness of the facility (total / IT power), >= 1. [ratio]
    host_watts_per_chip : array_like, optional
        Host, NIC and switch power per chip (CPU, memory, fans), >= 0; 0 by default, i.e.
        chips only. [W]

    Returns
    -------
    numpy.ndarray
        Energy at the facility meter. [kWh]

    Notes
    -----
    .. math:: E = N_{\\text{chip-h}} \\, (P_{\\text{TDP}} \\phi + P_{\\text{host}})
              \\, \\mathrm{PUE} / 1000

    Oracle: a DGX H100 (8 GPUs, 10.2 kW max system power, NVIDIA) for a year
    (tests/validation/test_cost_oracles.py).

    Examples
    --------
    >>> energy_kwh(8 * 24.0, 700.0, 1.0, 1.5, host_watts_per_chip=[0.0, 575.0])
    array([201.6, 367.2])
    """
    watts_per_chip = _f(tdp_watts) * _f(power_fraction_of_tdp) + _f(host_watts_per_chip)
    return _f(chip_hours) * watts_per_chip * _f(pue) / _WATTS_PER_KW


def energy_cost_usd(kwh: ArrayLike, usd_per_kwh: ArrayLike) -> FloatArray:
    """Cost of energy bought at a flat tariff (on-prem; 0 for cloud, where it is in the price).

    Parameters
    ----------
    kwh : array_like
        Energy at the facility meter, >= 0. [kWh]
    usd_per_kwh : array_like
        Electricity price, taxes and charges included, >= 0. [USD/kWh]

    Returns
    -------
    numpy.ndarray
        Energy cost. [USD]

    Notes
    -----
    .. math:: C = E \\cdot p

    Oracle: hand calculation for a DGX H100 year in Virginia (validation tests).

    Examples
    --------
    >>> energy_cost_usd(1000.0, [0.0892, 0.066])
    array([89.2, 66. ])
    """
    return _f(kwh) * _f(usd_per_kwh)


def emissions_kg(kwh: ArrayLike, kg_per_kwh: ArrayLike) -> FloatArray:
    """Operational CO2-equivalent emissions of the energy used (embodied carbon excluded).

    Parameters
    ----------
    kwh : array_like
        Energy at the facility meter, >= 0. [kWh]
    kg_per_kwh : array_like
        Carbon intensity of the grid supplying the facility, >= 0. [kg CO2e/kWh]

    Returns
    -------
    numpy.ndarray
        Emissions. [kg CO2e]

    Notes
    -----
    .. math:: M = E \\cdot I

    Oracle: the product (hand-computed examples in the unit tests).

    Examples
    --------
    >>> emissions_kg([0.0, 1000.0], 0.4)
    array([  0., 400.])
    """
    return _f(kwh) * _f(kg_per_kwh)


def hosting_cost_usd(
    chips: ArrayLike,
    tdp_watts: ArrayLike,
    host_watts_per_chip: ArrayLike,
    hosting_usd_per_kw_month: ArrayLike,
    held_hours: ArrayLike,
) -> FloatArray:
    """Colocation cost of owned chips, priced per kW of provisioned IT power per month.

    Wholesale colocation leases power capacity whether it is drawn or not, so the charge
    uses nameplate power (TDP plus host share) and held hours, not usage; the energy itself
    is billed apart (:func:`energy_cost_usd`).

    Parameters
    ----------
    chips : array_like
        Chips hosted, >= 0. [chip]
    tdp_watts : array_like
        Thermal design power of one chip, >= 0. [W]
    host_watts_per_chip : array_like
        Host, NIC and switch power provisioned per chip, >= 0. [W]
    hosting_usd_per_kw_month : array_like
        Colocation rate per kW of IT capacity per month, >= 0. [USD/(kW·month)]
    held_hours : array_like
        Hours the chips are hosted for this project, >= 0. [h]

    Returns
    -------
    numpy.ndarray
        Hosting cost. [USD]

    Notes
    -----
    .. math:: C = n \\, \\frac{P_{\\text{TDP}} + P_{\\text{host}}}{1000} \\, r
              \\, \\frac{h_{\\text{held}}}{730.5}

    with 730.5 h per month (:data:`HOURS_PER_MONTH`).

    Oracle: one DGX H100 (10.2 kW) for a year at the CBRE rate (validation tests).

    Examples
    --------
    >>> hosting_cost_usd(8, 700.0, 575.0, 184.06, [HOURS_PER_MONTH, HOURS_PER_YEAR])
    array([ 1877.412, 22528.944])
    """
    provisioned_kw = _f(chips) * (_f(tdp_watts) + _f(host_watts_per_chip)) / _WATTS_PER_KW
    return provisioned_kw * _f(hosting_usd_per_kw_month) * (_f(held_hours) / HOURS_PER_MONTH)


def ops_cost_usd(
    chips: ArrayLike, ops_usd_per_chip_year: ArrayLike, held_hours: ArrayLike
) -> FloatArray:
    """Operations cost of owned chips: staff, support contracts, spares, per chip-year.

    Parameters
    ----------
    chips : array_like
        Chips operated, >= 0. [chip]
    ops_usd_per_chip_year : array_like
        Operations cost of one chip for one year, >= 0. [USD/(chip·yr)]
    held_hours : array_like
        Hours the chips are held for this project, >= 0. [h]

    Returns
    -------
    numpy.ndarray
        Operations cost. [USD]

    Notes
    -----
    .. math:: C = n \\, r \\, \\frac{h_{\\text{held}}}{8766}

    Oracle: a full year (8766 h) charges exactly ``chips * ops_usd_per_chip_year``.

    Examples
    --------
    >>> ops_cost_usd(8, 1_000.0, [HOURS_PER_YEAR / 2, HOURS_PER_YEAR])
    array([4000., 8000.])
    """
    return _f(chips) * _f(ops_usd_per_chip_year) * (_f(held_hours) / HOURS_PER_YEAR)


def engineering_cost_usd(hours: ArrayLike, usd_per_hour: ArrayLike) -> FloatArray:
    """Cost of engineering hours (porting, optimisation, re-optimisation).

    Parameters
    ----------
    hours : array_like
        Engineering hours, >= 0. [h]
    usd_per_hour : array_like
        Fully loaded cost of one engineering hour, >= 0. [USD/h]

    Returns
    -------
    numpy.ndarray
        Engineering cost. [USD]

    Notes
    -----
    .. math:: C = h \\cdot w

    Oracle: the product (hand-computed examples in the unit tests).

    Examples
    --------
    >>> engineering_cost_usd([0.0, 160.0], 106.0)
    array([    0., 16960.])
    """
    return _f(hours) * _f(usd_per_hour)


def delay_cost_usd(days: ArrayLike, usd_per_day: ArrayLike) -> FloatArray:
    """Opportunity cost of time to a trained model (a day later to market costs this much).

    Parameters
    ----------
    days : array_like
        Days of delay charged (e.g. time to train), >= 0. [d]
    usd_per_day : array_like
        Value of one day earlier, >= 0. [USD/d]

    Returns
    -------
    numpy.ndarray
        Delay cost. [USD]

    Notes
    -----
    .. math:: C = d \\cdot v

    A free day costs nothing however many days there are: with ``v = 0`` the cost is 0
    even for a run that never finishes (``d = inf``), not ``nan``.
    Oracle: the product (hand-computed examples in the unit tests).

    Examples
    --------
    >>> delay_cost_usd([30.0, float("inf")], [10_000.0, 0.0])
    array([300000.,      0.])
    """
    value = _f(usd_per_day)
    with np.errstate(invalid="ignore"):
        return np.where(value > 0, _f(days) * value, 0.0)


@dataclass(frozen=True, eq=False)
class CostBreakdown:
    """Cost of one option split into the four parts of the TCO, one value per run. [USD]

    ``hardware_usd`` holds rental, commitment, or on-prem capex + hosting + operations;
    ``energy_usd`` is 0 for cloud pricing (energy is in the price) and the priced kWh for
    on-prem. Equality is identity (``eq=False``): arrays have no single truth value.

    Examples
    --------
    >>> b = CostBreakdown(hardware_usd=np.array([100.0, 200.0]), energy_usd=np.zeros(2),
    ...                   engineering_usd=np.array([50.0, 0.0]), delay_usd=np.array([1.0, 2.0]))
    >>> b.total_usd
    array([151., 202.])
    """

    hardware_usd: FloatArray
    """Chips: rental, commitment, or amortised purchase plus hosting and operations. [USD]"""
    energy_usd: FloatArray
    """Energy bought by the user; 0 for cloud pricing. [USD]"""
    engineering_usd: FloatArray
    """Porting, optimisation and re-optimisation hours. [USD]"""
    delay_usd: FloatArray
    """Opportunity cost of time to a trained model. [USD]"""

    @property
    def total_usd(self) -> FloatArray:
        """Total cost of ownership: the sum of the four parts. [USD]"""
        parts = (self.hardware_usd, self.energy_usd, self.engineering_usd, self.delay_usd)
        return _f(parts[0]) + _f(parts[1]) + _f(parts[2]) + _f(parts[3])
