"""Throughput of the analytic engine (runs/s) beside a bare numpy reference, same process.

Run with ``make bench``. The reference samples only the completion time, by
negative-binomial aggregation of failures per segment and a gamma approximation of the
lost work: the floor of what any exact pipeline can cost. The pipeline additionally draws
every input, the engineering phases, usage and the cost breakdown. Reported: runs/s of
each and their ratio (target: pipeline within 2x of the reference; >= 50,000 runs/s for
the 16,384-chip case).
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import accelsim as acs
from accelsim.engines.inputs import BLOCK_RUNS

RUNS = 4 * BLOCK_RUNS
FAILURE_RATE = 2e-5  # per chip-hour, ~ the Llama 3 405B figure (reliability.csv)
WRITE_H, RESTART_H = 0.05, 0.25


def _scenario(chips: int, days: float) -> acs.Scenario:
    mfu = 0.4
    peak = acs.catalog.chip("h100-sxm").bf16_tflops * 1e12
    flops = days * 86400 * chips * peak * mfu
    return acs.Scenario(
        name=f"bench-{chips}",
        workload=acs.TrainingRun(params=70e9, tokens=2e12, flops=flops),
        fleet=[acs.Pool(chip="h100-sxm", count=chips, provider="aws")],
        assumptions=acs.Assumptions(mfu=mfu, failure_rate_per_chip_hour=FAILURE_RATE),
    )


def _bare_reference(chips: int, days: float, runs: int, rng: np.random.Generator) -> np.ndarray:
    rate = chips * FAILURE_RATE
    work = days * 24.0
    tau = np.sqrt(2 * WRITE_H / rate)
    segments = np.floor(work / tau)
    p = np.exp(-rate * (tau + WRITE_H))
    fails = rng.negative_binomial(segments, p, size=runs)
    # Mean loss per failure of an exponential truncated to the segment; gamma for the sum.
    loss_mean = 1 / rate - (tau + WRITE_H) / np.expm1(rate * (tau + WRITE_H))
    lost = rng.gamma(np.maximum(fails, 1e-9), loss_mean)
    return segments * (tau + WRITE_H) + fails * RESTART_H + lost


def _rate(fn: object, repeats: int = 3) -> float:
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        best = min(best, time.perf_counter() - t0)
    return RUNS / best


@pytest.mark.bench
@pytest.mark.parametrize(("chips", "days"), [(1024, 30.0), (16384, 60.0)])
def test_analytic_engine_vs_bare_reference(chips: int, days: float) -> None:
    scenario = _scenario(chips, days)
    rng = np.random.default_rng(0)
    acs.simulate(scenario, runs=BLOCK_RUNS, seed=0)  # warm caches (catalog, scipy)
    pipeline = _rate(lambda: acs.simulate(scenario, runs=RUNS, seed=1))
    bare = _rate(lambda: _bare_reference(chips, days, RUNS, rng))
    res = acs.simulate(scenario, runs=RUNS, seed=1)
    print(
        f"\n{chips} chips, {days:.0f} d: pipeline {pipeline:,.0f} runs/s, bare reference "
        f"{bare:,.0f} runs/s, ratio {bare / pipeline:.1f}x slower than bare; "
        f"mean interruptions {res.mean('interruptions'):.0f} per run"
    )
    assert pipeline > 0
