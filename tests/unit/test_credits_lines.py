"""Credits are their own line wherever the TCO breakdown is shown (issue 16): the report's
cost table and figure, and ``size_fleet``'s table. ``credits_usd`` is negative and ``tco_usd``
is the sum of its lines, so the parts less the credits are the TCO."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.container import BarContainer

import accelsim as acs
from accelsim import plot
from accelsim.report._tables import cost_grid
from accelsim.results import format_value

matplotlib.use("Agg")

pytestmark = pytest.mark.filterwarnings("ignore::accelsim.engines.OverloadWarning")


def _stream(credits: list[acs.Credit]) -> acs.Scenario:
    return acs.Scenario(
        name="research",
        workload=acs.JobStream(
            interarrival_hours=acs.Exponential(mean=1.0),
            chips=1,
            duration_hours=acs.Exponential(mean=1.5),
        ),
        fleet=[acs.Pool(chip="h100-sxm", count=3, provider="aws")],
        horizon_days=3,
        warmup_days=0.5,
        assumptions=acs.Assumptions(lead_time_days=0.0, wait_usd_per_job_hour=20.0),
        credits=credits,
    )


@pytest.fixture(scope="module")
def cmp() -> acs.Comparison:
    return acs.compare(
        {"credited": _stream([acs.Credit(usd=300.0)]), "paying": _stream([])},
        runs=20,
        seed=3,
    )


@pytest.fixture(autouse=True)
def _close() -> Iterator[None]:
    yield
    plt.close("all")


def test_the_report_cost_table_has_a_credits_line(cmp: acs.Comparison) -> None:
    grid = cost_grid({o: cmp[o] for o in cmp.options})
    assert grid is not None
    labels = [row[0].main for row in grid.rows]
    assert labels[-2:] == ["credits (offset)", "total (TCO)"]
    credits = cmp["credited"].mean("credits_usd")
    assert credits < 0
    cell = grid.rows[-2][1].main
    assert cell.startswith(format_value("credits_usd", credits) + " (")  # -$300 (-x%)
    assert cell.startswith("-$")
    assert grid.rows[-2][2].main == "—"  # the option without credits has no such line
    assert "before credits" in grid.caption


def test_the_parts_less_the_credits_are_the_tco(cmp: acs.Comparison) -> None:
    res = cmp["credited"]
    parts = [m for m in res.metrics if m.endswith("_cost_usd")] + ["credits_usd"]
    total = sum(res.samples(m) for m in parts)
    np.testing.assert_allclose(total, res.samples("tco_usd"), rtol=1e-12, atol=1e-9)


def test_the_breakdown_figure_draws_credits_below_zero(cmp: acs.Comparison) -> None:
    ax = plot.tco_breakdown(cmp)
    bars = {c.get_label(): c for c in ax.containers if isinstance(c, BarContainer)}
    assert "credits" in bars
    for i, opt in enumerate(cmp.options):
        res = cmp[opt]
        credit = bars["credits"].patches[i]
        expected = res.mean("credits_usd") if "credits_usd" in res.metrics else 0.0
        assert credit.get_y() == 0.0
        assert credit.get_height() == pytest.approx(expected, rel=1e-12)
        stacked = sum(b.patches[i].get_height() for k, b in bars.items() if k != "credits")
        # the positive stack less the credits is the mean TCO
        assert stacked + expected == pytest.approx(res.mean("tco_usd"), rel=1e-9)
    net = [c for c in ax.collections if c.get_label() == "net TCO"]
    assert len(net) == 1
    np.testing.assert_allclose(
        net[0].get_offsets()[:, 1], [cmp[o].mean("tco_usd") for o in cmp.options], rtol=1e-12
    )


def test_without_credits_the_figure_has_no_credits_bar() -> None:
    res = acs.simulate(_stream([]), runs=6, seed=1)
    ax = plot.tco_breakdown({"paying": res})
    labels = [c.get_label() for c in ax.containers if isinstance(c, BarContainer)]
    assert "credits" not in labels
    assert not [c for c in ax.collections if c.get_label() == "net TCO"]


def test_size_fleet_prints_credits_as_their_own_column() -> None:
    sizing = acs.size_fleet(_stream([acs.Credit(usd=300.0)]), counts=[2, 3], runs=6, seed=2)
    table = sizing.as_table()
    assert "mean credits" in table.header
    col = table.header.index("mean credits")
    for row, res in zip(table.rows, sizing.sweep.results, strict=True):
        assert row[col] == format_value("credits_usd", res.mean("credits_usd"))
        assert row[col].startswith("-$")
    plain = acs.size_fleet(_stream([]), counts=[2, 3], runs=6, seed=2)
    assert "mean credits" not in plain.as_table().header


def test_the_report_page_shows_the_credits_line(cmp: acs.Comparison, tmp_path: Path) -> None:
    html = acs.report(cmp, tmp_path / "r.html", sensitivity=False).read_text(encoding="utf-8")
    assert "credits (offset)" in html
    assert "$-" not in html
