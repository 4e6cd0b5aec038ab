"""Outputs never destroy inputs, and a bad output is refused before the simulation.

Before, ``accelsim run s.json --out s.json`` and ``accelsim report s.yaml -o s.yaml``
overwrote the scenario with exit 0, and a directory given as ``-o`` failed with a traceback
after the whole study. Each case runs the CLI in a child under a memory cap and a time limit
(tests/bounded.py); an empty stdout shows that no study ran (``run`` prints its table first).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tests.bounded import assert_refused, cli

from accelsim._yaml import load_yaml, to_plain

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def files(tmp_path: Path) -> Path:
    shutil.copy(EXAMPLES / "llama70b_h100_aws.yaml", tmp_path / "s.yaml")
    doc = to_plain(load_yaml(tmp_path / "s.yaml")) | {"name": "as-json"}  # a second option
    (tmp_path / "s.json").write_text(json.dumps(doc), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    "args",
    [
        ["run", "s.json", "--out", "s.json"],
        ["run", "s.json", "--out", "../{dir}/s.json"],  # another spelling of the same file
        ["run", "s.yaml", "--plot", "s.yaml"],
        ["report", "s.yaml", "-o", "s.yaml"],
        ["report", "s.json", "s.yaml", "-o", "./s.json"],
    ],
)
def test_an_output_that_is_an_input_is_refused(files: Path, args: list[str]) -> None:
    before = {p.name: p.read_bytes() for p in files.iterdir()}
    args = [a.format(dir=files.name) for a in args]
    proc = cli(*args, "--runs", "100", cwd=files)
    assert_refused(proc, "that is the input file", "choose another path")
    assert proc.stdout == ""
    assert {p.name: p.read_bytes() for p in files.iterdir()} == before


def test_an_output_that_is_a_replayed_trace_is_refused(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "data", tmp_path / "data")
    shutil.copy(EXAMPLES / "trace_replay_helios_format.yaml", tmp_path / "t.yaml")
    trace = tmp_path / "data" / "helios_format_synthetic.csv"
    before = trace.read_bytes()
    proc = cli("run", "t.yaml", "--out", "data/helios_format_synthetic.csv", cwd=tmp_path)
    assert_refused(proc, "that is the input file", "helios_format_synthetic.csv")
    assert trace.read_bytes() == before


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["report", "s.yaml", "-o", "."], ["--output .", "is a directory"]),
        (["run", "s.yaml", "--out", "missing/x.csv"], ["--out missing/x.csv", "not an existing"]),
        (["run", "s.yaml", "--out", "s.yaml/x.csv"], ["is not an existing folder"]),
        (["report", "s.yaml", "-o", "/proc/accelsim.html"], ["--output /proc/accelsim.html"]),
        (["run", "s.yaml", "--plot", "."], ["--plot .", "is a directory"]),
        # issue 33: an extension matplotlib cannot write, once refused only after the study
        (
            ["run", "s.yaml", "--plot", "ecdf.txt"],
            ["--plot ecdf.txt", "cannot write a .txt", ".png"],
        ),
    ],
)
def test_an_unwritable_output_is_refused_before_the_study(
    files: Path, args: list[str], words: list[str]
) -> None:
    proc = cli(*args, "--runs", "100", cwd=files)
    assert_refused(proc, *words)
    assert proc.stdout == ""


def test_a_good_output_is_still_written(files: Path) -> None:
    proc = cli("run", "s.yaml", "--out", "out.json", "--runs", "100", cwd=files)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads((files / "out.json").read_text())["runs"] == 100
    assert not list(files.glob(".accelsim-probe-*"))  # the writability probe left nothing
