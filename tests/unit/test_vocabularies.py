"""String vocabularies that two layers must agree on, held together.

A ``Literal`` written twice drifts silently: a scheduler the scenario accepts that the DES
cannot run fails only deep inside a study, a framework the catalog's priors lack fails at
lookup. Each pair below must be equal (or the stated subset); where a vocabulary is defined
once and imported, the test also pins that it is the same object.
"""

from __future__ import annotations

from typing import get_args

import accelsim.catalog as catalog
import accelsim.scenario as scenario
from accelsim import strategies
from accelsim.catalog import _priors, _schema
from accelsim.engines.cluster import des


def test_scheduler_names_are_the_des_registry() -> None:
    """Every name Scenario.scheduler accepts runs in the DES, and every registered
    scheduler can be named in a scenario."""
    assert set(get_args(scenario.SchedulerName)) == set(des.SCHEDULERS)
    assert scenario.Scenario.model_fields["scheduler"].default in des.SCHEDULERS


def test_frameworks_agree_between_scenario_catalog_and_strategies() -> None:
    assert get_args(scenario.Framework) == get_args(_priors.Framework)
    assert get_args(catalog.Framework) == get_args(_priors.Framework)
    assert get_args(scenario.Framework) == strategies.FRAMEWORKS
    # the priors' fit table has a row per framework (what the catalog loader requires)
    assert set(catalog.priors().framework_fit.table) == set(get_args(scenario.Framework))


def test_precisions_of_scenarios_are_the_catalogs() -> None:
    """A scenario names a training or a serving precision; the catalog's chips quote peak
    throughput per precision. The two scenario vocabularies together are the catalog's."""
    training = set(get_args(scenario.Precision))
    serving = set(get_args(scenario.ServingPrecision))
    assert training | serving == set(get_args(catalog.Precision))
    assert get_args(catalog.Precision) == get_args(_schema.Precision)


def test_pricing_models_are_defined_once() -> None:
    pool_pricing = scenario.Pool.model_fields["pricing"].annotation
    assert pool_pricing is catalog.Pricing
    assert get_args(catalog.Pricing) == _schema.PRICING_MODELS
    design = {"on_demand", "spot", "commit_1y", "commit_3y", "on_prem"}  # DESIGN.md's list
    # DESIGN.md's list, plus the capacity blocks issue 16 asks for
    assert set(get_args(catalog.Pricing)) == design | {"capacity_block"}
    offered = {o.pricing for o in catalog.offers()}
    assert offered <= set(get_args(catalog.Pricing))
