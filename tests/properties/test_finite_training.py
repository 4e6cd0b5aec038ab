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
from accelsim.catalog import Pricing

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
    st.one_of(st.none(), st.floats(0.0, 1e5)),
    st.one_of(st.none(), st.integers(0, 10**9)),
    st.one_of(st.none(), st.floats(1e-3, 3650.0)),
    st.integers(0, 2**32 - 1),
)
def test_spot_fleets_of_any_size_are_finite(
    chip: str,
    count: int,
    horizon_days: float,
    preemptions: float | None,
    return_hours: float | None,
    after_preemptions: int | None,
    after_days: float | None,
    seed: int,
) -> None:
    """The scenarios of issue 14 (spot on GCP from 128 to 100,000 chips), any horizon, the
    preemption prior or a rate up to 1 per chip-hour (18x the prior's top), waits for spot
    capacity from none to 1e5 h each, and any fallback to on-demand (none, at the 0th to
    the 1e9-th preemption, after 1.4 minutes to ten years on spot)."""
    scenario = acs.Scenario(
        name="spot",
        workload=acs.TrainingRun(params=70e9, tokens=2e12, horizon_days=horizon_days),
        fleet=[
            acs.Pool(
                chip=chip,
                count=count,
                provider="gcp",
                pricing="spot",
                fallback_after_preemptions=after_preemptions,
                fallback_after_days=after_days,
            )
        ],
        assumptions=acs.Assumptions(
            spot_preemptions_per_hour=preemptions, spot_return_hours=return_hours
        ),
    )
    res = acs.simulate(scenario, runs=64, seed=seed)
    _check_finite(res, horizon_days)
    unfinished = res.samples("finished") == 0
    # censored chip-hours: the fleet over the share of the horizon it is not waiting for
    # spot capacity (the whole horizon without waits)
    fleet_hours = count * horizon_days * _HOURS_PER_DAY
    censored = res.samples("chip_hours")[unfinished]
    assert (censored <= fleet_hours * (1 + 1e-12)).all()
    if return_hours == 0:
        np.testing.assert_allclose(censored, fleet_hours)
    assert (res.samples("recovery_wait_days") <= res.samples("training_days")).all()
    if after_preemptions is not None or after_days is not None:
        on_demand = res.samples("fallback_chip_hours")
        assert (on_demand <= res.samples("chip_hours") * (1 + 1e-12)).all()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(
        [
            ("h100-sxm", "on_demand"),
            ("h100-sxm", "commit_1y"),
            ("tpu-v5p", "on_demand"),
            ("tpu-v6e", "commit_1y"),
            ("b200", "on_demand"),
        ]
    ),
    st.sampled_from([8, 1024, 16_384, 100_000]),
    st.integers(0, 10_000),
    st.floats(0.0, 1e5),
    st.floats(0.0, 1e-3),
    st.integers(0, 2**32 - 1),
)
def test_spare_hosts_at_any_extreme_are_finite(
    offer: tuple[str, Pricing], count: int, spares: int, repair: float, rate: float, seed: int
) -> None:
    """Spare hosts from none to 10,000, repairs from instant to 1e5 h, failures up to 1e-3
    per chip-hour, on fleets up to 100,000 chips: every metric finite, the waits inside the
    training time, the spares' chips in chip_hours."""
    chip, pricing = offer
    pool = acs.Pool(chip=chip, count=count, provider="gcp", pricing=pricing, spare_hosts=spares)
    scenario = acs.Scenario(
        name="spares",
        workload=acs.TrainingRun(params=7e9, tokens=1e11, horizon_days=365.0),
        fleet=[pool],
        assumptions=acs.Assumptions(repair_hours=repair, failure_rate_per_chip_hour=rate),
    )
    res = acs.simulate(scenario, runs=64, seed=seed)
    _check_finite(res, 365.0)
    assert (res.samples("recovery_wait_days") <= res.samples("training_days")).all()
    held = count * 24.0 * res.samples("training_days")
    assert (res.samples("chip_hours") >= held * (1 - 1e-12)).all()
