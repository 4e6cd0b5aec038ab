"""The serving request DES's per-run inputs and its per-window reading of a trace.

Shared by the colocated (``accelsim.engines.serving._blocks``) and the disaggregated
(``accelsim.engines.serving._blocks_disagg``) request DES paths, whose module docstrings state
the rules: the requests of a run (doubly stochastic Poisson arrivals, lengths), and the
window compliance, latency percentiles and served requests read off a trace with the fast
path's definitions.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from accelsim._typing import FloatArray
from accelsim.dists import as_dist
from accelsim.engines._memory import format_bytes, memory_limit_bytes
from accelsim.engines.serving._setup import (
    SECONDS_PER_HOUR,
    ServingSetup,
    ServingUsage,
    token_lengths,
)
from accelsim.engines.serving._stages import Stage
from accelsim.engines.serving._usage import replicas_per_hour
from accelsim.engines.serving.des import (
    EventBudgetError,
    ReplicaPlan,
    RequestStream,
    ServingTrace,
)
from accelsim.errors import AccelsimError
from accelsim.models import serving as physics

REQUEST_BYTES = 160
"""Peak memory per request of one request-DES run: its draws (arrival, lengths), the DES's
record (81 bytes) and the per-window reading of the trace; measured with tracemalloc at
about 150 bytes on runs of 0.1 to 0.3 million requests. [B]"""

_ADVICE = (
    "Shorten horizon_days for the DES, which plays every batch iteration, or use "
    "engine='analytic': the fast path prices months of hourly demand without simulating "
    "each request"
)


class RequestBudgetError(AccelsimError, RuntimeError):
    """A request-DES run over its event budget or its memory, said in a study's words."""


def expected_requests(setup: ServingSetup, demand_rps: FloatArray) -> float:
    """Mean number of requests of a run over the horizon, for its hourly ``demand_rps``
    [1/s] (the burst multipliers have mean 1, so they do not change it). [count]"""
    within = np.clip(setup.horizon_hours - np.arange(setup.hours), 0.0, 1.0)
    return float(np.sum(demand_rps * within) * SECONDS_PER_HOUR)


def check_request_budget(setup: ServingSetup, demand_rps: FloatArray, max_events: int) -> None:
    """Refuse a run whose expected requests pass ``max_events`` (every arrival instant is
    one event of the DES) or whose requests would not fit the memory limit
    (:data:`REQUEST_BYTES` each), before any arrival is drawn.

    Raises
    ------
    RequestBudgetError
        With the expected requests, the horizon and the knobs that help.
    """
    expected = expected_requests(setup, demand_rps)
    hours = setup.horizon_hours
    if expected > max_events:
        raise RequestBudgetError(
            f"the request DES (engine='des') would pass its {max_events:,} events in one run: "
            f"{expected:,.0f} requests expected over {hours:g} h, each arrival an event, "
            f"before any batch iteration. {_ADVICE}"
        )
    need, limit = expected * REQUEST_BYTES, memory_limit_bytes()
    if need > limit:
        raise RequestBudgetError(
            f"the request DES (engine='des') would hold about {format_bytes(need)} for the "
            f"{expected:,.0f} requests expected in one run over {hours:g} h ({REQUEST_BYTES} "
            f"bytes each), over the {format_bytes(limit)} a study may use. {_ADVICE}"
        )


def draw_requests(
    setup: ServingSetup,
    demand_rps: FloatArray,
    burstiness: float,
    rng: np.random.Generator,
    *,
    max_events: int,
) -> RequestStream:
    """One run's requests: gamma-mixed Poisson counts per burst window, uniform times.

    The run is first checked against its event budget and the memory limit
    (:func:`check_request_budget`), so an oversized run is refused before any draw.
    """
    check_request_budget(setup, demand_rps, max_events)
    per_hour = setup.windows_per_hour
    window_h = 1.0 / per_hour
    starts = np.arange(setup.hours * per_hour) * window_h
    starts = starts[starts < setup.horizon_hours]
    lengths = np.minimum(starts + window_h, setup.horizon_hours) - starts
    rate = demand_rps[(starts + 1e-12).astype(np.int64)]
    if burstiness > 1.0:
        var = burstiness - 1.0
        rate = rate * rng.gamma(1.0 / var, var, size=len(starts))
    counts = rng.poisson(rate * lengths * SECONDS_PER_HOUR)
    total = int(counts.sum())
    arrivals = np.repeat(starts, counts) + rng.random(total) * np.repeat(lengths, counts)
    arrivals = np.sort(np.minimum(arrivals, np.nextafter(setup.horizon_hours, 0.0)))
    work = setup.work
    inp = token_lengths(as_dist(work.input_tokens), rng.random(total), setup.max_tokens)
    out = token_lengths(as_dist(work.output_tokens), rng.random(total), setup.max_tokens)
    return RequestStream(arrivals, inp.astype(np.int64), out.astype(np.int64))


def run_cost(c: physics.IterationCost, i: int) -> physics.IterationCost:
    return physics.IterationCost(
        *(np.asarray(np.asarray(getattr(c, f.name))[i]) for f in dataclasses.fields(c))
    )


def budget_error(err: EventBudgetError, setup: ServingSetup, demanded: float) -> RequestBudgetError:
    """A study's words for a request-DES run over its event budget: the knobs a study has
    (its horizon, its engine), not the DES function's ``max_events``."""
    return RequestBudgetError(
        f"the request DES (engine='des') stopped after {err.max_events:,} events in one run: "
        f"{demanded:,.0f} requests over {setup.horizon_hours:g} h ({err.iterations:,} batch "
        f"iterations played). {_ADVICE}"
    )


class WindowUsage(NamedTuple):
    """One request-DES run's usage, by :func:`window_usage`."""

    compliant: float
    """Requests in burst windows whose TTFT and TPOT percentiles met the SLO. [count]"""
    ttft_p50_s: float
    ttft_p99_s: float
    tpot_p50_s: float
    tpot_p99_s: float
    served: float
    """Output tokens emitted over the mean output length, the per-token prices' measure (a
    request still decoding at the horizon counts in part). [count]"""
    dropped: float
    """Requests that got no service: rejected (never fit a replica), or arrived before the
    last burst window and never got a first token (a request of the last window still
    waiting is in progress, not dropped). [count]"""


def window_usage(setup: ServingSetup, requests: RequestStream, trace: ServingTrace) -> WindowUsage:
    """The SLO-compliant requests, the latency percentiles [s] averaged over the served
    requests, and the requests served and dropped, of one run (:class:`WindowUsage`)."""
    arrival = requests.arrival_hours
    window = np.floor(arrival * setup.windows_per_hour).astype(np.int64)
    late = arrival * SECONDS_PER_HOUR > setup.horizon_hours * SECONDS_PER_HOUR - setup.ttft_s
    ttft = np.where(trace.first_token, trace.ttft_s, np.where(late, np.nan, np.inf))
    multi = requests.output_tokens > 1
    tpot = np.where(trace.completed & multi, trace.tpot_s, np.nan)
    compliant = 0.0
    sums = np.zeros(4)
    weights = np.zeros(4)
    q = setup.percentile
    # arrivals are sorted, so each window's requests are one slice: O(n) to cut them,
    # where a mask per window cost O(n) each
    cuts = np.flatnonzero(window[1:] != window[:-1]) + 1
    for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, window.size], strict=True):
        if hi == lo:
            continue  # no requests at all
        t_w, p_w = ttft[lo:hi], tpot[lo:hi]
        judged_t = t_w[~np.isnan(t_w)]
        judged_p = p_w[~np.isnan(p_w)]
        ok_t = judged_t.size == 0 or np.quantile(judged_t, q, method="inverted_cdf") <= setup.ttft_s
        ok_p = judged_p.size == 0 or np.quantile(judged_p, q, method="inverted_cdf") <= setup.tpot_s
        if ok_t and ok_p:
            compliant += float(hi - lo)
        # Each window's percentiles, weighted by its requests with a first token (as the
        # fast path weighs its windows by the requests served); TPOT over the windows with
        # a token gap to time (none where every output is one token: TPOT is then 0, as on
        # the fast path, while TTFT still counts).
        got_t = t_w[np.isfinite(t_w)]
        if got_t.size:
            sums[:2] += got_t.size * np.quantile(got_t, [0.5, 0.99])
            weights[:2] += got_t.size
            if judged_p.size:
                sums[2:] += got_t.size * np.quantile(judged_p, [0.5, 0.99])
                weights[2:] += got_t.size
    means = np.divide(sums, weights, out=np.zeros(4), where=weights > 0)
    served = float(trace.output_tokens_total) / setup.output_mean
    # Dropped: rejected, or arrived before the last window and never given a first token
    # (an overloaded replica's queue). A request still decoding at the horizon, or one of
    # the last window still queued, is being served, not dropped: a long output at light
    # load is no shortfall, though its tokens fall short of the mean output.
    cutoff = setup.horizon_hours - 1.0 / setup.windows_per_hour
    unserved = trace.rejected | (~trace.first_token & (arrival < cutoff))
    t50, t99, p50, p99 = (float(v) for v in means)
    return WindowUsage(compliant, t50, t99, p50, p99, served, float(np.count_nonzero(unserved)))


def replica_plan(stage: Stage, i: int, demand: FloatArray) -> ReplicaPlan:
    """Run ``i``'s hourly replicas of one stage for its hourly ``demand`` [1/s], by the fast
    path's rule for that stage's pool, with the workload's cold start: what the request DES
    provisions (colocated: the one stage; disaggregated: each pool)."""
    slo_rps = stage.slo_load[i : i + 1] * stage.saturated_rps[i : i + 1]
    rows = replicas_per_hour(stage.setup, demand[None, :], slo_rps)
    cold = stage.setup.work.cold_start_minutes / 60.0
    return ReplicaPlan(rows[0].astype(np.int64), cold_start_hours=cold)


def des_usage(
    cols: Mapping[str, FloatArray], hours: Sequence[FloatArray], peaks: Sequence[FloatArray]
) -> ServingUsage:
    """The pipeline's usage record of the request DES's per-run rows, for either layout:
    ``cols`` holds ``demand``, ``served``, ``dropped``, ``compliant`` [requests], ``peak``
    (every stage's replicas at once), the latencies ``ttft_p50_s``, ``ttft_p99_s``,
    ``tpot_p50_s``, ``tpot_p99_s`` [s] and ``finished`` (0 or 1); ``hours`` and ``peaks``
    are each stage's provisioned replica-hours [h] and most replicas at once."""
    return ServingUsage(
        demand_requests=cols["demand"],
        served_requests=cols["served"],
        dropped_requests=cols["dropped"],
        compliant_requests=cols["compliant"],
        replica_hours=functools.reduce(np.add, hours),
        replicas_peak=cols["peak"],
        ttft_p50_s=cols["ttft_p50_s"],
        ttft_p99_s=cols["ttft_p99_s"],
        tpot_p50_s=cols["tpot_p50_s"],
        tpot_p99_s=cols["tpot_p99_s"],
        finished=cols["finished"] > 0.0,
        stage_hours=tuple(hours),
        stage_peaks=tuple(peaks),
    )


__all__ = [
    "REQUEST_BYTES",
    "RequestBudgetError",
    "WindowUsage",
    "budget_error",
    "check_request_budget",
    "des_usage",
    "draw_requests",
    "expected_requests",
    "replica_plan",
    "run_cost",
    "window_usage",
]
