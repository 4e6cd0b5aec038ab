"""Issue 33: several studies held at once (compare's options, a sweep's points) are bounded
together, before any runs: each alone may fit the memory limit while all of them do not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import accelsim as acs
from accelsim import engines
from accelsim.errors import AccelsimError
from accelsim.study._budget import check_studies_memory
from accelsim.study._simulate import study_probe

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RUNS = 4000


def _per_run(s: acs.Scenario) -> int:
    """Bytes one run of ``s`` holds, from the same probe as simulate's own check."""
    _, probe = study_probe(s, runs=RUNS, seed=1)
    return sum(
        int(np.asarray(v).nbytes)
        for item in probe()
        for m in (item if isinstance(item, list) else [item])
        if isinstance(m, dict)
        for v in m.values()
    )


@pytest.fixture
def options() -> list[acs.Scenario]:
    s = acs.load_scenario(EXAMPLES / "llama70b_h100_aws.yaml")
    return [s, s.model_copy(update={"name": "twin"}), s.model_copy(update={"name": "third"})]


def test_compare_refuses_options_that_fit_alone_but_not_together(
    options: list[acs.Scenario], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three options of 4,000 runs under a limit that holds two: refused before any runs,
    with the figure; today each option's own check passes and all three are held."""
    need = RUNS * _per_run(options[0])
    monkeypatch.setattr(engines, "memory_limit_bytes", lambda: int(2.5 * need))

    def no_run(*args: object, **kwargs: object) -> None:
        raise AssertionError("an option ran before the combined check")

    monkeypatch.setattr("accelsim.study._compare.simulate", no_run)
    with pytest.raises(AccelsimError, match=r"the 3 options of the comparison would hold about"
                       r" .* in memory at once \(the largest, .* for 4,000 runs\)"):  # fmt: skip
        acs.compare(options, runs=RUNS, seed=1, progress=False)


def test_compare_within_the_limit_still_runs(
    options: list[acs.Scenario], monkeypatch: pytest.MonkeyPatch
) -> None:
    need = RUNS * _per_run(options[0])
    monkeypatch.setattr(engines, "memory_limit_bytes", lambda: int(3.5 * need))
    cmp = acs.compare(options, runs=RUNS, seed=1, progress=False)
    assert len(cmp.options) == 3
    assert all(cmp[k].runs == RUNS for k in cmp.options)


def test_sweep_refuses_points_that_fit_alone_but_not_together(
    options: list[acs.Scenario], monkeypatch: pytest.MonkeyPatch
) -> None:
    need = RUNS * _per_run(options[0])
    monkeypatch.setattr(engines, "memory_limit_bytes", lambda: int(2.5 * need))
    count = options[0].fleet[0].count
    with pytest.raises(AccelsimError, match=r"the 3 points of the sweep would hold about"):
        acs.sweep(options[0], {"fleet.0.count": [count, 2 * count, 4 * count]}, runs=RUNS,
                  seed=1, progress=False)  # fmt: skip


def test_an_ordinary_comparison_pays_no_probe() -> None:
    def probe() -> tuple[object, ...]:
        raise AssertionError("probed")

    check_studies_memory([("a", 200, probe), ("b", 200, probe)], "options of the comparison")
