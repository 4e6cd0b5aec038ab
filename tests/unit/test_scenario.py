"""Scenario validation at the boundary: what is accepted, and what errors say."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError
from ruamel.yaml import YAML

import accelsim as acs
from accelsim import strategies as acst
from accelsim.errors import ScenarioFileError
from accelsim.scenario import Scenario, load_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _training(**kw: object) -> acs.Scenario:
    base: dict[str, object] = {
        "name": "t",
        "workload": acs.TrainingRun(params=7e9, tokens=1e11),
        "fleet": [acs.Pool(chip="h100-sxm", count=64, provider="aws")],
    }
    base.update(kw)
    return acs.Scenario(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_every_example_scenario_loads(path: Path) -> None:
    s = load_scenario(path)
    assert s.name
    assert s.fleet


def test_required_examples_exist() -> None:
    """The issue's three named examples: H100 on AWS, TPU v5p on GCP, shared on-prem stream."""
    h100 = load_scenario(EXAMPLES / "llama70b_h100_aws.yaml")
    assert (h100.fleet[0].chip, h100.fleet[0].count, h100.fleet[0].provider) == (
        "h100-sxm",
        1024,
        "aws",
    )
    assert h100.training.params == 70e9
    tpu = load_scenario(EXAMPLES / "llama70b_tpu_v5p_gcp.yaml")
    assert (tpu.fleet[0].chip, tpu.fleet[0].provider) == ("tpu-v5p", "gcp")
    shared = load_scenario(EXAMPLES / "shared_onprem_h100_jobstream.yaml")
    assert isinstance(shared.workload, acs.JobStream)
    assert (shared.fleet[0].count, shared.fleet[0].pricing) == (512, "on_prem")


def test_unknown_chip_names_close_ids() -> None:
    with pytest.raises(ValidationError) as err:
        acs.Pool(chip="h100", count=8, provider="aws")
    text = str(err.value)
    assert "chip" in text
    assert "h100-sxm" in text


def test_tpu_on_aws_says_who_offers_it() -> None:
    with pytest.raises(ValidationError) as err:
        acs.Pool(chip="tpu-v5p", count=64, provider="aws")
    assert "gcp" in str(err.value)


@pytest.mark.parametrize("count", [0, -8])
def test_non_positive_count_is_rejected(count: int) -> None:
    with pytest.raises(ValidationError, match="count"):
        acs.Pool(chip="h100-sxm", count=count, provider="aws")


@pytest.mark.parametrize(
    "mfu", [1.5, 0.0, -0.1, acs.Uniform(low=0.3, high=1.2), acs.Normal(mean=0.4, sd=0.1)]
)
def test_mfu_outside_unit_interval_is_rejected(mfu: object) -> None:
    """An untruncated normal can go below 0, so it is rejected as an MFU too."""
    with pytest.raises(ValidationError, match=r"mfu must lie in \[0.001, 1\]"):
        acs.Assumptions(mfu=mfu)  # type: ignore[arg-type]


def test_mfu_distribution_inside_unit_interval_is_accepted() -> None:
    a = acs.Assumptions(mfu=acs.Triangular(low=0.3, mode=0.4, high=0.5))
    assert a.mfu is not None


def test_model_too_big_for_the_fleet_is_rejected() -> None:
    """1T parameters need ~16 TB of training state; 8 H100s have 640 GiB."""
    with pytest.raises(ValidationError, match="add chips"):
        _training(
            workload=acs.TrainingRun(params=1e12, tokens=1e12),
            fleet=[acs.Pool(chip="h100-sxm", count=8, provider="aws")],
        )


def test_stream_needs_a_horizon() -> None:
    stream = acs.JobStream(
        interarrival_hours=acs.Exponential(mean=1.0), chips=1, duration_hours=2.0
    )
    with pytest.raises(ValidationError, match="horizon_days"):
        _training(workload=stream)


def test_typo_in_a_field_is_an_error() -> None:
    with pytest.raises(ValidationError, match="extra"):
        acs.TrainingRun(params=1e9, tokens=1e9, framwork="jax")  # type: ignore[call-arg]


def test_file_errors_name_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "name: bad\n"
        "workload: {kind: training, params: 7e9, tokens: 1e11}\n"
        "fleet:\n"
        "  - chip: h100-sxm\n"
        "    count: 0\n"
        "    provider: aws\n",
        encoding="utf-8",
    )
    with pytest.raises(ScenarioFileError) as err:
        load_scenario(path)
    text = str(err.value)
    assert f"{path}:5" in text
    assert "fleet.0.count" in text
    assert "greater than 0" in text


def test_yaml_reads_6e23_as_a_number(tmp_path: Path) -> None:
    """YAML 1.1 loaders read 6e23 as a string; ours follows YAML 1.2 (STACK.md pitfall 1)."""
    path = tmp_path / "flops.yaml"
    path.write_text(
        "name: f\nworkload: {kind: training, params: 7e9, tokens: 1e11, flops: 6e23}\n"
        "fleet: [{chip: h100-sxm, count: 64, provider: aws}]\n",
        encoding="utf-8",
    )
    assert load_scenario(path).training.flops == 6e23


def test_json_and_toml_load_the_same_scenario(tmp_path: Path) -> None:
    s = _training()
    (tmp_path / "s.json").write_text(s.model_dump_json(), encoding="utf-8")
    toml = (
        'name = "t"\n[workload]\nkind = "training"\nparams = 7e9\ntokens = 1e11\n'
        '[[fleet]]\nchip = "h100-sxm"\ncount = 64\nprovider = "aws"\n'
    )
    (tmp_path / "s.toml").write_text(toml, encoding="utf-8")
    assert load_scenario(tmp_path / "s.json") == s
    assert load_scenario(tmp_path / "s.toml") == s


def test_unknown_suffix_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ScenarioFileError, match="no such scenario file"):
        load_scenario(tmp_path / "missing.yaml")
    (tmp_path / "s.txt").write_text("x", encoding="utf-8")
    with pytest.raises(ScenarioFileError, match="unknown scenario file type"):
        load_scenario(tmp_path / "s.txt")


def test_json_schema_has_the_workload_kinds() -> None:
    schema = json.dumps(Scenario.model_json_schema())
    for kind in ("training", "job_stream", "trace"):
        assert kind in schema


def test_replace_returns_a_validated_copy() -> None:
    s = _training()
    bigger = s.replace("fleet.0.count", 128)
    assert bigger.fleet[0].count == 128
    assert s.fleet[0].count == 64
    with pytest.raises(ValidationError):
        s.replace("fleet.0.count", 0)


# The public strategies (accelsim.strategies): every offer of the built-in sheets (a
# capacity block with a window it sells), runs that fit, assumptions as numbers or any law.
_scenarios = st.tuples(
    acst.scenarios(
        workload=acst.training_runs(max_params=2e10),
        fleet=acst.pools(min_count=64),
        assumptions=st.one_of(
            st.just(acs.Assumptions()),
            acst.assumptions(mfu=(0.05, 0.9), engineers=(1.0, 20.0)),
        ),
        max_pools=2,
    ),
    st.text(alphabet="abcdefgh-", min_size=1, max_size=12),
).map(lambda t: t[0].model_copy(update={"name": t[1]}))


@given(_scenarios)
def test_scenario_round_trips_through_json(s: acs.Scenario) -> None:
    assert Scenario.model_validate_json(s.model_dump_json()) == s


@given(_scenarios)
def test_scenario_round_trips_through_yaml(s: acs.Scenario) -> None:
    yaml = YAML(typ="safe")
    buf = io.StringIO()
    yaml.dump(s.model_dump(mode="json"), buf)
    assert Scenario.model_validate(yaml.load(buf.getvalue())) == s


@pytest.mark.parametrize("value", [True, "0.4"])
def test_booleans_and_strings_are_not_numbers(value: object) -> None:
    """YAML `mfu: true` or a quoted number is an error, never silently 1.0 or 0.4."""
    with pytest.raises(ValidationError, match="mfu"):
        acs.Assumptions(mfu=value)  # type: ignore[arg-type]


_BACKGROUND = acs.JobStream(interarrival_hours=acs.Exponential(mean=1.0), chips=8, duration_hours=2)


def test_background_needs_a_training_run_and_a_horizon() -> None:
    with pytest.raises(ValidationError, match="horizon_days is required with a background"):
        _training(background=_BACKGROUND)
    s = _training(background=_BACKGROUND, horizon_days=30, warmup_days=2)
    assert isinstance(s.background, acs.JobStream)
    with pytest.raises(ValidationError, match="no training run to compete with"):
        acs.Scenario(
            name="s", workload=_BACKGROUND, background=_BACKGROUND, horizon_days=30,
            fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")],
        )  # fmt: skip
    with pytest.raises(ValidationError, match="warmup_days"):
        _training(background=_BACKGROUND, horizon_days=3, warmup_days=3)
    too_big = acs.JobStream(interarrival_hours=1.0, chips=128, duration_hours=2)
    with pytest.raises(ValidationError, match=r"background\.chips can reach 128"):
        _training(background=too_big, horizon_days=30)


def test_background_trace_path_is_resolved_against_the_scenario_file(tmp_path: Path) -> None:
    (tmp_path / "jobs.csv").write_text("submit,chips,duration\n0,8,3600\n", encoding="utf-8")
    f = tmp_path / "s.yaml"
    f.write_text(
        "name: hero\n"
        "workload: {kind: training, params: 7e9, tokens: 1e11}\n"
        "fleet: [{chip: h100-sxm, count: 64, provider: aws}]\n"
        "background: {kind: trace, path: jobs.csv}\n"
        "horizon_days: 10\n",
        encoding="utf-8",
    )
    s = load_scenario(f)
    assert isinstance(s.background, acs.Trace)
    assert Path(s.background.path) == (tmp_path / "jobs.csv").resolve()


def test_whole_domains_on_a_tpu_without_slice_shapes_is_rejected() -> None:
    """A TPU's scale-up domain is its pod: without slice shapes, rounding would give a pod."""
    stream = acs.JobStream(
        interarrival_hours=acs.Exponential(mean=1.0),
        chips=4,
        duration_hours=1.0,
        framework="jax",  # a PyTorch stream on a TPU-only fleet could not start
        whole_domains=True,
    )
    assert acs.catalog.chip("tpu-v7").slice_sizes is None
    with pytest.raises(ValidationError, match="needs valid slice shapes"):
        acs.Scenario(
            name="tpu-stream",
            workload=stream,
            fleet=[acs.Pool(chip="tpu-v7", count=256, provider=None)],
            horizon_days=1,
        )
    ok = acs.Scenario(
        name="tpu-stream",
        workload=stream,
        fleet=[acs.Pool(chip="tpu-v5p", count=256, provider="gcp")],
        horizon_days=1,
    )
    assert isinstance(ok.workload, acs.JobStream)
    assert ok.workload.whole_domains


def _raw(work: dict[str, Any] | None = None, pool: dict[str, Any] | None = None, **kw: Any) -> Any:
    data = {
        "name": "x",
        "workload": work or {"kind": "training", "params": 7e9, "tokens": 1e11},
        "fleet": [pool or {"chip": "h100-sxm", "count": 64, "provider": "aws"}],
        **kw,
    }
    return acs.Scenario.model_validate(data)


_TRAIN = {"kind": "training", "params": 7e9, "tokens": 1e11}
_STREAM = {"kind": "job_stream", "interarrival_hours": 1.0, "chips": 1, "duration_hours": 1.0}
_H100 = {"chip": "h100-sxm", "count": 64, "provider": "aws"}


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"pool": {**_H100, "count": True}}, "fleet.0.count"),
        ({"pool": {**_H100, "count": 10**11}}, "less than or equal to 10000000"),
        ({"work": {**_TRAIN, "params": "7e9"}}, "params"),
        ({"work": {**_TRAIN, "tokens": 1e300}}, "tokens"),
        ({"work": {**_TRAIN, "params": 1e15, "tokens": 1e17}}, "above the bound 1e"),
        ({"work": {**_TRAIN, "global_batch_tokens": -4e6}}, "global_batch_tokens must lie"),
        ({"work": {**_TRAIN, "global_batch_tokens": 0}}, "global_batch_tokens must lie"),
        (
            {"work": {**_TRAIN, "global_batch_tokens": 5.6e6}, "pool": {**_H100, "count": 100_000}},
            "less than one sequence",
        ),
        ({"work": {**_TRAIN, "params": 70e9, "sharding": "none"}}, "sharding='none'"),
        ({"assumptions": {"engineers": 1e-300}}, "engineers must lie in"),
        ({"assumptions": {"checkpoint_interval_hours": 1e-12}}, "checkpoint_interval_hours"),
        ({"assumptions": {"mfu": {"dist": "uniform", "low": "0.3", "high": 0.5}}}, "low"),
        ({"assumptions": {"spot_preemptions_per_hour": 0.01}}, "applies to spot pools"),
        ({"assumptions": {"electricity_usd_per_kwh": 0.1}}, "applies to on_prem pools"),
        ({"pool": {**_H100, "term_share": 0.5}}, "term_share applies to commit"),
        (
            {"pool": {**_H100, "pricing": "commit_1y", "term_share": 0.0}},
            "term_share=0 charges none",
        ),
        ({"warmup_days": 1.0}, "warmup_days applies with horizon_days"),
        ({"scheduler": "backfill"}, "applies to a shared fleet"),
        ({"work": {**_STREAM, "interarrival_hours": 0}, "horizon_days": 1}, "mean >= 0.001"),
        (
            {
                "work": {
                    **_STREAM,
                    "interarrival_hours": {"dist": "uniform", "low": 0, "high": 1e-12},
                },
                "horizon_days": 1,
            },
            "mean >= 0.001",
        ),
        ({"work": {**_STREAM, "duration_hours": 0}, "horizon_days": 1}, "duration_hours"),
        ({"work": _STREAM, "horizon_days": "5"}, "horizon_days"),
        (
            {
                "work": _STREAM,
                "horizon_days": 1,
                "pool": {**_H100, "chip": "tpu-v5p", "provider": "gcp"},
            },
            "no pool runs pytorch",
        ),
        (
            {
                "work": {"kind": "trace", "path": "x.csv", "chip_types": {"V": "nochip"}},
                "horizon_days": 1,
            },
            "chip_types",
        ),
    ],
)
def test_bad_or_extreme_inputs_are_refused_naming_the_field(
    kwargs: dict[str, Any], match: str
) -> None:
    """Issue 15: each example of a class of input that was accepted and gave a wrong answer."""
    with pytest.raises(ValidationError, match=re.escape(match)):
        _raw(**kwargs)


def test_a_numpy_grid_value_is_accepted_by_replace() -> None:
    s = _raw()
    assert s.replace("fleet.0.count", np.int64(128)).fleet[0].count == 128
