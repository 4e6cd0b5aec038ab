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
from accelsim.errors import AccelsimError
from accelsim.results import Comparison, Result, render_table
from accelsim.scenario import Scenario, TrainingRun
from accelsim.seeding import SeedLike, as_seed_sequence

EngineName = Literal["auto", "analytic", "des"]
ExecutorLike = Executor | Literal["processes"] | None


def _pick_engine(scenario: Scenario, engine: EngineName) -> Literal["analytic", "des"]:
    exact = isinstance(scenario.workload, TrainingRun) and len(scenario.fleet) == 1
    if engine == "auto":
        return "analytic" if exact else "des"
    if engine == "analytic" and not exact:
        raise ValueError(
            f"the analytic engine runs one training run on one dedicated pool; scenario "
            f"{scenario.name!r} has a {scenario.workload.kind} workload on {len(scenario.fleet)} "
            f"pool(s): use engine='des' or 'auto'"
        )
    return engine


def _analytic_block(
    scenario: Scenario, root: np.random.SeedSequence, start: int, stop: int
) -> tuple[dict[str, FloatArray], InputDraws]:
    usage, draws = analytic.simulate_training(scenario, root, start, stop)
    costs = price_training(scenario, usage, draws)
    return {**usage, **costs}, draws


def _des_training_block(
    scenario: Scenario, root: np.random.SeedSequence, start: int, stop: int
) -> tuple[dict[str, FloatArray], InputDraws]:
    completion = shared.des_completion(scenario, root, start)
    usage, draws = analytic.simulate_training(scenario, root, start, stop, completion)
    return {**usage, **price_training(scenario, usage, draws)}, draws


@dataclass(frozen=True)
class _Study:
    """What a worker needs to run any chunk: plain, picklable data."""

    scenario_json: str
    entropy: int | Sequence[int] | None
    spawn_key: tuple[int, ...]
    engine: Literal["analytic", "des"] = "analytic"


def _run_chunk(
    study: _Study, start: int, stop: int
) -> tuple[dict[str, FloatArray], dict[str, FloatArray]]:
    """Run ``[start, stop)`` in a worker: an importable function of plain arguments."""
    scenario = Scenario.model_validate_json(study.scenario_json)
    root = np.random.SeedSequence(study.entropy, spawn_key=study.spawn_key)
    metrics: list[dict[str, FloatArray]] = []
    inputs: list[dict[str, FloatArray]] = []
    if study.engine == "analytic":
        block = _analytic_block
    elif isinstance(scenario.workload, TrainingRun):
        block = _des_training_block
    else:
        block = shared.simulate_block
    for b_start in range(start, stop, BLOCK_RUNS):
        data, draws = block(scenario, root, b_start, min(b_start + BLOCK_RUNS, stop))
        metrics.append(data)
        inputs.append(draws.drawn)
    return _concat(metrics), _concat(inputs)


def _map(
    executor: Executor, study: _Study, chunks: Sequence[tuple[int, int]]
) -> list[tuple[dict[str, FloatArray], dict[str, FloatArray]]]:
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
        ``auto`` picks the analytic engine for a training run on one dedicated pool.
    executor : None, "processes" or concurrent.futures.Executor
        Where chunks run: in-process (None), a process pool sized to the cores, or yours.
    chunk_runs : int
        Runs per chunk handed to the executor (rounded to whole blocks of 4096).

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
    chosen = _pick_engine(scenario, engine)
    if chosen == "des" and isinstance(scenario.workload, TrainingRun) and len(scenario.fleet) > 1:
        raise AccelsimError(
            f"scenario {scenario.name!r}: a training run across several pools is not supported "
            f"yet; use one pool, or model the run as a job in a JobStream or Trace"
        )
    root = as_seed_sequence(seed)
    chunks = _chunks(runs, chunk_runs)
    study = _Study(scenario.model_dump_json(), root.entropy, tuple(root.spawn_key), chosen)
    parts: list[tuple[dict[str, FloatArray], dict[str, FloatArray]]]
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
