"""Several options simulated with common random numbers, and the table that compares them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from accelsim.results._format import Z95, Table, format_error, format_value
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

    def __post_init__(self) -> None:
        if not self.results:
            raise ValueError("a comparison needs at least one option")
        runs = {k: r.runs for k, r in self.results.items()}
        if len(set(runs.values())) > 1:
            raise ValueError(
                f"the options of a comparison are paired run for run, so they need the same "
                f"number of runs; got {runs}"
            )

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

    def as_table(self, metrics: Sequence[str] | None = None) -> Table:
        """:meth:`table` as a :class:`~accelsim.results.Table` (its cells, for the CLI)."""
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
                st = res.stats(m)
                row.append(
                    f"{format_value(m, st['mean'])} ±{format_error(m, Z95 * st['std_error'])} "
                    f"[{format_value(m, st['p5'])}-{format_value(m, st['p95'])}]"
                )
            rows.append(tuple(row))
        head = (
            f"mean ±95% MC error [P5-P95] over {first.runs} paired runs "
            f"(the MC error is of the mean; P5-P95 is the spread of outcomes)"
        )
        return Table(("metric", *self.results), tuple(rows), head)

    def table(self, metrics: Sequence[str] | None = None) -> str:
        """Mean ±95% MC error [P5-P95] of each metric (rows) for each option (columns)."""
        return str(self.as_table(metrics))

    def _repr_html_(self) -> str:
        """:meth:`table` and the recommendation as HTML, for notebooks."""
        from accelsim.results._html import comparison_html

        return comparison_html(self)

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
