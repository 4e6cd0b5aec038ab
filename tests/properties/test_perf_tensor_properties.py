"""Invariants of the tensor-parallel term (:func:`accelsim.models.perf.tensor_parallel_seconds`)
and of carrying a local MFU between tensor layouts. Exact unless stated."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from accelsim.models import perf
from accelsim.models._perf_tensor import carry_tensor

tokens = st.floats(1.0, 1e8)
degree = st.sampled_from([1, 2, 4, 8, 16, 64, 256, 4096])
layers = st.floats(1.0, 200.0)
width = st.floats(256.0, 65536.0)
link = st.floats(1.0, 2000.0)
scale = st.floats(1.0, 16.0)


@given(tokens, degree, layers, width, link, st.floats(1.0, 4.0))
def test_tensor_seconds_non_negative_and_zero_without_tensor_parallelism(
    n: float, t: int, depth: float, d: float, gbps: float, b: float
) -> None:
    """T ≥ 0, finite; exactly 0 for t = 1 (even with no link at all)."""
    kw = {"layers": depth, "d_model": d, "bytes_per_activation": b}
    got = float(perf.tensor_parallel_seconds(n, tensor_chips=t, link_gbps=gbps, **kw))
    assert np.isfinite(got)
    assert got >= 0.0
    assert (got > 0.0) == (t > 1)
    assert float(perf.tensor_parallel_seconds(n, tensor_chips=1, link_gbps=0.0, **kw)) == 0.0


@given(tokens, degree, layers, width, link, scale, scale)
def test_tensor_seconds_non_decreasing_in_bytes(
    n: float, t: int, depth: float, d: float, gbps: float, more: float, b: float
) -> None:
    """More activation bytes (tokens, width or bytes per element) never take less time."""
    kw = {"tensor_chips": t, "layers": depth, "link_gbps": gbps}
    base = float(perf.tensor_parallel_seconds(n, d_model=d, bytes_per_activation=b, **kw))
    for bigger in (
        perf.tensor_parallel_seconds(n * more, d_model=d, bytes_per_activation=b, **kw),
        perf.tensor_parallel_seconds(n, d_model=d * more, bytes_per_activation=b, **kw),
        perf.tensor_parallel_seconds(n, d_model=d, bytes_per_activation=b * more, **kw),
    ):
        assert float(bigger) >= base


@given(st.floats(0.05, 0.9), st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_carry_tensor_is_transitive_and_monotone(mu: float, a: float, b: float) -> None:
    """Carrying a → b → a returns the local MFU (1e-12); more exposed traffic, lower MFU."""
    there = carry_tensor(np.asarray(mu), np.asarray(a), np.asarray(b))
    back = carry_tensor(there, np.asarray(b), np.asarray(a))
    if a * mu < 1.0:
        np.testing.assert_allclose(back, mu, rtol=1e-12)
        if b >= a:
            assert float(there) <= mu * (1.0 + 1e-12)
        else:
            assert float(there) >= mu * (1.0 - 1e-12)
