"""Replay of job traces: read a CSV of jobs (submit time, chips, duration) into job specs.

Column names are mappable, so public GPU-cluster traces load with a mapping (presets in
:data:`TRACE_COLUMNS`; formats in ``reference/cluster_traces.md``). Every bad row is
reported with its line number and reason, all at once; none is dropped silently.

Conventions: the recorded duration (end minus start) is taken as the job's failure-free work
on a speed-1 pool; submission times are shifted so that the earliest is 0 (traces use
epoch or calendar times); jobs are sorted by submission time, ties kept in file order, and
numbered 0, 1, ... in that order (trace ids are often strings, so they are not used).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from os import PathLike
from pathlib import Path
from typing import Literal

from accelsim.engines.cluster.des._specs import JobSpec
from accelsim.errors import AccelsimError

TimeUnit = Literal["s", "min", "h"]
_HOURS_PER_UNIT: Mapping[str, float] = {"s": 1.0 / 3600.0, "min": 1.0 / 60.0, "h": 1.0}

FIELDS = ("submit", "chips", "duration", "priority", "chip_type", "estimate", "user")
"""Fields a trace may supply: the first three are required; ``user`` (who submitted the
job) is read only when asked (:func:`read_trace`'s ``users``)."""

TRACE_COLUMNS: Mapping[str, Mapping[str, str]] = {
    # Helios cluster_log.csv (SC'21): submit_time is a calendar time, duration in seconds.
    "helios": {"submit": "submit_time", "chips": "gpu_num", "duration": "duration"},
    # Acme trace_seren.csv / trace_kalos.csv (NSDI'24): same names as Helios.
    "acme": {"submit": "submit_time", "chips": "gpu_num", "duration": "duration"},
}
"""Column mappings for public traces whose job tables are CSV (see cluster_traces.md).

Philly's job log is JSON with per-attempt times and Alibaba PAI's task table has fractional
GPUs (``plan_gpu`` in percent) and no duration column: convert those to CSV first.
"""


MAX_PROBLEMS = 1000
"""Bad rows collected before reading stops: a file of millions of bad rows is reported in
bounded memory."""


class TraceError(AccelsimError, ValueError):
    """A trace file with missing columns or bad rows; the message lists the bad lines (the
    first :data:`MAX_PROBLEMS`, where reading stops)."""

    def __init__(self, path: str, problems: Sequence[tuple[int, str]]) -> None:
        shown = "\n".join(f"  line {line}: {reason}" for line, reason in problems[:20])
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        count = f"{len(problems)}" if len(problems) < MAX_PROBLEMS else f"at least {MAX_PROBLEMS}"
        super().__init__(f"{path}: {count} bad row(s)\n{shown}{more}")
        self.problems = list(problems)


def count_rows(path: str | PathLike[str]) -> tuple[int, bool]:
    """Rows after the header of a CSV file, counted from its line breaks without parsing it
    (~0.1 s per 100 MB), and whether that count is exact: it is when the file has no quote
    (so no field holds a line break) and no empty line (which the CSV reader skips);
    otherwise it is an upper bound. [count]"""
    lines, exact, tail, last = 0, True, b"\n", b""
    with Path(path).open("rb") as handle:
        while chunk := handle.read(1 << 20):
            lines += chunk.count(b"\n")
            joined = tail + chunk
            if exact and (b'"' in chunk or b"\n\n" in joined or b"\n\r\n" in joined):
                exact = False
            tail, last = joined[-2:], chunk[-1:]
    if last not in (b"", b"\n"):
        lines += 1  # a last line without a line break
    return max(lines - 1, 0), exact


def _number(text: str) -> float:
    """A float, or a calendar time as POSIX seconds (naive times taken as UTC)."""
    try:
        return float(text)
    except ValueError:
        stamp = datetime.fromisoformat(text.strip())
        if stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=UTC)
        return stamp.timestamp()


def read_trace(
    path: str | PathLike[str],
    *,
    columns: Mapping[str, str] | None = None,
    time_unit: TimeUnit = "s",
    pools_by_chip_type: Mapping[str, Sequence[int]] | None = None,
    skip_zero: bool = False,
    template: JobSpec | None = None,
    users: list[str] | None = None,
    max_jobs: int | None = None,
) -> list[JobSpec]:
    """Read jobs from a CSV file.

    Parameters
    ----------
    path : path-like
        CSV file with a header row.
    columns : mapping or None
        Field (one of :data:`FIELDS`) to column name; unmapped fields use their own name.
        ``submit``, ``chips`` and ``duration`` are required; ``priority`` (integer),
        ``chip_type`` and ``estimate`` (runtime estimate, same unit as duration) optional.
        A preset from :data:`TRACE_COLUMNS` works as is.
    time_unit : {"s", "min", "h"}
        Unit of submission times, durations and estimates. Submission times may also be
        ISO calendar times (as in Helios), read as seconds.
    pools_by_chip_type : mapping or None
        Pool indices each chip type may run on; required when ``chip_type`` is mapped.
    skip_zero : bool
        Skip rows with zero chips or zero duration (CPU-only or instantly failed jobs, common
        in public traces) instead of reporting them as bad.
    template : JobSpec or None
        Supplies checkpointing, restart, whole_domains and preemptible for every job.
    users : list or None
        If given, each job's ``user`` text is appended to it in job order (``""`` without a
        ``user`` column).
    max_jobs : int or None
        Refuse a trace of more jobs, in bounded time and memory: on the row count before
        parsing (:func:`count_rows`) where that count is exact and every row must be a job
        (``skip_zero`` false), else as soon as the reading passes ``max_jobs`` jobs.

    Returns
    -------
    list of JobSpec
        Sorted by submission time, the first at 0, numbered from 0.

    Raises
    ------
    TraceError
        Listing every bad row (line number and reason), or the missing columns.
    ValueError
        More than ``max_jobs`` jobs.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = Path(d, "t.csv")
    ...     _ = f.write_text("submit_time,gpu_num,duration\\n7200,8,3600\\n3600,1,60\\n")
    ...     jobs = read_trace(f, columns=TRACE_COLUMNS["helios"])
    >>> [(j.job_id, j.submit_hours, j.chips, j.work_hours) for j in jobs]
    [(0, 0.0, 1, 0.01666...), (1, 1.0, 8, 1.0)]
    """
    names = {field: field for field in FIELDS} | dict(columns or {})
    unknown = set(names) - set(FIELDS)
    if unknown:
        raise ValueError(f"unknown trace fields {sorted(unknown)}; fields are {FIELDS}")
    hours = _HOURS_PER_UNIT[time_unit]
    t = template or JobSpec(0, 0.0, 1, 1.0)
    if max_jobs is not None and not skip_zero:
        count, exact = count_rows(path)
        if exact and count > max_jobs:
            raise ValueError(
                f"{path}: {count:,} rows, above the cap of {max_jobs:,} jobs per run "
                "(refused on its row count, before parsing)"
            )
    rows = _read_rows(path, names, pools_by_chip_type, skip_zero, max_jobs)
    rows.sort(key=lambda r: (r[0], r[1]))
    first = rows[0][0] if rows else 0.0
    if users is not None:
        users.extend(r[-1] for r in rows)
    return [
        JobSpec(
            i,
            (submit - first) * hours,
            chips,
            work * hours,
            prio,
            pools,
            None if estimate is None else estimate * hours,
            t.whole_domains,
            t.checkpoint_interval_hours,
            t.checkpoint_write_hours,
            t.restart_hours,
            t.preemptible,
        )
        for i, (submit, _, chips, work, prio, pools, estimate, _) in enumerate(rows)
    ]


_Row = tuple[float, int, int, float, int, tuple[int, ...] | None, float | None, str]
"""(submit, line, chips, duration, priority, pools, estimate, user) of one job, in the
trace's time unit."""


def _read_rows(
    path: str | PathLike[str],
    names: Mapping[str, str],
    pools_by_chip_type: Mapping[str, Sequence[int]] | None,
    skip_zero: bool,
    max_jobs: int | None = None,
) -> list[_Row]:
    """The jobs of the CSV file in file order, with their line numbers (times in the
    trace's unit); the bad rows (up to :data:`MAX_PROBLEMS`) are collected into one
    :class:`TraceError`, and more than ``max_jobs`` jobs stop the reading.

    ``names`` maps every field of :data:`FIELDS` to its column; the other arguments are
    :func:`read_trace`'s.
    """
    rows: list[_Row] = []
    problems: list[tuple[int, str]] = []
    with Path(path).open(newline="") as handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames or []
        required = [names[f] for f in ("submit", "chips", "duration")]
        missing = [c for c in required if c not in header]
        if missing:
            raise TraceError(str(path), [(1, f"missing columns {missing}; header is {header}")])
        present = {f: names[f] for f in FIELDS if names[f] in header}
        if "chip_type" in present and pools_by_chip_type is None:
            raise ValueError("the trace has a chip_type column: pass pools_by_chip_type")
        for row in reader:
            line = reader.line_num
            try:
                parsed = _row(row, present, pools_by_chip_type)
            except (ValueError, KeyError, TypeError) as exc:
                parsed, reason = None, str(exc)
            else:
                reason = "" if parsed is not None or skip_zero else _ZERO
            if reason:
                problems.append((line, reason))
                if len(problems) >= MAX_PROBLEMS:
                    break
            if parsed is None:
                continue
            user = (row.get(present["user"]) or "").strip() if "user" in present else ""
            rows.append((parsed[0], line, *parsed[1:], user))
            if max_jobs is not None and len(rows) > max_jobs:
                raise ValueError(
                    f"{path}: more than {max_jobs:,} jobs (line {line}), above the cap of "
                    f"{max_jobs:,} jobs per run"
                )
    if problems:
        raise TraceError(str(path), problems)
    return rows


_ZERO = "zero chips or zero duration (skip_zero=True skips)"


def _row(
    row: Mapping[str, str | None],
    present: Mapping[str, str],
    pools_by_chip_type: Mapping[str, Sequence[int]] | None,
) -> tuple[float, int, float, int, tuple[int, ...] | None, float | None] | None:
    """(submit, chips, duration, priority, pools, estimate) of one row; None if zero-sized."""

    def text(field: str) -> str:
        value = row.get(present[field])
        if value is None or value.strip() == "":
            raise ValueError(f"empty {present[field]!r}")
        return value

    submit = _number(text("submit"))
    chips_f = float(text("chips"))
    duration = float(text("duration"))
    for name, value in ((present["submit"], submit), (present["duration"], duration)):
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{name} must be a finite number >= 0, got {value}")
    if not chips_f.is_integer() or chips_f < 0:
        raise ValueError(f"{present['chips']} must be a whole number >= 0, got {chips_f}")
    if chips_f == 0 or duration == 0:
        return None
    prio = int(text("priority")) if "priority" in present else 0
    pools = None
    if "chip_type" in present:
        assert pools_by_chip_type is not None
        kind = text("chip_type")
        if kind not in pools_by_chip_type:
            raise ValueError(f"chip type {kind!r} is not in pools_by_chip_type")
        pools = tuple(pools_by_chip_type[kind])
    estimate = None
    if "estimate" in present:
        estimate = float(text("estimate"))
        if not math.isfinite(estimate) or estimate <= 0:
            raise ValueError(f"{present['estimate']} must be > 0, got {estimate}")
    return submit, int(chips_f), duration, prio, pools, estimate


__all__ = [
    "FIELDS",
    "MAX_PROBLEMS",
    "TRACE_COLUMNS",
    "TimeUnit",
    "TraceError",
    "count_rows",
    "read_trace",
]
