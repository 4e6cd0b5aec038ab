"""``accelsim.strategies``: every draw is a valid object inside the bounds the user gave.

Validity is checked the strong way: the object survives a ``model_dump`` /
``model_validate`` round trip unchanged (so every field and cross-field validator passes
again), and for scenarios ``accelsim.simulate`` accepts it. No tolerances: the bounds are
exact inequalities on the drawn values and supports.
"""

from __future__ import annotations

import importlib
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

import accelsim as acs
from accelsim import catalog
from accelsim import strategies as acst
from accelsim.dists import Dist, Uncertain

DIST = TypeAdapter(Dist)
UNCERTAIN = TypeAdapter(Uncertain)
GIB = 2.0**30
SRC = Path(__file__).resolve().parents[2] / "src" / "accelsim"


@st.composite
def _bounds(draw: st.DrawFn, lo: float = -1e6, hi: float = 1e6) -> tuple[float, float]:
    """Two finite floats ``a <= b`` in ``[lo, hi]`` (equal ends allowed)."""
    x = st.floats(lo, hi, allow_nan=False, allow_infinity=False, allow_subnormal=False)
    a, b = draw(x), draw(x)
    return min(a, b), max(a, b)


@settings(max_examples=60)
@given(data=st.data(), bounds=_bounds())
def test_dists_keep_their_support_in_range_and_round_trip(
    data: st.DataObject, bounds: tuple[float, float]
) -> None:
    """The whole support lies in [min_value, max_value]; the dist validates again as itself."""
    lo, hi = bounds
    d = data.draw(acst.dists(lo, hi))
    low, high = d.support()
    assert lo <= low <= high <= hi
    assert DIST.validate_python(d.model_dump()) == d


@settings(max_examples=40)
@given(data=st.data(), bounds=_bounds(), numbers_only=st.booleans())
def test_uncertain_is_a_number_or_a_dist_in_range(
    data: st.DataObject, bounds: tuple[float, float], numbers_only: bool
) -> None:
    """A float (always, with ``numbers_only``) or a dist, inside the bounds, and re-valid."""
    lo, hi = bounds
    value = data.draw(acst.uncertain(lo, hi, numbers_only=numbers_only))
    if numbers_only:
        assert isinstance(value, float)
    low, high = (value, value) if isinstance(value, float) else value.support()
    assert lo <= low <= high <= hi
    dumped = value if isinstance(value, float) else value.model_dump()
    assert UNCERTAIN.validate_python(dumped) == value


@settings(max_examples=40)
@given(
    pool=acst.pools(
        chips=["H100-SXM", "tpu-v5p", "mi300x"], pricing=["on_demand", "spot"], max_count=512
    )
)
def test_pools_come_from_real_offers_within_the_filters(pool: acs.Pool) -> None:
    """Chip, pricing and count respect the filters; the offer exists; the pool re-validates."""
    assert pool.chip in {"h100-sxm", "tpu-v5p", "mi300x"}
    assert pool.pricing in {"on_demand", "spot"}
    assert 1 <= pool.count <= 512
    assert pool.provider is not None
    catalog.price(pool.chip, provider=pool.provider, pricing=pool.pricing)  # raises if absent
    assert acs.Pool.model_validate(pool.model_dump()) == pool


@settings(max_examples=30)
@given(pool=acst.pools(providers="on_prem", min_count=100, max_count=300))
def test_pools_respect_provider_and_count_range(pool: acs.Pool) -> None:
    """One provider given as a string; counts stay in [min_count, max_count]."""
    assert pool.provider == "on_prem"
    assert pool.pricing == "on_prem"
    assert 100 <= pool.count <= 300


@settings(max_examples=40)
@given(
    run=acst.training_runs(
        min_params=1e9, max_params=7e10, min_tokens=1e10, max_tokens=2e12, frameworks=["jax"]
    )
)
def test_training_runs_respect_bounds(run: acs.TrainingRun) -> None:
    """Params and tokens in range, framework as asked, and the run re-validates."""
    assert 1e9 <= run.params <= 7e10
    assert 1e10 <= run.tokens <= 2e12
    assert run.framework == "jax"
    assert run.precision == "bf16"
    assert acs.TrainingRun.model_validate(run.model_dump()) == run


@settings(max_examples=40)
@given(a=acst.assumptions(mfu=(0.001, 0.5), pue=(1.0, 1.4), delay_usd_per_day=(0.0, 5e4)))
def test_assumptions_fill_named_fields_in_range_and_leave_the_rest(a: acs.Assumptions) -> None:
    """Named fields lie in their ranges (MFU's open 0 excluded); others stay None (priors)."""
    for name, lo, hi in (("mfu", 0.001, 0.5), ("pue", 1.0, 1.4), ("delay_usd_per_day", 0.0, 5e4)):
        value = getattr(a, name)
        low, high = (value, value) if isinstance(value, float) else value.support()
        assert lo <= low <= high <= hi
    assert a.failure_rate_per_chip_hour is None
    assert a.porting_hours is None
    assert acs.Assumptions.model_validate(a.model_dump()) == a


def test_assumption_ranges_are_checked_when_the_strategy_is_built() -> None:
    """Unknown fields and ranges outside a field's allowed values fail early, by name."""
    with pytest.raises(ValueError, match="no field 'mfu_typo'"):
        acst.assumptions(mfu_typo=(0.1, 0.2))
    with pytest.raises(ValueError, match="pue"):
        acst.assumptions(pue=(0.5, 1.2))
    with pytest.raises(ValueError, match="mfu"):
        acst.assumptions(mfu=(0.5, 1.5))


def test_bad_arguments_fail_early() -> None:
    """Empty or reversed ranges and filters that match no offer raise ValueError."""
    with pytest.raises(ValueError, match="min_value"):
        acst.dists(1.0, 0.0)
    with pytest.raises(ValueError, match="min_value"):
        acst.uncertain(0.0, math.inf)
    with pytest.raises(ValueError, match="no catalog offer"):
        acst.pools(chips="h100-sxm", providers="no-such-cloud")
    with pytest.raises(ValueError, match="min_count"):
        acst.pools(min_count=8, max_count=4)
    with pytest.raises(ValueError, match="params"):
        acst.training_runs(min_params=0.0)
    with pytest.raises(ValueError, match="fit"):
        acst.scenarios(fit="shrink")  # type: ignore[arg-type]


def _fits(scenario: acs.Scenario) -> bool:
    need_gib = scenario.training.params * 16.0 / GIB
    return all(catalog.chip(p.chip).hbm_gib * p.count >= need_gib for p in scenario.fleet)


@settings(max_examples=30)
@given(s=acst.scenarios(fleet=acst.pools(max_count=2), max_pools=3))
def test_scenarios_grow_small_pools_until_the_run_fits(s: acs.Scenario) -> None:
    """With ``fit="grow"`` every pool holds 16 bytes per parameter; count grows only to fit."""
    assert 1 <= len(s.fleet) <= 3
    assert _fits(s)
    need_gib = s.training.params * 16.0 / GIB
    for pool in s.fleet:
        fewest = max(1, math.ceil(need_gib / catalog.chip(pool.chip).hbm_gib))
        assert pool.count <= max(2, fewest)
    assert acs.Scenario.model_validate(s.model_dump()) == s


@settings(max_examples=20)
@given(
    s=acst.scenarios(
        workload=acst.training_runs(max_params=1e9),
        fleet=acst.pools(chips="h100-sxm", min_count=8, max_count=64),
        fit="reject",
    )
)
def test_scenarios_reject_mode_keeps_the_users_count_bounds(s: acs.Scenario) -> None:
    """``fit="reject"`` never grows a pool: counts stay within the pools() bounds."""
    assert 8 <= s.fleet[0].count <= 64
    assert _fits(s)


@settings(max_examples=25)
@given(
    s=acst.scenarios(
        fleet=acst.pools(max_count=1024),
        assumptions=acst.assumptions(
            mfu=(0.05, 0.7), delay_usd_per_day=(0.0, 1e5), engineer_usd_per_hour=(50.0, 300.0)
        ),
    )
)
def test_simulate_accepts_every_generated_scenario(s: acs.Scenario) -> None:
    """``simulate`` runs on each draw: times and costs are positive and never NaN.

    They are finite too except on spot pools: there a large fleet can be preempted more
    often than a restart takes, and a run that never ends has an infinite time-to-train.
    """
    res = acs.simulate(s, runs=20, seed=0)
    assert res.runs == 20
    for metric in ("time_to_train_days", "tco_usd"):
        x = res.samples(metric)
        assert not np.any(np.isnan(x)), metric
        assert np.all(x > 0), metric
        if s.fleet[0].pricing != "spot":
            assert np.all(np.isfinite(x)), metric


def test_missing_hypothesis_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without hypothesis the import fails with an ImportError saying what to install."""
    monkeypatch.setitem(sys.modules, "hypothesis", None)
    monkeypatch.delitem(sys.modules, "accelsim.strategies")
    with pytest.raises(ImportError, match="pip install hypothesis"):
        importlib.import_module("accelsim.strategies")


def test_accelsim_itself_never_imports_the_strategies() -> None:
    """hypothesis stays optional: no module of accelsim but this one mentions it in imports."""
    offenders = []
    for path in SRC.rglob("*.py"):
        if path.name == "strategies.py" and path.parent == SRC:
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            words = line.split()
            if words[:1] in (["import"], ["from"]) and (
                "hypothesis" in line or "strategies" in line
            ):
                offenders.append(f"{path.name}: {line.strip()}")
    assert offenders == []
