"""Sweeps: one study per point of a grid over dotted field paths, with common random numbers.

Every point is validated before anything runs (all invalid points are reported in one
error), then simulated with the same root seed, so run ``i`` of every point shares its draws
of every shared input. :func:`sweep` returns a tidy table, or with ``samples=True`` a
:class:`SweepResult` that also keeps every point's runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import product
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from accelsim._typing import FloatArray
from accelsim.results import Result
from accelsim.scenario import Scenario
from accelsim.seeding import SeedLike, as_seed_sequence
from accelsim.study._runner import ExecutorLike, open_executor
from accelsim.study._simulate import _engine_for, simulate

if TYPE_CHECKING:
    import pandas as pd

_SUMMARY = ("mean", "std_error", "p5", "p50", "p95")


@dataclass(frozen=True, eq=False)
class SweepResult:
    """Every point of a :func:`sweep` with ``samples=True``: its summary rows and its runs.

    All points share one root seed, so run ``i`` of every point draws the same values of
    every input the points share (common random numbers): the columns of
    :meth:`samples` are paired runs, as in :meth:`Comparison.prob_less`.

    Examples
    --------
    >>> import accelsim as acs
    >>> s = acs.Scenario(name="t", workload=acs.TrainingRun(params=7e9, tokens=1e11),
    ...                  fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")])
    >>> sw = acs.sweep(s, grid={"fleet.0.count": [64, 128]}, runs=50, seed=1, samples=True)
    >>> sw.points
    ({'fleet.0.count': 64}, {'fleet.0.count': 128})
    >>> sw.samples("tco_usd").shape  # (points, runs)
    (2, 50)
    >>> sw.result({"fleet.0.count": 128}).runs
    50
    """

    keys: tuple[str, ...]
    """The grid's dotted field paths, in grid order."""
    points: tuple[dict[str, Any], ...]
    """Every point as ``{path: value}``, in the order of ``itertools.product`` over the grid."""
    results: tuple[Result, ...]
    """The full :class:`Result` of each point, aligned with ``points``."""
    rows: list[dict[str, Any]]
    """The tidy summary table (what :func:`sweep` returns without ``samples=True``)."""

    def result(self, point: Mapping[str, Any] | int) -> Result:
        """The :class:`Result` of a point: its index, or its value at every grid path."""
        if isinstance(point, int):
            return self.results[point]
        want = dict(point)
        if set(want) != set(self.keys):
            raise KeyError(f"a sweep point gives a value for every path {list(self.keys)}")
        for p, res in zip(self.points, self.results, strict=True):
            if p == want:
                return res
        raise KeyError(f"no sweep point {want}; the points are {list(self.points)}")

    def samples(self, metric: str) -> FloatArray:
        """Every run of ``metric`` at every point: shape (points, runs), rows as ``points``.

        Column ``i`` holds run ``i`` of each point (paired by common random numbers), so
        e.g. ``np.mean(x[1] < x[0])`` is the chance point 1 beats point 0 run for run.
        """
        runs = sorted({r.runs for r in self.results})
        if len(runs) > 1:
            raise ValueError(
                f"the points ran {runs} runs (runs='auto' stops each point on its own): "
                f"take each point's samples from .results"
            )
        return np.stack([r.samples(metric) for r in self.results])

    def to_pandas(self, metrics: Sequence[str] | None = None) -> pd.DataFrame:
        """A long table, one row per point and run: the grid paths, ``run``, then the metrics.

        ``metrics`` defaults to every metric all points report. Needs pandas.
        """
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "SweepResult.to_pandas() needs pandas: pip install 'accelsim[pandas]'"
            ) from exc
        names = (
            list(metrics)
            if metrics is not None
            else [m for m in self.results[0].metrics if all(m in r.data for r in self.results)]
        )
        columns: dict[str, Any] = {
            k: [p[k] for p, r in zip(self.points, self.results, strict=True) for _ in range(r.runs)]
            for k in self.keys
        }
        columns["run"] = np.concatenate([np.arange(r.runs) for r in self.results])
        for m in names:
            columns[m] = np.concatenate([r.samples(m) for r in self.results])
        return pd.DataFrame(columns)


def _sweep_points(
    scenario: Scenario, grid: Mapping[str, Sequence[Any]], kwargs: Mapping[str, Any]
) -> list[tuple[dict[str, Any], Scenario]]:
    """Every point of the grid as ``(values, scenario)``; all invalid points in one error."""
    axes: dict[str, list[Any]] = {}
    for k, values in grid.items():
        if isinstance(values, str | bytes | Mapping) or not isinstance(values, Iterable):
            raise ValueError(f"grid[{k!r}] must be a non-empty list of values, got {values!r}")
        axes[k] = list(values)
        if not axes[k]:
            raise ValueError(f"grid[{k!r}] must be a non-empty list of values, got {values!r}")
    keys = list(axes)
    engine = kwargs.get("engine", "auto")
    keep_jobs = bool(kwargs.get("keep_jobs", False))
    resolution = kwargs.get("utilization_resolution_hours")
    points: list[tuple[dict[str, Any], Scenario]] = []
    bad: list[str] = []
    for values in product(*(axes[k] for k in keys)):
        at = dict(zip(keys, values, strict=True))
        point = scenario
        try:
            for k, v in at.items():
                point = point.replace(k, v)
            _engine_for(point, engine, keep_jobs, resolution)
        except Exception as exc:  # every bad point is reported, none dropped
            why = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
            why = str(why).replace("\n", "\n    ")
            bad.append(f"  {at}: {why}")
            continue
        points.append((at, point))
    if bad:
        total = len(points) + len(bad)
        raise ValueError(
            f"{len(bad)} of {total} sweep points are invalid (no point was run):\n" + "\n".join(bad)
        )
    return points


@overload
def sweep(
    scenario: Scenario,
    grid: Mapping[str, Sequence[Any]],
    runs: int = ...,
    seed: SeedLike = ...,
    *,
    metrics: Sequence[str] = ...,
    samples: Literal[False] = ...,
    executor: ExecutorLike = ...,
    **kwargs: Any,
) -> list[dict[str, Any]]: ...
@overload
def sweep(
    scenario: Scenario,
    grid: Mapping[str, Sequence[Any]],
    runs: int = ...,
    seed: SeedLike = ...,
    *,
    metrics: Sequence[str] = ...,
    samples: Literal[True],
    executor: ExecutorLike = ...,
    **kwargs: Any,
) -> SweepResult: ...
@overload
def sweep(
    scenario: Scenario,
    grid: Mapping[str, Sequence[Any]],
    runs: int = ...,
    seed: SeedLike = ...,
    *,
    metrics: Sequence[str] = ...,
    samples: bool,
    executor: ExecutorLike = ...,
    **kwargs: Any,
) -> list[dict[str, Any]] | SweepResult: ...
def sweep(
    scenario: Scenario,
    grid: Mapping[str, Sequence[Any]],
    runs: int = 1000,
    seed: SeedLike = None,
    *,
    metrics: Sequence[str] = ("tco_usd", "time_to_train_days"),
    samples: bool = False,
    executor: ExecutorLike = None,
    **kwargs: Any,
) -> list[dict[str, Any]] | SweepResult:
    """Every point of a grid over dotted field paths, with common random numbers.

    Parameters
    ----------
    scenario : Scenario
        The base scenario.
    grid : mapping of dotted field path to a list of values
        E.g. ``{"fleet.0.count": [512, 1024], "fleet.0.pricing": ["on_demand", "spot"]}``;
        the points are every combination (``itertools.product``, first path slowest).
    runs, seed
        As in :func:`simulate`. Every point is simulated with the same root seed, so run
        ``i`` of every point shares its draws of every shared input (common random
        numbers): differences between points are not sampling noise of the inputs.
    metrics : sequence of str
        The metrics summarised in the rows.
    samples : bool
        ``False`` (default): return the tidy table only. ``True``: return a
        :class:`SweepResult` holding the same rows plus every point's :class:`Result`
        (its per-run samples; ``SweepResult.samples(metric)`` is a (points, runs) array,
        ``SweepResult.to_pandas()`` a long table of one row per point and run). Memory then
        grows with points x runs x metrics.
    executor : None, "processes", concurrent.futures.Executor or distributed.Client
        Where each point's chunks run, as in :func:`simulate`. It is opened once for the
        whole sweep (one process pool, not one per point); points run one after another,
        each split into chunks over the workers. Results do not depend on it.
    **kwargs
        Passed to :func:`simulate` for every point (``engine``, ``chunk_runs``,
        ``design``, ``progress``, ...). Not ``store``/``resume``: a store holds one study
        and a sweep is one study per point, so a sweep with a store is an error; to keep
        points on disk, loop over the points with ``simulate(point, store=...)``, one
        store per point.

    Returns
    -------
    list of dict or SweepResult
        The tidy table: one row (a dict) per point and metric, in point order then metric
        order, with the point's value at every grid path, ``metric``, ``mean``,
        ``std_error`` (of the mean), ``p5``, ``p50`` and ``p95``. With ``samples=True`` a
        :class:`SweepResult` whose ``rows`` is that table.

    Raises
    ------
    ValueError
        Before anything runs: a grid path without a list of values, a ``store``, or any
        invalid point (a value the scenario rejects, a path that does not exist, a point the
        chosen engine cannot run). The error lists every invalid point with the reason,
        not just the first.

    Examples
    --------
    >>> import accelsim as acs
    >>> s = acs.Scenario(name="t", workload=acs.TrainingRun(params=7e9, tokens=1e11),
    ...                  fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")])
    >>> rows = acs.sweep(s, grid={"fleet.0.count": [64, 128]}, runs=50, seed=1)
    >>> [(r["fleet.0.count"], r["metric"]) for r in rows]  # doctest: +NORMALIZE_WHITESPACE
    [(64, 'tco_usd'), (64, 'time_to_train_days'),
     (128, 'tco_usd'), (128, 'time_to_train_days')]
    """
    if kwargs.get("store") is not None or kwargs.get("resume"):
        raise ValueError(
            "sweep takes no store=/resume=: a store holds one study and a sweep runs one "
            "study per point; to keep points on disk, loop over the points and call "
            "simulate(point, store=...) with one store per point"
        )
    kwargs = {k: v for k, v in kwargs.items() if k not in ("store", "resume")}
    points = _sweep_points(scenario, grid, kwargs)
    root = as_seed_sequence(seed)
    rows: list[dict[str, Any]] = []
    results: list[Result] = []
    with open_executor(executor) as pool:
        for at, point in points:
            res = simulate(point, runs=runs, seed=root, executor=pool, **kwargs)
            for m in metrics:
                p5, p50, p95 = np.quantile(res.samples(m), [0.05, 0.5, 0.95])
                stats = (res.mean(m), res.std_error(m), float(p5), float(p50), float(p95))
                rows.append({**at, "metric": m, **dict(zip(_SUMMARY, stats, strict=True))})
            if samples:
                results.append(res)
    if not samples:
        return rows
    return SweepResult(tuple(grid), tuple(at for at, _ in points), tuple(results), rows)


__all__ = ["SweepResult", "sweep"]
