"""Where spare hosts, a fallback to on-demand and ``repair_hours`` apply (errors otherwise).

A training run's recovery (:mod:`accelsim.engines.training._recovery`) reads ``Pool.spare_hosts``,
``Pool.fallback_after_preemptions`` and ``Pool.fallback_after_days`` of the run's own pool,
the first; nothing else reads them. ``Assumptions.repair_hours`` is read for a lone training
run only when its pool keeps spares (else a failed host is replaced from outside within
``restart_hours``); a shared fleet's other pools and job streams read it too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from accelsim.scenario._fleet import Assumptions, Pool
from accelsim.scenario._training import TrainingRun


class _Scenario(Protocol):
    """What the rules read of a :class:`~accelsim.Scenario` (which calls them)."""

    @property
    def workload(self) -> object: ...
    @property
    def fleet(self) -> Sequence[Pool]: ...
    @property
    def background(self) -> object: ...
    @property
    def assumptions(self) -> Assumptions: ...


_POLICY_FIELDS = ("spare_hosts", "fallback_after_preemptions", "fallback_after_days")


def check_recovery(scenario: _Scenario) -> None:
    """Raise ``ValueError`` naming the field when a recovery field does not apply."""
    work = scenario.workload
    # several workloads on one fleet (``Scenario.workloads``, where the version has it) run
    # on the DES's shared pools: no training run owns a pool there
    training = isinstance(work, TrainingRun) and getattr(scenario, "workloads", None) is None
    for i, pool in enumerate(scenario.fleet):
        for name in _POLICY_FIELDS:
            if getattr(pool, name) is None:
                continue
            if not training or i > 0:
                raise ValueError(
                    f"fleet.{i}.{name} applies to a training run's own pool (fleet.0); "
                    f"no engine reads it here: remove it"
                )
    if not isinstance(work, TrainingRun) or not training:
        return
    pool = scenario.fleet[0]
    if work.phases is not None and (
        pool.fallback_after_preemptions is not None or pool.fallback_after_days is not None
    ):
        raise ValueError(
            "fleet.0.fallback_after_* with workload.phases is not modelled (a fallback "
            "splits the run in time, as phases do): remove one of them"
        )
    alone = scenario.background is None and len(scenario.fleet) == 1
    if alone and pool.spare_hosts is None and scenario.assumptions.repair_hours is not None:
        raise ValueError(
            "assumptions.repair_hours applies to a training run alone only with "
            "fleet.0.spare_hosts set (without spares a failed host is replaced from outside "
            "the pool within restart_hours): set spare_hosts (0: no spare) or remove it"
        )
