"""Integrity of the shipped catalog data (chips.yaml, prices/*.yaml).

Bounds here are sanity bands that catch unit and transcription errors (GB/s typed as TB/s, an
instance price not divided by its GPUs), not tight physical limits; each test says why its
band is where it is.
"""

from __future__ import annotations

import datetime
from collections import Counter
from importlib import resources
from typing import Any

import pytest

from accelsim import catalog
from accelsim._yaml import load_yaml_text, to_plain
from accelsim.catalog import PRICING_MODELS, Catalog, Offer, builtin_catalog
from accelsim.errors import OfferNotFoundError

# No figure may claim to be newer than the day the tests run.
REFERENCE_DATE = datetime.date.today()

REQUIRED_CHIPS = {
    "a100-40gb", "a100-80gb", "h100-sxm", "h100-pcie", "h200", "b200", "gb200", "l4",
    "mi300x", "mi325x", "tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu-v7", "epyc-9654-2s",
    "v100", "a800", "h800", "tpu-v3",
    "gh200", "b300", "gb300", "mi355x", "l40s", "rtx-pro-6000", "trainium2",
}  # fmt: skip
NEOCLOUDS = {"lambda", "coreweave", "runpod", "hyperstack", "nebius"}

CAT = builtin_catalog()
ALL_OFFERS = [o for sheet in CAT.sheets.values() for o in sheet.offers]
ACCELERATORS = [c for c in CAT.chips.values() if c.kind in ("gpu", "tpu")]


def _raw(name: str) -> Any:
    data = resources.files("accelsim.catalog").joinpath("data")
    return to_plain(load_yaml_text(data.joinpath(name).read_text("utf-8"), name, aliases=True))


def _raw_offers() -> list[dict[str, Any]]:
    prices = resources.files("accelsim.catalog").joinpath("data", "prices")
    out = []
    for entry in prices.iterdir():
        if entry.name.endswith(".yaml"):
            sheet = _raw(f"prices/{entry.name}")
            out += [{"provider": sheet["provider"], **o} for o in sheet["offers"]]
    return out


def test_every_required_chip_is_present() -> None:
    """Docs, examples and validation runs name these ids."""
    assert set(CAT.chips) >= REQUIRED_CHIPS


def test_chip_ids_are_unique_in_the_data_file() -> None:
    """Checked on the raw file: a duplicate would otherwise silently shadow a chip."""
    counts = Counter(c["id"] for c in _raw("chips.yaml")["chips"])
    assert [i for i, n in counts.items() if n > 1] == []


def test_offer_keys_are_unique_in_the_data_files() -> None:
    """At most one offer per (provider, chip, pricing, region) across all sheets."""
    keys = Counter((o["provider"], o["chip"], o["pricing"], o.get("region")) for o in _raw_offers())
    assert [k for k, n in keys.items() if n > 1] == []
    assert len(keys) == len(ALL_OFFERS)


def test_every_chip_source_has_url_and_date_not_in_the_future() -> None:
    for chip in CAT.chips.values():
        assert chip.sources, chip.id
        for src in chip.sources:
            assert src.url.startswith(("http://", "https://")), (chip.id, src.url)
            assert src.as_of <= REFERENCE_DATE, (chip.id, src.as_of)


def test_every_offer_has_url_and_date_not_in_the_future() -> None:
    for o in ALL_OFFERS:
        assert o.source.startswith(("http://", "https://")), o
        assert o.as_of <= REFERENCE_DATE, (o.provider, o.chip, o.as_of)


def test_site_sources_have_url_and_date() -> None:
    site = CAT.sheets["on_prem"].site
    assert site is not None
    for src in site.sources:
        assert src.url.startswith(("http://", "https://"))
        assert src.as_of <= REFERENCE_DATE


@pytest.mark.parametrize("chip", ACCELERATORS, ids=lambda c: c.id)
def test_bf16_peak_is_plausible(chip: Any) -> None:
    """10-5000 TFLOP/s spans an L4 (121) to a GB200 (2500) with room; a slip of 1000x fails."""
    assert 10 <= chip.bf16_tflops <= 5000


@pytest.mark.parametrize("chip", ACCELERATORS, ids=lambda c: c.id)
def test_memory_bandwidth_is_plausible(chip: Any) -> None:
    """0.1-20 TB/s, and 1-10 bytes of memory traffic per 1000 peak FLOPs.

    Every accelerator since 2017 sits between 2.5e-3 (L4) and 7.3e-3 (TPU v3) bytes per FLOP;
    a GB/s-for-TB/s slip moves the ratio by 1000x.
    """
    assert 0.1 <= chip.hbm_tbps <= 20
    bytes_per_flop = chip.hbm_tbps * 1e12 / (chip.bf16_tflops * 1e12)
    assert 1e-3 <= bytes_per_flop <= 1e-2


@pytest.mark.parametrize("chip", list(CAT.chips.values()), ids=lambda c: c.id)
def test_precision_peaks_are_ordered(chip: Any) -> None:
    """FP8 is never slower than BF16, and non-tensor FP32 never faster (where published)."""
    if chip.fp8_tflops is not None:
        assert chip.fp8_tflops >= chip.bf16_tflops
    if chip.fp32_tflops is not None:
        assert chip.fp32_tflops <= chip.bf16_tflops


def test_tpu_domains_are_larger_than_gpu_nvlink_domains() -> None:
    """A Google TPU pod (256+ chips) exceeds every 8-GPU NVLink node; the NVL72 racks (GB200,
    GB300) are the exception, and Trainium2 (kind "tpu", a 16-chip instance) is not a pod."""
    racks = {"gb200", "gb300"}
    gpu_domains = [
        c.scale_up_domain_chips for c in CAT.chips.values() if c.kind == "gpu" and c.id not in racks
    ]
    tpu_domains = [
        c.scale_up_domain_chips
        for c in CAT.chips.values()
        if c.kind == "tpu" and c.vendor == "Google"
    ]
    assert max(gpu_domains) < min(tpu_domains)
    assert all(CAT.chips[r].scale_up_domain_chips == 72 for r in racks)


def test_unpublished_tpu_power_is_flagged_as_assumption() -> None:
    """Google publishes no power for v5e/v5p/v6e/v7: flag set and the basis stated."""
    for chip_id in ("tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu-v7"):
        chip = CAT.chips[chip_id]
        assert chip.tdp_is_assumption, chip_id
        assert any("ASSUMPTION tdp_watts" in s.note for s in chip.sources), chip_id
    for chip in CAT.chips.values():
        if chip.tdp_is_assumption:
            assert any("tdp_watts" in s.note for s in chip.sources), chip.id


def test_every_offer_names_a_catalog_chip() -> None:
    assert {o.chip for o in ALL_OFFERS} <= set(CAT.chips)


def test_providers_cover_hyperscalers_neoclouds_and_on_prem() -> None:
    assert {"gcp", "aws", "azure", "on_prem"} <= set(CAT.sheets)
    assert len(NEOCLOUDS & set(CAT.sheets)) >= 2
    site = CAT.sheets["on_prem"].site
    assert site is not None
    assert site.pue >= 1


def test_tpus_are_offered_only_by_gcp() -> None:
    """TPUs are single-cloud: not rented elsewhere, not sold for on-prem. Every chip of kind
    "tpu" (Google TPUs and AWS Trainium2, mapped to it) is offered by one provider at most."""
    google = {c.id for c in CAT.chips.values() if c.kind == "tpu" and c.vendor == "Google"}
    assert {o.provider for o in ALL_OFFERS if o.chip in google} == {"gcp"}
    for chip in (c for c in CAT.chips.values() if c.kind == "tpu"):
        assert len({o.provider for o in ALL_OFFERS if o.chip == chip.id}) <= 1, chip.id


def test_hourly_prices_are_per_chip() -> None:
    """$0.05-50 per chip-hour; an 8-GPU instance price left undivided (e.g. $98) fails."""
    for o in ALL_OFFERS:
        if o.pricing != "on_prem":
            assert o.usd_per_chip_hour is not None
            assert 0.05 <= o.usd_per_chip_hour <= 50, o


def test_purchase_prices_are_per_chip() -> None:
    """$1k-200k per accelerator; a whole 8-GPU system price ($200k+) fails."""
    for o in ALL_OFFERS:
        if o.pricing == "on_prem":
            assert o.purchase_usd_per_chip is not None
            assert 1_000 <= o.purchase_usd_per_chip <= 200_000, o
            assert o.amortization_years is not None
            assert 1 <= o.amortization_years <= 10


def _hourly(o: Offer) -> float:
    assert o.usd_per_chip_hour is not None
    return o.usd_per_chip_hour


def test_spot_is_cheaper_than_on_demand() -> None:
    """Same provider, chip and region; where no same-region on-demand price exists, the
    spot price must undercut every on-demand price of that provider and chip."""
    for spot in (o for o in ALL_OFFERS if o.pricing == "spot"):
        peers = [
            o
            for o in ALL_OFFERS
            if o.pricing == "on_demand" and (o.provider, o.chip) == (spot.provider, spot.chip)
        ]
        assert peers, f"spot offer without on-demand counterpart: {spot}"
        same_region = [o for o in peers if o.region == spot.region] or peers
        assert _hourly(spot) < min(map(_hourly, same_region)), spot


def test_commitments_are_no_dearer_than_shorter_terms() -> None:
    """commit_3y <= commit_1y <= on_demand for the same provider, chip and region."""
    prices: dict[tuple[str, str, str | None], dict[str, float]] = {}
    for o in ALL_OFFERS:
        if o.pricing in ("on_demand", "commit_1y", "commit_3y"):
            prices.setdefault((o.provider, o.chip, o.region), {})[o.pricing] = _hourly(o)
    checked = 0
    for key, p in prices.items():
        ladder = [p[m] for m in ("commit_3y", "commit_1y", "on_demand") if m in p]
        assert ladder == sorted(ladder), key
        checked += len(ladder) > 1
    assert checked >= 5  # the ladder is actually exercised (GCP TPUs, GCP H100, Azure A100)


def test_preemption_rates_state_their_evidence() -> None:
    """A spot preemption rate is an assumption from V100-era traces and must say so."""
    rated = [o for o in ALL_OFFERS if o.preemptions_per_chip_hour is not None]
    assert rated
    for o in rated:
        assert o.pricing == "spot"
        assert o.preemption_note is not None
        assert "ASSUMPTION" in o.preemption_note
        assert "reliability.csv" in o.preemption_note


def _not_published() -> list[tuple[str, Any]]:
    return [(s.provider, e) for s in CAT.sheets.values() for e in s.not_published]


def test_hourly_price_is_plausible_for_the_chip_class() -> None:
    """USD per chip-hour per dense BF16 PFLOP/s lies in 0.5-30 for every rented accelerator.

    Rented accelerators from 2020 to 2026 cost about 1-14 USD per hour per PFLOP/s of dense
    BF16 peak: a B200 or MI300X spot or neocloud hour at ~1 (2.25 USD / 2.25 PFLOP/s, 1.50 USD /
    1.31), a hyperscaler A100 or H100 on-demand hour at 11-13 (4.10 USD / 0.312, 12.29 / 0.989).
    An 8-GPU instance price entered as a per-chip price lands at 40-100 (e.g. 55.04 / 0.989 =
    56), above the band; a price divided twice lands below it. Only a small instance entered
    undivided on a cheap chip can hide inside the band, which the per-chip $50 cap and the
    spot/commitment ordering tests guard instead. CPU servers are not accelerators (their
    BF16 peak is 30 TFLOP/s) and are left out.
    """
    for o in ALL_OFFERS:
        chip = CAT.chips[o.chip]
        if o.pricing == "on_prem" or chip.kind == "cpu":
            continue
        per_pflops = _hourly(o) / (chip.bf16_tflops / 1000)
        assert 0.5 <= per_pflops <= 30, (o.provider, o.chip, o.pricing, o.region, per_pflops)


def test_every_offer_has_a_source_url_and_a_past_date() -> None:
    """Both fields are required by the schema; checked on the raw files so a default can never
    stand in for a missing date or address."""
    for o in _raw_offers():
        assert str(o.get("source", "")).startswith(("http://", "https://")), o
        assert isinstance(o.get("as_of"), datetime.date), o
        assert o["as_of"] <= REFERENCE_DATE, o


def test_not_published_entries_name_a_catalog_chip_and_a_pricing_model() -> None:
    entries = _not_published()
    assert len(entries) >= 5  # the data actually states some (AWS B200, neocloud commitments)
    for provider, e in entries:
        assert e.chip in CAT.chips, (provider, e.chip)
        assert e.pricing in PRICING_MODELS, (provider, e.pricing)
        assert e.source.startswith(("http://", "https://"))
        assert e.as_of <= REFERENCE_DATE
        assert e.note


def test_not_published_entries_are_unique_and_never_contradict_an_offer() -> None:
    """No (provider, chip, pricing, region) is stated twice, nor both priced and unpublished."""
    keys = Counter((p, e.chip, e.pricing, e.region) for p, e in _not_published())
    assert [k for k, n in keys.items() if n > 1] == []
    priced = {(o.provider, o.chip, o.pricing) for o in ALL_OFFERS}
    for provider, e in _not_published():
        if e.region is None:
            assert (provider, e.chip, e.pricing) not in priced, (provider, e)


@pytest.mark.parametrize(("provider", "entry"), _not_published(), ids=lambda v: str(v))
def test_lookup_of_an_unpublished_price_says_not_published(provider: str, entry: Any) -> None:
    with pytest.raises(OfferNotFoundError) as info:
        CAT.price(entry.chip, provider, entry.pricing, entry.region)
    msg = str(info.value)
    assert f"not published by {provider} (as of {entry.as_of.isoformat()}, {entry.source})" in msg
    assert "Providers offering" in msg  # the usual alternatives follow


def test_lookup_of_an_unlisted_combination_keeps_the_plain_message() -> None:
    with pytest.raises(OfferNotFoundError, match="no spot offer") as info:
        CAT.price("tpu-v7", "gcp", "spot")
    assert "not published" not in str(info.value)


def test_a_sheet_rejects_not_published_entries_that_contradict_it() -> None:
    from pydantic import ValidationError

    from accelsim.catalog import PriceSheet

    offer = {
        "chip": "h100-sxm", "pricing": "spot", "usd_per_chip_hour": 2.0,
        "as_of": "2026-01-01", "source": "https://example.org",
    }  # fmt: skip
    entry = {
        "chip": "h100-sxm", "pricing": "spot", "as_of": "2026-01-01",
        "source": "https://example.org", "note": "none",
    }  # fmt: skip
    with pytest.raises(ValidationError, match="has such an offer"):
        PriceSheet.model_validate(
            {"provider": "x", "name": "X", "offers": [offer], "not_published": [entry]}
        )
    with pytest.raises(ValidationError, match="duplicates"):
        PriceSheet.model_validate(
            {"provider": "x", "name": "X", "offers": [], "not_published": [entry, entry]}
        )
    with pytest.raises(ValidationError):  # a note saying why is required
        PriceSheet.model_validate(
            {"provider": "x", "name": "X", "offers": [], "not_published": [{**entry, "note": ""}]}
        )


def test_stale_offers_lists_exactly_the_offers_older_than_the_threshold() -> None:
    today = datetime.date(2026, 11, 25)
    old = catalog.stale_offers(as_of=today, max_age_days=182, catalog=CAT)
    assert old  # the Epoch-archived 2024/2025 prices are older than six months
    assert {id(o) for o in old} == {id(o) for o in ALL_OFFERS if (today - o.as_of).days > 182}
    assert [o.as_of for o in old] == sorted(o.as_of for o in old)


def test_stale_offers_threshold_and_reference_date() -> None:
    newest = max(o.as_of for o in ALL_OFFERS)
    assert catalog.stale_offers(as_of=newest, max_age_days=100_000, catalog=CAT) == []
    everything = catalog.stale_offers(
        as_of=newest + datetime.timedelta(days=1), max_age_days=0, catalog=CAT
    )
    assert len(everything) == len(ALL_OFFERS)
    assert catalog.stale_offers(max_age_days=182) == catalog.stale_offers(
        as_of=datetime.date.today(), max_age_days=182
    )
    with pytest.raises(ValueError, match="max_age_days"):
        catalog.stale_offers(max_age_days=-1)


def test_stale_offers_defaults_to_the_active_catalog() -> None:
    catalog.reset()
    assert isinstance(catalog.builtin_catalog(), Catalog)
    got = catalog.stale_offers(as_of=datetime.date(2026, 11, 25))
    assert got == catalog.stale_offers(
        as_of=datetime.date(2026, 11, 25), max_age_days=182, catalog=catalog.builtin_catalog()
    )
