"""A study's memory is estimated before it runs: too many runs are refused with the figure.

The CLI cases run in a child under a memory cap and a time limit (tests/bounded.py); before
the check, ``--runs 10000000`` grew past 4 GB and ``runs=10**9`` died allocating 7.45 GiB.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from tests.bounded import MEMORY_CAP_BYTES, assert_refused, cli

import accelsim as acs
from accelsim import engines
from accelsim.engines import memory_limit_bytes
from accelsim.errors import AccelsimError
from accelsim.study._budget import PROBE_FREE_VALUES, check_study_memory

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _number(pattern: str, text: str) -> int:
    found = re.search(pattern, text)
    assert found is not None, (pattern, text)
    return int(found.group(1).replace(",", ""))


@pytest.mark.parametrize("runs", ["10000000", "1000000000"])
def test_too_many_runs_are_refused_before_any_run(runs: str) -> None:
    proc = cli("run", str(EXAMPLES / "llama70b_h100_aws.yaml"), "--runs", runs)
    line = assert_refused(proc, f"runs={int(runs):,}", "GiB in memory", "use at most")
    # the largest study it offers does fit the limit it states
    most, per_run = _number(r"use at most ([\d,]+) runs", line), _number(r"([\d,]+) bytes", line)
    assert most * per_run <= MEMORY_CAP_BYTES // 2


def test_too_many_runs_of_a_job_stream_are_refused() -> None:
    proc = cli("run", str(EXAMPLES / "shared_onprem_h100_jobstream.yaml"), "--runs", "100000000")
    assert_refused(proc, "runs=100,000,000", "use at most")


def test_the_estimate_is_the_probe_runs_bytes_times_the_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(engines, "memory_limit_bytes", lambda: 10 * 2**20)
    part = ({"a": np.zeros(1), "b": np.zeros(1)}, {"x": np.zeros(1)}, [])
    check_study_memory(10 * 2**20 // 24, lambda: part, "runs")  # 24 bytes a run: fits
    with pytest.raises(AccelsimError, match=r"runs=436,907 would hold about 10 MiB .*24 bytes"):
        check_study_memory(10 * 2**20 // 24 + 1, lambda: part, "runs")


def test_an_ordinary_study_pays_no_probe() -> None:
    def probe() -> tuple[object, ...]:
        raise AssertionError("probed")

    check_study_memory(memory_limit_bytes() // (8 * PROBE_FREE_VALUES), probe, "runs")


def test_simulate_refuses_a_study_over_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The library refuses too, naming max_runs for runs="auto"; a study that fits runs."""
    monkeypatch.setattr(engines, "memory_limit_bytes", lambda: 2**20)
    s = acs.load_scenario(EXAMPLES / "llama70b_h100_aws.yaml")
    with pytest.raises(AccelsimError, match=r"max_runs=262,144 would hold"):
        acs.simulate(s, runs="auto", target={"tco_usd": 0.01}, seed=1, progress=False)
    assert acs.simulate(s, runs=200, seed=1, progress=False).runs == 200
