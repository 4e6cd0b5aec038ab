"""Per-team metrics of a lone trace scenario (``Scenario(workload=Trace(...))`` whose file has
a user column): the same metrics, by the same code, as a trace's teams in a mix.

Names: ``chip_hours.trace.<team>``, ``chargeback_usd.trace.<team>``,
``trace.<team>.jobs_arrived`` / ``.jobs_completed`` / ``.mean_wait_hours`` (``trace`` is the
lone trace's workload name, so a team never reads as a fleet metric or a workload).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import accelsim as acs
from accelsim.errors import AccelsimError

TEAMS = ("trace.a_1", "trace.b")


def trace_file(tmp_path: Path, users: list[str] | None = None) -> Path:
    """40 jobs every 30 min alternating team a/1 (8 chips) and b (2 chips), 3 h each."""
    users = users or ["a/1" if j % 2 else "b" for j in range(40)]
    rows = [f"{j * 1800},{8 if j % 2 else 2},{3 * 3600},{u}" for j, u in enumerate(users)]
    path = tmp_path / "t.csv"
    path.write_text("\n".join(["submit,chips,duration,user", *rows]) + "\n")
    return path


def lone(path: Path, **kw: object) -> acs.Scenario:
    base: dict[str, object] = {
        "name": "lab",
        "fleet": [
            acs.Pool(chip="h100-sxm", count=16, provider="aws"),
            acs.Pool(chip="a100-80gb", count=8, provider="aws"),
        ],
        "workload": acs.Trace(path=str(path), columns={"user": "user"}),
        "horizon_days": 2,
        # acquired for the trace: a lead time of 0, as a mix's fleet in service from day 0
        "assumptions": acs.Assumptions(lead_time_days=0.0),
    }
    base.update(kw)
    return acs.Scenario(**base)  # type: ignore[arg-type]


def test_a_lone_traces_teams_add_up_to_the_trace(tmp_path: Path) -> None:
    res = acs.simulate(lone(trace_file(tmp_path)), runs=2, seed=1, progress=False)
    held = sum(res.samples(f"chip_hours.{t}") for t in TEAMS)
    allocated = res.samples("allocated_chip_hours_pool0") + res.samples(
        "allocated_chip_hours_pool1"
    )
    np.testing.assert_allclose(held, allocated, rtol=1e-12)
    np.testing.assert_array_equal(res.samples("trace.a_1.jobs_arrived"), 20.0)
    np.testing.assert_array_equal(
        res.samples("trace.a_1.jobs_arrived") + res.samples("trace.b.jobs_arrived"),
        res.samples("jobs_arrived"),
    )
    np.testing.assert_array_equal(
        res.samples("trace.a_1.jobs_completed") + res.samples("trace.b.jobs_completed"),
        res.samples("jobs_completed"),
    )
    # the teams' waits, weighted by their jobs, are the trace's mean wait
    n = {t: res.samples(f"{t}.jobs_arrived") for t in TEAMS}
    weighted = sum(n[t] * res.samples(f"{t}.mean_wait_hours") for t in TEAMS) / sum(n.values())
    np.testing.assert_allclose(weighted, res.samples("mean_wait_hours"), rtol=1e-9)
    # chargebacks, pool by pool, sum to the fleet's hardware and energy
    charged = sum(res.samples(f"chargeback_usd.{t}") for t in TEAMS)
    fleet = res.samples("hardware_cost_usd") + res.samples("energy_cost_usd")
    np.testing.assert_allclose(charged, fleet, rtol=1e-9)
    # team a's jobs are 4x larger (the A100 pool is slower, so not exactly 4x the chip-hours)
    assert (res.samples("chip_hours.trace.a_1") > 2 * res.samples("chip_hours.trace.b")).all()


def test_a_lone_traces_teams_equal_the_same_trace_alone_in_a_mix(tmp_path: Path) -> None:
    """One code path: the lone scenario and a mix of only that trace give the same teams."""
    s = lone(trace_file(tmp_path))
    assert isinstance(s.workload, acs.Trace)
    mix = s.model_copy(
        update={"workload": None, "workloads": [s.workload], "assumptions": acs.Assumptions()}
    )
    mix = acs.Scenario.model_validate(mix.model_dump())
    a = acs.simulate(s, runs=2, seed=3, progress=False)
    b = acs.simulate(mix, runs=2, seed=3, progress=False)
    for team in TEAMS:
        for metric in (
            f"chip_hours.{team}",
            f"chargeback_usd.{team}",
            f"{team}.jobs_arrived",
            f"{team}.jobs_completed",
            f"{team}.mean_wait_hours",
        ):
            np.testing.assert_allclose(a.samples(metric), b.samples(metric), rtol=1e-12)


def test_teams_only_where_the_columns_map_a_user_column(tmp_path: Path) -> None:
    """A header merely named ``user`` (a Helios log's hundreds of users) adds no metrics."""
    path = trace_file(tmp_path)
    s = lone(path, workload=acs.Trace(path=str(path)))
    res = acs.simulate(s, runs=1, seed=1, progress=False)
    assert not [m for m in res.metrics if m.startswith(("chip_hours.", "trace.", "chargeback"))]
    mapped = acs.simulate(lone(path), runs=1, seed=1, progress=False)
    for metric in res.metrics:  # the same run otherwise
        np.testing.assert_array_equal(res.samples(metric), mapped.samples(metric))


def test_two_users_reading_the_same_are_an_error(tmp_path: Path) -> None:
    path = trace_file(tmp_path, ["a/1" if j % 2 else "a_1" for j in range(40)])
    with pytest.raises(AccelsimError, match=r"'a/1' and 'a_1' read the same"):
        acs.simulate(lone(path), runs=1, seed=1, progress=False)
