"""The distributions of a few exact values: Fixed (one value) and Choice (weighted values)."""

from __future__ import annotations

from typing import Any, Literal, Self

import numpy as np
from pydantic import Field, FiniteFloat, model_validator

from accelsim._typing import FloatArray
from accelsim.dists._base import _Dist


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


__all__ = ["Choice", "Fixed"]
