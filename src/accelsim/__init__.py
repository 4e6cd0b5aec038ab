"""accelsim: what a GPU or TPU fleet will really cost, and when the model will be trained.

The public surface is listed in ``__all__``; see DESIGN.md's public contract.
"""

from importlib.metadata import version as _version

from accelsim import catalog
from accelsim.dists import (
    PERT,
    Beta,
    Choice,
    Exponential,
    Fixed,
    LogNormal,
    Normal,
    Triangular,
    Uniform,
)
from accelsim.errors import (
    AccelsimError,
    OfferNotFoundError,
    ScenarioFileError,
    UnknownChipError,
)
from accelsim.report import report
from accelsim.results import Comparison, Recommendation, Result
from accelsim.scenario import (
    SLO,
    Assumptions,
    Credit,
    Disaggregation,
    Goals,
    JobStream,
    Pool,
    Scenario,
    Serving,
    Trace,
    TrainingPhase,
    TrainingRun,
    load_scenario,
)
from accelsim.study import (
    FleetSizing,
    MorrisResult,
    SensitivityResult,
    SobolResult,
    SpearmanResult,
    SweepResult,
    TornadoResult,
    compare,
    sensitivity,
    serving_capacity,
    simulate,
    size_fleet,
    sweep,
)

__version__ = _version("accelsim")

__all__ = [
    "PERT",
    "SLO",
    "AccelsimError",
    "Assumptions",
    "Beta",
    "Choice",
    "Comparison",
    "Credit",
    "Disaggregation",
    "Exponential",
    "Fixed",
    "FleetSizing",
    "Goals",
    "JobStream",
    "LogNormal",
    "MorrisResult",
    "Normal",
    "OfferNotFoundError",
    "Pool",
    "Recommendation",
    "Result",
    "Scenario",
    "ScenarioFileError",
    "SensitivityResult",
    "Serving",
    "SobolResult",
    "SpearmanResult",
    "SweepResult",
    "TornadoResult",
    "Trace",
    "TrainingPhase",
    "TrainingRun",
    "Triangular",
    "Uniform",
    "UnknownChipError",
    "__version__",
    "catalog",
    "compare",
    "load_scenario",
    "report",
    "sensitivity",
    "serving_capacity",
    "simulate",
    "size_fleet",
    "sweep",
]
