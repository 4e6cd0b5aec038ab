"""Validation of a mix of workloads (``Scenario.workloads``): names, priorities, sizes."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

import accelsim as acs
from accelsim.scenario import workload_chips, workload_name, workload_priority

FLEET = [acs.Pool(chip="h100-sxm", count=256, provider="aws")]
TRAIN = acs.TrainingRun(params=7e9, tokens=1e11, chips=128)
SVC = acs.Serving(
    model="llama-3.1-8b",
    precision="fp8",
    rate_rps=20.0,
    input_tokens=1000,
    output_tokens=200,
    slo=acs.SLO(ttft_ms=2000, tpot_ms=100),
    chips_per_replica=1,
    chips=64,
    horizon_days=30,
)
STREAM = acs.JobStream(interarrival_hours=1.0, chips=4, duration_hours=2.0)


def mix(**kw: object) -> acs.Scenario:
    base: dict[str, object] = {
        "name": "org",
        "fleet": FLEET,
        "workloads": [TRAIN, SVC, STREAM],
        "horizon_days": 30,
    }
    base.update(kw)
    return acs.Scenario(**base)  # type: ignore[arg-type]


def test_a_mix_validates_and_round_trips_through_json() -> None:
    s = mix(scheduler="priority_preemptive")
    assert s.workload is None
    assert s.workload_kind == "mixed"
    assert [workload_name(w) for w in s.workloads or []] == ["training", "serving", "research"]
    again = acs.Scenario.model_validate_json(s.model_dump_json())
    assert again == s


def test_defaults_rank_serving_over_training_over_research() -> None:
    assert workload_priority(SVC) > workload_priority(TRAIN) > 0
    assert workload_priority(TRAIN.model_copy(update={"priority": -3})) == -3
    assert workload_chips(TRAIN, 256) == 128
    assert workload_chips(TRAIN.model_copy(update={"chips": None}), 256) == 256


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"workloads": [STREAM, STREAM]}, "both named 'research'"),
        ({"workload": TRAIN.model_copy(update={"chips": None})}, "not both"),
        ({"workloads": None}, "needs a workload"),
        ({"horizon_days": None}, "horizon_days is required with workloads"),
        ({"warmup_days": 1.0}, "warmup_days is not supported with workloads"),
        ({"background": STREAM}, "background is not supported"),
        ({"workloads": [TRAIN.model_copy(update={"chips": 512})]}, r"chips=512 exceeds"),
        ({"workloads": [TRAIN.model_copy(update={"priority": 4})]}, "priority schedulers"),
        ({"workloads": [SVC], "horizon_days": 10}, r"horizon_days \(30\) differs"),
        (
            {"workloads": [STREAM], "assumptions": acs.Assumptions(mfu=0.4)},
            r"assumptions.mfu does not apply here \(only a training workload reads it",
        ),
        (
            {"assumptions": acs.Assumptions(delay_usd_per_day=1e4)},
            "delay_usd_per_day does not apply here",
        ),
        (
            {"workloads": [SVC], "assumptions": acs.Assumptions(wait_usd_per_job_hour=5.0)},
            "wait_usd_per_job_hour does not apply",
        ),
        (
            {"assumptions": acs.Assumptions(spot_preemptions_per_hour=0.01)},
            "applies to spot pools",
        ),
        (
            {"workloads": [TRAIN.model_copy(update={"params": 1e13})]},
            r"workloads\[0\] \(training\): .*HBM",
        ),
        (
            {"workloads": [SVC.model_copy(update={"chips": 63, "chips_per_replica": 2})]},
            r"workloads\[0\] \(serving\).*whole replicas",
        ),
    ],
)
def test_bad_mixes_are_clear_errors(kw: dict[str, object], match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        mix(**kw)


@pytest.mark.parametrize(
    "work",
    [
        TRAIN,
        SVC.model_copy(update={"chips": None, "name": "chat"}),
        STREAM.model_copy(update={"name": "team-a"}),
    ],
)
def test_mix_fields_on_a_lone_workload_are_errors(work: object) -> None:
    with pytest.raises(ValidationError, match="applies to a workload in a mix"):
        acs.Scenario(name="s", workload=work, fleet=FLEET, horizon_days=30)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["a.b", "a b", "a,b", "a@b", "", "9lives"])
def test_names_that_would_break_metric_names_are_refused(bad: str) -> None:
    with pytest.raises(ValidationError, match="name"):
        acs.JobStream(interarrival_hours=1.0, chips=1, duration_hours=1.0, name=bad)


def test_a_stream_keeps_its_own_priority_and_chips_in_a_mix() -> None:
    """A stream's ``priority`` and ``chips`` are its jobs': they are not the mix fields."""
    s = mix(workloads=[STREAM.model_copy(update={"priority": 3})], scheduler="priority_preemptive")
    assert s.workloads is not None
    assert s.workloads[0].chips == 4


def test_assumptions_some_workload_reads_are_accepted() -> None:
    a = acs.Assumptions(mfu=0.4, wait_usd_per_job_hour=5.0, engineers=3.0)
    assert mix(assumptions=a).assumptions.mfu == 0.4


def test_an_endpoints_errors_in_a_mix_name_its_own_share_of_the_pool() -> None:
    """Its pool is its ``chips`` of the first pool: the message says so, not only "the
    pool's count (4)" of a 256-chip pool."""
    small = SVC.model_copy(update={"chips": 4, "chips_per_replica": 3})
    with pytest.raises(ValidationError, match=r"count \(4\).*its chips=4 of the first pool"):
        mix(workloads=[TRAIN, small])


def test_a_disaggregated_endpoint_in_a_mix_says_why_it_cannot_run_there() -> None:
    split = SVC.model_copy(
        update={
            "chips_per_replica": None,
            "disaggregated": acs.Disaggregation(
                prefill_chips_per_replica=1, decode_chips_per_replica=1
            ),
        }
    )
    two_pools = [*FLEET, acs.Pool(chip="h200", count=64, provider="aws")]
    with pytest.raises(ValidationError, match="needs a prefill and a decode pool"):
        mix(workloads=[TRAIN, split], fleet=two_pools)
