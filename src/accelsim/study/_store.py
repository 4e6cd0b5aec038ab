"""Resumable studies: a store of finished chunks behind one small interface.

``simulate(..., store=path)`` writes each chunk as it finishes, after a manifest that is
written before any chunk runs. The path picks the backend (see :func:`backend_of`):

* ``"study.sqlite"``, ``"study.sqlite3"`` or ``"study.db"``: one SQLite database file
  (:mod:`accelsim.study._store_sqlite`, standard library only). ``SELECT * FROM runs`` is the tidy
  table, one row per run.
* any other path: a directory of one Parquet file per chunk plus ``_manifest.json``
  (:mod:`accelsim.study._store_parquet`, needs ``pip install 'accelsim[store]'``). An existing
  directory is always a Parquet store, whatever its suffix, so a directory named ``x.db``
  made before the SQLite backend existed still resumes.

Both hold the same columns: ``run`` (the run index), one ``metric/<name>`` column per metric
and one ``input/<name>`` column per drawn input, all float64, stored bit-exactly.

Streams are addressed by run block, so a resumed study that runs only the missing chunks is
bit-identical to an uninterrupted one. The manifest records what must match for that to hold
(scenario hash, catalog digest: chips, price sheets and priors, root seed, runs, chunk size,
engine, options and package versions); resuming with anything different is an error that
names the difference, so one store never mixes runs priced with two price sheets.

Each chunk is stored with the SHA-256 of its columns (:func:`chunk_digest`). A chunk read
back is checked against it: a chunk that fails (a damaged disk page, an edited file) raises
:class:`DamagedChunkError`, and a resume discards it and runs it again; its numbers are
never used. A chunk is finished once it is
wholly stored (a Parquet file renamed into place, an SQLite transaction committed), so a
killed study leaves whole chunks or nothing of a chunk. Writing a finished chunk again with
the same values is a no-op (a retried chunk is never counted twice); with other values it is
an error, since a study's chunks are deterministic and a difference means a different study.
"""

from __future__ import annotations

import hashlib
import json
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping
from importlib.metadata import version
from pathlib import Path
from typing import Any, Literal

import numpy as np

from accelsim._typing import FloatArray
from accelsim.errors import AccelsimError

MANIFEST = "_manifest.json"
FORMAT_VERSION = 2
"""2: the catalog digest in the manifest and a SHA-256 per chunk (stores of format 1 do not
resume: their manifest differs)."""
METRIC = "metric/"
INPUT = "input/"
SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")

Chunk = tuple[dict[str, FloatArray], dict[str, FloatArray]]


def scenario_hash(scenario_json: str) -> str:
    """SHA-256 of a scenario's canonical JSON (``Scenario.model_dump_json()``).

    Examples
    --------
    >>> scenario_hash('{"name": "x"}')[:12]
    'edb9eed7f06c'
    """
    return hashlib.sha256(scenario_json.encode("utf-8")).hexdigest()


class DamagedChunkError(AccelsimError, ValueError):
    """A stored chunk that cannot be read or does not match its SHA-256."""

    def __init__(self, where: str, chunk: int, why: str) -> None:
        super().__init__(f"chunk {chunk} of the study store {where!r} is damaged ({why})")
        self.chunk = chunk


class DamagedStoreError(AccelsimError, ValueError):
    """A study store that cannot be read at all (not one chunk: its structure)."""


def chunk_digest(start: int, metrics: Mapping[str, Any], inputs: Mapping[str, Any]) -> str:
    """SHA-256 of a chunk's columns (:func:`columns`): each name, dtype and bytes, by name.

    Examples
    --------
    >>> m = {"m": np.array([1.0, 2.0])}
    >>> first = chunk_digest(0, m, {})
    >>> first == chunk_digest(0, m, {}), first == chunk_digest(1, m, {})
    (True, False)
    """
    named = columns(start, metrics, inputs)
    sha = hashlib.sha256()
    for name in sorted(named):
        values = np.ascontiguousarray(named[name])
        sha.update(f"{name}\0{values.dtype.str}\0{values.size}\0".encode())
        sha.update(values.tobytes())
    return sha.hexdigest()


def manifest(
    *,
    scenario_json: str,
    catalog_sha256: str,
    entropy: int | list[int] | None,
    spawn_key: tuple[int, ...],
    runs: int | Mapping[str, Any],
    chunk_runs: int,
    engine: str,
    options: Mapping[str, Any],
) -> dict[str, Any]:
    """The manifest of a study: everything that must match for a resume to be exact."""
    return {
        "format": FORMAT_VERSION,
        "scenario_sha256": scenario_hash(scenario_json),
        "catalog_sha256": catalog_sha256,
        "entropy": entropy,
        "spawn_key": list(spawn_key),
        "runs": runs,
        "chunk_runs": chunk_runs,
        "engine": engine,
        "options": dict(options),
        "accelsim_version": version("accelsim"),
        "numpy_version": np.__version__,
    }


def backend_of(path: str | os.PathLike[str]) -> Literal["parquet", "sqlite"]:
    """The backend of the store at ``path``: an existing directory or a suffix outside
    ``.sqlite``, ``.sqlite3``, ``.db`` (any case) is Parquet; the rest is SQLite.

    Examples
    --------
    >>> backend_of("study.sqlite"), backend_of("runs/a.DB"), backend_of("study.parquet")
    ('sqlite', 'sqlite', 'parquet')
    >>> backend_of("study")
    'parquet'
    """
    p = Path(path)
    if p.is_dir() or p.suffix.lower() not in SQLITE_SUFFIXES:
        return "parquet"
    return "sqlite"


def check_manifest(where: Path, stored: Mapping[str, Any], meta: Mapping[str, Any]) -> None:
    """Raise ValueError naming every field where ``stored`` and ``meta`` differ."""
    wanted = json.loads(json.dumps(dict(meta)))  # same JSON types as the stored one
    differ = [
        f"{k}: stored {stored.get(k)!r}, now {wanted.get(k)!r}"
        for k in sorted(set(stored) | set(wanted))
        if stored.get(k) != wanted.get(k)
    ]
    if differ:
        why = ""
        if stored.get("catalog_sha256") != wanted.get("catalog_sha256"):
            why = (
                ": the catalog (chips, price sheets or priors) is not the one the study was "
                "run with, and one store never mixes runs priced with two; resume with that "
                "catalog or start a new store"
            )
        raise ValueError(
            f"cannot resume the study in {str(where)!r}: its manifest differs "
            f"({'; '.join(differ)}){why}"
        )


def not_empty(where: Path) -> FileExistsError:
    """The error for a store that holds something while ``resume`` is false."""
    return FileExistsError(
        f"study store {str(where)!r} already holds a study: pass resume=True to "
        f"continue it, or choose another path (a store is never overwritten)"
    )


def columns(start: int, metrics: Mapping[str, Any], inputs: Mapping[str, Any]) -> dict[str, Any]:
    """A chunk as named columns: ``run``, then ``metric/<name>``, then ``input/<name>``."""
    out: dict[str, Any] = {METRIC + k: np.asarray(v) for k, v in metrics.items()}
    out |= {INPUT + k: np.asarray(v) for k, v in inputs.items()}
    sizes = {v.shape for v in out.values()}
    if len(sizes) != 1 or len(next(iter(sizes))) != 1:
        raise ValueError(f"a chunk needs 1-d columns of one length, got shapes {sorted(sizes)}")
    runs = next(iter(sizes))[0]
    return {"run": np.arange(start, start + runs, dtype=np.int64)} | out


def split(named: Mapping[str, FloatArray]) -> Chunk:
    """Named columns back into ``(metrics, inputs)`` (``run`` and other columns dropped)."""
    metrics = {k[len(METRIC) :]: v for k, v in named.items() if k.startswith(METRIC)}
    inputs = {k[len(INPUT) :]: v for k, v in named.items() if k.startswith(INPUT)}
    return metrics, inputs


def check_same(where: str, chunk: int, old: Chunk, new: Chunk) -> None:
    """Raise ValueError unless ``old`` and ``new`` hold the same names and the same bits."""
    a, b = columns(0, *old), columns(0, *new)
    differ = sorted(set(a) ^ set(b))
    differ += [
        k for k in a if k in b and (a[k].dtype != b[k].dtype or a[k].tobytes() != b[k].tobytes())
    ]
    if differ:
        raise ValueError(
            f"chunk {chunk} is already stored in {where!r} with other values "
            f"(columns {', '.join(differ)}): a study's chunks are deterministic, so this "
            f"is another study; use another store"
        )


class ChunkStore(ABC):
    """A study's store of finished chunks (see the module docstring).

    Open one with :func:`accelsim.study._stores.open_store`, which picks the backend from the
    path, then creates the store or checks its manifest. ``finished``, ``read`` and ``write``
    are called from the coordinating process only (``simulate`` writes in its ``on_chunk``
    callback).
    """

    def __init__(self, path: Path, meta: Mapping[str, Any]) -> None:
        self.path = path
        self.meta = dict(meta)

    @classmethod
    @abstractmethod
    def create(cls, path: Path, meta: Mapping[str, Any], resume: bool) -> ChunkStore:
        """Create the store at ``path``, or reopen it (checking its manifest) if ``resume``."""

    @classmethod
    @abstractmethod
    def stored_manifest(cls, path: Path) -> dict[str, Any] | None:
        """The manifest stored at ``path``, or None when there is none."""

    @abstractmethod
    def finished(self) -> set[int]:
        """Numbers of the chunks already wholly stored."""

    @abstractmethod
    def read(self, chunk: int, start: int, stop: int) -> Chunk:
        """Metrics and inputs of chunk ``chunk``, checked to hold runs ``[start, stop)``."""

    @abstractmethod
    def discard(self, chunk: int) -> None:
        """Remove chunk ``chunk`` (found damaged) so that it is run and written again."""

    @abstractmethod
    def write(
        self,
        chunk: int,
        start: int,
        metrics: Mapping[str, FloatArray],
        inputs: Mapping[str, FloatArray],
    ) -> None:
        """Store chunk ``chunk`` (runs from ``start``) atomically; the same values again
        are a no-op, other values a ValueError."""


__all__ = [
    "MANIFEST",
    "ChunkStore",
    "DamagedChunkError",
    "DamagedStoreError",
    "backend_of",
    "chunk_digest",
    "manifest",
    "scenario_hash",
]
