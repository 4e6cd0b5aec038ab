"""Uncertain-parameter types: distributions that sample themselves and know their moments.

Every numeric assumption in a scenario is either a plain number or one of the frozen models
below, tagged by ``dist`` (the YAML key): ``{dist: triangular, low: 0.3, mode: 0.4, high:
0.5}``. Each type maps its parameters onto scipy (a frozen ``scipy.stats`` object or a
closed form of ``scipy.special``), onto scipy's numerical inversion of the beta distribution
(PERT and Beta: ``scipy.stats.sampling.FastGeneratorInversion``, built once per shape and
process, u-error below 1e-10, with ``scipy.special.betaincinv`` in the far tails) or onto a
few lines of numpy (Fixed, Triangular, Choice), and offers the same methods:

- ``sample(rng, size)``: ``size`` draws by inverse transform, ``ppf(rng.random(size))``, so
  that swapping one distribution for another keeps draws coupled by rank (every type).
- ``ppf(q)``: the quantile function, vectorised over ``q``: Latin hypercube and Sobol
  designs map their points through it.
- ``expected_value()`` and ``variance()``: closed forms written apart from the scipy mapping,
  so they are that mapping's oracle (the tests compare them with sampled moments).
- ``support()``: the smallest closed interval that holds every draw (ends may be infinite).

The method is ``expected_value`` rather than ``mean`` because :class:`Normal` and
:class:`Exponential` have a ``mean`` field.
"""

from __future__ import annotations

import functools
import math
from abc import abstractmethod
from collections.abc import Mapping
from statistics import NormalDist
from typing import TYPE_CHECKING, Annotated, Any, Literal, Self, TypeAlias, get_args

import numpy as np
import scipy.special
import scipy.stats
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    FiniteFloat,
    Strict,
    Tag,
    TypeAdapter,
    model_validator,
)

from accelsim._typing import ArrayLike, FloatArray

if TYPE_CHECKING:
    from scipy.stats._distn_infrastructure import rv_continuous_frozen

# z such that Phi(z) = 0.95: LogNormal(low, high) is the 90 % interval mu +- z * sigma in log space.
_Z_Q95 = NormalDist().inv_cdf(0.95)
_SQRT2 = math.sqrt(2.0)
_SQRT2PI = math.sqrt(2.0 * math.pi)
# Phi(-37.5) is about the smallest normal float64, so a truncation window farther than this
# from the mean has no probability under the normal it truncates: surely a units mistake.
_MAX_TAIL_SD = 37.0
# Beyond these probabilities the beta quantile comes from the exact inverse: a u-error of
# 1e-10 is no relative accuracy at p = 1e-20 (designs and tests reach such tails; sampling
# from rng.random() rarely does, so the exact path costs nothing in a study).
_BETA_TAIL = 1e-6


def _schema_extra(schema: dict[str, Any]) -> None:
    # Editors show the description as a tooltip: keep the summary, not the Notes and Examples.
    if "description" in schema:
        schema["description"] = schema["description"].split("\n\n")[0]
    # The tag has a default so that `PERT(low=...)` works in Python, which makes pydantic mark it
    # optional in the schema; the discriminated union still rejects a mapping without it, so the
    # schema must say "required" too (STACK.md pitfall 9).
    required = schema.setdefault("required", [])
    if "dist" not in required:
        required.insert(0, "dist")


def _probabilities(q: ArrayLike) -> FloatArray:
    p = np.asarray(q, dtype=np.float64)
    if not np.all((p >= 0.0) & (p <= 1.0)):  # written this way so that nan fails too
        raise ValueError("ppf needs probabilities q in [0, 1]")
    return p


def _check_width(model: BaseModel, low: float, high: float) -> None:
    if not low < high:
        name = type(model).__name__
        raise ValueError(
            f"{name} needs low < high, got low={low!r}, high={high!r} "
            "(use Fixed for a single value)"
        )


def _check_mode(low: float, mode: float, high: float) -> None:
    if not low <= mode <= high:
        raise ValueError(f"mode must lie in [low, high] = [{low!r}, {high!r}], got mode={mode!r}")


class _Dist(BaseModel):
    """Shared behaviour: validation settings, sampling by inverse transform, the method set."""

    # strict: a parameter written `true` or "0.4" is an error, as a bare number is (Uncertain).
    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        allow_inf_nan=False,
        strict=True,
        use_attribute_docstrings=True,
        json_schema_extra=_schema_extra,
    )

    def sample(self, rng: np.random.Generator, size: int) -> FloatArray:
        """Draw ``size`` values as ``ppf(rng.random(size))``, using only ``rng``.

        Parameters
        ----------
        rng : numpy.random.Generator
            The stream to draw from (one per uncertain input, see :mod:`accelsim.seeding`).
        size : int
            Number of draws. [count]

        Returns
        -------
        FloatArray
            Draws, shape ``(size,)``. [unit of the parameter]
        """
        return self.from_uniforms(rng.random(size))

    def ppf(self, q: ArrayLike) -> FloatArray:
        """Quantile function at probabilities ``q`` in [0, 1], same shape as ``q``."""
        p = _probabilities(q)
        # a quantile beyond float64 rounds to inf, correctly (log(0) at q = 1 included)
        with np.errstate(over="ignore", divide="ignore"):
            x = self._quantile(p)
        return _pin_to_support(self, p, x)

    def from_uniforms(self, u: FloatArray) -> FloatArray:
        """``ppf(u)`` for uniforms ``u`` in [0, 1) fresh from a generator (``rng.random``).

        What :meth:`sample` does with its uniforms, for callers that draw them themselves:
        ``u`` is not checked again and the result is pinned in place, so it is cheaper than
        ``ppf`` (``tests/unit/test_dists.py`` holds the two equal).
        """
        with np.errstate(over="ignore", divide="ignore"):
            x = self._quantile(u)
        return _pin_sampled(self, u, x)

    @abstractmethod
    def _quantile(self, p: FloatArray) -> FloatArray:
        """The quantile at probabilities ``p``, a new array, before pinning to the support."""

    @abstractmethod
    def expected_value(self) -> float:
        """Mean of the distribution, from a closed form. [unit of the parameter]"""

    @abstractmethod
    def variance(self) -> float:
        """Variance of the distribution, from a closed form. [unit of the parameter squared]"""

    @abstractmethod
    def support(self) -> tuple[float, float]:
        """Smallest closed interval ``(min, max)`` that holds every draw; ends may be inf."""


def _pin_to_support(d: _Dist, p: FloatArray, x: FloatArray) -> FloatArray:
    """``x`` with ``ppf(0)``, ``ppf(1)`` set to the ends of the support and the rest clipped.

    ``loc + scale * x`` can round an ulp past an end; the true quantile lies inside.
    """
    low, high = d.support()
    return np.where(p == 0.0, low, np.where(p == 1.0, high, np.clip(x, low, high)))


class _ScipyDist(_Dist):
    """A distribution whose quantile function is a frozen ``scipy.stats`` object."""

    @abstractmethod
    def _frozen(self) -> rv_continuous_frozen[Any, Any]:
        """The scipy object this model maps onto."""

    def _quantile(self, p: FloatArray) -> FloatArray:
        """The quantile at ``p`` before pinning to the support (default: the scipy object).

        Types with a closed-form quantile override this with plain numpy: building a frozen
        scipy object costs far more than the arithmetic, and the engines call ``ppf`` once
        per input and block. ``tests/unit/test_dists.py`` holds each override to scipy.
        """
        return np.asarray(self._frozen().ppf(p), dtype=np.float64)


def _pin_sampled(d: _Dist, u: FloatArray, x: FloatArray) -> FloatArray:
    """:func:`_pin_to_support` for ``u`` in [0, 1), in place: ``x`` must be a fresh array."""
    low, high = d.support()
    np.clip(x, low, high, out=x)
    if not u.all():  # a uniform of exactly 0 (probability 2**-53 a draw): one more pass
        x[u == 0.0] = low
    return x


@functools.lru_cache(maxsize=256)
def _beta_inversion(alpha: float, beta: float) -> Any:
    """scipy's fast numerical inverse of Beta(alpha, beta), or None where it cannot build.

    Built once per shape and process (~50 ms); a value then costs ~30 ns, against ~1-4 us
    for ``betaincinv`` (benchmarks/bench_inputs.py). The u-error, ``|p - I_x(a, b)|``, is
    below 1e-10.
    """
    from scipy.stats.sampling import FastGeneratorInversion

    try:
        with np.errstate(all="ignore"):
            return FastGeneratorInversion(scipy.stats.beta(alpha, beta))
    except Exception:
        return None


def _exact_beta_quantile(alpha: float, beta: float, p: FloatArray) -> FloatArray:
    """``betaincinv``, repaired by bisection on ``log x`` where it misses ``p`` by more
    than ``1e-9 p`` (scipy's inverse returns nan or a wrong tiny value at small ``p`` for
    some shapes, e.g. ``alpha=1.03, beta=0.75, p=1e-20``, while ``betainc`` stays right)."""
    x = np.asarray(scipy.special.betaincinv(alpha, beta, p), dtype=np.float64)
    wrong = ~(np.abs(scipy.special.betainc(alpha, beta, x) - p) <= 1e-9 * p)  # nan too
    wrong &= (p > 0.0) & (p < 1.0)
    if wrong.any():
        target = p[wrong]
        lo = np.full(target.shape, math.log(float(np.finfo(np.float64).smallest_subnormal)))
        hi = np.zeros(target.shape)
        for _ in range(64):
            mid = 0.5 * (lo + hi)
            below = scipy.special.betainc(alpha, beta, np.exp(mid)) < target
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        x[wrong] = np.exp(0.5 * (lo + hi))
    return x


class _ScaledBeta(_Dist):
    """A beta distribution stretched onto ``support()``: shared by PERT and Beta."""

    @abstractmethod
    def _shape(self) -> tuple[float, float]:
        """The beta shape parameters ``(alpha, beta)``."""

    def _quantile(self, p: FloatArray) -> FloatArray:
        # scipy's numerical inversion, cached per shape; the exact inverse in the far tails
        low, high = self.support()
        inversion = _beta_inversion(*self._shape())
        if inversion is None:
            x = _exact_beta_quantile(*self._shape(), p)
        else:
            with np.errstate(all="ignore"):
                x = np.asarray(inversion.ppf(p), dtype=np.float64).reshape(p.shape)
            tail = (p < _BETA_TAIL) | (p > 1.0 - _BETA_TAIL)
            if tail.any():
                x[tail] = _exact_beta_quantile(*self._shape(), p[tail])
        return low + (high - low) * x


class Fixed(_Dist):
    """A known value: every draw equals ``value``. A bare number in a scenario means this.

    Examples
    --------
    >>> import numpy as np
    >>> Fixed(3.0) == Fixed(value=3)
    True
    >>> Fixed(3.0).sample(np.random.default_rng(0), 2)
    array([3., 3.])
    """

    dist: Literal["fixed"] = Field(default="fixed", repr=False)
    value: float
    """The value. [unit of the parameter]"""

    def __init__(self, value: float | None = None, /, **data: Any) -> None:
        # pydantic models take keywords only; DESIGN.md promises `Fixed(3.0)`.
        if value is not None:
            if "value" in data:
                raise TypeError("Fixed() got value both positionally and by keyword")
            data["value"] = value
        super().__init__(**data)

    def sample(self, rng: np.random.Generator, size: int) -> FloatArray:
        """``size`` copies of ``value``; ``rng`` is not advanced."""
        return np.full(size, self.value, dtype=np.float64)

    def _quantile(self, p: FloatArray) -> FloatArray:
        return np.full(p.shape, self.value, dtype=np.float64)  # value at every probability

    def expected_value(self) -> float:
        return self.value

    def variance(self) -> float:
        return 0.0

    def support(self) -> tuple[float, float]:
        return (self.value, self.value)


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
        a, c, b = self.low, self.mode, self.high
        return (a * a + b * b + c * c - a * b - a * c - b * c) / 18.0

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
        m = self.expected_value()
        return (m - self.low) * (self.high - m) / (self.lamb + 3.0)

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


class Choice(_Dist):
    """One of a few listed values, with given weights (equal by default).

    Notes
    -----
    The quantile function is the inverse of the step CDF over the values with positive
    weight, sorted: ``ppf(q)`` is the smallest value whose cumulative probability reaches
    ``q``. Oracle: mean ``sum(p * v)``, variance ``sum(p * (v - mean)**2)``.

    Examples
    --------
    >>> d = Choice(values=[1, 2, 8], weights=[0.5, 0.3, 0.2])
    >>> d.expected_value()
    2.7
    >>> d.ppf([0.1, 0.6, 0.9])
    array([1., 2., 8.])
    """

    dist: Literal["choice"] = Field(default="choice", repr=False)
    values: list[FiniteFloat] = Field(min_length=1)
    """The possible values. [unit of the parameter]"""
    weights: list[FiniteFloat] | None = None
    """Relative weights (>= 0, positive sum), one per value; None for equal weights. [-]"""

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.weights is None:
            return self
        if len(self.weights) != len(self.values):
            raise ValueError(
                f"weights must have one entry per value: got {len(self.weights)} weights "
                f"for {len(self.values)} values"
            )
        if min(self.weights) < 0.0 or not sum(self.weights) > 0.0:
            raise ValueError(f"weights must be >= 0 with a sum > 0, got {self.weights!r}")
        return self

    def _table(self) -> tuple[FloatArray, FloatArray]:
        """Values with positive weight, sorted, and their probabilities."""
        values = np.asarray(self.values, dtype=np.float64)
        weights = np.ones_like(values) if self.weights is None else np.asarray(self.weights)
        keep = weights > 0.0
        order = np.argsort(values[keep], kind="stable")
        probabilities = weights[keep][order] / weights[keep].sum()
        return values[keep][order], probabilities

    def _quantile(self, p: FloatArray) -> FloatArray:
        # the smallest value whose cumulative probability reaches p
        values, probabilities = self._table()
        cumulative = np.cumsum(probabilities)
        cumulative[-1] = 1.0  # so that rounding in the sum cannot push q = 1 past the end
        index = np.searchsorted(cumulative, p, side="left")
        return np.asarray(values[np.minimum(index, values.size - 1)], dtype=np.float64)

    def expected_value(self) -> float:
        values, probabilities = self._table()
        # Probabilities can sum to 1 + ulp; the true mean lies within the values.
        return float(np.clip(np.dot(probabilities, values), values[0], values[-1]))

    def variance(self) -> float:
        values, probabilities = self._table()
        return float(np.dot(probabilities, (values - self.expected_value()) ** 2))

    def support(self) -> tuple[float, float]:
        values, _ = self._table()
        return (float(values[0]), float(values[-1]))


Dist: TypeAlias = Annotated[
    Fixed | Uniform | Triangular | PERT | Exponential | Normal | LogNormal | Beta | Choice,
    Field(discriminator="dist"),
]
"""Any distribution, told apart by its ``dist`` tag."""


def _uncertain_kind(value: Any) -> str:
    # Route by shape so that an error reports one branch, not "not a number, and no tag".
    return "dist" if isinstance(value, Mapping | _Dist) else "number"


Uncertain: TypeAlias = Annotated[
    # Strict: YAML's `true` or a quoted "0.4" is an error, never silently 1.0 or 0.4.
    Annotated[FiniteFloat, Strict(), Tag("number")] | Annotated[Dist, Tag("dist")],
    Discriminator(_uncertain_kind),
]
"""A field type for uncertain inputs: a finite number, or a mapping tagged by ``dist``."""

EVERY_DIST_TYPE: tuple[type[_Dist], ...] = get_args(get_args(Dist)[0])
"""Every distribution type, in the order of the :data:`Dist` union."""

_UNCERTAIN: TypeAdapter[float | Dist] = TypeAdapter(Uncertain)


def parse_uncertain(obj: object) -> float | Dist:
    """Validate a number or a ``dist``-tagged mapping (as read from YAML, JSON or TOML).

    Raises ``pydantic.ValidationError`` naming the field and the allowed range.

    Examples
    --------
    >>> parse_uncertain(3)
    3.0
    >>> parse_uncertain({"dist": "triangular", "low": 0.3, "mode": 0.4, "high": 0.5})
    Triangular(low=0.3, mode=0.4, high=0.5)
    """
    return _UNCERTAIN.validate_python(obj)


def as_dist(x: float | Dist) -> Dist:
    """The distribution of an uncertain input: a number becomes :class:`Fixed`.

    Examples
    --------
    >>> as_dist(2)
    Fixed(value=2.0)
    >>> as_dist(Uniform(low=0, high=1))
    Uniform(low=0.0, high=1.0)
    """
    if isinstance(x, EVERY_DIST_TYPE):
        return x
    if isinstance(x, bool) or not isinstance(x, int | float | np.integer | np.floating):
        raise TypeError(f"expected a number or a distribution, got {type(x).__name__}")
    return Fixed(float(x))


__all__ = [
    "EVERY_DIST_TYPE",
    "PERT",
    "Beta",
    "Choice",
    "Dist",
    "Exponential",
    "Fixed",
    "LogNormal",
    "Normal",
    "Triangular",
    "Uncertain",
    "Uniform",
    "as_dist",
    "parse_uncertain",
]
