"""Every scenario in examples/ simulates (examples that cannot rot), with finite results."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import accelsim as acs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_example_simulates(path: Path) -> None:
    s = acs.load_scenario(path)
    res = acs.simulate(s, runs=2, seed=0)
    assert res.runs == 2
    assert "tco_usd" in res.metrics
    assert np.isfinite(res.samples("tco_usd")).all()
    assert (res.samples("tco_usd") > 0).all()


@pytest.mark.parametrize("name", ["serve_llama70b_h100.yaml", "serve_llama70b_tpu_v6e.yaml"])
def test_serving_examples_meet_their_own_slo(name: str) -> None:
    """Each serving example is sized to meet its SLO's attainment in most runs (issue 28:
    the TPU v6e endpoint met it in none, with a median attainment of 0.07)."""
    s = acs.load_scenario(EXAMPLES / name)
    res = acs.simulate(s, runs=64, seed=1)
    target = s.workload.slo.attainment  # type: ignore[union-attr]
    assert float(np.median(res.samples("slo_attainment"))) >= target
    assert float(np.mean(res.samples("slo_attainment") >= target)) >= 0.75
