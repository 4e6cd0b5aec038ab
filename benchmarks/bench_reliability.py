"""Speed of the exact failure sampler against bare numpy references, measured in one run.

Workload: 10,000 runs of a 16,384-chip job with 1,440 h (60 days) of work, 2e-5 failures per
chip-hour (lam = 0.33/h, MTBF 3.05 h), a 6-minute checkpoint write at Young's interval and a
15-minute restart: ~670 interruptions per run. These are benchmark settings, not priors.

Two references (``bare_references.py``, written apart from accelsim):

- exact: the least numpy that samples the same law exactly (negative-binomial counts per
  phase, one uniform per interruption for its truncated-exponential loss). Same work, so the
  ratio says how close the sampler is to a plain vectorised implementation;
- approximate: NB counts of the full segments and one gamma variable per run standing in
  for the lost time (another law; ~2 numbers per run). The ratio says what exactness costs.

Run with ``make bench``, or ``pytest benchmarks/bench_reliability.py --benchmark-only -o
addopts="" -s`` to see the print.
"""

from __future__ import annotations

import numpy as np
import pytest
from bare_references import exact_completion_hours
from pytest_benchmark.fixture import BenchmarkFixture

from accelsim.models.reliability import (
    interruption_rate_per_hour,
    sample_completion_hours,
    young_interval_hours,
)

RUNS = 10_000
CHIPS = 16_384
FAILURES_PER_CHIP_HOUR = 2e-5
WORK_HOURS = 1440.0
WRITE_HOURS = 0.1
RESTART_HOURS = 0.25
RATE = float(interruption_rate_per_hour(CHIPS, FAILURES_PER_CHIP_HOUR))
INTERVAL_HOURS = float(young_interval_hours(WRITE_HOURS, 1.0 / RATE))

_seconds: dict[str, float] = {}


def _exact(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    return sample_completion_hours(
        rng, WORK_HOURS, INTERVAL_HOURS, WRITE_HOURS, RESTART_HOURS, RATE, size=RUNS
    )


def _exact_reference(rng: np.random.Generator) -> np.ndarray:
    params = (WORK_HOURS, INTERVAL_HOURS, WRITE_HOURS, RESTART_HOURS, RATE)
    return exact_completion_hours(rng, *(np.full(RUNS, p) for p in params))


def _reference(rng: np.random.Generator) -> np.ndarray:
    """NB counts plus a moment-matched gamma loss per run: the floor for a vectorised sampler."""
    segments = WORK_HOURS // INTERVAL_HOURS
    length = INTERVAL_HOURS + WRITE_HOURS
    counts = rng.negative_binomial(segments, np.exp(-RATE * length), size=RUNS)
    kept = -np.expm1(-RATE * length)  # truncated exponential on [0, length): mean and variance
    mean = 1 / RATE - length * (1 - kept) / kept
    second = 2 / RATE**2 - (length**2 + 2 * length / RATE) * (1 - kept) / kept
    var = second - mean**2
    lost = rng.gamma(np.maximum(counts, 1) * mean**2 / var, var / mean) * (counts > 0)
    return np.asarray(segments * length + counts * RESTART_HOURS + lost)


def _report(benchmark: BenchmarkFixture, name: str) -> None:
    """Print runs/s; for a reference, also the sampler's time over the reference's."""
    if benchmark.stats is None:  # --benchmark-disable: ran once, nothing timed
        return
    seconds = float(benchmark.stats.stats.min)
    _seconds[name] = seconds
    benchmark.extra_info["runs_per_s"] = RUNS / seconds
    print(f"\n{name}: {RUNS / seconds:,.0f} runs/s")
    if name != "sampler" and "sampler" in _seconds:
        ratio = _seconds["sampler"] / seconds
        benchmark.extra_info["sampler_over_reference"] = ratio
        print(f"exact sampler / {name} time: {ratio:.2f}x")


@pytest.mark.bench
def test_sample_completion_hours(benchmark: BenchmarkFixture) -> None:
    """Exact sampler, 10,000 runs of the 16,384-chip 60-day case."""
    rng = np.random.default_rng(0)
    hours, counts = benchmark(_exact, rng)
    assert hours.shape == (RUNS,)
    assert counts.mean() > 100  # the case really has hundreds of interruptions per run
    _report(benchmark, "sampler")


@pytest.mark.bench
def test_exact_bare_reference(benchmark: BenchmarkFixture) -> None:
    """Exact bare numpy reference of the same law (same draws per run as the sampler)."""
    rng = np.random.default_rng(0)
    hours = benchmark(_exact_reference, rng)
    assert hours.shape == (RUNS,)
    _report(benchmark, "exact reference")


@pytest.mark.bench
def test_reference_negative_binomial_gamma(benchmark: BenchmarkFixture) -> None:
    """Approximate bare reference; prints the exact sampler's time against both references."""
    rng = np.random.default_rng(0)
    hours = benchmark(_reference, rng)
    assert hours.shape == (RUNS,)
    _report(benchmark, "approximate reference")
