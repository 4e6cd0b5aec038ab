"""Several workloads on one fleet (``Scenario.workloads``): names, priorities and their rules.

A mix puts training runs, serving endpoints and job streams or traces on one fleet, measured
over ``horizon_days``. Each workload has a **name** (it prefixes its metrics,
``<name>.<metric>``) and, for a training run or an endpoint, a **priority** under the
``priority`` schedulers (a stream's jobs carry their own ``priority``; a trace's, its
priority column). Defaults come from the kind (:data:`DEFAULT_NAMES`,
:data:`DEFAULT_PRIORITY`): an endpoint outranks a training run, which outranks research.

Every workload of a mix is checked by the single-workload rules, on the scenario it would
be alone (:func:`mix_part`): a training run on ``chips`` chips of the first pool, an endpoint
on ``chips`` chips of the first pool, a stream or trace on the whole fleet. On top of those
(:func:`check_mix`): names unique, ``horizon_days`` set, an endpoint's horizon equal to it,
and what this first version of the mixed engine does not model yet refused by name
(a warm-up, a ``background``, credits, a training run that changes size).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from accelsim.scenario._applies import ASSUMPTION_READERS, Situation
from accelsim.scenario._fleet import Assumptions, Pool
from accelsim.scenario._serving import Serving
from accelsim.scenario._streams import JobStream, Trace
from accelsim.scenario._training import TrainingRun

_MAX_MIX = 32
"""Most workloads in one mix [count]."""
DEFAULT_NAMES = {"training": "training", "serving": "serving", "job_stream": "research"}
"""A workload's name in a mix when it sets none (a trace's is ``trace``)."""
DEFAULT_PRIORITY = {"serving": 2, "training": 1}
"""A training run's and an endpoint's priority in a mix when they set none (research
streams default to 0, :attr:`JobStream.priority`)."""
_PRIORITY_SCHEDULERS = ("priority", "priority_preemptive")
_MIX_SITUATION: dict[str, Situation] = {
    "training": "shared_training",
    "serving": "serving",
    "job_stream": "stream",
    "trace": "stream",
}
"""How the engines of a mix run each kind (:data:`ASSUMPTION_READERS` says what each reads)."""
_NOT_IN_A_MIX = {
    "delay_usd_per_day": "a mix prices no delay: its decision is time 0 for every workload",
    "emission_kg_per_kwh": "a mix reports the fleet's energy, not its emissions",
    "lead_time_days": (
        "a mix's fleet is in service from day 0 for every workload on it, so no workload "
        "waits for a capacity lead time"
    ),
}
_MIX_FIELDS = ("name", "priority", "chips")
"""Fields of a training run and an endpoint that apply in a mix only (a stream's or a
trace's: ``name``; a stream's ``priority`` and ``chips`` are its jobs')."""

AnyWorkload = TrainingRun | JobStream | Trace | Serving


def workload_name(work: AnyWorkload) -> str:
    """The workload's name in a mix: its ``name``, else the default of its kind."""
    return work.name or DEFAULT_NAMES.get(work.kind, work.kind)


def workload_priority(work: TrainingRun | Serving) -> int:
    """Priority of a training run's job or an endpoint's replicas in a mix."""
    return DEFAULT_PRIORITY[work.kind] if work.priority is None else work.priority


def workload_chips(work: TrainingRun | Serving, pool_count: int) -> int:
    """Chips of the first pool a training run or an endpoint uses in a mix. [count]"""
    return pool_count if work.chips is None else work.chips


def _mix_fields(work: AnyWorkload) -> tuple[str, ...]:
    return _MIX_FIELDS if isinstance(work, TrainingRun | Serving) else ("name",)


def check_lone(work: AnyWorkload) -> None:
    """A lone workload (``Scenario.workload``) sets none of the fields that apply in a mix."""
    for field in _mix_fields(work):
        if getattr(work, field) is not None:
            raise ValueError(
                f"workload.{field} applies to a workload in a mix (Scenario.workloads); a lone "
                f"workload is named by the scenario and uses its whole first pool: remove it"
            )


def check_mix(scenario: Any) -> None:
    """The rules of a mix (module docstring); ``scenario`` is the :class:`Scenario` checked.

    Raises ``ValueError`` naming the field (``workloads[i]...``) and what to do instead.
    """
    works: list[AnyWorkload] | None = scenario.workloads
    if works is None:
        raise ValueError("a scenario needs a workload, or several as workloads=[...]")
    if scenario.workload is not None:
        raise ValueError(
            "give workload (one) or workloads (several sharing the fleet), not both: put "
            "the workload in the workloads list"
        )
    if scenario.horizon_days is None:
        raise ValueError(
            "horizon_days is required with workloads: it is the time over which the fleet is "
            "held, shared and charged back"
        )
    unsupported = (
        ("warmup_days", bool(scenario.warmup_days), "the fleet is measured from time 0"),
        ("background", scenario.background is not None, "put that work in workloads"),
        ("credits", bool(scenario.credits), "not yet charged back in a mix"),
    )
    for field, present, why in unsupported:
        if present:
            raise ValueError(f"{field} is not supported with workloads ({why}): remove it")
    _check_assumptions(scenario, works)
    seen: dict[str, int] = {}
    pool = scenario.fleet[0]
    for i, work in enumerate(works):
        name = workload_name(work)
        if name in seen:
            raise ValueError(
                f"workloads[{i}] and workloads[{seen[name]}] are both named {name!r}: give "
                f"each a distinct name (it prefixes its metrics)"
            )
        seen[name] = i
        if isinstance(work, TrainingRun | Serving):
            _check_sized(scenario, i, work, pool)
        mix_part(scenario, i)  # the single-workload rules, on the part alone


def _check_assumptions(scenario: Any, works: list[AnyWorkload]) -> None:
    """An assumption that no workload of the mix reads is an error, never ignored."""
    a = scenario.assumptions
    reads = {_MIX_SITUATION[w.kind] for w in works}
    for name, readers in ASSUMPTION_READERS.items():
        if getattr(a, name) is None:
            continue
        why = _NOT_IN_A_MIX.get(name)
        if why is None and not readers & reads:
            kinds = sorted(k for k, where in _MIX_SITUATION.items() if where in readers)
            why = f"only a {' or '.join(kinds)} workload reads it and the mix has none"
        if why is not None:
            raise ValueError(f"assumptions.{name} does not apply here ({why}): remove it")
    pricing = {p.pricing for p in scenario.fleet}
    for name in ("spot_preemptions_per_hour", "spot_return_hours"):
        if getattr(a, name) is not None and "spot" not in pricing:
            raise ValueError(
                f"assumptions.{name} applies to spot pools and the fleet has none: remove it or "
                f"use pricing spot"
            )
    if a.electricity_usd_per_kwh is not None and "on_prem" not in pricing:
        raise ValueError(
            "assumptions.electricity_usd_per_kwh applies to on_prem pools (a cloud price "
            "includes power) and the fleet has none: remove it"
        )


def _check_sized(scenario: Any, i: int, work: TrainingRun | Serving, pool: Pool) -> None:
    where = f"workloads[{i}]"
    if work.chips is not None and work.chips > pool.count:
        raise ValueError(
            f"{where}.chips={work.chips} exceeds the first pool's count ({pool.count}): a "
            f"{work.kind} workload of a mix runs on the first pool"
        )
    if work.priority is not None and scenario.scheduler not in _PRIORITY_SCHEDULERS:
        raise ValueError(
            f"{where}.priority applies under the priority schedulers "
            f"({', '.join(_PRIORITY_SCHEDULERS)}); scheduler={scenario.scheduler!r} ignores "
            f"it: remove it or choose one of them"
        )
    if isinstance(work, TrainingRun) and work.phases is not None:
        raise ValueError(
            f"{where}.phases: a training run that changes size runs on the analytic engine "
            f"only, not in a mix: remove the phases"
        )
    if isinstance(work, Serving) and work.disaggregated is not None:
        raise ValueError(
            f"{where}.disaggregated: an endpoint of a mix runs on the first pool, and "
            f"disaggregated serving needs a prefill and a decode pool; simulate it alone "
            f"(Scenario.workload) or colocate it in the mix"
        )
    if isinstance(work, Serving) and work.horizon_days != scenario.horizon_days:
        raise ValueError(
            f"{where}.horizon_days ({work.horizon_days:g}) differs from horizon_days "
            f"({scenario.horizon_days:g}): an endpoint of a mix serves over the fleet's horizon"
        )


def mix_part(scenario: Any, i: int) -> Any:
    """Workload ``i`` of a mix as the scenario it would be alone, validated, with the mix's
    assumptions: a training run or an endpoint on its ``chips`` of the first pool, a
    stream or a trace on the whole fleet over the horizon (the engines read it so).

    The single-workload rules are checked with the default assumptions (the mix's may hold
    fields that only another workload reads); errors name ``workloads[i]``.
    """
    work: AnyWorkload = scenario.workloads[i]
    plain = work.model_copy(update=dict.fromkeys(_mix_fields(work)))
    data: dict[str, Any] = {"name": f"{scenario.name}:{workload_name(work)}", "workload": plain}
    if isinstance(work, TrainingRun | Serving):
        first = scenario.fleet[0]
        size = workload_chips(work, first.count)
        data["fleet"] = [Pool.model_validate({**first.model_dump(), "count": size})]
    else:
        data |= {
            "fleet": scenario.fleet,
            "horizon_days": scenario.horizon_days,
            "scheduler": scenario.scheduler,
        }
    try:
        part = type(scenario).model_validate(data)
    except ValidationError as exc:
        first_error = exc.errors()[0]
        where = ".".join(str(k) for k in first_error["loc"])
        message = str(first_error["msg"]).removeprefix("Value error, ")
        if isinstance(work, TrainingRun | Serving) and work.chips is not None:
            # the part's pool is the workload's share of the first pool, not the pool
            message += f" (in a mix, its pool is its chips={work.chips} of the first pool)"
        raise ValueError(
            f"workloads[{i}] ({workload_name(work)}): " + (f"{where}: " if where else "") + message
        ) from None
    if scenario.assumptions != Assumptions():
        part = part.model_copy(update={"assumptions": scenario.assumptions})
    return part


__all__ = [
    "DEFAULT_NAMES",
    "DEFAULT_PRIORITY",
    "check_lone",
    "check_mix",
    "mix_part",
    "workload_chips",
    "workload_name",
    "workload_priority",
]
