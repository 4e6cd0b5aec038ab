"""The MLPerf output-length laws of the serving calibration (``_serving_outputs``).

Checks of the shipped data file against what its source states (each benchmark's law is
quantiles of the length over its mean; Llama 3.1 8B's CNN/DailyMail outputs are capped at
128 tokens, so its law is nearly fixed) and of the rule that turns a law into a row's nodes
(their weighted mean is the row's measured mean output), and that the law tightens a
latency-bound row as the physics says it must (short requests carry the TPOT tail).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from accelsim import serving_calibration as sc
from accelsim._serving_outputs import (
    BENCHMARK_OF_PRESET,
    OUTPUTS_FILE,
    load_output_laws,
    row_output_law,
)

DATA = Path(__file__).resolve().parents[1] / "validation" / "data"


def _rows() -> dict[str, dict[str, str]]:
    with open(DATA / "inference.csv", newline="", encoding="utf-8") as handle:
        return {r["id"]: r for r in csv.DictReader(handle)}


def test_every_benchmark_has_a_law_of_mean_one() -> None:
    laws = load_output_laws(DATA / OUTPUTS_FILE)
    assert set(laws) == set(BENCHMARK_OF_PRESET.values())
    for name, law in laws.items():
        assert law.size == 200, name
        assert np.all(np.diff(law) >= 0.0), name  # quantiles rise with the level
        assert law.mean() == pytest.approx(1.0, abs=0.02), name  # midpoint levels: ~the mean
    assert laws["llama3.1-8b"].std() < 0.01  # max_new_tokens 128: every output ~128
    assert laws["llama2-70b"].std() > 0.5  # OpenOrca answers: 0.06-3.6x the mean


def test_a_missing_file_gives_no_laws(tmp_path: Path) -> None:
    assert load_output_laws(tmp_path / OUTPUTS_FILE) == {}


def test_a_row_gets_its_benchmark_law_at_its_own_mean() -> None:
    laws = load_output_laws(DATA / OUTPUTS_FILE)
    rows = _rows()
    row = rows["mlperf51-llama2-70b-99-offline-b200x8-nvidia"]
    mean = float(row["output_tokens"])
    law = row_output_law(row, "llama-2-70b", mean, laws)
    nodes, weights = law["output_nodes"], law["output_weights"]
    assert weights.sum() == pytest.approx(1.0)
    assert float(nodes @ weights) == pytest.approx(mean, rel=0.01)
    assert nodes.min() < 0.25 * mean < 3.0 * mean < nodes.max()
    # not an MLPerf row, or a benchmark without a law: fixed lengths
    assert row_output_law({**row, "benchmark": "vendor table"}, "llama-2-70b", mean, laws) == {}
    assert row_output_law(row, "gpt-j-6b", mean, laws) == {}


def test_the_law_tightens_an_interactive_row() -> None:
    """Under a tight TPOT bound the short requests of the law set the p99: the rate the row
    sustains falls against the same row at its fixed mean output."""
    laws = load_output_laws(DATA / OUTPUTS_FILE)
    row = _rows()["mlperf51-llama2-70b-99-interactive-gb200x4-nvidia"]
    with_law, fixed = sc._case(row, laws), sc._case(row)
    assert not isinstance(with_law, str)
    assert not isinstance(fixed, str)
    assert set(with_law.output_law) == {"output_nodes", "output_weights"}
    assert fixed.output_law == {}
    effs = np.array([0.4, 0.55])
    nuisance = sc.rack.nuisance_medians()
    limits = {"TTFT": 450.0, "TPOT": 40.0}
    lawful = sc._slo_per_chip(with_law, effs, nuisance, limits)
    plain = sc._slo_per_chip(fixed, effs, nuisance, limits)
    assert np.all(lawful < plain)
