"""simulate() on shared clusters: job streams, traces and a hero run through the DES engine."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.stats import ks_2samp

import accelsim as acs


def stream_scenario(**kw: object) -> acs.Scenario:
    base: dict[str, object] = {
        "name": "stream",
        "workload": acs.JobStream(
            interarrival_hours=acs.Exponential(mean=1.0),
            chips=acs.Choice(values=[1, 2, 8]),
            duration_hours=acs.LogNormal(low=0.5, high=8.0),
        ),
        "fleet": [acs.Pool(chip="h100-sxm", count=16, provider="aws")],
        "horizon_days": 10,
        "warmup_days": 1,
        "scheduler": "backfill",
        # fixed prices: rent is chips x horizon x the offer's price
        "assumptions": acs.Assumptions(lead_time_days=0.0, price_change_per_year=0.0),
    }
    base.update(kw)
    return acs.Scenario(**base)  # type: ignore[arg-type]


def test_auto_picks_des_for_a_stream_and_accounts_for_every_job() -> None:
    res = acs.simulate(stream_scenario(), runs=3, seed=2)
    assert res.engine == "des"
    arrived = res.samples("jobs_arrived")
    accounted = (
        res.samples("jobs_completed")
        + res.samples("jobs_running_at_horizon")
        + res.samples("jobs_queued_at_horizon")
    )
    np.testing.assert_array_equal(arrived, accounted)
    u = res.samples("utilization")
    assert ((u >= 0) & (u <= 1)).all()
    assert (res.samples("goodput") <= u + 1e-12).all()


def test_a_held_cloud_fleet_pays_every_held_hour() -> None:
    """Rent of a shared on-demand fleet = chips × horizon × price, busy or idle."""
    res = acs.simulate(stream_scenario(), runs=2, seed=3)
    rate = acs.catalog.price("h100-sxm", provider="aws").usd_per_chip_hour
    assert rate is not None
    np.testing.assert_allclose(res.samples("hardware_cost_usd"), 16 * 240 * rate, rtol=1e-12)


def test_same_seed_same_des_result() -> None:
    a = acs.simulate(stream_scenario(), runs=2, seed=5)
    b = acs.simulate(stream_scenario(), runs=2, seed=5)
    for m in a.metrics:
        np.testing.assert_array_equal(a.samples(m), b.samples(m))


def test_jobs_that_need_a_port_do_not_run_on_tpu_pools() -> None:
    # refused at the boundary (issue 15), so `accelsim validate` says it too
    with pytest.raises(ValueError, match="without a port"):
        stream_scenario(fleet=[acs.Pool(chip="tpu-v5p", count=16, provider="gcp")])


def test_trace_replay(tmp_path: Path) -> None:
    trace = tmp_path / "jobs.csv"
    trace.write_text(
        "submit,chips,duration\n0,4,3600\n600,8,7200\n1200,16,1800\n", encoding="utf-8"
    )
    s = stream_scenario(
        workload=acs.Trace(path=str(trace)),
        horizon_days=2,
        warmup_days=0,
        assumptions=acs.Assumptions(lead_time_days=0.0, failure_rate_per_chip_hour=0.0),
    )
    res = acs.simulate(s, runs=2, seed=1)
    np.testing.assert_array_equal(res.samples("jobs_completed"), [3, 3])


def hero_scenario(
    background: acs.JobStream | acs.Trace | None = None, **kw: object
) -> acs.Scenario:
    """A 7B run on a 64-chip on-prem pool (about two days of compute), no lead time (a run
    alone: set to 0; with a background the fleet is in service, so none applies); with a
    background, measured over 60 days after a 5-day warm-up (a run alone has no window)."""
    lead = {} if background is not None else {"lead_time_days": 0.0}
    base: dict[str, object] = {
        "name": "hero",
        "workload": acs.TrainingRun(params=7e9, tokens=1e11),
        "fleet": [acs.Pool(chip="h100-sxm", count=64, provider="on_prem", pricing="on_prem")],
        "background": background,
        "assumptions": acs.Assumptions(failure_rate_per_chip_hour=0.0, **lead),
    }
    if background is not None:
        base |= {"horizon_days": 60, "warmup_days": 5}
    base.update(kw)
    return acs.Scenario(**base)  # type: ignore[arg-type]


# Load about 0.9 of the 64 chips: 0.5 jobs/h x 12 chips x ~9.6 h mean duration (the mean of
# a lognormal with 90% interval 2-24 h) / 64 chips.
HEAVY = acs.JobStream(
    interarrival_hours=acs.Exponential(mean=2.0),
    chips=acs.Choice(values=[8, 16]),
    duration_hours=acs.LogNormal(low=2.0, high=24.0),
)
# One arrival every 10^6 h: none within the horizon.
EMPTY = acs.JobStream(interarrival_hours=1e6, chips=1, duration_hours=1.0)


def test_a_busy_background_delays_the_hero_run_by_run() -> None:
    """Paired runs (same seed, same draws): with no failures a started gang job runs to its
    end under fifo, so training_days is identical and time_to_train differs only by the
    queue wait, which is >= 0 by construction. Under fifo the hero needs all 64 chips, so it
    waits for every job ahead of it to end; at load 0.9 the mean wait is about a day, far
    above the 6 h asserted."""
    alone = acs.simulate(hero_scenario(), runs=8, seed=11, engine="des")
    shared = acs.simulate(hero_scenario(HEAVY), runs=8, seed=11)
    assert shared.engine == "des"
    np.testing.assert_array_equal(alone.samples("queue_wait_days"), 0.0)
    np.testing.assert_allclose(
        shared.samples("training_days"), alone.samples("training_days"), rtol=1e-12
    )
    queue = shared.samples("queue_wait_days")
    assert (queue >= 0).all()
    np.testing.assert_allclose(
        shared.samples("time_to_train_days"),
        alone.samples("time_to_train_days") + queue,
        rtol=1e-12,
    )
    np.testing.assert_allclose(
        shared.samples("wait_days"), alone.samples("wait_days") + queue, rtol=1e-12
    )
    assert queue.mean() > 0.25
    assert shared.mean("utilization") > 0.7  # the background does keep the pool busy


def test_the_hero_outranks_the_background_under_priority_preemptive() -> None:
    """The hero has priority 1 and the background 0: it evicts what runs on its pool and
    starts at once (its pool has hot spares, so every chip is up)."""
    res = acs.simulate(hero_scenario(HEAVY, scheduler="priority_preemptive"), runs=4, seed=3)
    np.testing.assert_array_equal(res.samples("queue_wait_days"), 0.0)


def test_with_an_empty_background_training_matches_the_analytic_engine() -> None:
    """Independent seeds, so a two-sample KS p-value is uniform when the engines agree: p >
    0.01 fails a correct pair one time in a hundred (the seeds are fixed). About 3
    interruptions per run (64 chips x 1e-3 /h x ~46 h), so failures are exercised. The
    optimisation hours are fixed and short: with the prior's, a slow team's preparation can
    outlast the 30-day horizon, and the hero never arrives in that run."""
    a = acs.Assumptions(failure_rate_per_chip_hour=1e-3, restart_hours=0.5, optimization_hours=20.0)
    s = hero_scenario(EMPTY, horizon_days=30, warmup_days=0, assumptions=a)
    des = acs.simulate(s, runs=500, seed=21)
    # valid only together; alone, the fleet is acquired: a lead time of 0 as in service
    alone = s.replace(
        {
            "background": None,
            "horizon_days": None,
            "assumptions": a.model_copy(update={"lead_time_days": 0.0}),
        }
    )
    analytic = acs.simulate(alone, runs=500, seed=22)
    assert analytic.engine == "analytic"
    np.testing.assert_array_equal(des.samples("jobs_arrived"), 1.0)  # the hero alone
    np.testing.assert_array_equal(des.samples("queue_wait_days"), 0.0)
    assert des.mean("interruptions") > 1.5
    for metric in ("training_days", "time_to_train_days", "tco_usd"):
        assert ks_2samp(des.samples(metric), analytic.samples(metric)).pvalue > 0.01, metric


def test_a_training_run_on_two_pools_runs_on_the_first() -> None:
    """With no failures, training on the first of two pools takes exactly what the analytic
    engine gives on that pool alone (same draws: the second pool adds none the run uses)."""
    a = acs.Assumptions(lead_time_days=0.0, failure_rate_per_chip_hour=0.0)
    one = acs.Scenario(
        name="one",
        workload=acs.TrainingRun(params=7e9, tokens=1e11),
        fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")],
        assumptions=a,
    )
    two = one.replace(
        "fleet", [*one.model_dump()["fleet"], {"chip": "a100-80gb", "count": 64, "provider": "aws"}]
    )
    res = acs.simulate(two, runs=4, seed=5, keep_jobs=True)
    ref = acs.simulate(one, runs=4, seed=5)
    assert res.engine == "des"
    assert ref.engine == "analytic"
    np.testing.assert_allclose(res.samples("training_days"), ref.samples("training_days"))
    jobs = res.extras["jobs"]
    assert len(jobs) == 4
    for field, value in (("job_id", 0), ("pool", 0), ("chips", 64), ("priority", 1)):
        np.testing.assert_array_equal(jobs[field], value)


def test_keep_jobs_returns_one_record_per_arrived_job() -> None:
    for s in (stream_scenario(), hero_scenario(HEAVY, horizon_days=20)):
        res = acs.simulate(s, runs=3, seed=4, keep_jobs=True)
        jobs = res.extras["jobs"]
        per_run = np.bincount(jobs["run"], minlength=3)
        np.testing.assert_array_equal(per_run, res.samples("jobs_arrived"))
        done = np.isfinite(jobs["end_hours"])
        np.testing.assert_array_equal(
            np.bincount(jobs["run"][done], minlength=3), res.samples("jobs_completed")
        )


def test_background_trace_job_ids_follow_the_hero(tmp_path: Path) -> None:
    """The trace's first job holds all 64 chips from time 0 to 36 h. The hero's decision is
    at the end of a one-day warm-up (no lead time: the fleet runs the trace), so it is
    submitted at 24 h or later (later if porting takes longer) and, needing the whole pool,
    cannot start before 36 h."""
    trace = tmp_path / "jobs.csv"
    trace.write_text("submit,chips,duration\n0,64,129600\n600,8,7200\n", encoding="utf-8")
    a = acs.Assumptions(failure_rate_per_chip_hour=0.0)
    s = hero_scenario(acs.Trace(path=str(trace)), horizon_days=10, warmup_days=1, assumptions=a)
    res = acs.simulate(s, runs=2, seed=1, keep_jobs=True)
    jobs = res.extras["jobs"]
    np.testing.assert_array_equal(jobs["job_id"], [0, 1, 2, 0, 1, 2])
    hero = jobs[jobs["job_id"] == 0]
    assert (hero["submit_hours"] >= 24.0).all()
    assert (hero["first_start_hours"] >= 36.0).all()
    np.testing.assert_allclose(
        res.samples("queue_wait_days"),
        (hero["first_start_hours"] - hero["submit_hours"]) / 24.0,
        rtol=1e-12,
    )


def test_time_series_bins_cover_the_horizon_and_match_utilization() -> None:
    """Bins integrate the levels exactly, so busy / up over the bins after the warm-up (one
    whole day here) reproduces the utilisation metric to rounding."""
    res = acs.simulate(stream_scenario(), runs=2, seed=6, utilization_resolution_hours=24.0)
    series = res.extras["series"]
    assert series["start_hours"].shape == (10,)
    assert series["busy_chips"].shape == (2, 10, 1)
    assert series["queued_jobs"].shape == (2, 10)
    busy = series["busy_chips"][:, 1:, 0].sum(axis=1)
    up = series["up_chips"][:, 1:, 0].sum(axis=1)
    np.testing.assert_allclose(busy / up, res.samples("utilization"), rtol=1e-9)
    odd = acs.simulate(stream_scenario(), runs=2, seed=6, utilization_resolution_hours=7.0)
    assert odd.extras["series"]["utilization"].shape == (2, 35, 1)  # ceil(240 / 7)


def test_des_only_options_on_the_analytic_engine_are_clear_errors() -> None:
    s = hero_scenario()
    with pytest.raises(ValueError, match="keep_jobs needs the DES engine"):
        acs.simulate(s, runs=2, seed=1, engine="analytic", keep_jobs=True)
    # a run alone has no window (horizon_days), so no series over one on either engine
    with pytest.raises(ValueError, match="needs a horizon"):
        acs.simulate(s, runs=2, seed=1, engine="analytic", utilization_resolution_hours=1.0)
    with pytest.raises(ValueError, match="analytic engine runs one training run"):
        acs.simulate(hero_scenario(HEAVY), runs=2, seed=1, engine="analytic")
    assert acs.simulate(s, runs=2, seed=1, keep_jobs=True).engine == "des"
    # without keep_jobs or a series the DES keeps nothing per job, only the prices it used
    # and when the fleet exists
    kept = set(acs.simulate(s, runs=2, seed=1).extras)
    assert kept <= {"prices_used", "oldest_price_as_of", "fleet_available"}
    with pytest.raises(ValueError, match="needs a horizon"):
        acs.simulate(s, runs=2, seed=1, utilization_resolution_hours=1.0)


def test_a_hero_that_outlasts_the_horizon_is_replayed_to_its_end() -> None:
    """The horizon (6 d) ends about a day after the hero's submission (5 d), before it can
    finish (about 2 d of compute plus its wait). The replay with a wider horizon draws the
    same events, so the hero's times equal those of a run whose horizon (60 d) covers it;
    the window's records still show it unfinished at 6 d."""
    short = acs.simulate(hero_scenario(HEAVY, horizon_days=6), runs=3, seed=9, keep_jobs=True)
    long = acs.simulate(hero_scenario(HEAVY, horizon_days=60), runs=3, seed=9)
    for metric in ("queue_wait_days", "training_days", "time_to_train_days"):
        np.testing.assert_array_equal(short.samples(metric), long.samples(metric))
    assert np.isfinite(short.samples("time_to_train_days")).all()
    hero = short.extras["jobs"][short.extras["jobs"]["job_id"] == 0]
    assert np.isnan(hero["end_hours"]).all()


def test_whole_domain_jobs_get_valid_tpu_slices() -> None:
    """A 20-chip job on TPU v5p holds a 32-chip slice (2x4x4), never the 8,960-chip pod."""
    s = acs.Scenario(
        name="tpu-slices",
        workload=acs.JobStream(
            interarrival_hours=acs.Exponential(mean=2.0),
            chips=20,
            duration_hours=1.0,
            framework="jax",
            whole_domains=True,
        ),
        fleet=[acs.Pool(chip="tpu-v5p", count=128, provider="gcp")],
        horizon_days=2,
        assumptions=acs.Assumptions(lead_time_days=0.0, failure_rate_per_chip_hour=0.0),
    )
    res = acs.simulate(s, runs=2, seed=1, keep_jobs=True)
    jobs = res.extras["jobs"]
    started = jobs[jobs["pool"] >= 0]
    assert len(started) > 0
    assert set(started["allocated_chips"].tolist()) == {32}


def test_a_framework_mix_sends_each_job_to_pools_it_fits() -> None:
    """PyTorch jobs never run on the TPU pool; JAX jobs may run on either."""
    s = stream_scenario(
        workload=acs.JobStream(
            interarrival_hours=acs.Exponential(mean=0.5),
            chips=acs.Choice(values=[1, 4]),
            duration_hours=acs.LogNormal(low=0.5, high=4.0),
            framework={"pytorch": 0.5, "jax": 0.5},
        ),
        fleet=[
            acs.Pool(chip="tpu-v5p", count=16, provider="gcp"),
            acs.Pool(chip="h100-sxm", count=16, provider="aws"),
        ],
        scheduler="fifo",
    )
    res = acs.simulate(s, runs=2, seed=4, keep_jobs=True)
    jobs = res.extras["jobs"]
    on_tpu = jobs[jobs["pool"] == 0]
    assert len(on_tpu) > 0  # JAX jobs use the TPU pool
    assert len(jobs[jobs["pool"] == 1]) > 0
    only_pytorch = s.replace("workload.framework", "pytorch")
    jobs = acs.simulate(only_pytorch, runs=2, seed=4, keep_jobs=True).extras["jobs"]
    assert len(jobs[jobs["pool"] == 0]) == 0  # never on the TPU pool without a port
    assert len(jobs[jobs["pool"] == 1]) > 0


def test_bad_framework_weights_are_rejected() -> None:
    with pytest.raises(ValueError, match="framework weights"):
        acs.JobStream(
            interarrival_hours=1.0, chips=1, duration_hours=1.0, framework={"pytorch": 0.0}
        )


def test_trace_chip_types_pin_jobs_to_pools(tmp_path: Path) -> None:
    trace = tmp_path / "typed.csv"
    trace.write_text(
        "submit,chips,duration,gpu\n0,4,3600,A100\n0,4,3600,H100\n60,4,3600,H100\n",
        encoding="utf-8",
    )
    s = stream_scenario(
        workload=acs.Trace(
            path=str(trace),
            columns={"chip_type": "gpu"},
            chip_types={"A100": "a100-80gb", "H100": "h100-sxm"},
        ),
        fleet=[
            acs.Pool(chip="h100-sxm", count=8, provider="aws"),
            acs.Pool(chip="a100-80gb", count=8, provider="aws"),
        ],
        horizon_days=1,
        warmup_days=0,
        assumptions=acs.Assumptions(lead_time_days=0.0, failure_rate_per_chip_hour=0.0),
    )
    res = acs.simulate(s, runs=2, seed=1, keep_jobs=True)
    jobs = res.extras["jobs"]
    first_run = jobs[jobs["run"] == 0]
    assert first_run["pool"].tolist() == [1, 0, 0]
