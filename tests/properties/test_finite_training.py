"""Every training scenario gets a finite answer: no metric is inf or nan, anywhere.

Over the whole input space of :mod:`accelsim.strategies` -- every chip with an offer, every
pricing model spot included, fleets up to 100,000 chips, models up to 1e12 parameters and
uncertain failure and preemption rates up to 100x the priors -- each metric of each run is
finite, ``finished`` is 0 or 1, an unfinished run's training time is its horizon and a
finished one's at most that, and interruptions are whole counts below the horizon's worth
of events (DESIGN.md: "no metric is ever inf or nan").
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import accelsim as acs
from accelsim import strategies as acs_st

_HOURS_PER_DAY = 24.0


def _check_finite(res: acs.Result, horizon_days: float) -> None:
    bad = [m for m in res.metrics if not np.isfinite(res.samples(m)).all()]
    assert not bad, f"non-finite metrics: {bad}"
    finished = res.samples("finished")
    assert set(np.unique(finished)) <= {0.0, 1.0}
    days = res.samples("training_days")
    np.testing.assert_allclose(days[finished == 0], horizon_days, rtol=1e-12)
    assert (days[finished == 1] <= horizon_days).all()
    assert (res.samples("interruptions") >= 0).all()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(
    acs_st.scenarios(
        workload=acs_st.training_runs(max_params=1e12, max_tokens=3e13),
        fleet=acs_st.pools(max_count=100_000),
        assumptions=acs_st.assumptions(failure_rate_per_chip_hour=(0.0, 1e-3)),
    ),
    st.integers(0, 2**32 - 1),
)
def test_every_training_metric_is_finite(scenario: acs.Scenario, seed: int) -> None:
    res = acs.simulate(scenario, runs=64, seed=seed, engine="analytic")
    _check_finite(res, scenario.training.horizon_days)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["h100-sxm", "tpu-v5e", "tpu-v6e", "tpu-v5p"]),
    st.sampled_from([128, 256, 1024, 16_384, 100_000]),
    st.floats(1.0, 3650.0),
    st.one_of(st.none(), st.floats(0.0, 1.0)),
    st.integers(0, 2**32 - 1),
)
def test_spot_fleets_of_any_size_are_finite(
    chip: str, count: int, horizon_days: float, preemptions: float | None, seed: int
) -> None:
    """The scenarios of issue 14 (spot on GCP from 128 to 100,000 chips), any horizon, the
    preemption prior or a rate up to 1 per chip-hour (18x the prior's top)."""
    scenario = acs.Scenario(
        name="spot",
        workload=acs.TrainingRun(params=70e9, tokens=2e12, horizon_days=horizon_days),
        fleet=[acs.Pool(chip=chip, count=count, provider="gcp", pricing="spot")],
        assumptions=acs.Assumptions(spot_preemptions_per_hour=preemptions),
    )
    res = acs.simulate(scenario, runs=64, seed=seed)
    _check_finite(res, horizon_days)
    unfinished = res.samples("finished") == 0
    # censored chip-hours are the whole horizon of the fleet
    np.testing.assert_allclose(
        res.samples("chip_hours")[unfinished], count * horizon_days * _HOURS_PER_DAY
    )
