"""Goals on results (issue 17, item 3): validation, P(meets), the goals table, and the
recommendation among the options meeting them.

Results are built directly from arrays, so every probability is a count over the runs.
"""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

import accelsim as acs
from accelsim.results import Comparison, Result, format_value, recommend

N = 100
DAYS = np.arange(1.0, N + 1.0)  # 1..100 d: P(days <= d) = d / 100 exactly


def training(
    name: str, tco: float | np.ndarray, days: np.ndarray = DAYS, **more: np.ndarray
) -> Result:
    data = {
        "tco_usd": np.broadcast_to(np.asarray(tco, dtype=float), (N,)).copy(),
        "time_to_train_days": np.asarray(days, dtype=float),
        **{k: np.asarray(v, dtype=float) for k, v in more.items()},
    }
    return Result(name, data)


# ------------------------------------------------------------------------------ validation


def test_goals_validate_at_the_boundary() -> None:
    g = acs.Goals(deadline_days=120, budget_usd=4e6, confidence=0.9)
    assert g.names == ("deadline_days", "budget_usd")
    with pytest.raises(ValidationError, match="confidence"):
        acs.Goals(deadline_days=1, confidence=1.0)
    with pytest.raises(ValidationError, match="confidence"):
        acs.Goals(deadline_days=1, confidence=0.0)
    with pytest.raises(ValidationError, match="deadline_days"):
        acs.Goals(deadline_days=-1)
    with pytest.raises(ValidationError, match="slo_attainment"):
        acs.Goals(slo_attainment=1.5)
    with pytest.raises(ValidationError, match="extra"):
        acs.Goals(deadline=3)  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="at least one"):
        acs.Goals(confidence=0.9)
    with pytest.raises(ValidationError, match="frozen"):
        g.confidence = 0.5  # type: ignore[misc]


# ------------------------------------------------------------------------------ prob_meets


def test_prob_meets_counts_runs_per_goal_and_for_all() -> None:
    tco = np.where(DAYS <= 50, 5e6, 3e6)  # fast runs are dear: runs 1..50 over budget
    cmp = Comparison({"gpu": training("g", tco)}, acs.Goals(deadline_days=80, budget_usd=4e6))
    assert cmp.prob_meets("gpu", "deadline_days") == 0.80
    assert cmp.prob_meets("gpu", "budget_usd") == 0.50
    assert cmp.prob_meets("gpu") == 0.30  # days 51..80: both at once, not 0.8 * 0.5


def test_targets_are_inclusive_and_nan_or_inf_never_meets() -> None:
    days = DAYS.copy()
    days[0], days[1] = np.nan, np.inf
    cmp = Comparison({"a": training("a", 1.0, days)}, acs.Goals(deadline_days=10))
    assert cmp.prob_meets("a") == 0.08  # runs 3..10: 10 d itself meets, nan and inf do not


def test_an_unfinished_run_never_meets_a_deadline() -> None:
    finished = np.ones(N)
    finished[:5] = 0.0  # the five fastest runs did not finish within the horizon
    cmp = Comparison({"a": training("a", 1.0, finished=finished)}, acs.Goals(deadline_days=20))
    assert cmp.prob_meets("a") == 0.15
    # ... but the budget does not care
    cmp = Comparison({"a": training("a", 1.0, finished=finished)}, acs.Goals(budget_usd=2.0))
    assert cmp.prob_meets("a") == 1.0


def test_serving_and_stream_goals_read_their_metrics() -> None:
    serve = Result("s", {"tco_usd": np.full(N, 1e5), "slo_attainment": np.linspace(0.9, 1.0, N)})
    stream = Result("j", {"tco_usd": np.full(N, 1e5), "mean_wait_hours": DAYS / 10})
    g = acs.Goals(slo_attainment=0.99, budget_usd=2e5)
    expected = float(np.mean(np.linspace(0.9, 1.0, N) >= 0.99))
    assert Comparison({"s": serve}, g).prob_meets("s") == expected
    g = acs.Goals(max_wait_hours=2.5)
    assert Comparison({"j": stream}, g).prob_meets("j") == 0.25


def test_a_goal_without_its_metric_is_an_error_naming_goal_option_and_metric() -> None:
    stream = Result("j", {"tco_usd": np.full(N, 1e5), "mean_wait_hours": DAYS})
    cmp = Comparison({"research": stream}, acs.Goals(deadline_days=30))
    with pytest.raises(ValueError, match=r"'deadline_days'.*'time_to_train_days'.*'research'"):
        cmp.prob_meets("research")
    with pytest.raises(ValueError, match="deadline_days"):
        _ = cmp.recommendation


def test_unknown_or_unset_goal_and_no_goals_are_errors() -> None:
    cmp = Comparison({"a": training("a", 1.0)}, acs.Goals(deadline_days=30))
    with pytest.raises(KeyError, match="no goal 'deadline'"):
        cmp.prob_meets("a", "deadline")
    with pytest.raises(KeyError, match="'budget_usd' is not set"):
        cmp.prob_meets("a", "budget_usd")
    with pytest.raises(KeyError, match="no option"):
        cmp.prob_meets("b")
    with pytest.raises(ValueError, match="no goals"):
        Comparison({"a": training("a", 1.0)}).prob_meets("a")


# ------------------------------------------------------------------------------ table


def test_goals_table_gives_each_goal_and_all_with_the_confidence_quantile() -> None:
    tco = np.where(DAYS <= 50, 5e6, 3e6)
    cmp = Comparison(
        {"gpu": training("g", tco), "tpu": training("t", 1e6, DAYS / 2)},
        acs.Goals(deadline_days=80, budget_usd=4e6, confidence=0.9),
    )
    table = cmp.as_goals_table()
    assert table.header == ("goal", "gpu", "tpu")
    rows = {r[0]: r[1:] for r in table.rows}
    g90 = float(np.quantile(DAYS, 0.9))
    assert rows["time to train <= 80 d"] == (
        f"80% (P90 {format_value('time_to_train_days', g90)})",
        f"100% (P90 {format_value('time_to_train_days', g90 / 2)})",
    )
    assert rows["TCO <= $4M"][0] == "50% (P90 $5M)"
    assert rows["all goals"] == ("30% (misses)", "100% (meets)")
    assert "90%" in table.title
    assert str(table) == cmp.goals_table()


# ------------------------------------------------------------------------------ recommendation


def test_the_cheapest_option_meeting_the_goals_is_chosen_not_the_cheapest() -> None:
    """gpu is cheapest but late; of the two meeting the deadline, b is the cheaper."""
    goals = acs.Goals(deadline_days=120, confidence=0.9)
    late = 80.0 + 0.8 * DAYS  # 80.8..160 d: meets 120 d in 50 % of runs (80 + 0.8 * 50)
    results = {
        "gpu": training("g", 1e6, late),
        "a": training("a", 3e6, DAYS),
        "b": training("b", 2e6, DAYS),
    }
    rec = recommend(results, goals)
    assert rec.choice == "b"
    assert rec.meets_goals
    assert rec.decided
    assert rec.runner_up == "a"
    assert recommend(results).choice == "gpu"  # without goals, cost alone
    text = str(rec)
    p90 = format_value("time_to_train_days", float(np.quantile(late, 0.9)))
    assert (
        f"gpu meets the deadline in 50% of runs (needs 90%); P90 time to train {p90} vs 120 d"
        in text
    )
    assert "met by a in 100%, b in 100% of runs" in text
    assert "b is cheaper than a in 100% of paired runs" in text


def test_one_option_meeting_the_goals_is_chosen_and_the_others_say_why_not() -> None:
    goals = acs.Goals(deadline_days=50, budget_usd=2.5e6, confidence=0.4)
    results = {"gpu": training("g", 1e6, DAYS + 20), "tpu": training("t", 2e6, DAYS)}
    rec = Comparison(results, goals).recommendation
    assert rec.choice == "tpu"
    assert rec.meets_goals
    assert rec.decided
    assert rec.rationale[-1] == "tpu is the only option that meets the goals."
    assert "gpu meets the deadline in 30% of runs (needs 40%)" in str(rec)


def test_no_option_meeting_the_goals_says_so_and_by_how_much() -> None:
    goals = acs.Goals(deadline_days=60, budget_usd=4e6, confidence=0.9)
    results = {
        "gpu": training("g", 3e6, DAYS),  # on budget, 60 % on time
        "tpu": training("t", np.where(DAYS <= 20, 5e6, 3e6), DAYS / 2),  # late never, dear in 20 %
    }
    rec = Comparison(results, goals).recommendation
    assert not rec.meets_goals
    assert not rec.decided
    assert rec.choice == "tpu"  # closest: all goals in 80 % of runs against 60 %
    text = str(rec)
    assert text.splitlines()[0] == "Recommendation: none meets the goals (closest: tpu)"
    assert "gpu meets the deadline in 60% of runs (needs 90%); P90 time to train" in text
    assert "tpu meets the budget in 80% of runs (needs 90%); P90 TCO $5M vs $4M" in text
    assert "Closest: tpu meets every goal in 80% of runs" in text


def test_jointly_missed_goals_read_as_such() -> None:
    """Each goal alone holds in 90 % of runs, all at once in 80 %."""
    tco = np.where(DAYS <= 10, 5e6, 1e6)
    goals = acs.Goals(deadline_days=90, budget_usd=4e6, confidence=0.9)
    rec = Comparison({"a": training("a", tco)}, goals).recommendation
    assert not rec.meets_goals
    assert "a meets each goal alone, but all at once in only 80% of runs (needs 90%)" in str(rec)
