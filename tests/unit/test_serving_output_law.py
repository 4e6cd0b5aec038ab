"""The TPOT quantile over an output-length law's nodes (models/serving/_output_law.py)."""

from __future__ import annotations

import numpy as np

from accelsim._typing import FloatArray
from accelsim.models.serving._interference import interference_law, tpot_quantiles
from accelsim.models.serving._output_law import tpot_mixture_quantiles

NODES = np.array([1.0, 12.0, 60.0, 250.0, 900.0])
WEIGHTS = np.array([0.05, 0.2, 0.35, 0.3, 0.1])
MU = 0.02  # one prompt's stall, exponential: raw moments mu, 2mu², 6mu³ [s]
JUMP = (np.array(MU), np.array(2 * MU**2), np.array(6 * MU**3))
DECODE = (np.array(0.010), np.array(0.012))


def _counts(
    per_gap: float, fixed: float
) -> tuple[tuple[FloatArray, FloatArray, FloatArray], FloatArray]:
    """Poisson counts of mean ``per_gap·(n − 1) + fixed`` per node."""
    m = per_gap * np.maximum(NODES - 1.0, 1.0) + fixed
    return (m, m, m), np.exp(-m)


def _sample(per_gap: float, fixed: float, size: int, rng: np.random.Generator) -> np.ndarray:
    """TPOTs drawn from the law the quantiles are of: per node, 0 with P(N = 0), else the
    fitted hyperexponential or shifted exponential of ``interference_law``."""
    counts, none = _counts(per_gap, fixed)
    gaps = np.maximum(NODES - 1.0, 1.0)
    cell = tuple(m[..., None] for m in JUMP)
    anyp, s1, s2, (p1, r1, r2) = interference_law(counts, none, cell, gaps)  # type: ignore[arg-type]
    mean = s1 / anyp
    sd = np.sqrt(np.maximum(s2 / anyp - mean * mean, 0.0))
    node = rng.choice(NODES.size, size=size, p=WEIGHTS)
    hit = rng.random(size) < anyp[node]
    e = rng.exponential(size=size)
    fast = rng.random(size) < p1[node]
    h2 = e / np.where(fast, r1[node], r2[node])
    shifted = mean[node] - sd[node] + sd[node] * e
    u = np.where(hit, np.where(sd[node] < mean[node], shifted, h2), 0.0)
    return np.where(NODES[node] > 1.0, DECODE[1] + u, 0.0)


def test_mixture_quantile_matches_a_sample_of_its_law() -> None:
    """The p99 of 400,000 draws of the same mixture, within 3 % (its sampling sd ~1 %)."""
    rng = np.random.default_rng(7)
    for per_gap, fixed in ((0.002, 0.5), (0.02, 2.0), (0.2, 0.0)):
        counts, none = _counts(per_gap, fixed)
        _, tail = tpot_mixture_quantiles(DECODE, counts, none, JUMP, NODES, WEIGHTS, np.array(0.99))
        draws = _sample(per_gap, fixed, 400_000, rng)
        assert abs(float(tail) / float(np.quantile(draws, 0.99)) - 1.0) < 0.03, (per_gap, fixed)


def test_one_node_is_tpot_quantiles() -> None:
    """A single node reproduces the mean-output formula (to 1e-9 relative)."""
    for n in (2.0, 30.0, 500.0):
        m = 0.01 * (n - 1.0) + 0.3
        counts = (np.array([m]), np.array([m]), np.array([m]))
        got = tpot_mixture_quantiles(
            DECODE, counts, np.exp(-counts[0]), JUMP, np.array([n]), np.ones(1), np.array(0.99)
        )
        want = tpot_quantiles(
            DECODE[0], DECODE[1], tuple(c[0] for c in counts), np.exp(-m), JUMP, np.array(n - 1.0),
            np.array(0.99),
        )  # fmt: skip
        np.testing.assert_allclose(got, want, rtol=1e-9)


def test_one_token_requests_are_an_atom_at_zero() -> None:
    """Requests of one token have no gap: TPOT 0, below every other; a median inside that
    atom is 0."""
    counts, none = _counts(0.02, 1.0)
    weights = np.array([0.6, 0.1, 0.1, 0.1, 0.1])
    p50, tail = tpot_mixture_quantiles(DECODE, counts, none, JUMP, NODES, weights, np.array(0.99))
    assert float(p50) == 0.0
    assert float(tail) > float(DECODE[1])
