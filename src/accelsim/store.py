"""Resumable studies: a directory of one Parquet file per finished chunk, plus a manifest.

A store (e.g. ``study.parquet/``) holds ``_manifest.json``, written before any chunk runs,
and ``part-000042.parquet`` for each finished chunk ``42``. A Parquet file is unreadable until
it is closed (its footer is written last), so a chunk is written as ``.part-….parquet.tmp``,
flushed to disk (``fsync``) and renamed into place with :func:`os.replace`: a killed study
leaves only whole chunks behind, and at most a stray ``.tmp`` that is ignored and rewritten.
Names starting with ``_`` or ``.`` are skipped by Parquet dataset readers, so
``pandas.read_parquet("study.parquet")`` reads the finished runs.

Streams are addressed by run block, so a resumed study that runs only the missing chunks is
bit-identical to an uninterrupted one. The manifest records what must match for that to hold
(scenario hash, root seed, runs, chunk size, engine, options and package versions); resuming
with anything different is an error that names the difference.

Each part file has a ``run`` column (the run index), one ``metric/<name>`` column per metric
and one ``input/<name>`` column per drawn input, so pandas, polars or duckdb read the
directory directly. pyarrow is an optional extra: ``pip install 'accelsim[store]'``.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from accelsim._typing import FloatArray

MANIFEST = "_manifest.json"
FORMAT_VERSION = 1
_METRIC = "metric/"
_INPUT = "input/"


def _pyarrow() -> tuple[Any, Any]:
    """Import pyarrow lazily: the ``store`` extra."""
    try:
        pa = importlib.import_module("pyarrow")
        pq = importlib.import_module("pyarrow.parquet")
    except ImportError as exc:
        raise ImportError("a study store needs pyarrow: pip install 'accelsim[store]'") from exc
    return pa, pq


def scenario_hash(scenario_json: str) -> str:
    """SHA-256 of a scenario's canonical JSON (``Scenario.model_dump_json()``).

    Examples
    --------
    >>> scenario_hash('{"name": "x"}')[:12]
    'edb9eed7f06c'
    """
    return hashlib.sha256(scenario_json.encode("utf-8")).hexdigest()


def manifest(
    *,
    scenario_json: str,
    entropy: int | list[int] | None,
    spawn_key: tuple[int, ...],
    runs: int | Mapping[str, Any],
    chunk_runs: int,
    engine: str,
    options: Mapping[str, Any],
) -> dict[str, Any]:
    """The manifest of a study: everything that must match for a resume to be exact."""
    from accelsim import __version__

    return {
        "format": FORMAT_VERSION,
        "scenario_sha256": scenario_hash(scenario_json),
        "entropy": entropy,
        "spawn_key": list(spawn_key),
        "runs": runs,
        "chunk_runs": chunk_runs,
        "engine": engine,
        "options": dict(options),
        "accelsim_version": __version__,
        "numpy_version": np.__version__,
    }


def _fsync_dir(path: Path) -> None:
    """Make a rename in ``path`` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. Windows
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_atomic(path: Path, write: Any) -> None:
    """Call ``write(tmp_path)``, fsync the file, then rename it onto ``path``."""
    tmp = path.with_name("." + path.name + ".tmp")  # hidden: readers of the directory skip it
    write(tmp)
    with open(tmp, "rb+") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def stored_seed(path: str | os.PathLike[str]) -> np.random.SeedSequence | None:
    """The root seed recorded in the store at ``path`` (None if it has no manifest)."""
    file = Path(path) / MANIFEST
    if not file.exists():
        return None
    meta = json.loads(file.read_text(encoding="utf-8"))
    return np.random.SeedSequence(meta["entropy"], spawn_key=tuple(meta["spawn_key"]))


class ChunkStore:
    """A study's directory of finished chunks (see the module docstring).

    Open one with :meth:`open`, which creates it or checks its manifest.
    """

    def __init__(self, path: Path, meta: Mapping[str, Any]) -> None:
        self.path = path
        self.meta = dict(meta)

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], meta: Mapping[str, Any], resume: bool
    ) -> ChunkStore:
        """Create the store at ``path``, or reopen it when ``resume`` is true.

        Raises
        ------
        FileExistsError
            ``path`` exists and is not empty, and ``resume`` is false (a store is never
            silently overwritten).
        ValueError
            ``resume`` is true and the stored manifest differs from ``meta``; the message
            names every field that differs.
        """
        _pyarrow()
        root = Path(path)
        if root.exists() and not root.is_dir():
            raise FileExistsError(f"study store {str(root)!r} exists and is not a directory")
        existing = root.is_dir() and any(not p.name.startswith(".") for p in root.iterdir())
        if existing and not resume:
            raise FileExistsError(
                f"study store {str(root)!r} already holds a study: pass resume=True to "
                f"continue it, or choose another path (a store is never overwritten)"
            )
        stored_path = root / MANIFEST
        if existing and stored_path.exists():
            stored = json.loads(stored_path.read_text(encoding="utf-8"))
            wanted = json.loads(json.dumps(dict(meta)))  # same JSON types as the stored one
            differ = [
                f"{k}: stored {stored.get(k)!r}, now {wanted.get(k)!r}"
                for k in sorted(set(stored) | set(wanted))
                if stored.get(k) != wanted.get(k)
            ]
            if differ:
                raise ValueError(
                    f"cannot resume the study in {str(root)!r}: its manifest differs "
                    f"({'; '.join(differ)})"
                )
            return cls(root, stored)
        if existing:
            raise ValueError(
                f"cannot resume the study in {str(root)!r}: it has files but no {MANIFEST}"
            )
        root.mkdir(parents=True, exist_ok=True)
        text = json.dumps(dict(meta), indent=2, sort_keys=True)
        _write_atomic(root / MANIFEST, lambda tmp: tmp.write_text(text, encoding="utf-8"))
        return cls(root, meta)

    def part_path(self, chunk: int) -> Path:
        """File of chunk number ``chunk``."""
        return self.path / f"part-{chunk:06d}.parquet"

    def finished(self) -> set[int]:
        """Numbers of the chunks already written (whole files only; ``.tmp`` is ignored)."""
        out = set()
        for p in self.path.glob("part-*.parquet"):
            stem = p.name[len("part-") : -len(".parquet")]
            if stem.isdigit():
                out.add(int(stem))
        return out

    def write(
        self,
        chunk: int,
        start: int,
        metrics: Mapping[str, FloatArray],
        inputs: Mapping[str, FloatArray],
    ) -> None:
        """Write chunk ``chunk`` (runs from ``start``) atomically."""
        pa, pq = _pyarrow()
        runs = len(next(iter(metrics.values())))
        columns: dict[str, Any] = {"run": np.arange(start, start + runs, dtype=np.int64)}
        columns |= {_METRIC + k: np.asarray(v) for k, v in metrics.items()}
        columns |= {_INPUT + k: np.asarray(v) for k, v in inputs.items()}
        table = pa.table(columns).replace_schema_metadata(
            {"accelsim.chunk": str(chunk), "accelsim.start": str(start)}
        )
        _write_atomic(self.part_path(chunk), lambda tmp: pq.write_table(table, tmp))

    def read(
        self, chunk: int, start: int, stop: int
    ) -> tuple[dict[str, FloatArray], dict[str, FloatArray]]:
        """Metrics and inputs of chunk ``chunk``, checked to hold runs ``[start, stop)``."""
        _, pq = _pyarrow()
        table = pq.read_table(self.part_path(chunk))
        run = table.column("run").to_numpy()
        if run.size != stop - start or (run.size and (run[0] != start or run[-1] != stop - 1)):
            raise ValueError(
                f"{self.part_path(chunk)} holds runs {run[:1]}..{run[-1:]}, "
                f"expected [{start}, {stop})"
            )
        metrics: dict[str, FloatArray] = {}
        inputs: dict[str, FloatArray] = {}
        for name in table.column_names:
            if name.startswith(_METRIC):
                metrics[name[len(_METRIC) :]] = table.column(name).to_numpy()
            elif name.startswith(_INPUT):
                inputs[name[len(_INPUT) :]] = table.column(name).to_numpy()
        return metrics, inputs


__all__ = ["MANIFEST", "ChunkStore", "manifest", "scenario_hash", "stored_seed"]
