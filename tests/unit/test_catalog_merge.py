"""A user sheet merged over a built-in one keeps the built-in ``not_published`` entries unless
it restates them (issue 16): an offer or an entry of its own for the same (chip, pricing)."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from accelsim import catalog
from accelsim.errors import OfferNotFoundError


@pytest.fixture(autouse=True)
def _builtin_catalog_active() -> Iterator[None]:
    catalog.reset()
    yield
    catalog.reset()


def _load(tmp_path: Path, sheet: str) -> catalog.Catalog:
    path = tmp_path / "mine.yaml"
    path.write_text(textwrap.dedent(sheet), encoding="utf-8")
    return catalog.load(path)


def _builtin_entries(provider: str) -> set[tuple[str, str, str | None]]:
    sheet = catalog.builtin_catalog().sheets[provider]
    return {(e.chip, e.pricing, e.region) for e in sheet.not_published}


def test_a_user_sheet_keeps_the_providers_not_published_entries(tmp_path: Path) -> None:
    builtin = _builtin_entries("aws")
    assert ("b200", "spot", None) in builtin  # the case below relies on it
    cat = _load(
        tmp_path,
        """\
        price_sheets:
          - provider: aws
            name: AWS (negotiated)
            offers:
              - {chip: h100-sxm, pricing: on_demand, usd_per_chip_hour: 4.5,
                 as_of: 2026-01-01, source: "https://example.com/quote"}
        """,
    )
    kept = {(e.chip, e.pricing, e.region) for e in cat.sheets["aws"].not_published}
    assert kept == builtin
    with pytest.raises(OfferNotFoundError, match="not published by aws"):
        catalog.price("b200", provider="aws", pricing="spot")


def test_a_user_offer_replaces_the_entry_it_contradicts_and_only_that(tmp_path: Path) -> None:
    builtin = _builtin_entries("aws")
    cat = _load(
        tmp_path,
        """\
        price_sheets:
          - provider: aws
            name: AWS (negotiated)
            offers:
              - {chip: b200, pricing: on_demand, usd_per_chip_hour: 9.0,
                 as_of: 2026-01-01, source: "https://example.com/quote"}
        """,
    )
    assert catalog.price("b200", provider="aws").usd_per_chip_hour == 9.0
    kept = {(e.chip, e.pricing, e.region) for e in cat.sheets["aws"].not_published}
    assert kept == {k for k in builtin if k[:2] != ("b200", "on_demand")}
    with pytest.raises(OfferNotFoundError, match="not published by aws"):
        catalog.price("b200", provider="aws", pricing="commit_1y")


def test_a_user_entry_restates_the_builtin_one(tmp_path: Path) -> None:
    cat = _load(
        tmp_path,
        """\
        price_sheets:
          - provider: aws
            name: AWS
            offers: []
            not_published:
              - {chip: b200, pricing: spot, as_of: 2026-06-01,
                 source: "https://example.com/terms", note: "our account team: never spot"}
        """,
    )
    spot = [e for e in cat.sheets["aws"].not_published if (e.chip, e.pricing) == ("b200", "spot")]
    assert [e.note for e in spot] == ["our account team: never spot"]
    assert len(cat.sheets["aws"].not_published) == len(_builtin_entries("aws"))
    # the built-in offers of the provider stay too
    assert catalog.price("h100-sxm", provider="aws") == catalog.builtin_catalog().price(
        "h100-sxm", provider="aws"
    )
