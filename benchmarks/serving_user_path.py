"""The validation rows through the user's path: ``acs.serving_capacity`` with the shipped
priors (not the calibration page's leave-one-out pooled efficiencies), as a planner who
copies a published configuration would run it, and as the project's outside checks run it.

For every row the serving calibration rates (``accelsim.serving_calibration``), a
``Serving`` scenario of the row's model preset, precision, mean input and output lengths,
p99 TTFT/TPOT bounds (Server / Interactive rows; Offline and closed-loop rows read
``offline_tokens_per_s_per_chip``, the rest ``slo_tokens_per_s_per_chip``), the expert
parallelism and speculation the row states, on a pool of the row's chips and count (every
other setting at its default: replica size by the memory rule, chunked prefill at the
prior's budget). Prices do not enter capacity; a chip without a catalog offer is given a
nominal quoted one. Prints each row's P5 / P50 / P95 over the published figure and the
class table (median |P50 error|, P5-P95 coverage, median P95/P5):

    python benchmarks/serving_user_path.py tests/validation/data/inference.csv [RUNS]
"""

from __future__ import annotations

import datetime
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

import accelsim as acs
from accelsim import _calibration_layouts as rack
from accelsim import catalog
from accelsim import serving_calibration as sc
from accelsim._calibration_stats import class_scores
from accelsim.errors import AccelsimError


@dataclass(frozen=True)
class _Outcome:
    id: str
    kind: str
    status: str
    published: float
    p5: float
    p50: float
    p95: float
    classes: tuple[str, ...]


def _quoted_catalog(chips: set[str]) -> None:
    """Activate the built-ins plus a nominal on-demand quote for each chip without an offer
    (capacity does not read prices)."""
    missing = sorted(c for c in chips if not any(o.chip == c for o in catalog.offers()))
    if not missing:
        return
    path = Path(tempfile.mkdtemp()) / "quotes.yaml"
    for chip in missing:
        doc = catalog.quote_document(
            chip=chip, provider="quoted", pricing="on_demand", usd_per_chip_hour=1.0,
            as_of=datetime.date.today(), source="file:///nominal-price-for-capacity-only",
            into=path if path.exists() else None,
        )  # fmt: skip
        path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    catalog.load(path)


def _provider(chip: str) -> tuple[str, str]:
    offers = sorted((o.provider, o.pricing) for o in catalog.offers() if o.chip == chip)
    on_demand = [o for o in offers if o[1] == "on_demand"]
    return (on_demand or offers)[0]


def _outcome(row: dict[str, str], case: sc._Case, runs: int) -> _Outcome | str:
    bounds = dict(re.findall(r"(TTFT|TPOT) p99<=([\d,]+) ms", row["latency_constraint"]))
    offline = bool(sc._OFFLINE.search(row["scenario"]))
    if not offline and len(bounds) < 2:
        return "no TTFT/TPOT bounds"
    ttft, tpot = (
        (1e7, 1e6) if offline else (float(bounds["TTFT"].replace(",", "")),
                                    float(bounds["TPOT"].replace(",", "")))
    )  # fmt: skip
    preset = sc.MODEL_ALIASES[row["model"].strip().lower()]
    stated = " ".join(row.get(k, "") for k in ("software", "scenario"))
    ep = bool(rack.expert_parallel_options(case, sc._capacity, np.array([0.9])))
    size = rack._STATED_EP_SIZE.search(stated) if ep else None
    count = int(float(row["accelerators_count"]))
    ep_size = int(size.group(1) or size.group(2)) if size else None
    ep_size = ep_size if ep_size is not None and count % ep_size == 0 else None
    # What the row states of its scheduler, as a user copying its configuration sets it: the
    # sequence cap (max-num-seqs; a closed loop's concurrency per replica) and the budget.
    capped = sc._CONCURRENCY.search(row["scenario"]) or sc._MAX_SEQS.search(row["software"])
    budget = re.search(r"max-num-batched-tokens (\d+)", row["software"])
    provider, pricing = _provider(case.chip.id)
    draft = case.draft_tokens
    try:
        work = acs.Serving(
            model=preset, precision=case.precision, rate_rps=1.0,
            input_tokens=case.input_tokens, output_tokens=case.output_tokens,
            slo=acs.SLO(ttft_ms=ttft, tpot_ms=tpot, percentile=99),
            expert_parallel=True if ep else None,
            chips_per_replica=ep_size,
            max_batch=max(1, int(case.max_batch)) if capped else None,
            prefill_chunk_tokens=int(budget.group(1)) if budget else None,
            speculative=acs.Speculative(draft_tokens=draft) if draft else None,
        )  # fmt: skip
        pool = acs.Pool(chip=case.chip.id, count=count, provider=provider, pricing=pricing)
        cap = acs.serving_capacity(acs.Scenario(name=row["id"], workload=work, fleet=[pool]),
                                   runs=runs, seed=7)  # fmt: skip
    except (AccelsimError, ValueError) as err:
        return f"refused: {str(err)[:80]}"
    metric = "offline_tokens_per_s_per_chip" if offline else "slo_tokens_per_s_per_chip"
    p5, p50, p95 = (float(v) for v in np.quantile(cap.samples(metric), [0.05, 0.5, 0.95]))
    published = float(row["throughput_per_accelerator"])
    status = "covered" if p5 <= published <= p95 else "missed"
    kind = "throughput" if offline else "slo_rate"
    return _Outcome(row["id"], kind, status, published, p5, p50, p95, sc._classes(case))


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    runs = int(argv[1]) if len(argv) > 1 else 200
    rated = {r.id for r in sc.calibrate(argv[0]) if r.kind in ("throughput", "slo_rate")}
    with open(argv[0], newline="", encoding="utf-8") as handle:
        rows = [r for r in sc.csv.DictReader(handle) if r["id"] in rated]
    cases = {r["id"]: sc._case(r) for r in rows}
    _quoted_catalog({c.chip.id for c in cases.values() if isinstance(c, sc._Case)})
    outcomes: list[_Outcome] = []
    for row in rows:
        case = cases[row["id"]]
        assert isinstance(case, sc._Case)
        got = _outcome(row, case, runs)
        if isinstance(got, str):
            print(f"{row['id']:64s} {got}")
            continue
        outcomes.append(got)
        print(f"{got.id:64s} {got.status:8s} P50/pub {got.p50 / got.published:5.2f} "
              f"[{got.p5 / got.published:5.2f}, {got.p95 / got.published:5.2f}]")  # fmt: skip
    print("\n| class | rows | median abs. P50 error | P5-P95 coverage | median P95/P5 |")
    print("|---|---:|---:|---:|---:|")
    for c in class_scores(outcomes):
        print(f"| {c.name} | {c.rows} | {c.median_abs_error:.1%} | {c.coverage:.1%} | "
              f"{c.median_width:.2f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
