"""Common random numbers across options and sweep points, as properties of whole studies.

``compare`` and ``sweep`` give every option the same root seed, and every uncertain input
and DES stream is addressed by name and run (STYLE.md, pattern 5). So:

- an option compared with a copy of itself gets bit-identical samples of every metric,
  and ``prob_less`` is 0 both ways (no run is strictly less than itself);
- two options that share an input draw the same value of it in every run;
- in a job stream whose arrivals do not depend on the fleet, adding chips can only
  shorten every job's FIFO wait (the Kiefer-Wolfowitz recursion is monotone in the
  servers), so with paired runs the mean wait falls run by run, not just on average;
- a sweep point's samples are the samples of ``simulate`` on that point with the seed.

Each of these fails if a stream is keyed by something other than the input's name and
the run (the option's position, the pool count, a global counter), which would silently
turn a paired comparison into an unpaired one.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.same_results import assert_same

import accelsim as acs
from accelsim import strategies as acs_st

RUNS = 16


@settings(max_examples=12)
@given(acs_st.scenarios(), st.integers(0, 2**32 - 1))
def test_an_option_against_its_copy_is_identical_run_for_run(
    scenario: acs.Scenario, seed: int
) -> None:
    """Same scenario twice, under two names: every metric and input bit-identical, and
    ``prob_less`` 0 both ways, for every metric."""
    copy = scenario.model_copy(update={"name": "copy"})
    cmp = acs.compare({"a": scenario, "b": copy}, runs=RUNS, seed=seed, progress=False)
    a, b = cmp["a"], cmp["b"]
    assert a.metrics == b.metrics
    for m in a.metrics:
        assert a.samples(m).tobytes() == b.samples(m).tobytes(), m
        assert cmp.prob_less(m, "a", "b") == 0.0
        assert cmp.prob_less(m, "b", "a") == 0.0
    assert list(a.inputs) == list(b.inputs)
    for name in a.inputs:
        assert a.inputs[name].tobytes() == b.inputs[name].tobytes(), name
    rec = cmp.recommendation
    assert not rec.decided  # identical options: a tie, never a confident choice
    if rec.meets_goals:  # both complete their work: a tie on cost
        assert rec.prob_cheaper == 0.0
    else:  # neither completes (issue 32): no cost comparison, the same closest option
        assert rec.choice == "a"


@settings(max_examples=12)
@given(acs_st.scenarios(), st.integers(1, 4), st.integers(0, 2**32 - 1))
def test_options_differing_in_fleet_size_share_every_common_input(
    scenario: acs.Scenario, factor: int, seed: int
) -> None:
    """A larger fleet of the same chip and offer: every input both options draw has the
    same values in every run (paired draws), and the study is the same length."""
    pool = scenario.fleet[0]
    bigger = scenario.model_copy(
        update={"fleet": [pool.model_copy(update={"count": pool.count * (factor + 1)})]}
    )
    cmp = acs.compare({"small": scenario, "big": bigger}, runs=RUNS, seed=seed, progress=False)
    small, big = cmp["small"].inputs, cmp["big"].inputs
    shared = set(small) & set(big)
    assert shared  # the priors of the chip, the wages...: most inputs are shared
    for name in sorted(shared):
        assert small[name].tobytes() == big[name].tobytes(), name


def _stream(count: int) -> acs.Scenario:
    """One-chip jobs arriving every 2 h on average, 3 h of work, nothing lost."""
    return acs.Scenario(
        name=f"stream-{count}",
        workload=acs.JobStream(
            interarrival_hours=acs.Exponential(mean=2.0),
            chips=1,
            duration_hours=acs.Exponential(mean=3.0),
        ),
        fleet=[acs.Pool(chip="h100-sxm", count=count, provider="gcp", pricing="on_demand")],
        assumptions=acs.Assumptions(failure_rate_per_chip_hour=0.0, lead_time_days=0),
        horizon_days=20,
        scheduler="fifo",
    )


@settings(max_examples=6)
@given(st.integers(2, 4), st.integers(1, 3), st.integers(0, 2**32 - 1))
def test_more_chips_never_raise_a_runs_fifo_wait_with_one_chip_jobs(
    count: int, extra: int, seed: int
) -> None:
    """Paired runs of a FIFO stream on ``count`` and ``count + extra`` chips: the same
    arrivals and works in run ``i`` (common random numbers), so every job's wait, hence
    the run's mean wait, can only fall (``test_des_policy_properties`` proves the
    pathwise claim on the engine). Every run's job count is the same at both sizes: the
    arrivals do not depend on the fleet."""
    sw = acs.sweep(
        _stream(count),
        grid={"fleet.0.count": [count, count + extra]},
        runs=RUNS,
        seed=seed,
        metrics=("mean_wait_hours", "jobs_arrived"),
        progress=False,
    )
    few, more = sw.samples(0, "mean_wait_hours"), sw.samples(1, "mean_wait_hours")
    assert np.all(more <= few + 1e-9)
    assert np.array_equal(sw.samples(0, "jobs_arrived"), sw.samples(1, "jobs_arrived"))
    # and each point is exactly the study of that scenario with the sweep's seed
    again = acs.simulate(_stream(count + extra), runs=RUNS, seed=seed, progress=False)
    for m in ("mean_wait_hours", "jobs_arrived", "tco_usd"):
        assert sw.samples(1, m).tobytes() == again.samples(m).tobytes()


def test_the_sweep_table_is_the_summary_of_each_points_samples() -> None:
    """Each row's statistics are numpy's on that point's samples: mean, std_error with
    ddof=1, and linear-interpolation P5/P50/P95."""
    sw = acs.sweep(
        _stream(3),
        grid={"fleet.0.count": [3, 4, 6]},
        runs=RUNS,
        seed=4,
        metrics=("mean_wait_hours", "utilization", "tco_usd"),
        progress=False,
    )
    assert len(sw.rows) == 3 * 3
    for row in sw.rows:
        x = sw.samples({"fleet.0.count": row["fleet.0.count"]}, row["metric"])
        assert row["runs"] == RUNS
        assert math.isclose(row["mean"], float(np.mean(x)), rel_tol=1e-12, abs_tol=1e-12)
        se = float(np.std(x, ddof=1)) / math.sqrt(RUNS)
        assert math.isclose(row["std_error"], se, rel_tol=1e-12, abs_tol=1e-12)
        for q, key in ((0.05, "p5"), (0.5, "p50"), (0.95, "p95")):
            assert row[key] == float(np.quantile(x, q))
    frame = sw.to_pandas()
    assert len(frame) == len(sw.rows)
    assert list(frame["mean"]) == [r["mean"] for r in sw.rows]


def test_compare_in_a_different_order_or_alone_gives_the_same_option() -> None:
    """An option's samples do not depend on which other options it is compared with, or in
    what order: its streams are keyed by its inputs' names, not its place."""
    a, b = _stream(3), _stream(5)
    ab = acs.compare({"a": a, "b": b}, runs=8, seed=9, progress=False)
    ba = acs.compare({"b": b, "a": a}, runs=8, seed=9, progress=False)
    alone = acs.simulate(a, runs=8, seed=9, progress=False)
    assert_same(ab["a"], ba["a"])
    assert_same(ab["a"], alone)
    assert_same(ab["b"], ba["b"])
