"""Serving pipeline, last step: the metrics of a usage record and the pricing of its pools.

What both layouts share, for the stages of either (colocated: one pool; disaggregated:
prefill and decode): the endpoint's usage metrics (:func:`usage_metrics`) and the pricing
step (:func:`price_stages`), which reads only the drawn record
(:class:`~accelsim.engines.serving._inputs.ServingInputs`): each stage's pool is priced at
its own offer for its chip-hours, the launch is the latest of the pools' (the longer of
each pool's capacity lead time and its port), and the serving stack is ported once per
software stack. What differs between the layouts (utilisation, offline throughput per
chip, the per-pool and KV-transfer metrics) is added by
:func:`~accelsim.engines.serving._fast.serving_metrics` and
:func:`~accelsim.engines.serving._disagg.disaggregated_metrics`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from accelsim._typing import FloatArray
from accelsim.engines._pricing import (
    add_serving_costs,
    pool_billing,
    pool_energy_kwh,
    price_pool,
)
from accelsim.engines.serving._inputs import ServingInputs
from accelsim.engines.serving._setup import ServingSetup, ServingUsage
from accelsim.scenario import Scenario

Pools = Sequence[tuple[int, ServingSetup]]
"""Each stage's pool: its index in ``Scenario.fleet`` and its setup (chip, chips per
replica), in the order of the stages."""


def stage_chip_hours(pools: Pools, usage: ServingUsage) -> list[FloatArray]:
    """Each stage's provisioned chip-hours: its replica-hours x its chips per replica."""
    return [
        hours * float(pool.chips_per_replica)
        for (_, pool), hours in zip(pools, usage.stage_hours, strict=True)
    ]


def in_order(metrics: dict[str, FloatArray], first: Sequence[str]) -> dict[str, FloatArray]:
    """``metrics`` with the names ``first`` leading, in that order (the order a study's
    results list its metrics in), every value broadcast to the runs' shape."""
    runs = np.shape(metrics["finished"])
    ordered = {k: metrics[k] for k in first} | metrics
    return {k: np.broadcast_to(np.asarray(v, dtype=float), runs) for k, v in ordered.items()}


def usage_metrics(setup: ServingSetup, usage: ServingUsage) -> dict[str, FloatArray]:
    """The endpoint's replicas, latencies [ms], SLO attainment, requests and tokens served:
    ``replicas_peak`` (all stages at once), ``replicas_mean`` (all stages' replica-hours /
    horizon), ``ttft_p50_ms``, ``ttft_p99_ms``, ``tpot_p50_ms``, ``tpot_p99_ms``,
    ``slo_attainment`` (compliant / arrived, 1 with no demand), ``requests_served``,
    ``requests_dropped``, ``output_tokens`` and ``finished``."""
    demand, served = usage.demand_requests, usage.served_requests
    return {
        "replicas_peak": usage.replicas_peak,
        "replicas_mean": usage.replica_hours / setup.horizon_hours,
        "ttft_p50_ms": usage.ttft_p50_s * 1e3,
        "ttft_p99_ms": usage.ttft_p99_s * 1e3,
        "tpot_p50_ms": usage.tpot_p50_s * 1e3,
        "tpot_p99_ms": usage.tpot_p99_s * 1e3,
        "slo_attainment": np.where(
            demand > 0.0, usage.compliant_requests / np.where(demand > 0.0, demand, 1.0), 1.0
        ),
        "requests_served": served,
        "requests_dropped": usage.dropped_requests,
        "output_tokens": served * setup.output_mean,
        "finished": usage.finished.astype(float),
    }


def price_stages(
    setup: ServingSetup,
    scenario: Scenario,
    stages: Pools,
    usage: ServingUsage,
    inputs: ServingInputs,
) -> dict[str, FloatArray]:
    """The launch, energy and pricing metrics of the stages' pools (module docstring):
    ``engineering_hours``, ``launch_days``, ``energy_kwh`` (at the chips' serving draw),
    ``emissions_kg_co2e``; when the pools have providers, their summed prices, engineering,
    delay and credits, ``tco_usd`` and the cost per million (output) tokens. [USD]"""
    costs, horizon = inputs.prices.costs, setup.horizon_hours
    chip_hours = stage_chip_hours(stages, usage)
    ported: dict[str, FloatArray] = {}  # one port per software stack
    for (_, stage), launch in zip(stages, inputs.launches, strict=True):
        ported.setdefault(stage.chip.software_stack, launch.porting_hours)
    porting = functools.reduce(np.add, ported.values())
    launch_days = functools.reduce(np.maximum, [launch.launch_days for launch in inputs.launches])
    pools = [(scenario.fleet[i], inputs.prices.pool(i)) for i, _ in stages]
    energy = [
        pool_energy_kwh(pool, drawn, hours, cat=setup.cat)
        for (pool, drawn), hours in zip(pools, chip_hours, strict=True)
    ]
    kwh = functools.reduce(np.add, energy)
    metrics = {
        "engineering_hours": np.asarray(porting, dtype=float),
        "launch_days": launch_days,
        "energy_kwh": kwh,
        "emissions_kg_co2e": costs.emissions_kg(kwh),
    }
    if any(pool.provider is None for pool, _ in pools):  # a scenario prices all or none
        return metrics
    priced = [
        price_pool(
            pool, drawn, costs, chip_hours=hours, held_hours=np.full(costs.runs, horizon),
            kwh=e, cat=setup.cat,
        )
        for (pool, drawn), hours, e in zip(pools, chip_hours, energy, strict=True)
    ]  # fmt: skip
    for key in priced[0]:
        metrics[key] = functools.reduce(np.add, [p[key] for p in priced])
    bills = [
        pool_billing(pool, p["hardware_cost_usd"], horizon)
        for (pool, _), p in zip(pools, priced, strict=True)
    ]
    add_serving_costs(
        metrics,
        scenario,
        setup.cat,
        costs,
        porting_hours=porting,
        launch_days=launch_days,
        bills=bills,
        served=usage.served_requests,
        tokens_per_request=(setup.input_mean, setup.output_mean),
    )
    return metrics


__all__ = ["Pools", "in_order", "price_stages", "stage_chip_hours", "usage_metrics"]
