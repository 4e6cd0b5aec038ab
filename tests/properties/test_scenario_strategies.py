"""The project's own invariants over scenarios drawn by :mod:`accelsim.strategies`.

The user-facing strategies draw any valid training scenario: a run from 1e8 to 1e11
parameters, any catalog offer, any chip count that holds the run. Every property here must
hold for each run of each draw, so the checks are exact (no statistical tolerance) except
where a floating-point product is compared, which gets a relative tolerance of 1e-12
(a few ulps of the handful of roundings in a cost formula).

Spot pools are left out of the draws on purpose: with a preemption rate so high that a
step's work is lost before it is checkpointed, a spot run never finishes and its time is
``inf`` (documented behaviour of the reliability model), which no finite bound can check.
"""

from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import given, settings

import accelsim as acs
from accelsim import strategies as acst
from accelsim.catalog import Pricing

RUNS = 30
RENTED: tuple[Pricing, ...] = ("on_demand", "commit_1y", "commit_3y")
NOT_SPOT: tuple[Pricing, ...] = (*RENTED, "on_prem")
COST_METRICS = (
    "tco_usd",
    "hardware_cost_usd",
    "energy_cost_usd",
    "engineering_cost_usd",
    "delay_cost_usd",
)


@settings(max_examples=15, deadline=None)
@given(acst.scenarios(fleet=acst.pools(pricing=NOT_SPOT, max_count=2048), max_pools=1))
def test_any_drawn_scenario_has_consistent_metrics(scenario: acs.Scenario) -> None:
    """Costs are >= 0; the time to a trained model contains the training time, which
    contains the failure-free compute time (> 0) in every finished run and is the horizon
    (censored) in every unfinished one; goodput and MFU are fractions in (0, 1]."""
    res = acs.simulate(scenario, runs=RUNS, seed=0)
    for m in COST_METRICS:
        assert (res.samples(m) >= 0).all(), m
    compute = res.samples("compute_days")
    training = res.samples("training_days")
    total = res.samples("time_to_train_days")
    assert np.isfinite(total).all()
    finished = res.samples("finished") == 1.0
    assert isinstance(scenario.workload, acs.TrainingRun)
    horizon = scenario.workload.horizon_days
    assert (compute > 0).all()
    assert (training[finished] >= compute[finished]).all()
    assert (training[~finished] == horizon).all()
    assert (total >= training).all()
    for m in ("goodput", "mfu"):
        x = res.samples(m)
        assert ((x > 0) & (x <= 1)).all(), m


@settings(max_examples=10, deadline=None)
@given(acst.scenarios(fleet=acst.pools(pricing=NOT_SPOT, max_count=1024), max_pools=1))
def test_same_seed_gives_identical_results(scenario: acs.Scenario) -> None:
    """A study is a pure function of scenario and seed: every metric matches bit for bit."""
    a = acs.simulate(scenario, runs=RUNS, seed=123)
    b = acs.simulate(scenario, runs=RUNS, seed=123)
    assert a.metrics == b.metrics
    for m in a.metrics:
        np.testing.assert_array_equal(a.samples(m), b.samples(m), err_msg=m)


def _doubled_catalog(path: Path) -> None:
    """A user catalog with every rented offer of the built-in catalog at twice its price."""
    sheets: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for offer in acs.catalog.offers():
        if offer.usd_per_chip_hour is None:  # bought capacity: priced by purchase, not hour
            continue
        row = offer.model_dump(mode="json", exclude_none=True)
        row["usd_per_chip_hour"] = 2 * offer.usd_per_chip_hour
        sheets[offer.provider].append(row)
    doc = {
        "price_sheets": [
            {"provider": p, "name": f"{p} (doubled)", "offers": rows} for p, rows in sheets.items()
        ]
    }
    path.write_text(json.dumps(doc), encoding="utf-8")  # JSON is valid YAML


@settings(max_examples=10, deadline=None)
@given(acst.scenarios(fleet=acst.pools(pricing=RENTED, max_count=1024), max_pools=1))
def test_doubling_every_price_doubles_hardware_cost(scenario: acs.Scenario) -> None:
    """Planning rule: rented hardware cost is price x chip-hours and no physics reads a
    price, so doubling every rented price doubles ``hardware_cost_usd`` run by run (same
    seed) and leaves the usage metrics identical. Tolerance: 1e-12 relative (rounding)."""
    before = acs.simulate(scenario, runs=RUNS, seed=5)
    with tempfile.TemporaryDirectory() as tmp:
        user = Path(tmp) / "doubled.yaml"
        _doubled_catalog(user)
        try:
            acs.catalog.load(user)
            after = acs.simulate(scenario, runs=RUNS, seed=5)
        finally:
            acs.catalog.reset()
    np.testing.assert_allclose(
        after.samples("hardware_cost_usd"), 2 * before.samples("hardware_cost_usd"), rtol=1e-12
    )
    for m in ("training_days", "chip_hours", "mfu", "interruptions", "energy_kwh"):
        np.testing.assert_array_equal(after.samples(m), before.samples(m), err_msg=m)


def test_a_chip_without_scale_up_links_trains_at_a_finite_cost() -> None:
    """Regression for the first draw hypothesis found: an L4 (no NVLink, scale-up domain of
    one chip) must still give an MFU in (0, 1] and a finite TCO, on one chip or eight.
    With no scale-up traffic (replicas == groups) the scale-up term is 0 s, not 0/0."""
    for count in (1, 8):
        pool = acs.Pool(chip="l4", count=count, provider="runpod", pricing="on_demand")
        run = acs.TrainingRun(params=1e8, tokens=1e9)
        res = acs.simulate(acs.Scenario(name="l4", workload=run, fleet=[pool]), runs=RUNS, seed=0)
        mfu = res.samples("mfu")
        assert ((mfu > 0) & (mfu <= 1)).all(), count
        assert np.isfinite(res.samples("tco_usd")).all(), count


@settings(max_examples=200, deadline=None)
@given(acst.scenarios(max_pools=3))
def test_a_multi_pool_fleet_never_runs_its_training_job_on_spot(scenario: acs.Scenario) -> None:
    """Issue 32: several pools send the run to the shared-cluster engine, which refuses a job
    expecting more than a million interruptions (3,132 spot h200 expected 8.97e6): the
    run's pool is never spot there, so the docstring's promise holds."""
    if len(scenario.fleet) > 1:
        assert scenario.fleet[0].pricing != "spot"


@settings(max_examples=30, deadline=None)
@given(acst.scenarios(max_pools=3))
def test_multi_pool_scenarios_are_ones_simulate_accepts(scenario: acs.Scenario) -> None:
    res = acs.simulate(scenario, runs=2, seed=1, progress=False)
    assert res.runs == 2
