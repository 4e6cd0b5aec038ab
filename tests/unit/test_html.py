"""Notebook display: results as escaped HTML tables with the text summaries' own cells."""

from __future__ import annotations

import html as html_lib
import re

import numpy as np
import pytest

import accelsim as acs
from accelsim.results import Table
from accelsim.results._html import table_html

HOSTILE = "<script>alert(1)</script>"


def _cells(page: str) -> list[list[str]]:
    """Each table row's cells (th and td), unescaped."""
    return [
        [html_lib.unescape(c) for c in re.findall(r"<t[hd]>(.*?)</t[hd]>", row, re.S)]
        for row in re.findall(r"<tr>(.*?)</tr>", page, re.S)
    ]


@pytest.fixture(scope="module")
def scenario() -> acs.Scenario:
    return acs.Scenario(
        name=HOSTILE,
        workload=acs.TrainingRun(params=7e9, tokens=1e11),
        fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")],
    )


def test_result_html_is_the_summary_escaped(scenario: acs.Scenario) -> None:
    res = acs.simulate(scenario, runs=100, seed=1)
    page = res._repr_html_()
    assert "<script" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    table = res.as_table()
    assert _cells(page) == [list(table.header), *(list(r) for r in table.rows)]
    assert "±" in _cells(page)[1][1]  # the mean with its 95 % Monte Carlo error


def test_comparison_html_has_table_and_recommendation(scenario: acs.Scenario) -> None:
    other = scenario.model_copy(
        update={"name": "tpu", "fleet": [acs.Pool(chip="tpu-v5p", count=128, provider="gcp")]}
    )
    cmp = acs.compare([scenario, other], runs=100, seed=2)
    page = cmp._repr_html_()
    assert "<script" not in page
    table = cmp.as_table()
    assert _cells(page) == [list(table.header), *(list(r) for r in table.rows)]
    rec = cmp.recommendation
    text = html_lib.unescape(page)
    assert f"Recommendation: {rec.choice}" in text
    assert all(reason in text for reason in rec.rationale)


def test_sweep_html_one_row_per_point_and_metric(scenario: acs.Scenario) -> None:
    sw = acs.sweep(scenario, grid={"fleet.0.count": [64, 128]}, runs=50, seed=1)
    rows = _cells(sw._repr_html_())[1:]
    assert len(rows) == len(sw.rows)
    first = sw.rows[0]
    assert rows[0][0] == "fleet.0.count=64"
    assert rows[0][1] == first["metric"]
    assert rows[0][2].startswith(acs.results.format_value(first["metric"], first["mean"]) + " ± ")


def test_sensitivity_html_every_method(scenario: acs.Scenario) -> None:
    s = scenario.model_copy(update={"name": "s"})
    rho = acs.sensitivity(s, "tco_usd", runs=200, seed=1)
    rows = _cells(rho._repr_html_())[1:]
    assert rows == [[n, f"{r:+.2f}"] for n, r in rho]
    tor = acs.sensitivity(s, "tco_usd", runs=50, seed=1, method="tornado")
    assert [r[0] for r in _cells(tor._repr_html_())[1:]] == list(tor.names)
    sob = acs.sensitivity(s, "tco_usd", runs=64, seed=1, method="sobol")
    order = [sob.names[i] for i in np.argsort(-sob.total_order, kind="stable")]
    assert [r[0] for r in _cells(sob._repr_html_())[1:]] == order


def test_table_html_escapes_every_cell() -> None:
    page = table_html(Table(("a", HOSTILE), ((HOSTILE, "<b>1</b>"),), HOSTILE, HOSTILE))
    assert "<script" not in page
    assert "<b>" not in page
    assert page.count("&lt;script&gt;") == 4
