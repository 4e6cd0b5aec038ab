"""``simulate`` checks that a scenario can run before any work (issue 15).

What only the file system or the catalog can tell (a missing trace, a job larger than the
fleet, a stream over the job cap) is refused by :func:`accelsim.engines.check_runnable`,
which ``simulate`` calls once before a store is written or a chunk is dispatched; an
overloaded stream warns there too, once, in the caller's process.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

import accelsim as acs
from accelsim.engines import OverloadWarning
from accelsim.errors import AccelsimError
from accelsim.study import _simulate


def _trace_scenario(path: Path) -> acs.Scenario:
    return acs.Scenario(
        name="trace",
        workload=acs.Trace(path=str(path)),
        fleet=[acs.Pool(chip="h100-sxm", count=16, provider="aws")],
        horizon_days=1.0,
    )


@pytest.fixture
def chunks_run(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """The chunks the study runs (recorded, then run as usual)."""
    ran: list[tuple[int, int]] = []
    real = _simulate._run_chunk

    def spy(study: Any, start: int, stop: int) -> Any:
        ran.append((start, stop))
        return real(study, start, stop)

    monkeypatch.setattr(_simulate, "_run_chunk", spy)
    return ran


def test_a_missing_trace_fails_before_any_chunk_store_or_pool(
    tmp_path: Path, chunks_run: list[tuple[int, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[object] = []
    real_open = _simulate.open_executor

    def spy_open(executor: Any) -> Any:
        opened.append(executor)
        return real_open(executor)

    monkeypatch.setattr(_simulate, "open_executor", spy_open)
    s = _trace_scenario(tmp_path / "missing.csv")
    store = tmp_path / "study.sqlite"
    with pytest.raises(AccelsimError, match="no such trace file"):
        acs.simulate(s, runs=4, seed=1, executor="processes", store=store, progress=False)
    assert chunks_run == []
    assert opened == []  # no process pool was started
    assert not store.exists()  # nor a manifest written


def test_a_trace_job_larger_than_the_fleet_fails_before_any_chunk(
    tmp_path: Path, chunks_run: list[tuple[int, int]]
) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text("submit,chips,duration\n0,4,3600\n60,32,3600\n", encoding="utf-8")
    with pytest.raises(AccelsimError, match="asks for 32 chips"):
        acs.simulate(_trace_scenario(path), runs=4, seed=1, progress=False)
    assert chunks_run == []


def test_an_overload_warns_once_before_the_first_chunk(chunks_run: list[tuple[int, int]]) -> None:
    """Four chunks, one warning, raised before any of them ran."""
    s = acs.Scenario(
        name="busy",
        workload=acs.JobStream(interarrival_hours=0.5, chips=8, duration_hours=4.0),
        fleet=[acs.Pool(chip="h100-sxm", count=16, provider="aws")],
        horizon_days=0.5,
    )
    seen_at_first_chunk: list[int] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        real = _simulate._run_chunk

        def first(study: Any, start: int, stop: int) -> Any:
            if not seen_at_first_chunk:
                seen_at_first_chunk.append(len(caught))
            return real(study, start, stop)

        _simulate._run_chunk = first  # type: ignore[assignment]
        try:
            res = acs.simulate(s, runs=8, seed=1, chunk_runs=2, progress=False)
        finally:
            _simulate._run_chunk = real  # type: ignore[assignment]
    overloads = [w for w in caught if issubclass(w.category, OverloadWarning)]
    assert len(overloads) == 1, [str(w.message) for w in overloads]
    assert seen_at_first_chunk == [1]
    assert len(chunks_run) == 4
    assert (res.samples("offered_load") > 1).all()


def test_compare_checks_every_option_before_running_any(
    tmp_path: Path, chunks_run: list[tuple[int, int]]
) -> None:
    good = acs.Scenario(
        name="good",
        workload=acs.JobStream(interarrival_hours=4.0, chips=1, duration_hours=1.0),
        fleet=[acs.Pool(chip="h100-sxm", count=16, provider="aws")],
        horizon_days=1.0,
    )
    with pytest.raises(AccelsimError, match="no such trace file"):
        acs.compare([good, _trace_scenario(tmp_path / "missing.csv")], runs=2, progress=False)
    assert chunks_run == []


def test_sweep_lists_every_point_that_cannot_run_before_running_any(
    tmp_path: Path, chunks_run: list[tuple[int, int]]
) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text("submit,chips,duration\n0,4,3600\n60,32,3600\n", encoding="utf-8")
    grid = {"fleet.0.count": [64, 16, 8]}
    with pytest.raises(ValueError, match=r"2 of 3 sweep points are invalid") as err:
        acs.sweep(_trace_scenario(path), grid=grid, runs=2, progress=False)
    assert "'fleet.0.count': 16" in str(err.value)
    assert "'fleet.0.count': 8" in str(err.value)
    assert "asks for 32 chips" in str(err.value)
    assert chunks_run == []


def test_chip_types_on_a_trace_without_that_column_are_refused(
    tmp_path: Path, chunks_run: list[tuple[int, int]]
) -> None:
    """The mapping would pin each job to its chip's pools; with no column to read it from,
    every job would run anywhere, the mapping silently ignored."""
    path = tmp_path / "jobs.csv"
    path.write_text("submit,chips,duration,gpu\n0,4,3600,A100\n", encoding="utf-8")
    fleet = [
        acs.Pool(chip="h100-sxm", count=8, provider="aws"),
        acs.Pool(chip="a100-80gb", count=8, provider="aws"),
    ]
    unmapped = acs.Trace(path=str(path), chip_types={"A100": "a100-80gb"})
    s = acs.Scenario(name="typed", workload=unmapped, fleet=fleet, horizon_days=1.0)
    with pytest.raises(AccelsimError, match="has no 'chip_type' column"):
        acs.simulate(s, runs=2, seed=1, progress=False)
    assert chunks_run == []
    mapped = unmapped.model_copy(update={"columns": {"chip_type": "gpu"}})
    res = acs.simulate(s.replace("workload", mapped), runs=2, seed=1, progress=False)
    assert res.runs == 2
