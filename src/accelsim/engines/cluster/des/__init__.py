"""The discrete-event engine: shared pools, job streams, gang scheduling, failures, spot.

:func:`run` builds a SimPy ``Environment``, a :class:`~.cluster.Cluster` that owns the
chips and the queue, and the processes that change its state (arrivals, deliveries,
failures and repairs, preemptions and returns); runs to the horizon; and returns the
metrics (:class:`~.metrics.DesResult`). Events happen only at state changes, never per
training step or per checkpoint.

Modules: :mod:`.specs` (what is simulated), :mod:`.schedulers` (policies),
:mod:`.cluster` (state), :mod:`.attempts` (checkpoint layout and lost work),
:mod:`.processes` (event sources), :mod:`.records` and
:mod:`.metrics` (what is remembered and reported), :mod:`.trace` and :mod:`.streams`
(workloads from CSV files and from distributions). The request-level serving DES is its own
package, :mod:`accelsim.engines.serving.des`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import simpy

from accelsim.engines.cluster.des._budget import MAX_EVENTS, ClusterBudgetError, play
from accelsim.engines.cluster.des._cluster import Cluster
from accelsim.engines.cluster.des._metrics import DesResult, PoolMetrics, TimeSeries, summarize
from accelsim.engines.cluster.des._processes import Arrivals, Delivery, Strikes
from accelsim.engines.cluster.des._records import EventRecord, JobRecord, Recorder
from accelsim.engines.cluster.des._reservations import Holdings, Withdrawals
from accelsim.engines.cluster.des._schedulers import SCHEDULERS, Scheduler, resolve_scheduler
from accelsim.engines.cluster.des._specs import JobSpec, PoolSpec, Sampler
from accelsim.engines.cluster.des._streams import poisson_stream
from accelsim.engines.cluster.des._trace import TRACE_COLUMNS, TraceError, read_trace
from accelsim.seeding import stream


def run(
    pools: Sequence[PoolSpec],
    jobs: Iterable[JobSpec],
    *,
    scheduler: str | Scheduler,
    horizon_hours: float,
    warmup_hours: float = 0.0,
    seed_seq: np.random.SeedSequence,
    keep_jobs: bool = False,
    keep_events: bool = False,
    utilization_resolution_hours: float | None = None,
    withdrawals: Iterable[tuple[float, int]] | None = None,
    holdings: Holdings | None = None,
    max_events: int = MAX_EVENTS,
) -> DesResult:
    """Simulate jobs on shared pools of chips up to a horizon.

    Parameters
    ----------
    pools : sequence of PoolSpec
        The fleet; pool 0 defines speed 1.
    jobs : iterable of JobSpec
        Jobs in non-decreasing submission time; may be a lazy generator (only the next job
        is held). Jobs submitted at or after the horizon are not read.
    scheduler : str or callable
        A name in :data:`SCHEDULERS` or a policy function (see :mod:`.schedulers`).
    horizon_hours : float
        End of the simulation. [h]
    warmup_hours : float
        Start of the measurement window (see :mod:`.metrics`). [h]
    seed_seq : numpy.random.SeedSequence
        Root of the run's streams. Pool ``p`` draws strike times and chips from
        ``stream(seed_seq, "des", "failures", p)`` (or ``"preemptions"``), and down times
        from ``stream(seed_seq, "des", "failures.down_hours", p)`` (or
        ``"preemptions.down_hours"``). The jobs bring their own randomness (see
        :func:`poisson_stream`).
    keep_jobs : bool
        Keep a :class:`JobRecord` per job (memory grows with the jobs).
    keep_events : bool
        Keep an :class:`EventRecord` per state change (memory grows with the events).
    utilization_resolution_hours : float or None
        Width of the bins of a busy/up/queue time series, or ``None`` for none. [h]
    withdrawals : iterable of (float, int), optional
        ``(time, job_id)`` in non-decreasing time: the job is ended then wherever it is
        (a reservation whose window closed, :class:`Withdrawals`). [h]
    holdings : Holdings, optional
        Told of every attempt's start and release, to integrate chip-hours per class of
        job (read it after the run).
    max_events : int
        The run's event budget: past it the run stops and raises (every arrival, attempt
        end, failure, repair, preemption, return, delivery and withdrawal is one event).
        [count]

    Returns
    -------
    DesResult
        Counts, waits, utilisation and goodput, usage per pool, optional records.

    Raises
    ------
    ClusterBudgetError
        The horizon needs more than ``max_events`` events (an ``AccelsimError`` and a
        ``RuntimeError``), naming the budget, where the run stopped and the queue then.

    Examples
    --------
    Two 4-chip jobs on 6 chips: the second waits for the first (gang scheduling).

    >>> pool = PoolSpec("gpu", chips=6)
    >>> jobs = [JobSpec(0, 0.0, chips=4, work_hours=2.0), JobSpec(1, 0.5, chips=4, work_hours=1.0)]
    >>> res = run([pool], jobs, scheduler="fifo", horizon_hours=10.0,
    ...           seed_seq=np.random.SeedSequence(1))
    >>> res.jobs_completed, res.mean_wait_hours, res.mean_jct_hours
    (2, 0.75, 2.25)
    """
    if not horizon_hours > 0:
        raise ValueError(f"horizon_hours must be > 0, got {horizon_hours}")
    if not 0 <= warmup_hours < horizon_hours:
        raise ValueError(f"warmup_hours must be in [0, horizon_hours), got {warmup_hours}")
    if utilization_resolution_hours is not None and not utilization_resolution_hours > 0:
        raise ValueError("utilization_resolution_hours must be > 0 or None")
    if not pools:
        raise ValueError("a run needs at least one pool")
    if not max_events >= 1:
        raise ValueError(f"max_events must be >= 1, got {max_events}")
    policy = resolve_scheduler(scheduler)
    return _event_loop(
        pools,
        jobs,
        policy,
        horizon_hours=horizon_hours,
        warmup_hours=warmup_hours,
        seed_seq=seed_seq,
        keep_jobs=keep_jobs,
        keep_events=keep_events,
        utilization_resolution_hours=utilization_resolution_hours,
        withdrawals=withdrawals,
        holdings=holdings,
        max_events=max_events,
    )


def _event_loop(
    pools: Sequence[PoolSpec],
    jobs: Iterable[JobSpec],
    policy: Scheduler,
    *,
    horizon_hours: float,
    warmup_hours: float,
    seed_seq: np.random.SeedSequence,
    keep_jobs: bool,
    keep_events: bool,
    utilization_resolution_hours: float | None,
    withdrawals: Iterable[tuple[float, int]] | None = None,
    holdings: Holdings | None = None,
    max_events: int = MAX_EVENTS,
) -> DesResult:
    """:func:`run` on SimPy's event loop, whatever the case (arguments already checked)."""
    env = simpy.Environment(initial_time=0.0)
    recorder = Recorder(
        len(pools),
        warmup_hours=warmup_hours,
        horizon_hours=horizon_hours,
        bin_hours=utilization_resolution_hours,
        keep_jobs=keep_jobs,
        keep_events=keep_events,
    )
    cluster = Cluster(env, pools, policy, recorder, holdings)
    for p, pool in enumerate(pools):
        for rate, cause, down, source in (
            (pool.failure_rate_per_chip_hour, "failure", pool.repair_hours, "failures"),
            (
                pool.preemptions_per_chip_hour,
                "preemption",
                pool.preemption_return_hours,
                "preemptions",
            ),
        ):
            if rate > 0:
                strikes = Strikes(
                    cluster,
                    p,
                    rate,
                    cause,  # type: ignore[arg-type]
                    stream(seed_seq, "des", source, p),
                    down,
                    stream(seed_seq, "des", f"{source}.down_hours", p),
                )
                strikes.start(pool.lead_time_hours)
        Delivery(cluster, p).start(pool.lead_time_hours)
    Arrivals(cluster, jobs, horizon_hours).start()
    if withdrawals is not None:
        Withdrawals(cluster, withdrawals, horizon_hours).start()
    if not play(env, horizon_hours, max_events):
        raise ClusterBudgetError(max_events, env.now, horizon_hours, int(recorder.queue.value))
    running, queued = cluster.close()
    if holdings is not None:
        holdings.close(horizon_hours)
    return summarize(recorder, pools, running, queued)


__all__ = [
    "MAX_EVENTS",
    "SCHEDULERS",
    "TRACE_COLUMNS",
    "ClusterBudgetError",
    "DesResult",
    "EventRecord",
    "Holdings",
    "JobRecord",
    "JobSpec",
    "PoolMetrics",
    "PoolSpec",
    "Sampler",
    "TimeSeries",
    "TraceError",
    "poisson_stream",
    "read_trace",
    "run",
]
