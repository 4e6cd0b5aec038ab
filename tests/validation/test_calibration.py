"""Calibration against published training runs (the library's calibration claim).

Oracle: published wall-clock days and chip-hours of real runs
(``catalog/data/published_runs.csv``, each row with its source and its reading). With the
published configuration and the catalog priors for everything unpublished, the predicted
P5-P95 interval should hold the published figure for at least 80 % of the counted A and A-
figures (the issue's target). The model reaches 11 of 11 (100 %); Nemotron-4 15B is shown
but not counted (its stage days are its stage MFUs restated, see the CSV and
``test_nemotron_stage_days_are_throughput_derived``), and no counted A/A- figure is
missed. So this test is a labelled regression guard of the claim, not a
validation tuned to pass: a change that loses a covered figure, or newly covers the miss,
fails here and must update docs/calibration.md (``accelsim calibrate``).

Random numbers: the miss sets were checked with seeds 0-7. The nearest covered figure is
DeepSeek-V3 (FP8, under the BF16-based MoE MFU prior): 0.3-0.9 % inside P5 with seeds 0, 1
and 4, just outside with seeds 2, 3 and 5-7 (as before issue 29's changes, which do not
move it: its figure is failure-free and its chips are below the frontier threshold), so it
is the one expectation that a change in how the MFU inputs are drawn can flip. The next
nearest sit 3-4 % (Falcon-7B) and 4-6 % (LLaMA-65B) inside P5. The leave-one-out coverage
is 16-17 of 21 and the median |P50 error| 18.8-19.7 % over those seeds.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from accelsim.calibration import (
    CLAIM_GRADES,
    Check,
    PublishedRun,
    RunStage,
    calibrate,
    calibration_page,
    coverage,
    loo_summary,
    published_runs,
    simulated_samples,
)

RUNS = 2000
SEED = 0

# (run, metric) pairs the model does not cover among counted A/A- figures, and why.
KNOWN_MISSES: set[tuple[str, str]] = set()
# OLMoE is covered since the MoE MFU prior; DeepSeek-V3 (FP8) sits at P5-P6 under it.


@pytest.fixture(scope="module")
def all_checks() -> list[Check]:
    return calibrate(grades=None, runs=RUNS, seed=SEED)


@pytest.fixture(scope="module")
def checks(all_checks: list[Check]) -> list[Check]:
    return [c for c in all_checks if c.run.grade in CLAIM_GRADES]


def test_coverage_of_a_and_a_minus_runs(checks: list[Check]) -> None:
    """The claim: >= 80 % of counted A/A- figures covered, and exactly the known misses."""
    assert coverage(checks, CLAIM_GRADES) >= 0.8
    misses = {(c.run.run_id, c.metric) for c in checks if c.counted and not c.covered}
    assert misses == KNOWN_MISSES


# Leave-one-out misses (no own MFU) among all counted figures, and why (each row's miss_note
# on the page): GLM-130B's 60 days (a calendar window of a first run of its recipe at 100B
# scale; its MFU, 0.325, is low for the A100 prior) and BloombergGPT's 53 days (an implied
# MFU of 0.24 over the clock, loss spikes and rollbacks in its chronicle) above; Falcon-180B's
# chip-hours (an implied MFU ~0.48 with downtime, the top of the A100 prior) and Phi-2's 14
# days (an implied MFU of 0.63, above every published A100 figure) below.
# GPT-3 175B's 14.8 days (10,000 V100 in 2020) are covered since a run that starts before
# priors.frontier_recovery_from_year (2023) restarts from synchronous checkpoints at any size
# and V100 has its own MFU ceiling (priors.mfu_ceiling_by_chip.v100, from Megatron-LM and
# ZeRO, not from GPT-3): before, it got today's frontier recovery and the A100-era ceiling.
KNOWN_LOO_MISSES: set[tuple[str, str]] = {
    ("glm_130b", "training_days"),
    ("falcon_180b", "chip_hours"),
    ("bloomberggpt_50b", "training_days"),
    ("phi_2", "training_days"),
}


def test_leave_one_out_is_reported_beside_in_sample(all_checks: list[Check]) -> None:
    """LOO drops only the row's own MFU: rows without one get the same interval; the miss
    set is the known one and the LOO coverage is on the page beside the in-sample one."""
    for c in all_checks:
        if not c.run.stages and c.run.mfu_low is None:
            assert (c.loo_low, c.loo_median, c.loo_high) == (c.low, c.median, c.high)
    misses = {(c.run.run_id, c.metric) for c in all_checks if c.counted and not c.covered_loo}
    assert misses == KNOWN_LOO_MISSES
    assert coverage(all_checks, CLAIM_GRADES, loo=True) >= 0.75
    page = calibration_page(all_checks, runs=RUNS, seed=SEED)
    assert "leave-one-out" in page
    assert "LOO covered" in page


def test_leave_one_out_meets_the_issue_targets(all_checks: list[Check]) -> None:
    """Issue 29's targets on the held-out published runs, all grades, leave-one-out: at least
    75 % of the counted figures inside P5-P95 and a median |published / P50 - 1| of at most
    20 %. The by-class breakdown is on the page (docs/calibration.md)."""
    overall = loo_summary(all_checks)[0]
    assert overall.counted == sum(c.counted for c in all_checks) >= 21
    assert overall.covered / overall.counted >= 0.75
    assert overall.median_error <= 0.20
    by_kind = {s.name: s for s in loo_summary(all_checks) if s.dimension == "TPU vs GPU"}
    assert set(by_kind) == {"GPU", "TPU"}
    assert by_kind["TPU"].counted >= 5


def test_a_pre_2023_run_restarts_from_synchronous_checkpoints() -> None:
    """GPT-3's row (10,000 V100, started 2020) gets standard recovery by its start year;
    the same configuration planned now gets frontier recovery by its size, and trains
    faster: the year, not a row override, moves it."""
    gpt3 = next(r for r in published_runs() if r.run_id == "gpt3_175b")
    assert gpt3.start_year == 2020
    assert gpt3.chips >= 4096
    then = simulated_samples(gpt3, runs=500, seed=SEED)["days.wall_clock"]
    now = simulated_samples(dataclasses.replace(gpt3, start_year=None), runs=500, seed=SEED)
    assert np.median(then) > 1.02 * np.median(now["days.wall_clock"])


def test_instability_widens_the_wall_clock_upper_tail(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rollback term adds wall-clock time and leaves failure-free time alone: with it,
    GLM-130B's simulated P95 days exceed those without it (rollbacks sampled as none),
    by more than its P5 moves; its compute days are unchanged."""
    from accelsim.models import instability

    glm = next(r for r in published_runs() if r.run_id == "glm_130b")
    with_term = simulated_samples(glm, runs=1000, seed=SEED)
    monkeypatch.setattr(instability, "rollback_days", lambda counts, *a: np.zeros(np.shape(counts)))
    without = simulated_samples(glm, runs=1000, seed=SEED)
    np.testing.assert_array_equal(with_term["days.throughput"], without["days.throughput"])
    lo_w, hi_w = np.quantile(with_term["days.wall_clock"], [0.05, 0.95])
    lo_0, hi_0 = np.quantile(without["days.wall_clock"], [0.05, 0.95])
    assert hi_w - hi_0 > max(lo_w - lo_0, 0.0)
    assert hi_w > 1.03 * hi_0


def test_every_published_figure_is_checked(checks: list[Check]) -> None:
    expected = sum(
        (r.published_days is not None) + (r.published_chip_hours is not None)
        for r in published_runs(CLAIM_GRADES)
    )
    assert len(checks) == expected


def test_excluded_figures_say_why_and_do_not_count(checks: list[Check]) -> None:
    """Exactly LaMDA and Nemotron-4 are excluded, each with a stated reason."""
    excluded = {c.run.run_id for c in checks if not c.counted}
    assert excluded == {"lamda_137b", "nemotron4_15b"}
    assert all(len(c.run.excluded_because) > 40 for c in checks if not c.counted)


def test_every_counted_miss_has_a_reason(all_checks: list[Check]) -> None:
    """Each counted miss on the page carries its reason (``miss_note``), all grades."""
    for c in all_checks:
        if c.counted and not c.covered:
            assert c.run.miss_note, c.run.run_id


def _nemotron() -> PublishedRun:
    return next(r for r in published_runs() if r.run_id == "nemotron4_15b")


# Nemotron-4 15B technical report (arXiv 2402.16819), Table 2 as transcribed by Epoch AI
# (shared/reference/validation/training_runs.csv): stage days 0.8, 0.4 and 11.9.
NEMOTRON_STAGE_DAYS = (0.8, 0.4, 11.9)
NEMOTRON_GPU_HOURS = 687_514  # sum(GPUs x stage days x 24), training_runs.csv


def test_nemotron_stage_days_are_throughput_derived() -> None:
    """The reading behind excluding Nemotron-4: at 15.7B parameters the published stage
    tokens over the published stage MFUs give the published stage days. Each stage's
    failure-free days must match its published figure within that figure's rounding
    (0.05 d), and the GPU-hours within the rounding carried into them
    (sum of GPUs x 0.05 d x 24 h = 5,530 GPU-h). A run with downtime in its days, or
    another token split or parameter count, would not match."""
    run = _nemotron()
    peak_flops = 989e12  # H100 SXM dense BF16, the peak the paper's MFUs refer to
    for stage, published in zip(run.stages, NEMOTRON_STAGE_DAYS, strict=True):
        days = 6.0 * run.params_active * stage.tokens / (stage.chips * peak_flops * stage.mfu)
        assert abs(days / 86_400.0 - published) <= 0.05 + 1e-9, (stage, days / 86_400.0)
    samples = simulated_samples(run, runs=64, seed=SEED)
    rounding = sum(s.chips for s in run.stages) * 0.05 * 24.0
    assert np.all(np.abs(samples["chip_hours.throughput"] - NEMOTRON_GPU_HOURS) <= rounding)


def test_a_single_stage_run_equals_the_unstaged_run() -> None:
    """The staged path adds nothing of its own: one stage carrying the row's chips,
    tokens and MFU gives bit-identical samples to the unstaged row (same seed, same
    input names, so the same draws)."""
    run = next(r for r in published_runs() if r.run_id == "stablelm_3b_4e1t")
    assert run.tokens is not None
    fixed = dataclasses.replace(run, mfu_low=0.4, mfu_high=0.4)
    staged = dataclasses.replace(
        fixed, stages=(RunStage(chips=run.chips, tokens=run.tokens, mfu=0.4),)
    )
    a = simulated_samples(fixed, runs=256, seed=SEED)
    b = simulated_samples(staged, runs=256, seed=SEED)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def test_stages_sum_run_by_run() -> None:
    """A staged run's chip-hours are the sum over stages of chips x days x 24, per run:
    checked against the stages simulated one by one (exact up to float rounding)."""
    run = _nemotron()
    total = simulated_samples(run, runs=128, seed=SEED)["chip_hours.wall_clock"]
    parts = [
        simulated_samples(dataclasses.replace(run, stages=(s,), chips=s.chips, tokens=s.tokens),
                          runs=128, seed=SEED)["chip_hours.wall_clock"]
        for s in run.stages
    ]  # fmt: skip
    np.testing.assert_allclose(total, np.sum(parts, axis=0), rtol=1e-12)


def test_stage_tokens_must_add_up() -> None:
    """A row whose stages do not sum to its tokens is rejected, not silently rescaled."""
    run = _nemotron()
    with pytest.raises(ValueError, match="stage tokens"):
        dataclasses.replace(run, tokens=7.0e12)


def test_docs_page_is_current(all_checks: list[Check]) -> None:
    """docs/calibration.md is the page this seed produces (regenerate: accelsim calibrate)."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "calibration.md").read_text(
        encoding="utf-8"
    )
    assert page == calibration_page(all_checks, runs=RUNS, seed=SEED)
