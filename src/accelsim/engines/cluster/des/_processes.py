"""The sources of state changes: job arrivals, pool deliveries, chip failures and preemptions.

Each is a small object that schedules its next event with a callback (no generator per job)
and tells the :class:`~accelsim.engines.cluster.des._cluster.Cluster` what happened. Random
draws come in blocks from the process's own addressed generator, so adding a source never shifts the
draws of another.

Failures and preemptions use *thinning*: strikes come at the constant rate ``chips * rate``
and hit a uniformly random chip of the whole pool; a strike on a chip that is already down
does nothing. Since each up chip is then struck at rate ``rate`` and the exponential clock
is memoryless, this is exactly "each up chip fails independently at ``rate``", without
resampling a clock whenever the number of up chips changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import cast

import numpy as np
from simpy.events import Event

from accelsim.engines.cluster.des._cluster import Cluster, wakeup
from accelsim.engines.cluster.des._records import Cause
from accelsim.engines.cluster.des._specs import JobSpec, Sampler, check_job

BLOCK = 4096
"""Draws per block from a process's generator."""


class Arrivals:
    """Feeds jobs to the cluster at their submission times, one pending event at a time.

    The input may be a lazy iterator: only the next job is held, so memory does not grow with
    the number of jobs. Jobs must come in non-decreasing submission time; those submitted at
    the same instant are queued together before the policy is called once.
    """

    def __init__(self, cluster: Cluster, jobs: Iterable[JobSpec], horizon_hours: float) -> None:
        self._cluster = cluster
        self._jobs: Iterator[JobSpec] = iter(jobs)
        self._horizon = horizon_hours
        self._last = 0.0
        self._callback = self._on_arrival

    def start(self) -> None:
        """Schedule the first arrival."""
        self._schedule(next(self._jobs, None))

    def _schedule(self, spec: JobSpec | None) -> None:
        if spec is None or spec.submit_hours >= self._horizon:
            return
        if not spec.submit_hours >= self._last:  # also catches nan
            check_job(spec)  # a bad time gets its own message first
            raise ValueError(
                f"jobs must come in order of submission: job {spec.job_id} is submitted at "
                f"{spec.submit_hours} h, after a job submitted at {self._last} h"
            )
        self._last = spec.submit_hours
        env = self._cluster.env
        wakeup(env, spec.submit_hours - env.now, self._callback, spec)

    def _on_arrival(self, event: Event) -> None:
        spec = cast(JobSpec, event.value)
        cluster = self._cluster
        cluster.submit(spec)
        nxt = next(self._jobs, None)
        while nxt is not None and nxt.submit_hours == spec.submit_hours:
            cluster.submit(nxt)
            nxt = next(self._jobs, None)
        cluster.dispatch()
        self._schedule(nxt)


class Strikes:
    """Failures (or preemptions) of one pool's chips, and the repairs (or returns) after them.

    Parameters
    ----------
    cluster : Cluster
        The cluster to tell.
    pool : int
        Pool index.
    rate_per_chip_hour : float
        Strikes per up chip per hour (> 0). [1/h]
    cause : {"failure", "preemption"}
        What a strike is.
    rng : numpy.random.Generator
        Draws strike times and positions.
    down_hours : Sampler or None
        Draws how long a struck chip stays down; ``None``: it does not go down.
    down_rng : numpy.random.Generator
        Draws for ``down_hours`` (its own stream, so repairs never shift strike times).
    """

    def __init__(
        self,
        cluster: Cluster,
        pool: int,
        rate_per_chip_hour: float,
        cause: Cause,
        rng: np.random.Generator,
        down_hours: Sampler | None,
        down_rng: np.random.Generator,
    ) -> None:
        self._cluster = cluster
        self._pool = pool
        self._chips = cluster.pools[pool].chips
        self._mean_gap_hours = 1.0 / (rate_per_chip_hour * self._chips)
        self._cause = cause
        self._rng = rng
        self._down_hours = down_hours
        self._down_rng = down_rng
        self._gaps: list[float] = []
        self._positions: list[int] = []
        self._downs: list[float] = []
        self._strike_callback = self._on_strike
        self._back_callback = self._on_back

    def start(self, delay_hours: float) -> None:
        """Begin striking ``delay_hours`` from now (when the pool is delivered)."""
        wakeup(self._cluster.env, delay_hours + self._gap(), self._strike_callback, None)

    def _gap(self) -> float:
        if not self._gaps:
            self._gaps = self._rng.exponential(self._mean_gap_hours, BLOCK).tolist()[::-1]
            self._positions = self._rng.integers(0, self._chips, BLOCK).tolist()[::-1]
        return self._gaps.pop()

    def _on_strike(self, event: Event) -> None:
        position = self._positions.pop()  # drawn with the gap that led here
        stays_down = self._down_hours is not None
        struck = self._cluster.chip_down(self._pool, position, self._cause, stays_down)
        if struck and stays_down:
            wakeup(self._cluster.env, self._down(), self._back_callback, None)
        wakeup(self._cluster.env, self._gap(), self._strike_callback, None)

    def _down(self) -> float:
        if not self._downs:
            assert self._down_hours is not None
            block = np.asarray(self._down_hours(self._down_rng, BLOCK), dtype=float)
            if block.shape != (BLOCK,) or not np.all(block >= 0.0):
                raise ValueError(
                    f"the {self._cause} down-time sampler of pool {self._pool} must return "
                    f"{BLOCK} non-negative hours, got shape {block.shape}, min {block.min()}"
                )
            self._downs = block.tolist()[::-1]
        return self._downs.pop()

    def _on_back(self, event: Event) -> None:
        self._cluster.chip_up(self._pool, self._cause)


class Delivery:
    """A pool's chips arrive after its lead time."""

    def __init__(self, cluster: Cluster, pool: int) -> None:
        self._cluster = cluster
        self._pool = pool

    def start(self, delay_hours: float) -> None:
        """Deliver now (``delay_hours == 0``) or schedule the delivery."""
        if delay_hours == 0.0:
            self._cluster.deliver(self._pool)
        else:
            wakeup(self._cluster.env, delay_hours, self._on_delivery, None)

    def _on_delivery(self, event: Event) -> None:
        self._cluster.deliver(self._pool)


__all__ = ["BLOCK", "Arrivals", "Delivery", "Strikes"]
