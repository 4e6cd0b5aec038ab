"""Goals on the surface: the CLI's goal options and the report's goals section.

The goal arithmetic itself is tested in test_goals.py; here the CLI must pass the goals the
user typed to the study, refuse a goal no option can be judged on before simulating, and the
report must show the same P(meets goal) table the comparison computes.
"""

from __future__ import annotations

import html as html_lib
import json
import re
from pathlib import Path

import pytest

import accelsim as acs
from accelsim.cli import main
from accelsim.report import render_html

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
GPU = str(EXAMPLES / "llama70b_h100_aws.yaml")
TPU = str(EXAMPLES / "llama70b_tpu_v5p_gcp.yaml")
SERVE = str(EXAMPLES / "serve_llama70b_h100.yaml")


def _text(page: str) -> str:
    body = re.sub(r"<style>.*?</style>|<svg.*?</svg>", " ", page, flags=re.S)
    return html_lib.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body)))


def _expected(runs: int, seed: int, goals: acs.Goals) -> acs.Comparison:
    options = [acs.load_scenario(GPU), acs.load_scenario(TPU)]
    return acs.compare(options, runs=runs, seed=seed, goals=goals)


def test_compare_json_carries_the_goals_the_study_computes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["compare", GPU, TPU, "--runs", "120", "--seed", "5", "--json"]
    assert main([*args, "--deadline-days", "150", "--budget-usd", "8e6"]) == 0
    doc = json.loads(capsys.readouterr().out)
    goals = acs.Goals(deadline_days=150, budget_usd=8e6)
    cmp = _expected(120, 5, goals)
    assert doc["goals"]["targets"] == {"deadline_days": 150, "budget_usd": 8e6, "confidence": 0.9}
    for name in cmp.options:
        got = doc["goals"]["prob_meets"][name]
        assert got["deadline_days"] == pytest.approx(cmp.prob_meets(name, "deadline_days"))
        assert got["budget_usd"] == pytest.approx(cmp.prob_meets(name, "budget_usd"))
        assert got["all"] == pytest.approx(cmp.prob_meets(name))
    assert doc["recommendation"]["choice"] == cmp.recommendation.choice


def test_compare_table_shows_the_goals_table(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["compare", GPU, TPU, "--runs", "120", "--seed", "5", "--deadline-days", "150"]
    assert main([*args, "--confidence", "0.8"]) == 0
    out = capsys.readouterr().out
    cmp = _expected(120, 5, acs.Goals(deadline_days=150, confidence=0.8))
    for row in cmp.as_goals_table().rows:
        for cell in row:
            assert cell in out
    assert str(cmp.recommendation).splitlines()[0] in out


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--deadline-days", "10"], "--deadline-days: unknown metric 'time_to_train_days'"),
        (["--budget-usd", "-1"], "--budget-usd: Input should be greater than 0"),
        (["--slo-attainment", "1.5"], "--slo-attainment: Input should be less than or equal"),
        (["--budget-usd", "1e6", "--confidence", "1"], "--confidence: Input should be less"),
    ],
)
def test_a_bad_goal_is_one_line_and_exit_2_before_any_study(
    args: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", SERVE, SERVE.replace("h100", "tpu_v6e"), "--runs", "5", *args]) == 2
    err = capsys.readouterr().err
    assert words in err
    assert len(err.strip().splitlines()) == 1


def test_report_shows_the_goals_table_and_reproduces_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.html"
    args = ["report", GPU, TPU, "-o", str(out), "--runs", "120", "--seed", "5"]
    assert main([*args, "--budget-usd", "8e6", "--no-sensitivity"]) == 0
    capsys.readouterr()
    text = _text(out.read_text(encoding="utf-8"))
    cmp = _expected(120, 5, acs.Goals(budget_usd=8e6))
    assert "The goals" in text
    table = cmp.as_goals_table()
    assert table.title in text
    for row in table.rows:
        for cell in row:
            assert cell in text
    assert f"Recommendation: {cmp.recommendation.headline}" in text
    assert f"accelsim report {GPU} {TPU} --runs 120 --seed 5 --budget-usd 8e+06" in text


def test_report_without_goals_has_no_goals_section() -> None:
    cmp = acs.compare([acs.load_scenario(GPU), acs.load_scenario(TPU)], runs=60, seed=2)
    assert 'id="goals"' not in render_html(cmp, sensitivity=False)


def test_report_goals_need_two_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.html"
    assert main(["report", GPU, "-o", str(out), "--runs", "10", "--budget-usd", "1e6"]) == 2
    assert "goals are read on a comparison" in capsys.readouterr().err
    assert not out.exists()
