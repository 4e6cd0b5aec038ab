"""Candidate rows of ``tests/validation/data/inference.csv`` from an MLPerf Inference results
repository (provenance tool; not part of the package, not run by the tests).

Reads a bare git mirror of ``mlcommons/inference_results_v5.1`` or ``_v6.0``
(``summary_results.json``, each result's ``mlperf_log_summary.txt`` and
``systems/<system>.json``, at COMMIT or HEAD) and prints CSV rows, in the validation set's
columns, for every closed-division datacenter LLM result whose chip and model the catalog has
and whose (chip, model, scenario) the set does not yet hold. For v6.0 only the classes issue 28
asks to widen are printed: AMD chips, MoE models, Interactive scenarios.

Selection is by availability only, never by how the model does on a row: one representative
per (chip, benchmark, scenario), the chip vendor's own submission where one exists, otherwise
the alphabetically first submitter's smallest system. The ``-99.9`` accuracy variants are left
out (same runs as ``-99`` for most submitters).

    python benchmarks/mlperf_inference_rows.py MIRROR_GIT_DIR tests/validation/data/inference.csv \
        [ROUND [COMMIT]]

ROUND is ``5.1`` (default) or ``6.0``. The v6.0 rows were read from the snapshot of
``gbeezybez/inference_results_v6.0`` (a fork) at upstream commit ``4d3916ac9cf4`` (the last
MLCommons commit in its history; the fork's own commits touch ``open/Lattix`` only), and cite
``mlcommons/inference_results_v6.0`` at that commit.

The last column, ``speculative_draft_tokens``, is printed empty: where a submitter's config
states speculative decoding (v6.0 DeepSeek-R1 Interactive, MTP), the draft length was copied
into the row by hand from that config, with its path in the row's notes.
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
    "NVIDIA B300-SXM-270GB": "b300",
    "AMD Instinct MI355X 288GB HBM3e": "mi355x",
}
VENDOR = {"b200": "NVIDIA", "h200": "NVIDIA", "gb200": "NVIDIA", "gb300": "NVIDIA",
          "h100-sxm": "NVIDIA", "rtx-pro-6000": "NVIDIA", "l40s": "NVIDIA",
          "mi300x": "AMD", "mi325x": "AMD", "b300": "NVIDIA", "mi355x": "AMD"}  # fmt: skip
MODELS = {
    "llama2-70b-99": ("Llama-2-70B-Chat", 70, 70, 222.3),
    "llama3.1-405b": ("Llama-3.1-405B-Instruct", 405, 405, 9428.6),
    "llama3.1-8b": ("Llama-3.1-8B-Instruct", 8, 8, 870.7),
    "mixtral-8x7b": ("Mixtral-8x7B-Instruct", 46.7, 12.9, 427.4),
    "deepseek-r1": ("DeepSeek-R1", 671, 37, 803.8),
    # No dataset mean ISL is published for gpt-oss-120b: the input length stays empty.
    "gpt-oss-120b": ("gpt-oss-120b", 117, 5.1, None),
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
            "deepseek-r1": "deepseek-r1", "gpt-oss-120b": "gpt-oss-120b"}  # fmt: skip
ROUNDS = {"5.1": ("mlperf51", "2025-09-09"), "6.0": ("mlperf60", "2026-04-01")}


def _git(mirror: str, path: str, commit: str = "HEAD") -> str:
    return subprocess.check_output(["git", "show", f"{commit}:{path}"], cwd=mirror, text=True)


def _field(log: str, label: str) -> float | None:
    match = re.search(rf"^{re.escape(label)}\s*:\s*([\d.]+)", log, re.MULTILINE)
    return float(match.group(1)) if match else None


def _precision(declared: str) -> str:
    """``weight_data_types`` lower-cased; MXFP4 (OCP microscaling FP4) is written ``fp4``
    first, so the calibration reads it as 4-bit weights, with the declared name kept."""
    text = declared.lower()
    return f"fp4 ({declared} per weight_data_types)" if text == "mxfp4" else text


def _bounds(log: str, bench: str, scen: str) -> tuple[float, float]:
    """p99 TTFT and TPOT bounds [ms]: the log's own test parameters, else mlperf.conf's."""
    ttft, tpot = _field(log, "ttft_latency (ns)"), _field(log, "tpot_latency (ns)")
    if ttft is not None and tpot is not None:
        return ttft / 1e6, tpot / 1e6
    return BOUNDS[(bench, scen)]


def _row(mirror: str, commit: str, r: dict, rnd: str) -> list[str]:  # type: ignore[type-arg]
    chip, bench, scen = CHIPS[r["Accelerator"]], r["Model"], r["Scenario"]
    loc = r["Location"].removeprefix("./").removesuffix("/performance/run_1")
    log_path = f"{loc}/performance/run_1/mlperf_log_summary.txt"
    log = _git(mirror, log_path, commit)
    division, submitter = loc.split("/")[0], loc.split("/")[1]
    system = json.loads(
        _git(mirror, f"{division}/{submitter}/systems/{r['Platform']}.json", commit)
    )
    count = int(system["accelerators_per_node"]) * int(system["number_of_nodes"])
    offline = scen == "Offline"
    tokens = _field(log, "Tokens per second" if offline else "Completed tokens per second")
    samples = _field(log, "Samples per second" if offline else "Completed samples per second")
    if tokens is None or samples is None or "Result is : VALID" not in log:
        raise ValueError(f"{loc}: no VALID tokens/s and samples/s in the summary")
    name, params, active, isl = MODELS[bench]
    out = tokens / samples
    prefix, date = ROUNDS[rnd]
    row_id = (f"{prefix}-{BENCH_ID[bench]}-{scen.lower()}-{chip}x{count}-"
              f"{submitter.lower().replace('_', '-')}")  # fmt: skip
    lat = ["", "", "", ""]
    constraint = "none (Offline: throughput only, all queries issued at t=0)"
    if not offline:
        ttft, tpot = _bounds(log, bench, scen)
        constraint = f"TTFT p99<={ttft:,.0f} ms, TPOT p99<={tpot:g} ms"
        ns = [
            _field(log, "Mean First Token latency (ns)"),
            _field(log, "Mean Time to Output Token (ns)")  # v5.1 label
            or _field(log, "Mean Time per Output Token (ns)"),  # v6.0 label
            _field(log, "99.00 percentile first token latency (ns)"),
            _field(log, "99.00 percentile time to output token (ns)"),
        ]
        lat = [f"{v / 1e6:.0f}" if i % 2 == 0 else f"{v / 1e6:.1f}" for i, v in enumerate(ns)]
    notes = (f"submitter={r['Submitter']}; system={r['Platform']}; {count} accelerators "
             f"({system['accelerators_per_node']}/node x {system['number_of_nodes']} node(s)); "
             f"result VALID; samples/s={samples:g}; mean output tokens/sample derived as "
             f"tokens/s / samples/s; precision = weight_data_types of summary_results.json"
             + ("" if offline else "; latencies from the same log (mean and p99)"))  # fmt: skip
    if isl is None:
        notes += "; no dataset mean input length published, so input_tokens is left empty"
    url = f"https://github.com/mlcommons/inference_results_v{rnd}/blob/{commit}/{log_path}"
    return [
        row_id, url, date, f"MLPerf Inference v{rnd} datacenter closed", scen, name,
        f"{params:g}", f"{active:g}", _precision(r["weight_data_types"]), chip, str(count),
        system["framework"], "" if isl is None else f"{isl}", f"{out:.1f}", f"{tokens:g}",
        "output tokens/s, whole system",
        f"{tokens / count:.1f}", constraint, lat[0], lat[1], lat[2], lat[3], "",
        f"MLCommons (submitter: {r['Submitter']})", "high", notes, "",
    ]  # fmt: skip


def _wanted(r: dict, rnd: str) -> bool:  # type: ignore[type-arg]
    """v6.0: only the classes issue 28 asks to widen (AMD, MoE, Interactive)."""
    if rnd == "5.1":
        return True
    _, params, active, _ = MODELS[r["Model"]]
    amd = VENDOR[CHIPS[r["Accelerator"]]] == "AMD"
    return amd or active < params or r["Scenario"] == "Interactive"


def main(mirror: str, csv_path: str, rnd: str = "5.1", commit: str = "HEAD") -> None:
    """Print the candidate rows (see the module docstring)."""
    prefix = ROUNDS[rnd][0]
    with open(csv_path, newline="", encoding="utf-8") as handle:
        held = {
            (r["accelerator"], r["model"], r["scenario"])
            for r in csv.DictReader(handle)
            if r["id"].startswith(f"{prefix}-")
        }
    commit = subprocess.check_output(["git", "rev-parse", commit], cwd=mirror, text=True).strip()
    summary = json.loads(_git(mirror, "summary_results.json", commit))
    groups: dict[tuple[str, str, str], list[dict]] = {}  # type: ignore[type-arg]
    for r in summary:
        if (r["Suite"], r["Category"]) != ("datacenter", "closed"):
            continue
        if r["Accelerator"] not in CHIPS or r["Model"] not in MODELS or not _wanted(r, rnd):
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
        writer.writerow(_row(mirror, commit, pick, rnd))


if __name__ == "__main__":
    main(*sys.argv[1:5])
