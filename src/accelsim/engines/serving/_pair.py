"""Capacity of a balanced prefill + decode pair of a disaggregated serving scenario.

What :func:`accelsim.serving_capacity` reports for ``Serving(disaggregated=...)``: each
pool's replica as the fast path draws it (:func:`~accelsim.engines.serving._disagg.
disaggregated_stages`, same input names, so the same values for a seed), its saturated
request rate and its SLO capacity (the rate at which its own latency percentile, TTFT for
prefill and TPOT for decode, meets the SLO: the rate the fast path sizes that pool with),
and the output tokens/s per chip of a fleet holding the two pools in the ratio that
balances them. With ``λ_p``, ``λ_d`` a prefill and a decode replica's rates [1/s] and
``c_p``, ``c_d`` their chips, a fleet serving ``Λ`` requests/s needs ``Λ/λ_p`` prefill and
``Λ/λ_d`` decode replicas, so per chip it delivers ``out / (c_p/λ_p + c_d/λ_d)`` output
tokens/s (replica counts taken as continuous: an assumption, exact for large fleets).
"""

from __future__ import annotations

import numpy as np

from accelsim._typing import FloatArray
from accelsim.catalog import Catalog
from accelsim.engines._inputs import InputDraws, InputPlan, as_plan
from accelsim.engines.serving._disagg import disaggregated_pools, disaggregated_stages
from accelsim.engines.serving._inputs import draw_serving_inputs
from accelsim.scenario import Scenario


def _per_chip(
    output_mean: float, chips: tuple[float, float], rates: list[FloatArray]
) -> FloatArray:
    """``out / (c_p/λ_p + c_d/λ_d)`` [tokens/s/chip]; 0 where either rate is 0."""
    ok = (rates[0] > 0.0) & (rates[1] > 0.0)
    safe = [np.where(ok, r, 1.0) for r in rates]
    return np.where(ok, output_mean / (chips[0] / safe[0] + chips[1] / safe[1]), 0.0)


def pair_capacity(
    scenario: Scenario,
    root: InputPlan | np.random.SeedSequence,
    start: int,
    stop: int,
    *,
    cat: Catalog,
) -> tuple[dict[str, FloatArray], InputDraws]:
    """A balanced prefill + decode pair's capacity per run (module docstring).

    Metrics: ``offline_tokens_per_s_per_chip`` and ``slo_tokens_per_s_per_chip`` (output
    tokens/s per chip of the balanced pair, saturated and at the pools' SLO capacities);
    ``prefill_offline_rps_per_replica``, ``decode_offline_rps_per_replica``,
    ``prefill_slo_rps_per_replica``, ``decode_slo_rps_per_replica`` [1/s];
    ``decode_per_prefill_replicas`` (decode replicas per prefill replica at the SLO
    capacities, 0 where either is 0); ``batch_limit`` (the decode replica's) [sequences];
    ``feasible`` (1: both pools meet their SLO bound at some rate).
    """
    draws = as_plan(root).draws(start, stop)
    base, pools = disaggregated_pools(scenario, cat)
    inputs = draw_serving_inputs(base, scenario, draws, cat, pools)
    (prefill, decode), _ = disaggregated_stages(base, pools, inputs)
    chips = (float(prefill.setup.chips_per_replica), float(decode.setup.chips_per_replica))
    saturated = [prefill.saturated_rps, decode.saturated_rps]
    slo = [s.slo_load * s.saturated_rps for s in (prefill, decode)]
    feasible = (slo[0] > 0.0) & (slo[1] > 0.0)
    metrics = {
        "offline_tokens_per_s_per_chip": _per_chip(base.output_mean, chips, saturated),
        "slo_tokens_per_s_per_chip": _per_chip(base.output_mean, chips, slo),
        "prefill_offline_rps_per_replica": saturated[0],
        "decode_offline_rps_per_replica": saturated[1],
        "prefill_slo_rps_per_replica": slo[0],
        "decode_slo_rps_per_replica": slo[1],
        "decode_per_prefill_replicas": np.where(
            feasible, slo[0] / np.where(feasible, slo[1], 1.0), 0.0
        ),
        "batch_limit": decode.replica.batch_limit,
        "feasible": feasible.astype(float),
    }
    runs = draws.runs
    return {
        k: np.broadcast_to(np.asarray(v, dtype=float), (runs,)) for k, v in metrics.items()
    }, draws


__all__ = ["pair_capacity"]
