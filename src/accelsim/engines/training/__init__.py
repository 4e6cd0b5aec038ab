"""The training engine: one run on a dedicated fleet, every run of a chunk at once (numpy).

:func:`simulate_training` draws a chunk's training inputs (:mod:`._inputs`), runs the
:mod:`accelsim.models` pipeline (MFU and scaling, failures and checkpoints, engineering
hours: :mod:`._analytic`, the spot fallback and spare hosts: :mod:`._recovery`), lays the
calendar out (:mod:`._phases`) and prices it. The cluster DES (:mod:`accelsim.engines.cluster`)
runs the same functions for a training run that shares its fleet.
"""

from accelsim.engines.training._analytic import pipeline_layout, run_mfu, simulate_training
from accelsim.engines.training._inputs import run_info

__all__ = ["pipeline_layout", "run_info", "run_mfu", "simulate_training"]
