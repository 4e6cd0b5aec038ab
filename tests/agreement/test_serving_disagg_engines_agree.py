"""The disaggregated fast path and the disaggregated request DES agree at moderate load.

Same scenario, same seed: both engines draw the same two replicas, rate and plan per run
(shared input streams, the same ``disaggregated_stages``); the DES then draws each request.
One H100 prefill replica and one H200 decode replica, Llama 3.1 8B FP8, 15 minutes, fixed
plan; prefill load 0.18-0.55 of saturation, decode 0.05-0.15. Ratios DES / fast measured
with seed 2024 (24 runs, fixed 1,000-token prompts; the fast path's prefill replica
batches its queued prompts, as the DES's does): ``ttft_p50_ms`` median 1.000 (runs
0.89-1.01), ``ttft_p99_ms`` 0.973 (0.92-1.02), ``tpot_p50_ms`` 1.001 (0.997-1.003),
``utilization`` 1.000 (0.98-1.02); with a LogNormal(200, 4000) prompt law (16 runs, prefill
load 0.15-0.44) ``ttft_p50_ms`` 1.002 (0.94-1.04), ``ttft_p99_ms`` 0.973 (0.85-1.23),
``tpot_p50_ms`` 0.999 (0.994-1.003), ``kv_transfer_ms`` 0.999 (0.97-1.02). With one prompt
per iteration in the fast path, ``ttft_p99_ms`` read 0.960 (0.86-1.02) and 1.12
(0.93-1.44); at ``compute_memory_overlap`` 0 (the weights' read shared by a batch) 0.81
where the batch queue reads 0.98 (0.93-1.03), ``ttft_p50_ms`` 0.98 (0.90-1.06).

Bounds:

- ``chip_hours``, ``prefill_/decode_chip_hours``, ``replicas_*``: exact (a fixed plan).
- ``utilization``: Poisson count of mean ``λT`` against the mean: 5 sd ``1/sqrt(λT)`` plus
  1 % in flight at the horizon (the colocated agreement test's bound), and a KS test.
- ``ttft_p50_ms``: 5 % on the median ratio over runs, 15 % per run (fixed prompts: with
  ``ρ`` near 1/2 the median of the wait mixture sits at the edge of its atom at zero, so a
  window's p50 jumps between the two; 10 % on the wide law, whose p50 is not at an atom).
- ``ttft_p99_ms`` (fixed prompts): 10 % on the median ratio, 20 % per run (both engines
  batch the waiting prompts into one prefill iteration; the fast path's batch queue is
  within 10 % of a simulation of that queue, tests/unit/test_serving_prefill_batch.py).
- ``tpot_p50_ms``: 2 % on the median ratio, 3 % per run (decode-only iterations at small
  batch: the fixed point is nearly exact).
- ``kv_transfer_ms``: exact for one prompt length; on the wide law 2 % on the median and 5 %
  per run (the fast path's mean over the prompt law's nodes, the DES the run's requests:
  sd ~1.1/sqrt(n) ~ 1.5 %).
- ``ttft_p99_ms`` (wide law): 20 % on the median ratio, 50 % per run. The fast path takes the
  prompt law at the nodes of ``node_edges`` (39 cells, 23 of them above the 88.7th
  percentile); with 32 equiprobable nodes, as before, the ratio was 1.71 (1.43-2.28; seed 7
  1.60), the p99 set by one averaged node for the top 3 % of prompts. What remains: the
  fast path's p99 is up to 3.4 % off a 4,096-cell quadrature of the same law
  (tests/unit/test_serving_nodes.py), and a 15-minute run's p99 rests on its 50-100 requests
  above it (bootstrap SE of the median ratio 0.05).

Not bounded, measured and stated in docs/serving.md: ``tpot_p99_ms`` on the wide law 1.04.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

import accelsim as acs
from accelsim import catalog as _catalog
from accelsim.engines import simulate_serving_block, simulate_serving_fast

CAT = _catalog.builtin_catalog()


def _scenario(rate: acs.Uniform, prompts: float | acs.LogNormal) -> acs.Scenario:
    svc = acs.Serving(
        model="llama-3.1-8b", precision="fp8", rate_rps=rate, input_tokens=prompts,
        output_tokens=150, slo=acs.SLO(ttft_ms=2000, tpot_ms=100), horizon_days=0.25 / 24,
        disaggregated=acs.Disaggregation(
            prefill_pool=0, decode_pool=1, prefill_chips_per_replica=1,
            decode_chips_per_replica=1,
        ),
    )  # fmt: skip
    fleet = [
        acs.Pool(chip="h100-sxm", count=1, provider="aws"),
        acs.Pool(chip="h200", count=1, provider="aws"),
    ]
    return acs.Scenario(name="agree-disagg", workload=svc, fleet=fleet)


def _ratios(
    s: acs.Scenario, runs: int
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], np.ndarray]:
    root = np.random.SeedSequence(2024)
    fast, fast_draws = simulate_serving_fast(s, root, 0, runs, cat=CAT)
    des, des_draws = simulate_serving_block(s, root, 0, runs, cat=CAT)
    rate = fast_draws.drawn["workload.rate_rps"]
    assert (des_draws.drawn["workload.rate_rps"] == rate).all()
    return fast, des, rate


def _within(ratio: np.ndarray, median: float, each: float, name: str) -> None:
    assert abs(float(np.median(ratio)) - 1.0) <= median, (name, np.median(ratio))
    assert (np.abs(ratio - 1.0) <= each).all(), (name, ratio)


def test_disaggregated_engines_agree_on_one_prompt_length() -> None:
    s = _scenario(acs.Uniform(low=8.0, high=20.0), 1000)
    fast, des, rate = _ratios(s, 24)
    for m in (
        "chip_hours", "prefill_chip_hours", "decode_chip_hours", "replicas_peak",
        "replicas_mean", "prefill_replicas_peak", "decode_replicas_peak", "kv_transfer_ms",
    ):  # fmt: skip
        assert np.allclose(des[m], fast[m], rtol=1e-12), m
    expected_requests = rate * 0.25 * 3600.0
    ratio = des["utilization"] / fast["utilization"]
    assert (np.abs(ratio - 1.0) <= 5.0 / np.sqrt(expected_requests) + 0.01).all()
    assert stats.ks_2samp(des["utilization"], fast["utilization"]).pvalue > 1e-3
    _within(des["ttft_p50_ms"] / fast["ttft_p50_ms"], 0.05, 0.15, "ttft_p50")
    _within(des["ttft_p99_ms"] / fast["ttft_p99_ms"], 0.10, 0.20, "ttft_p99")
    _within(des["tpot_p50_ms"] / fast["tpot_p50_ms"], 0.02, 0.03, "tpot_p50")
    assert (des["finished"] == 1.0).all()
    assert (fast["finished"] == 1.0).all()
    assert (des["slo_attainment"] == 1.0).all()


def test_disaggregated_engines_agree_on_a_wide_prompt_law() -> None:
    s = _scenario(acs.Uniform(low=5.0, high=12.0), acs.LogNormal(low=200, high=4000))
    fast, des, _ = _ratios(s, 16)
    assert np.allclose(des["chip_hours"], fast["chip_hours"], rtol=1e-12)
    _within(des["ttft_p50_ms"] / fast["ttft_p50_ms"], 0.05, 0.10, "ttft_p50")
    _within(des["tpot_p50_ms"] / fast["tpot_p50_ms"], 0.02, 0.03, "tpot_p50")
    _within(des["kv_transfer_ms"] / fast["kv_transfer_ms"], 0.02, 0.05, "kv_transfer")
    _within(des["ttft_p99_ms"] / fast["ttft_p99_ms"], 0.20, 0.50, "ttft_p99")
