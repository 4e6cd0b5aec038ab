"""The serving fast path for disaggregated prefill and decode pools: two stages of the
serving pipeline.

A scenario whose ``Serving.disaggregated`` names two pools runs here (from
:func:`accelsim.engines.simulate_serving_fast`); the request DES
(``accelsim.engines.serving._blocks_disagg``) shares its record, stages and metrics. Per
run, in one vectorised pass, through the colocated fast path's steps
(``accelsim.engines.serving._fast``):

1. **One drawn record** (:func:`~accelsim.engines.serving._inputs.draw_serving_inputs`
   over the two pools, :func:`disaggregated_pools`): each pool's replica inputs and launch,
   the demand and the prices, drawn once before any physics.
2. **Two stages** (:class:`~accelsim.engines.serving._stages.Stage`,
   :func:`disaggregated_stages`): a prefill replica on the prefill pool's chip owning TTFT
   (:func:`~accelsim.models.serving.prefill_latency`: M/G/1 queue + own prefill + KV
   transfer, over the colocated path's nodes of the prompt-length law,
   ``ServingSetup.input_nodes`` with their weights) and a decode replica on the decode
   pool's owning TPOT (:func:`~accelsim.models.serving.decode_latency`, no prefill
   interference), each tabulated at the loads ``LOAD_NODES · λ_sat``. ``λ_sat`` is
   ``1/E[prefill time]`` for prefill and the decode rate at the batch limit for decode.
   Each pool's SLO capacity is where its own margin (TTFT for prefill, TPOT for decode)
   crosses zero.
3. **Hours and windows** by the one implementation over stages
   (:func:`~accelsim.engines.serving._stages.hour_totals`): each pool's replicas fixed or
   following the demand with its own SLO capacity, cold start as colocated; a window
   complies when both pools' loads are within their SLO capacities, and requests beyond
   either pool's saturated rate are shed.
4. **Metrics and pricing** (:func:`disaggregated_metrics`): the pipeline's shared step
   (``accelsim.engines.serving._priced``), each pool at its own offer; ``chip_hours``,
   energy and hardware are the two pools' sums.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from accelsim._typing import FloatArray
from accelsim.catalog import Catalog, attention_peak_tflops
from accelsim.engines._inputs import InputDraws, InputPlan, as_plan
from accelsim.engines.serving._inputs import ServingInputs, draw_serving_inputs
from accelsim.engines.serving._priced import (
    Pools,
    in_order,
    price_stages,
    stage_chip_hours,
    usage_metrics,
)
from accelsim.engines.serving._setup import (
    SECONDS_PER_HOUR,
    ReplicaInputs,
    ServingSetup,
    ServingUsage,
    build_replica,
    serving_setup,
)
from accelsim.engines.serving._stages import Stage, hour_totals, usage_from_totals
from accelsim.engines.serving._usage import (
    LOAD_NODES,
    METRIC_PERCENTILE,
    slo_load_from_margin,
)
from accelsim.models import serving as physics
from accelsim.scenario import Scenario, Serving

ROLES = ("prefill", "decode")


def _column(c: physics.IterationCost, extra: int = 1) -> physics.IterationCost:
    shape = (-1,) + (1,) * extra
    return physics.IterationCost(
        *(np.asarray(getattr(c, f.name)).reshape(shape) for f in dataclasses.fields(c))
    )


def disaggregated_pools(scenario: Scenario, cat: Catalog) -> tuple[ServingSetup, Pools]:
    """The study's setup and its two stages' pools, prefill then decode: each one's fleet
    index and setup (its chip, chips per replica, replicas the pool holds)."""
    work = scenario.workload
    assert isinstance(work, Serving)
    assert work.disaggregated is not None
    base = serving_setup(scenario, cat)
    return base, tuple(_pool_setup(scenario, cat, base, work, role) for role in ROLES)


def disaggregated_stages(
    base: ServingSetup, pools: Pools, inputs: ServingInputs
) -> tuple[tuple[Stage, Stage], FloatArray]:
    """Both pools' replicas, latency tables and SLO capacities from the drawn record (pure);
    the KV transfer per prompt node. [s]"""
    (ip, sp), (idx_d, sd) = pools
    prompts = base.input_nodes  # the colocated path's nodes (node_edges), same weights
    transfer = physics.kv_transfer_seconds(prompts, base.kv_bytes_per_token, kv_link_gbps(sp, sd))
    levels = sorted({METRIC_PERCENTILE, base.percentile})
    prefill = _prefill_stage(base, (ip, sp), inputs.replicas[0], prompts, transfer, levels)
    decode = _decode_stage(base, (idx_d, sd), inputs.replicas[1], levels)
    return (prefill, decode), transfer


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
    replica, replicas the pool holds and peak TFLOP/s at the workload's precision and at the
    attention's."""
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
        attention_peak_tflops=attention_peak_tflops(chip, work.precision, base.kv_precision),
    )


def _prefill_stage(
    base: ServingSetup,
    pool: tuple[int, ServingSetup],
    drawn: ReplicaInputs,
    prompts: FloatArray,
    transfer: FloatArray,
    levels: list[float],
) -> Stage:
    """The prefill stage: its replica, saturation rate [1/s], SLO load and the TTFT columns
    [s] at the load nodes (queue wait + prefill + KV transfer over the prompt nodes)."""
    index, sp = pool
    rep_p = build_replica(sp, drawn)
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
        setup=sp,
        replica=rep_p,
        saturated_rps=sat_p,
        slo_load=np.where(fits, slo_load_from_margin(margin_p), 0.0),
        sustained_load=np.ones(sat_p.shape),  # a queue, not a batch limit: no sustained cap
        feasible=fits,
        latency={"ttft_p50_s": metric_p.ttft_p50_s, "ttft_p99_s": metric_p.ttft_tail_s},
        pool_index=index,
    )


def _decode_stage(
    base: ServingSetup, pool: tuple[int, ServingSetup], drawn: ReplicaInputs, levels: list[float]
) -> Stage:
    """The decode stage: its replica, saturation rate [1/s], SLO load and the TPOT columns
    [s] at the load nodes (no prefill interference)."""
    index, sd = pool
    rep_d = build_replica(sd, drawn)
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
        setup=sd,
        replica=rep_d,
        saturated_rps=np.where(ok_d, sat_d, 0.0),
        slo_load=np.where(ok_d, slo_load_from_margin(margin_d), 0.0),
        sustained_load=np.ones(sat_d.shape),
        feasible=ok_d,
        latency={"tpot_p50_s": metric_d.tpot_p50_s, "tpot_p99_s": metric_d.tpot_tail_s},
        pool_index=index,
    )


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
    base, pools = disaggregated_pools(scenario, cat)
    inputs = draw_serving_inputs(base, scenario, draws, cat, pools)
    stages, transfer = disaggregated_stages(base, pools, inputs)
    usage = usage_from_totals(stages, hour_totals(base, inputs.demand, stages))
    # the mean over the prompt nodes, the same for every run
    kv_transfer_s = np.full(
        usage.served_requests.shape, float(np.sum(base.input_weights * transfer))
    )
    return disaggregated_metrics(scenario, base, stages, usage, inputs, kv_transfer_s), draws


_ORDER = (
    "replicas_peak", "replicas_mean", "ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms",
    "tpot_p99_ms", "slo_attainment", "requests_served", "requests_dropped", "output_tokens",
    "kv_transfer_ms", "finished", "prefill_replicas_peak", "prefill_replicas_mean",
    "prefill_chip_hours", "decode_replicas_peak", "decode_replicas_mean", "decode_chip_hours",
    "chip_hours", "utilization", "offline_tokens_per_s_per_chip",
)  # fmt: skip
"""The disaggregated metrics ahead of the launch and pricing ones, in the order results
list them."""


def disaggregated_metrics(
    scenario: Scenario,
    base: ServingSetup,
    stages: tuple[Stage, Stage],
    usage: ServingUsage,
    inputs: ServingInputs,
    kv_transfer_s: FloatArray,
) -> dict[str, FloatArray]:
    """Metrics of a disaggregated serving study from either engine's usage per run (the
    one definition of each): the pipeline's shared metrics and pricing step over the two
    pools (:func:`~accelsim.engines.serving._priced.usage_metrics`,
    :func:`~accelsim.engines.serving._priced.price_stages`: each pool at its offer), each
    pool's replicas and chip-hours, the utilisation, the offline output tokens/s per chip of
    a balanced pair and ``kv_transfer_ms`` (mean KV transfer per request)."""
    pools = tuple((stage.pool_index, stage.setup) for stage in stages)
    metrics = usage_metrics(base, usage) | {"kv_transfer_ms": kv_transfer_s * 1e3}
    metrics |= _chip_metrics(base, stages, usage, stage_chip_hours(pools, usage))
    return in_order(metrics | price_stages(base, scenario, pools, usage, inputs), _ORDER)


def _chip_metrics(
    base: ServingSetup,
    stages: tuple[Stage, Stage],
    usage: ServingUsage,
    chip_hours: list[FloatArray],
) -> dict[str, FloatArray]:
    """Each pool's replicas and chip-hours, the fleet's chip-hours, utilisation (each pool's
    served share of its saturated capacity, chip-hour weighted) and the output tokens/s per
    chip of a balanced prefill + decode pair."""
    served = usage.served_requests
    runs = served.shape[0]
    metrics: dict[str, FloatArray] = {}
    total = np.zeros(runs)
    capacity_chip_hours = np.zeros(runs)  # chip-hours per saturated request [h·s]
    busy = np.zeros(runs)
    for role, stage, hours, chip_h, peak in zip(
        ROLES, stages, usage.stage_hours, chip_hours, usage.stage_peaks, strict=True
    ):
        chips = float(stage.setup.chips_per_replica)
        sat = stage.saturated_rps
        metrics[f"{role}_replicas_peak"] = peak
        metrics[f"{role}_replicas_mean"] = hours / base.horizon_hours
        metrics[f"{role}_chip_hours"] = chip_h
        total = total + chip_h
        capacity = hours * SECONDS_PER_HOUR * sat
        # a pool's served share of its capacity is at most 1 (as in serving_metrics)
        busy = busy + chip_h * np.where(
            capacity > 0.0, np.minimum(served, capacity) / np.where(capacity > 0, capacity, 1), 0
        )
        capacity_chip_hours = capacity_chip_hours + np.where(
            sat > 0.0, chips / np.where(sat > 0, sat, 1), np.inf
        )
    metrics["chip_hours"] = total
    metrics["utilization"] = np.where(total > 0.0, busy / np.where(total > 0, total, 1), 0.0)
    finite = np.isfinite(capacity_chip_hours)
    metrics["offline_tokens_per_s_per_chip"] = np.where(
        finite, base.output_mean / np.where(finite, capacity_chip_hours, 1.0), 0.0
    )
    return metrics


__all__ = [
    "disaggregated_metrics",
    "disaggregated_pools",
    "disaggregated_stages",
    "kv_link_gbps",
    "simulate_serving_disaggregated",
]
