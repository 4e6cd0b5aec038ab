"""Prices that say how old they are (issue 16, item 5): a study records the offers it priced
with and the oldest date; ``Result.summary()`` and the CLI warn about prices older than a
threshold (default 182 days), naming each; ``accelsim catalog prices --stale`` lists them."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import accelsim as acs
from accelsim.cli import main
from accelsim.results import Result

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TODAY = datetime.date.today()


def scenario(provider: str = "aws", chip: str = "h100-sxm") -> acs.Scenario:
    return acs.Scenario(
        name="s",
        workload=acs.TrainingRun(params=7e9, tokens=1e11),
        fleet=[acs.Pool(chip=chip, count=64, provider=provider)],
    )


@pytest.fixture
def old_sheet(tmp_path: Path) -> Iterator[acs.catalog.Catalog]:
    path = tmp_path / "old.yaml"
    path.write_text(
        "price_sheets:\n"
        "  - provider: oldcloud\n"
        "    name: An old quote\n"
        "    offers:\n"
        "      - {chip: h100-sxm, pricing: on_demand, usd_per_chip_hour: 2.0,\n"
        "         as_of: 2001-02-03, source: 'https://example.com/quote'}\n",
        encoding="utf-8",
    )
    try:
        yield acs.catalog.load(path)
    finally:
        acs.catalog.reset()


def test_a_study_records_the_offers_it_priced_with() -> None:
    res = acs.simulate(scenario(), runs=20, seed=1)
    offer = acs.catalog.price("h100-sxm", provider="aws", pricing="on_demand")
    used = res.extras["prices_used"]
    assert [(p["provider"], p["chip"], p["pricing"]) for p in used] == [
        ("aws", "h100-sxm", "on_demand")
    ]
    assert used[0]["as_of"] == offer.as_of.isoformat()
    assert res.extras["oldest_price_as_of"] == offer.as_of.isoformat()


def test_an_unpriced_pool_records_no_price() -> None:
    s = acs.Scenario(
        name="unpriced",
        workload=acs.TrainingRun(params=7e9, tokens=1e11),
        fleet=[acs.Pool(chip="h100-sxm", count=64, provider=None)],
    )
    res = acs.simulate(s, runs=10, seed=1)
    assert "prices_used" not in res.extras
    assert res.stale_prices(0) == []


def test_stale_prices_uses_the_threshold() -> None:
    res = acs.simulate(scenario(), runs=10, seed=2)
    as_of = datetime.date.fromisoformat(res.extras["oldest_price_as_of"])
    assert res.stale_prices(182, as_of=as_of + datetime.timedelta(days=183))
    assert not res.stale_prices(182, as_of=as_of + datetime.timedelta(days=182))
    with pytest.raises(ValueError, match="max_age_days"):
        res.stale_prices(-1)


def test_summary_warns_naming_the_stale_offer(old_sheet: acs.catalog.Catalog) -> None:
    res = acs.simulate(scenario("oldcloud"), runs=10, seed=3)
    assert res.extras["oldest_price_as_of"] == "2001-02-03"
    text = res.summary(["tco_usd"])
    days = (TODAY - datetime.date(2001, 2, 3)).days
    assert text.splitlines()[-1] == (
        f"warning: stale prices used: oldcloud h100-sxm on_demand as of 2001-02-03 "
        f"({days} days old). Check current prices and load your own sheet "
        f"(acs.catalog.load) if they moved."
    )
    assert "warning" not in res.summary(["tco_usd"], max_price_age_days=None)
    assert "warning" not in res.summary(["tco_usd"], max_price_age_days=days)
    assert "warning" in res.summary(["tco_usd"], max_price_age_days=days - 1)


def test_summary_is_silent_about_fresh_prices() -> None:
    fresh = {"provider": "x", "chip": "h100-sxm", "pricing": "spot", "region": ""}
    res = Result(
        "r", {"tco_usd": np.ones(4)}, extras={"prices_used": [fresh | {"as_of": TODAY.isoformat()}]}
    )
    assert "warning" not in res.summary()
    assert res.price_age_warning(0) is None


def test_cli_run_warns_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(EXAMPLES / "llama70b_h100_aws.yaml")
    assert main(["run", path, "--runs", "20", "--max-price-age-days", "0"]) == 0
    err = capsys.readouterr().err
    assert "stale prices used: aws h100-sxm" in err
    assert main(["run", path, "--runs", "20", "--max-price-age-days", "100000"]) == 0
    assert "stale prices" not in capsys.readouterr().err


def test_cli_catalog_prices_stale_lists_exactly_the_stale_offers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    dates = sorted({o.as_of for o in acs.catalog.offers(provider="aws")})
    assert len(dates) > 1
    days = (TODAY - dates[0]).days - 1  # only the oldest date is stale
    assert (
        main(["catalog", "prices", "--provider", "aws", "--stale", "--max-age-days", str(days)])
        == 0
    )
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("aws ")]
    stale = [o for o in acs.catalog.stale_offers(max_age_days=days) if o.provider == "aws"]
    assert len(rows) == len(stale) > 0
    assert all(str(dates[0]) in row for row in rows)
    assert main(["catalog", "prices", "--stale", "--max-age-days", "100000"]) == 0
    assert "no offer is older than 100000 days" in capsys.readouterr().out
