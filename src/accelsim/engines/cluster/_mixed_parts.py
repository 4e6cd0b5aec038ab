"""The workloads of a mix, before and after the shared DES run: plans in, metrics out.

Part of the mixed-fleet engine (:mod:`accelsim.engines.cluster._mixed` describes it). Each
workload is planned from its own engine, on the scenario it would be alone
(:func:`accelsim.scenario.mix_part`), so one formula serves both: a training run's
physics from the analytic engine (:class:`TrainingPlan`, the hero run's two passes), an
endpoint's hourly replica plan from the serving fast path (:class:`ServingPlan`); after the
DES, their metrics come back through the same engines (:func:`training_metrics`,
:func:`serving_metrics_held`, :func:`stream_metrics`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from accelsim._typing import FloatArray, IntArray
from accelsim.catalog import Catalog
from accelsim.engines._inputs import InputDraws, InputPlan
from accelsim.engines._pricing import price_training
from accelsim.engines.cluster.des import JobRecord
from accelsim.engines.serving._fast import serving_metrics
from accelsim.engines.serving._inputs import ServingInputs, draw_serving_inputs
from accelsim.engines.serving._layout import planned_setup
from accelsim.engines.serving._setup import Replica, ServingSetup, build_replica
from accelsim.engines.serving._stages import colocated_stage, held_totals, usage_from_totals
from accelsim.engines.serving._usage import LatencyTable, latency_table, replicas_per_hour
from accelsim.engines.training import _analytic as analytic
from accelsim.errors import AccelsimError
from accelsim.models import reliability
from accelsim.scenario import Scenario, Serving

_HOURS_PER_DAY = 24.0
TRAINING_METRICS = (
    "time_to_train_days",
    "training_days",
    "queue_wait_days",
    "finished",
    "interruptions",
    "mfu",
    "engineering_cost_usd",
)
"""A training run's metrics in a mix, each prefixed ``<name>.``."""
SERVING_METRICS = (
    "slo_attainment",
    "replicas_mean",
    "replicas_peak",
    "chips_per_replica",
    "ttft_p50_ms",
    "ttft_p99_ms",
    "tpot_p50_ms",
    "tpot_p99_ms",
    "utilization",
    "requests_served",
    "requests_dropped",
    "finished",
    "engineering_cost_usd",
)
"""An endpoint's metrics in a mix (with ``replicas_planned_mean``), each prefixed ``<name>.``."""
MAX_TEAMS = 100
"""Most distinct users of one trace reported team by team (each adds a few metrics)."""
TEAM_METRICS = ("jobs_arrived", "jobs_completed", "mean_wait_hours")
"""A team's job metrics, each ``<trace>.<team>.<metric>``."""


class _Capture:
    """A completion sampler that keeps the physics it is given (the first pass)."""

    def __init__(self) -> None:
        self.calls: list[tuple[FloatArray, ...]] = []

    def __call__(
        self, rng: np.random.Generator, *params: FloatArray
    ) -> tuple[FloatArray, FloatArray | IntArray]:
        self.calls.append(tuple(np.asarray(p, dtype=float) for p in params))
        work, interval, write, restart, rate = params
        return reliability.sample_completion_hours(rng, work, interval, write, restart, rate)

    def physics(self) -> tuple[FloatArray, ...]:
        """(work, interval, write, restart, rate) per run, in run order. [h, h, h, h, 1/h]"""
        return tuple(np.concatenate(p) for p in zip(*self.calls, strict=True))


class _Replay:
    """A completion sampler returning the DES's hours and interruptions (the second pass)."""

    def __init__(self, hours: FloatArray, count: FloatArray) -> None:
        self.hours, self.count, self.at = hours, count, 0

    def __call__(
        self, rng: np.random.Generator, work: FloatArray, *rest: FloatArray
    ) -> tuple[FloatArray, FloatArray]:
        del rng, rest  # the DES has run: its answers, in run order
        a, n = self.at, np.asarray(work).size
        self.at += n
        return self.hours[a : a + n], self.count[a : a + n]


@dataclass
class TrainingPlan:
    """A training run of the mix: its part, size, priority and per-run physics."""

    index: int
    name: str
    part: Scenario
    chips: int
    priority: int
    submit_hours: FloatArray
    """Decision (time 0) + max(capacity lead time, porting and optimisation). [h]"""
    physics: tuple[FloatArray, ...]
    """(work, checkpoint interval, write, restart, interruption rate) per run."""
    hours: FloatArray = field(init=False)
    """First start to end per run (``inf``: not ended by the horizon). [h]"""
    count: FloatArray = field(init=False)
    queue_hours: FloatArray = field(init=False)

    def __post_init__(self) -> None:
        runs = self.submit_hours.size
        self.hours = np.full(runs, math.inf)
        self.count = np.zeros(runs)
        self.queue_hours = np.zeros(runs)


def plan_training(
    index: int,
    name: str,
    part: Scenario,
    priority: int,
    cat: Catalog,
    plan: InputPlan,
    start: int,
    stop: int,
) -> TrainingPlan:
    """First pass: the run's physics and submission time by the analytic engine."""
    capture = _Capture()
    before, _ = analytic.simulate_training(part, cat, plan, start, stop, capture)
    # One rule for the fleet of a mix: in service from time 0 for every workload on it, so a
    # training run waits for its porting and optimisation, never for a capacity lead time.
    submit = _HOURS_PER_DAY * before["preparation_days"]
    chips = part.fleet[0].count
    return TrainingPlan(index, name, part, chips, priority, submit, capture.physics())


def record_training(t: TrainingPlan, k: int, record: JobRecord | None, horizon: float) -> None:
    """Keep run ``k``'s outcome of the training job (``None``: submitted after the horizon)."""
    submit = float(t.submit_hours[k])
    started = record is not None and math.isfinite(record.first_start_hours)
    first = record.first_start_hours if record is not None and started else horizon
    t.queue_hours[k] = max(min(first, horizon) - submit, 0.0)
    if record is not None:
        t.count[k] = record.interruptions
        if math.isfinite(record.end_hours):
            t.hours[k] = record.end_hours - record.first_start_hours


def training_metrics(
    t: TrainingPlan, cat: Catalog, plan: InputPlan, start: int, stop: int, horizon_hours: float
) -> tuple[dict[str, FloatArray], InputDraws]:
    """Second pass: the run's metrics with the DES's training time and queue wait.

    A run not ended by the fleet's horizon is unfinished (``finished`` 0) and its
    time-to-train is censored at the horizon (a lower bound), as its training days.
    """
    usage, draws = analytic.simulate_training(
        t.part, cat, plan, start, stop, _Replay(t.hours, t.count)
    )
    queue_days = t.queue_hours / _HOURS_PER_DAY
    unfinished = ~np.isfinite(t.hours)
    horizon_days = horizon_hours / _HOURS_PER_DAY
    ttt = usage["preparation_days"] + queue_days + usage["training_days"]
    began = (t.submit_hours + t.queue_hours) / _HOURS_PER_DAY
    out = {
        "time_to_train_days": np.where(unfinished, horizon_days, ttt),
        "training_days": np.where(
            unfinished, np.maximum(horizon_days - began, 0.0), usage["training_days"]
        ),
        "queue_wait_days": queue_days,
        "finished": np.where(unfinished, 0.0, usage["finished"]),
        # the DES's count: censoring would extrapolate an unfinished run's to its horizon
        "interruptions": t.count.copy(),
        "mfu": usage["mfu"],
    }
    if t.part.fleet[0].provider is not None:
        costs = price_training(t.part, cat, usage, draws)
        out["engineering_cost_usd"] = costs["engineering_cost_usd"]
    return out, draws


@dataclass
class ServingPlan:
    """An endpoint of the mix: its part, setup, replica physics and hourly replica plan."""

    index: int
    name: str
    part: Scenario
    priority: int
    setup: ServingSetup
    inputs: ServingInputs
    """The endpoint's drawn inputs (replica, demand, launch, prices)."""
    replica: Replica
    table: LatencyTable
    demand_rps: FloatArray
    """Mean request rate per run and hour, (runs, hours). [1/s]"""
    burstiness: FloatArray
    planned: FloatArray
    """Replicas the fast path's plan asks for, per run and hour, (runs, hours). [count]"""
    serving: FloatArray = field(init=False)
    """Replicas that served, on time average per run and hour (filled by the DES). [count]"""

    def __post_init__(self) -> None:
        self.serving = np.zeros_like(self.planned)


def plan_serving(
    index: int, name: str, part: Scenario, priority: int, cat: Catalog, draws: InputDraws
) -> ServingPlan:
    """The endpoint's hourly replica plan, exactly as the serving fast path makes it."""
    work = part.workload
    assert isinstance(work, Serving)
    setup = planned_setup(part, cat)
    inputs = draw_serving_inputs(setup, part, draws, cat)
    replica = build_replica(setup, inputs.replicas[0])
    table = latency_table(setup, replica)
    demand = inputs.demand.hourly_rps(setup)
    planned = replicas_per_hour(setup, demand, table.slo_load * replica.saturated_rps)
    return ServingPlan(
        index,
        name,
        part,
        priority,
        setup,
        inputs,
        replica,
        table,
        demand,
        inputs.demand.burstiness,
        planned,
    )


def replica_windows(planned: FloatArray, horizon_hours: float) -> tuple[FloatArray, FloatArray]:
    """The plan of one run as replica windows ``[start, end)``, in order of start. [h]

    Replica ``j`` (from 1) serves every hour whose plan has at least ``j`` replicas, so a
    rise adds replicas and a fall removes the latest ones; each run of consecutive hours of
    replica ``j`` is one window.
    """
    wanted = np.rint(planned).astype(np.int64)
    peak = int(wanted.max(initial=0))
    if peak == 0:
        return np.empty(0), np.empty(0)
    active = wanted[None, :] >= np.arange(1, peak + 1)[:, None]
    edges = np.diff(active.astype(np.int8), axis=1, prepend=0, append=0)
    slot_s, begins = np.nonzero(edges == 1)
    _, ends = np.nonzero(edges == -1)
    start = begins.astype(float)
    end = np.minimum(ends.astype(float), horizon_hours)
    order = np.lexsort((slot_s, start))
    return start[order], end[order]


def per_hour(starts: FloatArray, ends: FloatArray, weights: FloatArray, hours: int) -> FloatArray:
    """Integral over each hour ``[h, h + 1)`` of the sum of ``weights`` on ``[start, end)``.

    The exact area of a step function (its integral is piecewise linear, so linear
    interpolation at the hour edges is exact). [weight h]
    """
    if starts.size == 0:
        return np.zeros(hours)
    t = np.concatenate([starts, ends])
    step = np.concatenate([weights, -weights])
    order = np.argsort(t, kind="stable")
    t, step = t[order], step[order]
    level = np.cumsum(step)
    area = np.concatenate([[0.0], np.cumsum(level[:-1] * np.diff(t))])
    edges = np.arange(hours + 1, dtype=float)
    return np.diff(np.interp(edges, t, area, left=0.0, right=area[-1]))


def record_serving(
    s: ServingPlan, k: int, intervals: Sequence[tuple[float, float, int]], horizon_hours: float
) -> None:
    """Run ``k``'s replicas that served each hour, from its replicas' held intervals.

    A replica serves from ``cold_start_minutes`` after it takes its chips (except those
    serving from time 0, warm as on the fast path) until it releases them.
    """
    if not intervals:
        return
    held = np.asarray(intervals, dtype=float)
    cold = min(s.setup.work.cold_start_minutes / 60.0, 1.0)
    begin = np.minimum(held[:, 0] + np.where(held[:, 0] > 0.0, cold, 0.0), held[:, 1])
    replicas = held[:, 2] / s.setup.chips_per_replica
    hours = s.planned.shape[1]
    duration = np.minimum(horizon_hours - np.arange(hours, dtype=float), 1.0)
    s.serving[k] = per_hour(begin, held[:, 1], replicas, hours) / duration


def serving_metrics_held(s: ServingPlan) -> dict[str, FloatArray]:
    """The endpoint's metrics from the replicas it actually held, by the fast path's
    per-window attainment function and its one definition of each metric."""
    stages = (colocated_stage(s.setup, s.replica, s.table),)
    totals = held_totals(s.setup, s.demand_rps, (s.serving,), s.burstiness, stages)
    usage = usage_from_totals(stages, totals)
    full = serving_metrics(s.setup, s.part, s.replica, usage, s.inputs)
    out = {k: full[k] for k in SERVING_METRICS if k in full}
    duration = np.minimum(s.setup.horizon_hours - np.arange(s.planned.shape[1]), 1.0)
    out["replicas_planned_mean"] = (s.planned @ duration) / s.setup.horizon_hours
    return out


def stream_metrics(records: Sequence[JobRecord], horizon_hours: float) -> dict[str, float]:
    """A stream's or a trace's job metrics over the run (the DES's definitions: a job
    never started waits until the horizon, an unfinished one counts to the horizon)."""
    if not records:
        zero = ("jobs_arrived", "jobs_completed", "mean_wait_hours", "p95_wait_hours")
        rest = ("jobs_waiting_at_horizon", "mean_jct_hours", "interruptions", "lost_chip_hours")
        return dict.fromkeys(zero + rest, 0.0)
    submit = np.array([r.submit_hours for r in records])
    first = np.array([r.first_start_hours for r in records])
    end = np.array([r.end_hours for r in records])
    started = np.isfinite(first)
    waits = np.where(started, first, horizon_hours) - submit
    done = np.isfinite(end)
    # a job requeued at the horizon holds no chips: its lost work was on its own size
    lost = np.array([r.lost_compute_hours * (r.allocated_chips or r.chips) for r in records])
    return {
        "jobs_arrived": float(len(records)),
        "jobs_completed": float(done.sum()),
        "mean_wait_hours": float(np.maximum(waits, 0.0).mean()),
        "p95_wait_hours": float(np.quantile(np.maximum(waits, 0.0), 0.95)),
        "jobs_waiting_at_horizon": float((~started).sum()),
        "mean_jct_hours": float((np.where(done, end, horizon_hours) - submit).mean()),
        "interruptions": float(sum(r.interruptions for r in records)),
        "lost_chip_hours": float(lost.sum()),
    }


def chargeback(
    pool_cost: list[FloatArray],
    held: dict[str, list[FloatArray]],
    parts: dict[str, list[FloatArray]] | None = None,
) -> dict[str, FloatArray]:
    """Each workload's share of the fleet's hardware and energy, pool by pool. [USD]

    ``pool_cost[p]``: pool ``p``'s cost per run; ``held[w][p]``: chip-hours workload ``w``
    held on pool ``p`` per run (the workloads partition the pools' allocated chip-hours).
    Pool ``p``'s cost is charged to its users in proportion to their chip-hours on it, its
    idle chip-hours spread the same way; a pool no workload used in a run is spread over the
    fleet's users by their chip-hours on every pool; a run where nothing ran charges no one
    (the caller's ``unattributed_usd``). ``parts`` (a trace's teams, inside a workload's
    chip-hours) are charged by the same shares, so they add up to their workload's.
    """
    runs = pool_cost[0].shape if pool_cost else (0,)
    used = [sum((h[p] for h in held.values()), np.zeros(runs)) for p in range(len(pool_cost))]
    total = sum(used, np.zeros(runs))
    orphan = sum(
        (np.where(u > 0, 0.0, c) for u, c in zip(used, pool_cost, strict=True)), np.zeros(runs)
    )

    def share(num: FloatArray, den: FloatArray) -> FloatArray:
        return np.divide(num, den, out=np.zeros_like(num), where=den > 0)

    def charge(hours: list[FloatArray]) -> FloatArray:
        own = sum(
            (c * share(h, u) for h, u, c in zip(hours, used, pool_cost, strict=True)),
            np.zeros(runs),
        )
        return own + orphan * share(sum(hours, np.zeros(runs)), total)

    every = {**held, **(parts or {})}
    return {name: charge(hours) for name, hours in every.items()}


def trace_teams(users: Sequence[str], where: str) -> tuple[list[str], IntArray] | None:
    """A trace's teams: their metric labels (users sorted) and each job's team index.

    ``users`` holds each job's ``user`` text in job order (all ``""``: no user column,
    ``None``). A label is the user's text with any character other than letters, digits,
    ``_`` and ``-`` read as ``_``; two users reading the same, or more than
    :data:`MAX_TEAMS` users, are errors naming ``where``.
    """
    if not any(users):
        return None
    names = sorted(set(users))
    if len(names) > MAX_TEAMS:
        raise AccelsimError(
            f"{where} has {len(names)} users, above the {MAX_TEAMS} reported team by team: "
            f"map the user column to a team column, or remove it from columns"
        )
    labels: dict[str, str] = {}
    for user in names:
        label = re.sub(r"[^A-Za-z0-9_-]", "_", user) or "unknown"
        if label in labels:
            raise AccelsimError(
                f"{where}: users {labels[label]!r} and {user!r} read the same in metric "
                f"names ({label!r}): rename one"
            )
        labels[label] = user
    index = {user: k for k, user in enumerate(names)}
    return list(labels), np.array([index[u] for u in users], dtype=np.int64)


def team_metrics(
    records: Sequence[JobRecord],
    team: IntArray,
    first_id: int,
    labels: Sequence[str],
    horizon_hours: float,
    since_hours: float = 0.0,
) -> dict[str, dict[str, float]]:
    """Each team's :data:`TEAM_METRICS` (by :func:`stream_metrics`) over the jobs submitted
    from ``since_hours`` on; job ``j``'s team is ``team[j - first_id]``."""
    by_team: dict[int, list[JobRecord]] = {}
    for r in records:
        if r.submit_hours >= since_hours:
            by_team.setdefault(int(team[r.job_id - first_id]), []).append(r)
    out = {}
    for k, label in enumerate(labels):
        metrics = stream_metrics(by_team.get(k, []), horizon_hours)
        out[label] = {key: metrics[key] for key in TEAM_METRICS}
    return out


__all__ = [
    "MAX_TEAMS",
    "SERVING_METRICS",
    "TEAM_METRICS",
    "TRAINING_METRICS",
    "ServingPlan",
    "TrainingPlan",
    "chargeback",
    "per_hour",
    "plan_serving",
    "plan_training",
    "record_serving",
    "record_training",
    "replica_windows",
    "serving_metrics_held",
    "stream_metrics",
    "team_metrics",
    "trace_teams",
    "training_metrics",
]
