"""Resumable studies: a store of one Parquet file per chunk, killed mid-way and resumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import accelsim as acs
from accelsim.engines.inputs import BLOCK_RUNS
from accelsim.store import MANIFEST

RUNS = 6 * BLOCK_RUNS


def scenario(name: str = "store") -> acs.Scenario:
    return acs.Scenario(
        name=name,
        workload=acs.TrainingRun(params=7e9, tokens=1e11),
        fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")],
    )


def assert_same(a: acs.Result, b: acs.Result) -> None:
    """Every metric and input array equal bit for bit, in the same order."""
    assert list(a.data) == list(b.data)
    assert list(a.inputs) == list(b.inputs)
    for m in a.data:
        np.testing.assert_array_equal(a.samples(m), b.samples(m), err_msg=m)
    for k in a.inputs:
        np.testing.assert_array_equal(a.inputs[k], b.inputs[k], err_msg=k)


# The child runs the study with a store; its progress callback pauses after each chunk (it
# is called after the chunk is on disk), standing in for a slow study so that the kill
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


def test_killed_study_resumes_bit_identical(tmp_path: Path) -> None:
    """SIGKILL a study once a chunk is on disk; resuming gives the uninterrupted result.

    The kill must leave the study unfinished (fewer than 6 part files), else the test
    would not test a resume; every finished part must be readable; and the resumed result
    must equal an uninterrupted study array for array (exact equality: streams are
    addressed by block, so nothing may differ).
    """
    store = tmp_path / "study.parquet"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD.format(runs=RUNS), str(store)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while not list(store.glob("part-*.parquet")):
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
    parts = sorted(store.glob("part-*.parquet"))
    assert 1 <= len(parts) < 6, [p.name for p in parts]
    # a half-written chunk from a crash is hidden and ignored
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
    assert calls[0] == (len(parts) * BLOCK_RUNS, RUNS)
    assert len(calls) == 1 + 6 - len(parts)
    assert len(list(store.glob("part-*.parquet"))) == 6


def test_store_files_hold_metrics_inputs_and_manifest(tmp_path: Path) -> None:
    """The part files read back as one table equal to the result; the manifest says what ran."""
    import pandas as pd

    store = tmp_path / "s.parquet"
    res = acs.simulate(scenario(), runs=2 * BLOCK_RUNS + 10, seed=3, store=store)
    frame = pd.read_parquet(store).sort_values("run")
    np.testing.assert_array_equal(frame["run"].to_numpy(), np.arange(res.runs))
    for m in res.metrics:
        np.testing.assert_array_equal(frame[f"metric/{m}"].to_numpy(), res.samples(m))
    for k, v in res.inputs.items():
        np.testing.assert_array_equal(frame[f"input/{k}"].to_numpy(), v)
    meta = json.loads((store / MANIFEST).read_text())
    assert meta["entropy"] == 3
    assert meta["runs"] == res.runs
    assert meta["chunk_runs"] == BLOCK_RUNS
    assert meta["engine"] == "analytic"
    assert meta["numpy_version"] == np.__version__
    assert len(meta["scenario_sha256"]) == 64


def test_existing_store_is_never_overwritten(tmp_path: Path) -> None:
    store = tmp_path / "s.parquet"
    acs.simulate(scenario(), runs=100, seed=1, store=store)
    before = {p.name: p.stat().st_mtime_ns for p in store.iterdir()}
    with pytest.raises(FileExistsError, match="resume=True"):
        acs.simulate(scenario(), runs=100, seed=1, store=store)
    assert {p.name: p.stat().st_mtime_ns for p in store.iterdir()} == before


def test_empty_directory_is_a_fresh_store(tmp_path: Path) -> None:
    store = tmp_path / "empty"
    store.mkdir()
    res = acs.simulate(scenario(), runs=100, seed=1, store=store)
    assert (store / "part-000000.parquet").exists()
    assert res.runs == 100


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"seed": 2}, "entropy"),
        ({"runs": 200}, "runs"),
        ({"chunk_runs": 2 * BLOCK_RUNS}, "chunk_runs"),
        ({"scenario": scenario("other")}, "scenario_sha256"),
    ],
)
def test_resume_refuses_a_different_study(
    tmp_path: Path, change: dict[str, object], named: str
) -> None:
    """Resuming with another seed, size, chunking or scenario names what differs."""
    store = tmp_path / "s.parquet"
    acs.simulate(scenario(), runs=100, seed=1, store=store)
    kwargs: dict[str, object] = {"scenario": scenario(), "runs": 100, "seed": 1}
    kwargs |= change
    with pytest.raises(ValueError, match=named):
        acs.simulate(store=store, resume=True, **kwargs)  # type: ignore[arg-type]


def test_resume_of_a_finished_study_runs_nothing_and_reuses_the_seed(tmp_path: Path) -> None:
    """seed=None on resume takes the stored seed; a complete store is read, not rerun."""
    store = tmp_path / "s.parquet"
    first = acs.simulate(scenario(), runs=BLOCK_RUNS + 5, seed=None, store=store)
    stamps = {p.name: p.stat().st_mtime_ns for p in store.iterdir()}
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
    assert {p.name: p.stat().st_mtime_ns for p in store.iterdir()} == stamps


def test_auto_study_resumes_from_its_store(tmp_path: Path) -> None:
    """A runs="auto" study stored and resumed stops where the uninterrupted one stops."""
    store = tmp_path / "auto.parquet"
    kw: dict[str, object] = {"runs": "auto", "target": {"tco_usd": 0.02}, "seed": 5}
    first = acs.simulate(scenario(), store=store, **kw)  # type: ignore[arg-type]
    assert first.runs > BLOCK_RUNS  # several chunks, so dropping one below means something
    assert first.extras["precision"]["tco_usd"]["met"]
    last = max(store.glob("part-*.parquet"))
    last.unlink()
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


def test_missing_pyarrow_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(ImportError, match=r"pip install 'accelsim\[store\]'"):
        acs.simulate(scenario(), runs=100, seed=1, store=tmp_path / "s")
    assert not os.path.exists(tmp_path / "s")


def test_seed_sequence_with_list_entropy_is_stored_and_reused(tmp_path: Path) -> None:
    """A SeedSequence of several words is recorded as a JSON list and resumed exactly."""
    store = tmp_path / "s.parquet"
    seed = np.random.SeedSequence([1, 2, 3])
    first = acs.simulate(scenario(), runs=100, seed=seed, store=store)
    assert json.loads((store / MANIFEST).read_text())["entropy"] == [1, 2, 3]
    (store / "part-000000.parquet").unlink()
    again = acs.simulate(scenario(), runs=100, store=store, resume=True)
    assert_same(first, again)
