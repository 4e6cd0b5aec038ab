"""Which uncertain inputs drive a metric: Sobol indices, Morris screening, tornado, Spearman.

Every method works on designed U(0, 1) values, one row per uncertain input, mapped through
each input's own ``ppf`` (:func:`accelsim.engines.designed`), so any distribution
(Beta, PERT, Choice, ...) works. The estimators are not hand-written: Sobol indices come
from :func:`scipy.stats.sobol_indices`, Morris elementary effects from SALib (the optional
``sensitivity`` extra). The cores (:mod:`accelsim.study._sensitivity_estimators`) take a
plain ``func(u) -> y`` with ``u`` of shape (inputs, points), which is how they are
validated on the Ishigami function.

On a scenario, the analytic engine evaluates the design. Its one intrinsic random source
(failures) is shared within each group of points: Sobol's matrices A, B and AB_i at row
``j``, and the points of Morris trajectory ``j``, all use run index ``j``'s failure
stream (common random numbers), so the estimators compare the inputs, not noise.

Every method takes ``executor=`` (as :func:`accelsim.simulate`): each design point is a
study whose designed uniforms ship to the workers inside its chunks (a field of the
picklable study, entered with :func:`~accelsim.engines.designed` in the worker), and
the design points of a batch are submitted together. Results are bit-identical in-process,
on a process pool or on a Dask cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import ceil
from typing import Literal, overload

import numpy as np

from accelsim.catalog import Catalog, active
from accelsim.results import Z95
from accelsim.scenario import Scenario
from accelsim.seeding import SeedLike, as_seed_sequence, stream
from accelsim.study._runner import ExecutorLike, open_executor
from accelsim.study._sensitivity_design import _grouped, evaluate_many, input_names
from accelsim.study._sensitivity_estimators import morris_indices, sobol_indices
from accelsim.study._sensitivity_results import (
    MorrisResult,
    SensitivityResult,
    SobolResult,
    SpearmanResult,
    TornadoResult,
    table,
)
from accelsim.study._simulate import simulate

_MORRIS_RANGE = (0.01, 0.99)
"""The Morris grid [0, 1] is mapped onto these quantiles (P1 to P99) of each input."""

SPEARMAN_MIN_RUNS = ceil((Z95 / 0.2) ** 2) + 1
"""Fewest runs of a Spearman screening (98). With no dependence, Spearman's rho over n runs
is about normal with standard deviation 1 / sqrt(n - 1); below 98 runs its 95 % band
(±1.96 / sqrt(n - 1)) is wider than ±0.2, so a weak driver cannot be told from noise, and
with a handful of runs |rho| = 1 happens by chance (2 runs always give ±1)."""
SOBOL_MIN_RUNS = 64
"""Smallest Sobol base sample. The Saltelli/Jansen estimators' standard errors are of order
``1 / sqrt(n)`` of the output variance share (Saltelli et al. 2010): at ``n = 64`` that is
0.125; below it, first-order and total indices outside [0, 1] and intervals wider than the
indices are the rule, not the exception."""
MORRIS_MIN_TRAJECTORIES = 10
"""Fewest Morris trajectories: Campolongo, Cariboni and Saltelli (2007) find 10 to 20
enough to rank inputs by mu*; fewer give mu* and sigma from a handful of effects each."""


def _snapshot(catalog: Catalog | None) -> Catalog:
    """The study's catalog, taken once: ``catalog``, else the active one (as in
    :func:`accelsim.simulate`); it travels with every chunk to the workers."""
    return active() if catalog is None else catalog


def _check_at_least(what: str, value: int, floor: int, why: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < floor:
        raise ValueError(f"{what} must be an integer >= {floor} ({why}), got {value!r}")


def sobol(
    scenario: Scenario,
    metric: str = "tco_usd",
    runs: int = 4096,
    seed: SeedLike = None,
    *,
    executor: ExecutorLike = None,
    chunk_runs: int | None = None,
    catalog: Catalog | None = None,
) -> SobolResult:
    """Sobol first-order and total indices of ``metric`` over every uncertain input.

    ``runs`` is the base sample size (a power of two); the engine runs ``runs * (inputs +
    2)`` times. Intervals are 95% percentile bootstrap intervals. ``executor`` and
    ``chunk_runs`` as in :func:`accelsim.simulate` (the d matrices AB_i run together).
    """
    _check_at_least("sobol's runs", runs, SOBOL_MIN_RUNS, "see SOBOL_MIN_RUNS")
    if runs & (runs - 1):
        raise ValueError(f"sobol needs runs to be a power of two >= 2, got {runs!r}")
    root, cat = as_seed_sequence(seed), _snapshot(catalog)
    names = input_names(scenario, root, catalog=cat)
    with open_executor(executor) as pool:
        func = _grouped(
            scenario, names, metric, root, runs, executor=pool, chunk_runs=chunk_runs, catalog=cat
        )
        s1, st, s1_ci, st_ci = sobol_indices(func, len(names), runs, stream(root, "sensitivity"))
    return SobolResult(metric, names, s1, st, s1_ci, st_ci, runs)


def morris(
    scenario: Scenario,
    metric: str = "tco_usd",
    trajectories: int = 64,
    seed: SeedLike = None,
    *,
    executor: ExecutorLike = None,
    chunk_runs: int | None = None,
    catalog: Catalog | None = None,
) -> MorrisResult:
    """Morris screening of every uncertain input (needs SALib: the ``sensitivity`` extra).

    The grid [0, 1] of each input spans its P1 to P99, so ``mu_star`` is the mean |change|
    of the metric per (P99 - P1) quantile range; the engine runs
    ``trajectories * (inputs + 1)`` times. ``executor`` and ``chunk_runs`` as in
    :func:`accelsim.simulate` (the d + 1 points of every trajectory run together).
    """
    _check_at_least(
        "morris's trajectories", trajectories, MORRIS_MIN_TRAJECTORIES, "Campolongo et al. 2007"
    )
    root, cat = as_seed_sequence(seed), _snapshot(catalog)
    names = input_names(scenario, root, catalog=cat)
    lo, hi = _MORRIS_RANGE
    with open_executor(executor) as pool:
        func = _grouped(
            scenario,
            names,
            metric,
            root,
            trajectories,
            lambda u: lo + (hi - lo) * u,
            executor=pool,
            chunk_runs=chunk_runs,
            catalog=cat,
        )
        si = morris_indices(func, names, trajectories, stream(root, "sensitivity"))
    return MorrisResult(
        metric, names, si["mu"], si["mu_star"], si["sigma"], si["mu_star_conf"], trajectories
    )


def tornado(
    scenario: Scenario,
    metric: str = "tco_usd",
    runs: int = 4096,
    seed: SeedLike = None,
    *,
    executor: ExecutorLike = None,
    chunk_runs: int | None = None,
    catalog: Catalog | None = None,
) -> TornadoResult:
    """One at a time: every input at its median except one at its P10, then its P90.

    Each setting is the metric's mean over ``runs`` runs sharing the failure draws. The
    ``2 * inputs + 1`` settings go to ``executor`` together (as in :func:`accelsim.simulate`).
    Any ``runs >= 1`` is accepted: every setting uses the same failure streams (common
    random numbers), so a swing is a difference of paired means whose only noise is the
    failures', and a scenario without random failures is exact with one run.
    """
    _check_at_least("tornado's runs", runs, 1, "runs per setting")
    root, cat = as_seed_sequence(seed), _snapshot(catalog)
    names = input_names(scenario, root, catalog=cat)
    settings = [(None, 0.5), *((n, 0.1) for n in names), *((n, 0.9) for n in names)]
    designs = [{n: np.full(runs, q if n == name else 0.5) for n in names} for name, q in settings]
    ys = evaluate_many(
        scenario, designs, metric, root, executor=executor, chunk_runs=chunk_runs, catalog=cat
    )
    means = np.array([np.mean(y) for y in ys])
    base, low, high = float(means[0]), means[1 : 1 + len(names)], means[1 + len(names) :]
    order = np.argsort(-np.abs(high - low), kind="stable")
    return TornadoResult(metric, tuple(names[i] for i in order), base, low[order], high[order])


def spearman(
    scenario: Scenario,
    metric: str = "tco_usd",
    runs: int = 4096,
    seed: SeedLike = None,
    *,
    executor: ExecutorLike = None,
    chunk_runs: int | None = None,
    catalog: Catalog | None = None,
) -> SpearmanResult:
    """Rank correlation of each input that varied with ``metric`` (any engine): screening.

    Needs ``runs >= SPEARMAN_MIN_RUNS`` (98; why: :data:`SPEARMAN_MIN_RUNS`).
    """
    from scipy.stats import spearmanr

    _check_at_least("spearman's runs", runs, SPEARMAN_MIN_RUNS, "see SPEARMAN_MIN_RUNS")
    res = simulate(
        scenario,
        runs=runs,
        seed=seed,
        executor=executor,
        chunk_runs=chunk_runs,
        catalog=_snapshot(catalog),
    )
    y = res.samples(metric)
    out = []
    for name, x in res.inputs.items():
        if np.ptp(x) > 0 and np.ptp(y) > 0:
            out.append((name, float(spearmanr(x, y).statistic)))
    return SpearmanResult(sorted(out, key=lambda t: -abs(t[1])))


Method = Literal["spearman", "sobol", "morris", "tornado"]
METHODS: tuple[Method, ...] = ("spearman", "sobol", "morris", "tornado")
DEFAULT_SENSITIVITY_RUNS: dict[Method, int] = {
    "spearman": 2000,
    "sobol": 1024,
    "morris": 64,
    "tornado": 2000,
}
"""``runs`` of each method when not given: the study default (2000) for the two that are
plain studies, a power of two for Sobol's base sample, 64 trajectories for Morris."""


@overload
def sensitivity(
    scenario: Scenario,
    metric: str = ...,
    *,
    method: Literal["spearman"] = ...,
    runs: int | None = ...,
    seed: SeedLike = ...,
    executor: ExecutorLike = ...,
    chunk_runs: int | None = ...,
    catalog: Catalog | None = ...,
) -> SpearmanResult: ...
@overload
def sensitivity(
    scenario: Scenario,
    metric: str = ...,
    *,
    method: Literal["sobol"],
    runs: int | None = ...,
    seed: SeedLike = ...,
    executor: ExecutorLike = ...,
    chunk_runs: int | None = ...,
    catalog: Catalog | None = ...,
) -> SobolResult: ...
@overload
def sensitivity(
    scenario: Scenario,
    metric: str = ...,
    *,
    method: Literal["morris"],
    runs: int | None = ...,
    seed: SeedLike = ...,
    executor: ExecutorLike = ...,
    chunk_runs: int | None = ...,
    catalog: Catalog | None = ...,
) -> MorrisResult: ...
@overload
def sensitivity(
    scenario: Scenario,
    metric: str = ...,
    *,
    method: Literal["tornado"],
    runs: int | None = ...,
    seed: SeedLike = ...,
    executor: ExecutorLike = ...,
    chunk_runs: int | None = ...,
    catalog: Catalog | None = ...,
) -> TornadoResult: ...
@overload
def sensitivity(
    scenario: Scenario,
    metric: str = ...,
    *,
    method: Method,
    runs: int | None = ...,
    seed: SeedLike = ...,
    executor: ExecutorLike = ...,
    chunk_runs: int | None = ...,
    catalog: Catalog | None = ...,
) -> SensitivityResult: ...
def sensitivity(
    scenario: Scenario,
    metric: str = "tco_usd",
    *,
    method: Method = "spearman",
    runs: int | None = None,
    seed: SeedLike = None,
    executor: ExecutorLike = None,
    chunk_runs: int | None = None,
    catalog: Catalog | None = None,
) -> SensitivityResult:
    """Which uncertain inputs drive ``metric`` (see :mod:`accelsim.study`).

    ``method="spearman"`` (default): a :class:`SpearmanResult`, ``(input name, rho)`` pairs
    sorted by ``|rho|``, largest first, over a ``runs``-run study (inputs that did not vary
    are left out). ``"sobol"``: a :class:`SobolResult`, first-order and total indices with
    95% intervals (``runs`` is the base sample, a power of two). ``"morris"``: a
    :class:`MorrisResult`, elementary-effect screening over ``runs`` trajectories (needs
    the ``sensitivity`` extra). ``"tornado"``: a :class:`TornadoResult`, the P10/P90 swing
    of the metric's mean per input, the others at their median (``runs`` per setting). All
    but spearman run the analytic engine. Every result has a ``table()``.

    ``runs`` defaults per method (:data:`DEFAULT_SENSITIVITY_RUNS`). Below a meaningful
    number it is refused with a ``ValueError``: spearman needs 98 runs (below that a weak
    driver's rho cannot be told from noise: :data:`SPEARMAN_MIN_RUNS`), sobol a base sample
    of 64 (index errors ~ 1/sqrt(n): :data:`SOBOL_MIN_RUNS`), morris 10 trajectories
    (:data:`MORRIS_MIN_TRAJECTORIES`); tornado takes any ``runs >= 1`` (its settings share
    their failure draws, so a swing is a paired difference).

    ``executor`` (None, ``"processes"``, a ``concurrent.futures.Executor`` or a Dask
    ``distributed.Client``) runs the engine's chunks as in :func:`simulate`: the designed
    inputs of sobol, morris and tornado travel to the workers with each chunk, and every
    design point of a batch (e.g. Sobol's d matrices AB_i, the 2d + 1 tornado settings) is
    submitted at once. ``chunk_runs`` is the runs per chunk (whole blocks of 4096 on the
    analytic engine). The result is bit-identical whatever the executor and chunk size.
    ``catalog`` is the study's catalog, as in :func:`simulate` (``None``: the active one,
    snapshotted when this is called).
    """
    if method not in METHODS:
        raise ValueError(f"unknown sensitivity method {method!r}; choose one of {METHODS}")
    n = DEFAULT_SENSITIVITY_RUNS[method] if runs is None else runs
    if method == "sobol":
        return sobol(
            scenario, metric, n, seed, executor=executor, chunk_runs=chunk_runs, catalog=catalog
        )
    if method == "morris":
        return morris(
            scenario, metric, n, seed, executor=executor, chunk_runs=chunk_runs, catalog=catalog
        )
    if method == "tornado":
        return tornado(
            scenario, metric, n, seed, executor=executor, chunk_runs=chunk_runs, catalog=catalog
        )
    return spearman(
        scenario, metric, n, seed, executor=executor, chunk_runs=chunk_runs, catalog=catalog
    )


def sensitivity_table(result: SensitivityResult | Sequence[tuple[str, float]]) -> str:
    """The output of :func:`sensitivity` (any method, or ``(name, rho)`` pairs) as a table."""
    return table(result)


__all__ = [
    "DEFAULT_SENSITIVITY_RUNS",
    "METHODS",
    "MORRIS_MIN_TRAJECTORIES",
    "SOBOL_MIN_RUNS",
    "SPEARMAN_MIN_RUNS",
    "Method",
    "morris",
    "sensitivity",
    "sensitivity_table",
    "sobol",
    "spearman",
    "tornado",
]
