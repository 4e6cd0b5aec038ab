"""accelsim: what a GPU or TPU fleet will really cost, and when the model will be trained.

The public surface is listed in ``__all__``; see DESIGN.md's public contract.
"""

from importlib.metadata import version as _version

from accelsim import catalog
from accelsim.catalog import Measurements, ServingMeasurement, TrainingMeasurement
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
    Speculative,
    Trace,
    TrainingPhase,
    TrainingRun,
    load_scenario,
)
from accelsim.study import (
    CalibrationWarning,
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
from accelsim.study import calibrate as _calibrate

# The catalog's public calibrate inverts measurements through the model and the studies,
# which sit above the catalog layer: it is implemented in accelsim.study and bound here,
# where every layer is loaded (importing any accelsim module runs this file first).
catalog.calibrate = _calibrate

__version__ = _version("accelsim")

__all__ = [
    "PERT",
    "SLO",
    "AccelsimError",
    "Assumptions",
    "Beta",
    "CalibrationWarning",
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
    "Measurements",
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
    "ServingMeasurement",
    "SobolResult",
    "SpearmanResult",
    "Speculative",
    "SweepResult",
    "TornadoResult",
    "Trace",
    "TrainingMeasurement",
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
