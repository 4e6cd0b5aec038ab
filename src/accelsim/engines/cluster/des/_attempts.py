"""The layout of one attempt of a job, from the model of :mod:`accelsim.models.reliability`.

An attempt is the restart (after an interruption only), then segments of
``checkpoint_interval_hours`` of compute, each followed by a checkpoint write, the last
segment (partial or not) included. These scalar functions give its failure-free length and
what it has done and saved after a given time, so the engine computes lost work at an
interruption instead of stepping through checkpoints. They are plain Python on floats
(numpy would cost microseconds per call on the engine's hot path), but the cut of the work
into segments is :func:`accelsim.models.reliability.checkpoint_segments`, the rule the
analytic engine uses, called once per attempt; the tests hold them to
``reliability.expected_completion_hours`` at zero failure rate.
"""

from __future__ import annotations

import math

from accelsim.models.reliability import checkpoint_segments


def segments(compute_hours: float, interval_hours: float | None) -> tuple[int, float, float]:
    """(full segments, interval, partial last segment) of an attempt's compute. [-, h, h]

    Examples
    --------
    >>> segments(10.0, 4.0)
    (2, 4.0, 2.0)
    >>> segments(10.0, None)
    (0, 0.0, 10.0)
    """
    tau = math.inf if interval_hours is None else interval_hours
    full, interval, partial = checkpoint_segments(compute_hours, tau)
    return int(full), float(interval), float(partial)


def attempt_hours(
    restart_hours: float, full: int, interval_hours: float, partial_hours: float, write_hours: float
) -> float:
    """Failure-free duration of an attempt: restart, then every segment and its write. [h]"""
    last = partial_hours + write_hours if partial_hours > 0.0 else 0.0
    return restart_hours + full * (interval_hours + write_hours) + last


def progress(
    elapsed_hours: float,
    restart_hours: float,
    full: int,
    interval_hours: float,
    partial_hours: float,
    write_hours: float,
) -> tuple[float, float]:
    """(compute done, compute saved by completed writes) ``elapsed_hours`` into an attempt. [h]

    Examples
    --------
    >>> progress(9.0, 1.0, 2, 3.0, 1.0, 0.5)  # restart 1 h, 3.5 h per segment: 2 saved
    (7.0, 6.0)
    """
    x = elapsed_hours - restart_hours
    if x <= 0.0:
        return 0.0, 0.0
    k = min(full, int(x // (interval_hours + write_hours))) if full else 0
    saved = k * interval_hours
    rest = x - k * (interval_hours + write_hours)
    return saved + min(rest, interval_hours if k < full else partial_hours), saved


__all__ = ["attempt_hours", "progress", "segments"]
