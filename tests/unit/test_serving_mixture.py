"""The TTFT quantile machinery shared by the colocated and disaggregated models
(``models/serving/_mixture.py``): the moment-matched laws reproduce their moments exactly,
and the segment-wise quantile of ``Y + W`` equals a 200-step bisection of the same CDF
(to 1e-5 relative: its node recursion runs in single precision)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from accelsim.models.serving._mixture import (
    hyperexponential_wait,
    three_point,
    two_point,
    wait_mixture_quantiles,
)


def _moments(values: np.ndarray, probs: np.ndarray, k: int) -> float:
    return float(np.sum(probs * values**k))


@given(
    mean=st.floats(0.0, 10.0),
    sd=st.floats(1e-3, 5.0),
    gamma=st.floats(-20.0, 20.0),
    excess=st.floats(0.0, 500.0),
)
def test_three_point_matches_four_moments(
    mean: float, sd: float, gamma: float, excess: float
) -> None:
    kurt = gamma * gamma + 1.0 + excess  # Pearson: kurtosis >= skewness² + 1
    values, probs = three_point(
        np.asarray(mean), np.asarray(sd**2), np.asarray(gamma * sd**3), np.asarray(kurt * sd**4)
    )
    assert np.all(probs >= -1e-12)
    assert math.isclose(float(probs.sum()), 1.0, rel_tol=1e-12)
    assert math.isclose(_moments(values, probs, 1), mean, rel_tol=1e-9, abs_tol=1e-9 * sd)
    centred = values - mean
    for k, want in ((2, sd**2), (3, gamma * sd**3), (4, kurt * sd**4)):
        got = _moments(centred, probs, k)
        assert math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-9 * sd**k), (k, got, want)
    assert values[1] == mean  # the middle point: the median of a symmetric law


@given(mean=st.floats(1.0, 100.0), sd=st.floats(1e-3, 50.0), gamma=st.floats(-30.0, 30.0))
def test_two_point_matches_three_moments(mean: float, sd: float, gamma: float) -> None:
    values, probs = two_point(np.asarray(mean), np.asarray(sd**2), np.asarray(gamma * sd**3))
    assert math.isclose(float(probs.sum()), 1.0, rel_tol=1e-12)
    centred = values - mean
    assert abs(_moments(centred, probs, 1)) <= 1e-9 * (mean + sd)
    assert math.isclose(_moments(centred, probs, 2), sd**2, rel_tol=1e-9)
    assert math.isclose(_moments(centred, probs, 3), gamma * sd**3, rel_tol=1e-6, abs_tol=1e-9)


@given(
    rho=st.floats(0.01, 0.99),
    mean=st.floats(1e-3, 10.0),
    cv2=st.floats(1.05, 200.0),
    skew_room=st.floats(1.0, 50.0),
)
def test_hyperexponential_wait_matches_three_moments(
    rho: float, mean: float, cv2: float, skew_room: float
) -> None:
    # Moments of a wait W (0 with probability 1 − ρ) whose W₊ is an H2 with these moments.
    m1, m2 = mean, (1.0 + cv2) * mean**2
    # The least third moment of an H2 with (m1, m2) is 1.5 m2²/m1: take a multiple of it.
    m3 = skew_room * 1.5 * m2**2 / m1
    p1, r1, r2 = hyperexponential_wait(
        np.asarray(rho), np.asarray(rho * m1), np.asarray(rho * m2), np.asarray(rho * m3)
    )
    for k, want in ((1, m1), (2, m2), (3, m3)):
        got = math.factorial(k) * (p1 / r1**k + (1.0 - p1) / r2**k)
        assert math.isclose(float(got), want, rel_tol=1e-6), (k, float(got), want)


def test_hyperexponential_wait_of_mm1_is_exponential() -> None:
    # M/M/1, service rate 1, load 0.6: W₊ is exponential with rate μ − λ = 0.4.
    rho = 0.6
    mean = 1.0 / 0.4
    p1, r1, r2 = hyperexponential_wait(
        np.asarray(rho),
        np.asarray(rho * mean),
        np.asarray(rho * 2 * mean**2),
        np.asarray(rho * 6 * mean**3),
    )
    # whichever phase carries the mass has rate 0.4
    tail = p1 * np.exp(-r1 * 3.0) + (1 - p1) * np.exp(-r2 * 3.0)
    assert math.isclose(float(tail), math.exp(-0.4 * 3.0), rel_tol=1e-6)


def _cdf(t: float, y: np.ndarray, w: np.ndarray, rho: float, phases: tuple[float, ...]) -> float:
    p1, r1, r2 = phases
    gap = t - y
    reached = gap >= 0.0
    g = np.maximum(gap, 0.0)
    tail = p1 * np.exp(-r1 * g) + (1 - p1) * np.exp(-r2 * g)
    return float(np.sum(w * reached * (1.0 - rho * tail)))


@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 40),
    rho=st.floats(0.0, 0.999),
    p1=st.floats(0.5, 1.0),
    r1=st.floats(0.1, 1e4),
    ratio=st.floats(1e-4, 1.0),
    level=st.floats(0.01, 0.999),
)
def test_quantile_equals_bisection_of_the_cdf(
    seed: int, n: int, rho: float, p1: float, r1: float, ratio: float, level: float
) -> None:
    rng = np.random.default_rng(seed)
    y = np.sort(rng.lognormal(0.0, 1.5, n))
    w = rng.dirichlet(np.ones(n))
    phases = (p1, r1, r1 * ratio)
    got = wait_mixture_quantiles(
        y, w, np.asarray(rho), tuple(np.asarray(v) for v in phases), (level,)
    )[0]
    lo, hi = 0.0, float(y[-1]) + 100.0 / (r1 * ratio) + 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _cdf(mid, y, w, rho, phases) < level:
            lo = mid
        else:
            hi = mid
    # the node recursion runs in single precision (_mixture._SINGLE): ~1e-7 per node
    assert math.isclose(float(got), hi, rel_tol=1e-5, abs_tol=1e-9), (float(got), hi)


def test_quantiles_vectorised_over_runs_and_levels() -> None:
    rng = np.random.default_rng(3)
    y = np.sort(rng.lognormal(0.0, 1.0, (5, 7, 12)), axis=-1)
    w = np.full(12, 1 / 12)
    rho = rng.uniform(0.0, 0.9, (5, 7))
    phases = (np.full((5, 7), 0.8), np.full((5, 7), 3.0), np.full((5, 7), 0.2))
    p50, p99 = wait_mixture_quantiles(y, w, rho, phases, (0.5, 0.99))
    assert p50.shape == p99.shape == (5, 7)
    assert np.all(np.isfinite(p99))
    assert np.all(p99 >= p50)
    one = wait_mixture_quantiles(y[2, 3], w, rho[2, 3], tuple(v[2, 3] for v in phases), (0.99,))[0]
    assert math.isclose(float(one), float(p99[2, 3]), rel_tol=1e-6)


def test_vanishing_wait_is_finite() -> None:
    # rho -> 0 gives phase rates ~1e300/s: the quantiles are then Y's own, finite.
    y = np.array([0.1, 0.2, 0.4])
    w = np.array([0.5, 0.3, 0.2])
    huge = np.asarray(1e300)
    phases = (np.asarray(0.5), huge, huge)
    low, mid, top = wait_mixture_quantiles(y, w, np.asarray(1e-12), phases, (0.4, 0.6, 0.99))
    # the nodes, rounded up to single precision (the recursion's, _mixture._SINGLE)
    for got, node in zip((low, mid, top), (0.1, 0.2, 0.4), strict=True):
        assert node <= float(got) <= node * (1.0 + 2.0**-23)
