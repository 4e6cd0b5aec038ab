"""Goals end to end: compare(..., goals=) and sweep(..., goals=) on small training runs."""

from __future__ import annotations

import numpy as np
import pytest

import accelsim as acs

WORK = acs.TrainingRun(params=7e9, tokens=1e11)
GPU = acs.Scenario(
    name="gpu", workload=WORK, fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")]
)
TPU = acs.Scenario(
    name="tpu", workload=WORK, fleet=[acs.Pool(chip="tpu-v5p", count=128, provider="gcp")]
)


@pytest.fixture(scope="module")
def plain() -> acs.Comparison:
    return acs.compare([GPU, TPU], runs=200, seed=1)


def test_compare_with_goals_counts_the_runs_it_simulated(plain: acs.Comparison) -> None:
    # targets between the options' medians, so the two options differ in P(meets)
    days = [plain[k].quantile("time_to_train_days", 0.5) for k in plain.options]
    usd = [plain[k].quantile("tco_usd", 0.5) for k in plain.options]
    deadline, budget = float(np.mean(days)), float(np.mean(usd) * 1.5)
    goals = acs.Goals(deadline_days=deadline, budget_usd=budget)
    cmp = acs.compare([GPU, TPU], runs=200, seed=1, goals=goals)
    assert cmp.goals == goals
    for k in cmp.options:
        assert cmp[k] == plain[k]  # goals change nothing that is simulated
        on_time = cmp[k].samples("time_to_train_days") <= deadline
        on_budget = cmp[k].samples("tco_usd") <= budget
        assert cmp.prob_meets(k, "deadline_days") == float(np.mean(on_time))
        assert cmp.prob_meets(k, "budget_usd") == float(np.mean(on_budget))
        assert cmp.prob_meets(k) == float(np.mean(on_time & on_budget))
    rec = cmp.recommendation
    meeting = [k for k in cmp.options if cmp.prob_meets(k) >= goals.confidence]
    assert rec.meets_goals == bool(meeting)
    if meeting:
        assert rec.choice in meeting
    assert rec.rationale[0].startswith("Goals:" if meeting else "No option meets the goals")
    table = cmp.as_goals_table()
    assert table.header == ("goal", "gpu", "tpu")
    assert [r[0] for r in table.rows][-1] == "all goals"


def test_a_loose_goal_keeps_the_cost_choice_and_a_tight_one_names_the_miss(
    plain: acs.Comparison,
) -> None:
    slowest = max(plain[k].quantile("time_to_train_days", 1.0) for k in plain.options)
    loose = acs.compare([GPU, TPU], runs=200, seed=1, goals=acs.Goals(deadline_days=slowest))
    assert loose.recommendation.choice == plain.recommendation.choice
    fastest = min(plain[k].quantile("time_to_train_days", 0.0) for k in plain.options)
    tight = acs.compare([GPU, TPU], runs=200, seed=1, goals=acs.Goals(deadline_days=fastest / 2))
    rec = tight.recommendation
    assert not rec.meets_goals
    text = str(rec)
    assert "gpu meets the deadline in 0% of runs (needs 90%); P90 time to train" in text
    assert "tpu meets the deadline in 0% of runs (needs 90%)" in text


def test_sweep_with_goals() -> None:
    goals = acs.Goals(budget_usd=1e12)
    sw = acs.sweep(GPU, grid={"fleet.0.count": [64, 128]}, runs=20, seed=1, goals=goals)
    assert sw.goals == goals
    assert sw.prob_meets({"fleet.0.count": 64}) == 1.0
    assert sw.as_goals_table().header == ("goal", "fleet.0.count=64", "fleet.0.count=128")
    with pytest.raises(ValueError, match="no goals"):
        acs.sweep(GPU, grid={"fleet.0.count": [64]}, runs=4, seed=1).prob_meets(0)


def test_a_goal_an_option_cannot_report_fails_in_compare() -> None:
    stream = acs.Scenario(
        name="research",
        workload=acs.JobStream(
            interarrival_hours=acs.Exponential(mean=2.0), chips=1, duration_hours=1.0
        ),
        fleet=[acs.Pool(chip="h100-sxm", count=2, provider="aws")],
        horizon_days=1,
    )
    with pytest.raises(ValueError, match=r"'deadline_days'.*'time_to_train_days'.*'research'"):
        acs.compare([stream], runs=2, seed=1, goals=acs.Goals(deadline_days=30))
    ok = acs.compare([stream], runs=2, seed=1, goals=acs.Goals(max_wait_hours=1e6))
    assert ok.prob_meets("research") == float(
        np.mean(ok["research"].samples("mean_wait_hours") <= 1e6)
    )
