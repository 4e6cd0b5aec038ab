"""Mixture-of-experts TPOT at light load: the fast path's latency table against the DES.

A MoE model's decode iteration reads more of its experts as the batch grows, so its TPOT
climbs steeply over the first few per cent of the saturated rate (Qwen3-Coder 480B-A35B
INT8 on 8 H100s: ~5 ms at 0.6 %, ~11 ms at 2 %). The fast path reads latencies off a table
of load nodes by linear interpolation; with nodes at 0.2 % and 4 % only, it overstated TPOT
p50 between them by up to 45 % (1.45x at 1 % load). The node at 1.5 % brings it within
21 %. Measured, median fast/DES TPOT p50 over 4 runs (seed 1):

==========================  ======  ======  ======  ======
model                       0.6 %   1 %     2 %     3 %
==========================  ======  ======  ======  ======
Qwen3-Coder 480B, 8 H100    1.21    1.12    1.11    1.05
DeepSeek-V3, 8 B200         1.12    1.12    1.02    0.98
==========================  ======  ======  ======  ======

The bound below is 1.25 (the largest measured, rounded up); below 1 the fast path would be
optimistic, which a straight chord over a concave curve cannot make it by more than the
model's own error at the nodes (0.9).

The cases are tensor parallel (``expert_parallel=False``, as unset now means). Under expert
parallelism with data-parallel attention the same measurement gives Qwen3-Coder 1.13 / 1.20 /
1.11 / 1.21 and DeepSeek-V3
1.21 / 1.20 / 0.93 / 0.86: the fast path is 14 % optimistic at 3 % load there, outside the
bound above. Not asserted: an open gap of the load nodes for that curve (issue 28).
"""

from __future__ import annotations

import pytest

import accelsim as acs

CASES = [
    ("qwen3-coder-480b-a35b", "int8", "h100-sxm"),
    ("deepseek-v3", "fp8", "b200"),
]


def _scenario(model: str, precision: str, chip: str, rate: float) -> acs.Scenario:
    svc = acs.Serving(
        model=model,
        precision=precision,
        rate_rps=rate,
        input_tokens=1000,
        output_tokens=300,
        slo=acs.SLO(ttft_ms=2000, tpot_ms=100),
        horizon_days=0.02,
        chips_per_replica=8,
        expert_parallel=False,
    )
    return acs.Scenario(
        name="moe", workload=svc, fleet=[acs.Pool(chip=chip, count=8, provider=None)]
    )


@pytest.mark.parametrize(("model", "precision", "chip"), CASES)
def test_moe_tpot_at_light_load_agrees(model: str, precision: str, chip: str) -> None:
    cap = acs.serving_capacity(_scenario(model, precision, chip, 1.0), runs=1, seed=1)
    saturated = cap.quantile("offline_rps_per_replica", 0.5)
    for load in (0.006, 0.01, 0.02, 0.03):
        s = _scenario(model, precision, chip, load * saturated)
        fast = acs.simulate(s, runs=4, seed=1).quantile("tpot_p50_ms", 0.5)
        des = acs.simulate(s, runs=4, seed=1, engine="des").quantile("tpot_p50_ms", 0.5)
        assert 0.9 <= fast / des <= 1.25, (model, load, fast, des)
