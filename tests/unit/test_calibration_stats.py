"""Nested partial pooling (accelsim._calibration_stats), against its closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from accelsim._calibration_stats import partial_pool, poolable, pooled_draws


@given(st.lists(st.floats(-3.0, 3.0), min_size=3, max_size=30, unique=True))
def test_one_group_is_the_plain_predictive_normal(values: list[float]) -> None:
    ys = np.array(values)
    if ys.std() < 1e-3:
        return
    mean, sd, _ = partial_pool([(("s", "p"), v) for v in values], ("s", "p"))
    assert mean == pytest.approx(ys.mean(), abs=1e-9)
    expected = float(ys.std(ddof=1)) * math.sqrt(1.0 + 1.0 / ys.size)
    assert sd == pytest.approx(expected, rel=0.05)


def test_separated_groups_borrow_little_from_each_other() -> None:
    rng = np.random.default_rng(1)
    rows = [(("a",), float(v)) for v in rng.normal(0.0, 0.1, 8)]
    rows += [(("b",), float(v)) for v in rng.normal(2.0, 0.1, 8)]
    mean_a, sd_a, _ = partial_pool(rows, ("a",))
    mean_new, sd_new, _ = partial_pool(rows, ("c",))
    assert abs(mean_a) < 0.1  # its own group's mean, not the grand mean of 1
    assert sd_a < 0.2
    assert sd_new > 1.0  # a new group carries the between-group spread
    assert mean_new == pytest.approx(1.0, abs=0.1)


def test_a_row_beyond_the_roofline_is_never_lent_to_the_others() -> None:
    """An implied efficiency of 1 or more is a mechanism the model lacks, not an efficiency:
    the other rows' draws are the same with it as without it, and a row never pools itself."""
    implied = {
        "a": (("cuda", "fp8", "dense"), 0.45),
        "b": (("cuda", "fp8", "dense"), 0.55),
        "c": (("cuda", "fp4", "dense"), 0.35),
        "fast": (("cuda", "fp4", "dense"), 1.3),
    }
    assert poolable(implied, "a") == ["b", "c"]
    assert poolable(implied, "fast") == ["a", "b", "c"]
    without = {k: v for k, v in implied.items() if k != "fast"}
    keys = ("cuda", "fp4", "dense")
    got = pooled_draws(implied, keys, "c", np.random.default_rng(1), 500)
    ref = pooled_draws(without, keys, "c", np.random.default_rng(1), 500)
    np.testing.assert_array_equal(got, ref)
    assert got.max() <= 1.0  # capped at the roofline
    # with the row lent (the old rule) the pooled FP4 level would have risen
    others = [(g, math.log(e)) for i, (g, e) in implied.items() if i != "c"]
    assert (
        partial_pool(others, keys)[0]
        > partial_pool([(g, math.log(e)) for i, (g, e) in without.items() if i != "c"], keys)[0]
    )
