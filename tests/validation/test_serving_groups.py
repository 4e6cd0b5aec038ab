"""The shipped ``efficiency_by_group`` of ``serving.yaml`` is the calibration page's pooled
law, current with the validation set and the physics (``accelsim._serving_groups``), and
every study draws it: the efficiency a study uses is the one the page scores leave-one-out.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from accelsim import _serving_groups as groups
from accelsim._calibration_stats import Implied, poolable
from accelsim.catalog import serving_group_key, serving_priors
from accelsim.serving_calibration import implied_efficiencies

CSV = Path(__file__).resolve().parent / "data" / "inference.csv"


Laws = dict[str, tuple[float, float, int]]


@pytest.fixture(scope="module")
def implied() -> Implied:
    return implied_efficiencies(CSV)[2]


@pytest.fixture(scope="module")
def laws(implied: Implied) -> Laws:
    return groups.group_laws(implied)


def test_the_shipped_block_is_current(laws: Laws) -> None:
    shipped = serving_priors().efficiency_by_group
    assert set(shipped) == set(laws)
    for key, (low, high, _) in laws.items():
        value = shipped[key].value
        assert (value.low, value.high) == pytest.approx(  # type: ignore[union-attr]
            (low, high), abs=1e-4
        ), f"{key}: regenerate with python -m accelsim._serving_groups"


def test_studies_draw_the_group_law(implied: Implied) -> None:
    p = serving_priors()
    shown = {g[:2] for i, (g, _) in implied.items() if i in poolable(implied, "")}
    assert set(p.efficiency_by_group) == {
        serving_group_key(stack, precision, moe)
        for stack, precisions in groups.STACKS.items()
        for precision in precisions
        if (stack, precision) in shown
        for moe in (False, True)
    }
    assert "cuda-bf16-dense" not in p.efficiency_by_group  # no CUDA BF16 row: judgement
    name, prior = p.efficiency_entry("h200", "cuda", "fp8", moe=True)
    assert name == "efficiency_by_group.cuda-fp8-moe"
    assert prior is p.efficiency_by_group["cuda-fp8-moe"]
    # a chip's own entry (vLLM TPU) and a measured configuration still come first
    assert p.efficiency_entry("tpu-v6e", "xla", "bf16")[0] == "efficiency_by_chip.tpu-v6e"


def test_a_law_brackets_its_own_rows(laws: Laws, implied: Implied) -> None:
    """Each group with rows holds its rows' median implied efficiency inside its 90 %
    interval, and no interval spans more than 3x (the page's median P95/P5 is ~2)."""
    for key, (low, high, own) in laws.items():
        assert 0.0 < low < high, key
        assert high / low < 3.0, key
        members = [e for g, e in implied.values() if e < 1.0 and serving_group_key(
            g[0], g[1], g[2] == "moe") == key]  # fmt: skip
        assert len(members) == own, key
        if own >= 2:
            assert low <= float(np.median(members)) <= high, key
