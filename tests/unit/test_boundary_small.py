"""The smaller items of the boundary pass: numbers in messages, shares that pass 1 by an ulp,
future price dates, and errors that name their file."""

from __future__ import annotations

import datetime
import warnings
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError
from tests.bounded import assert_refused, cli

import accelsim as acs
from accelsim.catalog import builtin_catalog
from accelsim.engines import check_runnable
from accelsim.engines.cluster.des._metrics import _share

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_an_overload_warning_prints_a_huge_load_in_three_digits() -> None:
    """A stream of 1e290-hour jobs: the warning printed a 290-digit load."""
    s = acs.Scenario(
        name="x",
        workload=acs.JobStream(interarrival_hours=1.0, chips=8, duration_hours=1e290),
        fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")],
        horizon_days=30,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_runnable(s, acs.catalog.active())
    (text,) = [str(w.message) for w in caught]
    assert "offered load 1.25e+289 >= 1" in text
    assert len(text) < 300


def test_serving_utilization_never_passes_one() -> None:
    """The served requests of a saturated fast-path hour equal its capacity, summed in
    another order: 5 of these 300 runs reported 1.0000000000000004."""
    res = acs.simulate(acs.load_scenario(EXAMPLES / "serve_llama70b_h100.yaml"), runs=300, seed=0)
    utilization = res.samples("utilization")
    assert utilization.max() <= 1.0
    assert np.isclose(utilization.max(), 1.0)  # the saturated runs are still at 1


@pytest.mark.parametrize(
    ("part", "whole", "share"),
    [(3.0, 4.0, 0.75), (4.000000000000001, 4.0, 1.0), (0.0, 0.0, 0.0), (1.0, 0.0, 0.0)],
)
def test_a_share_of_chips_up_is_at_most_one(part: float, whole: float, share: float) -> None:
    assert _share(part, whole) == share


def test_a_price_dated_in_the_future_is_refused() -> None:
    offer = next(iter(builtin_catalog().sheets["aws"].offers))
    later = datetime.datetime.now(datetime.UTC).date() + datetime.timedelta(days=30)
    with pytest.raises(ValidationError, match=r"as_of .* is in the future"):
        type(offer).model_validate({**offer.model_dump(), "as_of": later.isoformat()})
    today = datetime.datetime.now(datetime.UTC).date()
    assert type(offer).model_validate({**offer.model_dump(), "as_of": today}).as_of == today


def test_a_runnability_error_names_the_scenario_file(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(
        "name: t\nworkload: {kind: trace, path: missing.csv}\n"
        "fleet: [{chip: h100-sxm, count: 8, provider: aws}]\nhorizon_days: 1\n",
        encoding="utf-8",
    )
    assert_refused(cli("validate", str(path)), f"{path}: ", "no such trace file")
