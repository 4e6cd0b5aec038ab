"""The ``accelsim`` command: a thin layer over :mod:`accelsim.study`, built on typer.

Exit codes: 0 success, 2 bad input (a scenario file, an option; one line on stderr and no
traceback), 1 failure. Tables are drawn with rich when stdout is a terminal and as plain
text when it is piped; ``--json`` and ``--csv`` are for machines.
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from collections.abc import Iterable, Sequence
from concurrent.futures import Executor
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from typer.core import TyperGroup

from accelsim._cli_catalog import _MaxPriceAge, catalog_
from accelsim._cli_files import check_output, check_plot, input_files
from accelsim._cli_goals import (
    _Budget,
    _check_metrics,
    _Confidence,
    _Deadline,
    _goals,
    _MaxP95Wait,
    _MaxWait,
    _SloGoal,
)
from accelsim._cli_measurements import _MeasuredContext, _MeasurementFiles, measured_catalog
from accelsim._cli_output import _emit, _format, _show
from accelsim._cli_prices import _Prices, with_prices
from accelsim._cli_study import (
    _Design,
    _Engine,
    _Out,
    _Plot,
    _Resume,
    _Runs,
    _Store,
    _Target,
    check_file_runnable,
    comparison_json,
    grid_axes,
    named_scenarios,
    print_comparison,
    print_sweep,
    reproduce_line,
    write_out,
    write_plot,
)
from accelsim.demo import default_scenarios
from accelsim.errors import AccelsimError
from accelsim.results import (
    Result,
)
from accelsim.scenario import Scenario, load_scenario
from accelsim.study import DEFAULT_RUNS, compare, open_executor, simulate, sweep

if TYPE_CHECKING:
    pass

_BAD_INPUT = 2


class _Group(TyperGroup):
    """The command group; a reader that goes away is not an error of ours."""

    def invoke(self, ctx: Any) -> Any:
        """Run the subcommand; on a broken pipe, silence stdout and exit 0."""
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            # `accelsim run ... --csv | head`: typer would turn this into exit 1, so it is
            # caught here. Point stdout at devnull so the final flush does not fail again.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise typer.Exit(0) from None


app = typer.Typer(
    name="accelsim",
    cls=_Group,
    help="GPU/TPU fleet cost and time-to-train studies (Monte Carlo and discrete-event).",
    epilog="Exit codes: 0 ok, 2 bad input, 1 failure.",
    add_completion=False,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


# ---------------------------------------------------------------- options

_Workers = Annotated[
    int | None,
    typer.Option(min=1, help="Worker processes (default: 1, in this process).", show_default=False),
]
_Json = Annotated[bool, typer.Option("--json", help="A JSON summary instead of a table.")]
_Csv = Annotated[bool, typer.Option("--csv", help="CSV for machines instead of a table.")]
_Seed = Annotated[int, typer.Option(help="Root seed: same seed, same numbers.")]


def _warn_stale_prices(results: Iterable[Result], max_age_days: int) -> None:
    """On stderr, one warning per distinct set of stale offers the results priced with."""
    seen: set[str] = set()
    for res in results:
        line = res.price_age_warning(max_age_days)
        if line is not None and line not in seen:
            seen.add(line)
            print(f"accelsim: {line}", file=sys.stderr)


def _runs(text: str) -> int | Literal["auto"]:
    """``--runs``: a count of runs or ``auto``."""
    if text == "auto":
        return "auto"
    try:
        return int(text)
    except ValueError:
        raise typer.BadParameter(
            f"takes a number or 'auto', not {text!r}", param_hint="'--runs'"
        ) from None


def _targets(pairs: Sequence[str] | None) -> dict[str, float] | None:
    """``--target tco_usd=0.01`` pairs as a mapping of metric to relative precision."""
    if not pairs:
        return None
    out = {}
    for pair in pairs:
        metric, _, value = pair.partition("=")
        try:
            out[metric] = float(value)
        except ValueError:
            raise AccelsimError(
                f"--target takes METRIC=RELATIVE, e.g. tco_usd=0.01, not {pair!r}"
            ) from None
    return out


def _executor(workers: int | None) -> AbstractContextManager[Executor | None]:
    """The executor ``--workers`` asks for (None or 1: in this process), shut down afterwards."""
    if workers is None or workers == 1:
        return open_executor(None)
    if workers < 1:
        raise AccelsimError(f"--workers must be >= 1, got {workers}")
    return open_executor("processes", workers=workers)


@app.command()
def demo(
    runs: Annotated[int, typer.Option(min=1, help="Monte Carlo runs per option.")] = 4000,
    seed: _Seed = 42,
) -> None:
    """The built-in GPU-vs-TPU comparison for a 70B-parameter training run."""
    started = time.perf_counter()
    options = default_scenarios()
    print("Default question: 70B-parameter PyTorch production run (2T tokens),")
    for name, s in options.items():
        pool = s.fleet[0]
        print(f"  {name}: {pool.count:,} x {pool.chip} on {pool.provider} {pool.pricing}")
    print()
    cmp = compare(options, runs=runs, seed=seed)
    _show(cmp.as_table())
    print()
    print(cmp.recommendation)
    print()
    print(f"({runs} paired runs, seed {seed}, {time.perf_counter() - started:.1f} s)")


# The catalog command lives in accelsim._cli_catalog; registered here to keep its place.
app.command("catalog")(catalog_)


@app.command()
def validate(
    scenarios: Annotated[
        list[str], typer.Argument(help="Scenario files (YAML, TOML or JSON).", show_default=False)
    ],
) -> None:
    """Check scenario files; errors name the file, line and field path."""
    for path in scenarios:
        s = load_scenario(path)
        check_file_runnable(s, path)
        print(f"{path}: ok ({s.name}: {s.workload_kind} on {len(s.fleet)} pool(s))")


@app.command()
@with_prices
def run(
    scenario: Annotated[str, typer.Argument(help="Scenario file.", show_default=False)],
    runs: _Runs = str(DEFAULT_RUNS),
    seed: _Seed = 42,
    target: _Target = None,
    plot: _Plot = None,
    out: _Out = None,
    design: _Design = "mc",
    engine: _Engine = "auto",
    store: _Store = None,
    resume: _Resume = False,
    workers: _Workers = None,
    json_out: _Json = False,
    csv_out: _Csv = False,
    max_price_age_days: _MaxPriceAge = 182,
    prices: _Prices = None,
    measurements: _MeasurementFiles = None,
    measured: _MeasuredContext = None,
) -> None:
    """Simulate one scenario file: mean, Monte Carlo error and P5/P50/P95 of each metric."""
    fmt = _format(json_out, csv_out)
    cat = measured_catalog(measurements, measured)
    n_runs = _runs(runs)
    if out is not None and Path(out).suffix.lower() not in {".csv", ".json"}:
        raise AccelsimError(f"--out takes a .csv or .json file, not {out!r}")
    s = load_scenario(scenario)
    check_file_runnable(s, scenario)
    inputs = input_files([scenario], [s])
    check_output(out, "--out", inputs)
    check_output(plot, "--plot", inputs)
    check_plot(plot)
    targets = _targets(target)
    _check_metrics(s, list(targets or ()), "--target")
    with _executor(workers) as pool:
        res = simulate(
            s,
            runs=n_runs,
            seed=seed,
            target=targets,
            executor=pool,
            design=design,  # type: ignore[arg-type]  # simulate checks it and names the choices
            engine=engine,  # type: ignore[arg-type]  # simulate checks it and names the choices
            store=store,
            resume=resume,
            catalog=cat,
        )
    _emit(res, fmt)
    _warn_stale_prices([res], max_price_age_days)
    if out is not None:
        write_out(res, out)
    if plot is not None:
        write_plot(res, plot)


@app.command("compare")
@with_prices
def compare_(
    scenarios: Annotated[
        list[str], typer.Argument(help="Scenario files, one per option.", show_default=False)
    ],
    runs: Annotated[int, typer.Option(min=1, help="Monte Carlo runs per option.")] = DEFAULT_RUNS,
    seed: _Seed = 42,
    workers: _Workers = None,
    json_out: _Json = False,
    max_price_age_days: _MaxPriceAge = 182,
    deadline_days: _Deadline = None,
    budget_usd: _Budget = None,
    slo_attainment: _SloGoal = None,
    max_wait_hours: _MaxWait = None,
    max_p95_wait_hours: _MaxP95Wait = None,
    confidence: _Confidence = 0.9,
    prices: _Prices = None,
    measurements: _MeasurementFiles = None,
    measured: _MeasuredContext = None,
) -> None:
    """Compare scenario files with common random numbers: table, odds and a recommendation.

    With goals (--deadline-days, --budget-usd, --slo-attainment, --max-wait-hours,
    --max-p95-wait-hours), the
    table of P(meets goal) per option follows, and the recommendation picks among the
    options meeting every goal in at least --confidence of runs.
    """
    named = named_scenarios(scenarios)
    goals = _goals(
        named.values(),
        deadline_days,
        budget_usd,
        slo_attainment,
        max_wait_hours,
        confidence,
        max_p95_wait_hours,
    )
    cat = measured_catalog(measurements, measured)
    with _executor(workers) as pool:
        cmp = compare(named, runs=runs, seed=seed, executor=pool, goals=goals, catalog=cat)
    _warn_stale_prices(cmp.results.values(), max_price_age_days)
    if json_out:
        print(comparison_json(cmp, runs, goals))
        return
    print_comparison(cmp, goals)


@app.command("sweep")
@with_prices
def sweep_(
    scenario: Annotated[str, typer.Argument(help="Scenario file.", show_default=False)],
    grid: Annotated[
        str,
        typer.Option(
            help="YAML file mapping dotted field paths to lists of values, "
            "e.g. 'fleet.0.count: \\[512, 1024]'.",
            show_default=False,
        ),
    ],
    runs: Annotated[
        int, typer.Option(min=1, help="Monte Carlo runs per grid point.")
    ] = DEFAULT_RUNS,
    seed: _Seed = 42,
    metrics: Annotated[
        str, typer.Option(help="Comma-separated metrics to summarise.")
    ] = "tco_usd,time_to_train_days",
    workers: _Workers = None,
    json_out: _Json = False,
    csv_out: _Csv = False,
    prices: _Prices = None,
    measurements: _MeasurementFiles = None,
    measured: _MeasuredContext = None,
) -> None:
    """Simulate every point of a grid, with common random numbers across points."""
    fmt = _format(json_out, csv_out)
    cat = measured_catalog(measurements, measured)
    s = load_scenario(scenario)
    axes = grid_axes(grid, s)
    _check_metrics(s, metrics.split(","), "--metrics")
    with _executor(workers) as pool:
        sw = sweep(
            s, axes, runs=runs, seed=seed, metrics=metrics.split(","), executor=pool, catalog=cat
        )
    print_sweep(sw, axes, fmt)


@app.command("report")
@with_prices
def report_(
    scenarios: Annotated[
        list[str],
        typer.Argument(help="Scenario files; several are compared as options.", show_default=False),
    ],
    output: Annotated[
        str, typer.Option("--output", "-o", help="The HTML file to write.")
    ] = "report.html",
    runs: Annotated[int, typer.Option(min=1, help="Monte Carlo runs per option.")] = 2000,
    seed: _Seed = 42,
    title: Annotated[
        str | None,
        typer.Option(help="Page title (default: the question).", show_default=False),
    ] = None,
    sensitivity: Annotated[
        bool, typer.Option(help="Show what drives the uncertainty (rank correlations).")
    ] = True,
    workers: _Workers = None,
    deadline_days: _Deadline = None,
    budget_usd: _Budget = None,
    slo_attainment: _SloGoal = None,
    max_wait_hours: _MaxWait = None,
    max_p95_wait_hours: _MaxP95Wait = None,
    confidence: _Confidence = 0.9,
    prices: _Prices = None,
    measurements: _MeasurementFiles = None,
    measured: _MeasuredContext = None,
) -> None:
    """Write a self-contained HTML report: question, answer, figures, assumptions, sources.

    Goals (as for ``compare``) need two options or more: the page then shows P(meets goal)
    per option and recommends among the options meeting them.
    """
    from accelsim.report import report as write_report

    named = named_scenarios(scenarios)
    goals = _goals(
        named.values(),
        deadline_days,
        budget_usd,
        slo_attainment,
        max_wait_hours,
        confidence,
        max_p95_wait_hours,
    )
    if goals is not None and len(named) == 1:
        raise AccelsimError(
            "goals are read on a comparison: give two scenario files or more, or drop the goals"
        )
    cat = measured_catalog(measurements, measured)
    check_output(output, "--output", input_files(scenarios, named.values()))
    with _executor(workers) as pool:
        if len(named) == 1:
            only = next(iter(named.values()))
            results: Any = simulate(only, runs=runs, seed=seed, executor=pool, catalog=cat)
        else:
            results = compare(named, runs=runs, seed=seed, executor=pool, goals=goals, catalog=cat)
    how = reproduce_line(scenarios, runs, seed, goals, (prices, measurements, measured))
    out = write_report(
        results, output, scenarios=named, title=title, sensitivity=sensitivity, reproduce=how
    )
    print(f"wrote {out}")


@app.command()
def calibrate(
    runs: Annotated[int, typer.Option(min=1, help="Monte Carlo runs per published run.")] = 2000,
    seed: _Seed = 0,
    out: Annotated[
        str | None,
        typer.Option(help="Write the docs page (Markdown) here instead of printing the table."),
    ] = None,
) -> None:
    """Coverage of published training runs by the predicted P5-P95 intervals."""
    from accelsim.calibration import calibrate as calibrate_runs
    from accelsim.calibration import calibration_markdown, calibration_page

    check_output(out, "--out", [])
    checks = calibrate_runs(grades=None, runs=runs, seed=seed)
    if out is None:
        print(calibration_markdown(checks))
        return
    with open(out, "w", encoding="utf-8") as fh:
        fh.write(calibration_page(checks, runs=runs, seed=seed))
    print(f"wrote {out}")


@app.command()
def schema() -> None:
    """JSON Schema of scenario files (for editors and validators)."""
    print(json.dumps(Scenario.model_json_schema(), indent=2))


def _print_warnings(caught: Sequence[warnings.WarningMessage]) -> None:
    """Each distinct warning once, one line on stderr (an overload, say, warned per option)."""
    seen: set[str] = set()
    for w in caught:
        text = str(w.message)
        if text not in seen:
            seen.add(text)
            print(f"accelsim: warning: {text}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``accelsim`` console script; returns the exit code.

    Runs the typer app without its own exit handling, so that tests can call
    ``main([...])`` and the console script can ``sys.exit(main())``.
    """
    args = sys.argv[1:] if argv is None else list(argv)
    command = typer.main.get_command(app)
    if not args:
        command.main(args=["--help"], prog_name="accelsim", standalone_mode=False)
        return _BAD_INPUT
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            try:
                code = command.main(args=args, prog_name="accelsim", standalone_mode=False)
            finally:
                _print_warnings(caught)
    except typer.TyperException as exc:
        # typer's (vendored click's) usage errors: exit_code 2; other click errors: 1.
        ctx = getattr(exc, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        print(f"accelsim: error: {exc.format_message()}{hint}", file=sys.stderr)
        return int(exc.exit_code)
    except typer.Abort:
        print("accelsim: aborted", file=sys.stderr)
        return 1
    except (AccelsimError, ValueError, FileNotFoundError, FileExistsError) as exc:
        print(f"accelsim: error: {exc}", file=sys.stderr)
        return _BAD_INPUT
    except OSError as exc:  # a disk that fills or a file that vanishes mid-way: a failure
        print(f"accelsim: error: {exc}", file=sys.stderr)
        return 1
    return code if isinstance(code, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
