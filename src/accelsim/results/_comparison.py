"""Several options simulated with common random numbers, and the table that compares them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from accelsim.results._format import Z95, format_value, render_table
from accelsim.results._recommendation import Recommendation, recommend
from accelsim.results._result import Result


@dataclass(frozen=True)
class Comparison:
    """Several options simulated with common random numbers (same seed, same input streams).

    Because run ``i`` of every option shares its draws of every shared input,
    ``prob_less`` compares paired runs and is much sharper than comparing two independent
    studies.
    """

    results: Mapping[str, Result]

    @property
    def options(self) -> tuple[str, ...]:
        """Option names in the order given."""
        return tuple(self.results)

    def __getitem__(self, option: str) -> Result:
        """The :class:`Result` of one option."""
        try:
            return self.results[option]
        except KeyError:
            raise KeyError(f"no option {option!r}; options are {', '.join(self.results)}") from None

    def prob_less(self, metric: str, a: str, b: str) -> float:
        """P(metric of option ``a`` < metric of option ``b``), over paired runs."""
        xa, xb = self[a].samples(metric), self[b].samples(metric)
        return float(np.mean(xa < xb))

    def table(self, metrics: Sequence[str] | None = None) -> str:
        """Mean [P5-P95] of each metric (rows) for each option (columns)."""
        first = next(iter(self.results.values()))
        names = (
            list(metrics)
            if metrics is not None
            else [m for m in _TABLE_METRICS if all(m in r.data for r in self.results.values())]
            or list(first.metrics)
        )
        rows = []
        for m in names:
            row = [m]
            for res in self.results.values():
                lo, hi = res.interval(m, 0.9)
                half = Z95 * res.std_error(m)
                row.append(
                    f"{format_value(m, res.mean(m))} ±{format_value(m, half)} "
                    f"[{format_value(m, lo)}-{format_value(m, hi)}]"
                )
            rows.append(row)
        head = (
            f"mean ±95% MC error [P5-P95] over {first.runs} paired runs "
            f"(the MC error is of the mean; P5-P95 is the spread of outcomes)"
        )
        return f"{head}\n{render_table(['metric', *self.results], rows)}"

    @property
    def recommendation(self) -> Recommendation:
        """The option to pick and why, from the numbers and the practical checks."""
        return recommend(self.results)


_TABLE_METRICS = (
    "tco_usd",
    "time_to_train_days",
    "training_days",
    "wait_days",
    "engineering_days",
    "hardware_cost_usd",
    "energy_cost_usd",
    "engineering_cost_usd",
    "delay_cost_usd",
    "mfu",
    "goodput",
    "interruptions",
    "chip_hours",
    "energy_kwh",
    "mean_wait_hours",
    "utilization",
)
