"""Studies: :func:`simulate`, :func:`compare`, :func:`sweep` and :func:`sensitivity`.

A study draws every uncertain input of a chunk of runs, hands the chunk to an engine, prices
the usage and gathers one array per metric. Chunks run in-process or on any
``concurrent.futures.Executor`` (processes, a Dask client); results are bit-identical
whatever the executor. Stores keep finished chunks on disk for resuming.
"""

from accelsim.study._calibrate import CalibrationWarning, calibrate
from accelsim.study._chunks import DEFAULT_RUNS
from accelsim.study._compare import compare
from accelsim.study._runner import ExecutorLike, open_executor
from accelsim.study._sensitivity import sensitivity, sensitivity_table
from accelsim.study._sensitivity_results import (
    MorrisResult,
    SensitivityResult,
    SobolResult,
    SpearmanResult,
    TornadoResult,
)
from accelsim.study._serving import serving_capacity
from accelsim.study._simulate import simulate
from accelsim.study._sizing import FleetSizing, size_fleet
from accelsim.study._sweep import SERVING_SWEEP_METRICS, SweepResult, sweep

__all__ = [
    "DEFAULT_RUNS",
    "SERVING_SWEEP_METRICS",
    "CalibrationWarning",
    "ExecutorLike",
    "FleetSizing",
    "MorrisResult",
    "SensitivityResult",
    "SobolResult",
    "SpearmanResult",
    "SweepResult",
    "TornadoResult",
    "calibrate",
    "compare",
    "open_executor",
    "sensitivity",
    "sensitivity_table",
    "serving_capacity",
    "simulate",
    "size_fleet",
    "sweep",
]
