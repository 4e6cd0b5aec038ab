"""The serving fast path and the request DES agree where the fast path is meant to be exact.

Same scenario, same seed, so both engines draw the same replica and rate per run (shared
input streams); the DES then draws each request. Compared, on a fixed plan at moderate load
(utilisation ~0.1-0.4 of saturation, chunked prefill, fixed lengths):

- ``chip_hours``, ``replicas_*``: exact (a fixed plan provisions the same replica-hours).
- ``utilization``: the fast path uses the mean arrival count, the DES a Poisson count of
  mean ``λT``, so per run ``DES / fast - 1`` has sd ``1/sqrt(λT)``; bound: 5 sd (plus the
  output still in flight at the horizon, under 1 %). Across runs a two-sample KS test at
  alpha = 0.001 must not reject.
- ``tpot_p50_ms``, ``tpot_p99_ms``: the fast path's decode fixed point with each prompt's
  interference (``latency_under_load``) against the DES's per-window percentiles of the
  per-request TPOT: 5 % on the median ratio over runs and 10 % per run (measured within
  2.5 %), a stated accuracy target, not a sampling bound.
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

from typing import Any

import numpy as np
import pytest
from scipy import stats
from tests.serving_overlap import OVERLAPS, at_overlap

import accelsim as acs
from accelsim import catalog as _catalog
from accelsim.engines import simulate_serving_block, simulate_serving_fast

CAT = _catalog.builtin_catalog()

RUNS = 24


def _scenario(
    chunk: int | None = 2048, *, name: str = "agree", pool: acs.Pool | None = None, **changes: Any
) -> acs.Scenario:
    """Llama 3.1 8B FP8 on one H100 at 4-12 requests/s, 400-token prompts, 150 output
    tokens, 15 minutes; ``changes`` replace Serving fields, ``pool`` the fleet's pool."""
    fields: dict[str, Any] = {
        "model": "llama-3.1-8b",
        "precision": "fp8",
        "rate_rps": acs.Uniform(low=4.0, high=12.0),
        "input_tokens": 400,
        "output_tokens": 150,
        "slo": acs.SLO(ttft_ms=2000, tpot_ms=100),
        "chips_per_replica": 1,
        "prefill_chunk_tokens": chunk,
        "horizon_days": 0.25 / 24,
    }
    fleet = [pool or acs.Pool(chip="h100-sxm", count=1, provider="aws")]
    return acs.Scenario(name=name, workload=acs.Serving(**fields | changes), fleet=fleet)


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

    _assert_tpot_agrees(des, fast)

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


def _assert_tpot_agrees(des: dict[str, np.ndarray], fast: dict[str, np.ndarray]) -> None:
    """Fixed 400-token prompts: TPOT p50 and p99 within 5 % on the median ratio over runs
    (measured 1.002 and 0.995 chunked, 1.004 and 0.970 prefill-first; before the prompt
    interference model, 1.02 and 1.03, 1.09 and 1.16) and 10 % on every run."""
    for metric in ("tpot_p50_ms", "tpot_p99_ms"):
        ratio = des[metric] / fast[metric]
        assert abs(np.median(ratio) - 1.0) <= 0.05, (metric, np.median(ratio))
        assert (np.abs(ratio - 1.0) <= 0.10).all(), (metric, ratio)


def test_prefill_first_tpot_agrees_on_fixed_prompts() -> None:
    """Prefill-first (``prefill_chunk_tokens=0``): every prompt's iteration stalls the
    decoding sequences; TPOT held as in the chunked case above."""
    s = _scenario(chunk=0)
    root = np.random.SeedSequence(2024)
    fast, _ = simulate_serving_fast(s, root, 0, RUNS, cat=CAT)
    des, _ = simulate_serving_block(s, root, 0, RUNS, cat=CAT)
    _assert_tpot_agrees(des, fast)


def _wide(chunk: int) -> acs.Scenario:
    return _scenario(chunk, name="agree-wide", input_tokens=acs.LogNormal(low=50, high=8000))


def _median_se(ratio: np.ndarray) -> float:
    """Bootstrap standard error of the median over runs (fixed resampling stream)."""
    rng = np.random.default_rng(0)
    picks = rng.integers(0, ratio.size, (2000, ratio.size))
    return float(np.median(ratio[picks], axis=1).std())


# Model budgets on the median DES/fast ratio over runs (wide law), per prefill mode and metric;
# each assertion adds 3 bootstrap SE of that median. Measured (24 runs, seed 2024 / 7):
# TTFT as in the docstring; TPOT p50 0.96 / 0.98 chunked, 0.98 / 0.99 prefill-first; TPOT
# p99 1.00 / 1.00 chunked, 0.89 / 0.83 prefill-first. With the prompts a request decodes
# through taken as the Poisson count of a random stretch of time (not the prompts left
# behind it in the prefill queue, _load._tpot_under_load) the p99 was 1.13 chunked and
# 1.75 prefill-first, and its budget here 0.30 and 0.90.
_WIDE_BUDGETS = {
    (2048, "ttft_p50_ms"): 0.10,
    (2048, "ttft_p99_ms"): 0.30,
    (2048, "tpot_p50_ms"): 0.10,
    (2048, "tpot_p99_ms"): 0.15,
    (0, "ttft_p50_ms"): 0.30,
    (0, "ttft_p99_ms"): 0.30,
    (0, "tpot_p50_ms"): 0.10,
    (0, "tpot_p99_ms"): 0.20,
}


def test_fast_path_and_des_agree_on_a_wide_prompt_law() -> None:
    """TTFT and TPOT under LogNormal(low=50, high=8000) prompts (5 %-95 % quantiles; σ = 1.54,
    so ~3 in 10,000 prompts reach the 131,072-token context) on one H100, 20-50 % load.

    A prompt of ~10^5 tokens blocks the replica for seconds and sets the p99 of everyone
    behind it, so the fast path takes TTFT over 39 nodes of the prompt-length law
    (``node_edges``) with a hyperexponential wait (``latency_under_load``).
    Measured (24 runs, seed 2024; seed 7 alike), median DES/fast ratio: TTFT p99 0.84
    chunked (seed 7: 0.90), 1.23 prefill-first; p50 0.94 chunked (seed 7: 0.96), 0.83
    prefill-first (seed 7: 0.92). With the wait fitted to three moments and every arrival
    charged a prompt-carrying iteration's residual they were 0.86 (0.92), 1.26, 0.93
    (0.93), 0.84 (0.84). The chunked p50 was 0.76 (seed 7: 0.71) while every prompt's own
    iterations were charged ``δ·P``, a full chunk's per-token share (a prompt shorter than
    a chunk takes one iteration, ``own_iterations_excess``: 0.87), and the iteration in
    progress carried one ``min(in, C)`` piece per prompt (it carries ``E[⌈P/C⌉]`` pieces
    of ``in/E[⌈P/C⌉]`` tokens: 0.93); the p99 did not move (0.862 to 0.863; seed 7, 0.922
    to 0.924). Not chunk packing (``latency_under_load``, Notes (a)). With the 16 nodes
    before (cells of 1/8 to the 87.5th
    percentile, then halving) they were 0.86, 1.25, 0.74 and 0.87: the nodes are not what
    separates the engines here (the fast p99 is within 4.1 % of a 4,096-cell quadrature,
    tests/unit/test_serving_nodes.py), so the budgets stay. TPOT: each prompt adds its
    iterations' extra time to the decoding sequences' token gaps (chunked: the chunk's
    roofline step; prefill-first: the whole stall), over the prompts left behind it in the
    prefill queue and those arriving while it decodes: measured p50 0.96 chunked and 0.98
    prefill-first, p99 1.00 and 0.89 (with a Poisson count of a random stretch of time,
    p99 1.13 and 1.75; with prefill averaged into every iteration: p50 1.47 and 1.83, p99
    5.0 and 10.2).
    The bootstrap standard error of the median over 24 runs was 0.04-0.22 (one prompt
    near the context limit, or none, in a 15-minute run moves its p99 by 2x). Bound: the
    model budget in ``_WIDE_BUDGETS`` on each median ratio plus 3 bootstrap SE measured here.
    """
    for chunk in (2048, 0):
        s = _wide(chunk)
        root = np.random.SeedSequence(2024)
        fast, _ = simulate_serving_fast(s, root, 0, RUNS, cat=CAT)
        des, _ = simulate_serving_block(s, root, 0, RUNS, cat=CAT)
        for metric in ("ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms"):
            ratio = des[metric] / fast[metric]
            median, se = float(np.median(ratio)), _median_se(ratio)
            budget = _WIDE_BUDGETS[(chunk, metric)]
            assert abs(median - 1.0) <= budget + 3.0 * se, (chunk, metric, median, se)


@pytest.mark.parametrize("overlap", OVERLAPS)
def test_a_token_budget_beside_a_large_decode_batch_agrees(overlap: float) -> None:
    """A 512-token budget with ~100-200 sequences decoding (Llama 3.1 8B FP8 on one H100,
    400-token prompts, 300 output tokens, 28-38 requests/s). Each iteration gives prompts
    the budget less its decode batch: the DES iteration by iteration, the fast path at the
    mean decode batch.

    The efficiency prior spreads ``λ_sat`` over 17-65 requests/s, so some runs are past
    the budget's saturated rate ``C·out/(in + out)`` sequences' throughput: at overlap 0
    (shipped) 8 of 24, at 1 none. There the fast path sheds the excess (finished 0) and
    the request DES queues it without dropping (its ``finished`` counts drops, so it
    stays 1 while its queue grows): both serve the same requests (per run DES/fast
    0.989-1.005 at 0, 0.987-1.010 at 1; bound 3 %, 5 sd of a Poisson count of ~25,000),
    and in every run the fast path sheds, the DES's TTFT p99 is past the SLO's 2 s (6.5 s
    at least, its queue growing). Measured on the runs the fast path serves (24 runs, seed
    2024), median DES/fast at overlap 0 / 1: TTFT p50 1.02 / 1.09, p99 0.98 / 0.93, TPOT
    p50 1.00 / 1.00, p99 0.98 / 0.98. The fast path with a budget for prompt tokens alone
    (the rule before) gave a TTFT p50 of 1.34 against the same DES, a third optimistic.
    """
    cat = at_overlap(overlap)
    s = _scenario(
        512, name="agree-budget", rate_rps=acs.Uniform(low=28.0, high=38.0), output_tokens=300
    )
    root = np.random.SeedSequence(2024)
    fast, _ = simulate_serving_fast(s, root, 0, RUNS, cat=cat)
    des, _ = simulate_serving_block(s, root, 0, RUNS, cat=cat)
    ratio = des["requests_served"] / fast["requests_served"]
    assert np.all(np.abs(ratio - 1.0) <= 0.03), ratio
    served = fast["finished"] == 1.0
    assert served.sum() >= RUNS // 2
    assert np.all(des["ttft_p99_ms"][~served] > s.workload.slo.ttft_ms)
    for metric, budget in (
        ("ttft_p50_ms", 0.10),
        ("ttft_p99_ms", 0.20),
        ("tpot_p50_ms", 0.05),
        ("tpot_p99_ms", 0.05),
    ):
        median = float(np.median(des[metric][served] / fast[metric][served]))
        assert abs(median - 1.0) <= budget, (metric, median)


def test_past_the_prefills_saturation_both_engines_serve_the_same_and_nothing_pretends() -> None:
    """Llama 3.1 70B BF16 on TPU v5p (budget 256, 2,000-token prompts): at 12 requests/s
    the prefill queue overflows below the decode's saturated rate in most runs. The fast
    path sheds the load above the highest load with a steady state (it used to read the
    latency of an unbounded queue there: a TTFT p50 of ~1e11 ms, two years, within a
    half-hour horizon); the request DES queues it. Measured (16 runs): served requests
    DES/fast 1.02 (median; 0.97-1.04), unfinished runs 12 fast and 9 DES; the fast TTFT p50
    at most 36 s, p99 at most 242 s (the DES's median p50, its queue growing, 214 s)."""
    s = _scenario(
        None,
        name="agree-overload",
        pool=acs.Pool(chip="tpu-v5p", count=16, provider="gcp"),
        model="llama-3.1-70b",
        precision="bf16",
        rate_rps=acs.Uniform(low=8.0, high=16.0),
        input_tokens=acs.LogNormal(low=200, high=3000),
        output_tokens=300,
        chips_per_replica=None,
        horizon_days=0.02,
    )
    root = np.random.SeedSequence(2024)
    fast, _ = simulate_serving_fast(s, root, 0, 16, cat=CAT)
    des, _ = simulate_serving_block(s, root, 0, 16, cat=CAT)
    assert (fast["finished"] == 0.0).sum() >= 8  # the case: most runs overloaded
    ratio = des["requests_served"] / fast["requests_served"]
    assert abs(float(np.median(ratio)) - 1.0) <= 0.10, ratio
    assert isinstance(s.workload, acs.Serving)
    horizon_ms = s.workload.horizon_days * 86_400e3
    for metric in ("ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms"):
        assert np.all(np.isfinite(fast[metric]))
        assert np.all(fast[metric] < horizon_ms), (metric, fast[metric].max())
