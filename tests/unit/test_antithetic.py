"""Antithetic variates: ``simulate(design="antithetic")`` and its Monte Carlo error."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats
from tests.same_results import assert_same

import accelsim as acs
from accelsim.dists import Dist
from accelsim.engines._inputs import (
    BLOCK_RUNS,
    InputPlan,
    blocks,
    check_design_runs,
    design_uniforms,
)
from accelsim.seeding import as_seed_sequence, stream

WAGE = "assumptions.engineer_usd_per_hour"
PORTING = "assumptions.porting_hours.native"
Z95 = 1.959963984540054


def tco_scenario() -> acs.Scenario:
    """A training run whose TCO moves one way in each uncertain input, with no failures.

    The MFU is PERT(0.3, 0.4, 0.55) (TCO falls as it rises), the wage U(100, 200) USD/h
    (TCO rises with it), the catalog priors of power, PUE, badput, checkpoint write time,
    lead time... each move TCO one way too. A failure rate of 0 removes the failure sampler,
    and no rollbacks the instability term, the only randomness that is not an input, so TCO
    is a function of the inputs alone.
    """
    return acs.Scenario(
        name="antithetic-tco",
        workload=acs.TrainingRun(params=7e9, tokens=1e11),
        fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")],
        assumptions=acs.Assumptions(
            mfu=acs.PERT(low=0.3, mode=0.4, high=0.55),
            porting_hours=100.0,
            optimization_hours=50.0,
            engineer_usd_per_hour=acs.Uniform(low=100.0, high=200.0),
            failure_rate_per_chip_hour=0.0,
            instability_events_per_day=0.0,
        ),
    )


def product_scenario() -> acs.Scenario:
    """Engineering cost = (porting + 50 h) x wage, porting U(50, 150) h, wage U(100, 200).

    Write porting + 50 = 150 + 50 a and wage = 150 + 50 b with a, b iid U(-1, 1): the cost
    is 22500 + 7500 (a + b) + 2500 a b, of mean exactly 22500 USD. The antithetic partner
    has (-a, -b), so a pair's mean is 22500 + 2500 a b, of variance 2500^2 / 9 (E a^2 =
    1/3): the exact reference of the pair-means standard error.
    """
    return acs.Scenario(
        name="antithetic-product",
        workload=acs.TrainingRun(params=7e9, tokens=1e11),
        fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")],
        assumptions=acs.Assumptions(
            mfu=0.4,
            porting_hours=acs.Uniform(low=50.0, high=150.0),
            optimization_hours=50.0,
            engineer_usd_per_hour=acs.Uniform(low=100.0, high=200.0),
        ),
    )


# --- (a) pairs are ppf(u) and ppf(1 - u) -------------------------------------------------


@pytest.mark.parametrize(
    "dist",
    [
        acs.Uniform(low=2.0, high=5.0),
        acs.Normal(mean=1.0, sd=2.0),
        acs.PERT(low=0.3, mode=0.4, high=0.55),
        acs.Choice(values=[1.0, 2.0, 8.0], weights=[0.5, 0.3, 0.2]),
    ],
    ids=["uniform", "normal", "pert", "choice"],
)
def test_pairs_are_the_ppf_of_u_and_one_minus_u(dist: Dist) -> None:
    """Run 2k is ppf(u_k), run 2k+1 is ppf(1 - u_k), u_k the input's own uniform of run 2k.

    Exact equality: the oracle recomputes the uniforms from the input's stream
    ``stream(root, "input", name)`` (one per run, run 2k taking its value 2k) and maps them
    through the distribution's own ppf, as the design promises. So run 2k is the same draw
    as in plain Monte Carlo with the same seed.
    """
    root, n = as_seed_sequence(21), 1000
    x = InputPlan(root, n, "antithetic").draws(0, n).get("x", dist, dist)
    u = stream(root, "input", "x").random(n)[0::2]
    np.testing.assert_array_equal(x[0::2], dist.ppf(u))
    np.testing.assert_array_equal(x[1::2], dist.ppf(1.0 - u))


def test_symmetric_inputs_mirror_about_their_centre() -> None:
    """Uniform(2, 5) pairs sum to 7, Normal(1, 2) pairs to 2, up to rounding.

    Uniform: ppf is loc + scale q, so a pair sums to 2 loc + scale (u + (1 - u)): a few ulps
    of 7 (rtol 1e-14). Normal: 1 - u is exact for u on numpy's grid j / 2**53, and the
    normal quantile is odd about 1/2 to within ~1e-15 relative; |z| < 8.3 at these
    probabilities, so a pair's sum is 2 within 1e-12 (sd 2 times 8.3 times a few ulps, with
    room).
    """
    root, n = as_seed_sequence(3), 2 * BLOCK_RUNS
    uni, nor = acs.Uniform(low=2.0, high=5.0), acs.Normal(mean=1.0, sd=2.0)
    draws = [InputPlan(root, n, "antithetic").draws(a, b) for a, b in blocks(0, n)]
    x = np.concatenate([d.get("u", uni, uni) for d in draws])
    z = np.concatenate([d.get("z", nor, nor) for d in draws])
    np.testing.assert_allclose(x[0::2] + x[1::2], 7.0, rtol=1e-14)
    np.testing.assert_allclose(z[0::2] + z[1::2], 2.0, rtol=0, atol=1e-12)
    # not all alike: the pairs' first members are spread over the support
    assert x[0::2].min() < 2.1
    assert x[0::2].max() > 4.9


def test_even_runs_draw_what_plain_monte_carlo_draws_first() -> None:
    """The u of the pairs are the input's Monte Carlo uniforms of the even runs.

    Every distribution is sampled by inverse transform, so run 2k of the antithetic design
    equals run 2k of plain Monte Carlo with the same seed.
    """
    root, n = as_seed_sequence(8), 600
    dist = acs.Uniform(low=0.0, high=1.0)
    mc = InputPlan(root, n).draws(0, n).get("x", dist, dist)
    anti = InputPlan(root, n, "antithetic").draws(0, n).get("x", dist, dist)
    np.testing.assert_array_equal(anti[0::2], mc[0::2])


# --- (b) independent of the chunking ---------------------------------------------------


def _chunked(root: np.random.SeedSequence, total: int, cuts: list[int]) -> np.ndarray:
    """Draws of one input as a study split at ``cuts`` draws them (see study._run_chunk)."""
    dist = acs.Normal(mean=0.0, sd=1.0)
    parts = []
    plan = InputPlan(root, total, "antithetic")
    for c0, c1 in pairwise([0, *cuts, total]):
        parts += [plan.draws(a, b).get("x", dist, dist) for a, b in blocks(c0, c1)]
    return np.concatenate(parts)


@given(
    seed=st.integers(0, 2**32 - 1),
    pairs=st.integers(1, (2 * BLOCK_RUNS + 100) // 2),
    fractions=st.lists(st.floats(0.0, 1.0), max_size=5),
)
def test_any_chunking_draws_the_same_pairs(seed: int, pairs: int, fractions: list[float]) -> None:
    """Chunks cut anywhere (mid-pair, mid-block, across block ends) change no draw, and
    every pair mirrors (a standard normal: run 2k+1 is -run 2k up to ~1e-15 relative)."""
    root, total = as_seed_sequence(seed), 2 * pairs
    cuts = sorted({int(f * total) for f in fractions} - {0, total})
    whole = _chunked(root, total, [])
    np.testing.assert_array_equal(_chunked(root, total, cuts), whole)
    np.testing.assert_allclose(whole[0::2], -whole[1::2], rtol=0, atol=1e-12)


def test_simulate_is_bit_identical_across_chunks_and_executors() -> None:
    """2 blocks + 100 runs: whole-block chunks of the analytic engine, any chunk sizes of
    the DES engine (37 cuts pairs and is odd), and a thread pool change nothing."""
    runs = 2 * BLOCK_RUNS + 100
    one = acs.simulate(tco_scenario(), runs=runs, seed=4, design="antithetic")
    assert one.extras["design"] == "antithetic"
    for chunk in (BLOCK_RUNS, 2 * BLOCK_RUNS, 3 * BLOCK_RUNS):
        assert_same(
            one,
            acs.simulate(tco_scenario(), runs=runs, seed=4, design="antithetic", chunk_runs=chunk),
        )
    with ThreadPoolExecutor(max_workers=2) as pool:
        assert_same(
            one,
            acs.simulate(tco_scenario(), runs=runs, seed=4, design="antithetic", executor=pool),
        )
    wage = one.inputs[WAGE]
    np.testing.assert_allclose(wage[0::2] + wage[1::2], 300.0, rtol=1e-14)

    des = [
        acs.simulate(
            tco_scenario(), runs=150, seed=4, design="antithetic", engine="des", chunk_runs=c
        )
        for c in (None, 37, 150)
    ]
    assert_same(des[0], des[1])
    assert_same(des[0], des[2])
    # the inputs are the first runs of the analytic study's (same seed, same streams)
    np.testing.assert_array_equal(des[0].inputs[WAGE], wage[:150])


# --- (c) variance reduction --------------------------------------------------------------


def test_antithetic_shrinks_the_spread_of_the_mean_tco() -> None:
    """Variance of the mean TCO over R = 30 seeds at n = 256 runs: antithetic < 0.30 x MC.

    Theory: with the runs paired, Var(mean) = sigma^2 (1 + c) / n, c the correlation of a
    pair's TCOs, against sigma^2 / n for plain Monte Carlo: the ratio is rho = 1 + c. TCO
    here is a function of the inputs alone, monotone in each one, so c <= 0 (Hammersley and
    Morton 1956); it is mostly linear in the wage and 1/MFU, so c is near -1 (rho ~ 0.07,
    estimated on a separate 65,536-run study at seed 3).

    Test: the means of 256 runs are close to normal (TCO has a coefficient of variation of
    0.12), so each set of 30 means has a sample variance distributed as
    Var(mean) chi^2_29 / 29, and with disjoint seeds the two are independent:
    (V_anti / V_mc) / rho ~ F(29, 29). The bound is 1 / F_0.999(29, 29) = 0.304: if the
    design reduced nothing (rho = 1) the test would fail with probability 0.999, and at
    rho = 0.07 it fails only when F(29, 29) > 4.3, probability < 1e-4.
    """
    seeds = range(30)

    def means(design: str, offset: int) -> list[float]:
        return [
            acs.simulate(tco_scenario(), runs=256, seed=offset + s, design=design).mean("tco_usd")  # type: ignore[arg-type]
            for s in seeds
        ]

    v_mc = float(np.var(means("mc", 0), ddof=1))
    v_anti = float(np.var(means("antithetic", 1000), ddof=1))
    bound = 1.0 / float(stats.f.ppf(0.999, len(seeds) - 1, len(seeds) - 1))
    assert 0.30 < bound < 0.31
    assert v_mc > 0
    assert v_anti / v_mc < bound


# --- (d) the standard error over pair means ----------------------------------------------


def test_std_error_is_the_pair_means_formula() -> None:
    """Antithetic: sd(pair means, ddof=1) / sqrt(n / 2); otherwise sd(x) / sqrt(n).

    Reference computed here by hand from the definition (1e-12 relative: the same
    arithmetic in a different order). The summary and the comparison table print 1.96
    times it.
    """
    res = acs.simulate(product_scenario(), runs=1000, seed=2, design="antithetic")
    assert res.design == "antithetic"
    for m in ("engineering_cost_usd", "tco_usd"):
        x = res.samples(m)
        y = np.array([(x[2 * k] + x[2 * k + 1]) / 2 for k in range(x.size // 2)])
        ref = float(np.sqrt(np.sum((y - y.mean()) ** 2) / (y.size - 1) / y.size))
        assert res.std_error(m) == pytest.approx(ref, rel=1e-12)
    iid = acs.Result("iid", dict(res.data))
    assert iid.design == "mc"
    x = iid.samples("tco_usd")
    assert iid.std_error("tco_usd") == pytest.approx(
        float(np.sqrt(np.sum((x - x.mean()) ** 2) / (x.size - 1) / x.size)), rel=1e-12
    )
    # the pairs cancel the linear part of the cost: far below the iid formula
    assert res.std_error("engineering_cost_usd") < 0.5 * iid.std_error("engineering_cost_usd")
    assert "antithetic design" in res.summary().splitlines()[0]
    cmp = acs.compare({"a": product_scenario()}, runs=1000, seed=2, design="antithetic")
    assert cmp["a"].std_error("tco_usd") == res.std_error("tco_usd")


def test_std_error_matches_the_exact_error_and_its_interval_covers() -> None:
    """R = 1000 independent antithetic experiments of n = 64 runs (32 pairs) each: the
    slices of one 64,000-run study, since distinct pairs are independent.

    Exact reference (see :func:`product_scenario`): the mean cost is 22500 USD and a pair
    mean has variance 2500^2 / 9, so E[std_error^2] = 2500^2 / 9 / 32 (the pair-means
    variance estimator is unbiased). Its relative sd per experiment is about
    sqrt((kurtosis - 1) / 32) = sqrt(2.24 / 32) = 0.27 (a pair mean is 22500 + 2500 a b,
    of kurtosis (1/5)^2 / (1/3)^4 = 3.24), 0.0084 for the average over 1000: the average
    must be within 0.035 (4 sd) of the reference. The iid formula would be 1 / sqrt(rho) =
    5.2 times larger (rho = 2 Var(pair mean) / Var(run) = 0.036).

    Coverage: with 32 normal pair means, mean +- 1.96 std_error covers 22500 with
    probability P(|t_31| < 1.96) = 0.941; the count over 1000 experiments has sd
    sqrt(0.941 x 0.059 / 1000) = 0.0075, so the rate must lie within 0.03 (4 sd) plus
    0.01 for the pair means' slight non-normality (excess kurtosis 0.24 over 32 pairs) of
    0.941. The iid formula would cover ~100 % and a sqrt(n) in place of sqrt(n / 2) ~83 %.
    """
    experiments, n = 1000, 64
    res = acs.simulate(product_scenario(), runs=experiments * n, seed=7, design="antithetic")
    cost = res.samples("engineering_cost_usd")
    porting, wage = res.inputs[PORTING], res.inputs[WAGE]
    np.testing.assert_allclose(cost, (porting + 50.0) * wage, rtol=1e-14)
    se, covered = [], 0
    for i in range(experiments):
        part = acs.Result("part", {"c": cost[i * n : (i + 1) * n]}, extras={"design": "antithetic"})
        s = part.std_error("c")
        se.append(s)
        covered += abs(part.mean("c") - 22500.0) <= Z95 * s
    exact_var = 2500.0**2 / 9.0 / (n // 2)
    assert np.mean(np.square(se)) / exact_var == pytest.approx(1.0, abs=0.035)
    nominal = 2.0 * float(stats.t.cdf(Z95, n // 2 - 1)) - 1.0
    assert nominal == pytest.approx(0.941, abs=5e-4)
    assert abs(covered / experiments - nominal) <= 0.04


# --- (e) runs that do not suit the design ---------------------------------------------------


def test_odd_runs_and_auto_runs_are_rejected() -> None:
    check_design_runs("antithetic", 2)
    check_design_runs("antithetic", 2 * BLOCK_RUNS + 100)
    with pytest.raises(ValueError, match=r"runs must be even \(e\.g\. 1000 or 1002\), not 1001"):
        acs.simulate(product_scenario(), runs=1001, seed=1, design="antithetic")
    with pytest.raises(ValueError, match=r"e\.g\. 4 or 6\), not 5"):
        check_design_runs("antithetic", 5)
    with pytest.raises(ValueError, match="fixed number of runs"):
        acs.simulate(
            product_scenario(), runs="auto", target={"tco_usd": 0.01}, seed=1, design="antithetic"
        )
    with pytest.raises(ValueError, match="even n"):
        design_uniforms("antithetic", as_seed_sequence(1), "x", 0, 7)
    odd = acs.Result("odd", {"x": np.arange(5.0)}, extras={"design": "antithetic"})
    with pytest.raises(ValueError, match="odd number of runs"):
        odd.std_error("x")
    # outside a study, an odd block cannot be paired either
    dist = acs.Uniform(low=0.0, high=1.0)
    with pytest.raises(ValueError, match="even n"):
        InputPlan(as_seed_sequence(1), design="antithetic").draws(0, 7).get("x", dist, dist)
