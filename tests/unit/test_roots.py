"""models._roots.newton_roots: scipy's vectorised Newton for any shape, never raising."""

from __future__ import annotations

import numpy as np
import pytest

from accelsim.models._roots import newton_roots


def _square(x: np.ndarray, c: np.ndarray) -> np.ndarray:
    return x * x - c


def _twice(x: np.ndarray, c: np.ndarray) -> np.ndarray:
    return 2.0 * x


@pytest.mark.parametrize("shape", [(), (1,), (3,), (2, 3)])
def test_square_roots_in_every_shape(shape: tuple[int, ...]) -> None:
    c = np.arange(1.0, 1.0 + np.prod(shape, dtype=int)).reshape(shape)
    got = newton_roots(_square, _twice, c + 1.0, (c,), tol=1e-14, maxiter=50)
    assert got.shape == shape
    np.testing.assert_allclose(got, np.sqrt(c), rtol=1e-14)


def test_no_error_when_nothing_converges() -> None:
    """scipy raises when every element misses its tolerance; the wrapper keeps the iterates."""
    c = np.array([4.0, 9.0])
    got = newton_roots(_square, _twice, c * 100.0, (c,), tol=1e-14, maxiter=2)
    assert np.all(got > np.sqrt(c))  # from the right, monotone, not there yet
    assert np.all(np.isfinite(got))


def test_an_empty_start_gives_an_empty_result() -> None:
    assert newton_roots(_square, _twice, np.empty((0, 2)), (1.0,), tol=1e-9, maxiter=5).shape == (
        0,
        2,
    )
