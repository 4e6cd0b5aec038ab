"""Goals (chance constraints) read on results: which runs meet them, how often, by how much not.

A :class:`~accelsim.scenario.Goals` sets targets (deadline, budget, SLO attainment, queue
wait) and a confidence. Each goal reads one metric of a :class:`Result`, whatever the
workload, with one sense (:data:`GOAL_METRICS`); an option whose result lacks the metric is
an error naming the goal, the option and the metric, never a goal silently skipped. A run
meets a goal when its metric is on the right side of the target (inclusive); ``nan`` meets
nothing, ``inf`` meets no upper bound, and a run with ``finished == 0`` never meets a
deadline. ``P(meets)`` is the share of runs that do: the empirical frequency over the
study's runs (paired across options, like :meth:`Comparison.prob_less`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np

from accelsim._typing import FloatArray
from accelsim.results._format import Table, format_value
from accelsim.results._result import Result
from accelsim.scenario import Goals


@dataclass(frozen=True)
class GoalMetric:
    """How one goal reads a result."""

    metric: str
    """The metric it reads."""
    sense: Literal["at_most", "at_least"]
    """``at_most``: met when the metric is <= the target; ``at_least``: >= the target."""
    noun: str
    """The goal in words (``"the deadline"``)."""
    what: str
    """The metric in words (``"time to train"``)."""


GOAL_METRICS: Mapping[str, GoalMetric] = {
    "deadline_days": GoalMetric("time_to_train_days", "at_most", "the deadline", "time to train"),
    "budget_usd": GoalMetric("tco_usd", "at_most", "the budget", "TCO"),
    "slo_attainment": GoalMetric("slo_attainment", "at_least", "the SLO", "SLO attainment"),
    "max_wait_hours": GoalMetric("mean_wait_hours", "at_most", "the wait limit", "mean wait"),
}
"""Goal name -> the metric it reads and its sense (see :class:`~accelsim.scenario.Goals`)."""

ALL_GOALS = "all"
"""The row name of "every goal at once" in :func:`goals_table`."""


def _check_goal(goals: Goals, goal: str) -> None:
    if goal not in GOAL_METRICS:
        raise KeyError(f"no goal {goal!r}; goals are {', '.join(GOAL_METRICS)}")
    if getattr(goals, goal) is None:
        raise KeyError(f"goal {goal!r} is not set; the goals set are {', '.join(goals.names)}")


def _metric(res: Result, option: str, goal: str) -> FloatArray:
    metric = GOAL_METRICS[goal].metric
    if metric not in res.data:
        raise ValueError(
            f"goal {goal!r} reads the metric {metric!r}, which option {option!r} does not "
            f"report (its metrics: {', '.join(res.metrics)}); drop the goal or compare options "
            f"that report it"
        )
    return res.samples(metric)


def meets(res: Result, goals: Goals, goal: str | None = None, *, option: str = "") -> np.ndarray:
    """Which runs of ``res`` meet ``goal`` (or every goal set, with ``None``): bool array.

    ``option`` names the result in errors (default: its scenario name).
    """
    option = option or res.scenario_name
    names = goals.names if goal is None else (goal,)
    ok = np.ones(res.runs, dtype=bool)
    for name in names:
        _check_goal(goals, name)
        spec = GOAL_METRICS[name]
        x = _metric(res, option, name)
        target = float(getattr(goals, name))
        ok &= x <= target if spec.sense == "at_most" else x >= target  # nan: False
        if name == "deadline_days" and "finished" in res.data:
            ok &= res.samples("finished") != 0
    return ok


def prob_meets(res: Result, goals: Goals, goal: str | None = None, *, option: str = "") -> float:
    """P(the run meets ``goal``, or every goal with ``None``): the share of runs that do."""
    return float(np.mean(meets(res, goals, goal, option=option)))


def goal_words(goals: Goals, goal: str) -> str:
    """``"time to train <= 120 d"``: the goal as its metric and target."""
    spec = GOAL_METRICS[goal]
    sign = "<=" if spec.sense == "at_most" else ">="
    return f"{spec.what} {sign} {_target(goals, goal)}"


def _target(goals: Goals, goal: str) -> str:
    value = float(getattr(goals, goal))
    if goal == "slo_attainment":
        return f"{value:.4g}"
    return format_value(GOAL_METRICS[goal].metric, value)


def _quantile_level(goals: Goals, goal: str) -> float:
    """The quantile that must sit on the target's side for the goal to hold at the
    confidence: ``confidence`` for an upper bound, ``1 - confidence`` for a lower one."""
    c = goals.confidence
    return c if GOAL_METRICS[goal].sense == "at_most" else 1.0 - c


def _quantile_words(res: Result, goals: Goals, goal: str) -> tuple[str, str]:
    """(``"P90"``, ``"141 d"``): the quantile that must sit on the target's side for the goal
    to hold at the confidence, and its value."""
    spec = GOAL_METRICS[goal]
    q = _quantile_level(goals, goal)
    value = res.quantile(spec.metric, q)
    shown = f"{value:.4g}" if goal == "slo_attainment" else format_value(spec.metric, value)
    return f"P{100 * q:.4g}", shown


def shortfall(res: Result, goals: Goals, goal: str) -> str:
    """By how much the option misses one goal at the confidence: ``"P90 time to train 141 d
    vs 120 d"`` (the quantile that would have to be on the target's side)."""
    level, shown = _quantile_words(res, goals, goal)
    return f"{level} {GOAL_METRICS[goal].what} {shown} vs {_target(goals, goal)}"


def pct(p: float) -> str:
    """A probability as a percentage that never rounds a non-zero share to 0 % or a share
    short of all to 100 % (so "in 0 % of runs" means never)."""
    if 0.0 < p < 0.005:
        return "<1%"
    if 0.995 <= p < 1.0:
        return ">99%"
    return f"{p:.0%}"


def misses(option: str, res: Result, goals: Goals) -> str:
    """Why ``option`` does not meet the goals at the confidence, goal by goal, in words."""
    need = pct(goals.confidence)
    parts = []
    singles = []
    for goal in goals.names:
        p = prob_meets(res, goals, goal, option=option)
        if p < goals.confidence:
            singles.append(p)
            part = (
                f"meets {GOAL_METRICS[goal].noun} in {pct(p)} of runs (needs {need}); "
                f"{shortfall(res, goals, goal)}"
            )
            if goal == "deadline_days" and "finished" in res.data:
                unfinished = float(np.mean(res.samples("finished") == 0))
                if unfinished > 0:
                    part += f"; unfinished in {pct(unfinished)} of runs"
            parts.append(part)
    p_all = prob_meets(res, goals, option=option)
    if not parts:
        parts.append(
            f"meets each goal alone, but all at once in only {pct(p_all)} of runs (needs {need})"
        )
    elif len(parts) > 1 or p_all < min(singles):
        parts.append(f"all goals at once in {pct(p_all)}")
    return f"{option} " + "; ".join(parts) + "."


def goals_table(results: Mapping[str, Result], goals: Goals) -> Table:
    """P(meets) of each goal (rows) and of all at once (last row) for each option (columns).

    A cell reads ``"62% (P90 141 d)"``: the share of runs meeting the goal and the quantile
    of the goal's metric that must sit on the target's side at the confidence.
    """
    rows = []
    for goal in goals.names:
        row = [goal_words(goals, goal)]
        for option, res in results.items():
            p = prob_meets(res, goals, goal, option=option)
            level, shown = _quantile_words(res, goals, goal)
            row.append(f"{pct(p)} ({level} {shown})")
        rows.append(tuple(row))
    last = [f"{ALL_GOALS} goals"]
    for option, res in results.items():
        p = prob_meets(res, goals, option=option)
        mark = "meets" if p >= goals.confidence else "misses"
        last.append(f"{pct(p)} ({mark})")
    rows.append(tuple(last))
    first = next(iter(results.values()))
    title = (
        f"P(meets goal) over {first.runs} runs; an option meets the goals when all hold at "
        f"once in at least {pct(goals.confidence)} of runs"
    )
    return Table(("goal", *results), tuple(rows), title)


__all__ = [
    "ALL_GOALS",
    "GOAL_METRICS",
    "GoalMetric",
    "goal_words",
    "goals_table",
    "meets",
    "misses",
    "pct",
    "prob_meets",
    "shortfall",
]
