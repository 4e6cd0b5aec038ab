"""The slowest data-parallel rank's prompts against closed forms and Monte Carlo.

Oracles: one rank gives the mean exactly; a Monte Carlo of the largest of ``N`` Poisson
counts (200,000 draws: within 4 standard errors); the rare-admission limit
``1 − e^{−Nλ}`` (``P(max >= 2) = O(N·λ²)``); and a simulation of continuous batching
itself (``N`` ranks of ``B`` slots, each sequence's output drawn from a law with
coefficient of variation 1, a finished slot refilled with a new prompt in the next
iteration, as a saturated Offline scheduler does): the mean over iterations of the most
prompts any rank admits, within 3 %, which checks the Poisson count of the derivation
(the superposition of ``B`` renewal processes, Palm-Khintchine). The engines' charge is
traced to the formula in ``tests/unit/test_serving_rack.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from accelsim.models import serving as sv


@pytest.mark.parametrize(
    ("mean", "ranks"), [(0.137, 8), (0.01, 72), (1.3, 72), (20.0, 16), (1000.0, 72), (3.0, 2)]
)
def test_expected_max_matches_monte_carlo(mean: float, ranks: int) -> None:
    rng = np.random.default_rng(20261129)
    draws = rng.poisson(mean, (200_000, ranks)).max(axis=1)
    error = draws.std() / np.sqrt(draws.size)
    closed = float(sv.expected_max_poisson(mean, ranks))
    assert abs(closed - draws.mean()) < 4.0 * error


@pytest.mark.parametrize("mean", [0.0, 1e-3, 0.137, 2.0, 57.5, 4e4])
def test_one_rank_gives_the_mean_exactly(mean: float) -> None:
    assert float(sv.expected_max_poisson(mean, 1)) == mean
    tokens = sv.slowest_rank_prompt_tokens(mean * 3736.0, 803.8, 3736.0, 1)
    assert float(tokens) == pytest.approx(803.8 * mean, rel=1e-12)
    assert float(sv.rank_straggle_flops_per_token(5000.0, 1, 803.8, 3736.0, 3e10)) == 0.0


@pytest.mark.parametrize(("mean", "ranks"), [(1e-4, 8), (1e-4, 72), (1e-5, 256)])
def test_rare_admissions_limit(mean: float, ranks: int) -> None:
    closed = float(sv.expected_max_poisson(mean, ranks))
    assert closed == pytest.approx(1.0 - np.exp(-ranks * mean), rel=2.0 * ranks * mean)


def _batching_max(ranks: int, slots: int, out: float, iterations: int) -> float:
    """Mean over iterations of the most prompts a rank admits, continuous batching."""
    rng = np.random.default_rng(7)
    sigma = np.sqrt(np.log(2.0))  # log-normal output lengths with CV 1

    def lengths(n: int) -> np.ndarray:
        return np.maximum(np.round(rng.lognormal(np.log(out) - sigma**2 / 2, sigma, n)), 1.0)

    # start each slot at a uniform age of a length-biased sequence: steady state at once
    left = np.ceil(rng.random((ranks, slots)) * lengths(ranks * slots).reshape(ranks, slots))
    most = np.empty(iterations)
    for i in range(iterations):
        left -= 1.0
        done = left <= 0.0
        most[i] = done.sum(axis=1).max()
        left[done] = lengths(int(done.sum()))
    return float(most[iterations // 10 :].mean())


@pytest.mark.parametrize(("ranks", "slots", "out"), [(8, 512, 200.0), (8, 256, 40.0)])
def test_poisson_admissions_match_continuous_batching(ranks: int, slots: int, out: float) -> None:
    simulated = _batching_max(ranks, slots, out, 6000)
    # the mean output of a rounded log-normal, drawn once: the law the slots run
    rng = np.random.default_rng(1)
    sigma = np.sqrt(np.log(2.0))
    mean_out = float(
        np.maximum(np.round(rng.lognormal(np.log(out) - sigma**2 / 2, sigma, 10**6)), 1.0).mean()
    )
    closed = float(sv.expected_max_poisson(slots / mean_out, ranks))
    assert closed == pytest.approx(simulated, rel=0.03)


def test_budget_caps_the_slowest_rank_but_never_below_the_mean() -> None:
    whole = float(sv.slowest_rank_prompt_tokens(512, 803.8, 3736.0, 8))
    mean = 803.8 * 512 / 3736.0
    assert whole == pytest.approx(803.8 * float(sv.expected_max_poisson(512 / 3736.0, 8)))
    assert float(sv.slowest_rank_prompt_tokens(512, 803.8, 3736.0, 8, 300.0)) == 300.0
    assert float(sv.slowest_rank_prompt_tokens(512, 803.8, 3736.0, 8, 50.0)) == mean
    assert float(sv.slowest_rank_prompt_tokens(512, 803.8, 3736.0, 8, 1e6)) == whole


def test_straggle_adds_the_slowest_ranks_extra_prompt_flops() -> None:
    # N·(p_max − p̄)·f spread over the step's N·B·(1 + in/out) tokens
    n, b, inp, out, f = 8, 512.0, 803.8, 3736.0, 3.4e10
    step = n * b * (1.0 + inp / out)
    extra = n * (float(sv.slowest_rank_prompt_tokens(b, inp, out, n)) - inp * b / out) * f
    per_token = float(sv.rank_straggle_flops_per_token(step, n, inp, out, f))
    assert per_token == pytest.approx(extra / step, rel=1e-12)
    # a chunked budget of 1,024 tokens per rank leaves 512 for prompts beside 512 decodes
    chunked = float(sv.rank_straggle_flops_per_token(step, n, inp, out, f, 1024.0 * n))
    assert chunked == pytest.approx(n * (512.0 - inp * b / out) * f / step, rel=1e-12)


@pytest.mark.parametrize("mean", [np.inf, np.nan, 1e9])
def test_a_mean_beyond_the_series_budget_is_refused_before_the_work(mean: float) -> None:
    with pytest.raises(ValueError, match="at most 1e"):
        sv.expected_max_poisson(np.array([1.0, mean]), 8)
