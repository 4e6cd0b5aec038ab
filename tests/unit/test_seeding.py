"""seeding.addressed_uniforms: U(0, 1) variates addressed by index.

Oracles: the uniform law (chi-square on 1,000 cells), independence of neighbouring indices
and of two streams (chi-square on the 20 x 20 grid of pairs), the value at an index not
depending on the other indices asked for, and the grid of Generator.random.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from accelsim.seeding import addressed_uniforms, as_seed_sequence, child

N = 1_000_000
# A correct generator fails one of these chi-square tests with probability 1e-6 each.
P_MIN = 1e-6


def _uniform_pvalue(u: np.ndarray, cells: int) -> float:  # type: ignore[type-arg]
    counts = np.bincount(np.floor(u * cells).astype(np.int64), minlength=cells)
    return float(stats.chisquare(counts).pvalue)


def test_values_are_uniform_on_the_generator_grid() -> None:
    u = addressed_uniforms(child(as_seed_sequence(3), "x"), np.arange(N))
    assert u.dtype == np.float64
    assert np.all((u >= 0.0) & (u < 1.0))
    assert np.all(u * 2.0**53 == np.floor(u * 2.0**53))  # the 2**-53 grid
    assert _uniform_pvalue(u, 1000) > P_MIN


def test_strided_indices_are_uniform_and_neighbours_independent() -> None:
    """The layout the instability term uses: run * 512 + event, a few events a run."""
    seq = child(as_seed_sequence(5), "instability.event")
    run, event = np.divmod(np.arange(N), 4)
    u = addressed_uniforms(seq, run * 512 + event).reshape(-1, 4)
    assert _uniform_pvalue(u.ravel(), 1000) > P_MIN
    for a, b in ((0, 1), (1, 2), (0, 3)):
        cells = np.floor(u[:, a] * 20) * 20 + np.floor(u[:, b] * 20)
        counts = np.bincount(cells.astype(np.int64), minlength=400)
        assert stats.chisquare(counts).pvalue > P_MIN
    # the same event of neighbouring runs
    pairs = np.floor(u[:-1, 0] * 20) * 20 + np.floor(u[1:, 0] * 20)
    assert stats.chisquare(np.bincount(pairs.astype(np.int64), minlength=400)).pvalue > P_MIN


def test_two_streams_are_independent() -> None:
    root = as_seed_sequence(11)
    index = np.arange(N)
    a = addressed_uniforms(child(root, "a"), index)
    b = addressed_uniforms(child(root, "b"), index)
    cells = np.floor(a * 20) * 20 + np.floor(b * 20)
    assert stats.chisquare(np.bincount(cells.astype(np.int64), minlength=400)).pvalue > P_MIN
    assert abs(stats.pearsonr(a, b).statistic) < 5.0 / np.sqrt(N)


@given(
    seed=st.integers(0, 2**64 - 1),
    index=st.lists(st.integers(0, 2**62), min_size=1, max_size=50),
)
def test_a_value_depends_only_on_its_index(seed: int, index: list[int]) -> None:
    seq = child(as_seed_sequence(seed), "x")
    whole = addressed_uniforms(seq, np.array(index, dtype=np.uint64))
    for i, x in enumerate(index):
        assert addressed_uniforms(seq, np.array([x], dtype=np.uint64))[0] == whole[i]
    assert addressed_uniforms(seq, np.array(index, dtype=np.uint64)[::-1]).tolist() == (
        whole[::-1].tolist()
    )
    assert np.all((whole >= 0.0) & (whole < 1.0))


def test_shapes_follow_the_index() -> None:
    seq = child(as_seed_sequence(1), "x")
    assert addressed_uniforms(seq, np.arange(6).reshape(2, 3)).shape == (2, 3)
    assert addressed_uniforms(seq, np.arange(0)).shape == (0,)
