"""Cost of drawing a study's uncertain inputs, beside the alternatives, same process.

Run with ``make bench``. Per chunk of 16,384 runs (what the analytic engine draws at once
in-process, see :mod:`accelsim.engines._inputs`), best of ``REPEATS``, interleaved:

- **PERT draws**: ``PERT.sample`` (inverse transform through scipy's
  ``FastGeneratorInversion``, built once per shape) against numpy's beta generator
  (``rng.beta``, which is not an inverse transform), on the default prior of ``engineers``;
- **PERT quantiles** (what Latin hypercube, Sobol and antithetic designs call): ``PERT.ppf``
  against scipy's exact inverse ``betaincinv``;
- **LogNormal draws**: ``LogNormal.sample`` (``exp(mu) exp(sigma ndtri(u))``), on the default
  prior of ``checkpoint_write_hours``;
- **one input's uniforms** for a chunk of 4 blocks
  (:func:`accelsim.engines._inputs.input_uniforms`: its stream, seeded and advanced to the
  chunk) against drawing from a stream already seeded, for scale.

Before timing, each pair is checked to agree: the quantiles within the inversion's u-error
(``1e-10`` in probability), the draws in law (one-sample KS test).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import pytest
import scipy.special
from scipy import stats

from accelsim import catalog
from accelsim.engines._inputs import BLOCK_RUNS, input_uniforms
from accelsim.seeding import as_seed_sequence, stream
from accelsim.study._chunks import ANALYTIC_CHUNK_BLOCKS

CHUNK = ANALYTIC_CHUNK_BLOCKS * BLOCK_RUNS
REPEATS = 7
CALLS = 200  # per timing, so that one timing lasts long enough to read


def _best_seconds(timed: dict[str, Callable[[], object]]) -> dict[str, float]:
    """Seconds per call of each callable: best of REPEATS, interleaved."""
    best = dict.fromkeys(timed, np.inf)
    for _ in range(REPEATS):
        for name, fn in timed.items():
            start = time.perf_counter()
            for _ in range(CALLS):
                fn()
            best[name] = min(best[name], (time.perf_counter() - start) / CALLS)
    return best


@pytest.mark.bench
def test_input_draws_vs_what_they_replaced() -> None:
    pert = catalog.priors().engineers.value
    a, b = pert._shape()  # type: ignore[union-attr]
    low, high = pert.support()
    rng = np.random.default_rng(1)
    u = np.random.default_rng(2).random(CHUNK)
    root = as_seed_sequence(3)
    block = iter(range(10**9))
    seeded = stream(root, "input", "engineers")

    # Same law, same values, same streams.
    x = pert.sample(np.random.default_rng(4), 100_000)
    assert stats.kstest(x, stats.beta(a, b, loc=low, scale=high - low).cdf).pvalue > 1e-3
    exact = low + (high - low) * scipy.special.betaincinv(a, b, u)
    err = np.abs(scipy.special.betainc(a, b, (pert.ppf(u) - low) / (high - low)) - u)
    assert np.all(err <= 1e-10)

    lognormal = catalog.priors().checkpoint_write_hours.value
    mu, sigma = lognormal._log_params()  # type: ignore[union-attr]
    y = lognormal.sample(np.random.default_rng(4), 100_000)
    assert stats.kstest(y, lognormal._frozen().cdf).pvalue > 1e-3  # type: ignore[union-attr]

    seconds = _best_seconds(
        {
            "sample": lambda: pert.sample(rng, CHUNK),
            "numpy beta": lambda: low + (high - low) * rng.beta(a, b, CHUNK),
            "ppf": lambda: pert.ppf(u),
            "exact ppf": lambda: low + (high - low) * scipy.special.betaincinv(a, b, u[:256]),
            "lognormal": lambda: lognormal.sample(rng, CHUNK),
            "ndtri exp": lambda: np.exp(mu + sigma * scipy.special.ndtri(rng.random(CHUNK))),
            "uniforms": lambda: input_uniforms(root, "engineers", next(block) * CHUNK, CHUNK),
            "seeded stream": lambda: seeded.random(CHUNK),
        }
    )
    seconds["exact ppf"] *= CHUNK / 256  # timed on 256 values: it is that slow
    ns = {k: v / CHUNK * 1e9 for k, v in seconds.items()}
    print(
        f"\ninput draws per chunk of {CHUNK:,} runs, best of {REPEATS}, one process "
        f"(PERT{(low, pert.mode, high)}, alpha={a:.3f}, beta={b:.3f}):\n"  # type: ignore[union-attr]
        f"  PERT.sample (inversion)    {ns['sample']:8.1f} ns/draw  vs numpy's beta generator "
        f"{ns['numpy beta']:6.1f} ns/draw -> {ns['numpy beta'] / ns['sample']:.1f}x faster\n"
        f"  PERT.ppf (inversion)       {ns['ppf']:8.1f} ns/value vs the exact inverse "
        f"{ns['exact ppf']:8.1f} ns/value -> {ns['exact ppf'] / ns['ppf']:.0f}x faster\n"
        f"  LogNormal.sample           {ns['lognormal']:8.1f} ns/draw  vs exp(mu + s ndtri(u)) "
        f"{ns['ndtri exp']:6.1f} ns/draw (the same formula)\n"
        f"  one input's uniforms       {ns['uniforms']:8.1f} ns/run of the chunk vs "
        f"{ns['seeded stream']:.1f} from a stream already seeded\n"
        f"  max |exact - inverted quantile| over the chunk: "
        f"{np.max(np.abs(pert.ppf(u) - exact)):.1e}"
    )
