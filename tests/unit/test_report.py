"""acs.report and ``accelsim report``: what the page says, escaped, and where it comes from.

The page is checked as text (tags stripped), against numbers computed here from the same
results and catalog; tests/unit/test_report_browser.py loads it in Chromium.
"""

from __future__ import annotations

import html as html_lib
import re
from pathlib import Path

import numpy as np
import pytest

import accelsim as acs
from accelsim import catalog
from accelsim.cli import main
from accelsim.report import render_html
from accelsim.report._calibration import calibration_status, status_from_pages
from accelsim.report._tables import rank_correlations
from accelsim.results import format_value

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
HOSTILE = "<script>alert(1)</script>"


def _text(page: str) -> str:
    """The page's visible text, whitespace collapsed, entities decoded."""
    body = re.sub(r"<style>.*?</style>|<svg.*?</svg>", " ", page, flags=re.S)
    return html_lib.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body)))


@pytest.fixture(scope="module")
def pair() -> tuple[acs.Comparison, list[acs.Scenario]]:
    gpu = acs.load_scenario(EXAMPLES / "llama70b_h100_aws.yaml")
    tpu = acs.load_scenario(EXAMPLES / "llama70b_tpu_v5p_gcp.yaml")
    return acs.compare([gpu, tpu], runs=200, seed=11), [gpu, tpu]


@pytest.fixture(scope="module")
def page(pair: tuple[acs.Comparison, list[acs.Scenario]]) -> str:
    cmp, scenarios = pair
    return render_html(cmp, scenarios=scenarios, reproduce="accelsim report a.yaml b.yaml")


def test_question_recommendation_and_key_figures(
    pair: tuple[acs.Comparison, list[acs.Scenario]], page: str
) -> None:
    cmp, _ = pair
    text = _text(page)
    assert "GPU or TPU for training a 70B-parameter model on 2T tokens?" in text
    rec = cmp.recommendation
    assert f"Recommendation: {rec.headline}" in text
    for reason in rec.rationale:
        assert reason in text
    for name in cmp.options:
        res = cmp[name]
        assert f"Expected TCO {format_value('tco_usd', res.mean('tco_usd'))}" in text
        median = format_value("time_to_train_days", res.quantile("time_to_train_days", 0.5))
        assert f"Time to a trained model {median}" in text
    share = float(
        np.mean(cmp[cmp.options[0]].samples("tco_usd") < cmp[cmp.options[1]].samples("tco_usd"))
    )
    assert f"Cheapest finished option in {share:.0%} of runs" in text


def test_sections_of_a_training_comparison(page: str) -> None:
    for section in (
        "recommendation",
        "options",
        "distributions",
        "cost",
        "time",
        "drivers",
        "assumptions",
        "calibration",
        "reproduce",
        "metrics",
    ):
        assert f'<section id="{section}"' in page
    assert 'id="serving"' not in page
    assert page.count("<svg") == 4


def test_where_the_time_goes_adds_up(pair: tuple[acs.Comparison, list[acs.Scenario]]) -> None:
    from accelsim.report._figures import phase_samples

    cmp, _ = pair
    for name in cmp.options:
        res = cmp[name]
        total = sum(phase_samples(res).values())
        np.testing.assert_allclose(total, res.samples("time_to_train_days"), rtol=1e-12)


def test_the_time_table_names_what_precedes_the_first_step(
    pair: tuple[acs.Comparison, list[acs.Scenario]],
) -> None:
    """'Before the first step' is the longer of the lead time and porting with optimisation,
    so the table shows those two (it showed porting alone: 0 d beside a 4 d wait)."""
    from accelsim.report._tables import time_grid

    cmp, _ = pair
    grid = time_grid(dict(cmp.results))
    labels = [row[0].main for row in grid.rows]
    assert labels[:3] == [
        "capacity lead time or quota wait",
        "porting and optimisation",
        "before the first step (the longer of the two)",
    ]
    for res in cmp.results.values():
        before = res.samples("time_to_train_days") - res.samples("training_days")
        longer = np.maximum(res.samples("lead_time_days"), res.samples("preparation_days"))
        np.testing.assert_allclose(before, longer, rtol=1e-9)  # a run alone: no queue


def test_assumptions_have_sources_dates_and_user_marks() -> None:
    s = acs.load_scenario(EXAMPLES / "llama70b_h100_aws.yaml")
    mine = s.model_copy(
        update={"assumptions": acs.Assumptions(lead_time_days=acs.Uniform(low=3, high=9))}
    )
    page = render_html(acs.simulate(mine, runs=100, seed=2), scenarios=mine)
    rows = re.findall(r"<tr( class=\"user\")?>\s*<th scope=\"row\">([^<]+)", page)
    marked = {name for user, name in rows if user}
    assert marked == {"assumptions.lead_time_days.on_demand"}
    assert "uniform(low=3, high=9)" in page
    prior = catalog.priors().by_name()["failure_rate_per_chip_hour"]
    table = page[page.index('<section id="assumptions"') :]
    row = table[table.index("assumptions.failure_rate_per_chip_hour") :].split("</tr>")[0]
    for src in prior.sources:
        assert f'href="{src.url}"' in row
        assert f"({src.as_of.isoformat()})" in row


def test_reproduce_facts(pair: tuple[acs.Comparison, list[acs.Scenario]], page: str) -> None:
    _, scenarios = pair
    text = _text(page)
    assert "seed (root entropy) 11" in text
    assert "runs 200 per option, paired" in text
    assert f"accelsim version {acs.__version__}" in text
    offers = [
        catalog.price(p.chip, provider=p.provider, pricing=p.pricing)  # type: ignore[arg-type]
        for s in scenarios
        for p in s.fleet
        if p.provider
    ]
    oldest = min(o.as_of for o in offers)
    assert f"oldest price used {oldest.isoformat()}" in text
    assert "reproduce with accelsim report a.yaml b.yaml" in text


def test_calibration_status_is_current_with_the_pages() -> None:
    assert calibration_status() == status_from_pages(ROOT / "docs"), (
        "the calibration pages changed: python -m accelsim.report._calibration docs"
    )


def test_calibration_shown_is_the_training_claim(page: str) -> None:
    t = calibration_status()["training"]
    assert f"{t['claim_covered']} of {t['claim_counted']} published figures" in _text(page)


def test_drivers_are_acs_sensitivity_spearman() -> None:
    s = acs.load_scenario(EXAMPLES / "llama70b_h100_aws.yaml")
    res = acs.simulate(s, runs=200, seed=5)
    mine = rank_correlations(res, "tco_usd")
    theirs = dict(acs.sensitivity(s, "tco_usd", runs=200, seed=5))
    assert mine.keys() == theirs.keys()
    for k, rho in theirs.items():
        assert mine[k] == pytest.approx(rho, abs=1e-12)


def test_drivers_left_out_when_asked_or_too_few_runs() -> None:
    s = acs.load_scenario(EXAMPLES / "llama70b_h100_aws.yaml")
    res = acs.simulate(s, runs=120, seed=1)
    assert "Spearman rank correlation" in render_html(res, scenarios=s)
    assert "sensitivity=False" in render_html(res, scenarios=s, sensitivity=False)
    few = acs.simulate(s, runs=20, seed=1)
    assert "20 runs are too few" in render_html(few, scenarios=s)


def test_every_user_string_is_escaped(tmp_path: Path) -> None:
    s = acs.load_scenario(EXAMPLES / "prototype_8b_h100.yaml")
    hostile = s.model_copy(update={"name": HOSTILE, "description": "<b onmouseover=x>d</b>"})
    other = s.model_copy(update={"name": "other"})
    cmp = acs.compare([hostile, other], runs=100, seed=1)
    page = render_html(cmp, scenarios=[hostile, other], title="<i>t</i>", reproduce="<u>r</u>")
    assert "<script" not in page
    for raw in ("<b onmouseover", "<i>t</i>", "<u>r</u>"):
        assert raw not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    # The file name reaches the page through the CLI's reproduce line.
    name = tmp_path / "<img src=x onerror=alert(1)>.yaml"
    name.write_text((EXAMPLES / "prototype_8b_h100.yaml").read_text(encoding="utf-8"))
    out = tmp_path / "cli.html"
    assert main(["report", str(name), "-o", str(out), "--runs", "100", "--no-sensitivity"]) == 0
    written = out.read_text(encoding="utf-8")
    assert "<img src=x" not in written
    assert "&lt;img src=x onerror=alert(1)&gt;.yaml" in written


def test_cli_report_compares_several_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.html"
    files = [str(EXAMPLES / "llama70b_h100_aws.yaml"), str(EXAMPLES / "llama70b_h100_jax.yaml")]
    assert main(["report", *files, "-o", str(out), "--runs", "100", "--seed", "3"]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    text = _text(out.read_text(encoding="utf-8"))
    assert "Recommendation:" in text
    assert f"accelsim report {' '.join(files)} --runs 100 --seed 3" in text
    assert "seed (root entropy) 3" in text


def _synthetic(name: str, metrics: dict[str, float], runs: int = 200) -> acs.Result:
    rng = np.random.default_rng(0)
    data = {m: v * rng.lognormal(0.0, 0.1, runs) for m, v in metrics.items()}
    data["tco_usd"] = sum(v for m, v in data.items() if m.endswith("_cost_usd"))
    return acs.Result(name, data, seed_entropy=9)


def test_serving_sections_follow_the_metrics() -> None:
    res = _synthetic(
        "serve",
        {
            "usd_per_million_output_tokens": 1.2,
            "replicas_peak": 16.0,
            "ttft_p99_ms": 900.0,
            "slo_attainment": 0.99,
            "hardware_cost_usd": 5e5,
            "energy_cost_usd": 2e4,
        },
    )
    page = render_html(res)
    text = _text(page)
    assert "Cost per 1M output tokens" in text
    assert f"${res.mean('usd_per_million_output_tokens'):,.3g}" in text
    assert '<section id="serving"' in page
    assert '<section id="time"' not in page
    s = calibration_status()["serving"]
    assert f"{s['coverage_pct']:.1f}%" in text
    assert "Recommendation" not in text


def test_unfinished_runs_are_said_before_the_answer() -> None:
    """An endpoint that serves nothing in some runs (its replica cannot hold the model)
    prices its few tokens at huge figures: the page says why at its top, in the summary's
    words, before any figure; a page whose runs all finish says nothing of it."""
    res = _synthetic(
        "serve",
        {"usd_per_million_output_tokens": 1.2, "replicas_peak": 4.0, "hardware_cost_usd": 5e5},
    )
    finished = np.zeros(res.runs)
    finished[::4] = 1.0
    offline = np.where(finished == 1.0, 900.0, 0.0)
    data = {**res.data, "finished": finished, "requests_dropped": 1.0 - finished}
    data["offline_tokens_per_s_per_chip"] = offline
    page = render_html(acs.Result("serve", data, seed_entropy=9))
    text = _text(page)
    note = acs.Result("serve", data).unfinished_note()
    assert note is not None
    assert "in 75.0% of runs a replica's memory does not hold" in note
    assert f"serve: {note}" in text
    assert text.index(note) < text.index("Cost per 1M output tokens")
    assert "P(finish)" not in _text(render_html(res))


def test_serving_comparison_of_the_examples() -> None:
    a = acs.load_scenario(EXAMPLES / "serve_llama70b_h100.yaml")
    b = acs.load_scenario(EXAMPLES / "serve_llama70b_tpu_v6e.yaml")
    cmp = acs.compare([a, b], runs=120, seed=4)
    page = render_html(cmp, scenarios=[a, b])
    text = _text(page)
    assert "for serving llama-3.1-70b at ~" in text
    for name in cmp.options:
        cost = cmp[name].mean("usd_per_million_output_tokens")
        assert f"Cost per 1M output tokens ${cost:,.3g}" in text
    assert '<section id="serving"' in page
    assert '<section id="time"' not in page
    assert f"Recommendation: {cmp.recommendation.headline}" in text
    assert "workload.rate_rps" in text  # the request rate is an input, with its spread


def test_job_stream_sections_follow_the_metrics() -> None:
    res = _synthetic(
        "stream", {"mean_wait_hours": 8.0, "utilization": 0.7, "hardware_cost_usd": 4e6}
    )
    text = _text(render_html(res))
    assert "how long do jobs wait?" in text
    assert "Mean queue wait" in text
    assert "queueing theory" in text


def test_report_writes_the_file_and_checks_scenario_names(tmp_path: Path) -> None:
    s = acs.load_scenario(EXAMPLES / "llama70b_h100_aws.yaml")
    res = acs.simulate(s, runs=50, seed=1)
    out = acs.report(res, tmp_path / "one.html", scenarios=s, sensitivity=False)
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    with pytest.raises(ValueError, match="match no option"):
        render_html(res, scenarios={"nope": s})
    text = _text(render_html(res))
    assert "pass scenarios=" in text  # without scenarios the page says what it cannot tell


def test_no_option_is_badged_recommended_when_none_meets_the_goals() -> None:
    """A comparison where no option meets its goals heads the page with "none meets the
    goals (closest: ...)" and badges no card "recommended"."""
    from accelsim.report import render_html

    run = acs.TrainingRun(params=7e9, tokens=1e11)
    a = acs.Scenario(name="a", workload=run, fleet=[acs.Pool(chip="h100-sxm", count=64,
                     provider="aws")])  # fmt: skip
    b = acs.Scenario(name="b", workload=run, fleet=[acs.Pool(chip="h100-sxm", count=32,
                     provider="aws")])  # fmt: skip
    cmp = acs.compare([a, b], runs=200, seed=3, goals=acs.Goals(deadline_days=0.01))
    rec = cmp.recommendation
    assert not rec.meets_goals
    page = render_html(cmp, sensitivity=False)
    assert f"none meets the goals (closest: {rec.choice})" in page
    assert 'class="badge">recommended' not in page


def test_options_tied_on_tco_share_the_cheapest_runs() -> None:
    """Two layouts of one fixed fleet cost the same in every run: 50 % each, not 100 % to
    the first listed (the rule of ``size_fleet``, ``results.prob_lowest``)."""
    from accelsim.report._question import key_figures

    tco = np.array([5.0, 6.0, 7.0, 8.0])
    results = {
        "a": acs.Result(scenario_name="a", data={"tco_usd": tco}),
        "b": acs.Result(scenario_name="b", data={"tco_usd": tco.copy()}),
        "c": acs.Result(scenario_name="c", data={"tco_usd": tco + np.array([0.0, 0.0, 1.0, 1.0])}),
    }
    shares = {
        name: next(
            f.value for f in key_figures(results, name, "training") if f.metric == "cheapest"
        )
        for name in results
    }
    # runs 0-1: a three-way tie (1/3 each); runs 2-3: a and b tie (1/2 each)
    assert shares == {"a": "42% of runs", "b": "42% of runs", "c": "17% of runs"}


def test_the_cost_table_says_why_cloud_energy_is_zero() -> None:
    """A cloud's hourly price includes power: the energy line reads $0 while energy_kwh
    counts it, and the caption says so (only where that happens)."""
    from accelsim.report._tables import cost_grid

    def result(energy_usd: float) -> acs.Result:
        data = {
            "tco_usd": np.full(4, 100.0),
            "hardware_cost_usd": np.full(4, 100.0 - energy_usd),
            "energy_cost_usd": np.full(4, energy_usd),
            "energy_kwh": np.full(4, 50.0),
        }
        return acs.Result(scenario_name="x", data=data)

    cloud = cost_grid({"cloud": result(0.0)})
    owned = cost_grid({"owned": result(10.0)})
    assert cloud is not None
    assert owned is not None
    assert "hourly price includes the power" in cloud.caption
    assert "hourly price includes the power" not in owned.caption
