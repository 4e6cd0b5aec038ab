"""The MFU at a run's own scale (issue 29): batch prior, reference configuration,
:func:`accelsim.models.perf.mfu_at_scale`, and the engine and regimes that use them."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

import accelsim as acs
from accelsim.catalog import builtin_catalog, scaling_defaults
from accelsim.engines.training import _analytic
from accelsim.models import perf

H100 = {
    "peak_tflops": 989.0,
    "scale_up_domain_chips": 8,
    "scale_up_gbps": 900.0,
    "scale_out_gbps": 50.0,
    "overlap": 0.0,
}


def _layout(group: Any) -> dict[str, Any]:
    return {
        "pipeline_chips": np.maximum(np.asarray(group) / 8.0, 1.0),
        "micro_batch_tokens": 4096.0,
        "virtual_stages": 4.0,
    }


def _at(chips: Any, floor: float = 0.0, mfu_ref: float = 0.40, **kw: Any) -> np.ndarray:
    args: dict[str, Any] = {
        "params": 70e9,
        "chips_ref": 4096.0,
        "params_ref": 1.75e11,
        "model_parallel_chips": 16.0,
        "batch": perf.BatchPrior(
            base_tokens=4e6,
            tokens_per_chip=1024.0,
            ceiling_tokens=6e7,
            reference_efficiency=floor,
        ),
        "layout": _layout,
        "network": H100,
    }
    args.update(kw)
    return np.asarray(perf.mfu_at_scale(mfu_ref, chips, **args))


def test_critical_batch_is_deepseeks_power_law() -> None:
    """Oracle: B = 0.2920 C^0.3271 (DeepSeek LLM, arXiv:2401.02954), by hand at 1e21."""
    d = scaling_defaults()
    got = perf.critical_batch_tokens(
        1e21, coefficient=d.critical_batch_coefficient, exponent=d.critical_batch_exponent
    )
    assert float(got) == pytest.approx(0.2920 * 10 ** (21 * 0.3271), rel=1e-12)
    assert 2.1e6 < float(got) < 2.2e6


def test_batch_prior_grows_with_chips_up_to_the_ceiling_and_keeps_the_floor() -> None:
    kw = {"base_tokens": 4e6, "tokens_per_chip": 1000.0, "ceiling_tokens": 3e7}
    n = np.array([8, 1000, 4000, 16000, 100000], dtype=float)
    got = perf.batch_prior_tokens(n, **kw)
    np.testing.assert_allclose(got, [4e6, 4e6, 4e6, 1.6e7, 3e7])
    assert np.all(np.diff(got) >= 0)
    # the floor (one micro-batch per replica) wins over the ceiling
    assert float(perf.batch_prior_tokens(1e5, **kw, floor_tokens=4e8)) == 4e8


def test_reference_chips_scale_with_the_model_and_hold_one_replica() -> None:
    got = perf.reference_chips(
        np.array([1.75e10, 1.75e11, 1e6]),
        chips_ref=4096.0,
        params_ref=1.75e11,
        model_parallel_chips=4.0,
    )
    np.testing.assert_allclose(got, [409.6, 4096.0, 4.0])


def test_identity_at_the_reference_configuration() -> None:
    """Without a floor, the run at the reference chips (same batch prior) has mfu_ref."""
    n_ref = float(
        perf.reference_chips(70e9, chips_ref=4096.0, params_ref=1.75e11, model_parallel_chips=16.0)
    )
    assert float(_at(n_ref)) == pytest.approx(0.40, rel=1e-9)


def test_carries_up_and_down_and_below_the_reference_is_not_free() -> None:
    """Smaller runs gain (bounded by the local MFU), larger ones lose, and two sizes below
    the reference differ (the issue: every pair below ~5,000 chips was exactly 1.000)."""
    n = np.array([16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0])
    got = _at(n)
    assert np.all(np.diff(got) <= 1e-12)
    assert got[0] > got[3] > got[-1]
    assert got[2] / got[0] < 0.999


def test_floor_bounds_every_run_by_mfu_ref_over_the_floor() -> None:
    """A communication-bound reference (small model, thousands of chips, slow network) does
    not hand small runs an MFU above mfu_ref / eta*."""
    slow = {**H100, "scale_out_gbps": 5.0}
    n = np.array([8.0, 64.0, 512.0, 4096.0])
    free = _at(n, params=7e9, model_parallel_chips=2.0, network=slow)
    bounded = _at(n, floor=0.85, params=7e9, model_parallel_chips=2.0, network=slow)
    assert np.all(bounded <= 0.40 / 0.85 * (1 + 1e-12))
    assert np.all(bounded <= free + 1e-12)
    assert np.all(bounded > 0)


def test_carrying_is_transitive() -> None:
    """Carried from reference A to the chips of reference B, then from B to any size,
    gives what A gives directly: one local MFU, whichever reference states it."""
    n = np.array([64.0, 512.0, 4096.0, 16384.0])
    direct = _at(n, chips_ref=2048.0)
    # reference B: the chips_ref whose reference chips for 70B are 3,000
    chips_b = 3000.0 * 1.75e11 / 70e9
    at_b = float(_at(3000.0, chips_ref=2048.0))
    via_b = _at(n, chips_ref=chips_b, mfu_ref=at_b)
    np.testing.assert_allclose(via_b, direct, rtol=1e-9)


def test_engine_calls_mfu_at_scale(monkeypatch: pytest.MonkeyPatch) -> None:
    """One source of truth: the analytic engine's MFU is mfu_at_scale's output."""
    calls: list[float] = []

    def fake(mfu_ref: Any, chips: Any, **kw: Any) -> np.ndarray:
        calls.append(float(chips))
        return np.full(np.shape(mfu_ref), 0.123)

    monkeypatch.setattr(_analytic.perf, "mfu_at_scale", fake)
    res = acs.simulate(_scenario("pretraining", 64), runs=50, seed=1)
    assert calls
    assert calls[0] == 64.0
    np.testing.assert_allclose(res.samples("mfu"), 0.123)


def _scenario(regime: str, chips: int, chip: str = "tpu-v5p", params: float = 32e9) -> acs.Scenario:
    return acs.Scenario(
        name=f"{regime}-{chips}",
        workload=acs.TrainingRun(
            params=params,
            tokens=1e11,
            framework="jax",
            regime="pretraining" if regime == "fine_tune" else regime,  # type: ignore[arg-type]
            fine_tune="full" if regime == "fine_tune" else None,
        ),
        fleet=[acs.Pool(chip=chip, count=chips, provider=None)],
        assumptions=acs.Assumptions(lead_time_days=0.0, porting_hours=0.0),
    )


def test_regimes_draw_their_own_priors() -> None:
    """Benchmark: the benchmark ceiling of the chip kind at the end of the learning curve;
    fine-tune: the fine-tune factor on the pretraining ceiling; pretraining draws neither."""
    pre = acs.simulate(_scenario("pretraining", 256), runs=400, seed=3)
    bench = acs.simulate(_scenario("benchmark", 256), runs=400, seed=3)
    tune = acs.simulate(_scenario("fine_tune", 256), runs=400, seed=3)
    assert "priors.mfu_ceiling_benchmark.tpu" in bench.inputs
    assert "priors.mfu_fine_tune_factor" in tune.inputs
    assert not any("benchmark" in k or "fine_tune" in k for k in pre.inputs)
    np.testing.assert_allclose(bench.inputs["priors.start_fraction.native"], 1.0)
    assert (
        np.median(tune.samples("mfu"))
        < np.median(pre.samples("mfu"))
        < np.median(bench.samples("mfu"))
    )
    # MaxText publishes 0.64-0.71 on v5p (priors.yaml): the benchmark P50 lies near it
    assert 0.58 <= np.median(bench.samples("mfu")) <= 0.72


def test_v6e_benchmark_uses_its_generation_prior() -> None:
    res = acs.simulate(_scenario("benchmark", 256, "tpu-v6e"), runs=100, seed=3)
    assert "priors.mfu_ceiling_benchmark.tpu-v6e" in res.inputs


def test_small_runs_stay_below_the_published_ceiling_over_the_floor() -> None:
    """Every draw of a small run is at most its drawn reference MFU / eta* (0.85): the
    reference configuration, not a clip, keeps small runs within the published range."""
    cat = builtin_catalog()
    floor = cat.scaling.reference_efficiency
    for chip in ("h100-sxm", "b200", "tpu-v6e"):
        res = acs.simulate(_scenario("pretraining", 8, chip, params=7e9), runs=300, seed=4)
        ceiling = next(v for k, v in res.inputs.items() if k.startswith("priors.mfu_ceiling"))
        assert np.all(res.samples("mfu") <= ceiling / floor * (1 + 1e-9)), chip


def test_a_run_without_the_new_priors_keeps_the_old_behaviour() -> None:
    """A priors file without tokens per chip or reference size: a fixed batch prior and
    every model at mfu_reference_chips (the fields are optional)."""
    cat = builtin_catalog()
    bare = dataclasses.replace(
        cat,
        priors=cat.priors.model_copy(
            update={"global_batch_tokens_per_chip": None, "mfu_reference_params": None}
        ),
    )
    res = acs.simulate(_scenario("pretraining", 512, "h100-sxm"), runs=100, seed=2, catalog=bare)
    assert "priors.global_batch_tokens_per_chip" not in res.inputs
    assert np.all((res.samples("mfu") > 0) & (res.samples("mfu") <= 1))


def test_a_regime_with_a_user_mfu_is_refused() -> None:
    """The regime only selects the MFU prior; with the user's MFU it would be ignored."""
    with pytest.raises(ValueError, match=r"workload\.regime='benchmark'"):
        acs.Scenario(
            name="r",
            workload=acs.TrainingRun(params=7e9, tokens=1e11, regime="benchmark"),
            fleet=[acs.Pool(chip="h100-sxm", count=8, provider=None)],
            assumptions=acs.Assumptions(mfu=0.4),
        )
