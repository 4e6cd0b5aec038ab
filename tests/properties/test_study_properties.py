"""Invariants of whole studies: costs, prices, engineering hours, tokens, seeds.

Each property compares paired runs (same seed, so every shared input has the same draws)
of two scenarios that differ in one input, so the comparison is exact per run rather
than statistical.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import accelsim as acs

RUNS = 300
COST_METRICS = (
    "tco_usd",
    "hardware_cost_usd",
    "energy_cost_usd",
    "engineering_cost_usd",
    "delay_cost_usd",
)
_OFFERS = sorted(
    {
        (o.chip, o.provider, o.pricing)
        for o in acs.catalog.offers()
        if acs.catalog.chip(o.chip).hbm_gib >= 24
    }
)


def _window(chip: str, provider: str, pricing: str) -> int | None:
    """A capacity block's shortest window (the pool needs one), else None."""
    block = acs.catalog.price(chip, provider=provider, pricing=pricing).block
    return None if block is None else block.allowed_days()[0]


def scenario(
    chip: str = "h100-sxm",
    provider: str = "aws",
    pricing: str = "on_demand",
    count: int = 64,
    tokens: float = 1e11,
    **assumptions: object,
) -> acs.Scenario:
    return acs.Scenario(
        name="p",
        workload=acs.TrainingRun(params=7e9, tokens=tokens),
        fleet=[
            acs.Pool(
                chip=chip,
                count=count,
                provider=provider,
                pricing=pricing,  # type: ignore[arg-type]
                block_days=_window(chip, provider, pricing),
            )
        ],
        assumptions=acs.Assumptions(**assumptions),  # type: ignore[arg-type]
    )


@settings(max_examples=15)
@given(
    offer=st.sampled_from(_OFFERS),
    count=st.integers(min_value=8, max_value=2048),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_costs_are_never_negative(offer: tuple[str, str, str], count: int, seed: int) -> None:
    chip, provider, pricing = offer
    res = acs.simulate(scenario(chip, provider, pricing, count), runs=50, seed=seed)
    for m in COST_METRICS:
        assert (res.samples(m) >= 0).all(), m
    assert (res.samples("energy_kwh") > 0).all()


@settings(max_examples=10)
@given(
    wage=st.floats(min_value=10, max_value=400),
    factor=st.floats(min_value=1.0, max_value=4.0),
    delay=st.floats(min_value=0, max_value=1e5),
)
def test_tco_rises_with_engineering_and_delay_prices(
    wage: float, factor: float, delay: float
) -> None:
    low = acs.simulate(
        scenario(engineer_usd_per_hour=wage, delay_usd_per_day=delay), runs=RUNS, seed=1
    )
    high = acs.simulate(
        scenario(engineer_usd_per_hour=wage * factor, delay_usd_per_day=delay * factor),
        runs=RUNS,
        seed=1,
    )
    assert (high.samples("tco_usd") >= low.samples("tco_usd")).all()
    np.testing.assert_allclose(
        high.samples("engineering_cost_usd"),
        factor * low.samples("engineering_cost_usd"),
        rtol=1e-12,
    )


def test_on_prem_tco_rises_with_electricity_price() -> None:
    kw = {"chip": "h100-sxm", "provider": "on_prem", "pricing": "on_prem"}
    cheap = acs.simulate(scenario(**kw, electricity_usd_per_kwh=0.05), runs=RUNS, seed=4)  # type: ignore[arg-type]
    dear = acs.simulate(scenario(**kw, electricity_usd_per_kwh=0.20), runs=RUNS, seed=4)  # type: ignore[arg-type]
    np.testing.assert_allclose(
        dear.samples("energy_cost_usd"), 4 * cheap.samples("energy_cost_usd")
    )
    assert (dear.samples("tco_usd") > cheap.samples("tco_usd")).all()


def test_a_price_change_reprices_without_changing_the_physics(tmp_path: Path) -> None:
    """Physics never reads a price: doubling the offer doubles hardware cost exactly and
    leaves every usage metric identical (run by run, same seed)."""
    base = acs.catalog.price("h100-sxm", provider="aws")
    assert base.usd_per_chip_hour is not None
    user = tmp_path / "prices.yaml"
    user.write_text(
        "price_sheets:\n"
        "  - provider: aws\n"
        "    name: AWS (doubled)\n"
        "    offers:\n"
        "      - {chip: h100-sxm, pricing: on_demand,\n"
        f"         usd_per_chip_hour: {2 * base.usd_per_chip_hour}, region: {base.region},\n"
        "         as_of: 2026-11-22, source: 'https://example.org/test'}\n",
        encoding="utf-8",
    )
    before = acs.simulate(scenario(), runs=RUNS, seed=9)
    try:
        acs.catalog.load(user)
        after = acs.simulate(scenario(), runs=RUNS, seed=9)
    finally:
        acs.catalog.reset()
    np.testing.assert_allclose(
        after.samples("hardware_cost_usd"), 2 * before.samples("hardware_cost_usd")
    )
    for m in ("training_days", "chip_hours", "mfu", "interruptions", "energy_kwh"):
        np.testing.assert_array_equal(after.samples(m), before.samples(m))


@settings(max_examples=10)
@given(
    hours=st.floats(min_value=0, max_value=2000),
    extra=st.floats(min_value=1, max_value=2000),
    chip=st.sampled_from(["h100-sxm", "tpu-v5p"]),
)
def test_more_optimisation_hours_never_lower_mfu(hours: float, extra: float, chip: str) -> None:
    provider = "gcp" if chip.startswith("tpu") else "aws"
    a = acs.simulate(scenario(chip, provider, optimization_hours=hours), runs=RUNS, seed=3)
    b = acs.simulate(scenario(chip, provider, optimization_hours=hours + extra), runs=RUNS, seed=3)
    assert (b.samples("mfu") >= a.samples("mfu")).all()


def test_doubling_tokens_doubles_compute_days() -> None:
    """With paired draws, the optimisation hours and the global batch fixed, failure-free
    compute time is exactly proportional to tokens (left to the priors, the hours grow
    with the chip-hours at stake and the batch prior's compute-optimal cap with the
    tokens, so a larger job trains at least as efficiently: see the next test)."""

    def fixed_batch(tokens: float) -> acs.Scenario:
        s = scenario(tokens=tokens, optimization_hours=200.0)
        work = s.workload.model_copy(update={"global_batch_tokens": 4e6})
        return s.model_copy(update={"workload": work})

    one = acs.simulate(fixed_batch(1e11), runs=RUNS, seed=5)
    two = acs.simulate(fixed_batch(2e11), runs=RUNS, seed=5)
    np.testing.assert_allclose(
        two.samples("compute_days"), 2 * one.samples("compute_days"), rtol=1e-12
    )
    ratio = two.mean("training_days") / one.mean("training_days")
    assert 1.9 < ratio < 2.1  # failures add a little more than proportionally


def test_a_larger_job_is_optimised_at_least_as_much() -> None:
    """Left to the prior, optimisation hours scale with the chip-hours at stake: doubling
    the tokens never lowers the hours invested nor the MFU they buy, run by run (nor the
    batch the prior allows, whose compute-optimal cap grows with the tokens)."""
    one = acs.simulate(scenario(tokens=1e11), runs=RUNS, seed=5)
    two = acs.simulate(scenario(tokens=2e11), runs=RUNS, seed=5)
    assert (two.samples("engineering_hours") >= one.samples("engineering_hours")).all()
    assert (two.samples("mfu") >= one.samples("mfu")).all()
    assert (two.samples("compute_days") <= 2 * one.samples("compute_days")).all()


@settings(max_examples=10)
@given(
    count=st.integers(min_value=64, max_value=8192),
    factor=st.sampled_from([2, 4]),
)
def test_more_chips_never_add_compute_beyond_what_communication_explains(
    count: int, factor: int
) -> None:
    """chips × compute time (chip-hours of pure compute) can grow with more chips only by
    the MFU the scaling model takes away: chip-hours ratio == MFU ratio, run by run."""
    few = acs.simulate(scenario(count=count, tokens=1e12), runs=RUNS, seed=6)
    many = acs.simulate(scenario(count=count * factor, tokens=1e12), runs=RUNS, seed=6)
    np.testing.assert_allclose(
        factor * many.samples("compute_days") * many.samples("mfu"),
        few.samples("compute_days") * few.samples("mfu"),
        rtol=1e-9,
    )
    assert (many.samples("mfu") <= few.samples("mfu") * (1 + 1e-12)).all()
