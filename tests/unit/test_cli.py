"""The accelsim command: every subcommand on the examples, clean failures on bad input."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from accelsim.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_demo_prints_table_and_recommendation(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--runs", "300", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "tco_usd" in out
    assert "Recommendation:" in out
    assert "tpu-v5p" in out


def test_validate_every_example(capsys: pytest.CaptureFixture[str]) -> None:
    paths = [str(p) for p in sorted(EXAMPLES.glob("*.yaml"))]
    assert main(["validate", *paths]) == 0
    assert capsys.readouterr().out.count(": ok") == len(paths)


def test_bad_file_exits_2_naming_the_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: x\nworkload: {kind: training, params: 7e9, tokens: 1e11}\n"
        "fleet: [{chip: h100-sxmm, count: 8, provider: aws}]\n",
        encoding="utf-8",
    )
    assert main(["validate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml:3" in err
    assert "h100-sxm" in err
    assert "Traceback" not in err


def test_missing_file_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "does-not-exist.yaml"]) == 2
    assert "no such scenario file" in capsys.readouterr().err


def test_run_and_compare(capsys: pytest.CaptureFixture[str]) -> None:
    h100 = str(EXAMPLES / "llama70b_h100_aws.yaml")
    tpu = str(EXAMPLES / "llama70b_tpu_v5p_gcp.yaml")
    assert main(["run", h100, "--runs", "200"]) == 0
    assert "95% MC error" in capsys.readouterr().out
    assert main(["compare", h100, tpu, "--runs", "200"]) == 0
    assert "Recommendation:" in capsys.readouterr().out


def test_compare_says_when_an_option_serves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A fleet that serves nothing shows 0 ms latencies in the table; the line under it
    says why, as the summary and the report do."""
    body = (
        "workload: {{kind: serving, model: llama-3.1-8b, precision: fp8, rate_rps: 5,"
        " input_tokens: 2000, output_tokens: 200, slo: {{ttft_ms: 2000, tpot_ms: 100}},"
        " horizon_days: 1{extra}}}\nfleet: [{{chip: h100-sxm, count: 8, provider: aws}}]\n"
    )
    empty, ok = tmp_path / "empty.yaml", tmp_path / "ok.yaml"
    empty.write_text("name: empty\n" + body.format(extra=", kv_share: 0.000001"), "utf-8")
    ok.write_text("name: ok\n" + body.format(extra=""), "utf-8")
    assert main(["compare", str(empty), str(ok), "--runs", "50"]) == 0
    out = capsys.readouterr().out
    assert "empty: P(every request served) 0.0%" in out
    assert "nothing served" in out
    assert "ok: P(every request served)" not in out


def test_catalog_listings(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "chips"]) == 0
    assert "tpu-v5p" in capsys.readouterr().out
    assert main(["catalog", "prices", "--provider", "gcp"]) == 0
    assert "tpu-v5p" in capsys.readouterr().out
    assert main(["catalog", "prices", "--provider", "nowhere"]) == 2
    assert main(["catalog", "priors"]) == 0
    assert "failure_rate_per_chip_hour" in capsys.readouterr().out


def test_schema_is_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert "fleet" in schema["properties"]


def test_run_writes_a_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ttt.png"
    h100 = str(EXAMPLES / "llama70b_h100_aws.yaml")
    assert main(["run", h100, "--runs", "100", "--plot", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_run_json_and_csv(capsys: pytest.CaptureFixture[str]) -> None:
    h100 = str(EXAMPLES / "llama70b_h100_aws.yaml")
    assert main(["run", h100, "--runs", "100", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["runs"] == 100
    assert data["metrics"]["tco_usd"]["p5"] <= data["metrics"]["tco_usd"]["p95"]
    assert main(["run", h100, "--runs", "100", "--csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("run,")
    assert len(lines) == 101


def test_run_auto_reports_its_precision(capsys: pytest.CaptureFixture[str]) -> None:
    h100 = str(EXAMPLES / "llama70b_h100_aws.yaml")
    assert main(["run", h100, "--runs", "auto", "--target", "tco_usd=0.02", "--json"]) == 0
    precision = json.loads(capsys.readouterr().out)["precision"]["tco_usd"]
    assert precision["met"]
    assert precision["relative"] <= 0.02
    assert main(["run", h100, "--runs", "auto", "--target", "tco_usd"]) == 2


def test_sweep_over_a_grid_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    grid = tmp_path / "grid.yaml"
    grid.write_text("fleet.0.count: [512, 1024]\n", encoding="utf-8")
    h100 = str(EXAMPLES / "llama70b_h100_aws.yaml")
    assert main(["sweep", h100, "--grid", str(grid), "--runs", "100", "--csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split(",")[:2] == ["fleet.0.count", "metric"]
    assert len(lines) == 1 + 2 * 2  # two points x two metrics
    bad = tmp_path / "bad.yaml"
    bad.write_text("fleet.0.count: 512\n", encoding="utf-8")
    assert main(["sweep", h100, "--grid", str(bad), "--runs", "10"]) == 2
    assert "a grid maps dotted field paths" in capsys.readouterr().err


def test_help_lists_commands_and_options(capsys: pytest.CaptureFixture[str]) -> None:
    """``--help`` of the app names every command; ``run --help`` names every option."""
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in ("demo", "catalog", "validate", "run", "compare", "sweep", "calibrate"):
        assert command in out
    assert "schema" in out
    assert main(["run", "--help"]) == 0
    out = capsys.readouterr().out
    for option in ("--runs", "--seed", "--target", "--plot", "--workers", "--json", "--csv"):
        assert option in out


def test_bad_option_exits_2_without_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown option or a bad value is a user's mistake: exit 2, one line on stderr."""
    h100 = str(EXAMPLES / "llama70b_h100_aws.yaml")
    for argv in (
        ["run", h100, "--bogus"],
        ["run", h100, "--runs", "many"],
        ["run", h100, "--json", "--csv"],
        ["catalog", "gpus"],
        ["nosuchcommand"],
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("accelsim: error: "), argv
        assert err.count("\n") == 1, argv
        assert "Traceback" not in err


def test_no_arguments_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    """Without a command there is nothing to do: show the commands, exit 2 (bad input)."""
    assert main([]) == 2
    assert "Commands" in capsys.readouterr().out


def test_tables_are_rich_in_a_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """On a terminal the plain table becomes a rich table with the same cells."""
    assert main(["catalog", "prices", "--provider", "gcp"]) == 0
    plain = capsys.readouterr().out
    assert plain.splitlines()[1].startswith("---")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(["catalog", "prices", "--provider", "gcp"]) == 0
    fancy = capsys.readouterr().out
    assert not any(line.startswith("---") for line in fancy.splitlines())
    assert "tpu-v5p" in fancy
    assert "USD/chip-h" in fancy


def test_run_out_writes_every_run_or_the_summary(tmp_path: Path) -> None:
    h100 = str(EXAMPLES / "llama70b_h100_aws.yaml")
    runs_csv = tmp_path / "runs.csv"
    assert main(["run", h100, "--runs", "50", "--out", str(runs_csv)]) == 0
    assert len(runs_csv.read_text(encoding="utf-8").splitlines()) == 51
    summary = tmp_path / "summary.json"
    assert main(["run", h100, "--runs", "50", "--out", str(summary)]) == 0
    assert json.loads(summary.read_text(encoding="utf-8"))["runs"] == 50
    assert main(["run", h100, "--runs", "50", "--out", str(tmp_path / "x.txt")]) == 2


def test_compare_json_has_odds_and_the_recommendation(capsys: pytest.CaptureFixture[str]) -> None:
    h100 = str(EXAMPLES / "llama70b_h100_aws.yaml")
    tpu = str(EXAMPLES / "llama70b_tpu_v5p_gcp.yaml")
    assert main(["compare", h100, tpu, "--runs", "100", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    names = list(doc["options"])
    odds = doc["prob_less"]["tco_usd"]
    assert 0.0 <= odds[names[0]][names[1]] + odds[names[1]][names[0]] <= 1.0
    assert doc["recommendation"]["choice"] in names


def test_run_design_store_and_resume(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--design reaches simulate (an antithetic summary says so; a bad design is an error
    naming the choices, exit 2), and --store/--resume keep and continue a study: the
    resumed run prints exactly the first run's summary, and a second run without
    --resume refuses to overwrite the store."""
    h100 = str(EXAMPLES / "llama70b_h100_aws.yaml")
    assert main(["run", h100, "--runs", "200", "--design", "antithetic", "--json"]) == 0
    anti = json.loads(capsys.readouterr().out)
    assert main(["run", h100, "--runs", "200", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) != anti
    assert main(["run", h100, "--runs", "200", "--design", "quasi"]) == 2
    assert "antithetic" in capsys.readouterr().err

    store = str(tmp_path / "study.sqlite")
    assert main(["run", h100, "--runs", "300", "--store", store, "--json"]) == 0
    first = capsys.readouterr().out
    assert main(["run", h100, "--runs", "300", "--store", store, "--resume", "--json"]) == 0
    assert capsys.readouterr().out == first
    assert main(["run", h100, "--runs", "300", "--store", store]) == 2
    assert "resume" in capsys.readouterr().err


TRAINING = "name: t\nworkload: {kind: training, params: 7.0e9, tokens: 1.0e11}\n"
FLEET8 = "fleet: [{chip: h100-sxm, count: 8, provider: aws}]\n"


def _one_line_exit_2(args: list[str], capsys: pytest.CaptureFixture[str], match: str) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    assert match in err


@pytest.mark.parametrize(
    ("workload", "csv", "match"),
    [
        ("{kind: trace, path: missing.csv}", None, "no such trace file"),
        ("{kind: trace, path: big.csv}", "submit,chips,duration\n0,64,3600\n", "asks for 64 chips"),
        (
            "{kind: trace, path: big.csv, chip_types: {V100: nochip}}",
            "submit,chips,duration\n0,1,3600\n",
            "chip_types",
        ),
        ("{kind: job_stream, interarrival_hours: 1, chips: 1, duration_hours: 0}", None, "(0, "),
    ],
)
def test_validate_says_what_run_would_fail_on(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    workload: str,
    csv: str | None,
    match: str,
) -> None:
    """Issue 15: `validate` checks trace files and contents, not only the schema."""
    if csv is not None:
        (tmp_path / "big.csv").write_text(csv, encoding="utf-8")
    path = tmp_path / "s.yaml"
    path.write_text(f"name: s\nworkload: {workload}\n{FLEET8}horizon_days: 1\n", encoding="utf-8")
    _one_line_exit_2(["validate", str(path)], capsys, match)


def test_unknown_metric_is_refused_before_the_study(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(TRAINING + FLEET8, encoding="utf-8")
    args = ["run", str(path), "--runs", "auto", "--target", "nope=0.1"]
    _one_line_exit_2(args, capsys, "unknown metric 'nope'")
    grid = tmp_path / "g.yaml"
    grid.write_text("fleet.0.count: [8, 16]\n", encoding="utf-8")
    args = ["sweep", str(path), "--grid", str(grid), "--runs", "4", "--metrics", "tco_usd,bogus"]
    _one_line_exit_2(args, capsys, "unknown metric 'bogus'")
    grid.write_text("fleet.0.cnt: [8, 16]\n", encoding="utf-8")
    _one_line_exit_2(["sweep", str(path), "--grid", str(grid)], capsys, "fleet.0.cnt")
    _one_line_exit_2(["sweep", str(path), "--grid", str(tmp_path / "no.yaml")], capsys, "no such")


def test_catalog_mfu_zero_is_a_clean_error(capsys: pytest.CaptureFixture[str]) -> None:
    _one_line_exit_2(["catalog", "chips", "--mfu", "0"], capsys, "--mfu must lie in (0, 1]")


def test_json_is_valid_with_non_finite_values_as_null(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One run: standard errors are not numbers; they are null and listed, never NaN."""
    path = tmp_path / "t.yaml"
    path.write_text(TRAINING + FLEET8, encoding="utf-8")
    assert main(["run", str(path), "--runs", "1", "--json"]) == 0
    text = capsys.readouterr().out
    doc = json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
    assert doc["metrics"]["tco_usd"]["std_error"] is None
    assert "metrics.tco_usd.std_error" in doc["non_finite"]


def test_an_overloaded_stream_warns_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\nworkload: {kind: job_stream, interarrival_hours: 0.1, chips: 1, "
        f"duration_hours: 4.0}}\n{FLEET8}horizon_days: 1\n",
        encoding="utf-8",
    )
    assert main(["run", str(path), "--runs", "4", "--json"]) == 0
    captured = capsys.readouterr()
    assert captured.err.count("offered load 5 >= 1") == 1
    json.loads(captured.out)


def test_run_engine_plays_a_serving_scenario_request_by_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--engine des`` is simulate's ``engine="des"`` (same numbers for the seed), and a
    bad engine is one line and exit 2 naming the choices."""
    import accelsim as acs

    path = tmp_path / "serve.yaml"
    path.write_text(
        "name: serve\n"
        "workload: {kind: serving, model: llama-3.1-8b, precision: fp8, rate_rps: 4.0,\n"
        "  input_tokens: 500, output_tokens: 100, slo: {ttft_ms: 2000, tpot_ms: 100},\n"
        "  chips_per_replica: 1, horizon_days: 0.002}\n"
        "fleet: [{chip: h100-sxm, count: 2, provider: aws}]\n",
        encoding="utf-8",
    )
    assert main(["run", str(path), "--runs", "3", "--seed", "5", "--engine", "des", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    want = acs.simulate(acs.load_scenario(path), runs=3, seed=5, engine="des")
    assert data["metrics"]["ttft_p50_ms"]["mean"] == pytest.approx(want.mean("ttft_p50_ms"))
    fast = acs.simulate(acs.load_scenario(path), runs=3, seed=5)
    assert want.mean("requests_served") != fast.mean("requests_served")  # another engine ran
    assert main(["run", str(path), "--runs", "3", "--engine", "bogus"]) == 2
    err = capsys.readouterr().err
    assert "'des'" in err
    assert "Traceback" not in err
