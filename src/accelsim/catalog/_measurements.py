"""A team's own measurements of its serving stack and training runs, the input of calibration.

:class:`Measurements` holds :class:`ServingMeasurement` and :class:`TrainingMeasurement`
records; :meth:`Measurements.from_file` reads them from the files the benchmark tools already
write (see :mod:`accelsim.catalog._measurement_files`). Each record states its own noise: the
standard deviation of the log of the measured figure over repeated runs (0.05: about 5 %),
which is what the calibration weighs it by (unset: the catalog's default,
``data/calibration.yaml``).

Examples
--------
>>> m = ServingMeasurement(model="llama-3.1-70b", precision="fp8", chip="h100-sxm",
...                        chips_per_replica=2, input_tokens=1000, output_tokens=1000,
...                        output_tokens_per_s_per_chip=1500.0)
>>> Measurements(serving=[m]).count
1
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from accelsim.catalog._measurement_files import read_records
from accelsim.errors import ScenarioFileError

ServingPrecision = Literal["bf16", "fp8", "int8", "fp4"]
"""Number format of served weights, as in :class:`accelsim.Serving`."""
TrainingPrecision = Literal["bf16", "fp8", "fp32"]
"""Arithmetic precision of a training run, as in :data:`accelsim.scenario.Precision`."""


class _Frozen(BaseModel):
    model_config = ConfigDict(
        frozen=True, extra="forbid", allow_inf_nan=False, use_attribute_docstrings=True
    )


class ServingMeasurement(_Frozen):
    """One measured serving benchmark: a replica of ``chips_per_replica`` chips serving
    ``model`` at ``precision`` and the output tokens per second per chip it delivered.

    The calibration reads a saturated run as the replica's offline throughput: an offline
    run, a closed loop (``concurrency``), or an open loop whose delivered output falls
    clearly short of the offered load; a run at a request rate the endpoint kept up with
    only bounds the capacity and is flagged, not used.
    """

    model: str = Field(min_length=1)
    """Model preset id (``accelsim.catalog.model_presets()``), e.g. ``"llama-3.1-70b"``."""
    precision: ServingPrecision
    """Number format of the weights and arithmetic, e.g. ``"fp8"``."""
    chip: str = Field(min_length=1)
    """Chip id of the catalog, e.g. ``"h100-sxm"``."""
    chips_per_replica: int = Field(ge=1)
    """Chips one replica (one copy of the model) spans. [chips]"""
    chips: int | None = Field(default=None, ge=1)
    """Chips behind the benchmarked endpoint (several replicas); ``None``: one replica. [chips]"""
    input_tokens: float = Field(gt=0)
    """Mean prompt length of the benchmark. [tokens]"""
    output_tokens: float = Field(gt=0)
    """Mean output length of the benchmark. [tokens]"""
    output_tokens_per_s_per_chip: float = Field(gt=0)
    """Measured output tokens per second per chip of the replica. [tokens/(s*chip)]"""
    request_rate_rps: float | None = Field(default=None, gt=0)
    """Offered request rate of an open-loop run; ``None``: saturated (offline). [1/s]"""
    concurrency: int | None = Field(default=None, ge=1)
    """Requests kept in flight by a closed-loop run. [requests]"""
    ttft_ms: dict[str, float] = {}
    """Time-to-first-token percentiles by name (``"p50"``, ``"p99"``, ``"mean"``). [ms]"""
    tpot_ms: dict[str, float] = {}
    """Time-per-output-token percentiles by name. [ms]"""
    stack: str | None = None
    """Serving engine and version, e.g. ``"vLLM 0.11"`` (recorded, not modelled)."""
    noise: float | None = Field(default=None, gt=0, le=2)
    """Run-to-run noise: standard deviation of the log of the measured figure; ``None``: the
    catalog's ``serving_noise`` (``data/calibration.yaml``). Someone else's published result
    is not a repeat of your stack: two MLPerf submitters' results for one configuration
    differ by a median 12 %, so give such a record about 0.15. [dimensionless]"""
    source: str = ""
    """Where the record was read from (a file name), for the summaries."""


class TrainingMeasurement(_Frozen):
    """One measured training run: ``count`` chips training a ``params`` model at ``mfu``.

    Give ``mfu`` or ``tokens_per_s`` (then the MFU is 6 x params x tokens/s over the chips'
    peak at ``precision``, the model-FLOPs convention of the priors).
    """

    chip: str = Field(min_length=1)
    """Chip id of the catalog."""
    count: int = Field(ge=1)
    """Chips of the run. [chips]"""
    params: float = Field(gt=0)
    """Parameters (active parameters of a mixture of experts). [count]"""
    mfu: float | None = Field(default=None, gt=0, le=1)
    """Measured model-FLOPs utilisation over the run's precision's peak. [fraction]"""
    tokens_per_s: float | None = Field(default=None, gt=0)
    """Measured training throughput of the whole run, instead of ``mfu``. [tokens/s]"""
    total_params: float | None = Field(default=None, gt=0)
    """All parameters of a mixture of experts (``None``: dense). [count]"""
    precision: TrainingPrecision = "bf16"
    """Arithmetic precision of the run."""
    framework: Literal["pytorch", "jax", "tensorflow"] = "pytorch"
    """Framework of the measured code."""
    batch_tokens: float | None = Field(default=None, gt=0)
    """Global batch of the run; ``None``: the prior's. [tokens]"""
    interruptions: int | None = Field(default=None, ge=0)
    """Job interruptions seen over ``duration_hours``: they update the interruption rate per
    chip-hour (``failure_rate_per_chip_hour``)."""
    duration_hours: float | None = Field(default=None, gt=0)
    """Length of the measured stretch of training. [h]"""
    noise: float | None = Field(default=None, gt=0, le=2)
    """Run-to-run noise: standard deviation of the log of the measured MFU; ``None``: the
    catalog's ``training_noise`` (``data/calibration.yaml``). [dimensionless]"""
    source: str = ""
    """Where the record was read from, for the summaries."""

    @model_validator(mode="after")
    def _one_rate(self) -> TrainingMeasurement:
        if (self.mfu is None) == (self.tokens_per_s is None):
            raise ValueError("a training measurement gives exactly one of mfu or tokens_per_s")
        if (self.interruptions is None) != (self.duration_hours is None):
            raise ValueError("interruptions and duration_hours go together")
        if self.total_params is not None and self.total_params < self.params:
            raise ValueError("total_params must be >= params (the active parameters)")
        return self


class Measurements(_Frozen):
    """A team's measurements: serving benchmarks and training runs, the input of
    :func:`accelsim.catalog.calibrate`."""

    serving: tuple[ServingMeasurement, ...] = ()
    """Serving benchmarks."""
    training: tuple[TrainingMeasurement, ...] = ()
    """Training runs."""

    @property
    def count(self) -> int:
        """Number of measurements of both kinds."""
        return len(self.serving) + len(self.training)

    def __add__(self, other: Measurements) -> Measurements:
        """Both sets together (the order of records does not matter to the calibration)."""
        return Measurements(
            serving=self.serving + other.serving, training=self.training + other.training
        )

    @classmethod
    def from_file(cls, path: str | Path, **context: Any) -> Measurements:
        """Read the measurements a benchmark tool wrote to ``path``.

        Formats, told apart by content: vLLM ``bench serve --save-result`` JSON, GuideLLM's
        report JSON, inference-perf's report JSON, MLPerf loadgen ``mlperf_log_summary.txt``,
        MLLOG training logs (``:::MLLOG`` lines) and CSV or YAML files of this module's own
        field names. ``context`` gives what the file does not say (``chip``, ``chips`` or
        ``chips_per_replica``, ``precision``, ``model``, ``stack``, ``params`` ...) and
        overrides what it does.

        Raises
        ------
        accelsim.errors.ScenarioFileError
            If the file cannot be read, or a needed field is missing (the message names it).
        """
        serving, training = read_records(Path(path), dict(context))
        try:
            return cls(
                serving=tuple(ServingMeasurement.model_validate(r) for r in serving),
                training=tuple(TrainingMeasurement.model_validate(r) for r in training),
            )
        except ValidationError as exc:
            raise ScenarioFileError(f"{path}: invalid measurement\n{exc}") from None


__all__ = [
    "Measurements",
    "ServingMeasurement",
    "TrainingMeasurement",
]
