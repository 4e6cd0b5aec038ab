"""The report's figures: :mod:`accelsim.plot` drawings (and a timeline) as inline SVG.

Figures are drawn on ``matplotlib.figure.Figure`` objects, never through pyplot, so a report
changes no global state (no backend, no open figures, no ``rcParams`` outside a
``rc_context``). Text stays text in the SVG (``svg.fonttype: none``), so the page is
searchable and prints sharply; matplotlib escapes it as XML. Ids inside each SVG are salted
with the figure's own name, so two figures inlined in one page never share an id and the
same study gives the same markup.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
from markupsafe import Markup

from accelsim import plot
from accelsim.results import Result, format_value

if TYPE_CHECKING:
    from matplotlib.axes import Axes

_SIZE = (6.4, 3.8)
_SVG_ROOT_SIZE = re.compile(r'^(<svg[^>]*?)\s(?:width|height)="[^"]*"')


def available() -> bool:
    """Whether matplotlib (the ``plot`` extra, >= 3.8) can draw the figures."""
    try:
        from matplotlib.axes import Axes
    except ImportError:
        return False
    return hasattr(Axes, "ecdf")


def to_svg(draw: Callable[[Axes], object], name: str, size: tuple[float, float] = _SIZE) -> Markup:
    """Draw with ``draw(ax)`` on a new figure and return the ``<svg>`` element, sized by CSS.

    ``name`` salts the SVG's ids (unique per page). The XML prologue, the DOCTYPE and the
    root's fixed width and height are dropped: the page sets the width, the ``viewBox``
    keeps the aspect ratio.
    """
    import matplotlib
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, layout="constrained")
    draw(fig.add_subplot())
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": f"accelsim-{name}"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    svg = text[text.index("<svg") :]
    for _ in range(2):
        svg = _SVG_ROOT_SIZE.sub(r"\1", svg, count=1)
    # The markup is matplotlib's: every string in it (option names in legends and ticks) is
    # XML-escaped by its SVG writer, which tests/unit/test_report.py checks with a hostile name.
    return Markup(svg.replace("<svg ", f'<svg role="img" aria-label="{name}" ', 1))


def ecdf(results: Mapping[str, Result], metric: str) -> Callable[[Axes], object]:
    """An ECDF of ``metric`` per option (:func:`accelsim.plot.ecdf`)."""
    return lambda ax: plot.ecdf(dict(results), metric=metric, ax=ax)


def tco_breakdown(results: Mapping[str, Result]) -> Callable[[Axes], object]:
    """Mean TCO per option, stacked by part (:func:`accelsim.plot.tco_breakdown`)."""
    return lambda ax: plot.tco_breakdown(dict(results), ax=ax)


PHASES: tuple[tuple[str, str], ...] = (
    ("before_days", "lead time, or porting and optimisation (the longer)"),
    ("queue_days", "queue"),
    ("compute_days", "training, failure-free"),
    ("failure_overhead_days", "failures and badput"),
)
"""The phases of time to train in calendar order: they add up run by run to
``time_to_train_days`` (the longer of capacity wait and the engineering before the first
step -- porting, then optimisation -- then the queue, then training, which is compute plus
failure overhead)."""


def phase_samples(res: Result) -> dict[str, np.ndarray]:
    """Each phase of :data:`PHASES` for every run of a training result [d]."""
    # The first phase is what is left of time to train once the queue and training are
    # taken out: the longer of lead time and the engineering that precedes the first step.
    queue = res.samples("wait_days") - res.samples("lead_time_days")
    return {
        "before_days": res.samples("time_to_train_days") - queue - res.samples("training_days"),
        "queue_days": queue,
        "compute_days": res.samples("compute_days"),
        "failure_overhead_days": res.samples("failure_overhead_days"),
    }


def timeline(results: Mapping[str, Result]) -> Callable[[Axes], object]:
    """Mean days of each phase per option as one horizontal bar, phases in calendar order.

    Thin bars under each option show mean lead time and mean porting on their own: the two
    run side by side, and the first phase is the longer of the two in each run.
    """

    def draw(ax: Axes) -> None:
        names: Sequence[str] = list(results)
        labels = [plot.plain_label(n) for n in names]
        colors = ("#9aa5b1", "#e6a23c", "#3d7ab8", "#c0392b")
        y = np.arange(len(names), dtype=float)[::-1]
        for i, name in enumerate(names):
            res = results[name]
            means = {k: float(np.mean(v)) for k, v in phase_samples(res).items()}
            left = 0.0
            for (key, label), color in zip(PHASES, colors, strict=True):
                width = means[key]
                ax.barh(
                    y[i], width, left=left, height=0.5, color=color, label=label if i == 0 else None
                )
                left += width
            ax.text(
                left, y[i], "  " + format_value("time_to_train_days", left), va="center", fontsize=9
            )
            for offset, metric, style in (
                (-0.33, "lead_time_days", "--"),
                (-0.42, "porting_days", ":"),
            ):
                mean = res.mean(metric)
                if mean > 0:
                    ax.plot(
                        [0.0, mean],
                        [y[i] + offset] * 2,
                        color="black",
                        linestyle=style,
                        linewidth=1.2,
                    )
        ax.plot([], [], color="black", linestyle="--", label="lead time alone")
        ax.plot([], [], color="black", linestyle=":", label="porting alone")
        ax.set_yticks(y, labels)
        ax.set_xlabel("mean days from the decision [d]")
        ax.set_xlim(0.0, ax.get_xlim()[1] * 1.12)
        ax.grid(axis="x", alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)

    return draw
