"""Hypothesis invariants of the slowest data-parallel rank's prompts (``_rank_balance``).

The expected largest of ``N`` Poisson counts never falls as ranks are added or as the
mean grows, never falls below the mean, and stays under the distribution-free bound
``μ + σ·(N − 1)/sqrt(2N − 1)`` on the largest of ``N`` iid draws (Hartley and David,
1954); the iteration charge built on it is finite and non-negative, and expert-parallel
coefficients without a step are the routed-imbalance ones, bit for bit.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from accelsim.models import serving as sv

means = st.floats(0.0, 5000.0)
ranks = st.integers(1, 288)


@settings(max_examples=80, deadline=None)
@given(means, ranks, ranks)
def test_expected_max_is_monotone_in_ranks_and_above_the_mean(mean, a, b) -> None:  # type: ignore[no-untyped-def]
    lo, hi = sorted((a, b))
    small, large = (float(v) for v in sv.expected_max_poisson(mean, [lo, hi]))
    assert mean * (1.0 - 1e-12) <= small <= large * (1.0 + 1e-12)
    bound = mean + np.sqrt(mean) * (hi - 1.0) / np.sqrt(2.0 * hi - 1.0)
    assert large <= bound * (1.0 + 1e-9) + 1e-12


@settings(max_examples=80, deadline=None)
@given(means, means, ranks)
def test_expected_max_is_monotone_in_the_mean(a, b, n) -> None:  # type: ignore[no-untyped-def]
    lo, hi = sorted((a, b))
    small, large = (float(v) for v in sv.expected_max_poisson([lo, hi], n))
    assert small <= large * (1.0 + 1e-12)


@settings(max_examples=80, deadline=None)
@given(
    st.floats(1.0, 4096.0),
    st.floats(1.0, 20000.0),
    st.floats(1.0, 20000.0),
    ranks,
    st.floats(0.0, 1e5),
)
def test_slowest_rank_is_finite_and_at_least_the_mean(batch, inp, out, n, budget) -> None:  # type: ignore[no-untyped-def]
    tokens = float(sv.slowest_rank_prompt_tokens(batch, inp, out, n, budget))
    mean = inp * batch / out
    assert np.isfinite(tokens)
    assert tokens >= mean * (1.0 - 1e-12)
    step = n * batch * (1.0 + inp / out)
    charge = float(sv.rank_straggle_flops_per_token(step, n, inp, out, 3e10, budget * n))
    assert np.isfinite(charge)
    assert charge >= -1e-6 * 3e10


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 72), st.floats(1.0, 1.5))
def test_no_step_leaves_the_routed_imbalance_bit_for_bit(n, hot) -> None:  # type: ignore[no-untyped-def]
    tp = sv.iteration_cost(
        active_params=37e9, total_params=671e9, layers=61, d_model=7168, weight_bytes=335e9,
        kv_bytes_per_token=35136.0, chips=n, peak_tflops=9000.0, hbm_tbps=8.0,
        interconnect_gbps=1800.0, efficiency=0.5, overhead_seconds=0.002,
    )  # fmt: skip
    kw = {
        "chips": n, "dense_weight_bytes": 8.5e9, "expert_weight_bytes": 327e9,
        "expert_share": 8 / 256, "moe_layers": 58, "experts_per_token": 8, "d_model": 7168,
        "interconnect_gbps": 1800.0, "routed_active_params": 20.4e9, "imbalance": hot,
    }  # fmt: skip
    plain = sv.expert_parallel_cost(tp, **kw)  # type: ignore[arg-type]
    assert np.array_equal(plain.flops_per_token, tp.flops_per_token + 2.0 * 20.4e9 * (hot - 1.0))
    charged = sv.expert_parallel_cost(
        tp,
        **kw,
        step_tokens=5000.0,
        input_tokens=804.0,
        output_tokens=3700.0,  # type: ignore[arg-type]
    )
    assert np.all(charged.flops_per_token > plain.flops_per_token)
    for field in ("weight_bytes", "active_fraction", "comm_seconds_per_token"):
        assert np.array_equal(getattr(charged, field), getattr(plain, field))
