"""Whether an option gets its work done, and which of its numbers are lower bounds.

A recommendation never rests on a censored number. A training run that does not finish
within its horizon has its time and cost counted up to the horizon only; an endpoint that
sheds requests serves less than it was asked; a job stream whose offered load reaches its
fleet's capacity (``offered_load >= 1``) queues more work at the horizon than it ran. Each
looks cheap because it did less. A run *completes* when ``finished`` (where reported) is
not 0 and every ``offered_load`` it reports (its own, or ``<workload>.offered_load`` in a
mix) is below 1: :func:`completes`.

The metrics that accumulate over a training run (its time, cost, chip-hours, energy) are
censored at the horizon in a run that does not finish, so every statistic of them over
runs that include one is a lower bound of the uncensored one (censoring only lowers a
value, hence every quantile and the mean): :func:`lower_bounds` names them, and tables,
report cards and JSON mark them (:data:`LOWER_BOUND_MARK`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from accelsim.results._format import format_value
from accelsim.results._goals import pct
from accelsim.results._result import (
    CENSORED_METRICS,
    LOWER_BOUND_MARK,
    Result,
    fleet_absent,
    lower_bounds,
)

FINISH_CONFIDENCE = 0.9
"""Share of runs an option must complete in, when no goals give a confidence. [fraction]"""


def _overloaded(res: Result) -> np.ndarray:
    """Runs in which some job stream's offered load reaches its fleet's capacity."""
    over = np.zeros(res.runs, dtype=bool)
    for metric in res.data:
        if metric.rsplit(".", 1)[-1] == "offered_load":
            over |= ~(res.samples(metric) < 1.0)  # nan: not known to keep up
    return over


def completes(res: Result) -> np.ndarray:
    """Which runs get the work done: ``finished`` not 0 and every ``offered_load`` below 1."""
    ok: np.ndarray = ~_overloaded(res) & ~fleet_absent(res)
    if "finished" in res.data:
        ok &= res.samples("finished") != 0
    return ok


def complete_share(res: Result) -> float:
    """The share of runs that complete (:func:`completes`)."""
    return float(np.mean(completes(res)))


def marked(res: Result, metric: str, text: str) -> str:
    """``text`` (a printed statistic of ``metric``) with :data:`LOWER_BOUND_MARK` in front
    when it is a lower bound."""
    return f"{LOWER_BOUND_MARK}{text}" if metric in lower_bounds(res) else text


def _spot_without_fallback(res: Result) -> bool:
    scenario = res.scenario
    if scenario is None:
        return res.info is not None and res.info.pricing == "spot"
    return any(
        p.pricing == "spot"
        and p.fallback_after_preemptions is None
        and p.fallback_after_days is None
        for p in scenario.fleet
    )


def fallback_hint(name: str, res: Result) -> str:
    """The suggestion for a spot option that does not finish, preempted before it can: a
    fallback to on-demand after some preemptions (``""`` when it does not apply)."""
    if "time_to_train_days" not in res.data or not _spot_without_fallback(res):
        return ""
    return (
        f" To make {name} finish, set fallback_after_preemptions (or fallback_after_days) "
        f"on its spot pool: after that many preemptions the run moves to on-demand capacity "
        f"and finishes, at a higher price; compare that option again."
    )


def incomplete_words(name: str, res: Result, need: float) -> str:
    """Why ``name`` is left out: how often it completes against the share needed, what an
    incomplete run is for its workload, and (spot training) the fallback that helps."""
    share = complete_share(res)
    needs = f"in {pct(share)} of runs (needs {pct(need)})"
    over = _overloaded(res)
    parts = []
    if "finished" in res.data and np.any(res.samples("finished") == 0):
        if "time_to_train_days" in res.data or lower_bounds(res):
            tco = format_value("tco_usd", res.quantile("tco_usd", 0.5))
            parts.append(
                f"{name} finishes within its horizon {needs}; in the other runs its time and "
                f"cost are counted up to the horizon only, so its median TCO of {tco} is a "
                f"lower bound, not a saving"
            )
        else:
            parts.append(f"{name} serves every request {needs}; in the other runs it sheds load")
    if over.any() and not fleet_absent(res).all():
        loads = [res.samples(m) for m in res.data if m.rsplit(".", 1)[-1] == "offered_load"]
        load = float(np.median(np.max(np.stack(loads), axis=0)))
        parts.append(
            f"{name} keeps up with its job stream in {pct(float(np.mean(~over)))} of runs "
            f"(median offered load {load:.3g}x its capacity): its queue grows to the "
            f"horizon, so its cost buys less work and its waits are lower bounds"
        )
    absent = fleet_absent(res)
    if absent.any():
        parts.append(
            f"{name}'s fleet arrives after the horizon in {pct(float(np.mean(absent)))} of "
            f"runs (its capacity lead time is longer): no job runs, so its cost there is no "
            f"saving; set assumptions.lead_time_days (0 for a fleet in service) or a longer "
            f"horizon"
        )
    if not parts:
        parts.append(f"{name} completes its work {needs}")
    return "; ".join(parts) + "." + (fallback_hint(name, res) if parts else "")


def completion_share(results: Mapping[str, Result]) -> dict[str, float]:
    """The share of runs each option completes in (:func:`complete_share`)."""
    return {k: complete_share(r) for k, r in results.items()}


def _duration_words(hours: float) -> str:
    """``"4 minutes"``, ``"2.5 hours"``, ``"3 days"``."""
    if hours < 1.0:
        return f"{hours * 60.0:.2g} minutes"
    if hours < 48.0:
        return f"{hours:.2g} hours"
    return f"{hours / 24.0:.2g} days"


def _interval_words(hours: float) -> str:
    """``"every 4 minutes"``, ``"every 2.5 hours"``: a mean time between interruptions."""
    return f"every {_duration_words(hours)}"


def _recovery_words(res: Result, unfinished: np.ndarray, count: np.ndarray) -> str:
    """What the unfinished runs' recovery adds: the wait for capacity or repairs after each
    interruption, and how many fell back to on-demand (a spot pool with a fallback)."""
    words = ""
    if "recovery_wait_days" in res.data:
        wait = float(np.median(24.0 * res.samples("recovery_wait_days")[unfinished] / count))
        if wait > 0:
            words += f", then wait {_duration_words(wait)} for capacity or a repair"
    if "fallback_days" in res.data:
        fell = float(np.mean(res.samples("fallback_days")[unfinished] > 0))
        words += f"; it fell back to on-demand in {pct(fell)} of those runs"
    return words


def finish_notes(results: Mapping[str, Result]) -> list[str]:
    """For each option that does not finish within its horizon in some runs: how often, and
    why -- the mean time between interruptions those runs see (training hours over
    interruptions, both counted up to the horizon), named as spot preemptions on a spot pool,
    with the wait after each and the share that fell back to on-demand where they apply.
    Their times and costs are censored at the horizon, so they are lower bounds."""
    out = []
    for name, res in results.items():
        if "finished" not in res.data:
            continue
        unfinished = res.samples("finished") == 0
        if not unfinished.any():
            continue
        share = float(np.mean(unfinished))
        why = ""
        if "interruptions" in res.data and "training_days" in res.data:
            hours = 24.0 * res.samples("training_days")[unfinished]
            count = res.samples("interruptions")[unfinished]
            if np.all(count > 0):
                gap = float(np.median(hours / count))
                cause = (
                    "spot preemptions and failures"
                    if res.info is not None and res.info.pricing == "spot"
                    else "failures"
                )
                scale = f" on {res.info.chips:,} chips" if res.info is not None else ""
                why = f": {cause} interrupt it {_interval_words(gap)}{scale} (median)"
                why += _recovery_words(res, unfinished, count)
        out.append(
            f"{name} does not finish within its horizon in {pct(share)} of runs{why}; in "
            f"those runs its time and cost are counted up to the horizon only, so they are "
            f"lower bounds."
        )
    return out


__all__ = [
    "CENSORED_METRICS",
    "FINISH_CONFIDENCE",
    "LOWER_BOUND_MARK",
    "complete_share",
    "completes",
    "completion_share",
    "fallback_hint",
    "finish_notes",
    "incomplete_words",
    "lower_bounds",
    "marked",
]
