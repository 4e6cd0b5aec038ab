"""A report as a person sees it: rendered by headless Chromium, with no console errors.

Chromium is Debian's ``chromium`` package; ``.ci/run`` installs it before ``make test``.
On CI (the ``CI`` environment variable set) a missing browser FAILS this test, it is never
skipped; on a developer's machine without chromium and without ``CI`` set, it is skipped.
"""

from __future__ import annotations

import html as html_lib
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import accelsim as acs
from accelsim.report import render_html
from accelsim.results import format_value

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
_BROWSERS = ("chromium", "chromium-browser", "google-chrome")
_CONSOLE = re.compile(r":CONSOLE(?:\(|:)\d*\)?\]? ?(.*)")


def _chromium() -> str:
    for name in _BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    if os.environ.get("CI"):
        pytest.fail("chromium is missing on CI: .ci/run installs Debian's chromium package")
    pytest.skip("chromium is not installed (apt-get install chromium); CI unset, so skipped")


def _load(page: Path, profile: Path) -> tuple[str, list[str]]:
    """The DOM after load, and every console message Chromium logged while loading."""
    run = subprocess.run(
        [
            _chromium(),
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            f"--user-data-dir={profile}",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    messages = [m.group(1) for line in run.stderr.splitlines() if (m := _CONSOLE.search(line))]
    return run.stdout, messages


def test_the_console_check_sees_errors(tmp_path: Path) -> None:
    """The check below can fail: a page with a script error logs it and we read it."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        "<!DOCTYPE html><html><body><p>x</p><script>missing_function();</script></body></html>",
        encoding="utf-8",
    )
    _dom, messages = _load(bad, tmp_path / "profile")
    assert any("missing_function" in m for m in messages)


@pytest.mark.slow
def test_report_renders_in_chromium_with_its_figures(tmp_path: Path) -> None:
    gpu = acs.load_scenario(EXAMPLES / "llama70b_h100_aws.yaml")
    tpu = acs.load_scenario(EXAMPLES / "llama70b_tpu_v5p_gcp.yaml")
    cmp = acs.compare([gpu, tpu], runs=200, seed=7)
    page = tmp_path / "report.html"
    html = render_html(cmp, scenarios=[gpu, tpu])
    page.write_text(html, encoding="utf-8")

    # Self-contained: nothing is fetched at view time (links to sources are only links).
    assert not re.search(r"<script|<link|@import|<iframe", html, re.I)
    assert not re.search(r"""(?:src|srcset)\s*=\s*["']?(?:https?:)?//""", html, re.I)
    assert not re.search(r"""url\(\s*["']?(?:https?:)?//""", html, re.I)

    dom, messages = _load(page, tmp_path / "profile")
    assert messages == []
    text = html_lib.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", dom)))
    rec = cmp.recommendation
    assert f"Recommendation: {rec.headline}" in text
    if rec.meets_goals:
        assert f"{rec.choice} recommended" in text
    for name in cmp.options:
        tco = format_value("tco_usd", cmp[name].mean("tco_usd"))
        assert f"Expected TCO {tco}" in text
    assert cmp.recommendation.rationale[0] in text
    assert dom.count("<svg") >= 4  # two ECDFs, the breakdown, the timeline
