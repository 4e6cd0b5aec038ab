"""Scenario -> DES engine: several workloads on one fleet (``Scenario.workloads``).

Each Monte Carlo run is one discrete-event simulation of the whole fleet over
``horizon_days``, holding every workload of the mix as jobs of the shared cluster:

- **A training run** is one gang job of its ``chips`` on the first pool, not preemptible,
  at its priority, as the hero run of :mod:`accelsim.engines.cluster._hero`: its physics
  (compute hours, checkpoint interval, write and restart times, interruption rate) come
  from the analytic engine on the run's own part (:func:`accelsim.scenario.mix_part`), it
  is submitted when its porting and optimisation end after the decision (time 0; the
  fleet is in service, so no capacity lead time), and its metrics come back through the
  analytic engine with the DES's training time and queue wait (two passes over the same
  draws). When the mix has a training run, the first pool's chips fail at the first
  training run's interruption rate per chip, replaced at once by hot spares (the hero
  run's failure model), so both engines mean the same training days.
- **A serving endpoint** is a time-varying reservation of replicas x ``chips_per_replica``
  chips of the first pool, following the hourly replica plan of the serving fast path
  (:func:`~accelsim.engines.serving._usage.replicas_per_hour`): each replica window of the
  plan (:func:`~accelsim.engines.cluster._mixed_parts.replica_windows`) is a job, not
  preemptible, at the endpoint's priority, withdrawn when its window ends wherever it is
  (waiting or running). Under ``priority_preemptive`` a replica evicts lower-priority
  preemptible work, which pays its lost work and restart; chips it leaves at low demand run
  other jobs. The replicas that actually served each hour (time average; a replica
  serves ``cold_start_minutes`` after it gets its chips) give the SLO attainment through
  the fast path's own per-window function: if chips held by work it may not evict keep
  replicas out, attainment falls in those hours.
- **Job streams and traces** are as in a stream scenario
  (:mod:`accelsim.engines.cluster._streams_run`): their jobs keep their priorities and are
  preemptible.

The fleet is the organisation's, in service from time 0 for every workload on it (one
rule: no workload of a mix waits for a capacity lead time, since the fleet already serves
and runs research; a lone scenario's fleet arrives at the end of its lead time instead) and
held to the horizon: every pool is priced for the whole horizon,
used or not; energy on allocated chip-hours. The fleet's
TCO is that hardware and energy, plus each workload's engineering (a training run's
porting and optimisation, an endpoint's porting), plus the queue wait of every job but the
endpoints' replicas at ``wait_usd_per_job_hour``. Not in it: the delay cost of a late
training run or endpoint launch (the mix's decision is time 0 for everyone), credits (refused
in a mix).

**Chargeback.** :class:`~accelsim.engines.cluster.des.Holdings` integrates the chip-hours each
workload held, attempt by attempt (``chip_hours.<name>``; their sum equals the pools'
allocated chip-hours, the rest of the held fleet is ``idle_chip_hours``: chips idle or
down), pool by pool. Each pool's hardware and energy is charged back to the workloads
that held its chips, in proportion to their chip-hours on it, the pool's idle chip-hours
spread in the same proportion (``chargeback_usd.<name>``,
:func:`~accelsim.engines.cluster._mixed_parts.chargeback`): a workload
pays its own pools' prices, and the chargebacks sum to the fleet's hardware and energy
cost. A pool no workload used in a run is spread over the fleet's users; a run in which no
workload held a chip charges it to ``unattributed_usd``. A trace with a ``user`` column is
split into teams, each a class of its own (``chip_hours.<trace>.<team>``,
``chargeback_usd.<trace>.<team>``, ``<trace>.<team>.mean_wait_hours``) adding up to the
trace's.

Metric names: fleet-wide names as usual (``tco_usd``, ``hardware_cost_usd``, ...), each
workload's own prefixed by its name and a dot (``research.mean_wait_hours``), the
attribution by the metric then the name (``chargeback_usd.research``).
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import replace

import numpy as np

import accelsim.engines.cluster.des as des
from accelsim._typing import FloatArray
from accelsim.catalog import Catalog
from accelsim.engines._inputs import InputDraws, InputPlan, as_plan
from accelsim.engines.cluster._checks import check_runnable, trace_users
from accelsim.engines.cluster._mixed_parts import (
    ServingPlan,
    TrainingPlan,
    chargeback,
    plan_serving,
    plan_training,
    record_serving,
    record_training,
    replica_windows,
    serving_metrics_held,
    stream_metrics,
    team_metrics,
    trace_teams,
    training_metrics,
)
from accelsim.engines.cluster._streams_run import (
    DesOptions,
    _fleet_draws,
    _FleetDraws,
    _Kept,
    _pool_specs,
    _price_fleet,
    _stream_jobs,
    over_budget,
)
from accelsim.engines.cluster.des import DesResult, Holdings, JobSpec, PoolSpec
from accelsim.scenario import (
    JobStream,
    Scenario,
    Serving,
    Trace,
    TrainingRun,
    mix_part,
    workload_name,
    workload_priority,
)
from accelsim.seeding import child

_HOURS_PER_DAY = 24.0
ID_STRIDE = 1 << 40
"""Job ids of the ``j``-th stream or trace of a mix start at ``j * ID_STRIDE`` after the
training runs and replica windows (ids break ties between jobs submitted together)."""


class _Mix:
    """A mix's workloads for one block of runs: plans before the DES, outcomes after."""

    def __init__(
        self,
        scenario: Scenario,
        cat: Catalog,
        plan: InputPlan,
        span: tuple[int, int],
        options: DesOptions,
    ) -> None:
        assert scenario.workloads is not None
        assert scenario.horizon_days is not None
        start, stop = span
        self.works = scenario.workloads
        self.scenario, self.cat, self.plan, self.options = scenario, cat, plan, options
        self.start, self.stop = start, stop
        self.horizon_hours = scenario.horizon_days * _HOURS_PER_DAY
        self.draws = plan.draws(start, stop)
        self.names = [workload_name(w) for w in scenario.workloads]
        self.parts = [mix_part(scenario, i) for i in range(len(scenario.workloads))]
        self.training: list[TrainingPlan] = []
        self.serving: list[ServingPlan] = []
        self.streams: list[int] = []
        for i, (work, part) in enumerate(zip(scenario.workloads, self.parts, strict=True)):
            if isinstance(work, TrainingRun):
                self.training.append(
                    plan_training(
                        i, self.names[i], part, workload_priority(work), cat, plan, start, stop
                    )
                )
            elif isinstance(work, Serving):
                self.serving.append(
                    plan_serving(i, self.names[i], part, workload_priority(work), cat, self.draws)
                )
            else:
                self.streams.append(i)
        # Teams: a trace's user column splits its jobs into classes of their own.
        self.teams: dict[int, tuple[int, np.ndarray]] = {}
        self.team_labels: list[tuple[int, str]] = []  # (workload, "<name>.<team>") per class
        for i in self.streams:
            work = self.works[i]
            if isinstance(work, Trace):
                self._add_teams(i, trace_users(self.parts[i], work, cat))
        self.fleet: _FleetDraws = _fleet_draws(scenario, cat, self.draws)
        self.rows: list[dict[str, float]] = []

    def _add_teams(self, i: int, users: tuple[str, ...]) -> None:
        """Classes for the teams of trace ``i`` (none if it has no user column)."""
        where = f"scenario {self.scenario.name!r}: workloads[{i}] ({self.names[i]})"
        teams = trace_teams(users, where)
        if teams is None:
            return
        labels, team = teams
        base = len(self.names) + len(self.team_labels)
        self.teams[i] = (base, team + base)
        self.team_labels += [(i, f"{self.names[i]}.{label}") for label in labels]

    def pools(self, k: int) -> list[PoolSpec]:
        """Run ``k``'s pools; with a training run, the first keeps the hero's failure model."""
        # The organisation's fleet is in service from time 0 for every workload of the mix.
        specs = [
            replace(p, lead_time_hours=0.0)
            for p in _pool_specs(self.scenario, self.cat, self.fleet, k)
        ]
        if self.training:
            t = self.training[0]
            rate = float(t.physics[4][k])
            specs[0] = replace(
                specs[0],
                failure_rate_per_chip_hour=rate / t.chips,
                preemptions_per_chip_hour=0.0,
                repair_hours=None,
                preemption_return_hours=None,
            )
        return specs

    def simulate(self, k: int, kept: _Kept) -> None:
        """Run ``k`` of the block: one DES of every workload; keeps its outcomes."""
        run = self.start + k
        jobs, bounds, withdrawals = self._jobs(k)
        lows = [b[0] for b in bounds]
        owner = [b[1] for b in bounds]
        classes = len(self.names) + len(self.team_labels)
        pools = self.pools(k)
        holdings = des.Holdings(
            self._job_class(lows, owner),
            classes,
            intervals_of=[s.index for s in self.serving],
            pools=len(pools),
        )
        try:
            result = des.run(
                pools,
                heapq.merge(*jobs, key=lambda j: (j.submit_hours, j.job_id)),
                scheduler=self.scenario.scheduler,
                horizon_hours=self.horizon_hours,
                seed_seq=child(self.plan.root, "des", run),
                keep_jobs=True,
                withdrawals=sorted(withdrawals),
                holdings=holdings,
                utilization_resolution_hours=kept.options.resolution_hours,
                max_events=self.options.max_events,
            )
        except des.ClusterBudgetError as err:
            raise over_budget(self.scenario, run, err) from None
        kept.add(run, result)
        self.rows.append(self._row(k, result, pools, holdings, lows, owner))

    def _jobs(
        self, k: int
    ) -> tuple[list[Iterable[JobSpec]], list[tuple[int, int]], list[tuple[float, int]]]:
        """Run ``k``'s jobs: one id-ordered stream per workload, the ``(first job id, workload
        index)`` bounds (increasing ids) and the replicas' ``(end [h], job id)`` withdrawals."""
        bounds: list[tuple[int, int]] = []
        jobs = self._training_jobs(k, bounds)
        serving, withdrawals, first_id = self._replica_jobs(k, len(self.training), bounds)
        jobs += serving
        jobs += self._stream_and_trace_jobs(k, first_id, bounds)
        return jobs, bounds, withdrawals

    def _training_jobs(self, k: int, bounds: list[tuple[int, int]]) -> list[Iterable[JobSpec]]:
        """Each training run's gang job of run ``k`` (ids from 0; hours from its physics)."""
        jobs: list[Iterable[JobSpec]] = []
        for first_id, t in enumerate(self.training):
            work, interval, write, restart, _ = (float(x[k]) for x in t.physics)
            tau = None if not np.isfinite(interval) else interval
            bounds.append((first_id, t.index))
            spec = JobSpec(
                job_id=first_id,
                submit_hours=float(t.submit_hours[k]),
                chips=t.chips,
                work_hours=work,
                priority=t.priority,
                pools=(0,),
                checkpoint_interval_hours=tau,
                checkpoint_write_hours=write,
                restart_hours=restart,
                preemptible=False,
            )
            jobs.append([spec])
        return jobs

    def _replica_jobs(
        self, k: int, first_id: int, bounds: list[tuple[int, int]]
    ) -> tuple[list[Iterable[JobSpec]], list[tuple[float, int]], int]:
        """Each endpoint's replica windows of run ``k`` as jobs (ids from ``first_id``), their
        withdrawals ``(end [h], job id)`` and the next free id."""
        jobs: list[Iterable[JobSpec]] = []
        withdrawals: list[tuple[float, int]] = []
        for s in self.serving:
            begins, ends = replica_windows(s.planned[k], self.horizon_hours)
            bounds.append((first_id, s.index))
            chips = s.setup.chips_per_replica
            ids = range(first_id, first_id + begins.size)
            jobs.append(
                [
                    JobSpec(i, b, chips, e - b, s.priority, (0,), preemptible=False)
                    for i, b, e in zip(ids, begins.tolist(), ends.tolist(), strict=True)
                ]
            )
            withdrawals += zip(ends.tolist(), ids, strict=True)
            first_id += begins.size
        return jobs, withdrawals, first_id

    def _stream_and_trace_jobs(
        self, k: int, first_id: int, bounds: list[tuple[int, int]]
    ) -> list[Iterable[JobSpec]]:
        """Each stream's or trace's jobs of run ``k``, the ``j``-th from
        ``first_id + j * ID_STRIDE`` (generated lazily)."""
        jobs: list[Iterable[JobSpec]] = []
        for j, i in enumerate(self.streams):
            lowest = first_id + j * ID_STRIDE
            bounds.append((lowest, i))
            work_i = self.works[i]
            assert isinstance(work_i, JobStream | Trace)
            jobs.append(
                _stream_jobs(
                    self.parts[i],
                    self.cat,
                    work_i,
                    self.plan.root,
                    self.start + k,
                    self.horizon_hours,
                    lowest,
                    self.options.max_jobs_per_run,
                )
            )
        return jobs

    def _job_class(self, lows: list[int], owner: list[int]) -> Callable[[int], int]:
        """A job id's class: its workload, or its team's class for a trace split into teams."""
        team_of = {lows[b]: self.teams[w][1] for b, w in enumerate(owner) if w in self.teams}

        def job_class(job_id: int) -> int:
            b = bisect_right(lows, job_id) - 1
            teams = team_of.get(lows[b])
            return owner[b] if teams is None else int(teams[job_id - lows[b]])

        return job_class

    def _row(
        self,
        k: int,
        result: DesResult,
        pools: list[PoolSpec],
        holdings: Holdings,
        lows: list[int],
        owner: list[int],
    ) -> dict[str, float]:
        """Run ``k``'s row: each workload's metrics and held chip-hours, the fleet's usage."""
        assert result.jobs is not None
        by_owner: dict[int, list[des.JobRecord]] = {i: [] for i in owner}
        for record in result.jobs:
            by_owner[owner[bisect_right(lows, record.job_id) - 1]].append(record)
        replica_queue = self._record_plans(k, by_owner, holdings)
        held = list(holdings.chip_hours)
        by_pool = [list(hours) for hours in holdings.pool_chip_hours]
        row = self._stream_rows(by_owner, held, by_pool, lows, owner)
        held_total = 0.0
        for i, name in enumerate(self.names):
            row[f"chip_hours.{name}"] = held[i]
            held_total += held[i]
            for p, hours in enumerate(by_pool[i]):
                row[f"held_pool{p}.{name}"] = hours
        self._fleet_row(row, result, pools, held_total, replica_queue)
        return row

    def _record_plans(
        self, k: int, by_owner: dict[int, list[des.JobRecord]], holdings: Holdings
    ) -> float:
        """Records run ``k``'s outcome of each training run and endpoint in its plan; returns
        the replicas' queue wait: job life minus held time, summed. [replica-hours]"""
        horizon = self.horizon_hours
        for t in self.training:
            mine = by_owner[t.index]
            record_training(t, k, mine[0] if mine else None, horizon)
        replica_queue = 0.0
        for s in self.serving:
            intervals = holdings.intervals[s.index]
            record_serving(s, k, intervals, horizon)
            # a replica's job lives from its window's start to its end (or the horizon)
            life = sum(
                (r.end_hours if r.end_hours == r.end_hours else horizon) - r.submit_hours
                for r in by_owner[s.index]
            )
            replica_queue += life - sum(e - b for b, e, _ in intervals)
        return replica_queue

    def _stream_rows(
        self,
        by_owner: dict[int, list[des.JobRecord]],
        held: list[float],
        by_pool: list[list[float]],
        lows: list[int],
        owner: list[int],
    ) -> dict[str, float]:
        """Each stream's and trace's metrics and its teams' (chip-hours [chip-h] per class and
        pool); a team's held chip-hours are added into its trace's ``held`` and ``by_pool``."""
        horizon = self.horizon_hours
        row: dict[str, float] = {}
        for i in self.streams:
            records = by_owner[i]
            for key, value in stream_metrics(records, horizon).items():
                row[f"{self.names[i]}.{key}"] = value
            if i in self.teams:
                base, team = self.teams[i]
                labels = [label for w, label in self.team_labels if w == i]
                per_team = team_metrics(records, team - base, lows[owner.index(i)], labels, horizon)
                for j, label in enumerate(labels):
                    cls = base + j
                    row[f"chip_hours.{label}"] = held[cls]
                    held[i] += held[cls]
                    for p, hours in enumerate(by_pool[cls]):
                        row[f"held_pool{p}.{label}"] = hours
                        by_pool[i][p] += hours
                    row |= {f"{label}.{key}": v for key, v in per_team[label].items()}
        return row

    def _fleet_row(
        self,
        row: dict[str, float],
        result: DesResult,
        pools: list[PoolSpec],
        held_total: float,
        replica_queue: float,
    ) -> None:
        """Adds the fleet's usage to ``row``: held, allocated and idle chip-hours [chip-h],
        utilization, the queue wait of every job but the replicas [job-h], jobs completed."""
        horizon = self.horizon_hours
        fleet_held = 0.0
        for p, pm in enumerate(result.pools):
            held_h = max(0.0, horizon - pools[p].lead_time_hours)
            row[f"held_hours_pool{p}"] = held_h
            row[f"allocated_chip_hours_pool{p}"] = pm.allocated_chip_hours
            fleet_held += pools[p].chips * held_h
        row["chip_hours"] = held_total
        # The cluster's own integral of busy chips: what the attribution must add up to.
        row["allocated_chip_hours"] = sum(pm.allocated_chip_hours for pm in result.pools)
        row["fleet_chip_hours"] = fleet_held
        row["idle_chip_hours"] = max(fleet_held - held_total, 0.0)
        row["utilization"] = result.utilization  # allocated / up, as for a stream
        # Queue wait of every job but the replicas (an endpoint's wait shows in its SLO).
        row["queue_wait_job_hours"] = max(result.mean_queue_length * horizon - replica_queue, 0.0)
        row["jobs_completed"] = sum(row[f"{self.names[i]}.jobs_completed"] for i in self.streams)


def _metrics(mix: _Mix) -> tuple[dict[str, FloatArray], InputDraws]:
    """Every metric of the block's runs, priced (module docstring)."""
    scenario, cat, draws = mix.scenario, mix.cat, mix.draws
    data = {key: np.array([r[key] for r in mix.rows]) for key in mix.rows[0]}
    engineering = np.zeros(draws.runs)
    finished = np.ones(draws.runs)
    for t in mix.training:
        out, part_draws = training_metrics(t, cat, mix.plan, mix.start, mix.stop, mix.horizon_hours)
        draws.drawn.update(part_draws.drawn)
        engineering = engineering + out.get("engineering_cost_usd", 0.0)
        finished = np.minimum(finished, out["finished"])
        data |= {f"{t.name}.{key}": value for key, value in out.items()}
    for s in mix.serving:
        out = serving_metrics_held(s)
        engineering = engineering + out.get("engineering_cost_usd", 0.0)
        finished = np.minimum(finished, out["finished"])
        data |= {f"{s.name}.{key}": value for key, value in out.items()}
    data["finished"] = finished
    priced = _price_fleet(scenario, cat, draws, data, per_pool=True)
    data["energy_kwh"] = priced["energy_kwh"]
    pools = range(len(scenario.fleet))
    classes = mix.names + [label for _, label in mix.team_labels]
    held = {c: [data.pop(f"held_pool{p}.{c}") for p in pools] for c in classes}
    for p in pools:
        del data[f"held_hours_pool{p}"], data[f"allocated_chip_hours_pool{p}"]
    del data["jobs_completed"]
    if "tco_usd" not in priced:
        return data, draws  # an unpriced pool: usage only
    held_cost = priced["hardware_cost_usd"] + priced["energy_cost_usd"]
    for c, cost in chargeback(
        [priced[f"pool_cost_usd{p}"] for p in pools],
        {n: held[n] for n in mix.names},
        {label: held[label] for _, label in mix.team_labels},
    ).items():
        data[f"chargeback_usd.{c}"] = cost
    data["unattributed_usd"] = np.where(data["chip_hours"] > 0, 0.0, held_cost)
    data["hardware_cost_usd"] = priced["hardware_cost_usd"]
    data["energy_cost_usd"] = priced["energy_cost_usd"]
    data["wait_cost_usd"] = priced["wait_cost_usd"]
    data["engineering_cost_usd"] = engineering
    data["tco_usd"] = priced["tco_usd"] + engineering
    return data, draws


def simulate_mixed_block(
    scenario: Scenario,
    cat: Catalog,
    plan: InputPlan | np.random.SeedSequence,
    start: int,
    stop: int,
    options: DesOptions = DesOptions(),  # noqa: B008 (frozen: a shared default is safe)
) -> tuple[dict[str, FloatArray], InputDraws, dict[str, np.ndarray]]:
    """Metrics, draws and kept arrays of runs ``[start, stop)`` of a mix of workloads.

    ``cat`` is the study's catalog and ``plan`` how it draws (a bare seed: plain Monte Carlo).
    """
    if scenario.workloads is None:
        raise TypeError(f"scenario {scenario.name!r} has one workload, not workloads=[...]")
    plan = as_plan(plan)
    # (simulate() checked it, and warned, before any block: a worker's warning is lost)
    check_runnable(scenario, cat, max_jobs_per_run=options.max_jobs_per_run, warn=False)
    mix = _Mix(scenario, cat, plan, (start, stop), options)
    kept = _Kept(options)
    for k in range(stop - start):
        mix.simulate(k, kept)
    data, draws = _metrics(mix)
    return data, draws, kept.arrays()


__all__ = ["ID_STRIDE", "simulate_mixed_block"]
