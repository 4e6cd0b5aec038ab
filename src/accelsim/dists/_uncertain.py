"""The union of the distribution types and the uncertain-input field type built on it.

:data:`Dist` tells the types apart by their ``dist`` tag; :data:`Uncertain` is a finite number
or a ``Dist``; :func:`parse_uncertain` validates one and :func:`as_dist` turns a number into
:class:`~accelsim.dists.Fixed`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, TypeAlias, get_args

import numpy as np
from pydantic import Discriminator, Field, FiniteFloat, Strict, Tag, TypeAdapter

from accelsim.dists._base import _Dist
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

Dist: TypeAlias = Annotated[
    Fixed | Uniform | Triangular | PERT | Exponential | Normal | LogNormal | Beta | Choice,
    Field(discriminator="dist"),
]
"""Any distribution, told apart by its ``dist`` tag."""


def _uncertain_kind(value: Any) -> str:
    # Route by shape so that an error reports one branch, not "not a number, and no tag".
    return "dist" if isinstance(value, Mapping | _Dist) else "number"


Uncertain: TypeAlias = Annotated[
    # Strict: YAML's `true` or a quoted "0.4" is an error, never silently 1.0 or 0.4.
    Annotated[FiniteFloat, Strict(), Tag("number")] | Annotated[Dist, Tag("dist")],
    Discriminator(_uncertain_kind),
]
"""A field type for uncertain inputs: a finite number, or a mapping tagged by ``dist``."""

EVERY_DIST_TYPE: tuple[type[_Dist], ...] = get_args(get_args(Dist)[0])
"""Every distribution type, in the order of the :data:`Dist` union."""

_UNCERTAIN: TypeAdapter[float | Dist] = TypeAdapter(Uncertain)


def parse_uncertain(obj: object) -> float | Dist:
    """Validate a number or a ``dist``-tagged mapping (as read from YAML, JSON or TOML).

    Raises ``pydantic.ValidationError`` naming the field and the allowed range.

    Examples
    --------
    >>> parse_uncertain(3)
    3.0
    >>> parse_uncertain({"dist": "triangular", "low": 0.3, "mode": 0.4, "high": 0.5})
    Triangular(low=0.3, mode=0.4, high=0.5)
    """
    return _UNCERTAIN.validate_python(obj)


def as_dist(x: float | Dist) -> Dist:
    """The distribution of an uncertain input: a number becomes :class:`Fixed`.

    Examples
    --------
    >>> as_dist(2)
    Fixed(value=2.0)
    >>> as_dist(Uniform(low=0, high=1))
    Uniform(low=0.0, high=1.0)
    """
    if isinstance(x, EVERY_DIST_TYPE):
        return x
    if isinstance(x, bool) or not isinstance(x, int | float | np.integer | np.floating):
        raise TypeError(f"expected a number or a distribution, got {type(x).__name__}")
    return Fixed(float(x))


__all__ = ["EVERY_DIST_TYPE", "Dist", "Uncertain", "as_dist", "parse_uncertain"]
