"""sweep: one SweepResult (tidy table, every point's runs), every invalid point in one error."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

import accelsim as acs
from accelsim.study import _simulate as study
from accelsim.study import _sweep as sweeping
from accelsim.study._runner import open_executor
from accelsim.study._sweep import SweepResult

RATE = "assumptions.engineer_usd_per_hour"
GRID: dict[str, list[Any]] = {"fleet.0.count": [32, 64], "fleet.0.pricing": ["on_demand", "spot"]}
RUNS = 60


def base() -> acs.Scenario:
    return acs.Scenario(
        name="base",
        workload=acs.TrainingRun(params=7e9, tokens=1e11),
        fleet=[acs.Pool(chip="h100-sxm", count=64, provider="gcp")],
    )


def test_sweep_returns_a_sweep_result_whose_table_is_one_row_per_point_and_metric() -> None:
    """One return type; rows (and to_pandas) in grid (product) order, then metric order."""
    sw = acs.sweep(base(), GRID, runs=RUNS, seed=3)
    assert isinstance(sw, SweepResult)
    points = [(32, "on_demand"), (32, "spot"), (64, "on_demand"), (64, "spot")]
    metrics = ["tco_usd", "time_to_train_days"]
    assert [(r["fleet.0.count"], r["fleet.0.pricing"], r["metric"]) for r in sw.rows] == [
        (*p, m) for p in points for m in metrics
    ]
    assert list(sw.rows[0]) == [*GRID, "metric", "runs", "mean", "std_error", "p5", "p50", "p95"]
    assert sw.keys == tuple(GRID)
    assert [tuple(p.values()) for p in sw.points] == points
    frame = sw.to_pandas()
    assert list(frame.columns) == list(sw.rows[0])
    assert frame.to_dict("records") == sw.rows
    assert (frame["runs"] == RUNS).all()


def test_each_point_is_the_study_of_that_scenario_with_the_sweep_seed() -> None:
    """Point j's samples are exactly ``simulate(point_j, runs, seed)``: one seed root for
    every point (common random numbers), so run i of every point shares its input draws."""
    sw = acs.sweep(base(), GRID, runs=RUNS, seed=5)
    for j, point in enumerate(sw.points):
        s = base()
        for k, v in point.items():
            s = s.replace(k, v)
        alone = acs.simulate(s, runs=RUNS, seed=5, progress=False)
        assert sw.result(j) == alone  # the whole study, bit for bit
        np.testing.assert_array_equal(sw.samples(point, "tco_usd"), alone.samples("tco_usd"))
        np.testing.assert_array_equal(sw.results[j].inputs[RATE], sw.results[0].inputs[RATE])
    assert sw.result({"fleet.0.count": 64, "fleet.0.pricing": "spot"}) is sw.results[3]
    assert sw.result(1) is sw.results[1]
    assert sw.samples(-1, "tco_usd") is sw.results[3].samples("tco_usd")
    with pytest.raises(KeyError, match="no sweep point"):
        sw.result({"fleet.0.count": 48, "fleet.0.pricing": "spot"})
    with pytest.raises(KeyError, match="every path"):
        sw.result({"fleet.0.count": 64})
    with pytest.raises(IndexError, match="point 4 of a sweep of 4 points"):
        sw.result(4)
    with pytest.raises(KeyError, match="no metric 'nope'"):
        sw.samples(0, "nope")


def test_rows_summarise_the_samples() -> None:
    """Each row's mean, standard error and quantiles are those of its point's samples
    (the same floating-point operations, so equal exactly)."""
    sw = acs.sweep(base(), {"fleet.0.count": [32, 64]}, runs=RUNS, seed=2)
    for row in sw.rows:
        x = sw.samples({"fleet.0.count": row["fleet.0.count"]}, row["metric"])
        assert row["mean"] == float(np.mean(x))
        assert row["std_error"] == float(np.std(x, ddof=1) / np.sqrt(x.size))
        assert [row["p5"], row["p50"], row["p95"]] == np.quantile(x, [0.05, 0.5, 0.95]).tolist()


def test_a_sweep_of_one_run_per_point_has_no_nan_but_the_standard_error() -> None:
    """runs=1: quantiles are the run's value; the standard error is missing (NaN in the
    table, the pandas missing value), never a number made up."""
    sw = acs.sweep(base(), {"fleet.0.count": [32, 64]}, runs=1, seed=2, metrics=["tco_usd"])
    frame = sw.to_pandas()
    for (_, row), res in zip(frame.iterrows(), sw.results, strict=True):
        x = float(res.samples("tco_usd")[0])
        assert row["mean"] == row["p5"] == row["p50"] == row["p95"] == x
    assert frame["std_error"].isna().all()
    assert frame.drop(columns="std_error").notna().all().all()


def test_an_unknown_metric_or_the_old_samples_flag_is_an_error() -> None:
    with pytest.raises(KeyError, match="no metric 'tco'"):
        acs.sweep(base(), {"fleet.0.count": [32]}, runs=10, seed=1, metrics=["tco"])
    with pytest.raises(TypeError, match="samples"):
        acs.sweep(base(), {"fleet.0.count": [32]}, runs=10, seed=1, samples=True)


def test_every_invalid_point_is_reported_before_anything_runs() -> None:
    """Two of six points are invalid: the error names both, with why, and no point ran
    (the progress callback was never called)."""
    calls: list[tuple[int, int]] = []
    grid: dict[str, list[Any]] = {
        "fleet.0.count": [0, 64, -8],
        "fleet.0.pricing": ["on_demand", "spot"],
    }
    with pytest.raises(ValueError, match="4 of 6 sweep points are invalid") as info:
        acs.sweep(base(), grid, runs=10, seed=1, progress=lambda d, t: calls.append((d, t)))
    text = str(info.value)
    for count in (0, -8):
        for pricing in ("on_demand", "spot"):
            assert f"{{'fleet.0.count': {count}, 'fleet.0.pricing': '{pricing}'}}" in text
    assert "'fleet.0.count': 64" not in text
    assert calls == []


def test_bad_paths_engines_and_grids_are_reported() -> None:
    with pytest.raises(ValueError, match=r"\{'fleet.3.count': 8\}: no field at path") as info:
        acs.sweep(base(), {"fleet.3.count": [8]}, runs=10, seed=1)
    assert "1 of 1 sweep points" in str(info.value)
    with pytest.raises(
        ValueError, match=r"(?s)2 of 2 sweep points.*keep_jobs needs the DES engine"
    ):
        acs.sweep(
            base(), {"fleet.0.count": [8, 16]}, runs=10, seed=1, engine="analytic", keep_jobs=True
        )
    with pytest.raises(ValueError, match="non-empty list"):
        acs.sweep(base(), {"fleet.0.count": []}, runs=10, seed=1)
    with pytest.raises(ValueError, match="non-empty list"):
        acs.sweep(base(), {"name": "abc"}, runs=10, seed=1)
    with pytest.raises(ValueError, match="non-empty list"):
        acs.sweep(base(), {"fleet.0.count": np.array([], dtype=int)}, runs=10, seed=1)
    sw = acs.sweep(base(), {"fleet.0.count": np.array([16, 32])}, runs=10, seed=1)
    assert [r["fleet.0.count"] for r in sw.rows] == [16, 16, 32, 32]  # any iterable of values


def test_a_store_is_rejected_with_the_alternative(tmp_path: Any) -> None:
    with pytest.raises(ValueError, match=r"one store per point"):
        acs.sweep(base(), {"fleet.0.count": [8]}, runs=10, seed=1, store=tmp_path / "s")
    with pytest.raises(ValueError, match="store="):
        acs.sweep(base(), {"fleet.0.count": [8]}, runs=10, seed=1, resume=True)
    assert not (tmp_path / "s").exists()


def test_the_executor_is_opened_once_and_results_do_not_depend_on_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``executor="processes"`` is opened once for the sweep (here stood in for by a thread
    pool, so no process is spawned), every point runs on that one executor, and the rows
    equal the in-process rows exactly."""
    opened: list[object] = []
    real = open_executor

    @contextmanager
    def spy(executor: Any, workers: int | None = None) -> Iterator[Any]:
        opened.append(executor)
        if executor == "processes":
            with ThreadPoolExecutor(max_workers=2) as pool:
                yield pool
        else:
            with real(executor) as pool:
                yield pool

    monkeypatch.setattr(study, "open_executor", spy)
    monkeypatch.setattr(sweeping, "open_executor", spy)
    sw = acs.sweep(base(), GRID, runs=RUNS, seed=6, executor="processes")
    assert opened.count("processes") == 1
    assert len(opened) == 1 + 4  # the sweep's, then each point hands that pool on
    assert all(isinstance(e, ThreadPoolExecutor) for e in opened[1:])
    monkeypatch.setattr(study, "open_executor", real)
    monkeypatch.setattr(sweeping, "open_executor", real)
    assert sw == acs.sweep(base(), GRID, runs=RUNS, seed=6)
