"""Uncertain inputs: every numeric assumption accepts a number or one of these distributions.

Each type is a frozen pydantic model tagged by ``dist`` (its YAML key) with ``sample(rng, n)``,
``ppf(q)``, ``expected_value()`` and ``variance()``. A bare number means :class:`Fixed`.
"""

from accelsim.dists._continuous import (
    PERT,
    Beta,
    Exponential,
    LogNormal,
    Normal,
    Triangular,
    Uniform,
)
from accelsim.dists._discrete import Choice, Fixed
from accelsim.dists._uncertain import (
    EVERY_DIST_TYPE,
    Dist,
    Uncertain,
    as_dist,
    parse_uncertain,
)

__all__ = [
    "EVERY_DIST_TYPE",
    "PERT",
    "Beta",
    "Choice",
    "Dist",
    "Exponential",
    "Fixed",
    "LogNormal",
    "Normal",
    "Triangular",
    "Uncertain",
    "Uniform",
    "as_dist",
    "parse_uncertain",
]
