"""simulate / compare / sweep / sensitivity and the Result they return."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from tests.same_results import assert_same

import accelsim as acs
from accelsim.engines._inputs import BLOCK_RUNS

# The metrics DESIGN.md promises for a training run.
TRAINING_METRICS = (
    "time_to_train_days",
    "training_days",
    "compute_days",
    "failure_overhead_days",
    "wait_days",
    "engineering_days",
    "chip_hours",
    "tco_usd",
    "hardware_cost_usd",
    "energy_cost_usd",
    "engineering_cost_usd",
    "delay_cost_usd",
    "energy_kwh",
    "interruptions",
    "mfu",
    "goodput",
)


def small(
    chip: str = "h100-sxm", count: int = 64, provider: str = "aws", **kw: object
) -> acs.Scenario:
    pricing = kw.pop("pricing", "on_demand")
    return acs.Scenario(
        name=f"{chip}-{count}",
        workload=acs.TrainingRun(params=7e9, tokens=1e11, **kw),  # type: ignore[arg-type]
        fleet=[acs.Pool(chip=chip, count=count, provider=provider, pricing=pricing)],  # type: ignore[arg-type]
    )


def test_simulate_returns_every_training_metric_finite() -> None:
    res = acs.simulate(small(), runs=500, seed=3)
    for m in TRAINING_METRICS:
        x = res.samples(m)
        assert x.shape == (500,), m
        assert np.isfinite(x).all(), m
    assert set(TRAINING_METRICS) <= set(res.metrics)


def test_phases_add_up() -> None:
    """time to train = max(lead time, porting + optimisation) + queue wait + training;
    training >= compute (every run finishes here)."""
    res = acs.simulate(small(), runs=400, seed=5)
    assert (res.samples("finished") == 1.0).all()
    assert (res.samples("preparation_days") >= res.samples("porting_days")).all()
    before = np.maximum(res.samples("wait_days"), res.samples("preparation_days"))
    np.testing.assert_allclose(
        res.samples("time_to_train_days"), before + res.samples("training_days"), rtol=1e-12
    )
    assert (res.samples("training_days") >= res.samples("compute_days")).all()
    np.testing.assert_allclose(
        res.samples("failure_overhead_days"),
        res.samples("training_days") - res.samples("compute_days"),
        rtol=1e-12,
    )
    assert ((res.samples("goodput") > 0) & (res.samples("goodput") <= 1)).all()


def test_tco_is_the_sum_of_its_parts() -> None:
    res = acs.simulate(small(), runs=300, seed=9)
    parts = sum(
        res.samples(m)
        for m in ("hardware_cost_usd", "energy_cost_usd", "engineering_cost_usd", "delay_cost_usd")
    )
    np.testing.assert_allclose(res.samples("tco_usd"), parts, rtol=1e-12)


def test_same_seed_same_result_and_different_seed_differs() -> None:
    a = acs.simulate(small(), runs=300, seed=11)
    b = acs.simulate(small(), runs=300, seed=11)
    c = acs.simulate(small(), runs=300, seed=12)
    for m in a.metrics:
        np.testing.assert_array_equal(a.samples(m), b.samples(m))
    assert not np.array_equal(a.samples("tco_usd"), c.samples("tco_usd"))


def test_seed_zero_is_a_seed() -> None:
    a = acs.simulate(small(), runs=50, seed=0)
    b = acs.simulate(small(), runs=50, seed=0)
    np.testing.assert_array_equal(a.samples("tco_usd"), b.samples("tco_usd"))


def test_results_do_not_depend_on_chunking_or_executor() -> None:
    runs = 2 * BLOCK_RUNS + 123
    ref = acs.simulate(small(), runs=runs, seed=21)
    chunked = acs.simulate(small(), runs=runs, seed=21, chunk_runs=BLOCK_RUNS)
    with ThreadPoolExecutor(max_workers=2) as pool:
        threaded = acs.simulate(small(), runs=runs, seed=21, executor=pool, chunk_runs=BLOCK_RUNS)
    for m in ref.metrics:
        np.testing.assert_array_equal(ref.samples(m), chunked.samples(m))
        np.testing.assert_array_equal(ref.samples(m), threaded.samples(m))


def test_process_pool_gives_the_same_result() -> None:
    runs = BLOCK_RUNS + 10
    ref = acs.simulate(small(), runs=runs, seed=4)
    par = acs.simulate(small(), runs=runs, seed=4, executor="processes", chunk_runs=BLOCK_RUNS)
    np.testing.assert_array_equal(ref.samples("tco_usd"), par.samples("tco_usd"))


def test_compare_shares_draws_of_shared_inputs() -> None:
    """Common random numbers: the same input name gets the same draws in every option."""
    cmp = acs.compare({"gpu": small(), "tpu": small("tpu-v5p", 128, "gcp")}, runs=300, seed=8)
    for name in ("assumptions.engineer_usd_per_hour", "assumptions.failure_rate_per_chip_hour"):
        np.testing.assert_array_equal(cmp["gpu"].inputs[name], cmp["tpu"].inputs[name])
    # prob_less is over paired runs: run i of each option is run i of its own study with
    # the same seed, in the order given
    gpu = acs.simulate(small(), runs=300, seed=8).samples("tco_usd")
    tpu = acs.simulate(small("tpu-v5p", 128, "gcp"), runs=300, seed=8).samples("tco_usd")
    assert cmp.prob_less("tco_usd", "tpu", "gpu") == np.mean(tpu < gpu)
    assert cmp.prob_less("tco_usd", "gpu", "tpu") == np.mean(gpu < tpu)
    assert cmp.prob_less("tco_usd", "gpu", "gpu") == 0.0  # never less than itself


def test_comparison_table_and_recommendation() -> None:
    cmp = acs.compare({"gpu": small(), "tpu": small("tpu-v5p", 128, "gcp")}, runs=300, seed=2)
    table = cmp.table()
    assert "tco_usd" in table
    assert "gpu" in table
    assert "tpu" in table
    rec = cmp.recommendation
    text = str(rec)
    assert "paired runs" in text
    assert "ported" in text  # the PyTorch code needs a port to XLA for the TPU option
    assert "Lock-in" in text or "Portability" in text


def test_result_summaries() -> None:
    res = acs.simulate(small(), runs=1000, seed=13)
    x = res.samples("tco_usd")
    lo, hi = res.interval("tco_usd", 0.9)
    assert (lo, hi) == tuple(np.quantile(x, [0.05, 0.95]))
    assert np.mean(x < lo) <= 0.05 <= np.mean(x <= lo)  # P5: 5 % of the runs below it
    assert res.std_error("tco_usd") == pytest.approx(np.std(x, ddof=1) / np.sqrt(1000), rel=1e-12)
    text = res.summary()
    assert "tco_usd" in text
    assert "95% MC error" in text
    frame = res.to_pandas()
    assert frame.shape == (1000, len(res.metrics))
    with pytest.raises(KeyError, match="no metric"):
        res.samples("tco")
    with pytest.raises(ValueError, match=r"q must lie in \[0, 1\]"):
        res.quantile("tco_usd", 1.5)


def test_bad_runs_and_engines_are_errors() -> None:
    for bad in (0, -1, 1.5, True, "many"):
        with pytest.raises(ValueError, match="runs must be an integer >= 1 or 'auto'"):
            acs.simulate(small(), runs=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="engine must be 'auto', 'analytic' or 'des'"):
        acs.simulate(small(), runs=10, engine="fast")  # type: ignore[arg-type]
    stream = acs.Scenario(
        name="s",
        workload=acs.JobStream(
            interarrival_hours=acs.Exponential(mean=1.0), chips=1, duration_hours=1.0
        ),
        fleet=[acs.Pool(chip="h100-sxm", count=8, provider="aws")],
        horizon_days=1,
    )
    with pytest.raises(ValueError, match="analytic engine runs one training run"):
        acs.simulate(stream, runs=10, engine="analytic")


def test_sweep_gives_one_row_per_point_and_metric() -> None:
    rows = acs.sweep(small(), grid={"fleet.0.count": [32, 64]}, runs=200, seed=1).rows
    assert len(rows) == 4
    by = {(r["fleet.0.count"], r["metric"]): r for r in rows}
    # Twice the chips: shorter training for the same work, with the same lead-time and
    # porting draws (common random numbers), so the median time to train falls.
    assert by[(64, "time_to_train_days")]["p50"] < by[(32, "time_to_train_days")]["p50"]
    # 200 varied runs: a finite, positive error of the mean, far below the spread
    for r in rows:
        assert 0 < r["std_error"] < (r["p95"] - r["p5"]) / 10
    with pytest.raises(ValueError, match="sweep point"):
        acs.sweep(small(), grid={"fleet.0.count": [0]}, runs=10, seed=1)


def test_sensitivity_names_inputs_that_drive_the_metric() -> None:
    pairs = acs.sensitivity(small(), metric="engineering_cost_usd", runs=1000, seed=3)
    assert isinstance(pairs, acs.SpearmanResult)
    rho = dict(pairs)
    names = list(rho)
    assert "assumptions.engineer_usd_per_hour" in names[:3]
    # engineering cost is hours x rate: the rate drives it up, strongly
    assert rho["assumptions.engineer_usd_per_hour"] > 0.3
    assert [abs(r) for r in rho.values()] == sorted((abs(r) for r in rho.values()), reverse=True)


def test_common_random_numbers_shrink_the_variance_of_a_difference() -> None:
    """Paired runs share every common input, so var(A - B) falls well below the variance of
    the difference of independent studies (var A + var B). Two similar options make the
    effect large; an F-like ratio below 0.5 at 2,000 runs is far outside sampling noise."""
    a = small(count=64)
    b = small(count=96)
    paired = acs.compare({"a": a, "b": b}, runs=2000, seed=5)
    diff_paired = paired["a"].samples("tco_usd") - paired["b"].samples("tco_usd")
    independent_b = acs.simulate(b, runs=2000, seed=6)
    diff_independent = paired["a"].samples("tco_usd") - independent_b.samples("tco_usd")
    assert diff_paired.var() < 0.5 * diff_independent.var()


def test_a_study_of_many_chunks_peaks_near_the_size_of_its_result() -> None:
    """Chunks are copied into the study's columns as they finish and their own arrays freed,
    so peak memory is the result plus about one chunk, not the result plus all its parts
    (1.85x the result before, ~1.16x now: 8 chunks of one block, 45 columns). Allocations
    counted by tracemalloc, which sees numpy's buffers; bound 1.4x, well clear of both."""
    import tracemalloc

    s = acs.Scenario(
        name="t",
        workload=acs.TrainingRun(params=7e9, tokens=1e11),
        fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")],
    )
    acs.simulate(s, runs=BLOCK_RUNS, seed=1)  # caches (catalog, tables) outside the count
    tracemalloc.start()
    try:
        res = acs.simulate(s, runs=8 * BLOCK_RUNS, seed=1, chunk_runs=BLOCK_RUNS)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    size = sum(a.nbytes for a in (*res.data.values(), *res.inputs.values()))
    assert peak <= 1.4 * size
    assert_same(res, acs.simulate(s, runs=8 * BLOCK_RUNS, seed=1))  # two chunks of 4 blocks
