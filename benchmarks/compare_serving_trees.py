"""CPU time of the serving request DES in two source trees: ``bench_serving_des.py``'s hour.

Usage (from the repository root)::

    python benchmarks/compare_serving_trees.py --against /tmp/base [--tree .] [--rounds 7]
        [--hours 1.0]

``--against`` is another tree's root (a directory holding ``src/accelsim``), e.g. an older
commit unpacked with ``git archive <commit> src | tar -x -C /tmp/base``. As
``compare_trees.py`` does for the analytic engine, each tree runs in its own long-lived
subprocess with ``PYTHONPATH=<tree>/src``; rounds alternate between them (which one goes
first alternates too) and each round times one simulation in CPU time
(``time.process_time``). The workload is this checkout's ``bench_serving_des.py``: 50
requests/s on 8 replicas, its arrivals before ``--hours`` over a horizon of ``--hours``.
BLAS threads are pinned to one (``OPENBLAS_NUM_THREADS=1``), so no idle thread's spinning
lands in the CPU time. The report gives each tree's best and median seconds, the ratio
tree / against (best over best, median of the round ratios) and the largest difference of
the first-token times between the trees [s] (0 when they are bit-identical).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
from pathlib import Path

import numpy as np
from tree_workers import ask, start_worker

BENCHMARKS = Path(__file__).resolve().parent

_WORKER = """
import json, sys, time
sys.path.insert(0, %(benchmarks)r)
import accelsim
import bench_serving_des as b
import numpy as np
from accelsim.engines.serving.des import RequestStream

hours = %(hours)r
requests = b._requests("hour50", 50.0, 1.0)
kept = requests.arrival_hours < hours
requests = RequestStream(
    requests.arrival_hours[kept], requests.input_tokens[kept], requests.output_tokens[kept]
)
b.accelsim_serving(requests, hours)  # warm
print(json.dumps({"file": accelsim.__file__}), flush=True)
for line in sys.stdin:
    start = time.process_time()
    ttft = b.accelsim_serving(requests, hours)
    seconds = time.process_time() - start
    np.save(line.strip(), ttft)
    print(json.dumps({"seconds": seconds}), flush=True)
"""


def _start(tree: Path, hours: float) -> subprocess.Popen[str]:
    code = _WORKER % {"benchmarks": str(BENCHMARKS), "hours": hours}
    return start_worker(tree, code, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")


def _time(proc: subprocess.Popen[str], out: Path) -> float:
    return float(ask(proc, str(out))["seconds"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", type=Path, required=True, help="the other tree's root")
    parser.add_argument("--tree", type=Path, default=Path("."), help="this tree's root")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--hours", type=float, default=1.0)
    args = parser.parse_args()
    names = ("tree", "against")
    procs = {"tree": _start(args.tree, args.hours), "against": _start(args.against, args.hours)}
    seconds: dict[str, list[float]] = {name: [] for name in names}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            outs = {name: Path(tmp) / f"{name}.npy" for name in names}
            for r in range(args.rounds):
                for name in names if r % 2 == 0 else names[::-1]:
                    seconds[name].append(_time(procs[name], outs[name]))
            ttft = {name: np.load(outs[name]) for name in names}
    finally:
        for proc in procs.values():
            proc.kill()
    print(f"serving DES, 50 requests/s on 8 replicas, {args.hours:g} h, {args.rounds} rounds (CPU)")
    for name in names:
        s = seconds[name]
        print(f"  {name:8s} best {min(s):.3f} s  median {statistics.median(s):.3f} s")
    ratios = [a / b for a, b in zip(seconds["tree"], seconds["against"], strict=True)]
    print(
        f"  tree/against CPU time: best/best {min(seconds['tree']) / min(seconds['against']):.3f}x,"
        f" median of round ratios {statistics.median(ratios):.3f}x"
        f" (range {min(ratios):.3f}-{max(ratios):.3f}x)"
    )
    same = np.array_equal(ttft["tree"] < 0, ttft["against"] < 0)
    gap = float(np.max(np.abs(ttft["tree"] - ttft["against"]), initial=0.0))
    print(f"  first tokens: same requests {same}, largest TTFT difference {gap:.3g} s")


if __name__ == "__main__":
    main()
