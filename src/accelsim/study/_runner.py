"""The chunked runner behind :func:`accelsim.simulate`: executors and convergence.

A study's runs are cut into chunks; :func:`run_chunks` runs the chunks on an
executor (in-process, a process pool, any ``concurrent.futures.Executor`` or a Dask
``distributed.Client``), hands each finished chunk to a callback in the parent (which writes
it to a store and reports progress) and returns the chunks **in order**, so the result never
depends on timing. With a stopping rule (``runs="auto"``) chunks run in waves, the rule is
checked chunk by chunk in order, and chunks computed beyond the stopping point are dropped:
where a study stops depends on its data only, never on the executor.

Progress reporting lives in :mod:`accelsim.study._progress` (``as_progress`` is re-exported here).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

import numpy as np
from scipy import stats

from accelsim._typing import FloatArray
from accelsim.engines import BLOCK_RUNS
from accelsim.study._progress import ProgressLike, as_progress

_Z95 = 1.959963984540054  # two-sided 95 % normal quantile

T = TypeVar("T")
S = TypeVar("S")


@runtime_checkable
class HasExecutor(Protocol):
    """Anything with ``get_executor()``, such as a Dask ``distributed.Client``."""

    def get_executor(self, **kwargs: Any) -> Executor:
        """A ``concurrent.futures.Executor`` that runs on this client's cluster."""
        ...  # pragma: no cover


ExecutorLike = Executor | HasExecutor | Literal["processes"] | None


@contextmanager
def open_executor(executor: ExecutorLike, workers: int | None = None) -> Iterator[Executor | None]:
    """The executor to submit chunks to (``None``: run in-process); the one factory of them.

    ``"processes"`` starts a pool of ``workers`` processes (default: one per core) with the
    spawn context (workers import accelsim afresh, so no state leaks in from the parent) and
    shuts it down afterwards; a Dask client is used through ``client.get_executor(pure=False)``;
    an executor is used as given. ``workers`` is only for ``"processes"``.
    """
    if workers is not None and (
        isinstance(workers, bool) or not isinstance(workers, int) or workers < 1
    ):
        raise ValueError(f"workers must be a positive integer or None, got {workers!r}")
    if workers is not None and executor != "processes":
        raise ValueError('workers= sizes the pool of executor="processes" only')
    if executor is None:
        yield None
    elif isinstance(executor, str):
        if executor != "processes":
            raise ValueError(f"executor must be None, 'processes' or an Executor, not {executor!r}")
        context = multiprocessing.get_context("spawn")
        size = workers if workers is not None else os.cpu_count() or 1
        with ProcessPoolExecutor(max_workers=size, mp_context=context) as pool:
            yield pool
    elif isinstance(executor, Executor):
        yield executor
    elif isinstance(executor, HasExecutor):
        # pure=False: every chunk is computed, never taken from a cached task of the same key
        yield executor.get_executor(pure=False)
    else:
        raise TypeError(
            f"executor must be None, 'processes', a concurrent.futures.Executor or a Dask "
            f"Client, not {type(executor).__name__}"
        )


def run_chunks(
    fn: Callable[[S, int, int], T],
    study: S,
    chunks: Sequence[tuple[int, int]],
    *,
    executor: Executor | None,
    have: Mapping[int, T],
    on_chunk: Callable[[int, T], None],
    wave: int,
    stop: Callable[[int, T], bool] | None = None,
) -> list[T]:
    """Run ``fn(study, start, stop)`` for every chunk not in ``have``; return chunks in order.

    ``on_chunk(i, chunk)`` is called in the parent as each chunk finishes (completion order).
    Chunks are submitted ``wave`` at a time; after each wave ``stop(i, chunk)`` is asked in
    chunk order, and the first ``True`` ends the study with chunk ``i`` the last returned.

    Each chunk is submitted once and its future consumed once, so an executor that runs a
    task more than once (Dask reruns a task whose worker died) still hands every chunk to
    ``on_chunk`` exactly once.
    """
    out: list[T] = []
    for w0 in range(0, len(chunks), max(1, wave)):
        idx = range(w0, min(w0 + max(1, wave), len(chunks)))
        got = {i: have[i] for i in idx if i in have}
        todo = [i for i in idx if i not in have]
        if executor is None:
            for i in todo:
                got[i] = fn(study, *chunks[i])
                on_chunk(i, got[i])
        else:
            futures: dict[Future[T], int] = {
                executor.submit(fn, study, *chunks[i]): i for i in todo
            }
            try:
                for f in as_completed(futures):
                    got[futures[f]] = f.result()
                    on_chunk(futures[f], got[futures[f]])
            except BaseException:
                for f in futures:
                    f.cancel()
                raise
        for i in idx:
            out.append(got[i])
            if stop is not None and stop(i, got[i]):
                return out
    return out


def mean_precision(x: FloatArray) -> dict[str, float]:
    """Mean of ``x`` and the half-width of its 95 % confidence interval.

    Runs are independent and identically distributed (every run draws its own inputs), so
    the plain standard error ``s / sqrt(n)`` is valid and the interval is ``mean ± 1.96 SE``
    (normal approximation, good for the thousands of runs a block holds). ``relative`` is
    ``half_width / |mean|`` (0 when the half-width is 0, inf when only the mean is 0). A
    run that is not finite makes the half-width inf: no finite mean to reach.

    Examples
    --------
    >>> p = mean_precision(np.array([1.0, 2.0, 3.0, 4.0]))
    >>> p["mean"], round(p["half_width"], 4)
    (2.5, 1.2652)
    """
    n = int(x.size)
    mean = float(np.mean(x))
    # a non-finite run (e.g. an infinite TCO: a job that never finishes) has no finite mean
    # to estimate: the half-width is inf, so the target is never met (and numpy not asked
    # for inf - inf)
    finite = n > 1 and bool(np.isfinite(x).all())
    half = _Z95 * float(np.std(x, ddof=1)) / np.sqrt(n) if finite else float("inf")
    if half == 0.0:
        rel = 0.0
    elif mean == 0.0:
        rel = float("inf")
    else:
        rel = half / abs(mean)
    return {"runs": n, "mean": mean, "half_width": float(half), "relative": float(rel)}


def split_target(key: str) -> tuple[str, float | None]:
    """A target key as ``(metric, quantile)``: ``"m"`` is the mean, ``"m@p90"`` the 0.9 quantile.

    Examples
    --------
    >>> split_target("tco_usd@p90"), split_target("tco_usd@p2.5"), split_target("tco_usd")
    (('tco_usd', 0.9), ('tco_usd', 0.025), ('tco_usd', None))
    """
    metric, at, tail = key.partition("@")
    if not at:
        return key, None
    try:
        pct = float(tail[1:]) if tail[:1] == "p" else float("nan")
    except ValueError:
        pct = float("nan")
    if not (metric and 0 < pct < 100):
        raise ValueError(
            f"target key {key!r}: a quantile target is 'metric@pNN' with 0 < NN < 100, "
            f"e.g. 'tco_usd@p90'"
        )
    return metric, pct / 100


def quantile_precision(x: FloatArray, q: float) -> dict[str, float]:
    """The ``q`` quantile of ``x`` and its distribution-free 95 % confidence interval.

    The number ``K`` of runs below the true quantile is Binomial(n, q) for iid runs of a
    continuous metric, so with ``j`` the 2.5 % point and ``k - 1`` the 97.5 % point of that
    binomial, ``[x_(j), x_(k)]`` (order statistics, 1-based) covers the quantile with
    probability ``P(j <= K < k) >= 0.95`` whatever the distribution (the exact interval of
    e.g. Conover, *Practical Nonparametric Statistics*, 3.2). ``half_width`` is half its width,
    ``relative`` that over ``|value|`` (``value``: ``np.quantile(x, q)``). With too few runs for
    an interval (an end past the sample) the half-width is inf.

    Examples
    --------
    >>> p = quantile_precision(np.arange(1.0, 1001.0), 0.5)
    >>> p["value"], p["lower"], p["upper"]
    (500.5, 469.0, 532.0)
    """
    n = int(x.size)
    value = float(np.quantile(x, q))
    j = int(stats.binom.ppf(0.025, n, q))
    k = int(stats.binom.ppf(0.975, n, q)) + 1
    if j < 1 or k > n:
        lower, upper, half = -float("inf"), float("inf"), float("inf")
    else:
        xs = np.sort(x)
        lower, upper = float(xs[j - 1]), float(xs[k - 1])
        half = (upper - lower) / 2
    if half == 0.0:
        rel = 0.0
    elif value == 0.0:
        rel = float("inf")
    else:
        rel = half / abs(value)
    return {
        "runs": n,
        "quantile": q,
        "value": value,
        "lower": lower,
        "upper": upper,
        "half_width": half,
        "relative": rel,
    }


class Convergence:
    """Stopping rule of ``runs="auto"``: stop at the first block end where every target holds.

    The rule is checked at every multiple of :data:`BLOCK_RUNS` runs (and at the cap), so the
    stopping point depends on the data only, not on the chunk size or the executor; a study
    that stops after ``n`` runs is the first ``n`` runs of a fixed study of the same seed.
    A target key ``"metric@pNN"`` holds the NN % quantile's interval (:func:`quantile_precision`)
    to its tolerance, any other key the mean's (:func:`mean_precision`).
    """

    def __init__(self, target: Mapping[str, float], chunks: Sequence[tuple[int, int]]) -> None:
        self.target = dict(target)
        self.parsed = {key: split_target(key) for key in self.target}
        self.chunks = chunks
        self.seen: dict[str, list[FloatArray]] = {m: [] for m, _ in self.parsed.values()}
        self.runs = 0
        self.precision: dict[str, dict[str, Any]] = {}

    def __call__(self, i: int, metrics: Mapping[str, FloatArray]) -> bool:
        """Take chunk ``i``'s metrics; true (and ``self.runs`` set) once the targets hold."""
        missing = sorted({m for m in self.seen if m not in metrics})
        if missing:
            raise KeyError(
                f"target metric(s) {', '.join(missing)} not in this study; it has: "
                f"{', '.join(metrics)}"
            )
        start, stop = self.chunks[i]
        # the block ends inside (start, stop], and the cap
        ends = list(range((start // BLOCK_RUNS + 1) * BLOCK_RUNS, stop + 1, BLOCK_RUNS))
        cap = self.chunks[-1][1]
        if stop == cap and (not ends or ends[-1] != cap):
            ends.append(cap)
        for end in ends:
            used = end - start
            self.runs = end
            self.precision = {}
            xs = {m: np.concatenate([*self.seen[m], metrics[m][:used]]) for m in self.seen}
            for key, tol in self.target.items():
                m, q = self.parsed[key]
                p: dict[str, Any] = dict(
                    mean_precision(xs[m]) if q is None else quantile_precision(xs[m], q)
                )
                p["target"] = tol
                p["met"] = bool(p["relative"] <= tol)
                self.precision[key] = p
            if all(p["met"] for p in self.precision.values()):
                return True
        for m in self.seen:
            self.seen[m].append(np.asarray(metrics[m]))
        return False


__all__ = [
    "Convergence",
    "ExecutorLike",
    "HasExecutor",
    "ProgressLike",
    "as_progress",
    "mean_precision",
    "open_executor",
    "quantile_precision",
    "run_chunks",
    "split_target",
]
