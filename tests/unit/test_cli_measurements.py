"""``--measurements`` / ``--measured`` on run, compare, sweep and report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accelsim.cli import main

ROOT = Path(__file__).resolve().parents[2]
H100 = str(ROOT / "examples" / "llama70b_h100_aws.yaml")
TPU = str(ROOT / "examples" / "llama70b_tpu_v5p_gcp.yaml")
DATA = Path(__file__).resolve().parents[2] / "examples" / "measurements"


def _mfu_p50(capsys: pytest.CaptureFixture[str], *extra: str) -> float:
    assert main(["run", H100, "--runs", "300", "--json", *extra]) == 0
    doc = json.loads(capsys.readouterr().out)
    return float(doc["metrics"]["mfu"]["p50"])


def test_run_with_measurements_moves_the_mfu_and_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = _mfu_p50(capsys)
    assert main(["run", H100, "--runs", "300", "--json", "--measurements",
                 str(DATA / "measurements.yaml")]) == 0  # fmt: skip
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert "calibrated to 2 measurement(s)" in captured.err
    assert "priors.mfu_reference_by_chip.h100-sxm/7e+10: 1 measurement" in captured.err
    (record,) = doc["calibration"]
    assert record["name"] == "priors.mfu_reference_by_chip.h100-sxm/7e+10"
    assert record["measurements"] == 1
    after = float(doc["metrics"]["mfu"]["p50"])
    assert after > before + 0.03  # 0.45 measured against a prior median near 0.35


def test_a_tool_file_takes_its_context_from_measured(capsys: pytest.CaptureFixture[str]) -> None:
    bench = str(DATA / "vllm_bench_serve.json")
    assert main(["run", H100, "--runs", "50", "--measurements", bench]) == 2
    assert "missing field 'chips'" in capsys.readouterr().err
    args = ["--measurements", bench, "--measured", "chip=h100-sxm", "--measured", "chips=2",
            "--measured", "precision=fp8"]  # fmt: skip
    assert main(["compare", H100, TPU, "--runs", "100", *args]) == 0
    err = capsys.readouterr().err
    assert "priors.serving.efficiency_by_chip.h100-sxm: 1 measurement" in err
    assert main(["run", H100, "--runs", "50", "--measured", "chip=h100-sxm"]) == 2
    assert "give one" in capsys.readouterr().err


def test_sweep_and_report_take_measurements(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grid = tmp_path / "grid.yaml"
    grid.write_text("fleet.0.count: [1024, 2048]\n", encoding="utf-8")
    own = str(DATA / "measurements.csv")
    assert main(["sweep", H100, "--grid", str(grid), "--runs", "100", "--metrics", "mfu",
                 "--json", "--measurements", own]) == 0  # fmt: skip
    rows = json.loads(capsys.readouterr().out)
    assert all(0.38 <= r["p50"] <= 0.47 for r in rows)
    page = tmp_path / "r.html"
    assert main(["report", H100, "-o", str(page), "--runs", "100", "--no-sensitivity",
                 "--measurements", own]) == 0  # fmt: skip
    html = page.read_text(encoding="utf-8")
    assert "Calibrated to your measurements: priors.mfu_reference_by_chip.h100-sxm/7e+10" in html
    assert f"--measurements {own}" in html


def test_the_report_lists_calibrated_priors_as_your_measurements(tmp_path: Path) -> None:
    page = tmp_path / "r.html"
    own = str(DATA / "measurements.yaml")
    assert main(["report", H100, "-o", str(page), "--runs", "100", "--no-sensitivity",
                 "--measurements", own]) == 0  # fmt: skip
    html = page.read_text(encoding="utf-8")
    row = html.split('<th scope="row">priors.mfu_reference_by_chip.h100-sxm/7e+10</th>')[1]
    row = row.split("</tr>")[0]
    assert "your measurements" in row
    assert "1 measurement(s)" in row
