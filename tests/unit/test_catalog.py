"""Behaviour of the catalog API: lookups, error text, schema rules, user files (load/reset)."""

from __future__ import annotations

import datetime
import json
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from accelsim import catalog
from accelsim.catalog import (
    PRICING_MODELS,
    Chip,
    Offer,
    PrecisionUnavailableError,
    PriceSheet,
    builtin_catalog,
)
from accelsim.errors import OfferNotFoundError, ScenarioFileError, UnknownChipError

BUILTIN_IDS = sorted(builtin_catalog().chips)


@pytest.fixture(autouse=True)
def _builtin_catalog_active() -> Iterator[None]:
    catalog.reset()
    yield
    catalog.reset()


# --- lookups -----------------------------------------------------------------------------


@given(chip_id=st.sampled_from(BUILTIN_IDS), upper=st.lists(st.booleans(), min_size=20))
def test_chip_lookup_ignores_case(chip_id: str, upper: list[bool]) -> None:
    mixed = "".join(ch.upper() if up else ch for ch, up in zip(chip_id, upper, strict=False))
    assert catalog.chip(mixed) is catalog.chip(chip_id)
    assert catalog.chip(mixed).id == chip_id


def test_unknown_chip_error_names_close_match() -> None:
    with pytest.raises(UnknownChipError) as info:
        catalog.chip("h100-smx")
    assert "h100-sxm" in info.value.suggestions
    assert "did you mean" in str(info.value)
    assert "'h100-sxm'" in str(info.value)
    assert isinstance(info.value, KeyError)


def test_price_of_unknown_chip_is_unknown_chip_error() -> None:
    with pytest.raises(UnknownChipError, match="tpu-v5p"):
        catalog.price("tpu-v5q", provider="gcp")


def test_tpu_on_aws_error_names_gcp() -> None:
    with pytest.raises(OfferNotFoundError) as info:
        catalog.price("tpu-v5p", provider="aws", pricing="on_demand")
    msg = str(info.value)
    assert "Providers offering 'tpu-v5p' at on_demand: gcp." in msg
    assert "Pricing models 'aws' has for 'tpu-v5p': none." in msg


def test_missing_pricing_model_error_lists_what_the_provider_has() -> None:
    with pytest.raises(OfferNotFoundError) as info:
        catalog.price("tpu-v5p", provider="gcp", pricing="commit_1y")
    assert "Pricing models 'gcp' has for 'tpu-v5p': on_demand, spot." in str(info.value)


def test_unknown_provider_error_names_close_match() -> None:
    with pytest.raises(OfferNotFoundError, match="did you mean 'aws'"):
        catalog.price("h100-sxm", provider="awz")


def test_unknown_pricing_model_is_value_error() -> None:
    with pytest.raises(ValueError, match="expected one of on_demand"):
        catalog.price("h100-sxm", provider="aws", pricing="reserved")  # type: ignore[arg-type]


def test_price_picks_cheapest_region_unless_one_is_given() -> None:
    regional = catalog.offers(chip="tpu-v5e", provider="gcp", pricing="on_demand")
    assert len({o.region for o in regional}) >= 2
    default = catalog.price("tpu-v5e", provider="gcp")
    assert default.usd_per_chip_hour == min(o.usd_per_chip_hour or 0 for o in regional)
    eu = catalog.price("tpu-v5e", provider="GCP", region="europe-west4")
    assert eu.region == "europe-west4"
    assert eu.usd_per_chip_hour is not None
    assert default.usd_per_chip_hour is not None
    assert eu.usd_per_chip_hour > default.usd_per_chip_hour
    with pytest.raises(OfferNotFoundError, match="Regions 'gcp' has"):
        catalog.price("tpu-v5e", provider="gcp", region="mars-north1")


def test_offers_filters_combine() -> None:
    found = catalog.offers(provider="gcp", pricing="spot")
    assert found
    assert all(o.provider == "gcp" and o.pricing == "spot" for o in found)
    assert len(catalog.offers()) == sum(len(s.offers) for s in catalog.price_sheets().values())
    assert catalog.offers(chip="tpu-v6e", provider="aws") == []


def test_cheapest_is_the_minimum_over_providers() -> None:
    candidates = catalog.offers(chip="h100-sxm", pricing="on_demand")
    best = catalog.cheapest("h100-sxm")
    assert best is not None
    assert best.usd_per_chip_hour == min(o.usd_per_chip_hour or 0 for o in candidates)
    assert catalog.cheapest("tpu-v7") is None  # no public Ironwood price
    bought = catalog.cheapest("h100-sxm", pricing="on_prem")
    assert bought is not None
    assert bought.provider == "on_prem"


def test_site_and_missing_site() -> None:
    site = catalog.site()
    assert site.pue >= 1
    assert len(site.sources) >= 5  # PUE, electricity, colocation, staff, host power
    with pytest.raises(OfferNotFoundError, match="sheets with a site: on_prem"):
        catalog.site("aws")


def test_returned_dicts_are_copies_and_catalog_is_immutable() -> None:
    grabbed = catalog.chips()
    grabbed.pop("h100-sxm")
    assert "h100-sxm" in catalog.chips()
    with pytest.raises(TypeError):
        builtin_catalog().chips["x"] = catalog.chip("l4")  # type: ignore[index]
    with pytest.raises(ValidationError):
        catalog.chip("l4").bf16_tflops = 1.0  # type: ignore[misc]


# --- schema rules ------------------------------------------------------------------------


def test_fp8_peak_on_a100_is_an_error() -> None:
    a100 = catalog.chip("a100-80gb")
    assert a100.peak_tflops("bf16") == a100.bf16_tflops
    with pytest.raises(PrecisionUnavailableError, match=r"no fp8 peak.*available precisions"):
        a100.peak_tflops("fp8")
    with pytest.raises(PrecisionUnavailableError, match="no fp32 peak"):
        catalog.chip("tpu-v5p").peak_tflops("fp32")
    assert catalog.chip("h100-sxm").peak_tflops("fp8") == 1979


def _offer_kwargs(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "provider": "x",
        "chip": "h100-sxm",
        "as_of": datetime.date(2026, 1, 1),
        "source": "https://example.com/prices",
    }
    return base | over


@given(
    pricing=st.sampled_from(PRICING_MODELS),
    hourly=st.booleans(),
    purchase=st.booleans(),
    preempt=st.booleans(),
    block=st.booleans(),
)
def test_offer_requires_exactly_the_fields_of_its_pricing(
    pricing: str, hourly: bool, purchase: bool, preempt: bool, block: bool
) -> None:
    """Oracle: the rule restated: rented => hourly price only; bought => purchase + life only;
    a preemption rate only on spot; window lengths on (and only on) a capacity block."""
    kwargs = _offer_kwargs(pricing=pricing)
    if block:
        kwargs["block"] = {
            "lengths": [{"min_days": 1, "max_days": 14}],
            "source": "https://example.com/blocks",
            "as_of": "2025-01-01",
        }
    if hourly:
        kwargs["usd_per_chip_hour"] = 2.0
    if purchase:
        kwargs |= {"purchase_usd_per_chip": 30_000.0, "amortization_years": 5.0}
    if preempt:
        kwargs |= {"preemptions_per_chip_hour": 0.05, "preemption_note": "assumption"}
    rented_ok = pricing != "on_prem" and hourly and not purchase
    bought_ok = pricing == "on_prem" and purchase and not hourly
    valid = (
        (rented_ok or bought_ok)
        and (not preempt or pricing == "spot")
        and block == (pricing == "capacity_block")
    )
    if valid:
        assert Offer(**kwargs).pricing == pricing
    else:
        with pytest.raises(ValidationError):
            Offer(**kwargs)


def test_preemption_rate_needs_a_note_and_fields_are_strict() -> None:
    with pytest.raises(ValidationError, match="preemption_note"):
        Offer(**_offer_kwargs(pricing="spot", usd_per_chip_hour=1.0, preemptions_per_chip_hour=0.1))
    with pytest.raises(ValidationError, match="greater than 0"):
        Offer(**_offer_kwargs(pricing="on_demand", usd_per_chip_hour=-1.0))
    with pytest.raises(ValidationError, match="Extra inputs"):
        Offer(**_offer_kwargs(pricing="on_demand", usd_per_chip_hour=1.0, price=1.0))
    with pytest.raises(ValidationError, match="source"):
        Offer(**_offer_kwargs(pricing="on_demand", usd_per_chip_hour=1.0, source="lambda.ai"))


def test_chip_kind_must_fit_software_stack() -> None:
    data = catalog.chip("tpu-v5p").model_dump()
    with pytest.raises(ValidationError, match="does not fit kind"):
        Chip.model_validate(data | {"software_stack": "cuda"})


def test_price_sheet_rejects_duplicates_and_foreign_offers() -> None:
    offer = _offer_kwargs(pricing="on_demand", usd_per_chip_hour=1.0)
    with pytest.raises(ValidationError, match="duplicates"):
        PriceSheet.model_validate({"provider": "x", "name": "X", "offers": [offer, offer]})
    with pytest.raises(ValidationError, match="has provider 'x' in sheet 'y'"):
        PriceSheet.model_validate({"provider": "y", "name": "Y", "offers": [offer]})
    bought = _offer_kwargs(pricing="on_prem", purchase_usd_per_chip=1e4, amortization_years=5)
    sheet = PriceSheet.model_validate({"provider": "x", "name": "X", "offers": [bought]})
    with pytest.raises(ValueError, match="'x' has on_prem offers but no site"):
        builtin_catalog().merged([], [sheet])


# --- user files --------------------------------------------------------------------------

USER_FILE = """\
chips:
  - id: my-asic
    name: My ASIC
    vendor: Example
    kind: gpu
    software_stack: cuda
    bf16_tflops: 500
    fp8_tflops: null
    fp32_tflops: null
    hbm_gib: 64
    hbm_tbps: 2.0
    interconnect_gbps: 400
    scale_up_domain_chips: 8
    scale_out_gbps: 50
    tdp_watts: 500
    tdp_is_assumption: false
    year: 2026
    sources:
      - {url: "https://example.com/asic", as_of: 2026-10-01}
price_sheets:
  - provider: aws
    name: Amazon Web Services (negotiated)
    offers:
      - {chip: h100-sxm, pricing: on_demand, usd_per_chip_hour: 4.5, region: us-east-1,
         as_of: 2026-10-01, source: "https://example.com/quote"}
  - provider: acme
    name: Acme Cloud
    offers:
      - {chip: my-asic, pricing: on_demand, usd_per_chip_hour: 1.25,
         as_of: 2026-10-01, source: "https://example.com/acme"}
"""


def _write(tmp_path: Path, text: str, name: str = "my_catalog.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_load_merges_over_builtins_and_reset_restores(tmp_path: Path) -> None:
    builtin_aws_h100 = catalog.price("h100-sxm", provider="aws")
    builtin_gcp_v5p = catalog.price("tpu-v5p", provider="gcp")
    n_builtin = len(catalog.offers())

    loaded = catalog.load(_write(tmp_path, USER_FILE))

    assert catalog.chip("MY-ASIC").bf16_tflops == 500
    assert loaded.chip("my-asic") == catalog.chip("my-asic")
    assert catalog.price("my-asic", provider="acme").usd_per_chip_hour == 1.25
    aws = catalog.price("h100-sxm", provider="aws")
    assert aws.usd_per_chip_hour == 4.5
    # the user offer replaces every built-in (aws, h100-sxm, on_demand) offer, in all regions
    assert [o.usd_per_chip_hour for o in catalog.offers("h100-sxm", "aws", "on_demand")] == [4.5]
    assert catalog.price_sheets()["aws"].name == "Amazon Web Services (negotiated)"
    # everything else is untouched
    assert catalog.price("tpu-v5p", provider="gcp") == builtin_gcp_v5p
    assert catalog.price("h200", provider="aws", pricing="spot").provider == "aws"
    assert len(catalog.chips()) == len(BUILTIN_IDS) + 1
    n_replaced = len(builtin_catalog().offers("h100-sxm", "aws", "on_demand"))
    assert len(catalog.offers()) == n_builtin - n_replaced + 2

    catalog.reset()
    with pytest.raises(UnknownChipError):
        catalog.chip("my-asic")
    assert catalog.price("h100-sxm", provider="aws") == builtin_aws_h100


def test_user_chip_replaces_builtin_of_same_id(tmp_path: Path) -> None:
    data = catalog.chip("l4").model_dump(mode="json") | {"tdp_watts": 60.0}
    path = _write(tmp_path, "chips:\n  - " + json.dumps(data) + "\n")
    catalog.load(path)
    assert catalog.chip("l4").tdp_watts == 60
    assert catalog.price("l4", provider="runpod").chip == "l4"


def test_bad_value_error_names_file_line_and_field(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """\
        price_sheets:
          - provider: acme
            name: Acme
            offers:
              - chip: h100-sxm
                pricing: on_demand
                usd_per_chip_hour: -3
                as_of: 2026-10-01
                source: https://example.com
        """,
    )
    with pytest.raises(ScenarioFileError) as info:
        catalog.load(path)
    msg = str(info.value)
    assert f"{path}:7:" in msg  # line of `usd_per_chip_hour`
    assert "price_sheets.0.offers.0.usd_per_chip_hour" in msg
    assert "greater than 0" in msg


def test_cross_field_error_points_at_the_offer(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """\
        price_sheets:
          - provider: acme
            name: Acme
            offers:
              - chip: h100-sxm
                pricing: on_prem
                usd_per_chip_hour: 3
                as_of: 2026-10-01
                source: https://example.com
        """,
    )
    with pytest.raises(ScenarioFileError) as info:
        catalog.load(path)
    msg = str(info.value)
    assert f"{path}:5:" in msg  # the offer starts on line 5
    assert "price_sheets.0.offers.0" in msg
    assert "on_prem offer" in msg


def test_typo_and_unknown_chip_errors_name_the_field(tmp_path: Path) -> None:
    typo = _write(tmp_path, "chips: []\nprice_sheet: []\n", "typo.yaml")
    with pytest.raises(ScenarioFileError, match=r"typo\.yaml:2: price_sheet: Extra inputs"):
        catalog.load(typo)
    unknown = _write(
        tmp_path,
        """\
        price_sheets:
          - provider: acme
            name: Acme
            offers:
              - {chip: h100-sxn, pricing: spot, usd_per_chip_hour: 1,
                 as_of: 2026-10-01, source: "https://example.com"}
        """,
        "unknown.yaml",
    )
    with pytest.raises(ScenarioFileError) as info:
        catalog.load(unknown)
    msg = str(info.value)
    assert f"{unknown}:5: price_sheets.0.offers.0.chip:" in msg
    assert "'h100-sxm'" in msg


def test_user_on_prem_offer_keeps_builtin_site_or_needs_its_own(tmp_path: Path) -> None:
    override = """\
        price_sheets:
          - provider: on_prem
            name: Our data centre
            offers:
              - {chip: h100-sxm, pricing: on_prem, purchase_usd_per_chip: 25000,
                 amortization_years: 4, as_of: 2026-10-01, source: "https://example.com/q"}
        """
    catalog.load(_write(tmp_path, override, "override.yaml"))
    assert catalog.price("h100-sxm", "on_prem", "on_prem").purchase_usd_per_chip == 25000
    assert catalog.site() == builtin_catalog().site()
    path = _write(tmp_path, override.replace("provider: on_prem", "provider: mydc"), "mydc.yaml")
    with pytest.raises(ScenarioFileError, match=rf"{path}:2: price_sheets.0.provider: .*no site"):
        catalog.load(path)


def test_failed_load_leaves_active_catalog_unchanged(tmp_path: Path) -> None:
    catalog.load(_write(tmp_path, USER_FILE))
    with pytest.raises(ScenarioFileError, match="duplicate"):
        catalog.load(_write(tmp_path, "chips: []\nchips: []\n", "dup.yaml"))
    assert catalog.chip("my-asic").name == "My ASIC"


def test_empty_file_is_the_builtin_catalog(tmp_path: Path) -> None:
    loaded = catalog.load(_write(tmp_path, "", "empty.yaml"))
    assert loaded.chips == builtin_catalog().chips
    assert loaded.sheets == builtin_catalog().sheets
