"""Output-length laws of the MLPerf LLM benchmarks for the serving calibration (an extra,
with :mod:`accelsim.serving_calibration`).

MLPerf publishes each benchmark's mean output length only, while a Server or Interactive
row's p99 TPOT is set by its short requests (a request of ``n`` tokens averages ``n − 1``
gaps, so one prefill stall weighs more on a short one). ``mlperf_output_lengths.csv``
beside the validation set holds each benchmark's law, from the generated outputs of every
submission's TEST06 compliance run (``benchmarks/mlperf_output_lengths.py`` writes it; its
README section says which logs): quantiles of the length over its mean at 200 levels. A row
of that benchmark scales them to its own measured mean output and takes the fast path's
nodes of that law (:func:`accelsim.engines.serving.length_nodes`, the engines' own
rule). Rows of other sources keep their stated fixed lengths.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from accelsim._typing import FloatArray
from accelsim.dists import Choice
from accelsim.engines.serving import length_nodes

OUTPUTS_FILE = "mlperf_output_lengths.csv"
"""The laws' file name, beside the validation set."""

BENCHMARK_OF_PRESET = {
    "llama-2-70b": "llama2-70b",
    "llama-3.1-405b": "llama3.1-405b",
    "llama-3.1-8b": "llama3.1-8b",
    "mixtral-8x7b": "mixtral-8x7b",
    "deepseek-r1": "deepseek-r1",
}
"""Model preset of an MLPerf row -> its benchmark's name in the laws' file."""

Laws = dict[str, FloatArray]
"""Each benchmark's output length over its mean at the file's quantile levels. [ratio]"""


def load_output_laws(path: str | Path) -> Laws:
    """The laws in ``path``, by benchmark; none when the file does not exist."""
    if not Path(path).exists():
        return {}
    laws: dict[str, list[float]] = {}
    with open(path, newline="", encoding="utf-8") as handle:
        for r in csv.DictReader(handle):
            laws.setdefault(r["benchmark"], []).append(float(r["relative_length"]))
    return {name: np.asarray(values) for name, values in laws.items()}


def row_output_law(
    row: dict[str, str], preset: str, mean_output: float, laws: Laws
) -> dict[str, FloatArray]:
    """The ``output_nodes`` [tokens] and ``output_weights`` [fraction] of an MLPerf row's
    output law at its measured ``mean_output`` [tokens], as keywords of
    :func:`accelsim.models.serving.slo_capacity_rps`; empty (fixed lengths) for a row not
    from MLPerf or of a benchmark without a law."""
    name = BENCHMARK_OF_PRESET.get(preset)
    if not row["benchmark"].startswith("MLPerf Inference") or name not in laws:
        return {}
    relative = laws[name] / laws[name].mean()  # the levels' mean is the law's to ~1e-3
    law = Choice(values=[float(v) for v in np.maximum(relative * mean_output, 1.0)])
    nodes, weights = length_nodes(law, max_tokens=float(np.max(relative) * mean_output) + 1.0)
    return {"output_nodes": nodes, "output_weights": weights}


__all__ = ["BENCHMARK_OF_PRESET", "OUTPUTS_FILE", "Laws", "load_output_laws", "row_output_law"]
