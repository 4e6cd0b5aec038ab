"""Goals (chance constraints) read on results: which runs meet them, how often, by how much not.

A :class:`~accelsim.scenario.Goals` sets targets (deadline, budget, SLO attainment, queue
wait) and a confidence. Each goal reads one metric of a :class:`Result`, whatever the
workload, with one sense (:data:`GOAL_METRICS`); an option whose result lacks the metric is
an error naming the goal, the option and the metric, never a goal silently skipped. A run
meets a goal when its metric is on the right side of the target (inclusive); ``nan`` meets
nothing, ``inf`` meets no upper bound, and a run with ``finished == 0`` never meets a
deadline. ``P(meets)`` is the share of runs that do: the empirical frequency over the
study's runs (paired across options, like :meth:`Comparison.prob_less`).

On a mix of workloads (a result whose ``scenario`` has ``workloads``), a goal reads each
workload it applies to (:data:`MIX_KINDS`): the deadline every training run's
``<name>.time_to_train_days`` (and ``<name>.finished``), the SLO every endpoint's
``<name>.slo_attainment``, the wait limit every stream's or trace's
``<name>.mean_wait_hours``, the budget the fleet's ``tco_usd``. A run meets the goal when
every workload it applies to does; a goal that applies to no workload of the mix is an
error. The words name the workload that misses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np

from accelsim.results._format import Table, format_value
from accelsim.results._result import Result
from accelsim.scenario import Goals, JobStream, Serving, Trace, TrainingRun, workload_name


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
    "max_p95_wait_hours": GoalMetric(
        "p95_wait_hours", "at_most", "the P95 wait limit", "P95 wait of jobs"
    ),
}
"""Goal name -> the metric it reads and its sense (see :class:`~accelsim.scenario.Goals`)."""

MIX_KINDS: Mapping[str, str | None] = {
    "deadline_days": "training",
    "budget_usd": None,
    "slo_attainment": "serving",
    "max_wait_hours": "stream",
    "max_p95_wait_hours": "stream",
}
"""Goal name -> the kind of workload of a mix it reads (``None``: the fleet's own metric);
``stream`` covers job streams and traces."""

ALL_GOALS = "all"
"""The row name of "every goal at once" in :func:`goals_table`."""


def _check_goal(goals: Goals, goal: str) -> None:
    if goal not in GOAL_METRICS:
        raise KeyError(f"no goal {goal!r}; goals are {', '.join(GOAL_METRICS)}")
    if getattr(goals, goal) is None:
        raise KeyError(f"goal {goal!r} is not set; the goals set are {', '.join(goals.names)}")


def mix_workloads(res: Result) -> dict[str, str] | None:
    """A mix's workloads by name -> kind (``training``, ``serving``, ``stream``), from the
    scenario the result ran; ``None`` for a lone workload (or a result without scenario)."""
    scenario = res.scenario
    if scenario is None or scenario.workloads is None:
        return None
    kinds: dict[str, str] = {}
    for work in scenario.workloads:
        if isinstance(work, TrainingRun):
            kinds[workload_name(work)] = "training"
        elif isinstance(work, Serving):
            kinds[workload_name(work)] = "serving"
        elif isinstance(work, JobStream | Trace):
            kinds[workload_name(work)] = "stream"
    return kinds


def goal_reads(res: Result, goal: str, *, option: str = "") -> list[tuple[str, str]]:
    """``(workload, metric)`` pairs ``goal`` reads on ``res``: one ``("", metric)`` on a lone
    workload or a fleet-wide goal, one per workload of the kind it applies to on a mix.

    A metric the result lacks, or a mix with no workload the goal applies to, is an error
    naming the goal and the option.
    """
    option = option or res.scenario_name
    spec = GOAL_METRICS[goal]
    kinds = mix_workloads(res)
    kind = MIX_KINDS[goal]
    if kinds is None or kind is None:
        reads = [("", spec.metric)]
    else:
        reads = [(name, f"{name}.{spec.metric}") for name, k in kinds.items() if k == kind]
        if not reads:
            listed = ", ".join(f"{n} ({k})" for n, k in kinds.items())
            raise ValueError(
                f"goal {goal!r} applies to the {kind} workloads of a mix, and option "
                f"{option!r} has none (its workloads: {listed}); drop the goal or compare "
                f"options that have one"
            )
    for _, metric in reads:
        if metric not in res.data:
            raise ValueError(
                f"goal {goal!r} reads the metric {metric!r}, which option {option!r} does not "
                f"report (its metrics: {', '.join(res.metrics)}); drop the goal or compare "
                f"options that report it"
            )
    return reads


def _meets_one(res: Result, goals: Goals, goal: str, who: str, metric: str) -> np.ndarray:
    """Which runs meet ``goal`` on one metric (``who``'s, or the result's own with ``""``)."""
    x = res.samples(metric)
    target = float(getattr(goals, goal))
    ok = x <= target if GOAL_METRICS[goal].sense == "at_most" else x >= target  # nan: False
    finished = f"{who}.finished" if who else "finished"
    if goal == "deadline_days" and finished in res.data:
        ok &= res.samples(finished) != 0
    return np.asarray(ok, dtype=bool)


def meets(res: Result, goals: Goals, goal: str | None = None, *, option: str = "") -> np.ndarray:
    """Which runs of ``res`` meet ``goal`` (or every goal set, with ``None``): bool array.

    ``option`` names the result in errors (default: its scenario name).
    """
    option = option or res.scenario_name
    names = goals.names if goal is None else (goal,)
    ok = np.ones(res.runs, dtype=bool)
    for name in names:
        _check_goal(goals, name)
        for who, metric in goal_reads(res, name, option=option):
            ok &= _meets_one(res, goals, name, who, metric)
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


def _quantile_words(
    res: Result, goals: Goals, goal: str, metric: str | None = None
) -> tuple[str, str]:
    """(``"P90"``, ``"141 d"``): the quantile of ``metric`` (default: the goal's) that must
    sit on the target's side for the goal to hold at the confidence, and its value."""
    spec = GOAL_METRICS[goal]
    q = _quantile_level(goals, goal)
    value = res.quantile(metric or spec.metric, q)
    shown = f"{value:.4g}" if goal == "slo_attainment" else format_value(spec.metric, value)
    return f"P{100 * q:.4g}", shown


def _by_workload(res: Result, goals: Goals, goal: str, option: str) -> list[tuple[str, str, float]]:
    """``(workload, metric, P(meets))`` of each metric the goal reads, worst first (stable)."""
    rows = [
        (who, metric, float(np.mean(_meets_one(res, goals, goal, who, metric))))
        for who, metric in goal_reads(res, goal, option=option)
    ]
    return sorted(rows, key=lambda row: row[2])


def _missing(res: Result, goals: Goals, goal: str, option: str) -> list[tuple[str, str, float]]:
    """The workloads that miss ``goal`` alone at the confidence (else the worst one)."""
    rows = _by_workload(res, goals, goal, option)
    return [row for row in rows if row[2] < goals.confidence] or rows[:1]


def _shortfall_of(res: Result, goals: Goals, goal: str, who: str, metric: str) -> str:
    level, shown = _quantile_words(res, goals, goal, metric)
    named = f"{who} " if who else ""
    return f"{level} {named}{GOAL_METRICS[goal].what} {shown} vs {_target(goals, goal)}"


def shortfall(res: Result, goals: Goals, goal: str, *, option: str = "") -> str:
    """By how much the option misses one goal at the confidence: ``"P90 time to train 141 d
    vs 120 d"`` (the quantile that would have to be on the target's side); on a mix, for each
    workload that misses it alone (else the worst), named: ``"P90 llm time to train ..."``."""
    parts = [
        _shortfall_of(res, goals, goal, who, metric)
        for who, metric, _ in _missing(res, goals, goal, option or res.scenario_name)
    ]
    return "; ".join(parts)


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
                f"{shortfall(res, goals, goal, option=option)}"
            )
            if goal == "deadline_days":
                for who, _, _ in _missing(res, goals, goal, option):
                    finished = f"{who}.finished" if who else "finished"
                    if finished not in res.data:
                        continue
                    unfinished = float(np.mean(res.samples(finished) == 0))
                    if unfinished > 0:
                        named = f"{who} " if who else ""
                        part += f"; {named}unfinished in {pct(unfinished)} of runs"
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
    of the goal's metric that must sit on the target's side at the confidence; on a mix, that
    of the workload meeting it least often, named (``"62% (llm P90 141 d)"``).
    """
    rows = []
    for goal in goals.names:
        row = [goal_words(goals, goal)]
        for option, res in results.items():
            p = prob_meets(res, goals, goal, option=option)
            who, metric, _ = _by_workload(res, goals, goal, option)[0]
            level, shown = _quantile_words(res, goals, goal, metric)
            named = f"{who} " if who else ""
            row.append(f"{pct(p)} ({named}{level} {shown})")
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
    "MIX_KINDS",
    "GoalMetric",
    "goal_reads",
    "goal_words",
    "goals_table",
    "meets",
    "misses",
    "mix_workloads",
    "pct",
    "prob_meets",
    "shortfall",
]
