"""What the DES engine simulates: pools of chips and the jobs submitted to them.

Plain immutable records, so the engine can run without a :class:`~accelsim.scenario.Scenario`
(the study layer adapts a scenario into these). A pool checks its ranges at construction;
a job, when it enters the engine (:func:`check_job`), once.

Times are hours from the start of the simulation. Work is measured in *speed-1 hours*: the
failure-free wall time a job needs on a pool of ``speed == 1`` (by convention the first pool),
so on a pool of speed ``s`` it takes ``work_hours / s`` hours of compute.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from accelsim._typing import FloatArray

Sampler = Callable[[np.random.Generator, int], FloatArray]
"""``sampler(rng, n)`` returns ``n`` draws; an ``accelsim.dists`` type's bound ``.sample`` fits."""


_INF = math.inf


def _require(ok: bool, what: str, message: str) -> None:
    if not ok:
        raise ValueError(f"{what}: {message}")


@dataclass(frozen=True, slots=True)
class PoolSpec:
    """One pool of identical chips: capacity, speed and how it loses chips.

    Parameters
    ----------
    name : str
        Label used in results.
    chips : int
        Chips in the pool once delivered. [chips]
    domain_chips : int
        Chips per scale-up domain (NVLink node, TPU slice); a job with ``whole_domains``
        is allocated a multiple of it. [chips]
    speed : float
        Throughput relative to the first pool; compute durations scale by ``1 / speed``.
        [fraction]
    failure_rate_per_chip_hour : float
        Rate at which each up chip fails (busy or idle). [1/h]
    preemptions_per_chip_hour : float
        Rate at which each up chip is taken back by the provider (spot capacity). [1/h]
    lead_time_hours : float
        Time until the pool's chips are delivered (procurement or quota wait). [h]
    repair_hours : Sampler or None
        Draws how long a failed chip stays down; ``None``: at once (a hot spare takes its
        place, so a failure interrupts the job on it but never shrinks the pool). [h]
    preemption_return_hours : Sampler or None
        Draws how long preempted capacity stays away; ``None``: at once. [h]
    slice_sizes : tuple of int
        Valid slice sizes (TPU topologies); when given, or with ``slice_multiple``, a job
        with ``whole_domains`` gets the smallest valid slice instead of whole domains. [chips]
    slice_multiple : int
        Above ``slice_sizes``, any multiple of this is a valid slice; 0: none. [chips]
    """

    name: str
    chips: int
    domain_chips: int = 1
    speed: float = 1.0
    failure_rate_per_chip_hour: float = 0.0
    preemptions_per_chip_hour: float = 0.0
    lead_time_hours: float = 0.0
    repair_hours: Sampler | None = None
    preemption_return_hours: Sampler | None = None
    slice_sizes: tuple[int, ...] = ()
    slice_multiple: int = 0

    def __post_init__(self) -> None:
        what = f"pool {self.name!r}"
        _require(self.chips >= 1, what, f"chips must be >= 1, got {self.chips}")
        _require(
            self.domain_chips >= 1, what, f"domain_chips must be >= 1, got {self.domain_chips}"
        )
        _require(
            math.isfinite(self.speed) and self.speed > 0,
            what,
            f"speed must be > 0, got {self.speed}",
        )
        for name in ("failure_rate_per_chip_hour", "preemptions_per_chip_hour", "lead_time_hours"):
            value = getattr(self, name)
            _require(math.isfinite(value) and value >= 0, what, f"{name} must be >= 0, got {value}")

    def allocation_chips(self, chips: int, whole_domains: bool) -> int:
        """Chips a job of ``chips`` holds here: whole domains or the smallest valid slice. [chips]

        A job that asks for whole domains gets the smallest valid TPU slice that holds it
        when the pool has slice shapes, else its chips rounded up to whole domains.

        Examples
        --------
        >>> PoolSpec("p", chips=64, domain_chips=8).allocation_chips(12, whole_domains=True)
        16
        >>> tpu = PoolSpec("v5p", chips=512, slice_sizes=(4, 8, 16, 32), slice_multiple=64)
        >>> [tpu.allocation_chips(n, whole_domains=True) for n in (3, 20, 40, 65)]
        [4, 32, 64, 128]
        """
        if not whole_domains:
            return chips
        if self.slice_sizes or self.slice_multiple:
            fits = [s for s in self.slice_sizes if s >= chips]
            if self.slice_multiple:
                fits.append(-(-chips // self.slice_multiple) * self.slice_multiple)
            # No valid slice holds the job: more chips than any slice (the pool is the cap).
            return min(fits) if fits else self.chips + 1
        return -(-chips // self.domain_chips) * self.domain_chips


class JobSpec(NamedTuple):
    """One gang-scheduled job: it needs all its chips at once, within one pool.

    Immutable. A ``NamedTuple`` rather than a frozen dataclass because a stream builds one
    per job: it is ten times cheaper to create (a frozen dataclass sets each field through
    ``object.__setattr__``). Its ranges are checked by :func:`check_job` when it enters the
    engine, once per job.

    Parameters
    ----------
    job_id : int
        Unique id; breaks ties between jobs submitted at the same time.
    submit_hours : float
        Submission time. [h]
    chips : int
        Chips the job computes on. [chips]
    work_hours : float
        Failure-free compute time on a speed-1 pool. [h]
    priority : int
        Larger runs first under the ``priority`` schedulers.
    pools : tuple of int or None
        Indices of the pools the job may run on, in order of preference; ``None``: any,
        in index order.
    estimate_hours : float or None
        The user's runtime estimate on a speed-1 pool, for backfilling; ``None``:
        ``work_hours`` (exact estimates). [h]
    whole_domains : bool
        Allocate whole scale-up domains (see :meth:`PoolSpec.allocation_chips`).
    checkpoint_interval_hours : float or None
        Compute time between checkpoints; ``None``: only the final save, so an
        interruption loses all progress of the attempt. [h]
    checkpoint_write_hours : float
        Time to write one checkpoint (the final save included), during which the job
        computes nothing. [h]
    restart_hours : float
        Time to restart after an interruption, before computing again. [h]
    preemptible : bool
        Whether ``priority_preemptive`` may evict it for a higher-priority job.
    """

    job_id: int
    submit_hours: float
    chips: int
    work_hours: float
    priority: int = 0
    pools: tuple[int, ...] | None = None
    estimate_hours: float | None = None
    whole_domains: bool = False
    checkpoint_interval_hours: float | None = None
    checkpoint_write_hours: float = 0.0
    restart_hours: float = 0.0
    preemptible: bool = True


def check_job(job: JobSpec) -> None:
    """Raise ``ValueError`` naming the job and field if a job spec is out of range.

    Examples
    --------
    >>> check_job(JobSpec(3, 0.0, chips=0, work_hours=1.0))
    Traceback (most recent call last):
    ...
    ValueError: job 3: chips must be >= 1, got 0
    """
    # One combined test on locals (unpacking is cheaper than attribute access), on the hot
    # path; the detailed messages only when it fails.
    _, submit, chips, work, _, pools, est, _, tau, write, restart, _ = job
    if (
        chips >= 1
        and 0.0 <= submit < _INF
        and 0.0 < work < _INF
        and (est is None or est > 0.0)
        and (tau is None or tau > 0.0)
        and write >= 0.0
        and restart >= 0.0
        and (pools is None or len(pools) > 0)
    ):
        return
    what = f"job {job.job_id}"
    _require(job.chips >= 1, what, f"chips must be >= 1, got {job.chips}")
    for name in ("submit_hours", "work_hours"):
        value = getattr(job, name)
        _require(math.isfinite(value) and value >= 0, what, f"{name} must be >= 0, got {value}")
    _require(job.work_hours > 0, what, f"work_hours must be > 0, got {job.work_hours}")
    for name in ("estimate_hours", "checkpoint_interval_hours"):
        value = getattr(job, name)
        _require(value is None or value > 0, what, f"{name} must be > 0 or None, got {value}")
    _require(
        job.checkpoint_write_hours >= 0 and job.restart_hours >= 0,
        what,
        "checkpoint_write_hours and restart_hours must be >= 0",
    )
    _require(False, what, "pools must be None or non-empty")


__all__ = ["JobSpec", "PoolSpec", "Sampler", "check_job"]
