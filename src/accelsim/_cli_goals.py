"""The goal options of ``accelsim compare`` and ``accelsim report`` and their check.

Used by :mod:`accelsim.cli`: each goal's metric must be one every scenario reports, and
every metric an option names (goals, ``--target``, ``--metrics``) one the scenario reports,
checked on a one-run probe before any study.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Annotated

import typer
from pydantic import ValidationError

from accelsim.errors import AccelsimError
from accelsim.results import GOAL_METRICS, meets
from accelsim.scenario import Goals, Scenario
from accelsim.study import simulate

_Deadline = Annotated[
    float | None,
    typer.Option(help="Goal: time to train at most this many days.", show_default=False),
]
_Budget = Annotated[
    float | None, typer.Option(help="Goal: TCO at most this many USD.", show_default=False)
]
_SloGoal = Annotated[
    float | None,
    typer.Option(
        "--slo-attainment",
        help="Goal: at least this share of requests within the SLO (serving).",
        show_default=False,
    ),
]
_MaxWait = Annotated[
    float | None,
    typer.Option(
        help="Goal: mean queue wait (mean_wait_hours) at most this many hours.",
        show_default=False,
    ),
]
_MaxP95Wait = Annotated[
    float | None,
    typer.Option(
        help="Goal: P95 of the queue waits of jobs (p95_wait_hours) at most this many hours.",
        show_default=False,
    ),
]
_Confidence = Annotated[
    float, typer.Option(help="Share of runs that must meet every goal at once.")
]


def _goals(
    scenarios: Iterable[Scenario],
    deadline_days: float | None,
    budget_usd: float | None,
    slo_attainment: float | None,
    max_wait_hours: float | None,
    confidence: float,
    max_p95_wait_hours: float | None = None,
) -> Goals | None:
    """The goals the options ask for (None without any), checked before any study: each
    goal's metric must be one every scenario reports."""
    given = {
        "deadline_days": deadline_days,
        "budget_usd": budget_usd,
        "slo_attainment": slo_attainment,
        "max_wait_hours": max_wait_hours,
        "max_p95_wait_hours": max_p95_wait_hours,
    }
    if all(v is None for v in given.values()):
        return None
    try:
        goals = Goals(**{k: v for k, v in given.items() if v is not None}, confidence=confidence)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]).replace("_", "-") if err["loc"] else "goals"
        raise AccelsimError(f"--{field}: {err['msg']}") from None
    for s in scenarios:
        probe = None if s.workloads is None else simulate(s, runs=1, seed=0, progress=False)
        for goal in goals.names:
            flag = f"--{goal.replace('_', '-')}"
            if probe is None:
                _check_metrics(s, [GOAL_METRICS[goal].metric], flag)
                continue
            try:  # a mix: the goal reads each workload of its kind (results._goals)
                meets(probe, goals, goal, option=s.name)
            except ValueError as exc:
                raise AccelsimError(f"{flag}: {exc}") from None
    return goals


def _check_metrics(s: Scenario, wanted: Sequence[str], option: str) -> None:
    """Refuse an unknown metric before the study: the names come from a one-run probe."""
    if not wanted:
        return
    known = simulate(s, runs=1, seed=0, progress=False).metrics
    for name in wanted:
        metric = name.split("@", 1)[0]
        if metric not in known:
            raise AccelsimError(
                f"{option}: unknown metric {metric!r} for scenario {s.name!r}; known: "
                f"{', '.join(known)}"
            )
