"""Sobol and Morris cores of accelsim.study._sensitivity_estimators on the Ishigami function.

Ishigami (Ishigami & Homma 1990): f = sin x1 + a sin^2 x2 + b x3^4 sin x1, a = 7, b = 0.1,
x_i ~ U(-pi, pi). Known indices (Sobol' & Levitan 1999; Saltelli et al. 2010):
S1 = (0.3139, 0.4424, 0), ST = (0.5576, 0.4424, 0.2437). These are the same
``sobol_indices`` / ``morris_indices`` functions the scenario methods call.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from accelsim._typing import FloatArray
from accelsim.seeding import stream
from accelsim.study._sensitivity_estimators import morris_indices, sobol_indices

A, B = 7.0, 0.1
S1_KNOWN = np.array([0.3139, 0.4424, 0.0])
ST_KNOWN = np.array([0.5576, 0.4424, 0.2437])


def ishigami(u: FloatArray) -> FloatArray:
    """Ishigami on the unit cube: ``u`` of shape (3, n) maps onto [-pi, pi]^3."""
    x = -np.pi + 2.0 * np.pi * np.asarray(u, dtype=float)
    y: FloatArray = np.sin(x[0]) + A * np.sin(x[1]) ** 2 + B * x[2] ** 4 * np.sin(x[0])
    return y


def test_sobol_indices_match_the_published_ishigami_values() -> None:
    """Every S1 and ST within two 95% CI half-widths (~4 bootstrap standard errors).

    At n = 2**14 the percentile intervals are ~0.02 wide, so we also require every
    half-width < 0.03: the tolerance is tight, not vacuous. The published values are
    rounded to 1e-4, far below the tolerance.
    """
    rng = stream(np.random.SeedSequence(20260101), "ishigami", "sobol")
    s1, st, s1_ci, st_ci = sobol_indices(ishigami, 3, 2**14, rng)
    for est, ci, known in ((s1, s1_ci, S1_KNOWN), (st, st_ci, ST_KNOWN)):
        half = (ci[:, 1] - ci[:, 0]) / 2.0
        assert np.all(half < 0.03), half
        assert np.all(ci[:, 0] <= est)
        assert np.all(est <= ci[:, 1])
        np.testing.assert_array_less(np.abs(est - known), 2.0 * half)


def _exact_effects(i: int, levels: int = 4) -> FloatArray:
    """Every elementary effect of input ``i`` on the Morris grid, equally likely.

    Morris with ``levels`` levels steps by delta = levels / (2 (levels - 1)); the lower
    point of input i is uniform on the levels below 1 - delta and, in a trajectory, each
    other input is uniform on all levels. In Ishigami each EE depends on at most one other
    input, so the pairwise marginals are all that matters and enumeration is exact.
    """
    grid = np.arange(levels) / (levels - 1)
    delta = levels / (2.0 * (levels - 1))
    effects = []
    for lo in grid[grid + delta <= 1.0 + 1e-12]:
        for others in itertools.product(grid, repeat=2):
            u = np.insert(np.array(others), i, lo)[:, None]
            v = u.copy()
            v[i] += delta
            effects.append(float((ishigami(v) - ishigami(u))[0]) / delta)
    return np.array(effects)


def test_morris_effects_match_their_exact_distribution_on_ishigami() -> None:
    """mu and mu* within 4 standard errors of their exact grid expectations.

    The exact values come from enumerating the grid (:func:`_exact_effects`): mu* = (7.70,
    7.875, 6.25), mu = (7.70, 0, 0). The standard error of a mean over r trajectories is
    the exact standard deviation / sqrt(r). x2's |EE| is constant (7.875): its mu* is exact
    to rounding. x3 acts only through its interaction with x1 (sin x1 flips the sign), so
    its mu is 0 while its mu* is large, and its sigma exceeds its mu*.
    """
    r = 1000
    rng = stream(np.random.SeedSequence(20260101), "ishigami", "morris")
    got = morris_indices(ishigami, ["x1", "x2", "x3"], r, rng)
    for i in range(3):
        ee = _exact_effects(i)
        mu_star_se = np.abs(ee).std() / np.sqrt(r)
        mu_se = ee.std() / np.sqrt(r)
        assert got["mu_star"][i] == pytest.approx(np.abs(ee).mean(), abs=4 * mu_star_se + 1e-9)
        assert got["mu"][i] == pytest.approx(ee.mean(), abs=4 * mu_se + 1e-9)
    assert got["mu_star"][1] == pytest.approx(A * 1.125, rel=1e-9)  # 7 * 0.75 / (2/3)
    assert got["sigma"][2] > got["mu_star"][2]  # exact 8.84 > 6.25, ~8 standard errors apart
