"""Serving pipeline, hours and windows: one implementation over the stages of a layout.

A **stage** is one pool's replica as the windows see it: its saturated rate ``λ_sat``, its
SLO load and sustained load (shares of ``λ_sat``), whether it is feasible, and the latency
columns it owns, tabulated at :data:`~accelsim.engines.serving._usage.LOAD_NODES`. A
colocated endpoint is one stage owning TTFT and TPOT (:func:`colocated_stage`); a
disaggregated one is two, prefill owning TTFT and decode owning TPOT
(``accelsim.engines.serving._disagg``). Every rule below holds for any number of stages:

- **replicas per hour**, per stage, fixed or following the demand with the stage's own SLO
  capacity (:func:`~accelsim.engines.serving._usage.replicas_per_hour`); with a cold start
  under ``follow_demand``, an hour in which any stage scales up serves its first
  ``cold_start_minutes`` on the replicas both it and the previous hour had;
- **a window's load** per stage, ``x = window rate / (replicas · λ_sat)``; the window's
  served share is the least over the stages of ``min(1, sustained / x)`` (the rest is
  shed), and it is compliant when every stage's ``x`` is within its SLO load;
- **latency**: each stage's served requests are attributed to its load nodes
  (:func:`~accelsim.engines.serving._usage.node_weights`, at ``min(x, sustained)``), and
  each latency column the stage owns is the table dotted with those weights.

:func:`hour_totals` sums the planned hours of a drawn demand, :func:`held_totals` the hours
of replicas given per hour (a shared fleet's grants); :func:`usage_from_totals` turns either
into the usage record priced by the metrics step.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from accelsim._typing import BoolArray, FloatArray, IntArray
from accelsim.engines.serving._inputs import Demand, demand_rps
from accelsim.engines.serving._setup import (
    SECONDS_PER_HOUR,
    Replica,
    ServingSetup,
    ServingUsage,
)
from accelsim.engines.serving._usage import (
    BURST_POINTS,
    LOAD_NODES,
    LatencyTable,
    all_served,
    burst_multipliers,
    latency_table,
    node_weights,
    replicas_per_hour,
    shed,
)

_SUB_RUNS = 256
"""Runs per pass of the hourly arrays: (runs, hours) blocks of ~1.5 MB at 30 days. In one
block of all runs ``bench_serving_fast``'s study is 1.08x slower (paired median over 9
rounds, 10-90 % 1.05-1.09; ``benchmarks/bench_paths.py``)."""

LATENCY_COLUMNS = ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s")
"""The latency columns the stages of a layout own between them. [s]"""


@dataclass(frozen=True)
class Stage:
    """One stage of the serving pipeline: a pool's replica as the windows read it."""

    setup: ServingSetup
    """The stage's setup: its chip, chips per replica and replicas the pool holds."""
    replica: Replica
    saturated_rps: FloatArray
    """Saturated request rate of one replica ``λ_sat``. (runs,) [1/s]"""
    slo_load: FloatArray
    """SLO capacity as a share of ``λ_sat`` (0: missed at any load). (runs,) [fraction]"""
    sustained_load: FloatArray
    """The load up to which a window is served (the rest shed). (runs,) [fraction]"""
    feasible: BoolArray
    """Whether the stage serves at all (the model and a sequence fit). (runs,)"""
    latency: Mapping[str, FloatArray]
    """The latency columns the stage owns (names of :data:`LATENCY_COLUMNS`), each at the
    load nodes. (runs, nodes) [s]"""
    pool_index: int = 0
    """Index of the stage's pool in ``Scenario.fleet``."""


def colocated_stage(setup: ServingSetup, replica: Replica, table: LatencyTable) -> Stage:
    """The one stage of a colocated endpoint: its replica owns TTFT and TPOT."""
    return Stage(
        setup=setup,
        replica=replica,
        saturated_rps=replica.saturated_rps,
        slo_load=table.slo_load,
        sustained_load=table.sustained_load,
        feasible=replica.feasible,
        latency={name: getattr(table, name) for name in LATENCY_COLUMNS},
    )


@dataclass
class HourTotals:
    """Per-run totals over the horizon, what the metrics are made of (arrays over runs)."""

    demand_requests: FloatArray
    served_requests: FloatArray
    compliant_requests: FloatArray
    stage_hours: list[FloatArray]
    """Provisioned replica-hours of each stage. [h]"""
    stage_peaks: list[FloatArray]
    """Most replicas of each stage provisioned at once. [count]"""
    replicas_peak: FloatArray
    """Most replicas of all stages provisioned at once. [count]"""
    node_weights: list[FloatArray]
    """Served requests attributed to each stage's load nodes (runs, nodes). [count]"""

    @classmethod
    def zeros(cls, runs: int, stages: int) -> HourTotals:
        """Empty totals of ``runs`` runs over ``stages`` stages."""
        return cls(
            demand_requests=np.zeros(runs),
            served_requests=np.zeros(runs),
            compliant_requests=np.zeros(runs),
            stage_hours=[np.zeros(runs) for _ in range(stages)],
            stage_peaks=[np.zeros(runs) for _ in range(stages)],
            replicas_peak=np.zeros(runs),
            node_weights=[np.zeros((runs, len(LOAD_NODES))) for _ in range(stages)],
        )

    @property
    def replica_hours(self) -> FloatArray:
        """Provisioned replica-hours of all stages. [h]"""
        return np.asarray(functools.reduce(np.add, self.stage_hours), dtype=float)

    def provision(self, rows: slice, replicas: Sequence[FloatArray], duration: FloatArray) -> None:
        """Records the runs ``rows``' replicas per hour (one (runs, hours) array per stage)
        over hours of ``duration`` [h]."""
        for hours, peaks, n in zip(self.stage_hours, self.stage_peaks, replicas, strict=True):
            hours[rows] = n @ duration
            peaks[rows] = n.max(axis=1)
        self.replicas_peak[rows] = functools.reduce(np.add, replicas).max(axis=1)


_Periods = list[tuple[FloatArray, list[FloatArray]]]
"""(hours of each hour [h], replicas of each stage serving them) per part of the hour."""


def _periods(setup: ServingSetup, duration: FloatArray, replicas: list[FloatArray]) -> _Periods:
    """The whole hour at its replicas; under ``follow_demand`` with a cold start, an hour in
    which any stage's replicas rise serves its first ``cold_start_minutes`` on the replicas
    each stage had both then and in the previous hour."""
    shape = replicas[0].shape
    cold = min(setup.work.cold_start_minutes / 60.0, 1.0)
    if cold <= 0.0 or setup.work.scaling != "follow_demand":
        return [(np.broadcast_to(duration, shape), replicas)]
    before = [np.concatenate([n[:, :1], n[:, :-1]], axis=1) for n in replicas]
    rising = functools.reduce(np.logical_or, [n > b for n, b in zip(replicas, before, strict=True)])
    held = [np.minimum(n, b) for n, b in zip(replicas, before, strict=True)]
    return [
        (duration * np.where(rising, 1.0 - cold, 1.0), replicas),
        (duration * np.where(rising, cold, 0.0), held),
    ]


def hour_totals(setup: ServingSetup, drawn: Demand, stages: Sequence[Stage]) -> HourTotals:
    """Sum every hour (and burst quantile) of the horizon into per-run totals: each stage's
    replicas planned per hour from the demand (module docstring)."""
    rate_rps, growth, burstiness = drawn.rate_rps, drawn.growth_per_month, drawn.burstiness
    runs = len(rate_rps)
    out = HourTotals.zeros(runs, len(stages))
    h = np.arange(setup.hours, dtype=float)
    duration = np.minimum(setup.horizon_hours - h, 1.0)
    if setup.hours > 48 and not np.any(growth):
        # Without growth the demand repeats every day, and so do the replicas (a function of
        # the demand): the first day (warm start) and one generic day, each hour weighted by
        # the time it stands for, give the same sums as every hour. Exact, ~15x less work.
        cell = np.where(h < 24, h, 24 + h % 24).astype(np.int64)
        duration = np.bincount(cell, duration, minlength=48)
        h = np.arange(48, dtype=float)
    slo_rps = [s.slo_load * s.saturated_rps for s in stages]
    for a in range(0, runs, _SUB_RUNS):
        sl = slice(a, min(a + _SUB_RUNS, runs))
        demand = demand_rps(setup, rate_rps[sl], growth[sl], h)  # (runs, hours) [1/s]
        replicas = [
            replicas_per_hour(s.setup, demand, r[sl]) for s, r in zip(stages, slo_rps, strict=True)
        ]
        out.provision(sl, replicas, duration)
        _accumulate(out, sl, demand, _periods(setup, duration, replicas), burstiness, stages)
    return out


def held_totals(
    setup: ServingSetup,
    demand: FloatArray,
    serving_replicas: Sequence[FloatArray],
    burstiness: FloatArray,
    stages: Sequence[Stage],
) -> HourTotals:
    """The totals of :func:`hour_totals` for replicas given per hour rather than planned.

    ``serving_replicas`` (one (runs, hours) array per stage) are the replicas that actually
    served each hour, on time average (a shared fleet may grant fewer than the plan asked
    for); the windows' attainment, shedding and latency follow from them by the same
    per-window function.
    """
    runs = demand.shape[0]
    out = HourTotals.zeros(runs, len(stages))
    hours = np.arange(demand.shape[1], dtype=float)
    duration = np.minimum(setup.horizon_hours - hours, 1.0)
    replicas = list(serving_replicas)
    out.provision(slice(0, runs), replicas, duration)
    periods = [(np.broadcast_to(duration, demand.shape), replicas)]
    _accumulate(out, slice(0, runs), demand, periods, burstiness, stages)
    return out


def _accumulate(
    out: HourTotals,
    sl: slice,
    demand: FloatArray,
    periods: _Periods,
    burstiness: FloatArray,
    stages: Sequence[Stage],
) -> None:
    """Add the runs ``sl``'s windows to ``out``, one burst level's runs at a time."""
    bursts = burstiness[sl]
    per_stage = [(s.saturated_rps[sl], s.slo_load[sl], s.sustained_load[sl]) for s in stages]
    for value in np.unique(bursts):
        mask = bursts == value
        whole = bool(mask.all())
        rows = slice(None) if whole else mask
        sub = np.arange(sl.start, sl.stop) if whole else np.flatnonzero(mask) + sl.start
        picked = [
            (sat[rows, None], slo[rows, None], most[rows, None]) for sat, slo, most in per_stage
        ]
        for m in burst_multipliers(float(value)):
            weight = 1.0 / (BURST_POINTS if value > 1.0 else 1)
            for hours, counts in periods:
                requests = demand[rows] * (SECONDS_PER_HOUR * m * weight) * hours[rows]
                _window(out, sub, requests, demand[rows] * m, [n[rows] for n in counts], picked)


def _window(
    out: HourTotals,
    sub: IntArray,
    requests: FloatArray,
    rate: FloatArray,
    counts: list[FloatArray],
    picked: list[tuple[FloatArray, FloatArray, FloatArray]],
) -> None:
    """Adds windows of ``rate`` [1/s] and ``requests`` [count] ((runs, hours) of the runs
    ``sub``) on each stage's ``counts`` replicas to ``out``: each stage's load ``x`` (share
    of its replicas' ``λ_sat``); served up to the least sustained share over the stages,
    compliant where every stage is within its SLO load, each stage's latency read at
    ``min(x, sustained)``."""
    loads = []
    for n, (sat, _, most) in zip(counts, picked, strict=True):
        capacity = n * sat
        x = np.divide(rate, capacity, out=np.full(requests.shape, np.inf), where=capacity > 0.0)
        loads.append((x, most))
    share = functools.reduce(
        np.minimum, [np.minimum(1.0, most / np.maximum(x, 1e-300)) for x, most in loads]
    )
    served = requests * share
    within = functools.reduce(
        np.logical_and, [x <= slo for (x, _), (_, slo, _) in zip(loads, picked, strict=True)]
    )
    compliant = requests * within
    for weights, (x, most) in zip(out.node_weights, loads, strict=True):
        weights[sub] += node_weights(np.minimum(x, most), served)
    out.demand_requests[sub] += requests.sum(axis=1)
    out.served_requests[sub] += served.sum(axis=1)
    out.compliant_requests[sub] += compliant.sum(axis=1)


def usage_from_totals(stages: Sequence[Stage], totals: HourTotals) -> ServingUsage:
    """The usage record of the hours' totals: each latency column averaged over the served
    requests of the stage owning it, attainment, and ``finished`` (every stage feasible,
    every request served)."""
    feasible = functools.reduce(np.logical_and, [s.feasible for s in stages])
    latency: dict[str, FloatArray] = {}
    for stage, weights in zip(stages, totals.node_weights, strict=True):
        served = weights.sum(axis=1)
        share = weights / np.where(served > 0.0, served, 1.0)[:, None]
        for name, values in stage.latency.items():
            # nothing served (an infeasible stage): 0, flagged by finished = 0
            latency[name] = np.where(feasible, np.einsum("rk,rk->r", share, values), 0.0)
    return ServingUsage(
        demand_requests=totals.demand_requests,
        served_requests=totals.served_requests,
        dropped_requests=shed(totals.served_requests, totals.demand_requests),
        compliant_requests=np.where(feasible, totals.compliant_requests, 0.0),
        replica_hours=totals.replica_hours,
        replicas_peak=totals.replicas_peak,
        ttft_p50_s=latency["ttft_p50_s"],
        ttft_p99_s=latency["ttft_p99_s"],
        tpot_p50_s=latency["tpot_p50_s"],
        tpot_p99_s=latency["tpot_p99_s"],
        finished=feasible & all_served(totals.served_requests, totals.demand_requests),
        stage_hours=tuple(totals.stage_hours),
        stage_peaks=tuple(totals.stage_peaks),
    )


def usage_fast(setup: ServingSetup, demand: Demand, replica: Replica) -> ServingUsage:
    """The colocated fast path's usage: latency table, then every hour summed."""
    stages = (colocated_stage(setup, replica, latency_table(setup, replica)),)
    return usage_from_totals(stages, hour_totals(setup, demand, stages))


__all__ = [
    "LATENCY_COLUMNS",
    "HourTotals",
    "Stage",
    "colocated_stage",
    "held_totals",
    "hour_totals",
    "usage_fast",
    "usage_from_totals",
]
