"""The base of the uncertain-parameter types: validation settings, sampling, quantile machinery.

Every numeric assumption in a scenario is either a plain number or one of the frozen models
built on :class:`_Dist` (``_continuous``, ``_discrete``), tagged by ``dist`` (the YAML key):
``{dist: triangular, low: 0.3, mode: 0.4, high: 0.5}``. Each type maps its parameters onto
scipy (a frozen ``scipy.stats`` object or a closed form of ``scipy.special``), onto scipy's
numerical inversion of the beta distribution (PERT and Beta:
``scipy.stats.sampling.FastGeneratorInversion``, built once per shape and process, u-error
below 1e-10, with ``scipy.special.betaincinv`` in the far tails) or onto a few lines of numpy
(Fixed, Triangular, Choice), and offers the same methods:

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
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.special
import scipy.stats
from pydantic import BaseModel, ConfigDict

from accelsim._typing import ArrayLike, FloatArray

if TYPE_CHECKING:
    from scipy.stats._distn_infrastructure import rv_continuous_frozen

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
    some shapes, e.g. ``alpha=1.03, beta=0.75, p=1e-20``, while ``betainc`` stays right).

    A hand-written bisection rather than ``scipy.optimize.elementwise.find_root``
    (Chandrupatla, vectorised): the repair runs on a chunk's few far-tail quantiles (one
    value in the 16,384 runs of ``examples/llama70b_h100_aws.yaml``), where find_root's
    fixed cost dominates: one repaired value 4.8-6.1 ms against the bisection's 0.6-0.7 ms
    (shapes (1.03, 0.75) and (2, 5)), a third of that study's 15 ms chunk. On 2,000
    values the two cost the same (~120 ms, betainc calls) and agree to 6e-14 relative.
    """
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
