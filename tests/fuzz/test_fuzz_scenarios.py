"""Fuzzing the boundary (issue 15): raw dicts, YAML text and the CLI, not only valid scenarios.

Every input either validates and simulates (8 runs; streams on horizons of at most a day)
to finite numbers, or is refused with an error naming the field. The inputs mix valid values
with the kinds of bad ones a user or a fuzzer writes: zero, negatives, subnormals, huge
numbers, infinities, NaN, booleans, quoted numbers, wrong types, unknown keys, and laws
with a vanishing mean. Bounded: few examples per test (the `ci` profile caps them) and
small studies, so the folder adds well under a minute to `make test`.
"""

from __future__ import annotations

import contextlib
import io
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from ruamel.yaml import YAML

import accelsim as acs
from accelsim.catalog import active
from accelsim.cli import main
from accelsim.engines import OverloadWarning, check_runnable
from accelsim.errors import AccelsimError

# Values a fuzzer writes into a numeric field: valid ones, and the classes of bad ones.
WILD: list[Any] = [
    0, 1, 2, 8, 64, -1, 0.5, 1e-300, 1e-12, 1e300, 10**11, 2**63 - 1,
    1e-3, 0.99, 1e4, 1e7, 1e12, 1e15, 1e17,
    math.inf, -math.inf, math.nan, True, False, "7e9", "5", None, [], {},
    {"dist": "uniform", "low": 0, "high": 1e-12},
    {"dist": "uniform", "low": "1", "high": 2},
    {"dist": "exponential", "mean": 1.0},
    {"dist": "lognormal", "low": 0.5, "high": 4.0},
    {"dist": "choice", "values": [0, 1]},
]  # fmt: skip
wild = st.sampled_from(WILD)

TRAINING_FIELDS = ["params", "tokens", "global_batch_tokens", "total_params", "flops"]
POOL_FIELDS = ["count", "term_share"]
ASSUMPTION_FIELDS = [
    "mfu", "engineers", "checkpoint_interval_hours", "checkpoint_write_hours",
    "failure_rate_per_chip_hour", "spot_preemptions_per_hour", "lead_time_days",
    "porting_hours", "engineer_usd_per_hour", "pue", "badput_fraction",
]  # fmt: skip
STREAM_FIELDS = ["interarrival_hours", "chips", "duration_hours", "priority"]
SCENARIO_FIELDS = ["horizon_days", "warmup_days"]


def _training() -> dict[str, Any]:
    return {"kind": "training", "params": 7e9, "tokens": 1e11}


def _stream() -> dict[str, Any]:
    return {"kind": "job_stream", "interarrival_hours": 2.0, "chips": 1, "duration_hours": 4.0}


@st.composite
def raw_scenarios(draw: st.DrawFn) -> dict[str, Any]:
    """A scenario dict: a valid base with a few fields set to wild values."""
    stream = draw(st.booleans())
    work = _stream() if stream else _training()
    pool: dict[str, Any] = {
        "chip": draw(st.sampled_from(["h100-sxm", "tpu-v5p", "a100-80gb"])),
        "count": draw(st.sampled_from([1, 8, 64, 4096, 100_000, 10_000_000])),
        "provider": draw(st.sampled_from(["aws", "gcp", None])),
        "pricing": draw(st.sampled_from(["on_demand", "spot", "commit_1y"])),
    }
    data: dict[str, Any] = {"name": "fuzz", "workload": work, "fleet": [pool]}
    if stream:
        data["horizon_days"] = draw(st.sampled_from([0.05, 0.5, 1.0]))
        data["scheduler"] = draw(st.sampled_from(["fifo", "backfill", "priority"]))
        work["framework"] = draw(st.sampled_from(["pytorch", "jax"]))
    assumptions: dict[str, Any] = {}
    fields = (STREAM_FIELDS if stream else TRAINING_FIELDS) + POOL_FIELDS + ASSUMPTION_FIELDS
    for name in draw(st.lists(st.sampled_from(fields + SCENARIO_FIELDS), max_size=3)):
        value = draw(wild)
        if name in POOL_FIELDS:
            pool[name] = value
        elif name in ASSUMPTION_FIELDS:
            assumptions[name] = value
        elif name in SCENARIO_FIELDS:
            data[name] = value
        else:
            work[name] = value
    if "priority" in work:  # only the priority schedulers read it (else a refusal, tested)
        data["scheduler"] = draw(st.sampled_from(["priority", "priority_preemptive"]))
    if assumptions:
        data["assumptions"] = assumptions
    if draw(st.booleans()):
        data[draw(st.sampled_from(["extra", "fleet_size"]))] = 1  # an unknown key
    return data


def _refusal_names_a_field(exc: Exception) -> None:
    if isinstance(exc, ValidationError):
        for err in exc.errors():
            assert err["loc"] or err["msg"], exc
            assert " " in err["msg"], exc  # a sentence, not a bare code
        return
    assert str(exc).strip(), exc


def _simulate_finite(scenario: acs.Scenario) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OverloadWarning)  # stated, and checked elsewhere
        res = acs.simulate(scenario, runs=8, seed=1, progress=False)
    for m in res.metrics:
        x = res.samples(m)
        assert np.isfinite(x).all(), (m, x)


def _check(data: dict[str, Any]) -> None:
    try:
        scenario = acs.Scenario.model_validate(data)
        check_runnable(scenario, active(), warn=False)
    except (ValidationError, AccelsimError) as exc:
        _refusal_names_a_field(exc)
        return
    _simulate_finite(scenario)


FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(raw_scenarios())
@example(  # issue 15: a vanishing mean inter-arrival hung `accelsim run`
    {
        "name": "x",
        "workload": {
            "kind": "job_stream",
            "interarrival_hours": {"dist": "uniform", "low": 0, "high": 1e-12},
            "chips": 1,
            "duration_hours": 1.0,
        },
        "fleet": [{"chip": "h100-sxm", "count": 8, "provider": "aws"}],
        "horizon_days": 1.0,
    }
)
@example(  # issue 15: a negative batch gave negative money
    {
        "name": "x",
        "workload": {**_training(), "global_batch_tokens": -4e6},
        "fleet": [{"chip": "h100-sxm", "count": 8, "provider": "aws"}],
    }
)
@example(  # issue 15: `count: true` became 1
    {"name": "x", "workload": _training(), "fleet": [{"chip": "h100-sxm", "count": True}]}
)
def test_raw_dicts_validate_and_simulate_finite_or_are_refused(data: dict[str, Any]) -> None:
    _check(data)


SCALARS = ["true", "'5'", '"7e9"', "1e3", "1.0e3", ".inf", "-.inf", ".nan", "null", "-0", "0"]


@st.composite
def yaml_texts(draw: st.DrawFn) -> str:
    """A scenario as YAML text with one scalar replaced by a wild token."""
    data = draw(raw_scenarios())
    buffer = io.StringIO()
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.dump(data, buffer)
    lines = buffer.getvalue().splitlines()
    scalar = [i for i, line in enumerate(lines) if ": " in line and not line.endswith(":")]
    if scalar:
        i = draw(st.sampled_from(scalar))
        key = lines[i].split(": ", 1)[0]
        lines[i] = f"{key}: {draw(st.sampled_from(SCALARS))}"
    return "\n".join(lines) + "\n"


@FUZZ
@given(yaml_texts())
@example("name: x\nworkload: {kind: training, params: '7e9', tokens: 1e11}\n"
         "fleet: [{chip: h100-sxm, count: 8, provider: aws}]\n")  # fmt: skip
def test_yaml_text_loads_and_simulates_finite_or_is_refused(text: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.yaml"
        path.write_text(text, encoding="utf-8")
        try:
            scenario = acs.load_scenario(path)
            check_runnable(scenario, active(), warn=False)
        except AccelsimError as exc:
            _refusal_names_a_field(exc)
            return
    _simulate_finite(scenario)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(yaml_texts(), st.sampled_from(["validate", "run"]))
def test_cli_exits_0_or_2_with_one_line_and_never_a_traceback(text: str, command: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.yaml"
        path.write_text(text, encoding="utf-8")
        args = [command, str(path)] + (["--runs", "4", "--json"] if command == "run" else [])
        out, err = io.StringIO(), io.StringIO()
        with (
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
            warnings.catch_warnings(),
        ):
            warnings.simplefilter("ignore", OverloadWarning)
            code = main(args)
    assert "Traceback" not in err.getvalue()
    if code == 2:
        lines = [x for x in err.getvalue().splitlines() if not x.startswith("accelsim: warning")]
        assert len(lines) >= 1
        assert all(x.startswith(("accelsim: error", str(path))) for x in lines), lines
    else:
        assert code == 0, err.getvalue()
