"""A trace over the job cap is refused on its row count, before it is parsed.

Before, a 10-million-row trace was refused after 102 s and 4.7 GB, once every row was a job
spec. The CLI case runs in a child under a memory cap and a time limit (tests/bounded.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.bounded import assert_refused, cli

from accelsim.engines.cluster.des import read_trace
from accelsim.engines.cluster.des._trace import MAX_PROBLEMS, TraceError, count_rows

HEADER = b"submit_time,gpu_num,duration\n"

SCENARIO = """\
name: trace-big
workload: {{kind: trace, path: big.csv, columns: helios, time_unit: s{extra}}}
fleet: [{{chip: a100-80gb, count: 64, provider: on_prem, pricing: on_prem}}]
horizon_days: 7
"""


def test_a_trace_of_two_million_rows_is_refused_on_its_row_count(tmp_path: Path) -> None:
    (tmp_path / "big.csv").write_bytes(HEADER + b"0,8,3600\n" * 2_000_000)
    (tmp_path / "t.yaml").write_text(SCENARIO.format(extra=""), encoding="utf-8")
    proc = cli("validate", str(tmp_path / "t.yaml"))
    assert_refused(proc, "2,000,000 rows", "cap of 1,000,000 jobs per run", "before parsing")


@pytest.mark.parametrize(
    ("body", "rows", "exact"),
    [
        (b"1,1,1\n2,1,1\n", 2, True),
        (b"1,1,1\n2,1,1", 2, True),  # no final line break
        (b"", 0, True),
        (b"1,1,1\n\n2,1,1\n", 3, False),  # the empty line is skipped by the reader
        (b'1,1,"1"\n2,1,1\n', 2, False),  # a quote: a field might hold a line break
        (b"1,1,1\r\n\r\n2,1,1\r\n", 3, False),
    ],
)
def test_count_rows_is_exact_only_without_quotes_or_empty_lines(
    tmp_path: Path, body: bytes, rows: int, exact: bool
) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes(HEADER + body)
    assert count_rows(path) == (rows, exact)


def test_an_inexact_count_falls_back_to_stopping_once_past_the_cap(tmp_path: Path) -> None:
    """Quoted fields make the line count an upper bound only: the reading stops at the
    first job past the cap instead of reading on."""
    path = tmp_path / "t.csv"
    path.write_bytes(HEADER + b'0,8,"3600"\n' * 50)
    with pytest.raises(ValueError, match="more than 10 jobs \\(line 12\\)"):
        read_trace(path, columns={"submit": "submit_time", "chips": "gpu_num"}, max_jobs=10)
    assert len(read_trace(path, columns={"submit": "submit_time", "chips": "gpu_num"})) == 50


def test_rows_skipped_as_zero_do_not_count_against_the_cap(tmp_path: Path) -> None:
    """With skip_zero, rows are not jobs: 30 CPU-only rows and 5 jobs fit a cap of 10."""
    path = tmp_path / "t.csv"
    path.write_bytes(HEADER + b"0,0,3600\n" * 30 + b"0,8,3600\n" * 5)
    columns = {"submit": "submit_time", "chips": "gpu_num"}
    assert len(read_trace(path, columns=columns, skip_zero=True, max_jobs=10)) == 5
    with pytest.raises(ValueError, match="35 rows, above the cap of 10"):
        read_trace(path, columns=columns, max_jobs=10)


def test_a_file_of_bad_rows_is_reported_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes(HEADER + b"x,8,3600\n" * (MAX_PROBLEMS * 5))
    with pytest.raises(TraceError, match=f"at least {MAX_PROBLEMS} bad row") as info:
        read_trace(path, columns={"submit": "submit_time", "chips": "gpu_num"})
    assert len(info.value.problems) == MAX_PROBLEMS
