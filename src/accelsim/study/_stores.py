"""Open a study's store: the backend follows from the path (:func:`~._store.backend_of`).

Two back-ends, because both file formats are public: ``store="study.parquet"`` (a directory
of Parquet parts, DESIGN.md's contract) and ``store="study.sqlite"`` (one SQLite file that
any SQLite client reads, docs/howto.md, README, the CLI's ``--store``). Everything but the
file format is one code path: the manifest, the chunk digest, the column layout, the resume
check (:mod:`._store`) and the dispatch here.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from accelsim.study._store import Chunk, ChunkStore, DamagedChunkError, backend_of
from accelsim.study._store_parquet import ParquetStore
from accelsim.study._store_sqlite import SqliteStore


def backend_class(path: str | os.PathLike[str]) -> type[ChunkStore]:
    """The store class for ``path``: SQLite for ``.sqlite``/``.sqlite3``/``.db``, else Parquet."""
    return SqliteStore if backend_of(path) == "sqlite" else ParquetStore


def open_store(path: str | os.PathLike[str], meta: Mapping[str, Any], resume: bool) -> ChunkStore:
    """Create the store at ``path``, or reopen it when ``resume`` is true.

    Raises
    ------
    FileExistsError
        ``path`` holds something and ``resume`` is false (a store is never silently
        overwritten), or ``path`` is neither a directory nor a store of its backend.
    ValueError
        ``resume`` is true and the stored manifest differs from ``meta``; the message
        names every field that differs.
    """
    return backend_class(path).create(Path(path), meta, resume)


def read_finished(store: ChunkStore, chunks: Sequence[tuple[int, int]]) -> dict[int, Chunk]:
    """The finished chunks of ``store`` among ``chunks`` (``(start, stop)`` by number), each
    checked against its SHA-256. A damaged chunk is discarded from the store, with a
    warning, and left out, so the study runs it again: its numbers are never used.

    Raises
    ------
    DamagedStoreError
        The store cannot be read, or a damaged chunk cannot be removed from it.
    """
    have: dict[int, Chunk] = {}
    for i in sorted(store.finished() & set(range(len(chunks)))):
        try:
            have[i] = store.read(i, *chunks[i])
        except DamagedChunkError as exc:
            store.discard(i)
            warnings.warn(f"{exc}; it is run again", stacklevel=3)
    return have


def stored_seed(path: str | os.PathLike[str]) -> np.random.SeedSequence | None:
    """The root seed recorded in the store at ``path`` (None if it has no manifest)."""
    meta = backend_class(path).stored_manifest(Path(path))
    if meta is None:
        return None
    return np.random.SeedSequence(meta["entropy"], spawn_key=tuple(meta["spawn_key"]))


def stored_chunk_runs(path: str | os.PathLike[str]) -> int | None:
    """The runs per chunk recorded in the store at ``path`` (None if it has no manifest)."""
    meta = backend_class(path).stored_manifest(Path(path))
    return None if meta is None else int(meta["chunk_runs"])


__all__ = ["backend_class", "open_store", "read_finished", "stored_chunk_runs", "stored_seed"]
