"""The request-level serving DES: every arrival, batch iteration and completion.

:func:`simulate_serving` plays a fleet of replicas (rules in :mod:`._run`; the replica's state
machine in :mod:`._replica`, the router in :mod:`._fleet`, the state arrays in :mod:`._state`)
and :func:`simulate_serving_disaggregated` a prefill pool feeding a decode pool
(:mod:`._disagg`). The state machine is plain Python compiled by numba when numba is
installed (:mod:`._jit`); contract types are in :mod:`._types`.
"""

from accelsim.engines.serving.des._disagg import simulate_serving_disaggregated
from accelsim.engines.serving.des._run import simulate_serving
from accelsim.engines.serving.des._types import (
    DisaggregatedTrace,
    EventBudgetError,
    ReplicaModel,
    ReplicaPlan,
    RequestStream,
    ServingTrace,
)

__all__ = [
    "DisaggregatedTrace",
    "EventBudgetError",
    "ReplicaModel",
    "ReplicaPlan",
    "RequestStream",
    "ServingTrace",
    "simulate_serving",
    "simulate_serving_disaggregated",
]
