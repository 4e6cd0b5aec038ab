"""The study API's contract: compare's runs/stores/names, runs=1, Result equality, and one
argument convention for simulate / compare / sweep / sensitivity."""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest

import accelsim as acs
from accelsim.engines import BLOCK_RUNS

W = acs.TrainingRun(params=7e9, tokens=1e11)


def gpu(name: str = "gpu", count: int = 64) -> acs.Scenario:
    return acs.Scenario(
        name=name, workload=W, fleet=[acs.Pool(chip="h100-sxm", count=count, provider="aws")]
    )


def tpu() -> acs.Scenario:
    return acs.Scenario(
        name="tpu", workload=W, fleet=[acs.Pool(chip="tpu-v5p", count=128, provider="gcp")]
    )


def test_two_scenarios_of_one_name_are_an_error_naming_it() -> None:
    with pytest.raises(ValueError, match="two scenarios are named 'gpu'"):
        acs.compare([gpu(), gpu(count=128)], runs=10, seed=1)
    cmp = acs.compare([gpu(), gpu("big", 128)], runs=10, seed=1)
    assert cmp.options == ("gpu", "big")
    with pytest.raises(ValueError, match="at least one"):
        acs.compare([], runs=10, seed=1)


def test_auto_runs_give_every_option_the_same_paired_runs() -> None:
    """Each option stops where its own target holds; the earlier ones are extended to the
    longest, and are then exactly the fixed study of that length (so paired run for run)."""
    target = {"tco_usd": 0.02}
    alone = {
        s.name: acs.simulate(s, runs="auto", target=target, seed=3, progress=False)
        for s in (gpu(), tpu())
    }
    assert alone["gpu"].runs != alone["tpu"].runs  # the case the issue saw fail
    cmp = acs.compare([gpu(), tpu()], runs="auto", target=target, seed=3, progress=False)
    longest = max(r.runs for r in alone.values())
    assert cmp["gpu"].runs == cmp["tpu"].runs == longest
    for name, s in (("gpu", gpu()), ("tpu", tpu())):
        fixed = acs.simulate(s, runs=longest, seed=3, progress=False)
        np.testing.assert_array_equal(cmp[name].samples("tco_usd"), fixed.samples("tco_usd"))
        # where its own target was met is kept
        assert cmp[name].extras["precision"] == alone[name].extras["precision"]
    p = cmp.prob_less("tco_usd", "tpu", "gpu")
    assert p == np.mean(cmp["tpu"].samples("tco_usd") < cmp["gpu"].samples("tco_usd"))


def test_a_comparison_refuses_options_of_different_run_counts() -> None:
    a = acs.Result("a", {"tco_usd": np.zeros(3)})
    b = acs.Result("b", {"tco_usd": np.zeros(4)})
    with pytest.raises(ValueError, match="same number of runs"):
        acs.Comparison({"a": a, "b": b})


def test_each_option_gets_its_own_store_and_resumes_from_it(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    runs = 2 * BLOCK_RUNS
    options = {"a": gpu(), "b": gpu("b", 128)}
    first = acs.compare(options, runs=runs, seed=4, store=tmp_path / "cmp", progress=False)
    assert sorted(p.name for p in (tmp_path / "cmp").iterdir()) == ["a", "b"]
    again = acs.compare(
        options, runs=runs, seed=4, store=tmp_path / "cmp", resume=True, progress=False
    )
    assert again == first
    for k in options:
        assert first[k] == acs.simulate(options[k], runs=runs, seed=4, progress=False)
    paths = {"a": tmp_path / "a.sqlite", "b": tmp_path / "b.sqlite"}
    assert acs.compare(options, runs=runs, seed=4, store=paths, progress=False) == first
    assert paths["a"].exists()
    assert paths["b"].exists()


def test_bad_compare_stores_are_refused_before_anything_runs(tmp_path: Path) -> None:
    options = {"a": gpu(), "b": gpu("b", 128)}
    with pytest.raises(ValueError, match=r"missing \['b'\]"):
        acs.compare(options, runs=10, store={"a": tmp_path / "a.db"})
    with pytest.raises(ValueError, match="same store"):
        acs.compare(options, runs=10, store={"a": tmp_path / "x.db", "b": tmp_path / "x.db"})
    with pytest.raises(ValueError, match="one store holds one study"):
        acs.compare(options, runs=10, store=tmp_path / "one.sqlite")
    with pytest.raises(ValueError, match="cannot name a store"):
        acs.compare({"a/b": gpu()}, runs=10, store=tmp_path / "d")
    with pytest.raises(ValueError, match=r'runs="auto"\) takes no store'):
        acs.compare(options, runs="auto", target={"tco_usd": 0.1}, store=tmp_path / "d")
    assert list(tmp_path.iterdir()) == []


def test_one_run_is_a_study_whose_summaries_are_its_value() -> None:
    """runs=1 on both engines: quantiles and intervals are the run's value, no nan but the
    standard error, which every text shows as n/a."""
    for engine in ("analytic", "des"):
        res = acs.simulate(gpu(), runs=1, seed=2, engine=engine, progress=False)
        assert res.runs == 1
        x = float(res.samples("tco_usd")[0])
        assert np.isfinite(x)
        assert res.interval("tco_usd", 0.9) == (x, x)
        assert res.quantile("tco_usd", 0.37) == x
        stats = res.stats("tco_usd")
        assert np.isnan(stats.pop("std_error"))
        assert set(stats.values()) == {x}
        assert "± n/a" in res.summary(["tco_usd"])
        assert "nan" not in res.summary()
        # the first run of a larger study with the same seed
        assert acs.simulate(gpu(), runs=5, seed=2, engine=engine).samples("tco_usd")[0] == x
    cmp = acs.compare([gpu(), gpu("b", 128)], runs=1, seed=2)
    assert "nan" not in cmp.table()
    assert cmp.prob_less("tco_usd", "b", "gpu") in (0.0, 1.0)


def test_one_run_of_a_trace_replay(tmp_path: Path) -> None:
    """A single replay of a trace: one DES run, its jobs all done."""
    trace = tmp_path / "jobs.csv"
    trace.write_text("submit,chips,duration\n0,8,7200\n3600,16,10800\n5400,8,3600\n")
    s = acs.Scenario(
        name="replay",
        workload=acs.Trace(path=str(trace)),
        fleet=[acs.Pool(chip="h100-sxm", count=16, provider="aws")],
        horizon_days=60,
    )
    res = acs.simulate(s, runs=1, seed=1, progress=False)
    assert res.runs == 1
    assert res.engine == "des"
    one = {m: float(res.samples(m)[0]) for m in res.metrics}
    assert one["jobs_arrived"] == one["jobs_completed"] == 3  # 60 days hold 6 h of work
    assert one["jobs_running_at_horizon"] == one["jobs_queued_at_horizon"] == 0
    assert res.quantile("usd_per_completed_job", 0.05) == one["usd_per_completed_job"]


def test_results_are_equal_when_the_same_study_bit_for_bit() -> None:
    a = acs.simulate(gpu(), runs=300, seed=11)
    b = acs.simulate(gpu(), runs=300, seed=11)
    assert a == b
    assert a == b
    assert hash(a) == hash(b)
    assert a != acs.simulate(gpu(), runs=300, seed=12)
    assert a != acs.simulate(gpu(), runs=299, seed=11)
    assert a != acs.simulate(gpu("other"), runs=300, seed=11)
    assert a != "a result"
    # one bit of one run differs: unequal
    data = dict(a.data)
    x = data["tco_usd"].copy()
    x[17] = np.nextafter(x[17], np.inf)
    assert acs.Result(a.scenario_name, data | {"tco_usd": x}, a.seed_entropy, a.engine, a.info,
                      a.inputs, a.extras) != a  # fmt: skip
    # a nan equals the same nan; -0.0 is not 0.0
    nan = acs.Result("r", {"m": np.array([np.nan, 1.0])})
    assert nan == acs.Result("r", {"m": np.array([np.nan, 1.0])})
    assert acs.Result("r", {"m": np.array([0.0])}) != acs.Result("r", {"m": np.array([-0.0])})
    # metric order is part of a result
    two = {"p": np.zeros(2), "q": np.ones(2)}
    assert acs.Result("r", two) != acs.Result("r", dict(reversed(two.items())))
    assert acs.Result("r", two, extras={"design": "lhs"}) != acs.Result("r", two)


@pytest.mark.parametrize("fn", [acs.simulate, acs.compare, acs.sweep, acs.sensitivity])
def test_runs_and_seed_are_keyword_only_with_one_default(fn: object) -> None:
    params = inspect.signature(fn).parameters  # type: ignore[arg-type]
    assert params["runs"].kind is inspect.Parameter.KEYWORD_ONLY
    assert params["seed"].kind is inspect.Parameter.KEYWORD_ONLY
    assert params["seed"].default is None
    if fn is not acs.sensitivity:  # its runs mean a different thing per method
        assert params["runs"].default == acs.study.DEFAULT_RUNS == 2000


def test_the_cli_defaults_are_the_apis() -> None:
    from accelsim import cli

    for command in (cli.run, cli.compare_, cli.sweep_):
        params = inspect.signature(command).parameters
        assert int(params["runs"].default) == acs.study.DEFAULT_RUNS, command.__name__
        assert params["seed"].default == 42, command.__name__
