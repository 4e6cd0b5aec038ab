"""The cluster engine: shared pools under contention, played by the SimPy DES (:mod:`.des`).

:func:`simulate_block` runs job streams and traces on shared pools (:mod:`._streams_run`),
:func:`simulate_training_block` a training run sharing its fleet with a background
(:mod:`._hero`), and :func:`simulate_mixed_block` several workloads on one fleet
(``Scenario.workloads``: :mod:`._mixed`). :func:`check_runnable` refuses what cannot run
before any draw (:mod:`._checks`).
"""

from accelsim.engines.cluster._checks import OverloadWarning, check_runnable
from accelsim.engines.cluster._hero import simulate_training_block
from accelsim.engines.cluster._mixed import simulate_mixed_block
from accelsim.engines.cluster._streams_run import (
    JOB_DTYPE,
    DesOptions,
    merge_kept,
    simulate_block,
)

__all__ = [
    "JOB_DTYPE",
    "DesOptions",
    "OverloadWarning",
    "check_runnable",
    "merge_kept",
    "simulate_block",
    "simulate_mixed_block",
    "simulate_training_block",
]
