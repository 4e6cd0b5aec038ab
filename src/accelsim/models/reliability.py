"""Failures, checkpoints and restarts: interruption rates, checkpoint intervals, run time.

The model behind every function here (Daly 2006; Bougeret et al. 2011): interruptions form a
Poisson process of rate ``lambda`` [1/h] over the whole wall-clock time of the job. The work
``W`` is cut into ``n = floor(W / tau)`` full segments of ``tau`` hours of work and, when
``tau`` does not divide ``W``, one last partial segment of ``r = W - n * tau`` hours (a
quotient ``W / tau`` within 1e-12, relative, of a positive integer counts as that integer, so
float rounding never adds a near-empty segment). Every segment, the last one included (the
final save of the trained model), ends with a checkpoint write of ``C`` hours, so a segment
of work ``s`` needs ``s + C`` failure-free hours. An interruption during work or write loses
everything since the segment began; the job then restarts, which takes ``R`` hours and can
itself be interrupted (the restart then begins again). Each interruption -- in work, write or
restart -- counts once. There is no further downtime; a repair time can be folded into
``R``. One segment of work ``s`` then takes, on average,
``exp(lambda * R) * (exp(lambda * (s + C)) - 1) / lambda`` hours.
"""

from __future__ import annotations

from accelsim.models._reliability_expected import (
    checkpoint_segments,
    expected_completion_hours,
    expected_interruptions,
    goodput_fraction,
)
from accelsim.models._reliability_rates import (
    daly_interval_hours,
    interruption_rate_per_hour,
    preemption_events_per_hour,
    young_interval_hours,
)
from accelsim.models._reliability_sampling import sample_completion_hours

__all__ = [
    "checkpoint_segments",
    "daly_interval_hours",
    "expected_completion_hours",
    "expected_interruptions",
    "goodput_fraction",
    "interruption_rate_per_hour",
    "preemption_events_per_hour",
    "sample_completion_hours",
    "young_interval_hours",
]
