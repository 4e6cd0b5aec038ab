"""Several options simulated with common random numbers, and the table that compares them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from accelsim._typing import FloatArray
from accelsim.results._commitment import unused_notes
from accelsim.results._finish import LOWER_BOUND_MARK, lower_bounds, marked
from accelsim.results._format import (
    NOT_AVAILABLE,
    Z95,
    Table,
    format_error,
    format_value,
    unit_of,
)
from accelsim.results._goals import goals_table, prob_meets
from accelsim.results._recommendation import Recommendation, recommend
from accelsim.results._result import Result
from accelsim.scenario import Goals, check_label


def prob_lowest(values: FloatArray) -> FloatArray:
    """Share of paired runs (columns) in which each option (row) has the lowest value; a
    run where ``k`` options tie for the lowest gives each ``1/k``, so the shares sum to 1
    (two fixed fleets of the same chips tie on TCO in every run: 50 % each, not 100 % to
    whichever is listed first).

    >>> prob_lowest(np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 4.0]])).tolist()
    [0.5, 0.5]
    """
    lowest = values == values.min(axis=0)
    out: FloatArray = (lowest / lowest.sum(axis=0)).mean(axis=1)
    return out


@dataclass(frozen=True)
class Comparison:
    """Several options simulated with common random numbers (same seed, same input streams).

    Because run ``i`` of every option shares its draws of every shared input,
    ``prob_less`` compares paired runs and is much sharper than comparing two independent
    studies.

    With ``goals`` (:class:`~accelsim.scenario.Goals`), :meth:`prob_meets` gives each
    option's chance of meeting them, :meth:`goals_table` the table of those chances, and
    the recommendation picks among the options meeting them at the goals' confidence.
    """

    results: Mapping[str, Result]
    goals: Goals | None = None
    """Targets the options are held to (``compare(..., goals=...)``), or ``None``."""

    def __post_init__(self) -> None:
        if not self.results:
            raise ValueError("a comparison needs at least one option")
        for name in self.results:
            check_label(name, "option name")
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

    def _goals(self) -> Goals:
        if self.goals is None:
            raise ValueError(
                "this comparison has no goals: pass goals=acs.Goals(...) to compare(), or "
                "build Comparison(results, goals=...)"
            )
        return self.goals

    def prob_meets(self, option: str, goal: str | None = None) -> float:
        """P(option meets every goal at once) over its runs, or one goal's by name.

        ``goal`` is a field of :class:`~accelsim.scenario.Goals` that is set
        (``"deadline_days"``, ``"budget_usd"``, ``"slo_attainment"``, ``"max_wait_hours"``,
        ``"max_p95_wait_hours"``).
        The probability is the share of runs meeting it (see ``Goals`` for the metric each
        goal reads); an option lacking that metric is an error naming the goal, the option
        and the metric.
        """
        return prob_meets(self[option], self._goals(), goal, option=option)

    def as_goals_table(self) -> Table:
        """:meth:`goals_table` as a :class:`~accelsim.results.Table`."""
        return goals_table(self.results, self._goals())

    def goals_table(self) -> str:
        """P(meets) of each goal (rows) and of all at once for each option (columns), each
        with the quantile that must sit on the target's side at the goals' confidence."""
        return str(self.as_goals_table())

    def as_table(self, metrics: Sequence[str] | None = None) -> Table:
        """:meth:`table` as a :class:`~accelsim.results.Table` (its cells, for the CLI)."""
        first = next(iter(self.results.values()))
        names = (
            list(metrics)
            if metrics is not None
            else [m for m in _TABLE_METRICS if _shown(m, self.results)] or list(first.metrics)
        )
        rows = []
        for m in names:
            row = [m]
            for res in self.results.values():
                if m not in res.data:
                    row.append("no price" if unit_of(m) == "USD" else NOT_AVAILABLE)
                    continue
                st = res.stats(m)
                row.append(
                    marked(
                        res,
                        m,
                        f"{format_value(m, st['mean'])} ±{format_error(m, Z95 * st['std_error'])} "
                        f"[{format_value(m, st['p5'])}-{format_value(m, st['p95'])}]",
                    )
                )
            rows.append(tuple(row))
        head = (
            f"mean ±95% MC error [P5-P95] over {first.runs} paired runs "
            f"(the MC error is of the mean; P5-P95 is the spread of outcomes)"
        )
        censored = [k for k, r in self.results.items() if lower_bounds(r)]
        if censored:
            head += (
                f"\n{LOWER_BOUND_MARK.strip()} marks a lower bound: {', '.join(censored)} does "
                f"not finish within its horizon in some runs, whose time and cost are counted "
                f"up to it"
            )
        note = "\n".join(unused_notes(self.results))
        return Table(("metric", *self.results), tuple(rows), head, note)

    def table(self, metrics: Sequence[str] | None = None) -> str:
        """Mean ±95% MC error [P5-P95] of each metric (rows) for each option (columns)."""
        return str(self.as_table(metrics))

    def _repr_html_(self) -> str:
        """:meth:`table` and the recommendation as HTML, for notebooks."""
        from accelsim.results._html import comparison_html

        return comparison_html(self)

    @property
    def recommendation(self) -> Recommendation:
        """The option to pick and why, from the numbers and the practical checks (among the
        options meeting :attr:`goals`, when set)."""
        return recommend(self.results, self.goals)


def _shown(metric: str, results: Mapping[str, Result]) -> bool:
    """Whether a default row shows: every option reports the metric, or it is a cost that
    every priced option reports (an unpriced option, without ``tco_usd``, reads "no price"
    in it rather than hiding every cost row)."""
    if all(metric in r.data for r in results.values()):
        return True
    priced = [r for r in results.values() if "tco_usd" in r.data]
    return unit_of(metric) == "USD" and bool(priced) and all(metric in r.data for r in priced)


# Rows a comparison shows by default, those every option reports, in this order: the
# serving ones (cost per token, the SLO and its latencies, fleet size) sit beside the TCO
# because they are what a serving choice is made on.
_TABLE_METRICS = (
    "tco_usd",
    "usd_per_million_output_tokens",
    "usd_per_million_tokens",
    "slo_attainment",
    "ttft_p99_ms",
    "tpot_p99_ms",
    "replicas_peak",
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
