"""Sampling designs of ``simulate(design=...)``: Latin hypercube and scrambled Sobol' inputs."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from scipy import stats
from tests.same_results import assert_same

import accelsim as acs
from accelsim.engines._inputs import (
    BLOCK_RUNS,
    InputPlan,
    check_design_runs,
    design_uniforms,
)
from accelsim.seeding import as_seed_sequence

WAGE = "assumptions.engineer_usd_per_hour"
MFU = "assumptions.mfu"
HOURS = 150.0


def scenario() -> acs.Scenario:
    """Engineering cost = 150 h (fixed) x U(100, 200) USD/h: linear in one uniform input.

    The MFU is PERT(0.3, 0.4, 0.55), so a second designed input with a non-uniform ppf is
    drawn too.
    """
    return acs.Scenario(
        name="designs",
        workload=acs.TrainingRun(params=7e9, tokens=1e11),
        fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")],
        assumptions=acs.Assumptions(
            mfu=acs.PERT(low=0.3, mode=0.4, high=0.55),
            porting_hours=100.0,
            optimization_hours=50.0,
            engineer_usd_per_hour=acs.Uniform(low=100.0, high=200.0),
        ),
    )


@pytest.mark.parametrize("design", ["lhs", "sobol", "antithetic"])
def test_design_results_are_finite_and_reproducible(design: str) -> None:
    """Same seed, same design: bit-identical; every metric finite; not the MC draws."""
    a = acs.simulate(scenario(), runs=512, seed=5, design=design)  # type: ignore[arg-type]
    b = acs.simulate(scenario(), runs=512, seed=5, design=design)  # type: ignore[arg-type]
    assert_same(a, b)
    for m in a.data:
        assert np.all(np.isfinite(a.samples(m))), m
    mc = acs.simulate(scenario(), runs=512, seed=5)
    assert not np.array_equal(a.inputs[WAGE], mc.inputs[WAGE])
    assert a.extras["design"] == design


def test_mc_is_the_default_and_unchanged() -> None:
    assert_same(
        acs.simulate(scenario(), runs=300, seed=2),
        acs.simulate(scenario(), runs=300, seed=2, design="mc"),
    )


def test_lhs_and_sobol_shrink_the_spread_of_the_mean() -> None:
    """Variance of the mean engineering cost over 20 seeds at 256 runs: designs < 0.1 x MC.

    The metric is 150 * (100 + 100 u), linear in one uniform. Plain MC: Var(mean) =
    150^2 * 100^2 / 12 / 256 ~ 73,000 USD^2. A stratified u (one point per stratum of width
    1/256) leaves only the within-stratum variance, Var(mean) = (MC variance) / 256^2, so
    the expected ratio is ~1.5e-5 for both designs. The MC sample variance over 20 seeds is
    chi^2_19 / 19 times its expectation, above 0.29 of it with probability 0.999, so a true
    ratio of 1.5e-5 passes a 0.1 bound by far; a design that did not stratify (ratio ~1)
    fails.
    """
    runs, seeds = 256, range(20)

    def spread(design: str) -> float:
        means = [
            acs.simulate(scenario(), runs=runs, seed=s, design=design).mean(  # type: ignore[arg-type]
                "engineering_cost_usd"
            )
            for s in seeds
        ]
        return float(np.var(means, ddof=1))

    mc = spread("mc")
    assert mc > 0
    assert spread("lhs") < 0.1 * mc
    assert spread("sobol") < 0.1 * mc


@pytest.mark.parametrize("design", ["lhs", "sobol"])
def test_design_marginals_match_the_input_distributions(design: str) -> None:
    """Each block holds one draw per equal-probability stratum of every designed input,
    and the marginals pass a KS test against the input's distribution.

    Stratification: ``floor(cdf(x) * 4096)`` over one block is exactly 0..4095, checked for
    the uniform wage and the PERT MFU (so PERT is mapped through its ppf). KS at seed 11,
    p > 0.001: stratified values are closer to the distribution than iid ones (the KS
    statistic is at most ~1/4096), so a correct mapping passes by far, while a wrong
    distribution or wrong parameters give p ~ 0 at 4096 runs.
    """
    res = acs.simulate(scenario(), runs=BLOCK_RUNS, seed=11, design=design)  # type: ignore[arg-type]
    wage = stats.uniform(loc=100.0, scale=100.0)
    mfu = acs.PERT(low=0.3, mode=0.4, high=0.55)
    for name, cdf in [(WAGE, wage.cdf), (MFU, lambda x: _pert_cdf(mfu, x))]:
        x = res.inputs[name]
        strata = np.sort(np.floor(np.asarray(cdf(x)) * BLOCK_RUNS).astype(int))
        np.testing.assert_array_equal(strata, np.arange(BLOCK_RUNS), err_msg=name)
        assert stats.kstest(x, cdf).pvalue > 0.001, name


def _pert_cdf(d: acs.PERT, x: np.ndarray) -> np.ndarray:
    """The PERT cdf from its scaled-beta definition (the dists module's oracle)."""
    w = d.high - d.low
    a = 1 + d.lamb * (d.mode - d.low) / w
    b = 1 + d.lamb * (d.high - d.mode) / w
    return np.asarray(stats.beta(a, b, loc=d.low, scale=w).cdf(x))


@pytest.mark.parametrize("design", ["lhs", "sobol"])
def test_design_is_bit_identical_across_chunks_and_executors(design: str) -> None:
    """Designs are per block: chunk sizes and a thread pool change nothing."""
    runs = 2 * BLOCK_RUNS
    one = acs.simulate(scenario(), runs=runs, seed=4, design=design)  # type: ignore[arg-type]
    with ThreadPoolExecutor(max_workers=2) as pool:
        two = acs.simulate(
            scenario(),
            runs=runs,
            seed=4,
            design=design,  # type: ignore[arg-type]
            executor=pool,
            chunk_runs=BLOCK_RUNS,
        )
    assert_same(one, two)


def test_part_of_a_block_slices_the_block_design() -> None:
    """A chunk holding part of a block keeps its slice of the whole block's design."""
    root = as_seed_sequence(9)
    dist = acs.Uniform(low=0.0, high=1.0)
    plan = InputPlan(root, total_runs=BLOCK_RUNS + 900, design="lhs")
    whole = plan.draws(BLOCK_RUNS, BLOCK_RUNS + 900).get("x", dist, dist)
    part = plan.draws(BLOCK_RUNS + 100, BLOCK_RUNS + 400).get("x", dist, dist)
    np.testing.assert_array_equal(part, whole[100:400])
    u = design_uniforms("lhs", root, "x", 1, 900)
    np.testing.assert_array_equal(whole, u)


def test_sobol_needs_power_of_two_blocks_and_bad_designs_are_rejected() -> None:
    for ok in (2, 1024, BLOCK_RUNS, 3 * BLOCK_RUNS):
        check_design_runs("sobol", ok)
    for bad in (1000, BLOCK_RUNS + 1024):
        with pytest.raises(ValueError, match="power of two"):
            acs.simulate(scenario(), runs=bad, seed=1, design="sobol")
    acs.simulate(scenario(), runs=1000, seed=1, design="lhs")
    with pytest.raises(ValueError, match="design must be one of"):
        acs.simulate(scenario(), runs=256, seed=1, design="halton")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="fixed number of runs"):
        acs.simulate(scenario(), runs="auto", target={"tco_usd": 0.01}, seed=1, design="lhs")
