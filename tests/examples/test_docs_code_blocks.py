"""Every ```python block in README.md and docs/*.md runs (examples that cannot rot)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def _blocks() -> list[tuple[str, str]]:
    found = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for i, block in enumerate(_BLOCK.findall(text)):
            found.append((f"{doc.name}#{i}", block))
    return found


def test_the_docs_have_code_blocks() -> None:
    assert any(name.startswith("README.md") for name, _ in _blocks())


@pytest.mark.parametrize(("name", "code"), _blocks(), ids=[n for n, _ in _blocks()])
def test_code_block_runs(name: str, code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {"__name__": f"docs_{name}"}
    exec(compile(code, name, "exec"), namespace)
