"""Serving scenarios: every bad input of issue 13 is a clear boundary error naming the limit."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import ValidationError

import accelsim as acs


def _serving(**changes: Any) -> acs.Serving:
    kw: dict[str, Any] = {
        "model": "llama-3.1-70b",
        "precision": "fp8",
        "rate_rps": 50.0,
        "input_tokens": 1000,
        "output_tokens": 200,
        "slo": acs.SLO(ttft_ms=2000, tpot_ms=100),
        "chips_per_replica": 4,
    }
    kw.update(changes)
    return acs.Serving(**kw)


def _scenario(chip: str = "h100-sxm", count: int = 16, **changes: Any) -> acs.Scenario:
    provider = "gcp" if chip.startswith("tpu") else "aws"
    return acs.Scenario(
        name="s",
        workload=_serving(**changes),
        fleet=[acs.Pool(chip=chip, count=count, provider=provider)],
    )


def test_a_valid_scenario_round_trips_through_json() -> None:
    s = _scenario()
    again = acs.Scenario.model_validate_json(s.model_dump_json())
    assert again == s


def test_unknown_preset_lists_close_ids() -> None:
    with pytest.raises(ValidationError, match=r"did you mean 'llama-3\.1-70b'"):
        _serving(model="llama-3.1-71b")


def test_preset_and_explicit_architecture_conflict() -> None:
    with pytest.raises(ValidationError, match="not both"):
        _serving(params=70e9)


def test_explicit_architecture_names_what_is_missing() -> None:
    with pytest.raises(ValidationError, match="missing kv_heads, head_dim"):
        _serving(model=None, params=8e9, layers=32, d_model=4096)


def test_weights_that_do_not_fit_name_the_memory_limit() -> None:
    with pytest.raises(
        ValidationError, match=r"do not fit a replica of 1 x h100-sxm: HBM 85\.9 GB"
    ):
        _scenario(precision="bf16", chips_per_replica=1)


@pytest.mark.parametrize(
    ("chip", "count", "model", "size", "remedy"),
    [
        ("h100-sxm", 16, "llama-3.1-70b", 1, "use more chips_per_replica, use a lower precision"),
        ("h100-sxm", 2, "llama-3.1-405b", None, "give the pool more chips (a replica may span 8)"),
        ("h100-sxm", 8, "deepseek-r1", None, "a replica spans at most 8 h100-sxm (one scale-up"),
        ("l4", 4, "llama-3.1-70b", None, "a replica spans at most 1 l4 (one scale-up domain)"),
    ],
)
def test_a_model_that_does_not_fit_names_only_remedies_that_exist(
    chip: str, count: int, model: str, size: int | None, remedy: str
) -> None:
    """ "More chips per replica" only where a larger replica fits the pool and the domain."""
    precision = "bf16" if model == "llama-3.1-70b" and chip == "h100-sxm" else "fp8"
    work = _serving(model=model, precision=precision, chips_per_replica=size)
    with pytest.raises(ValidationError, match=re.escape(remedy)):
        acs.Scenario(
            name="s", workload=work, fleet=[acs.Pool(chip=chip, count=count, provider=None)]
        )


def test_precision_the_chip_lacks_names_the_chip() -> None:
    with pytest.raises(ValidationError, match=r"'h100-sxm'.*has no fp4 peak"):
        _scenario(precision="fp4")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"chips_per_replica": 3}, "must divide the pool's count"),
        ({"daily_profile": [2.0] * 24}, "mean 1"),
        ({"daily_profile": [1.0] * 23}, "24 hourly multipliers"),
        ({"burstiness": 0.5}, r"burstiness must lie in \[1, 100\]"),
        ({"rate_rps": 0.0}, r"rate_rps must lie in \(0"),
        ({"burst_window_minutes": 7.0}, "must divide an hour"),
        ({"min_replicas": 2}, "apply to scaling='follow_demand'"),
        ({"scaling": "follow_demand", "max_replicas": 99}, "exceeds the 4 replicas the pool holds"),
        ({"scaling": "follow_demand", "min_replicas": 3, "max_replicas": 2}, "below min_replicas"),
        ({"kv_share": 1.5}, r"kv_share must lie in \(0, 1\]"),
        ({"output_tokens": -1.0}, "output_tokens must lie in"),
    ],
)
def test_bad_serving_inputs_are_errors(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        _scenario(**changes)


def test_replica_beyond_the_scale_up_domain() -> None:
    with pytest.raises(ValidationError, match="exceeds the scale-up domain of h100-sxm"):
        _scenario(count=16, chips_per_replica=16)


def test_slo_bounds_are_checked() -> None:
    with pytest.raises(ValidationError, match="percentile"):
        acs.SLO(ttft_ms=1000, tpot_ms=50, percentile=100)
    with pytest.raises(ValidationError, match="ttft_ms"):
        acs.SLO(ttft_ms=0, tpot_ms=50)


def test_serving_runs_on_one_pool() -> None:
    with pytest.raises(ValidationError, match="one pool"):
        acs.Scenario(
            name="s",
            workload=_serving(),
            fleet=[acs.Pool(chip="h100-sxm", count=8, provider="aws")] * 2,
        )


def test_replica_size_is_chosen_from_memory_when_unset() -> None:
    # 70.6 GB of FP8 weights: TP2 on 80 GB H100s, TP1 on 141 GB H200s (the published layouts)
    work = _serving(chips_per_replica=None)
    assert work.replica_chips(acs.catalog.chip("h100-sxm"), 16) == 2
    assert work.replica_chips(acs.catalog.chip("h200"), 16) == 1


# 1 ms TTFT: no system achieves it, so it warns of a unit mistake (issue 32); meant here
@pytest.mark.filterwarnings("ignore::accelsim.scenario.SloUnitWarning")
def test_an_slo_no_rate_meets_gives_an_honest_infeasible_result() -> None:
    s = _scenario(slo=acs.SLO(ttft_ms=1, tpot_ms=1))
    res = acs.simulate(s, runs=64, seed=1, progress=False)
    cap = acs.serving_capacity(s, runs=64, seed=1)
    assert (res.samples("slo_attainment") == 0.0).all()
    assert (cap.samples("feasible") == 0.0).all()
    assert (cap.samples("slo_tokens_per_s_per_chip") == 0.0).all()


def test_a_rate_beyond_the_fleet_drops_requests_and_is_not_finished() -> None:
    res = acs.simulate(_scenario(rate_rps=1e5), runs=64, seed=1, progress=False)
    assert (res.samples("finished") == 0.0).all()
    assert (res.samples("requests_dropped") > 0.0).all()
    assert (res.samples("slo_attainment") == 0.0).all()
