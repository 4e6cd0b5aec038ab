"""Engines turn a chunk of runs' input draws into usage: calendar phases, chip-hours, kWh.

Every engine function takes the study's :class:`~accelsim.catalog.Catalog` and its
:class:`InputPlan` as arguments (no engine reads process state). Inputs are drawn once per
chunk (:class:`InputDraws`), a pipeline of :mod:`accelsim.models`
calls turns them into usage, and :func:`price_training` / the pool pricers turn usage into
cost. Two engines, one model:

- the analytic engine (vectorised numpy, every run of a chunk at once) for one training run
  on a dedicated pool: :func:`simulate_training`;
- the discrete-event engine (:mod:`accelsim.engines.des`, SimPy) for anything with
  contention: :func:`simulate_block` (job streams and traces on shared pools) and
  :func:`simulate_training_block` (a training run sharing its fleet with a background),
  :func:`simulate_mixed_block` (several workloads on one fleet, ``Scenario.workloads``).

Both must agree in distribution on the cases both can run (tests/agreement).
"""

from accelsim.engines._analytic import simulate_training
from accelsim.engines._des_checks import OverloadWarning, check_runnable
from accelsim.engines._des_hero import simulate_training_block
from accelsim.engines._des_mixed import simulate_mixed_block
from accelsim.engines._des_streams_run import JOB_DTYPE, DesOptions, merge_kept, simulate_block
from accelsim.engines._inputs import (
    BLOCK_RUNS,
    Design,
    InputDraws,
    InputPlan,
    blocks,
    check_design_runs,
)
from accelsim.engines._memory import MEMORY_FRACTION, format_bytes, memory_limit_bytes
from accelsim.engines._pricing import price_training, prices_used
from accelsim.engines._serving import replica_capacity, simulate_serving_fast
from accelsim.engines._serving_des import simulate_serving_block
from accelsim.engines._serving_pair import pair_capacity
from accelsim.engines._training_inputs import run_info

__all__ = [
    "BLOCK_RUNS",
    "JOB_DTYPE",
    "MEMORY_FRACTION",
    "DesOptions",
    "Design",
    "InputDraws",
    "InputPlan",
    "OverloadWarning",
    "blocks",
    "check_design_runs",
    "check_runnable",
    "format_bytes",
    "memory_limit_bytes",
    "merge_kept",
    "pair_capacity",
    "price_training",
    "prices_used",
    "replica_capacity",
    "run_info",
    "simulate_block",
    "simulate_mixed_block",
    "simulate_serving_block",
    "simulate_serving_fast",
    "simulate_training",
    "simulate_training_block",
]
