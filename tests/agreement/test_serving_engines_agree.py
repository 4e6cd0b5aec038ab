"""The serving fast path and the request DES agree where the fast path is meant to be exact.

Same scenario, same seed, so both engines draw the same replica and rate per run (shared
input streams); the DES then draws each request. Compared, on a fixed plan at moderate load
(utilisation ~0.1-0.4 of saturation, chunked prefill, fixed lengths):

- ``chip_hours``, ``replicas_*``: exact (a fixed plan provisions the same replica-hours).
- ``utilization``: the fast path uses the mean arrival count, the DES a Poisson count of
  mean ``λT``, so per run ``DES / fast - 1`` has sd ``1/sqrt(λT)``; bound: 5 sd (plus the
  output still in flight at the horizon, under 1 %). Across runs a two-sample KS test at
  alpha = 0.001 must not reject.
- ``tpot_p50_ms``: the fast path's mean-field iteration time (Little's-law fixed point)
  against the DES's per-request median. The fixed point ignores batch-size fluctuation and
  the granularity of chunked prefill, so it is an approximation: the bound is 15 % on the
  median ratio over runs (measured 3-10 %), a stated accuracy target, not a sampling bound.
- ``ttft_p50_ms``, ``ttft_p99_ms``: the fast path's TTFT model (residual of the iteration
  in progress, the prompt's own iteration shared with those that arrived with it, M/G/1
  queueing; ``latency_under_load``) against the DES's per-window percentiles. Two parts:
  (a) model accuracy, stated in ``latency_under_load``'s Notes: the three-cumulant
  expansion of a near-uniform residual errs by a few % at the median and overstates the
  p99 by up to ``0.17·T`` (~5 % here, T ~ 10 ms of a ~30 ms p99), and smears the rare
  multi-prompt modes that set the p99: budget 5 % at p50 and 10 % at p99 on the median
  ratio over runs; (b) sampling, per run: a window of ``n`` requests gives its
  ``q``-quantile a relative sd of about ``sqrt(q(1 − q)/n) / (x_q f(x_q))``; with a tail
  scale of ~15 % of the p99 (``x f(x) / (1 − q)`` ~ 1/0.15) that is ``0.15·sqrt(1/(0.01·n))``
  at p99 and ``0.5/sqrt(n)·T/x_50`` (~0.5/sqrt(n)) at p50, divided by sqrt(windows) for the
  average over windows. Each run must lie within (a) + 3 sd of (b). Before this model
  (M/D/1 prefill only, no residual, no sharing) the ratios were 1.36 (p50) and 2.2 (p99).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

import accelsim as acs
from accelsim import catalog as _catalog
from accelsim.engines import simulate_serving_block, simulate_serving_fast

CAT = _catalog.builtin_catalog()

RUNS = 24


def _scenario() -> acs.Scenario:
    svc = acs.Serving(
        model="llama-3.1-8b",
        precision="fp8",
        rate_rps=acs.Uniform(low=4.0, high=12.0),
        input_tokens=400,
        output_tokens=150,
        slo=acs.SLO(ttft_ms=2000, tpot_ms=100),
        chips_per_replica=1,
        prefill_chunk_tokens=2048,
        horizon_days=0.25 / 24,
    )
    return acs.Scenario(
        name="agree", workload=svc, fleet=[acs.Pool(chip="h100-sxm", count=1, provider="aws")]
    )


def test_fast_path_and_des_agree() -> None:
    s = _scenario()
    root = np.random.SeedSequence(2024)
    fast, fast_draws = simulate_serving_fast(s, root, 0, RUNS, cat=CAT)
    des, des_draws = simulate_serving_block(s, root, 0, RUNS, cat=CAT)
    rate = fast_draws.drawn["workload.rate_rps"]
    assert (des_draws.drawn["workload.rate_rps"] == rate).all()

    for m in ("chip_hours", "replicas_peak", "replicas_mean"):
        assert np.allclose(des[m], fast[m], rtol=1e-12), m

    work = s.workload
    assert isinstance(work, acs.Serving)
    expected_requests = rate * work.horizon_days * 86400.0
    ratio = des["utilization"] / fast["utilization"]
    assert (np.abs(ratio - 1.0) <= 5.0 / np.sqrt(expected_requests) + 0.01).all()
    assert stats.ks_2samp(des["utilization"], fast["utilization"]).pvalue > 1e-3

    tpot = np.median(des["tpot_p50_ms"] / fast["tpot_p50_ms"])
    assert abs(tpot - 1.0) <= 0.15, tpot

    windows = work.horizon_days * 24 * 60 / work.burst_window_minutes
    per_window = expected_requests / windows
    for metric, model, sampling in (
        ("ttft_p50_ms", 0.05, 0.5 / np.sqrt(per_window)),
        ("ttft_p99_ms", 0.10, 0.15 * np.sqrt(1.0 / (0.01 * per_window))),
    ):
        ratio = des[metric] / fast[metric]
        assert abs(np.median(ratio) - 1.0) <= model, (metric, np.median(ratio))
        bound = model + 3.0 * sampling / np.sqrt(windows)
        assert (np.abs(ratio - 1.0) <= bound).all(), (metric, ratio, bound)
    assert (des["finished"] == 1.0).all()
    assert (fast["finished"] == 1.0).all()
