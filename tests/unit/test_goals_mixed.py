"""Goals on a mix of workloads (issue 17, item 3, "mixed fleets alike").

A goal applies to every workload of its kind: the deadline to every training run, the SLO
to every endpoint, the wait limit to every stream or trace, the budget to the fleet. Hand-
built results count runs exactly; one end-to-end comparison checks the same rule on
simulated mixes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import accelsim as acs
from accelsim.cli import main
from accelsim.engines import OverloadWarning
from accelsim.results import Comparison, Result, meets, prob_meets
from accelsim.results._goals import goal_reads

N = 100
DAYS = np.arange(1.0, N + 1.0)  # 1..100: P(x <= d) = d / 100 exactly

LLM = acs.TrainingRun(params=1e9, tokens=2e10, chips=64, name="llm")
FT = acs.TrainingRun(params=1e9, tokens=1e10, chips=32, name="ft")
CHAT = acs.Serving(
    model="llama-3.1-8b",
    precision="fp8",
    rate_rps=10.0,
    input_tokens=1000,
    output_tokens=200,
    slo=acs.SLO(ttft_ms=2000, tpot_ms=100),
    chips_per_replica=1,
    chips=16,
    horizon_days=5,
    name="chat",
)
RESEARCH = acs.JobStream(
    interarrival_hours=acs.Exponential(mean=0.5),
    chips=acs.Choice(values=[1, 4, 8]),
    duration_hours=acs.LogNormal(low=1.0, high=8.0),
)


def org(workloads: list[object], chips: int = 256, name: str = "org") -> acs.Scenario:
    return acs.Scenario(
        name=name,
        fleet=[acs.Pool(chip="h100-sxm", count=chips, provider="aws")],
        workloads=workloads,  # type: ignore[arg-type]
        horizon_days=5,
        scheduler="priority_preemptive",
    )


MIX = org([LLM, FT, CHAT, RESEARCH])


def mixed(**data: np.ndarray | float) -> Result:
    """A hand-built result of MIX: every metric a goal reads, overridable."""
    base: dict[str, np.ndarray | float] = {
        "tco_usd": 1e6,
        "finished": 1.0,
        "llm.time_to_train_days": DAYS,
        "llm.finished": 1.0,
        "ft.time_to_train_days": DAYS / 2,
        "ft.finished": 1.0,
        "chat.slo_attainment": 0.999,
        "research.mean_wait_hours": 1.0,
    }
    base.update(data)
    arrays = {k: np.broadcast_to(np.asarray(v, dtype=float), (N,)).copy() for k, v in base.items()}
    return Result("org", arrays, scenario=MIX)


def test_each_goal_reads_every_workload_of_its_kind() -> None:
    res = mixed()
    assert goal_reads(res, "deadline_days") == [
        ("llm", "llm.time_to_train_days"),
        ("ft", "ft.time_to_train_days"),
    ]
    assert goal_reads(res, "slo_attainment") == [("chat", "chat.slo_attainment")]
    assert goal_reads(res, "max_wait_hours") == [("research", "research.mean_wait_hours")]
    assert goal_reads(res, "budget_usd") == [("", "tco_usd")]


def test_a_deadline_holds_when_every_training_run_meets_it() -> None:
    ft = np.roll(DAYS, 50)  # ft is late in other runs than llm
    finished = np.ones(N)
    finished[DAYS <= 5] = 0.0  # llm unfinished in its five fastest runs
    res = mixed(**{"ft.time_to_train_days": ft, "llm.finished": finished})
    g = acs.Goals(deadline_days=60)
    expected = (DAYS <= 60) & (ft <= 60) & (finished != 0)
    np.testing.assert_array_equal(meets(res, g), expected)
    assert prob_meets(res, g) == float(expected.mean())
    # the fleet's own time-free "finished" does not stand in for a run's
    res = mixed(**{"finished": 0.0})
    assert prob_meets(res, g) == float(((DAYS <= 60) & (DAYS / 2 <= 60)).mean())


def test_slo_wait_and_budget_read_the_endpoint_the_stream_and_the_fleet() -> None:
    slo = np.linspace(0.9, 1.0, N)
    wait = DAYS / 10
    tco = np.where(DAYS <= 30, 2e6, 1e6)
    res = mixed(**{"chat.slo_attainment": slo, "research.mean_wait_hours": wait, "tco_usd": tco})
    assert prob_meets(res, acs.Goals(slo_attainment=0.99), "slo_attainment") == float(
        np.mean(slo >= 0.99)
    )
    assert prob_meets(res, acs.Goals(max_wait_hours=2.5)) == 0.25
    assert prob_meets(res, acs.Goals(budget_usd=1.5e6)) == 0.70
    g = acs.Goals(slo_attainment=0.99, max_wait_hours=5.0, budget_usd=1.5e6)
    both = (slo >= 0.99) & (wait <= 5.0) & (tco <= 1.5e6)
    assert prob_meets(res, g) == float(both.mean())


def test_a_goal_that_applies_to_no_workload_of_the_mix_is_an_error() -> None:
    trainers = org([LLM, RESEARCH])
    res = Result(
        "t",
        {"tco_usd": np.ones(N), "llm.time_to_train_days": DAYS, "research.mean_wait_hours": DAYS},
        scenario=trainers,
    )
    with pytest.raises(ValueError, match=r"'slo_attainment'.*serving.*'t'.*llm \(training\)"):
        prob_meets(res, acs.Goals(slo_attainment=0.9))
    # a workload of the kind whose metric is missing: the metric named, as for a lone one
    del res.data["llm.time_to_train_days"]  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match=r"'llm.time_to_train_days'"):
        prob_meets(res, acs.Goals(deadline_days=10))


def test_misses_and_the_table_name_the_workload_that_misses() -> None:
    ft = np.where(DAYS <= 50, 200.0, 10.0)  # ft late in half the runs, llm always on time
    res = mixed(**{"llm.time_to_train_days": 10.0, "ft.time_to_train_days": ft})
    cmp = Comparison({"org": res}, acs.Goals(deadline_days=30, confidence=0.9))
    rec = cmp.recommendation
    assert not rec.meets_goals
    text = " ".join(rec.rationale)
    assert "P90 ft time to train 200 d vs 30 d" in text
    assert "llm time to train" not in text
    table = cmp.goals_table()
    assert "50% (ft P90 200 d)" in table


def test_unfinished_runs_are_named_by_workload() -> None:
    finished = np.where(DAYS <= 20, 0.0, 1.0)
    res = mixed(**{"ft.finished": finished})
    cmp = Comparison({"org": res}, acs.Goals(deadline_days=200))
    assert "ft unfinished in 20% of runs" in " ".join(cmp.recommendation.rationale)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    deadline=st.floats(1.0, 100.0),
    slo=st.floats(0.5, 1.0),
    wait=st.floats(0.0, 20.0),
    budget=st.floats(1.0, 1e7),
)
def test_prob_meets_all_is_at_most_the_least_likely_goal(
    seed: int, deadline: float, slo: float, wait: float, budget: float
) -> None:
    rng = np.random.default_rng(seed)
    res = mixed(
        **{
            "llm.time_to_train_days": rng.uniform(0.0, 120.0, N),
            "ft.time_to_train_days": rng.uniform(0.0, 120.0, N),
            "ft.finished": (rng.uniform(size=N) < 0.9).astype(float),
            "chat.slo_attainment": rng.uniform(0.4, 1.0, N),
            "research.mean_wait_hours": rng.exponential(5.0, N),
            "tco_usd": rng.uniform(0.0, 1e7, N),
        }
    )
    g = acs.Goals(
        deadline_days=deadline, slo_attainment=slo, max_wait_hours=wait, budget_usd=budget
    )
    p_all = prob_meets(res, g)
    singles = [prob_meets(res, g, name) for name in g.names]
    assert 0.0 <= p_all <= min(singles)
    # and a run meets all exactly when it meets each
    every = np.logical_and.reduce([meets(res, g, name) for name in g.names])
    np.testing.assert_array_equal(meets(res, g), every)


def test_compare_two_mixed_fleets_with_goals_end_to_end() -> None:
    """512 vs 256 chips: the goals' probabilities are the shares of runs read per workload;
    the larger fleet waits less."""
    busy = acs.JobStream(  # ~330 busy chips: the small fleet queues, the big one hardly
        interarrival_hours=acs.Exponential(mean=0.1),
        chips=acs.Choice(values=[4, 8, 16]),
        duration_hours=acs.LogNormal(low=1.0, high=8.0),
    )
    mix = [LLM, CHAT, busy]
    options = {"big": org(mix, 512, "big"), "small": org(mix, 256, "small")}
    g = acs.Goals(deadline_days=1.0, slo_attainment=0.9, max_wait_hours=1.0, confidence=0.5)
    with pytest.warns(OverloadWarning, match="small:research"):
        cmp = acs.compare(options, runs=4, seed=3, goals=g, progress=False)
    for name, res in cmp.results.items():
        ttt = res.samples("llm.time_to_train_days")
        deadline = (ttt <= 1.0) & (res.samples("llm.finished") != 0)
        slo = res.samples("chat.slo_attainment") >= 0.9
        wait = res.samples("research.mean_wait_hours") <= 1.0
        assert cmp.prob_meets(name, "deadline_days") == float(deadline.mean())
        assert cmp.prob_meets(name, "slo_attainment") == float(slo.mean())
        assert cmp.prob_meets(name, "max_wait_hours") == float(wait.mean())
        assert cmp.prob_meets(name) == float((deadline & slo & wait).mean())
        assert cmp.prob_meets(name) <= min(cmp.prob_meets(name, goal) for goal in g.names)
    # the small fleet's researchers wait: only the big one meets the wait limit
    assert cmp.prob_meets("big", "max_wait_hours") == 1.0
    assert cmp.prob_meets("small", "max_wait_hours") == 0.0
    assert cmp.recommendation.choice == "big"
    assert "0% (research P50" in cmp.goals_table()


MIX_YAML = """
name: {name}
fleet: [{{chip: h100-sxm, count: {chips}, provider: aws}}]
workloads:
  - {{kind: training, name: llm, params: 1e9, tokens: 2e10, chips: 64}}
  - kind: job_stream
    name: research
    interarrival_hours: {{dist: exponential, mean: 0.5}}
    chips: 4
    duration_hours: 2
horizon_days: 3
scheduler: priority_preemptive
"""


def test_the_cli_takes_goals_over_mixes_and_refuses_one_no_workload_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = []
    for name, chips in (("big", 256), ("small", 128)):
        path = tmp_path / f"{name}.yaml"
        path.write_text(MIX_YAML.format(name=name, chips=chips))
        paths.append(str(path))
    args = ["compare", *paths, "--runs", "2", "--seed", "1"]
    assert main([*args, "--slo-attainment", "0.9"]) == 2
    err = capsys.readouterr().err
    assert "--slo-attainment: goal 'slo_attainment' applies to the serving workloads" in err
    assert len(err.strip().splitlines()) == 1
    assert main([*args, "--deadline-days", "10", "--max-wait-hours", "5"]) == 0
    out = capsys.readouterr().out
    assert "(llm P90" in out
    assert "(research P90" in out
