"""Studies: ``simulate``, ``compare``, ``sweep`` and ``sensitivity``.

A study normalises its seed once, splits its runs into chunks, runs the chunks in-process or
on any ``concurrent.futures.Executor``, and concatenates them in order. Each input has one
stream, and a chunk takes its runs' values of it (:mod:`accelsim.engines`). The
analytic engine samples failures per block (:data:`accelsim.engines.BLOCK_RUNS`
runs), so its chunks are whole blocks, each taken in one vectorised pass; the DES engine
draws each run's events from the run's own stream, so its chunks may be any runs (small
studies are split over the workers). The result is bit-identical whatever the executor,
chunk size or worker count.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from accelsim._typing import FloatArray
from accelsim.catalog import Catalog, active
from accelsim.engines import (
    BLOCK_RUNS,
    Design,
    DesOptions,
    InputDraws,
    InputPlan,
    blocks,
    check_design_runs,
    merge_kept,
    price_training,
    run_info,
    simulate_block,
    simulate_serving_block,
    simulate_serving_fast,
    simulate_training,
    simulate_training_block,
)
from accelsim.results import Comparison, Result
from accelsim.scenario import Goals, Scenario, Serving, TrainingRun
from accelsim.seeding import SeedLike, as_seed_sequence
from accelsim.study._runner import (
    Convergence,
    ExecutorLike,
    ProgressLike,
    as_progress,
    open_executor,
    run_chunks,
    split_target,
)
from accelsim.study._store import ChunkStore, manifest
from accelsim.study._stores import open_store, stored_chunk_runs, stored_seed

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


def _serving_fast_block(
    scenario: Scenario,
    cat: Catalog,
    plan: InputPlan,
    start: int,
    stop: int,
    options: DesOptions,
) -> _Block:
    del options  # checked in simulate(): serving keeps no records
    if plan.design != "mc" or plan.designed is not None:
        raise ValueError("serving draws its inputs by plain Monte Carlo only (design='mc')")
    data, draws = simulate_serving_fast(scenario, plan.root, start, stop, cat=cat)
    return data, draws, {}


def _serving_des_block(
    scenario: Scenario,
    cat: Catalog,
    plan: InputPlan,
    start: int,
    stop: int,
    options: DesOptions,
) -> _Block:
    del options
    if plan.design != "mc" or plan.designed is not None:
        raise ValueError("serving draws its inputs by plain Monte Carlo only (design='mc')")
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
    if isinstance(scenario.workload, Serving):
        block = _serving_fast_block if study.engine == "analytic" else _serving_des_block
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


def simulate(
    scenario: Scenario,
    *,
    runs: int | Literal["auto"] = DEFAULT_RUNS,
    seed: SeedLike = None,
    engine: EngineName = "auto",
    executor: ExecutorLike = None,
    chunk_runs: int | None = None,
    keep_jobs: bool = False,
    utilization_resolution_hours: float | None = None,
    target: Mapping[str, float] | None = None,
    max_runs: int = MAX_RUNS,
    store: str | os.PathLike[str] | None = None,
    resume: bool = False,
    progress: ProgressLike = True,
    design: Design = "mc",
    catalog: Catalog | None = None,
) -> Result:
    """Monte Carlo study of one scenario: ``runs`` samples of every metric.

    Parameters
    ----------
    scenario : Scenario
        The validated scenario.
    runs : int or "auto"
        Number of Monte Carlo runs (>= 1; one run is a legitimate study, e.g. a single
        replay of a trace: its quantiles are its value and its standard error is not
        available), or ``"auto"``: add blocks of 4096 runs until every ``target`` holds,
        up to ``max_runs``. Keyword-only, as ``seed``, in every study function.
    seed : int, SeedSequence or None
        Root seed; the same seed gives bit-identical results with any executor.
    design : {"mc", "lhs", "sobol", "antithetic"}
        How each uncertain input is drawn. ``"mc"`` (default): independent random draws.
        ``"lhs"``: per input and block of 4096 runs, a Latin hypercube's marginal (one
        point in each of the block's equal-probability strata, randomly permuted,
        independently across inputs). ``"sobol"``: per input and block, a scrambled
        one-dimensional Sobol' sequence, scrambled independently per input (randomised
        quasi-Monte Carlo per input); ``runs`` must be a multiple of 4096 or a power of two
        up to 4096. ``"antithetic"``: runs are paired inside each block, run ``2k + 1``
        taking the mirror ``1 - u`` of the uniform ``u`` of every uncertain input of run
        ``2k`` (both mapped through the input's ``ppf``); ``runs`` must be even. Only
        inputs are paired: failures and DES events stay independent between a pair's runs.
        A metric monotone in the inputs gets a smaller error of its mean, and
        ``Result.std_error`` (so the 95 % MC error of summaries) is computed over the
        ``runs / 2`` independent pair means. ``"lhs"`` and ``"sobol"`` map their uniforms
        through each input's ``ppf`` (see :func:`accelsim.engines.design_uniforms`):
        every run is still a draw from the inputs' distributions, so means stay unbiased,
        but runs are no longer independent, and ``Result.std_error`` (an iid formula for
        these two) is not the error of their mean (usually an overstatement). No design but
        ``"mc"`` with ``runs="auto"``, whose stopping rule assumes independent runs.
    engine : {"auto", "analytic", "des"}
        ``auto`` picks the analytic engine for a training run on one dedicated pool (no
        ``background``, and neither ``keep_jobs`` nor a resolution asked), else the DES
        engine. On the DES engine a training run is one gang job on the first pool,
        competing with the scenario's ``background`` (see :mod:`accelsim.engines`);
        its queue wait is reported as ``queue_wait_days`` and counted in ``wait_days`` and
        ``time_to_train_days``. A :class:`~accelsim.Serving` workload runs its fast path
        under ``auto`` and ``analytic`` (hourly demand, latency from the replica model) and
        the request-level DES under ``des`` (see docs/serving.md).
    executor : None, "processes", concurrent.futures.Executor or distributed.Client
        Where chunks run: in-process (None), a process pool sized to the cores, yours, or a
        Dask cluster (through ``client.get_executor()``).
    chunk_runs : int or None
        Runs per chunk handed to the executor. The analytic engine rounds it to whole
        blocks of 4096 and takes a chunk in one vectorised pass (default: 4 blocks
        in-process, one block with an executor or ``runs="auto"``); the DES engine takes any
        size (default ``ceil(runs / 32)``, at most 4096, so a small study is still split
        over the workers). The result does not depend on it.
    keep_jobs : bool
        DES engine only. Keep every job's record: ``Result.extras["jobs"]`` is one
        structured numpy array (dtype :data:`accelsim.engines.JOB_DTYPE`) with a
        ``run`` column, one row per job that arrived in each run (so ``jobs_arrived`` rows
        per run where that metric is reported). Times are hours from the start of the
        simulation; a training run is job 0. Memory grows with the jobs.
    utilization_resolution_hours : float or None
        DES engine only, and the scenario needs ``horizon_days``. Width of the bins of
        ``Result.extras["series"]``: ``start_hours`` (bins,), ``busy_chips``, ``up_chips``
        and ``utilization`` (runs, bins, pools), ``queued_jobs`` (runs, bins), with
        ``ceil(horizon / resolution)`` bins from time 0 (warm-up included). [h]
    target : mapping of metric name to relative tolerance, optional
        ``runs="auto"`` only. Stop at the first multiple of 4096 runs where, for every
        metric, the half-width of the 95 % confidence interval of its mean is at most
        ``tolerance * |mean|``. Runs are iid, so the interval is ``mean ± 1.96 s/sqrt(n)``.
        A key ``"metric@pNN"`` (e.g. ``"tco_usd@p90"``) targets the NN % quantile instead:
        its 95 % interval is the distribution-free order-statistic interval (from the
        binomial distribution of the number of runs below the quantile, see
        :func:`accelsim.study._runner.quantile_precision`), and half its width must be at most
        ``tolerance * |quantile|``. The achieved precision is in
        ``Result.extras["precision"]``, keyed like ``target`` (per key: ``runs``,
        ``half_width``, ``relative``, ``target``, ``met``, and ``mean`` for a mean, or
        ``quantile``, ``value``, ``lower`` and ``upper`` for a quantile). The stopping point
        depends on the data only, so the result is the first runs of a fixed study with
        the same seed, whatever the executor or chunk size.
    max_runs : int
        ``runs="auto"`` only: the cap. Where it is reached, ``met`` is false for the
        metrics still short of their target.
    store : path, optional
        Where each finished chunk is stored as it completes, after a manifest written
        before any chunk runs (see :mod:`accelsim.study._store`). A path ending in ``.sqlite``,
        ``.sqlite3`` or ``.db`` is one SQLite database (standard library only; one
        committed transaction per chunk; ``SELECT * FROM runs`` is one row per run). Any
        other path, or an existing directory, is a directory of one Parquet file per chunk
        (e.g. ``"study.parquet"``; needs ``pip install 'accelsim[store]'``). Not with
        ``keep_jobs`` or ``utilization_resolution_hours``.
    resume : bool
        Continue the study in ``store``: check that its manifest matches this call, reuse
        its finished chunks and run only the missing ones; the result is bit-identical to
        an uninterrupted study. With ``seed=None`` the stored seed is used, and with
        ``chunk_runs=None`` the stored chunk size. Without
        ``resume`` a store that already holds files is an error.
    catalog : Catalog or None
        The chips, price sheets and priors to simulate with; ``None`` (default): the active
        catalog (:func:`accelsim.catalog.load`), snapshotted once, when this is called. The
        catalog travels with the study to every worker, so a process pool or a Dask cluster
        prices with exactly the same sheets as an in-process study.
    progress : bool or callable(done, total)
        ``True`` (default): runs done, runs/s and ETA, as a line on stderr when it is a
        terminal, as a bar updated in place in a Jupyter notebook (see
        :mod:`accelsim.study._progress`), nothing otherwise; ``False``: none. A callable is
        called in this process after each finished chunk with the runs done so far and the runs in
        total (for ``runs="auto"``, ``max_runs``, then ``(n, n)`` once the study stops
        after ``n`` runs).

    Raises
    ------
    ValueError
        ``keep_jobs`` or ``utilization_resolution_hours`` with ``engine="analytic"`` or a
        store, a resolution that is not > 0 or without ``horizon_days``, a scenario the
        chosen engine cannot run, a bad ``runs``/``target``/``max_runs``, or a store whose
        manifest differs from this study.
    FileExistsError
        ``store`` already holds a study and ``resume`` is false.
    ImportError
        ``store`` is a Parquet store and pyarrow is not installed.

    Examples
    --------
    >>> import accelsim as acs
    >>> s = acs.Scenario(name="t", workload=acs.TrainingRun(params=7e9, tokens=1e11),
    ...                  fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")])
    >>> res = acs.simulate(s, runs=200, seed=1)
    >>> res.runs, res.samples("tco_usd").shape
    (200, (200,))
    >>> auto = acs.simulate(s, runs="auto", target={"tco_usd": 0.01}, seed=1)
    >>> auto.extras["precision"]["tco_usd"]["met"]
    True
    """
    total = _check_runs(runs, target, max_runs)
    check_design_runs(design, total)
    if design != "mc" and runs == "auto":
        raise ValueError(
            f'design={design!r} needs a fixed number of runs: the stopping rule of runs="auto" '
            f"assumes independent runs"
        )
    resolution = utilization_resolution_hours
    chosen, asked = _engine_for(scenario, engine, keep_jobs, resolution)
    if store is not None and asked is not None:
        raise ValueError(f"a study store keeps metrics and inputs only, not {asked}")
    if resume and store is None:
        raise ValueError("resume=True needs the store= of the study to resume")
    if seed is None and resume and store is not None:
        seed = stored_seed(store)
    root = as_seed_sequence(seed)
    cat = active() if catalog is None else catalog
    if chunk_runs is None and resume and store is not None:
        chunk_runs = stored_chunk_runs(store)  # the chunks it holds
    wide = executor is None and runs != "auto"
    size = _chunk_size(chunk_runs, total, chosen, wide=wide)
    chunks = _chunks(total, size)
    options = DesOptions(keep_jobs=bool(keep_jobs), resolution_hours=resolution)
    study = _Study(
        scenario, root.entropy, tuple(root.spawn_key), chosen, options, total, cat, design
    )

    have: dict[int, _Chunk] = {}
    chunk_store: ChunkStore | None = None
    if store is not None:
        meta = manifest(
            scenario_json=study.scenario_json,
            entropy=_json_entropy(root.entropy),
            spawn_key=study.spawn_key,
            runs=runs if runs != "auto" else {"auto": dict(target or {}), "max_runs": max_runs},
            chunk_runs=size,
            engine=chosen,
            # the design joins the manifest only when not "mc", so older stores still resume
            options=asdict(options) if design == "mc" else {**asdict(options), "design": design},
        )
        chunk_store = open_store(store, meta, resume)
        for i in sorted(chunk_store.finished() & set(range(len(chunks)))):
            metrics, inputs = chunk_store.read(i, *chunks[i])
            have[i] = (metrics, inputs, [])

    report = as_progress(progress)
    done = sum(b - a for i, (a, b) in enumerate(chunks) if i in have)
    if report is not None and done:
        report(done, total)

    rule = Convergence(target, chunks) if runs == "auto" and target else None
    # A fixed study of several chunks fills its columns chunk by chunk as they finish, so a
    # chunk's own arrays are freed at once: peak memory one study, not a study plus its parts.
    columns = (_Columns(total), _Columns(total)) if rule is None and len(chunks) > 1 else None
    if columns is not None:
        for i, part in have.items():
            columns[0].place(*chunks[i], part[0])
            columns[1].place(*chunks[i], part[1])

    def on_chunk(i: int, part: _Chunk) -> None:
        nonlocal done
        if chunk_store is not None:
            chunk_store.write(i, chunks[i][0], part[0], part[1])
        if columns is not None:
            columns[0].place(*chunks[i], part[0])
            columns[1].place(*chunks[i], part[1])
        done += chunks[i][1] - chunks[i][0]
        if report is not None:
            report(done, total)

    with open_executor(executor) as pool:
        # auto: chunks go out in waves (one in-process); the rule is checked in chunk order
        wave = 1 if pool is None else max(2, os.cpu_count() or 1)
        parts = run_chunks(
            _run_chunk,
            study,
            chunks,
            executor=pool,
            have=have,
            on_chunk=on_chunk,
            wave=len(chunks) if rule is None else wave,
            stop=None if rule is None else lambda i, part: rule(i, part[0]),
        )
    if columns is not None:
        data, inputs = columns[0].filled(), columns[1].filled()
    else:
        data = _concat([p[0] for p in parts])
        inputs = _concat([p[1] for p in parts])
    kept = [k for p in parts for k in p[2]]
    extras: dict[str, Any] = {}
    if rule is not None:
        n = rule.runs
        data = {k: v[:n] for k, v in data.items()}
        inputs = {k: v[:n] for k, v in inputs.items()}
        # one kept entry per piece of a block in each chunk; n ends a block or the study
        kept = kept[: sum(len(blocks(a, min(b, n))) for a, b in chunks)]
        extras["precision"] = rule.precision
        if report is not None:
            report(n, n)
    if design != "mc":
        extras["design"] = design
    entropy = root.entropy if isinstance(root.entropy, int) else None
    return Result(
        scenario_name=scenario.name,
        data=data,
        seed_entropy=entropy,
        engine=chosen,
        info=run_info(scenario, cat) if isinstance(scenario.workload, TrainingRun) else None,
        inputs=inputs,
        extras={**merge_kept(kept), **extras},
        scenario=scenario,
    )


def _option_stores(
    options: Sequence[str],
    store: str | os.PathLike[str] | Mapping[str, str | os.PathLike[str]] | None,
) -> dict[str, str | os.PathLike[str] | None]:
    """Each option's own store: from a mapping, or ``<directory>/<option>``."""
    if store is None:
        return dict.fromkeys(options)
    if isinstance(store, Mapping):
        missing = [k for k in options if k not in store]
        extra = [k for k in store if k not in options]
        if missing or extra:
            raise ValueError(
                f"store= as a mapping names one store per option: missing {missing}, "
                f"unknown {extra} (options: {list(options)})"
            )
        paths = [os.path.abspath(store[k]) for k in options]
        if len(set(paths)) < len(paths):
            raise ValueError("store= gives two options the same store; each needs its own")
        return {k: store[k] for k in options}
    root = Path(store)
    if root.suffix.lower() in (".sqlite", ".sqlite3", ".db"):
        raise ValueError(
            f"compare(store={str(store)!r}): one store holds one study; pass a directory "
            f"(each option gets its own Parquet store <directory>/<option>) or a mapping "
            f"{{option: path}}"
        )
    for k in options:
        if not k or k in (".", "..") or any(c in k for c in "/\\:"):
            raise ValueError(
                f"option {k!r} cannot name a store in {str(store)!r}; pass store= as a "
                f"mapping {{option: path}}"
            )
    return {k: root / k for k in options}


def compare(
    scenarios: Mapping[str, Scenario] | Sequence[Scenario],
    *,
    runs: int | Literal["auto"] = DEFAULT_RUNS,
    seed: SeedLike = None,
    store: str | os.PathLike[str] | Mapping[str, str | os.PathLike[str]] | None = None,
    goals: Goals | None = None,
    **kwargs: Any,
) -> Comparison:
    """Simulate several options with common random numbers (one root seed for all).

    Run ``i`` of every option draws the same values of every input the options share, so
    :meth:`Comparison.prob_less` compares paired runs.

    Parameters
    ----------
    scenarios : mapping of option name to Scenario, or a sequence of Scenario
        The options. In a sequence each option is named by ``Scenario.name``, and two
        scenarios of the same name are an error (naming it), never one silently dropped.
    runs, seed
        As in :func:`simulate`, for every option. With ``runs="auto"`` (and a ``target``)
        each option runs until its own target holds; then every option that stopped
        earlier is extended to the largest number of runs any option took (its runs are
        those of a fixed study of that length with the same seed: the first ones are the
        ones it stopped at), so all options have the same number of paired runs. Each
        option's ``extras["precision"]`` records where its own target was met.
    store : path, or mapping of option name to path, optional
        Each option gets its own store: a mapping gives each option's path (all different);
        a path is a directory in which option ``k`` gets the Parquet store ``<path>/<k>``.
        ``resume=True`` resumes every option from its store. Not with ``runs="auto"``
        (extending an option would change the study its store holds).
    goals : Goals, optional
        Targets (deadline, budget, SLO attainment, queue wait) and a confidence, attached
        to the comparison: ``cmp.prob_meets(option)``, ``cmp.goals_table()``, and a
        recommendation among the options meeting them. Each goal's metric must be reported
        by every option (checked once the options have run).
    **kwargs
        Passed to :func:`simulate` for every option (``engine``, ``executor``,
        ``resume``, ``target``, ``design``, ...).

    Raises
    ------
    ValueError
        No scenario, two scenarios of the same name in a sequence, ``store`` with
        ``runs="auto"``, a store mapping that does not name each option once, or any error
        of :func:`simulate`.

    Examples
    --------
    >>> import accelsim as acs
    >>> w = acs.TrainingRun(params=7e9, tokens=1e11)
    >>> gpu = acs.Scenario(name="gpu", workload=w,
    ...                    fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")])
    >>> tpu = acs.Scenario(name="tpu", workload=w,
    ...                    fleet=[acs.Pool(chip="tpu-v5p", count=128, provider="gcp")])
    >>> cmp = acs.compare([gpu, tpu], runs=200, seed=1)
    >>> cmp.options, cmp["gpu"].runs == cmp["tpu"].runs == 200
    (('gpu', 'tpu'), True)
    """
    if isinstance(scenarios, Mapping):
        named = dict(scenarios)
    else:
        named = {}
        for s in scenarios:
            if s.name in named:
                raise ValueError(
                    f"two scenarios are named {s.name!r}: options are named by Scenario.name, "
                    f"so rename one or pass a mapping {{option: scenario}}"
                )
            named[s.name] = s
    if not named:
        raise ValueError("compare needs at least one scenario")
    if runs == "auto" and store is not None:
        raise ValueError(
            'compare(runs="auto") takes no store=: options that stop early are extended to '
            "the longest option's runs, which would change the study their store holds; "
            "pass a fixed number of runs with a store"
        )
    stores = _option_stores(list(named), store)
    root = as_seed_sequence(seed)
    kwargs["catalog"] = kwargs.get("catalog") or active()  # one snapshot for every option
    results = {
        k: simulate(s, runs=runs, seed=root, store=stores[k], **kwargs) for k, s in named.items()
    }
    if runs == "auto":
        longest = max(r.runs for r in results.values())
        fixed = {k: v for k, v in kwargs.items() if k not in ("target", "max_runs")}
        for k, res in results.items():
            if res.runs < longest:
                more = simulate(named[k], runs=longest, seed=root, **fixed)
                extras = {**more.extras, "precision": res.extras["precision"]}
                results[k] = replace(more, extras=extras)
    cmp = Comparison(results, goals)
    if goals is not None:
        for k in results:
            cmp.prob_meets(k)  # a goal whose metric an option lacks fails here, naming both
    return cmp


__all__ = ["compare", "simulate"]
