"""Waits at high load against published latency-vs-load curves (issue 28).

Oracle: ``tests/validation/data/serving_curves.csv``: three NVIDIA NIM concurrency sweeps of
Llama 3.3 70B FP8, TP2 (AIPerf means; see ``serving_curves_README.md``): 5,000/500 tokens on
two H100 (C 1-250, plateau 1.84 req/s, TTFT x10 from C = 50 to 100), 500/2,000 on two H100
(C 1-200, TTFT x16 at C = 200, throughput still rising) and 500/2,000 on two H200 (C 1-250, no
blow-up). Harness: ``benchmarks/serving_curves.py``: one number fitted per curve by one rule
(the chip's serving efficiency that makes the model's TPOT at the lowest load equal the
published ITL), then the fast path at each published achieved request rate as an open
Poisson rate; compared are each latency's growth over its lowest-load value, on the points
below the published blow-up and below the model's own saturation, and the sustained load.

Measured (16 runs, seed 7), overlap 1 / overlap 0:

- fitted efficiencies 0.54-0.71 / 0.54-0.72, inside the shipped CUDA prior's 0.22-0.75;
- TPOT growth, model over published: 0.68-1.05 / 0.87-1.76. At overlap 1 the model's decode
  slows less with load than the engines' (0.68-0.73 at the highest compared loads); at
  overlap 0 it slows more on the 500/2,000 H200 curve (1.26-1.76 from C = 50), where the
  model saturates at 2.92 req/s, below the 3.10 the engine sustained;
- TTFT growth, model over published: 0.13-0.77 (both). Two causes, not separated here: the
  model's queueing waits grow less (the llm-d simulator's sign: 28-71 % short above 50 %
  utilisation, their issue #330), and a closed-loop sweep with fixed lengths keeps its
  clients in phase, so prompts arrive in bursts of about C even at 4 % utilisation
  (500/2,000 on H100: published TTFT x2.65 from C = 1 to 5, about (5 + 1)/2 prefills), which
  an open Poisson model cannot show;
- sustained load (``serving_capacity``) over the published maximum: 1.42-1.64 / 0.94-1.09;
  on the one plateaued curve 1.61 / 1.09 (at overlap 1 the model's utilisation where the
  published TTFT blows up is 0.62).

Assertions below are these measurements with a margin of 0.03-0.05 (per overlap where they
differ); points outside a stated band (within 25 % of the published growth) are printed.
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
def results(request: pytest.FixtureRequest) -> tuple[float, list]:  # type: ignore[type-arg]
    cat = SC.with_overlap(_catalog.builtin_catalog(), request.param)
    return request.param, [SC.run_curve(rows, cat) for rows in SC.load_curves().values()]


def _compared(result) -> list:  # type: ignore[no-untyped-def, type-arg]
    """Points above the lowest load, below the published blow-up (every point of a curve
    without one) and below the model's own saturation (there an open model's latency is
    bounded by its horizon, not comparable)."""
    return [
        p
        for p in result.points[1:]
        if (not result.blows_up or p.rate_rps < result.published_blowup_rps)
        and not p.above_model_capacity
    ]


def test_the_curves_are_well_formed() -> None:
    curves = SC.load_curves()
    assert len(curves) >= 3
    for rows in curves.values():
        assert rows["source_url"].str.startswith("https://").all()
        assert (rows["request_rate_rps"] > 0).all()
        assert (rows["itl_ms"] > 0).all()
        rate = rows["output_tokens_per_s"] / rows["output_tokens"]
        assert ((rate - rows["request_rate_rps"]).abs() < 1e-9).all()
        assert rows["concurrency"].is_monotonic_increasing
        assert rows["confidence"].str.match(r"^(high|medium): ").all()


def test_the_fitted_efficiency_is_a_plausible_one(results) -> None:  # type: ignore[no-untyped-def]
    """One number per curve, inside the shipped CUDA prior's 90 % interval."""
    for r in results[1]:
        assert 0.22 <= r.efficiency <= 0.75, (r.curve, r.efficiency)
        assert r.points[0].tpot_model == pytest.approx(r.points[0].itl_pub, rel=0.01)


def test_latencies_never_fall_as_the_load_rises(results) -> None:  # type: ignore[no-untyped-def]
    """Ordered by the published achieved rate (the plateau's rates are not monotone in C)."""
    for r in results[1]:
        points = sorted(r.points, key=lambda p: p.rate_rps)
        for metric in ("ttft_model", "tpot_model"):
            values = [getattr(p, metric) for p in points]
            assert all(b >= a * (1 - 1e-9) for a, b in itertools.pairwise(values)), (metric, values)


# Measured TPOT growth, model over published, on the compared points (module docstring):
# overlap 1: 0.68-1.05; overlap 0: 0.87-1.76. Asserted with about 0.03-0.05 of margin.
TPOT_GROWTH = {1.0: (0.65, 1.10), 0.0: (0.84, 1.80)}


def test_growth_below_the_blowup(results) -> None:  # type: ignore[no-untyped-def]
    """Model growth over published growth at each compared load. TPOT within the measured
    band of its overlap; TTFT never more than the published growth (the model's waits are
    never longer; measured 0.13-0.77, see the module docstring for why so much shorter)."""
    overlap, curves = results
    low, high = TPOT_GROWTH[overlap]
    for r in curves:
        base = r.points[0]
        for p in _compared(r):
            tpot = (p.tpot_model / base.tpot_model) / (p.itl_pub / base.itl_pub)
            ttft = (p.ttft_model / base.ttft_model) / (p.ttft_pub / base.ttft_pub)
            for name, value in (("TPOT", tpot), ("TTFT", ttft)):
                if abs(value - 1.0) > BAND:
                    print(
                        f"overlap {overlap}: {r.curve} C={p.concurrency} ({p.rate_rps:.2f} "
                        f"req/s): model {name} growth is {value:.2f}x the published; "
                        f"outside +-{BAND:.0%}"
                    )
            assert low <= tpot <= high, (r.curve, p.concurrency, tpot)
            assert ttft <= 1.05, (r.curve, p.concurrency, ttft)


# Measured sustained load over the published maximum: overlap 1: 1.42-1.64 (5000/500 on
# H100, a plateau: 1.61); overlap 0: 0.94-1.09 (500/2000 on H100 0.99 and H200 0.94: below a
# rate the engine sustained).
SUSTAINED = {1.0: (1.0, 1.7), 0.0: (0.9, 1.15)}


def test_sustained_load_against_the_published_maximum(results) -> None:  # type: ignore[no-untyped-def]
    """At overlap 1 the model sustains more than every published maximum (optimistic on
    the one plateaued curve by 61 %); at overlap 0 it is within 10 % below to 15 % above,
    i.e. below two rates the engines demonstrably sustained."""
    overlap, curves = results
    low, high = SUSTAINED[overlap]
    for r in curves:
        ratio = r.model_sustained_rps / r.published_max_rps
        assert low <= ratio <= high, (r.curve, ratio)
        if overlap == 1.0:
            at_blowup = next(p for p in r.points if p.rate_rps >= r.published_blowup_rps)
            assert not at_blowup.above_model_capacity


def test_overlap_zero_lowers_every_sustained_load() -> None:
    """Summing compute and memory time (overlap 0) lowers the model's sustained load on
    every curve, to within 15 % of the plateau where the curve has one."""
    shipped = _catalog.builtin_catalog()
    for rows in SC.load_curves().values():
        one = SC.run_curve(rows, SC.with_overlap(shipped, 1.0))
        zero = SC.run_curve(rows, SC.with_overlap(shipped, 0.0))
        assert zero.model_sustained_rps < one.model_sustained_rps
        if zero.plateau:
            assert zero.model_sustained_rps / zero.published_max_rps <= 1.15
