"""The law of the M/G/1 prefill wait given a wait (``_prefill_queue.wait_phases``) against
closed forms (M/M/1, its defining moments and Laplace transform) and a Lindley-recursion
simulation of the same queue on a wide, quadratic prompt-work law."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import optimize, stats

from accelsim.models.serving import mg1_wait_moments
from accelsim.models.serving._mixture import hyperexponential_wait
from accelsim.models.serving._prefill_queue import wait_phases

K = 4096
LEVELS = (np.arange(K) + 0.5) / K


def _phases(work: np.ndarray, rho: float) -> tuple[float, float, float, float, float]:
    """(p1, r1, r2, rate, E[W]) for equiprobable service nodes ``work`` at load ``rho``."""
    rate = rho / work.mean()
    x2, x3, x4 = (float(np.mean(work**k)) for k in (2, 3, 4))
    w1, w2, _ = mg1_wait_moments(rate, rho, x2, x3, x4)
    p1, r1, r2 = wait_phases(
        np.float64(rate), np.float64(rho), w1, w2, work, np.full(work.size, 1.0 / work.size)
    )
    return float(p1), float(r1), float(r2), rate, float(w1)


@given(
    rho=st.floats(0.01, 0.95),
    shape=st.floats(0.05, 2.5),
    floor=st.floats(0.0, 2.0),
)
def test_wait_phases_match_two_moments_and_the_transform(
    rho: float, shape: float, floor: float
) -> None:
    # Service nodes: a floor plus a lognormal, 64 equiprobable cells (narrow to very wide).
    work = floor + stats.lognorm(s=shape).ppf((np.arange(64) + 0.5) / 64)
    p1, r1, r2, rate, w1 = _phases(work, rho)
    x2, x3, x4 = (float(np.mean(work**k)) for k in (2, 3, 4))
    _, w2, _ = mg1_wait_moments(rate, rho, x2, x3, x4)
    mean, second = w1 / rho, float(w2) / rho
    assert 0.0 <= p1 <= 1.0
    assert r1 >= r2 > 0.0
    assert math.isclose(p1 / r1 + (1 - p1) / r2, mean, rel_tol=1e-6)
    if second >= 2.0 * mean * mean:  # cv² >= 1: the second moment is matched too
        got = 2.0 * (p1 / r1**2 + (1 - p1) / r2**2)
        assert math.isclose(got, second, rel_tol=1e-6)
        # Pollaczek–Khinchine's transform of W₊ at s = 1/E[X], matched unless it lies
        # outside what an H2 with these moments can reach (then the fit is at that edge).
        s = 1.0 / work.mean()
        lst = (1 - rho) * s / (s - rate * (1.0 - np.mean(np.exp(-s * work))))
        want = (lst - (1 - rho)) / rho
        fit = p1 * r1 / (r1 + s) + (1 - p1) * r2 / (r2 + s)
        exponential = (1.0 / mean) / (1.0 / mean + s)
        if want > exponential + 1e-9 and p1 < 1.0 - 1e-6 and r1 * mean < 1e8:
            assert fit == pytest.approx(want, abs=1e-6)


def test_wait_phases_of_exponential_service_is_the_mm1_wait() -> None:
    # M/M/1 (service nodes: an exponential's quantiles), load 0.6: W₊ ~ Exp((1 − ρ)/E[X]).
    work = stats.expon().ppf(LEVELS)
    p1, r1, r2, _, _ = _phases(work, 0.6)
    for t in (0.5, 2.5, 10.0):
        tail = p1 * math.exp(-r1 * t) + (1 - p1) * math.exp(-r2 * t)
        assert tail == pytest.approx(math.exp(-0.4 * t / work.mean()), rel=0.02)


def _lindley_waits(work: np.ndarray, rate: float, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    step = (work[rng.integers(0, work.size, n)] - rng.exponential(1.0 / rate, n)).tolist()
    waits = np.empty(n)
    wait = 0.0
    for i in range(n):
        waits[i] = wait
        wait = max(wait + step[i], 0.0)
    return waits


def _quantile(phases: tuple[float, float, float], level: float) -> float:
    p1, r1, r2 = phases
    return float(
        optimize.brentq(
            lambda t: 1 - p1 * math.exp(-r1 * t) - (1 - p1) * math.exp(-r2 * t) - level, 0, 1e9
        )
    )


@pytest.mark.parametrize("rho", [0.1, 0.35, 0.6, 0.85])
def test_wait_quartiles_match_a_lindley_queue_on_a_wide_law(rho: float) -> None:
    # Prompt lengths LogNormal(low=50, high=8000) (sigma 1.54) capped at 131,072 tokens, work
    # 30 µs/token plus attention 1.3e-9 s per token²: a 10⁵-token prompt works 20 s, the median
    # one 20 ms. Measured (400,000 customers) W₊ quartiles fit/simulation: 25 % 0.8-1.3,
    # median 0.6-1.0, 75 % 0.9-1.3; the three-moment fit before put 35-50 % of W₊ at ~0
    # (its median 0 at rho 0.1 and 0.35). Tolerance: a factor 1.8 either way.
    tokens = np.minimum(stats.lognorm(s=1.54, scale=math.sqrt(50 * 8000)).ppf(LEVELS), 131072.0)
    work = 3e-5 * tokens + 1.3e-9 * tokens * tokens
    p1, r1, r2, rate, _ = _phases(work, rho)
    waits = _lindley_waits(work, rate, 400_000, seed=int(rho * 100))
    busy = waits[waits > 0.0]
    assert busy.size / waits.size == pytest.approx(rho, abs=0.02)  # P(W > 0) = ρ
    for level in (0.25, 0.5, 0.75):
        ratio = _quantile((p1, r1, r2), level) / float(np.quantile(busy, level))
        assert 1 / 1.8 <= ratio <= 1.8, (level, ratio)


def test_three_moment_fit_misses_the_wide_law_median() -> None:
    # Why the wait's law is not fitted to its third moment: on the law above at rho 0.35,
    # E[X⁴] (the rarest prompts) sends the median of W₊ to ~0.
    tokens = np.minimum(stats.lognorm(s=1.54, scale=math.sqrt(50 * 8000)).ppf(LEVELS), 131072.0)
    work = 3e-5 * tokens + 1.3e-9 * tokens * tokens
    rho = 0.35
    rate = rho / work.mean()
    w1, w2, w3 = mg1_wait_moments(rate, rho, *(float(np.mean(work**k)) for k in (2, 3, 4)))
    old = tuple(float(v) for v in hyperexponential_wait(np.float64(rho), w1, w2, w3))
    new = _phases(work, rho)[:3]
    assert _quantile(old, 0.5) < 0.1 * _quantile(new, 0.5)  # type: ignore[arg-type]
