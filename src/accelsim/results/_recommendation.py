"""The recommendation of a comparison: which option to pick, and why, in plain words.

The choice is the option with the lowest expected TCO (delay cost included, so a user who
values time sets ``delay_usd_per_day``). The rationale states how sure that is (the paired
probability of being cheaper), how the options differ in time to train, how much of the
cost difference engineering hours explain, and the practical checks that numbers alone
hide: framework fit (porting to XLA), project stage, lock-in, and capacity waits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from accelsim import catalog
from accelsim.results._format import format_value
from accelsim.results._result import Result

_CLOSE_CALL = 0.65
"""Below this paired probability of being cheaper, cost alone does not decide."""


@dataclass(frozen=True)
class Recommendation:
    """A choice among options and the reasons for it, in plain words."""

    choice: str
    rationale: tuple[str, ...]

    def __str__(self) -> str:
        lines = [f"Recommendation: {self.choice}"]
        lines += [f"  - {reason}" for reason in self.rationale]
        return "\n".join(lines)


def _label(name: str, res: Result) -> str:
    info = res.info
    if info is None:
        return name
    return f"{name} ({info.chips:,} x {info.chip} on {info.provider} {info.pricing})"


def _providers(chip_id: str) -> list[str]:
    return sorted({o.provider for o in catalog.offers(chip=chip_id)})


def _prob_less(results: Mapping[str, Result], metric: str, a: str, b: str) -> float:
    return float(np.mean(results[a].samples(metric) < results[b].samples(metric)))


def recommend(results: Mapping[str, Result]) -> Recommendation:
    """Pick the option with the lowest mean TCO and explain the choice."""
    if "tco_usd" not in next(iter(results.values())).data:
        raise ValueError("a recommendation needs the tco_usd metric in every result")
    ranked = sorted(results, key=lambda k: results[k].mean("tco_usd"))
    best = ranked[0]
    res = results[best]
    reasons: list[str] = []
    if len(ranked) == 1:
        return Recommendation(best, ("only one option was compared",))
    runner = ranked[1]
    other = results[runner]
    p = _prob_less(results, "tco_usd", best, runner)
    reasons.append(
        f"{_label(best, res)} has the lowest expected TCO: "
        f"{format_value('tco_usd', res.mean('tco_usd'))} "
        f"vs {format_value('tco_usd', other.mean('tco_usd'))} for {runner}; it is cheaper in "
        f"{p:.0%} of paired runs."
    )
    if p < _CLOSE_CALL:
        reasons.append(
            "That is too close to call on cost alone: decide on time to train, lock-in and "
            "the team's familiarity with each stack."
        )
    if "time_to_train_days" in res.data:
        t_best, t_other = (
            res.quantile("time_to_train_days", 0.5),
            other.quantile("time_to_train_days", 0.5),
        )
        faster = _prob_less(results, "time_to_train_days", best, runner)
        verb = "sooner" if t_best <= t_other else "later"
        reasons.append(
            f"Median time to a trained model: {t_best:.0f} d vs {t_other:.0f} d ({verb}); "
            f"{best} finishes first in {faster:.0%} of paired runs."
        )
    if "engineering_cost_usd" in res.data:
        d_total = other.mean("tco_usd") - res.mean("tco_usd")
        d_eng = other.mean("engineering_cost_usd") - res.mean("engineering_cost_usd")
        if d_total > 0:
            reasons.append(
                f"Engineering hours account for {format_value('engineering_cost_usd', d_eng)} "
                f"of the {format_value('tco_usd', d_total)} difference in expected TCO "
                f"({d_eng / d_total:.0%})."
            )
    reasons += _practical_checks(best, res, runner, other)
    return Recommendation(best, tuple(reasons))


def _practical_checks(best: str, res: Result, runner: str, other: Result) -> list[str]:
    """Framework fit, stage, lock-in and wait-time remarks for the chosen option."""
    info, alt = res.info, other.info
    out: list[str] = []
    if info is None or alt is None:
        return out
    for name, i, r in ((best, info, res), (runner, alt, other)):
        if i.fit == "ported":
            out.append(
                f"{name}: the {i.framework} code must be ported to the {i.stack} stack first "
                f"(median {r.quantile('porting_days', 0.5):.0f} d of porting before the first "
                f"step, included above)."
            )
    if info.stage == "prototype":
        out.append(
            "Prototype stage: every architecture change costs re-optimisation, more so on a "
            "stack the code is not native to; a locked production run favours the chip with "
            "the best cost per delivered FLOP."
        )
    providers = _providers(info.chip)
    if info.kind == "tpu":
        out.append(
            f"Lock-in: {info.chip} is offered only by {', '.join(providers)}; a GPU option "
            f"keeps several clouds and on-prem open."
        )
    elif len(providers) > 1:
        out.append(
            f"Portability: {info.chip} is offered by {len(providers)} providers "
            f"({', '.join(providers)})."
        )
    if "wait_days" in res.data:
        w_best, w_other = res.mean("wait_days"), other.mean("wait_days")
        if w_best > w_other + 7:
            out.append(
                f"Capacity: expect {w_best:.0f} d of lead time or quota wait vs {w_other:.0f} d "
                f"for {runner}."
            )
    return out


__all__ = ["recommend"]
