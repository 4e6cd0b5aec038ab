"""A study carries its catalog to every worker: no worker reads process state.

The bug this guards (issue 12): ``catalog.load()`` swapped a module-global catalog that
spawned workers never saw, so a price sheet with a new provider failed with "unknown
provider" under ``executor="processes"``, and an existing provider was silently priced from
the built-in sheet.
"""

from __future__ import annotations

import pickle
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from tests.same_results import assert_same

import accelsim as acs
from accelsim import catalog
from accelsim.engines import BLOCK_RUNS

USER_SHEET = """\
price_sheets:
  - provider: acme
    name: Acme Cloud (a provider the built-ins do not have)
    offers:
      - {chip: h100-sxm, pricing: on_demand, usd_per_chip_hour: 1.25,
         as_of: 2026-10-01, source: "https://example.com/acme"}
      - {chip: h100-sxm, pricing: spot, usd_per_chip_hour: 0.5,
         preemptions_per_chip_hour: 2.0e-4, preemption_note: "a made-up figure for the test",
         as_of: 2026-10-01, source: "https://example.com/acme"}
"""
ACME_USD_PER_CHIP_HOUR = 1.25
# the user's rate on every chip-hour: prices held fixed over the horizon
FIXED_PRICES = acs.Assumptions(price_change_per_year=0.0)


@pytest.fixture
def user_catalog(tmp_path: Path) -> Iterator[catalog.Catalog]:
    path = tmp_path / "acme.yaml"
    path.write_text(textwrap.dedent(USER_SHEET), encoding="utf-8")
    try:
        yield catalog.load(path)
    finally:
        catalog.reset()


def _training(pricing: str = "on_demand") -> acs.Scenario:
    return acs.Scenario(
        name="acme",
        workload=acs.TrainingRun(params=7e9, tokens=2e11),
        fleet=[acs.Pool(chip="h100-sxm", count=64, provider="acme", pricing=pricing)],
        assumptions=FIXED_PRICES,
    )


def test_catalog_pickles_to_an_equal_catalog(user_catalog: catalog.Catalog) -> None:
    back = pickle.loads(pickle.dumps(user_catalog))
    assert back == user_catalog
    assert back.price("h100-sxm", "acme").usd_per_chip_hour == ACME_USD_PER_CHIP_HOUR
    assert back.priors == catalog.builtin_catalog().priors


def test_a_new_provider_gives_the_same_result_in_process_with_processes_and_dask(
    user_catalog: catalog.Catalog,
) -> None:
    """Bit-identical in-process, on a spawned process pool and on a 2-worker Dask cluster
    of real worker processes, and priced with the user's sheet everywhere."""
    from distributed import Client, LocalCluster

    runs = BLOCK_RUNS + 7  # two chunks on an executor
    spot = _training("spot")
    in_process = acs.simulate(_training(), runs=runs, seed=11)
    spot_des = acs.simulate(spot, runs=3, seed=11, engine="des")
    # priced from the user's sheet: rent is the user's rate on every chip-hour
    np.testing.assert_allclose(
        in_process.samples("hardware_cost_usd"),
        ACME_USD_PER_CHIP_HOUR * in_process.samples("chip_hours"),
        rtol=1e-12,
    )
    processes = acs.simulate(_training(), runs=runs, seed=11, executor="processes")
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0"
        ) as cluster,
        Client(cluster) as client,
    ):
        dask = acs.simulate(_training(), runs=runs, seed=11, executor=client)
        spot_dask = acs.simulate(spot, runs=3, seed=11, engine="des", executor=client)
    assert_same(in_process, processes)
    assert_same(in_process, dask)
    assert_same(spot_des, spot_dask)


def test_a_study_snapshots_the_catalog_when_called(user_catalog: catalog.Catalog) -> None:
    """An explicit ``catalog=`` works with the built-ins active, and equals the loaded one.

    (The scenario is validated while the user's catalog is active: validation resolves the
    pool's offer in the active catalog.)
    """
    scenario = _training()
    loaded = acs.simulate(scenario, runs=200, seed=5)
    catalog.reset()
    with pytest.raises(acs.errors.OfferNotFoundError, match="unknown provider"):
        catalog.price("h100-sxm", provider="acme")
    explicit = acs.simulate(scenario, runs=200, seed=5, catalog=user_catalog)
    assert_same(loaded, explicit)


def test_spot_preemption_prior_is_the_offers_in_both_engines(
    user_catalog: catalog.Catalog,
) -> None:
    """The analytic engine and the DES draw the spot preemption rate from the offer's own
    figure (one rule, :func:`accelsim.engines._offers.spot_preemption_prior`)."""
    from accelsim.engines._offers import spot_preemption_prior

    pool = _training("spot").fleet[0]
    assert spot_preemption_prior(user_catalog, pool) == 2.0e-4
    name = "assumptions.spot_preemptions_per_hour"
    analytic = acs.simulate(_training("spot"), runs=4, seed=2).inputs[name]
    des = acs.simulate(_training("spot"), runs=4, seed=2, engine="des").inputs[name]
    np.testing.assert_array_equal(analytic, np.full(4, 2.0e-4))
    np.testing.assert_array_equal(des, analytic)


@pytest.mark.slow
def test_a_serving_study_prices_with_the_users_sheet_on_processes(
    user_catalog: catalog.Catalog,
) -> None:
    """Serving too: the fast path prices chip-hours with the study's catalog in every worker
    (its engine takes the catalog as an argument and has no process-global fallback)."""
    svc = acs.Serving(
        model="llama-3.1-8b",
        precision="fp8",
        rate_rps=5.0,
        input_tokens=500,
        output_tokens=100,
        slo=acs.SLO(ttft_ms=2000, tpot_ms=100),
        horizon_days=2,
    )
    s = acs.Scenario(name="serve", workload=svc, fleet=[acs.Pool(chip="h100-sxm", count=8,
                     provider="acme")], assumptions=FIXED_PRICES)  # fmt: skip
    in_process = acs.simulate(s, runs=40, seed=5, chunk_runs=20)
    processes = acs.simulate(s, runs=40, seed=5, chunk_runs=20, executor="processes")
    assert_same(in_process, processes)
    np.testing.assert_allclose(
        in_process.samples("hardware_cost_usd"),
        ACME_USD_PER_CHIP_HOUR * in_process.samples("chip_hours"),
        rtol=1e-12,
    )


def test_a_serving_study_reads_its_layout_rule_and_model_from_its_catalog() -> None:
    """The automatic replica size and the model's weights come from the study's catalog,
    not the shipped one: a ``memory_share`` of 0.4 doubles the memory rule's replica of a
    70B FP8 model on H100 (TP2 to TP4, and no smaller one holds the weights); the layout
    rule serves both on TP4 (the highest SLO rate per chip at the shipped overlap 0), where
    the smaller share leaves less KV cache and a lower offline throughput per chip (1,036
    against 1,070 tokens/s); and a preset the catalog changes is the one served."""
    from dataclasses import replace

    from accelsim.dists import Fixed
    from accelsim.engines.serving._setup import serving_setup

    svc = acs.Serving(
        model="llama-3.1-70b",
        precision="fp8",
        rate_rps=2.0,
        input_tokens=500,
        output_tokens=100,
        slo=acs.SLO(ttft_ms=2000, tpot_ms=100),
        horizon_days=1,
    )
    s = acs.Scenario(
        name="serve", workload=svc, fleet=[acs.Pool(chip="h100-sxm", count=8, provider=None)]
    )
    shipped = catalog.builtin_catalog()
    sp = shipped.serving_priors
    low = sp.memory_share.model_copy(update={"value": Fixed(value=0.4)})
    tight = replace(shipped, serving_priors=sp.model_copy(update={"memory_share": low}))
    assert serving_setup(s, shipped).chips_per_replica == 2
    assert serving_setup(s, tight).chips_per_replica == 4
    served = acs.simulate(s, runs=2, seed=1)
    squeezed = acs.simulate(s, runs=2, seed=1, catalog=tight)
    assert served.quantile("replicas_peak", 0.5) == squeezed.quantile("replicas_peak", 0.5) == 2
    offline = "offline_tokens_per_s_per_chip"
    assert (squeezed.samples(offline) < 0.99 * served.samples(offline)).all()

    preset = shipped.model_preset("llama-3.1-70b")
    bigger = preset.model_copy(update={"params": 2 * preset.params})
    renamed = replace(shipped, model_presets={**shipped.model_presets, preset.id: bigger})
    setup = serving_setup(s, renamed)
    assert setup.total_params == 2 * preset.params
    assert setup.weight_bytes == 2 * serving_setup(s, shipped).weight_bytes
    assert setup.chips_per_replica == 4  # 140 GB of FP8 weights do not fit two H100s at 0.6
