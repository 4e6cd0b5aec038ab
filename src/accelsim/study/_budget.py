"""A study's memory, estimated before it runs and refused above a stated limit.

A study holds every run's metrics and inputs in memory (one float64 per value, runs x values
x 8 bytes; per-job records and utilisation series on top where asked). Measured on the
analytic engine the peak is that figure plus one chunk, so it is a fair estimate. A study
whose estimate is over :func:`accelsim.engines.memory_limit_bytes` is refused before any
chunk runs, with the figure and the largest number of runs that fits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from accelsim import engines
from accelsim.engines import MEMORY_FRACTION, format_bytes
from accelsim.errors import AccelsimError

PROBE_FREE_VALUES = 1024
"""Values per run assumed without a probe: studies whose runs x this x 8 bytes fit the
limit run without the one-run probe that measures the real figure (typically 30 to 100)."""


def _per_run_bytes(part: tuple[object, ...]) -> int:
    """Bytes one run of a probe chunk holds: every array of its metrics, inputs and kept
    records (per-job rows, series), all of which grow with the runs. [B]"""
    total = 0
    for item in part:
        mappings = item if isinstance(item, list) else [item]
        for mapping in mappings:
            if isinstance(mapping, dict):
                total += sum(int(np.asarray(v).nbytes) for v in mapping.values())
    return max(total, 8)


def check_study_memory(runs: int, probe: Callable[[], tuple[object, ...]], what: str) -> None:
    """Refuse a study of ``runs`` runs whose arrays would pass the memory limit
    (:func:`accelsim.engines.memory_limit_bytes`).

    ``probe`` runs one run and returns its chunk (metrics, inputs, kept records); it is
    called only where ``runs`` x :data:`PROBE_FREE_VALUES` x 8 bytes is over the limit, so
    ordinary studies pay nothing. ``what`` names the runs in the message (e.g. ``runs``).

    Raises
    ------
    AccelsimError
        With the estimate, the limit and the largest number of runs that fits.
    """
    limit = engines.memory_limit_bytes()
    if runs * PROBE_FREE_VALUES * 8 <= limit:
        return
    per_run = _per_run_bytes(probe())
    need = runs * per_run
    if need <= limit:
        return
    raise AccelsimError(
        f"{what}={runs:,} would hold about {format_bytes(need)} in memory ({per_run:,} bytes per "
        f"run), over the {format_bytes(limit)} a study may use ({MEMORY_FRACTION:.0%} of this "
        f"process's memory): use at most {limit // per_run:,} runs"
    )


def check_studies_memory(
    studies: Sequence[tuple[str, int, Callable[[], tuple[object, ...]]]], what: str
) -> None:
    """Refuse several studies held at once (a comparison's options, a sweep's points) whose
    arrays together would pass the memory limit, before any of them runs.

    ``studies`` gives each study's name, runs and probe (as for :func:`check_study_memory`);
    the probes run only where the runs together x :data:`PROBE_FREE_VALUES` x 8 bytes are
    over the limit. ``what`` names them (e.g. ``options of the comparison``).

    Raises
    ------
    AccelsimError
        With the estimate, the largest study's share of it, and the limit.
    """
    limit = engines.memory_limit_bytes()
    if sum(runs for _, runs, _ in studies) * PROBE_FREE_VALUES * 8 <= limit:
        return
    needs = [(runs * _per_run_bytes(probe()), name, runs) for name, runs, probe in studies]
    need = sum(n for n, _, _ in needs)
    if need <= limit:
        return
    largest, name, runs = max(needs)
    raise AccelsimError(
        f"the {len(studies)} {what} would hold about {format_bytes(need)} in memory at once "
        f"(the largest, {name!r}, {format_bytes(largest)} for {runs:,} runs), over the "
        f"{format_bytes(limit)} a study may use ({MEMORY_FRACTION:.0%} of this process's "
        f"memory): use fewer runs, fewer options or points, or run them one at a time with "
        f"a store each"
    )


__all__ = ["PROBE_FREE_VALUES", "check_studies_memory", "check_study_memory"]
