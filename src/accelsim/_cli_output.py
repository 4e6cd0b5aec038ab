"""Rendering of the ``accelsim`` command's output: rich or plain tables, JSON and CSV."""

from __future__ import annotations

import csv
import json
import math
import sys
from typing import Any, TextIO

import numpy as np
import typer
from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from accelsim.results import Result, Table, lower_bounds, unused_notes, unused_terms


def _rich(table: Table) -> list[Text | RichTable]:
    """A :class:`~accelsim.results.Table` as rich renderables, drawn from its cells."""
    out: list[Text | RichTable] = [Text(line) for line in table.title.split("\n") if table.title]
    grid = RichTable(show_edge=False, header_style="bold")
    for k, name in enumerate(table.header):
        grid.add_column(name, justify="left" if k == 0 else "right")
    for row in table.rows:
        grid.add_row(*row)
    out.append(grid)
    out += [Text(line) for line in table.note.split("\n") if table.note]
    return out


def _show(content: Table | object, console: Console | None = None) -> None:
    """Print human-readable output: a :class:`Table` as a rich table in a terminal (or on
    ``console``), as plain text when stdout is piped; anything else as its text."""
    if console is None and not sys.stdout.isatty():
        print(content)
        return
    console = console or Console(highlight=False)
    for part in _rich(content) if isinstance(content, Table) else [Text(str(content))]:
        console.print(part)


def _format(json_out: bool, csv_out: bool) -> str:
    if json_out and csv_out:
        raise typer.BadParameter("choose one of --json and --csv", param_hint="'--json/--csv'")
    return "json" if json_out else "csv" if csv_out else "table"


def _json(doc: Any) -> str:
    """Valid JSON (RFC 8259 has no NaN or Infinity): a non-finite number becomes null and its
    path is listed under ``"non_finite"`` of its top-level object (of each object of a list),
    a key absent when every number is finite."""

    def clean(node: Any, path: str, paths: list[str]) -> Any:
        if isinstance(node, dict):
            sub = (f"{path}.{k}" if path else str(k) for k in node)
            return {k: clean(v, p, paths) for (k, v), p in zip(node.items(), sub, strict=True)}
        if isinstance(node, list | tuple):
            return [clean(v, f"{path}.{i}" if path else str(i), paths) for i, v in enumerate(node)]
        if isinstance(node, float | np.floating) and not math.isfinite(node):
            paths.append(path)
            return None
        return node

    def top(node: Any) -> Any:
        paths: list[str] = []
        out = clean(node, "", paths)
        if paths and isinstance(out, dict):
            out["non_finite"] = paths
        return out

    out = [top(d) for d in doc] if isinstance(doc, list) else top(doc)
    return json.dumps(out, indent=2, allow_nan=False, default=_plain)


def _plain(value: Any) -> Any:
    """numpy scalars and the like as Python numbers (``None`` when not finite)."""
    number = float(value)
    return number if math.isfinite(number) else None


def _emit(res: Result, fmt: str, file: TextIO | None = None) -> None:
    """A result as a table, JSON summary, or CSV of every run (to stdout or ``file``)."""
    stream = sys.stdout if file is None else file
    if fmt == "json":
        summary = {m: res.stats(m) for m in res.metrics}
        out: dict[str, Any] = {"scenario": res.scenario_name, "runs": res.runs, "metrics": summary}
        # statistics of a run censored at the horizon are lower bounds: named, not hidden
        out["lower_bounds"] = sorted(lower_bounds(res))
        out["unused_terms"] = [vars(term) for term in unused_terms(res)]
        if "fleet_available" in res.extras:  # when the fleet exists: the one rule that applied
            out["fleet_available"] = res.extras["fleet_available"]
        if "precision" in res.extras:
            out["precision"] = res.extras["precision"]
        if "calibration" in res.extras:
            out["calibration"] = res.extras["calibration"]
        print(_json(out), file=stream)
    elif fmt == "csv":
        writer = csv.writer(stream, lineterminator="\n")
        writer.writerow(["run", *res.metrics])
        columns = [res.samples(m) for m in res.metrics]
        for i in range(res.runs):
            writer.writerow([i, *(repr(float(c[i])) for c in columns)])
    else:
        _show(res.as_table())
        if (fleet := res.extras.get("fleet_available")) is not None:
            print(f"fleet: {fleet}", file=stream)
        if (moved := res.price_change_note()) is not None:
            print(moved, file=stream)
        for note in unused_notes(res):
            print(note, file=stream)


# ---------------------------------------------------------------- commands
