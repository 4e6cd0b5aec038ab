"""The study commands' options and steps (``run``, ``compare``, ``sweep``, ``report``).

Part of the ``accelsim`` command (:mod:`accelsim.cli`): the typer option types that only
``run`` takes, and the steps the commands share or delegate: scenario files named once,
results written to ``--out`` and ``--plot``, a comparison printed or dumped as JSON, a
sweep grid read and checked before any point runs, and the command line that reproduces a
report.
"""

from __future__ import annotations

import csv
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np
import typer
from pydantic import ValidationError

from accelsim._cli_output import _emit, _json, _show
from accelsim._yaml import load_yaml, to_plain
from accelsim.catalog import active as active_catalog
from accelsim.engines import check_runnable
from accelsim.errors import AccelsimError
from accelsim.results import (
    SUMMARY_STATS,
    Comparison,
    Result,
    Table,
    format_error,
    format_value,
    lower_bounds,
)
from accelsim.scenario import Goals, Scenario, format_validation_error, load_scenario
from accelsim.study import SweepResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_Runs = Annotated[
    str,
    typer.Option(
        metavar="N|auto", help="A number of runs, or 'auto' to stop once every --target is met."
    ),
]
_Target = Annotated[
    list[str] | None,
    typer.Option(
        metavar="METRIC=REL",
        help="With --runs auto: stop when the 95% half-width of the metric's mean is "
        "this fraction of it, e.g. tco_usd=0.01. Repeatable.",
        show_default=False,
    ),
]
_Plot = Annotated[
    str | None,
    typer.Option(help="Write an ECDF of the main metric to this PNG.", show_default=False),
]
_Out = Annotated[
    str | None,
    typer.Option(
        help="Also write the result to this file: .csv (every run) or .json (summary).",
        show_default=False,
    ),
]
_Design = Annotated[
    str,
    typer.Option(
        metavar="mc|lhs|sobol|antithetic",
        help="How uncertain inputs are drawn (see simulate's design=).",
    ),
]
_Engine = Annotated[
    str,
    typer.Option(
        metavar="auto|analytic|des",
        help="Which engine runs it (see simulate's engine=): 'des' plays a serving "
        "scenario request by request, or a training run on a shared fleet event by event.",
    ),
]
_Store = Annotated[
    str | None,
    typer.Option(
        help="Write each finished chunk here as it completes: a .sqlite/.db file, or "
        "else a directory of Parquet files.",
        show_default=False,
    ),
]
_Resume = Annotated[
    bool, typer.Option("--resume", help="Continue the study in --store (same seed, runs).")
]


def check_file_runnable(s: Scenario, source: str) -> None:
    """What the DES would fail on (trace files, job caps), before any simulation; the
    message names ``source``, the scenario file (or grid point) it comes from."""
    try:
        check_runnable(s, active_catalog())
    except AccelsimError as exc:
        raise AccelsimError(f"{source}: {exc}") from None


def named_scenarios(paths: Sequence[str]) -> dict[str, Scenario]:
    """The scenario files by their names; two files with one name are refused."""
    named: dict[str, Scenario] = {}
    for s in (load_scenario(p) for p in paths):
        if s.name in named:
            raise AccelsimError(f"two scenarios are named {s.name!r}; names must differ")
        named[s.name] = s
    return named


def write_out(res: Result, out: str) -> None:
    """``--out``: every run (.csv) or the summary (.json); the suffix was checked before."""
    kind = Path(out).suffix.lower().lstrip(".")
    with open(out, "w", encoding="utf-8", newline="") as fh:
        _emit(res, kind, fh)
    print(f"wrote {out}", file=sys.stderr)


def write_plot(res: Result, plot: str) -> None:
    """``--plot``: the ECDF of the main metric, saying how many runs have no finite value."""
    from accelsim import plot as plotting

    metric = "time_to_train_days" if "time_to_train_days" in res.metrics else "tco_usd"
    finite = int(np.isfinite(res.samples(metric)).sum())
    if finite < res.runs:
        print(
            f"accelsim: warning: {res.runs - finite} of {res.runs} runs have no finite "
            f"{metric}; the plot shows {finite}" + (" (it is empty)" if not finite else ""),
            file=sys.stderr,
        )
    ax = plotting.ecdf(res, metric=metric)
    figure: Figure = ax.figure  # type: ignore[assignment]  # an Axes of a top-level figure
    figure.savefig(plot, dpi=120)
    print(f"wrote {plot}")


def comparison_json(cmp: Comparison, runs: int, goals: Goals | None) -> str:
    """``compare --json``: each option's statistics, the paired odds, the lower bounds of
    censored figures, the recommendation and, with goals, P(meets) per goal."""
    rec = cmp.recommendation
    metrics = [
        m
        for m in ("tco_usd", "time_to_train_days")
        if all(m in r.data for r in cmp.results.values())
    ]
    doc: dict[str, Any] = {
        "runs": runs,
        "options": {name: {m: r.stats(m) for m in r.metrics} for name, r in cmp.results.items()},
        "prob_less": {
            m: {a: {b: cmp.prob_less(m, a, b) for b in cmp.options if b != a} for a in cmp.options}
            for m in metrics
        },
        "lower_bounds": {name: sorted(lower_bounds(r)) for name, r in cmp.results.items()},
        "recommendation": {
            "choice": rec.choice,
            "meets_goals": rec.meets_goals,
            "rationale": list(rec.rationale),
        },
    }
    if goals is not None:
        doc["goals"] = {
            "targets": goals.model_dump(exclude_none=True),
            "prob_meets": {
                name: {
                    **{g: cmp.prob_meets(name, g) for g in goals.names},
                    "all": cmp.prob_meets(name),
                }
                for name in cmp.options
            },
        }
    return _json(doc)


def print_comparison(cmp: Comparison, goals: Goals | None) -> None:
    """The comparison's table, the notes of options that do not finish or whose prices
    move, the goals table and the recommendation."""
    _show(cmp.as_table())
    # An option that does not finish (a fleet that sheds requests, a replica that cannot
    # hold its model) says so under the table: its latencies and per-token prices are over
    # what it served, and a fleet that serves nothing shows 0 ms.
    notes = [f"{name}: {note}" for name, r in cmp.results.items() if (note := r.unfinished_note())]
    notes += [f"{name}: {n}" for name, r in cmp.results.items() if (n := r.price_change_note())]
    if notes:
        print()
        print("\n".join(notes))
    if goals is not None:
        print()
        _show(cmp.as_goals_table())
    print()
    print(cmp.recommendation)


def grid_axes(grid: str, s: Scenario) -> dict[str, list[Any]]:
    """The sweep grid of ``grid`` (dotted paths to lists of values), every point validated
    (and checked runnable) before any is simulated."""
    if not Path(grid).is_file():
        raise AccelsimError(f"{grid}: no such grid file")
    axes = to_plain(load_yaml(grid))
    if not isinstance(axes, dict) or not all(isinstance(v, list) and v for v in axes.values()):
        raise AccelsimError(
            f"{grid}: a grid maps dotted field paths to lists of values, e.g. "
            f"'fleet.0.count: [512, 1024]'"
        )
    for path, values in axes.items():
        for value in values:
            where = f"{grid}: {path}={value!r}"
            try:
                check_file_runnable(s.replace(path, value), where)
            except KeyError as exc:
                raise AccelsimError(f"{grid}: {exc.args[0]}") from None
            except ValidationError as exc:
                raise AccelsimError(format_validation_error(exc, where)) from None
    return axes


def print_sweep(sw: SweepResult, axes: dict[str, list[Any]], fmt: str) -> None:
    """The sweep's tidy rows: JSON, CSV or a table."""
    rows = sw.rows
    if fmt == "json":
        print(_json(list(rows)))
        return
    keys = [*axes, "metric", "runs", *SUMMARY_STATS]
    if fmt == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(keys)
        writer.writerows([[r[k] for k in keys] for r in rows])
        return
    cells = tuple(
        (
            *(str(r[k]) for k in axes),
            r["metric"],
            str(r["runs"]),
            format_value(r["metric"], r["mean"]),
            format_error(r["metric"], r["std_error"]),
            *(format_value(r["metric"], r[k]) for k in ("p5", "p50", "p95")),
        )
        for r in rows
    )
    _show(Table(tuple(keys), cells))


def reproduce_line(
    scenarios: Sequence[str],
    runs: int,
    seed: int,
    goals: Goals | None,
    extra: tuple[str | None, Sequence[str] | None, Sequence[str] | None],
) -> str:
    """The ``accelsim report`` command line that writes the same page; ``extra`` is
    ``(--prices, --measurements, --measured)``."""
    prices, measurements, measured = extra
    flags = "".join(
        f" --{g.replace('_', '-')} {getattr(goals, g):g}" for g in (goals.names if goals else ())
    )
    if goals is not None:
        flags += f" --confidence {goals.confidence:g}"
    flags += f" --prices {prices}" if prices is not None else ""
    flags += "".join(f" --measurements {m}" for m in measurements or ())
    flags += "".join(f" --measured {m}" for m in measured or ())
    return f"accelsim report {' '.join(scenarios)} --runs {runs} --seed {seed}{flags}"
