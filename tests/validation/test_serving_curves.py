"""Waits at high load against a published latency-vs-load curve (issue 28).

Oracle: ``tests/validation/data/serving_curves.csv`` (NVIDIA NIM 1.8.0, Llama 3.3 70B FP8,
TP2 on two H100, 5,000/500 tokens, closed-loop concurrency 1-250, AIPerf means; see
``serving_curves_README.md``). Harness: ``benchmarks/serving_curves.py``, which fits one
number per curve by one rule (the H100 serving efficiency that makes the model's TPOT at
the lowest load equal the published ITL), then runs the fast path at each published
achieved request rate as an open Poisson rate.

What is compared, and why only the shape: a closed-loop sweep past its plateau (C >= 100
here) holds ``C`` minus the engine's running batch in the client's own queue, so its TTFT
grows with ``C`` at a fixed rate; an open Poisson model at that rate has no such queue.
Below the published blow-up the two measure the same thing up to closed-loop arrivals
being smoother than Poisson (which makes published waits, if anything, shorter).

Measured (16 runs, seed 7; overlap 1 / overlap 0):

- fitted efficiency 0.713 / 0.723, inside the shipped CUDA prior's 0.22-0.75;
- TPOT growth (ratio to the lowest load), model over published, below the blow-up:
  0.97, 0.87, 0.73 / 0.98, 0.92, 0.87 at C = 5, 25, 50: the model's decode slows less
  with load than the engine's, most at the knee;
- TTFT growth, model over published: 0.77, 0.67, 0.64 / 0.77, 0.64, 0.70: the model's
  waits grow about a third less than the published ones, the same sign as the llm-d
  simulator's 28-71 % short waits above 50 % utilisation (their issue #330);
- sustained load (``serving_capacity``) over the published plateau (1.84 req/s): 1.61 /
  1.09: at the shipped overlap 1 the model places saturation 61 % beyond where the
  published TTFT blows up (its utilisation there 0.62); at overlap 0, 9 % beyond (0.92).

Budgets below are these measurements with a margin of about 0.05 on each ratio; points
outside the stated band (within 25 % of the published growth) are printed, not hidden.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path
from types import ModuleType

import pytest

from accelsim import catalog as _catalog

ROOT = Path(__file__).resolve().parents[2]


def _harness() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "serving_curves", ROOT / "benchmarks" / "serving_curves.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["serving_curves"] = module
    spec.loader.exec_module(module)
    return module


SC = _harness()
BAND = 0.25
"""Stated band: model growth within 25 % of the published growth counts as agreeing."""


@pytest.fixture(scope="module", params=[1.0, 0.0], ids=["overlap1", "overlap0"])
def results(request: pytest.FixtureRequest) -> list:  # type: ignore[type-arg]
    cat = SC.with_overlap(_catalog.builtin_catalog(), request.param)
    return [SC.run_curve(rows, cat) for rows in SC.load_curves().values()]


def _below_blowup(result) -> list:  # type: ignore[no-untyped-def, type-arg]
    """Points above the lowest load and below the published blow-up rate."""
    return [p for p in result.points[1:] if p.rate_rps < result.published_blowup_rps]


def test_the_curves_are_well_formed() -> None:
    curves = SC.load_curves()
    assert curves
    for rows in curves.values():
        assert rows["source_url"].str.startswith("https://").all()
        assert (rows["request_rate_rps"] > 0).all()
        assert (rows["itl_ms"] > 0).all()
        rate = rows["output_tokens_per_s"] / rows["output_tokens"]
        assert ((rate - rows["request_rate_rps"]).abs() < 1e-9).all()
        assert rows["concurrency"].is_monotonic_increasing


def test_the_fitted_efficiency_is_a_plausible_one(results) -> None:  # type: ignore[no-untyped-def]
    """One number per curve, inside the shipped CUDA prior's 90 % interval."""
    for r in results:
        assert 0.22 <= r.efficiency <= 0.75, (r.curve, r.efficiency)
        assert r.points[0].tpot_model == pytest.approx(r.points[0].itl_pub, rel=0.01)


def test_latencies_never_fall_as_the_load_rises(results) -> None:  # type: ignore[no-untyped-def]
    """Ordered by the published achieved rate (the plateau's rates are not monotone in C)."""
    for r in results:
        points = sorted(r.points, key=lambda p: p.rate_rps)
        for metric in ("ttft_model", "tpot_model"):
            values = [getattr(p, metric) for p in points]
            assert all(b >= a * (1 - 1e-9) for a, b in itertools.pairwise(values)), (metric, values)


def test_growth_below_the_blowup(results) -> None:  # type: ignore[no-untyped-def]
    """Model growth over published growth, TPOT and TTFT, at each load below the published
    blow-up: measured 0.64-0.98 (module docstring); asserted 0.60-1.05 (TPOT 0.68-1.05)."""
    for r in results:
        base = r.points[0]
        for p in _below_blowup(r):
            tpot = (p.tpot_model / base.tpot_model) / (p.itl_pub / base.itl_pub)
            ttft = (p.ttft_model / base.ttft_model) / (p.ttft_pub / base.ttft_pub)
            for name, value in (("TPOT", tpot), ("TTFT", ttft)):
                if abs(value - 1.0) > BAND:
                    print(
                        f"{r.curve} C={p.concurrency} ({p.rate_rps:.2f} req/s): model "
                        f"{name} growth is {value:.2f}x the published; outside +-{BAND:.0%}"
                    )
            assert 0.68 <= tpot <= 1.05, (r.curve, p.concurrency, tpot)
            assert 0.60 <= ttft <= 1.05, (r.curve, p.concurrency, ttft)


def test_the_model_sustains_more_than_the_published_plateau(results) -> None:  # type: ignore[no-untyped-def]
    """The model's sustained load is never below the published plateau, and at most 1.7x
    it (measured 1.61 at overlap 1, 1.09 at overlap 0): where the published TTFT blows up
    the model's replica is not yet saturated."""
    for r in results:
        ratio = r.model_sustained_rps / r.published_max_rps
        assert 1.0 <= ratio <= 1.7, (r.curve, ratio)
        at_blowup = next(p for p in r.points if p.rate_rps >= r.published_blowup_rps)
        assert not at_blowup.above_model_capacity


def test_overlap_zero_moves_saturation_toward_the_published_plateau() -> None:
    """Summing compute and memory time (overlap 0) brings the model's sustained load from
    1.61x to 1.09x the published plateau; the claim is the direction and that overlap 0 is
    within 15 % of the plateau."""
    shipped = _catalog.builtin_catalog()
    rows = next(iter(SC.load_curves().values()))
    one = SC.run_curve(rows, SC.with_overlap(shipped, 1.0))
    zero = SC.run_curve(rows, SC.with_overlap(shipped, 0.0))
    assert zero.model_sustained_rps < one.model_sustained_rps
    assert zero.model_sustained_rps / zero.published_max_rps <= 1.15
