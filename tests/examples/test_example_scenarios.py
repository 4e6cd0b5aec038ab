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
