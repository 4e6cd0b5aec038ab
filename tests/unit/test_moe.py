"""Mixture-of-experts training runs: ``TrainingRun.total_params``.

A mixture of experts computes with its active parameters (``params``: 6 x params x tokens)
but holds every expert's weights, gradients and optimizer state (``total_params``), and
reaches a lower MFU than a dense model (``priors.mfu_ceiling_moe``, sourced in priors.yaml).
"""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

import accelsim as acs
from accelsim.catalog import priors
from accelsim.scenario import training_state_gib


def _scenario(chip: str, count: int, total: float | None, provider: str) -> acs.Scenario:
    return acs.Scenario(
        name=f"{chip}-{total}",
        workload=acs.TrainingRun(params=13e9, total_params=total, tokens=1e12),
        fleet=[acs.Pool(chip=chip, count=count, provider=provider)],
    )


def test_total_params_below_active_is_rejected() -> None:
    with pytest.raises(ValidationError, match=r"total_params=.* is below params"):
        acs.TrainingRun(params=13e9, total_params=7e9, tokens=1e12)


def test_state_params_is_the_total_for_a_mixture_and_params_for_a_dense_model() -> None:
    assert acs.TrainingRun(params=13e9, tokens=1e12).state_params == 13e9
    assert acs.TrainingRun(params=13e9, total_params=47e9, tokens=1e12).state_params == 47e9


def test_memory_check_counts_every_expert() -> None:
    """8 H100s (640 GB HBM) hold the state of 13B parameters but not of 470B: the fit check
    uses total_params and names it. Exact: the state is 16 bytes per parameter (mixed-
    precision Adam), 13e9 -> 194 GiB < 640 GiB, 470e9 -> 7,004 GiB > 640 GiB."""
    assert training_state_gib(13e9) < 8 * 80 < training_state_gib(470e9)
    _scenario("h100-sxm", 8, None, "aws")
    with pytest.raises(ValidationError, match=r"workload\.total_params=4\.7e\+11 needs"):
        _scenario("h100-sxm", 8, 470e9, "aws")


@pytest.mark.parametrize(("chip", "provider"), [("h100-sxm", "aws"), ("tpu-v5p", "gcp")])
def test_a_mixture_of_experts_draws_the_moe_mfu_prior_on_every_chip_kind(
    chip: str, provider: str
) -> None:
    """Same active parameters, chips and seed: the MoE run's MFU ceiling is the MoE prior
    (its drawn ceiling input is recorded under that name, and lies in the prior's support),
    and its mean MFU is below the dense run's. The dense Hopper/TPU priors' means exceed
    the MoE prior's (PERT 0.12-0.22-0.50, mean 0.25) by far more than 5 standard errors
    of 2,000 runs, so the ordering of means cannot flip by chance."""
    dense = acs.simulate(_scenario(chip, 256, None, provider), runs=2000, seed=3)
    moe = acs.simulate(_scenario(chip, 256, 47e9, provider), runs=2000, seed=3)
    assert "priors.mfu_ceiling_moe" in moe.inputs
    assert "priors.mfu_ceiling_moe" not in dense.inputs
    low, high = priors().mfu_ceiling_moe.dist().support()  # type: ignore[union-attr]
    drawn = moe.inputs["priors.mfu_ceiling_moe"]
    assert np.all((drawn >= low) & (drawn <= high))
    assert moe.mean("mfu") + 5 * moe.std_error("mfu") < dense.mean("mfu")
