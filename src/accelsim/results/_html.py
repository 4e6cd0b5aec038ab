"""Results as HTML tables, for notebooks (``_repr_html_``), like pandas and xarray objects.

The cells are the text summaries' own (:meth:`Result.as_table`, :meth:`Comparison.as_table`):
a mean reads with its 95 % Monte Carlo error exactly as in ``summary()``. Jinja2 builds the
markup with autoescaping on, so a scenario, option or input name is shown, never run.
The study results (sweeps, sensitivity) live in a layer above; they pass themselves in and
are read by their attributes.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np

from accelsim.results._format import Z95, Table, format_error, format_value

_TEMPLATE = """\
<div class="accelsim-table">
<style>
.accelsim-table table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
.accelsim-table th, .accelsim-table td { padding: 0.2em 0.6em; text-align: right; }
.accelsim-table tbody th { text-align: left; font-weight: normal; }
.accelsim-table thead th { border-bottom: 1px solid currentColor; }
.accelsim-table caption, .accelsim-table p { text-align: left; opacity: 0.8; font-size: 0.9em; }
</style>
<table>
{% if title %}<caption>{{ title }}</caption>{% endif %}
<thead><tr>{% for h in header %}<th>{{ h }}</th>{% endfor %}</tr></thead>
<tbody>
{% for row in rows %}<tr><th>{{ row[0] }}</th>
{% for c in row[1:] %}<td>{{ c }}</td>{% endfor %}</tr>
{% endfor %}
</tbody>
</table>
{% if note %}<p>{{ note }}</p>{% endif %}
{% if choice %}<p><strong>Recommendation: {{ choice }}</strong></p>
<ul>{% for reason in reasons %}<li>{{ reason }}</li>{% endfor %}</ul>{% endif %}
</div>
"""


@cache
def _template() -> Any:
    import jinja2

    return jinja2.Environment(autoescape=True).from_string(_TEMPLATE)


def table_html(table: Table, choice: str = "", reasons: Sequence[str] = ()) -> str:
    """A :class:`Table` as an HTML table (its title as caption, its note under it), with an
    optional recommendation under it. Every cell is escaped."""
    return str(
        _template().render(
            title=table.title,
            header=table.header,
            rows=table.rows,
            note=table.note,
            choice=choice,
            reasons=list(reasons),
        )
    )


def result_html(result: Any) -> str:
    """:meth:`Result.summary` as HTML."""
    return table_html(result.as_table())


def comparison_html(comparison: Any) -> str:
    """:meth:`Comparison.table` as HTML, with the recommendation when there is one."""
    table = comparison.as_table()
    if len(comparison.options) < 2 or not all(
        "tco_usd" in r.metrics for r in comparison.results.values()
    ):
        return table_html(table)
    rec = comparison.recommendation
    return table_html(table, rec.choice, rec.rationale)


def sweep_html(sweep: Any) -> str:
    """A sweep's tidy summary (``rows``): one row per point and metric, mean ± 95 % MC error."""
    rows = []
    for r in sweep.rows:
        m = r["metric"]
        at = ", ".join(f"{k}={r[k]}" for k in sweep.keys)
        rows.append(
            (
                at,
                m,
                f"{format_value(m, r['mean'])} ± {format_error(m, Z95 * r['std_error'])}",
                format_value(m, r["p5"]),
                format_value(m, r["p50"]),
                format_value(m, r["p95"]),
            )
        )
    runs = sorted({res.runs for res in sweep.results})
    title = f"sweep of {len(sweep.points)} points, {'/'.join(map(str, runs))} runs each"
    header = ("point", "metric", "mean ± 95% MC error", "P5", "P50", "P95")
    return table_html(Table(header, tuple(rows), title))


def sensitivity_html(result: Any) -> str:
    """Any result of :func:`accelsim.sensitivity` as HTML (read by its attributes)."""
    rows: tuple[tuple[str, ...], ...]
    header: tuple[str, ...]
    if hasattr(result, "total_order"):  # Sobol
        order = np.argsort(-result.total_order, kind="stable")
        pct = f"{100 * result.confidence_level:g}%"
        lo1, hi1 = result.first_order_ci[:, 0], result.first_order_ci[:, 1]
        lot, hit = result.total_order_ci[:, 0], result.total_order_ci[:, 1]
        rows = tuple(
            (
                result.names[i],
                f"{result.first_order[i]:.3f}",
                f"[{lo1[i]:.3f}, {hi1[i]:.3f}]",
                f"{result.total_order[i]:.3f}",
                f"[{lot[i]:.3f}, {hit[i]:.3f}]",
            )
            for i in order
        )
        header = ("input", "S1", f"S1 {pct}", "ST", f"ST {pct}")
        title = f"Sobol indices of {result.metric} (base sample {result.runs})"
    elif hasattr(result, "mu_star"):  # Morris
        order = np.argsort(-result.mu_star, kind="stable")
        rows = tuple(
            (
                result.names[i],
                f"{result.mu_star[i]:.4g}",
                f"±{result.mu_star_conf[i]:.2g}",
                f"{result.mu[i]:+.4g}",
                f"{result.sigma[i]:.4g}",
            )
            for i in order
        )
        header = ("input", "mu*", "95%", "mu", "sigma")
        title = f"Morris screening of {result.metric} ({result.trajectories} trajectories)"
    elif hasattr(result, "swing"):  # tornado
        rows = tuple(
            (n, f"{lo:.4g}", f"{hi:.4g}", f"{sw:.4g}")
            for n, lo, hi, sw in zip(
                result.names, result.low, result.high, result.swing, strict=True
            )
        )
        header = ("input", "at P10", "at P90", "swing")
        title = f"tornado of {result.metric}: base (all P50) = {result.base:.4g}"
    else:  # Spearman: (name, rho) pairs
        rows = tuple((str(n), f"{r:+.2f}") for n, r in result)
        header = ("input", "spearman rho")
        title = "Spearman rank correlation of each input with the metric"
    return table_html(Table(header, rows, title))


__all__ = [
    "comparison_html",
    "result_html",
    "sensitivity_html",
    "sweep_html",
    "table_html",
]
