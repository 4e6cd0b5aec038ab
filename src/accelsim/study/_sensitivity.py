"""Which uncertain inputs drive a metric: Sobol indices, Morris screening, tornado, Spearman.

Every method works on designed U(0, 1) values, one row per uncertain input, mapped through
each input's own ``ppf`` (:func:`accelsim.engines.designed`), so any distribution
(Beta, PERT, Choice, ...) works. The estimators are not hand-written: Sobol indices come
from :func:`scipy.stats.sobol_indices`, Morris elementary effects from SALib (the optional
``sensitivity`` extra). The cores :func:`sobol_indices` and :func:`morris_indices` take a
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

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from math import ceil
from typing import Any, Literal, overload

import numpy as np

from accelsim._typing import FloatArray
from accelsim.catalog import Catalog, active
from accelsim.engines import InputDraws, price_training, simulate_training
from accelsim.results import Z95, render_table
from accelsim.scenario import Scenario, TrainingRun
from accelsim.seeding import SeedLike, as_seed_sequence, stream
from accelsim.study._chunks import _run_designed
from accelsim.study._runner import ExecutorLike, open_executor
from accelsim.study._simulate import simulate

UniformFunc = Callable[[FloatArray], FloatArray]
"""``func(u) -> y``: ``u`` of shape (inputs, points) in [0, 1], ``y`` of shape (points,)."""

_CLIP = 1e-12
"""Designed uniforms are clipped to [_CLIP, 1 - _CLIP] so an unbounded ppf stays finite."""
_MORRIS_RANGE = (0.01, 0.99)
"""The Morris grid [0, 1] is mapped onto these quantiles (P1 to P99) of each input."""
_INSTALL = "Morris screening needs SALib: pip install 'accelsim[sensitivity]'"

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


def _check_at_least(what: str, value: int, floor: int, why: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < floor:
        raise ValueError(f"{what} must be an integer >= {floor} ({why}), got {value!r}")


def _check_analytic(scenario: Scenario) -> None:
    if not (
        isinstance(scenario.workload, TrainingRun)
        and len(scenario.fleet) == 1
        and scenario.background is None
    ):
        raise ValueError(
            f"sensitivity methods other than 'spearman' run the analytic engine: one training "
            f"run on one dedicated pool, which scenario {scenario.name!r} is not"
        )


def _block(
    scenario: Scenario, cat: Catalog, root: np.random.SeedSequence, a: int, b: int
) -> tuple[dict[str, FloatArray], InputDraws]:
    usage, draws = simulate_training(scenario, cat, root, a, b)
    return usage | price_training(scenario, cat, usage, draws), draws


def input_names(
    scenario: Scenario, seed: SeedLike = None, *, catalog: Catalog | None = None
) -> tuple[str, ...]:
    """The uncertain inputs the scenario draws: those whose draws vary over a small block.

    ``catalog``: as in :func:`accelsim.simulate` (``None``: the active catalog).
    """
    _check_analytic(scenario)
    cat = active() if catalog is None else catalog
    _, draws = _block(scenario, cat, as_seed_sequence(seed), 0, 256)
    return tuple(
        n for n, x in draws.drawn.items() if draws.source.get(n) != "fixed" and np.ptp(x) > 0
    )


def evaluate(
    scenario: Scenario,
    design: dict[str, FloatArray],
    metric: str,
    root: np.random.SeedSequence,
    *,
    executor: ExecutorLike = None,
    chunk_runs: int | None = None,
    catalog: Catalog | None = None,
) -> FloatArray:
    """The metric at designed inputs: run ``i`` takes ``design[name][i]`` through each ppf.

    Inputs not in the design are drawn as in :func:`accelsim.simulate` with ``root``.
    ``executor``, ``chunk_runs`` and ``catalog`` are those of :func:`accelsim.simulate`.
    """
    return evaluate_many(
        scenario,
        [design],
        metric,
        root,
        executor=executor,
        chunk_runs=chunk_runs,
        catalog=catalog,
    )[0]


def evaluate_many(
    scenario: Scenario,
    designs: Sequence[Mapping[str, FloatArray]],
    metric: str,
    root: np.random.SeedSequence,
    *,
    executor: ExecutorLike = None,
    chunk_runs: int | None = None,
    catalog: Catalog | None = None,
) -> list[FloatArray]:
    """:func:`evaluate` of several designs, all submitted to ``executor`` at once.

    Each design is its own study (run ``i`` of every design uses run ``i``'s failure
    stream); the designs are checked here, before anything is submitted.
    """

    _check_analytic(scenario)
    clipped: list[dict[str, FloatArray]] = []
    for design in designs:
        arrays = {k: np.asarray(v, dtype=float) for k, v in design.items()}
        shapes = {a.shape for a in arrays.values()}
        if len(shapes) != 1 or len(shape := shapes.pop()) != 1 or shape[0] < 1:
            raise ValueError(
                f"a design maps input names to equally long, non-empty 1-D arrays of U(0, 1) "
                f"values, got shapes { ({k: a.shape for k, a in arrays.items()}) }"
            )
        clipped.append({k: np.clip(a, _CLIP, 1.0 - _CLIP) for k, a in arrays.items()})
    if not clipped:
        return []
    cat = active() if catalog is None else catalog
    values, draws = _block(scenario, cat, root, 0, 2)  # a probe: the metrics and inputs it has
    if metric not in values:
        raise ValueError(f"unknown metric {metric!r}; known: {sorted(values)}")
    if unused := sorted(set().union(*clipped) - set(draws.drawn)):
        raise ValueError(f"design names inputs the scenario does not draw: {unused}")
    out = _run_designed(
        scenario, clipped, root, executor=executor, chunk_runs=chunk_runs, catalog=cat
    )
    return [metrics[metric] for metrics, _ in out]


def _grouped(
    scenario: Scenario,
    names: Sequence[str],
    metric: str,
    root: np.random.SeedSequence,
    group: int,
    transform: Callable[[FloatArray], FloatArray] = lambda u: u,
    *,
    executor: Executor | None = None,
    chunk_runs: int | None = None,
    catalog: Catalog,
) -> UniformFunc:
    """``func(u)`` whose column ``c`` is run ``c // k`` of ``k = columns // group`` segments.

    The ``k`` segments (designs of ``group`` runs each) go to ``executor`` together.
    """

    def func(u: FloatArray) -> FloatArray:
        k = u.shape[1] // group
        segments = transform(u).reshape(len(names), group, k)
        designs = [{n: segments[i, :, s] for i, n in enumerate(names)} for s in range(k)]
        ys = evaluate_many(
            scenario,
            designs,
            metric,
            root,
            executor=executor,
            chunk_runs=chunk_runs,
            catalog=catalog,
        )
        return np.stack(ys, axis=1).reshape(-1)

    return func


@dataclass(frozen=True, eq=False)
class SobolResult:
    """First-order and total Sobol indices with bootstrap confidence intervals."""

    metric: str
    names: tuple[str, ...]
    first_order: FloatArray
    total_order: FloatArray
    first_order_ci: FloatArray
    """(inputs, 2): low and high of the ``confidence_level`` percentile bootstrap interval."""
    total_order_ci: FloatArray
    runs: int
    """Base sample size n (a power of two); the function ran n * (inputs + 2) times."""
    confidence_level: float = 0.95

    def table(self) -> str:
        """Inputs by total index, largest first, with intervals."""
        order = np.argsort(-self.total_order, kind="stable")
        pct = f"{100 * self.confidence_level:g}%"
        rows = [
            [
                self.names[i],
                f"{self.first_order[i]:.3f}",
                f"[{self.first_order_ci[i, 0]:.3f}, {self.first_order_ci[i, 1]:.3f}]",
                f"{self.total_order[i]:.3f}",
                f"[{self.total_order_ci[i, 0]:.3f}, {self.total_order_ci[i, 1]:.3f}]",
            ]
            for i in order
        ]
        return render_table(["input", "S1", f"S1 {pct}", "ST", f"ST {pct}"], rows)

    def _repr_html_(self) -> str:
        """:meth:`table` as HTML, for notebooks."""
        from accelsim.results import sensitivity_html

        return sensitivity_html(self)


@dataclass(frozen=True, eq=False)
class MorrisResult:
    """Morris elementary effects per input: mean, mean of ``abs(effect)`` and spread."""

    metric: str
    names: tuple[str, ...]
    mu: FloatArray
    mu_star: FloatArray
    """Mean ``abs(elementary effect)`` [metric units per unit of the design's [0, 1] range]."""
    sigma: FloatArray
    mu_star_conf: FloatArray
    """Half-width of the 95% bootstrap interval of ``mu_star``."""
    trajectories: int

    def table(self) -> str:
        """Inputs by mu*, largest first."""
        order = np.argsort(-self.mu_star, kind="stable")
        rows = [
            [
                self.names[i],
                f"{self.mu_star[i]:.4g}",
                f"±{self.mu_star_conf[i]:.2g}",
                f"{self.mu[i]:+.4g}",
                f"{self.sigma[i]:.4g}",
            ]
            for i in order
        ]
        return render_table(["input", "mu*", "95%", "mu", "sigma"], rows)

    def _repr_html_(self) -> str:
        """:meth:`table` as HTML, for notebooks."""
        from accelsim.results import sensitivity_html

        return sensitivity_html(self)


@dataclass(frozen=True, eq=False)
class TornadoResult:
    """One-at-a-time swings: the metric's mean with one input at P10 then P90, rest at P50."""

    metric: str
    names: tuple[str, ...]
    """Sorted by swing, largest first."""
    base: float
    low: FloatArray
    """Mean metric with the input at its P10."""
    high: FloatArray
    """Mean metric with the input at its P90."""

    @property
    def swing(self) -> FloatArray:
        """``|high - low|`` per input."""
        return np.abs(self.high - self.low)

    def table(self) -> str:
        """Inputs by swing, largest first."""
        rows = [
            [n, f"{lo:.4g}", f"{hi:.4g}", f"{sw:.4g}"]
            for n, lo, hi, sw in zip(self.names, self.low, self.high, self.swing, strict=True)
        ]
        return f"base (all P50) = {self.base:.4g}\n" + render_table(
            ["input", "at P10", "at P90", "swing"], rows
        )

    def _repr_html_(self) -> str:
        """:meth:`table` as HTML, for notebooks."""
        from accelsim.results import sensitivity_html

        return sensitivity_html(self)


class SpearmanResult(tuple[tuple[str, float], ...]):
    """``(input name, rho)`` pairs sorted by ``|rho|``, largest first."""

    __slots__ = ()

    def table(self) -> str:
        """The pairs as a table."""
        return render_table(["input", "spearman rho"], [[n, f"{r:+.2f}"] for n, r in self])

    def _repr_html_(self) -> str:
        """:meth:`table` as HTML, for notebooks."""
        from accelsim.results import sensitivity_html

        return sensitivity_html(self)


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


def sobol(
    scenario: Scenario,
    metric: str = "tco_usd",
    runs: int = 4096,
    seed: SeedLike = None,
    *,
    executor: ExecutorLike = None,
    chunk_runs: int | None = None,
) -> SobolResult:
    """Sobol first-order and total indices of ``metric`` over every uncertain input.

    ``runs`` is the base sample size (a power of two); the engine runs ``runs * (inputs +
    2)`` times. Intervals are 95% percentile bootstrap intervals. ``executor`` and
    ``chunk_runs`` as in :func:`accelsim.simulate` (the d matrices AB_i run together).
    """
    _check_at_least("sobol's runs", runs, SOBOL_MIN_RUNS, "see SOBOL_MIN_RUNS")
    if runs & (runs - 1):
        raise ValueError(f"sobol needs runs to be a power of two >= 2, got {runs!r}")
    root, cat = as_seed_sequence(seed), active()  # one catalog snapshot for the study
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
    root, cat = as_seed_sequence(seed), active()  # one catalog snapshot for the study
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
) -> TornadoResult:
    """One at a time: every input at its median except one at its P10, then its P90.

    Each setting is the metric's mean over ``runs`` runs sharing the failure draws. The
    ``2 * inputs + 1`` settings go to ``executor`` together (as in :func:`accelsim.simulate`).
    Any ``runs >= 1`` is accepted: every setting uses the same failure streams (common
    random numbers), so a swing is a difference of paired means whose only noise is the
    failures', and a scenario without random failures is exact with one run.
    """
    _check_at_least("tornado's runs", runs, 1, "runs per setting")
    root, cat = as_seed_sequence(seed), active()  # one catalog snapshot for the study
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
) -> SpearmanResult:
    """Rank correlation of each input that varied with ``metric`` (any engine): screening.

    Needs ``runs >= SPEARMAN_MIN_RUNS`` (98; why: :data:`SPEARMAN_MIN_RUNS`).
    """
    from scipy.stats import spearmanr

    _check_at_least("spearman's runs", runs, SPEARMAN_MIN_RUNS, "see SPEARMAN_MIN_RUNS")
    res = simulate(scenario, runs=runs, seed=seed, executor=executor, chunk_runs=chunk_runs)
    y = res.samples(metric)
    out = []
    for name, x in res.inputs.items():
        if np.ptp(x) > 0 and np.ptp(y) > 0:
            out.append((name, float(spearmanr(x, y).statistic)))
    return SpearmanResult(sorted(out, key=lambda t: -abs(t[1])))


SensitivityResult = SpearmanResult | SobolResult | MorrisResult | TornadoResult
"""What :func:`sensitivity` returns: one of the four typed results, each with ``table()``."""
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


def table(result: SensitivityResult | Sequence[tuple[str, float]]) -> str:
    """Any sensitivity result (or plain ``(name, rho)`` pairs) as a text table."""
    if isinstance(result, SobolResult | MorrisResult | TornadoResult | SpearmanResult):
        return result.table()
    return SpearmanResult(result).table()


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
    """
    if method not in METHODS:
        raise ValueError(f"unknown sensitivity method {method!r}; choose one of {METHODS}")
    n = DEFAULT_SENSITIVITY_RUNS[method] if runs is None else runs
    if method == "sobol":
        return sobol(scenario, metric, n, seed, executor=executor, chunk_runs=chunk_runs)
    if method == "morris":
        return morris(scenario, metric, n, seed, executor=executor, chunk_runs=chunk_runs)
    if method == "tornado":
        return tornado(scenario, metric, n, seed, executor=executor, chunk_runs=chunk_runs)
    return spearman(scenario, metric, n, seed, executor=executor, chunk_runs=chunk_runs)


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
    "MorrisResult",
    "SensitivityResult",
    "SobolResult",
    "SpearmanResult",
    "TornadoResult",
    "evaluate",
    "evaluate_many",
    "input_names",
    "morris",
    "morris_indices",
    "sensitivity",
    "sensitivity_table",
    "sobol",
    "sobol_indices",
    "spearman",
    "table",
    "tornado",
]
