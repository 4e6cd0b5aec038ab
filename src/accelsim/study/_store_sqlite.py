"""The SQLite study store: one database file, one committed transaction per finished chunk.

``simulate(..., store="study.sqlite")`` (or ``.sqlite3``, ``.db``) writes this store with the
standard library's :mod:`sqlite3`; nothing else is needed to write or read it. Read it with

.. code-block:: python

    import sqlite3, contextlib, pandas as pd
    with contextlib.closing(sqlite3.connect("study.sqlite")) as con:
        runs = pd.read_sql("SELECT * FROM runs ORDER BY run", con)

Schema
------
``manifest(key TEXT PRIMARY KEY, value TEXT)``
    The study's manifest (:func:`accelsim.study._store.manifest`), one row per field, the value as
    JSON. Written, with the empty tables below, in one transaction before any chunk runs.
``chunks(chunk INTEGER PRIMARY KEY, start INTEGER, stop INTEGER, sha256 TEXT)``
    The ledger: chunk ``chunk`` holds runs ``[start, stop)`` whose columns have the SHA-256
    ``sha256`` (:func:`accelsim.study._store.chunk_digest`), checked when it is read back: a
    damaged page that SQLite reads without complaint (its integrity check sees structure,
    not values) is caught there, and the chunk is run again on resume. A chunk's ledger row and its
    runs are inserted in one transaction, so the commit is what makes a chunk finished: a
    killed study leaves a whole chunk or nothing of it (SQLite rolls back the rest the next
    time the file is opened), and an uncommitted chunk is never visible to a reader.
``runs(run INTEGER PRIMARY KEY, "metric/<name>", ..., "input/<name>", ...)``
    The tidy table, one row per run, one column per metric and per drawn input: the same
    columns as a Parquet store's parts. Its value columns are added in the transaction of
    the first chunk (every chunk of a study has the same columns; another set is an error).
    They have no declared type, so each float64 is stored as an 8-byte IEEE double, exactly:
    a ``REAL`` column would store ``-0.0`` as the integer 0 and lose its sign.
``nan_bits(run INTEGER, name TEXT, bits INTEGER, PRIMARY KEY (run, name))``
    SQLite stores every NaN as NULL. In ``runs`` a NULL is therefore a NaN (pandas reads it
    as NaN), read back as numpy's ``nan``; a NaN with another bit pattern (a sign bit or a
    payload, e.g. ``inf - inf`` on x86) keeps its bits here as a signed 64-bit integer, so
    every value round-trips bit for bit. Infinities are stored as themselves.

Wide rather than long (``run, name, value``): the tidy read is a plain ``SELECT`` with no
pivot; a value costs 9 bytes rather than a row with its name and an index entry; and reading
a chunk back is one range scan of the ``run`` key. The price: a table holds at most 1999
metrics and inputs (SQLite's default limit is 2000 columns), and SQLite column names ignore
ASCII case, so two names that differ only in case cannot both be stored; both are errors
that point to the Parquet store.

Durability and concurrency: the default rollback journal with ``synchronous=FULL``, so a
chunk is on disk when its commit returns (rows are synced before the commit is marked), and
the store stays one file with no ``-wal``/``-shm`` companions to forget when it is copied;
a write-ahead log needs shared memory, which network file systems do not give. Its gain,
faster commits and readers that never block the writer, does not matter at one commit per
chunk (a commit waits up to 60 s for readers to finish before it fails). Only the
coordinating process writes: :func:`accelsim.study._runner.run_chunks` calls ``on_chunk``, and so
:meth:`SqliteStore.write`, in the parent as chunks complete, never in a worker. Each write
still takes SQLite's write lock first (``BEGIN IMMEDIATE``), so two processes resuming one
store at once cannot interleave a chunk; the one that comes second finds the chunk stored,
and identical values are then a no-op.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from accelsim._typing import FloatArray
from accelsim.study._store import (
    Chunk,
    ChunkStore,
    DamagedChunkError,
    DamagedStoreError,
    check_manifest,
    check_same,
    chunk_digest,
    columns,
    not_empty,
    split,
)

TIMEOUT_S = 60.0
_NAN_BITS = int(np.array(np.nan).view(np.int64))
_SCHEMA = (
    "CREATE TABLE manifest (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE chunks (chunk INTEGER PRIMARY KEY, start INTEGER NOT NULL, "
    "stop INTEGER NOT NULL, sha256 TEXT NOT NULL)",
    "CREATE TABLE runs (run INTEGER PRIMARY KEY)",
    "CREATE TABLE nan_bits (run INTEGER NOT NULL, name TEXT NOT NULL, "
    "bits INTEGER NOT NULL, PRIMARY KEY (run, name)) WITHOUT ROWID",
)


def _quote(name: str) -> str:
    """An SQL identifier for any name (``"`` doubled inside double quotes)."""
    return '"' + name.replace('"', '""') + '"'


def _fold(name: str) -> str:
    """A name as SQLite compares identifiers: ASCII letters without case."""
    return "".join(c.lower() if c.isascii() else c for c in name)


@contextmanager
def _connect(path: Path, mode: str = "rw") -> Iterator[sqlite3.Connection]:
    """A connection in autocommit mode (transactions are explicit), closed on exit.

    ``mode="rw"`` never creates the file (``"rwc"`` does). Read-only connections are not
    used: one cannot roll back the journal a killed writer left.
    """
    uri = f"{path.resolve().as_uri()}?mode={mode}"
    con = sqlite3.connect(uri, uri=True, timeout=TIMEOUT_S, isolation_level=None)
    try:
        con.execute("PRAGMA synchronous=FULL")
        yield con
    finally:
        con.close()


@contextmanager
def _transaction(con: sqlite3.Connection) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` (take the write lock now) ... ``COMMIT``, or roll back on error."""
    con.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if con.in_transaction:  # SQLite may have rolled back already (e.g. disk full)
            con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def _damaged(path: Path, exc: sqlite3.DatabaseError) -> DamagedStoreError:
    return DamagedStoreError(
        f"the study store {str(path)!r} is damaged (SQLite: {exc}): move it aside and start "
        "the study again in a new store"
    )


def _not_a_database(exc: sqlite3.DatabaseError) -> bool:
    return getattr(exc, "sqlite_errorname", "") == "SQLITE_NOTADB"


def _tables(con: sqlite3.Connection) -> set[str]:
    return {row[0] for row in con.execute("SELECT name FROM sqlite_master")}


def _manifest(con: sqlite3.Connection) -> dict[str, Any]:
    return {k: json.loads(v) for k, v in con.execute("SELECT key, value FROM manifest")}


def _value_columns(con: sqlite3.Connection) -> list[str]:
    return [row[1] for row in con.execute("PRAGMA table_info(runs)")][1:]


def _read(con: sqlite3.Connection, where: Path, chunk: int, start: int, stop: int) -> Chunk:
    """Chunk ``chunk`` read in ``con``, checked to hold runs ``[start, stop)`` and to match
    its SHA-256; a chunk SQLite cannot read or whose values fail the digest raises
    :class:`DamagedChunkError`."""
    try:
        part, digest = _read_rows(con, where, chunk, start, stop)
    except sqlite3.DatabaseError as exc:
        raise DamagedChunkError(str(where), chunk, f"SQLite: {exc}") from None
    if digest != chunk_digest(start, *part):
        raise DamagedChunkError(str(where), chunk, "its SHA-256 does not match its values")
    return part


def _read_rows(
    con: sqlite3.Connection, where: Path, chunk: int, start: int, stop: int
) -> tuple[Chunk, str]:
    """Chunk ``chunk``'s columns as stored, and the SHA-256 its ledger row records."""
    query = "SELECT start, stop, sha256 FROM chunks WHERE chunk = ?"
    row = con.execute(query, (chunk,)).fetchone()
    if row is None or tuple(row[:2]) != (start, stop):
        raise ValueError(f"{where} chunk {chunk} holds runs {row}, expected [{start}, {stop})")
    cur = con.execute("SELECT * FROM runs WHERE run >= ? AND run < ? ORDER BY run", (start, stop))
    names = [d[0] for d in cur.description]
    # NULL (a NaN) becomes numpy's nan; every other value is a double or the run's integer
    table = np.array(cur.fetchall(), dtype=np.float64).reshape(-1, len(names))
    if not np.array_equal(table[:, 0], np.arange(start, stop)):
        raise ValueError(
            f"{where} holds {len(table)} runs of chunk {chunk}, expected {stop - start}"
        )
    out = {name: np.ascontiguousarray(table[:, j]) for j, name in enumerate(names) if j}
    nans = "SELECT run, name, bits FROM nan_bits WHERE run >= ? AND run < ?"
    for run, name, bits in con.execute(nans, (start, stop)):
        out[name][run - start] = np.array(bits, dtype=np.int64).view(np.float64)
    return split(out), str(row[2])


class SqliteStore(ChunkStore):
    """A study's SQLite database of finished chunks (see the module docstring)."""

    @classmethod
    def stored_manifest(cls, path: Path) -> dict[str, Any] | None:
        """The manifest in the database ``path``; None when there is no such database."""
        if not path.is_file():
            return None
        try:
            with _connect(path) as con:
                return _manifest(con) if "manifest" in _tables(con) else None
        except sqlite3.DatabaseError as exc:
            if _not_a_database(exc):
                return None  # create() says what is wrong
            raise _damaged(path, exc) from None

    @classmethod
    def create(cls, path: Path, meta: Mapping[str, Any], resume: bool) -> SqliteStore:
        """Create the database ``path`` with its manifest, or reopen it (``resume``)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with _connect(path, "rwc") as con, _transaction(con):
                tables = _tables(con)
                if tables and not resume:
                    raise not_empty(path)
                if tables and "manifest" not in tables:
                    raise ValueError(
                        f"cannot resume the study in {str(path)!r}: it has tables but no "
                        f"manifest table"
                    )
                if tables:
                    stored = _manifest(con)
                    check_manifest(path, stored, meta)
                    return cls(path, stored)
                for statement in _SCHEMA:
                    con.execute(statement)
                con.executemany(
                    "INSERT INTO manifest VALUES (?, ?)",
                    [(k, json.dumps(v, sort_keys=True)) for k, v in meta.items()],
                )
        except sqlite3.DatabaseError as exc:
            if _not_a_database(exc):
                raise FileExistsError(
                    f"study store {str(path)!r} exists and is not an SQLite database"
                ) from exc
            raise _damaged(path, exc) from None
        return cls(path, meta)

    def finished(self) -> set[int]:
        """Numbers of the chunks committed.

        Raises
        ------
        DamagedStoreError
            SQLite cannot read the ledger of chunks (a damaged file).
        """
        try:
            with _connect(self.path) as con:
                return {row[0] for row in con.execute("SELECT chunk FROM chunks")}
        except sqlite3.DatabaseError as exc:
            raise _damaged(self.path, exc) from None

    def read(self, chunk: int, start: int, stop: int) -> Chunk:
        """Metrics and inputs of chunk ``chunk``, checked to hold runs ``[start, stop)`` and
        to match its SHA-256 (else :class:`DamagedChunkError`)."""
        with _connect(self.path) as con:
            return _read(con, self.path, chunk, start, stop)

    def discard(self, chunk: int) -> None:
        """Delete chunk ``chunk`` (found damaged) in one transaction, so that it is run again.

        Raises
        ------
        DamagedStoreError
            SQLite cannot delete it (the damage is in the file's structure).
        """
        try:
            with _connect(self.path) as con, _transaction(con):
                row = con.execute("SELECT start, stop FROM chunks WHERE chunk = ?", (chunk,))
                bounds = row.fetchone()
                if bounds is not None:
                    con.execute("DELETE FROM runs WHERE run >= ? AND run < ?", tuple(bounds))
                    con.execute("DELETE FROM nan_bits WHERE run >= ? AND run < ?", tuple(bounds))
                con.execute("DELETE FROM chunks WHERE chunk = ?", (chunk,))
        except sqlite3.DatabaseError as exc:
            raise _damaged(self.path, exc) from None

    def write(
        self,
        chunk: int,
        start: int,
        metrics: Mapping[str, FloatArray],
        inputs: Mapping[str, FloatArray],
    ) -> None:
        """Insert chunk ``chunk`` (runs from ``start``) in one transaction.

        Raises
        ------
        TypeError
            A column is not float64.
        ValueError
            The chunk is already stored with other values, its columns differ from those
            of the stored chunks, or its names cannot be columns of one SQLite table.
        """
        named = columns(start, metrics, inputs)
        run = named.pop("run")
        wrong = [f"{k} ({v.dtype})" for k, v in named.items() if v.dtype != np.float64]
        if wrong:
            raise TypeError(f"the SQLite store holds float64 columns only, got {wrong}")
        with _connect(self.path) as con, _transaction(con):
            if con.execute("SELECT 1 FROM chunks WHERE chunk = ?", (chunk,)).fetchone():
                old = _read(con, self.path, chunk, start, start + len(run))
                check_same(str(self.path), chunk, old, split(named))
                return
            self._check_columns(con, list(named))
            digest = chunk_digest(start, metrics, inputs)
            con.execute(
                "INSERT INTO chunks VALUES (?, ?, ?, ?)", (chunk, start, start + len(run), digest)
            )
            names = ", ".join(_quote(k) for k in named)
            marks = ", ".join("?" * (1 + len(named)))
            con.executemany(
                f"INSERT INTO runs (run, {names}) VALUES ({marks})",
                zip(run.tolist(), *(v.tolist() for v in named.values()), strict=True),
            )
            nans = []
            for name, v in named.items():
                bits = v.view(np.int64)
                odd = np.flatnonzero(np.isnan(v) & (bits != _NAN_BITS))
                nans += [(int(run[i]), name, int(bits[i])) for i in odd]
            con.executemany("INSERT INTO nan_bits VALUES (?, ?, ?)", nans)

    def _check_columns(self, con: sqlite3.Connection, names: list[str]) -> None:
        """Add the value columns on the first chunk; later chunks must have the same ones."""
        have = _value_columns(con)
        if have:
            if set(have) != set(names):
                raise ValueError(
                    f"{self.path} stores columns {sorted(set(have) - set(names))} that this "
                    f"chunk lacks and lacks {sorted(set(names) - set(have))}: every chunk of "
                    f"a study has the same metrics and inputs"
                )
            return
        folded: dict[str, list[str]] = {}
        for k in names:
            folded.setdefault(_fold(k), []).append(k)
        clash = [v for v in folded.values() if len(v) > 1]
        if clash:
            raise ValueError(
                f"SQLite column names ignore case, so {clash} cannot all be stored; "
                f"use a Parquet store"
            )
        try:
            for k in names:
                con.execute(f"ALTER TABLE runs ADD COLUMN {_quote(k)}")
        except sqlite3.OperationalError as exc:
            if "too many columns" in str(exc):
                raise ValueError(
                    f"{len(names)} metrics and inputs exceed SQLite's column limit; "
                    f"use a Parquet store"
                ) from exc
            raise


__all__ = ["SqliteStore"]
