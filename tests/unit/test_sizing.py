"""size_fleet: its argument checks, its probabilities, and its table (issue 17, item 2).

The optimum against theory (Erlang C) is in tests/validation/test_wait_cost.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import accelsim as acs
from accelsim.results import prob_lowest

# The overload warning (tests/unit/test_des_*.py test it) is expected here: sizing
# sweeps fleets small enough to be overloaded on purpose.
pytestmark = pytest.mark.filterwarnings("ignore::accelsim.engines.OverloadWarning")


def stream(price: float | None = 20.0) -> acs.Scenario:
    return acs.Scenario(
        name="research",
        workload=acs.JobStream(
            interarrival_hours=acs.Exponential(mean=1.0),
            chips=acs.Choice(values=[1, 2]),
            duration_hours=acs.Exponential(mean=1.5),
        ),
        fleet=[acs.Pool(chip="h100-sxm", count=4, provider="aws")],
        horizon_days=3,
        warmup_days=0.5,
        assumptions=acs.Assumptions(lead_time_days=0.0, wait_usd_per_job_hour=price),
    )


def test_sizing_reads_its_own_sweep() -> None:
    sizing = acs.size_fleet(stream(), counts=[4, 2, 3], runs=12, seed=5)
    assert sizing.path == "fleet.0.count"
    assert sizing.counts == (4, 2, 3)  # the order given
    results = sizing.sweep.results
    assert [r.samples("tco_usd").size for r in results] == [12, 12, 12]
    means = [r.mean("tco_usd") for r in results]
    assert sizing.mean_tco_usd == tuple(means)
    assert sizing.std_error_usd == tuple(r.std_error("tco_usd") for r in results)
    assert sizing.best_count == sizing.counts[int(np.argmin(means))]
    tco = np.stack([r.samples("tco_usd") for r in results])
    cheapest = np.argmin(tco, axis=0)  # no ties with continuous waits
    for i in range(3):
        assert sizing.prob_cheapest[i] == float(np.mean(cheapest == i))
    assert sum(sizing.prob_cheapest) == pytest.approx(1.0, rel=1e-12)


def test_tied_runs_share_their_probability() -> None:
    tco = np.array([[1.0, 2.0, 5.0, 3.0], [1.0, 1.0, 5.0, 4.0], [2.0, 3.0, 5.0, 3.0]])
    # run 0: counts 0 and 1 tie; run 1: count 1; run 2: all three tie; run 3: 0 and 2 tie
    expected = [(0.5 + 1 / 3 + 0.5) / 4, (0.5 + 1 + 1 / 3) / 4, (1 / 3 + 0.5) / 4]
    np.testing.assert_allclose(prob_lowest(tco), expected, rtol=1e-12)


def test_free_waiting_makes_the_smallest_fleet_cheapest_and_says_so() -> None:
    sizing = acs.size_fleet(stream(price=None), counts=[2, 3, 4], runs=6, seed=1)
    assert sizing.best_count == 2  # waiting is free: the smallest fleet is cheapest
    assert sizing.prob_cheapest == (1.0, 0.0, 0.0)
    assert "Waiting is free" in sizing.table()


def test_table_and_html() -> None:
    sizing = acs.size_fleet(stream(), counts=[2, 3], runs=6, seed=2)
    table = sizing.as_table()
    assert table.header == (
        "chips",
        "mean TCO",
        "mean hardware",
        "mean wait cost",
        "mean wait",
        "P(cheapest)",
    )
    best_rows = [r for r in table.rows if r[0].endswith("(best)")]
    assert len(best_rows) == 1
    assert best_rows[0][0] == f"{sizing.best_count:,} (best)"
    assert "Waiting is free" not in str(table)
    assert str(table) == sizing.table()
    html = sizing._repr_html_()
    assert "<table>" in html
    assert "P(cheapest)" in html


@pytest.mark.parametrize(
    ("counts", "pool", "match"),
    [
        ([], 0, "at least one count"),
        ([2, 2], 0, "distinct positive"),
        ([0, 2], 0, "distinct positive"),
        ([2, 3], 1, "pool=1 is not a pool"),
        ([1, 2], 0, "could never start"),  # a 2-chip job on a 1-chip pool, from sweep
    ],
)
def test_bad_arguments_are_errors(counts: list[int], pool: int, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        acs.size_fleet(stream(), counts=counts, pool=pool, runs=2, seed=1)
