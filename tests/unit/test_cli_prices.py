"""``--prices FILE|DIR`` on run, compare, report and sweep: a sheet or a SkyPilot feed."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from accelsim import catalog
from accelsim.cli import main

FEED = Path(__file__).parent / "data" / "skypilot" / "v7"

SPOT_SCENARIO = """\
name: aws-spot-h100
workload: {kind: training, params: 1.0e9, tokens: 2.0e10, framework: pytorch}
fleet:
  - {chip: h100-sxm, count: 16, provider: aws, pricing: spot}
assumptions: {price_change_per_year: 0}   # fixed prices: the bill is chip-hours x the price
"""

SHEET = """\
price_sheets:
  - provider: aws
    name: Amazon Web Services
    offers:
      - {chip: h100-sxm, pricing: spot, usd_per_chip_hour: 2.5, region: us-east-1,
         as_of: 2026-11-01, source: "https://example.com/quote"}
"""


@pytest.fixture
def spot_file(tmp_path: Path) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(SPOT_SCENARIO, encoding="utf-8")
    return path


@pytest.fixture
def feed(tmp_path: Path) -> Path:
    root = tmp_path / "v7"
    shutil.copytree(FEED, root)
    return root


def _mean_hardware_per_chip_hour(out: str) -> float:
    doc = json.loads(out)
    stats = doc.get("metrics", doc)
    return float(stats["hardware_cost_usd"]["mean"]) / float(stats["chip_hours"]["mean"])


def test_run_needs_prices_for_an_unpublished_offer_and_runs_with_a_feed(
    spot_file: Path, feed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's "done when": ``accelsim run s.yaml --prices DIR`` runs."""
    assert main(["run", str(spot_file), "--runs", "20"]) == 2
    err = capsys.readouterr().err
    assert "accelsim catalog quote --chip h100-sxm --provider aws --pricing spot" in err
    args = ["run", str(spot_file), "--runs", "20", "--json", "--prices", str(feed)]
    assert main([*args, "--max-price-age-days", "100000"]) == 0
    captured = capsys.readouterr()
    assert "A10G" in captured.err  # the unmapped accelerator is named on stderr
    rate = _mean_hardware_per_chip_hour(captured.out)
    assert rate == pytest.approx(21.60 / 8, rel=1e-9)
    assert catalog.active() is catalog.builtin_catalog()  # nothing left behind


def test_a_price_sheet_file_works_the_same_way(
    spot_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sheet = tmp_path / "my_prices.yaml"
    sheet.write_text(textwrap.dedent(SHEET), encoding="utf-8")
    args = ["run", str(spot_file), "--runs", "20", "--json", "--prices", str(sheet)]
    assert main(args) == 0
    assert _mean_hardware_per_chip_hour(capsys.readouterr().out) == pytest.approx(2.5)


def test_compare_sweep_and_report_take_prices(
    spot_file: Path, feed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "o.yaml"
    other.write_text(SPOT_SCENARIO.replace("aws-spot-h100", "aws-spot-b"), encoding="utf-8")
    assert main(["compare", str(spot_file), str(other), "--runs", "20", "--prices", str(feed)]) == 0
    grid = tmp_path / "grid.yaml"
    grid.write_text("fleet.0.count: [8, 16]\n", encoding="utf-8")
    sweep = ["sweep", str(spot_file), "--grid", str(grid), "--runs", "10", "--csv"]
    assert main([*sweep, "--prices", str(feed)]) == 0
    html = tmp_path / "r.html"
    report = ["report", str(spot_file), "--runs", "20", "-o", str(html), "--no-sensitivity"]
    assert main([*report, "--prices", str(feed)]) == 0
    assert f"--prices {feed}" in html.read_text(encoding="utf-8")
    capsys.readouterr()


def test_a_missing_prices_path_is_refused_in_one_line(
    spot_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(spot_file), "--prices", "nowhere/at/all"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "--prices: nowhere/at/all: no such file or folder" in err


TPU_SCENARIO = """\
name: tpu-commit
workload: {kind: training, params: 1.0e9, tokens: 2.0e10, framework: jax}
fleet:
  - {chip: tpu-v5p, count: 16, provider: gcp, pricing: commit_1y}
"""


def test_the_missing_offer_error_ends_with_the_quote_command_and_the_quote_prices_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's loop: a missing offer names the command; running it writes a sheet that
    --prices reads; the run is then priced at the quote for the whole committed term."""
    scenario = tmp_path / "tpu.yaml"
    scenario.write_text(TPU_SCENARIO, encoding="utf-8")
    assert main(["run", str(scenario), "--runs", "4"]) == 2
    err = capsys.readouterr().err.strip()
    command = err[err.index("accelsim catalog quote") :]
    assert command.startswith(
        "accelsim catalog quote --chip tpu-v5p --provider gcp --pricing commit_1y "
        "--usd-per-chip-hour PRICE --as-of "
    )
    assert command.endswith("-o my_prices.yaml")
    sheet = tmp_path / "my_prices.yaml"
    args = command.split()[1:]  # the command as printed, the price filled in
    args[args.index("PRICE")] = "2.9"
    args[args.index("-o") + 1] = str(sheet)
    assert main(args) == 0
    assert main(["run", str(scenario), "--runs", "4", "--json", "--prices", str(sheet)]) == 0
    stats = json.loads(capsys.readouterr().out)
    stats = stats.get("metrics", stats)
    year_h = 365.25 * 24
    assert stats["hardware_cost_usd"]["mean"] == pytest.approx(16 * 2.9 * year_h, rel=1e-9)


def test_a_second_quote_is_added_to_the_sheet_and_a_restated_one_replaces_its_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sheet = tmp_path / "q.yaml"
    base = ["catalog", "quote", "--provider", "gcp", "--as-of", "2026-11-01", "-o", str(sheet)]
    assert (
        main([*base, "--chip", "tpu-v5p", "--pricing", "commit_1y", "--usd-per-chip-hour", "3"])
        == 0
    )
    assert (
        main([*base, "--chip", "tpu-v5p", "--pricing", "commit_3y", "--usd-per-chip-hour", "2"])
        == 0
    )
    assert (
        main([*base, "--chip", "TPU-v5p", "--pricing", "commit_1y", "--usd-per-chip-hour", "2.5"])
        == 0
    )
    capsys.readouterr()
    try:
        cat = catalog.load(sheet)
        assert cat.price("tpu-v5p", "gcp", "commit_1y").usd_per_chip_hour == 2.5
        assert cat.price("tpu-v5p", "gcp", "commit_3y").usd_per_chip_hour == 2.0
        # the built-in on-demand offer of the same sheet stays
        builtin = catalog.builtin_catalog().price("tpu-v5p", "gcp", "on_demand")
        assert cat.price("tpu-v5p", "gcp", "on_demand") == builtin
        offer = cat.price("tpu-v5p", "gcp", "commit_1y")
        assert offer.source == sheet.resolve().as_uri()
        assert str(offer.as_of) == "2026-11-01"
    finally:
        catalog.reset()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--chip", "tpu-v5x"], "Unknown chip"),
        (["--pricing", "capacity_block"], "cannot be quoted per chip-hour"),
        (["--usd-per-chip-hour", "-1"], "usd_per_chip_hour: Input should be greater than 0"),
        (["--as-of", "2999-01-01"], "in the future"),
        (["--as-of", "yesterday"], "--as-of takes a date"),
        (["--source", "my email"], "source: String should match pattern"),
    ],
)
def test_a_bad_quote_is_refused_in_one_line(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    good = {"--chip": "tpu-v5p", "--provider": "gcp", "--pricing": "commit_1y",
            "--usd-per-chip-hour": "2.9", "--as-of": "2026-11-01"}  # fmt: skip
    given = dict(good)
    given.update(dict(zip(args[::2], args[1::2], strict=True)))
    assert main(["catalog", "quote", *[x for kv in given.items() for x in kv]]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert message.lower() in err.lower()


def test_quote_options_belong_to_quote(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "prices", "--chip", "h100-sxm"]) == 2
    assert "--chip belong to 'accelsim catalog quote'" in capsys.readouterr().err
    assert main(["catalog", "quote", "--chip", "h100-sxm"]) == 2
    assert "needs --provider, --pricing, --usd-per-chip-hour, --as-of" in capsys.readouterr().err


def test_run_and_compare_say_when_prices_moved(
    spot_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    moving = tmp_path / "moving.yaml"
    moving.write_text(
        "name: aws-on-demand\n"
        "workload: {kind: training, params: 1.0e9, tokens: 2.0e10, framework: pytorch}\n"
        "fleet: [{chip: h100-sxm, count: 16, provider: aws}]\n",
        encoding="utf-8",
    )
    assert main(["run", str(moving), "--runs", "20"]) == 0
    assert "Prices move over the horizon" in capsys.readouterr().out
    assert main(["run", str(spot_file), "--runs", "20", "--prices", str(FEED)]) == 0
    assert "Prices move" not in capsys.readouterr().out  # set to 0 in that file
    assert (
        main(["compare", str(moving), str(spot_file), "--runs", "20", "--prices", str(FEED)]) == 0
    )
    out = capsys.readouterr().out
    assert out.count("Prices move over the horizon") == 1
