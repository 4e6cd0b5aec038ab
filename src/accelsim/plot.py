"""Plots of study results: ECDFs, TCO breakdowns, tornado charts, Pareto fronts, sweeps.

Needs the optional extra ``pip install 'accelsim[plot]'`` (matplotlib >= 3.8, for
``Axes.ecdf``); matplotlib is imported only when a plot is drawn. Every function draws on
the ``ax`` it is given (or on a new figure) and returns that Axes; none calls ``plt.show()``
or changes ``rcParams``. Intervals are the central 90 % of the runs (P5-P95), as in
:meth:`accelsim.Comparison.table`.

Examples
--------
>>> import accelsim as acs
>>> from accelsim import plot
>>> w = acs.TrainingRun(params=7e9, tokens=1e11)
>>> gpu = acs.Scenario(name="gpu", workload=w,
...                    fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")])
>>> tpu = acs.Scenario(name="tpu", workload=w,
...                    fleet=[acs.Pool(chip="tpu-v5p", count=128, provider="gcp")])
>>> cmp = acs.compare({"gpu": gpu, "tpu": tpu}, runs=200, seed=1)
>>> ax = plot.ecdf(cmp)
>>> len(ax.get_lines())
2
>>> plot.pareto_frontier(cmp)  # the GPU option is both cheaper and faster here
('gpu',)
>>> import matplotlib.pyplot as plt
>>> plt.close(ax.figure)
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from accelsim._typing import FloatArray
from accelsim.results import Comparison, Result, format_value, unit_of
from accelsim.scenario import BIDI_CONTROLS

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from accelsim.engines.cluster.des import TimeSeries

Results = Comparison | Mapping[str, Result] | Result
"""What the plots of several options accept: a comparison, options by name, or one result."""

COST_PARTS = ("hardware_cost_usd", "energy_cost_usd", "engineering_cost_usd", "delay_cost_usd")
"""The parts of ``tco_usd``, in stacking order (bottom first)."""

_INSTALL = "accelsim.plot needs matplotlib >= 3.8: pip install 'accelsim[plot]'"
_FIGSIZE = (7.0, 4.5)


def _new_axes(ax: Axes | None, figsize: tuple[float, float] = _FIGSIZE) -> Axes:
    """``ax``, or the Axes of a new figure (constrained layout, so labels never overlap)."""
    try:
        import matplotlib.pyplot as plt
        from matplotlib.axes import Axes as _Axes
    except ImportError as exc:
        raise ImportError(_INSTALL) from exc
    if not hasattr(_Axes, "ecdf"):  # matplotlib < 3.8
        raise ImportError(_INSTALL)
    if ax is not None:
        return ax
    new: Axes
    _fig, new = plt.subplots(figsize=figsize, layout="constrained")
    return new


def plain_label(name: str) -> str:
    """``name`` as matplotlib shows it verbatim: ``$`` escaped (else a pair of them is
    parsed as mathtext, garbling or failing the figure), a leading ``_`` kept visible (a
    legend drops labels starting with one) and bidirectional controls removed (they would
    reorder the text around the name).

    >>> plain_label("$5/h"), plain_label("_draft")
    ('\\\\$5/h', ' _draft')
    """
    text = "".join(ch for ch in name if ch not in BIDI_CONTROLS).replace("$", r"\$")
    return f" {text}" if text.startswith("_") else text


def _named(results: Results) -> dict[str, Result]:
    """The options by name."""
    if isinstance(results, Result):
        return {results.scenario_name: results}
    named = dict(results.results if isinstance(results, Comparison) else results)
    if not named:
        raise ValueError("nothing to plot: no options given")
    return named


def _options(results: Results) -> dict[str, Result]:
    """The options by the label they are drawn under (:func:`plain_label` of each name)."""
    return {plain_label(k): v for k, v in _named(results).items()}


def axis_label(metric: str) -> str:
    """An axis label from a metric name: words, then the unit in brackets.

    Examples
    --------
    >>> axis_label("time_to_train_days"), axis_label("tco_usd"), axis_label("mfu")
    ('time to train [d]', 'TCO [USD]', 'mfu')
    """
    unit = unit_of(metric)
    stem = metric
    for suffix in ("_usd", "_days", "_hours", "_kwh", "_kg_co2e"):
        if unit and stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    words = stem.replace("_", " ")
    words = "TCO" if words == "tco" else words
    return f"{words} [{unit}]" if unit else words


def _format_axis(ax: Axes, metric: str, which: str = "x") -> None:
    """Ticks in dollars ($1.2M) for a USD metric; matplotlib's own ticks otherwise."""
    if unit_of(metric) != "USD":
        return
    from matplotlib.ticker import FuncFormatter

    fmt = FuncFormatter(lambda v, _pos: format_value(metric, float(v)))
    (ax.xaxis if which == "x" else ax.yaxis).set_major_formatter(fmt)


def _spread(res: Result, metric: str) -> tuple[float, float, float]:
    """Mean and the distances down to P5 and up to P95 (never negative)."""
    mean = res.mean(metric)
    p5, p95 = res.interval(metric, 0.9)
    return mean, max(mean - p5, 0.0), max(p95 - mean, 0.0)


def _option_ticks(ax: Axes, positions: FloatArray, names: Sequence[str]) -> None:
    """Option names under their bars, slanted when straight ones would run into each other."""
    ax.set_xticks(positions, list(names))
    if sum(len(n) for n in names) > 60 or len(names) > 6:
        for tick in ax.get_xticklabels():
            tick.set_rotation(30)
            tick.set_horizontalalignment("right")


def ecdf(results: Results, metric: str = "time_to_train_days", ax: Axes | None = None) -> Axes:
    """Empirical CDF of ``metric``, one step line per option.

    Parameters
    ----------
    results : Comparison, mapping of name to Result, or Result
        The options to draw.
    metric : str
        Metric to draw; its unit (from its name) labels the x axis.
    ax : matplotlib.axes.Axes, optional
        Where to draw; a new figure when omitted.

    Returns
    -------
    matplotlib.axes.Axes
        The Axes drawn on, with one line per option, labelled by option name.
    """
    ax = _new_axes(ax)
    for name, res in _options(results).items():
        ax.ecdf(res.samples(metric), label=name)
    ax.set_xlabel(axis_label(metric))
    ax.set_ylabel("fraction of runs ≤ x")
    ax.set_ylim(0.0, 1.0)
    ax.grid(alpha=0.3)
    _format_axis(ax, metric, "x")
    ax.legend(loc="lower right")
    return ax


def tco_breakdown(results: Results, ax: Axes | None = None) -> Axes:
    """Mean TCO per option as a stacked bar of its parts, with P5-P95 of the total.

    The parts (:data:`COST_PARTS` present in the results, then ``wait_cost_usd``) sum to
    ``tco_usd`` run by run, so each bar's height is the mean TCO; the error bar spans the
    total's P5-P95. Credits (``credits_usd``, a negative line) are their own bar below
    zero, and then the stack's height less the credits is the mean TCO, marked on each bar.

    Parameters
    ----------
    results : Comparison, mapping of name to Result, or Result
        The options to draw.
    ax : matplotlib.axes.Axes, optional
        Where to draw; a new figure when omitted.

    Returns
    -------
    matplotlib.axes.Axes
        One bar container per part (labelled by part), bars at x = 0, 1, ... in option order.
    """
    ax = _new_axes(ax)
    named = _options(results)
    names = list(named)
    x = np.arange(len(names), dtype=float)
    bottom = np.zeros(len(names))
    for part in (*COST_PARTS, "wait_cost_usd", "credits_usd"):
        if not any(part in r.data for r in named.values()):
            continue
        height = np.array([r.mean(part) if part in r.data else 0.0 for r in named.values()])
        if part == "credits_usd":  # an offset: drawn down from zero, its own line
            ax.bar(x, height, width=0.6, label="credits", hatch="//", edgecolor="black")
            ax.axhline(0.0, color="black", linewidth=0.8)
            net = [r.mean("tco_usd") for r in named.values()]
            ax.scatter(x, net, marker="_", s=900, color="black", zorder=3, label="net TCO")
            continue
        ax.bar(x, height, bottom=bottom, width=0.6, label=part.removesuffix("_cost_usd"))
        bottom += height
    spread = np.array([_spread(r, "tco_usd") for r in named.values()])
    ax.errorbar(x, spread[:, 0], yerr=spread[:, 1:].T, fmt="none", ecolor="black", capsize=4)
    _option_ticks(ax, x, names)
    ax.set_ylabel("mean TCO [USD] (error bar: P5-P95)")
    _format_axis(ax, "tco_usd", "y")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(title="cost", loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside the bars
    return ax


def tco_distribution(results: Results, ax: Axes | None = None) -> Axes:
    """Box plot of ``tco_usd`` per option: quartile box, median line, P5-P95 whiskers.

    Parameters
    ----------
    results : Comparison, mapping of name to Result, or Result
        The options to draw.
    ax : matplotlib.axes.Axes, optional
        Where to draw; a new figure when omitted.

    Returns
    -------
    matplotlib.axes.Axes
        One filled box per option at x = 1, 2, ...; a triangle marks each mean.
    """
    ax = _new_axes(ax)
    named = _options(results)
    data = [np.asarray(r.samples("tco_usd")) for r in named.values()]
    ax.boxplot(data, whis=(5.0, 95.0), showmeans=True, showfliers=False, patch_artist=True)
    _option_ticks(ax, np.arange(1.0, len(named) + 1.0), list(named))
    ax.set_ylabel("TCO [USD] (box: P25-P75, whiskers: P5-P95)")
    _format_axis(ax, "tco_usd", "y")
    ax.grid(axis="y", alpha=0.3)
    return ax


def tornado(
    pairs: Sequence[tuple[str, float]],
    ax: Axes | None = None,
    top: int = 10,
    *,
    metric: str = "tco_usd",
) -> Axes:
    """Horizontal bars of :func:`accelsim.sensitivity`'s rank correlations, largest on top.

    Parameters
    ----------
    pairs : sequence of (str, float)
        ``(input name, Spearman rho)`` pairs, in any order.
    ax : matplotlib.axes.Axes, optional
        Where to draw; a new figure when omitted.
    top : int
        How many inputs to show: those with the largest ``|rho|``.
    metric : str
        The metric the correlations are with (for the axis label only).

    Returns
    -------
    matplotlib.axes.Axes
        One bar per input at y = 0, 1, ..., from the smallest ``|rho|`` (bottom) up.
    """
    if top < 1:
        raise ValueError(f"top must be >= 1, got {top}")
    shown = sorted(pairs, key=lambda p: -abs(p[1]))[:top][::-1]
    height = max(2.5, 0.2 + 0.35 * len(shown))
    ax = _new_axes(ax, figsize=(7.0, height))
    rho = np.array([r for _, r in shown], dtype=float)
    colors = np.where(rho >= 0, "tab:red", "tab:blue").tolist()
    ax.barh(np.arange(len(shown)), rho, color=colors, height=0.6)
    ax.set_yticks(np.arange(len(shown)), [n for n, _ in shown])
    ax.axvline(0.0, color="black", linewidth=0.8)
    ax.set_xlim(-1.0, 1.0)
    ax.set_xlabel(f"Spearman rank correlation with {metric}")
    ax.grid(axis="x", alpha=0.3)
    return ax


def pareto_frontier(
    results: Results, x: str = "time_to_train_days", y: str = "tco_usd"
) -> tuple[str, ...]:
    """Options whose means no other option beats on both ``x`` and ``y`` (lower is better).

    Option *b* dominates *a* when it is no worse on both means and better on one. Returns the
    undominated options sorted by ``x`` (ties by ``y``); this needs no matplotlib.

    Examples
    --------
    >>> import numpy as np
    >>> def opt(t, c):
    ...     return Result("o", {"time_to_train_days": np.array([t]), "tco_usd": np.array([c])})
    >>> pareto_frontier({"fast": opt(1, 9), "cheap": opt(9, 1), "bad": opt(9, 9)})
    ('fast', 'cheap')
    """
    means = {k: (r.mean(x), r.mean(y)) for k, r in _named(results).items()}

    def dominated(a: tuple[float, float]) -> bool:
        return any(b[0] <= a[0] and b[1] <= a[1] and b != a for b in means.values())

    front = [k for k, v in means.items() if not dominated(v)]
    return tuple(sorted(front, key=lambda k: means[k]))


def cost_vs_time(results: Results, ax: Axes | None = None) -> Axes:
    """Mean TCO against mean time to train per option, with the Pareto frontier.

    Each option is a point with P5-P95 error bars in both directions; the options no other
    option beats on both means (:func:`pareto_frontier`) are joined by a dashed line.

    Parameters
    ----------
    results : Comparison, mapping of name to Result, or Result
        The options to draw.
    ax : matplotlib.axes.Axes, optional
        Where to draw; a new figure when omitted.

    Returns
    -------
    matplotlib.axes.Axes
        Legend entries: one per option and one ``"Pareto frontier: ..."`` line.
    """
    ax = _new_axes(ax)
    named = _options(results)
    for name, res in named.items():
        tx, tlo, thi = _spread(res, "time_to_train_days")
        cy, clo, chi = _spread(res, "tco_usd")
        ax.errorbar(
            [tx], [cy], xerr=[[tlo], [thi]], yerr=[[clo], [chi]], fmt="o", capsize=3, label=name
        )
    front = pareto_frontier(named)  # the labels of the options on it
    ax.plot(
        [named[k].mean("time_to_train_days") for k in front],
        [named[k].mean("tco_usd") for k in front],
        linestyle="--",
        color="black",
        linewidth=1.0,
        marker="s",
        markerfacecolor="none",
        markersize=11,
        label="Pareto frontier: " + ", ".join(front),
        zorder=3,
    )
    ax.set_xlabel("mean time to train [d] (bars: P5-P95)")
    ax.set_ylabel("mean TCO [USD] (bars: P5-P95)")
    _format_axis(ax, "tco_usd", "y")
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    last = [lbl.startswith("Pareto frontier") for lbl in labels]  # options first, frontier last
    order = sorted(range(len(labels)), key=lambda i: last[i])
    ax.legend([handles[i] for i in order], [labels[i] for i in order], fontsize="small")
    return ax


_STAT_KEYS = frozenset({"metric", "mean", "std_error", "p5", "p50", "p95"})


def _is_number(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def sweep_line(
    rows: Sequence[Mapping[str, Any]], x: str, metric: str, ax: Axes | None = None
) -> Axes:
    """P50 of ``metric`` along grid key ``x`` from :func:`accelsim.sweep`, with a P5-P95 band.

    When the grid has other keys, each combination of their values gets its own line.
    Numeric ``x`` values are placed at their value; any other values (chip names, say) are
    placed evenly in the order first seen.

    Parameters
    ----------
    rows : sequence of mapping
        The tidy rows of :func:`accelsim.sweep` (grid keys, ``metric``, ``p5``, ``p50``...).
    x : str
        Grid key on the x axis, e.g. ``"fleet.0.count"``.
    metric : str
        Which metric's rows to draw.
    ax : matplotlib.axes.Axes, optional
        Where to draw; a new figure when omitted.

    Returns
    -------
    matplotlib.axes.Axes
        One P50 line and one band (a fill) per combination of the other grid keys.
    """
    picked = [r for r in rows if r.get("metric") == metric]
    if not picked:
        have = sorted({str(r.get("metric")) for r in rows})
        raise ValueError(f"no rows for metric {metric!r}; the rows have: {', '.join(have)}")
    if x not in picked[0]:
        keys = [k for k in picked[0] if k not in _STAT_KEYS]
        raise ValueError(f"no grid key {x!r} in the rows; grid keys are: {', '.join(keys)}")
    others = [k for k in picked[0] if k not in _STAT_KEYS and k != x]
    numeric = all(_is_number(r[x]) for r in picked)
    categories = list(dict.fromkeys(r[x] for r in picked))
    ax = _new_axes(ax)
    groups: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for r in picked:
        groups.setdefault(tuple(r[k] for k in others), []).append(r)
    for key, group in groups.items():
        pos = np.array([float(r[x]) if numeric else categories.index(r[x]) for r in group])
        order = np.argsort(pos, kind="stable")
        pos = pos[order]
        stat = {s: np.array([float(group[i][s]) for i in order]) for s in ("p5", "p50", "p95")}
        name = ", ".join(f"{k}={v}" for k, v in zip(others, key, strict=True)) or "P50"
        (line,) = ax.plot(pos, stat["p50"], marker="o", label=plain_label(name))
        ax.fill_between(pos, stat["p5"], stat["p95"], color=line.get_color(), alpha=0.2)
    if not numeric:
        ax.set_xticks(np.arange(len(categories)), [str(c) for c in categories])
    ax.set_xlabel(x)
    ax.set_ylabel(f"{axis_label(metric)} (line: P50, band: P5-P95)")
    _format_axis(ax, metric, "y")
    ax.grid(alpha=0.3)
    if others:
        ax.legend(fontsize="small")
    return ax


def utilization_series(
    series: TimeSeries,
    ax: Axes | None = None,
    *,
    pool_names: Sequence[str] | None = None,
    horizon_hours: float | None = None,
) -> Axes:
    """Busy and up chips per pool over time, and the queue length on a twin axis.

    Each value is the bin's time average, drawn as a step across the bin.

    Parameters
    ----------
    series : TimeSeries
        A DES run's series (``DesResult.series``, with ``utilization_resolution_hours`` set):
        ``start_hours`` [h], ``busy_chips`` and ``up_chips`` (bins, pools) [chips],
        ``queued_jobs`` (bins,).
    ax : matplotlib.axes.Axes, optional
        Where to draw the chips; a new figure when omitted.
    pool_names : sequence of str, optional
        Names of the pools for the legend (default ``pool 0``, ``pool 1``...).
    horizon_hours : float, optional
        End of the last bin [h]; by default one bin width after its start.

    Returns
    -------
    matplotlib.axes.Axes
        The chips axis (busy: solid, up: dashed). The queue axis is its twin, the other
        Axes sharing its x axis (``ax.get_shared_x_axes().get_siblings(ax)``).
    """
    start = np.asarray(series.start_hours, dtype=float)
    busy = np.asarray(series.busy_chips, dtype=float).reshape(start.size, -1)
    up = np.asarray(series.up_chips, dtype=float).reshape(start.size, -1)
    if start.size == 0:
        raise ValueError("the series has no bins")
    width = float(start[1] - start[0]) if start.size > 1 else None
    end = horizon_hours if horizon_hours is not None else start[-1] + (width or 1.0)
    edges = np.append(start, end)
    names = (
        list(pool_names) if pool_names is not None else [f"pool {p}" for p in range(busy.shape[1])]
    )
    if len(names) != busy.shape[1]:
        raise ValueError(f"{len(names)} pool names for {busy.shape[1]} pools")
    ax = _new_axes(ax, figsize=(8.0, 4.5))
    for p, name in enumerate(names):
        color = f"C{p % 10}"  # the colour cycle's p-th colour, for both of the pool's steps
        ax.stairs(
            busy[:, p], edges, baseline=None, color=color, linewidth=1.5, label=f"busy ({name})"
        )
        ax.stairs(up[:, p], edges, baseline=None, color=color, linestyle="--", label=f"up ({name})")
    ax.set_xlabel("time [h]")
    ax.set_ylabel("chips (bin average)")
    ax.set_ylim(0.0, 1.1 * max(float(np.nanmax(up, initial=0.0)), float(np.nanmax(busy)), 1.0))
    ax.set_xlim(edges[0], edges[-1])
    queue = ax.twinx()
    queue.stairs(
        np.asarray(series.queued_jobs, dtype=float),
        edges,
        baseline=None,
        color="tab:gray",
        alpha=0.8,
        label="queued jobs",
    )
    queue.set_ylabel("queued jobs (bin average)", color="tab:gray")
    queue.set_ylim(0.0, 1.1 * max(float(np.nanmax(series.queued_jobs, initial=0.0)), 1.0))
    handles, labels = ax.get_legend_handles_labels()
    q_handles, q_labels = queue.get_legend_handles_labels()
    ax.legend(
        handles + q_handles,
        labels + q_labels,
        loc="lower left",
        bbox_to_anchor=(0.0, 1.01),  # above the plot, clear of the steps
        ncol=(len(labels) + 2) // 2,  # filled by column: one column per pool, then the queue
        fontsize="small",
        frameon=False,
    )
    ax.grid(alpha=0.3)
    return ax


__all__ = [
    "COST_PARTS",
    "Results",
    "axis_label",
    "cost_vs_time",
    "ecdf",
    "pareto_frontier",
    "sweep_line",
    "tco_breakdown",
    "tco_distribution",
    "tornado",
    "utilization_series",
]
