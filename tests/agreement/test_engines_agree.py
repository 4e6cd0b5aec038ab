"""The analytic and DES engines agree in distribution on a dedicated-fleet training run.

Both engines turn the same inputs into usage; only the failure-laden training time is
produced differently (an exact vectorised sampler vs an event-by-event simulation). The
two studies use different seeds, so their samples are independent, and a two-sample KS
test's p-value is uniform when the engines agree: p > 0.01 fails a correct pair at one
seed in a hundred, and these seeds are fixed.
"""

from __future__ import annotations

import pytest
from scipy.stats import ks_2samp

import accelsim as acs

RUNS = 1500


@pytest.fixture(scope="module")
def both() -> tuple[acs.Result, acs.Result]:
    s = acs.Scenario(
        name="dedicated",
        workload=acs.TrainingRun(params=7e9, tokens=1e12),
        fleet=[acs.Pool(chip="h100-sxm", count=512, provider="aws")],
        # About 7 interruptions per run: enough failures for the engines to differ if wrong.
        assumptions=acs.Assumptions(failure_rate_per_chip_hour=2e-4, restart_hours=0.5),
    )
    analytic = acs.simulate(s, runs=RUNS, seed=101, engine="analytic")
    des = acs.simulate(s, runs=RUNS, seed=202, engine="des")
    return analytic, des


@pytest.mark.parametrize("metric", ["time_to_train_days", "training_days", "tco_usd"])
def test_engines_agree_in_distribution(both: tuple[acs.Result, acs.Result], metric: str) -> None:
    analytic, des = both
    assert des.engine == "des"
    assert ks_2samp(analytic.samples(metric), des.samples(metric)).pvalue > 0.01


def test_failures_actually_happen(both: tuple[acs.Result, acs.Result]) -> None:
    analytic, des = both
    assert analytic.mean("interruptions") > 3
    assert des.mean("interruptions") > 3


def test_engines_agree_when_only_failures_vary() -> None:
    """Everything fixed but the failure process, so the KS test sees only the part the two
    engines compute differently (lost work, restarts, failures during restarts)."""
    s = acs.Scenario(
        name="failures-only",
        workload=acs.TrainingRun(params=7e9, tokens=1e12),
        fleet=[acs.Pool(chip="h100-sxm", count=512, provider="aws")],
        assumptions=acs.Assumptions(
            mfu=0.4,
            badput_fraction=0.0,
            failure_rate_per_chip_hour=3e-4,
            checkpoint_write_hours=0.1,
            restart_hours=0.5,
            checkpoint_interval_hours=2.0,
        ),
    )
    analytic = acs.simulate(s, runs=RUNS, seed=7, engine="analytic")
    des = acs.simulate(s, runs=RUNS, seed=8, engine="des")
    for metric in ("training_days", "interruptions"):
        assert ks_2samp(analytic.samples(metric), des.samples(metric)).pvalue > 0.01, metric
