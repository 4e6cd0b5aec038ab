"""Formatting of numbers in summaries and tables."""

from __future__ import annotations

import math

import numpy as np
import pytest

from accelsim.results import Result, format_value, render_table


@pytest.mark.parametrize(
    ("metric", "value", "text"),
    [
        ("tco_usd", 5.46e6, "$5.46M"),
        ("tco_usd", 1.5e9, "$1.5B"),
        ("tco_usd", 52_800.0, "$52.8k"),
        ("tco_usd", 12.0, "$12"),
        ("chip_hours", 786_018.0, "786k h"),
        ("chip_hours", 1.05e6, "1.05M h"),
        ("training_flops", 2.03e20, "2.03e+20"),
        ("training_days", 41.234, "41.2 d"),
        ("energy_kwh", 370.0, "370 kWh"),
        ("mfu", 0.3541, "0.354"),
    ],
)
def test_format_value(metric: str, value: float, text: str) -> None:
    assert format_value(metric, value) == text


def test_non_finite_values_print_as_such() -> None:
    assert format_value("tco_usd", math.inf) == "inf"
    assert format_value("tco_usd", math.nan) == "nan"


def test_render_table_aligns_columns() -> None:
    lines = render_table(["a", "bb"], [["x", "1"], ["yyy", "22"]]).splitlines()
    assert len({len(line) for line in lines}) == 1


def test_std_error_follows_the_design() -> None:
    """iid formula for mc, lhs and sobol (unchanged); pair means for antithetic.

    x = [1, 3, 2, 6]: s^2 = 14/3 over 4 runs, so s / sqrt(4) = sqrt(7/6). Pair means 2 and
    4: s_y^2 = 2 over 2 pairs, so sqrt(2 / 2) = 1.
    """
    data = {"x": np.array([1.0, 3.0, 2.0, 6.0])}
    for design in (None, "mc", "lhs", "sobol"):
        extras = {} if design is None else {"design": design}
        res = Result("r", data, extras=extras)
        assert res.design == (design or "mc")
        assert res.std_error("x") == pytest.approx(math.sqrt(7.0 / 6.0), rel=1e-15)
    anti = Result("r", data, extras={"design": "antithetic"})
    assert anti.std_error("x") == pytest.approx(1.0, rel=1e-15)
    assert math.isnan(Result("r", {"x": np.array([1.0, 2.0])}, extras=anti.extras).std_error("x"))


def test_summary_names_a_design_other_than_mc() -> None:
    data = {"tco_usd": np.array([1.0, 3.0, 2.0, 6.0])}
    assert Result("r", data).summary().splitlines()[0] == "r: 4 runs (analytic engine)"
    head = Result("r", data, extras={"design": "antithetic"}).summary().splitlines()[0]
    assert head == "r: 4 runs (analytic engine, antithetic design)"
    # the printed 95 % error is 1.96 x the standard error: pair means 1.96, iid 2.12
    x = {"x": data["tco_usd"]}
    assert "3 ± 1.96 " in Result("r", x, extras={"design": "antithetic"}).summary()
    assert "3 ± 2.12 " in Result("r", x).summary()


def test_a_studys_metrics_and_inputs_are_read_only_and_constants_hold_their_value() -> None:
    """Every array of a Result refuses writes; a fixed input or a known quantity (here the
    user's MFU, the FLOPs, a cloud pool's energy cost) is its value in every run."""
    import accelsim as acs

    scenario = acs.Scenario(
        name="t",
        workload=acs.TrainingRun(params=7e9, tokens=1e11, flops=4.2e21),
        fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")],
        assumptions=acs.Assumptions(mfu=0.4),
    )
    res = acs.simulate(scenario, runs=5000, seed=2)
    for arr in (*res.data.values(), *res.inputs.values()):
        assert not arr.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        res.samples("tco_usd")[0] = 0.0
    np.testing.assert_array_equal(res.inputs["assumptions.mfu"], np.full(5000, 0.4))
    np.testing.assert_array_equal(res.samples("training_flops"), np.full(5000, 4.2e21))
    np.testing.assert_array_equal(res.samples("energy_cost_usd"), np.zeros(5000))
    assert res.mean("tco_usd") == pytest.approx(res.samples("tco_usd").sum() / 5000)


def test_a_metric_the_same_in_every_run_has_its_value_and_no_error() -> None:
    """A float sum of equal values need not return them: 400 runs of 8.4e23 FLOP averaged
    to 8.399999999999999e23 with a 'Monte Carlo error' of 6.7e6, rounding noise printed as
    a measurement (``accelsim run``'s training_flops)."""
    x = np.full(400, 8.4e23)
    assert float(np.mean(x)) != 8.4e23  # the noise this guards against
    res = Result("r", {"flops": x})
    assert res.mean("flops") == 8.4e23
    assert res.std_error("flops") == 0.0
    assert res.stats("flops")["mean"] == 8.4e23
    assert res.stats("flops")["std_error"] == 0.0
