"""Fleet sizing: the chip count of one pool that minimises expected total cost.

:func:`size_fleet` sweeps one pool's ``count`` with common random numbers (every count sees
the same arrivals, durations and prices run for run) and weighs what each count costs:
hardware rises with the chips held, and waiting, priced by
``Assumptions.wait_usd_per_job_hour`` as the ``wait_cost_usd`` line of the TCO, falls as the
queue shortens. The answer is the count of lowest mean TCO, with its uncertainty: the Monte
Carlo error of every mean and the paired-run probability that each count is the cheapest.

Over a mix of workloads (``Scenario.workloads``) the TCO is the fleet's: hardware and
energy of every pool, each workload's engineering, and the queue wait of every job but the
endpoints' replicas; the table shows each stream's or trace's own mean wait.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from accelsim.results import (
    Z95,
    Result,
    Table,
    format_error,
    format_value,
    prob_lowest,
    table_html,
)
from accelsim.scenario import JobStream, Scenario, Trace, workload_name
from accelsim.seeding import SeedLike
from accelsim.study._chunks import DEFAULT_RUNS
from accelsim.study._sweep import SweepResult, sweep

_HEADS = {
    "hardware_cost_usd": "mean hardware",
    "wait_cost_usd": "mean wait cost",
    "credits_usd": "mean credits",
    "mean_wait_hours": "mean wait",
}


def _heads(results: Sequence[Result]) -> dict[str, str]:
    """The table's extra columns every count reports: metric -> heading. A mix shows each
    stream's or trace's mean wait (``<name>.mean_wait_hours``)."""
    heads = dict(_HEADS)
    first = results[0].scenario
    if first is not None and first.workloads is not None:
        for work in first.workloads:
            if isinstance(work, JobStream | Trace):
                name = workload_name(work)
                heads[f"{name}.mean_wait_hours"] = f"mean wait {name}"
    return {m: head for m, head in heads.items() if all(m in r.data for r in results)}


@dataclass(frozen=True)
class FleetSizing:
    """What :func:`size_fleet` found: the best count and how sure that is.

    ``counts``, ``mean_tco_usd``, ``std_error_usd`` and ``prob_cheapest`` are aligned (the
    counts in the order given). ``best_count`` has the lowest mean TCO (ties: the earlier
    count). ``prob_cheapest[i]`` is the share of paired runs in which count ``i`` has the
    lowest TCO of all counts (a run where ``k`` counts tie gives each ``1/k``), so the
    probabilities sum to 1. The full sweep is in ``sweep`` (``sweep.result(i)``).
    """

    path: str
    """The dotted field path swept, e.g. ``"fleet.0.count"``."""
    counts: tuple[int, ...]
    """The chip counts tried, in the order given."""
    best_count: int
    """The count of lowest mean (expected) TCO."""
    mean_tco_usd: tuple[float, ...]
    """Mean TCO per count (hardware, energy and waiting). [USD]"""
    std_error_usd: tuple[float, ...]
    """Monte Carlo standard error of each mean TCO (``Result.std_error``). [USD]"""
    prob_cheapest: tuple[float, ...]
    """Paired-run probability that each count is the cheapest. [fraction]"""
    sweep: SweepResult
    """Every count's runs."""

    def as_table(self) -> Table:
        """:meth:`table` as a :class:`~accelsim.results.Table`."""
        results = self.sweep.results
        heads = _heads(results)
        extra = list(heads)
        rows = []
        for i, count in enumerate(self.counts):
            mean, se = self.mean_tco_usd[i], self.std_error_usd[i]
            row = [
                f"{count:,}" + (" (best)" if count == self.best_count else ""),
                f"{format_value('tco_usd', mean)} ±{format_error('tco_usd', Z95 * se)}",
                *(format_value(m, results[i].mean(m)) for m in extra),
                f"{self.prob_cheapest[i]:.0%}",
            ]
            rows.append(tuple(row))
        runs = results[0].runs
        title = (
            f"{self.path}: mean TCO ±95% MC error over {runs} paired runs; P(cheapest) is the "
            f"share of runs in which the count costs least"
        )
        note = ""
        if "wait_cost_usd" in extra and all(
            not np.any(r.samples("wait_cost_usd")) for r in results
        ):
            note = (
                "Waiting is free here (wait_usd_per_job_hour unset or 0), so the smallest "
                "fleet that runs the work is the cheapest: set a price of waiting to trade "
                "hardware against queue time."
            )
        header = ("chips", "mean TCO", *(heads[m] for m in extra), "P(cheapest)")
        return Table(header, tuple(rows), title, note)

    def table(self) -> str:
        """One row per count: mean TCO ±95 % MC error, its hardware and wait parts, the
        credits that offset it (a negative line, when the scenario has credits), the mean
        queue wait (a mix: each stream's or trace's) and P(cheapest)."""
        return str(self.as_table())

    def _repr_html_(self) -> str:
        """:meth:`table` as an HTML table, for notebooks."""
        return table_html(self.as_table())


def size_fleet(
    scenario: Scenario,
    counts: Sequence[int],
    *,
    pool: int = 0,
    runs: int = DEFAULT_RUNS,
    seed: SeedLike = None,
    **kwargs: Any,
) -> FleetSizing:
    """The chip count of one pool that minimises expected TCO, hardware against waiting.

    Every count is simulated with the same root seed (:func:`sweep` over
    ``fleet.<pool>.count``), so run ``i`` of every count shares its arrivals, durations and
    prices: the differences between counts are not sampling noise of the inputs. A job
    stream's or trace's TCO holds the fleet's hardware and energy and, when the scenario
    prices waiting (``Assumptions.wait_usd_per_job_hour``), the ``wait_cost_usd`` of its
    queue; without that price waiting is free and the smallest count that runs is cheapest.
    Credits (``Scenario.credits``) offset the TCO as the negative ``credits_usd`` line, shown
    in the table as its own column. Over a mix of workloads the TCO is the fleet's (every
    pool's hardware and energy, each workload's engineering, the queue wait of every job but
    an endpoint's replicas); a count too small for a training run's or an endpoint's
    ``chips`` is an invalid sweep point (an error before any run).

    Parameters
    ----------
    scenario : Scenario
        The base scenario (typically a ``JobStream`` or ``Trace`` on a shared fleet, or a
        mix of workloads).
    counts : sequence of int
        The chip counts to try, each > 0, no repeats.
    pool : int
        Index of the pool in ``scenario.fleet`` whose count is swept.
    runs, seed
        As in :func:`simulate`, for every count.
    **kwargs
        Passed to :func:`sweep` (``executor``, ``engine``, ...).

    Returns
    -------
    FleetSizing
        ``best_count`` (lowest mean TCO), the mean TCO and its MC error per count,
        ``prob_cheapest`` per count, ``table()`` and the full ``sweep``.

    Raises
    ------
    ValueError
        No counts, a repeated or non-positive count, a pool index outside the fleet, or any
        error of :func:`sweep` (e.g. a count too small for the stream's largest job).

    Examples
    --------
    >>> import accelsim as acs
    >>> s = acs.Scenario(
    ...     name="research",
    ...     workload=acs.JobStream(interarrival_hours=acs.Exponential(mean=1.0), chips=1,
    ...                            duration_hours=acs.Exponential(mean=1.5)),
    ...     fleet=[acs.Pool(chip="h100-sxm", count=2, provider="aws")],
    ...     horizon_days=3, warmup_days=0.5,
    ...     assumptions=acs.Assumptions(lead_time_days=0, wait_usd_per_job_hour=20.0))
    >>> sizing = acs.size_fleet(s, counts=[2, 3, 4], runs=8, seed=1)
    >>> sizing.counts, sizing.best_count in sizing.counts
    ((2, 3, 4), True)
    >>> round(sum(sizing.prob_cheapest), 9)
    1.0
    """
    counts = tuple(int(c) for c in counts)
    if not counts:
        raise ValueError("size_fleet needs at least one count")
    if len(set(counts)) < len(counts) or min(counts) <= 0:
        raise ValueError(f"counts must be distinct positive chip counts, got {list(counts)}")
    if not 0 <= pool < len(scenario.fleet):
        raise ValueError(
            f"pool={pool} is not a pool of scenario {scenario.name!r}, which has "
            f"{len(scenario.fleet)} (indices 0 to {len(scenario.fleet) - 1})"
        )
    path = f"fleet.{pool}.count"
    sw = sweep(scenario, {path: list(counts)}, runs=runs, seed=seed, metrics=("tco_usd",), **kwargs)
    prob = prob_lowest(np.stack([r.samples("tco_usd") for r in sw.results]))
    means = tuple(r.mean("tco_usd") for r in sw.results)
    best = counts[int(np.argmin(means))]
    errors = tuple(r.std_error("tco_usd") for r in sw.results)
    return FleetSizing(path, counts, best, means, errors, tuple(float(p) for p in prob), sw)


__all__ = ["FleetSizing", "size_fleet"]
