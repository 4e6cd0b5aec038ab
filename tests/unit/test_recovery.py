"""Spare hosts, waits for spot capacity and the fallback to on-demand, through the engines.

Closed forms at the ends of the policy (k = 0 is on-demand, k beyond any count is pure spot,
bit for bit), the accounting of chip-hours and cost, and the boundary's errors.
"""

from __future__ import annotations

import itertools
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

import accelsim as acs
from accelsim import catalog
from accelsim.models import recovery

_RUN = acs.TrainingRun(params=7e9, tokens=1e11)
_SAME = ("training_days", "chip_hours", "interruptions", "compute_days", "finished")


def _scenario(
    pool: acs.Pool, assumptions: acs.Assumptions | None = None, **run: object
) -> acs.Scenario:
    work = _RUN.model_copy(update=run) if run else _RUN
    # fixed prices: the bills below are chip-hours x the offers' prices (a spot run that
    # starts later would otherwise pay later, moved prices)
    fixed = (assumptions or acs.Assumptions()).model_copy(update={"price_change_per_year": 0.0})
    return acs.Scenario(name="r", workload=work, fleet=[pool], assumptions=fixed)


def _spot(**policy: object) -> acs.Pool:
    return acs.Pool(chip="h100-sxm", count=64, provider="gcp", pricing="spot", **policy)


def test_fallback_at_the_zeroth_preemption_is_on_demand_bit_for_bit() -> None:
    fell = acs.simulate(_scenario(_spot(fallback_after_preemptions=0)), runs=512, seed=3)
    od = acs.simulate(
        _scenario(acs.Pool(chip="h100-sxm", count=64, provider="gcp")), runs=512, seed=3
    )
    for m in (*_SAME, "hardware_cost_usd"):
        np.testing.assert_array_equal(fell.samples(m), od.samples(m), err_msg=m)
    np.testing.assert_array_equal(fell.samples("fallback_chip_hours"), od.samples("chip_hours"))


def test_fallback_beyond_any_count_is_pure_spot_bit_for_bit() -> None:
    never = acs.simulate(_scenario(_spot(fallback_after_preemptions=10**9)), runs=512, seed=3)
    spot = acs.simulate(_scenario(_spot()), runs=512, seed=3)
    for m in (*_SAME, "hardware_cost_usd", "recovery_wait_days"):
        np.testing.assert_array_equal(never.samples(m), spot.samples(m), err_msg=m)
    assert not never.samples("fallback_days").any()


def test_fallback_splits_the_bill_between_the_two_prices() -> None:
    res = acs.simulate(_scenario(_spot(fallback_after_preemptions=2)), runs=512, seed=5)
    spot = catalog.price("h100-sxm", provider="gcp", pricing="spot").usd_per_chip_hour
    od = catalog.price("h100-sxm", provider="gcp", pricing="on_demand").usd_per_chip_hour
    assert spot is not None
    assert od is not None
    fb, total = res.samples("fallback_chip_hours"), res.samples("chip_hours")
    assert fb.any()
    assert (fb <= total).all()
    np.testing.assert_allclose(
        res.samples("hardware_cost_usd"), (total - fb) * spot + fb * od, rtol=1e-12
    )
    # the fallen-back runs train after the switch on on-demand
    assert (res.samples("fallback_days") <= res.samples("training_days")).all()


def test_a_deadline_bounds_the_time_on_spot() -> None:
    days, startup_h = 0.5, 0.25
    start = acs.Assumptions(startup_hours=startup_h)
    res = acs.simulate(_scenario(_spot(fallback_after_days=days), start), runs=512, seed=5)
    on_spot = res.samples("training_days") - res.samples("fallback_days")
    fell = res.samples("fallback_days") > 0
    assert fell.any()
    # the launch's startup on spot, then training on spot until the deadline, then one
    # restart (and rollbacks inside the run)
    bound = days * (1 + 1e-9) + startup_h / 24 + res.samples("instability_days")[fell]
    assert (on_spot[fell] <= bound).all()


def test_waits_for_spot_capacity_add_to_the_calendar_not_the_bill() -> None:
    none = acs.Assumptions(spot_return_hours=0.0)
    wait = acs.Assumptions(spot_return_hours=3.0)
    a = acs.simulate(_scenario(_spot(), none), runs=512, seed=2)
    b = acs.simulate(_scenario(_spot(), wait), runs=512, seed=2)
    assert not a.samples("recovery_wait_days").any()
    done = (a.samples("finished") > 0) & (b.samples("finished") > 0)
    assert done.mean() > 0.9
    # the same running time and chip-hours; 3 h more per preemption on the calendar
    np.testing.assert_allclose(
        a.samples("chip_hours")[done], b.samples("chip_hours")[done], rtol=1e-12
    )
    extra = (b.samples("training_days") - a.samples("training_days"))[done]
    np.testing.assert_allclose(extra, b.samples("recovery_wait_days")[done], rtol=1e-9, atol=1e-12)
    assert extra.mean() > 0
    # a censored run rents the pool for the running share of its horizon only
    cut = b.samples("finished") == 0
    assert (b.samples("chip_hours")[cut] < 64 * 24.0 * b.samples("training_days")[cut]).all()


def test_spares_are_held_and_paid_for() -> None:
    pool = acs.Pool(chip="h100-sxm", count=64, provider="gcp", spare_hosts=2)
    res = acs.simulate(_scenario(pool, acs.Assumptions(repair_hours=12.0)), runs=256, seed=1)
    hours = 24.0 * res.samples("training_days")
    np.testing.assert_allclose(res.samples("chip_hours"), (64 + 2 * 8) * hours, rtol=1e-12)
    price = catalog.price("h100-sxm", provider="gcp").usd_per_chip_hour
    assert price is not None
    np.testing.assert_allclose(
        res.samples("hardware_cost_usd"), res.samples("chip_hours") * price, rtol=1e-12
    )


def test_no_spare_waits_a_whole_repair_per_failure() -> None:
    """s = 0: every failure waits one exponential repair of the run's mean, so the mean wait
    is the mean failure count times the repair time (within 5 SE of the waits)."""
    pool = acs.Pool(chip="h100-sxm", count=64, provider="gcp", spare_hosts=0)
    a = acs.Assumptions(repair_hours=10.0, failure_rate_per_chip_hour=2e-3)
    res = acs.simulate(_scenario(pool, a), runs=4096, seed=4)
    waits = 24.0 * res.samples("recovery_wait_days")
    expected = 10.0 * res.samples("interruptions")
    diff = waits - expected
    assert abs(diff.mean()) <= 5.0 * diff.std(ddof=1) / np.sqrt(diff.size)


def test_more_spares_never_wait_longer_in_the_mean() -> None:
    rate, repair = 0.5, 8.0
    waits = [float(recovery.spare_wait_hours_per_failure(s, rate, repair)) for s in range(8)]
    assert waits[0] == repair
    assert all(b < a for a, b in itertools.pairwise(waits))


def test_the_des_hero_run_adds_the_same_waits() -> None:
    pool = acs.Pool(chip="h100-sxm", count=16, provider="gcp", spare_hosts=0)
    a = acs.Assumptions(repair_hours=6.0, failure_rate_per_chip_hour=2e-3)
    s = _scenario(pool, a, tokens=2e10)
    des = acs.simulate(s, runs=64, seed=1, engine="des")
    assert des.samples("recovery_wait_days").mean() > 0
    for m in des.metrics:
        assert np.isfinite(des.samples(m)).all(), m


@pytest.fixture
def _spot_only_provider(tmp_path: Path) -> Iterator[None]:
    sheet = """\
        price_sheets:
          - provider: spotonly
            name: A spot-only cloud
            offers:
              - {chip: h100-sxm, pricing: spot, usd_per_chip_hour: 1.5,
                 as_of: 2026-10-01, source: "https://example.com/spot"}
        """
    path = tmp_path / "spot.yaml"
    path.write_text(textwrap.dedent(sheet), encoding="utf-8")
    catalog.load(path)
    yield
    catalog.reset()


@pytest.mark.usefixtures("_spot_only_provider")
def test_fallback_needs_an_on_demand_offer() -> None:
    acs.Pool(chip="h100-sxm", count=8, provider="spotonly", pricing="spot")
    with pytest.raises(ValidationError, match="on-demand offer of h100-sxm from spotonly"):
        acs.Pool(
            chip="h100-sxm", count=8, provider="spotonly", pricing="spot",
            fallback_after_preemptions=2,
        )  # fmt: skip


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"pricing": "on_demand", "fallback_after_preemptions": 2}, "apply to spot pools"),
        ({"pricing": "on_demand", "fallback_after_days": 3.0}, "apply to spot pools"),
        ({"pricing": "spot", "spare_hosts": 2}, "spare_hosts applies to on_demand"),
        ({"pricing": "on_demand", "spare_hosts": -1}, "greater than or equal to 0"),
        ({"pricing": "spot", "fallback_after_days": 0.0}, "greater than 0"),
        ({"pricing": "spot", "fallback_after_preemptions": -1}, "greater than or equal to 0"),
    ],
)
def test_pool_fields_are_checked_at_the_boundary(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        acs.Pool(chip="h100-sxm", count=64, provider="gcp", **fields)  # type: ignore[arg-type]


def test_recovery_fields_apply_to_the_training_runs_own_pool_only() -> None:
    with pytest.raises(ValidationError, match=r"fleet\.1\.spare_hosts applies"):
        acs.Scenario(
            name="r",
            workload=_RUN,
            fleet=[
                acs.Pool(chip="h100-sxm", count=64, provider="gcp"),
                acs.Pool(chip="h100-sxm", count=64, provider="gcp", spare_hosts=1),
            ],
        )
    stream = acs.JobStream(interarrival_hours=1.0, chips=8, duration_hours=2.0)
    with pytest.raises(ValidationError, match=r"fleet\.0\.fallback_after_days applies"):
        acs.Scenario(
            name="r",
            workload=stream,
            fleet=[_spot(fallback_after_days=2.0)],
            horizon_days=10,
        )
    with pytest.raises(ValidationError, match=r"with workload\.phases is not modelled"):
        _scenario(
            _spot(fallback_after_preemptions=3),
            phases=[acs.TrainingPhase(chips=64, token_share=1.0)],
        )


def test_repair_hours_without_spares_on_a_lone_run_is_an_error() -> None:
    with pytest.raises(ValidationError, match="repair_hours applies to a training run alone"):
        _scenario(
            acs.Pool(chip="h100-sxm", count=64, provider="gcp"),
            acs.Assumptions(repair_hours=12.0),
        )
    _scenario(  # with spares (0 included) it is read
        acs.Pool(chip="h100-sxm", count=64, provider="gcp", spare_hosts=0),
        acs.Assumptions(repair_hours=12.0),
    )


def test_the_note_on_unfinished_runs_names_the_waits_and_the_fallback() -> None:
    from accelsim.results import Result
    from accelsim.results._recommendation import finish_notes

    data = {
        "finished": np.array([1.0, 0.0, 0.0, 0.0]),
        "training_days": np.array([0.5, 1.0, 1.0, 1.0]),
        "interruptions": np.array([3.0, 24.0, 24.0, 24.0]),
        "recovery_wait_days": np.array([0.0, 0.5, 0.5, 0.5]),  # 30 minutes each
        "fallback_days": np.array([0.0, 0.2, 0.0, 0.3]),
    }
    (note,) = finish_notes({"spotty": Result("spotty", data)})
    assert "then wait 30 minutes for capacity or a repair" in note
    assert "fell back to on-demand in 67% of those runs" in note
