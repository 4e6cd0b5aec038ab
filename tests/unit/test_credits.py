"""Credits and grants (issue 16, item 4): ``Scenario.credits`` offsets cloud hardware cost,
before expiry, up to its amount, as the negative line ``credits_usd`` inside ``tco_usd``;
the recommendation says when credits decide the choice."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pydantic
import pytest

import accelsim as acs
from accelsim.engines._pricing import _share_before
from accelsim.results import Comparison, Result

RUNS = 200
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def training(
    credits: list[acs.Credit], chip: str = "h100-sxm", provider: str = "aws", **pool: object
) -> acs.Scenario:
    return acs.Scenario(
        name=f"{chip}-credits",
        workload=acs.TrainingRun(params=7e9, tokens=1e11),
        fleet=[acs.Pool(chip=chip, count=64, provider=provider, **pool)],  # type: ignore[arg-type]
        credits=credits,
    )


def lines_sum(res: acs.Result) -> np.ndarray:
    keys = [k for k in res.metrics if k.endswith("_cost_usd")] + ["credits_usd"]
    total: np.ndarray = np.sum([res.samples(k) for k in keys], axis=0)
    return total


def test_credit_has_exactly_one_amount_and_a_known_cloud_provider() -> None:
    with pytest.raises(pydantic.ValidationError, match="exactly one amount"):
        acs.Credit(usd=1.0, chip_hours=1.0)
    with pytest.raises(pydantic.ValidationError, match="exactly one amount"):
        acs.Credit()
    with pytest.raises(pydantic.ValidationError, match="not a price sheet"):
        acs.Credit(usd=1.0, provider="nowhere")
    with pytest.raises(pydantic.ValidationError, match="cloud"):
        acs.Credit(usd=1.0, provider="on_prem")
    with pytest.raises(pydantic.ValidationError):
        acs.Credit(usd=-5.0)
    assert acs.Credit(chip_hours=10.0, chip="tpu-v5p", provider="gcp").chip == "tpu-v5p"


def test_no_credits_no_line() -> None:
    res = acs.simulate(training([]), runs=50, seed=1)
    assert "credits_usd" not in res.metrics


def test_small_credit_is_spent_whole_and_tco_is_the_sum_of_its_lines() -> None:
    res = acs.simulate(training([acs.Credit(usd=1000.0)]), runs=RUNS, seed=2)
    credit = res.samples("credits_usd")
    assert np.all(res.samples("hardware_cost_usd") > 1000.0)
    np.testing.assert_allclose(credit, -1000.0)
    np.testing.assert_allclose(res.samples("tco_usd"), lines_sum(res), rtol=1e-12)


def test_large_credit_covers_hardware_only() -> None:
    res = acs.simulate(training([acs.Credit(usd=1e12)]), runs=RUNS, seed=3)
    np.testing.assert_allclose(res.samples("credits_usd"), -res.samples("hardware_cost_usd"))
    rest = (
        res.samples("energy_cost_usd")
        + res.samples("engineering_cost_usd")
        + res.samples("delay_cost_usd")
    )
    np.testing.assert_allclose(res.samples("tco_usd"), rest, rtol=1e-9)


def test_expiry_covers_only_the_training_days_before_it() -> None:
    """Rented hours are billed evenly over the training phase; a credit expiring inside it
    covers the share of that phase before the expiry day."""
    plain = acs.simulate(training([]), runs=RUNS, seed=4)
    start = plain.samples("time_to_train_days") - plain.samples("training_days")
    expires = float(np.median(start + 0.5 * plain.samples("training_days")))
    res = acs.simulate(training([acs.Credit(usd=1e12, expires_days=expires)]), runs=RUNS, seed=4)
    share = np.clip((expires - start) / plain.samples("training_days"), 0.0, 1.0)
    assert 0.0 < share.mean() < 1.0
    np.testing.assert_allclose(
        res.samples("credits_usd"), -share * plain.samples("hardware_cost_usd"), rtol=1e-9
    )


def test_share_before_expiry() -> None:
    start = np.array([0.0, 10.0, 20.0, 10.0, 20.0])
    window = np.array([10.0, 10.0, 10.0, 0.0, 0.0])
    got = _share_before(15.0, start, window)
    np.testing.assert_allclose(got, [1.0, 0.5, 0.0, 1.0, 0.0])
    np.testing.assert_allclose(_share_before(None, start, window), 1.0)


def test_credit_for_another_provider_or_chip_does_not_apply() -> None:
    for credit in (acs.Credit(usd=1e9, provider="gcp"), acs.Credit(usd=1e9, chip="tpu-v5p")):
        res = acs.simulate(training([credit]), runs=50, seed=5)
        assert not np.any(res.samples("credits_usd"))


def test_chip_hour_credit_is_valued_at_the_pool_price() -> None:
    offer = acs.catalog.price("h100-sxm", provider="aws", pricing="on_demand")
    assert offer.usd_per_chip_hour is not None
    res = acs.simulate(training([acs.Credit(chip_hours=100.0)]), runs=50, seed=6)
    np.testing.assert_allclose(res.samples("credits_usd"), -100.0 * offer.usd_per_chip_hour)


def test_credits_apply_earliest_expiry_first_and_never_exceed_hardware() -> None:
    credits = [acs.Credit(usd=1e12), acs.Credit(usd=1e12, expires_days=1.0)]
    res = acs.simulate(training(credits), runs=RUNS, seed=7)
    np.testing.assert_allclose(res.samples("credits_usd"), -res.samples("hardware_cost_usd"))


def test_stream_credits_offset_the_fleet() -> None:
    scenario = acs.Scenario(
        name="stream",
        workload=acs.JobStream(interarrival_hours=4.0, chips=8, duration_hours=4.0),
        fleet=[acs.Pool(chip="h100-sxm", count=16, provider="aws")],
        horizon_days=10.0,
        credits=[acs.Credit(usd=5000.0, provider="aws")],
    )
    res = acs.simulate(scenario, runs=8, seed=8)
    hardware = res.samples("hardware_cost_usd")
    assert np.any(hardware > 5000.0)  # some runs wait out the horizon for capacity: 0
    np.testing.assert_allclose(res.samples("credits_usd"), -np.minimum(5000.0, hardware))
    total = (
        res.samples("hardware_cost_usd")
        + res.samples("energy_cost_usd")
        + res.samples("wait_cost_usd")
        + res.samples("credits_usd")
    )
    np.testing.assert_allclose(res.samples("tco_usd"), total, rtol=1e-12)


def option(name: str, tco: float, credits: float | None = None) -> Result:
    data = {"tco_usd": np.full(20, tco)}
    if credits is not None:
        data["credits_usd"] = np.full(20, credits)
    return Result(name, data)


def test_recommendation_says_when_credits_decide() -> None:
    """gcp is 100 with 30 of credits (130 without); aws is 110: credits decide."""
    rec = Comparison({"gcp": option("g", 100.0, -30.0), "aws": option("a", 110.0)}).recommendation
    assert rec.choice == "gcp"
    assert rec.credits_decide
    assert "Credits decide the choice: without them the same rule picks aws" in rec.rationale[-1]


def test_recommendation_says_when_credits_do_not_decide() -> None:
    rec = Comparison({"gcp": option("g", 100.0, -5.0), "aws": option("a", 110.0)}).recommendation
    assert rec.choice == "gcp"
    assert not rec.credits_decide
    assert "Credits do not decide the choice" in rec.rationale[-1]
    plain = Comparison({"gcp": option("g", 100.0), "aws": option("a", 110.0)}).recommendation
    assert not any("Credits" in r for r in plain.rationale)


def test_serving_credits_offset_the_endpoint() -> None:
    base = acs.load_scenario(EXAMPLES / "serve_llama70b_h100.yaml")
    scenario = acs.Scenario.model_validate(base.model_dump() | {"credits": [{"usd": 1000.0}]})
    res = acs.simulate(scenario, runs=8, seed=9)
    hardware = res.samples("hardware_cost_usd")
    assert np.all(hardware > 1000.0)
    np.testing.assert_allclose(res.samples("credits_usd"), -1000.0)
    np.testing.assert_allclose(res.samples("tco_usd"), lines_sum(res), rtol=1e-12)
