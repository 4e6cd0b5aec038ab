"""The public surface: __all__ matches the API page, and every public name is documented."""

from __future__ import annotations

import re
from pathlib import Path

import accelsim

API_PAGE = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def test_all_matches_the_api_page() -> None:
    documented = set(
        re.findall(r"^\| `([A-Za-z_]+)` \|", API_PAGE.read_text(encoding="utf-8"), re.M)
    )
    assert documented == set(accelsim.__all__)


def test_every_public_name_exists_and_has_a_docstring() -> None:
    for name in accelsim.__all__:
        obj = getattr(accelsim, name)
        if name == "__version__":
            assert isinstance(obj, str)
            continue
        assert (obj.__doc__ or "").strip(), name
