"""Serving fast path with disaggregated prefill and decode pools: runs per CPU-second.

Run with ``make bench``. No target of its own (issue 13 sets >= 10,000 runs/s for the
colocated fast path, ``bench_serving_fast.py``); printed as a ratio to the colocated fast
path measured in the same run, on the same 30-day hourly study: Llama 3.1 8B FP8, an
uncertain 20-60 requests/s, log-normal prompts, follow-demand scaling; colocated on 128 H100,
disaggregated on 64 H100 (prefill) + 64 H200 (decode). The disaggregated pass evaluates the
TTFT quantiles of the prefill table by bisection over 32 prompt nodes
(``accelsim.models.serving.prefill_latency``), most of its time.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

import accelsim as acs
from accelsim import catalog as _catalog
from accelsim.engines import simulate_serving_fast

CAT = _catalog.builtin_catalog()
RUNS = 4096
ROUNDS = 3


def _scenario(disaggregated: bool) -> acs.Scenario:
    common: dict[str, Any] = {
        "model": "llama-3.1-8b",
        "precision": "fp8",
        "rate_rps": acs.Uniform(low=20, high=60),
        "input_tokens": acs.LogNormal(low=500, high=8000),
        "output_tokens": 200,
        "slo": acs.SLO(ttft_ms=1500, tpot_ms=60),
        "horizon_days": 30,
        "scaling": "follow_demand",
    }
    if disaggregated:
        svc = acs.Serving(
            **common,
            disaggregated=acs.Disaggregation(
                prefill_chips_per_replica=1, decode_chips_per_replica=1
            ),
        )
        fleet = [
            acs.Pool(chip="h100-sxm", count=64, provider="aws"),
            acs.Pool(chip="h200", count=64, provider="aws"),
        ]
    else:
        svc = acs.Serving(**common, chips_per_replica=1, prefill_chunk_tokens=2048)
        fleet = [acs.Pool(chip="h100-sxm", count=128, provider="aws")]
    return acs.Scenario(name="bench", workload=svc, fleet=fleet)


def _runs_per_cpu_second(s: acs.Scenario) -> float:
    root = np.random.SeedSequence(1)
    simulate_serving_fast(s, root, 0, 256, cat=CAT)  # warm
    best = np.inf
    for _ in range(ROUNDS):
        start = time.process_time()
        data, _ = simulate_serving_fast(s, root, 0, RUNS, cat=CAT)
        best = min(best, time.process_time() - start)
        assert all(np.isfinite(v).all() for v in data.values())
    return RUNS / best


def test_disaggregated_runs_per_second(benchmark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    rates = {
        "colocated": _runs_per_cpu_second(_scenario(False)),
        "disaggregated": _runs_per_cpu_second(_scenario(True)),
    }
    benchmark.extra_info.update({f"{k} runs/s": round(v) for k, v in rates.items()})
    benchmark.pedantic(
        simulate_serving_fast,
        args=(_scenario(True), np.random.SeedSequence(1), 0, 1024),
        kwargs={"cat": CAT},
        rounds=1,
        iterations=1,
    )
    with capsys.disabled():
        print(f"\nserving fast path, 30 days hourly, {RUNS:,} runs (CPU time, best of {ROUNDS})")
        for name, r in rates.items():
            print(f"  {name:14s} {r:>10,.0f} runs/s")
        print(f"  disaggregated / colocated: {rates['disaggregated'] / rates['colocated']:.2f}")
    assert rates["disaggregated"] > 0.0
