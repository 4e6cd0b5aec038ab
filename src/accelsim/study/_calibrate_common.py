"""What the serving and training calibrations share: the inversion of a measurement through
the model, its configuration as a scenario, and the hierarchical update of one group of chips
into posterior priors and records (see :mod:`accelsim.study._calibrate`)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import ValidationError
from scipy.optimize import brentq

from accelsim.catalog import Prior, ServingMeasurement, TrainingMeasurement
from accelsim.catalog.posterior import (
    OUTLIER_Z,
    CalibratedPrior,
    calibration_priors,
    hierarchical_posterior,
    outlier,
    posterior_prior,
    quantiles,
)
from accelsim.scenario import SLO, Pool, Scenario, Serving, TrainingRun

RUNS = 256  # Monte Carlo runs behind each median prediction of the inversion
SEED = 20261129  # fixed: the same measurements give the same catalog
Z95 = 1.6448536269514722  # Phi^-1(0.95): a log-normal's 90 % interval is mu +- Z95 sigma
_LOG_LOW = math.log(1e-4)  # smallest efficiency / MFU the inversion searches
_TOKENS = 1e12  # training tokens of the measured configuration (MFU does not depend on it)


class CalibrationWarning(UserWarning):
    """A measurement lies far outside the prior (likely a unit or configuration error; it is
    still used), sits at the model's edge, or cannot be used (an open loop that kept up)."""


@dataclass(frozen=True)
class Evidence:
    """One used measurement: its chip, configuration, implied log-value and noise."""

    chip: str
    """Key of the chip-level prior (chip id; ``"<chip>:moe"`` for MoE training)."""
    config: str
    """Key of the measured configuration's prior."""
    y: float
    """Implied log-value of the calibrated figure."""
    v: float
    """Noise variance of ``y``."""
    label: str
    """The measurement, for flags."""


def invert(predict: Callable[[float], float], measured: float, what: str) -> tuple[float, str]:
    """log of the value in (0, 1] whose median prediction is ``measured``, and a flag if the
    value is at an edge (the model cannot reach the measurement)."""
    target = math.log(measured)

    def gap(log_value: float) -> float:
        return math.log(predict(math.exp(log_value))) - target

    if gap(0.0) <= 0.0:
        return 0.0, f"{what}: the model predicts at most {predict(1.0):.4g} at 100 %"
    if gap(_LOG_LOW) >= 0.0:
        return _LOG_LOW, f"{what}: the model predicts {predict(1e-4):.4g} already at 0.01 %"
    return float(brentq(gap, _LOG_LOW, 0.0, xtol=1e-6, rtol=1e-10)), ""


def median(values: np.ndarray, what: str) -> float:
    """The median of a forward prediction; an infeasible configuration is an error."""
    mid = float(np.median(values))
    if not mid > 0.0:
        raise ValueError(f"{what}: the configuration is infeasible in the model (median 0)")
    return mid


def label(m: ServingMeasurement | TrainingMeasurement) -> str:
    """How warnings and errors name a measurement."""
    if isinstance(m, ServingMeasurement):
        where = f"{m.model} on {m.chips_per_replica} x {m.chip}"
        return f"serving measurement {m.source or where} ({where})"
    return f"training measurement {m.source or m.chip} ({m.count} x {m.chip})"


def scenario(m: ServingMeasurement | TrainingMeasurement) -> Scenario:
    """The measurement's own configuration as a scenario; one the model refuses (a model
    that does not fit its chips, say) is an error naming the measurement."""
    try:
        if isinstance(m, ServingMeasurement):
            svc = Serving(
                model=m.model,
                precision=m.precision,
                input_tokens=m.input_tokens,
                output_tokens=m.output_tokens,
                rate_rps=1.0,  # the offline capacity does not depend on the rate
                slo=SLO(ttft_ms=1e6, tpot_ms=1e6),
                chips_per_replica=m.chips_per_replica,
            )
            pool = Pool(chip=m.chip, count=m.chips_per_replica, provider=None)
            return Scenario(name="measurement", workload=svc, fleet=[pool])
        run = TrainingRun(
            params=m.params,
            total_params=m.total_params,
            tokens=_TOKENS,
            precision=m.precision,
            framework=m.framework,
            global_batch_tokens=m.batch_tokens,
        )
        pool = Pool(chip=m.chip, count=m.count, provider=None)
        return Scenario(name="measurement", workload=run, fleet=[pool])
    except ValidationError as exc:
        reasons = "; ".join(str(e["msg"]) for e in exc.errors(include_url=False))
        raise ValueError(f"{label(m)}: the model cannot run its configuration: {reasons}") from None


def noise(stated: float | None, kind: str) -> float:
    """The record's own noise, else the shipped default for its kind."""
    if stated is not None:
        return stated
    p = calibration_priors()
    default = p.serving_noise if kind == "serving" else p.training_noise
    return float(default.dist().expected_value())


def _record(
    name: str,
    prior: tuple[float, float],
    post: tuple[float, float],
    own: Sequence[Evidence],
    pooled: int,
) -> CalibratedPrior:
    """The record of one calibrated prior, with a flag per measurement far outside it."""
    flags = []
    for e in own:
        z = outlier(e.y, prior, e.v)
        if abs(z) > OUTLIER_Z:
            flags.append(
                f"{e.label} implies {math.exp(e.y):.3g}, {abs(z):.1f} standard deviations "
                f"{'above' if z > 0 else 'below'} the prior median {math.exp(prior[0]):.3g}: "
                "likely a unit or configuration error (per-chip vs per-replica throughput, "
                "chips, precision, model); used all the same"
            )
    for flag in flags:
        warnings.warn(f"{name}: {flag}", CalibrationWarning, stacklevel=5)
    return CalibratedPrior(
        name=name,
        measurements=len(own),
        pooled=pooled,
        prior=quantiles(*prior),
        posterior=quantiles(*post),
        flags=tuple(flags),
    )


@dataclass(frozen=True)
class Group:
    """One group of chips updated together (a software stack, a chip kind)."""

    priors: Mapping[str, tuple[float, float]]
    """Chip key -> prior (mu, sigma) of a configuration's log-figure on it."""
    templates: Mapping[str, Prior]
    """Chip key -> the prior entry whose provenance a posterior keeps."""
    rho: float
    share: float
    chip_name: str
    """Dotted input name of a chip-level entry, with ``{}`` for the key."""
    config_name: str
    """Dotted input name of a configuration entry, with ``{}`` for the key."""


def update_group(
    group: Group, evidence: Sequence[Evidence]
) -> tuple[dict[str, Prior], dict[str, Prior], list[CalibratedPrior]]:
    """Chip-level and configuration-level posterior priors of a group, and their records."""
    inside = [e for e in evidence if e.chip in group.priors]
    new, seen = hierarchical_posterior(
        group.priors, group.rho, group.share, [(e.chip, e.config, e.y, e.v) for e in inside]
    )
    chips: dict[str, Prior] = {}
    configs: dict[str, Prior] = {}
    records: list[CalibratedPrior] = []
    for c in sorted(group.priors):
        own = [e for e in inside if e.chip == c]
        record = _record(group.chip_name.format(c), group.priors[c], new[c], [], len(inside))
        record = record.model_copy(update={"measurements": len(own)})
        chips[c] = posterior_prior(group.templates[c], *new[c], record)
        records.append(record)
    for k in sorted(seen):
        own = [e for e in inside if e.config == k]
        chip = own[0].chip
        record = _record(group.config_name.format(k), group.priors[chip], seen[k], own, len(own))
        configs[k] = posterior_prior(group.templates[chip], *seen[k], record)
        records.append(record)
    return chips, configs, records


__all__ = [
    "RUNS",
    "SEED",
    "Z95",
    "CalibrationWarning",
    "Evidence",
    "Group",
    "invert",
    "label",
    "median",
    "noise",
    "scenario",
    "update_group",
]
