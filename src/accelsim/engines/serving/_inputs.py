"""Serving inputs: every uncertain input of a serving run, drawn once into a typed record.

The serving pipeline draws in one place and then runs pure stages on the record:

1. :func:`draw_serving_inputs` -> :class:`ServingInputs`: the replica's inputs
   (:class:`~accelsim.engines.serving._setup.ReplicaInputs`), the demand (:class:`Demand`:
   mean rate, monthly growth, burstiness) and the launch (:class:`Launch`: porting hours
   and days to launch);
2. :func:`~accelsim.engines.serving._setup.build_replica`: memory and iteration time;
3. :mod:`~accelsim.engines.serving._usage`: load and latency, capacity under the SLO,
   usage (the fast path), or :mod:`~accelsim.engines.serving._blocks` (the request DES);
4. :func:`~accelsim.engines.serving._fast.serving_metrics`: metrics and the pricing step.

Every draw is recorded under its input name by :class:`~accelsim.engines.InputDraws`, so
a run's inputs are the same whichever stage reads them and in whatever order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from accelsim._typing import FloatArray
from accelsim.catalog import Catalog, Priors
from accelsim.engines._inputs import InputDraws
from accelsim.engines._offers import lead_time_days
from accelsim.engines.serving._setup import (
    HOURS_PER_MONTH,
    ReplicaInputs,
    ServingSetup,
    draw_replica_inputs,
)
from accelsim.models import engineering
from accelsim.scenario import Scenario, Serving


@dataclass(frozen=True)
class Demand:
    """The endpoint's demand per run (arrays over the chunk's runs)."""

    rate_rps: FloatArray
    """Mean request rate at the start of the horizon. [1/s]"""
    growth_per_month: FloatArray
    """Growth of the mean rate per month of 730.5 h. [fraction]"""
    burstiness: FloatArray
    """Variance-to-mean ratio of a burst window's request count (1: Poisson). [ratio]"""

    def hourly_rps(self, setup: ServingSetup) -> FloatArray:
        """Mean request rate of each run in each hour of the horizon, shape (runs, hours):
        ``rate · profile[h mod 24] · (1 + g)^(h / 730.5)``. The one rule of every serving
        path (fast, request DES, disaggregated, endpoints in a mix). [1/s]"""
        return demand_rps(
            setup, self.rate_rps, self.growth_per_month, np.arange(setup.hours, dtype=float)
        )


def demand_rps(
    setup: ServingSetup, rate_rps: FloatArray, growth: FloatArray, hours: FloatArray
) -> FloatArray:
    """Mean request rate of each run in each hour ``hours`` (from 0), shape (runs, hours):
    ``rate · profile[h mod 24] · (1 + g)^(h / 730.5)`` (the growth as ``exp(log1p(g)·t)``,
    exact at g = 0). [1/s]"""
    h = np.asarray(hours, dtype=float)
    shape = setup.profile[h.astype(np.int64) % 24]
    growth_factor = np.exp(np.outer(np.log1p(growth), h / HOURS_PER_MONTH))
    return np.asarray(np.asarray(rate_rps)[:, None] * shape * growth_factor, dtype=float)


def draw_demand(work: Serving, draws: InputDraws) -> Demand:
    """The demand's inputs, per run (the workload's numbers or distributions)."""
    return Demand(
        rate_rps=draws.get("workload.rate_rps", work.rate_rps, work.rate_rps),
        growth_per_month=draws.get(
            "workload.growth_per_month", work.growth_per_month, work.growth_per_month
        ),
        burstiness=draws.get("workload.burstiness", work.burstiness, work.burstiness),
    )


@dataclass(frozen=True)
class Launch:
    """Porting the serving stack to the chip's software stack, and the days to launch."""

    porting_hours: FloatArray
    """Engineer-hours of porting. [h]"""
    launch_days: FloatArray
    """The longer of the capacity lead time and the porting's calendar time. [days]"""


def draw_launch(
    setup: ServingSetup, scenario: Scenario, draws: InputDraws, priors: Priors
) -> Launch:
    """Porting hours (by the framework's fit to the chip's stack) and the days to launch."""
    a, pool = scenario.assumptions, scenario.fleet[0]
    fit = priors.framework_fit.fit(setup.work.framework, setup.chip.software_stack)
    porting_h = draws.get(
        f"assumptions.porting_hours.{fit}", a.porting_hours, priors.porting_hours[fit].value
    )
    engineers = draws.get("assumptions.engineers", a.engineers, priors.engineers.value)
    week_h = draws.get("priors.engineer_hours_per_week", None, priors.engineer_hours_per_week.value)
    lead_days = lead_time_days(setup.cat, pool, a.lead_time_days, draws)
    launch_days = np.maximum(lead_days, engineering.calendar_days(porting_h, engineers, week_h))
    return Launch(porting_hours=np.asarray(porting_h, dtype=float), launch_days=launch_days)


@dataclass(frozen=True)
class ServingInputs:
    """Every uncertain input of a colocated serving run (arrays over the chunk's runs)."""

    replica: ReplicaInputs
    demand: Demand
    launch: Launch


def draw_serving_inputs(
    setup: ServingSetup, scenario: Scenario, draws: InputDraws, cat: Catalog
) -> ServingInputs:
    """Draw a colocated serving run's inputs once: the one builder of the serving record."""
    return ServingInputs(
        replica=draw_replica_inputs(setup, draws, cat.serving_priors),
        demand=draw_demand(setup.work, draws),
        launch=draw_launch(setup, scenario, draws, cat.priors),
    )


__all__ = [
    "Demand",
    "Launch",
    "ServingInputs",
    "demand_rps",
    "draw_demand",
    "draw_launch",
    "draw_serving_inputs",
]
