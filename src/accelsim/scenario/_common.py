"""Shared pieces of the scenario models: vocabularies, physical ranges, the base model."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
)

from accelsim import catalog
from accelsim.dists import Choice, Dist, Fixed

Framework = Literal["pytorch", "jax", "tensorflow"]
Stage = Literal["prototype", "production"]
Recovery = Literal["standard", "frontier"]
FineTune = Literal["full", "lora", "qlora"]
Regime = Literal["pretraining", "benchmark"]
"""What a training run is, for its MFU prior: a production run or a tuned throughput
benchmark (MLPerf, framework recipes). A fine-tune is ``TrainingRun.fine_tune``."""
Precision = Literal["bf16", "fp8", "fp32"]
Sharding = Literal["none", "zero1", "zero2", "zero3", "fsdp"]
SchedulerName = Literal["fifo", "backfill", "smallest_first", "priority", "priority_preemptive"]

# Bytes of training state per parameter for mixed-precision Adam: bf16 weights (2) and
# gradients (2) plus fp32 master weights, momentum and variance (12) -- Rajbhandari et al.,
# "ZeRO", SC'20, section 3.1. Used only for the boundary check "can this fit at all".
_STATE_BYTES_PER_PARAM = 16.0
_GIB = 2.0**30
_MFU_MIN = 1e-3
TRAINING_HORIZON_DAYS = 3 * 365.25
"""Default :attr:`TrainingRun.horizon_days`: 3 years, a judgement (see there). [d]"""
# Physical ranges of the boundary (pattern 6): far outside practice, well inside float64, so
# that every metric stays finite. The largest published runs are ~5e25 FLOP, ~2e12 active
# parameters, ~4e13 tokens and ~1e5 chips.
_MAX_CHIPS = 10_000_000
_MAX_PARAMS = 1e15
_MAX_TOKENS = 1e17
_MAX_TRAINING_FLOPS = 1e32
# The shortest training sequence assumed when seq_len is unset (BERT's and GPT-2's contexts
# are 512 and 1,024 tokens): a data-parallel replica needs one whole sequence per step.
_MIN_SEQUENCE_TOKENS = 512
# One minute: a checkpoint every second would spend the run writing checkpoints.
_MIN_CHECKPOINT_INTERVAL_HOURS = 1.0 / 60.0
# A tenth of one person's time: fewer engineers would stretch engineering days to no end.
_MIN_ENGINEERS = 0.1
# A mean inter-arrival below 3.6 s means millions of jobs a day: a units mistake.
_MIN_MEAN_INTERARRIVAL_HOURS = 1e-3
_MAX_HORIZON_DAYS = 3660.0
MAX_NAME_CHARS = 200
"""Longest scenario (option) name: a label in tables, plots and reports."""
MAX_TEXT_CHARS = 10_000
"""Longest text any scenario field holds (a description, a path, an id): a bound on the
work a 1 MB string would cost every message, table and close-match search it meets."""
MIX_NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]{0,63}$"
"""A workload's name in a mix: it prefixes metric names, so no ``.``, ``,``, ``@`` or space."""


class _Model(BaseModel):
    # strict: YAML's `true` is not a count and a quoted "7e9" is not a number (pattern 6);
    # an int is still accepted where a float is asked.
    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        use_attribute_docstrings=True,
        allow_inf_nan=False,
        strict=True,
        str_max_length=MAX_TEXT_CHARS,
    )


BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
"""Unicode bidirectional controls: in a name they reorder the text around it when shown
(U+202E reverses what follows), so a name could make a sentence read otherwise."""


def check_label(value: str, what: str = "name") -> str:
    """``value`` if it holds no bidirectional control character, else a ``ValueError``
    naming the character's code point and position. Names are text, shown as written."""
    for i, ch in enumerate(value):
        if ch in BIDI_CONTROLS:
            raise ValueError(
                f"{what} {value!r} holds the bidirectional control U+{ord(ch):04X} at "
                f"position {i}: it would reorder the text it is shown in; remove it"
            )
    return value


def _support(value: float | Dist) -> tuple[float, float]:
    if isinstance(value, int | float):
        return float(value), float(value)
    return value.support()


def _check_range(
    name: str, value: float | Dist | None, low: float, high: float, *, low_open: bool
) -> None:
    """Raise ``ValueError`` unless every value ``value`` can take lies in the interval."""
    if value is None:
        return
    lo, hi = _support(value)
    if hi == math.inf and high < math.inf and not isinstance(value, int | float):
        # An unbounded law (LogNormal, Exponential) is judged by its 1 - 1e-9 quantile: a
        # study draws far fewer values, and any draw is finite.
        hi = float(value.ppf(1.0 - 1e-9))
    # An open bound is reached only by a point mass: a continuous law whose support starts
    # at the bound (LogNormal at 0) draws it with probability zero.
    atomic = isinstance(value, int | float | Fixed | Choice)
    bad_low = lo < low or (low_open and lo == low and atomic)
    if bad_low or hi > high:
        bracket = "(" if low_open else "["
        raise ValueError(
            f"{name} must lie in {bracket}{low:g}, {high:g}], but it can take values in "
            f"[{lo:g}, {hi:g}]"
        )


def _runs_natively(framework: str, chip_id: str) -> bool:
    """A framework's code runs on a chip's stack without a port (the catalog's fit table)."""
    stack = catalog.chip(chip_id).software_stack
    return catalog.priors().framework_fit.table[framework][stack] != "ported"  # type: ignore[index]


# Bytes per frozen base-model parameter of an adapter fine-tune: bf16 weights for LoRA (Hu
# et al. 2021), NF4 weights with double-quantised constants for QLoRA, 4 + 0.127 bits
# (Dettmers et al. 2023, section 3: 0.127 bits per parameter of quantisation constants).
FROZEN_BYTES_PER_PARAM = {"lora": 2.0, "qlora": (4.0 + 0.127) / 8.0}
_LORA_TRAINABLE_FRACTION = 0.01
"""Adapter share used when the priors have no ``lora_trainable_fraction``."""


def adapter_state_gib(params: float, trainable_params: float, fine_tune: str) -> float:
    """Frozen base weights plus the adapters' weights, gradients and Adam state. [GiB]

    ``params`` frozen parameters at :data:`FROZEN_BYTES_PER_PARAM` bytes each and
    ``trainable_params`` adapter parameters at 16 bytes each (ZeRO section 3.1), fully
    sharded; activations come on top.

    Examples
    --------
    >>> round(adapter_state_gib(65e9, 0.8e9, "qlora"), 1)  # QLoRA: 65B on one 48 GB GPU
    43.1
    """
    frozen = params * FROZEN_BYTES_PER_PARAM[fine_tune]
    return (frozen + trainable_params * _STATE_BYTES_PER_PARAM) / _GIB


def training_state_gib(params: float) -> float:
    """Weights, gradients and Adam state of ``params`` parameters, fully sharded. [GiB]

    The floor of HBM a fleet needs to train the model at all (16 bytes per parameter,
    ZeRO section 3.1); activations come on top.
    """
    return params * _STATE_BYTES_PER_PARAM / _GIB
