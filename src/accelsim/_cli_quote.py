"""``accelsim catalog quote``: write a quoted price as a price sheet that ``--prices`` reads.

Called by :mod:`accelsim._cli_catalog`; the sheet is built and validated by
:func:`accelsim.catalog.quote_document`.
"""

from __future__ import annotations

import datetime
import io
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from ruamel.yaml import YAML

from accelsim import catalog
from accelsim.errors import AccelsimError

QuoteChip = Annotated[
    str | None, typer.Option(help="Chip id of the quote (quote).", show_default=False)
]
QuotePricing = Annotated[
    str | None,
    typer.Option(
        help="Pricing of the quote: on_demand, spot, commit_1y or commit_3y (quote).",
        show_default=False,
    ),
]
QuoteRegion = Annotated[
    str | None, typer.Option(help="Region the quote applies to (quote).", show_default=False)
]
QuotePrice = Annotated[
    float | None,
    typer.Option(
        "--usd-per-chip-hour", help="The quoted price per chip-hour (quote).", show_default=False
    ),
]
QuoteDate = Annotated[
    str | None,
    typer.Option(
        "--as-of", metavar="YYYY-MM-DD", help="Day the quote holds for (quote).", show_default=False
    ),
]
QuoteSource = Annotated[
    str | None,
    typer.Option(
        help="URL of the quote, contract or page (quote; default: the written file).",
        show_default=False,
    ),
]
QuoteNote = Annotated[
    str | None,
    typer.Option(help="What the quote says: terms, volume, expiry (quote).", show_default=False),
]
QuoteOutput = Annotated[
    str | None,
    typer.Option(
        "--output",
        "-o",
        help="Sheet file to write, or to add the quote to (quote; default: print it).",
        show_default=False,
    ),
]

_REQUIRED = {
    "chip": "--chip",
    "provider": "--provider",
    "pricing": "--pricing",
    "usd_per_chip_hour": "--usd-per-chip-hour",
    "as_of": "--as-of",
}


def _dump(doc: dict[str, Any]) -> str:
    yaml = YAML(typ="rt")  # keeps the order of keys (provider, chip, pricing, ...)
    yaml.default_flow_style = False
    out = io.StringIO()
    yaml.dump(doc, out)
    return out.getvalue()


def write_quote(given: dict[str, Any], output: str | None) -> None:
    """Build the sheet from the options in ``given`` and write it to ``output`` (or stdout)."""
    missing = [flag for name, flag in _REQUIRED.items() if given.get(name) is None]
    if missing:
        raise AccelsimError(f"catalog quote needs {', '.join(missing)}")
    try:
        as_of = datetime.date.fromisoformat(given["as_of"])
    except ValueError:
        raise AccelsimError(f"--as-of takes a date YYYY-MM-DD, not {given['as_of']!r}") from None
    path = Path(output).expanduser() if output is not None else None
    source = given.get("source") or (path or Path("my_prices.yaml")).resolve().as_uri()
    doc = catalog.quote_document(
        chip=given["chip"],
        provider=given["provider"],
        pricing=given["pricing"],
        usd_per_chip_hour=given["usd_per_chip_hour"],
        as_of=as_of,
        source=source,
        region=given.get("region"),
        note=given.get("note") or "",
        into=path,
    )
    text = "# Written by 'accelsim catalog quote'; read it with --prices.\n" + _dump(doc)
    if path is None:
        sys.stdout.write(text)
        return
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}; use it with --prices {path}", file=sys.stderr)


__all__ = ["write_quote"]
