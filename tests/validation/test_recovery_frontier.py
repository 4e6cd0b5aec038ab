"""Frontier recovery (``TrainingRun.recovery``) against the published frontier runs.

Figures are copied here with their source (record ids of
../shared/reference/validation/reliability.csv in brackets):

- Llama 3 405B on 16,384 H100 (arXiv:2407.21783): 466 interruptions in a 54-day snapshot
  [L3-01], "higher than 90 % effective training time" [L3-09], 30.84M GPU-hours for the
  whole run (the model card), 38-43 % MFU (the paper's Table 4);
- ByteRobust (arXiv:2509.16293): 97 % effective training time ratio for a three-month job
  on 9,600 GPUs;
- Gemini 1.0 on TPU v4 SuperPods (arXiv:2312.11805) [GM-01]: goodput of the largest job
  85 % before, 97 % after in-memory redundant state.

Each published goodput must lie inside the simulated P1-P99 of a run of its size under
frontier recovery (default priors otherwise, lead time 0); Llama 3's median goodput must be
at least 0.85 (issue 29's target) with recovery left unset, i.e. by the default for its size.
The MFU is the published 0.40 where a test reads chip-hours, so that goodput alone moves
them (the MFU prior is another model's). Sampling: 4,000 runs put a quantile's standard
error near 0.01 in probability, so each interval check has that much slack by construction.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import accelsim as acs
from accelsim import catalog
from accelsim.catalog import builtin_catalog
from accelsim.dists import Dist
from accelsim.engines.training._inputs import recovery_technique
from accelsim.models import reliability
from accelsim.scenario import Recovery

RUNS = 4000
SEED = 29

LLAMA3_GPU_HOURS = 30.84e6  # model card, 405B
LLAMA3_INTERRUPTIONS_PER_DAY = 466 / 54  # [L3-01]
LLAMA3_MFU = 0.40  # Table 4: 38-43 %


def _run(
    chips: int,
    params: float,
    tokens: float,
    *,
    chip: str = "h100-sxm",
    recovery: Recovery | None = None,
    mfu: float | None = LLAMA3_MFU,
    runs: int = RUNS,
) -> acs.Result:
    assumptions = acs.Assumptions(lead_time_days=0, **({} if mfu is None else {"mfu": mfu}))
    provider = "on_prem" if chip.startswith("h100") else "gcp"
    pricing = "on_prem" if provider == "on_prem" else "on_demand"
    scenario = acs.Scenario(
        name="frontier",
        workload=acs.TrainingRun(params=params, tokens=tokens, recovery=recovery),
        fleet=[acs.Pool(chip=chip, count=chips, provider=provider, pricing=pricing)],
        assumptions=assumptions,
    )
    return acs.simulate(scenario, runs=runs, seed=SEED)


@pytest.fixture(scope="module")
def llama3() -> acs.Result:
    return _run(16_384, 405e9, 15.6e12)


def test_llama3_default_recovery_at_its_size_is_frontier() -> None:
    """16,384 chips is above ``priors.frontier_recovery_min_chips`` (4,096); 1,024 below."""
    cat = builtin_catalog()
    for chips, technique in ((16_384, "frontier"), (1_024, "standard")):
        s = acs.Scenario(
            name="x",
            workload=acs.TrainingRun(params=7e9, tokens=1e11),
            fleet=[acs.Pool(chip="h100-sxm", count=chips, provider="on_prem", pricing="on_prem")],
        )
        assert recovery_technique(s, cat) == technique


def test_llama3_goodput_meets_the_target_and_holds_the_published_figure(
    llama3: acs.Result,
) -> None:
    """P50 goodput >= 0.85 (the target) and Meta's > 0.90 [L3-09] inside P1-P99."""
    goodput = llama3.samples("goodput")
    p1, p50, p99 = np.quantile(goodput, [0.01, 0.5, 0.99])
    assert p50 >= 0.85
    assert p1 <= 0.90 <= p99


def test_llama3_chip_hours_at_its_published_mfu(llama3: acs.Result) -> None:
    """At the published MFU, the P50 chip-hours are within 20 % of 30.84M (issue 29's
    tolerance): only goodput separates them (failure-free chip-hours are 27.7M, the FLOPs
    6 N D over 16,384 x 989 TFLOP/s x 0.40)."""
    p50 = float(np.median(llama3.samples("chip_hours")))
    assert abs(p50 / LLAMA3_GPU_HOURS - 1.0) <= 0.20


def test_llama3_interruption_rate_holds_the_published_one(llama3: acs.Result) -> None:
    """The technique changes what an interruption costs, not how often one comes: Meta's
    8.63 per day [L3-01] lies inside the simulated P5-P95 of interruptions per training day
    (the failure prior is fitted to it with six other rates)."""
    per_day = llama3.samples("interruptions") / llama3.samples("training_days")
    p5, p95 = np.quantile(per_day, [0.05, 0.95])
    assert p5 <= LLAMA3_INTERRUPTIONS_PER_DAY <= p95


@pytest.mark.parametrize(
    ("label", "chips", "chip", "published"),
    [
        ("ByteRobust, 97 % ETTR on 9,600 GPUs", 9_600, "h100-sxm", 0.97),
        ("Gemini on TPU v4, 97 % after in-memory state", 4_096, "tpu-v4", 0.97),
    ],
)
def test_published_frontier_goodput_lies_in_the_simulated_interval(
    label: str, chips: int, chip: str, published: float
) -> None:
    """Out of sample (neither figure sets a prior's centre; ByteRobust's is one arithmetic
    check in frontier_restart_hours' note): the published goodput inside P1-P99 of a
    three-month run of its size."""
    flops_per_day = chips * catalog.chip(chip).bf16_tflops * 1e12 * LLAMA3_MFU * 86_400
    tokens = 90 * flops_per_day / (6.0 * 70e9)  # a 70B model trained for ~90 days
    goodput = _run(chips, 70e9, tokens, chip=chip, recovery="frontier").samples("goodput")
    p1, p99 = np.quantile(goodput, [0.01, 0.99])
    assert p1 <= published <= p99, label


def test_frontier_recovery_beats_standard_by_what_the_closed_form_says() -> None:
    """The same Llama 3 run under each technique: the ratio of median goodputs is the ratio
    of Daly's closed-form failure goodput at each technique's median write and restart
    times and the failure prior's median rate (badput and instability are the same terms in
    both, drawn from the same streams, so they cancel in the ratio). Tolerance 3 %: the
    median of a product is not the product of medians."""
    p = catalog.priors()
    rate = 16_384 * float(p.failure_rate_per_chip_hour.dist().ppf(0.5))

    def closed_form(write: Dist, restart: Dist) -> float:
        c, r = float(write.ppf(0.5)), float(restart.ppf(0.5))
        tau = float(reliability.daly_interval_hours(c, 1.0 / rate))
        return float(reliability.goodput_fraction(1e4, tau, c, r, rate))

    assert p.frontier_checkpoint_write_hours is not None
    assert p.frontier_restart_hours is not None
    expected = closed_form(
        p.frontier_checkpoint_write_hours.dist(), p.frontier_restart_hours.dist()
    ) / closed_form(p.checkpoint_write_hours.dist(), p.restart_hours.dist())
    runs = {
        r: _run(16_384, 405e9, 15.6e12, recovery=r).samples("goodput")
        for r in ("frontier", "standard")
    }
    ratio = float(np.median(runs["frontier"]) / np.median(runs["standard"]))
    assert ratio == pytest.approx(expected, rel=0.03)
    assert ratio > 1.0


def test_a_100k_chip_frontier_run_finishes_but_for_the_restart_tail() -> None:
    """A 1T-parameter model on 30T tokens on 100,000 H100 (about 53 failure-free days at
    MFU 0.40) under frontier recovery finishes within the 3-year horizon in all but the runs
    whose expected completion time (Daly's closed form, exact for the model, at each run's
    own drawn rate, write and restart times, stretched by its badput) exceeds the horizon.
    Those are the runs whose drawn restart time lies in the far tail of
    ``frontier_restart_hours`` (above 30 min, beyond its P95 of 15 min) with a high failure
    rate: the stated fraction is at most 1 %. Tolerance: 5 binomial SE plus the share of
    runs whose expected time is within 25 % of the horizon (a sampled time may fall either
    side of it)."""
    res = _run(100_000, 1e12, 3e13, recovery="frontier", runs=10_000)
    unfinished = 1.0 - res.samples("finished")
    inputs = res.inputs
    rate = 100_000 * np.asarray(inputs["assumptions.failure_rate_per_chip_hour"])
    write = np.asarray(inputs["priors.frontier_checkpoint_write_hours"])
    restart = np.asarray(inputs["priors.frontier_restart_hours"])
    badput = np.asarray(inputs["assumptions.badput_fraction"])
    work = 6.0 * 1e12 * 3e13 / (100_000 * 989e12 * LLAMA3_MFU * 3600.0)
    tau = reliability.daly_interval_hours(write, 1.0 / rate)
    with np.errstate(over="ignore"):
        expected = reliability.expected_completion_hours(work, tau, write, restart, rate)
    expected = expected / (1.0 - badput)
    horizon = 3 * 365.25 * 24.0
    predicted = float(np.mean(expected > horizon))
    near = float(np.mean(np.abs(np.log(expected / horizon)) < np.log(1.25)))
    se = float(np.sqrt(max(predicted * (1 - predicted), 1e-4) / unfinished.size))
    assert abs(float(unfinished.mean()) - predicted) <= 5 * se + near
    assert float(unfinished.mean()) <= 0.01
    slow = restart[unfinished > 0]
    assert slow.size == 0 or float(np.median(slow)) > 0.25


@given(st.integers(1, 2_000_000), st.sampled_from([None, "standard", "frontier"]))
@settings(max_examples=60)
def test_the_technique_is_the_users_else_a_step_in_size(
    chips: int, recovery: Recovery | None
) -> None:
    """The user's technique always; unset, frontier exactly from the threshold up."""
    cat = builtin_catalog()
    threshold = cat.priors.frontier_recovery_min_chips
    assert threshold is not None
    s = acs.Scenario(
        name="x",
        workload=acs.TrainingRun(params=1e9, tokens=1e11, recovery=recovery),
        fleet=[acs.Pool(chip="h100-sxm", count=chips, provider="on_prem", pricing="on_prem")],
    )
    by_size = "frontier" if chips >= float(threshold.value) else "standard"  # type: ignore[arg-type]
    assert recovery_technique(s, cat) == (recovery or by_size)


@given(
    st.integers(1, 2_000_000),
    st.sampled_from([None, "standard", "frontier"]),
    st.one_of(st.none(), st.integers(1990, 2100)),
)
@settings(max_examples=80)
def test_before_the_frontier_year_the_default_is_standard(
    chips: int, recovery: Recovery | None, start_year: int | None
) -> None:
    """``TrainingRun.start_year`` before ``priors.frontier_recovery_from_year`` makes the
    default standard at any size; from that year on, or unset, the size rule holds; the
    user's technique wins either way."""
    cat = builtin_catalog()
    threshold, since = (
        cat.priors.frontier_recovery_min_chips,
        cat.priors.frontier_recovery_from_year,
    )
    assert threshold is not None
    assert since is not None
    s = acs.Scenario(
        name="x",
        workload=acs.TrainingRun(params=1e9, tokens=1e11, recovery=recovery, start_year=start_year),
        fleet=[acs.Pool(chip="h100-sxm", count=chips, provider="on_prem", pricing="on_prem")],
    )
    early = start_year is not None and start_year < float(since.value)  # type: ignore[arg-type]
    by_rule = "frontier" if chips >= float(threshold.value) and not early else "standard"  # type: ignore[arg-type]
    assert recovery_technique(s, cat) == (recovery or by_rule)


def test_the_year_rule_is_listed_with_the_inputs() -> None:
    """A 2020 run of 8,192 chips draws the standard restart prior and lists the year rule
    beside the size rule; the same run unset in year draws the frontier prior."""

    def inputs(year: int | None) -> set[str]:
        scenario = acs.Scenario(
            name="x",
            workload=acs.TrainingRun(params=7e9, tokens=1e11, start_year=year),
            fleet=[acs.Pool(chip="h100-sxm", count=8_192, provider="on_prem", pricing="on_prem")],
            assumptions=acs.Assumptions(lead_time_days=0.0, porting_hours=0.0),
        )
        return set(acs.simulate(scenario, runs=64, seed=SEED).inputs)

    then, now = inputs(2020), inputs(None)
    assert {"priors.frontier_recovery_from_year", "assumptions.restart_hours"} <= then
    assert "priors.frontier_restart_hours" not in then
    assert "priors.frontier_restart_hours" in now
    assert "priors.frontier_recovery_from_year" not in now
