"""The mixed-fleet engine (``Scenario(workloads=[...])``): attribution, priorities, costs.

Tiny fleets and short horizons, so every test runs in seconds. Equalities with the
single-workload engines are run for run on the same seed (the mix draws every input and
every event from the same addressed streams), to rounding (sums taken in another order).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import accelsim as acs

NO_LEAD = {"lead_time_days": 0.0}
RESEARCH = acs.JobStream(
    interarrival_hours=acs.Exponential(mean=0.25),
    chips=acs.Choice(values=[1, 4, 8]),
    duration_hours=acs.LogNormal(low=1.0, high=12.0),
)
"""About 4 jobs/h x 4.3 chips x ~5 h: ~90 busy chips on average, most of a 128-chip pool."""


def endpoint(**kw: object) -> acs.Serving:
    base: dict[str, object] = {
        "model": "llama-3.1-8b",
        "precision": "fp8",
        "rate_rps": 60.0,
        "input_tokens": 1000,
        "output_tokens": 200,
        "slo": acs.SLO(ttft_ms=2000, tpot_ms=100),
        "chips_per_replica": 1,
        "scaling": "follow_demand",
        "daily_profile": [0.4] * 8 + [1.6] * 8 + [1.0] * 8,
        "horizon_days": 10,
    }
    base.update(kw)
    return acs.Serving(**base)  # type: ignore[arg-type]


def org(
    workloads: list[object], scheduler: str = "priority_preemptive", **kw: object
) -> acs.Scenario:
    base: dict[str, object] = {
        "name": "org",
        "fleet": [acs.Pool(chip="h100-sxm", count=128, provider="aws")],
        "workloads": workloads,
        "horizon_days": 10,
        "scheduler": scheduler,
        "assumptions": acs.Assumptions(),  # in service from day 0: no lead time applies
    }
    base.update(kw)
    return acs.Scenario(**base)  # type: ignore[arg-type]


TRAIN = acs.TrainingRun(params=1e9, tokens=2e10, chips=64, name="llm")


@pytest.fixture(scope="module")
def mixed() -> acs.Result:
    return acs.simulate(org([TRAIN, endpoint(), RESEARCH]), runs=6, seed=5)


def test_every_chip_hour_is_attributed_once(mixed: acs.Result) -> None:
    """The workloads' chip-hours (integrated per attempt) add up to the cluster's own busy
    integral, and with the idle chip-hours to the held fleet: 128 chips x 240 h."""
    held = sum(mixed.samples(f"chip_hours.{n}") for n in ("llm", "serving", "research"))
    np.testing.assert_allclose(held, mixed.samples("chip_hours"), rtol=1e-12)
    np.testing.assert_allclose(held, mixed.samples("allocated_chip_hours"), rtol=1e-9)
    np.testing.assert_allclose(held + mixed.samples("idle_chip_hours"), 128 * 240.0, rtol=1e-12)
    assert (mixed.samples("chip_hours.research") > 0).all()


def test_chargeback_sums_to_the_fleet_cost(mixed: acs.Result) -> None:
    cost = mixed.samples("hardware_cost_usd") + mixed.samples("energy_cost_usd")
    charged = sum(mixed.samples(f"chargeback_usd.{n}") for n in ("llm", "serving", "research"))
    np.testing.assert_allclose(charged + mixed.samples("unattributed_usd"), cost, rtol=1e-12)
    share = mixed.samples("chargeback_usd.research") / cost
    np.testing.assert_allclose(
        share, mixed.samples("chip_hours.research") / mixed.samples("chip_hours"), rtol=1e-12
    )
    tco = cost + mixed.samples("wait_cost_usd") + mixed.samples("engineering_cost_usd")
    np.testing.assert_allclose(mixed.samples("tco_usd"), tco, rtol=1e-12)


def test_every_metric_is_finite(mixed: acs.Result) -> None:
    for m in mixed.metrics:
        assert np.isfinite(mixed.samples(m)).all(), m


def test_under_priority_preemptive_higher_priorities_never_wait(mixed: acs.Result) -> None:
    """The endpoint (2) evicts research (0) for every replica its plan asks for, so it holds
    exactly the plan and meets its SLO as the fast path would; the training run (1) evicts
    research too and never queues; the evicted research jobs pay lost work."""
    np.testing.assert_allclose(
        mixed.samples("serving.replicas_mean"),
        mixed.samples("serving.replicas_planned_mean"),
        rtol=1e-9,
    )
    np.testing.assert_array_equal(mixed.samples("llm.queue_wait_days"), 0.0)
    np.testing.assert_array_equal(mixed.samples("llm.finished"), 1.0)
    assert mixed.samples("research.interruptions").sum() > 0
    assert mixed.samples("research.lost_chip_hours").sum() > 0


def test_under_priority_no_lower_priority_job_starts_while_a_higher_one_waits() -> None:
    """Non-preemptive priority: a job starts only when no job of higher priority is waiting
    (gang jobs in priority order, the first that does not fit blocks the rest)."""
    s = org([TRAIN, endpoint(), RESEARCH], scheduler="priority")
    res = acs.simulate(s, runs=2, seed=9, keep_jobs=True)
    jobs = res.extras["jobs"]
    for run in range(2):
        j = jobs[jobs["run"] == run]
        start = np.where(np.isfinite(j["first_start_hours"]), j["first_start_hours"], np.inf)
        high = j["priority"][:, None] > j["priority"][None, :]  # row outranks column
        inside = (start[None, :] > j["submit_hours"][:, None]) & (start[None, :] < start[:, None])
        assert not (high & inside).any()
        assert (start[j["priority"] == 0] > j["submit_hours"][j["priority"] == 0]).any()


def test_a_fifo_queue_makes_the_endpoint_wait_and_its_attainment_fall() -> None:
    """Under fifo the replicas queue behind research jobs submitted before them: they hold
    fewer replicas than the plan, so fewer windows meet the SLO than under preemption."""
    heavy = RESEARCH.model_copy(update={"interarrival_hours": acs.Exponential(mean=0.17)})
    pre = acs.simulate(org([endpoint(), heavy]), runs=4, seed=2)
    fifo = acs.simulate(org([endpoint(), heavy], scheduler="fifo"), runs=4, seed=2)
    assert (fifo.samples("serving.replicas_mean") < pre.samples("serving.replicas_mean")).all()
    assert fifo.mean("serving.slo_attainment") < pre.mean("serving.slo_attainment")
    np.testing.assert_allclose(pre.samples("serving.slo_attainment"), 1.0)


def test_serving_that_cannot_evict_training_loses_attainment() -> None:
    """A training run of higher priority (not preemptible) holds the whole pool from its
    submission: the endpoint gets no replica until it ends, and those hours fail the SLO."""
    train = TRAIN.model_copy(update={"chips": 128, "priority": 5, "tokens": 1e11})
    s = org(
        [train, endpoint(chips=128)],
        assumptions=acs.Assumptions(optimization_hours=1.0, porting_hours=0.0),
    )
    res = acs.simulate(s, runs=3, seed=4)
    planned = res.samples("serving.replicas_planned_mean")
    assert (res.samples("serving.replicas_mean") < planned).all()
    assert (res.samples("serving.slo_attainment") < 0.95).all()
    assert (res.samples("serving.requests_dropped") > 0).all()


def test_one_stream_equals_the_stream_scenario_run_for_run() -> None:
    alone = org([RESEARCH], scheduler="fifo").model_dump()
    # alone, the fleet is acquired for the stream: a lead time of 0 matches the mix's fleet
    # in service from day 0
    alone |= {"workload": alone.pop("workloads")[0], "assumptions": NO_LEAD}
    stream = acs.Scenario.model_validate(alone)
    a = acs.simulate(stream, runs=4, seed=3)
    b = acs.simulate(org([RESEARCH], scheduler="fifo"), runs=4, seed=3)
    for m in ("jobs_completed", "mean_wait_hours", "p95_wait_hours", "mean_jct_hours"):
        np.testing.assert_allclose(b.samples(f"research.{m}"), a.samples(m), rtol=1e-9)
    for m in ("hardware_cost_usd", "tco_usd", "energy_kwh"):
        np.testing.assert_allclose(b.samples(m), a.samples(m), rtol=1e-9)
    np.testing.assert_allclose(b.samples("utilization"), a.samples("utilization"), rtol=1e-9)


def test_one_training_run_equals_the_hero_run_for_run() -> None:
    """The mix's training job is the hero's: same physics, submission, failure model and
    event streams (failures on, so interruptions are exercised)."""
    a = acs.Assumptions(failure_rate_per_chip_hour=2e-3, restart_hours=0.5)
    run = acs.TrainingRun(params=1e9, tokens=2e10)
    pool = acs.Pool(chip="h100-sxm", count=128, provider="aws")
    lone = a.model_copy(update=NO_LEAD)  # acquired: no lead, as the mix's fleet in service
    hero = acs.Scenario(name="h", workload=run, fleet=[pool], assumptions=lone)
    h = acs.simulate(hero, runs=6, seed=8, engine="des")
    m = acs.simulate(org([run], scheduler="fifo", assumptions=a), runs=6, seed=8)
    assert h.samples("finished").all()
    assert m.samples("training.finished").all()
    assert m.samples("training.interruptions").sum() > 0
    for metric in ("time_to_train_days", "training_days", "interruptions", "mfu"):
        np.testing.assert_allclose(m.samples(f"training.{metric}"), h.samples(metric), rtol=1e-9)


@pytest.mark.parametrize("scaling", ["fixed", "follow_demand"])
def test_an_endpoint_alone_matches_the_serving_fast_path(scaling: str) -> None:
    """Alone on its pool the endpoint holds every replica of its plan, so the per-window
    function gives the fast path's figures."""
    kw = {} if scaling == "follow_demand" else {"scaling": "fixed", "chips": 8}
    svc = endpoint(**kw)
    mix = acs.simulate(org([svc]), runs=4, seed=6)
    pool = acs.Pool(chip="h100-sxm", count=128 if scaling == "follow_demand" else 8, provider="aws")
    lone = acs.Scenario(
        name="s",
        workload=svc.model_copy(update={"chips": None}),
        fleet=[pool],
        assumptions=acs.Assumptions(**NO_LEAD),
    )  # type: ignore[arg-type]
    fast = acs.simulate(lone, runs=4, seed=6)
    for m in ("slo_attainment", "replicas_mean", "ttft_p99_ms", "tpot_p50_ms", "utilization"):
        np.testing.assert_allclose(mix.samples(f"serving.{m}"), fast.samples(m), rtol=1e-9)


def test_the_analytic_engine_refuses_a_mix() -> None:
    with pytest.raises(ValueError, match="only the DES engine runs"):
        acs.simulate(org([RESEARCH]), runs=1, seed=0, engine="analytic")


def test_a_training_run_submitted_after_the_horizon_is_unfinished_and_holds_nothing() -> None:
    """Porting and optimisation outlast the 10-day horizon: the job never reaches the
    cluster, so it is unfinished, censored at the horizon, with no chip-hours and no
    interruptions (not the analytic engine's count extrapolated to the run's own horizon)."""
    a = acs.Assumptions(optimization_hours=5000.0, engineers=1.0)
    res = acs.simulate(org([TRAIN, RESEARCH], assumptions=a), runs=3, seed=1)
    np.testing.assert_array_equal(res.samples("llm.finished"), 0.0)
    np.testing.assert_array_equal(res.samples("llm.time_to_train_days"), 10.0)
    np.testing.assert_array_equal(res.samples("llm.interruptions"), 0.0)
    np.testing.assert_array_equal(res.samples("chip_hours.llm"), 0.0)
    np.testing.assert_array_equal(res.samples("finished"), 0.0)


def test_a_traces_user_column_gives_per_team_metrics(tmp_path: Path) -> None:
    """Each team's chip-hours, chargeback and jobs add up to its trace's; a team whose jobs
    all wait behind another's has the larger mean wait."""
    # team "a/1" (a slash: read as a_1 in metric names) and team b, alternating
    rows = [
        f"{j * 1800},{8 if j % 2 else 2},{3 * 3600},{'a/1' if j % 2 else 'b'}" for j in range(40)
    ]
    lines = ["submit,chips,duration,user", *rows]
    path = tmp_path / "t.csv"
    path.write_text("\n".join(lines) + "\n")
    trace = acs.Trace(path=str(path), columns={"user": "user"}, name="lab")
    res = acs.simulate(
        org(
            [trace, endpoint(chips=16)], fleet=[acs.Pool(chip="h100-sxm", count=24, provider="aws")]
        ),
        runs=2,
        seed=1,
    )
    for m in ("chip_hours", "chargeback_usd"):
        np.testing.assert_allclose(
            res.samples(f"{m}.lab.a_1") + res.samples(f"{m}.lab.b"),
            res.samples(f"{m}.lab"),
            rtol=1e-12,
        )
    np.testing.assert_array_equal(
        res.samples("lab.a_1.jobs_arrived") + res.samples("lab.b.jobs_arrived"),
        res.samples("lab.jobs_arrived"),
    )
    np.testing.assert_array_equal(res.samples("lab.a_1.jobs_arrived"), 20.0)
    # team a's jobs are 4x larger: about 4x the chip-hours of team b's
    ratio = res.samples("chip_hours.lab.a_1") / res.samples("chip_hours.lab.b")
    assert ((ratio > 3.0) & (ratio < 5.0)).all()


def test_a_mix_is_checked_before_any_run() -> None:
    """simulate() refuses a mix's stream over the job cap before simulating, naming it, and
    warns of an overloaded stream once, in the caller's process."""
    busy = RESEARCH.model_copy(update={"interarrival_hours": acs.Exponential(mean=0.1)})
    with pytest.warns(acs.engines.OverloadWarning, match="org:research"):
        acs.simulate(org([busy], horizon_days=1), runs=1, seed=0)
    flood = RESEARCH.model_copy(update={"interarrival_hours": 1e-3})
    with pytest.raises(acs.AccelsimError, match=r"org:research.*above the cap"):
        acs.simulate(org([flood], horizon_days=1000), runs=1, seed=0)


def test_the_reports_cost_table_counts_each_line_once(mixed: acs.Result) -> None:
    """A workload's engineering (``llm.engineering_cost_usd``) is part of the fleet's
    engineering line: the cost table lists the fleet's lines only, which sum to the TCO."""
    from accelsim.report._tables import cost_grid

    grid = cost_grid({"org": mixed})
    assert grid is not None
    labels = [row[0].main for row in grid.rows]
    assert not any("." in label for label in labels), labels
    assert "engineering" in labels
