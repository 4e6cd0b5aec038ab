"""Hypothesis over small mixes of workloads: every metric finite, every chip-hour attributed
once and the chargeback summing to the fleet's cost, whatever the mix and the scheduler."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import accelsim as acs


@st.composite
def small_mixes(draw: st.DrawFn) -> acs.Scenario:
    count = draw(st.sampled_from([8, 16, 32]))
    works: list[object] = []
    if draw(st.booleans()):
        chips = draw(st.integers(1, count))
        works.append(
            acs.TrainingRun(params=1e8, tokens=draw(st.sampled_from([1e9, 1e10])), chips=chips)
        )
    if draw(st.booleans()):
        works.append(
            acs.Serving(
                model="llama-3.1-8b",
                precision="fp8",
                rate_rps=draw(st.floats(0.5, 80.0)),
                input_tokens=500,
                output_tokens=100,
                slo=acs.SLO(ttft_ms=2000, tpot_ms=100),
                chips_per_replica=1,
                scaling=draw(st.sampled_from(["fixed", "follow_demand"])),
                chips=draw(st.integers(1, count)),
                horizon_days=3,
            )
        )
    if draw(st.booleans()) or not works:
        works.append(
            acs.JobStream(
                interarrival_hours=acs.Exponential(mean=draw(st.floats(0.05, 5.0))),
                chips=acs.Choice(values=[1, 2, min(4, count)]),
                duration_hours=acs.Exponential(mean=draw(st.floats(0.1, 10.0))),
                priority=draw(st.sampled_from([0, 2])),
            )
        )
    scheduler = draw(st.sampled_from(["fifo", "priority", "priority_preemptive", "backfill"]))
    if scheduler not in ("priority", "priority_preemptive"):
        works = [
            w if isinstance(w, acs.JobStream) else w.model_copy(update={"priority": None})
            for w in works
        ]
        works = [
            w.model_copy(update={"priority": 0}) if isinstance(w, acs.JobStream) else w
            for w in works
        ]
    fleet = [acs.Pool(chip="h100-sxm", count=count, provider="aws")]
    if draw(st.booleans()):  # a second pool of another chip: streams run on both
        fleet.append(
            acs.Pool(chip="a100-80gb", count=draw(st.sampled_from([4, 8])), provider="aws")
        )
    return acs.Scenario(
        name="mix",
        fleet=fleet,
        workloads=works,  # type: ignore[arg-type]
        horizon_days=3,
        scheduler=scheduler,  # type: ignore[arg-type]
        # a job-hour's price applies where jobs queue: a training run or a stream
        assumptions=acs.Assumptions(
            wait_usd_per_job_hour=draw(st.sampled_from([0.0, 5.0]))
            if any(isinstance(w, acs.TrainingRun | acs.JobStream) for w in works)
            else None
        ),
    )


@settings(max_examples=15)
@given(small_mixes(), st.integers(0, 2**16))
def test_small_mixes_are_finite_and_conserve_chip_hours(s: acs.Scenario, seed: int) -> None:
    res = acs.simulate(s, runs=2, seed=seed)
    for m in res.metrics:
        assert np.isfinite(res.samples(m)).all(), m
    held = res.samples("chip_hours")
    np.testing.assert_allclose(held, res.samples("allocated_chip_hours"), rtol=1e-9, atol=1e-6)
    fleet = sum(pool.count for pool in s.fleet) * 72.0
    np.testing.assert_allclose(held + res.samples("idle_chip_hours"), fleet, rtol=1e-12)
    assert (held <= fleet * (1 + 1e-12)).all()
    cost = res.samples("hardware_cost_usd") + res.samples("energy_cost_usd")
    charged = sum(res.samples(m) for m in res.metrics if m.startswith("chargeback_usd."))
    np.testing.assert_allclose(charged + res.samples("unattributed_usd"), cost, rtol=1e-9)
    for m in res.metrics:
        if m.endswith(("slo_attainment", ".finished", "utilization")):
            assert ((res.samples(m) >= 0) & (res.samples(m) <= 1 + 1e-12)).all(), m
