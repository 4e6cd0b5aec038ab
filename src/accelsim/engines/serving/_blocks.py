"""The serving request DES path: the fast path's draws, every request simulated.

The same :class:`~accelsim.engines._inputs.InputDraws` (same names, so the same values for a
seed) build one replica per run (:func:`~accelsim.engines.serving._setup.draw_replica`) and its
hourly replica plan; then each run draws its requests from its own stream
``stream(root, "serving.requests", run)`` (independent of the chunking):

- *Arrivals*: a doubly stochastic Poisson stream. In each burst window the rate is the
  hour's mean (rate x profile x growth) times a gamma multiplier of mean 1 and variance
  ``burstiness - 1`` (none when 1); the window's count is Poisson and its arrival times
  uniform (a non-homogeneous Poisson stream, piecewise constant per window).
- *Lengths*: drawn per request from ``input_tokens`` and ``output_tokens`` through
  :func:`~accelsim.engines.serving._setup.token_lengths` (rounded, clipped), the law whose mean
  the fast path uses.

:func:`accelsim.engines.serving.des.simulate_serving` runs them; the trace becomes the usage that
:func:`~accelsim.engines.serving._fast.serving_metrics` prices, with the fast path's definitions:
a burst window is compliant when the SLO percentile of its requests' TTFT (a request without
a first token counts as infinite, unless it arrived within the TTFT bound of the horizon)
and of its completed requests' TPOT are within the bounds; latency percentiles are per
window, averaged over the served requests; served requests are the output tokens emitted
over the mean output length.
"""

from __future__ import annotations

import numpy as np

from accelsim._typing import FloatArray
from accelsim.catalog import Catalog
from accelsim.engines._inputs import InputDraws
from accelsim.engines.serving._blocks_disagg import simulate_disaggregated_block
from accelsim.engines.serving._fast import serving_metrics
from accelsim.engines.serving._inputs import draw_serving_inputs
from accelsim.engines.serving._layout import planned_setup
from accelsim.engines.serving._requests import (
    budget_error,
    des_usage,
    draw_requests,
    replica_plan,
    run_cost,
    window_usage,
)
from accelsim.engines.serving._setup import (
    Replica,
    ServingSetup,
    build_replica,
)
from accelsim.engines.serving._stages import Stage, colocated_stage
from accelsim.engines.serving._usage import latency_table
from accelsim.engines.serving.des import (
    EventBudgetError,
    ReplicaModel,
    simulate_serving,
)
from accelsim.scenario import Scenario, Serving
from accelsim.seeding import stream


def simulate_serving_block(
    scenario: Scenario,
    root: np.random.SeedSequence,
    start: int,
    stop: int,
    *,
    cat: Catalog,
    max_events: int = 50_000_000,
) -> tuple[dict[str, FloatArray], InputDraws]:
    """Metrics of the runs ``[start, stop)`` of a serving scenario by the request DES, with
    chips, prices and priors from ``cat``, the study's catalog (disaggregated pools: by
    :func:`~accelsim.engines.serving._blocks_disagg.simulate_disaggregated_block`)."""
    work = scenario.workload
    if isinstance(work, Serving) and work.disaggregated is not None:
        return simulate_disaggregated_block(
            scenario, root, start, stop, cat=cat, max_events=max_events
        )
    setup = planned_setup(scenario, cat)
    draws = InputDraws(root=root, start=start, stop=stop)
    inputs = draw_serving_inputs(setup, scenario, draws, cat)
    replica: Replica = build_replica(setup, inputs.replicas[0])
    stage = colocated_stage(setup, replica, latency_table(setup, replica))
    hourly = inputs.demand.hourly_rps(setup)
    burst = inputs.demand.burstiness
    runs = draws.runs
    cols = {k: np.zeros(runs) for k in _ROW}
    for i in range(runs):
        rng = stream(root, "serving.requests", start + i)
        row = _simulate_run(setup, stage, i, hourly[i], float(burst[i]), rng, max_events)
        for key, value in row.items():
            cols[key][i] = value
    usage = des_usage(cols, (cols["hours"],), (cols["peak"],))
    return serving_metrics(setup, scenario, replica, usage, inputs), draws


_ROW = (
    "demand", "served", "dropped", "compliant", "hours", "peak", "ttft_p50_s", "ttft_p99_s",
    "tpot_p50_s", "tpot_p99_s", "finished",
)  # fmt: skip


def _simulate_run(
    setup: ServingSetup,
    stage: Stage,
    i: int,
    demand: FloatArray,
    burstiness: float,
    rng: np.random.Generator,
    max_events: int,
) -> dict[str, float]:
    """Run ``i`` of the block: its replica plan for the hourly ``demand`` [1/s], its requests
    and their DES. Returns the run's row of :data:`_ROW` (requests [count], replica-hours
    [h], latencies [s], ``finished`` 0 or 1); an infeasible replica serves nothing (every
    request dropped) but is provisioned by its plan."""
    work, replica = setup.work, stage.replica
    plan = replica_plan(stage, i, demand)
    requests = draw_requests(setup, demand, burstiness, rng, max_events=max_events)
    demanded = float(len(requests.arrival_hours))
    if not replica.feasible[i]:
        hours = plan.provisioned_hours(setup.horizon_hours)
        peak = float(plan.replicas_per_hour.max())
        return {"demand": demanded, "dropped": demanded, "hours": hours, "peak": peak}
    model = ReplicaModel(
        cost=run_cost(replica.cost, i),
        kv_capacity_tokens=float(replica.kv_capacity_tokens[i]),
        max_batch=int(replica.max_batch[i]),
        prefill_chunk_tokens=int(replica.prefill_chunk_tokens[i]),
    )
    try:
        trace = simulate_serving(
            model, requests, plan, setup.horizon_hours, router=work.router, max_events=max_events
        )
    except EventBudgetError as err:
        raise budget_error(err, setup, demanded) from err
    used = window_usage(setup, requests, trace)
    return used._asdict() | {
        "demand": demanded,
        "hours": trace.replica_hours,
        "peak": float(trace.replicas_peak),
        "finished": float(used.dropped == 0.0),
    }


__all__ = ["draw_requests", "simulate_serving_block"]
