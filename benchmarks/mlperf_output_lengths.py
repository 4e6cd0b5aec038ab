"""Output-length laws of the MLPerf Inference LLM benchmarks, from the submitters' own
generated outputs (provenance tool; not part of the package, not run by the tests).

MLPerf publishes each benchmark's mean output length only. Every LLM submission since v5.1
also carries its TEST06 compliance run (v5.1: ``closed/<submitter>/compliance/<system>/
<benchmark>/<scenario>/TEST06/accuracy/mlperf_log_accuracy.json``; v6.0: the same under
``results/``): 100 samples of the dataset served by the submitted
system, each with its generated ``token_count``. Pooled over every distinct log of a round
(identical files counted once), they give the law of the output length; it is written as
``LEVELS`` quantiles of the length over its mean (so a row scales it to its own measured mean
output, which the performance log gives):

    python benchmarks/mlperf_output_lengths.py MIRROR=COMMIT [MIRROR=COMMIT ...] > \
        tests/validation/data/mlperf_output_lengths.csv

MIRROR is a bare git mirror of ``mlcommons/inference_results_vX.Y`` (read at COMMIT). The
shipped file reads v5.1 at 965182b03376 and v6.0 at 4d3916ac9cf4 (the last MLCommons
commit of the ``gbeezybez/inference_results_v6.0`` fork). Closed division only; the
``-99`` and ``-99.9`` variants of a benchmark are one dataset and one model and are pooled;
the edge benchmarks are left out (another dataset subset). Truncated logs (under 20 kB: the
results tree strips large accuracy logs) are skipped.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import numpy as np

LEVELS = 200
"""Quantile levels written per benchmark, at the midpoints ``(i + 0.5)/LEVELS``."""

BENCHMARKS = {
    "llama2-70b-99": "llama2-70b",
    "llama2-70b-99.9": "llama2-70b",
    "llama3.1-405b": "llama3.1-405b",
    "llama3_1-405b": "llama3.1-405b",
    "llama3.1-8b": "llama3.1-8b",
    "llama3_1-8b": "llama3.1-8b",
    "mixtral-8x7b": "mixtral-8x7b",
    "deepseek-r1": "deepseek-r1",
}
"""Directory name of a benchmark in the results tree -> the name the CSV uses."""

_SUFFIX = "/TEST06/accuracy/mlperf_log_accuracy.json"
_MIN_BYTES = 20_000


def _git(mirror: str, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", mirror, *args], capture_output=True, text=True, check=True
    ).stdout


def _lengths(mirror: str, commit: str, seen: set[str]) -> dict[str, list[list[int]]]:
    """Each benchmark's TEST06 logs' token counts (one list per distinct log)."""
    found: dict[str, list[list[int]]] = {}
    for line in _git(mirror, "ls-tree", "-r", "-l", commit).splitlines():
        meta, path = line.split("\t", 1)
        parts = path.split("/")
        if parts[0] != "closed" or len(parts) < 5 or not path.endswith(_SUFFIX):
            continue
        name = BENCHMARKS.get(parts[4])
        _, _, blob, size = meta.split()
        if name is None or blob in seen or int(size) < _MIN_BYTES:
            continue
        seen.add(blob)
        log = json.loads(_git(mirror, "cat-file", "-p", blob))
        found.setdefault(name, []).append([int(s["token_count"]) for s in log])
    return found


def main(argv: list[str]) -> int:
    if not argv or any("=" not in a for a in argv):
        print(__doc__, file=sys.stderr)
        return 2
    pooled: dict[str, list[list[int]]] = {}
    seen: set[str] = set()
    for arg in argv:
        mirror, commit = arg.split("=", 1)
        for name, logs in _lengths(mirror, commit, seen).items():
            pooled.setdefault(name, []).extend(logs)
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["benchmark", "level", "relative_length", "samples", "logs"])
    levels = (np.arange(LEVELS) + 0.5) / LEVELS
    for name in sorted(pooled):
        tokens = np.concatenate([np.asarray(x, dtype=float) for x in pooled[name]])
        relative = np.quantile(tokens, levels) / tokens.mean()
        for level, value in zip(levels, relative, strict=True):
            out.writerow([name, f"{level:.4f}", f"{value:.5f}", tokens.size, len(pooled[name])])
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
