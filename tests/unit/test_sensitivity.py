"""Scenario-level sensitivity: designed inputs, Sobol, Morris, tornado, Spearman dispatch.

The scenario fixes every user assumption except two: ``engineer_usd_per_hour`` ~ U(100,
200) and ``failure_rate_per_chip_hour`` ~ U(1e-6, 1e-5). With porting 100 h and
optimisation 200 h fixed (no prototype re-optimisation), ``engineering_cost_usd`` is
exactly 300 h x the hourly rate: by construction only the rate drives it.
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import accelsim as acs
from accelsim.dists import Uniform
from accelsim.engines._inputs import BLOCK_RUNS, InputDraws, InputPlan
from accelsim.study import _sensitivity as sa
from accelsim.study import _sensitivity_design as sa_design
from accelsim.study import _sensitivity_results as sa_results

RATE = "assumptions.engineer_usd_per_hour"
FAILURES = "assumptions.failure_rate_per_chip_hour"
HOURS = 300.0  # porting 100 h + optimisation 200 h
RATE_DIST = Uniform(low=100, high=200)


def known() -> acs.Scenario:
    a = acs.Assumptions(
        mfu=0.4,
        checkpoint_write_hours=0.1,
        checkpoint_interval_hours=2.0,
        restart_hours=0.5,
        lead_time_days=0,
        porting_hours=100,
        optimization_hours=200,
        engineers=2,
        pue=1.2,
        badput_fraction=0.0,
        emission_kg_per_kwh=0.4,
        engineer_usd_per_hour=RATE_DIST,
        failure_rate_per_chip_hour=Uniform(low=1e-6, high=1e-5),
    )
    return acs.Scenario(
        name="known",
        workload=acs.TrainingRun(params=7e9, tokens=1e11),
        fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")],
        assumptions=a,
    )


def test_input_names_are_the_inputs_that_vary() -> None:
    names = sa_design.input_names(known(), seed=1)
    assert {RATE, FAILURES} <= set(names)
    assert "assumptions.pue" not in names  # fixed by the user
    assert "engineering.reoptimization_hours" not in names  # a known constant


@given(u=st.lists(st.floats(0.001, 0.999), min_size=2, max_size=40))
def test_evaluate_maps_the_design_through_the_ppf(u: list[float]) -> None:
    """engineering_cost = 300 h x ppf(u), run by run (float rounding only: rel 1e-12)."""
    design = {RATE: np.array(u)}
    got = sa_design.evaluate(known(), design, "engineering_cost_usd", np.random.SeedSequence(5))
    np.testing.assert_allclose(got, HOURS * RATE_DIST.ppf(np.array(u)), rtol=1e-12)


def test_design_spans_blocks_and_leaves_the_default_path_alone() -> None:
    """A block at run 4096 takes its slice; outside ``designed`` nothing changes."""
    root = np.random.SeedSequence(9)
    u = np.linspace(0.0, 1.0, BLOCK_RUNS + 10)
    before = InputDraws(root, 0, 10).get(RATE, RATE_DIST, RATE_DIST)
    plan = InputPlan(root, designed={RATE: u})
    late = plan.draws(BLOCK_RUNS, BLOCK_RUNS + 10).get(RATE, RATE_DIST, RATE_DIST)
    fixed = plan.draws(0, 10).get(RATE, 150.0, RATE_DIST)
    with pytest.raises(ValueError, match="covers"):
        plan.draws(0, BLOCK_RUNS + 20).get(RATE, RATE_DIST, RATE_DIST)
    after = InputDraws(root, 0, 10).get(RATE, RATE_DIST, RATE_DIST)
    np.testing.assert_array_equal(late, RATE_DIST.ppf(u[BLOCK_RUNS:]))
    np.testing.assert_array_equal(fixed, np.full(10, 150.0))  # a fixed input ignores it
    np.testing.assert_array_equal(before, after)
    assert np.ptp(before) > 0


def test_sobol_puts_all_of_engineering_cost_on_the_rate() -> None:
    """The rate's S1 and ST intervals contain 1; every other index is exactly 0.

    An input without effect gives f(AB_i) == f(A) bit for bit (failures share run j's
    stream), so its Saltelli S1 and Jansen ST are 0 up to rounding (1e-12).
    """
    res = sa.sobol(known(), "engineering_cost_usd", runs=256, seed=2)
    i = res.names.index(RATE)
    assert res.first_order_ci[i, 0] <= 1.0 <= res.first_order_ci[i, 1]
    assert res.total_order_ci[i, 0] <= 1.0 <= res.total_order_ci[i, 1]
    others = [j for j in range(len(res.names)) if j != i]
    np.testing.assert_allclose(res.first_order[others], 0.0, atol=1e-12)
    np.testing.assert_allclose(res.total_order[others], 0.0, atol=1e-12)
    assert res.table().splitlines()[2].startswith(RATE)


def test_same_seed_same_indices_and_intervals() -> None:
    a = sa.sobol(known(), "tco_usd", runs=64, seed=4)
    b = sa.sobol(known(), "tco_usd", runs=64, seed=4)
    assert a.names == b.names
    for x, y in [
        (a.first_order, b.first_order),
        (a.total_order, b.total_order),
        (a.first_order_ci, b.first_order_ci),
        (a.total_order_ci, b.total_order_ci),
    ]:
        np.testing.assert_array_equal(x, y)


def test_sobol_needs_a_power_of_two() -> None:
    with pytest.raises(ValueError, match="power of two"):
        sa.sobol(known(), runs=100, seed=1)


def test_tornado_swing_is_the_rate_range_times_the_hours() -> None:
    """Swing = 300 h x (P90 - P10) = 300 x 80 = 24,000 USD; inputs without effect: 0."""
    res = sa.tornado(known(), "engineering_cost_usd", runs=64, seed=1)
    assert res.names[0] == RATE
    assert res.swing[0] == pytest.approx(HOURS * 80.0, rel=1e-12)
    assert res.base == pytest.approx(HOURS * 150.0, rel=1e-12)
    np.testing.assert_array_equal(res.swing[1:], 0.0)
    assert FAILURES in res.names
    assert "assumptions.pue" not in res.names  # Fixed inputs are not analysed
    assert "swing" in res.table()


def test_morris_mu_star_is_the_p1_to_p99_change() -> None:
    """mu* of the rate = 300 h x (P99 - P1) = 300 x 98 (the grid spans P1..P99); else 0."""
    res = sa.morris(known(), "engineering_cost_usd", trajectories=10, seed=1)
    i = res.names.index(RATE)
    assert res.mu_star[i] == pytest.approx(HOURS * 98.0, rel=1e-9)
    assert res.mu[i] == pytest.approx(HOURS * 98.0, rel=1e-9)
    np.testing.assert_allclose(np.delete(res.mu_star, i), 0.0, atol=1e-9)
    assert res.table().splitlines()[2].startswith(RATE)


def test_morris_without_salib_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "SALib.analyze", None)
    with pytest.raises(ImportError, match=r"accelsim\[sensitivity\]"):
        sa.morris(known(), "engineering_cost_usd", trajectories=10, seed=1)


def test_study_sensitivity_dispatches_and_keeps_spearman_pairs() -> None:
    s = known()
    pairs = acs.sensitivity(s, metric="engineering_cost_usd", runs=512, seed=3)
    assert pairs[0][0] == RATE
    assert pairs[0][1] == pytest.approx(1.0)
    assert "spearman rho" in acs.study.sensitivity_table(pairs)
    sob = acs.sensitivity(s, "engineering_cost_usd", runs=64, seed=3, method="sobol")
    assert isinstance(sob, sa_results.SobolResult)
    assert acs.study.sensitivity_table(sob) == sob.table()
    tor = acs.sensitivity(s, "engineering_cost_usd", runs=16, seed=3, method="tornado")
    assert isinstance(tor, sa_results.TornadoResult)
    with pytest.raises(ValueError, match="unknown sensitivity method"):
        acs.sensitivity(s, method="pawn")  # type: ignore[call-overload]


def test_too_few_runs_are_refused_with_the_floor_and_why() -> None:
    """Issue 15: runs=2 gave Spearman rho of +-1.00 and Sobol indices above 1. The floors:
    1.96 / sqrt(n - 1) <= 0.2 for Spearman (n >= 98), a Sobol base sample of 64, 10 Morris
    trajectories; just above each floor the method runs."""
    assert sa.SPEARMAN_MIN_RUNS == 98
    assert 1.96 / np.sqrt(sa.SPEARMAN_MIN_RUNS - 1) <= 0.2 < 1.96 / np.sqrt(96)
    s = known()
    cases = [
        ("spearman", sa.SPEARMAN_MIN_RUNS, r"spearman's runs must be an integer >= 98"),
        ("sobol", sa.SOBOL_MIN_RUNS, r"sobol's runs must be an integer >= 64"),
        ("morris", sa.MORRIS_MIN_TRAJECTORIES, r"morris's trajectories must be an integer >= 10"),
    ]
    for method, floor, message in cases:
        below = floor // 2 if method == "sobol" else floor - 1
        for bad in (2, below):
            with pytest.raises(ValueError, match=message):
                acs.sensitivity(s, "engineering_cost_usd", method=method, runs=bad, seed=1)  # type: ignore[call-overload]
    with pytest.raises(ValueError, match=r"tornado's runs must be an integer >= 1"):
        acs.sensitivity(s, method="tornado", runs=0, seed=1)
    rho = acs.sensitivity(s, "engineering_cost_usd", runs=sa.SPEARMAN_MIN_RUNS, seed=1)
    assert rho[0] == (RATE, pytest.approx(1.0))  # the only driver, exactly monotone
    one = acs.sensitivity(s, "engineering_cost_usd", method="tornado", runs=1, seed=1)
    assert one.swing[0] == pytest.approx(HOURS * 80.0, rel=1e-12)  # exact with one run


def test_every_method_returns_its_exported_type_with_a_table() -> None:
    s = known()
    cases = {
        "spearman": (acs.SpearmanResult, 128),
        "sobol": (acs.SobolResult, 64),
        "morris": (acs.MorrisResult, 10),
        "tornado": (acs.TornadoResult, 8),
    }
    for method, (kind, runs) in cases.items():
        res = acs.sensitivity(s, "engineering_cost_usd", method=method, runs=runs, seed=2)  # type: ignore[call-overload]
        assert isinstance(res, kind)
        assert isinstance(res, acs.study.SensitivityResult)  # type: ignore[arg-type]
        assert res.table().splitlines()[0].startswith(("input", "base"))
        assert RATE in res.table()


def test_errors_name_the_problem() -> None:
    root = np.random.SeedSequence(1)
    with pytest.raises(ValueError, match="unknown metric"):
        sa_design.evaluate(known(), {RATE: np.full(4, 0.5)}, "nope", root)
    with pytest.raises(ValueError, match="does not draw"):
        sa_design.evaluate(known(), {"assumptions.nope": np.full(4, 0.5)}, "tco_usd", root)
    with pytest.raises(ValueError, match="equally long"):
        sa_design.evaluate(
            known(), {RATE: np.full(4, 0.5), FAILURES: np.full(3, 0.5)}, "tco_usd", root
        )
    with pytest.raises(ValueError, match="non-empty"):
        sa_design.evaluate(known(), {RATE: np.array([])}, "tco_usd", root)
    assert sa_design.evaluate_many(known(), [], "tco_usd", root) == []
    inference = acs.Scenario(
        name="svc",
        workload=acs.TrainingRun(params=7e9, tokens=1e11),
        fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")] * 2,
    )
    with pytest.raises(ValueError, match="analytic engine"):
        sa.sobol(inference, runs=64, seed=1)


def test_designs_cross_chunks_and_reach_thread_workers() -> None:
    """A design of 4096 + 10 runs is two chunks (whole blocks); on a 2-thread pool each
    chunk gets its own runs' designed values, which a context variable would not carry into
    the pool's threads. engineering_cost = 300 h x ppf(u) run by run (rounding: 1e-12), and
    tornado settings of 4096 + 8 runs match in-process exactly."""
    u = np.linspace(0.001, 0.999, BLOCK_RUNS + 10)
    root = np.random.SeedSequence(5)
    with ThreadPoolExecutor(max_workers=2) as pool:
        got = sa_design.evaluate(known(), {RATE: u}, "engineering_cost_usd", root, executor=pool)
        threaded = sa.tornado(known(), "tco_usd", runs=BLOCK_RUNS + 8, seed=3, executor=pool)
    np.testing.assert_allclose(got, HOURS * RATE_DIST.ppf(u), rtol=1e-12)
    alone = sa.tornado(known(), "tco_usd", runs=BLOCK_RUNS + 8, seed=3)
    assert threaded.names == alone.names
    assert threaded.base == alone.base
    np.testing.assert_array_equal(threaded.low, alone.low)
    np.testing.assert_array_equal(threaded.high, alone.high)


def _assert_same_sobol(a: sa_results.SobolResult, b: sa_results.SobolResult) -> None:
    assert a.names == b.names
    for x, y in [
        (a.first_order, b.first_order),
        (a.total_order, b.total_order),
        (a.first_order_ci, b.first_order_ci),
        (a.total_order_ci, b.total_order_ci),
    ]:
        np.testing.assert_array_equal(x, y)


@pytest.mark.slow
def test_sensitivity_is_bit_identical_on_processes_and_dask() -> None:
    """Sobol (base sample 64), tornado, Morris and Spearman in-process, on the spawn process
    pool (sobol) and on a 2-worker, 2-process Dask LocalCluster give identical results: the
    designed inputs reach other processes inside each chunk's study, not through state.

    The cluster's HTTP server binds a free port (``127.0.0.1:0``): with
    ``dashboard_address=None`` it still tries 8787 and warns (an error here) when another
    cluster on the machine holds that port."""
    from distributed import Client, LocalCluster

    s = known()
    alone = acs.sensitivity(s, "tco_usd", runs=64, seed=7, method="sobol")
    procs = acs.sensitivity(s, "tco_usd", runs=64, seed=7, method="sobol", executor="processes")
    _assert_same_sobol(alone, procs)
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0"
        ) as cluster,
        Client(cluster) as client,
    ):
        dask = sa.sobol(s, "tco_usd", runs=64, seed=7, executor=client)
        tor = sa.tornado(s, "tco_usd", runs=32, seed=7, executor=client)
        mor = sa.morris(s, "tco_usd", trajectories=10, seed=7, executor=client)
        rho = sa.spearman(s, "tco_usd", runs=128, seed=7, executor=client)
    _assert_same_sobol(alone, dask)
    tor_alone = sa.tornado(s, "tco_usd", runs=32, seed=7)
    assert tor.names == tor_alone.names
    np.testing.assert_array_equal(tor.low, tor_alone.low)
    np.testing.assert_array_equal(tor.high, tor_alone.high)
    mor_alone = sa.morris(s, "tco_usd", trajectories=10, seed=7)
    np.testing.assert_array_equal(mor.mu_star, mor_alone.mu_star)
    np.testing.assert_array_equal(mor.sigma, mor_alone.sigma)
    assert list(rho) == list(sa.spearman(s, "tco_usd", runs=128, seed=7))


NEGOTIATED = """\
price_sheets:
  - provider: aws
    name: Amazon Web Services (negotiated)
    offers:
      - {chip: h100-sxm, pricing: on_demand, usd_per_chip_hour: 1.5, region: us-east-1,
         as_of: 2026-10-01, source: "https://example.com/quote"}
"""


def test_the_study_uses_the_catalog_it_is_given_not_the_active_one(tmp_path: Path) -> None:
    """``catalog=`` as in ``simulate``: a negotiated price sheet passed to the study prices
    its runs, while the process's active catalog stays the built-in one."""
    sheet = tmp_path / "prices.yaml"
    sheet.write_text(NEGOTIATED, encoding="utf-8")
    cat = acs.catalog.load(sheet)
    acs.catalog.reset()
    s, runs, metric = known(), 200, "hardware_cost_usd"
    given = acs.simulate(s, runs=runs, seed=2, catalog=cat).samples(metric)
    default = acs.simulate(s, runs=runs, seed=2).samples(metric)
    got = acs.sensitivity(s, metric, method="tornado", runs=runs, seed=2, catalog=cat)
    base = acs.sensitivity(s, metric, method="tornado", runs=runs, seed=2)
    # hardware cost is chip-hours x the offer's price: the same ratio, setting for setting
    ratio = given / default
    assert np.ptp(ratio) < 1e-9 * ratio[0]
    assert got.base / base.base == pytest.approx(ratio[0], rel=1e-9)
    assert ratio[0] < 0.8  # the negotiated sheet is cheaper than the list price
    assert acs.catalog.active() is acs.catalog.builtin_catalog()
