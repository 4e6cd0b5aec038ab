"""Engines turn a chunk of runs' input draws into usage: calendar phases, chip-hours, kWh.

One subpackage per workload kind, each with its package face:

- :mod:`.training`: one training run on a dedicated fleet, vectorised numpy
  (:func:`simulate_training`);
- :mod:`.serving`: LLM endpoints, the fast path (:func:`simulate_serving_fast`) and the
  request DES (:func:`simulate_serving_block`, :mod:`accelsim.engines.serving.des`);
- :mod:`.cluster`: anything with contention, the SimPy DES (:mod:`accelsim.engines.cluster.des`):
  :func:`simulate_block` (job streams and traces on shared pools),
  :func:`simulate_training_block` (a training run sharing its fleet with a background),
  :func:`simulate_mixed_block` (several workloads on one fleet, ``Scenario.workloads``).

What they share stays here: the inputs drawn once per chunk (:class:`InputDraws`,
:mod:`._inputs`), the offers a pool uses (:mod:`._offers`) and the pricing of usage
(:func:`price_training` and the pool pricers, :mod:`._pricing`). Every engine function takes
the study's :class:`~accelsim.catalog.Catalog` and its :class:`InputPlan` as arguments (no
engine reads process state). Engines that can run the same case must agree in distribution
on it (tests/agreement).
"""

from accelsim.engines._inputs import (
    BLOCK_RUNS,
    Design,
    InputDraws,
    InputPlan,
    blocks,
    check_design_runs,
)
from accelsim.engines._memory import MEMORY_FRACTION, format_bytes, memory_limit_bytes
from accelsim.engines._pricing import charged_term_hours, is_reserved, price_training, prices_used
from accelsim.engines.cluster import (
    JOB_DTYPE,
    DesOptions,
    OverloadWarning,
    check_runnable,
    merge_kept,
    simulate_block,
    simulate_mixed_block,
    simulate_training_block,
)
from accelsim.engines.serving import (
    offline_capacity,
    pair_capacity,
    replica_capacity,
    simulate_serving_block,
    simulate_serving_fast,
)
from accelsim.engines.training import pipeline_layout, run_info, run_mfu, simulate_training

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
    "charged_term_hours",
    "check_design_runs",
    "check_runnable",
    "format_bytes",
    "is_reserved",
    "memory_limit_bytes",
    "merge_kept",
    "offline_capacity",
    "pair_capacity",
    "pipeline_layout",
    "price_training",
    "prices_used",
    "replica_capacity",
    "run_info",
    "run_mfu",
    "simulate_block",
    "simulate_mixed_block",
    "simulate_serving_block",
    "simulate_serving_fast",
    "simulate_training",
    "simulate_training_block",
]
