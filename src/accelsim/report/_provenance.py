"""The report's provenance: what the calibration pages say and what replays the page."""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from accelsim.report._page_data import SERVING, TRAINING, Price
from accelsim.results import Result

# ---------------------------------------------------------------- calibration


def calibration_lines(kind: str, status: Mapping[str, Any]) -> tuple[tuple[str, ...], str]:
    """What the calibration pages say, for this kind of study, and which page."""
    if kind == TRAINING:
        t = status["training"]
        return (
            (
                f"Published training runs graded A and A-: {t['claim_covered']} of "
                f"{t['claim_counted']} published figures (time to train, chip-hours) lie in "
                f"the predicted P5 – P95 interval ({t['claim_loo_covered']} judged "
                f"leave-one-out, without the run's own published MFU).",
                f"All grades: {t['all_covered']} of {t['all_counted']} "
                f"({t['all_loo_covered']} leave-one-out).",
            ),
            str(t["page"]),
        )
    if kind == SERVING:
        s = status["serving"]
        return (
            (
                f"Per-chip serving throughput against {s['throughput_rows']} published "
                f"results: the P5 – P95 interval holds {s['coverage_pct']:.1f}% of them; "
                f"median error of the median {s['median_abs_error_pct']:.1f}%.",
                f"Largest rate meeting the latency SLO against {s['slo_rows']} published "
                f"Server/Interactive results: median ratio {s['slo_median_ratio']:.2f}.",
            ),
            str(s["page"]),
        )
    return (
        (
            "Shared clusters and job streams are checked against queueing theory (M/M/c), "
            "not against published fleets: no coverage figure for this kind of study.",
        ),
        "",
    )


# ---------------------------------------------------------------- reproduce


def reproduce_rows(
    results: Mapping[str, Result], price_list: Sequence[Price], how: str | None, version: str
) -> tuple[tuple[str, str], ...]:
    """Seed, runs, engine, version and the oldest price date: what replays this page."""
    first = next(iter(results.values()))
    seeds = {r.seed_entropy for r in results.values()}
    engines = sorted({r.engine for r in results.values()})
    designs = sorted({r.design for r in results.values()})
    rows = [
        ("seed (root entropy)", ", ".join("unknown" if s is None else str(s) for s in seeds)),
        (
            "runs",
            f"{first.runs:,}"
            + (" per option, paired (common random numbers)" if len(results) > 1 else ""),
        ),
        ("engine", ", ".join(engines)),
        ("input design", ", ".join(designs)),
        ("accelsim version", version),
    ]
    if price_list:
        oldest = min(price_list, key=lambda p: p.as_of)
        rows.append(
            (
                "oldest price used",
                f"{oldest.as_of} ({oldest.provider} {oldest.chip} {oldest.pricing})",
            )
        )
    else:
        rows.append(("oldest price used", "no catalog offer (no provider on any pool)"))
    if how:
        rows.append(("reproduce with", how))
    return tuple(rows)


def today() -> str:
    """The date the page is written (UTC)."""
    return datetime.datetime.now(datetime.UTC).date().isoformat()


def measured_lines(results: Iterable[Result]) -> list[str]:
    """One line per calibrated prior the results drew (``extras["calibration"]``, from
    :func:`accelsim.catalog.calibrate`): its name, the measurements behind it, prior against
    posterior, and each flag raised on a measurement; no line twice."""
    lines: list[str] = []
    for res in results:
        for record in res.extras.get("calibration", ()):
            lines.append(f"Calibrated to your measurements: {record['summary']}.")
            lines.extend(f"Flagged measurement: {flag}." for flag in record.get("flags", ()))
    return list(dict.fromkeys(lines))
