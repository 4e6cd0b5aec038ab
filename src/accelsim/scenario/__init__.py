"""What the user asks about: a workload on a fleet under assumptions (validated at the boundary).

A :class:`Scenario` is a frozen pydantic model. Everything a simulation needs is checked here,
once: chip ids exist, every pool's provider offers its chip at its pricing model, counts are
positive, MFU lies in (0, 1], and a training run fits in the fleet's memory at all. Errors
name the field path and the allowed range; :func:`load_scenario` adds the file and the line.
Downstream code trusts these types and does not re-check them.
"""

from accelsim.scenario._common import (
    MAX_NAME_CHARS,
    MAX_TEXT_CHARS,
    TRAINING_HORIZON_DAYS,
    Framework,
    Precision,
    SchedulerName,
    Sharding,
    Stage,
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
)
from accelsim.scenario._streams import JobStream, Trace
from accelsim.scenario._training import TrainingPhase, TrainingRun
from accelsim.scenario._workloads_mix import (
    mix_part,
    workload_chips,
    workload_name,
    workload_priority,
)

__all__ = [
    "MAX_NAME_CHARS",
    "MAX_TEXT_CHARS",
    "SLO",
    "TRAINING_HORIZON_DAYS",
    "Assumptions",
    "Background",
    "Credit",
    "Disaggregation",
    "Framework",
    "Goals",
    "JobStream",
    "Pool",
    "Precision",
    "Router",
    "Scaling",
    "Scenario",
    "SchedulerName",
    "Serving",
    "ServingPrecision",
    "Sharding",
    "Stage",
    "Trace",
    "TrainingPhase",
    "TrainingRun",
    "Workload",
    "format_validation_error",
    "load_scenario",
    "mix_part",
    "training_state_gib",
    "workload_chips",
    "workload_name",
    "workload_priority",
]
