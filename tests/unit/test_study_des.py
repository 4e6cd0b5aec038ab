"""simulate() on shared clusters: job streams and traces through the DES engine."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

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
        "assumptions": acs.Assumptions(lead_time_days=0.0),
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
    s = stream_scenario(fleet=[acs.Pool(chip="tpu-v5p", count=16, provider="gcp")])
    with pytest.raises(ValueError, match="without a port"):
        acs.simulate(s, runs=2, seed=1)


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


def test_training_run_in_des_is_a_clear_error() -> None:
    s = acs.Scenario(
        name="two-pools",
        workload=acs.TrainingRun(params=7e9, tokens=1e11),
        fleet=[
            acs.Pool(chip="h100-sxm", count=64, provider="aws"),
            acs.Pool(chip="a100-80gb", count=64, provider="aws"),
        ],
    )
    with pytest.raises(acs.AccelsimError, match="not supported yet"):
        acs.simulate(s, runs=2, seed=1)
