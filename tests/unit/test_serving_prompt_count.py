"""The TTFT model's law of the prompts in one iteration (``_first_token._poisson_terms``):
0, 1, 2 exactly and the Poisson tail as two points, against scipy.stats.poisson."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from accelsim.models.serving._first_token import _poisson_terms


@given(mean=st.floats(0.0, 60.0))
def test_the_law_keeps_the_poisson_mean_and_mass(mean: float) -> None:
    weights, counts = _poisson_terms(np.array([mean]))
    w = np.array([float(x[0]) for x in weights])
    c = np.array([float(x[0]) for x in counts])
    assert (w >= 0.0).all()
    assert w.sum() == pytest.approx(1.0, abs=1e-12)
    assert w @ c == pytest.approx(mean, rel=1e-9, abs=1e-9)
    assert (c[3:] >= 3.0).all()  # the tail's points never fall below its least count
    np.testing.assert_allclose(w[:3], stats.poisson.pmf([0, 1, 2], mean), atol=1e-15)


@pytest.mark.parametrize("mean", [0.5, 1.0, 2.5, 4.0, 10.0, 40.0])
def test_the_variance_is_kept_where_the_tail_allows_and_never_overstated(mean: float) -> None:
    """The Poisson variance where the tail's lower point stays above 3 (from ~4 prompts per
    iteration); below, less than Poisson's but more than with the tail at its mean alone."""
    weights, counts = _poisson_terms(np.array([mean]))
    w = np.array([float(x[0]) for x in weights])
    c = np.array([float(x[0]) for x in counts])
    second = w @ (c * c) - mean**2
    collapsed = c.copy()
    collapsed[3:] = (c[3] + c[4]) / 2.0
    if c[3] > 3.0:
        assert second == pytest.approx(mean, rel=1e-9)
    else:
        assert second <= mean * (1.0 + 1e-12)
        assert second >= w @ (collapsed * collapsed) - mean**2 - 1e-12


def test_a_busy_iteration_is_no_longer_held_at_three_prompts() -> None:
    """At 4 prompts per iteration on average a quarter of the mass lies beyond 3: the tail's
    points sit at its mean (5.1) plus and minus its spread, not at 3."""
    weights, counts = _poisson_terms(np.array([4.0]))
    tail = float(weights[3][0] + weights[4][0])
    assert tail == pytest.approx(stats.poisson.sf(2, 4.0), rel=1e-12)
    lower, upper = float(counts[3][0]), float(counts[4][0])
    expected = (4.0 - sum(j * stats.poisson.pmf(j, 4.0) for j in range(3))) / tail
    assert (lower + upper) / 2.0 == pytest.approx(expected, rel=1e-9)
    assert upper > 6.0
