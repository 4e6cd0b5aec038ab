"""Reserved capacity paid but not used: a commitment's term against the hours a run holds.

A commitment (``commit_1y``, ``commit_3y``) or capacity block is paid for its whole charged
term (``term_share`` of it, all by default) whether the chips are used or not. A one-month
run on a one-year commitment pays twelve months: that is in its TCO, and it is named here so
a reader sees why (:func:`unused_terms`): the days paid, the days the pool is held (from the
end of the lead time to the end of the run), and the unused share ``1 - held / paid`` of what
the pool pays, all medians over runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from accelsim.engines import charged_term_hours, is_reserved
from accelsim.results._format import format_value
from accelsim.results._result import Result

UNUSED_NOTE_SHARE = 0.05
"""Unused share of a reserved term from which it is named (below, rounding). [fraction]"""


@dataclass(frozen=True)
class UnusedTerm:
    """A reserved pool's paid term against its use (medians over runs)."""

    pool: str
    """The pool, ``"1,024 x h100-sxm commit_1y"``."""
    paid_days: float
    """Days of the term the pool pays for. [d]"""
    held_days: float
    """Days the pool is held by the work. [d]"""
    unused_share: float
    """``1 - held / paid``: share of what the pool pays for that is not used. [fraction]"""
    unused_usd: float | None
    """What the unused share costs, when the pool is the option's only priced one. [USD]"""

    def words(self, option: str) -> str:
        """``"c1y pays for 365 d of reserved term on 1,024 x h100-sxm commit_1y and holds it
        43 d (median): 88% of what it pays for is unused, $60.6M of its hardware cost..."``."""
        cost = (
            ""
            if self.unused_usd is None
            else f", {format_value('hardware_cost_usd', self.unused_usd)} of its hardware cost"
        )
        return (
            f"{option} pays for {self.paid_days:,.0f} d of reserved term on {self.pool} and "
            f"holds it {self.held_days:,.0f} d (median): {self.unused_share:.0%} of what it "
            f"pays for is unused{cost}. A shorter term, term_share (the share of the term "
            f"this work carries) or on-demand pricing pays for less idle time."
        )


def _held_hours(res: Result, index: int, pools: int) -> np.ndarray | None:
    """Hours pool ``index`` is held in each run: ``held_hours_pool<i>``, or ``held_hours``
    (the training run's pool, the first one)."""
    if f"held_hours_pool{index}" in res.data:
        return res.samples(f"held_hours_pool{index}")
    if "held_hours" in res.data and (index == 0 or pools == 1):
        return res.samples("held_hours")
    return None


def unused_terms(res: Result) -> list[UnusedTerm]:
    """The reserved pools of ``res``'s scenario whose median unused share is at least
    :data:`UNUSED_NOTE_SHARE` (none without a scenario or a reserved pool)."""
    scenario = res.scenario
    if scenario is None:
        return []
    out = []
    priced = [p for p in scenario.fleet if p.provider is not None]
    for i, pool in enumerate(scenario.fleet):
        if pool.provider is None or not is_reserved(pool):
            continue
        held = _held_hours(res, i, len(scenario.fleet))
        if held is None:
            continue
        paid = np.asarray(charged_term_hours(pool, held), dtype=float)
        unused = np.where(paid > 0, 1.0 - held / np.where(paid > 0, paid, 1.0), 0.0)
        share = float(np.median(unused))
        if share < UNUSED_NOTE_SHARE:
            continue
        alone = len(priced) == 1 and "hardware_cost_usd" in res.data
        cost = float(np.median(unused * res.samples("hardware_cost_usd"))) if alone else None
        out.append(
            UnusedTerm(
                pool=f"{pool.count:,} x {pool.chip} {pool.pricing}",
                paid_days=float(np.median(paid)) / 24.0,
                held_days=float(np.median(held)) / 24.0,
                unused_share=share,
                unused_usd=cost,
            )
        )
    return out


def unused_notes(results: Mapping[str, Result] | Result) -> list[str]:
    """One sentence per reserved pool that pays for a term its work leaves mostly idle."""
    named = {results.scenario_name: results} if isinstance(results, Result) else results
    return [term.words(name) for name, res in named.items() for term in unused_terms(res)]


__all__ = ["UNUSED_NOTE_SHARE", "UnusedTerm", "unused_notes", "unused_terms"]
