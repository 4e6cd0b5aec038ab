"""The report's docs cannot rot: the CLI reference is current, the gallery lists every
example, and the gallery script writes pages from the current code."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _gallery_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_gallery", DOCS / "gallery.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_reference_is_generated_from_the_commands() -> None:
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "typer",
            "accelsim.cli",
            "utils",
            "docs",
            "--name",
            "accelsim",
            "--title",
            "Command-line reference",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    current = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert run.stdout.strip() == current.strip(), "docs/cli.md is out of date: make cli-docs"
    assert "## `accelsim report`" in current


def test_gallery_page_links_every_example_and_comparison() -> None:
    page = (DOCS / "gallery.md").read_text(encoding="utf-8")
    stems = [p.stem for p in sorted((ROOT / "examples").glob("*.yaml"))]
    stems += list(_gallery_script().COMPARISONS)
    missing = [s for s in stems if f'href="gallery/{s}.html"' not in page]
    assert not missing, f"docs/gallery.md does not link {missing}"


def test_gallery_script_writes_reports(tmp_path: Path) -> None:
    gallery = _gallery_script()
    pages = gallery.build(tmp_path, names=["llama70b_h100_aws", "trace_replay_helios_format"])
    assert [p.name for p in pages] == ["llama70b_h100_aws.html", "trace_replay_helios_format.html"]
    aws = pages[0].read_text(encoding="utf-8")
    assert "Expected TCO" in aws
    assert "accelsim report examples/llama70b_h100_aws.yaml --runs 500 --seed 42" in aws
    assert "--runs 6 --seed 42" in pages[1].read_text(encoding="utf-8")
