"""Candidate rows of ``tests/validation/data/inference.csv`` from an MLPerf Inference results
repository (provenance tool; not part of the package, not run by the tests).

Reads a bare git mirror of ``mlcommons/inference_results_v5.1`` (``summary_results.json`` at
HEAD, each result's ``mlperf_log_summary.txt`` and ``systems/<system>.json``) and prints CSV
rows, in the validation set's columns, for every closed-division datacenter LLM result whose
chip and model the catalog has and whose (chip, benchmark, scenario) the set does not yet hold.

Selection is by availability only, never by how the model does on a row: one representative
per (chip, benchmark, scenario), the chip vendor's own submission where one exists, otherwise
the alphabetically first submitter's smallest system. The ``-99.9`` accuracy variants are left
out (same runs as ``-99`` for most submitters).

    python benchmarks/mlperf_inference_rows.py MIRROR_GIT_DIR tests/validation/data/inference.csv
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys

CHIPS = {
    "NVIDIA B200-SXM-180GB": "b200",
    "NVIDIA H200-SXM-141GB": "h200",
    "AMD Instinct MI325X 256GB HBM3e": "mi325x",
    "AMD Instinct MI300X 192GB HBM3": "mi300x",
    "NVIDIA GB200": "gb200",
    "NVIDIA GB300": "gb300",
    "NVIDIA H100-SXM-80GB": "h100-sxm",
    "NVIDIA RTX PRO 6000 Blackwell Server Edition": "rtx-pro-6000",
    "NVIDIA L40S": "l40s",
}
VENDOR = {"b200": "NVIDIA", "h200": "NVIDIA", "gb200": "NVIDIA", "gb300": "NVIDIA",
          "h100-sxm": "NVIDIA", "rtx-pro-6000": "NVIDIA", "l40s": "NVIDIA",
          "mi300x": "AMD", "mi325x": "AMD"}  # fmt: skip
MODELS = {
    "llama2-70b-99": ("Llama-2-70B-Chat", 70, 70, 222.3),
    "llama3.1-405b": ("Llama-3.1-405B-Instruct", 405, 405, 9428.6),
    "llama3.1-8b": ("Llama-3.1-8B-Instruct", 8, 8, 870.7),
    "mixtral-8x7b": ("Mixtral-8x7B-Instruct", 46.7, 12.9, 427.4),
    "deepseek-r1": ("DeepSeek-R1", 671, 37, 803.8),
}
BOUNDS = {  # p99 TTFT / TPOT bounds [ms], mlcommons/inference loadgen/mlperf.conf
    ("llama2-70b-99", "Server"): (2000, 200), ("llama2-70b-99", "Interactive"): (450, 40),
    ("mixtral-8x7b", "Server"): (2000, 200),
    ("llama3.1-405b", "Server"): (6000, 175), ("llama3.1-405b", "Interactive"): (4500, 80),
    ("llama3.1-8b", "Server"): (2000, 100), ("llama3.1-8b", "Interactive"): (500, 30),
    ("deepseek-r1", "Server"): (2000, 80), ("deepseek-r1", "Interactive"): (1500, 15),
}  # fmt: skip
BENCH_ID = {"llama2-70b-99": "llama2-70b-99", "llama3.1-405b": "llama3.1-405b",
            "llama3.1-8b": "llama3.1-8b", "mixtral-8x7b": "mixtral-8x7b",
            "deepseek-r1": "deepseek-r1"}  # fmt: skip


def _git(mirror: str, path: str) -> str:
    return subprocess.check_output(["git", "show", f"HEAD:{path}"], cwd=mirror, text=True)


def _field(log: str, label: str) -> float | None:
    match = re.search(rf"^{re.escape(label)}\s*:\s*([\d.]+)", log, re.MULTILINE)
    return float(match.group(1)) if match else None


def _row(mirror: str, commit: str, r: dict, date: str) -> list[str]:  # type: ignore[type-arg]
    chip, bench, scen = CHIPS[r["Accelerator"]], r["Model"], r["Scenario"]
    loc = r["Location"]
    log_path = f"{loc}/performance/run_1/mlperf_log_summary.txt"
    log = _git(mirror, log_path)
    division, submitter = loc.split("/")[0], loc.split("/")[1]
    system = json.loads(_git(mirror, f"{division}/{submitter}/systems/{r['Platform']}.json"))
    count = int(system["accelerators_per_node"]) * int(system["number_of_nodes"])
    offline = scen == "Offline"
    tokens = _field(log, "Tokens per second" if offline else "Completed tokens per second")
    samples = _field(log, "Samples per second" if offline else "Completed samples per second")
    if tokens is None or samples is None or "Result is : VALID" not in log:
        raise ValueError(f"{loc}: no VALID tokens/s and samples/s in the summary")
    name, params, active, isl = MODELS[bench]
    out = tokens / samples
    row_id = (f"mlperf51-{BENCH_ID[bench]}-{scen.lower()}-{chip}x{count}-"
              f"{submitter.lower().replace('_', '-')}")  # fmt: skip
    lat = ["", "", "", ""]
    constraint = "none (Offline: throughput only, all queries issued at t=0)"
    if not offline:
        ttft, tpot = BOUNDS[(bench, scen)]
        constraint = f"TTFT p99<={ttft:,} ms, TPOT p99<={tpot} ms"
        ns = [
            _field(log, "Mean First Token latency (ns)"),
            _field(log, "Mean Time to Output Token (ns)"),
            _field(log, "99.00 percentile first token latency (ns)"),
            _field(log, "99.00 percentile time to output token (ns)"),
        ]
        lat = [f"{v / 1e6:.0f}" if i % 2 == 0 else f"{v / 1e6:.1f}" for i, v in enumerate(ns)]
    notes = (f"submitter={r['Submitter']}; system={r['Platform']}; {count} accelerators "
             f"({system['accelerators_per_node']}/node x {system['number_of_nodes']} node(s)); "
             f"result VALID; samples/s={samples:g}; mean output tokens/sample derived as "
             f"tokens/s / samples/s; precision = weight_data_types of summary_results.json"
             + ("" if offline else "; latencies from the same log (mean and p99)"))  # fmt: skip
    url = f"https://github.com/mlcommons/inference_results_v5.1/blob/{commit}/{log_path}"
    return [
        row_id, url, date, "MLPerf Inference v5.1 datacenter closed", scen, name, f"{params:g}",
        f"{active:g}", r["weight_data_types"].lower(), chip, str(count), system["framework"],
        f"{isl}", f"{out:.1f}", f"{tokens:g}", "output tokens/s, whole system",
        f"{tokens / count:.1f}", constraint, lat[0], lat[1], lat[2], lat[3], "",
        f"MLCommons (submitter: {r['Submitter']})", "high", notes,
    ]  # fmt: skip


def main(mirror: str, csv_path: str) -> None:
    """Print the candidate rows (see the module docstring)."""
    with open(csv_path, newline="", encoding="utf-8") as handle:
        held = {
            (r["accelerator"], r["model"], r["scenario"])
            for r in csv.DictReader(handle)
            if r["id"].startswith("mlperf51-")
        }
    commit = subprocess.check_output(["git", "rev-parse", "HEAD"], cwd=mirror, text=True).strip()
    summary = json.loads(_git(mirror, "summary_results.json"))
    groups: dict[tuple[str, str, str], list[dict]] = {}  # type: ignore[type-arg]
    for r in summary:
        if (r["Suite"], r["Category"]) != ("datacenter", "closed"):
            continue
        if r["Accelerator"] not in CHIPS or r["Model"] not in MODELS:
            continue
        key = (CHIPS[r["Accelerator"]], MODELS[r["Model"]][0], r["Scenario"])
        groups.setdefault(key, []).append(r)
    writer = csv.writer(sys.stdout, lineterminator="\n")
    for key in sorted(groups):
        if key in held:
            continue
        vendor = VENDOR[key[0]]
        pick = min(
            groups[key],
            key=lambda r: (
                r["Submitter"] != vendor,
                r["Submitter"],
                int(r["Nodes"]),
                r["Platform"],
            ),
        )
        writer.writerow(_row(mirror, commit, pick, "2025-09-09"))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
