"""One self-contained HTML page per study, for people who will not run Python.

:func:`report` writes the page; :func:`render_html` returns it as a string. The page needs
no network when it is viewed: figures are inline SVG, the style sheet is inline, and there
is no script. It is built with Jinja2 from ``templates/report.html.j2`` with autoescaping
on, so every string that comes from the user (scenario and option names, descriptions,
file names) is escaped.

What the page shows is decided by the metrics the results have (see
:mod:`accelsim.report._question`): a training study gets its time-to-train figures and
timeline, a serving study its cost per million tokens and replicas, a job stream its waits.
Figures need matplotlib (the ``plot`` extra); without it the page has every table and says
how to get the figures.
"""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from accelsim.report import _assumptions, _page_data, _provenance, _question, _tables
from accelsim.report import _figures as figures
from accelsim.report._calibration import calibration_status
from accelsim.results import Comparison, Recommendation, Result
from accelsim.scenario import Scenario

Results = Result | Comparison | Mapping[str, Result]
"""What a report takes: one result, a comparison, or results by option name."""
Scenarios = Scenario | Mapping[str, Scenario] | Sequence[Scenario] | None
"""The scenarios behind the results, by option name (a sequence is named by ``Scenario.name``)."""


def _options(results: Results) -> dict[str, Result]:
    if isinstance(results, Result):
        return {results.scenario_name: results}
    named = dict(results.results if isinstance(results, Comparison) else results)
    if not named:
        raise ValueError("a report needs at least one result")
    return named


def _scenarios(scenarios: Scenarios, options: Mapping[str, Result]) -> dict[str, Scenario]:
    if scenarios is None:
        return {}
    if isinstance(scenarios, Scenario):
        named = {next(iter(options)) if len(options) == 1 else scenarios.name: scenarios}
    elif isinstance(scenarios, Mapping):
        named = dict(scenarios)
    else:
        named = {s.name: s for s in scenarios}
    unknown = sorted(set(named) - set(options))
    if unknown:
        raise ValueError(
            f"scenarios {unknown} match no option of the results; options: {list(options)}"
        )
    return named


def _environment() -> Any:
    try:
        import jinja2
    except ImportError as exc:  # pragma: no cover - jinja2 is a core dependency
        raise ImportError("accelsim.report needs Jinja2: pip install 'jinja2>=3.1'") from exc
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("accelsim.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["source_label"] = _assumptions.source_label
    return env


def render_html(
    results: Results,
    *,
    scenarios: Scenarios = None,
    title: str | None = None,
    sensitivity: bool = True,
    reproduce: str | None = None,
) -> str:
    """The report of ``results`` as one self-contained HTML document (see :func:`report`)."""
    options = _options(results)
    named = _scenarios(scenarios, options)
    kind = _question.kind_of(options)
    cmp = results if isinstance(results, Comparison) else None
    if cmp is None and len(options) > 1 and all("tco_usd" in r.metrics for r in options.values()):
        cmp = Comparison(options)
    rec = cmp.recommendation if cmp is not None and len(options) > 1 else None

    question = _question.question(options, named, kind)
    notes = _notes(options)
    primary = _PRIMARY.get(kind)
    distributions = [
        m
        for m in (primary, "tco_usd")
        if m is not None and all(m in r.metrics for r in options.values())
    ]

    svgs = _figures(options, distributions, kind, notes)
    drivers, drivers_note = _drivers(options, primary, sensitivity)
    price_list = _assumptions.prices(options, named)
    version = importlib.metadata.version("accelsim")
    calibration, calibration_page = _provenance.calibration_lines(kind, calibration_status())
    calibration = (*_provenance.measured_lines(options.values()), *calibration)
    assumptions_note = "" if named else _NO_SCENARIOS
    page = {
        "title": title or question,
        "question": question,
        "kind": kind,
        "options": _cards(options, named, kind, rec),
        "descriptions": {n: s.description for n, s in named.items() if s.description},
        "recommendation": rec,
        "goals": cmp.as_goals_table() if cmp is not None and cmp.goals is not None else None,
        "distributions": distributions,
        "axis_label": _axis_label,
        "svgs": svgs,
        "cost": _tables.cost_grid(options),
        "time": _tables.time_grid(options) if kind == _page_data.TRAINING else None,
        "serving": _tables.serving_grid(options) if kind == _page_data.SERVING else None,
        "drivers": drivers,
        "drivers_note": drivers_note,
        "assumptions": _assumptions.assumptions(options, named),
        "assumptions_note": assumptions_note,
        "prices": price_list,
        "calibration": calibration,
        "calibration_page": calibration_page,
        "reproduce": _provenance.reproduce_rows(options, price_list, reproduce, version),
        "metrics": _tables.metrics_grid(options),
        "generated": _provenance.today(),
        "version": version,
        "notes": notes,
    }
    return str(_environment().get_template("report.html.j2").render(**page))


_PRIMARY = {
    _page_data.TRAINING: "time_to_train_days",
    _page_data.SERVING: "usd_per_million_output_tokens",
    _page_data.JOB_STREAM: "mean_wait_hours",
}
"""The metric a page's distributions lead with, by kind of question."""
_NO_SCENARIOS = (
    "The scenarios were not given to the report, so assumptions you set cannot be "
    "told from catalog priors: pass scenarios= (the CLI always does)."
)


def _notes(options: dict[str, Result]) -> list[str]:
    """What qualifies every figure on the page, said first: runs that do not finish (an
    endpoint shedding requests or unable to hold its model, a training run past the
    horizon), then prices that move over the horizon."""
    notes = [f"{name}: {note}" for name, r in options.items() if (note := r.unfinished_note())]
    notes += [f"{name}: {note}" for name, r in options.items() if (note := r.price_change_note())]
    return notes


def _cards(
    options: dict[str, Result],
    named: dict[str, Scenario],
    kind: str,
    rec: Recommendation | None,
) -> list[_page_data.Option]:
    """One card per option: what it is, its key figures, and whether it is the choice."""
    return [
        _page_data.Option(
            name,
            _question.describe_option(res, named.get(name)),
            _question.key_figures(options, name, kind),
            chosen=rec is not None and rec.meets_goals and rec.choice == name,
        )
        for name, res in options.items()
    ]


def _figures(
    options: dict[str, Result], distributions: list[str], kind: str, notes: list[str]
) -> dict[str, Any]:
    """The page's figures as inline SVG: the ECDF of each distribution, the TCO breakdown and
    (training) the timeline; without matplotlib none, and ``notes`` says how to get them."""
    svgs: dict[str, Any] = {}
    if not figures.available():
        notes.append("Figures need matplotlib: pip install 'accelsim[plot]'.")
        return svgs
    for metric in distributions:
        svgs[f"ecdf-{metric}"] = figures.to_svg(figures.ecdf(options, metric), f"ecdf-{metric}")
    if all("tco_usd" in r.metrics for r in options.values()):
        svgs["breakdown"] = figures.to_svg(figures.tco_breakdown(options), "breakdown")
    if kind == _page_data.TRAINING:
        height = 1.4 + 0.5 * len(options)
        svgs["timeline"] = figures.to_svg(
            figures.timeline(options), "timeline", size=(10.0, height)
        )
    return svgs


def _drivers(
    options: dict[str, Result], primary: str | None, sensitivity: bool
) -> tuple[tuple[_page_data.Grid, ...], str]:
    """The drivers tables (rank correlations of the inputs with the TCO and the primary
    metric) and the note under them; none, with the reason, when too few runs or asked not."""
    runs = next(iter(options.values())).runs
    if not sensitivity:
        return (), "Left out of this report (sensitivity=False)."
    if runs < _page_data.MIN_DRIVER_RUNS:
        return (), (
            f"Left out: {runs} runs are too few to tell a driver from noise "
            f"(rank correlations need at least {_page_data.MIN_DRIVER_RUNS})."
        )
    wanted = [m for m in ("tco_usd", primary) if m is not None]
    return _tables.driver_grids(options, list(dict.fromkeys(wanted))), (
        f"Spearman rank correlation of each uncertain input with the metric over the "
        f"{runs:,} runs of this study (the method 'spearman' of accelsim.sensitivity): "
        f"+1 means the metric rises with the input in every run, 0 no monotone relation. "
        f"The {_page_data.TOP_DRIVERS} strongest inputs are shown."
    )


def _axis_label(metric: str) -> str:
    from accelsim.plot import axis_label

    return axis_label(metric)


def report(
    results: Results,
    path: str | os.PathLike[str],
    *,
    scenarios: Scenarios = None,
    title: str | None = None,
    sensitivity: bool = True,
    reproduce: str | None = None,
) -> Path:
    """Write a self-contained HTML report of a study to ``path``; return the path.

    The page states the question in plain words, the recommendation (for several
    options), the distributions of the main metric and of TCO side by side, the cost
    breakdown, where the time goes (training), what drives the uncertainty, every input
    with its value or distribution, source and date (those you set marked), the
    calibration status, and the seed, runs, version and oldest price date that reproduce
    it. It loads nothing from the network and prints cleanly.

    Parameters
    ----------
    results : Result, Comparison, or mapping of option name to Result
        The study to report. Several results are compared as options (they must be
        paired: same runs and seed, as :func:`accelsim.compare` makes them).
    path : str or path-like
        Where to write the HTML file (overwritten).
    scenarios : Scenario, mapping of option name to Scenario, or sequence of Scenario
        The scenarios behind the results. Optional, but without them the page cannot tell
        the assumptions you set from catalog priors, nor state the model size in the
        question.
    title : str, optional
        The page title; by default the question.
    sensitivity : bool
        Whether to show what drives the uncertainty (rank correlations over the result's
        own runs; needs at least 98 runs).
    reproduce : str, optional
        How to reproduce the study (e.g. the command line), shown with the seed.

    Returns
    -------
    pathlib.Path
        The file written.

    Examples
    --------
    >>> import accelsim as acs, tempfile, pathlib
    >>> s = acs.load_scenario("examples/llama70b_h100_aws.yaml")
    >>> res = acs.simulate(s, runs=200, seed=1)
    >>> out = acs.report(res, pathlib.Path(tempfile.mkdtemp()) / "r.html", scenarios=s)
    >>> "Expected TCO" in out.read_text(encoding="utf-8")
    True
    """
    html = render_html(
        results, scenarios=scenarios, title=title, sensitivity=sensitivity, reproduce=reproduce
    )
    out = Path(path)
    out.write_text(html, encoding="utf-8")
    return out


__all__ = ["Results", "Scenarios", "render_html", "report"]
