"""Sweeps: one study per point of a grid over dotted field paths, with common random numbers.

Every point is validated before anything runs (all invalid points are reported in one
error), then simulated with the same root seed, so run ``i`` of every point shares its draws
of every shared input. :func:`sweep` returns a :class:`SweepResult`: a tidy summary table
(:meth:`SweepResult.to_pandas`, :attr:`SweepResult.rows`) and every point's runs
(:meth:`SweepResult.samples`, :meth:`SweepResult.result`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import product
from typing import TYPE_CHECKING, Any

from accelsim._typing import FloatArray
from accelsim.catalog import active
from accelsim.engines import check_runnable
from accelsim.results import SUMMARY_STATS, Result, Table, goals_table, prob_meets
from accelsim.scenario import Goals, Scenario, Serving
from accelsim.seeding import SeedLike, as_seed_sequence
from accelsim.study._budget import check_studies_memory
from accelsim.study._chunks import DEFAULT_RUNS, _engine_for
from accelsim.study._runner import ExecutorLike, open_executor
from accelsim.study._simulate import simulate, study_probe

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class SweepResult:
    """Every point of a :func:`sweep`: its summary rows and its runs.

    All points share one root seed, so run ``i`` of every point draws the same values of
    every input the points share (common random numbers): ``samples(p, m)[i]`` and
    ``samples(q, m)[i]`` are paired runs, as in :meth:`Comparison.prob_less`.

    Two sweeps are equal when their grids, metrics and every point's :class:`Result` are
    (see ``Result.__eq__``: bit for bit).

    Examples
    --------
    >>> import accelsim as acs
    >>> s = acs.Scenario(name="t", workload=acs.TrainingRun(params=7e9, tokens=1e11),
    ...                  fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")])
    >>> sw = acs.sweep(s, grid={"fleet.0.count": [64, 128]}, runs=50, seed=1)
    >>> sw.points
    ({'fleet.0.count': 64}, {'fleet.0.count': 128})
    >>> sw.samples({"fleet.0.count": 128}, "tco_usd").shape
    (50,)
    >>> list(sw.to_pandas().columns)  # doctest: +NORMALIZE_WHITESPACE
    ['fleet.0.count', 'metric', 'runs', 'mean', 'std_error', 'p5', 'p50', 'p95']
    """

    keys: tuple[str, ...]
    """The grid's dotted field paths, in grid order."""
    points: tuple[dict[str, Any], ...]
    """Every point as ``{path: value}``, in the order of ``itertools.product`` over the grid."""
    results: tuple[Result, ...]
    """The full :class:`Result` of each point, aligned with ``points``."""
    metrics: tuple[str, ...]
    """The metrics of the summary table (:attr:`rows`, :meth:`to_pandas`)."""
    goals: Goals | None = None
    """Targets every point is held to (``sweep(..., goals=...)``), or ``None``."""

    def __post_init__(self) -> None:
        if len(self.points) != len(self.results):
            raise ValueError(f"{len(self.points)} points but {len(self.results)} results")

    def _index(self, point: Mapping[str, Any] | int) -> int:
        if isinstance(point, int):
            if not -len(self.points) <= point < len(self.points):
                raise IndexError(f"point {point} of a sweep of {len(self.points)} points")
            return point % len(self.points)
        want = dict(point)
        if set(want) != set(self.keys):
            raise KeyError(f"a sweep point gives a value for every path {list(self.keys)}")
        for i, p in enumerate(self.points):
            if p == want:
                return i
        raise KeyError(f"no sweep point {want}; the points are {list(self.points)}")

    def result(self, point: Mapping[str, Any] | int) -> Result:
        """The :class:`Result` of a point: its index, or its value at every grid path."""
        return self.results[self._index(point)]

    def samples(self, point: Mapping[str, Any] | int, metric: str) -> FloatArray:
        """Every run of ``metric`` at one point (its index or its values), shape ``(runs,)``.

        Run ``i`` of every point is paired (common random numbers), so e.g.
        ``np.mean(sw.samples(1, m) < sw.samples(0, m))`` is the chance point 1 beats point
        0 run for run.
        """
        return self.result(point).samples(metric)

    def _label(self, i: int) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.points[i].items())

    def _goals(self) -> Goals:
        if self.goals is None:
            raise ValueError("this sweep has no goals: pass goals=acs.Goals(...) to sweep()")
        return self.goals

    def prob_meets(self, point: Mapping[str, Any] | int, goal: str | None = None) -> float:
        """P(the point meets every goal at once) over its runs, or one goal's by name (as
        :meth:`accelsim.Comparison.prob_meets`)."""
        i = self._index(point)
        return prob_meets(self.results[i], self._goals(), goal, option=self._label(i))

    def as_goals_table(self) -> Table:
        """:meth:`goals_table` as a :class:`~accelsim.results.Table` (one column per point)."""
        named = {self._label(i): res for i, res in enumerate(self.results)}
        return goals_table(named, self._goals())

    def goals_table(self) -> str:
        """P(meets) of each goal and of all at once (rows) for each point (columns)."""
        return str(self.as_goals_table())

    @property
    def rows(self) -> list[dict[str, Any]]:
        """The tidy summary as dicts: one per point and metric, in point order then metric
        order, with the point's value at every grid path, ``metric``, ``runs`` and
        :data:`~accelsim.results.SUMMARY_STATS` (``mean``, ``std_error`` of the mean, ``p5``,
        ``p50``, ``p95``; see :meth:`Result.stats`)."""
        return [
            {**at, "metric": m, "runs": res.runs, **res.stats(m)}
            for at, res in zip(self.points, self.results, strict=True)
            for m in self.metrics
        ]

    def _repr_html_(self) -> str:
        """The tidy summary as an HTML table (mean ± 95 % MC error), for notebooks."""
        from accelsim.results import sweep_html

        return sweep_html(self)

    def to_pandas(self) -> pd.DataFrame:
        """The tidy summary (:attr:`rows`) as a DataFrame: one row per point and metric.

        Columns: the grid paths, ``metric``, ``runs``, ``mean``, ``std_error`` (of the mean;
        missing, ``NaN``, for a point of one run), ``p5``, ``p50``, ``p95``. Each point's
        runs are in :meth:`samples` (or ``sw.result(point).to_pandas()``). Needs pandas.
        """
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "SweepResult.to_pandas() needs pandas: pip install 'accelsim[pandas]'"
            ) from exc
        columns = [*self.keys, "metric", "runs", *SUMMARY_STATS]
        return pd.DataFrame(self.rows, columns=columns)


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
    catalog = kwargs.get("catalog") or active()
    points: list[tuple[dict[str, Any], Scenario]] = []
    bad: list[str] = []
    for values in product(*(axes[k] for k in keys)):
        at = dict(zip(keys, values, strict=True))
        point = scenario
        try:
            for k, v in at.items():
                point = point.replace(k, v)
            _engine_for(point, engine, keep_jobs, resolution)
            check_runnable(point, catalog, warn=False)  # a trace, the job caps (each warns)
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


SERVING_SWEEP_METRICS = (
    "usd_per_million_output_tokens",
    "tco_usd",
    "slo_attainment",
    "replicas_peak",
)
"""The metrics a sweep of a serving scenario summarises unless told otherwise: cost per
token, total cost, the SLO and the fleet it takes."""


def sweep(
    scenario: Scenario,
    grid: Mapping[str, Sequence[Any]],
    *,
    runs: int = DEFAULT_RUNS,
    seed: SeedLike = None,
    metrics: Sequence[str] | None = None,
    executor: ExecutorLike = None,
    goals: Goals | None = None,
    **kwargs: Any,
) -> SweepResult:
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
    metrics : sequence of str, optional
        The metrics summarised in the rows; unset: :data:`SERVING_SWEEP_METRICS` for a
        serving scenario, ``("tco_usd", "time_to_train_days")`` otherwise.
    executor : None, "processes", concurrent.futures.Executor or distributed.Client
        Where each point's chunks run, as in :func:`simulate`. It is opened once for the
        whole sweep (one process pool, not one per point); points run one after another,
        each split into chunks over the workers. Results do not depend on it.
    goals : Goals, optional
        Targets and a confidence attached to the result: ``prob_meets(point)`` and
        ``goals_table()`` (as for :func:`compare`). Each goal's metric must be reported at
        every point (checked once the points have run).
    **kwargs
        Passed to :func:`simulate` for every point (``engine``, ``chunk_runs``,
        ``design``, ``progress``, ...). Not ``store``/``resume``: a store holds one study
        and a sweep is one study per point, so a sweep with a store is an error; to keep
        points on disk, loop over the points with ``simulate(point, store=...)``, one
        store per point.

    Returns
    -------
    SweepResult
        Always (no flag changes the return type). ``to_pandas()`` / ``rows``: the tidy
        summary, one row per point and metric (grid paths, ``metric``, ``runs``, ``mean``,
        ``std_error`` of the mean, ``p5``, ``p50``, ``p95``); ``samples(point, metric)``:
        that point's runs; ``result(point)``: its full :class:`Result`. Every point's
        :class:`Result` is kept, so memory grows with points x runs x (metrics + inputs).

    Raises
    ------
    ValueError
        Before anything runs: a grid path without a list of values, a ``store``, or any
        invalid point (a value the scenario rejects, a path that does not exist, a point the
        chosen engine cannot run, or one :func:`accelsim.engines.check_runnable` refuses: a
        missing trace, a job larger than the fleet, the job caps). The error lists every
        invalid point with the reason, not just the first.

    Examples
    --------
    >>> import accelsim as acs
    >>> s = acs.Scenario(name="t", workload=acs.TrainingRun(params=7e9, tokens=1e11),
    ...                  fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")])
    >>> sw = acs.sweep(s, grid={"fleet.0.count": [64, 128]}, runs=50, seed=1)
    >>> [(r["fleet.0.count"], r["metric"]) for r in sw.rows]  # doctest: +NORMALIZE_WHITESPACE
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
    if metrics is None:
        serving = isinstance(scenario.workload, Serving)
        metrics = SERVING_SWEEP_METRICS if serving else ("tco_usd", "time_to_train_days")
    points = _sweep_points(scenario, grid, kwargs)
    root = as_seed_sequence(seed)
    kwargs["catalog"] = kwargs.get("catalog") or active()  # one snapshot for every point
    # Every point's arrays are held at once: together, before any point runs.
    check_studies_memory(
        [
            (
                ", ".join(f"{k}={v}" for k, v in at.items()),
                *study_probe(point, runs=runs, seed=root, **kwargs),
            )
            for at, point in points
        ],
        "points of the sweep",
    )
    results: list[Result] = []
    with open_executor(executor) as pool:
        for _, point in points:
            results.append(simulate(point, runs=runs, seed=root, executor=pool, **kwargs))
    for res in results:
        for m in metrics:
            res.samples(m)  # an unknown metric fails here, naming the metrics there are
    out = SweepResult(
        tuple(grid), tuple(at for at, _ in points), tuple(results), tuple(metrics), goals
    )
    if goals is not None:
        for i in range(len(out.points)):
            out.prob_meets(i)  # a goal whose metric a point lacks fails here, naming both
    return out


__all__ = ["SERVING_SWEEP_METRICS", "SweepResult", "sweep"]
