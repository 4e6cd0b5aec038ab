"""The accelsim command: every subcommand on the examples, clean failures on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accelsim.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_demo_prints_table_and_recommendation(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--runs", "300", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "tco_usd" in out
    assert "Recommendation:" in out
    assert "tpu-v5p" in out


def test_validate_every_example(capsys: pytest.CaptureFixture[str]) -> None:
    paths = [str(p) for p in sorted(EXAMPLES.glob("*.yaml"))]
    assert main(["validate", *paths]) == 0
    assert capsys.readouterr().out.count(": ok") == len(paths)


def test_bad_file_exits_2_naming_the_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: x\nworkload: {kind: training, params: 7e9, tokens: 1e11}\n"
        "fleet: [{chip: h100-sxmm, count: 8, provider: aws}]\n",
        encoding="utf-8",
    )
    assert main(["validate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml:3" in err
    assert "h100-sxm" in err
    assert "Traceback" not in err


def test_missing_file_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "does-not-exist.yaml"]) == 2
    assert "no such scenario file" in capsys.readouterr().err


def test_run_and_compare(capsys: pytest.CaptureFixture[str]) -> None:
    h100 = str(EXAMPLES / "llama70b_h100_aws.yaml")
    tpu = str(EXAMPLES / "llama70b_tpu_v5p_gcp.yaml")
    assert main(["run", h100, "--runs", "200"]) == 0
    assert "95% MC error" in capsys.readouterr().out
    assert main(["compare", h100, tpu, "--runs", "200"]) == 0
    assert "Recommendation:" in capsys.readouterr().out


def test_catalog_listings(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "chips"]) == 0
    assert "tpu-v5p" in capsys.readouterr().out
    assert main(["catalog", "prices", "--provider", "gcp"]) == 0
    assert "tpu-v5p" in capsys.readouterr().out
    assert main(["catalog", "prices", "--provider", "nowhere"]) == 2
    assert main(["catalog", "priors"]) == 0
    assert "failure_rate_per_chip_hour" in capsys.readouterr().out


def test_schema_is_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert "fleet" in schema["properties"]


def test_run_writes_a_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ttt.png"
    h100 = str(EXAMPLES / "llama70b_h100_aws.yaml")
    assert main(["run", h100, "--runs", "100", "--plot", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
