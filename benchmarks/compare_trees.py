"""CPU time of the analytic engine in two source trees, same cases as ``bench_analytic.py``.

Usage (from the repository root)::

    python benchmarks/compare_trees.py --against /tmp/filing [--tree .] [--rounds 7]

``--against`` is another tree's root (a directory holding ``src/accelsim``), e.g. an older
commit unpacked with ``git archive <commit> src | tar -x -C /tmp/filing``. Each tree runs in
its own long-lived subprocess with ``PYTHONPATH=<tree>/src`` and only the public API
(``acs.simulate`` in-process, ``progress=False``), so any two versions of accelsim can be
timed against each other. Rounds alternate between the two processes (which one goes first
alternates too) so that load on a shared machine hits both alike; each round times
``BACK_TO_BACK`` studies in a row and keeps the least CPU time (``time.process_time``: the
time the process itself ran, which other processes on the machine do not inflate). The
report gives, per case, each tree's best and median runs/s, its median minor page faults
per study (each a kernel trip inside the CPU time: memory that glibc handed back to the
OS and a later study faults in again), and the ratio tree / against of the CPU time per
study: best over best, and the median of the round-by-round ratios.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
from pathlib import Path

from tree_workers import ask, start_worker

RUNS = 4 * 4096  # as bench_analytic.py: one in-process chunk of 4 blocks
BACK_TO_BACK = 3
CASES = ((1024, 30.0), (16384, 60.0))  # bench_analytic.py's chips and days
FAILURE_RATE = 2e-5

_WORKER = """
import json, resource, sys, time
import accelsim as acs

def scenario(chips, days):
    mfu = 0.4
    peak = acs.catalog.chip("h100-sxm").bf16_tflops * 1e12
    return acs.Scenario(
        name=f"bench-{chips}",
        workload=acs.TrainingRun(params=70e9, tokens=2e12, flops=days * 86400 * chips * peak * mfu),
        fleet=[acs.Pool(chip="h100-sxm", count=chips, provider="aws")],
        assumptions=acs.Assumptions(mfu=mfu, failure_rate_per_chip_hour=%(rate)r),
    )

scenarios = {c: scenario(c, d) for c, d in %(cases)r}
for s in scenarios.values():
    acs.simulate(s, runs=%(runs)d, seed=0, progress=False)  # warm caches
print(json.dumps({"file": acs.__file__}), flush=True)
for line in sys.stdin:
    chips = int(line)
    best = float("inf")
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(%(back)d):
        start = time.process_time()
        acs.simulate(scenarios[chips], runs=%(runs)d, seed=1, progress=False)
        best = min(best, time.process_time() - start)
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / %(back)d
    print(json.dumps({"seconds": best, "faults": faults}), flush=True)
"""


def _start(tree: Path) -> subprocess.Popen[str]:
    code = _WORKER % {
        "rate": FAILURE_RATE,
        "cases": CASES,
        "runs": RUNS,
        "back": BACK_TO_BACK,
    }
    return start_worker(tree, code)


def _time(proc: subprocess.Popen[str], chips: int) -> tuple[float, float]:
    answer = ask(proc, str(chips))
    return float(answer["seconds"]), float(answer["faults"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", type=Path, required=True, help="the other tree's root")
    parser.add_argument("--tree", type=Path, default=Path("."), help="this tree's root")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    procs = {"tree": _start(args.tree), "against": _start(args.against)}
    try:
        for chips, days in CASES:
            seconds: dict[str, list[float]] = {"tree": [], "against": []}
            faults: dict[str, list[float]] = {"tree": [], "against": []}
            for r in range(args.rounds):
                order = ("tree", "against") if r % 2 == 0 else ("against", "tree")
                for name in order:
                    cpu, flt = _time(procs[name], chips)
                    seconds[name].append(cpu)
                    faults[name].append(flt)
            ratios = [a / b for a, b in zip(seconds["tree"], seconds["against"], strict=True)]
            best = min(seconds["tree"]) / min(seconds["against"])
            print(f"{chips:,} chips, {days:.0f} d, {RUNS:,} runs, {args.rounds} rounds (CPU time)")
            for name in ("tree", "against"):
                s = seconds[name]
                print(
                    f"  {name:8s} best {RUNS / min(s):>10,.0f} runs/s  "
                    f"median {RUNS / statistics.median(s):>10,.0f} runs/s  "
                    f"{statistics.median(faults[name]):>6,.0f} page faults a study"
                )
            print(
                f"  tree/against CPU time: best/best {best:.2f}x, "
                f"median of round ratios {statistics.median(ratios):.2f}x "
                f"(range {min(ratios):.2f}-{max(ratios):.2f}x)"
            )
    finally:
        for proc in procs.values():
            proc.kill()


if __name__ == "__main__":
    main()
