"""Studies: ``simulate``, ``compare``, ``sweep`` and ``sensitivity``.

A study normalises its seed once, splits its runs into chunks made of whole blocks
(:data:`accelsim.engines.inputs.BLOCK_RUNS` runs each; streams are addressed by block), runs
the chunks in-process or on any ``concurrent.futures.Executor``, and concatenates them in
order. The result is bit-identical whatever the executor, chunk size or worker count.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from accelsim._typing import FloatArray
from accelsim.engines import analytic, shared
from accelsim.engines.inputs import BLOCK_RUNS, InputDraws
from accelsim.engines.pricing import price_training
from accelsim.results import Comparison, Result, render_table
from accelsim.scenario import Scenario, TrainingRun
from accelsim.seeding import SeedLike, as_seed_sequence

EngineName = Literal["auto", "analytic", "des"]
ExecutorLike = Executor | Literal["processes"] | None


def _pick_engine(
    scenario: Scenario, engine: EngineName, des_only: str | None = None
) -> Literal["analytic", "des"]:
    """The engine to run; ``des_only`` names an option only the DES engine supports."""
    exact = (
        isinstance(scenario.workload, TrainingRun)
        and len(scenario.fleet) == 1
        and scenario.background is None
    )
    if engine == "auto":
        return "analytic" if exact and des_only is None else "des"
    if engine == "analytic" and not exact:
        shape = f"a {scenario.workload.kind} workload on {len(scenario.fleet)} pool(s)"
        if scenario.background is not None:
            shape += " with a background"
        raise ValueError(
            f"the analytic engine runs one training run on one dedicated pool; scenario "
            f"{scenario.name!r} has {shape}: use engine='des' or 'auto'"
        )
    if engine == "analytic" and des_only is not None:
        raise ValueError(
            f"{des_only} needs the DES engine (the analytic engine simulates no jobs or "
            f"queues): use engine='des' or 'auto'"
        )
    return engine


_Block = tuple[dict[str, FloatArray], InputDraws, dict[str, np.ndarray]]


def _analytic_block(
    scenario: Scenario,
    root: np.random.SeedSequence,
    start: int,
    stop: int,
    options: shared.DesOptions,
) -> _Block:
    del options  # checked in simulate(): the analytic engine keeps nothing more
    usage, draws = analytic.simulate_training(scenario, root, start, stop)
    costs = price_training(scenario, usage, draws)
    return {**usage, **costs}, draws, {}


@dataclass(frozen=True)
class _Study:
    """What a worker needs to run any chunk: plain, picklable data."""

    scenario_json: str
    entropy: int | Sequence[int] | None
    spawn_key: tuple[int, ...]
    engine: Literal["analytic", "des"]
    options: shared.DesOptions


_Chunk = tuple[dict[str, FloatArray], dict[str, FloatArray], list[dict[str, np.ndarray]]]


def _run_chunk(study: _Study, start: int, stop: int) -> _Chunk:
    """Run ``[start, stop)`` in a worker: an importable function of plain arguments."""
    scenario = Scenario.model_validate_json(study.scenario_json)
    root = np.random.SeedSequence(study.entropy, spawn_key=study.spawn_key)
    metrics: list[dict[str, FloatArray]] = []
    inputs: list[dict[str, FloatArray]] = []
    kept: list[dict[str, np.ndarray]] = []
    if study.engine == "analytic":
        block = _analytic_block
    elif isinstance(scenario.workload, TrainingRun):
        block = shared.simulate_training_block
    else:
        block = shared.simulate_block
    for b_start in range(start, stop, BLOCK_RUNS):
        stop_b = min(b_start + BLOCK_RUNS, stop)
        data, draws, arrays = block(scenario, root, b_start, stop_b, study.options)
        metrics.append(data)
        inputs.append(draws.drawn)
        kept.append(arrays)
    return _concat(metrics), _concat(inputs), kept


def _map(executor: Executor, study: _Study, chunks: Sequence[tuple[int, int]]) -> list[_Chunk]:
    futures = [executor.submit(_run_chunk, study, a, b) for a, b in chunks]
    return [f.result() for f in futures]  # in submission order: results never depend on timing


def _concat(parts: Sequence[Mapping[str, FloatArray]]) -> dict[str, FloatArray]:
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]} if parts else {}


def _chunks(runs: int, chunk_runs: int) -> list[tuple[int, int]]:
    size = max(BLOCK_RUNS, (chunk_runs // BLOCK_RUNS) * BLOCK_RUNS)
    return [(s, min(s + size, runs)) for s in range(0, runs, size)]


def simulate(
    scenario: Scenario,
    runs: int = 2000,
    seed: SeedLike = None,
    *,
    engine: EngineName = "auto",
    executor: ExecutorLike = None,
    chunk_runs: int = BLOCK_RUNS,
    keep_jobs: bool = False,
    utilization_resolution_hours: float | None = None,
) -> Result:
    """Monte Carlo study of one scenario: ``runs`` samples of every metric.

    Parameters
    ----------
    scenario : Scenario
        The validated scenario.
    runs : int
        Number of Monte Carlo runs.
    seed : int, SeedSequence or None
        Root seed; the same seed gives bit-identical results with any executor.
    engine : {"auto", "analytic", "des"}
        ``auto`` picks the analytic engine for a training run on one dedicated pool (no
        ``background``, and neither ``keep_jobs`` nor a resolution asked), else the DES
        engine. On the DES engine a training run is one gang job on the first pool,
        competing with the scenario's ``background`` (see :mod:`accelsim.engines.shared`);
        its queue wait is reported as ``queue_wait_days`` and counted in ``wait_days`` and
        ``time_to_train_days``.
    executor : None, "processes" or concurrent.futures.Executor
        Where chunks run: in-process (None), a process pool sized to the cores, or yours.
    chunk_runs : int
        Runs per chunk handed to the executor (rounded to whole blocks of 4096).
    keep_jobs : bool
        DES engine only. Keep every job's record: ``Result.extras["jobs"]`` is one
        structured numpy array (dtype :data:`accelsim.engines.shared.JOB_DTYPE`) with a
        ``run`` column, one row per job that arrived in each run (so ``jobs_arrived`` rows
        per run where that metric is reported). Times are hours from the start of the
        simulation; a training run is job 0. Memory grows with the jobs.
    utilization_resolution_hours : float or None
        DES engine only, and the scenario needs ``horizon_days``. Width of the bins of
        ``Result.extras["series"]``: ``start_hours`` (bins,), ``busy_chips``, ``up_chips``
        and ``utilization`` (runs, bins, pools), ``queued_jobs`` (runs, bins), with
        ``ceil(horizon / resolution)`` bins from time 0 (warm-up included). [h]

    Raises
    ------
    ValueError
        ``keep_jobs`` or ``utilization_resolution_hours`` with ``engine="analytic"``, a
        resolution that is not > 0 or without ``horizon_days``, or a scenario the chosen
        engine cannot run.

    Examples
    --------
    >>> import accelsim as acs
    >>> s = acs.Scenario(name="t", workload=acs.TrainingRun(params=7e9, tokens=1e11),
    ...                  fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")])
    >>> res = acs.simulate(s, runs=200, seed=1)
    >>> res.runs, res.samples("tco_usd").shape
    (200, (200,))
    """
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 2:
        raise ValueError(f"runs must be an integer >= 2, got {runs!r}")
    resolution = utilization_resolution_hours
    if resolution is not None:
        if not (isinstance(resolution, int | float) and 0 < resolution < float("inf")):
            raise ValueError(
                f"utilization_resolution_hours must be a number > 0 or None, got {resolution!r}"
            )
        if scenario.horizon_days is None:
            raise ValueError(
                f"utilization_resolution_hours needs a horizon: scenario {scenario.name!r} "
                f"has no horizon_days"
            )
    asked = "keep_jobs" if keep_jobs else None
    asked = "utilization_resolution_hours" if resolution is not None else asked
    chosen = _pick_engine(scenario, engine, asked)
    root = as_seed_sequence(seed)
    chunks = _chunks(runs, chunk_runs)
    options = shared.DesOptions(keep_jobs=bool(keep_jobs), resolution_hours=resolution)
    study = _Study(scenario.model_dump_json(), root.entropy, tuple(root.spawn_key), chosen, options)
    parts: list[_Chunk]
    if executor is None:
        parts = [_run_chunk(study, a, b) for a, b in chunks]
    elif executor == "processes":
        # spawn: workers import accelsim afresh, so no state leaks in from the parent.
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=os.cpu_count() or 1, mp_context=context) as pool:
            parts = _map(pool, study, chunks)
    else:
        parts = _map(executor, study, chunks)
    data = _concat([p[0] for p in parts])
    inputs = _concat([p[1] for p in parts])
    entropy = root.entropy if isinstance(root.entropy, int) else None
    return Result(
        scenario_name=scenario.name,
        data=data,
        seed_entropy=entropy,
        engine=chosen,
        info=analytic.run_info(scenario) if isinstance(scenario.workload, TrainingRun) else None,
        inputs=inputs,
        extras=shared.merge_kept([kept for p in parts for kept in p[2]]),
    )


def compare(
    scenarios: Mapping[str, Scenario] | Sequence[Scenario],
    runs: int = 2000,
    seed: SeedLike = None,
    **kwargs: Any,
) -> Comparison:
    """Simulate several options with common random numbers (one root seed for all).

    Examples
    --------
    >>> import accelsim as acs
    >>> w = acs.TrainingRun(params=7e9, tokens=1e11)
    >>> gpu = acs.Scenario(name="gpu", workload=w,
    ...                    fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")])
    >>> tpu = acs.Scenario(name="tpu", workload=w,
    ...                    fleet=[acs.Pool(chip="tpu-v5p", count=128, provider="gcp")])
    >>> cmp = acs.compare({"gpu": gpu, "tpu": tpu}, runs=200, seed=1)
    >>> 0.0 <= cmp.prob_less("tco_usd", "tpu", "gpu") <= 1.0
    True
    """
    named = dict(scenarios) if isinstance(scenarios, Mapping) else {s.name: s for s in scenarios}
    if len(named) < 1:
        raise ValueError("compare needs at least one scenario")
    root = as_seed_sequence(seed)
    return Comparison({k: simulate(s, runs=runs, seed=root, **kwargs) for k, s in named.items()})


def sweep(
    scenario: Scenario,
    grid: Mapping[str, Sequence[Any]],
    runs: int = 1000,
    seed: SeedLike = None,
    *,
    metrics: Sequence[str] = ("tco_usd", "time_to_train_days"),
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """Every point of a grid over dotted field paths, with common random numbers.

    Returns a tidy table: one row (a dict) per point and metric with mean, its standard
    error, P5, P50 and P95. Invalid points raise an error naming the point and why.
    """
    from itertools import product

    root = as_seed_sequence(seed)
    keys = list(grid)
    rows: list[dict[str, Any]] = []
    for values in product(*(grid[k] for k in keys)):
        point = scenario
        for k, v in zip(keys, values, strict=True):
            try:
                point = point.replace(k, v)
            except Exception as exc:  # a bad point is reported, never dropped
                raise ValueError(
                    f"sweep point {dict(zip(keys, values, strict=True))}: {exc}"
                ) from exc
        res = simulate(point, runs=runs, seed=root, **kwargs)
        for m in metrics:
            p5, p50, p95 = np.quantile(res.samples(m), [0.05, 0.5, 0.95])
            rows.append(
                {
                    **dict(zip(keys, values, strict=True)),
                    "metric": m,
                    "mean": res.mean(m),
                    "std_error": res.std_error(m),
                    "p5": float(p5),
                    "p50": float(p50),
                    "p95": float(p95),
                }
            )
    return rows


def sensitivity(
    scenario: Scenario, metric: str = "tco_usd", runs: int = 4096, seed: SeedLike = None
) -> list[tuple[str, float]]:
    """Which uncertain inputs drive ``metric``: Spearman rank correlation per input.

    Returns ``(input name, rho)`` pairs sorted by ``|rho|``, largest first; inputs that did
    not vary are left out. (Variance-based Sobol indices are planned; rank correlation is
    the screening step.)
    """
    from scipy.stats import spearmanr

    res = simulate(scenario, runs=runs, seed=seed)
    y = res.samples(metric)
    out = []
    for name, x in res.inputs.items():
        if np.ptp(x) > 0 and np.ptp(y) > 0:
            rho = float(spearmanr(x, y).statistic)
            out.append((name, rho))
    return sorted(out, key=lambda t: -abs(t[1]))


def sensitivity_table(pairs: Sequence[tuple[str, float]]) -> str:
    """The output of :func:`sensitivity` as a table."""
    return render_table(["input", "spearman rho"], [[n, f"{r:+.2f}"] for n, r in pairs])


__all__ = ["compare", "sensitivity", "sensitivity_table", "simulate", "sweep"]
