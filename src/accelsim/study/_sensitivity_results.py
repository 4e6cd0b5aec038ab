"""What a sensitivity analysis returns: one typed result per method, each with ``table()``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from accelsim._typing import FloatArray
from accelsim.results import render_table


@dataclass(frozen=True, eq=False)
class SobolResult:
    """First-order and total Sobol indices with bootstrap confidence intervals."""

    metric: str
    names: tuple[str, ...]
    first_order: FloatArray
    total_order: FloatArray
    first_order_ci: FloatArray
    """(inputs, 2): low and high of the ``confidence_level`` percentile bootstrap interval."""
    total_order_ci: FloatArray
    runs: int
    """Base sample size n (a power of two); the function ran n * (inputs + 2) times."""
    confidence_level: float = 0.95

    def table(self) -> str:
        """Inputs by total index, largest first, with intervals."""
        order = np.argsort(-self.total_order, kind="stable")
        pct = f"{100 * self.confidence_level:g}%"
        rows = [
            [
                self.names[i],
                f"{self.first_order[i]:.3f}",
                f"[{self.first_order_ci[i, 0]:.3f}, {self.first_order_ci[i, 1]:.3f}]",
                f"{self.total_order[i]:.3f}",
                f"[{self.total_order_ci[i, 0]:.3f}, {self.total_order_ci[i, 1]:.3f}]",
            ]
            for i in order
        ]
        return render_table(["input", "S1", f"S1 {pct}", "ST", f"ST {pct}"], rows)

    def _repr_html_(self) -> str:
        """:meth:`table` as HTML, for notebooks."""
        from accelsim.results import sensitivity_html

        return sensitivity_html(self)


@dataclass(frozen=True, eq=False)
class MorrisResult:
    """Morris elementary effects per input: mean, mean of ``abs(effect)`` and spread."""

    metric: str
    names: tuple[str, ...]
    mu: FloatArray
    mu_star: FloatArray
    """Mean ``abs(elementary effect)`` [metric units per unit of the design's [0, 1] range]."""
    sigma: FloatArray
    mu_star_conf: FloatArray
    """Half-width of the 95% bootstrap interval of ``mu_star``."""
    trajectories: int

    def table(self) -> str:
        """Inputs by mu*, largest first."""
        order = np.argsort(-self.mu_star, kind="stable")
        rows = [
            [
                self.names[i],
                f"{self.mu_star[i]:.4g}",
                f"±{self.mu_star_conf[i]:.2g}",
                f"{self.mu[i]:+.4g}",
                f"{self.sigma[i]:.4g}",
            ]
            for i in order
        ]
        return render_table(["input", "mu*", "95%", "mu", "sigma"], rows)

    def _repr_html_(self) -> str:
        """:meth:`table` as HTML, for notebooks."""
        from accelsim.results import sensitivity_html

        return sensitivity_html(self)


@dataclass(frozen=True, eq=False)
class TornadoResult:
    """One-at-a-time swings: the metric's mean with one input at P10 then P90, rest at P50."""

    metric: str
    names: tuple[str, ...]
    """Sorted by swing, largest first."""
    base: float
    low: FloatArray
    """Mean metric with the input at its P10."""
    high: FloatArray
    """Mean metric with the input at its P90."""

    @property
    def swing(self) -> FloatArray:
        """``|high - low|`` per input."""
        return np.abs(self.high - self.low)

    def table(self) -> str:
        """Inputs by swing, largest first."""
        rows = [
            [n, f"{lo:.4g}", f"{hi:.4g}", f"{sw:.4g}"]
            for n, lo, hi, sw in zip(self.names, self.low, self.high, self.swing, strict=True)
        ]
        return f"base (all P50) = {self.base:.4g}\n" + render_table(
            ["input", "at P10", "at P90", "swing"], rows
        )

    def _repr_html_(self) -> str:
        """:meth:`table` as HTML, for notebooks."""
        from accelsim.results import sensitivity_html

        return sensitivity_html(self)


class SpearmanResult(tuple[tuple[str, float], ...]):
    """``(input name, rho)`` pairs sorted by ``|rho|``, largest first."""

    __slots__ = ()

    def table(self) -> str:
        """The pairs as a table."""
        return render_table(["input", "spearman rho"], [[n, f"{r:+.2f}"] for n, r in self])

    def _repr_html_(self) -> str:
        """:meth:`table` as HTML, for notebooks."""
        from accelsim.results import sensitivity_html

        return sensitivity_html(self)


SensitivityResult = SpearmanResult | SobolResult | MorrisResult | TornadoResult
"""What :func:`sensitivity` returns: one of the four typed results, each with ``table()``."""


def table(result: SensitivityResult | Sequence[tuple[str, float]]) -> str:
    """Any sensitivity result (or plain ``(name, rho)`` pairs) as a text table."""
    if isinstance(result, SobolResult | MorrisResult | TornadoResult | SpearmanResult):
        return result.table()
    return SpearmanResult(result).table()
