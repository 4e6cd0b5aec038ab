"""Peers' errors beside the serving calibration's, on the same rows (issue 28, item 4).

The peers (NVIDIA aiconfigurator, GenZ) are run by ``benchmarks/peers_serving.py``, outside
the package, which writes ``tests/validation/data/serving_peers.csv``: one line per (peer,
row) with the peer's version, its per-chip output tokens/s, or the reason it cannot express the
row. This module only reads that committed file, so the calibration page never needs the
peers installed. For each peer and class the page gives the median |error| of the peer and of
our P50 over the rated rows the peer expresses, so the two are compared on the same rows.
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from accelsim._calibration_stats import Rated, class_scores

HARNESS_COMMAND = (
    "PYTHONPATH=/tmp/peers python benchmarks/peers_serving.py "
    "tests/validation/data/inference.csv tests/validation/data/serving_peers.csv"
)
"""How the committed peers file was produced (after ``pip install --target /tmp/peers``)."""

PEERS_FILE = "serving_peers.csv"
"""The peers file's name, beside the inference validation set."""


@dataclass(frozen=True)
class PeerRow:
    """One peer's outcome on one validation row, as the harness wrote it."""

    peer: str
    version: str
    """Package and version, e.g. ``aiconfigurator 0.12.0``."""
    id: str
    predicted: float | None
    """Per-chip output tokens/s, or None when the peer cannot express the row. [tokens/s]"""
    published: float
    """The row's published per-chip figure, as the harness read it. [tokens/s]"""
    config: str
    note: str
    """Why the row is not expressed (empty when it is)."""


def load_peers(path: str | Path) -> list[PeerRow]:
    """The peers file's rows; none when the file does not exist."""
    if not Path(path).exists():
        return []
    with open(path, newline="", encoding="utf-8") as handle:
        return [
            PeerRow(
                r["peer"],
                r["peer_version"],
                r["id"],
                float(r["predicted_per_chip"]) if r["status"] == "ok" else None,
                float(r["published_per_chip"]),
                r["config"],
                r["note"],
            )
            for r in csv.DictReader(handle)
        ]


def _median_error(pairs: Sequence[tuple[float, float]]) -> float:
    """Median of |predicted / published − 1| over (predicted, published) pairs. [fraction]"""
    return float(np.median([abs(p / q - 1.0) for p, q in pairs]))


def _class_table(rated: dict[str, Rated], peers: Sequence[PeerRow], names: list[str]) -> list[str]:
    header = "| class | " + " | ".join(f"{n} rows | {n} | ours, same rows" for n in names) + " |"
    lines = [header, "|---|" + "---:|---:|---:|" * len(names)]
    classes = [c.name for c in class_scores(list(rated.values()))][1:]
    for cls in ["all rows", *classes]:
        cells = []
        for name in names:
            mine = [
                p
                for p in peers
                if p.peer == name
                and p.predicted is not None
                and p.id in rated
                and (cls == "all rows" or cls in rated[p.id].classes)
            ]
            if not mine:
                cells.append("0 | - | -")
                continue
            theirs = _median_error([(p.predicted or 0.0, rated[p.id].published) for p in mine])
            ours = _median_error([(rated[p.id].p50, rated[p.id].published) for p in mine])
            cells.append(f"{len(mine)} | {100 * theirs:.1f} % | {100 * ours:.1f} %")
        lines.append(f"| {cls} | " + " | ".join(cells) + " |")
    return lines


def _reasons(peers: Sequence[PeerRow], name: str, rated: dict[str, Rated]) -> str:
    counts = Counter(
        ":".join(p.note.split(":")[:2]) if p.note.startswith("error") else p.note
        for p in peers
        if p.peer == name and p.predicted is None and p.id in rated
    )
    return "; ".join(f"{why} ({n})" for why, n in sorted(counts.items())) or "none"


def peer_lines(results: Sequence[Rated], peers: Sequence[PeerRow]) -> list[str]:
    """The page's peers section (empty when there is no peers file)."""
    if not peers:
        return []
    rated = {r.id: r for r in results if r.kind in ("throughput", "slo_rate")}
    names = list(dict.fromkeys(p.peer for p in peers))
    versions = ", ".join(dict.fromkeys(p.version for p in peers))
    lines = [
        "## Peers on the same rows",
        "",
        f"Peers: {versions}, run offline on every rated row they can express by "
        f"`{HARNESS_COMMAND}` (the harness's docstring says how each is used; nothing is "
        f"fitted to the rows). The page reads the committed `{PEERS_FILE}`. Each cell pair "
        "is the median |error| of the peer's prediction and of our P50 over the same rows; "
        "a peer gives a point, not an interval.",
        "",
        *_class_table(rated, peers, names),
        "",
    ]
    lines += [f"- Rated rows {n} does not express: {_reasons(peers, n, rated)}." for n in names]
    lines += ["", "| row | published | ours P50 | " + " | ".join(names) + " |"]
    lines.append("|---|---:|---:|" + "---:|" * len(names))
    by_key = {(p.peer, p.id): p for p in peers}
    for row_id, r in rated.items():
        got = [by_key.get((n, row_id)) for n in names]
        if all(g is None or g.predicted is None for g in got):
            continue
        cells = [f"{g.predicted:,.4g}" if g and g.predicted else "-" for g in got]
        head = f"| `{row_id}` | {r.published:,.4g} | {r.p50:,.4g} | "
        lines.append(head + " | ".join(cells) + " |")
    return [*lines, ""]


__all__ = ["HARNESS_COMMAND", "PEERS_FILE", "PeerRow", "load_peers", "peer_lines"]
