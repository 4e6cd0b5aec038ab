"""Serving inputs: every uncertain input of a serving run, drawn once into a typed record.

The serving pipeline draws in one place and then runs pure stages on the record:

1. :func:`draw_serving_inputs` -> :class:`ServingInputs`: per stage's pool (colocated:
   one; disaggregated: prefill and decode) the replica's inputs
   (:class:`~accelsim.engines.serving._setup.ReplicaInputs`) and the launch
   (:class:`Launch`: porting hours and days to launch); the demand (:class:`Demand`: mean
   rate, monthly growth, burstiness); the pools' prices;
2. :func:`~accelsim.engines.serving._setup.build_replica`: memory and iteration time;
3. :mod:`~accelsim.engines.serving._usage` (colocated) or
   :mod:`~accelsim.engines.serving._disagg` (prefill, decode): load and latency, capacity
   under the SLO, one :class:`~accelsim.engines.serving._stages.Stage` per pool;
4. :mod:`~accelsim.engines.serving._stages`: the hours and windows over the stages, usage
   (the fast path), or :mod:`~accelsim.engines.serving._blocks` (the request DES);
5. :mod:`~accelsim.engines.serving._priced`: the metrics and the pricing step over the
   stages' pools, which reads the record's
   :class:`~accelsim.engines._price_inputs.PriceInputs`.

Only :func:`draw_serving_inputs` reads the :class:`~accelsim.engines.InputDraws`; every later
stage is a pure function of the record. Every draw is recorded under its input name, so a
run's inputs are the same whichever builder draws them and in whatever order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from accelsim._typing import FloatArray
from accelsim.catalog import Catalog, Priors
from accelsim.engines._inputs import InputDraws
from accelsim.engines._offers import lead_time_days
from accelsim.engines._price_inputs import SERVING_POWER, PriceInputs, draw_price_inputs
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
    """Porting the serving stack to the chip's software stack, and the capacity lead time."""

    porting_hours: FloatArray
    """Engineer-hours of porting. [h]"""
    engineers: FloatArray
    """Engineers porting in parallel. [count]"""
    engineer_hours_per_week: FloatArray
    """Hours an engineer works a week. [h]"""
    lead_time_days: FloatArray
    """Days until the capacity is available. [days]"""

    @property
    def launch_days(self) -> FloatArray:
        """The longer of the capacity lead time and the porting's calendar time. [days]"""
        calendar = engineering.calendar_days(
            self.porting_hours, self.engineers, self.engineer_hours_per_week
        )
        return np.maximum(self.lead_time_days, calendar)


def draw_launch(
    setup: ServingSetup,
    scenario: Scenario,
    draws: InputDraws,
    priors: Priors,
    pool_index: int = 0,
) -> Launch:
    """Porting hours (by the framework's fit to the chip's stack), the team and the lead
    time of the pool ``pool_index`` (the first by default; a disaggregated stage's own)."""
    a, pool = scenario.assumptions, scenario.fleet[pool_index]
    fit = priors.framework_fit.fit(setup.work.framework, setup.chip.software_stack)
    porting_h = draws.get(
        f"assumptions.porting_hours.{fit}", a.porting_hours, priors.porting_hours[fit].value
    )
    return Launch(
        porting_hours=np.asarray(porting_h, dtype=float),
        engineers=draws.get("assumptions.engineers", a.engineers, priors.engineers.value),
        engineer_hours_per_week=draws.get(
            "priors.engineer_hours_per_week", None, priors.engineer_hours_per_week.value
        ),
        lead_time_days=lead_time_days(setup.cat, pool, a.lead_time_days, draws),
    )


@dataclass(frozen=True)
class ServingInputs:
    """Every uncertain input of a serving run (arrays over the chunk's runs): per stage of
    the layout (colocated: one; disaggregated: prefill, decode) its pool's replica inputs
    and launch, in the order of the stages; the demand; the prices of the pools used."""

    replicas: tuple[ReplicaInputs, ...]
    demand: Demand
    launches: tuple[Launch, ...]
    prices: PriceInputs


def draw_serving_inputs(
    setup: ServingSetup,
    scenario: Scenario,
    draws: InputDraws,
    cat: Catalog,
    pools: Sequence[tuple[int, ServingSetup]] | None = None,
) -> ServingInputs:
    """Draw a serving run's inputs once: the one builder of the serving record, for either
    layout. ``pools`` are the stages' (fleet index, setup); unset: the colocated endpoint's
    one stage, ``(0, setup)``."""
    stages = ((0, setup),) if pools is None else tuple(pools)
    used = tuple(index for index, _ in stages)
    return ServingInputs(
        replicas=tuple(draw_replica_inputs(s, draws, cat.serving_priors) for _, s in stages),
        demand=draw_demand(setup.work, draws),
        launches=tuple(draw_launch(s, scenario, draws, cat.priors, i) for i, s in stages),
        prices=draw_price_inputs(
            scenario,
            cat,
            draws,
            used=used,
            power=SERVING_POWER,
            engineering=all(scenario.fleet[i].provider is not None for i in used),
        ),
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
