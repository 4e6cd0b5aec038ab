"""One rule of when a fleet exists (issue 32 item 4), applied to every workload on it.

A fleet that already runs other work (a background, or the other workloads of a mix) is in
service from day 0: no workload on it waits for a capacity lead time, and setting one is an
error. A fleet acquired for one workload is available at the end of its lead time. Every
result states which.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

import accelsim as acs
from accelsim.cli import main
from accelsim.scenario import FLEET_ACQUIRED, FLEET_IN_SERVICE, fleet_available, fleet_in_service

POOL = acs.Pool(chip="h100-sxm", count=64, provider="aws")
RUN = acs.TrainingRun(params=1e9, tokens=2e10)
QUIET = acs.JobStream(interarrival_hours=12.0, chips=1, duration_hours=1.0)


def shared(**assumptions: float) -> acs.Scenario:
    return acs.Scenario(
        name="shared",
        workload=RUN,
        fleet=[POOL],
        background=QUIET,
        horizon_days=20,
        warmup_days=1,
        assumptions=acs.Assumptions(**assumptions),
    )


def test_a_lead_time_on_a_fleet_in_service_is_an_error_naming_the_rule() -> None:
    with pytest.raises(ValidationError, match="runs a background, so it is in service from day 0"):
        shared(lead_time_days=30.0)
    mix = {
        "name": "org",
        "fleet": [acs.Pool(chip="h100-sxm", count=256, provider="aws")],
        "workloads": [acs.TrainingRun(params=7e9, tokens=1e11, chips=128), QUIET],
        "horizon_days": 30,
    }
    with pytest.raises(ValidationError, match="in service from day 0"):
        acs.Scenario(**mix, assumptions=acs.Assumptions(lead_time_days=30.0))  # type: ignore[arg-type]


def test_a_run_sharing_a_fleet_waits_for_no_lead_time() -> None:
    """The default lead-time prior of an on-demand pool is days to months; on a fleet that
    runs a background the run is submitted after its porting alone (lead time 0), so its
    time to train is preparation + queue wait + training."""
    res = acs.simulate(shared(), runs=8, seed=2, progress=False)
    np.testing.assert_array_equal(res.samples("lead_time_days"), 0.0)
    np.testing.assert_allclose(
        res.samples("time_to_train_days"),
        res.samples("preparation_days")
        + res.samples("queue_wait_days")
        + res.samples("training_days"),
        rtol=1e-12,
    )
    alone = acs.simulate(
        shared().replace({"background": None, "horizon_days": None, "warmup_days": 0.0}),
        runs=8,
        seed=2,
        progress=False,
    )
    assert float(alone.samples("lead_time_days").min()) > 0.0  # acquired: it waits


def test_every_result_states_when_its_fleet_exists() -> None:
    in_service = acs.simulate(shared(), runs=2, seed=1, progress=False)
    assert fleet_in_service(shared())
    assert in_service.extras["fleet_available"] == fleet_available(shared())
    assert in_service.extras["fleet_available"] == FLEET_IN_SERVICE
    assert "in service from day 0" in in_service.summary()
    lone = acs.Scenario(name="lone", workload=RUN, fleet=[POOL])
    assert not fleet_in_service(lone)
    result = acs.simulate(lone, runs=2, seed=1, progress=False)
    assert result.extras["fleet_available"] == FLEET_ACQUIRED
    assert "end of its capacity lead time" in result.summary()


def test_the_cli_states_when_the_fleet_exists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "shared.json"
    scenario.write_text(shared().model_dump_json(), encoding="utf-8")
    assert main(["run", str(scenario), "--runs", "2"]) == 0
    assert f"fleet: {FLEET_IN_SERVICE}" in capsys.readouterr().out
    assert main(["run", str(scenario), "--runs", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["fleet_available"] == FLEET_IN_SERVICE
