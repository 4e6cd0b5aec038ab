"""A scenario's metric at designed inputs: which inputs it draws, and evaluating designs of
U(0, 1) values (each mapped through its input's ``ppf``) on the analytic engine (a serving
scenario: on its fast path)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor

import numpy as np

from accelsim._typing import FloatArray
from accelsim.catalog import Catalog, active
from accelsim.engines import InputDraws, price_training, simulate_serving_fast, simulate_training
from accelsim.scenario import Scenario, Serving, TrainingRun
from accelsim.seeding import SeedLike, as_seed_sequence
from accelsim.study._chunks import _run_designed
from accelsim.study._runner import ExecutorLike
from accelsim.study._sensitivity_estimators import UniformFunc

_CLIP = 1e-12
"""Designed uniforms are clipped to [_CLIP, 1 - _CLIP] so an unbounded ppf stays finite."""


def _check_analytic(scenario: Scenario) -> None:
    if isinstance(scenario.workload, Serving):
        return  # the serving fast path evaluates designed inputs
    if not (
        isinstance(scenario.workload, TrainingRun)
        and len(scenario.fleet) == 1
        and scenario.background is None
    ):
        raise ValueError(
            f"sensitivity methods other than 'spearman' run the analytic engine (one training "
            f"run on one dedicated pool) or the serving fast path, which scenario "
            f"{scenario.name!r} is not: a {scenario.workload_kind} workload on "
            f"{len(scenario.fleet)} pool(s)"
            + (" with a background" if scenario.background is not None else "")
        )


def _block(
    scenario: Scenario, cat: Catalog, root: np.random.SeedSequence, a: int, b: int
) -> tuple[dict[str, FloatArray], InputDraws]:
    if isinstance(scenario.workload, Serving):
        return simulate_serving_fast(scenario, root, a, b, cat=cat)
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
