"""The recommendation of a comparison: which option to pick, and why, in plain words.

The choice is the option that is cheaper (TCO, delay cost included, so a user who values
time sets ``delay_usd_per_day``) in the most paired runs: for each option, the smallest
margin ``P(it < other) - P(other < it)`` over the other options; the largest margin wins
(ties: the lower median TCO, then the order given). Paired probabilities and medians, not
means, because a mean is dominated by a few runs of a heavy tail (spot capacity that waits
for weeks) and is infinite as soon as one run never finishes; issue 15 saw a mean-based
choice that was cheaper in 24 % of runs. Every number the text prints is the number it
reasons with: the stated probability is :meth:`Comparison.prob_less`, the medians are the
medians, and when neither option is cheaper in clearly more runs the text says it cannot
decide on cost. It then states how the options differ in time to train, how much of the
cost difference engineering hours explain, and the practical checks that numbers alone
hide: framework fit (porting to XLA), project stage, lock-in, and capacity waits.

With :class:`~accelsim.scenario.Goals` (a deadline, a budget, an SLO, a queue-wait limit and
a confidence) the rule runs only over the options that meet every goal at once in at least
``confidence`` of their runs (:func:`accelsim.results._goals.prob_meets`); the text names the
options left out and by how much each misses ("tpu meets the deadline in 62% of runs (needs
90%); P90 time to train 141 d vs 120 d"). When no option meets the goals the recommendation
says so (``meets_goals`` false, not ``decided``) and names the closest option: the one
meeting all goals in the most runs (ties: the lower median TCO, then the order given).

Serving options carry their own goal: the SLO of their scenario. When every option is a
serving study that knows its scenario (:attr:`Result.scenario`), ``slo_attainment >=`` the
strictest ``SLO.attainment`` among them is added to the goals (at the goals' confidence,
0.9 by default): an endpoint that misses its latency target is not an option, however cheap.

Credits (``credits_usd``, negative, inside ``tco_usd``): when any option has them, the same
rule is run again on ``tco_usd - credits_usd``; if it picks another option, the last reason
says "Credits decide the choice" and names it (``Recommendation.credits_decide``), otherwise
that they do not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from accelsim import catalog
from accelsim.results._commitment import unused_notes
from accelsim.results._finish import (
    FINISH_CONFIDENCE,
    complete_share,
    completes,
    finish_notes,
    incomplete_words,
)
from accelsim.results._format import format_value
from accelsim.results._goals import goal_words, meets, misses, pct, prob_meets
from accelsim.results._porting import PORTING_NOT_WORTH, porting_over_compute
from accelsim.results._result import Result
from accelsim.scenario import Goals, Serving

CLOSE_CALL = 0.65
"""Below this paired probability of being cheaper, cost alone does not decide."""


@dataclass(frozen=True)
class Recommendation:
    """A choice among options and the reasons for it, in plain words.

    ``decided`` is false when cost does not separate the choice from the runner-up (it is
    cheaper in fewer than :data:`CLOSE_CALL` of the paired runs, or in no more runs than the
    runner-up); ``choice`` is then only the better of a close call, and the first reason
    says so. ``prob_cheaper`` is ``P(choice < runner-up)`` over paired runs (``nan`` with one
    option).

    ``meets_goals`` is false when goals were given and no option meets them: ``choice`` is
    then the closest option (meeting all goals in the most runs), not ``decided``, and the
    reasons say by how much each option misses.
    """

    choice: str
    rationale: tuple[str, ...]
    runner_up: str | None = None
    prob_cheaper: float = float("nan")
    decided: bool = True
    meets_goals: bool = True
    credits_decide: bool = False
    """True when the scenarios' credits (``credits_usd``) change the choice: the same rule on
    ``tco_usd`` without them picks another option (the rationale then says which)."""
    gate: str = "meets the goals"
    """What no option does when ``meets_goals`` is false (the headline's words)."""

    @property
    def headline(self) -> str:
        """The choice as the first line states it: the option, a close call, or none."""
        if not self.meets_goals:
            return f"none {self.gate} (closest: {self.choice})"
        if self.decided:
            return self.choice
        return f"{self.choice} (a close call on cost)"

    def __str__(self) -> str:
        lines = [f"Recommendation: {self.headline}"]
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
    """``P(a < b)`` over paired runs: the same expression as :meth:`Comparison.prob_less`."""
    return float(np.mean(results[a].samples(metric) < results[b].samples(metric)))


def _margin(results: Mapping[str, Result], a: str, b: str) -> float:
    return _prob_less(results, "tco_usd", a, b) - _prob_less(results, "tco_usd", b, a)


def _median(res: Result, metric: str) -> float:
    return res.quantile(metric, 0.5)


_pct = pct  # one percentage format for cost and goal probabilities ("cheaper in 0 %" = never)


def _compare_words(metric: str, a: float, b: float, less: str, more: str) -> str:
    """``"X vs Y (less)"``, or ``"(about the same)"`` where the printed values agree."""
    ta, tb = format_value(metric, a), format_value(metric, b)
    if ta == tb or a == b:
        return f"{ta} vs {tb} (about the same)"
    return f"{ta} vs {tb} ({less if a < b else more})"


def recommend(results: Mapping[str, Result], goals: Goals | None = None) -> Recommendation:
    """Pick the option cheaper in the most paired runs and explain the choice, among the
    options that complete their work (and meet ``goals``, when given) in enough runs.

    See the module docstring for the rule; every probability printed is
    ``Comparison.prob_less`` of the options named (or ``Comparison.prob_meets``), every
    median is ``Result.quantile(metric, 0.5)``. Options without ``tco_usd`` (an unpriced
    pool) are named and left out of the cost rule.
    """
    if not results:
        raise ValueError("a recommendation needs at least one option")
    priced = {k: r for k, r in results.items() if "tco_usd" in r.data}
    unpriced = [k for k in results if k not in priced]
    if not priced:
        return Recommendation(
            next(iter(results)), (unpriced_words(unpriced, none_priced=True),), decided=False
        )
    base = _recommend_priced(priced, goals)
    if idle := unused_notes(priced):
        base = replace(base, rationale=(*base.rationale, *idle))
    if unpriced:
        base = replace(base, rationale=(*base.rationale, unpriced_words(unpriced)))
    return base


PRICE_HINT = (
    "give its pool a provider and pricing the catalog prices, or write a price sheet "
    "(accelsim catalog quote ..., or a YAML sheet by hand) and load it with "
    "acs.catalog.load(path)"
)
"""How to put a price on an unpriced option, in the words of the recommendation."""


def unpriced_words(names: Sequence[str], *, none_priced: bool = False) -> str:
    """The reason naming the options without a price (no ``tco_usd``) and how to add one."""
    listed = ", ".join(names)
    verb = "has" if len(names) == 1 else "have"
    if none_priced:
        return (
            f"No option has a price ({listed}): cost cannot be compared. To compare it, "
            f"{PRICE_HINT}."
        )
    return (
        f"{listed} {verb} no price (no tco_usd: an unpriced pool), so cost does not rank "
        f"{'it' if len(names) == 1 else 'them'}; compare its time and usage in the table. "
        f"To price it, {PRICE_HINT}."
    )


def _recommend_priced(results: Mapping[str, Result], goals: Goals | None) -> Recommendation:
    """The rule over priced options: the serving SLO as a goal, then completion and goals."""
    slo = _serving_slo(results)
    if slo is not None:
        goals = (
            slo
            if goals is None
            else goals.model_copy(
                update={"slo_attainment": goals.slo_attainment or slo.slo_attainment}
            )
        )
    base = _recommend_with_goals(results, goals)
    if slo is not None and goals is not None:
        base = replace(base, rationale=(_slo_words(results, goals), *base.rationale))
        rival = base.runner_up or next((k for k in results if k != base.choice), None)
        if rival is not None:
            checks = serving_checks(results, base.choice, rival)
            base = replace(base, rationale=(*base.rationale, *checks))
    return _credits_note(results, goals, base)


def without_credits(res: Result) -> Result:
    """``res`` with its credits taken out of ``tco_usd`` (itself when it has none)."""
    if "credits_usd" not in res.data:
        return res
    tco = res.samples("tco_usd") - res.samples("credits_usd")
    data = {k: v for k, v in res.data.items() if k != "credits_usd"} | {"tco_usd": tco}
    return replace(res, data=data)


def _credits_note(
    results: Mapping[str, Result], goals: Goals | None, rec: Recommendation
) -> Recommendation:
    """Say when credits decide the choice: the same rule on ``tco_usd`` without the
    ``credits_usd`` line picks another option."""
    with_credits = [k for k, r in results.items() if np.any(r.data.get("credits_usd", 0.0))]
    if not with_credits or len(results) < 2:
        return rec
    bare = {k: without_credits(r) for k, r in results.items()}
    other = recommend(bare, goals)
    if other.choice == rec.choice:
        note = (
            f"Credits do not decide the choice: without them ({', '.join(with_credits)}) "
            f"the same rule still picks {rec.choice}."
        )
    else:
        saved = -_median(results[rec.choice], "credits_usd") if rec.choice in with_credits else 0
        note = (
            f"Credits decide the choice: without them the same rule picks {other.choice}"
            + (
                f" (median credits of {rec.choice}: {format_value('tco_usd', saved)})"
                if saved
                else ""
            )
            + "; check that they cover this work and do not expire before it."
        )
    return replace(rec, rationale=(*rec.rationale, note), credits_decide=other.choice != rec.choice)


def _recommend_on_cost(results: Mapping[str, Result]) -> Recommendation:
    """The cost rule alone (module docstring), over every option given."""
    names = list(results)
    if len(names) == 1:
        return Recommendation(names[0], ("only one option was compared",))

    def worst_margin(a: str) -> tuple[float, str]:
        # the option's closest competitor: the smallest margin (ties: the order given)
        return min(((_margin(results, a, b), b) for b in names if b != a), key=lambda t: t[0])

    margins = {a: worst_margin(a) for a in names}
    best = max(
        names,
        key=lambda a: (margins[a][0], -_median(results[a], "tco_usd"), -names.index(a)),
    )
    runner = margins[best][1]
    res, other = results[best], results[runner]
    p = _prob_less(results, "tco_usd", best, runner)
    q = _prob_less(results, "tco_usd", runner, best)
    ties = 1.0 - p - q
    decided = p > q and p >= CLOSE_CALL
    m_best, m_other = _median(res, "tco_usd"), _median(other, "tco_usd")
    split = f"{runner} in {_pct(q)}" + (f", equal in {_pct(ties)}" if ties > 0 else "")
    reasons = [
        f"{_label(best, res)} is cheaper than {runner} in {_pct(p)} of paired runs ({split}); "
        f"median TCO {_compare_words('tco_usd', m_best, m_other, 'lower', 'higher')}."
    ]
    if not decided:
        if p == q:
            why = f"{best} and {runner} are cheaper equally often"
        elif p < q:
            why = (
                f"no option is cheaper than every other in most paired runs ({runner} beats "
                f"{best} in {_pct(q)}, and {best} beats its other rivals)"
            )
        else:
            why = f"{best} is cheaper in only {_pct(p)} of paired runs"
        other_factors = (
            "SLO risk, lock-in and the team's familiarity with each serving stack"
            if _serving(res) is not None
            else "time to train, lock-in and the team's familiarity with each stack"
        )
        reasons.append(f"Cannot decide on cost: {why}. Decide on {other_factors}.")
    reasons += _tail_note(best, res, runner, other)
    reasons += finish_notes(results)
    reasons += _time_note(results, best, runner)
    reasons += _engineering_note(best, res, other)
    reasons += _practical_checks(best, res, runner, other)
    return Recommendation(best, tuple(reasons), runner, p, decided)


def _serving_slo(results: Mapping[str, Result]) -> Goals | None:
    """The serving scenarios' own SLO as a goal: an endpoint that misses its latency target
    is not an option, however cheap. None unless every option is a serving study that
    knows its scenario. The attainment is the strictest the options ask for."""
    targets = []
    for res in results.values():
        work = None if res.scenario is None else res.scenario.workload
        slo = getattr(work, "slo", None)
        if slo is None or "slo_attainment" not in res.data:
            return None
        targets.append(float(slo.attainment))
    return Goals(slo_attainment=max(targets))


def _slo_words(results: Mapping[str, Result], goals: Goals) -> str:
    slos = {
        (s.ttft_ms, s.tpot_ms, s.percentile)
        for r in results.values()
        if r.scenario is not None and (s := getattr(r.scenario.workload, "slo", None))
    }
    bounds = "; ".join(
        f"TTFT <= {ttft:g} ms and TPOT <= {tpot:g} ms at P{pc:g}" for ttft, tpot, pc in sorted(slos)
    )
    return (
        f"Serving SLO ({bounds}) is a goal: an option must serve at least "
        f"{pct(goals.slo_attainment or 0.0)} of requests within it in at least "
        f"{pct(goals.confidence)} of runs."
    )


def _complete_words(results: Mapping[str, Result]) -> str:
    """What completing its work means for the options compared: ``"finish within its
    horizon"`` (training), ``"serve every request"`` (serving), ``"keep up with its job
    stream"`` (streams), joined; the general words when the results do not say."""
    words = []
    metrics = {m.rsplit(".", 1)[-1] for r in results.values() for m in r.data}
    if "time_to_train_days" in metrics:
        words.append("finish within its horizon")
    if "requests_dropped" in metrics:
        words.append("serve every request")
    if "offered_load" in metrics:
        words.append("keep up with its job stream on a fleet that has arrived")
    return " and ".join(words) or "complete its work"


def _left_out(name: str, res: Result, goals: Goals | None, p_all: float, need: float) -> str:
    """Why ``name`` is not an option: the goals it misses, and how rarely it completes."""
    parts = []
    if goals is not None and prob_meets(res, goals, option=name) < need:
        parts.append(misses(name, res, goals))
    if complete_share(res) < need:
        parts.append(incomplete_words(name, res, need))
    if not parts:
        parts.append(
            f"{name} meets the goals and completes its work, but both at once in only "
            f"{pct(p_all)} of runs (needs {pct(need)})."
        )
    return " ".join(parts)


def _recommend_with_goals(results: Mapping[str, Result], goals: Goals | None) -> Recommendation:
    """The cost rule over the options that complete their work and meet every goal at the
    confidence (module docstring); finishing is a goal even when no goals are given."""
    names = list(results)
    need = goals.confidence if goals is not None else FINISH_CONFIDENCE
    ok = {k: completes(r) for k, r in results.items()}
    if goals is not None:
        ok = {k: ok[k] & meets(r, goals, option=k) for k, r in results.items()}
    p_all = {k: float(np.mean(v)) for k, v in ok.items()}
    feasible = [k for k in names if p_all[k] >= need]
    if goals is None and len(feasible) == len(names):
        return _recommend_on_cost(results)
    goal_names = () if goals is None else goals.names
    together = ", all at once," if goal_names else ""
    words = [goal_words(goals, g) for g in goal_names] if goals is not None else []
    done = _complete_words(results)
    wanted = f"{' and '.join([*words, done])}{together} in at least {pct(need)} of runs"
    left_out = [_left_out(k, results[k], goals, p_all[k], need) for k in names if k not in feasible]
    gate = "meets the goals" if goals is not None else "completes its work in enough runs"
    if not feasible:
        closest = max(
            names, key=lambda k: (p_all[k], -_median(results[k], "tco_usd"), -names.index(k))
        )
        reasons = (
            f"No option meets the goals: {wanted}."
            if goals is not None
            else f"No option can be recommended: none can {wanted}.",
            *left_out,
            f"Closest: {_label(closest, results[closest])} meets every goal in "
            f"{pct(p_all[closest])} of runs; relax a goal or the confidence, or add an option.",
        )
        return Recommendation(closest, reasons, decided=False, meets_goals=False, gate=gate)
    met = ", ".join(f"{k} in {pct(p_all[k])}" for k in feasible)
    head = (
        f"Goals: {wanted}; met by {met} of runs."
        if goals is not None
        else f"Finishing is always a goal: an option must {wanted}; met by {met} of runs."
    )
    excluded = [f"Left out: {m}" for m in left_out]
    if len(feasible) == 1:
        best = feasible[0]
        only = f"{_label(best, results[best])} is the only option that meets the goals."
        return Recommendation(best, (head, *excluded, only))
    base = _recommend_on_cost({k: results[k] for k in feasible})
    return replace(base, rationale=(head, *excluded, *base.rationale))


def _tail_note(best: str, res: Result, runner: str, other: Result) -> list[str]:
    """Where the means disagree with the choice, why: a few runs dominate a mean."""
    mean_best, mean_other = res.mean("tco_usd"), other.mean("tco_usd")
    if not (np.isfinite(mean_best) and np.isfinite(mean_other)):
        never = [n for n, r in ((best, res), (runner, other)) if not np.isfinite(r.mean("tco_usd"))]
        share = {n: float(np.mean(~np.isfinite(r.samples("tco_usd")))) for n, r in
                 ((best, res), (runner, other))}  # fmt: skip
        return [
            f"The mean TCO of {' and '.join(never)} is not finite: "
            + ", ".join(f"{n} never finishes in {_pct(share[n])} of runs" for n in never)
            + "; the medians and paired runs above are what compares."
        ]
    if mean_best <= mean_other:
        return []
    return [
        f"Its mean TCO is higher ({format_value('tco_usd', mean_best)} vs "
        f"{format_value('tco_usd', mean_other)}): a few expensive runs dominate it (P95 "
        f"{format_value('tco_usd', res.quantile('tco_usd', 0.95))} vs "
        f"{format_value('tco_usd', other.quantile('tco_usd', 0.95))}), so weigh that tail "
        f"if one bad outcome matters more than the typical one."
    ]


def _time_note(results: Mapping[str, Result], best: str, runner: str) -> list[str]:
    res, other = results[best], results[runner]
    metric = "time_to_train_days"
    if metric not in res.data or metric not in other.data:
        return []
    words = _compare_words(metric, _median(res, metric), _median(other, metric), "sooner", "later")
    faster = _prob_less(results, metric, best, runner)
    slower = _prob_less(results, metric, runner, best)
    return [
        f"Median time to a trained model: {words}; {best} finishes first in {_pct(faster)} "
        f"of paired runs, {runner} in {_pct(slower)}."
    ]


def _engineering_note(best: str, res: Result, other: Result) -> list[str]:
    """How much of the (mean) cost difference engineering hours explain, in words that read
    the sign: saved hours, or extra hours outweighed by other savings."""
    if "engineering_cost_usd" not in res.data or "engineering_cost_usd" not in other.data:
        return []
    d_total = other.mean("tco_usd") - res.mean("tco_usd")
    d_eng = other.mean("engineering_cost_usd") - res.mean("engineering_cost_usd")
    if not (np.isfinite(d_total) and np.isfinite(d_eng)) or d_total <= 0 or d_eng == 0:
        return []
    total = format_value("tco_usd", d_total)
    if d_eng > 0:
        return [
            f"Engineering hours account for {format_value('engineering_cost_usd', d_eng)} "
            f"({d_eng / d_total:.0%}) of its {total} lower expected TCO."
        ]
    return [
        f"It needs {format_value('engineering_cost_usd', -d_eng)} more engineering hours; "
        f"its other costs save more, for a {total} lower expected TCO."
    ]


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
            ratio = porting_over_compute(r)
            if ratio >= PORTING_NOT_WORTH:
                out.append(
                    f"{name}: not worth porting for this job: the port costs about "
                    f"{ratio:,.0f} times the job's compute (median), more than any chip "
                    f"could save on it; run it where the {i.framework} code runs natively, "
                    f"unless the port serves at least that many jobs like this one."
                )
    if info.stage == "prototype" and info.fine_tune is None:
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


def _serving(res: Result) -> Serving | None:
    work = None if res.scenario is None else res.scenario.workload
    return work if isinstance(work, Serving) else None


def serving_checks(results: Mapping[str, Result], best: str, runner: str) -> list[str]:
    """The serving practical checks of the choice and its runner-up, when both are serving
    studies that know their scenarios: SLO risk, serving-stack fit, lock-in.

    - *SLO risk*: ``P(slo_attainment >= target)`` of each, the target the strictest
      ``SLO.attainment`` of the two, computed by :func:`prob_meets` (the goals' rule).
    - *Serving-stack fit*: per option and software stack of its pools, the framework fit
      (``priors.framework_fit``), the stack's serving engines (``serving.yaml``
      ``serving_stacks``) and the median ``engineering_hours`` (porting, in the TCO).
    - *Lock-in*: an option on a TPU, or on a chip one provider alone offers, is named
      with the providers; otherwise the choice's portability.
    """
    pair = [(name, results[name]) for name in (best, runner)]
    works = [_serving(res) for _, res in pair]
    if any(w is None for w in works) or any("slo_attainment" not in r.data for _, r in pair):
        return []
    target = max(float(w.slo.attainment) for w in works if w is not None)
    goal = Goals(slo_attainment=target)
    p = {name: prob_meets(res, goal, "slo_attainment", option=name) for name, res in pair}
    out = [
        f"SLO risk: P(slo_attainment >= {target:.4g}) is {pct(p[best])} for {best} and "
        f"{pct(p[runner])} for {runner}."
    ]
    fit_table = catalog.priors().framework_fit
    stacks = catalog.serving_priors().serving_stacks
    for (name, res), work in zip(pair, works, strict=True):
        assert work is not None
        assert res.scenario is not None
        chips = sorted({pool.chip for pool in res.scenario.fleet})
        hours = res.quantile("engineering_hours", 0.5) if "engineering_hours" in res.data else None
        cost = (
            ""
            if hours is None
            else "; no porting"
            if f"{hours:,.0f}" == "0"
            else f"; median porting {hours:,.0f} engineer-hours, in its TCO"
        )
        for stack in sorted({catalog.chip(c).software_stack for c in chips}):
            on = ", ".join(c for c in chips if catalog.chip(c).software_stack == stack)
            fit = fit_table.fit(work.framework, stack)
            engines = ", ".join(stacks[stack].engines)
            if fit == "ported":
                out.append(
                    f"Serving stack: {name}'s {work.framework} model code must be ported to the "
                    f"{stack} stack of {on} to serve with {engines}{cost}."
                )
            else:
                out.append(
                    f"Serving stack: {name} serves {work.framework} model code on the {stack} "
                    f"stack of {on} ({fit}) with {engines}{cost}."
                )
    for name, res in pair:
        assert res.scenario is not None
        for chip_id in sorted({pool.chip for pool in res.scenario.fleet}):
            providers = _providers(chip_id)
            if catalog.chip(chip_id).kind == "tpu":
                out.append(
                    f"Lock-in: {name} serves on {chip_id}, a TPU offered only by "
                    f"{', '.join(providers)}; a GPU option keeps several clouds and on-prem open."
                )
            elif len(providers) == 1:
                out.append(
                    f"Lock-in: {name} serves on {chip_id}, offered only by {providers[0]} in "
                    f"the catalog."
                )
            elif name == best:
                out.append(
                    f"Portability: {chip_id} is offered by {len(providers)} providers "
                    f"({', '.join(providers)})."
                )
    return out


__all__ = ["CLOSE_CALL", "Recommendation", "recommend", "serving_checks"]
