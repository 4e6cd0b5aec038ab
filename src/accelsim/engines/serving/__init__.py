"""The serving engine: LLM endpoints priced per token under a latency SLO.

One pipeline, read by both paths: :mod:`._setup` draws a chunk's serving inputs once (the
replica, the token lengths, the efficiencies), :mod:`._layout` chooses the replica size,
:mod:`._usage` turns the load and latency model of :mod:`accelsim.models.serving` into
replicas per hour and chip-hours, and :mod:`._fast` prices it (the fast path,
:func:`simulate_serving_fast`). :mod:`._blocks` plays the same draws request by request in
the request DES (:mod:`.des`, compiled when numba is installed):
:func:`simulate_serving_block`. Disaggregated prefill and decode pools are two stages of
the same pipeline (:mod:`._disagg`, :mod:`._blocks_disagg`).
"""

from accelsim.engines.serving._blocks import simulate_serving_block
from accelsim.engines.serving._fast import (
    offline_capacity,
    replica_capacity,
    simulate_serving_fast,
)
from accelsim.engines.serving._pair import pair_capacity
from accelsim.engines.serving._setup import length_nodes

__all__ = [
    "length_nodes",
    "offline_capacity",
    "pair_capacity",
    "replica_capacity",
    "simulate_serving_block",
    "simulate_serving_fast",
]
