"""Stores that cannot mix two studies or read back a damaged number.

- The manifest records the catalog's digest: a resume with an edited price sheet is refused,
  as one with an edited scenario already was (before, one result held runs priced at
  $12,288 and at $1,228,800).
- Each chunk is stored with the SHA-256 of its columns: a damaged chunk (an overwritten
  SQLite page read back silently as 3.9e117) is run again on resume, never used.
- Two processes creating one Parquet store do not clash on a temporary file name.
"""

from __future__ import annotations

import sqlite3
import threading
import warnings
from contextlib import closing
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.bounded import assert_refused, cli
from tests.same_results import assert_same

import accelsim as acs
from accelsim.catalog import builtin_catalog
from accelsim.engines._inputs import BLOCK_RUNS
from accelsim.study._store import DamagedStoreError
from accelsim.study._store_parquet import ParquetStore
from accelsim.study._stores import open_store

RUNS = 3 * BLOCK_RUNS
BACKENDS = ["parquet", "sqlite"]
META = {"entropy": 1, "spawn_key": [], "runs": 100}
SCENARIO = acs.Scenario(
    name="store",
    workload=acs.TrainingRun(params=7e9, tokens=1e11),
    fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")],
)


def _study(store: Path, **kwargs: object) -> acs.Result:
    return acs.simulate(
        SCENARIO, runs=RUNS, seed=3, chunk_runs=BLOCK_RUNS, store=store, progress=False, **kwargs
    )


def _repriced(factor: float) -> acs.catalog.Catalog:
    """The built-in catalog with AWS's on-demand prices times ``factor``."""
    cat = builtin_catalog()
    aws = cat.sheets["aws"]
    offers = tuple(
        o.model_copy(update={"usd_per_chip_hour": o.usd_per_chip_hour * factor})
        if o.pricing == "on_demand" and o.usd_per_chip_hour is not None
        else o
        for o in aws.offers
    )
    return replace(cat, sheets={**cat.sheets, "aws": aws.model_copy(update={"offers": offers})})


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_resume_with_another_price_sheet_is_refused(tmp_path: Path, backend: str) -> None:
    store = tmp_path / f"s.{backend}"
    _study(store)
    with pytest.raises(ValueError, match=r"catalog_sha256: stored .*price sheets or priors"):
        _study(store, resume=True, catalog=_repriced(100.0))
    # the same catalog resumes (every chunk is stored: nothing runs again)
    assert_same(_study(store, resume=True), _study(tmp_path / f"fresh.{backend}"))


def _damage_sqlite_value(store: Path, run: int) -> None:
    """Overwrite one stored value, as a damaged page that SQLite reads without complaint."""
    with closing(sqlite3.connect(store)) as con, con:
        con.execute('UPDATE runs SET "metric/tco_usd" = 3.9e117 WHERE run = ?', (run,))


def _damage_parquet_value(store: Path, chunk: int) -> None:
    """Rewrite a part with one value changed and its metadata (its SHA-256) kept."""
    path = store / f"part-{chunk:06d}.parquet"
    table = pq.read_table(path)
    column = table.column("metric/tco_usd").to_numpy().copy()
    column[5] = 3.9e117
    index = table.column_names.index("metric/tco_usd")
    table = table.set_column(index, "metric/tco_usd", pa.array(column))
    pq.write_table(table.replace_schema_metadata(table.schema.metadata), path)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_damaged_chunk_is_run_again_never_read_back(tmp_path: Path, backend: str) -> None:
    store = tmp_path / f"s.{backend}"
    fresh = _study(store)
    if backend == "sqlite":
        _damage_sqlite_value(store, BLOCK_RUNS + 5)
    else:
        _damage_parquet_value(store, 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        resumed = _study(store, resume=True)
    assert any("chunk 1 of the study store" in str(w.message) for w in caught)
    assert any("SHA-256 does not match" in str(w.message) for w in caught)
    assert resumed.samples("tco_usd").max() < 1e100
    assert_same(resumed, fresh)
    with warnings.catch_warnings():  # the chunk was written again: a clean resume now
        warnings.simplefilter("error")
        assert_same(_study(store, resume=True), fresh)


def test_an_unreadable_parquet_part_is_run_again(tmp_path: Path) -> None:
    store = tmp_path / "s.parquet"
    fresh = _study(store)
    (store / "part-000002.parquet").write_bytes(b"PAR1 not a parquet file PAR1")
    with pytest.warns(UserWarning, match="chunk 2 .* damaged \\(unreadable"):
        assert_same(_study(store, resume=True), fresh)


def test_a_structurally_damaged_sqlite_store_is_one_line_exit_2(tmp_path: Path) -> None:
    """Pages overwritten with garbage: SQLite cannot read the file. The CLI says so in one
    line, exit 2, no traceback (before: a traceback)."""
    store = tmp_path / "s.sqlite"
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "name: store\nworkload: {kind: training, params: 7e9, tokens: 1e11}\n"
        "fleet: [{chip: h100-sxm, count: 64, provider: aws}]\n",
        encoding="utf-8",
    )
    args = ("run", str(scenario), "--runs", str(RUNS), "--store", str(store))
    first = cli(*args)
    assert first.returncode == 0, first.stderr[-2000:]
    data = bytearray(store.read_bytes())
    page = 4096
    for start in range(page, len(data), 2 * page):  # every other page after the header's
        data[start : start + page] = bytes([0xA5]) * page
    store.write_bytes(bytes(data))
    assert_refused(cli(*args, "--resume"), "s.sqlite", "damaged")


def test_damaged_store_error_is_an_accelsim_error() -> None:
    assert issubclass(DamagedStoreError, acs.AccelsimError)


def test_two_processes_creating_one_parquet_store_do_not_clash(tmp_path: Path) -> None:
    """Many writers race to create one store; each either creates it or finds the other's
    manifest. Before, they shared one temporary file name: a writer's rename found the
    file gone (FileNotFoundError) or published another's half-written file."""
    for attempt in range(20):
        path = tmp_path / f"race{attempt}.parquet"
        barrier = threading.Barrier(4)
        errors: list[BaseException] = []

        def create(
            path: Path = path,
            barrier: threading.Barrier = barrier,
            errors: list[BaseException] = errors,
        ) -> None:
            barrier.wait()
            try:
                ParquetStore.create(path, META, resume=True)
            except BaseException as exc:  # any failure is the test's finding
                errors.append(exc)

        threads = [threading.Thread(target=create) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert sorted(p.name for p in path.iterdir()) == ["_manifest.json"]  # no stray .tmp


def test_a_second_creator_without_resume_finds_the_first_ones_study(tmp_path: Path) -> None:
    path = tmp_path / "s.parquet"
    open_store(path, META, resume=False)
    with pytest.raises(FileExistsError, match="already holds a study"):
        open_store(path, META, resume=False)


def test_chunk_digests_see_every_bit() -> None:
    from accelsim.study._store import chunk_digest

    values = np.array([0.0, 1.0, np.nan])
    base = chunk_digest(0, {"m": values}, {})
    flipped = values.copy()
    flipped.view(np.uint64)[1] ^= 1  # the last bit of the mantissa
    assert chunk_digest(0, {"m": flipped}, {}) != base
    assert chunk_digest(0, {"m": -values}, {}) != base  # the sign of 0.0 and of the NaN
    assert chunk_digest(0, {}, {"m": values}) != base  # a metric is not an input
