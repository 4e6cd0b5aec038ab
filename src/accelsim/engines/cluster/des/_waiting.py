"""What a scheduler sees of a waiting job: its submission, size and where it could run.

Defined apart from the policies (:mod:`._schedulers`, which re-exports them) so that the
cluster's queue index (:mod:`._queue`) can hold them without importing the policies.
"""

from __future__ import annotations

from typing import NamedTuple


class Fit(NamedTuple):
    """Where a waiting job could run: a pool, the chips it would hold there, for how long."""

    pool: int
    chips: int
    """Chips held on this pool (rounded up to whole domains if the job asks). [chips]"""
    hours: float
    """Estimated hours from start to end on this pool, failure-free (restart, writes). [h]"""


class Waiting(NamedTuple):
    """A job in the queue, as a scheduler sees it (tuples order it by submission, then id)."""

    submitted_hours: float
    job_id: int
    chips: int
    priority: int
    fits: tuple[Fit, ...]
    """The pools it may run on, in order of preference, and what it needs on each."""
    preemptible: bool


__all__ = ["Fit", "Waiting"]
