"""Resumable studies: Parquet and SQLite stores, killed mid-way and resumed.

The helpers below read the stores with pyarrow/pandas and raw ``sqlite3``, not with
``accelsim.study._store``, so the tests check the files a user reads, not the code against itself.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.same_results import assert_same

import accelsim as acs
from accelsim.engines._inputs import BLOCK_RUNS
from accelsim.study._chunks import ANALYTIC_CHUNK_BLOCKS
from accelsim.study._store import MANIFEST, backend_of
from accelsim.study._stores import open_store, stored_seed

RUNS = 6 * BLOCK_RUNS
BACKENDS = ["parquet", "sqlite"]
META = {"entropy": 1, "spawn_key": [], "runs": 100}  # a manifest for the interface tests


def scenario(name: str = "store") -> acs.Scenario:
    return acs.Scenario(
        name=name,
        workload=acs.TrainingRun(params=7e9, tokens=1e11),
        fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")],
    )


def store_path(tmp_path: Path, backend: str, name: str = "s") -> Path:
    return tmp_path / f"{name}.{backend}"


def connect(db: Path) -> closing[sqlite3.Connection]:
    """A plain connection to a store file that must exist (never creates one)."""
    return closing(sqlite3.connect(f"{db.resolve().as_uri()}?mode=rw", uri=True))


def stored_chunks(store: Path) -> set[int]:
    """Chunk numbers a reader sees as finished (committed rows / whole part files)."""
    if store.suffix == ".sqlite":
        if not store.exists():
            return set()
        with connect(store) as con:
            try:
                return {row[0] for row in con.execute("SELECT chunk FROM chunks")}
            except sqlite3.OperationalError:  # the manifest transaction is not committed yet
                return set()
    return {int(p.name[len("part-") : -len(".parquet")]) for p in store.glob("part-*.parquet")}


def drop_chunk(store: Path, chunk: int) -> None:
    """Delete one finished chunk, as if the study had been killed before it finished."""
    if store.suffix == ".sqlite":
        with connect(store) as con, con:
            start, stop = con.execute(
                "SELECT start, stop FROM chunks WHERE chunk = ?", (chunk,)
            ).fetchone()
            con.execute("DELETE FROM runs WHERE run >= ? AND run < ?", (start, stop))
            con.execute("DELETE FROM nan_bits WHERE run >= ? AND run < ?", (start, stop))
            con.execute("DELETE FROM chunks WHERE chunk = ?", (chunk,))
    else:
        (store / f"part-{chunk:06d}.parquet").unlink()


def read_manifest(store: Path) -> dict[str, object]:
    if store.suffix == ".sqlite":
        with connect(store) as con:
            return {k: json.loads(v) for k, v in con.execute("SELECT key, value FROM manifest")}
    meta: dict[str, object] = json.loads((store / MANIFEST).read_text())
    return meta


def read_runs(store: Path) -> pd.DataFrame:
    """The tidy table of a store, one row per run, as a user reads it."""
    if store.suffix == ".sqlite":
        with connect(store) as con:
            return pd.read_sql("SELECT * FROM runs ORDER BY run", con)
    return pd.read_parquet(store).sort_values("run").reset_index(drop=True)


def snapshot(store: Path) -> dict[str, tuple[int, bytes]]:
    """Every file of the store (and any SQLite journal beside it): mtime and bytes."""
    files = (
        sorted(store.iterdir()) if store.is_dir() else sorted(store.parent.glob(store.name + "*"))
    )
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in files}


def seed_of(store: Path) -> tuple[object, tuple[int, ...]] | None:
    """The stored root seed as ``(entropy, spawn_key)`` (SeedSequence has no ``==``)."""
    seed = stored_seed(store)
    return None if seed is None else (seed.entropy, tuple(seed.spawn_key))


def assert_bits(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    """Same names in the same order, same dtype, same bits (NaN payloads and -0.0 too)."""
    assert list(a) == list(b)
    for k in a:
        assert a[k].dtype == b[k].dtype == np.float64, k
        np.testing.assert_array_equal(a[k].view(np.uint64), b[k].view(np.uint64), err_msg=k)


# The child runs the study with a store; its progress callback pauses after each chunk (it
# is called after the chunk is stored), standing in for a slow study so that the kill
# lands before the end.
CHILD = textwrap.dedent(
    """
    import sys, time
    import accelsim as acs
    s = acs.Scenario(
        name="store",
        workload=acs.TrainingRun(params=7e9, tokens=1e11),
        fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")],
    )
    acs.simulate(s, runs={runs}, seed=11, chunk_runs=4096, store=sys.argv[1],
                 progress=lambda done, total: time.sleep(0.5))
    """
)


@pytest.mark.parametrize("backend", BACKENDS)
def test_killed_study_resumes_bit_identical(tmp_path: Path, backend: str) -> None:
    """SIGKILL a study once a chunk is stored; resuming gives the uninterrupted result.

    The kill must leave the study unfinished (fewer than 6 chunks), else the test would
    not test a resume; every finished chunk must be readable; and the resumed result must
    equal an uninterrupted study array for array (exact equality: streams are addressed by
    block, so nothing may differ).
    """
    store = store_path(tmp_path, backend)
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD.format(runs=RUNS), str(store)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while not stored_chunks(store):
            assert child.poll() is None, child.stderr.read() if child.stderr else ""
            assert time.monotonic() < deadline, "no chunk written within 120 s"
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stderr:
            child.stderr.close()
    assert child.returncode == -signal.SIGKILL
    stored = len(stored_chunks(store))
    assert 1 <= stored < 6, stored
    if backend == "parquet":  # a half-written chunk from a crash is hidden and ignored
        (store / ".part-000005.parquet.tmp").write_bytes(b"PAR1 truncated")

    calls: list[tuple[int, int]] = []
    resumed = acs.simulate(
        scenario(),
        runs=RUNS,
        seed=11,
        chunk_runs=4096,
        store=store,
        resume=True,
        progress=lambda d, t: calls.append((d, t)),
    )
    fresh = acs.simulate(scenario(), runs=RUNS, seed=11)
    assert_same(resumed, fresh)
    # only the missing chunks ran: first call reports the stored runs, then one per chunk
    assert calls[0] == (stored * BLOCK_RUNS, RUNS)
    assert len(calls) == 1 + 6 - stored
    assert stored_chunks(store) == set(range(6))


@pytest.mark.parametrize("backend", BACKENDS)
def test_store_holds_metrics_inputs_and_manifest(tmp_path: Path, backend: str) -> None:
    """The tidy table equals the result, one row per run; the manifest says what ran."""
    store = store_path(tmp_path, backend)
    res = acs.simulate(scenario(), runs=2 * BLOCK_RUNS + 10, seed=3, store=store)
    frame = read_runs(store)
    expected = ["run"] + [f"metric/{m}" for m in res.data] + [f"input/{k}" for k in res.inputs]
    assert list(frame.columns) == expected
    np.testing.assert_array_equal(frame["run"].to_numpy(), np.arange(res.runs))
    for m in res.metrics:
        np.testing.assert_array_equal(frame[f"metric/{m}"].to_numpy(), res.samples(m))
    for k, v in res.inputs.items():
        np.testing.assert_array_equal(frame[f"input/{k}"].to_numpy(), v)
    meta = read_manifest(store)
    assert meta["entropy"] == 3
    assert meta["runs"] == res.runs
    assert meta["chunk_runs"] == ANALYTIC_CHUNK_BLOCKS * BLOCK_RUNS  # in-process default
    assert meta["engine"] == "analytic"
    assert meta["numpy_version"] == np.__version__
    assert len(str(meta["scenario_sha256"])) == 64
    assert seed_of(store) == (3, ())


def test_parquet_and_sqlite_stores_read_as_the_same_table(tmp_path: Path) -> None:
    """One study stored both ways reads back as equal frames (names, dtypes, values)."""
    kw: dict[str, object] = {"runs": BLOCK_RUNS + 7, "seed": 8}
    acs.simulate(scenario(), store=store_path(tmp_path, "parquet"), **kw)  # type: ignore[arg-type]
    acs.simulate(scenario(), store=store_path(tmp_path, "sqlite"), **kw)  # type: ignore[arg-type]
    pd.testing.assert_frame_equal(
        read_runs(store_path(tmp_path, "sqlite")), read_runs(store_path(tmp_path, "parquet"))
    )


def test_manifest_and_empty_tables_come_before_any_chunk(tmp_path: Path) -> None:
    """Opening a SQLite store commits the manifest and an empty ``runs`` table."""
    db = tmp_path / "s.sqlite"
    meta = {"entropy": 4, "spawn_key": [1], "runs": 10}
    open_store(db, meta, resume=False)
    assert read_manifest(db) == meta
    frame = read_runs(db)
    assert list(frame.columns) == ["run"]
    assert len(frame) == 0
    assert seed_of(db) == (4, (1,))
    assert stored_chunks(db) == set()


@pytest.mark.parametrize("backend", BACKENDS)
def test_existing_store_is_never_overwritten(tmp_path: Path, backend: str) -> None:
    store = store_path(tmp_path, backend)
    acs.simulate(scenario(), runs=100, seed=1, store=store)
    before = snapshot(store)
    with pytest.raises(FileExistsError, match="resume=True"):
        acs.simulate(scenario(), runs=100, seed=1, store=store)
    assert snapshot(store) == before


def test_empty_directory_is_a_fresh_store(tmp_path: Path) -> None:
    store = tmp_path / "empty"
    store.mkdir()
    res = acs.simulate(scenario(), runs=100, seed=1, store=store)
    assert (store / "part-000000.parquet").exists()
    assert res.runs == 100


@pytest.mark.parametrize("name", ["s.sqlite", "s.sqlite3", "s.db", "S.DB", "my study #2%.sqlite"])
def test_sqlite_suffixes_make_one_database_file(tmp_path: Path, name: str) -> None:
    """Each SQLite suffix (any case) gives one database file, and nothing beside it."""
    db = tmp_path / name
    res = acs.simulate(scenario(), runs=100, seed=1, store=db)
    assert backend_of(db) == "sqlite"
    assert [p.name for p in tmp_path.iterdir()] == [name]  # no journal, -wal or -shm left
    with connect(db) as con:
        assert con.execute("SELECT count(*) FROM runs").fetchone() == (res.runs,)


def test_empty_file_is_a_fresh_sqlite_store(tmp_path: Path) -> None:
    """A 0-byte file is an empty SQLite database, so it becomes the store."""
    db = tmp_path / "s.sqlite"
    db.touch()
    acs.simulate(scenario(), runs=100, seed=1, store=db)
    assert stored_chunks(db) == {0}


def test_existing_directory_stays_parquet_whatever_its_suffix(tmp_path: Path) -> None:
    """A directory named like a database (a store made before SQLite) is still Parquet."""
    store = tmp_path / "old.db"
    store.mkdir()
    assert backend_of(store) == "parquet"
    first = acs.simulate(scenario(), runs=100, seed=1, store=store)
    assert (store / "part-000000.parquet").exists()
    assert (store / MANIFEST).exists()
    assert_same(first, acs.simulate(scenario(), runs=100, store=store, resume=True))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"seed": 2}, "entropy: stored 1, now 2"),
        ({"runs": 200}, "runs: stored 100, now 200"),
        ({"chunk_runs": BLOCK_RUNS}, "chunk_runs: stored 16384, now 4096"),
        ({"scenario": scenario("other")}, "scenario_sha256"),
    ],
)
def test_resume_refuses_a_different_study(
    tmp_path: Path, backend: str, change: dict[str, object], named: str
) -> None:
    """Resuming with another seed, size, chunking or scenario names what differs."""
    store = store_path(tmp_path, backend)
    acs.simulate(scenario(), runs=100, seed=1, store=store)
    kwargs: dict[str, object] = {"scenario": scenario(), "runs": 100, "seed": 1}
    kwargs |= change
    with pytest.raises(ValueError, match="its manifest differs") as err:
        acs.simulate(store=store, resume=True, **kwargs)  # type: ignore[arg-type]
    assert named in str(err.value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_resume_without_chunk_runs_takes_the_stored_chunks(tmp_path: Path, backend: str) -> None:
    """A study stored in one-block chunks (the default with an executor) resumes in-process,
    where the default is wider, without naming its chunk size again."""
    store = store_path(tmp_path, backend)
    runs = 2 * BLOCK_RUNS + 10
    with ThreadPoolExecutor(max_workers=1) as pool:
        first = acs.simulate(scenario(), runs=runs, seed=4, store=store, executor=pool)
    assert read_manifest(store)["chunk_runs"] == BLOCK_RUNS
    assert_same(first, acs.simulate(scenario(), runs=runs, seed=4, store=store, resume=True))


@pytest.mark.parametrize("backend", BACKENDS)
def test_resume_of_a_finished_study_runs_nothing_and_reuses_the_seed(
    tmp_path: Path, backend: str
) -> None:
    """seed=None on resume takes the stored seed; a complete store is read, not rerun."""
    store = store_path(tmp_path, backend)
    first = acs.simulate(scenario(), runs=BLOCK_RUNS + 5, seed=None, store=store)
    stamps = snapshot(store)
    calls: list[tuple[int, int]] = []
    again = acs.simulate(
        scenario(),
        runs=BLOCK_RUNS + 5,
        store=store,
        resume=True,
        progress=lambda d, t: calls.append((d, t)),
    )
    assert_same(first, again)
    assert calls == [(BLOCK_RUNS + 5, BLOCK_RUNS + 5)]
    assert snapshot(store) == stamps


@pytest.mark.parametrize("backend", BACKENDS)
def test_auto_study_resumes_from_its_store(tmp_path: Path, backend: str) -> None:
    """A runs="auto" study stored and resumed stops where the uninterrupted one stops."""
    store = store_path(tmp_path, backend)
    # a target the first block (4,096 runs) does not meet: the study takes several chunks
    kw: dict[str, object] = {"runs": "auto", "target": {"tco_usd": 0.005}, "seed": 5}
    first = acs.simulate(scenario(), store=store, **kw)  # type: ignore[arg-type]
    assert first.runs > BLOCK_RUNS  # several chunks, so dropping one below means something
    assert first.extras["precision"]["tco_usd"]["met"]
    drop_chunk(store, max(stored_chunks(store)))
    again = acs.simulate(scenario(), store=store, resume=True, **kw)  # type: ignore[arg-type]
    assert_same(first, again)
    assert again.extras["precision"] == first.extras["precision"]


def test_store_options_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="resume=True needs the store"):
        acs.simulate(scenario(), runs=100, seed=1, resume=True)
    with pytest.raises(ValueError, match="keep_jobs"):
        acs.simulate(scenario(), runs=100, seed=1, engine="des", keep_jobs=True, store=tmp_path)
    file = tmp_path / "file"
    file.write_text("x")
    with pytest.raises(FileExistsError, match="not a directory"):
        acs.simulate(scenario(), runs=100, seed=1, store=file)


def test_sqlite_store_refuses_files_that_are_not_its_own(tmp_path: Path) -> None:
    """A non-database file is left alone; a foreign database is neither used nor resumed."""
    text = tmp_path / "notes.sqlite"
    text.write_text("not a database, but a long enough text to have a header" * 4)
    before = snapshot(text)
    assert stored_seed(text) is None
    for resume in (False, True):
        with pytest.raises(FileExistsError, match="not an SQLite database"):
            acs.simulate(scenario(), runs=100, seed=1, store=text, resume=resume)
    assert snapshot(text) == before

    other = tmp_path / "other.db"
    with closing(sqlite3.connect(other)) as con, con:
        con.execute("CREATE TABLE mine (x)")
    with pytest.raises(FileExistsError, match="resume=True"):
        acs.simulate(scenario(), runs=100, seed=1, store=other)
    with pytest.raises(ValueError, match="no manifest table"):
        acs.simulate(scenario(), runs=100, seed=1, store=other, resume=True)
    with closing(sqlite3.connect(other)) as con:
        assert {r[0] for r in con.execute("SELECT name FROM sqlite_master")} == {"mine"}


def test_missing_pyarrow_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Parquet needs the extra; SQLite needs nothing beyond the standard library."""
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(ImportError, match=r"pip install 'accelsim\[store\]'"):
        acs.simulate(scenario(), runs=100, seed=1, store=tmp_path / "s")
    assert not os.path.exists(tmp_path / "s")
    res = acs.simulate(scenario(), runs=100, seed=1, store=tmp_path / "s.sqlite")
    assert_same(res, acs.simulate(scenario(), runs=100, seed=1))


@pytest.mark.parametrize("backend", BACKENDS)
def test_seed_sequence_with_list_entropy_is_stored_and_reused(tmp_path: Path, backend: str) -> None:
    """A SeedSequence of several words is recorded as a JSON list and resumed exactly."""
    store = store_path(tmp_path, backend)
    seed = np.random.SeedSequence([1, 2, 3])
    first = acs.simulate(scenario(), runs=100, seed=seed, store=store)
    assert read_manifest(store)["entropy"] == [1, 2, 3]
    drop_chunk(store, 0)
    again = acs.simulate(scenario(), runs=100, store=store, resume=True)
    assert_same(first, again)


# --- the ChunkStore interface directly -------------------------------------------------

SPECIAL = np.array(
    [
        np.nan,  # numpy's NaN (0x7ff8...)
        -np.nan,  # sign bit set, as inf - inf gives on x86
        np.array(0x7FF0000000000001, dtype=np.int64).view(np.float64),  # signalling, payload 1
        np.array(-0x0000000000000001, dtype=np.int64).view(np.float64),  # all ones: -NaN
        np.inf,
        -np.inf,
        0.0,
        -0.0,
        5e-324,
        -np.finfo(np.float64).max,
        3.0,
        2.0**63,
    ]
)


def chunk_of(
    values: np.ndarray, salt: float = 0.0
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """A chunk of two metrics and two inputs made of ``values`` (``salt`` shifts one)."""
    mfu = values[::-1].copy()
    mfu[~np.isnan(mfu)] += salt
    metrics = {"tco_usd": values.copy(), "mfu": mfu}
    inputs = {"priors.x.h100-sxm": np.roll(values, 1), 'odd "name"': values.copy()}
    return metrics, inputs


@pytest.mark.parametrize("backend", BACKENDS)
def test_special_values_round_trip_bit_exactly(tmp_path: Path, backend: str) -> None:
    """NaNs of any sign and payload, infinities, -0.0 and subnormals come back bit for bit.

    In SQLite every NaN is NULL (the tidy read shows NaN there, and -0.0 keeps its sign);
    the store's own read restores each NaN's exact bits.
    """
    store = open_store(store_path(tmp_path, backend), META, resume=False)
    n = SPECIAL.size
    store.write(3, 2 * n, *chunk_of(SPECIAL))
    store.write(0, 0, *chunk_of(SPECIAL[::-1].copy()))
    reopened = open_store(store_path(tmp_path, backend), META, resume=True)
    assert reopened.finished() == {0, 3}
    for chunk, start, values in [(3, 2 * n, SPECIAL), (0, 0, SPECIAL[::-1].copy())]:
        metrics, inputs = reopened.read(chunk, start, start + n)
        want_m, want_i = chunk_of(values)
        assert_bits(metrics, want_m)
        assert_bits(inputs, want_i)
    frame = read_runs(store_path(tmp_path, backend))
    np.testing.assert_array_equal(frame["run"], [*range(n), *range(2 * n, 3 * n)])
    tco = frame["metric/tco_usd"].to_numpy(dtype=np.float64)[n:]
    np.testing.assert_array_equal(np.isnan(tco), np.isnan(SPECIAL))
    np.testing.assert_array_equal(np.signbit(tco[~np.isnan(tco)]), np.signbit(SPECIAL[4:]))


# Any 64-bit pattern, weighted towards those a store may mangle: NaNs of either sign with
# any payload (exponent all ones, mantissa not 0), infinities and signed zeros.
NAN_BITS = st.builds(
    lambda sign, mantissa: (sign << 63) | (0x7FF << 52) | mantissa,
    st.integers(0, 1),
    st.integers(1, 2**52 - 1),
)
EDGE_BITS = st.sampled_from([0, 1 << 63, 0x7FF << 52, (0xFFF << 52)])
BITS = st.one_of(st.integers(0, 2**64 - 1), NAN_BITS, EDGE_BITS)


@given(bits=st.lists(BITS, min_size=1, max_size=30), backend=st.sampled_from(BACKENDS))
def test_any_float64_round_trips_bit_exactly(bits: list[int], backend: str) -> None:
    """Every float64 bit pattern (NaN payloads, -0.0, infinities) is read back as written."""
    values = np.array(bits, dtype=np.uint64).view(np.float64)
    with tempfile.TemporaryDirectory() as tmp:
        path = store_path(Path(tmp), backend)
        open_store(path, META, resume=False).write(1, 5, *chunk_of(values))
        metrics, inputs = open_store(path, META, resume=True).read(1, 5, 5 + values.size)
    want_m, want_i = chunk_of(values)
    assert_bits(metrics, want_m)
    assert_bits(inputs, want_i)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_chunk_written_twice_counts_once(tmp_path: Path, backend: str) -> None:
    """The same values again change nothing; other values are an error naming the column."""
    path = store_path(tmp_path, backend)
    store = open_store(path, META, resume=False)
    store.write(0, 0, *chunk_of(SPECIAL))
    before = snapshot(path)
    store.write(0, 0, *chunk_of(SPECIAL.copy()))  # a retried chunk: identical values
    assert snapshot(path) == before
    assert store.finished() == {0}
    assert len(read_runs(path)) == SPECIAL.size
    with pytest.raises(ValueError, match=r"chunk 0 is already stored .*metric/mfu"):
        store.write(0, 0, *chunk_of(SPECIAL, salt=1.0))
    other_nan = SPECIAL.copy()
    other_nan[0] = -np.nan  # differs from the stored chunk in a NaN's sign bit only
    with pytest.raises(ValueError, match="chunk 0 is already stored"):
        store.write(0, 0, *chunk_of(other_nan))
    assert snapshot(path) == before


def test_sqlite_chunks_must_share_columns_and_be_float64(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    store = open_store(path, META, resume=False)
    metrics, inputs = chunk_of(SPECIAL)
    store.write(0, 0, metrics, inputs)
    with pytest.raises(ValueError, match="same metrics and inputs"):
        store.write(1, SPECIAL.size, {**metrics, "new": SPECIAL}, inputs)
    with pytest.raises(TypeError, match="float64"):
        store.write(1, SPECIAL.size, {**metrics, "mfu": np.arange(SPECIAL.size)}, inputs)
    assert store.finished() == {0}
    clash = open_store(tmp_path / "c.sqlite", META, resume=False)
    with pytest.raises(ValueError, match="ignore case"):
        clash.write(0, 0, {"MFU": SPECIAL, "mfu": SPECIAL}, {})
    assert clash.finished() == set()
    assert list(read_runs(tmp_path / "c.sqlite").columns) == ["run"]  # rolled back


def test_uncommitted_chunk_is_invisible(tmp_path: Path) -> None:
    """Rows of a chunk whose transaction is open are seen by no reader, the store included."""
    path = tmp_path / "s.sqlite"
    store = open_store(path, META, resume=False)
    store.write(0, 0, *chunk_of(SPECIAL))
    n = SPECIAL.size
    with connect(path) as writer:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("INSERT INTO chunks VALUES (1, ?, ?, ?)", (n, 2 * n, "0" * 64))
        writer.executemany("INSERT INTO runs (run) VALUES (?)", [(r,) for r in range(n, 2 * n)])
        assert writer.execute("SELECT count(*) FROM runs").fetchone() == (2 * n,)  # its own view
        assert store.finished() == {0}
        assert len(read_runs(path)) == n
        writer.execute("ROLLBACK")
    assert store.finished() == {0}


# The child writes chunk 1 with the store's own code, and SIGKILLs itself in the middle of
# inserting its rows: the trace callback sees each row's INSERT. A 10-page cache makes
# SQLite spill the open transaction into the database file, so the kill leaves a file that
# holds part of the chunk plus the hot journal that undoes it.
WRITER = textwrap.dedent(
    """
    import os, signal, sqlite3, sys
    import numpy as np
    from accelsim.study._stores import open_store

    connect = sqlite3.connect
    rows = 0

    def trace(sql):
        global rows
        if sql.startswith("INSERT INTO runs"):
            rows += 1
            if rows == 3000:
                os.kill(os.getpid(), signal.SIGKILL)

    def spilling_connect(*args, **kwargs):
        con = connect(*args, **kwargs)
        con.execute("PRAGMA cache_size = 10")
        con.set_trace_callback(trace)
        return con

    sqlite3.connect = spilling_connect
    meta = {"entropy": 1, "spawn_key": [], "runs": 100}
    store = open_store(sys.argv[1], meta, resume=True)
    x = np.random.default_rng(0).random((40, 8192))
    store.write(1, 100, {f"m{i}": x[i] for i in range(20)}, {f"i{i}": x[20 + i] for i in range(20)})
    """
)


def test_writer_killed_mid_chunk_leaves_nothing_of_it(tmp_path: Path) -> None:
    """A SIGKILL inside a chunk's transaction leaves the store as it was before the chunk.

    The kill must leave the database file changed and a journal beside it (else nothing
    half-written would have been on disk); reopening must roll it back: chunk 0 alone,
    bit-exact, and no row of chunk 1.
    """
    path = tmp_path / "s.sqlite"
    store = open_store(path, META, resume=False)
    x = np.random.default_rng(1).random((40, 100))
    metrics = {f"m{i}": x[i] for i in range(20)}
    inputs = {f"i{i}": x[20 + i] for i in range(20)}
    store.write(0, 0, metrics, inputs)
    before = path.read_bytes()
    child = subprocess.run(
        [sys.executable, "-c", WRITER, str(path)], capture_output=True, timeout=120, check=False
    )
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()
    journal = tmp_path / "s.sqlite-journal"
    assert journal.exists()
    assert journal.stat().st_size > 0
    assert path.read_bytes() != before
    assert seed_of(path) == (1, ())  # opening rolls the chunk back
    assert not journal.exists() or journal.stat().st_size == 0
    assert store.finished() == {0}
    got_m, got_i = store.read(0, 0, 100)
    assert_bits(got_m, metrics)
    assert_bits(got_i, inputs)
    assert read_runs(path)["run"].tolist() == list(range(100))
