"""TPOT on prefill-heavy traffic: the prompts a request decodes through, against the DES.

A request starts decoding as its prompt leaves the prefill queue, so the prompts queued
behind it land in its decode window: its count of prompts is not the Poisson count of a
random stretch of time (``_load._tpot_under_load``). With that Poisson count the fast path
understated TPOT where prompts are long and outputs short: Llama 3.1 8B FP8 on one H100,
4,000-token prompts and 20 output tokens at 5-8 requests/s, TPOT p99 DES/fast 1.69-2.14
and p50 1.04-1.15; Llama 3.1 8B BF16 on one A100, 2,000/20 tokens at 2-4 requests/s, p99
1.8-3.9. Measured now, DES/fast of the medians over 8 runs (seed 1; the fast path's
utilization in brackets), at the shipped ``compute_memory_overlap`` 0 / at 1:

    H100, rps (utilization)   2 (.11)      5 (.28)      7 (.39)      8 (.44)
    TPOT p50                  1.00 / 1.00  1.09 / 1.05  0.89 / 0.91  1.00 / 0.93
    TPOT p99                  0.96 / 0.96  0.98 / 0.99  0.91 / 0.95  0.89 / 0.91
    A100, rps (utilization)   1 (.16)      2 (.32)      3 (.48)      3.5 (.57)
    TPOT p50                  1.00 / 1.00  1.06 / 1.09  0.99 / 0.92  0.91 / 0.94
    TPOT p99                  0.98 / 0.99  0.94 / 0.96  0.91 / 0.94  0.88 / 0.94

The fast path errs high by up to 12 % (its M/G/1 prefill wait runs high under load). The
bound is 15 % both ways. Where it is weak: higher on the A100 at overlap 0, 4 and 4.5
requests/s (utilization .65 and .73) give a TPOT p99 of 0.85 and 0.81 (0.94 at 1); with
the efficiency priors of the roofline max (1.2-1.5x lower) 3 requests/s was at .61 and gave
0.82.
"""

from __future__ import annotations

import pytest
from tests.serving_overlap import OVERLAPS, at_overlap

import accelsim as acs


def _scenario(rate: float, model: str, precision: str, chip: str, inp: int) -> acs.Scenario:
    svc = acs.Serving(
        model=model,
        precision=precision,
        rate_rps=rate,
        input_tokens=inp,
        output_tokens=20,
        slo=acs.SLO(ttft_ms=2000, tpot_ms=100),
        chips_per_replica=1,
        prefill_chunk_tokens=8192,
        horizon_days=0.02,
    )
    return acs.Scenario(
        name="prefill-heavy", workload=svc, fleet=[acs.Pool(chip=chip, count=1, provider=None)]
    )


@pytest.mark.parametrize("overlap", OVERLAPS)
@pytest.mark.parametrize(
    ("model", "precision", "chip", "inp", "rates"),
    [
        ("llama-3.1-8b", "fp8", "h100-sxm", 4000, (2.0, 5.0, 7.0, 8.0)),
        ("llama-3.1-8b", "bf16", "a100-80gb", 2000, (1.0, 2.0, 3.0, 3.5)),
    ],
)
def test_prefill_heavy_tpot_agrees(
    model: str, precision: str, chip: str, inp: int, rates: tuple[float, ...], overlap: float
) -> None:
    cat = at_overlap(overlap)
    for rate in rates:
        s = _scenario(rate, model, precision, chip, inp)
        fast = acs.simulate(s, runs=8, seed=1, catalog=cat)
        des = acs.simulate(s, runs=8, seed=1, engine="des", catalog=cat)
        for metric in ("tpot_p50_ms", "tpot_p99_ms"):
            ratio = des.quantile(metric, 0.5) / fast.quantile(metric, 0.5)
            assert 0.85 <= ratio <= 1.15, (chip, rate, overlap, metric, ratio)
