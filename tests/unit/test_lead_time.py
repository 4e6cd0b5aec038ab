"""Waits that depend on what you ask for (issue 14 item 6): lead time by pricing model, fleet
size and provider kind, spot never sooner than on demand in paired runs, bounded like a
user's value."""

from __future__ import annotations

import numpy as np
import pytest

import accelsim as acs
from accelsim.catalog import builtin_catalog
from accelsim.engines._inputs import as_plan
from accelsim.engines._offers import MAX_LEAD_TIME_DAYS, lead_time_days, provider_kind

RUNS = 2000


def _draw(pool: acs.Pool, seed: int = 11, user: acs.Uncertain | None = None) -> np.ndarray:
    draws = as_plan(np.random.SeedSequence(seed)).draws(0, RUNS)
    return lead_time_days(builtin_catalog(), pool, user, draws)


def _scenario(pool: acs.Pool) -> acs.Scenario:
    return acs.Scenario(
        name=pool.pricing,
        workload=acs.TrainingRun(params=1e9, tokens=2e10),
        fleet=[pool],
    )


@pytest.mark.parametrize(
    ("chip", "provider", "count"),
    [
        ("h100-sxm", "gcp", 8),
        ("h100-sxm", "gcp", 2048),
        ("tpu-v5p", "gcp", 256),
        ("h100-sxm", "coreweave", 64),
    ],
)
def test_spot_is_never_sooner_than_on_demand_in_paired_runs(
    chip: str, provider: str, count: int
) -> None:
    """The same request, spot and on demand, same seed: spot = on-demand x factor >= 1, run
    by run, in the whole study (the analytic engine) as in the shared function."""
    od = acs.Pool(chip=chip, count=count, provider=provider, pricing="on_demand")
    spot = od.model_copy(update={"pricing": "spot"})
    res_od = acs.simulate(_scenario(od), runs=300, seed=3)
    res_spot = acs.simulate(_scenario(spot), runs=300, seed=3)
    lead_od, lead_spot = res_od.samples("lead_time_days"), res_spot.samples("lead_time_days")
    assert np.all(lead_spot >= lead_od)
    factor = res_spot.inputs["priors.spot_lead_time_factor"]
    np.testing.assert_allclose(lead_spot, np.minimum(lead_od * factor, MAX_LEAD_TIME_DAYS))
    assert np.mean(lead_spot > lead_od) > 0.99  # the factor's PERT puts no mass at exactly 1


def test_a_bigger_request_waits_longer_by_the_size_law() -> None:
    """Paired: (2048 / 8) ** e times the 8-chip wait, e the drawn elasticity."""
    small = _draw(acs.Pool(chip="h100-sxm", count=8, provider="aws"))
    big = _draw(acs.Pool(chip="h100-sxm", count=2048, provider="aws"))
    draws = as_plan(np.random.SeedSequence(11)).draws(0, RUNS)
    p = builtin_catalog().priors
    assert p.lead_time_size_elasticity is not None
    e = draws.get("priors.lead_time_size_elasticity", None, p.lead_time_size_elasticity.value)
    np.testing.assert_allclose(big / small, (2048 / 8) ** e, rtol=1e-12)
    assert np.all(big > small)
    # the 8-GPU VM waits about a third of the reference (256-chip) request's median 3.9 d
    assert 0.5 < float(np.median(small)) < 3.0


def test_a_2000_chip_tpu_commitment_is_not_an_8_gpu_on_demand_vm() -> None:
    vm = _draw(acs.Pool(chip="h100-sxm", count=8, provider="aws"))
    commit = _draw(acs.Pool(chip="tpu-v6e", count=2048, provider="gcp", pricing="commit_1y"))
    assert float(np.median(commit)) > 20 * float(np.median(vm))
    assert float(np.median(commit)) > 30.0  # weeks, not days


def test_provider_kind_scales_the_wait() -> None:
    cat = builtin_catalog()
    aws = acs.Pool(chip="h100-sxm", count=64, provider="aws")
    lam = acs.Pool(chip="h100-sxm", count=64, provider="lambda")
    own = acs.Pool(chip="h100-sxm", count=64, provider="on_prem", pricing="on_prem")
    assert (provider_kind(cat, aws), provider_kind(cat, lam), provider_kind(cat, own)) == (
        "hyperscaler",
        "neocloud",
        "on_prem",
    )
    draws = as_plan(np.random.SeedSequence(11)).draws(0, RUNS)
    neo = cat.priors.lead_time_provider_factor["neocloud"].value
    factor = draws.get("priors.lead_time_provider_factor.neocloud", None, neo)
    np.testing.assert_allclose(_draw(lam) / _draw(aws), factor, rtol=1e-12)


def test_every_provider_in_the_catalog_has_a_kind() -> None:
    cat = builtin_catalog()
    hyperscalers = cat.priors.lead_time_hyperscalers
    assert hyperscalers is not None
    providers = {o.provider for o in acs.catalog.offers()}
    assert set(hyperscalers.value) <= providers  # no typo in the list


def test_lead_time_never_exceeds_the_boundary() -> None:
    """100,000 owned chips: finite, within the boundary's 3,660 d, and months, not weeks
    (xAI's 100,000 H100 took 122 days; the size law saturates at
    ``lead_time_size_saturation_chips``, tests/validation/test_lead_time_published.py)."""
    lead = _draw(acs.Pool(chip="h100-sxm", count=100_000, provider="on_prem", pricing="on_prem"))
    assert np.all(np.isfinite(lead))
    assert float(lead.max()) <= MAX_LEAD_TIME_DAYS
    assert 122.0 < float(np.median(lead)) < 365.0


def test_the_users_lead_time_is_used_as_is() -> None:
    pool = acs.Pool(chip="h100-sxm", count=4096, provider="nebius", pricing="spot")
    np.testing.assert_array_equal(_draw(pool, user=2.5), 2.5)
    res = acs.simulate(
        _scenario(pool).model_copy(update={"assumptions": acs.Assumptions(lead_time_days=2.5)}),
        runs=20,
        seed=1,
    )
    np.testing.assert_array_equal(res.samples("lead_time_days"), 2.5)


def test_small_spot_jobs_no_longer_start_first() -> None:
    """The issue's symptom: an 8-GPU spot job started before the on-demand one in most runs
    (spot 0.1-14 d vs on demand 0.5-30 d). Now it never starts first."""
    od = acs.Pool(chip="h100-sxm", count=8, provider="gcp")
    spot = od.model_copy(update={"pricing": "spot"})
    a = acs.simulate(_scenario(od), runs=300, seed=8).samples("lead_time_days")
    b = acs.simulate(_scenario(spot), runs=300, seed=8).samples("lead_time_days")
    assert np.mean(b < a) == 0.0
