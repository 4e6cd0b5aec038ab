"""Explicit hypothesis strategies for accelsim's types, shared by every test module.

``st.builds(Model)`` honours ``gt``/``ge`` but neither ``allow_inf_nan=False`` nor cross-field
validators (STACK.md pitfall 8), so each distribution gets a hand-written strategy here: finite
floats only, sorted pairs and triples for ``low < high`` and ``low <= mode <= high``. Importing
this module registers them with ``st.register_type_strategy``, so ``st.from_type(Triangular)``
gives valid models too.
"""

from __future__ import annotations

import math
import sys

from hypothesis import reject
from hypothesis import strategies as st
from pydantic import ValidationError

from accelsim.dists import (
    PERT,
    Beta,
    Choice,
    Dist,
    Exponential,
    Fixed,
    LogNormal,
    Normal,
    Triangular,
    Uniform,
)

DEFAULT_MIN = -1e6
DEFAULT_MAX = 1e6


def finite_floats(
    min_value: float = DEFAULT_MIN, max_value: float = DEFAULT_MAX
) -> st.SearchStrategy[float]:
    """Finite, non-subnormal floats in ``[min_value, max_value]``."""
    return st.floats(
        min_value, max_value, allow_nan=False, allow_infinity=False, allow_subnormal=False
    )


def _positive(max_value: float) -> st.SearchStrategy[float]:
    """Floats in ``(0, max_value]`` (``max_value > 0``), not subnormal."""
    return st.floats(0.0, max_value, exclude_min=True, allow_subnormal=False)


def _pair(lo: float, hi: float) -> st.SearchStrategy[tuple[float, float]]:
    """Two floats ``a < b`` in ``[lo, hi]``."""
    return (
        st.tuples(finite_floats(lo, hi), finite_floats(lo, hi))
        .filter(lambda t: t[0] != t[1])
        .map(lambda t: (min(t), max(t)))
    )


def _triple(lo: float, hi: float) -> st.SearchStrategy[tuple[float, float, float]]:
    """Three floats ``a <= m <= b`` with ``a < b``, in ``[lo, hi]``."""
    floats = finite_floats(lo, hi)
    return (
        st.tuples(floats, floats, floats)
        .map(lambda t: tuple(sorted(t)))
        .filter(lambda t: t[0] < t[2])
        .map(lambda t: (t[0], t[1], t[2]))
    )


def _width(lo: float, hi: float) -> float:
    return min(hi - lo, sys.float_info.max)  # hi - lo overflows for ranges near +-max


def _fixed(lo: float, hi: float) -> st.SearchStrategy[Fixed]:
    return finite_floats(lo, hi).map(Fixed)


def _uniform(lo: float, hi: float) -> st.SearchStrategy[Uniform]:
    return _pair(lo, hi).map(lambda t: Uniform(low=t[0], high=t[1]))


def _triangular(lo: float, hi: float) -> st.SearchStrategy[Triangular]:
    return _triple(lo, hi).map(lambda t: Triangular(low=t[0], mode=t[1], high=t[2]))


def _pert(lo: float, hi: float) -> st.SearchStrategy[PERT]:
    return st.builds(
        lambda t, lamb: PERT(low=t[0], mode=t[1], high=t[2], lamb=lamb),
        _triple(lo, hi),
        finite_floats(0.0, 50.0),
    )


def _beta(lo: float, hi: float) -> st.SearchStrategy[Beta]:
    shape = finite_floats(1e-3, 1e3)
    return st.builds(
        lambda a, b, t: Beta(alpha=a, beta=b, low=t[0], high=t[1]), shape, shape, _pair(lo, hi)
    )


def _choice(lo: float, hi: float) -> st.SearchStrategy[Choice]:
    def with_weights(values: list[float]) -> st.SearchStrategy[Choice]:
        n = len(values)
        weights = st.lists(finite_floats(0.0, 10.0), min_size=n, max_size=n).filter(
            lambda w: sum(w) > 0.0
        )
        return st.one_of(
            st.just(Choice(values=values)),
            weights.map(lambda w: Choice(values=values, weights=w)),
        )

    return st.lists(finite_floats(lo, hi), min_size=1, max_size=6).flatmap(with_weights)


def _lognormal(lo: float, hi: float) -> st.SearchStrategy[LogNormal]:
    """``0 < lo``: quantiles distinct in log space too (the model requires it)."""
    return (
        _pair(lo, hi)
        .filter(lambda t: math.log(t[0]) < math.log(t[1]))
        .map(lambda t: LogNormal(low=t[0], high=t[1]))
    )


@st.composite
def _normal(draw: st.DrawFn, lo: float, hi: float, *, low: bool, high: bool) -> Normal:
    """Normal with ``mean`` and the truncation bounds asked for in ``[lo, hi]``."""
    mean = draw(finite_floats(lo, hi))
    sd = draw(_positive(_width(lo, hi)))
    a, b = draw(_pair(lo, hi))
    try:
        return Normal(mean=mean, sd=sd, low=a if low else None, high=b if high else None)
    except ValidationError:  # a window too narrow to survive standardising: rare, rejected
        reject()


def dists(
    min_value: float = DEFAULT_MIN, max_value: float = DEFAULT_MAX, *, bounded: bool = False
) -> st.SearchStrategy[Dist]:
    """Any valid distribution with its parameters in ``[min_value, max_value]``.

    Every type with a bounded support (Fixed, Uniform, Triangular, PERT, Beta, Choice and the
    Normal truncated on both sides) keeps its whole support inside the range. With
    ``bounded=False`` (the default) the unbounded types are added too: Exponential and
    LogNormal (when ``max_value > 0``; their mean or quantiles lie in the range) and the Normal
    untruncated or truncated on one side (mean and bound in the range).
    """
    if not min_value < max_value:
        raise ValueError(f"need min_value < max_value, got {min_value}, {max_value}")
    lo, hi = min_value, max_value
    choices: list[st.SearchStrategy[Dist]] = [
        _fixed(lo, hi),
        _uniform(lo, hi),
        _triangular(lo, hi),
        _pert(lo, hi),
        _beta(lo, hi),
        _choice(lo, hi),
        _normal(lo, hi, low=True, high=True),
    ]
    if not bounded:
        choices += [
            _normal(lo, hi, low=False, high=False),
            _normal(lo, hi, low=True, high=False),
            _normal(lo, hi, low=False, high=True),
        ]
        if hi > 0.0:
            positive_lo = max(lo, sys.float_info.min)
            choices.append(finite_floats(positive_lo, hi).map(lambda m: Exponential(mean=m)))
            choices.append(_lognormal(positive_lo, hi))
    return st.one_of(choices)


def uncertain(
    min_value: float = DEFAULT_MIN, max_value: float = DEFAULT_MAX, *, bounded: bool = False
) -> st.SearchStrategy[float | Dist]:
    """A plain finite float or a distribution (see :func:`dists`), as a field would hold."""
    numbers = finite_floats(min_value, max_value)
    return st.one_of(numbers, dists(min_value, max_value, bounded=bounded))


st.register_type_strategy(Fixed, _fixed(DEFAULT_MIN, DEFAULT_MAX))
st.register_type_strategy(Uniform, _uniform(DEFAULT_MIN, DEFAULT_MAX))
st.register_type_strategy(Triangular, _triangular(DEFAULT_MIN, DEFAULT_MAX))
st.register_type_strategy(PERT, _pert(DEFAULT_MIN, DEFAULT_MAX))
st.register_type_strategy(Beta, _beta(DEFAULT_MIN, DEFAULT_MAX))
st.register_type_strategy(Choice, _choice(DEFAULT_MIN, DEFAULT_MAX))
st.register_type_strategy(Exponential, _positive(DEFAULT_MAX).map(lambda m: Exponential(mean=m)))
st.register_type_strategy(LogNormal, _lognormal(sys.float_info.min, DEFAULT_MAX))
st.register_type_strategy(
    Normal,
    st.one_of(
        [
            _normal(DEFAULT_MIN, DEFAULT_MAX, low=low, high=high)
            for low in (False, True)
            for high in (False, True)
        ]
    ),
)
