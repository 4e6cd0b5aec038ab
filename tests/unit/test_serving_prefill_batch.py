"""A prefill replica that batches its queued prompts (models.serving._prefill_batch).

Oracles: a simulation of the gated batch queue itself (each iteration takes every prompt
that arrived before it starts and lasts ``f + Σ x``), and the iteration formula's closed
form for the shared part. Tolerances as stated in ``batch_wait``'s notes: p99 within 10 %,
p50 within 5 % where the arrival's chance of a wait is away from 1/2 (there the median
sits on the edge of the no-wait atom), the mean within 3 %.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accelsim.models import serving
from accelsim.models.serving._prefill_batch import batch_quantiles, batch_wait

N = 200_000


def _gated_queue(x: np.ndarray, f: float, rate: float, seed: int = 1) -> np.ndarray:
    """TTFT of every arrival (the first tenth dropped as warm-up) of the gated batch queue:
    Poisson arrivals, prompts' own work drawn from ``x`` (equiprobable)."""
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1.0 / rate, N))
    work = rng.choice(x, N)
    ttft = np.empty(N)
    free, i = 0.0, 0
    while i < N:
        start = max(free, arrivals[i])
        j = max(int(np.searchsorted(arrivals, start, side="right")), i + 1)
        free = start + f + work[i:j].sum()
        ttft[i:j] = free - arrivals[i:j]
        i = j
    return ttft[N // 10 :]


def _model(x: np.ndarray, f: float, rate: float) -> tuple[float, float, float, float]:
    probs = np.full((1, x.size), 1.0 / x.size)
    wait = batch_wait(np.array([rate]), np.array([f]), x[None, :], probs)
    p50, p99 = batch_quantiles((f + x)[None, :], probs, wait, (0.5, 0.99))
    mean = float(np.mean(f + x) + wait.busy[0] * wait.mean[0])
    return float(p50[0]), float(p99[0]), mean, float(wait.busy[0])


@pytest.mark.parametrize(
    ("f", "x_mean"),
    [(0.007, 0.016), (0.02, 0.005), (0.002, 0.02)],  # shared part 0.3x, 4x, 0.1x the own
)
@pytest.mark.parametrize("load", [0.3, 0.7, 0.9])
def test_one_prompt_length_against_the_simulated_queue(
    f: float, x_mean: float, load: float
) -> None:
    x = np.full(1, x_mean)
    rate = load / (f + x_mean)  # load of one prompt per iteration
    sim = _gated_queue(x, f, rate)
    p50, p99, mean, busy = _model(x, f, rate)
    assert abs(np.quantile(sim, 0.99) / p99 - 1.0) <= 0.10
    assert abs(np.mean(sim) / mean - 1.0) <= 0.03
    if abs(busy - 0.5) > 0.1:
        assert abs(np.median(sim) / p50 - 1.0) <= 0.05


@pytest.mark.parametrize("f", [0.002, 0.015])
@pytest.mark.parametrize("load", [0.4, 0.8])
def test_a_wide_prompt_law_against_the_simulated_queue(f: float, load: float) -> None:
    rng = np.random.default_rng(3)
    lengths = np.exp(rng.normal(np.log(800.0), 0.8, 4000))
    x = np.quantile(lengths, (np.arange(32) + 0.5) / 32) * 1.6e-5  # 16 µs per token
    rate = load / (f + x.mean())
    sim = _gated_queue(x, f, rate)
    p50, p99, mean, _ = _model(x, f, rate)
    assert abs(np.quantile(sim, 0.99) / p99 - 1.0) <= 0.10
    assert abs(np.median(sim) / p50 - 1.0) <= 0.05
    assert abs(np.mean(sim) / mean - 1.0) <= 0.03


def test_batching_shortens_the_tail_of_one_prompt_per_iteration() -> None:
    """The same prompts one per iteration (M/D/1): every queued prompt pays f."""
    f, x = 0.01, np.full(1, 0.01)
    rate = 0.7 / 0.02
    batched = serving.prefill_latency(rate, f + x, np.zeros(1), 0.99, shared_s=f)
    single = serving.prefill_latency(rate, f + x, np.zeros(1), 0.99)
    assert float(batched.ttft_tail_s) < 0.8 * float(single.ttft_tail_s)
    assert float(batched.ttft_mean_s) < float(single.ttft_mean_s)
    assert float(batched.utilization) == pytest.approx(float(single.utilization))


@pytest.mark.parametrize("overlap", [0.0, 1.0])
def test_the_shared_part_is_the_overhead_and_the_exposed_weights_read(overlap: float) -> None:
    """8B dense on one chip, a 1,000-token prompt (compute-bound): at overlap 0 a batch
    shares the overhead and the weights' read, at 1 only the overhead."""
    cost = serving.iteration_cost(
        active_params=8e9, total_params=8e9, layers=32, d_model=4096, weight_bytes=8e9,
        kv_bytes_per_token=65536.0, chips=1, peak_tflops=1979, hbm_tbps=3.35,
        interconnect_gbps=900, efficiency=0.5, overhead_seconds=0.002, overlap=overlap,
    )  # fmt: skip
    read = 8e9 / (3.35e12 * 0.5)
    expected = 0.002 + (1.0 - overlap) * read
    assert float(serving.shared_prefill_seconds(cost, 1000.0)) == pytest.approx(expected, rel=1e-9)


def test_light_load_is_the_own_iteration() -> None:
    """No queue: TTFT is the prompt's own prefill plus its transfer, at every level."""
    service, transfer = np.array([0.02, 0.03, 0.05]), np.array([0.001, 0.002, 0.003])
    lat = serving.prefill_latency(1e-6, service, transfer, 0.99, shared_s=0.005)
    assert float(lat.ttft_p50_s) == pytest.approx(0.032, rel=1e-6)
    assert float(lat.ttft_tail_s) == pytest.approx(0.053, rel=1e-6)
    assert float(lat.ttft_mean_s) == pytest.approx(np.mean(service + transfer), rel=1e-5)


@pytest.mark.parametrize("load", [0.999, 1.001, 1.5, 40.0])
def test_at_and_beyond_saturation_every_field_is_finite(load: float) -> None:
    service, transfer = np.array([0.02, 0.03, 0.05]), np.zeros(3)
    rate = load / service.mean()
    lat = serving.prefill_latency(rate, service, transfer, 0.99, shared_s=0.005)
    for v in (lat.ttft_mean_s, lat.ttft_p50_s, lat.ttft_tail_s, lat.utilization):
        assert np.isfinite(v).all()
    assert bool(lat.saturated) == (load >= 1.0)
    assert float(lat.ttft_tail_s) >= float(lat.ttft_p50_s) >= 0.02


@settings(deadline=None)
@given(
    service=st.lists(st.floats(min_value=1e-6, max_value=1e3), min_size=1, max_size=16),
    shared_share=st.floats(min_value=0.0, max_value=1.0),
    transfer=st.floats(min_value=0.0, max_value=10.0),
    load=st.floats(min_value=1e-9, max_value=2.0),
    level=st.floats(min_value=0.51, max_value=0.9999),
)
def test_the_batch_queue_is_finite_and_ordered(
    service: list[float], shared_share: float, transfer: float, load: float, level: float
) -> None:
    """Any prompt law, shared part from none to the shortest prompt's whole prefill."""
    s = np.array(service)
    rate = load / s.mean()
    shared = shared_share * s.min()
    lat = serving.prefill_latency(rate, s, np.full(s.size, transfer), level, shared_s=shared)
    fields = (lat.ttft_mean_s, lat.ttft_p50_s, lat.ttft_tail_s, lat.utilization)
    assert all(np.isfinite(f) for f in fields)
    shortest = s.min() + transfer
    assert float(lat.ttft_p50_s) >= shortest * (1 - 1e-9)
    assert float(lat.ttft_p50_s) <= float(lat.ttft_tail_s) * (1 + 1e-9)
    assert float(lat.ttft_mean_s) >= shortest * (1 - 1e-9)
