"""The serving fast path: months of hourly demand priced without simulating every request.

For a chunk of runs, every uncertain input is drawn once (:class:`InputDraws`): the serving
efficiency, iteration overhead and memory share (catalog serving priors), the mean rate,
burstiness and growth (the workload). From them, per run and in one vectorised pass:

1. **One replica** (:mod:`accelsim.models.serving`): its iteration coefficients, KV
   capacity, batch limit and saturated request rate ``λ_sat`` (MLPerf Offline).
2. **A latency table**: :func:`~accelsim.models.serving.latency_under_load` at the loads
   ``u·λ_sat`` for the fixed nodes ``u`` of
   :data:`~accelsim.engines.serving._usage.LOAD_NODES`, at the 99th percentile (the
   metrics) and the SLO's. The replica's **SLO capacity** is the largest node load
   meeting both bounds, refined by linear interpolation of the margin to the next node.
3. **Hours**: the demand of hour ``h`` is ``rate · profile[h mod 24] · (1 + g)^(h/730.5)``;
   the replicas are fixed (the pool's count // chips per replica) or follow the demand,
   ``clip(ceil(demand / (target · SLO capacity)), min, max)``, decided at the start of each
   hour, a new replica serving ``cold_start`` later (billed from the decision, as in the
   request DES). Within an hour, each burst window's rate is the hour's times a gamma
   multiplier of mean 1 and variance ``burstiness − 1`` (integrated by
   :data:`~accelsim.engines.serving._usage.BURST_POINTS` equiprobable quantiles, rescaled
   to mean 1 exactly).
4. **Per load** ``x`` (per-replica rate over ``λ_sat``): a window is *compliant* when
   ``x`` is at most the SLO capacity (its TTFT and TPOT percentiles are within the
   bounds); requests beyond saturation (``x > 1``) are not served (shed, never queued into
   later hours). Latency percentiles of the served requests are read off the table by
   linear interpolation in ``x`` (clipped to the nodes); since interpolation is linear in
   the node values, every metric is the table dotted with per-run node weights summed
   over the hours, never a per-hour table lookup.

Steps 3 and 4 are the one implementation of hours and windows over the stages of a layout
(:mod:`accelsim.engines.serving._stages`): here one stage, the replica owning TTFT and TPOT;
disaggregated prefill and decode pools (:mod:`accelsim.engines.serving._disagg`) are two.

Metrics: see :func:`serving_metrics`. Usage is priced by
:func:`~accelsim.engines.serving._priced.price_stages` (one pool), as the disaggregated path
prices its two.
"""

from __future__ import annotations

import numpy as np

from accelsim._typing import FloatArray
from accelsim.catalog import Catalog
from accelsim.engines._inputs import InputDraws, InputPlan, as_plan
from accelsim.engines.serving._disagg import simulate_serving_disaggregated
from accelsim.engines.serving._inputs import ServingInputs, draw_serving_inputs
from accelsim.engines.serving._layout import planned_setup
from accelsim.engines.serving._priced import (
    in_order,
    price_stages,
    stage_chip_hours,
    usage_metrics,
)
from accelsim.engines.serving._setup import (
    SECONDS_PER_HOUR,
    Replica,
    ServingSetup,
    ServingUsage,
    build_replica,
    draw_replica,
)
from accelsim.engines.serving._stages import usage_fast
from accelsim.models import serving as physics
from accelsim.scenario import Scenario, Serving

_ORDER = (
    "replicas_peak", "replicas_mean", "chip_hours", "ttft_p50_ms", "ttft_p99_ms",
    "tpot_p50_ms", "tpot_p99_ms", "slo_attainment", "utilization", "requests_served",
    "requests_dropped", "output_tokens", "offline_tokens_per_s_per_chip", "chips_per_replica",
    "finished",
)  # fmt: skip
"""The colocated metrics ahead of the launch and pricing ones, in the order results list them."""


def serving_metrics(
    setup: ServingSetup,
    scenario: Scenario,
    replica: Replica,
    usage: ServingUsage,
    inputs: ServingInputs,
) -> dict[str, FloatArray]:
    """Metrics of a colocated serving study from either engine's usage: the one definition
    of each. Pure: the run's drawn ``inputs`` give the launch (porting, days to launch) and
    the pricing inputs.

    The pipeline's shared metrics and pricing step over the one pool
    (:func:`~accelsim.engines.serving._priced.usage_metrics`,
    :func:`~accelsim.engines.serving._priced.price_stages`), and:

    - ``chips_per_replica``: the replica size served, the user's or the automatic layout's
      (``accelsim.engines.serving._layout``).
    - ``chip_hours``: provisioned replica-hours x chips per replica.
    - ``utilization``: served requests / (replica-hours x 3600 x ``λ_sat``): the share of
      the provisioned replicas' saturated throughput that served traffic.
    - ``offline_tokens_per_s_per_chip``: one replica's saturated output tokens/s per chip.
    - ``usd_per_million_output_tokens`` (``..._tokens``: input + output): TCO per million
      output (all) tokens of the served requests; where nothing is served (an infeasible
      replica, ``finished`` = 0) the whole TCO is charged to one token, never infinity.
    - ``tco_usd`` = hardware + energy + engineering (porting the serving stack to the chip's
      software stack) + delay (the days to launch, the longer of capacity lead time and
      porting, at ``delay_usd_per_day``).
    """
    pools = ((0, setup),)
    chips = float(setup.chips_per_replica)
    served = usage.served_requests
    capacity = usage.replica_hours * SECONDS_PER_HOUR * replica.saturated_rps
    (chip_hours,) = stage_chip_hours(pools, usage)
    own = {
        "chip_hours": chip_hours,
        # served <= capacity on the fast path by construction (a window serves at most its
        # replicas' saturated rate), but the two are sums taken in different orders and
        # their ratio could pass 1 by an ulp; in the DES a replica may emit a little more
        # than the saturated estimate made at mean lengths, which counts as full
        "utilization": np.where(
            capacity > 0.0,
            np.minimum(served, capacity) / np.where(capacity > 0.0, capacity, 1.0),
            0.0,
        ),
        "offline_tokens_per_s_per_chip": replica.saturated_rps * setup.output_mean / chips,
        "chips_per_replica": np.full(served.shape, chips),
    }
    metrics = usage_metrics(setup, usage) | own
    return in_order(metrics | price_stages(setup, scenario, pools, usage, inputs), _ORDER)


def simulate_serving_fast(
    scenario: Scenario,
    root: InputPlan | np.random.SeedSequence,
    start: int,
    stop: int,
    *,
    cat: Catalog,
) -> tuple[dict[str, FloatArray], InputDraws]:
    """Metrics of the runs ``[start, stop)`` of a serving scenario by the fast path.

    ``root`` is the study's :class:`~accelsim.engines.InputPlan` (a design, or designed
    uniforms of a sensitivity analysis) or a root seed (plain Monte Carlo). Chips, prices
    and priors come from ``cat``, the study's catalog. Returns the metric arrays by name
    and the input draws.
    """
    work = scenario.workload
    if isinstance(work, Serving) and work.disaggregated is not None:
        return simulate_serving_disaggregated(scenario, root, start, stop, cat=cat)
    setup = planned_setup(scenario, cat)
    draws = as_plan(root).draws(start, stop)
    inputs = draw_serving_inputs(setup, scenario, draws, cat)
    replica = build_replica(setup, inputs.replicas[0])
    usage = usage_fast(setup, inputs.demand, replica)
    return serving_metrics(setup, scenario, replica, usage, inputs), draws


def replica_capacity(
    scenario: Scenario,
    root: InputPlan | np.random.SeedSequence,
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
    work = scenario.workload
    if isinstance(work, Serving) and work.disaggregated is not None:
        raise ValueError(
            f"serving_capacity reports one colocated replica; scenario {scenario.name!r} "
            f"serves on disaggregated prefill and decode pools: simulate it and read "
            f"offline_tokens_per_s_per_chip and the prefill_/decode_ replica metrics"
        )
    serving = cat.serving_priors
    setup = planned_setup(scenario, cat)
    draws = as_plan(root).draws(start, stop)
    replica = draw_replica(setup, draws, serving)
    slo = physics.slo_capacity_rps(
        replica.cost,
        setup.input_mean,
        setup.output_mean,
        replica.kv_capacity_tokens,
        replica.max_batch,
        setup.ttft_s,
        setup.tpot_s,
        setup.percentile,
        prefill_chunk_tokens=replica.prefill_chunk_tokens,
        input_variance=setup.input_variance,
        input_third_moment=setup.input_third_moment,
        input_fourth_moment=setup.input_fourth_moment,
        input_nodes=setup.input_nodes,
        input_weights=setup.input_weights,
        output_nodes=setup.output_nodes,
        output_weights=setup.output_weights,
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


def offline_capacity(
    scenario: Scenario, root: InputPlan | np.random.SeedSequence, runs: int, *, cat: Catalog
) -> FloatArray:
    """``offline_tokens_per_s_per_chip`` of :func:`replica_capacity` alone (same draws for
    the same root), without the SLO search: what calibration inverts, many times over.
    [tokens/(s*chip)]"""
    setup = planned_setup(scenario, cat)
    draws = as_plan(root).draws(0, runs)
    replica = draw_replica(setup, draws, cat.serving_priors)
    per_chip = setup.output_mean / setup.chips_per_replica
    return np.broadcast_to(np.asarray(replica.saturated_rps * per_chip, dtype=float), (runs,))


__all__ = ["offline_capacity", "replica_capacity", "serving_metrics", "simulate_serving_fast"]
