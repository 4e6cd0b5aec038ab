"""Fields that do not apply to a scenario: each one is an error, never silently ignored.

A field applies where an engine reads it. This module holds the table of which engines read
which :class:`~accelsim.Assumptions` field (:data:`ASSUMPTION_READERS`) and the other rules
of the same kind (a window on a lone training run, a price input on a fleet nothing is
priced for, a credit no pool can spend); :func:`check_applies` is called by
:class:`~accelsim.Scenario`'s validation and raises a ``ValueError`` naming the field and
what to do instead. One kind is a stated warning instead
(:class:`~accelsim.errors.IgnoredFieldWarning`): a stream's priorities or a trace's
priority or estimate column under a scheduler that ignores them, because comparing
schedulers on one workload (a sweep over ``scheduler``) is a study of its own.

The situations (:func:`situation`) are the ways the engines run a scenario:

- ``"training"``: a training run alone on its fleet (the analytic engine, or the DES's one
  gang job): it uses the first pool only and has no queue, no window and no background.
- ``"shared_training"``: a training run with a ``background`` (the DES hero run): the
  training run's costs are its own, on the first pool; the other pools run the background.
- ``"stream"``: a job stream or a trace (the DES): every pool, costs of holding the fleet.
- ``"serving"``: an endpoint (fast path or request DES): one pool.

Not here: ``repair_hours`` and ``spot_return_hours`` on a training run (the training
engines read them through the recovery model: ``repair_hours`` only with spare hosts, a rule
in ``scenario/_recovery_rules.py``), and the serving ``router``, which only the request DES
reads (the engine is chosen when the study runs: :func:`accelsim.simulate` refuses it on the
fast path).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from typing import Literal, Protocol

from accelsim.errors import IgnoredFieldWarning
from accelsim.scenario._common import _support
from accelsim.scenario._fleet import Assumptions, Credit, Pool
from accelsim.scenario._serving import Serving
from accelsim.scenario._streams import JobStream, Trace
from accelsim.scenario._training import TrainingRun


class Scenario(Protocol):
    """What the rules read of a :class:`~accelsim.Scenario` (a protocol: that module
    imports this one)."""

    @property
    def workload(self) -> TrainingRun | JobStream | Trace | Serving | None: ...
    @property
    def background(self) -> JobStream | Trace | None: ...
    @property
    def fleet(self) -> Sequence[Pool]: ...
    @property
    def assumptions(self) -> Assumptions: ...
    @property
    def scheduler(self) -> str: ...
    @property
    def horizon_days(self) -> float | None: ...
    @property
    def warmup_days(self) -> float: ...
    @property
    def credits(self) -> Sequence[Credit]: ...


Situation = Literal["training", "shared_training", "stream", "serving"]
_TRAINING: frozenset[Situation] = frozenset({"training", "shared_training"})
_ALL: frozenset[Situation] = frozenset({"training", "shared_training", "stream", "serving"})

ASSUMPTION_READERS: dict[str, frozenset[Situation]] = {
    "mfu": _TRAINING,
    "failure_rate_per_chip_hour": _TRAINING | {"stream"},
    "checkpoint_interval_hours": _TRAINING,
    "checkpoint_write_hours": _TRAINING,
    "restart_hours": _TRAINING,
    "startup_hours": _TRAINING,
    # training: not read yet, left to issue 14 (preemption policies, spare nodes)
    "repair_hours": _TRAINING | {"stream"},
    "spot_preemptions_per_hour": _TRAINING | {"stream"},
    "spot_return_hours": _TRAINING | {"stream"},
    # a fleet that already runs other work is in service from day 0 (fleet_available)
    "lead_time_days": frozenset({"training", "stream", "serving"}),
    "porting_hours": _TRAINING | {"serving"},
    "optimization_hours": _TRAINING,
    "engineers": _TRAINING | {"serving"},
    "engineer_usd_per_hour": _TRAINING | {"serving"},
    "electricity_usd_per_kwh": _ALL,
    "pue": _ALL,
    "delay_usd_per_day": _TRAINING | {"serving"},
    "price_change_per_year": _ALL,
    "wait_usd_per_job_hour": frozenset({"shared_training", "stream"}),
    "badput_fraction": _TRAINING,
    "architecture_changes": _TRAINING,
    "emission_kg_per_kwh": _TRAINING | {"serving"},
    "instability_events_per_day": _TRAINING,
}
"""Situations (:data:`Situation`) whose engine reads each ``Assumptions`` field."""

_WHAT: dict[Situation, str] = {
    "training": "a training run alone on its fleet",
    "shared_training": "a training run sharing its fleet with a background",
    "stream": "a job stream or trace",
    "serving": "a serving endpoint",
}
_PRIORITY_SCHEDULERS = ("priority", "priority_preemptive")
_COST_FIELDS = ("engineer_usd_per_hour", "delay_usd_per_day", "wait_usd_per_job_hour")


def situation(scenario: Scenario) -> Situation:
    """How the engines run ``scenario`` (see the module docstring)."""
    work = scenario.workload
    if isinstance(work, TrainingRun):
        return "shared_training" if fleet_in_service(scenario) else "training"
    return "serving" if isinstance(work, Serving) else "stream"


FLEET_IN_SERVICE = (
    "in service from day 0 for every workload on it: it already runs other work (a "
    "background or the other workloads of a mix), so no workload waits for a capacity lead time"
)
FLEET_ACQUIRED = (
    "acquired for this workload: it is available at the end of its capacity lead time "
    "(assumptions.lead_time_days, else the pricing model's prior)"
)


def fleet_in_service(scenario: Scenario) -> bool:
    """True when ``scenario``'s fleet already runs other work (a ``background``, or the other
    workloads of a mix): the one rule of when a fleet exists, read by every engine.

    Such a fleet is in service from day 0 for every workload on it: nothing on it waits for
    a capacity lead time (``assumptions.lead_time_days`` does not apply). A fleet acquired
    for one workload (a training run, a stream or trace, an endpoint) is available at the
    end of its capacity lead time. :func:`fleet_available` says which, in words.
    """
    return scenario.background is not None or bool(getattr(scenario, "workloads", None))


def fleet_available(scenario: Scenario) -> str:
    """When ``scenario``'s fleet exists, in words (:func:`fleet_in_service`): the sentence a
    result states in ``Result.extras["fleet_available"]``."""
    return FLEET_IN_SERVICE if fleet_in_service(scenario) else FLEET_ACQUIRED


def billed_pools(scenario: Scenario) -> list[tuple[int, Pool]]:
    """The pools whose cost the study reports, with their index in the fleet.

    A training run pays for its first pool (with a background, the other pools' cost
    belongs to the background work); a stream or trace reports costs only when every pool
    is priced; a serving endpoint has one pool. An unpriced pool (``provider=None``) is
    never billed.
    """
    where = situation(scenario)
    fleet = list(enumerate(scenario.fleet))
    if where in _TRAINING:
        fleet = fleet[:1]
    elif where == "stream" and any(p.provider is None for p in scenario.fleet):
        return []
    return [(i, p) for i, p in fleet if p.provider is not None]


def _reasons(scenario: Scenario) -> Iterator[str]:
    """Every field of ``scenario`` that does not apply, as the sentence of its error."""
    where = situation(scenario)
    yield from _assumptions(scenario, where)
    if where == "training":
        yield from _lone_training(scenario)
    if isinstance(scenario.workload, TrainingRun):
        yield from _training_run(scenario, scenario.workload)
    if where == "serving" and scenario.scheduler != "fifo":
        yield (
            f"scheduler={scenario.scheduler!r} applies to a shared fleet of jobs (a job stream, "
            f"a trace or a background); a serving endpoint routes requests to replicas "
            f"(workload.router): remove it"
        )
    yield from _pricing(scenario, where)


def _scheduler_notes(scenario: Scenario) -> Iterator[str]:
    """Stream fields the chosen scheduler ignores: warned of, not refused (see
    :class:`~accelsim.errors.IgnoredFieldWarning`)."""
    for field, stream in (("workload", scenario.workload), ("background", scenario.background)):
        if isinstance(stream, JobStream | Trace):
            yield from _stream_fields(scenario, field, stream)


def check_applies(scenario: Scenario) -> None:
    """Raise ``ValueError`` at the first field of ``scenario`` that no engine would read;
    warn (:class:`~accelsim.errors.IgnoredFieldWarning`) of a stream field the chosen
    scheduler ignores, since comparing schedulers on one workload is a study of its own."""
    for reason in _reasons(scenario):
        raise ValueError(reason)
    for note in _scheduler_notes(scenario):
        warnings.warn(note, IgnoredFieldWarning, stacklevel=2)


def _assumptions(scenario: Scenario, where: Situation) -> Iterator[str]:
    a = scenario.assumptions
    for name, readers in ASSUMPTION_READERS.items():
        if name == "lead_time_days" and a.lead_time_days is not None and fleet_in_service(scenario):
            yield (
                "assumptions.lead_time_days applies to a fleet acquired for its workload; this "
                "fleet runs a background, so it is in service from day 0 for every workload "
                "on it (no capacity lead time): remove it"
            )
            continue
        if getattr(a, name) is not None and where not in readers:
            users = " or ".join(_WHAT[s] for s in sorted(readers))
            yield (
                f"assumptions.{name} applies to {users}; {_WHAT[where]} does not use it: remove it"
            )
    # a training run alone trains on its first pool only: the others' pricing is not read
    simulated = scenario.fleet[:1] if where == "training" else scenario.fleet
    spot = any(p.pricing == "spot" for p in simulated)
    whose = (
        "the training run's pool (the first) is not one"
        if len(simulated) < len(scenario.fleet)
        else "the fleet has none"
    )
    for name in ("spot_preemptions_per_hour", "spot_return_hours"):
        if getattr(a, name) is not None and not spot:
            yield (
                f"assumptions.{name} applies to spot pools and {whose}: remove it or use "
                f"pricing spot"
            )


def _lone_training(scenario: Scenario) -> Iterator[str]:
    if scenario.horizon_days is not None:
        yield (
            "horizon_days is the window over which a shared fleet is measured (a stream, a "
            "trace or a background); a training run alone has none: its longest training "
            "counted is workload.horizon_days, so set that instead"
        )
    elif scenario.warmup_days:
        yield (
            "warmup_days applies with horizon_days (a measured window: a stream, a "
            "trace or a background); a training run alone has none: remove it"
        )
    if scenario.scheduler != "fifo":
        yield (
            f"scheduler={scenario.scheduler!r} applies to a shared fleet (a job stream, "
            f"a trace or a background); a training run alone has no queue"
        )


def _training_run(scenario: Scenario, work: TrainingRun) -> Iterator[str]:
    a = scenario.assumptions
    if a.architecture_changes is not None and work.stage != "prototype":
        yield (
            f"assumptions.architecture_changes applies to stage 'prototype' (each change "
            f"needs re-optimisation); a {work.stage} run is locked: remove it or use "
            f"stage 'prototype'"
        )
    if a.architecture_changes is not None and work.fine_tune is not None:
        yield (
            "assumptions.architecture_changes does not apply to a fine-tune: its "
            "architecture is the base model's, so nothing is re-optimised; remove it"
        )
    if a.mfu is None:
        return
    if work.regime != "pretraining":
        yield (
            f"workload.regime={work.regime!r} selects the MFU prior, and assumptions.mfu "
            f"replaces it (the run's MFU at its own scale): remove one of them"
        )
    if work.target == "loss":  # the batch sets the tokens to the target loss
        return
    batches = [] if work.global_batch_tokens is None else ["workload.global_batch_tokens"]
    batches += [
        f"workload.phases[{i}].global_batch_tokens"
        for i, p in enumerate(work.phases or [])
        if p.global_batch_tokens is not None
    ]
    if batches:
        yield (
            f"{batches[0]} drives the scaling model that carries MFU to the run's scale, "
            f"and assumptions.mfu replaces it (the run's MFU at its own scale): remove one "
            f"of them"
        )
    if work.flops is not None and work.layers is not None:
        yield (
            "workload.layers, seq_len and d_model shape the attention FLOPs and the "
            "pipeline layout of the scaling model; workload.flops and assumptions.mfu "
            "replace both: remove them"
        )


def _stream_fields(scenario: Scenario, field: str, stream: JobStream | Trace) -> Iterator[str]:
    scheduler = scenario.scheduler
    if scheduler not in _PRIORITY_SCHEDULERS:
        if isinstance(stream, JobStream) and _support(stream.priority) != (0.0, 0.0):
            yield (
                f"{field}.priority applies to the schedulers "
                f"{' and '.join(_PRIORITY_SCHEDULERS)}; {scheduler!r} ignores priorities "
                f"(kept, so the stream can be compared across schedulers)"
            )
        if isinstance(stream, Trace) and _mapped(stream, "priority"):
            yield (
                f"{field}.columns maps a priority column, which only the schedulers "
                f"{' and '.join(_PRIORITY_SCHEDULERS)} read; {scheduler!r} ignores "
                f"priorities (kept, so the trace can be compared across schedulers)"
            )
    if isinstance(stream, Trace) and _mapped(stream, "estimate") and scheduler != "backfill":
        yield (
            f"{field}.columns maps an estimate column, which only scheduler 'backfill' "
            f"reads; {scheduler!r} ignores runtime estimates (kept, so the trace can be "
            f"compared across schedulers)"
        )


def _mapped(trace: Trace, name: str) -> bool:
    return isinstance(trace.columns, dict) and name in trace.columns


def _pricing(scenario: Scenario, where: Situation) -> Iterator[str]:
    a = scenario.assumptions
    billed = billed_pools(scenario)
    billed_ids = {i for i, _ in billed}
    unbilled = _why_unbilled(scenario, where)
    if not billed:
        for name in _COST_FIELDS:
            if getattr(a, name) is not None and where in ASSUMPTION_READERS[name]:
                yield f"assumptions.{name} prices a cost, but {unbilled}: remove it"
        if scenario.credits:
            yield f"credits offset hardware cost, but {unbilled}: remove them"
    if a.electricity_usd_per_kwh is not None and not any(p.pricing == "on_prem" for _, p in billed):
        yield (
            "assumptions.electricity_usd_per_kwh applies to on_prem pools (a cloud price "
            "includes power) and the fleet has none whose cost is reported: remove it"
        )
    if a.price_change_per_year is not None and not any(
        p.pricing in ("on_demand", "spot") for _, p in billed
    ):
        yield (
            "assumptions.price_change_per_year moves on-demand and spot prices (commitments, "
            "capacity blocks and bought hardware keep theirs), and the fleet has no such pool "
            "whose cost is reported: remove it"
        )
    for i, pool in enumerate(scenario.fleet):
        if pool.term_share is not None and i not in billed_ids:
            yield (
                f"fleet[{i}].term_share sets the share of a term charged, but this pool's "
                f"cost is not reported ({_pool_unbilled(scenario, where, pool)}): remove it"
            )


def _why_unbilled(scenario: Scenario, where: Situation) -> str:
    if where in _TRAINING:
        return "the training run's pool (the first) is unpriced (provider None)"
    if where == "stream":
        return "a pool is unpriced (provider None), so the fleet's costs are not reported"
    return "the pool is unpriced (provider None)"


def _pool_unbilled(scenario: Scenario, where: Situation, pool: Pool) -> str:
    if pool.provider is None:
        return "it is unpriced"
    if where == "stream":
        return "another pool is unpriced, so the fleet's costs are not reported"
    if where == "training":
        return "a training run alone trains on and pays for its first pool only"
    return "a training run pays for its first pool only; the others run its background"
