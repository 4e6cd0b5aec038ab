"""The report's tables: cost breakdown, time per phase, serving metrics, every metric, and
the drivers (rank correlations of the inputs with a metric)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from accelsim.report._page_data import (
    COST_PARTS,
    SERVING_METRICS,
    TOP_DRIVERS,
    Cell,
    Grid,
    _mc_error,
    _spread,
    fmt,
)
from accelsim.results import Result, marked, unit_of

# ---------------------------------------------------------------- tables


def _cell(res: Result, metric: str, x: np.ndarray | None = None, base: float | None = None) -> Cell:
    """A mean with its P5–P95, and with ``base`` (an amount > 0) the mean's share of it."""
    values = res.samples(metric) if x is None else x
    mean = float(np.mean(values))
    main = fmt(metric, mean)
    if base is not None and base > 0:
        main += f" ({mean / base:.0%})"
    if x is None:  # the metric's own samples: a lower bound where censored at the horizon
        main = marked(res, metric, main)
    return Cell(main, _spread(res, metric, values))


def _gross_cost(res: Result) -> float:
    """Mean cost before credits: TCO less its (negative) credits line. [USD]"""
    credits = res.mean("credits_usd") if "credits_usd" in res.metrics else 0.0
    return res.mean("tco_usd") - credits


_COST_LABELS = {"tco_usd": "total (TCO)", "credits_usd": "credits (offset)"}


def cost_grid(results: Mapping[str, Result]) -> Grid | None:
    """Mean of each cost part (its share of TCO) and its P5–P95, per option; credits, where
    a scenario has them, as their own negative line."""
    if not all("tco_usd" in r.metrics for r in results.values()):
        return None
    known = [m for m in COST_PARTS if any(m in r.metrics for r in results.values())]
    others = sorted(
        # (a dotted name is one workload's share of a mix's line, already in the fleet's)
        {m for r in results.values() for m in r.metrics if m.endswith("_cost_usd") and "." not in m}
        - set(known)
    )
    # credits offset the parts: their own (negative) line, just above the total
    credits = ["credits_usd"] if any("credits_usd" in r.metrics for r in results.values()) else []
    rows = []
    for part in [*known, *others, *credits, "tco_usd"]:
        label = _COST_LABELS.get(part, part.removesuffix("_cost_usd").replace("_", " "))
        cells = [
            _cell(r, part, base=_gross_cost(r) if part != "tco_usd" else None)
            if part in r.metrics
            else Cell("—")
            for r in results.values()
        ]
        rows.append((Cell(label), *cells))
    caption = (
        "Mean (share of the mean cost before credits; credits offset it, so the total is "
        "the cost less the credits), and P5 – P95 over the runs."
        if credits
        else "Mean (share of mean TCO), and P5 – P95 over the runs."
    )
    if any(_power_priced_in(r) for r in results.values()):
        caption += (
            " Energy is $0 where a cloud's hourly price includes the power; energy_kwh "
            "still counts it (and its emissions)."
        )
    return Grid(("cost", *results), tuple(rows), caption)


def _power_priced_in(res: Result) -> bool:
    """Energy drawn but not billed apart: a cloud pool's hourly price includes power."""
    return (
        "energy_cost_usd" in res.metrics
        and "energy_kwh" in res.metrics
        and not np.any(res.samples("energy_cost_usd"))
        and bool(np.any(res.samples("energy_kwh")))
    )


_TIME_ROWS = (
    ("lead_time_days", "capacity lead time or quota wait"),
    ("preparation_days", "porting and optimisation"),
    ("before_days", "before the first step (the longer of the two)"),
    ("queue_days", "queue"),
    ("compute_days", "training, failure-free"),
    ("failure_overhead_days", "failures, checkpoints and badput"),
    ("training_days", "training, first step to last"),
    ("time_to_train_days", "time to a trained model"),
)


def time_grid(results: Mapping[str, Result]) -> Grid:
    """Mean days of each phase and P5–P95, per option (training results)."""
    from accelsim.report._figures import phase_samples

    phases = {name: phase_samples(r) for name, r in results.items()}
    rows = []
    for key, label in _TIME_ROWS:
        cells = []
        for name, r in results.items():
            x = phases[name].get(key)
            cells.append(_cell(r, key) if x is None else _cell(r, "time_to_train_days", x))
        rows.append((Cell(label), *cells))
    return Grid(
        ("phase", *results),
        tuple(rows),
        "Mean days and P5 – P95. Lead time and porting with optimisation run side by side; "
        "the rest follow "
        "one another, so the phases from 'before the first step' on add up to the time to "
        "a trained model.",
    )


def serving_grid(results: Mapping[str, Result]) -> Grid | None:
    """The serving metrics present: mean and P5–P95 per option."""
    present = [m for m in SERVING_METRICS if all(m in r.metrics for r in results.values())]
    if not present:
        return None
    rows = tuple(
        (Cell(m.replace("_", " ")), *(_cell(r, m) for r in results.values())) for m in present
    )
    return Grid(("metric", *results), rows, "Mean and P5 – P95 over the runs.")


def metrics_grid(results: Mapping[str, Result]) -> Grid:
    """Every metric all options report: mean ± 95 % MC error, and P5 – P95."""
    first = next(iter(results.values()))
    names = [m for m in first.metrics if all(m in r.metrics for r in results.values())]
    rows = []
    for m in names:
        cells = []
        for r in results.values():
            err = _mc_error(r, m)
            cells.append(
                Cell(
                    f"{fmt(m, r.mean(m))} ± {fmt(m, err) if np.isfinite(err) else 'n/a'}",
                    _spread(r, m),
                )
            )
        rows.append((Cell(m), *cells))
    return Grid(
        ("metric", *results),
        tuple(rows),
        "Mean ± 95% Monte Carlo error of the mean, and P5 – P95 (the spread of outcomes).",
    )


# ---------------------------------------------------------------- drivers


def rank_correlations(res: Result, metric: str) -> dict[str, float]:
    """Spearman's rho of each input that varied with ``metric``, over the result's runs.

    The same numbers as ``accelsim.sensitivity(scenario, metric, runs=n, seed=s)`` (method
    ``"spearman"``), which simulates the same runs again: here the result's own draws are
    used, so the drivers describe exactly the runs on the page.
    """
    from scipy.stats import spearmanr

    y = res.samples(metric)
    out: dict[str, float] = {}
    if np.ptp(y) == 0:
        return out
    for name, x in res.inputs.items():
        if np.ptp(x) > 0:
            out[name] = float(spearmanr(x, y).statistic)
    return out


_EMISSION_INPUTS = ("emission_kg_per_kwh",)
"""Inputs that move emissions only: no cost metric depends on them (emissions are unpriced)."""
_ENERGY_PRICE_INPUTS = ("pue", "electricity_usd_per_kwh")
"""Inputs that move a cost only through ``energy_cost_usd``."""


def nil_by_construction(res: Result, metric: str) -> frozenset[str]:
    """Inputs of ``res`` that cannot move ``metric`` by the model's construction, so any
    rank correlation they show is noise: for a cost (a USD metric), the emission factor,
    and PUE and the electricity price where energy costs nothing in every run (a cloud
    pool's energy is inside its hourly price)."""
    if unit_of(metric) != "USD":
        return frozenset()
    free_energy = "energy_cost_usd" in res.data and not np.any(res.samples("energy_cost_usd"))
    nil = _EMISSION_INPUTS + (_ENERGY_PRICE_INPUTS if free_energy else ())
    return frozenset(k for k in res.inputs if k.rsplit(".", 1)[-1] in nil)


def driver_grids(results: Mapping[str, Result], metrics: Sequence[str]) -> tuple[Grid, ...]:
    """For each metric, the inputs with the largest |rho| in any option, largest first;
    inputs that cannot move the metric by construction (:func:`nil_by_construction`) are
    left out."""
    grids = []
    for metric in metrics:
        if not all(metric in r.metrics for r in results.values()):
            continue
        rho = {
            name: {
                k: v
                for k, v in rank_correlations(r, metric).items()
                if k not in nil_by_construction(r, metric)
            }
            for name, r in results.items()
        }
        inputs = sorted(
            {k for v in rho.values() for k in v},
            key=lambda k: (-max(abs(v.get(k, 0.0)) for v in rho.values()), k),
        )[:TOP_DRIVERS]
        if not inputs:
            continue
        rows = tuple(
            (
                Cell(k),
                *(
                    Cell(f"{rho[n][k]:+.2f}", bar=rho[n][k]) if k in rho[n] else Cell("—")
                    for n in results
                ),
            )
            for k in inputs
        )
        grids.append(
            Grid(
                ("input", *results),
                rows,
                f"What drives {metric}: Spearman rank correlation of each input with it.",
            )
        )
    return tuple(grids)
