"""Serving fast path, usage: the latency table, the replicas per hour and the burst windows.

Steps 2 to 4 of the fast path described in ``accelsim.engines.serving._fast``: the latency
table at :data:`LOAD_NODES`, the replicas per hour and the gamma burst multipliers; the
windows over the stages of a layout and the per-run totals they give are summed by
``accelsim.engines.serving._stages`` (:func:`~accelsim.engines.serving._stages.usage_fast`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from scipy import stats

from accelsim._typing import BoolArray, FloatArray
from accelsim.engines.serving._setup import Replica, ServingSetup
from accelsim.models import serving as physics

LOAD_NODES = np.array([0.002, 0.015, 0.04, 0.1, 0.2, 0.35, 0.55, 0.7, 0.8, 0.88, 0.94, 0.98])
"""Per-replica loads, as shares of the saturated rate, where the latency table is evaluated:
denser towards saturation, where latency bends upwards, and at light load, where TTFT
rises steeply as the replica goes from idle (no iteration in progress at an arrival) to
always busy (0.04: a batch of a few sequences), and where a mixture-of-experts model's
TPOT climbs steeply as a growing batch touches more experts (0.015: between 0.002 and
0.04 a straight line overstated Qwen3-Coder 480B's TPOT p50 by up to 45 % against the
request DES; with it, by at most 21 %, tests/agreement/test_serving_moe_light_load_agree.py;
one node costs ~5-10 % of the fast path's time). The first node stands for a vanishing
load (the SLO is infeasible when it fails there)."""
BURST_POINTS = 8
"""Equiprobable quantiles of the gamma burst multiplier integrated per hour (burstiness > 1)."""
METRIC_PERCENTILE = 0.99
"""The tail reported as ``*_p99_ms``."""


RUN_BLOCK = 512
"""Runs per pass of the latency model (:func:`latency_table`): its (runs, 11 loads, 39
prompt nodes) float64 temporaries are ~1.8 MB. In one block of all runs
``bench_serving_fast``'s study is 2.65-3.35x slower (paired medians over 9 rounds in two
sessions, 10-90 % 2.08-4.00; ``benchmarks/bench_paths.py``)."""


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
    sustained_load: FloatArray
    """The highest load node (share of ``λ_sat``) with a steady state, 1 where every node
    has one: beyond it the prefill queue or the batch limit overflows (the model says
    saturated), so the fast path sheds the load above it rather than read latencies off
    an unbounded queue. (runs,) [fraction]"""


def slo_load_from_margin(margin: FloatArray) -> FloatArray:
    """SLO capacity as a share of ``λ_sat`` from the SLO margin at :data:`LOAD_NODES`.

    ``margin`` (runs, nodes) is ``1 − latency / bound`` (negative: missed). Latency rises
    with the load: the capacity lies between the last node meeting the SLO and the first
    one missing it, where the margin's linear interpolation crosses zero; 0 where the first
    node misses it.
    """
    ok = margin >= 0.0
    first_fail = np.where(ok.all(axis=1), len(LOAD_NODES), np.argmin(ok, axis=1))
    last_ok = np.maximum(first_fail - 1, 0)
    nxt = np.minimum(first_fail, len(LOAD_NODES) - 1)
    rows = np.arange(margin.shape[0])
    m0, m1 = margin[rows, last_ok], margin[rows, nxt]
    step = np.where(m0 > m1, m0 / np.where(m0 > m1, m0 - m1, 1.0), 0.0)
    crossing = LOAD_NODES[last_ok] + (LOAD_NODES[nxt] - LOAD_NODES[last_ok]) * step
    return np.asarray(np.where(first_fail == 0, 0.0, crossing), dtype=float)


def node_weights(x: FloatArray, served: FloatArray) -> FloatArray:
    """Served requests attributed to the load nodes (runs, nodes) by linear interpolation.

    ``x`` and ``served`` are (runs, periods): each period's load as a share of ``λ_sat``
    (clipped to the nodes) and its served requests; a metric read off the latency table by
    linear interpolation in ``x`` is then the table dotted with these weights.
    """
    k = len(LOAD_NODES)
    runs = x.shape[0]
    idx = np.clip(np.searchsorted(LOAD_NODES, x, side="right") - 1, 0, k - 2)
    lo = LOAD_NODES[idx]
    alpha = np.clip((x - lo) / (LOAD_NODES[idx + 1] - lo), 0.0, 1.0)
    cells = (np.arange(runs)[:, None] * k + idx).ravel()
    weights = np.bincount(cells, (served * (1.0 - alpha)).ravel(), minlength=runs * k)
    weights += np.bincount(cells + 1, (served * alpha).ravel(), minlength=runs * k)
    return np.asarray(weights[: runs * k].reshape(runs, k), dtype=float)


def latency_table(setup: ServingSetup, replica: Replica) -> LatencyTable:
    """The latency table and the SLO capacity of each run's replica.

    Taken ``RUN_BLOCK`` runs at a time: the model's (runs, loads, prompt nodes) temporaries
    then stay in cache, and each run's row is the same whatever its block.
    """
    sat = np.where(replica.feasible, replica.saturated_rps, 1.0)
    loads = sat[:, None] * LOAD_NODES
    cost_col = _column(replica.cost)
    limit = np.maximum(replica.batch_limit, 1.0)[:, None]
    chunk = replica.prefill_chunk_tokens[:, None]
    blocks = []
    for lo in range(0, loads.shape[0], RUN_BLOCK):
        rows = slice(lo, lo + RUN_BLOCK)
        cost = physics.IterationCost(
            *(getattr(cost_col, f.name)[rows] for f in dataclasses.fields(cost_col))
        )
        blocks.append(_table_rows(setup, cost, loads[rows], limit[rows], chunk[rows]))
    table = {
        f.name: np.concatenate([getattr(b, f.name) for b in blocks])
        for f in dataclasses.fields(LatencyTable)
    }
    table["slo_load"] = np.where(replica.feasible, table["slo_load"], 0.0)
    return LatencyTable(**table)


def _sustained(saturated: BoolArray) -> FloatArray:
    """The highest load node before the first saturated one (runs, nodes) -> (runs,); 1 where
    none saturates, 0 where even the lightest load does."""
    k = len(LOAD_NODES)
    first = np.where(saturated.any(axis=1), np.argmax(saturated, axis=1), k)
    below = LOAD_NODES[np.maximum(first - 1, 0)]
    return np.asarray(np.where(first == k, 1.0, np.where(first > 0, below, 0.0)), dtype=float)


def _held_beyond(lat: physics.LoadLatency, sustained: FloatArray) -> physics.LoadLatency:
    """``lat`` with every load node beyond ``sustained`` (runs,) holding the latencies of the
    sustained node: the fast path sheds the load above it and reads the table there, so a
    saturated node's latencies (an unbounded queue's) are never a table entry."""
    k = len(LOAD_NODES)
    last = np.clip(np.searchsorted(LOAD_NODES, sustained, side="right") - 1, 0, k - 1)
    beyond = LOAD_NODES[None, :] > sustained[:, None]
    rows = np.arange(len(sustained))

    def held(values: FloatArray) -> FloatArray:
        return np.asarray(np.where(beyond, values[rows, last][:, None], values), dtype=float)

    return dataclasses.replace(
        lat,
        ttft_p50_s=held(lat.ttft_p50_s),
        ttft_tail_s=held(lat.ttft_tail_s),
        tpot_p50_s=held(lat.tpot_p50_s),
        tpot_tail_s=held(lat.tpot_tail_s),
    )


def _table_rows(
    setup: ServingSetup,
    cost: physics.IterationCost,
    loads: FloatArray,
    limit: FloatArray,
    chunk: FloatArray,
) -> LatencyTable:
    """:func:`latency_table` of some runs (rows), before the infeasible ones are zeroed."""
    inp, out = setup.input_mean, setup.output_mean
    prompts: dict[str, float | FloatArray] = {
        "prefill_chunk_tokens": chunk,
        "input_variance": setup.input_variance,
        "input_third_moment": setup.input_third_moment,
        "input_fourth_moment": setup.input_fourth_moment,
        "input_nodes": setup.input_nodes,
        "input_weights": setup.input_weights,
    }
    if setup.output_nodes is not None and setup.output_weights is not None:
        prompts |= {"output_nodes": setup.output_nodes, "output_weights": setup.output_weights}
    tail = physics.latency_under_load(cost, loads, inp, out, limit, METRIC_PERCENTILE, **prompts)
    slo = (
        tail
        if setup.percentile == METRIC_PERCENTILE
        else physics.latency_under_load(cost, loads, inp, out, limit, setup.percentile, **prompts)
    )
    margin = np.minimum(1.0 - slo.ttft_tail_s / setup.ttft_s, 1.0 - slo.tpot_tail_s / setup.tpot_s)
    sustained = _sustained(tail.saturated)
    tail = _held_beyond(tail, sustained)
    return LatencyTable(
        ttft_p50_s=tail.ttft_p50_s,
        ttft_p99_s=tail.ttft_tail_s,
        tpot_p50_s=tail.tpot_p50_s,
        tpot_p99_s=tail.tpot_tail_s,
        slo_load=np.minimum(slo_load_from_margin(np.where(slo.saturated, -1.0, margin)), sustained),
        sustained_load=sustained,
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


def shed(served: FloatArray, demand: FloatArray) -> FloatArray:
    """The fast path's dropped requests: the demand it does not serve [requests], for both
    layouts (the request DES counts its own, :class:`~accelsim.engines.serving._requests.
    WindowUsage`)."""
    return np.maximum(demand - served, 0.0)


def all_served(served: FloatArray, demand: FloatArray) -> BoolArray:
    """Whether a run served its whole demand [requests], up to the rounding of the hourly
    sums (relative 1e-9): the serving half of ``finished``, for both layouts."""
    return np.asarray(served >= demand * (1.0 - 1e-9), dtype=np.bool_)


__all__ = [
    "BURST_POINTS",
    "LOAD_NODES",
    "METRIC_PERCENTILE",
    "LatencyTable",
    "all_served",
    "burst_multipliers",
    "latency_table",
    "node_weights",
    "replicas_per_hour",
    "shed",
    "slo_load_from_margin",
]
