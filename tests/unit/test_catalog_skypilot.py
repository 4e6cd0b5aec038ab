"""Reading SkyPilot's catalog files (catalogs/v7/<cloud>/vms.csv) as dated, per-chip offers.

The fixtures under tests/unit/data/skypilot/v7 are in SkyPilot's exact layout (AWS and GCP
put the columns in different orders); prices are per instance-hour (per slice-hour for a TPU).
"""

from __future__ import annotations

import datetime
import os
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

import accelsim as acs
from accelsim import catalog
from accelsim.catalog import UnmappedAcceleratorWarning
from accelsim.errors import OfferNotFoundError, ScenarioFileError

FIXTURES = Path(__file__).parent / "data" / "skypilot" / "v7"
FILE_DAY = datetime.date(2026, 11, 20)


@pytest.fixture
def feed_dir(tmp_path: Path) -> Path:
    """A copy of the fixtures outside any git checkout, every file dated FILE_DAY."""
    root = tmp_path / "catalogs" / "v7"
    shutil.copytree(FIXTURES, root)
    stamp = datetime.datetime(2026, 11, 20, 12, tzinfo=datetime.UTC).timestamp()
    for f in root.glob("*/vms.csv"):
        os.utime(f, (stamp, stamp))
    return root


@pytest.fixture
def loaded(feed_dir: Path) -> Iterator[catalog.Catalog]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnmappedAcceleratorWarning)
        try:
            yield catalog.load_skypilot(feed_dir)
        finally:
            catalog.reset()


def test_a_spot_h100_pool_is_valid_with_the_feeds_per_chip_price_date_and_source(
    loaded: catalog.Catalog, feed_dir: Path
) -> None:
    """The issue's "done when": AWS has no H100 spot price built in; the feed brings one."""
    with pytest.raises(OfferNotFoundError):
        catalog.builtin_catalog().price("h100-sxm", "aws", "spot")
    pool = acs.Pool(chip="h100-sxm", count=64, provider="aws", pricing="spot")
    offer = catalog.price(pool.chip, provider="aws", pricing="spot")
    # the cheaper zone of the cheaper region: 21.60 per p5.48xlarge-hour over 8 GPUs
    assert offer.usd_per_chip_hour == pytest.approx(21.60 / 8)
    assert offer.region == "us-east-1"
    assert offer.as_of == FILE_DAY
    assert offer.note.startswith("SkyPilot catalog aws/vms.csv")
    assert offer.source == (feed_dir / "aws" / "vms.csv").resolve().as_uri()
    assert offer.instance is not None
    assert offer.instance.startswith("p5.48xlarge")


def test_on_demand_and_spot_prices_per_region(loaded: catalog.Catalog) -> None:
    on_demand = {
        o.region: o.usd_per_chip_hour for o in loaded.offers("h100-sxm", "aws", "on_demand")
    }
    spot = {o.region: o.usd_per_chip_hour for o in loaded.offers("h100-sxm", "aws", "spot")}
    assert on_demand == pytest.approx({"us-east-1": 55.04 / 8, "eu-north-1": 63.296 / 8})
    assert spot == pytest.approx({"us-east-1": 21.60 / 8, "eu-north-1": 25.60 / 8})
    assert loaded.price("h100-sxm", "aws", "spot", region="eu-north-1").usd_per_chip_hour == (
        pytest.approx(3.2)
    )


def test_tpu_slices_are_priced_per_chip(loaded: catalog.Catalog) -> None:
    """tpu-v5p-8 counts cores (2 per chip: 4 chips); tpu-v5litepod-8 counts chips (8)."""
    v5p = loaded.price("tpu-v5p", "gcp", "on_demand", region="us-east5")
    assert v5p.usd_per_chip_hour == pytest.approx(16.8 / 4)
    assert v5p.instance == "tpu-v5p-8 (4 chips)"
    assert loaded.price("tpu-v5p", "gcp", "spot", region="us-east5").usd_per_chip_hour == (
        pytest.approx(8.4 / 4)
    )
    assert loaded.price("tpu-v5e", "gcp", "on_demand", region="us-east5").usd_per_chip_hour == (
        pytest.approx(9.6 / 8)
    )
    # an empty spot cell is no spot price in that region
    with pytest.raises(OfferNotFoundError, match="us-east5"):
        loaded.price("tpu-v5p", "gcp", "spot", region="europe-west4")


def test_a_gcp_gpu_row_is_priced_with_its_machine_type_where_the_zone_has_it(
    loaded: catalog.Catalog,
) -> None:
    """GCP prices GPUs apart from the machine type that carries them (a3-highgpu-8g for 8
    H100s): in a zone with both rows the offer is their sum per chip; where the file has no
    machine row it is the GPUs alone, and its note says so."""
    whole = loaded.price("h100-sxm", "gcp", "on_demand", region="us-central1")
    assert whole.usd_per_chip_hour == pytest.approx((78.4 + 9.46006) / 8)
    assert whole.instance == "a3-highgpu-8g (8x H100)"
    spot = loaded.price("h100-sxm", "gcp", "spot", region="us-central1")
    assert spot.usd_per_chip_hour == pytest.approx((31.36 + 2.17547) / 8)
    alone = loaded.price("h100-sxm", "gcp", "on_demand", region="europe-west4")
    assert alone.usd_per_chip_hour == pytest.approx(80.0 / 8)
    assert "the GPUs alone: the host machine type is billed apart" in alone.note
    assert "billed apart" not in whole.note


def test_a_zero_price_is_no_price(loaded: catalog.Catalog) -> None:
    """SkyPilot writes 0.0 where it found no price (v6e in regions missing from the SKUs)."""
    assert all(o.region != "us-central2" for o in loaded.offers("tpu-v6e", "gcp"))


def test_unknown_accelerators_are_listed_not_guessed(feed_dir: Path) -> None:
    feed = catalog.read_skypilot(feed_dir)
    names = {(u.cloud, u.name, u.rows) for u in feed.unmapped}
    assert names == {("aws", "A10G", 1), ("gcp", "tpu-v2-8", 1)}
    offered = {(o.provider, o.chip) for s in feed.sheets for o in s.offers}
    assert offered == {
        ("aws", "h100-sxm"),
        ("gcp", "tpu-v5p"),
        ("gcp", "tpu-v5e"),
        ("gcp", "h100-sxm"),
    }
    try:
        with pytest.warns(UnmappedAcceleratorWarning, match=r"aws: A10G; gcp: tpu-v2-8"):
            catalog.load_skypilot(feed_dir)
    finally:
        catalog.reset()


def test_the_feed_replaces_builtin_offers_it_restates_and_keeps_the_rest(
    loaded: catalog.Catalog,
) -> None:
    builtin = catalog.builtin_catalog()
    # restated: every aws h100 on-demand offer now comes from the feed
    assert all(o.note.startswith("SkyPilot") for o in loaded.offers("h100-sxm", "aws", "on_demand"))
    # kept: offers the feed does not mention, and other providers
    assert loaded.offers("a100-80gb", "aws") == builtin.offers("a100-80gb", "aws")
    assert loaded.offers("h100-sxm", "azure") == builtin.offers("h100-sxm", "azure")
    assert loaded.sheets["aws"].name == f"{builtin.sheets['aws'].name} (SkyPilot catalog)"


@pytest.mark.parametrize("where", ["catalogs", "v7", "aws", "aws/vms.csv"])
def test_it_accepts_the_catalog_root_a_version_folder_a_cloud_folder_or_a_file(
    feed_dir: Path, where: str
) -> None:
    path = {
        "catalogs": feed_dir.parent.parent,  # holds catalogs/v7
        "v7": feed_dir,
        "aws": feed_dir / "aws",
        "aws/vms.csv": feed_dir / "aws" / "vms.csv",
    }[where]
    feed = catalog.read_skypilot(path)
    assert "aws" in {s.provider for s in feed.sheets}


def test_a_folder_without_a_catalog_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ScenarioFileError, match="no SkyPilot catalog"):
        catalog.load_skypilot(tmp_path)
    assert catalog.active() is catalog.builtin_catalog()


def test_a_study_carries_the_feed_it_was_started_with(loaded: catalog.Catalog) -> None:
    """The study snapshots the active catalog: a reset afterwards changes nothing."""
    s = acs.Scenario(
        name="spot",
        workload=acs.TrainingRun(params=7e9, tokens=2e11),
        fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws", pricing="spot")],
    )
    res = acs.simulate(s, runs=8, seed=1)
    (used,) = res.extras["prices_used"]
    assert used["source"].endswith("aws/vms.csv")
    assert used["as_of"] == FILE_DAY.isoformat()
    assert used["region"] == "us-east-1"


def test_a_committed_file_is_dated_by_its_commit(tmp_path: Path) -> None:
    import subprocess

    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES, repo / "catalogs" / "v7")
    env = {
        **os.environ,
        "GIT_AUTHOR_DATE": "2026-10-02T10:00:00+00:00",
        "GIT_COMMITTER_DATE": "2026-10-02T10:00:00+00:00",
    }
    for args in (
        ["init", "-q"],
        ["add", "."],
        ["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "feed"],
    ):
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=env)
    path = repo / "catalogs" / "v7" / "aws" / "vms.csv"
    assert catalog.read_skypilot(path).sheets[0].offers[0].as_of == datetime.date(2026, 10, 2)
    path.write_text(path.read_text() + "\n", encoding="utf-8")  # modified: its own date
    today = datetime.datetime.now(tz=datetime.UTC).date()
    assert catalog.read_skypilot(path).sheets[0].offers[0].as_of == today


def _spot(region: str | None = None) -> acs.Scenario:
    return acs.Scenario(
        name="spot",
        workload=acs.TrainingRun(params=7e9, tokens=2e11),
        fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws", pricing="spot", region=region)],
        assumptions=acs.Assumptions(price_change_per_year=0.0),  # the bill: chip-hours x price
    )


def test_an_unset_region_takes_the_cheapest_and_says_so(loaded: catalog.Catalog) -> None:
    (used,) = acs.simulate(_spot(), runs=4, seed=1).extras["prices_used"]
    assert used["region"] == "us-east-1"
    assert used["region_rule"] == "cheapest of 2 regions listed (Pool.region unset)"


def test_a_pool_region_prices_the_pool_in_that_region(loaded: catalog.Catalog) -> None:
    cheap = acs.simulate(_spot(), runs=16, seed=1)
    north = acs.simulate(_spot("eu-north-1"), runs=16, seed=1)
    (used,) = north.extras["prices_used"]
    assert (used["region"], used["region_rule"]) == ("eu-north-1", "set by the pool")
    rate = north.samples("hardware_cost_usd") / north.samples("chip_hours")
    assert rate == pytest.approx(25.60 / 8)
    # same draws, only the price differs (the preemption prior is the generic one in both)
    assert north.samples("chip_hours") == pytest.approx(cheap.samples("chip_hours"))


def test_a_region_the_sheet_does_not_list_is_refused_naming_those_it_does(
    loaded: catalog.Catalog,
) -> None:
    with pytest.raises(
        ValueError, match=r"Regions 'aws' has for it at spot: eu-north-1, us-east-1"
    ):
        acs.Pool(chip="h100-sxm", count=8, provider="aws", pricing="spot", region="mars-1")


def test_an_unpriced_pool_takes_no_region() -> None:
    with pytest.raises(ValueError, match="unpriced pool"):
        acs.Pool(chip="h100-sxm", count=8, provider=None, region="us-east-1")
