"""The walk of one serving study through the fast path: which modules it visits, in order.

Run ``python benchmarks/serving_walk.py`` (``--disaggregated``: a prefill + decode study,
:func:`disaggregated`; or a scenario file). A profiler hook records the module of every
accelsim function called (not numpy's, scipy's or pydantic's) while one chunk of
``examples/serve_llama70b_h100.yaml`` runs through :func:`accelsim.engines.simulate_serving_fast`
(the study's own entry, after the scenario is validated). Consecutive calls in one module
collapse into one visit; each distinct move (a pair of modules, counted once however often a
loop repeats it) is then:

- a *stay*: into a module not visited yet, at the same layer or below;
- a *climb*: into a module of a higher layer (``tests/unit/test_architecture.py``'s order);
- a *return*: back into a module already left (counted also by module).

Issue 27 measured 68 stays, 8 climbs and 58 returns (18 into input drawing) on the tree it
started from. The figures printed are the ones to compare, by the same rule.

It also prints the **drawing phases** of the runs' part of the walk (from the call of
``draw_serving_inputs`` on; before it, the layout is planned on fixed median and vetting
draws, the same for every study): a phase is a stretch of visits to input drawing
(``accelsim.engines._inputs``) not interrupted by physics (``accelsim.models``) or pricing
(``accelsim.engines._pricing``). The serving pipeline draws once: 1 phase.
"""

from __future__ import annotations

import collections
import itertools
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np

import accelsim as acs
from accelsim.engines import simulate_serving_fast

LAYERS = (
    ("accelsim._typing", "accelsim.errors", "accelsim.seeding", "accelsim._yaml"),
    ("accelsim.dists",),
    ("accelsim.catalog",),
    ("accelsim.scenario",),
    ("accelsim.models",),
    ("accelsim.engines",),
    ("accelsim.results",),
    ("accelsim.study",),
)


def layer(module: str) -> int:
    best, found = -1, len(LAYERS)
    for i, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, found = len(p), i
    return found


DRAWING = "accelsim.engines._inputs"
RUNS_START = "draw_serving_inputs"


def walk(scenario: acs.Scenario, runs: int = 64) -> list[str]:
    """The modules visited, in order, consecutive calls in one module collapsed; the visit
    where the runs' inputs start to be drawn is marked by an entry ``"|"``."""
    visits: list[str] = []

    def hook(frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if frame.f_code.co_name == RUNS_START and "|" not in visits:
            visits.append("|")
        if module.startswith("accelsim") and (not visits or visits[-1] != module):
            visits.append(module)

    cat = acs.catalog.builtin_catalog()
    sys.setprofile(hook)
    try:
        simulate_serving_fast(scenario, np.random.SeedSequence(1), 0, runs, cat=cat)
    finally:
        sys.setprofile(None)
    return visits


def drawing_phases(visits: list[str]) -> int:
    """Stretches of input drawing in the runs' part of the walk, each ended by physics or
    pricing (the module docstring)."""
    runs_part = visits[visits.index("|") + 1 :] if "|" in visits else visits
    phases, drawing = 0, False
    for module in runs_part:
        if module == DRAWING and not drawing:
            phases, drawing = phases + 1, True
        elif module.startswith("accelsim.models") or module == "accelsim.engines._pricing":
            drawing = False
    return phases


def classify(visits: list[str]) -> tuple[int, int, int, collections.Counter[str]]:
    """(stays, climbs, returns, returns by module) of a walk's distinct moves: a move from
    one module to another counts once, however often a loop repeats it."""
    seen = {visits[0]} if visits else set()
    stays = climbs = returns = 0
    back: collections.Counter[str] = collections.Counter()
    moves = list(dict.fromkeys(itertools.pairwise(visits)))
    for before, after in moves:
        if after in seen:
            returns += 1
            back[after] += 1
        elif layer(after) > layer(before):
            climbs += 1
        else:
            stays += 1
        seen.add(after)
    return stays, climbs, returns, back


def disaggregated() -> acs.Scenario:
    """The serving page's disaggregated study: Llama 3.1 70B, prefill on 64 AWS H100s and
    decode on 32 AWS H200s, following the demand for a week."""
    svc = acs.Serving(
        model="llama-3.1-70b", precision="fp8", rate_rps=acs.Uniform(low=20, high=60),
        input_tokens=acs.LogNormal(low=500, high=8000), output_tokens=200,
        slo=acs.SLO(ttft_ms=1500, tpot_ms=60), horizon_days=7, scaling="follow_demand",
        disaggregated=acs.Disaggregation(prefill_pool=0, decode_pool=1),
    )  # fmt: skip
    fleet = [
        acs.Pool(chip="h100-sxm", count=64, provider="aws"),
        acs.Pool(chip="h200", count=32, provider="aws"),
    ]
    return acs.Scenario(name="split", workload=svc, fleet=fleet)


def main() -> None:
    """``serving_walk.py`` walks the colocated example; ``serving_walk.py --disaggregated``
    the disaggregated study of :func:`disaggregated`; ``serving_walk.py FILE.yaml`` a file."""
    root = Path(__file__).resolve().parents[1]
    arg = sys.argv[1] if len(sys.argv) > 1 else None
    if arg == "--disaggregated":
        scenario = disaggregated()
    else:
        scenario = acs.load_scenario(arg or root / "examples" / "serve_llama70b_h100.yaml")
    print(f"scenario {scenario.name}")
    marked = walk(scenario)
    phases = drawing_phases(marked)
    visits = [v for v in marked if v != "|"]
    stays, climbs, returns, back = classify(visits)
    print(f"{len(set(visits))} modules, {len(visits)} visits")
    print(f"stays {stays}, climbs {climbs}, returns {returns}")
    for module, n in back.most_common(8):
        print(f"  returns into {module}: {n}")
    print(f"drawing phases of the runs: {phases}")


if __name__ == "__main__":
    main()
