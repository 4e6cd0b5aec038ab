"""Results of studies: :class:`Result` (one array per metric), :class:`Comparison` (options
on common random numbers), :class:`Recommendation`, and how numbers are formatted."""

from accelsim.results._commitment import UnusedTerm, unused_notes, unused_terms
from accelsim.results._comparison import Comparison, prob_lowest
from accelsim.results._finish import complete_share, completes, marked
from accelsim.results._format import (
    NOT_AVAILABLE,
    Z95,
    Table,
    format_error,
    format_usd,
    format_value,
    render_table,
    unit_of,
)
from accelsim.results._goals import GOAL_METRICS, goals_table, meets, prob_meets
from accelsim.results._html import sensitivity_html, sweep_html, table_html
from accelsim.results._recommendation import Recommendation, recommend
from accelsim.results._result import LOWER_BOUND_MARK, SUMMARY_STATS, Result, lower_bounds

__all__ = [
    "GOAL_METRICS",
    "LOWER_BOUND_MARK",
    "NOT_AVAILABLE",
    "SUMMARY_STATS",
    "Z95",
    "Comparison",
    "Recommendation",
    "Result",
    "Table",
    "UnusedTerm",
    "complete_share",
    "completes",
    "format_error",
    "format_usd",
    "format_value",
    "goals_table",
    "lower_bounds",
    "marked",
    "meets",
    "prob_lowest",
    "prob_meets",
    "recommend",
    "render_table",
    "sensitivity_html",
    "sweep_html",
    "table_html",
    "unit_of",
    "unused_notes",
    "unused_terms",
]
