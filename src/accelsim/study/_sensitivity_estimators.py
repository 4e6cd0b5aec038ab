"""The sensitivity estimators on a plain ``func(u) -> y``: Sobol indices and Morris effects.

``u`` has shape (inputs, points) in [0, 1]. The estimators are not hand-written: Sobol
indices come from :func:`scipy.stats.sobol_indices`, Morris elementary effects from SALib
(the optional ``sensitivity`` extra). Working on plain functions is how they are validated
on the Ishigami function.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from accelsim._typing import FloatArray

UniformFunc = Callable[[FloatArray], FloatArray]
"""``func(u) -> y``: ``u`` of shape (inputs, points) in [0, 1], ``y`` of shape (points,)."""

_INSTALL = "Morris screening needs SALib: pip install 'accelsim[sensitivity]'"


def sobol_indices(
    func: UniformFunc,
    d: int,
    n: int,
    rng: np.random.Generator,
    confidence_level: float = 0.95,
    n_resamples: int = 999,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """First-order and total indices of ``func`` on U(0, 1)^d, with percentile intervals.

    Returns ``(S1, ST, S1 interval, ST interval)``; intervals are (d, 2). ``n`` must be a
    power of two; ``func`` runs ``n * (d + 2)`` times.

    Notes
    -----
    Oracle: :func:`scipy.stats.sobol_indices` (Saltelli 2010 estimators); its bootstrap is
    redone here with ``rng`` (and percentile intervals: BCa's jackknife costs n estimator
    calls) so the intervals are reproducible.

    Examples
    --------
    >>> import numpy as np
    >>> from accelsim.seeding import stream
    >>> rng = stream(np.random.SeedSequence(0), "doc")
    >>> s1, st, s1_ci, st_ci = sobol_indices(lambda u: u[0] + 2 * u[1], 2, 1024, rng)
    >>> np.round(st, 1)  # additive: S1 = ST = (1, 4) / 5
    array([0.2, 0.8])
    """
    from scipy.stats import bootstrap, sobol_indices, uniform

    captured: list[FloatArray] = []

    def record(u: FloatArray) -> FloatArray:
        y = np.asarray(func(u), dtype=float)
        captured.append(y)
        return y

    dists: list[Any] = [uniform(0.0, 1.0)] * d
    res = sobol_indices(func=record, n=n, dists=dists, rng=rng)
    f_a, f_b = captured[0].reshape(1, n), captured[1].reshape(1, n)
    f_ab = np.moveaxis(captured[2].reshape(1, n, d), -1, 0)

    def statistic(idx: FloatArray) -> FloatArray:
        i = np.asarray(idx, dtype=int)
        r = sobol_indices(func={"f_A": f_a[:, i], "f_B": f_b[:, i], "f_AB": f_ab[..., i]}, n=n)
        return np.stack([r.first_order, r.total_order])

    boot = bootstrap(
        [np.arange(n)],
        statistic,
        vectorized=False,
        n_resamples=n_resamples,
        confidence_level=confidence_level,
        method="percentile",
        rng=rng,
    )
    low = np.asarray(boot.confidence_interval.low, dtype=float)
    high = np.asarray(boot.confidence_interval.high, dtype=float)
    s1_ci = np.stack([low[0], high[0]], axis=-1)
    st_ci = np.stack([low[1], high[1]], axis=-1)
    return np.asarray(res.first_order), np.asarray(res.total_order), s1_ci, st_ci


def morris_indices(
    func: UniformFunc,
    names: Sequence[str],
    trajectories: int,
    rng: np.random.Generator,
    levels: int = 4,
) -> dict[str, FloatArray]:
    """Morris elementary effects of ``func`` on the grid of ``levels`` levels in [0, 1]^d.

    ``func`` gets the points as columns ordered trajectory by trajectory (column
    ``j * (d + 1) + p`` is point ``p`` of trajectory ``j``). Returns ``mu``, ``mu_star``,
    ``sigma`` and ``mu_star_conf`` arrays (one value per input).

    Notes
    -----
    Oracle: SALib's ``sample.morris`` and ``analyze.morris`` (Campolongo et al. 2007).
    """
    try:
        from SALib.analyze import morris as analyze  # type: ignore[import-untyped,unused-ignore]
        from SALib.sample import morris as sample  # type: ignore[import-untyped,unused-ignore]
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(_INSTALL) from exc
    problem = {"num_vars": len(names), "names": list(names), "bounds": [[0.0, 1.0]] * len(names)}
    x = np.asarray(sample.sample(problem, trajectories, num_levels=levels, seed=rng))
    y = np.asarray(func(x.T), dtype=float)
    si = analyze.analyze(problem, x, y, num_levels=levels, seed=rng)
    return {k: np.asarray(si[k], dtype=float) for k in ("mu", "mu_star", "sigma", "mu_star_conf")}
