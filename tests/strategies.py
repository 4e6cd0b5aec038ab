"""What the tests add to the public strategies (:mod:`accelsim.strategies`): defaults and
type registration.

The distribution strategies themselves are the public ones, so the project tests what its
users draw. Here only: a wide default range (``-1e6`` to ``1e6``), the unbounded laws by
default (the tests check what every law does, not only those that fit a range), and, on
import, ``st.register_type_strategy`` for every distribution type, so ``st.from_type(PERT)``
gives valid models (``st.builds`` would honour ``gt``/``ge`` but neither
``allow_inf_nan=False`` nor the cross-field validators, STACK.md pitfall 8).
"""

from __future__ import annotations

from hypothesis import strategies as st

from accelsim import strategies as acst
from accelsim.dists import EVERY_DIST_TYPE, Dist

DEFAULT_MIN = -1e6
DEFAULT_MAX = 1e6


def dists(
    min_value: float = DEFAULT_MIN, max_value: float = DEFAULT_MAX, *, bounded: bool = False
) -> st.SearchStrategy[Dist]:
    """:func:`accelsim.strategies.dists` over ``[min_value, max_value]`` (``min < max``);
    the unbounded laws too unless ``bounded``."""
    if not min_value < max_value:
        raise ValueError(f"need min_value < max_value, got {min_value}, {max_value}")
    return acst.dists(min_value, max_value, unbounded=not bounded)


def uncertain(
    min_value: float = DEFAULT_MIN, max_value: float = DEFAULT_MAX, *, bounded: bool = False
) -> st.SearchStrategy[float | Dist]:
    """A plain finite float or a distribution (see :func:`dists`), as a field would hold."""
    return acst.uncertain(min_value, max_value, unbounded=not bounded)


for _kind in EVERY_DIST_TYPE:
    st.register_type_strategy(
        _kind, acst.dists(DEFAULT_MIN, DEFAULT_MAX, unbounded=True, kinds=[_kind])
    )
