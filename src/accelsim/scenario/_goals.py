"""What an option must achieve (:class:`Goals`)."""

from __future__ import annotations

from pydantic import (
    Field,
    model_validator,
)

from accelsim.scenario._common import _Model


class Goals(_Model):
    """What an option must achieve, and how sure the study must be that it does.

    Each goal is optional and reads one metric, whatever the workload (an option whose
    result lacks the metric is an error naming the goal, the option and the metric):

    ==================  ======================  =======  ===================================
    goal                metric                  met if   applies to
    ==================  ======================  =======  ===================================
    ``deadline_days``   ``time_to_train_days``  ``<=``   training runs (serving and streams
                                                         have no end date: an error)
    ``budget_usd``      ``tco_usd``             ``<=``   every workload
    ``slo_attainment``  ``slo_attainment``      ``>=``   serving
    ``max_wait_hours``  ``mean_wait_hours``     ``<=``   job streams, traces, a training
                                                         run's shared fleet
    ``max_p95_wait_``   ``p95_wait_hours``      ``<=``   job streams and traces: the wait
    ``hours``                                            95 % of jobs stay under, what
                                                         planners usually size on
    ==================  ======================  =======  ===================================

    A run with ``finished == 0`` (when the metric is present) never meets a deadline, and a
    run whose metric is not a number meets no goal on it. An option *meets the goals* when
    the share of its runs meeting all of them at once is at least ``confidence``. On a mix
    of workloads each goal applies to every workload of its kind (the deadline to each
    training run, the SLO to each endpoint, the wait limit to each stream or trace), the
    budget to the fleet's ``tco_usd`` (:mod:`accelsim.results._goals`).

    Examples
    --------
    >>> Goals(deadline_days=120, budget_usd=4e6, confidence=0.9).names
    ('deadline_days', 'budget_usd')
    """

    deadline_days: float | None = Field(default=None, gt=0)
    """Latest time to a trained model, from the decision [d]."""
    budget_usd: float | None = Field(default=None, gt=0)
    """Largest total cost of ownership [USD]."""
    slo_attainment: float | None = Field(default=None, gt=0, le=1)
    """Smallest share of requests meeting the serving SLO [fraction]."""
    max_wait_hours: float | None = Field(default=None, ge=0)
    """Largest mean queue wait of a job stream's jobs [h]."""
    max_p95_wait_hours: float | None = Field(default=None, ge=0)
    """Largest 95th percentile of a job stream's queue waits, over its jobs [h]."""
    confidence: float = Field(default=0.9, gt=0, lt=1)
    """Smallest share of runs that must meet every goal at once [fraction]."""

    @model_validator(mode="after")
    def _some_goal(self) -> Goals:
        if not self.names:
            raise ValueError(
                "Goals needs at least one of deadline_days, budget_usd, slo_attainment, "
                "max_wait_hours, max_p95_wait_hours"
            )
        return self

    @property
    def names(self) -> tuple[str, ...]:
        """The goals set, in field order (``confidence`` is not a goal)."""
        goals = (
            "deadline_days",
            "budget_usd",
            "slo_attainment",
            "max_wait_hours",
            "max_p95_wait_hours",
        )
        return tuple(g for g in goals if getattr(self, g) is not None)
