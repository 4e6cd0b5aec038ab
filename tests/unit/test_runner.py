"""The chunked runner: runs="auto" convergence, progress reporting and executors (Dask too)."""

from __future__ import annotations

import io
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future, InvalidStateError, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from tests.same_results import assert_same

import accelsim as acs
from accelsim.dists import Uniform
from accelsim.engines._inputs import BLOCK_RUNS, InputDraws, InputPlan, blocks, input_uniforms
from accelsim.seeding import as_seed_sequence, stream
from accelsim.study._chunks import ANALYTIC_CHUNK_BLOCKS
from accelsim.study._runner import (
    Convergence,
    as_progress,
    mean_precision,
    quantile_precision,
    run_chunks,
    split_target,
)

LOW_USD, HIGH_USD, HOURS = 50.0, 150.0, 150.0


def scenario() -> acs.Scenario:
    """Engineering cost = 150 h (porting 100 + optimisation 50, fixed) x U(50, 150) USD/h.

    So its exact mean is 150 * 100 = 15,000 USD and its coefficient of variation
    (100 / sqrt(12)) / 100 = 0.2887.
    """
    return acs.Scenario(
        name="known-mean",
        workload=acs.TrainingRun(params=7e9, tokens=1e11),
        fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")],
        assumptions=acs.Assumptions(
            mfu=0.4,
            porting_hours=100.0,
            optimization_hours=50.0,
            engineer_usd_per_hour=acs.Uniform(low=LOW_USD, high=HIGH_USD),
        ),
    )


TRUE_MEAN_USD = HOURS * (LOW_USD + HIGH_USD) / 2


def test_scenario_has_the_stated_known_mean() -> None:
    """The oracle of the coverage test: hours are constant, the wage is the only draw."""
    res = acs.simulate(scenario(), runs=BLOCK_RUNS, seed=0)
    np.testing.assert_array_equal(res.samples("engineering_hours"), HOURS)
    wage = res.inputs["assumptions.engineer_usd_per_hour"]
    np.testing.assert_allclose(res.samples("engineering_cost_usd"), HOURS * wage, rtol=1e-15)


def test_auto_stops_at_the_first_block_meeting_the_target() -> None:
    """It stops once the 95 % half-width is within 0.4 % of the mean, and not a block earlier.

    Needed runs ~ (1.96 * 0.2887 / 0.004)^2 = 20,000, so about 5 blocks: the rule is
    checked at several block ends before it holds.
    """
    res = acs.simulate(scenario(), runs="auto", target={"engineering_cost_usd": 0.004}, seed=7)
    p = res.extras["precision"]["engineering_cost_usd"]
    x = res.samples("engineering_cost_usd")
    assert res.runs % BLOCK_RUNS == 0
    assert res.runs >= 4 * BLOCK_RUNS
    assert p["runs"] == res.runs
    assert p["met"]
    assert p["relative"] <= 0.004
    assert p == {**mean_precision(x), "target": 0.004, "met": True}
    earlier = mean_precision(x[: res.runs - BLOCK_RUNS])
    assert earlier["relative"] > 0.004


def test_auto_study_is_the_first_blocks_of_a_fixed_study() -> None:
    """Streams are addressed by block: an auto study that stops after n runs equals a fixed
    study of n runs with the same seed, whatever the chunk size and executor."""
    target = {"engineering_cost_usd": 0.004, "tco_usd": 0.05}
    auto = acs.simulate(scenario(), runs="auto", target=target, seed=3)
    fixed = acs.simulate(scenario(), runs=auto.runs, seed=3)
    assert_same(auto, fixed)
    with ThreadPoolExecutor(max_workers=3) as pool:
        other = acs.simulate(
            scenario(),
            runs="auto",
            target=target,
            seed=3,
            chunk_runs=3 * BLOCK_RUNS,
            executor=pool,
        )
    assert_same(auto, other)
    assert other.extras["precision"] == auto.extras["precision"]


def test_auto_stops_at_the_cap_and_says_the_target_was_missed() -> None:
    res = acs.simulate(
        scenario(), runs="auto", target={"engineering_cost_usd": 1e-6}, max_runs=6000, seed=1
    )
    p = res.extras["precision"]["engineering_cost_usd"]
    assert res.runs == 6000
    assert p["runs"] == 6000
    assert not p["met"]
    assert p["relative"] > 1e-6


def test_stated_interval_covers_the_true_mean_at_the_nominal_rate() -> None:
    """Repeated experiment: 100 independent auto studies (seeds 1000-1099), target 0.6 %.

    Each study's interval mean ± half_width should cover the exact mean 15,000 USD with
    probability 0.95: runs are iid, so the plain standard error is valid, and stopping at
    the first block end where the target holds (here after 3 blocks, 12,288 runs) barely
    matters with thousands of runs per block. The number of covering intervals is then
    Binomial(100, 0.95); we accept the central region holding 99.8 % of its mass,
    [binom.ppf(0.001), binom.isf(0.001)] = [87, 100]. A correct interval fails with
    probability < 0.2 %; an interval with 80 % coverage passes with probability ~5 %, one
    twice too narrow (68 %) essentially never.
    """
    trials = 100
    covered = 0
    for k in range(trials):
        res = acs.simulate(
            scenario(), runs="auto", target={"engineering_cost_usd": 0.006}, seed=1000 + k
        )
        p = res.extras["precision"]["engineering_cost_usd"]
        assert p["met"]
        covered += abs(p["mean"] - TRUE_MEAN_USD) <= p["half_width"]
    lo = int(stats.binom.ppf(0.001, trials, 0.95))
    hi = int(stats.binom.isf(0.001, trials, 0.95))
    assert lo <= covered <= hi, (covered, lo, hi)


def test_auto_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="needs a target"):
        acs.simulate(scenario(), runs="auto", seed=1)
    with pytest.raises(ValueError, match="relative tolerance"):
        acs.simulate(scenario(), runs="auto", target={"tco_usd": 0.0}, seed=1)
    with pytest.raises(ValueError, match="max_runs"):
        acs.simulate(scenario(), runs="auto", target={"tco_usd": 0.1}, max_runs=1, seed=1)
    with pytest.raises(ValueError, match='runs="auto"'):
        acs.simulate(scenario(), runs=100, target={"tco_usd": 0.1}, seed=1)
    with pytest.raises(KeyError, match="no_such_metric"):
        acs.simulate(scenario(), runs="auto", target={"no_such_metric": 0.1}, seed=1)


def test_progress_callable_gets_runs_done_after_each_chunk() -> None:
    calls: list[tuple[int, int]] = []
    runs = 3 * BLOCK_RUNS + 100
    report = lambda d, t: calls.append((d, t))  # noqa: E731
    acs.simulate(scenario(), runs=runs, seed=1, chunk_runs=BLOCK_RUNS, progress=report)
    assert calls == [
        (BLOCK_RUNS, runs),
        (2 * BLOCK_RUNS, runs),
        (3 * BLOCK_RUNS, runs),
        (runs, runs),
    ]
    # the analytic engine's default chunk is ANALYTIC_CHUNK_BLOCKS blocks
    calls.clear()
    runs = ANALYTIC_CHUNK_BLOCKS * BLOCK_RUNS + 100
    acs.simulate(scenario(), runs=runs, seed=1, progress=report)
    assert calls == [(ANALYTIC_CHUNK_BLOCKS * BLOCK_RUNS, runs), (runs, runs)]


def test_progress_with_an_executor_counts_up_to_the_total() -> None:
    calls: list[tuple[int, int]] = []
    runs = 4 * BLOCK_RUNS
    with ThreadPoolExecutor(max_workers=2) as pool:
        acs.simulate(
            scenario(), runs=runs, seed=1, executor=pool, progress=lambda *a: calls.append(a)
        )
    # with an executor the analytic engine's default chunk is one block
    assert [d for d, _ in calls] == [BLOCK_RUNS * k for k in range(1, 5)]
    assert {t for _, t in calls} == {runs}


def test_progress_of_an_auto_study_ends_at_the_runs_used() -> None:
    calls: list[tuple[int, int]] = []
    res = acs.simulate(
        scenario(),
        runs="auto",
        target={"engineering_cost_usd": 0.01},
        max_runs=10 * BLOCK_RUNS,
        seed=2,
        progress=lambda *a: calls.append(a),
    )
    assert calls[0] == (BLOCK_RUNS, 10 * BLOCK_RUNS)
    assert calls[-1] == (res.runs, res.runs)


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_true_prints_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    pipe = io.StringIO()
    monkeypatch.setattr(sys, "stderr", pipe)
    acs.simulate(scenario(), runs=2 * BLOCK_RUNS, seed=1, progress=True)
    assert pipe.getvalue() == ""
    tty = _Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    acs.simulate(scenario(), runs=2 * BLOCK_RUNS, seed=1, progress=True)
    text = tty.getvalue()
    assert f"{2 * BLOCK_RUNS:,}/{2 * BLOCK_RUNS:,} runs (100 %)" in text
    assert text.endswith("\n")


def test_progress_is_on_by_default_in_a_terminal_and_off_when_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tty = _Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    acs.simulate(scenario(), runs=100, seed=1)
    assert "100/100 runs (100 %)" in tty.getvalue()
    quiet = _Tty()
    monkeypatch.setattr(sys, "stderr", quiet)
    acs.simulate(scenario(), runs=100, seed=1, progress=False)
    assert quiet.getvalue() == ""


def test_bad_executor_and_progress_are_rejected() -> None:
    with pytest.raises(ValueError, match="processes"):
        acs.simulate(scenario(), runs=100, seed=1, executor="threads")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Dask"):
        acs.simulate(scenario(), runs=100, seed=1, executor=object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="progress"):
        acs.simulate(scenario(), runs=100, seed=1, progress="yes")  # type: ignore[arg-type]


@pytest.mark.slow
def test_dask_local_cluster_is_bit_identical_to_in_process() -> None:
    """A 2-worker, 2-process Dask LocalCluster (through client.get_executor()) gives the
    in-process result exactly, for a training study and a DES job-stream study."""
    from distributed import Client, LocalCluster

    des = (
        acs.load_scenario("examples/shared_onprem_h100_jobstream.yaml")
        .replace("warmup_days", 0.5)
        .replace("horizon_days", 3.0)
    )
    analytic_in = acs.simulate(scenario(), runs=3 * BLOCK_RUNS + 7, seed=4)
    des_in = acs.simulate(des, runs=3, seed=4)
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0"
        ) as cluster,
        Client(cluster) as client,
    ):
        analytic_dask = acs.simulate(scenario(), runs=3 * BLOCK_RUNS + 7, seed=4, executor=client)
        des_dask = acs.simulate(des, runs=3, seed=4, executor=client)
    assert_same(analytic_in, analytic_dask)
    assert_same(des_in, des_dask)


def short_jobstream() -> acs.Scenario:
    return (
        acs.load_scenario("examples/shared_onprem_h100_jobstream.yaml")
        .replace("warmup_days", 0.5)
        .replace("horizon_days", 3.0)
    )


def test_des_study_in_chunks_smaller_than_a_block_is_bit_identical() -> None:
    """A 10-run DES job-stream study: in-process (default chunks), 2 threads with chunks of
    3 runs, and the process pool (default chunks of ceil(10 / 32) = 1 run) agree exactly."""
    runs = 10
    alone = acs.simulate(short_jobstream(), runs=runs, seed=8)
    with ThreadPoolExecutor(max_workers=2) as pool:
        threaded = acs.simulate(short_jobstream(), runs=runs, seed=8, executor=pool, chunk_runs=3)
    procs = acs.simulate(short_jobstream(), runs=runs, seed=8, executor="processes")
    assert alone.runs == runs
    assert_same(alone, threaded)
    assert_same(alone, procs)


def test_part_of_a_block_draws_the_slice_of_the_whole_block() -> None:
    """Inputs of runs [a, b) inside block k equal the same runs of the whole block's draws,
    in the first block and in a short last block (study of 4096 + 10 runs), and a chunk
    across a block boundary holds both blocks' slices."""
    root = as_seed_sequence(3)
    total = BLOCK_RUNS + 10
    dist = Uniform(low=0.0, high=1.0)
    plan = InputPlan(root, total_runs=total)
    for first, last in [(0, BLOCK_RUNS), (BLOCK_RUNS, total)]:
        whole = plan.draws(first, last)
        full = whole.get("x", dist, dist)
        full_u = whole.uniforms("u")
        for a, b in [(first, first + 3), (first + 4, last - 1), (last - 2, last)]:
            part = plan.draws(a, b)
            np.testing.assert_array_equal(part.get("x", dist, dist), full[a - first : b - first])
            np.testing.assert_array_equal(part.uniforms("u"), full_u[a - first : b - first])
    # Plain draws take the input's stream at the chunk's runs, total runs known or not;
    # what is drawn per block needs it to know the length of the block.
    np.testing.assert_array_equal(
        InputDraws(root=root, start=5, stop=9).get("x", dist, dist),
        InputDraws(root=root, start=0, stop=9).get("x", dist, dist)[5:],
    )
    with pytest.raises(ValueError, match="total runs"):
        InputDraws(root=root, start=5, stop=9).block_rngs("f")
    # A chunk across a block boundary keeps the slices of both blocks' draws, end to end.
    across = InputDraws(root=root, start=BLOCK_RUNS - 3, stop=BLOCK_RUNS + 2, total_runs=total)
    first = InputDraws(root=root, start=0, stop=BLOCK_RUNS).get("x", dist, dist)
    second = InputDraws(root=root, start=BLOCK_RUNS, stop=total, total_runs=total).get(
        "x", dist, dist
    )
    np.testing.assert_array_equal(
        across.get("x", dist, dist), np.concatenate([first[-3:], second[:2]])
    )
    assert [(s.start, s.stop) for s, _ in across.block_rngs("f")] == [(0, 3), (3, 5)]
    with pytest.raises(ValueError, match="exceed"):
        InputDraws(root=root, start=0, stop=total + 1, total_runs=total).get("x", dist, dist)


@given(start=st.integers(0, 50_000), n=st.integers(1, 300))
@settings(max_examples=25, deadline=None)
def test_input_uniforms_of_any_runs_are_the_streams_values_at_those_runs(
    start: int, n: int
) -> None:
    """Advancing the input's stream to ``start`` gives the values drawing would reach there
    (one 64-bit output per uniform), so a chunk's inputs never depend on where it starts."""
    root = as_seed_sequence(12)
    whole = stream(root, "input", "x").random(start + n)
    np.testing.assert_array_equal(input_uniforms(root, "x", start, n), whole[start:])


def test_input_streams_reused_from_the_cache_restart_where_they_should() -> None:
    """The per-thread cache of stream starts hands back each stream at its first output,
    whatever was drawn before, and tells roots apart by entropy and spawn key."""
    first = input_uniforms(np.random.SeedSequence(5), "x", 7, 4)
    for root in (np.random.SeedSequence(5, spawn_key=(1,)), np.random.SeedSequence(6)):
        other = input_uniforms(root, "x", 7, 4)
        assert not np.array_equal(other, first)
        np.testing.assert_array_equal(other, stream(root, "input", "x").random(11)[7:])
    input_uniforms(np.random.SeedSequence(5), "x", 0, 1000)  # moves the cached generator
    np.testing.assert_array_equal(input_uniforms(np.random.SeedSequence(5), "x", 7, 4), first)
    big = np.random.SeedSequence([2**80, 3])  # an array entropy, as SeedSequence allows
    np.testing.assert_array_equal(
        input_uniforms(big, "x", 2, 3), stream(big, "input", "x").random(5)[2:]
    )


def test_blocks_split_any_range_at_block_boundaries() -> None:
    assert blocks(3, 7) == [(3, 7)]
    assert blocks(4000, 2 * BLOCK_RUNS + 1) == [
        (4000, BLOCK_RUNS),
        (BLOCK_RUNS, 2 * BLOCK_RUNS),
        (2 * BLOCK_RUNS, 2 * BLOCK_RUNS + 1),
    ]
    assert blocks(5, 5) == []


def test_convergence_over_small_chunks_stops_only_at_a_block_end() -> None:
    """Chunks of 1000 runs: with a target any 2+ runs meet (relative tolerance 10 on
    samples of mean 1, sd 0.01), the rule still stops at the first block end, 4096 runs."""
    total = 3 * BLOCK_RUNS
    chunks = [(s, min(s + 1000, total)) for s in range(0, total, 1000)]
    rule = Convergence({"m": 10.0}, chunks)
    rng = np.random.default_rng(0)
    stopped = None
    for i, (a, b) in enumerate(chunks):
        if rule(i, {"m": 1.0 + 0.01 * rng.standard_normal(b - a)}):
            stopped = i
            break
    assert stopped == 4
    assert rule.runs == BLOCK_RUNS
    assert rule.precision["m"]["runs"] == BLOCK_RUNS


P90_USD = HOURS * (LOW_USD + 0.9 * (HIGH_USD - LOW_USD))
"""Exact 0.9 quantile of the engineering cost: 150 h x the wage's P90, 140 USD/h."""


def test_quantile_target_stops_at_the_first_block_meeting_it() -> None:
    """``"metric@p90"`` holds the order-statistic interval of the P90 to 0.3 %.

    The P90 interval half-width is ~1.96 sqrt(0.9 * 0.1 / n) / f(P90) with density f =
    1 / 15,000 USD, i.e. ~0.3 % of 21,000 USD at n ~ 10,000: a few blocks, so the rule is
    checked at several block ends; it must hold where it stopped and not a block earlier.
    The mean target (5 %) holds from the first block, so the quantile decides.
    """
    target = {"engineering_cost_usd": 0.05, "engineering_cost_usd@p90": 0.003}
    res = acs.simulate(scenario(), runs="auto", target=target, seed=7)
    x = res.samples("engineering_cost_usd")
    p = res.extras["precision"]["engineering_cost_usd@p90"]
    assert res.runs % BLOCK_RUNS == 0
    assert res.runs >= 2 * BLOCK_RUNS
    assert p == {**quantile_precision(x, 0.9), "target": 0.003, "met": True}
    assert p["lower"] <= p["value"] <= p["upper"]
    assert res.extras["precision"]["engineering_cost_usd"]["met"]
    earlier = quantile_precision(x[: res.runs - BLOCK_RUNS], 0.9)
    assert earlier["relative"] > 0.003


def test_quantile_interval_covers_the_true_quantile_at_its_exact_rate() -> None:
    """Repeated experiment: 2000 samples of 500 from U(50, 150) x 150; P90 = 21,000 USD.

    The order-statistic interval [x_(j), x_(k)] covers the true quantile exactly when
    j <= K < k for K ~ Binomial(500, 0.9) runs below it, so its coverage is
    P(j <= K < k) (>= 0.95 by construction, computed here). The count of covering
    intervals is Binomial(2000, coverage ~0.963); we accept its central 99.8 %, so a correct
    interval fails with probability < 0.2 %. An interval two order statistics in from each
    end (coverage 0.926, expected 1853 of 2000 against a lower bound of 1900) essentially
    always fails; one in from each end (0.948) fails about half the time.
    """
    n, trials, q = 500, 2000, 0.9
    rng = np.random.default_rng(123)
    j = int(stats.binom.ppf(0.025, n, q))
    k = int(stats.binom.ppf(0.975, n, q)) + 1
    coverage = float(stats.binom.cdf(k - 1, n, q) - stats.binom.cdf(j - 1, n, q))
    assert coverage >= 0.95
    covered = 0
    for _ in range(trials):
        x = HOURS * rng.uniform(LOW_USD, HIGH_USD, n)
        p = quantile_precision(x, q)
        covered += p["lower"] <= P90_USD <= p["upper"]
    lo = int(stats.binom.ppf(0.001, trials, coverage))
    hi = int(stats.binom.isf(0.001, trials, coverage))
    assert lo <= covered <= hi, (covered, lo, hi, coverage)


def test_quantile_precision_without_enough_runs_is_infinite() -> None:
    """With 10 runs no order statistic bounds the P99 from above: the half-width is inf."""
    p = quantile_precision(np.arange(10.0), 0.99)
    assert p["half_width"] == float("inf")
    assert p["relative"] == float("inf")


def test_bad_quantile_target_keys_are_rejected() -> None:
    assert split_target("tco_usd@p90") == ("tco_usd", 0.9)
    for bad in ("tco_usd@90", "tco_usd@p0", "tco_usd@p100", "@p50", "tco_usd@pxx"):
        with pytest.raises(ValueError, match="metric@pNN"):
            acs.simulate(scenario(), runs="auto", target={bad: 0.01}, seed=1)
    with pytest.raises(KeyError, match="nope"):
        acs.simulate(scenario(), runs="auto", target={"nope@p90": 0.01}, seed=1)


class _AtLeastOnce(Executor):
    """Runs every task twice on two threads and resolves its one future with whichever
    attempt finishes first; the other attempt's result is dropped (``set_result`` on a done
    future raises ``InvalidStateError``), as when Dask reruns a task whose worker died."""

    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(max_workers=4)
        self.attempts = 0
        self.dropped = 0
        self.lock = threading.Lock()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        out: Future[Any] = Future()
        out.set_running_or_notify_cancel()

        def attempt() -> None:
            value = fn(*args, **kwargs)
            with self.lock:
                self.attempts += 1
                try:
                    out.set_result(value)
                except InvalidStateError:
                    self.dropped += 1

        for _ in range(2):
            self.pool.submit(attempt)
        return out

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.pool.shutdown(wait=wait, cancel_futures=cancel_futures)


def test_a_chunk_computed_twice_is_handed_on_once() -> None:
    """run_chunks on an executor that computes every chunk twice: ``on_chunk`` sees each of
    the 5 chunks exactly once, and the chunks come back once each, in order."""
    chunks = [(10 * k, 10 * k + 10) for k in range(5)]
    seen: list[int] = []
    ex = _AtLeastOnce()
    with ex:
        out = run_chunks(
            lambda study, a, b: (study, a, b),
            "s",
            chunks,
            executor=ex,
            have={},
            on_chunk=lambda i, part: seen.append(i),
            wave=len(chunks),
        )
    assert ex.attempts == 2 * len(chunks)
    assert ex.dropped == len(chunks)
    assert sorted(seen) == list(range(len(chunks)))
    assert out == [("s", a, b) for a, b in chunks]


def test_a_study_on_an_at_least_once_executor_stores_each_chunk_once(tmp_path: Path) -> None:
    """A 4-chunk study with a Parquet store on the twice-computing executor: progress counts
    each chunk once up to the total, the store holds one part file per chunk and each run
    once, and the result is the in-process one exactly."""
    import pyarrow.parquet as pq

    runs = 4 * BLOCK_RUNS
    store = tmp_path / "s.parquet"
    calls: list[tuple[int, int]] = []
    alone = acs.simulate(scenario(), runs=runs, seed=5, chunk_runs=BLOCK_RUNS, progress=False)
    ex = _AtLeastOnce()
    with ex:
        twice = acs.simulate(
            scenario(),
            runs=runs,
            seed=5,
            chunk_runs=BLOCK_RUNS,
            executor=ex,
            store=store,
            progress=lambda *a: calls.append(a),
        )
    assert ex.attempts == 8
    assert_same(alone, twice)
    assert [d for d, _ in calls] == [BLOCK_RUNS * k for k in range(1, 5)]
    parts = sorted(p.name for p in store.iterdir() if p.name.startswith("part-"))
    assert parts == [f"part-{i:06d}.parquet" for i in range(4)]
    stored = np.sort(pq.read_table(store, columns=["run"]).column("run").to_numpy())
    np.testing.assert_array_equal(stored, np.arange(runs))


def test_as_progress_is_still_importable_from_the_runner() -> None:
    """``accelsim.study._runner.as_progress`` is the one in :mod:`accelsim.study._progress`."""
    from accelsim.study import _progress as progress

    assert as_progress is progress.as_progress
    assert as_progress(False) is None
