"""A chunked prompt's own prefill iterations (``models/serving/_prefill_queue.py``) against
the request DES's chunk rule, and the TTFT quantiles of ``latency_under_load`` in the light-
traffic limit, where they are those iterations alone (closed forms below).

The DES prefills ``C`` prompt tokens per iteration, FCFS: a prompt of ``P`` tokens alone
takes ``⌈P/C⌉ − 1`` full chunks and its last piece ``p``, each timed by the one iteration
formula. The fast path's rule, ``δ·P + own_iterations_excess``, is exact where the
iteration is a roofline of a compute line in the prompt tokens and a memory floor (a dense
model with no attention or communication term, half a chunk compute-bound): tested to
single precision over the whole space. With attention and a real replica it is exact
within the first chunk (tested at light traffic, where the TTFT is the prompt's own
iteration), and a node above it blends toward the last piece's law-average by its cell's
width (a lone node: exact).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from tests.serving_costs import llama_8b_fp8_h100

from accelsim.models import serving as sv
from accelsim.models.serving._prefill_queue import (
    own_iterations_excess,
    pieces_per_prompt,
    prompt_pieces,
)

_8B = llama_8b_fp8_h100()


def _des_prefill(cost: sv.IterationCost, batch: float, kv: float, prompt: int, chunk: int) -> float:
    """The DES's iterations for one prompt alone: FCFS budget of ``chunk`` tokens, each
    iteration with its own context (a chunk after ``done`` tokens attends ``done + c/2``)."""
    total, done = 0.0, 0
    while done < prompt:
        take = min(chunk, prompt - done)
        total += float(sv.iteration_seconds(cost, batch, take, kv, done + take / 2.0))
        done += take
    return total


def _terms(
    cost: sv.IterationCost, batch: float, kv: float, chunk: float
) -> tuple[float, float, float, float]:
    """(δ, I(C), I(C/2), I(1)) as ``latency_under_load`` takes them (δ = I(C)/C)."""
    full = float(sv.iteration_seconds(cost, batch, chunk, kv, 0.0))
    half = float(sv.iteration_seconds(cost, batch, chunk / 2.0, kv, 0.0))
    one = float(sv.iteration_seconds(cost, batch, 1.0, kv, 0.0))
    return full / chunk, full, half, one


@given(
    prompt=st.integers(1, 200_000),
    chunk=st.sampled_from([64, 256, 512, 1000, 2048, 8192]),
    batch=st.floats(0.0, 256.0),
    eff=st.floats(0.05, 1.0),
)
def test_own_iterations_match_the_chunk_rule_on_a_roofline(
    prompt: int, chunk: int, batch: float, eff: float
) -> None:
    # A dense model with no attention or communication term: I(x) = max(c0 + s·x, m) + o.
    cost = sv.IterationCost(
        seconds_per_flop=np.asarray(1.0 / (989e12 * eff)),
        seconds_per_byte=np.asarray(1.0 / (3.35e12 * eff)),
        flops_per_token=np.asarray(16e9),
        attention_flops_per_context_token=np.asarray(0.0),
        weight_bytes=np.asarray(8e9),
        active_fraction=np.asarray(1.0),
        kv_bytes_per_token=np.asarray(0.0),
        comm_seconds_per_token=np.asarray(0.0),
        overhead_seconds=np.asarray(0.003),
    )
    # Half a chunk compute-bound: (batch + C/2)·16e9 FLOP at 989 TFLOP/s over 8e9 B at 3.35 TB/s.
    assume((batch + chunk / 2.0) * 16e9 / 989e12 >= 8e9 / 3.35e12)
    delta, full, half, one = _terms(cost, batch, 0.0, float(chunk))
    got = delta * prompt + float(
        own_iterations_excess(
            prompt_pieces(np.array([float(prompt)]), chunk), delta, full, half, one
        )[0]
    )
    want = _des_prefill(cost, batch, 0.0, prompt, chunk)
    assert math.isclose(got, want, rel_tol=2e-6), (got, want)


@given(prompt=st.floats(1.0, 1e5), batch=st.floats(0.0, 64.0))
def test_prefill_first_has_no_excess(prompt: float, batch: float) -> None:
    delta, full, half, one = _terms(_8B, batch, 0.0, 512.0)
    got = own_iterations_excess(
        prompt_pieces(np.array([prompt, 2.0 * prompt]), 0.0), delta, full, half, one
    )
    assert np.all(got == 0.0)


@pytest.mark.parametrize("chunk", [2048.0, 1024.0])
def test_light_traffic_ttft_is_the_prompts_own_iteration(chunk: float) -> None:
    """λ → 0: no decode batch, no residual, no queue; a node's TTFT is its own prefill.
    Nodes inside the first chunk, each in turn carrying the median; half a chunk is
    compute-bound here (512 tokens: 8.3 ms of compute over 4.8 ms of weights), so exact."""
    nodes = np.array([20.0, 90.0, 240.0, 400.0, 480.0])
    n = nodes.size
    weights = np.full((n, n), 0.1 / (n - 1))
    np.fill_diagonal(weights, 0.9)  # row j: the median is node j
    lat = sv.latency_under_load(
        _8B, 1e-9, float(nodes.mean()), 150.0, 256.0, 0.99,
        prefill_chunk_tokens=chunk, input_nodes=np.tile(nodes, (n, 1)), input_weights=weights,
    )  # fmt: skip
    want = np.array([_des_prefill(_8B, 0.0, 0.0, int(p), int(chunk)) for p in nodes])
    np.testing.assert_allclose(lat.ttft_p50_s, want, rtol=1e-5)
    assert not lat.saturated.any()


def test_light_traffic_lone_node_beyond_a_chunk_is_exact() -> None:
    """One node (a fixed length) over several chunks: its own iterations, attention to the
    prefilled context included, within 1 % (the full chunks at their mean context)."""
    for prompt in (700.0, 1500.0, 3000.0):
        lat = sv.latency_under_load(
            _8B, 1e-9, prompt, 150.0, 256.0, 0.99, prefill_chunk_tokens=512.0,
            input_nodes=np.array([prompt]),
        )  # fmt: skip
        want = _des_prefill(_8B, 0.0, 0.0, int(prompt), 512)
        assert float(lat.ttft_p50_s) == pytest.approx(want, rel=0.01), prompt


def test_a_short_prompt_no_longer_pays_a_full_chunks_share() -> None:
    """The rule it replaced charged every node ``δ·(P − in)``, δ = I(C)/C: a 20-token prompt
    of a law whose mean fills a chunk came out at I(C)·20/2048 + (the mean's own iteration
    less δ·in), below its real iteration. The own iteration is at least I(1)."""
    nodes = np.array([20.0, 4076.0])
    lat = sv.latency_under_load(
        _8B, 1e-9, float(nodes.mean()), 150.0, 256.0, 0.51, prefill_chunk_tokens=2048.0,
        input_nodes=nodes, input_weights=np.array([0.9, 0.1]),
    )  # fmt: skip
    assert float(lat.ttft_p50_s) == pytest.approx(_des_prefill(_8B, 0.0, 0.0, 20, 2048), rel=1e-5)


@given(prompt=st.floats(1.0, 1e5), chunk=st.sampled_from([64.0, 512.0, 2048.0]))
def test_pieces_per_prompt_closed_forms(prompt: float, chunk: float) -> None:
    """A lone node: ``⌈P/C⌉`` (the DES's iteration count); prefill-first: 1; nodes a chunk
    or more apart above the first chunk: each at its cell's mean ``P/C + 1/2``."""
    one = pieces_per_prompt(prompt_pieces(np.array([prompt]), chunk), np.array([1.0]))
    assert float(one) == pytest.approx(math.ceil(prompt / chunk), rel=1e-6)
    assert float(pieces_per_prompt(prompt_pieces(np.array([prompt]), 0.0), np.array([1.0]))) == 1.0
    spaced = chunk * (2.0 + 2.0 * np.arange(5)) + 0.3 * chunk
    got = float(pieces_per_prompt(prompt_pieces(spaced, chunk), np.full(5, 0.2)))
    assert got == pytest.approx(float(np.mean(spaced / chunk + 0.5)), rel=1e-6)


@pytest.mark.parametrize("chunk", [0.0, 512.0, 8192.0])
@pytest.mark.parametrize("rate", [0.0, 1e-300])
def test_no_traffic_gives_the_light_traffic_latencies_without_a_warning(
    rate: float, chunk: float
) -> None:
    """A rate of 0 (an idle hour) gives the latencies of a vanishing rate, all finite, and
    no floating-point warning (the suite turns warnings into errors): the three-point law
    of a residual with no spread once divided 0 by 0 in its unused branch."""
    nodes, weights = np.array([50.0, 500.0, 5000.0]), np.array([0.3, 0.5, 0.2])

    def at(r: float) -> list[float]:
        got = sv.latency_under_load(
            _8B, r, 500.0, 200.0, 256.0, 0.99, prefill_chunk_tokens=chunk,
            input_nodes=nodes, input_weights=weights,
        )  # fmt: skip
        return [float(got.ttft_p50_s), float(got.ttft_tail_s), float(got.tpot_p50_s)]

    idle, light = at(rate), at(1e-12)
    assert all(math.isfinite(v) and v > 0.0 for v in idle)
    assert idle == pytest.approx(light, rel=1e-6)
