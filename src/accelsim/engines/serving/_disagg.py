"""The serving fast path for disaggregated prefill and decode pools.

A scenario whose ``Serving.disaggregated`` names two pools runs here (from
:func:`accelsim.engines.simulate_serving_fast`); the request DES
(``accelsim.engines.serving._blocks_disagg``) shares its replicas, plans and metrics. Per run,
in one vectorised pass, as the colocated fast path (``accelsim.engines.serving._fast``):

1. **Two replicas**: a prefill replica on the prefill pool's chip and a decode replica on
   the decode pool's, each drawn as a colocated one (:func:`draw_replica`, same priors).
2. **Latency tables** at the loads ``LOAD_NODES · λ_sat`` of each: TTFT through the
   prefill replica (:func:`~accelsim.models.serving.prefill_latency`: M/G/1 queue + own
   prefill + KV transfer, over the colocated path's nodes of the prompt-length law,
   ``ServingSetup.input_nodes`` with their weights), TPOT of
   the decode replica (:func:`~accelsim.models.serving.decode_latency`, no prefill
   interference). ``λ_sat`` is ``1/E[prefill time]`` for prefill and the decode rate at
   the batch limit for decode. Each pool's SLO capacity is where its own margin (TTFT for
   prefill, TPOT for decode) crosses zero.
3. **Hours**: each pool's replicas are fixed (its count // chips per replica) or follow
   the demand with its own SLO capacity, cold start as colocated (after a scale-up the
   cold-start share of the hour runs on the previous replicas).
4. **Windows**: a window complies when both pools' loads are within their SLO capacities;
   requests beyond either pool's saturated rate are shed.

Each pool is priced at its own offer; ``chip_hours``, energy and hardware are the two
pools' sums.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from accelsim._typing import FloatArray
from accelsim.catalog import Catalog
from accelsim.engines._inputs import InputDraws, InputPlan, as_plan, constant
from accelsim.engines._price_inputs import (
    SERVING_POWER,
    CostInputs,
    PriceInputs,
    draw_price_inputs,
)
from accelsim.engines._pricing import (
    Billing,
    add_serving_costs,
    pool_billing,
    pool_energy_kwh,
    price_pool,
)
from accelsim.engines.serving._inputs import draw_demand, draw_launch
from accelsim.engines.serving._setup import (
    SECONDS_PER_HOUR,
    Replica,
    ServingSetup,
    draw_replica,
    serving_setup,
)
from accelsim.engines.serving._usage import (
    BURST_POINTS,
    LOAD_NODES,
    METRIC_PERCENTILE,
    all_served,
    burst_multipliers,
    node_weights,
    replicas_per_hour,
    shed,
    slo_load_from_margin,
)
from accelsim.models import serving as physics
from accelsim.scenario import Scenario, Serving

ROLES = ("prefill", "decode")


@dataclasses.dataclass(frozen=True)
class Stage:
    """One pool of a disaggregated study: its setup, fleet index, drawn replica, saturated
    rate [1/s], SLO load [fraction of it] and latency table at the load nodes."""

    setup: ServingSetup
    pool_index: int
    replica: Replica
    saturated_rps: FloatArray
    slo_load: FloatArray
    first: FloatArray
    """(runs, nodes): TTFT p50 (prefill) or TPOT p50 (decode) at the load nodes. [s]"""
    tail: FloatArray
    """(runs, nodes): the same at the 99th percentile. [s]"""
    feasible: FloatArray


def _column(c: physics.IterationCost, extra: int = 1) -> physics.IterationCost:
    shape = (-1,) + (1,) * extra
    return physics.IterationCost(
        *(np.asarray(getattr(c, f.name)).reshape(shape) for f in dataclasses.fields(c))
    )


def disaggregated_stages(
    scenario: Scenario, cat: Catalog, draws: InputDraws
) -> tuple[ServingSetup, Stage, Stage, FloatArray]:
    """Both pools' replicas, latency tables and SLO capacities; the transfer per node. [s]"""
    work = scenario.workload
    assert isinstance(work, Serving)
    assert work.disaggregated is not None
    base = serving_setup(scenario, cat)
    setups = {role: _pool_setup(scenario, cat, base, work, role) for role in ROLES}
    prompts = base.input_nodes  # the colocated path's nodes (node_edges), same weights
    (ip, sp), (idx_d, sd) = setups["prefill"], setups["decode"]
    transfer = physics.kv_transfer_seconds(prompts, base.kv_bytes_per_token, kv_link_gbps(sp, sd))
    levels = sorted({METRIC_PERCENTILE, base.percentile})
    prefill = _prefill_stage(scenario, cat, draws, base, (ip, sp), prompts, transfer, levels)
    decode = _decode_stage(scenario, cat, draws, base, (idx_d, sd), levels)
    return base, prefill, decode, transfer


def kv_link_gbps(prefill: ServingSetup, decode: ServingSetup) -> float:
    """Bandwidth of a KV transfer from a prefill to a decode replica: the narrower side's
    chips per replica x the catalog's ``scale_out_gbps``. [Gbit/s]"""
    return min(
        prefill.chips_per_replica * prefill.chip.scale_out_gbps,
        decode.chips_per_replica * decode.chip.scale_out_gbps,
    )


def _pool_setup(
    scenario: Scenario, cat: Catalog, base: ServingSetup, work: Serving, role: str
) -> tuple[int, ServingSetup]:
    """The pool index of ``role`` (prefill or decode) and its setup: its chip, chips per
    replica, replicas the pool holds and peak TFLOP/s at the workload's precision."""
    assert work.disaggregated is not None
    index: int = getattr(work.disaggregated, f"{role}_pool")
    pool = scenario.fleet[index]
    chip = cat.chip(pool.chip)
    chips = work.replica_chips(chip, pool.count, role, cat)
    return index, dataclasses.replace(
        base,
        chip=chip,
        chips_per_replica=chips,
        replicas_pool=pool.count // chips,
        peak_tflops=chip.peak_tflops(work.precision),
    )


def _prefill_stage(
    scenario: Scenario,
    cat: Catalog,
    draws: InputDraws,
    base: ServingSetup,
    pool: tuple[int, ServingSetup],
    prompts: FloatArray,
    transfer: FloatArray,
    levels: list[float],
) -> Stage:
    """The prefill pool's replica, saturation rate [1/s], SLO load and TTFT table [s] at the
    load nodes (queue wait + prefill + KV transfer over the prompt nodes)."""
    index, sp = pool
    rep_p = draw_replica(sp, draws, cat.serving_priors)
    service = physics.prefill_seconds(_column(rep_p.cost), prompts)  # (runs, prompts)
    fits = rep_p.kv_capacity_tokens >= prompts.max()
    sat_p = np.where(fits, 1.0 / np.sum(base.input_weights * service, axis=1), 0.0)
    rate_p = np.where(fits, sat_p, 1.0)[:, None] * LOAD_NODES[None, :]
    # the request DES's prefill replica batches every waiting prompt: the iteration's
    # shared part (overhead, the weights' read where it is exposed) is paid once per batch
    mean_prompt = np.sum(base.input_weights * prompts, axis=-1, keepdims=True)
    shared = physics.shared_prefill_seconds(_column(rep_p.cost), mean_prompt)
    by_level = {
        q: physics.prefill_latency(
            rate_p,
            service[:, None, :],
            transfer,
            q,
            weights=base.input_weights,
            shared_s=shared,
        )
        for q in levels
    }
    slo_p = by_level[base.percentile]
    margin_p = np.where(slo_p.saturated, -1.0, 1.0 - slo_p.ttft_tail_s / base.ttft_s)
    metric_p = by_level[METRIC_PERCENTILE]
    return Stage(
        sp, index, rep_p, sat_p, np.where(fits, slo_load_from_margin(margin_p), 0.0),
        metric_p.ttft_p50_s, metric_p.ttft_tail_s, fits.astype(float),
    )  # fmt: skip


def _decode_stage(
    scenario: Scenario,
    cat: Catalog,
    draws: InputDraws,
    base: ServingSetup,
    pool: tuple[int, ServingSetup],
    levels: list[float],
) -> Stage:
    """The decode pool's replica, saturation rate [1/s], SLO load and TPOT table [s] at the
    load nodes (no prefill interference)."""
    index, sd = pool
    rep_d = draw_replica(sd, draws, cat.serving_priors)
    inp, out = base.input_mean, base.output_mean
    sat_d = physics.decode_saturated_rps(rep_d.cost, rep_d.batch_limit, inp, out)
    ok_d = rep_d.batch_limit >= 1.0
    rate_d = np.where(ok_d, sat_d, 1.0)[:, None] * LOAD_NODES[None, :]
    limit = np.maximum(rep_d.batch_limit, 1.0)[:, None]
    dec = {
        q: physics.decode_latency(_column(rep_d.cost), rate_d, inp, out, limit, q) for q in levels
    }
    slo_d = dec[base.percentile]
    margin_d = np.where(slo_d.saturated, -1.0, 1.0 - slo_d.tpot_tail_s / base.tpot_s)
    metric_d = dec[METRIC_PERCENTILE]
    return Stage(
        sd, index, rep_d, np.where(ok_d, sat_d, 0.0),
        np.where(ok_d, slo_load_from_margin(margin_d), 0.0),
        metric_d.tpot_p50_s, metric_d.tpot_tail_s, ok_d.astype(float),
    )  # fmt: skip


_Periods = list[tuple[FloatArray, list[FloatArray]]]
"""(hours of each hour [h], replicas of each pool in them) per part of the hour."""


def _hours(
    base: ServingSetup,
    draws: InputDraws,
    stages: tuple[Stage, Stage],
) -> dict[str, FloatArray]:
    """Every hour and burst window of the horizon summed per run, for both pools."""
    drawn = draw_demand(base.work, draws)
    burst = drawn.burstiness
    runs = draws.runs
    h = np.arange(base.hours, dtype=float)
    duration = np.minimum(base.horizon_hours - h, 1.0)
    demand = drawn.hourly_rps(base)
    replicas = [replicas_per_hour(s.setup, demand, s.slo_load * s.saturated_rps) for s in stages]
    out = {
        "demand": np.zeros(runs),
        "served": np.zeros(runs),
        "compliant": np.zeros(runs),
        "peak": (replicas[0] + replicas[1]).max(axis=1),
    }
    for role, n in zip(ROLES, replicas, strict=True):
        out[f"{role}_hours"] = n @ duration
        out[f"{role}_peak"] = n.max(axis=1)
    periods = _periods(base.work, duration, demand, replicas)
    weights = _burst_sums(out, demand, burst, periods, stages)
    _latencies(out, weights, stages)
    return out


def _periods(
    work: Serving, duration: FloatArray, demand: FloatArray, replicas: list[FloatArray]
) -> _Periods:
    """The whole hour at its replicas; under ``follow_demand`` with a cold start, an hour
    whose replicas rise serves its first ``cold_start_minutes`` with the previous hour's."""
    cold = min(work.cold_start_minutes / 60.0, 1.0)
    periods: _Periods = [(np.broadcast_to(duration, demand.shape), replicas)]
    if cold > 0.0 and work.scaling == "follow_demand":
        before = [np.concatenate([n[:, :1], n[:, :-1]], axis=1) for n in replicas]
        rising = (replicas[0] > before[0]) | (replicas[1] > before[1])
        held = [np.minimum(n, b) for n, b in zip(replicas, before, strict=True)]
        periods = [
            (duration * np.where(rising, 1.0 - cold, 1.0), replicas),
            (duration * np.where(rising, cold, 0.0), held),
        ]  # fmt: skip
    return periods


def _burst_sums(
    out: dict[str, FloatArray],
    demand: FloatArray,
    burst: FloatArray,
    periods: _Periods,
    stages: tuple[Stage, Stage],
) -> list[FloatArray]:
    """Adds each run's demanded, served and compliant requests over the burst multipliers
    and periods to ``out``; returns each pool's weights of the load nodes (runs, nodes)."""
    runs, k = demand.shape[0], len(LOAD_NODES)
    weights = [np.zeros((runs, k)), np.zeros((runs, k))]
    for value in np.unique(burst):
        rows = burst == value
        for m in burst_multipliers(float(value)):
            weight = 1.0 / (BURST_POINTS if value > 1.0 else 1)
            for hours, counts in periods:
                requests = demand[rows] * (SECONDS_PER_HOUR * m * weight) * hours[rows]
                xs = []
                for s, n in zip(stages, counts, strict=True):
                    capacity = n[rows] * s.saturated_rps[rows, None]
                    xs.append(
                        np.divide(
                            demand[rows] * m,
                            capacity,
                            out=np.full(requests.shape, np.inf),
                            where=capacity > 0.0,
                        )
                    )
                worst = np.maximum(xs[0], xs[1])
                served = requests * np.minimum(1.0, 1.0 / np.maximum(worst, 1e-300))
                compliant = requests * (
                    (xs[0] <= stages[0].slo_load[rows, None])
                    & (xs[1] <= stages[1].slo_load[rows, None])
                )
                for w, x in zip(weights, xs, strict=True):
                    w[rows] += node_weights(x, served)
                out["demand"][rows] += requests.sum(axis=1)
                out["served"][rows] += served.sum(axis=1)
                out["compliant"][rows] += compliant.sum(axis=1)
    return weights


def _latencies(
    out: dict[str, np.ndarray], weights: list[FloatArray], stages: tuple[Stage, Stage]
) -> None:
    """Adds the served-weighted TTFT and TPOT p50/p99 [s] and ``finished`` to ``out``; an
    infeasible replica serves nothing compliant."""
    feasible = (stages[0].feasible > 0) & (stages[1].feasible > 0)
    for name, w, s in (("ttft", weights[0], stages[0]), ("tpot", weights[1], stages[1])):
        total = w.sum(axis=1)
        share = w / np.where(total > 0.0, total, 1.0)[:, None]
        out[f"{name}_p50_s"] = np.where(feasible, np.einsum("rk,rk->r", share, s.first), 0.0)
        out[f"{name}_p99_s"] = np.where(feasible, np.einsum("rk,rk->r", share, s.tail), 0.0)
    out["compliant"] = np.where(feasible, out["compliant"], 0.0)
    out["finished"] = feasible & all_served(out["served"], out["demand"])
    out["dropped"] = shed(out["served"], out["demand"])


def simulate_serving_disaggregated(
    scenario: Scenario,
    root: InputPlan | np.random.SeedSequence,
    start: int,
    stop: int,
    *,
    cat: Catalog,
) -> tuple[dict[str, FloatArray], InputDraws]:
    """Metrics of the runs ``[start, stop)`` of a disaggregated serving scenario (module
    docstring): the colocated metrics plus ``prefill_replicas_peak``,
    ``decode_replicas_peak``, ``prefill_replicas_mean``, ``decode_replicas_mean``,
    ``prefill_chip_hours``, ``decode_chip_hours`` and ``kv_transfer_ms`` (mean per request).
    """
    draws = as_plan(root).draws(start, stop)
    base, prefill, decode, transfer = disaggregated_stages(scenario, cat, draws)
    stages = (prefill, decode)
    usage = _hours(base, draws, stages)
    usage["kv_transfer_s"] = np.full(draws.runs, float(np.sum(base.input_weights * transfer)))
    return disaggregated_metrics(scenario, cat, draws, base, stages, usage), draws


def disaggregated_metrics(
    scenario: Scenario,
    cat: Catalog,
    draws: InputDraws,
    base: ServingSetup,
    stages: tuple[Stage, Stage],
    usage: dict[str, FloatArray],
) -> dict[str, FloatArray]:
    """Metrics of a disaggregated serving study from either engine's usage per run (the
    one definition of each): ``demand``, ``served``, ``compliant`` [requests], ``peak``
    (both pools at once), ``prefill_hours``, ``decode_hours`` [replica-h],
    ``prefill_peak``, ``decode_peak``, ``ttft_p50_s``, ``ttft_p99_s``, ``tpot_p50_s``,
    ``tpot_p99_s``, ``kv_transfer_s`` [s] and ``finished``; each pool priced at its offer."""
    runs = draws.runs
    metrics = _usage_metrics(base, usage)
    _chip_metrics(base, usage, stages, metrics)
    used = tuple(stage.pool_index for stage in stages)
    prices = draw_price_inputs(
        scenario,
        cat,
        draws,
        used=used,
        power=SERVING_POWER,
        engineering=all(scenario.fleet[i].provider is not None for i in used),
    )
    porting, launch, kwh, priced, bills = _pool_costs(
        scenario, cat, draws, prices, base, usage, stages
    )
    metrics["engineering_hours"] = np.asarray(porting, dtype=float)
    metrics["launch_days"] = launch
    metrics["energy_kwh"] = kwh
    metrics["emissions_kg_co2e"] = prices.costs.emissions_kg(kwh)
    if len(priced) == 2:
        _price(scenario, cat, prices.costs, metrics, priced, bills, porting, launch, usage, base)
    return {k: np.broadcast_to(np.asarray(v, dtype=float), (runs,)) for k, v in metrics.items()}


def _usage_metrics(base: ServingSetup, usage: dict[str, FloatArray]) -> dict[str, FloatArray]:
    """The endpoint's replicas, latencies [ms], SLO attainment, requests and tokens served."""
    served, demand = usage["served"], usage["demand"]
    return {
        "replicas_peak": usage["peak"],
        "replicas_mean": (usage["prefill_hours"] + usage["decode_hours"]) / base.horizon_hours,
        "ttft_p50_ms": usage["ttft_p50_s"] * 1e3,
        "ttft_p99_ms": usage["ttft_p99_s"] * 1e3,
        "tpot_p50_ms": usage["tpot_p50_s"] * 1e3,
        "tpot_p99_ms": usage["tpot_p99_s"] * 1e3,
        "slo_attainment": np.where(
            demand > 0.0, usage["compliant"] / np.where(demand > 0.0, demand, 1.0), 1.0
        ),
        "requests_served": served,
        "requests_dropped": usage["dropped"],
        "output_tokens": served * base.output_mean,
        "kv_transfer_ms": usage["kv_transfer_s"] * 1e3,
        "finished": usage["finished"].astype(float),
    }


def _chip_metrics(
    base: ServingSetup,
    usage: dict[str, FloatArray],
    stages: tuple[Stage, Stage],
    metrics: dict[str, FloatArray],
) -> None:
    """Adds each pool's replicas and chip-hours, the fleet's chip-hours, utilisation and
    offline output tokens/s per chip to ``metrics``."""
    served = usage["served"]
    runs = served.shape[0]
    chip_hours = np.zeros(runs)
    capacity_chip_hours = np.zeros(runs)  # chip-hours per saturated request [h·s]
    busy = np.zeros(runs)
    for role, stage in zip(ROLES, stages, strict=True):
        chips = float(stage.setup.chips_per_replica)
        hours = usage[f"{role}_hours"] * chips
        sat = stage.saturated_rps
        metrics[f"{role}_replicas_peak"] = usage[f"{role}_peak"]
        metrics[f"{role}_replicas_mean"] = usage[f"{role}_hours"] / base.horizon_hours
        metrics[f"{role}_chip_hours"] = hours
        chip_hours = chip_hours + hours
        capacity = usage[f"{role}_hours"] * SECONDS_PER_HOUR * sat
        # a pool's served share of its capacity is at most 1 (as in _serving._usage_metrics)
        busy = busy + hours * np.where(
            capacity > 0.0, np.minimum(served, capacity) / np.where(capacity > 0, capacity, 1), 0
        )
        capacity_chip_hours = capacity_chip_hours + np.where(
            sat > 0.0, chips / np.where(sat > 0, sat, 1), np.inf
        )
    metrics["chip_hours"] = chip_hours
    # utilisation: each pool's served share of its saturated capacity, chip-hour weighted
    metrics["utilization"] = np.where(
        chip_hours > 0.0, busy / np.where(chip_hours > 0, chip_hours, 1), 0.0
    )
    # a balanced prefill + decode pair: output tokens/s per chip of both pools
    finite = np.isfinite(capacity_chip_hours)
    metrics["offline_tokens_per_s_per_chip"] = np.where(
        finite, base.output_mean / np.where(finite, capacity_chip_hours, 1.0), 0.0
    )


def _pool_costs(
    scenario: Scenario,
    cat: Catalog,
    draws: InputDraws,
    prices: PriceInputs,
    base: ServingSetup,
    usage: dict[str, FloatArray],
    stages: tuple[Stage, Stage],
) -> tuple[FloatArray, FloatArray, FloatArray, list[dict[str, FloatArray]], list[Billing]]:
    """Porting [engineer-hours] (one port per software stack), launch [days] (the later of
    each pool's lead time and port), energy [kWh], each priced pool's costs and billing."""
    runs = draws.runs
    kwh = np.zeros(runs)
    launch = np.zeros(runs)
    porting = np.zeros(runs)
    ported: set[str] = set()
    priced: list[dict[str, FloatArray]] = []
    bills = []
    for role, stage in zip(ROLES, stages, strict=True):
        pool = scenario.fleet[stage.pool_index]
        hours = usage[f"{role}_hours"] * float(stage.setup.chips_per_replica)
        # the colocated path's launch rule, on this stage's chip and pool
        staged = draw_launch(stage.setup, scenario, draws, cat.priors, stage.pool_index)
        if stage.setup.chip.software_stack not in ported:  # one port per software stack
            ported.add(stage.setup.chip.software_stack)
            porting = porting + staged.porting_hours
        launch = np.maximum(launch, staged.launch_days)
        energy = pool_energy_kwh(pool, prices.pool(stage.pool_index), hours, cat=cat)
        kwh = kwh + energy
        if pool.provider is not None:
            price = price_pool(
                pool, prices.pool(stage.pool_index), prices.costs, chip_hours=hours,
                held_hours=constant(base.horizon_hours, runs), kwh=energy, cat=cat,
            )  # fmt: skip
            priced.append(price)
            bills.append(pool_billing(pool, price["hardware_cost_usd"], base.horizon_hours))
    return porting, launch, kwh, priced, bills


def _price(
    scenario: Scenario,
    cat: Catalog,
    costs: CostInputs,
    metrics: dict[str, FloatArray],
    priced: list[dict[str, FloatArray]],
    bills: list[Billing],
    porting: FloatArray,
    launch: FloatArray,
    usage: dict[str, FloatArray],
    base: ServingSetup,
) -> None:
    """Adds both pools' costs, engineering, delay and credits, the TCO and the cost per
    million (output) tokens to ``metrics``. [USD]"""
    for key in priced[0]:
        metrics[key] = priced[0][key] + priced[1][key]
    add_serving_costs(
        metrics,
        scenario,
        cat,
        costs,
        porting_hours=porting,
        launch_days=launch,
        bills=bills,
        served=usage["served"],
        tokens_per_request=(base.input_mean, base.output_mean),
    )


__all__ = [
    "Stage",
    "disaggregated_metrics",
    "disaggregated_stages",
    "kv_link_gbps",
    "simulate_serving_disaggregated",
]
