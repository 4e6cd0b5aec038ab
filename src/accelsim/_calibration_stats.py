"""Statistics of the serving calibration: the pooled prior of a row, the scores by class.

Partial pooling is empirical Bayes, one level at a time (Gelman & Hill 2007, ch. 12: the
multilevel model's shrinkage ``n τ² / (n τ² + σ²)``; τ² by the method of moments): a row
borrows strength from the rows of its groups in proportion to how much those groups agree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

Implied = dict[str, tuple[tuple[str, ...], float]]
"""Each throughput row's groups (widest first) and implied efficiency, by row id."""


def poolable(implied: Implied, exclude: str) -> list[str]:
    """The rows a row's efficiency is pooled from: every other one implying less than 1. One
    beyond the roofline shows a mechanism the model lacks for it (unstated speculation, a
    layout it cannot express), not its stack's efficiency: evaluated, never lent."""
    return [i for i, (_, e) in implied.items() if i != exclude and e < 1.0]


def pooled_draws(
    implied: Implied, keys: tuple[str, ...], exclude: str, rng: np.random.Generator, n: int
) -> np.ndarray:
    """``n`` predictive draws of the efficiency of a row in groups ``keys`` from the
    :func:`poolable` rows' (never its own): :func:`partial_pool`'s Student-t law of the log,
    capped at the roofline (1). [fraction]"""
    others = [(implied[i][0], math.log(implied[i][1])) for i in poolable(implied, exclude)]
    mean, scale, dof = partial_pool(others, keys)
    return np.asarray(np.minimum(np.exp(mean + scale * rng.standard_t(dof, n)), 1.0))


def partial_pool(
    others: list[tuple[tuple[str, ...], float]], keys: tuple[str, ...]
) -> tuple[float, float, float]:
    """Mean, predictive scale and degrees of freedom of a new row's value, nested pooling.

    Parameters
    ----------
    others : list of (groups, value)
        The other rows: their nested group labels (widest first) and values, e.g. log
        efficiencies. At least two. [log fraction]
    keys : tuple of str
        The new row's group labels, as deep as the others'.

    Returns
    -------
    tuple of float
        The shrunk mean and the predictive scale [log fraction], and the degrees of freedom
        of the deepest level's variance: draw ``mean + scale · t(dof)`` (Student's t, the
        predictive law of a new draw when the variance is estimated). [count]

    Notes
    -----
    Level by level, each group's mean residual about its parent's estimate is shrunk by
    ``w = n τ² / (n τ² + σ²)``: ``σ²`` is the pooled within-group variance of the residuals
    and ``τ²`` the between-group variance of their means less ``σ²/n`` (floored at 1e-4).
    The estimate of the row's group mean has variance ``w² σ²/n + (1 − w)² V`` (``V`` its
    parent's, the grand mean's ``s²/N`` at the top), or ``V + τ²`` where the row's group has
    no other row; the predictive variance adds the deepest level's ``σ²``. Oracle: with one
    group at every level the mean is the plain mean and the sd the sample sd times
    ``sqrt(1 + 1/N)`` (to the 1e-4 floor of ``τ²``).

    Examples
    --------
    >>> rows = [(("a",), 0.0), (("a",), 0.2), (("b",), 1.0), (("b",), 1.2)]
    >>> mean, sd, dof = partial_pool(rows, ("a",))
    >>> round(mean, 2), sd < 0.3
    (0.1, True)
    """
    ys = np.array([y for _, y in others])
    est, own = np.full(ys.size, ys.mean()), float(ys.mean())
    var = float(ys.var(ddof=1))
    est_var = var / ys.size  # the variance of the estimate of the row's group mean
    freedom = ys.size - 1.0
    for depth in range(1, len(keys) + 1):
        label = [k[:depth] for k, _ in others]
        resid = ys - est
        names = sorted(set(label))
        members = {g: np.array([i for i, x in enumerate(label) if x == g]) for g in names}
        n = np.array([members[g].size for g in names], dtype=float)
        rbar = np.array([resid[members[g]].mean() for g in names])
        dof = float((n - 1.0).sum())
        within = sum(
            float(((resid[members[g]] - r) ** 2).sum()) for g, r in zip(names, rbar, strict=True)
        )
        sigma2 = within / dof if dof > 0 else var
        freedom = dof if dof > 0 else freedom
        between = float(rbar.var(ddof=1)) if len(names) > 1 else 0.0
        tau2 = max(between - float(np.mean(sigma2 / n)), 1e-4)
        shrink = n * tau2 / (n * tau2 + sigma2)
        for j, g in enumerate(names):
            est[members[g]] += shrink[j] * rbar[j]
        if keys[:depth] in members:
            j = names.index(keys[:depth])
            own += float(shrink[j] * rbar[j])
            w = float(shrink[j])
            est_var = w**2 * sigma2 / float(n[j]) + (1.0 - w) ** 2 * est_var
        else:
            est_var += tau2
        var = sigma2
    return own, math.sqrt(var + est_var), freedom


class Rated(Protocol):
    """A calibration row's outcome (:class:`accelsim.serving_calibration.RowResult`)."""

    @property
    def id(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def published(self) -> float: ...
    @property
    def p5(self) -> float: ...
    @property
    def p50(self) -> float: ...
    @property
    def p95(self) -> float: ...
    @property
    def classes(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class ClassScore:
    """The error of one class of evaluated rows (throughput and Server/Interactive)."""

    name: str
    rows: int
    median_abs_error: float
    """Median of |P50 / published − 1|. [fraction]"""
    coverage: float
    """Share of rows with the published value in [P5, P95]. [fraction]"""
    median_width: float
    """Median of P95 / P5. [ratio]"""


def _score(name: str, rows: Sequence[Rated]) -> ClassScore:
    return ClassScore(
        name,
        len(rows),
        float(np.median([abs(r.p50 / r.published - 1.0) for r in rows])),
        sum(r.status == "covered" for r in rows) / len(rows),
        float(np.median([r.p95 / r.p5 for r in rows])),
    )


def class_scores(results: Sequence[Rated]) -> list[ClassScore]:
    """Every evaluated row together, then each class on its own (classes with rows only)."""
    rated = [r for r in results if r.kind in ("throughput", "slo_rate")]
    names = sorted({c for r in rated for c in r.classes}, key=_CLASS_ORDER.index)
    by_class = [_score(n, [r for r in rated if n in r.classes]) for n in names]
    return [_score("all evaluated rows", rated), *by_class]


_CLASS_ORDER = (
    "Offline", "closed loop", "Server", "Interactive", "NVIDIA", "AMD", "TPU",
    "dense", "MoE", "known (FP8/BF16)", "new (FP4)",
)  # fmt: skip


__all__ = [
    "ClassScore",
    "Implied",
    "Rated",
    "class_scores",
    "partial_pool",
    "poolable",
    "pooled_draws",
]
