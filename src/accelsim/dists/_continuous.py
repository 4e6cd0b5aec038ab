"""The continuous distributions: Uniform, Triangular, PERT, Exponential, Normal, LogNormal, Beta.

Each maps its parameters onto scipy or a closed form (see :mod:`accelsim.dists._base` for the
shared sampling and quantile machinery); ``expected_value`` and ``variance`` are closed forms
written apart from that mapping, so they are its oracle.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import TYPE_CHECKING, Any, Literal, Self

import numpy as np
import scipy.special
import scipy.stats
from pydantic import Field, model_validator

from accelsim._typing import FloatArray
from accelsim.dists._base import _check_mode, _check_width, _Dist, _ScaledBeta, _ScipyDist

if TYPE_CHECKING:
    from scipy.stats._distn_infrastructure import rv_continuous_frozen

# z such that Phi(z) = 0.95: LogNormal(low, high) is the 90 % interval mu +- z * sigma in log space.
_Z_Q95 = NormalDist().inv_cdf(0.95)
_SQRT2 = math.sqrt(2.0)
_SQRT2PI = math.sqrt(2.0 * math.pi)
# Phi(-37.5) is about the smallest normal float64, so a truncation window farther than this
# from the mean has no probability under the normal it truncates: surely a units mistake.
_MAX_TAIL_SD = 37.0


class Uniform(_ScipyDist):
    """Every value in ``[low, high]`` equally likely.

    Notes
    -----
    Maps onto ``scipy.stats.uniform(loc=low, scale=high - low)``. Oracle: mean
    ``(low + high) / 2``, variance ``(high - low)**2 / 12``.

    Examples
    --------
    >>> d = Uniform(low=1, high=4)
    >>> d.expected_value(), d.variance()
    (2.5, 0.75)
    >>> float(d.ppf(0.5))
    2.5
    """

    dist: Literal["uniform"] = Field(default="uniform", repr=False)
    low: float
    """Lower end. [unit of the parameter]"""
    high: float
    """Upper end, greater than low. [unit of the parameter]"""

    @model_validator(mode="after")
    def _check(self) -> Self:
        _check_width(self, self.low, self.high)
        return self

    def _frozen(self) -> rv_continuous_frozen[Any, Any]:
        return scipy.stats.uniform(loc=self.low, scale=self.high - self.low)

    def _quantile(self, p: FloatArray) -> FloatArray:
        return self.low + (self.high - self.low) * p  # scipy's uniform: loc + scale * q

    def expected_value(self) -> float:
        return (self.low + self.high) / 2.0

    def variance(self) -> float:
        return (self.high - self.low) ** 2 / 12.0

    def support(self) -> tuple[float, float]:
        return (self.low, self.high)


class Triangular(_Dist):
    """Three-point estimate with a linear density rising to ``mode`` and falling to ``high``.

    Notes
    -----
    With ``c = (mode - low) / (high - low)``, the quantile is ``low + (high - low) * x`` where
    ``x = sqrt(q c)`` for ``q <= c`` and ``1 - sqrt((1 - q)(1 - c))`` above (the inverse of
    the piecewise-quadratic CDF; scipy's ``triang`` is the same map, less exact near ``low``).
    Oracle: mean ``(low + mode + high) / 3``, variance ``(low**2 + mode**2 + high**2 -
    low*mode - low*high - mode*high) / 18``.

    Examples
    --------
    >>> d = Triangular(low=0.3, mode=0.4, high=0.5)
    >>> round(d.expected_value(), 12)
    0.4
    """

    dist: Literal["triangular"] = Field(default="triangular", repr=False)
    low: float
    """Minimum. [unit of the parameter]"""
    mode: float
    """Most likely value, in [low, high]. [unit of the parameter]"""
    high: float
    """Maximum, greater than low. [unit of the parameter]"""

    @model_validator(mode="after")
    def _check(self) -> Self:
        _check_width(self, self.low, self.high)
        _check_mode(self.low, self.mode, self.high)
        return self

    def _quantile(self, p: FloatArray) -> FloatArray:
        width = self.high - self.low
        c = (self.mode - self.low) / width
        # Right of the mode, 1 - sqrt((1-p)(1-c)) written without the cancellation that
        # scipy's triang suffers when p and c are both tiny (it then breaks monotonicity).
        right = (p + c * (1.0 - p)) / (1.0 + np.sqrt((1.0 - p) * (1.0 - c)))
        x = np.where(p <= c, np.sqrt(p * c), right)
        return self.low + width * x

    def expected_value(self) -> float:
        return (self.low + self.mode + self.high) / 3.0

    def variance(self) -> float:
        # The textbook (a² + b² + c² - ab - ac - bc) / 18, measured from ``low`` (the variance
        # does not move with the location): far from 0 the squares cancel to nothing.
        c, b = self.mode - self.low, self.high - self.low
        return (b * b + c * c - b * c) / 18.0

    def support(self) -> tuple[float, float]:
        return (self.low, self.high)


class PERT(_ScaledBeta):
    """Three-point estimate as a scaled beta: smoother than Triangular, lighter tails.

    Notes
    -----
    With ``w = high - low``, ``alpha = 1 + lamb * (mode - low) / w`` and ``beta = 1 + lamb *
    (high - mode) / w``, the quantile is ``low + w * Q(q)``, ``Q`` the beta quantile
    (scipy's numerical inversion, held to ``betainc``).
    Oracle: mean ``m = (low + lamb * mode + high) / (lamb + 2)``, variance ``(m - low) *
    (high - m) / (lamb + 3)``.

    Examples
    --------
    >>> d = PERT(low=10, mode=40, high=200)
    >>> d.expected_value()
    61.67
    >>> d.support()
    (10.0, 200.0)
    """

    dist: Literal["pert"] = Field(default="pert", repr=False)
    low: float
    """Minimum. [unit of the parameter]"""
    mode: float
    """Most likely value, in [low, high]. [unit of the parameter]"""
    high: float
    """Maximum, greater than low. [unit of the parameter]"""
    lamb: float = Field(default=4.0, ge=0.0)
    """Shape (weight of the mode), >= 0; 4 is the classic PERT. [-]"""

    @model_validator(mode="after")
    def _check(self) -> Self:
        _check_width(self, self.low, self.high)
        _check_mode(self.low, self.mode, self.high)
        return self

    def _shape(self) -> tuple[float, float]:
        width = self.high - self.low
        alpha = 1.0 + self.lamb * (self.mode - self.low) / width
        return alpha, 1.0 + self.lamb * (self.high - self.mode) / width

    def expected_value(self) -> float:
        return (self.low + self.lamb * self.mode + self.high) / (self.lamb + 2.0)

    def variance(self) -> float:
        # (m - low) (high - m) / (lamb + 3) with both distances from the parameters, not
        # from m: a narrow window far from 0 would otherwise keep only a few digits
        width, total = self.high - self.low, self.lamb + 2.0
        below = (self.lamb * (self.mode - self.low) + width) / total
        above = (self.lamb * (self.high - self.mode) + width) / total
        return below * above / (self.lamb + 3.0)

    def support(self) -> tuple[float, float]:
        return (self.low, self.high)


class Exponential(_ScipyDist):
    """Memoryless waiting time with the given mean, e.g. time to the next failure.

    Notes
    -----
    Maps onto ``scipy.stats.expon(scale=mean)``. Oracle: mean ``mean``, variance ``mean**2``.

    Examples
    --------
    >>> Exponential(mean=5).variance()
    25.0
    """

    dist: Literal["exponential"] = Field(default="exponential", repr=False)
    mean: float = Field(gt=0.0)
    """Mean, > 0. [unit of the parameter]"""

    def _frozen(self) -> rv_continuous_frozen[Any, Any]:
        return scipy.stats.expon(scale=self.mean)

    def _quantile(self, p: FloatArray) -> FloatArray:
        return -np.log1p(-p) * self.mean  # scipy's expon: -log1p(-q) * scale

    def expected_value(self) -> float:
        return self.mean

    def variance(self) -> float:
        return self.mean**2

    def support(self) -> tuple[float, float]:
        return (0.0, math.inf)


def _pdf_terms(x: float) -> tuple[float, float]:
    """``phi(x)`` and ``x * phi(x)`` for the standard normal, both 0 at an infinite ``x``."""
    if math.isinf(x):
        return 0.0, 0.0
    pdf = math.exp(-0.5 * x * x) / _SQRT2PI
    return pdf, x * pdf


def _std_truncnorm_moments(a: float, b: float) -> tuple[float, float]:
    """Mean and variance of a standard normal truncated to ``[a, b]`` (ends may be infinite).

    Written with ``erfcx`` so that windows far in a tail (``a = 30``) keep their precision.
    """
    width, centre = b - a, 0.5 * (a + b)
    if width * (abs(centre) + 1.0) < 0.2:
        # Narrow window: Phi(b) - Phi(a) and the variance formula cancel, so expand exp(-x²/2)
        # about the centre and integrate term by term. The next terms stay below 1e-7 relative
        # here; past this width the closed form below is the more exact (checked by quadrature).
        c2, w2 = centre**2, width**2
        mean = centre * (1.0 - w2 / 12.0 + (c2 + 2.0) * w2**2 / 720.0)
        var = w2 / 12.0 - (3.0 * c2 + 2.0) * w2**2 / 720.0
        return mean, var + (5.0 * c2**2 + 12.0 * c2 + 1.0) * w2**3 / 30240.0
    if a + b > 0.0:  # mirror the window so that most of it lies left of 0
        m, v = _std_truncnorm_moments(-b, -a)
        return -m, v
    if b > 0.0:  # a < 0 < b: Phi(b) - Phi(a) has no cancellation
        mass = 0.5 * (math.erf(b / _SQRT2) - math.erf(a / _SQRT2))
        (pdf_a, a_pdf_a), (pdf_b, b_pdf_b) = _pdf_terms(a), _pdf_terms(b)
        m = (pdf_a - pdf_b) / mass
        return m, 1.0 + (a_pdf_a - b_pdf_b) / mass - m * m
    # a < b <= 0: divide pdf and cdf by exp(-b²/2), the larger density, using
    # Phi(x) = erfcx(-x / sqrt2) * exp(-x²/2) / 2.
    ratio = math.exp(-0.5 * (a - b) * (a + b))  # pdf(a) / pdf(b), 0 for a = -inf
    mass = 0.5 * (scipy.special.erfcx(-b / _SQRT2) - ratio * scipy.special.erfcx(-a / _SQRT2))
    m = (ratio - 1.0) / _SQRT2PI / mass
    a_ratio = a * ratio if ratio > 0.0 else 0.0
    return m, 1.0 + (a_ratio - b) / _SQRT2PI / mass - m * m


class Normal(_ScipyDist):
    """Normal distribution, optionally truncated to ``[low, high]``.

    Notes
    -----
    Untruncated: ``scipy.stats.norm(mean, sd)``. Truncated: ``scipy.stats.truncnorm((low -
    mean) / sd, (high - mean) / sd, loc=mean, scale=sd)`` (scipy takes the bounds in sd
    units). Oracle: with ``a, b`` the standardised bounds and ``Z = Phi(b) - Phi(a)``, mean
    ``mean + sd * (phi(a) - phi(b)) / Z`` and variance ``sd**2 * (1 + (a phi(a) - b phi(b)) /
    Z - ((phi(a) - phi(b)) / Z)**2)`` (Johnson, Kotz & Balakrishnan, 1994, sec. 10.1),
    evaluated with ``erfcx`` in the tails and as a series in the width for narrow windows. A
    window must come within 37 sd of ``mean``; farther out it has no probability in float64.

    Examples
    --------
    >>> Normal(mean=0, sd=2).variance()
    4.0
    >>> d = Normal(mean=0, sd=1, low=0)  # half-normal: mean sqrt(2/pi)
    >>> round(d.expected_value(), 6)
    0.797885
    """

    dist: Literal["normal"] = Field(default="normal", repr=False)
    mean: float
    """Mean before truncation. [unit of the parameter]"""
    sd: float = Field(gt=0.0)
    """Standard deviation before truncation, > 0. [unit of the parameter]"""
    low: float | None = None
    """Lower truncation bound; None for none. [unit of the parameter]"""
    high: float | None = None
    """Upper truncation bound, greater than low; None for none. [unit of the parameter]"""

    @model_validator(mode="after")
    def _check(self) -> Self:
        a, b = self._standard_bounds()
        if not a < b:  # also catches a window too narrow to survive standardising
            raise ValueError(
                f"Normal needs low < high (and a window wider than rounding at this mean and "
                f"sd), got low={self.low!r}, high={self.high!r}"
            )
        if max(a, -b) > _MAX_TAIL_SD:
            raise ValueError(
                f"Normal's window [low, high] = [{self.low!r}, {self.high!r}] must come within "
                f"{_MAX_TAIL_SD:g} sd of mean={self.mean!r} (sd={self.sd!r}); farther out the "
                "untruncated normal gives it no probability in float64"
            )
        return self

    def _standard_bounds(self) -> tuple[float, float]:
        a = -math.inf if self.low is None else (self.low - self.mean) / self.sd
        b = math.inf if self.high is None else (self.high - self.mean) / self.sd
        return a, b

    def _frozen(self) -> rv_continuous_frozen[Any, Any]:
        if self.low is None and self.high is None:
            return scipy.stats.norm(loc=self.mean, scale=self.sd)
        a, b = self._standard_bounds()
        return scipy.stats.truncnorm(a, b, loc=self.mean, scale=self.sd)

    def _quantile(self, p: FloatArray) -> FloatArray:
        if self.low is None and self.high is None:
            return self.mean + self.sd * scipy.special.ndtri(p)
        return np.asarray(self._frozen().ppf(p), dtype=np.float64)

    def expected_value(self) -> float:
        m, _ = _std_truncnorm_moments(*self._standard_bounds())
        # The true mean lies in the support; rounding may land an ulp outside a narrow window.
        return float(np.clip(self.mean + self.sd * m, *self.support()))

    def variance(self) -> float:
        _, v = _std_truncnorm_moments(*self._standard_bounds())
        return self.sd**2 * max(v, 0.0)

    def support(self) -> tuple[float, float]:
        low = -math.inf if self.low is None else self.low
        high = math.inf if self.high is None else self.high
        return (low, high)


def _exp(x: float) -> float:
    # math.exp raises OverflowError; a very wide LogNormal has an infinite-in-float64 moment.
    return math.exp(x) if x < 709.0 else math.inf


class LogNormal(_ScipyDist):
    """Log-normal given by its 90 % interval: ``low`` and ``high`` are the 5 % and 95 % quantiles.

    Notes
    -----
    With ``mu = (ln low + ln high) / 2`` and ``sigma = (ln high - ln low) / (2 z)``, ``z =
    Phi^-1(0.95) = 1.6449``, maps onto ``scipy.stats.lognorm(s=sigma, scale=exp(mu))``.
    Oracle: mean ``exp(mu + sigma**2 / 2)``, variance ``(exp(sigma**2) - 1) * exp(2 mu +
    sigma**2)``.

    Examples
    --------
    >>> d = LogNormal(low=1e3, high=1e5)
    >>> float(d.ppf(0.5))  # the geometric midpoint
    10000.0
    """

    dist: Literal["lognormal"] = Field(default="lognormal", repr=False)
    low: float = Field(gt=0.0)
    """5 % quantile, > 0. [unit of the parameter]"""
    high: float
    """95 % quantile, greater than low. [unit of the parameter]"""

    @model_validator(mode="after")
    def _check(self) -> Self:
        _check_width(self, self.low, self.high)
        if not math.log(self.low) < math.log(self.high):
            raise ValueError(
                f"LogNormal needs log(low) < log(high), got low={self.low!r}, high={self.high!r}"
            )
        return self

    def _log_params(self) -> tuple[float, float]:
        log_low, log_high = math.log(self.low), math.log(self.high)
        return (log_low + log_high) / 2.0, (log_high - log_low) / (2.0 * _Z_Q95)

    def _frozen(self) -> rv_continuous_frozen[Any, Any]:
        mu, sigma = self._log_params()
        return scipy.stats.lognorm(s=sigma, scale=math.exp(mu))

    def _quantile(self, p: FloatArray) -> FloatArray:
        mu, sigma = self._log_params()
        x = np.exp(sigma * scipy.special.ndtri(p))
        x *= math.exp(mu)
        return x

    def expected_value(self) -> float:
        mu, sigma = self._log_params()
        return _exp(mu + sigma**2 / 2.0)

    def variance(self) -> float:
        mu, sigma = self._log_params()
        # exp(s²) - 1 = exp(s² + log(1 - exp(-s²))), in logs so that neither factor overflows
        return _exp(2.0 * sigma**2 + math.log(-math.expm1(-(sigma**2))) + 2.0 * mu)

    def support(self) -> tuple[float, float]:
        return (0.0, math.inf)


class Beta(_ScaledBeta):
    """Beta distribution on ``[low, high]`` (default ``[0, 1]``), e.g. a fraction such as MFU.

    Notes
    -----
    The quantile is ``low + w * Q(q)``, ``Q`` the beta quantile
    (scipy's numerical inversion, held to ``betainc``). Oracle: mean
    ``low + w * alpha / (alpha + beta)``, variance ``w**2 * alpha * beta / ((alpha + beta)**2
    * (alpha + beta + 1))``, with ``w = high - low``.

    Examples
    --------
    >>> d = Beta(alpha=2, beta=5)
    >>> d.expected_value()
    0.2857
    """

    dist: Literal["beta"] = Field(default="beta", repr=False)
    alpha: float = Field(gt=0.0)
    """First shape parameter, > 0. [-]"""
    beta: float = Field(gt=0.0)
    """Second shape parameter, > 0. [-]"""
    low: float = 0.0
    """Lower end of the range. [unit of the parameter]"""
    high: float = 1.0
    """Upper end of the range, greater than low. [unit of the parameter]"""

    @model_validator(mode="after")
    def _check(self) -> Self:
        _check_width(self, self.low, self.high)
        return self

    def _shape(self) -> tuple[float, float]:
        return self.alpha, self.beta

    def expected_value(self) -> float:
        return self.low + (self.high - self.low) * self.alpha / (self.alpha + self.beta)

    def variance(self) -> float:
        total = self.alpha + self.beta
        return (self.high - self.low) ** 2 * self.alpha * self.beta / (total**2 * (total + 1.0))

    def support(self) -> tuple[float, float]:
        return (self.low, self.high)


__all__ = ["PERT", "Beta", "Exponential", "LogNormal", "Normal", "Triangular", "Uniform"]
