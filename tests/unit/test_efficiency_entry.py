"""Which serving efficiency prior a deployment draws: the chip's own entry, else its group's
(stack, weight precision, dense or MoE: the validation rows' pooled law), else its weight
precision's, else its software stack's (catalog/data/serving.yaml)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import accelsim as acs
from accelsim import catalog


@pytest.mark.parametrize(
    ("chip", "precision", "name"),
    [
        ("b200", "fp4", "efficiency_by_group.cuda-fp4-dense"),
        ("b200", "fp8", "efficiency_by_group.cuda-fp8-dense"),
        ("h100-sxm", "fp8", "efficiency_by_group.cuda-fp8-dense"),
        ("mi300x", "fp8", "efficiency_by_group.rocm-fp8-dense"),
        ("tpu-v6e", "bf16", "efficiency_by_chip.tpu-v6e"),
        ("tpu-v7", "fp8", "efficiency_by_chip.tpu-v7"),
        ("tpu-v5e", "bf16", "efficiency.xla"),
    ],
)
def test_the_entry_a_deployment_draws(chip: str, precision: str, name: str) -> None:
    p = catalog.serving_priors()
    got, prior = p.efficiency_entry(chip, catalog.chip(chip).software_stack, precision)  # type: ignore[arg-type]
    assert got == name
    assert prior.sources


def _fp4_b200() -> acs.Scenario:
    work = acs.Serving(
        model="llama-3.3-70b",
        precision="fp4",
        rate_rps=1.0,
        input_tokens=1000,
        output_tokens=1000,
        slo=acs.SLO(ttft_ms=2000, tpot_ms=100),
        chips_per_replica=1,
    )
    return acs.Scenario(
        name="fp4", workload=work, fleet=[acs.Pool(chip="b200", count=8, provider="gcp")]
    )


def test_fp4_runs_draw_the_fp4_prior_in_the_engines() -> None:
    shipped = catalog.active()
    no_groups = shipped.serving_priors.model_copy(update={"efficiency_by_group": {}})
    shipped = dataclasses.replace(shipped, serving_priors=no_groups)
    bare = dataclasses.replace(
        shipped,
        serving_priors=no_groups.model_copy(update={"efficiency_by_precision": {}}),
    )
    runs = {"runs": 400, "seed": 5}
    metric = "offline_tokens_per_s_per_chip"
    fp4 = acs.serving_capacity(_fp4_b200(), catalog=shipped, **runs).samples(metric)
    stack = acs.serving_capacity(_fp4_b200(), catalog=bare, **runs).samples(metric)
    # FP4's prior (median 0.29) sits below the cuda stack's (median 0.41)
    assert np.median(fp4) < 0.85 * np.median(stack)


def test_moe_runs_draw_their_group_in_the_engines() -> None:
    """DeepSeek-R1 FP4 on B200 draws the CUDA FP4 MoE group (its rows imply about half the
    dense group's efficiency), a dense FP4 model the dense group."""
    shipped = catalog.active()
    p = shipped.serving_priors
    moe, dense = p.efficiency_by_group["cuda-fp4-moe"], p.efficiency_by_group["cuda-fp4-dense"]
    assert moe.dist().ppf(0.5) < 0.8 * dense.dist().ppf(0.5)
    work = acs.Serving(model="deepseek-r1", precision="fp4", rate_rps=1.0, input_tokens=1000,
                       output_tokens=1000, slo=acs.SLO(ttft_ms=2000, tpot_ms=100))  # fmt: skip
    scenario = acs.Scenario(
        name="r1", workload=work, fleet=[acs.Pool(chip="b200", count=8, provider="gcp")]
    )
    cap = acs.serving_capacity(scenario, runs=8, seed=1, catalog=shipped)
    assert "priors.serving.efficiency_by_group.cuda-fp4-moe" in cap.inputs
