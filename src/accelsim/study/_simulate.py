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
from collections.abc import Callable, Mapping
from dataclasses import asdict
from typing import Any, Literal

import numpy as np

from accelsim.catalog import Catalog, active
from accelsim.engines import (
    Design,
    DesOptions,
    blocks,
    check_design_runs,
    check_runnable,
    merge_kept,
    prices_used,
    run_info,
)
from accelsim.results import Result
from accelsim.scenario import Scenario, Serving, TrainingRun, fleet_available
from accelsim.seeding import SeedLike, as_seed_sequence
from accelsim.study._budget import check_study_memory
from accelsim.study._calibration_used import calibration_used
from accelsim.study._chunks import (
    DEFAULT_RUNS,
    MAX_RUNS,
    EngineName,
    _check_runs,
    _Chunk,
    _chunk_size,
    _chunks,
    _Columns,
    _concat,
    _engine_for,
    _json_entropy,
    _run_chunk,
    _Study,
)
from accelsim.study._runner import (
    Convergence,
    ExecutorLike,
    ProgressLike,
    as_progress,
    open_executor,
    run_chunks,
)
from accelsim.study._store import ChunkStore, manifest
from accelsim.study._stores import open_store, read_finished, stored_chunk_runs, stored_seed


def _check_study(
    scenario: Scenario,
    runs: int | Literal["auto"],
    total: int,
    design: Design,
    engine: EngineName,
    settings: tuple[bool, float | None, str | os.PathLike[str] | None, bool],
) -> Literal["analytic", "des"]:
    """The engine a study runs on, after the checks that need no draw: the design against
    the runs, the engine against what the scenario and ``settings`` (``keep_jobs``, the
    utilisation resolution, ``store``, ``resume``) ask of it."""
    keep_jobs, resolution, store, resume = settings
    check_design_runs(design, total)
    if design != "mc" and runs == "auto":
        raise ValueError(
            f'design={design!r} needs a fixed number of runs: the stopping rule of runs="auto" '
            f"assumes independent runs"
        )
    chosen, asked = _engine_for(scenario, engine, keep_jobs, resolution)
    _check_engine_reads(scenario, chosen)
    if store is not None and asked is not None:
        raise ValueError(f"a study store keeps metrics and inputs only, not {asked}")
    if resume and store is None:
        raise ValueError("resume=True needs the store= of the study to resume")
    return chosen


def study_probe(
    scenario: Scenario,
    *,
    runs: int | Literal["auto"] = DEFAULT_RUNS,
    seed: SeedLike = None,
    engine: EngineName = "auto",
    keep_jobs: bool = False,
    utilization_resolution_hours: float | None = None,
    target: Mapping[str, float] | None = None,
    max_runs: int = MAX_RUNS,
    design: Design = "mc",
    catalog: Catalog | None = None,
    **_: Any,
) -> tuple[int, Callable[[], tuple[object, ...]]]:
    """The most runs :func:`simulate` with these arguments would hold, and a probe that runs
    its first run (for :func:`~accelsim.study._budget.check_studies_memory`); the other
    arguments of :func:`simulate` (executor, store, progress, ...) do not change them."""
    total = _check_runs(runs, target, max_runs)
    resolution = utilization_resolution_hours
    chosen = _check_study(
        scenario, runs, total, design, engine, (keep_jobs, resolution, None, False)
    )
    root = as_seed_sequence(seed)
    options = DesOptions(keep_jobs=bool(keep_jobs), resolution_hours=resolution)
    cat = active() if catalog is None else catalog
    study = _Study(
        scenario, root.entropy, tuple(root.spawn_key), chosen, options, total, cat, design
    )
    return total, lambda: _run_chunk(study, 0, 1)


def _open_chunk_store(
    store: str | os.PathLike[str],
    study: _Study,
    root: np.random.SeedSequence,
    runs: int | dict[str, Any],
    size: int,
    resume: bool,
) -> ChunkStore:
    """The study's store, opened (or resumed) with a manifest of everything that decides
    its numbers: the scenario, the catalog's digest, the seed, runs, chunking, engine,
    options and design (a resume that differs in any is refused)."""
    options = asdict(study.options)
    meta = manifest(
        scenario_json=study.scenario_json,
        catalog_sha256=study.catalog.digest(),
        entropy=_json_entropy(root.entropy),
        spawn_key=study.spawn_key,
        runs=runs,
        chunk_runs=size,
        engine=study.engine,
        # the design joins the manifest only when not "mc", so older stores still resume
        options=options if study.design == "mc" else {**options, "design": study.design},
    )
    return open_store(store, meta, resume)


def _provenance(
    scenario: Scenario, cat: Catalog, design: Design, inputs: Mapping[str, np.ndarray]
) -> dict[str, Any]:
    """The result's record of how it was drawn: when the fleet exists (the one rule,
    :func:`accelsim.scenario.fleet_available`), the design (when not plain Monte Carlo),
    the prices used and the oldest price's date, and the calibrated priors behind it."""
    extras: dict[str, Any] = {"fleet_available": fleet_available(scenario)}
    if design != "mc":
        extras["design"] = design
    if used := prices_used(scenario, cat):
        extras["prices_used"] = used
        extras["oldest_price_as_of"] = used[0]["as_of"]
    if calibrated := calibration_used(cat, inputs):
        extras["calibration"] = calibrated
    return extras


def _run_study(
    study: _Study,
    chunks: list[tuple[int, int]],
    have: dict[int, _Chunk],
    sinks: tuple[ChunkStore | None, Callable[[int, int], object] | None, int],
    rule: Convergence | None,
    executor: ExecutorLike,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], list[_Chunk]]:
    """Run the chunks not in ``have`` (all at once, or in waves under the stopping
    ``rule``), each written to the store and reported as it finishes (``sinks``: the store,
    the progress callback and the runs already done); returns the metric and input columns
    and every chunk's parts."""
    chunk_store, report, done = sinks
    total = study.total_runs
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
        return columns[0].filled(), columns[1].filled(), parts
    return _concat([p[0] for p in parts]), _concat([p[1] for p in parts]), parts


def _stopped_at(
    n: int,
    data: dict[str, np.ndarray],
    inputs: dict[str, np.ndarray],
    kept: list[Any],
    chunks: list[tuple[int, int]],
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], list[Any]]:
    """The first ``n`` runs of every column, and the kept records of their blocks (one per
    piece of a block in each chunk; ``n`` ends a block or the study)."""
    return (
        {k: v[:n] for k, v in data.items()},
        {k: v[:n] for k, v in inputs.items()},
        kept[: sum(len(blocks(a, min(b, n))) for a, b in chunks)],
    )


def _progress_from(
    progress: ProgressLike,
    chunks: list[tuple[int, int]],
    have: dict[int, _Chunk],
    total: int,
) -> tuple[Callable[[int, int], object] | None, int]:
    """The progress callback and the runs a resumed store already holds (reported)."""
    report = as_progress(progress)
    done = sum(b - a for i, (a, b) in enumerate(chunks) if i in have)
    if report is not None and done:
        report(done, total)
    return report, done


def _collect(
    study: _Study,
    chunks: list[tuple[int, int]],
    have: dict[int, _Chunk],
    sinks: tuple[ChunkStore | None, Callable[[int, int], object] | None, int],
    rule: Convergence | None,
    executor: ExecutorLike,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, Any]]:
    """Run the study (:func:`_run_study`) and gather its columns, cut to the runs the
    stopping ``rule`` kept, and its extras: kept records, precision reached, provenance."""
    data, inputs, parts = _run_study(study, chunks, have, sinks, rule, executor)
    kept = [k for p in parts for k in p[2]]
    extras: dict[str, Any] = {}
    if rule is not None:  # the runs the stopping rule kept
        data, inputs, kept = _stopped_at(rule.runs, data, inputs, kept, chunks)
        extras["precision"] = rule.precision
        report = sinks[1]
        if report is not None:
            report(rule.runs, rule.runs)
    extras |= _provenance(study.scenario, study.catalog, study.design, inputs)
    return data, inputs, {**merge_kept(kept), **extras}


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
        chosen engine cannot run, a serving ``router`` on the fast path (only the request
        DES reads it), a bad ``runs``/``target``/``max_runs``, or a store whose manifest
        differs from this study.
    AccelsimError
        Before any chunk runs or a store is written, what
        :func:`accelsim.engines.check_runnable` refuses: a trace file that is missing or
        has bad rows, a trace job larger than the pools it may use, a stream or fleet
        expected to exceed the job or event caps; and a study whose arrays (runs x values
        per run x 8 bytes, kept records included) would pass half the memory this process
        may use (:func:`accelsim.study._budget.memory_limit_bytes`), with the figure.
    FileExistsError
        ``store`` already holds a study and ``resume`` is false.
    ImportError
        ``store`` is a Parquet store and pyarrow is not installed.

    Warns
    -----
    accelsim.engines.OverloadWarning
        Once, before the study starts, where a stream's or trace's offered load is >= 1.

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
    resolution = utilization_resolution_hours
    chosen = _check_study(
        scenario, runs, total, design, engine, (keep_jobs, resolution, store, resume)
    )
    if seed is None and resume and store is not None:
        seed = stored_seed(store)
    root = as_seed_sequence(seed)
    cat = active() if catalog is None else catalog
    options = DesOptions(keep_jobs=bool(keep_jobs), resolution_hours=resolution)
    # Once, before a store is written or a chunk dispatched, in the caller's process (a
    # worker's warning would not reach the user): missing traces, overloads, job caps.
    check_runnable(scenario, cat, max_jobs_per_run=options.max_jobs_per_run)
    if chunk_runs is None and resume and store is not None:
        chunk_runs = stored_chunk_runs(store)  # the chunks it holds
    size = _chunk_size(chunk_runs, total, chosen, wide=executor is None and runs != "auto")
    chunks = _chunks(total, size)
    study = _Study(
        scenario, root.entropy, tuple(root.spawn_key), chosen, options, total, cat, design
    )
    # Before a store is written: a study whose arrays cannot fit is refused with its size.
    check_study_memory(
        total, lambda: _run_chunk(study, 0, 1), "max_runs" if runs == "auto" else "runs"
    )

    have: dict[int, _Chunk] = {}
    chunk_store: ChunkStore | None = None
    if store is not None:
        study_runs = runs if runs != "auto" else {"auto": dict(target or {}), "max_runs": max_runs}
        chunk_store = _open_chunk_store(store, study, root, study_runs, size, resume)
        have = {i: (*part, []) for i, part in read_finished(chunk_store, chunks).items()}
    report, done = _progress_from(progress, chunks, have, total)

    rule = Convergence(target, chunks) if runs == "auto" and target else None
    data, inputs, extras = _collect(
        study, chunks, have, (chunk_store, report, done), rule, executor
    )
    return Result(
        scenario_name=scenario.name,
        data=data,
        seed_entropy=root.entropy if isinstance(root.entropy, int) else None,
        engine=chosen,
        info=run_info(scenario, cat) if isinstance(scenario.workload, TrainingRun) else None,
        inputs=inputs,
        extras=extras,
        scenario=scenario,
    )


def _check_engine_reads(scenario: Scenario, engine: str) -> None:
    """Refuse a field only another engine than the chosen one reads (the fields no engine
    reads are refused by the scenario's own validation, :mod:`accelsim.scenario`)."""
    work = scenario.workload
    if isinstance(work, Serving) and engine == "analytic" and work.router != "least_loaded":
        raise ValueError(
            f"workload.router={work.router!r} applies to the request DES (engine='des'); the "
            f"fast path spreads requests evenly over the replicas and reads no router: "
            f"remove it or pass engine='des'"
        )


__all__ = ["simulate"]
