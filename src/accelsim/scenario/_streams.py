"""Streams of jobs: synthetic arrivals (:class:`JobStream`) and replayed traces (:class:`Trace`)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from accelsim import catalog
from accelsim.dists import Uncertain, as_dist
from accelsim.errors import AccelsimError
from accelsim.scenario._common import (
    _MIN_MEAN_INTERARRIVAL_HOURS,
    MIX_NAME_PATTERN,
    Framework,
    _check_range,
    _Model,
)


class JobStream(_Model):
    """Synthetic job arrivals for a shared cluster (durations are on the first pool's chip)."""

    kind: Literal["job_stream"] = "job_stream"
    interarrival_hours: Uncertain
    """Time between arrivals [h]; an ``Exponential`` makes a Poisson stream."""
    chips: Uncertain
    """Chips per job [count], e.g. ``Choice(values=[1, 2, 4, 8], ...)``."""
    duration_hours: Uncertain
    """Failure-free run time on the first pool's chip [h]."""
    priority: Uncertain = 0.0
    """Job priority (higher runs first under the ``priority`` scheduler)."""
    framework: Framework | dict[Framework, float] = "pytorch"
    """Framework of the jobs, or a mix given as weights (``{pytorch: 0.7, jax: 0.3}``); a
    job cannot run on a pool whose stack its framework would need a port to."""
    whole_domains: bool = False
    """Allocate whole scale-up domains (NVLink nodes, TPU slices) to each job."""

    name: str | None = Field(default=None, pattern=MIX_NAME_PATTERN)
    """In a mix (``Scenario.workloads``): the stream's name, prefixing its metrics
    (``<name>.mean_wait_hours``); unset = ``research``. Not for a lone workload."""

    @model_validator(mode="after")
    def _positive(self) -> JobStream:
        if isinstance(self.framework, dict):
            weights = list(self.framework.values())
            if not weights or any(not (w >= 0) for w in weights) or sum(weights) <= 0:
                raise ValueError(
                    "framework weights must be >= 0 with a positive sum, e.g. "
                    "{pytorch: 0.7, jax: 0.3}"
                )
        # Continuous laws such as Exponential have 0 in their support but draw it with
        # probability zero, so times are checked on [0, inf); a job needs at least one chip.
        _check_range("interarrival_hours", self.interarrival_hours, 0, math.inf, low_open=False)
        mean_gap = as_dist(self.interarrival_hours).expected_value()
        if not mean_gap >= _MIN_MEAN_INTERARRIVAL_HOURS:
            raise ValueError(
                f"interarrival_hours must have a mean >= {_MIN_MEAN_INTERARRIVAL_HOURS:g} h "
                f"(3.6 s), but its mean is {mean_gap:.3g} h"
            )
        _check_range("chips", self.chips, 1, math.inf, low_open=False)
        # A job of zero duration is no job (a continuous law from 0 draws 0 with probability 0).
        _check_range("duration_hours", self.duration_hours, 0, math.inf, low_open=True)
        return self


class Trace(_Model):
    """Replay of a CSV of jobs (submit time, chips, duration; column names mappable)."""

    kind: Literal["trace"] = "trace"
    path: str
    """CSV file; relative paths are resolved against the scenario file's folder."""
    columns: dict[str, str] | Literal["helios", "acme"] | None = None
    """Mapping from accelsim's fields (``submit``, ``chips``, ``duration``, ``priority``,
    ``chip_type``, ``estimate``) to the file's column names, or a preset for a public trace."""
    time_unit: Literal["s", "min", "h"] = "s"
    """Unit of the submit and duration columns."""
    framework: Framework = "pytorch"
    """Framework of the traced jobs."""
    chip_types: dict[str, str] | None = None
    """Trace chip-type label -> catalog chip id (e.g. ``{"V100": "v100"}``), when a
    ``chip_type`` column is mapped; a job then runs only on pools of that chip. Labels that
    already are catalog ids need no entry."""
    skip_zero: bool = False
    """Skip rows with zero chips or zero duration (CPU-only or instantly failed jobs, common
    in public traces) instead of reporting them as bad rows."""

    name: str | None = Field(default=None, pattern=MIX_NAME_PATTERN)
    """In a mix (``Scenario.workloads``): the trace's name, prefixing its metrics; unset =
    ``trace``. Not for a lone workload."""

    @field_validator("path", mode="before")
    @classmethod
    def _path_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, Path) else value

    @field_validator("chip_types")
    @classmethod
    def _known_chip_types(cls, mapping: dict[str, str] | None) -> dict[str, str] | None:
        for label, chip_id in (mapping or {}).items():
            try:
                catalog.chip(chip_id)
            except AccelsimError as exc:
                raise ValueError(f"chip_types[{label!r}]: {exc}") from None
        return mapping
