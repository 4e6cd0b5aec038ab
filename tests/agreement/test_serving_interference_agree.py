"""Prefill-first interference: the fast path's TPOT against the request DES on DistServe's
Figure 1 setup (OSDI'24, arXiv 2401.09670: a 13B model on one A100-80GB, 512-token prompts,
64 output tokens, colocated prefill-first serving).

The setup and its SLO (TTFT 0.4 s, TPOT 40 ms, both at P90) are DistServe's; its goodput
figures are not used (not verified from the paper here): the request DES is the oracle.
The model is OPT-13B's shape (40 layers, d_model 5,120, 40 heads of 128, multi-head
attention), BF16. With ``prefill_chunk_tokens=0`` every admitted prompt is prefilled whole in
an iteration that decodes nothing, so each prompt stalls every running sequence for its
prefill (~0.05-0.1 s here): the decoding sequences' TPOT grows with the rate although the
decode iteration barely does. Same scenario, same seed: both engines draw the same replica
per run; the DES then draws each request.

Measured (12 runs, seed 1, median over runs of DES/fast) at 2 / 4 requests/s, at the
shipped ``compute_memory_overlap`` 0: TPOT p50 1.01 / 1.03, p99 0.94 / 0.94, TTFT p99 1.01 /
1.07, TTFT p50 0.97 / 0.93; at 1 (the roofline max): TPOT p50 1.01 / 1.00, p99 0.94 / 0.91,
TTFT p99 0.90 / 0.93, TTFT p50 0.97 / 0.92. At 1 with the efficiency priors of the roofline
max (1.2-1.5x lower): TPOT p50 1.01 / 1.02, p99 0.94 / 0.91 (0.99 / 1.06 with the prompts a
request decodes through a Poisson count of a random stretch of time, not those left behind
it in the queue; before the interference model the fast path's TPOT was the decode
iteration with the prompts averaged in: p50 1.30 / 2.02, p99 1.66 / 2.84; its
SLO-meeting rate at the median draw of the priors was 4.2 requests/s, then 0.45,
``test_the_slo_rate_at_the_median_draw``). TTFT
p99 0.89 / 0.98; TTFT p50 0.95 / 0.87 (1.08 / 1.19 and 0.89 / 0.78 with the three-moment
wait and every arrival charged a prompt-carrying iteration's residual), the fast path
high: prefill-first runs every queued
prompt in one iteration, where the M/G/1 FCFS wait queues them one after another. Bounds
on each median ratio: TPOT 10 % (a stated accuracy target; the run-to-run sd of a
15-minute window's p99 is a few %), TTFT p99 25 %; the TTFT p50 is not held.
"""

from __future__ import annotations

import numpy as np
import pytest
from tests.serving_overlap import OVERLAPS, at_overlap

import accelsim as acs
from accelsim import catalog as _catalog
from accelsim.engines import simulate_serving_block, simulate_serving_fast

CAT = _catalog.builtin_catalog()
RUNS = 12


def _distserve(rate: float) -> acs.Scenario:
    svc = acs.Serving(
        params=13e9, layers=40, d_model=5120, kv_heads=40, head_dim=128, precision="bf16",
        rate_rps=rate, input_tokens=512, output_tokens=64,
        slo=acs.SLO(ttft_ms=400, tpot_ms=40, percentile=90, attainment=0.9),
        chips_per_replica=1, prefill_chunk_tokens=0, horizon_days=0.25 / 24,
    )  # fmt: skip
    return acs.Scenario(
        name="distserve-fig1", workload=svc,
        fleet=[acs.Pool(chip="a100-80gb", count=1, provider="aws")],
    )  # fmt: skip


@pytest.mark.parametrize("overlap", OVERLAPS)
@pytest.mark.parametrize("rate", [2.0, 4.0])
def test_prefill_first_stalls_set_the_tpot(rate: float, overlap: float) -> None:
    s = _distserve(rate)
    root = np.random.SeedSequence(1)
    cat = at_overlap(overlap)
    fast, _ = simulate_serving_fast(s, root, 0, RUNS, cat=cat)
    des, _ = simulate_serving_block(s, root, 0, RUNS, cat=cat)
    for metric, budget in (("tpot_p50_ms", 0.10), ("tpot_p99_ms", 0.10), ("ttft_p99_ms", 0.25)):
        ratio = float(np.median(des[metric] / fast[metric]))
        assert abs(ratio - 1.0) <= budget, (rate, overlap, metric, ratio)


def test_the_slo_rate_at_the_median_draw() -> None:
    """docs/serving.md: one replica at the median draw of every prior meets DistServe's SLO
    up to 1.55 requests/s (exact bisection, ``slo_capacity_rps``; 5 % for later model
    changes the page must then follow). The rate sits on a cliff of the TPOT bound: a
    decode iteration of the 13B model's 26 GB on the A100 is ~26 ms of the 40 ms P90 bound,
    and every prompt's prefill-first stall of ~50-100 ms spends the rest. It was 0.45 at
    the roofline max with the efficiency priors set there (cuda median 0.41), 0.24 at
    overlap 0 with those priors; the cuda prior re-centred at overlap 0 (median 0.55, the
    implied efficiencies of the validation rows at 0) shortens the decode iteration and
    leaves a wider margin for the stalls: 1.55 (2.16 at overlap 1 with the new priors)."""
    from accelsim.engines._inputs import InputDraws
    from accelsim.engines.serving._setup import draw_replica, serving_setup
    from accelsim.models import serving as sv

    s = _distserve(1.0)
    setup = serving_setup(s, CAT)
    draws = InputDraws(np.random.SeedSequence(0), 0, 1, at_quantile=0.5)
    rep = draw_replica(setup, draws, CAT.serving_priors)
    cap = sv.slo_capacity_rps(
        rep.cost, setup.input_mean, setup.output_mean, rep.kv_capacity_tokens, rep.max_batch,
        setup.ttft_s, setup.tpot_s, setup.percentile,
        prefill_chunk_tokens=rep.prefill_chunk_tokens,
    )  # fmt: skip
    assert float(cap.rate_rps[0]) == pytest.approx(1.55, rel=0.05)
