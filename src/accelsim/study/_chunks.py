"""Engine choice and chunk running, shared by ``simulate``, ``compare``, ``sweep``, ``sensitivity``.

:func:`_pick_engine` chooses the analytic engine or the DES; a :class:`_Study` carries what a
worker needs (plain, picklable data) and :func:`_run_chunk` runs one chunk of runs on the
chosen engine; the chunk sizes, the run-count checks and the designed-runs path live here
too. The study entry points are in ``_simulate.py`` and ``_compare.py``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Literal

import numpy as np

from accelsim._typing import FloatArray
from accelsim.catalog import Catalog
from accelsim.engines import (
    BLOCK_RUNS,
    Design,
    DesOptions,
    InputDraws,
    InputPlan,
    blocks,
    price_training,
    simulate_block,
    simulate_mixed_block,
    simulate_serving_block,
    simulate_serving_fast,
    simulate_training,
    simulate_training_block,
)
from accelsim.scenario import Scenario, Serving, TrainingRun
from accelsim.study._runner import (
    ExecutorLike,
    open_executor,
    split_target,
)

EngineName = Literal["auto", "analytic", "des"]
DEFAULT_RUNS = 2000
"""Default ``runs`` of :func:`simulate`, :func:`compare` and :func:`sweep` (per option, per
point) and of the CLI's ``run``, ``compare`` and ``sweep``: a mean's 95 % Monte Carlo error
is then about 4.4 % of the metric's coefficient of variation (1.96 / sqrt(2000)), and a P5
or P95 rests on 100 runs beyond it."""
MAX_RUNS = 64 * BLOCK_RUNS
"""Default cap of a ``runs="auto"`` study."""
ANALYTIC_CHUNK_BLOCKS = 4
"""Default blocks per chunk of an in-process analytic study, which takes a chunk in one
vectorised pass: wide enough that numpy's per-call costs are small beside the work (they are
~40 % of a one-block pass), narrow enough that the pass's arrays stay in the CPU cache's
outer levels (``make bench``, benchmarks/bench_analytic.py)."""
DES_CHUNKS = 32
"""Default chunks of a DES study of up to ``DES_CHUNKS`` blocks (larger: one block each)."""


def _pick_engine(
    scenario: Scenario, engine: EngineName, des_only: str | None = None
) -> Literal["analytic", "des"]:
    """The engine to run; ``des_only`` names an option only the DES engine supports."""
    if engine not in ("auto", "analytic", "des"):
        raise ValueError(f"engine must be 'auto', 'analytic' or 'des', not {engine!r}")
    if scenario.workloads is not None:
        if engine == "analytic":
            raise ValueError(
                f"scenario {scenario.name!r} holds several workloads on one fleet, which only "
                f"the DES engine runs: use engine='des' or 'auto'"
            )
        return "des"
    if isinstance(scenario.workload, Serving):
        # Serving: "analytic" is the fast path (hourly demand, latency from the replica
        # model), which "auto" picks; "des" simulates every request (slow: for checks and
        # short horizons). Per-job records and utilisation series are job-stream options.
        if des_only is not None:
            raise ValueError(f"{des_only} is an option of job streams, not of serving")
        return "des" if engine == "des" else "analytic"
    exact = (
        isinstance(scenario.workload, TrainingRun)
        and len(scenario.fleet) == 1
        and scenario.background is None
    )
    phased = isinstance(scenario.workload, TrainingRun) and scenario.workload.phases is not None
    if phased and (engine == "des" or des_only is not None):
        raise ValueError(
            f"workload.phases (a run that changes size) runs on the analytic engine only; "
            f"scenario {scenario.name!r} asks for the DES"
            + (f" ({des_only})" if des_only is not None else "")
            + ": use engine='analytic' or 'auto', or remove the phases"
        )
    if engine == "auto":
        return "analytic" if exact and des_only is None else "des"
    if engine == "analytic" and not exact:
        shape = f"a {scenario.workload_kind} workload on {len(scenario.fleet)} pool(s)"
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


def _serving_block(
    scenario: Scenario,
    cat: Catalog,
    plan: InputPlan,
    start: int,
    stop: int,
    options: DesOptions,
    *,
    engine: Literal["analytic", "des"],
) -> _Block:
    """A serving chunk on the fast path (``"analytic"``) or the request DES (``"des"``)."""
    del options  # checked in simulate(): serving keeps no records
    if engine == "analytic":
        data, draws = simulate_serving_fast(scenario, plan, start, stop, cat=cat)
        return data, draws, {}
    if plan.design != "mc" or plan.designed is not None:
        raise ValueError(
            "engine='des' draws a serving scenario's inputs by plain Monte Carlo only "
            "(design='mc'); designs and sensitivity analyses of serving run on the fast "
            "path: use engine='auto'"
        )
    data, draws = simulate_serving_block(scenario, plan.root, start, stop, cat=cat)
    return data, draws, {}


def _analytic_block(
    scenario: Scenario,
    cat: Catalog,
    plan: InputPlan,
    start: int,
    stop: int,
    options: DesOptions,
) -> _Block:
    del options  # checked in simulate(): the analytic engine keeps nothing more
    usage, draws = simulate_training(scenario, cat, plan, start, stop)
    costs = price_training(scenario, cat, usage, draws)
    return {**usage, **costs}, draws, {}


@dataclass(frozen=True)
class _Study:
    """What a worker needs to run any chunk: picklable data, and nothing read from process
    state (the scenario is shipped validated, with the catalog it was resolved in)."""

    scenario: Scenario
    entropy: int | Sequence[int] | None
    spawn_key: tuple[int, ...]
    engine: Literal["analytic", "des"]
    options: DesOptions
    total_runs: int
    catalog: Catalog
    """The catalog snapshotted when the study was called: chips, prices and priors."""
    design: Design = "mc"
    designed: Mapping[str, FloatArray] | None = None
    """Designed U(0, 1) values by input name for runs ``designed_start`` on (sensitivity)."""
    designed_start: int = 0

    @property
    def scenario_json(self) -> str:
        """The scenario as JSON (the store's manifest)."""
        return self.scenario.model_dump_json()

    def plan(self) -> InputPlan:
        """How the study draws (:class:`accelsim.engines.InputPlan`).

        A chunk ships only its own runs' designed values; they are placed at their run
        indices (the runs before ``designed_start`` are never read by the chunk).
        """
        designed = None
        if self.designed is not None:
            pad = np.full(self.designed_start, np.nan)
            designed = {k: np.concatenate([pad, v]) for k, v in self.designed.items()}
        root = np.random.SeedSequence(self.entropy, spawn_key=self.spawn_key)
        return InputPlan(root, self.total_runs, self.design, designed)


_Chunk = tuple[dict[str, FloatArray], dict[str, FloatArray], list[dict[str, np.ndarray]]]


def _run_chunk(study: _Study, start: int, stop: int) -> _Chunk:
    """Run ``[start, stop)`` in a worker: an importable function of plain arguments."""
    scenario, cat, plan = study.scenario, study.catalog, study.plan()
    metrics: list[dict[str, FloatArray]] = []
    inputs: list[dict[str, FloatArray]] = []
    kept: list[dict[str, np.ndarray]] = []
    block: Callable[[Scenario, Catalog, InputPlan, int, int, DesOptions], _Block]
    if scenario.workloads is not None:
        block = simulate_mixed_block
    elif isinstance(scenario.workload, Serving):
        block = functools.partial(_serving_block, engine=study.engine)
    elif study.engine == "analytic":
        block = _analytic_block
    elif isinstance(scenario.workload, TrainingRun):
        block = simulate_training_block
    else:
        block = simulate_block
    # The analytic engine takes the chunk in one vectorised pass; the DES one block at a time.
    passes = [(start, stop)] if study.engine == "analytic" else blocks(start, stop)
    for b_start, b_stop in passes:
        data, draws, arrays = block(scenario, cat, plan, b_start, b_stop, study.options)
        metrics.append(data)
        inputs.append(draws.drawn)
        kept.append(arrays)
    return _concat(metrics), _concat(inputs), kept


def _concat(parts: Sequence[Mapping[str, FloatArray]]) -> dict[str, FloatArray]:
    """Each key's arrays end to end (one part is returned as is: no copy)."""
    if len(parts) == 1:
        return dict(parts[0])
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]} if parts else {}


class _Columns:
    """A study's metric (or input) columns, filled in place chunk by chunk."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.arrays: dict[str, FloatArray] = {}
        self.runs = 0

    def place(self, start: int, stop: int, part: dict[str, FloatArray]) -> None:
        """Copy a chunk's arrays into runs ``[start, stop)``; the chunk's dict is left holding
        views of the study's columns, so its own arrays can be freed."""
        if not self.arrays:
            self.arrays = {k: np.empty(self.total) for k in part}
        if part.keys() != self.arrays.keys():
            raise RuntimeError(f"chunk [{start}, {stop}) has other columns than the first one")
        for k, values in part.items():
            column = self.arrays[k][start:stop]
            column[...] = values
            part[k] = column
        self.runs += stop - start

    def filled(self) -> dict[str, FloatArray]:
        """The columns, once every chunk is in."""
        if self.runs != self.total:
            raise RuntimeError(f"{self.runs} of {self.total} runs were placed")
        return self.arrays


def _chunk_size(
    chunk_runs: int | None,
    runs: int,
    engine: Literal["analytic", "des"],
    *,
    wide: bool = False,
) -> int:
    """Runs per chunk: whole blocks on the analytic engine, any number on the DES engine.

    The analytic engine's default is :data:`ANALYTIC_CHUNK_BLOCKS` blocks where ``wide``
    (in-process, a fixed number of runs), else one block: chunks spread over an executor's
    workers, and ``runs="auto"`` may stop after any block (a wider chunk would run blocks
    only to drop them).
    """
    if chunk_runs is not None and (
        isinstance(chunk_runs, bool) or not isinstance(chunk_runs, int) or chunk_runs < 1
    ):
        raise ValueError(f"chunk_runs must be a positive integer or None, got {chunk_runs!r}")
    if engine == "analytic":
        # failures are sampled per block (InputDraws.block_rngs): chunks of whole blocks only
        default = ANALYTIC_CHUNK_BLOCKS * BLOCK_RUNS if wide else BLOCK_RUNS
        wanted = default if chunk_runs is None else chunk_runs
        return max(BLOCK_RUNS, (wanted // BLOCK_RUNS) * BLOCK_RUNS)
    if chunk_runs is None:
        return min(BLOCK_RUNS, -(-runs // DES_CHUNKS))
    return chunk_runs


def _chunks(runs: int, size: int) -> list[tuple[int, int]]:
    return [(s, min(s + size, runs)) for s in range(0, runs, size)]


def _json_entropy(entropy: object) -> int | list[int]:
    """A seed's entropy as JSON: an int, or a list of ints (e.g. an array entropy)."""
    if isinstance(entropy, int):
        return entropy
    return [int(e) for e in np.asarray(entropy).ravel()]


def _check_runs(
    runs: int | Literal["auto"], target: Mapping[str, float] | None, max_runs: int
) -> int:
    """Validate ``runs``/``target``/``max_runs``; the number of runs of the chunk grid."""
    if runs == "auto":
        if isinstance(max_runs, bool) or not isinstance(max_runs, int) or max_runs < 2:
            raise ValueError(f"max_runs must be an integer >= 2, got {max_runs!r}")
        if not target:
            raise ValueError('runs="auto" needs a target, e.g. target={"tco_usd": 0.01}')
        for m, tol in target.items():
            split_target(m)
            if not (isinstance(tol, int | float) and 0 < tol < float("inf")):
                raise ValueError(f"target[{m!r}] must be a relative tolerance > 0, got {tol!r}")
        return max_runs
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ValueError(f"runs must be an integer >= 1 or 'auto', got {runs!r}")
    if target is not None:
        raise ValueError('target is the stopping rule of runs="auto"; pass runs="auto"')
    return runs


def _engine_for(
    scenario: Scenario, engine: EngineName, keep_jobs: bool, resolution: float | None
) -> tuple[Literal["analytic", "des"], str | None]:
    """The engine for these options, and the DES-only option asked (or None); checks both."""
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
    return _pick_engine(scenario, engine, asked), asked


def _run_tasks(tasks: Sequence[tuple[_Study, int, int]], executor: Executor | None) -> list[_Chunk]:
    """``_run_chunk(*task)`` for every task, all submitted at once; results in task order."""
    if executor is None:
        return [_run_chunk(*task) for task in tasks]
    futures = [executor.submit(_run_chunk, *task) for task in tasks]
    try:
        return [f.result() for f in futures]
    except BaseException:
        for f in futures:
            f.cancel()
        raise


def _run_designed(
    scenario: Scenario,
    designs: Sequence[Mapping[str, FloatArray]],
    root: np.random.SeedSequence,
    *,
    executor: ExecutorLike = None,
    chunk_runs: int | None = None,
    catalog: Catalog,
) -> list[tuple[dict[str, FloatArray], dict[str, FloatArray]]]:
    """Analytic studies of ``scenario`` at designed inputs: ``(metrics, inputs)`` per design.

    Design ``d`` is a study of ``len(u)`` runs (``u`` any of its arrays) in which each named
    input maps ``u[i]`` through its ``ppf`` at run ``i`` (other inputs are drawn from
    ``root`` as in :func:`simulate`), in ``catalog``. The designed values travel to the
    workers inside each chunk's :class:`_Study` (only the chunk's own runs), never through
    process state, and every chunk of every design is submitted at once, so the designs
    run in parallel and the result is bit-identical whatever the executor.
    """
    entropy, key = root.entropy, tuple(root.spawn_key)
    tasks: list[tuple[_Study, int, int]] = []
    owner: list[int] = []
    for d, design in enumerate(designs):
        runs = len(next(iter(design.values())))
        size = _chunk_size(chunk_runs, runs, "analytic", wide=executor is None)
        for a, b in _chunks(runs, size):
            part = {k: np.asarray(v[a:b], dtype=float) for k, v in design.items()}
            options = DesOptions()
            study = _Study(
                scenario, entropy, key, "analytic", options, runs, catalog, "mc", part, a
            )
            tasks.append((study, a, b))
            owner.append(d)
    with open_executor(executor) as pool:
        parts = _run_tasks(tasks, pool)
    out = []
    for d in range(len(designs)):
        mine = [p for p, o in zip(parts, owner, strict=True) if o == d]
        out.append((_concat([p[0] for p in mine]), _concat([p[1] for p in mine])))
    return out


__all__ = ["ANALYTIC_CHUNK_BLOCKS", "DEFAULT_RUNS", "DES_CHUNKS", "MAX_RUNS", "EngineName"]
