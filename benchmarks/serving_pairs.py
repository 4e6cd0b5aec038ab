"""Offline -> Server / Interactive pairs: the shape of the serving model's latency-bound drop.

Run with ``PYTHONPATH=src python benchmarks/serving_pairs.py [inference.csv]``; not part of
the test suite. For every system with an Offline row and a Server or Interactive row in the
inference validation set (the same id but for the scenario), it prints:

- ``pub``: the published per-chip ratio latency-bound / Offline;
- ``model``: the model's ratio at the efficiency the Offline row implies
  (:func:`accelsim.serving_calibration.implied_efficiency`), the latency-bound rate taken at
  the best replica size the row's memory rule allows, at the priors' median overhead,
  memory share and overlap (the calibration page draws these and chooses the size by the
  median of its draws; this is the one-draw version of the same rule). The ratio does not
  depend on the overall efficiency, so ``shape = model / pub`` isolates the iteration
  model's shape between the full Offline batch and the batch a TPOT bound allows;
- ``level = pooled / own``: the efficiency the page's partial pooling gives the row (its
  median; the row's groups, :func:`accelsim.serving_calibration._groups`) over the one its
  own system's Offline row implies. A latency-bound row's P50 error on the page is about
  ``shape x level`` (the rate is nearly proportional to the efficiency).

Then the medians of ``shape`` and ``level`` by precision and regime, and a third table:
for each system with a Server and an Interactive row that both publish a mean TPOT, the
straight line ``TPOT = a + s·B`` through the two published points, ``B`` = per-chip
throughput x mean TPOT (Little's law: sequences in decode per chip). Its intercept ``a`` is
the iteration's fixed part whatever the replica's size; beside it, the model's at the
efficiency the Offline row implies on the Offline layout (weights read + overhead). The
line lumps the prompt work between decode steps into the slope and assumes one layout for
both rows, so read it as a lead, not a measurement. Nothing here is fitted.
"""

from __future__ import annotations

import csv
import math
import re
import sys
from dataclasses import replace

import numpy as np

import accelsim.serving_calibration as sc
from accelsim import _calibration_layouts as rack
from accelsim._calibration_stats import partial_pool
from accelsim.catalog import serving_priors
from accelsim.models import serving

_BOUNDS = re.compile(r"(TTFT|TPOT) p99<=([\d,]+) ms")


def _slo_rate(case: sc._Case, efficiency: float, limits: dict[str, float]) -> float:
    """Best per-chip latency-bound rate over the replica sizes the memory rule allows."""
    nuisance = rack.nuisance_medians()
    low_share = np.array(serving_priors().memory_share.dist().ppf(serving.NEAR_WORST_QUANTILE))
    context = case.input_tokens + case.output_tokens

    def holds(chips: int) -> bool:
        return bool(sc._capacity(replace(case, chips=chips), low_share) >= context)

    sizes = serving.replica_sizes(serving.smallest_safe_size(case.chips, holds), case.largest)
    eff = np.array([efficiency])
    return max(
        float(sc._slo_per_chip(replace(case, chips=t), eff, nuisance, limits)[0]) for t in sizes
    )


def _implied(
    rows: list[dict[str, str]],
) -> tuple[dict[str, tuple[tuple[str, ...], float]], dict[str, sc._Case]]:
    """Every Offline row's groups and implied efficiency, as :func:`sc.calibrate` finds them,
    and its case on the layout it is evaluated on."""
    out: dict[str, tuple[tuple[str, ...], float]] = {}
    cases: dict[str, sc._Case] = {}
    for row in rows:
        case = sc._case(row)
        published = sc._number(row["throughput_per_accelerator"])
        if isinstance(case, str) or not sc._OFFLINE.search(row["scenario"]) or not published:
            continue
        case = rack.offline_layout(
            case, sc._capacity, sc._per_chip_offline, rack.nuisance_medians()
        )
        out[row["id"]] = (sc._groups(case), sc.implied_efficiency(case, published))
        cases[row["id"]] = case
    return out, cases


def _intercepts(
    by_id: dict[str, dict[str, str]],
    implied: dict[str, tuple[tuple[str, ...], float]],
    cases: dict[str, sc._Case],
) -> None:
    """The published (Server, Interactive) TPOT line's intercept against the model's. [ms]"""
    print("\n| system | B@TPOT Interactive | B@TPOT Server | intercept pub ms | model ms |")
    print("|---|---|---|---|---|")
    for row_id, row in by_id.items():
        server_id = row_id.replace("-interactive-", "-server-")
        if "-interactive-" not in row_id or not row["tpot_ms"] or server_id not in by_id:
            continue
        if not by_id[server_id]["tpot_ms"]:
            continue
        points = [
            (float(by_id[k]["throughput_per_accelerator"]) * float(by_id[k]["tpot_ms"]) / 1e3,
             float(by_id[k]["tpot_ms"]))
            for k in (row_id, server_id)
        ]  # fmt: skip
        (b1, t1), (b2, t2) = points
        intercept = t1 - (t2 - t1) / (b2 - b1) * b1
        offline_id = row_id.replace("-interactive-", "-offline-")
        model = "-"
        if offline_id in implied:
            case, nuisance = cases[offline_id], rack.nuisance_medians()
            cost = sc._cost(case, np.array([implied[offline_id][1]]), nuisance)
            fixed = cost.weight_bytes * cost.seconds_per_byte + cost.overhead_seconds
            model = f"{float(np.ravel(fixed)[0]) * 1e3:.1f} (TP{case.chips})"
        print(
            f"| {row_id.replace('-interactive', '')} | {b1:.0f}@{t1:.1f} | {b2:.0f}@{t2:.1f} "
            f"| {intercept:.1f} | {model} |"
        )


def main(path: str) -> None:
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    by_id = {r["id"]: r for r in rows}
    implied, cases = _implied(rows)
    logs = [(g, math.log(e)) for g, e in implied.values()]
    summary: dict[tuple[str, str], list[tuple[float, float]]] = {}
    print("| row | TPOT ms | pub | model | shape | own eff | pooled | level |")
    print("|---|---|---|---|---|---|---|---|")
    for row_id, row in by_id.items():
        regime = next((r for r in ("Interactive", "Server") if r in row["scenario"]), None)
        offline_id = re.sub(r"-(interactive|server)-", "-offline-", row_id)
        case = sc._case(row)
        limits = {
            n: float(v.replace(",", "")) for n, v in _BOUNDS.findall(row["latency_constraint"])
        }
        if regime is None or offline_id not in implied or isinstance(case, str) or len(limits) < 2:
            continue
        offline, own = cases[offline_id], implied[offline_id][1]
        pub = float(row["throughput_per_accelerator"]) / float(
            by_id[offline_id]["throughput_per_accelerator"]
        )
        model_offline = float(
            sc._per_chip_offline(offline, np.array([own]), rack.nuisance_medians())[0]
        )
        model = _slo_rate(case, own, limits) / model_offline
        pooled = math.exp(partial_pool(logs, sc._groups(case))[0])
        shape, level = model / pub, pooled / own
        summary.setdefault((case.precision, regime), []).append((shape, level))
        print(
            f"| {row_id} | {limits['TPOT']:.0f} | {pub:.2f} | {model:.2f} | {shape:.2f} "
            f"| {own:.3f} | {pooled:.3f} | {level:.2f} |"
        )
    print("\n| precision | regime | pairs | median shape | median level |")
    print("|---|---|---|---|---|")
    for (precision, regime), values in sorted(summary.items()):
        shapes, levels = zip(*values, strict=True)
        print(
            f"| {precision} | {regime} | {len(values)} | {float(np.median(shapes)):.2f} "
            f"| {float(np.median(levels)):.2f} |"
        )
    _intercepts(by_id, implied, cases)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/validation/data/inference.csv")
