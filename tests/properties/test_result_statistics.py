"""``Result`` and ``Comparison`` statistics against numpy on the samples, over any samples.

Oracle: numpy applied directly to the stored samples (``np.mean``, ``np.std(ddof=1)``,
``np.quantile`` with linear interpolation, a count of paired runs), the definitions the
docstrings give. Samples range over the whole input space: one run to many, values from
1e-300 to 1e300, negatives (credits), ties, and infinite runs (a run that never finishes).
Exact equality where the code is the same numpy call; otherwise 1e-12 relative.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from accelsim.results import Comparison, Result
from accelsim.results._format import Z95, format_error, format_value

finite = st.floats(-1e300, 1e300, allow_nan=False, allow_infinity=False)
costs = st.floats(0.0, 1e15, allow_nan=False, allow_infinity=False)
samples = hnp.arrays(np.float64, st.integers(1, 60), elements=finite)
with_infinity = hnp.arrays(
    np.float64, st.integers(1, 40), elements=costs | st.just(math.inf) | st.just(-math.inf)
)
levels = st.floats(0.01, 0.99)
quantile_levels = st.floats(0.0, 1.0)


def _result(x: np.ndarray, **extras: object) -> Result:
    return Result("r", {"x_usd": x}, extras=dict(extras))


@given(samples, quantile_levels)
@example(np.array([1.0]), 0.5)
@example(np.array([-1e300, 1e300]), 0.5)
def test_quantile_is_numpys_linear_quantile(x: np.ndarray, q: float) -> None:
    """Finite samples: ``quantile`` is ``np.quantile`` (linear), bit for bit."""
    r = _result(x)
    with np.errstate(over="ignore", invalid="ignore"):
        want = float(np.quantile(x, q))
    assume(math.isfinite(want))  # the interpolation itself can overflow at +-1e300
    assert r.quantile("x_usd", q) == want


@given(samples, levels)
def test_interval_is_the_central_pair_of_quantiles(x: np.ndarray, level: float) -> None:
    """``interval(m, level)`` = the ``(1 - level) / 2`` and ``1 - (1 - level) / 2`` quantiles,
    ordered, and holding at least ``level`` of the runs minus one run's share at each end
    (linear interpolation sits between two order statistics)."""
    r = _result(x)
    with np.errstate(over="ignore", invalid="ignore"):
        tail = round((1.0 - level) / 2.0, 12)
        lo_want, hi_want = float(np.quantile(x, tail)), float(np.quantile(x, 1 - tail))
    assume(math.isfinite(lo_want) and math.isfinite(hi_want))
    lo, hi = r.interval("x_usd", level)
    assert (lo, hi) == (lo_want, hi_want)
    assert lo <= hi
    inside = np.mean((x >= lo) & (x <= hi))
    assert inside >= level - 2.0 / x.size - 1e-12


def test_a_90_percent_interval_is_exactly_p5_to_p95() -> None:
    """The decimal the user meant: 0.9 gives the 0.05 and 0.95 quantiles, not 0.04999...."""
    x = np.arange(101.0)
    assert _result(x).interval("x_usd", 0.9) == (5.0, 95.0)


@given(hnp.arrays(np.float64, st.integers(1, 60), elements=st.floats(-1e12, 1e12)))
def test_stats_are_numpys_mean_standard_error_and_quantiles(x: np.ndarray) -> None:
    """``stats`` = (mean, std(ddof=1)/sqrt(n), P5, P50, P95); the SE is nan with one run, and
    runs all equal have their value as the mean and no error."""
    st_ = _result(x).stats("x_usd")
    assert list(st_) == ["mean", "std_error", "p5", "p50", "p95"]
    same = np.ptp(x) == 0  # every run equal: that value, no spread (numpy: rounding noise)
    assert st_["mean"] == (float(x[0]) if same else float(np.mean(x)))
    if x.size == 1:
        assert math.isnan(st_["std_error"])
    else:
        se = 0.0 if same else float(np.std(x, ddof=1) / np.sqrt(x.size))
        assert math.isclose(st_["std_error"], se, rel_tol=1e-12, abs_tol=1e-300)
    for key, q in (("p5", 0.05), ("p50", 0.5), ("p95", 0.95)):
        assert st_[key] == float(np.quantile(x, q))
    assert st_["p5"] <= st_["p50"] <= st_["p95"]


@given(hnp.arrays(np.float64, st.integers(1, 30).map(lambda k: 2 * k), elements=costs))
def test_the_antithetic_standard_error_is_over_pair_means(x: np.ndarray) -> None:
    """Runs 2k and 2k+1 are a pair: SE = std(pair means, ddof=1) / sqrt(n / 2)."""
    r = _result(x, design="antithetic")
    pairs = 0.5 * (x[0::2] + x[1::2])
    if pairs.size < 2:
        assert math.isnan(r.std_error("x_usd"))
    else:
        # equal pair means have no spread (np.std of equal values reports rounding noise)
        se = 0.0 if np.ptp(pairs) == 0 else float(np.std(pairs, ddof=1) / np.sqrt(pairs.size))
        assert math.isclose(r.std_error("x_usd"), se, rel_tol=1e-12, abs_tol=1e-300)


@given(with_infinity, quantile_levels)
def test_infinite_runs_give_infinite_quantiles_never_nan(x: np.ndarray, q: float) -> None:
    """A run that never finishes has an infinite cost: a quantile is a sample value or
    between two, so it is finite or infinite but never ``nan``; it is the same as numpy's
    wherever numpy's is not ``nan``, else the lower order statistic. The SE of a mean with
    an infinite run is not available (``nan``), and the mean is infinite or ``nan`` only
    as numpy says."""
    r = _result(x)
    got = r.quantile("x_usd", q)
    assert not math.isnan(got)
    with np.errstate(invalid="ignore"):
        linear = float(np.quantile(x, q))
    if math.isnan(linear):
        assert got == float(np.quantile(x, q, method="lower"))
    else:
        assert got == linear
    assert float(np.min(x)) <= got <= float(np.max(x))
    if not np.isfinite(x).all():
        assert math.isnan(r.std_error("x_usd"))


@given(
    st.integers(1, 40).flatmap(
        lambda n: st.tuples(
            hnp.arrays(np.float64, n, elements=costs | st.just(math.inf)),
            hnp.arrays(np.float64, n, elements=costs | st.just(math.inf)),
        )
    )
)
def test_prob_less_is_the_share_of_paired_runs_strictly_less(
    pair: tuple[np.ndarray, np.ndarray],
) -> None:
    """``prob_less(m, a, b)`` counts runs ``i`` with ``a[i] < b[i]`` (ties and two infinite
    runs count for neither); with the ties, the three shares add to one."""
    xa, xb = pair
    cmp = Comparison({"a": _result(xa), "b": _result(xb)})
    n = xa.size
    less = sum(1 for i in range(n) if xa[i] < xb[i])
    more = sum(1 for i in range(n) if xb[i] < xa[i])
    ties = n - less - more
    assert cmp.prob_less("x_usd", "a", "b") == less / n
    assert cmp.prob_less("x_usd", "b", "a") == more / n
    assert math.isclose(
        cmp.prob_less("x_usd", "a", "b") + cmp.prob_less("x_usd", "b", "a") + ties / n, 1.0
    )
    assert cmp.prob_less("x_usd", "a", "a") == 0.0


@given(hnp.arrays(np.float64, st.integers(2, 40), elements=st.floats(0.0, 1e12)))
def test_the_comparison_table_prints_each_options_numbers(x: np.ndarray) -> None:
    """Every cell is ``mean ±(1.96 SE) [P5-P95]`` of that option, formatted as the metric's
    unit says; a second option scaled by 2 prints its own numbers, not the first's."""
    a, b = _result(x), _result(2.0 * x)
    cmp = Comparison({"a": a, "b": b})
    table = cmp.as_table(["x_usd"])
    (row,) = table.rows
    assert row[0] == "x_usd"
    for cell, res in zip(row[1:], (a, b), strict=True):
        s = res.stats("x_usd")
        want = (
            f"{format_value('x_usd', s['mean'])} ±{format_error('x_usd', Z95 * s['std_error'])} "
            f"[{format_value('x_usd', s['p5'])}-{format_value('x_usd', s['p95'])}]"
        )
        assert cell == want


@given(hnp.arrays(np.float64, st.integers(1, 50), elements=st.sampled_from([0.0, 1.0])))
def test_the_summary_states_the_share_of_finished_runs(finished: np.ndarray) -> None:
    """The first line gives P(finish) as the mean of ``finished`` when some runs did not
    finish, and says nothing about it when all did."""
    r = Result("r", {"finished": finished, "tco_usd": np.ones(finished.size)})
    head = r.summary(max_price_age_days=None).splitlines()[0]
    share = float(np.mean(finished))
    if share < 1.0:
        assert f"P(finish) {share:.1%}" in head
    else:
        assert "P(finish)" not in head


@pytest.mark.parametrize("bad", [-0.1, 1.1, math.nan])
def test_quantile_levels_outside_zero_one_are_refused(bad: float) -> None:
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        _result(np.arange(5.0)).quantile("x_usd", bad)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.5])
def test_interval_levels_outside_the_open_unit_interval_are_refused(bad: float) -> None:
    with pytest.raises(ValueError, match=r"\(0, 1\)"):
        _result(np.arange(5.0)).interval("x_usd", bad)
