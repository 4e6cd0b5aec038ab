"""Trace replay: column mapping, units, sorting and the shift to 0, bad rows by line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from accelsim.engines.cluster.des import JobSpec, PoolSpec, run
from accelsim.engines.cluster.des._trace import TRACE_COLUMNS, TraceError, read_trace

DATA = Path(__file__).parent / "data"


def test_helios_layout_loads_with_its_preset() -> None:
    """Calendar submit times, seconds; the CPU-only and zero-length rows are skipped on request.

    Sorted by submission with ties in file order, shifted so the first is 0, numbered from 0.
    """
    jobs = read_trace(DATA / "helios_like.csv", columns=TRACE_COLUMNS["helios"], skip_zero=True)
    assert [(j.job_id, j.submit_hours, j.chips, j.work_hours) for j in jobs] == [
        (0, 0.0, 1, 0.25),
        (1, pytest.approx(10 / 60), 8, 2.0),
    ]


def test_zero_rows_are_errors_unless_skipped() -> None:
    with pytest.raises(TraceError) as err:
        read_trace(DATA / "helios_like.csv", columns=TRACE_COLUMNS["helios"])
    assert [line for line, _ in err.value.problems] == [3, 5]


def test_every_bad_row_is_reported_with_its_line() -> None:
    with pytest.raises(TraceError) as err:
        read_trace(DATA / "bad_rows.csv")
    assert [line for line, _ in err.value.problems] == [3, 4, 5, 6, 7, 8]
    message = str(err.value)
    assert "6 bad row(s)" in message
    assert "line 3: chips must be a whole number >= 0, got -2.0" in message
    assert "line 6: empty 'duration'" in message


def test_missing_columns_name_the_header() -> None:
    with pytest.raises(TraceError, match=r"missing columns \['gpu_num'\]"):
        read_trace(DATA / "bad_rows.csv", columns={"chips": "gpu_num"})


def test_mapped_columns_units_chip_types_and_priorities() -> None:
    """Minutes; chip types map to pools; the template supplies checkpointing."""
    template = JobSpec(0, 0.0, 1, 1.0, checkpoint_interval_hours=0.5, restart_hours=0.1)
    jobs = read_trace(
        DATA / "typed.csv",
        columns={
            "submit": "arrival_min",
            "chips": "gpus",
            "duration": "runtime_min",
            "chip_type": "gpu_type",
            "priority": "prio",
        },
        time_unit="min",
        pools_by_chip_type={"a100": (1,), "v100": (0, 1)},
        template=template,
    )
    assert [(j.submit_hours, j.chips, j.work_hours, j.pools, j.priority) for j in jobs] == [
        (0.0, 1, 0.5, (0, 1), 0),
        (pytest.approx(1 / 6), 8, 2.0, (1,), 2),
        (pytest.approx(1 / 6), 2, 1.0, (1,), 1),
    ]
    assert all(j.checkpoint_interval_hours == 0.5 and j.restart_hours == 0.1 for j in jobs)


def test_unknown_chip_type_is_a_bad_row() -> None:
    with pytest.raises(TraceError, match="line 2: chip type 'a100' is not in"):
        read_trace(
            DATA / "typed.csv",
            columns={
                "submit": "arrival_min",
                "chips": "gpus",
                "duration": "runtime_min",
                "chip_type": "gpu_type",
            },
            pools_by_chip_type={"v100": (0,)},
        )


def test_a_trace_replays_through_the_engine() -> None:
    """The loaded jobs run: 1 then 8 chips on 8 chips; the 8-chip job waits for the first."""
    jobs = read_trace(DATA / "helios_like.csv", columns=TRACE_COLUMNS["helios"], skip_zero=True)
    res = run(
        [PoolSpec("p", chips=8)],
        jobs,
        scheduler="fifo",
        horizon_hours=10.0,
        seed_seq=np.random.SeedSequence(0),
        keep_jobs=True,
    )
    assert res.jobs is not None
    assert [r.first_start_hours for r in res.jobs] == [0.0, 0.25]
