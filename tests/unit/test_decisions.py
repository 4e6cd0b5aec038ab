"""Issue 32: decisions that cannot mislead.

No recommendation on a censored number (a run that never finishes, a stream past its
capacity), commitments paid but unused named, an unpriced option named rather than an
error, censored numbers marked as lower bounds wherever printed.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

import accelsim as acs
from accelsim.results import Comparison, Result

LOWER_BOUND_MARK = "≥ "  # accelsim.results._finish.LOWER_BOUND_MARK, written out


def _training(name: str, tco: list[float], finished: list[float]) -> Result:
    n = len(tco)
    return Result(
        name,
        {
            "tco_usd": np.asarray(tco, dtype=float),
            "hardware_cost_usd": np.asarray(tco, dtype=float),
            "time_to_train_days": np.where(np.asarray(finished) > 0, 50.0, 1096.0),
            "finished": np.asarray(finished, dtype=float),
            "training_days": np.full(n, 40.0),
        },
    )


def test_a_cheap_option_that_rarely_finishes_is_not_recommended_and_the_text_says_why() -> None:
    """Cheaper in every paired run, but finishes in 1 of 10: its cost is counted up to the
    horizon, a lower bound. Finishing is a goal at 90 % without any goals given."""
    cheap = _training("cheap", [1.0] * 10, [1.0] + [0.0] * 9)
    dear = _training("dear", [5.0] * 10, [1.0] * 10)
    rec = Comparison({"cheap": cheap, "dear": dear}).recommendation
    assert rec.choice == "dear"
    text = str(rec)
    assert "cheap finishes within its horizon in 10% of runs (needs 90%)" in text
    assert "lower bound" in text


def test_the_finish_share_needed_is_the_goals_confidence() -> None:
    """With goals at confidence 0.5, an option finishing in 6 runs of 10 is an option."""
    cheap = _training("cheap", [1.0] * 10, [1.0] * 6 + [0.0] * 4)
    dear = _training("dear", [5.0] * 10, [1.0] * 10)
    results = {"cheap": cheap, "dear": dear}
    assert Comparison(results).recommendation.choice == "dear"
    loose = acs.Goals(budget_usd=100.0, confidence=0.5)
    assert Comparison(results, goals=loose).recommendation.choice == "cheap"


def test_when_no_option_finishes_none_is_recommended_and_the_closest_is_named() -> None:
    a = _training("a", [1.0] * 10, [1.0] * 3 + [0.0] * 7)
    b = _training("b", [2.0] * 10, [1.0] * 5 + [0.0] * 5)
    rec = Comparison({"a": a, "b": b}).recommendation
    assert not rec.meets_goals
    assert rec.choice == "b"
    assert rec.headline.startswith("none completes its work")


def test_issue_32_v5p_spot_case_recommends_an_option_that_finishes() -> None:
    """70B on 2T tokens: 1,024 H100 on-demand vs 2,048 TPU v5p spot vs 1,024 v6e: the spot
    option finishes in a few runs only and is the cheapest on censored costs."""
    run = acs.TrainingRun(params=70e9, tokens=2e12, framework="pytorch", stage="production")

    def option(name: str, pool: acs.Pool) -> acs.Scenario:
        return acs.Scenario(name=name, workload=run, fleet=[pool])

    options = {
        "h100": option("h100", acs.Pool(chip="h100-sxm", count=1024, provider="aws")),
        "v5p-spot": option(
            "v5p-spot", acs.Pool(chip="tpu-v5p", count=2048, provider="gcp", pricing="spot")
        ),
        "v6e": option("v6e", acs.Pool(chip="tpu-v6e", count=1024, provider="gcp")),
    }
    cmp = acs.compare(options, runs=200, seed=1)
    assert cmp["v5p-spot"].mean("finished") < 0.5  # the case of the issue
    rec = cmp.recommendation
    assert cmp[rec.choice].mean("finished") >= 0.9
    text = str(rec)
    assert "Left out: v5p-spot finishes within its horizon in" in text
    assert "fallback_after_preemptions" in text  # the policy that makes it finish
    # the table marks its censored numbers as lower bounds, and says what the mark means
    table = cmp.as_table(["tco_usd", "time_to_train_days", "mfu"])
    cells = {row[0]: row[1:] for row in table.rows}
    spot = cmp.options.index("v5p-spot")
    assert cells["tco_usd"][spot].startswith(LOWER_BOUND_MARK)
    assert cells["time_to_train_days"][spot].startswith(LOWER_BOUND_MARK)
    assert not cells["mfu"][spot].startswith(LOWER_BOUND_MARK)
    assert not cells["tco_usd"][cmp.options.index("h100")].startswith(LOWER_BOUND_MARK)
    assert "lower bound" in table.title
    # and the fallback the text suggests does make it finish
    fb = options["v5p-spot"].model_copy(
        update={
            "fleet": [
                acs.Pool(
                    chip="tpu-v5p", count=2048, provider="gcp", pricing="spot",
                    fallback_after_preemptions=10,
                )
            ]
        }
    )  # fmt: skip
    assert acs.simulate(fb, runs=50, seed=1).mean("finished") >= 0.9


def test_lower_bounds_are_the_accumulated_metrics_of_an_unfinished_training_run() -> None:
    from accelsim.results._finish import lower_bounds

    res = _training("x", [1.0, 2.0], [1.0, 0.0])
    assert {"tco_usd", "time_to_train_days", "training_days"} <= lower_bounds(res)
    assert "finished" not in lower_bounds(res)
    assert lower_bounds(_training("y", [1.0, 2.0], [1.0, 1.0])) == frozenset()
    # a serving result that sheds requests is not censored at a horizon
    shed = Result("s", {"tco_usd": np.ones(2), "finished": np.array([0.0, 1.0])})
    assert lower_bounds(shed) == frozenset()
    # the one-result summary marks them too
    summary = res.as_table(["tco_usd"])
    assert summary.rows[0][1].startswith(LOWER_BOUND_MARK)


# ---------------------------------------------------------------- unpriced options (item 3)


def _scenario_file(tmp_path, name: str, pool: str) -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(
        f"name: {name}\n"
        "workload: {kind: training, params: 7e9, tokens: 1e11, framework: jax}\n"
        f"fleet:\n  - {pool}\n"
    )
    return str(path)


def test_a_comparison_with_an_unpriced_option_completes_and_names_it() -> None:
    """A chip with no price (a pool without provider) beside a priced one: the cost rule
    runs over the priced options, and the text names the unpriced one and how to price it."""
    run = acs.TrainingRun(params=7e9, tokens=1e11, framework="jax")
    priced = acs.Scenario(
        name="v5p", workload=run, fleet=[acs.Pool(chip="tpu-v5p", count=64, provider="gcp")]
    )
    free = acs.Scenario(
        name="v7", workload=run, fleet=[acs.Pool(chip="tpu-v7", count=64, provider=None)]
    )
    cmp = acs.compare([priced, free], runs=20, seed=1)
    rec = cmp.recommendation
    assert rec.choice == "v5p"
    text = str(rec)
    assert "v7 has no price" in text
    assert "acs.catalog.load" in text
    table = cmp.as_table()
    cells = {row[0]: row[1:] for row in table.rows}
    assert cells["tco_usd"][1] == "no price"  # the cost row stays, marked for v7
    assert cells["tco_usd"][0].startswith("$")


def test_cli_compare_with_an_unpriced_option_exits_0(tmp_path, capsys) -> None:
    from accelsim.cli import main

    a = _scenario_file(tmp_path, "v5p", "{chip: tpu-v5p, count: 64, provider: gcp}")
    b = _scenario_file(tmp_path, "v7", "{chip: tpu-v7, count: 64, provider: null}")
    assert main(["compare", a, b, "--runs", "20"]) == 0
    out = capsys.readouterr().out
    assert "Recommendation: v5p" in out
    assert "v7 has no price" in out
    assert main(["compare", a, b, "--runs", "20", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["recommendation"]["choice"] == "v5p"


def test_json_names_the_lower_bounds(tmp_path, capsys) -> None:
    """A spot run preempted too often to finish: run --json and compare --json list its
    censored metrics under lower_bounds."""
    from accelsim.cli import main

    spot = _scenario_file(
        tmp_path, "spot", "{chip: tpu-v5p, count: 2048, provider: gcp, pricing: spot}"
    )
    spot_file = tmp_path / "spot.yaml"
    spot_file.write_text(spot_file.read_text().replace("tokens: 1e11", "tokens: 2e12"))
    assert main(["run", spot, "--runs", "30", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "tco_usd" in doc["lower_bounds"]
    assert "time_to_train_days" in doc["lower_bounds"]
    assert "mfu" not in doc["lower_bounds"]
    od = _scenario_file(tmp_path, "od", "{chip: tpu-v5p, count: 2048, provider: gcp}")
    assert main(["compare", spot, od, "--runs", "30", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "tco_usd" in doc["lower_bounds"]["spot"]
    assert doc["lower_bounds"]["od"] == []
    assert doc["recommendation"]["choice"] == "od"


def test_report_cards_mark_lower_bounds_and_count_only_finished_runs_as_cheapest() -> None:
    """The cheap option that rarely finishes: its card marks its TCO as a lower bound, it is
    "cheapest" only in the run it finishes."""
    from accelsim.report._question import key_figures

    cheap = _training("cheap", [1.0] * 10, [1.0] + [0.0] * 9)
    dear = _training("dear", [5.0] * 10, [1.0] * 10)
    results = {"cheap": cheap, "dear": dear}
    figures = {f.metric: f.value for f in key_figures(results, "cheap", "training")}
    assert figures["tco_usd"].startswith(LOWER_BOUND_MARK)
    assert figures["time_to_train_days"].startswith(LOWER_BOUND_MARK)
    assert figures["cheapest"] == "10% of runs"
    dear_figures = {f.metric: f.value for f in key_figures(results, "dear", "training")}
    assert dear_figures["cheapest"] == "90% of runs"
    assert not dear_figures["tco_usd"].startswith(LOWER_BOUND_MARK)


# ---------------------------------------------------------------- overloaded streams (item 6)


def test_an_overloaded_stream_fleet_is_not_recommended() -> None:
    """The same stream on 256 chips (offered load about 6: its queue grows to the horizon)
    and on 2,048: the small fleet is cheaper in every run because it does less work."""
    base = acs.load_scenario("examples/shared_onprem_h100_jobstream.yaml")
    busy = base.workload.model_copy(update={"interarrival_hours": acs.Exponential(mean=0.1)})

    def option(name: str, chips: int) -> acs.Scenario:
        pool = acs.Pool(chip="h100-sxm", count=chips, provider="aws")
        return base.model_copy(
            update={
                "name": name,
                "workload": busy,
                "horizon_days": 30,
                "warmup_days": 0,
                "fleet": [pool],
            }
        )

    with pytest.warns(UserWarning, match="offered load"):
        cmp = acs.compare([option("small", 256), option("big", 2048)], runs=8, seed=1)
    assert np.all(cmp["small"].samples("offered_load") >= 1.0)
    assert cmp.prob_less("tco_usd", "small", "big") == 1.0
    rec = cmp.recommendation
    assert rec.choice == "big"
    assert "small keeps up with its job stream in 0% of runs" in str(rec)


# ---------------------------------------------------------------- unused commitments (item 2)


def test_a_commitment_longer_than_the_run_names_the_unused_term() -> None:
    """commit_1y on 1,024 H100 for a ~1-month run pays the whole year: the table and the
    recommendation say how many days it pays for, how many it holds, and the unused share,
    which is ``1 - held / paid`` of the runs' medians."""
    run = acs.TrainingRun(params=70e9, tokens=2e12, framework="pytorch", stage="production")

    def option(name: str, pricing: str) -> acs.Scenario:
        pool = acs.Pool(chip="h100-sxm", count=1024, provider="gcp", pricing=pricing)
        return acs.Scenario(name=name, workload=run, fleet=[pool])

    cmp = acs.compare([option("od", "on_demand"), option("c1y", "commit_1y")], runs=100, seed=1)
    held = cmp["c1y"].samples("held_hours")
    assert np.median(held) / 24 < 60  # a run of about a month
    unused = float(np.median(1 - held / (365.25 * 24)))
    words = "c1y pays for 365 d of reserved term on 1,024 x h100-sxm commit_1y and holds it"
    assert words in str(cmp.recommendation)
    assert f"{unused:.0%} of what it pays for is unused" in str(cmp.recommendation)
    assert words in cmp.table()

    from accelsim.results._commitment import unused_terms

    (term,) = unused_terms(cmp["c1y"])
    assert term.paid_days == pytest.approx(365.25, rel=1e-6)
    assert term.held_days == pytest.approx(np.median(held) / 24)
    assert term.unused_share == pytest.approx(unused)
    assert unused_terms(cmp["od"]) == []
    # a term_share that matches the run's length leaves little unused: no note
    short = option("c1y", "commit_1y").model_copy(
        update={
            "fleet": [
                acs.Pool(
                    chip="h100-sxm", count=1024, provider="gcp", pricing="commit_1y",
                    term_share=0.05,
                )
            ]
        }
    )  # fmt: skip
    assert all(t.unused_share < 0.5 for t in unused_terms(acs.simulate(short, runs=50, seed=1)))


def test_cli_run_names_the_unused_term(capsys) -> None:
    """The example carries a quarter of a one-year term (91 d) for a run of about a month."""
    from accelsim.cli import main

    path = "examples/llama70b_h100_commit_1y.yaml"
    assert main(["run", path, "--runs", "20"]) == 0
    assert "pays for 91 d of reserved term on 1,024 x h100-sxm commit_1y" in capsys.readouterr().out
    assert main(["run", path, "--runs", "20", "--json"]) == 0
    (term,) = json.loads(capsys.readouterr().out)["unused_terms"]
    assert term["paid_days"] == pytest.approx(0.25 * 365.25)
    assert 0 < term["unused_share"] < 1


# ---------------------------------------------------------------- censored breakdowns (item 5)


def test_a_censored_time_breakdown_adds_up_to_the_days_trained() -> None:
    """15T tokens on 2,048 spot v5p: the run's failure-free compute alone exceeds the
    horizon. In every run, finished or not, compute_days + failure_overhead_days is
    training_days, so compute_days never exceeds it (it is the compute done by the horizon
    in a run cut there)."""
    run = acs.TrainingRun(params=70e9, tokens=15e12, framework="jax", stage="production")
    pool = acs.Pool(chip="tpu-v5p", count=2048, provider="gcp", pricing="spot")
    res = acs.simulate(acs.Scenario(name="s", workload=run, fleet=[pool]), runs=100, seed=1)
    assert np.mean(res.samples("finished")) < 0.5
    compute, overhead = res.samples("compute_days"), res.samples("failure_overhead_days")
    training = res.samples("training_days")
    assert np.all(compute <= training * (1 + 1e-12))
    np.testing.assert_allclose(compute + overhead, training, rtol=1e-9)
    assert np.all(compute >= 0)
    assert np.all(overhead >= 0)


# ---------------------------------------------------------------- when a fleet exists (item 4)


def _stream_option(name: str, chips: int, horizon: float) -> acs.Scenario:
    base = acs.load_scenario("examples/shared_onprem_h100_jobstream.yaml")
    pool = acs.Pool(chip="h100-sxm", count=chips, provider="on_prem", pricing="on_prem")
    return base.model_copy(
        update={
            "name": name, "horizon_days": horizon, "warmup_days": 0, "fleet": [pool],
            "assumptions": acs.Assumptions(),  # the default lead-time prior
        }
    )  # fmt: skip


def test_streams_on_a_fleet_that_arrives_after_the_horizon_are_not_compared_at_zero() -> None:
    """The on-prem lead-time prior is longer than a 60-day horizon: no job runs and both
    options cost $0. The result says so, and no option is recommended on $0 vs $0."""
    cmp = acs.compare([_stream_option("a", 512, 60), _stream_option("b", 1024, 60)], runs=4, seed=1)
    assert np.all(cmp["a"].samples("tco_usd") == 0)
    assert np.all(cmp["a"].samples("jobs_completed") == 0)
    rec = cmp.recommendation
    assert not rec.meets_goals
    assert "a's fleet arrives after the horizon in 100% of runs" in str(rec)
    note = cmp["a"].unfinished_note()
    assert note is not None
    assert "the fleet arrives after the horizon" in note
    assert "arrives after the horizon" in cmp["a"].summary().splitlines()[0]


def test_a_training_run_in_a_mix_waits_for_no_lead_time_like_every_workload_on_the_fleet() -> None:
    """A mix's fleet is in service from time 0 for every workload: the research stream runs
    from day 0, and the training run starts when its porting and optimisation end, not
    after an on-prem lead time past the horizon (it never started, and said queue 0)."""
    s = acs.load_scenario("examples/org_fleet.yaml")
    pool = acs.Pool(chip="h100-sxm", count=512, provider="on_prem", pricing="on_prem")
    mix = acs.Scenario.model_validate(
        {**s.model_dump(), "workloads": [s.workloads[0], s.workloads[2]], "fleet": [pool]}
    )
    res = acs.simulate(mix, runs=6, seed=1)
    assert np.all(res.samples("research.jobs_completed") > 0)  # the fleet is there
    assert np.all(res.samples("llm.finished") == 1)
    assert np.all(res.samples("llm.training_days") > 0)
    assert np.all(res.samples("llm.time_to_train_days") < mix.horizon_days)


# ---------------------------------------------------------------- the report (items 9, 10)


def test_defaults_the_user_never_set_are_not_attributed_to_you() -> None:
    """The serving example sets rate_rps and prefill_chunk_tokens, not burstiness or
    growth_per_month: those are defaults, not "you"."""
    from accelsim.report._assumptions import assumptions

    s = acs.load_scenario("examples/serve_llama70b_h100.yaml")
    res = acs.simulate(s, runs=20, seed=1)
    rows = {a.name: a for a in assumptions({s.name: res}, {s.name: s})}
    assert rows["workload.rate_rps"].set_by == "you"
    assert rows["workload.prefill_chunk_tokens"].set_by == "you"
    for name in ("workload.burstiness", "workload.growth_per_month"):
        assert not rows[name].user_set, name
        assert rows[name].set_by != "you", name


def test_tco_drivers_leave_out_inputs_without_effect_by_construction(monkeypatch) -> None:
    """On a cloud pool energy costs $0 (it is in the hourly price): PUE, the electricity
    price and the emission factor cannot drive the TCO, and are never listed as drivers,
    however many are shown (noise gives them a non-zero rank correlation)."""
    from accelsim.report import _tables
    from accelsim.report._tables import driver_grids

    monkeypatch.setattr(_tables, "TOP_DRIVERS", 1000)
    s = acs.load_scenario("examples/llama70b_h100_aws.yaml")
    res = acs.simulate(s, runs=400, seed=1)
    assert not np.any(res.samples("energy_cost_usd"))
    assert "assumptions.pue" in res.inputs
    (grid,) = driver_grids({s.name: res}, ["tco_usd"])
    listed = {row[0].main for row in grid.rows}
    assert listed
    assert not listed & {
        "assumptions.pue", "assumptions.emission_kg_per_kwh", "assumptions.electricity_usd_per_kwh"
    }  # fmt: skip


# ---------------------------------------------------------------- serving cards (items 7, 8)


def test_a_serving_card_shows_chips_at_peak_and_on_average_not_the_pool_cap() -> None:
    """Under follow_demand the pool is a cap: the card says "up to" it, and the chips the
    replicas hold at peak and on average (medians), which are what is paid for."""
    from accelsim.report._question import describe_option

    s = acs.load_scenario("examples/serve_llama70b_h100.yaml")
    demand = s.model_copy(
        update={
            "workload": s.workload.model_copy(update={"scaling": "follow_demand"}),
            "fleet": [acs.Pool(chip="h100-sxm", count=2048, provider="aws")],
        }
    )
    res = acs.simulate(demand, runs=20, seed=1)
    per = res.samples("chips_per_replica")
    peak = float(np.median(res.samples("replicas_peak") * per))
    mean = float(np.median(res.samples("replicas_mean") * per))
    assert peak < 2048
    text = describe_option(res, demand)
    assert text.startswith("up to 2,048 × h100-sxm")
    assert f"{peak:,.0f} chips at peak, {mean:,.0f} on average" in text


def test_an_endpoint_states_the_share_of_runs_serving_every_request_not_p_finish() -> None:
    serving = Result(
        "serve", {"finished": np.array([1.0, 0.0]), "requests_dropped": np.array([0.0, 5.0])}
    )
    note = serving.unfinished_note()
    assert note is not None
    assert note.startswith("P(every request served) 50.0%")
    training = Result("t", {"finished": np.array([1.0, 0.0]), "time_to_train_days": np.ones(2)})
    assert str(training.unfinished_note()).startswith("P(finish) 50.0%")


# ---------------------------------------------------------------- names are text (item 11)


def _priced(name: str, tco: float) -> Result:
    return Result(
        name,
        {
            "tco_usd": np.full(4, tco),
            "hardware_cost_usd": np.full(4, tco),
            "time_to_train_days": np.full(4, 10.0),
        },
    )


def test_option_names_are_drawn_as_written_not_as_mathtext() -> None:
    """``$5/h on $spot`` is a mathtext pair to matplotlib, and a legend drops a label that
    starts with ``_``: both names appear verbatim in the figures' text."""
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from accelsim import plot

    results = {"$5/h on $spot": _priced("a", 1.0), "_draft": _priced("b", 2.0)}
    fig = Figure()
    ax = plot.ecdf(results, "tco_usd", ax=fig.add_subplot())
    fig.savefig(io.BytesIO(), format="svg")  # draws every text: no mathtext error
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(legend) == 2
    shown = [t.replace("\\$", "$").strip() for t in legend]
    assert shown == ["$5/h on $spot", "_draft"]
    ax = plot.tco_breakdown(results, ax=Figure().add_subplot())
    ticks = [t.get_text().replace("\\$", "$").strip() for t in ax.get_xticklabels()]
    assert ticks == ["$5/h on $spot", "_draft"]
    assert plot.pareto_frontier(results, "time_to_train_days", "tco_usd") == ("$5/h on $spot",)


def test_bidi_controls_in_a_name_are_refused() -> None:
    """U+202E in a name reverses the sentence it is shown in: refused at the boundary."""
    run = acs.TrainingRun(params=7e9, tokens=1e11)
    pool = acs.Pool(chip="h100-sxm", count=64, provider="aws")
    with pytest.raises(ValueError, match="U\\+202E"):
        acs.Scenario(name="gpu\u202eupt", workload=run, fleet=[pool])
    with pytest.raises(ValueError, match="U\\+2067"):
        Comparison({"a\u2067b": _priced("a", 1.0)})


# ---------------------------------------------------------------- inputs that are mistakes (12)


def test_an_slo_typed_in_seconds_warns_naming_the_unit() -> None:
    from accelsim.scenario import SloUnitWarning

    with pytest.warns(SloUnitWarning, match=r"ttft_ms is in milliseconds.*ttft_ms=2000"):
        acs.SLO(ttft_ms=2, tpot_ms=100)
    with pytest.warns(SloUnitWarning, match=r"tpot_ms is in milliseconds.*tpot_ms=100"):
        acs.SLO(ttft_ms=2000, tpot_ms=0.1)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        acs.SLO(ttft_ms=200, tpot_ms=20)  # fast, but achieved: no warning


# ---------------------------------------------------------------- a P95 wait goal (item 13)


def _stream(name: str, mean: float, p95: float, tco: float) -> Result:
    return Result(
        name,
        {
            "tco_usd": np.full(10, tco),
            "mean_wait_hours": np.full(10, mean),
            "p95_wait_hours": np.full(10, p95),
        },
    )


def test_a_p95_wait_goal_reads_the_p95_wait_and_the_mean_goal_the_mean() -> None:
    """Short mean wait, long tail: under a 10-h limit the mean goal is met, the P95 goal
    is not, and each is named by what it reads."""
    from accelsim.results import goals_table

    results = {"tail": _stream("tail", 1.0, 20.0, 1.0), "even": _stream("even", 4.0, 8.0, 2.0)}
    mean_goal = acs.Goals(max_wait_hours=10)
    p95_goal = acs.Goals(max_p95_wait_hours=10)
    assert Comparison(results, goals=mean_goal).recommendation.choice == "tail"
    rec = Comparison(results, goals=p95_goal).recommendation
    assert rec.choice == "even"
    assert "P95 wait of jobs <= 10 h" in str(rec)
    assert "mean wait <= 10 h" in str(goals_table(results, mean_goal))


def test_cli_offers_the_p95_wait_goal(capsys) -> None:
    from accelsim.cli import main

    assert main(["compare", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--max-p95-wait-hours" in out
    assert "p95_wait_hours" in out


def test_a_mix_marks_only_its_unfinished_training_run_not_the_fleet() -> None:
    """A mix's fleet is priced over the whole horizon: its TCO is no lower bound when its
    training run does not finish; the run's own time is."""
    from accelsim.results import lower_bounds

    data = {
        "tco_usd": np.ones(2),
        "finished": np.array([1.0, 0.0]),
        "llm.time_to_train_days": np.array([5.0, 30.0]),
        "llm.training_days": np.array([4.0, 29.0]),
        "llm.finished": np.array([1.0, 0.0]),
        "chat.requests_dropped": np.zeros(2),
    }
    assert lower_bounds(Result("mix", data)) == {"llm.time_to_train_days", "llm.training_days"}


# ---------------------------------------------------------------- validate agrees with run (16)


def test_validate_refuses_the_multi_pool_training_run_that_run_refuses(tmp_path, capsys) -> None:
    """3,132 spot H200 beside another pool: the shared-cluster engine refuses a job that
    expects over a million interruptions. validate said the file was fine; both now refuse
    it, with the same one-line reason and exit 2."""
    from accelsim.cli import main

    path = tmp_path / "two.yaml"
    path.write_text(
        "name: two\n"
        "workload: {kind: training, params: 70e9, tokens: 2e12}\n"
        "fleet:\n"
        "  - {chip: h200, count: 3132, provider: aws, pricing: spot}\n"
        "  - {chip: l4, count: 3, provider: runpod}\n"
    )
    for command in (["validate", str(path)], ["run", str(path), "--runs", "2"]):
        assert main(command) == 2, command
        err = capsys.readouterr().err
        assert "expects" in err
        assert "interruptions" in err
        assert "Traceback" not in err
