"""The serving fast path: months of hourly demand priced without simulating every request.

For a chunk of runs, every uncertain input is drawn once (:class:`InputDraws`): the serving
efficiency, iteration overhead and memory share (catalog serving priors), the mean rate,
burstiness and growth (the workload). From them, per run and in one vectorised pass:

1. **One replica** (:mod:`accelsim.models.serving`): its iteration coefficients, KV
   capacity, batch limit and saturated request rate ``λ_sat`` (MLPerf Offline).
2. **A latency table**: :func:`~accelsim.models.serving.latency_under_load` at the loads
   ``u·λ_sat`` for the fixed nodes ``u`` of :data:`LOAD_NODES`, at the 99th percentile
   (the metrics) and the SLO's. The replica's **SLO capacity** is the largest node load
   meeting both bounds, refined by linear interpolation of the margin to the next node.
3. **Hours**: the demand of hour ``h`` is ``rate · profile[h mod 24] · (1 + g)^(h/730.5)``;
   the replicas are fixed (the pool's count // chips per replica) or follow the demand,
   ``clip(ceil(demand / (target · SLO capacity)), min, max)``, decided at the start of each
   hour, a new replica serving ``cold_start`` later (billed from the decision, as in the
   request DES). Within an hour, each burst window's rate is the hour's times a gamma
   multiplier of mean 1 and variance ``burstiness − 1`` (integrated by
   :data:`BURST_POINTS` equiprobable quantiles, rescaled to mean 1 exactly).
4. **Per load** ``x`` (per-replica rate over ``λ_sat``): a window is *compliant* when
   ``x`` is at most the SLO capacity (its TTFT and TPOT percentiles are within the
   bounds); requests beyond saturation (``x > 1``) are not served (shed, never queued into
   later hours). Latency percentiles of the served requests are read off the table by
   linear interpolation in ``x`` (clipped to the nodes); since interpolation is linear in
   the node values, every metric is the table dotted with per-run node weights summed
   over the hours, never a per-hour table lookup.

Metrics: see :func:`serving_metrics`. Usage is priced by :mod:`accelsim.engines._pricing`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from accelsim import catalog
from accelsim._typing import BoolArray, FloatArray
from accelsim.catalog import Catalog, Chip, Priors, ServingPriors
from accelsim.dists import Dist, Fixed, as_dist
from accelsim.engines._inputs import InputDraws, constant
from accelsim.engines._pricing import pool_energy_kwh, price_pool
from accelsim.models import cost, engineering
from accelsim.models import serving as physics
from accelsim.scenario import Scenario, Serving

SECONDS_PER_HOUR = 3600.0
HOURS_PER_DAY = 24.0
HOURS_PER_MONTH = 730.5
"""A mean Gregorian month, 365.25 · 24 / 12 hours: the unit of ``growth_per_month``."""
LOAD_NODES = np.array([0.002, 0.04, 0.1, 0.2, 0.35, 0.55, 0.7, 0.8, 0.88, 0.94, 0.98])
"""Per-replica loads, as shares of the saturated rate, where the latency table is evaluated:
denser towards saturation, where latency bends upwards, and at light load, where TTFT
rises steeply as the replica goes from idle (no iteration in progress at an arrival) to
always busy (0.04: a batch of a few sequences). The first node stands for a vanishing
load (the SLO is infeasible when it fails there)."""
BURST_POINTS = 8
"""Equiprobable quantiles of the gamma burst multiplier integrated per hour (burstiness > 1)."""
METRIC_PERCENTILE = 0.99
"""The tail reported as ``*_p99_ms``."""
_LENGTH_GRID = 1 << 14
"""Midpoints of a uniform grid whose ppf values give the mean per-request length."""
_SUB_RUNS = 256
"""Runs per pass of the hourly arrays: (runs, hours) blocks of ~1.5 MB at 30 days."""


@dataclass(frozen=True)
class ServingSetup:
    """The fixed facts of a serving scenario (not uncertain), resolved once per chunk."""

    work: Serving
    cat: Catalog
    """The study's catalog: prices and priors come from it, never from a process global."""
    chip: Chip
    chips_per_replica: int
    replicas_pool: int
    """Replicas the pool holds: its count // chips per replica. [count]"""
    horizon_hours: float
    hours: int
    """Hourly steps, ``ceil(horizon_hours)`` (the last may be partial). [count]"""
    profile: FloatArray
    """24 hourly multipliers (ones when flat). [ratio]"""
    input_mean: float
    """Mean prompt length per request, after rounding and clipping. [tokens]"""
    input_variance: float
    """Variance of the per-request prompt length, after rounding and clipping. [tokens²]"""
    input_third_moment: float
    """Third central moment of the per-request prompt length. [tokens³]"""
    input_fourth_moment: float
    """Fourth central moment of the per-request prompt length. [tokens⁴]"""
    output_mean: float
    """Mean output length per request, after rounding and clipping. [tokens]"""
    max_tokens: float
    """Longest prompt or output a request can have (the preset's context). [tokens]"""
    weight_bytes: float
    kv_bytes_per_token: float
    active_params: float
    total_params: float
    layers: float
    d_model: float
    peak_tflops: float
    ttft_s: float
    tpot_s: float
    percentile: float
    """The SLO's percentile as a fraction. [fraction]"""
    windows_per_hour: int


def token_lengths(value: Dist, uniforms: FloatArray, max_tokens: float) -> FloatArray:
    """Per-request lengths from uniforms: ``ppf``, rounded, clipped to [1, max_tokens]."""
    lengths = np.rint(np.asarray(value.ppf(uniforms), dtype=float))
    return np.asarray(np.clip(lengths, 1.0, max_tokens), dtype=float)


def _length_moments(value: Dist, max_tokens: float) -> tuple[float, float, float, float]:
    """Mean and second to fourth central moments of the per-request length law."""
    if isinstance(value, Fixed):
        return float(np.clip(np.rint(value.value), 1.0, max_tokens)), 0.0, 0.0, 0.0
    u = (np.arange(_LENGTH_GRID) + 0.5) / _LENGTH_GRID
    lengths = token_lengths(value, u, max_tokens)
    mean = float(lengths.mean())
    centred = lengths - mean
    squared = centred**2
    return (
        mean,
        float(squared.mean()),
        float(np.mean(squared * centred)),
        float(np.mean(squared**2)),
    )


def serving_setup(scenario: Scenario, cat: Catalog) -> ServingSetup:
    """Resolve a serving scenario's model, replica layout, horizon and token means against
    the study's catalog ``cat`` (which travels with the study to every worker)."""
    work = scenario.workload
    if not isinstance(work, Serving):
        raise TypeError(f"scenario {scenario.name!r} has a {work.kind} workload, not serving")
    pool = scenario.fleet[0]
    chip = cat.chip(pool.chip)
    chips = work.replica_chips(chip, pool.count)
    preset = work.preset
    kv_precision = work.kv_precision or work.precision
    kv_value_bytes = catalog.BYTES_PER_VALUE[kv_precision]
    if preset is not None:
        kv_bytes = preset.kv_bytes_per_token(kv_value_bytes)
        active = preset.active_params
        layers, d_model = float(preset.layers), float(preset.d_model)
        max_tokens = float(preset.max_context)
    else:
        layers, d_model = float(work.layers or 0), float(work.d_model or 0)
        kv_bytes = float(
            physics.kv_bytes_per_token(
                layers, work.kv_heads or 0, work.head_dim or 0, kv_value_bytes
            )
        )
        active = work.active_params or work.total_params
        max_tokens = math.inf
    horizon = work.horizon_days * HOURS_PER_DAY
    profile = np.ones(24) if work.daily_profile is None else np.array(work.daily_profile)
    input_mean, input_variance, input_third, input_fourth = _length_moments(
        as_dist(work.input_tokens), max_tokens
    )
    return ServingSetup(
        work=work,
        cat=cat,
        chip=chip,
        chips_per_replica=chips,
        replicas_pool=pool.count // chips,
        horizon_hours=horizon,
        hours=math.ceil(horizon - 1e-9),
        profile=profile,
        input_mean=input_mean,
        input_variance=input_variance,
        input_third_moment=input_third,
        input_fourth_moment=input_fourth,
        output_mean=_length_moments(as_dist(work.output_tokens), max_tokens)[0],
        max_tokens=max_tokens,
        weight_bytes=work.weight_bytes(),
        kv_bytes_per_token=kv_bytes,
        active_params=float(active),
        total_params=work.total_params,
        layers=float(layers),
        d_model=float(d_model),
        peak_tflops=chip.peak_tflops(work.precision),
        ttft_s=work.slo.ttft_ms / 1e3,
        tpot_s=work.slo.tpot_ms / 1e3,
        percentile=work.slo.percentile / 100.0,
        windows_per_hour=round(60.0 / work.burst_window_minutes),
    )


@dataclass(frozen=True)
class Replica:
    """One replica per run: coefficients, limits and rates (arrays over the chunk's runs)."""

    cost: physics.IterationCost
    kv_capacity_tokens: FloatArray
    max_batch: FloatArray
    batch_limit: FloatArray
    saturated_rps: FloatArray
    """Saturated request rate (offline throughput / output tokens); 0 where infeasible. [1/s]"""
    feasible: BoolArray
    """The weights and one mean-length sequence fit in the replica's memory."""


def draw_replica(
    setup: ServingSetup, scenario: Scenario, draws: InputDraws, serving: ServingPriors
) -> Replica:
    """Draw the replica's uncertain inputs and build its physics, per run."""
    work, chip = setup.work, setup.chip
    stack = chip.software_stack
    if chip.id in serving.efficiency_by_chip:
        name, prior = (
            f"priors.serving.efficiency_by_chip.{chip.id}",
            serving.efficiency_by_chip[chip.id],
        )
    else:
        name, prior = f"priors.serving.efficiency.{stack}", serving.efficiency[stack]
    # Efficiency is a share of the roofline: a draw of the prior's upper tail past 1 is 1.
    efficiency = np.minimum(draws.get(name, None, prior.value), 1.0)
    overhead = draws.get("priors.serving.overhead_seconds", None, serving.overhead_seconds.value)
    chips = float(setup.chips_per_replica)
    hbm = chip.hbm_gib * 2.0**30 * chips
    if work.kv_share is None:
        share = draws.get("priors.serving.memory_share", None, serving.memory_share.value)
    else:
        kv_share = draws.get("workload.kv_share", work.kv_share, work.kv_share)
        share = (setup.weight_bytes + kv_share * (hbm - setup.weight_bytes)) / hbm
    if work.max_batch is None:
        max_batch = np.floor(
            draws.get(f"priors.serving.max_batch.{stack}", None, serving.max_batch[stack].value)
        )
    else:
        max_batch = draws.fixed("workload.max_batch", float(work.max_batch))
    iteration = physics.iteration_cost(
        active_params=setup.active_params,
        total_params=setup.total_params,
        layers=setup.layers,
        d_model=setup.d_model,
        weight_bytes=setup.weight_bytes,
        kv_bytes_per_token=setup.kv_bytes_per_token,
        chips=chips,
        peak_tflops=setup.peak_tflops,
        hbm_tbps=chip.hbm_tbps,
        interconnect_gbps=chip.interconnect_gbps,
        efficiency=efficiency,
        overhead_seconds=overhead,
    )
    capacity = physics.kv_capacity_tokens(hbm, setup.weight_bytes, setup.kv_bytes_per_token, share)
    inp, out = setup.input_mean, setup.output_mean
    limit = physics.batch_limit(capacity, inp, out, max_batch)
    saturated = physics.offline_tokens_per_s(iteration, capacity, inp, out, max_batch) / out
    return Replica(
        cost=iteration,
        kv_capacity_tokens=np.asarray(capacity, dtype=float),
        max_batch=np.asarray(max_batch, dtype=float),
        batch_limit=limit,
        saturated_rps=saturated,
        feasible=np.asarray(limit >= 1.0),
    )


def _column(c: physics.IterationCost) -> physics.IterationCost:
    """The coefficients as (runs, 1) columns, to broadcast against the load nodes."""
    return physics.IterationCost(
        *(np.asarray(getattr(c, f.name)).reshape(-1, 1) for f in dataclasses.fields(c))
    )


@dataclass(frozen=True)
class LatencyTable:
    """Latency of one replica at the loads ``LOAD_NODES · λ_sat``, per run: (runs, nodes)."""

    ttft_p50_s: FloatArray
    ttft_p99_s: FloatArray
    tpot_p50_s: FloatArray
    tpot_p99_s: FloatArray
    slo_load: FloatArray
    """SLO capacity as a share of ``λ_sat`` (0: the SLO fails at any load). (runs,) [fraction]"""


def latency_table(setup: ServingSetup, replica: Replica) -> LatencyTable:
    """The latency table and the SLO capacity of each run's replica."""
    sat = np.where(replica.feasible, replica.saturated_rps, 1.0)
    loads = sat[:, None] * LOAD_NODES
    cost_col = _column(replica.cost)
    limit = np.maximum(replica.batch_limit, 1.0)[:, None]
    inp, out = setup.input_mean, setup.output_mean
    prompts = {
        "prefill_chunk_tokens": float(setup.work.prefill_chunk_tokens),
        "input_variance": setup.input_variance,
        "input_third_moment": setup.input_third_moment,
        "input_fourth_moment": setup.input_fourth_moment,
    }
    tail = physics.latency_under_load(
        cost_col, loads, inp, out, limit, METRIC_PERCENTILE, **prompts
    )
    slo = (
        tail
        if setup.percentile == METRIC_PERCENTILE
        else physics.latency_under_load(
            cost_col, loads, inp, out, limit, setup.percentile, **prompts
        )
    )
    margin = np.minimum(1.0 - slo.ttft_tail_s / setup.ttft_s, 1.0 - slo.tpot_tail_s / setup.tpot_s)
    margin = np.where(slo.saturated, -1.0, margin)
    ok = margin >= 0.0
    # Latency rises with the load: the capacity lies between the last node meeting the SLO
    # and the first one missing it, where the margin's linear interpolation crosses zero.
    first_fail = np.where(ok.all(axis=1), len(LOAD_NODES), np.argmin(ok, axis=1))
    last_ok = np.maximum(first_fail - 1, 0)
    nxt = np.minimum(first_fail, len(LOAD_NODES) - 1)
    rows = np.arange(len(sat))
    m0, m1 = margin[rows, last_ok], margin[rows, nxt]
    step = np.where(m0 > m1, m0 / np.where(m0 > m1, m0 - m1, 1.0), 0.0)
    crossing = LOAD_NODES[last_ok] + (LOAD_NODES[nxt] - LOAD_NODES[last_ok]) * step
    slo_load = np.where(first_fail == 0, 0.0, crossing)
    return LatencyTable(
        ttft_p50_s=tail.ttft_p50_s,
        ttft_p99_s=tail.ttft_tail_s,
        tpot_p50_s=tail.tpot_p50_s,
        tpot_p99_s=tail.tpot_tail_s,
        slo_load=np.where(replica.feasible, slo_load, 0.0),
    )


def burst_multipliers(burstiness: float) -> FloatArray:
    """Equiprobable gamma quantiles of mean 1 and variance ``burstiness − 1`` (``[1.0]``
    for a Poisson stream), rescaled so their mean is exactly 1."""
    if burstiness <= 1.0:
        return np.ones(1)
    var = burstiness - 1.0
    u = (np.arange(BURST_POINTS) + 0.5) / BURST_POINTS
    m = np.asarray(stats.gamma.ppf(u, 1.0 / var, scale=var), dtype=float)
    return np.asarray(m / m.mean(), dtype=float)


@dataclass
class HourTotals:
    """Per-run totals over the horizon, what the metrics are made of."""

    demand_requests: FloatArray
    served_requests: FloatArray
    compliant_requests: FloatArray
    replica_hours: FloatArray
    replicas_peak: FloatArray
    node_weights: FloatArray
    """Served requests attributed to each load node (runs, nodes). [count]"""


def replicas_per_hour(
    setup: ServingSetup, demand_rps: FloatArray, slo_rps: FloatArray
) -> FloatArray:
    """Replicas serving in each hour (runs, hours): fixed, or following the demand."""
    work = setup.work
    if work.scaling == "fixed":
        return np.full(demand_rps.shape, float(setup.replicas_pool))
    most = float(work.max_replicas or setup.replicas_pool)
    per_replica = work.target_utilization * slo_rps[:, None]
    positive = per_replica > 0.0
    wanted = np.ceil(
        np.divide(demand_rps, per_replica, out=np.full(demand_rps.shape, most), where=positive)
    )
    return np.asarray(np.clip(wanted, float(work.min_replicas), most), dtype=float)


def hour_totals(
    setup: ServingSetup,
    rate_rps: FloatArray,
    growth: FloatArray,
    burstiness: FloatArray,
    replica: Replica,
    table: LatencyTable,
) -> HourTotals:
    """Sum every hour (and burst quantile) of the horizon into per-run totals."""
    runs, k = len(rate_rps), len(LOAD_NODES)
    out = HourTotals(
        demand_requests=np.zeros(runs),
        served_requests=np.zeros(runs),
        compliant_requests=np.zeros(runs),
        replica_hours=np.zeros(runs),
        replicas_peak=np.zeros(runs),
        node_weights=np.zeros((runs, k)),
    )
    h = np.arange(setup.hours, dtype=float)
    duration = np.minimum(setup.horizon_hours - h, 1.0)
    if setup.hours > 48 and not np.any(growth):
        # Without growth the demand repeats every day, and so do the replicas (a function of
        # the demand): the first day (warm start) and one generic day, each hour weighted by
        # the time it stands for, give the same sums as every hour. Exact, ~15x less work.
        cell = np.where(h < 24, h, 24 + h % 24).astype(np.int64)
        duration = np.bincount(cell, duration, minlength=48)
        h = np.arange(48, dtype=float)
    shape = setup.profile[h.astype(np.int64) % 24]
    cold = min(setup.work.cold_start_minutes / 60.0, 1.0)
    sat = replica.saturated_rps
    slo_rps = table.slo_load * sat
    for a in range(0, runs, _SUB_RUNS):
        b = min(a + _SUB_RUNS, runs)
        sl = slice(a, b)
        growth_factor = np.exp(np.outer(np.log1p(growth[sl]), h / HOURS_PER_MONTH))
        demand = rate_rps[sl, None] * shape * growth_factor  # (runs, hours) [1/s]
        replicas = replicas_per_hour(setup, demand, slo_rps[sl])
        out.replica_hours[sl] = replicas @ duration
        out.replicas_peak[sl] = replicas.max(axis=1)
        # (share of the hour, replicas serving it): the whole hour at this hour's replicas,
        # except that after a scale-up the first cold-start share runs on the previous ones.
        periods = [(np.broadcast_to(duration, demand.shape), replicas)]
        if cold > 0.0 and setup.work.scaling == "follow_demand":
            before = np.concatenate([replicas[:, :1], replicas[:, :-1]], axis=1)
            rising = replicas > before
            periods = [
                (duration * np.where(rising, 1.0 - cold, 1.0), replicas),
                (duration * np.where(rising, cold, 0.0), before),
            ]
        _accumulate(out, sl, demand, periods, burstiness, sat[sl], table.slo_load[sl], k)
    return out


def _accumulate(
    out: HourTotals,
    sl: slice,
    demand: FloatArray,
    periods: list[tuple[FloatArray, FloatArray]],
    burstiness: FloatArray,
    sat: FloatArray,
    slo_load: FloatArray,
    k: int,
) -> None:
    runs = demand.shape[0]
    base = np.arange(runs)[:, None] * k
    bursts = burstiness[sl]
    for value in np.unique(bursts):
        mask = bursts == value
        rows = slice(None) if mask.all() else mask
        for m in burst_multipliers(float(value)):
            weight = 1.0 / (BURST_POINTS if value > 1.0 else 1)
            for hours, replicas in periods:
                requests = demand[rows] * (SECONDS_PER_HOUR * m * weight) * hours[rows]
                capacity = replicas[rows] * sat[rows, None]
                x = np.divide(
                    demand[rows] * m,
                    capacity,
                    out=np.full(requests.shape, np.inf),
                    where=capacity > 0.0,
                )
                served = requests * np.minimum(1.0, 1.0 / np.maximum(x, 1e-300))
                compliant = requests * (x <= slo_load[rows, None])
                idx = np.clip(np.searchsorted(LOAD_NODES, x, side="right") - 1, 0, k - 2)
                lo = LOAD_NODES[idx]
                alpha = np.clip((x - lo) / (LOAD_NODES[idx + 1] - lo), 0.0, 1.0)
                cells = (base[: requests.shape[0]] + idx).ravel()
                weights = np.bincount(cells, (served * (1.0 - alpha)).ravel(), minlength=runs * k)
                weights += np.bincount(cells + 1, (served * alpha).ravel(), minlength=runs * k)
                sub = (
                    np.flatnonzero(mask) + sl.start
                    if not mask.all()
                    else np.arange(sl.start, sl.stop)
                )
                n = len(sub)
                out.node_weights[sub] += weights[: n * k].reshape(n, k)
                out.demand_requests[sub] += requests.sum(axis=1)
                out.served_requests[sub] += served.sum(axis=1)
                out.compliant_requests[sub] += compliant.sum(axis=1)


@dataclass(frozen=True)
class ServingUsage:
    """What either engine measured per run, before pricing (arrays over runs)."""

    demand_requests: FloatArray
    """Requests that arrived within the horizon. [count]"""
    served_requests: FloatArray
    """Requests served (fast path: not shed; DES: completed). [count]"""
    compliant_requests: FloatArray
    """Requests that arrived in windows whose TTFT and TPOT percentiles met the SLO. [count]"""
    replica_hours: FloatArray
    """Provisioned replica-hours, cold starts included. [h]"""
    replicas_peak: FloatArray
    ttft_p50_s: FloatArray
    ttft_p99_s: FloatArray
    tpot_p50_s: FloatArray
    tpot_p99_s: FloatArray
    finished: BoolArray
    """Feasible and every request that arrived was served."""


def usage_fast(
    setup: ServingSetup, scenario: Scenario, draws: InputDraws, replica: Replica
) -> ServingUsage:
    """The fast path's usage: latency table, then every hour summed (module docstring)."""
    work = setup.work
    rate = draws.get("workload.rate_rps", work.rate_rps, work.rate_rps)
    growth = draws.get("workload.growth_per_month", work.growth_per_month, work.growth_per_month)
    burst = draws.get("workload.burstiness", work.burstiness, work.burstiness)
    table = latency_table(setup, replica)
    totals = hour_totals(setup, rate, growth, burst, replica, table)
    served = totals.node_weights.sum(axis=1)
    share = totals.node_weights / np.where(served > 0.0, served, 1.0)[:, None]

    def mean_over_requests(values: FloatArray) -> FloatArray:
        # nothing served (an infeasible replica): 0, flagged by finished = 0
        return np.where(replica.feasible, np.einsum("rk,rk->r", share, values), 0.0)

    return ServingUsage(
        demand_requests=totals.demand_requests,
        served_requests=totals.served_requests,
        compliant_requests=np.where(replica.feasible, totals.compliant_requests, 0.0),
        replica_hours=totals.replica_hours,
        replicas_peak=totals.replicas_peak,
        ttft_p50_s=mean_over_requests(table.ttft_p50_s),
        ttft_p99_s=mean_over_requests(table.ttft_p99_s),
        tpot_p50_s=mean_over_requests(table.tpot_p50_s),
        tpot_p99_s=mean_over_requests(table.tpot_p99_s),
        finished=replica.feasible
        & (totals.served_requests >= totals.demand_requests * (1.0 - 1e-9)),
    )


def serving_metrics(
    setup: ServingSetup,
    scenario: Scenario,
    draws: InputDraws,
    replica: Replica,
    usage: ServingUsage,
    priors: Priors,
    serving: ServingPriors,
) -> dict[str, FloatArray]:
    """Metrics of a serving study from either engine's usage: the one definition of each.

    - ``chip_hours``: provisioned replica-hours x chips per replica; ``replicas_mean``:
      replica-hours / horizon; ``replicas_peak``: most replicas provisioned at once.
    - ``slo_attainment``: compliant requests / requests that arrived (1 with no demand).
    - ``utilization``: served requests / (replica-hours x 3600 x ``λ_sat``): the share of
      the provisioned replicas' saturated throughput that served traffic.
    - latency percentiles [ms]: each window's percentile averaged over the served requests.
    - ``usd_per_million_output_tokens`` (``..._tokens``: input + output): TCO per million
      output (all) tokens of the served requests; where nothing is served (an infeasible
      replica, ``finished`` = 0) the whole TCO is charged to one token, never infinity.
    - ``tco_usd`` = hardware + energy + engineering (porting the serving stack to the chip's
      software stack) + delay (the days to launch, the longer of capacity lead time and
      porting, at ``delay_usd_per_day``).
    """
    work, pool = setup.work, scenario.fleet[0]
    a = scenario.assumptions
    runs = draws.runs
    chips = float(setup.chips_per_replica)
    chip_hours = usage.replica_hours * chips
    demand = usage.demand_requests
    served = usage.served_requests
    capacity = usage.replica_hours * SECONDS_PER_HOUR * replica.saturated_rps
    out_tokens = served * setup.output_mean
    all_tokens = served * (setup.input_mean + setup.output_mean)
    offline_per_chip = replica.saturated_rps * setup.output_mean / chips
    metrics: dict[str, FloatArray] = {
        "replicas_peak": usage.replicas_peak,
        "replicas_mean": usage.replica_hours / setup.horizon_hours,
        "chip_hours": chip_hours,
        "ttft_p50_ms": usage.ttft_p50_s * 1e3,
        "ttft_p99_ms": usage.ttft_p99_s * 1e3,
        "tpot_p50_ms": usage.tpot_p50_s * 1e3,
        "tpot_p99_ms": usage.tpot_p99_s * 1e3,
        "slo_attainment": np.where(
            demand > 0.0, usage.compliant_requests / np.where(demand > 0.0, demand, 1.0), 1.0
        ),
        "utilization": np.where(
            capacity > 0.0, served / np.where(capacity > 0.0, capacity, 1.0), 0.0
        ),
        "requests_served": served,
        "requests_dropped": np.maximum(demand - served, 0.0),
        "output_tokens": out_tokens,
        "offline_tokens_per_s_per_chip": offline_per_chip,
        "finished": usage.finished.astype(float),
    }
    # Engineering: porting the serving stack's code to the chip's software stack.
    fit = priors.framework_fit.fit(work.framework, setup.chip.software_stack)
    porting_h = draws.get(
        f"assumptions.porting_hours.{fit}", a.porting_hours, priors.porting_hours[fit].value
    )
    engineers = draws.get("assumptions.engineers", a.engineers, priors.engineers.value)
    week_h = draws.get("priors.engineer_hours_per_week", None, priors.engineer_hours_per_week.value)
    lead_days = draws.get(
        f"assumptions.lead_time_days.{pool.pricing}",
        a.lead_time_days,
        priors.lead_time_days[pool.pricing].value,
    )
    launch_days = np.maximum(lead_days, engineering.calendar_days(porting_h, engineers, week_h))
    metrics["engineering_hours"] = np.asarray(porting_h, dtype=float)
    metrics["launch_days"] = launch_days
    # Energy at the serving draw of the chips (decode is memory-bound: below training's).
    serving_power = priors.model_copy(
        update={"power_fraction_of_tdp": serving.power_fraction_of_tdp}
    )
    kwh = pool_energy_kwh(pool, draws, scenario, serving_power, chip_hours, cat=setup.cat)
    factor = draws.get(
        "assumptions.emission_kg_per_kwh", a.emission_kg_per_kwh, priors.emission_kg_per_kwh.value
    )
    metrics["energy_kwh"] = kwh
    metrics["emissions_kg_co2e"] = cost.emissions_kg(kwh, factor)
    if pool.provider is None:
        return metrics
    priced = price_pool(
        pool,
        draws,
        scenario,
        chip_hours=chip_hours,
        held_hours=constant(setup.horizon_hours, runs),
        kwh=kwh,
        cat=setup.cat,
    )
    wage = draws.get(
        "assumptions.engineer_usd_per_hour",
        a.engineer_usd_per_hour,
        priors.engineer_usd_per_hour.value,
    )
    delay = draws.get(
        "assumptions.delay_usd_per_day", a.delay_usd_per_day, priors.delay_usd_per_day.value
    )
    metrics |= priced
    metrics["engineering_cost_usd"] = cost.engineering_cost_usd(porting_h, wage)
    metrics["delay_cost_usd"] = cost.delay_cost_usd(launch_days, delay)
    tco = (
        metrics["hardware_cost_usd"]
        + metrics["energy_cost_usd"]
        + metrics["engineering_cost_usd"]
        + metrics["delay_cost_usd"]
    )
    metrics["tco_usd"] = tco
    metrics["usd_per_million_output_tokens"] = tco * 1e6 / np.maximum(out_tokens, 1.0)
    metrics["usd_per_million_tokens"] = tco * 1e6 / np.maximum(all_tokens, 1.0)
    return {k: np.broadcast_to(np.asarray(v, dtype=float), (runs,)) for k, v in metrics.items()}


def simulate_serving_fast(
    scenario: Scenario,
    root: np.random.SeedSequence,
    start: int,
    stop: int,
    *,
    cat: Catalog,
) -> tuple[dict[str, FloatArray], InputDraws]:
    """Metrics of the runs ``[start, stop)`` of a serving scenario by the fast path.

    Chips, prices and priors come from ``cat``, the study's catalog. Returns the metric
    arrays by name and the input draws.
    """
    priors, serving = cat.priors, cat.serving_priors
    setup = serving_setup(scenario, cat)
    draws = InputDraws(root=root, start=start, stop=stop)
    replica = draw_replica(setup, scenario, draws, serving)
    usage = usage_fast(setup, scenario, draws, replica)
    return serving_metrics(setup, scenario, draws, replica, usage, priors, serving), draws


def replica_capacity(
    scenario: Scenario,
    root: np.random.SeedSequence,
    start: int,
    stop: int,
    *,
    cat: Catalog,
) -> tuple[dict[str, FloatArray], InputDraws]:
    """One replica's capacity per run: saturated and within the SLO (exact bisection).

    Metrics: ``offline_tokens_per_s_per_chip`` (output tokens/s per chip at the batch limit,
    no latency bound), ``slo_tokens_per_s_per_chip`` (at the largest Poisson rate meeting
    the SLO, :func:`~accelsim.models.serving.slo_capacity_rps`), the request rates of one
    replica (``offline_rps_per_replica``, ``slo_rps_per_replica``), ``batch_limit`` and
    ``feasible`` (1: the SLO is met at some rate; 0: the model or one sequence does not fit,
    or no rate meets the SLO, and the SLO figures are 0).
    """
    serving = cat.serving_priors
    setup = serving_setup(scenario, cat)
    draws = InputDraws(root=root, start=start, stop=stop)
    replica = draw_replica(setup, scenario, draws, serving)
    slo = physics.slo_capacity_rps(
        replica.cost,
        setup.input_mean,
        setup.output_mean,
        replica.kv_capacity_tokens,
        replica.max_batch,
        setup.ttft_s,
        setup.tpot_s,
        setup.percentile,
        prefill_chunk_tokens=float(setup.work.prefill_chunk_tokens),
        input_variance=setup.input_variance,
        input_third_moment=setup.input_third_moment,
        input_fourth_moment=setup.input_fourth_moment,
    )
    per_chip = setup.output_mean / setup.chips_per_replica
    runs = draws.runs
    metrics = {
        "offline_tokens_per_s_per_chip": replica.saturated_rps * per_chip,
        "slo_tokens_per_s_per_chip": slo.rate_rps * per_chip,
        "offline_rps_per_replica": replica.saturated_rps,
        "slo_rps_per_replica": slo.rate_rps,
        "batch_limit": replica.batch_limit,
        "feasible": np.asarray(slo.feasible, dtype=float),
    }
    return {
        k: np.broadcast_to(np.asarray(v, dtype=float), (runs,)) for k, v in metrics.items()
    }, draws


__all__ = [
    "BURST_POINTS",
    "LOAD_NODES",
    "LatencyTable",
    "Replica",
    "ServingSetup",
    "ServingUsage",
    "burst_multipliers",
    "draw_replica",
    "hour_totals",
    "latency_table",
    "replica_capacity",
    "replicas_per_hour",
    "serving_metrics",
    "serving_setup",
    "simulate_serving_fast",
    "token_lengths",
    "usage_fast",
]
