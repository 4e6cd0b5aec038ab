"""What the user asks about: a workload on a fleet under assumptions (validated at the boundary).

A :class:`Scenario` is a frozen pydantic model. Everything a simulation needs is checked here,
once: chip ids exist, every pool's provider offers its chip at its pricing model, counts are
positive, MFU lies in (0, 1], and a training run fits in the fleet's memory at all. Errors
name the field path and the allowed range; :func:`load_scenario` adds the file and the line.
Downstream code trusts these types and does not re-check them.
"""

from accelsim.scenario._applies import (
    FLEET_ACQUIRED,
    FLEET_IN_SERVICE,
    fleet_available,
    fleet_in_service,
)
from accelsim.scenario._common import (
    BIDI_CONTROLS,
    MAX_NAME_CHARS,
    MAX_TEXT_CHARS,
    TRAINING_HORIZON_DAYS,
    FineTune,
    Framework,
    Precision,
    Recovery,
    Regime,
    SchedulerName,
    Sharding,
    Stage,
    adapter_state_gib,
    check_label,
    training_state_gib,
)
from accelsim.scenario._files import format_validation_error, load_scenario
from accelsim.scenario._fleet import Assumptions, Credit, Pool
from accelsim.scenario._goals import Goals
from accelsim.scenario._scenario import Background, Scenario, Workload
from accelsim.scenario._serving import (
    SLO,
    Disaggregation,
    Router,
    Scaling,
    Serving,
    ServingPrecision,
    SloUnitWarning,
)
from accelsim.scenario._speculative import Speculative
from accelsim.scenario._streams import JobStream, Trace
from accelsim.scenario._training import TrainingPhase, TrainingRun
from accelsim.scenario._workloads_mix import (
    mix_part,
    workload_chips,
    workload_name,
    workload_priority,
)

__all__ = [
    "BIDI_CONTROLS",
    "FLEET_ACQUIRED",
    "FLEET_IN_SERVICE",
    "MAX_NAME_CHARS",
    "MAX_TEXT_CHARS",
    "SLO",
    "TRAINING_HORIZON_DAYS",
    "Assumptions",
    "Background",
    "Credit",
    "Disaggregation",
    "FineTune",
    "Framework",
    "Goals",
    "JobStream",
    "Pool",
    "Precision",
    "Recovery",
    "Regime",
    "Router",
    "Scaling",
    "Scenario",
    "SchedulerName",
    "Serving",
    "ServingPrecision",
    "Sharding",
    "SloUnitWarning",
    "Speculative",
    "Stage",
    "Trace",
    "TrainingPhase",
    "TrainingRun",
    "Workload",
    "adapter_state_gib",
    "check_label",
    "fleet_available",
    "fleet_in_service",
    "format_validation_error",
    "load_scenario",
    "mix_part",
    "training_state_gib",
    "workload_chips",
    "workload_name",
    "workload_priority",
]
