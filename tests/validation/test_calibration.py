"""Calibration against published training runs (the library's calibration claim).

Oracle: published wall-clock days and chip-hours of real runs
(``catalog/data/published_runs.csv``, each row with its source). With the published
configuration and the catalog priors for everything unpublished, the predicted P5-P95
interval should hold the published figure. The issue's target is 80 % of A and A- rows;
the model reaches 70 % (7 of 10 counted figures). The misses are listed below with the
reason for each, so this test is a labelled regression guard of the claim, not a
validation tuned to pass: a change that loses a covered run, or newly covers a miss,
fails here and must update docs/calibration.md (``accelsim calibrate``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from accelsim.calibration import calibrate, calibration_markdown, coverage

# (run, metric) pairs the model does not cover, and why.
KNOWN_MISSES = {
    # Published GPU-hours imply MFU 0.294, below every published stage MFU (0.305-0.343):
    # the two published figures disagree by ~4 %, and the run is held to both.
    ("nemotron4_15b", "failure-free chip_hours"),
    # "Approximately 13 calendar days" is 1.4x the GPU-hour time: the calendar includes
    # stage changes and pauses the badput prior (P95 0.25) does not reach.
    ("nemotron4_15b", "training_days"),
    # A 1.3B-active MoE: small expert matmuls and all-to-all keep MFU near 0.18, below the
    # dense-LLM priors; MoE and small-model MFU are not modelled separately yet.
    ("olmoe_1b_7b", "training_days"),
}


@pytest.fixture(scope="module")
def checks() -> list:  # type: ignore[type-arg]
    return calibrate(grades=("A", "A-"), runs=2000, seed=0)


def test_coverage_of_a_and_a_minus_runs(checks: list) -> None:  # type: ignore[type-arg]
    assert coverage(checks) >= 0.7
    misses = {(c.run.run_id, c.metric) for c in checks if c.counted and not c.covered}
    assert misses == KNOWN_MISSES


def test_every_published_figure_is_checked(checks: list) -> None:  # type: ignore[type-arg]
    from accelsim.calibration import published_runs

    expected = sum(
        (r.published_days is not None) + (r.published_chip_hours is not None)
        for r in published_runs(("A", "A-"))
    )
    assert len(checks) == expected


def test_docs_table_is_current(checks: list) -> None:  # type: ignore[type-arg]
    """docs/calibration.md holds the table this seed produces (regenerate: accelsim calibrate)."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "calibration.md").read_text(
        encoding="utf-8"
    )
    all_checks = calibrate(grades=None, runs=2000, seed=0)
    assert calibration_markdown(all_checks) in page
