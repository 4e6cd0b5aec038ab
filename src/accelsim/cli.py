"""The ``accelsim`` command: a thin layer over :mod:`accelsim.study`.

Exit codes: 0 success, 2 bad input (a scenario file, an option; no traceback), 1 failure.
Built on stdlib ``argparse`` so the core package needs no CLI dependency.
"""

from __future__ import annotations

import argparse
import csv
import json
import multiprocessing
import os
import sys
import time
from collections.abc import Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from typing import TYPE_CHECKING, Any

from accelsim import catalog
from accelsim._yaml import load_yaml, to_plain
from accelsim.demo import catalog_table, default_scenarios
from accelsim.errors import AccelsimError
from accelsim.results import Result, format_value, render_table
from accelsim.scenario import Scenario, load_scenario
from accelsim.study import compare, simulate, sweep

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_BAD_INPUT = 2


def _cmd_demo(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    options = default_scenarios()
    print("Default question: 70B-parameter PyTorch production run (2T tokens),")
    for name, s in options.items():
        pool = s.fleet[0]
        print(f"  {name}: {pool.count:,} x {pool.chip} on {pool.provider} {pool.pricing}")
    print()
    cmp = compare(options, runs=args.runs, seed=args.seed)
    print(cmp.table())
    print()
    print(cmp.recommendation)
    print()
    print(f"({args.runs} paired runs, seed {args.seed}, {time.perf_counter() - started:.1f} s)")
    return 0


def _cmd_catalog(args: argparse.Namespace) -> int:
    if args.what == "chips":
        print(catalog_table(mfu=args.mfu))
        return 0
    if args.what == "priors":
        rows = [
            [
                name,
                _describe(prior.value),
                prior.unit,
                "assumption" if prior.assumption else "published",
                prior.sources[0].url,
            ]
            for name, prior in catalog.priors().by_name().items()
        ]
        print(render_table(["prior", "value", "unit", "basis", "first source"], rows))
        return 0
    offers = catalog.offers(provider=args.provider)
    if not offers:
        print(
            f"no offers for provider {args.provider!r}; "
            f"providers: {', '.join(catalog.price_sheets())}"
        )
        return _BAD_INPUT
    rows = [
        [
            o.provider,
            o.chip,
            o.pricing,
            f"{o.usd_per_chip_hour:.3f}"
            if o.usd_per_chip_hour is not None
            else f"buy {o.purchase_usd_per_chip:,.0f}",
            str(o.as_of),
            o.source,
        ]
        for o in sorted(offers, key=lambda o: (o.provider, o.chip, o.pricing))
    ]
    print(render_table(["provider", "chip", "pricing", "USD/chip-h", "as of", "source"], rows))
    return 0


def _describe(value: object) -> str:
    """A prior's value as its YAML form, e.g. ``pert(low=0.3, mode=0.42, high=0.56)``."""
    if isinstance(value, int | float):
        return f"{value:g}"
    fields = value.model_dump(exclude={"dist"})  # type: ignore[attr-defined]
    inner = ", ".join(
        f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in fields.items()
    )
    return f"{value.dist}({inner})"  # type: ignore[attr-defined]


def _cmd_validate(args: argparse.Namespace) -> int:
    for path in args.scenarios:
        s = load_scenario(path)
        print(f"{path}: ok ({s.name}: {s.workload.kind} on {len(s.fleet)} pool(s))")
    return 0


def _runs(text: str) -> int | str:
    """``--runs``: a count of runs or ``auto``."""
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--runs takes a number or 'auto', not {text!r}") from None


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


def _study_options(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments for simulate/compare/sweep from the common options."""
    options: dict[str, Any] = {}
    if args.workers is not None:
        if args.workers < 1:
            raise AccelsimError(f"--workers must be >= 1, got {args.workers}")
        options["executor"] = None if args.workers == 1 else _pool(args.workers)
    return options


def _pool(workers: int) -> Executor:
    context = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(max_workers=workers, mp_context=context)


def _emit(res: Result, fmt: str) -> None:
    """A result as a table, JSON summary, or CSV of every run."""
    if fmt == "json":
        summary = {
            m: {
                "mean": res.mean(m),
                "std_error": res.std_error(m),
                "p5": res.quantile(m, 0.05),
                "p50": res.quantile(m, 0.5),
                "p95": res.quantile(m, 0.95),
            }
            for m in res.metrics
        }
        out: dict[str, Any] = {"scenario": res.scenario_name, "runs": res.runs, "metrics": summary}
        if "precision" in res.extras:
            out["precision"] = res.extras["precision"]
        print(json.dumps(out, indent=2, default=float))
    elif fmt == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(["run", *res.metrics])
        columns = [res.samples(m) for m in res.metrics]
        for i in range(res.runs):
            writer.writerow([i, *(repr(float(c[i])) for c in columns)])
    else:
        print(res.summary())


def _cmd_run(args: argparse.Namespace) -> int:
    s = load_scenario(args.scenario)
    options = _study_options(args)
    try:
        res = simulate(s, runs=args.runs, seed=args.seed, target=_targets(args.target), **options)
    finally:
        if isinstance(options.get("executor"), Executor):
            options["executor"].shutdown()
    _emit(res, args.format)
    if args.plot is not None:
        from accelsim import plot

        metric = "time_to_train_days" if "time_to_train_days" in res.metrics else "tco_usd"
        ax = plot.ecdf(res, metric=metric)
        figure: Figure = ax.figure  # type: ignore[assignment]  # an Axes of a top-level figure
        figure.savefig(args.plot, dpi=120)
        print(f"wrote {args.plot}")
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    scenarios = [load_scenario(p) for p in args.scenarios]
    named: dict[str, Scenario] = {}
    for s in scenarios:
        if s.name in named:
            raise AccelsimError(f"two scenarios are named {s.name!r}; names must differ")
        named[s.name] = s
    cmp = compare(named, runs=args.runs, seed=args.seed)
    print(cmp.table())
    print()
    print(cmp.recommendation)
    return 0


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from accelsim.calibration import calibrate, calibration_markdown

    table = calibration_markdown(calibrate(grades=None, runs=args.runs, seed=args.seed))
    if args.out is None:
        print(table)
        return 0
    page = CALIBRATION_PAGE.format(runs=args.runs, seed=args.seed, table=table)
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write(page)
    print(f"wrote {args.out}")
    return 0


CALIBRATION_PAGE = """# Calibration against published training runs

Each published run is simulated with its published configuration (chip, chip count,
active parameters, tokens or reported FLOPs, and its MFU where the paper gives one); every
other input takes the catalog priors. The table shows whether the published figure lies in
the predicted P5-P95 interval. A figure derived from step throughput (no downtime) is held
to the simulated failure-free time; a wall-clock figure to the simulated training time,
failures and badput included. The priors were not tuned to these runs; the MFU priors do
draw on published MFUs of some of them (LLaMA-65B, Llama 3, Nemotron-4, Gopher), which
makes those rows weaker evidence.

Regenerate with `accelsim calibrate --out docs/calibration.md` ({runs} runs, seed {seed});
`tests/validation/test_calibration.py` checks that this page is current.

{table}

Outliers and why:
- Nemotron-4 15B: its published GPU-hours imply an MFU of 0.294, below every published
  stage MFU (0.305-0.343), so the two published figures disagree; and its "approximately
  13 calendar days" are 1.4x the GPU-hour time (stage changes, pauses), beyond the badput
  prior.
- OLMoE-1B-7B: a 1.3B-active mixture of experts reaches about 0.18 MFU (small expert
  matmuls, all-to-all), below the dense-LLM priors. Mixture-of-experts and small-model MFU
  are not modelled separately yet.
- Falcon-180B (grade B): ~7M GPU-hours imply MFU ~0.48 on A100-40GB, at the top of the
  Ampere prior once failures and badput are added.
"""


def _cmd_sweep(args: argparse.Namespace) -> int:
    s = load_scenario(args.scenario)
    grid = to_plain(load_yaml(args.grid))
    if not isinstance(grid, dict) or not all(isinstance(v, list) and v for v in grid.values()):
        raise AccelsimError(
            f"{args.grid}: a grid maps dotted field paths to lists of values, e.g. "
            f"'fleet.0.count: [512, 1024]'"
        )
    metrics = args.metrics.split(",")
    options = _study_options(args)
    try:
        rows = sweep(s, grid=grid, runs=args.runs, seed=args.seed, metrics=metrics, **options)
    finally:
        if isinstance(options.get("executor"), Executor):
            options["executor"].shutdown()
    if args.format == "json":
        print(json.dumps(rows, indent=2, default=str))
        return 0
    keys = [*grid, "metric", "mean", "std_error", "p5", "p50", "p95"]
    if args.format == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(keys)
        writer.writerows([[r[k] for k in keys] for r in rows])
        return 0
    table = [
        [*(str(r[k]) for k in grid), r["metric"]]
        + [format_value(r["metric"], r[k]) for k in ("mean", "std_error", "p5", "p50", "p95")]
        for r in rows
    ]
    print(render_table(keys, table))
    return 0


def _cmd_schema(args: argparse.Namespace) -> int:
    print(json.dumps(Scenario.model_json_schema(), indent=2))
    return 0


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers", type=int, default=None, help="worker processes (default: 1)")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--json", dest="format", action="store_const", const="json")
    group.add_argument("--csv", dest="format", action="store_const", const="csv")
    p.set_defaults(format="table")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``accelsim`` command."""
    p = argparse.ArgumentParser(
        prog="accelsim", description="GPU/TPU fleet cost and time-to-train studies."
    )
    sub = p.add_subparsers(dest="command", required=True)

    d = sub.add_parser("demo", help="the built-in GPU-vs-TPU comparison")
    d.add_argument("--runs", type=int, default=4000, help="Monte Carlo runs per option")
    d.add_argument("--seed", type=int, default=42, help="root seed")
    d.set_defaults(func=_cmd_demo)

    c = sub.add_parser("catalog", help="built-in chips or prices, with sources and dates")
    c.add_argument("what", choices=["chips", "prices", "priors"])
    c.add_argument("--provider", default=None, help="only this provider's offers")
    c.add_argument("--mfu", type=float, default=0.4, help="MFU for USD per delivered PFLOP-hour")
    c.set_defaults(func=_cmd_catalog)

    v = sub.add_parser("validate", help="check scenario files")
    v.add_argument("scenarios", nargs="+")
    v.set_defaults(func=_cmd_validate)

    r = sub.add_parser("run", help="simulate one scenario file")
    r.add_argument("scenario")
    r.add_argument("--runs", type=_runs, default=2000, help="a number of runs, or 'auto'")
    r.add_argument("--seed", type=int, default=42)
    r.add_argument(
        "--target",
        action="append",
        metavar="METRIC=REL",
        help="with --runs auto: stop when the mean's 95%% half-width is this fraction of it",
    )
    r.add_argument("--plot", default=None, help="write an ECDF of the main metric to this PNG")
    _common(r)
    r.set_defaults(func=_cmd_run)

    w = sub.add_parser("sweep", help="simulate every point of a grid (common random numbers)")
    w.add_argument("scenario")
    w.add_argument("--grid", required=True, help="YAML mapping dotted paths to value lists")
    w.add_argument("--runs", type=int, default=500)
    w.add_argument("--seed", type=int, default=42)
    w.add_argument("--metrics", default="tco_usd,time_to_train_days", help="comma-separated")
    _common(w)
    w.set_defaults(func=_cmd_sweep)

    m = sub.add_parser("compare", help="compare scenario files with common random numbers")
    m.add_argument("scenarios", nargs="+")
    m.add_argument("--runs", type=int, default=2000)
    m.add_argument("--seed", type=int, default=42)
    m.set_defaults(func=_cmd_compare)

    cal = sub.add_parser("calibrate", help="coverage of published training runs")
    cal.add_argument("--runs", type=int, default=2000)
    cal.add_argument("--seed", type=int, default=0)
    cal.add_argument("--out", default=None, help="write the docs page here (Markdown)")
    cal.set_defaults(func=_cmd_calibrate)

    sc = sub.add_parser("schema", help="JSON Schema of scenario files")
    sc.set_defaults(func=_cmd_schema)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``accelsim`` console script."""
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
    except (AccelsimError, ValueError, FileNotFoundError) as exc:
        print(f"accelsim: error: {exc}", file=sys.stderr)
        return _BAD_INPUT
    except BrokenPipeError:
        # The reader went away (`accelsim run ... --csv | head`): not an error of ours.
        # Point stdout at devnull so the interpreter's final flush does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
