"""TPOT under a wide output-length law: the fast path's mixture over the law's nodes against
the request DES, which draws each request's output length.

A request of ``n`` output tokens averages ``n − 1`` token gaps, so a short one's TPOT moves
more with each prompt it decodes through, and the p99 over requests is set by them. Llama
3.1 8B FP8 on one H100, 1,000-token prompts, chunk 2,048, ``LogNormal(low=20, high=1000)``
outputs (mean 287) at 7.5, 12.5 and 17.5 requests/s (0.3, 0.5, 0.7 of the mean-length
replica's saturation), 4 runs of 14.4 minutes, medians over runs (seed 1), DES/fast:

    requests/s                       7.5    12.5   17.5
    TPOT p50, mean output (before)   1.05   1.07   1.21
    TPOT p99, mean output (before)   1.09   1.15   1.33
    TPOT p50, mixture over nodes     1.00   0.97   1.00
    TPOT p99, mixture over nodes     0.93   0.91   0.95

(with the mean output fixed in both engines the DES gives p99 0.99, 0.97, 0.98 of the
fast path at 7.2-minute runs). "Before" is the fast path using the mean output only;
after, the mixture and the length-biased decode context ``in + E[n²]/(2E[n])``.
Prefill-first (``prefill_chunk_tokens=0``) at 5, 10, 15 requests/s (utilization 0.15,
0.30, 0.45): p50 1.04, 1.07, 1.15 -> 1.01, 1.00, 0.98; p99 1.11, 1.17, 1.28 -> 0.95, 0.93,
0.93 (mean output fixed: p99 0.96, 0.95, 0.96). Where it
is weak: the fast path's p99 runs 5-9 % high (its interference tail per node is the
hyperexponential of three moments, and the nodes' conditional means understate the
spread within a cell); at 0.9 of saturation the ratio depends on the runs (4 runs of 7.2
minutes: p50 0.80, p99 0.81; 2 runs of 43 minutes: 0.97, 0.94), so it is not bounded here.
Bounds, a stated accuracy target: p50 within 10 %, p99 within 15 %.
"""

from __future__ import annotations

import pytest

import accelsim as acs

LAW = acs.LogNormal(low=20, high=1000)


def _scenario(rate: float, out: acs.LogNormal | int, chunk: int = 2048) -> acs.Scenario:
    svc = acs.Serving(
        model="llama-3.1-8b",
        precision="fp8",
        rate_rps=rate,
        input_tokens=1000,
        output_tokens=out,
        slo=acs.SLO(ttft_ms=5000, tpot_ms=200),
        chips_per_replica=1,
        prefill_chunk_tokens=chunk,
        horizon_days=0.01,
    )
    return acs.Scenario(
        name="output-law", workload=svc, fleet=[acs.Pool(chip="h100-sxm", count=1, provider=None)]
    )


@pytest.mark.parametrize(
    ("rate", "chunk"), [(7.5, 2048), (12.5, 2048), (17.5, 2048), (5.0, 0), (10.0, 0), (15.0, 0)]
)
def test_output_law_tpot_agrees(rate: float, chunk: int) -> None:
    s = _scenario(rate, LAW, chunk)
    fast = acs.simulate(s, runs=4, seed=1)
    des = acs.simulate(s, runs=4, seed=1, engine="des")
    for metric, bound in (("tpot_p50_ms", 0.10), ("tpot_p99_ms", 0.15)):
        ratio = des.quantile(metric, 0.5) / fast.quantile(metric, 0.5)
        assert 1.0 - bound <= ratio <= 1.0 + bound, (rate, metric, ratio)


def test_output_law_raises_the_tail_as_the_des_does() -> None:
    """At 0.5 of saturation the law raises the DES's p99 over the mean fixed (measured
    +18 %); the fast path's rises by at least half as much (measured +26 %; it used not
    to move at all)."""
    wide, fixed = _scenario(12.5, LAW), _scenario(12.5, 287)
    rise = {}
    for engine in ("analytic", "des"):
        a = acs.simulate(wide, runs=4, seed=1, engine=engine).quantile("tpot_p99_ms", 0.5)
        b = acs.simulate(fixed, runs=4, seed=1, engine=engine).quantile("tpot_p99_ms", 0.5)
        rise[engine] = a / b - 1.0
    assert rise["des"] > 0.10, rise
    assert rise["analytic"] >= 0.5 * rise["des"], rise
