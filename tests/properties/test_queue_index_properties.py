"""The cluster's queue index changes no decision (issue 33 item 4), over any snapshot.

Over the generated snapshots of ``test_scheduler_decisions`` (1-3 pools, preference lists,
domain rounding, estimates that tie and overrun, mixed priorities, running jobs), every
policy that reads the index (the cluster's, or one it builds from a bare snapshot's queue)
decides exactly as the same policy sorting the queue itself
(``tests/oracles/sorted_schedulers.py``, the code before the index): the same starts and
evictions, in the same order (the order the cluster applies them in).
"""

from __future__ import annotations

from hypothesis import given
from tests.oracles import sorted_schedulers
from tests.properties.test_scheduler_decisions import snapshots

from accelsim.engines.cluster.des._queue import QueueIndex
from accelsim.engines.cluster.des._schedulers import (
    INDEXED_BY_PRIORITY,
    INDEXED_BY_SHAPE,
    SCHEDULERS,
    QueueSnapshot,
)


@given(snapshots())
def test_every_indexed_policy_decides_as_the_sorting_one(snap: QueueSnapshot) -> None:
    for name, policy in SCHEDULERS.items():
        by_priority, by_shape = policy in INDEXED_BY_PRIORITY, policy in INDEXED_BY_SHAPE
        if not (by_priority or by_shape):
            continue
        index = QueueIndex(by_priority=by_priority, by_shape=by_shape)
        for job in snap.pending:
            index.add(job)
        reference = sorted_schedulers.SCHEDULERS[name](snap)
        assert policy(snap._replace(queue_index=index)) == reference, name
        assert policy(snap) == reference, name  # an index built from the snapshot's queue


@given(snapshots())
def test_the_index_empties_as_jobs_leave(snap: QueueSnapshot) -> None:
    """Adding then removing every job (in any order) leaves no priority or shape behind."""
    index = QueueIndex(by_priority=True, by_shape=True)
    for job in reversed(snap.pending):
        index.add(job)
    assert list(index.in_priority_order()) == sorted(
        snap.pending, key=lambda j: (-j.priority, j.submitted_hours, j.job_id)
    )
    for job in snap.pending:
        index.remove(job)
    assert list(index.in_priority_order()) == []
    assert index.groups() == []
    assert index.sizes() == []
