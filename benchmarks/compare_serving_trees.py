"""CPU time of a serving study in two source trees, through the public API only.

Usage (from the repository root)::

    python benchmarks/compare_serving_trees.py --against /tmp/base [--tree .] [--rounds 7]
        [--engine fast|des]

``--against`` is another tree's root (a directory holding ``src/accelsim``), e.g. an older
commit unpacked with ``git archive <commit> src | tar -x -C /tmp/base``. As
``compare_trees.py`` does for the analytic engine, each tree runs in its own long-lived
subprocess with ``PYTHONPATH=<tree>/src``; rounds alternate between them (which one goes
first alternates too) and each round times one study in CPU time (``time.process_time``).

The study is ``bench_serving_fast.py``'s scenario, built with ``accelsim``'s public names
only (``acs.Serving``, ``acs.Scenario``, ``acs.simulate``), so a tree whose engines are laid
out differently runs it too: Llama 3.1 70B FP8 on 64 H100 (TP4), ~200 requests/s on a 24-hour
profile, per-request prompt lengths, 30 days. ``--engine fast`` times 16,384 runs of the
fast path (``acs.simulate``: draws, latency table, hours and pricing, in-process);
``--engine des`` times 2 runs of the request DES over 0.02 days (about 29 minutes of
traffic, every request simulated). BLAS threads are pinned to one. The report gives each
tree's best and median seconds, the ratio tree / against (best over best, median of the
round ratios) and how the two trees' ``ttft_p99_ms`` samples differ.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
from pathlib import Path

import numpy as np
from tree_workers import ask, start_worker

_WORKER = """
import json, sys, time
import numpy as np
import accelsim as acs

PROFILE = [0.5, 0.4, 0.35, 0.3, 0.3, 0.35, 0.5, 0.8, 1.1, 1.3, 1.45, 1.55,
           1.6, 1.6, 1.55, 1.5, 1.4, 1.35, 1.3, 1.25, 1.15, 1.0, 0.8, 0.6]
engine = {"fast": "analytic", "des": "des"}[%(engine)r]
days, runs = (30.0, 16384) if engine == "analytic" else (0.02, 2)
svc = acs.Serving(
    model="llama-3.1-70b", precision="fp8", rate_rps=acs.LogNormal(low=120, high=300),
    daily_profile=PROFILE, input_tokens=acs.LogNormal(low=200, high=4000), output_tokens=300,
    slo=acs.SLO(ttft_ms=2000, tpot_ms=100), chips_per_replica=4, horizon_days=days,
)
s = acs.Scenario(
    name="bench", workload=svc, fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")]
)
acs.simulate(s, runs=min(runs, 1024), seed=1, engine=engine)  # warm: catalog, kernels
print(json.dumps({"file": acs.__file__}), flush=True)
for line in sys.stdin:
    start = time.process_time()
    res = acs.simulate(s, runs=runs, seed=1, engine=engine)
    seconds = time.process_time() - start
    np.save(line.strip(), res.samples("ttft_p99_ms"))
    print(json.dumps({"seconds": seconds}), flush=True)
"""


def _start(tree: Path, engine: str) -> subprocess.Popen[str]:
    code = _WORKER % {"engine": engine}
    return start_worker(tree, code, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", type=Path, required=True, help="the other tree's root")
    parser.add_argument("--tree", type=Path, default=Path("."), help="this tree's root")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--engine", choices=("fast", "des"), default="fast")
    args = parser.parse_args()
    names = ("tree", "against")
    procs = {"tree": _start(args.tree, args.engine), "against": _start(args.against, args.engine)}
    seconds: dict[str, list[float]] = {name: [] for name in names}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            outs = {name: Path(tmp) / f"{name}.npy" for name in names}
            for r in range(args.rounds):
                for name in names if r % 2 == 0 else names[::-1]:
                    seconds[name].append(float(ask(procs[name], str(outs[name]))["seconds"]))
            ttft = {name: np.load(outs[name]) for name in names}
    finally:
        for proc in procs.values():
            proc.kill()
    print(f"serving study, engine {args.engine}, {args.rounds} rounds (CPU time)")
    for name in names:
        s = seconds[name]
        print(f"  {name:8s} best {min(s):.3f} s  median {statistics.median(s):.3f} s")
    ratios = [a / b for a, b in zip(seconds["tree"], seconds["against"], strict=True)]
    print(
        f"  tree/against CPU time: best/best {min(seconds['tree']) / min(seconds['against']):.3f}x,"
        f" median of round ratios {statistics.median(ratios):.3f}x"
        f" (range {min(ratios):.3f}-{max(ratios):.3f}x)"
    )
    a, b = ttft["tree"], ttft["against"]
    rel = np.abs(a - b) / np.maximum(np.abs(b), 1e-300)
    print(
        f"  ttft_p99_ms samples equal: {np.array_equal(a, b)}; runs that differ"
        f" {int(np.count_nonzero(a != b))} of {a.size}, largest relative difference"
        f" {float(rel.max(initial=0.0)):.3g}"
    )


if __name__ == "__main__":
    main()
