"""The serving request DES checks a run's expected requests against its event budget and the
memory limit before it draws a single arrival.

Before, a 365-day horizon allocated 1.17 GiB of arrivals and died, and ``rate_rps=1e9``
tried 629 TiB; the event budget was only checked while the DES played. The CLI cases run in a
child under a memory cap and a time limit (tests/bounded.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tests.bounded import assert_refused, cli

import accelsim as acs
from accelsim.engines.serving._inputs import Demand
from accelsim.engines.serving._layout import planned_setup
from accelsim.engines.serving._requests import (
    RequestBudgetError,
    check_request_budget,
    draw_requests,
    expected_requests,
)
from accelsim.errors import AccelsimError

SCENARIO = """\
name: s
workload:
  kind: serving
  model: llama-3.1-8b
  precision: fp8
  rate_rps: {rate}
  input_tokens: 500
  output_tokens: 100
  slo: {{ttft_ms: 2000, tpot_ms: 100}}
  horizon_days: {days}
fleet: [{{chip: h100-sxm, count: 8, provider: aws}}]
"""


def _write(tmp_path: Path, rate: float, days: float) -> Path:
    path = tmp_path / "serve.yaml"
    path.write_text(SCENARIO.format(rate=rate, days=days), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("rate", "days", "expected"),
    [
        (20, 365, "630,720,000 requests"),
        (20, 3660, "6,324,480,000"),
        (1e9, 1, "86,400,000,000,000"),
    ],
)
def test_a_run_over_the_event_budget_is_refused_before_any_arrival(
    tmp_path: Path, rate: float, days: float, expected: str
) -> None:
    proc = cli("run", str(_write(tmp_path, rate, days)), "--engine", "des", "--runs", "1")
    assert_refused(proc, "would pass its 50,000,000 events", expected, "engine='analytic'")


def test_a_run_whose_requests_would_not_fit_in_memory_is_refused(tmp_path: Path) -> None:
    """17 million requests are under the event budget but over the child's memory limit."""
    proc = cli("run", str(_write(tmp_path, 5, 40)), "--engine", "des", "--runs", "1")
    assert_refused(proc, "17,280,000 requests expected", "GiB", "a study may use")


def test_expected_requests_is_the_mean_of_the_drawn_arrivals(tmp_path: Path) -> None:
    """Oracle: a Poisson count's mean. 40 draws of a ~7,200-request horizon (1.5 h at
    2 rps: the last hour counted in half) average within 5 standard errors of it."""
    s = acs.load_scenario(_write(tmp_path, 2, 1.5 / 24))
    setup = planned_setup(s, acs.catalog.active())
    demand = Demand(np.array([2.0]), np.array([0.0]), np.array([1.0])).hourly_rps(setup)[0]
    mean = expected_requests(setup, demand)
    assert mean == pytest.approx(2.0 * 3600 * 1.5)
    counts = [
        len(
            draw_requests(
                setup, demand, 1.0, np.random.default_rng(k), max_events=10**6
            ).arrival_hours
        )
        for k in range(40)
    ]
    assert abs(np.mean(counts) - mean) <= 5 * np.sqrt(mean / len(counts))


def test_the_check_refuses_just_over_the_budget_and_accepts_just_under(tmp_path: Path) -> None:
    s = acs.load_scenario(_write(tmp_path, 2, 1.5 / 24))
    setup = planned_setup(s, acs.catalog.active())
    demand = Demand(np.array([2.0]), np.array([0.0]), np.array([1.0])).hourly_rps(setup)[0]
    check_request_budget(setup, demand, max_events=10_800)
    with pytest.raises(RequestBudgetError, match="10,800 requests expected") as info:
        check_request_budget(setup, demand, max_events=10_799)
    assert isinstance(info.value, AccelsimError)
    assert isinstance(info.value, RuntimeError)
