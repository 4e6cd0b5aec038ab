"""Prefill-first stalls shared by the prompts that arrive during one iteration
(models.serving._decode._batched_stalls): the closed-form limits.

A prompt's stall is ``x = T(0, P, P/2)``; an iteration over ``b`` prompts pays the shared
part ``f = 2·T(0, P, P/2) − T(0, 2P, P/2)`` once, so each prompt's stall is
``x − f·(1 − 1/b̄)`` with ``b̄ = m/(1 − e^{−m})``, ``m = λ'T`` (the zero-truncated Poisson
mean). Against the request DES: tests/agreement (prefill-first TPOT on fixed prompts and
the interference stalls, at the shipped overlap and at ``compute_memory_overlap`` 0).
"""

from __future__ import annotations

import numpy as np
import pytest

from accelsim.models import serving
from accelsim.models.serving._decode import _batched_stalls


def _cost(overlap: float) -> serving.IterationCost:
    return serving.iteration_cost(
        active_params=8e9, total_params=8e9, layers=32, d_model=4096, weight_bytes=8e9,
        kv_bytes_per_token=65536.0, chips=1, peak_tflops=1979, hbm_tbps=3.35,
        interconnect_gbps=900, efficiency=0.5, overhead_seconds=0.002, overlap=overlap,
    )  # fmt: skip


P = np.array([[1000.0, 4000.0]])


@pytest.mark.parametrize("overlap", [0.0, 1.0])
def test_no_arrivals_leave_each_stall_alone(overlap: float) -> None:
    cost = _cost(overlap)
    x = serving.prefill_seconds(cost, P)
    got = _batched_stalls(cost, P, x, np.array([1e-9]), np.array([0.02]))
    assert np.allclose(got, x, rtol=1e-8)


@pytest.mark.parametrize("overlap", [0.0, 1.0])
def test_many_arrivals_pay_the_shared_part_once(overlap: float) -> None:
    """λ'T = 50 prompts per iteration: each stall is its own compute plus 1/50 of f."""
    cost = _cost(overlap)
    x = serving.prefill_seconds(cost, P)
    f = 0.002 + (1.0 - overlap) * 8e9 / (3.35e12 * 0.5)  # overhead (+ the weights' read)
    got = _batched_stalls(cost, P, x, np.array([50.0]), np.array([1.0]))
    b = 50.0 / -np.expm1(-50.0)
    assert np.allclose(got, x - f * (1.0 - 1.0 / b), rtol=1e-9)


def test_one_arrival_per_iteration_on_average() -> None:
    """m = 1: b̄ = 1/(1 − e^{−1}) = 1.582, so each stall sheds f·(1 − 1/b̄) = f·e^{−1}."""
    cost = _cost(0.0)
    x = serving.prefill_seconds(cost, P)
    f = 0.002 + 8e9 / (3.35e12 * 0.5)
    got = _batched_stalls(cost, P, x, np.array([10.0]), np.array([0.1]))
    assert np.allclose(x - got, f * np.exp(-1.0), rtol=1e-9)
