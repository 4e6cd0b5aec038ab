"""A training run through the public API: conservation, closed forms, metamorphic pairs, seeds.

``acs.simulate`` of a :class:`accelsim.TrainingRun` on a dedicated fleet (the analytic engine)
draws every uncertain input, runs perf -> engineering -> reliability -> usage and prices
it. These tests hold the assembled pipeline to what DESIGN.md says its metrics mean:

- conservation, run by run: training = failure-free compute + failure overhead; time to
  train = the longer of lead time and preparation, then training; allocated chip-hours =
  chips x (training - waits for spot capacity); TCO = the sum of its cost lines; goodput =
  compute / training;
- closed forms through the input drawing: an MFU drawn Uniform(a, b) gives compute days
  with mean ``6 N D / (n P) * ln(b / a) / (b - a)``; a lead time drawn from a law has that
  law (KS test); the default checkpoint interval is Daly's at the run's interruption rate;
- metamorphic pairs on common random numbers (the same seed gives every shared input the
  same draws): chips, parameters, failure rate, prices;
- determinism: the same seed gives bit-identical results whatever the chunking or executor,
  and ``acs.compare`` gives every option the draws ``acs.simulate`` would.

Tolerances: exact identities to 1e-12 relative (different summation orders); sample means
within 5 standard errors (CLT; ~6e-7 false alarms per check); KS at p > 1e-3.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import accelsim as acs
from accelsim import catalog
from accelsim import strategies as acst
from accelsim.models import reliability

EXACT = 1e-12
HOURS_PER_DAY = 24.0
SECONDS_PER_HOUR = 3600.0
COST_LINES = ("hardware_cost_usd", "energy_cost_usd", "engineering_cost_usd", "delay_cost_usd")


def scenario(
    *,
    params: float = 7e9,
    tokens: float = 1e11,
    chips: int = 256,
    chip: str = "h100-sxm",
    provider: str = "aws",
    pricing: str = "on_demand",
    **assumptions: object,
) -> acs.Scenario:
    return acs.Scenario(
        name="t",
        workload=acs.TrainingRun(params=params, tokens=tokens),
        fleet=[acs.Pool(chip=chip, count=chips, provider=provider, pricing=pricing)],  # type: ignore[arg-type]
        assumptions=acs.Assumptions(**assumptions),  # type: ignore[arg-type]
    )


def run(s: acs.Scenario, runs: int = 400, seed: int = 11, **kw: object) -> acs.Result:
    return acs.simulate(s, runs=runs, seed=seed, engine="analytic", progress=False, **kw)  # type: ignore[arg-type]


def _close(x: np.ndarray, y: np.ndarray, rel: float = EXACT) -> None:
    np.testing.assert_allclose(x, y, rtol=rel, atol=0.0)


# ---------------------------------------------------------------------------- conservation

_FLEETS = acst.pools(chips=["h100-sxm", "a100-80gb", "tpu-v5p"], max_count=4096)


@settings(max_examples=12)
@given(
    acst.scenarios(
        workload=acst.training_runs(min_params=1e8, max_params=7e10, max_tokens=2e12),
        fleet=_FLEETS,
    ),
    st.integers(0, 2**32 - 1),
)
def test_phases_and_costs_add_up_run_by_run(s: acs.Scenario, seed: int) -> None:
    """Over drawn scenarios (any chip, provider, pricing, size; catalog priors), run by run:

    - finished runs: ``training = compute + failure overhead``, goodput ``= compute /
      training``, and the overhead holds the rollbacks and recovery waits;
    - ``time_to_train = max(lead time, preparation) + training`` (a dedicated fleet has no
      queue) and ``wait_days = lead_time_days``;
    - ``chip_hours = chips x (training - recovery waits)``: allocated while training, not
      while a preempted spot run waits for capacity to return;
    - ``tco = hardware + energy + engineering + delay``; every cost >= 0;
    - every metric finite.
    """
    res = run(s, runs=64, seed=seed)
    m = {name: res.samples(name) for name in res.metrics}
    for name, x in m.items():
        assert np.all(np.isfinite(x)), name
    done = m["finished"] == 1.0
    _close(m["training_days"][done], (m["compute_days"] + m["failure_overhead_days"])[done])
    _close(m["goodput"][done], (m["compute_days"] / m["training_days"])[done])
    slack = 1e-9 * m["training_days"][done]
    overhead = m["failure_overhead_days"][done]
    assert np.all(m["instability_days"][done] <= overhead + slack)
    assert np.all(m["recovery_wait_days"][done] <= overhead + slack)
    before = np.maximum(m["lead_time_days"], m["preparation_days"])
    _close(m["time_to_train_days"], before + m["training_days"])
    np.testing.assert_array_equal(m["wait_days"], m["lead_time_days"])
    chips = s.fleet[0].count
    running_days = m["training_days"] - m["recovery_wait_days"]
    _close(m["chip_hours"], chips * running_days * HOURS_PER_DAY, rel=1e-9)
    _close(m["tco_usd"], sum(m[line] for line in COST_LINES))
    for line in (*COST_LINES, "tco_usd"):
        assert np.all(m[line] >= 0.0), line
    assert np.all((m["goodput"] > 0.0) & (m["goodput"] <= 1.0))


# ------------------------------------------------------------- closed forms through drawing


def test_compute_days_of_a_uniform_mfu_have_the_closed_form_mean() -> None:
    """MFU ~ Uniform(a, b): compute days ``= K / MFU`` with ``K = 6 N D / (n P 86400)``, so
    ``E = K ln(b / a) / (b - a)`` and ``Var = K² / (a b) - E²``. Oracle: those integrals;
    the sample mean within 5 SE, every draw inside ``[K / b, K / a]``."""
    a, b = 0.25, 0.55
    res = run(scenario(mfu=acs.Uniform(low=a, high=b)), runs=4000)
    k = 6 * 7e9 * 1e11 / (256 * acs.catalog.chip("h100-sxm").bf16_tflops * 1e12 * 86400)
    days = res.samples("compute_days")
    mean = k * math.log(b / a) / (b - a)
    var = k**2 / (a * b) - mean**2
    assert abs(days.mean() - mean) <= 5.0 * math.sqrt(var / days.size)
    assert np.all((days >= k / b * (1 - EXACT)) & (days <= k / a * (1 + EXACT)))
    _close(res.samples("mfu"), k / days)


@pytest.mark.parametrize(
    "law",
    [acs.Triangular(low=5.0, mode=20.0, high=90.0), acs.LogNormal(low=2.0, high=30.0)],
    ids=repr,
)
def test_a_lead_time_law_reaches_the_metric_unchanged(law: acs.Dist) -> None:
    """With no porting or optimisation to overlap it, ``lead_time_days`` is the drawn lead
    time: its 2,000 draws pass a one-sample KS test against the law's CDF (scipy), and time
    to train exceeds training by exactly it."""
    res = run(
        scenario(lead_time_days=law, porting_hours=0.0, optimization_hours=0.0, mfu=0.4), runs=2000
    )
    lead = res.samples("lead_time_days")
    if isinstance(law, acs.Triangular):
        cdf = stats.triang(
            (law.mode - law.low) / (law.high - law.low), loc=law.low, scale=law.high - law.low
        ).cdf
    else:
        sigma = math.log(law.high / law.low) / (2 * stats.norm.ppf(0.95))
        cdf = stats.lognorm(s=sigma, scale=math.sqrt(law.low * law.high)).cdf
    assert stats.kstest(lead, cdf).pvalue > 1e-3
    _close(res.samples("time_to_train_days") - res.samples("training_days"), lead, rel=1e-9)


@pytest.mark.parametrize(
    ("law", "cdf"),
    [
        (
            acs.PERT(low=0.3, mode=0.45, high=0.5),
            stats.beta(1 + 4 * 0.75, 1 + 4 * 0.25, loc=0.3, scale=0.2).cdf,
        ),
        (
            acs.Beta(alpha=8.0, beta=12.0, low=0.05, high=0.75),
            stats.beta(8.0, 12.0, loc=0.05, scale=0.7).cdf,
        ),
        (acs.Uniform(low=0.2, high=0.6), stats.uniform(loc=0.2, scale=0.4).cdf),
    ],
    ids=["pert", "beta", "uniform"],
)
@pytest.mark.parametrize("chips", [64, 8192])
def test_a_set_mfu_law_is_the_runs_mfu_at_any_scale(law: acs.Dist, cdf: object, chips: int) -> None:
    """DESIGN.md: an MFU the user sets is the run's MFU at its own scale, used as is (not
    carried by the scaling model, not moved by the learning curve). So the ``mfu`` metric
    has the set law at any fleet size: 2,000 runs pass a KS test against the law's CDF
    (scipy, built here from the parameters), and compute days are ``6 N D / (n P MFU)`` run
    by run."""
    res = run(scenario(chips=chips, mfu=law), runs=2000)
    mfu = res.samples("mfu")
    assert stats.kstest(mfu, cdf).pvalue > 1e-3  # type: ignore[arg-type]
    peak = acs.catalog.chip("h100-sxm").bf16_tflops * 1e12
    _close(res.samples("compute_days"), 6 * 7e9 * 1e11 / (chips * peak * mfu) / 86_400)


def test_the_default_checkpoint_interval_is_dalys_at_the_interruption_rate() -> None:
    """Unset ``checkpoint_interval_hours`` means Daly's interval for the run's write time and
    MTBF ``1 / (chips x failure rate)`` (DESIGN.md: "unset = Young/Daly"); a set one is used
    as is."""
    chips, per_chip, write = 1024, 3e-5, 0.05
    fixed = {"mfu": 0.4, "failure_rate_per_chip_hour": per_chip, "checkpoint_write_hours": write}
    res = run(scenario(chips=chips, **fixed), runs=20)
    mtbf = 1.0 / (chips * per_chip)
    _close(
        res.samples("checkpoint_interval_hours"),
        np.full(20, float(reliability.daly_interval_hours(write, mtbf))),
    )
    set_res = run(scenario(chips=chips, checkpoint_interval_hours=2.5, **fixed), runs=20)
    np.testing.assert_array_equal(set_res.samples("checkpoint_interval_hours"), 2.5)


def test_mean_interruptions_are_the_rate_times_the_mean_running_time() -> None:
    """Wald's identity through the whole engine: with fixed inputs, no badput and no
    instability, ``E[interruptions] = lambda E[T]`` where ``T`` is the running time; the
    sample means within 5 SE of ``lambda`` times the mean training hours."""
    chips, per_chip = 4096, 2e-5
    res = run(
        scenario(
            chips=chips,
            params=70e9,
            tokens=1e12,
            mfu=0.4,
            failure_rate_per_chip_hour=per_chip,
            checkpoint_write_hours=0.05,
            restart_hours=0.3,
            badput_fraction=0.0,
            instability_events_per_day=0.0,
            startup_hours=0.0,  # the launch's startup is no part of this law
        ),
        runs=3000,
    )
    n = res.samples("interruptions")
    hours = res.samples("training_days") * HOURS_PER_DAY
    diff = n - chips * per_chip * hours  # zero-mean by Wald; its SE is the tolerance
    assert abs(diff.mean()) <= 5.0 * diff.std(ddof=1) / math.sqrt(diff.size)
    assert n.mean() > 3.0  # the case has failures to count (~6.6 a run)


def test_rollbacks_through_the_engine_have_the_compound_poisson_law() -> None:
    """Instability through the whole engine: with no hardware failures and no badput the
    exposure is the failure-free time ``D`` (compute plus checkpoint writes, the same every
    run here), events are Poisson(``r D``) and each costs a log-normal of the catalog's
    5-95 % interval. Oracles: the mean ``r D m e^{s^2/2}`` within 5 SE; ``P(no rollback) =
    e^{-r D}`` within 5 binomial SE; the variance ``r D m^2 e^{2 s^2}`` within 15 % (the
    fourth moment of a log-normal makes the sample variance slow to settle)."""
    per_day = 0.05
    res = run(
        scenario(
            chips=512,
            params=70e9,
            tokens=2e12,
            mfu=0.4,
            failure_rate_per_chip_hour=0.0,
            badput_fraction=0.0,
            checkpoint_write_hours=0.01,
            instability_events_per_day=per_day,
            startup_hours=0.0,  # the launch's startup is no part of this law
        ),
        runs=20_000,
    )
    lost = res.samples("instability_days")
    exposure = res.samples("training_days") - lost
    np.testing.assert_allclose(exposure, exposure[0], rtol=1e-12)
    event = acs.catalog.priors().instability_days_per_event.dist()
    assert isinstance(event, acs.LogNormal)
    median = math.sqrt(event.low * event.high)
    sigma = math.log(event.high / event.low) / (2 * stats.norm.ppf(0.95))
    mean_events = per_day * float(exposure[0])
    mean = mean_events * median * math.exp(sigma**2 / 2)
    var = mean_events * median**2 * math.exp(2 * sigma**2)
    assert abs(lost.mean() - mean) <= 5.0 * math.sqrt(var / lost.size)
    p0 = math.exp(-mean_events)
    assert abs(np.mean(lost == 0.0) - p0) <= 5.0 * math.sqrt(p0 * (1 - p0) / lost.size)
    assert lost.var() == pytest.approx(var, rel=0.15)


# ------------------------------------------------------------------------ metamorphic pairs


@settings(max_examples=10)
@given(st.sampled_from([8, 64, 512, 4096]), st.sampled_from([2, 4]), st.floats(0.05, 0.7))
def test_more_chips_at_a_fixed_mfu_take_proportionally_less_compute(
    chips: int, factor: int, mfu: float
) -> None:
    """At a set MFU (used as is, DESIGN.md), ``k`` times the chips take ``1 / k`` of the
    compute days, run by run; the FLOPs do not change."""
    few = run(scenario(chips=chips, mfu=mfu), runs=16)
    many = run(scenario(chips=chips * factor, mfu=mfu), runs=16)
    _close(many.samples("compute_days") * factor, few.samples("compute_days"))
    np.testing.assert_array_equal(many.samples("training_flops"), few.samples("training_flops"))


@settings(max_examples=10)
@given(st.floats(1e8, 3e10), st.sampled_from([2.0, 3.0]))
def test_compute_scales_with_parameters_at_a_fixed_mfu(params: float, k: float) -> None:
    """6 N D: ``k`` times the parameters at a set MFU gives ``k`` times the FLOPs and the
    compute days, run by run."""
    small = run(scenario(params=params, chips=1024, mfu=0.4), runs=16)
    large = run(scenario(params=k * params, chips=1024, mfu=0.4), runs=16)
    _close(large.samples("training_flops"), k * small.samples("training_flops"))
    _close(large.samples("compute_days"), k * small.samples("compute_days"))


@pytest.mark.parametrize(("low", "high"), [(0.0, 1e-5), (1e-5, 4e-5), (4e-5, 2e-4)])
def test_more_failures_never_shorten_training_on_average(low: float, high: float) -> None:
    """A higher per-chip failure rate, everything else the same draws: the mean training
    days and interruptions do not fall (paired difference above -5 SE), and the failure-free
    compute is untouched, run by run."""
    common = {"mfu": 0.4, "checkpoint_write_hours": 0.05, "restart_hours": 0.25}
    calm = run(scenario(chips=2048, failure_rate_per_chip_hour=low, **common), runs=1500)
    rough = run(scenario(chips=2048, failure_rate_per_chip_hour=high, **common), runs=1500)
    np.testing.assert_array_equal(calm.samples("compute_days"), rough.samples("compute_days"))
    for metric in ("training_days", "interruptions", "failure_overhead_days"):
        diff = rough.samples(metric) - calm.samples(metric)
        se = diff.std(ddof=1) / math.sqrt(diff.size)
        assert diff.mean() >= -5.0 * se, metric
    assert rough.mean("interruptions") > calm.mean("interruptions")


@settings(max_examples=8)
@given(st.floats(0.5, 20.0), st.floats(0.01, 0.5), st.floats(1e3, 1e5))
def test_prices_reprice_without_touching_the_physics(
    factor: float, usd_per_kwh: float, delay_usd_per_day: float
) -> None:
    """Economics prices usage (DESIGN.md), so a price change is exact and linear: ``k`` times
    the electricity price gives ``k`` times the energy cost of an on-prem fleet, ``k`` times
    the engineer rate ``k`` times the engineering cost, and the delay cost is the delay
    price times the days to train; the usage (days, kWh, chip-hours) stays bit-identical."""
    base = {"mfu": 0.4, "delay_usd_per_day": delay_usd_per_day}
    on_prem = {"provider": "on_prem", "pricing": "on_prem"}

    def priced(k: float) -> acs.Result:
        return run(
            scenario(
                electricity_usd_per_kwh=k * usd_per_kwh,
                engineer_usd_per_hour=k * 100.0,
                **base,
                **on_prem,
            ),
            runs=32,
        )

    cheap, dear = priced(1.0), priced(factor)
    for usage in ("time_to_train_days", "energy_kwh", "chip_hours", "engineering_hours"):
        np.testing.assert_array_equal(cheap.samples(usage), dear.samples(usage))
    for line in ("energy_cost_usd", "engineering_cost_usd"):
        _close(dear.samples(line), factor * cheap.samples(line), 1e-9)
    np.testing.assert_array_equal(
        cheap.samples("hardware_cost_usd"), dear.samples("hardware_cost_usd")
    )
    _close(cheap.samples("delay_cost_usd"), delay_usd_per_day * cheap.samples("time_to_train_days"))
    assert np.all(cheap.samples("energy_cost_usd") > 0.0)


def _priced_catalog(usd_per_chip_hour: float) -> catalog.Catalog:
    """The built-in catalog with AWS's on-demand H100 offer at another price, built as a
    user price sheet is (validated, merged over the built-ins), never made active."""
    offer = catalog.builtin_catalog().price("h100-sxm", provider="aws", pricing="on_demand")
    mine = catalog.Offer.model_validate(
        {**offer.model_dump(), "usd_per_chip_hour": usd_per_chip_hour}
    )
    user = catalog.PriceSheet.model_validate(
        {"provider": "aws", "name": "AWS (negotiated)", "offers": [mine.model_dump()]}
    )
    merged = catalog.builtin_catalog().merged([], [user])
    assert merged.price("h100-sxm", provider="aws").usd_per_chip_hour == usd_per_chip_hour
    return merged


@settings(max_examples=8)
@given(st.floats(0.05, 50.0), st.floats(1.5, 10.0), st.integers(0, 2**32 - 1))
def test_a_user_price_is_paid_per_chip_hour_and_scales_the_bill_linearly(
    usd: float, k: float, seed: int
) -> None:
    """A study carries its catalog (``simulate(..., catalog=)``): with a user price sheet
    the hardware cost is the allocated chip-hours times the user's price, ``k`` times the
    price gives ``k`` times the hardware cost and raises the TCO by exactly the difference,
    and the physics (days, chip-hours, interruptions) is bit-identical to the built-in
    catalog's: prices never feed back into usage (DESIGN.md: repricing needs no
    re-simulation)."""
    # fixed prices: the bill is chip-hours x the user's price (moving prices keep k-linearity)
    s = scenario(chips=128).replace("assumptions.price_change_per_year", 0.0)
    cheap = run(s, runs=48, seed=seed, catalog=_priced_catalog(usd))
    dear = run(s, runs=48, seed=seed, catalog=_priced_catalog(k * usd))
    builtin = run(s, runs=48, seed=seed)
    _close(cheap.samples("hardware_cost_usd"), usd * cheap.samples("chip_hours"))
    _close(dear.samples("hardware_cost_usd"), k * cheap.samples("hardware_cost_usd"))
    extra = dear.samples("hardware_cost_usd") - cheap.samples("hardware_cost_usd")
    _close(dear.samples("tco_usd") - cheap.samples("tco_usd"), extra, rel=1e-9)
    for usage in ("training_days", "time_to_train_days", "chip_hours", "interruptions"):
        np.testing.assert_array_equal(cheap.samples(usage), builtin.samples(usage))
        np.testing.assert_array_equal(dear.samples(usage), builtin.samples(usage))
    assert catalog.price("h100-sxm", provider="aws").usd_per_chip_hour != usd  # not made active


# ------------------------------------------------------------------------------ determinism


@settings(max_examples=6)
@given(st.sampled_from([1, 7, 64, 100, 333]), st.integers(0, 2**32 - 1))
def test_results_do_not_depend_on_chunking_or_threads(chunk: int, seed: int) -> None:
    """The same seed gives bit-identical samples with any chunk size and with a thread pool
    (STYLE.md pattern 5: streams are addressed by run, not by chunk or worker)."""
    s = scenario(chips=1024)
    whole = run(s, runs=333, seed=seed)
    chunked = run(s, runs=333, seed=seed, chunk_runs=chunk)
    with ThreadPoolExecutor(2) as pool:
        threaded = run(s, runs=333, seed=seed, chunk_runs=chunk, executor=pool)
    for name in whole.metrics:
        np.testing.assert_array_equal(chunked.samples(name), whole.samples(name), err_msg=name)
        np.testing.assert_array_equal(threaded.samples(name), whole.samples(name), err_msg=name)
    other = run(s, runs=333, seed=seed + 1)
    assert not np.array_equal(other.samples("training_days"), whole.samples("training_days"))


def test_compare_gives_each_option_its_simulate_draws_and_pairs_them() -> None:
    """Common random numbers: ``compare`` runs every option on the study's root seed, so
    each option's samples equal ``simulate`` with that seed, and two options that differ only
    in price share their physics run by run; ``prob_less`` is then the share of paired runs
    where one option is cheaper (computed here from the samples)."""
    gpu = scenario(chips=512, provider="aws")
    dear = scenario(chips=512, provider="aws", engineer_usd_per_hour=400.0)
    cmp = acs.compare({"gpu": gpu, "dear": dear}, runs=300, seed=5, progress=False)
    alone = acs.simulate(gpu, runs=300, seed=5, progress=False)
    for name in alone.metrics:
        np.testing.assert_array_equal(cmp.results["gpu"].samples(name), alone.samples(name))
    for usage in ("training_days", "time_to_train_days", "chip_hours", "engineering_hours"):
        np.testing.assert_array_equal(
            cmp.results["gpu"].samples(usage), cmp.results["dear"].samples(usage)
        )
    a, b = cmp.results["gpu"].samples("tco_usd"), cmp.results["dear"].samples("tco_usd")
    assert cmp.prob_less("tco_usd", "gpu", "dear") == pytest.approx(float(np.mean(a < b)))
    assert cmp.prob_less("tco_usd", "gpu", "dear") > 0.5  # same physics, dearer engineers
