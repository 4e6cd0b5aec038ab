"""The Parquet study store: a directory of one Parquet file per finished chunk, plus a manifest.

A store (e.g. ``study.parquet/``) holds ``_manifest.json``, written before any chunk runs,
and ``part-000042.parquet`` for each finished chunk ``42``. A Parquet file is unreadable until
it is closed (its footer is written last), so a chunk is written to a hidden temporary file
of a unique name (``.part-….parquet.<random>.tmp``, so two processes never write one),
flushed to disk (``fsync``) and renamed into place with :func:`os.replace`: a killed study
leaves only whole chunks behind, and at most a stray ``.tmp`` that is ignored. The manifest
is published with a hard link, which fails if one exists: of two processes creating one
store at once, the second finds the first's study. Each part's schema metadata holds its
SHA-256 (``accelsim.sha256``), checked when it is read back.
Names starting with ``_`` or ``.`` are skipped by Parquet dataset readers, so
``pandas.read_parquet("study.parquet")`` reads the finished runs.

Each part file has a ``run`` column (the run index), one ``metric/<name>`` column per metric
and one ``input/<name>`` column per drawn input, so pandas, polars or duckdb read the
directory directly. pyarrow is an optional extra: ``pip install 'accelsim[store]'``. See
:mod:`accelsim.study._store` for what the stores share.
"""

from __future__ import annotations

import importlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from accelsim._typing import FloatArray
from accelsim.study._store import (
    MANIFEST,
    Chunk,
    ChunkStore,
    DamagedChunkError,
    check_manifest,
    check_same,
    chunk_digest,
    columns,
    not_empty,
    split,
)

SHA_KEY = "accelsim.sha256"
"""Key of a part's SHA-256 (:func:`accelsim.study._store.chunk_digest`) in its schema metadata."""


def _pyarrow() -> tuple[Any, Any]:
    """Import pyarrow lazily: the ``store`` extra."""
    try:
        pa = importlib.import_module("pyarrow")
        pq = importlib.import_module("pyarrow.parquet")
    except ImportError as exc:
        raise ImportError("a study store needs pyarrow: pip install 'accelsim[store]'") from exc
    return pa, pq


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


def _write_atomic(path: Path, write: Any, *, exclusive: bool = False) -> None:
    """Call ``write(tmp_path)`` on a temporary file of a unique name beside ``path``, fsync
    it, then rename it onto ``path`` (``exclusive``: link it there, failing with
    FileExistsError if ``path`` exists)."""
    # hidden (readers of the directory skip it) and unique (two writers never share one)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        write(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        if exclusive:
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise
            except OSError:  # a file system without hard links: replace, not exclusive
                os.replace(tmp, path)
        else:
            os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    _fsync_dir(path.parent)


class ParquetStore(ChunkStore):
    """A study's directory of finished chunks (see the module docstring)."""

    @classmethod
    def stored_manifest(cls, path: Path) -> dict[str, Any] | None:
        """The manifest in ``path``, or None when ``path`` has no ``_manifest.json``."""
        file = path / MANIFEST
        if not file.exists():
            return None
        meta: dict[str, Any] = json.loads(file.read_text(encoding="utf-8"))
        return meta

    @classmethod
    def create(cls, path: Path, meta: Mapping[str, Any], resume: bool) -> ParquetStore:
        """Create the directory ``path`` with its manifest, or reopen it (``resume``)."""
        _pyarrow()
        root = path
        if root.exists() and not root.is_dir():
            raise FileExistsError(f"study store {str(root)!r} exists and is not a directory")
        existing = root.is_dir() and any(not p.name.startswith(".") for p in root.iterdir())
        if existing and not resume:
            raise not_empty(root)
        stored = cls.stored_manifest(root) if existing else None
        if stored is not None:
            check_manifest(root, stored, meta)
            return cls(root, stored)
        if existing:
            raise ValueError(
                f"cannot resume the study in {str(root)!r}: it has files but no {MANIFEST}"
            )
        root.mkdir(parents=True, exist_ok=True)
        text = json.dumps(dict(meta), indent=2, sort_keys=True)
        try:
            _write_atomic(
                root / MANIFEST, lambda tmp: tmp.write_text(text, encoding="utf-8"), exclusive=True
            )
        except FileExistsError:  # another process created the store since we looked
            if not resume:
                raise not_empty(root) from None
            check_manifest(root, cls.stored_manifest(root) or {}, meta)
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
        """Write chunk ``chunk`` (runs from ``start``) atomically (:mod:`accelsim.study._store`)."""
        pa, pq = _pyarrow()
        named = columns(start, metrics, inputs)
        runs = len(named["run"])
        if self.part_path(chunk).exists():
            old = self.read(chunk, start, start + runs)
            check_same(str(self.path), chunk, old, split(named))
            return
        table = pa.table(named).replace_schema_metadata(
            {
                "accelsim.chunk": str(chunk),
                "accelsim.start": str(start),
                SHA_KEY: chunk_digest(start, metrics, inputs),
            }
        )
        _write_atomic(self.part_path(chunk), lambda tmp: pq.write_table(table, tmp))

    def discard(self, chunk: int) -> None:
        """Delete chunk ``chunk``'s file (found damaged), so that it is run again."""
        self.part_path(chunk).unlink(missing_ok=True)

    def read(self, chunk: int, start: int, stop: int) -> Chunk:
        """Metrics and inputs of chunk ``chunk``, checked to hold runs ``[start, stop)`` and
        to match the SHA-256 it was written with (else :class:`DamagedChunkError`)."""
        pa, pq = _pyarrow()
        where = str(self.path)
        try:
            table = pq.read_table(self.part_path(chunk))
            named = {name: table.column(name).to_numpy() for name in table.column_names}
            stored = (table.schema.metadata or {}).get(SHA_KEY.encode(), b"").decode()
        except (pa.ArrowException, OSError, KeyError, ValueError) as exc:
            raise DamagedChunkError(where, chunk, f"unreadable: {exc}") from None
        run = named.get("run")
        if run is None or not np.array_equal(run, np.arange(start, stop)):
            raise DamagedChunkError(where, chunk, f"it does not hold runs [{start}, {stop})")
        part = split(named)
        if stored != chunk_digest(start, *part):
            raise DamagedChunkError(where, chunk, "its SHA-256 does not match its values")
        return part


__all__ = ["ParquetStore"]
