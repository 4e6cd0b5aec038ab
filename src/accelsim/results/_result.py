"""Results of a study: one array per metric, with the summaries users read.

Every summary states its Monte Carlo error: a mean is printed with the half-width of its
95 % confidence interval (1.96 standard errors, see :meth:`Result.std_error`), so a reader
can tell a real difference from sampling noise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from accelsim._typing import FloatArray
from accelsim.results._format import Z95, format_value, render_table

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Result:
    """Samples of every metric of one scenario, one value per Monte Carlo run.

    Examples
    --------
    >>> import numpy as np
    >>> r = Result("demo", {"tco_usd": np.array([1.0, 2.0, 3.0])}, seed_entropy=1)
    >>> r.mean("tco_usd")
    2.0
    """

    scenario_name: str
    data: Mapping[str, FloatArray]
    seed_entropy: int | None = None
    """Root entropy of the study's seed, to replay it exactly."""
    engine: str = "analytic"
    info: Any = None
    """Fixed facts of the option (chip, provider, framework fit...) used by comparisons."""
    inputs: Mapping[str, FloatArray] = field(default_factory=dict)
    """The drawn uncertain inputs by name, aligned with the metric samples."""
    extras: Mapping[str, Any] = field(default_factory=dict)
    """Engine-specific outputs (per-job records, time series) when asked for."""

    def __post_init__(self) -> None:
        # Read-only, metrics and inputs alike: a value that does not vary between runs may
        # be a zero-stride view of one number (accelsim.engines.constant).
        for arr in (*self.data.values(), *self.inputs.values()):
            arr.flags.writeable = False

    @property
    def runs(self) -> int:
        """Number of Monte Carlo runs."""
        return len(next(iter(self.data.values()))) if self.data else 0

    @property
    def metrics(self) -> tuple[str, ...]:
        """Names of the metrics present (each carries its unit)."""
        return tuple(self.data)

    def samples(self, metric: str) -> FloatArray:
        """All runs' values of ``metric`` (read-only array of shape ``(runs,)``)."""
        try:
            return self.data[metric]
        except KeyError:
            known = ", ".join(self.data)
            raise KeyError(f"no metric {metric!r} in this result; it has: {known}") from None

    @property
    def design(self) -> str:
        """How the study drew its inputs: ``extras["design"]``, else ``"mc"`` (independent)."""
        return str(self.extras.get("design", "mc"))

    def mean(self, metric: str) -> float:
        """Sample mean of ``metric``."""
        return float(np.mean(self.samples(metric)))

    def std_error(self, metric: str) -> float:
        """Monte Carlo standard error of the mean of ``metric``.

        Independent runs (:attr:`design` ``"mc"``): ``s / sqrt(n)``, with ``s`` the sample
        standard deviation (``ddof=1``) of the ``n`` runs.

        ``"antithetic"``: runs ``2k`` and ``2k + 1`` share mirrored inputs, so they are
        correlated and ``s / sqrt(n)`` is not the error of their mean. The ``n / 2`` pair
        means ``y_k = (x_2k + x_2k+1) / 2`` are independent and identically distributed,
        and the mean of the runs is the mean of the ``y_k``, so the standard error is
        ``s_y / sqrt(n / 2)`` (``ddof=1``; Owen 2013, sec. 8.2). It needs an even ``n`` and
        is ``nan`` for a single pair.

        ``"lhs"`` and ``"sobol"``: still ``s / sqrt(n)``, the error plain Monte Carlo would
        have with as many runs. The designs' runs are not independent and their true error
        is usually smaller (a Latin hypercube's variance is at most ``n / (n - 1)`` times
        that of plain Monte Carlo), so for them this is an estimate of an upper bound.

        Examples
        --------
        >>> r = Result("pairs", {"x": np.array([1.0, 3.0, 2.5, 1.5])},
        ...            extras={"design": "antithetic"})
        >>> r.std_error("x")  # pair means 2.0 and 2.0: no error left
        0.0
        >>> round(Result("iid", {"x": np.array([1.0, 3.0, 2.5, 1.5])}).std_error("x"), 4)
        0.4564
        """
        x = self.samples(metric)
        if self.design == "antithetic":
            if x.size % 2:
                raise ValueError(
                    f"an antithetic result pairs runs (2k, 2k+1): {metric!r} has an odd "
                    f"number of runs ({x.size})"
                )
            x = 0.5 * (x[0::2] + x[1::2])
        return float(np.std(x, ddof=1) / np.sqrt(x.size)) if x.size > 1 else float("nan")

    def quantile(self, metric: str, q: float) -> float:
        """Sample quantile ``q`` in [0, 1] of ``metric``."""
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"q must lie in [0, 1], got {q}")
        return float(np.quantile(self.samples(metric), q))

    def interval(self, metric: str, level: float = 0.9) -> tuple[float, float]:
        """Central interval holding ``level`` of the runs, e.g. P5-P95 for 0.9."""
        if not 0.0 < level < 1.0:
            raise ValueError(f"level must lie in (0, 1), got {level}")
        tail = (1.0 - level) / 2.0
        return self.quantile(metric, tail), self.quantile(metric, 1.0 - tail)

    def summary(self, metrics: Sequence[str] | None = None) -> str:
        """A table: mean ± 95 % Monte Carlo error, P5, P50, P95 of each metric.

        The error is ``1.96 * std_error(metric)``, so it follows the design of the study
        (over pair means for ``"antithetic"``), which the first line names when not ``"mc"``.
        """
        names = list(metrics) if metrics is not None else list(self.data)
        rows = []
        for m in names:
            x = self.samples(m)
            mean, half = float(np.mean(x)), Z95 * self.std_error(m)
            p5, p50, p95 = np.quantile(x, [0.05, 0.5, 0.95])
            rows.append(
                [
                    m,
                    f"{format_value(m, mean)} ± {format_value(m, half)}",
                    format_value(m, float(p5)),
                    format_value(m, float(p50)),
                    format_value(m, float(p95)),
                ]
            )
        how = f"{self.engine} engine" + ("" if self.design == "mc" else f", {self.design} design")
        head = f"{self.scenario_name}: {self.runs} runs ({how})"
        table = render_table(["metric", "mean ± 95% MC error", "P5", "P50", "P95"], rows)
        return f"{head}\n{table}"

    def to_pandas(self) -> pd.DataFrame:
        """One row per run, one column per metric (needs pandas: ``pip install pandas``)."""
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "Result.to_pandas() needs pandas: pip install 'accelsim[pandas]'"
            ) from exc
        frame = pd.DataFrame({m: np.asarray(v) for m, v in self.data.items()})
        frame.index.name = "run"
        return frame
