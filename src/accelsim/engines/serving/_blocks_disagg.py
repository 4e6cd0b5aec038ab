"""The serving request DES path for disaggregated prefill and decode pools.

The fast path's record and stages (the same
:func:`~accelsim.engines.serving._inputs.draw_serving_inputs` over the two pools, drawn once,
and :func:`~accelsim.engines.serving._disagg.disaggregated_stages`: the same two replicas per
run, the same SLO capacities, so the same hourly replica plan of each pool), then each
run's requests as the colocated request DES draws them (``stream(root, "serving.requests",
run)``), each prompt's KV transfer by
:func:`~accelsim.models.serving.kv_transfer_seconds` over
:func:`~accelsim.engines.serving._disagg.kv_link_gbps` (the fast path's rule), and
:func:`accelsim.engines.serving.des.simulate_serving_disaggregated` (rules in
``accelsim.engines.serving.des._disagg``). The prefill replica runs whole prompts
(``prefill_chunk_tokens`` applies to colocated replicas only, as in the fast path).

The trace is read with the colocated DES's definitions (burst windows, TTFT and TPOT
percentiles, served requests) into the pipeline's usage record and priced by
:func:`~accelsim.engines.serving._disagg.disaggregated_metrics`, the fast path's: the same
metric names, each pool at its own offer. ``kv_transfer_ms`` is the mean over the run's
requests; ``prefill_/decode_replicas_peak`` and ``replicas_peak`` (both pools at once) are
the most replicas provisioned at once.
"""

from __future__ import annotations

import numpy as np

from accelsim._typing import FloatArray
from accelsim.catalog import Catalog
from accelsim.engines._inputs import InputDraws
from accelsim.engines.serving._disagg import (
    disaggregated_metrics,
    disaggregated_pools,
    disaggregated_stages,
    kv_link_gbps,
)
from accelsim.engines.serving._inputs import draw_serving_inputs
from accelsim.engines.serving._requests import (
    budget_error,
    des_usage,
    draw_requests,
    replica_plan,
    run_cost,
    window_usage,
)
from accelsim.engines.serving._setup import ServingSetup
from accelsim.engines.serving._stages import Stage
from accelsim.engines.serving.des import (
    EventBudgetError,
    ReplicaModel,
    RequestStream,
    simulate_serving_disaggregated,
)
from accelsim.models import serving as physics
from accelsim.scenario import Scenario
from accelsim.seeding import stream

_USAGE = (
    "demand", "served", "dropped", "compliant", "peak", "prefill_hours", "decode_hours",
    "prefill_peak", "decode_peak", "ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s",
    "kv_transfer_s", "finished",
)  # fmt: skip


def simulate_disaggregated_block(
    scenario: Scenario,
    root: np.random.SeedSequence,
    start: int,
    stop: int,
    *,
    cat: Catalog,
    max_events: int = 50_000_000,
) -> tuple[dict[str, FloatArray], InputDraws]:
    """Metrics of the runs ``[start, stop)`` of a disaggregated serving scenario by the
    request DES, with chips, prices and priors from ``cat``, the study's catalog."""
    draws = InputDraws(root=root, start=start, stop=stop)
    base, pools = disaggregated_pools(scenario, cat)
    inputs = draw_serving_inputs(base, scenario, draws, cat, pools)
    (prefill, decode), _ = disaggregated_stages(base, pools, inputs)
    hourly, burst = inputs.demand.hourly_rps(base), inputs.demand.burstiness
    link = kv_link_gbps(prefill.setup, decode.setup)
    cols = {k: np.zeros(draws.runs) for k in _USAGE}
    for i in range(draws.runs):
        rng = stream(root, "serving.requests", start + i)
        requests = draw_requests(base, hourly[i], float(burst[i]), rng, max_events=max_events)
        row = _simulate_run(base, (prefill, decode), i, hourly[i], requests, link, max_events)
        for key, value in row.items():
            cols[key][i] = value
    hours = (cols["prefill_hours"], cols["decode_hours"])
    usage = des_usage(cols, hours, (cols["prefill_peak"], cols["decode_peak"]))
    stages = (prefill, decode)
    metrics = disaggregated_metrics(scenario, base, stages, usage, inputs, cols["kv_transfer_s"])
    return metrics, draws


def _model(stage: Stage, i: int, *, decode_only: bool) -> ReplicaModel:
    rep = stage.replica
    return ReplicaModel(
        cost=run_cost(rep.cost, i),
        kv_capacity_tokens=float(rep.kv_capacity_tokens[i]),
        max_batch=int(rep.max_batch[i]),
        prefill_chunk_tokens=0,
        decode_only=decode_only,
    )


def _simulate_run(
    base: ServingSetup,
    stages: tuple[Stage, Stage],
    i: int,
    demand: FloatArray,
    requests: RequestStream,
    link_gbps: float,
    max_events: int,
) -> dict[str, float]:
    """Run ``i``: both pools' plans for the hourly ``demand`` [1/s] and the DES of its
    requests; its usage row (keys of ``_USAGE``). An infeasible replica in either pool
    serves nothing, but both pools are provisioned by their plans."""
    plans = (replica_plan(stages[0], i, demand), replica_plan(stages[1], i, demand))
    transfer = physics.kv_transfer_seconds(
        requests.input_tokens.astype(float), base.kv_bytes_per_token, link_gbps
    )
    demanded = float(len(requests.arrival_hours))
    row = {"demand": demanded, "dropped": demanded}  # until served
    row["kv_transfer_s"] = float(transfer.mean()) if transfer.size else 0.0
    if not (stages[0].feasible[i] > 0 and stages[1].feasible[i] > 0):
        for role, plan in zip(("prefill", "decode"), plans, strict=True):
            row[f"{role}_hours"] = plan.provisioned_hours(base.horizon_hours)
            row[f"{role}_peak"] = float(plan.replicas_per_hour.max())
        total = plans[0].replicas_per_hour + plans[1].replicas_per_hour
        return row | {"peak": float(total.max())}
    try:
        out = simulate_serving_disaggregated(
            _model(stages[0], i, decode_only=False),
            _model(stages[1], i, decode_only=True),
            requests,
            transfer,
            plans,
            base.horizon_hours,
            router=base.work.router,
            max_events=max_events,
        )
    except EventBudgetError as err:
        raise budget_error(err, base, demanded) from err
    used = window_usage(base, requests, out.trace)
    return row | {
        "served": used.served, "dropped": used.dropped, "compliant": used.compliant,
        "peak": float(out.trace.replicas_peak),
        "prefill_hours": out.prefill.replica_hours, "decode_hours": out.decode.replica_hours,
        "prefill_peak": float(out.prefill.replicas_peak),
        "decode_peak": float(out.decode.replicas_peak),
        "ttft_p50_s": used.ttft_p50_s, "ttft_p99_s": used.ttft_p99_s,
        "tpot_p50_s": used.tpot_p50_s, "tpot_p99_s": used.tpot_p99_s,
        "finished": float(used.dropped == 0.0),
    }  # fmt: skip


__all__ = ["simulate_disaggregated_block"]
