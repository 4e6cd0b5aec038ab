"""The training half of :func:`accelsim.study.calibrate`: measured MFUs update the reference
MFU of their chip and model size, measured interruptions the job interruption rate."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from accelsim.catalog import Catalog, Prior, TrainingMeasurement, mfu_reference_key
from accelsim.catalog.posterior import (
    CalibratedPrior,
    calibration_priors,
    poisson_rate_posterior,
    posterior_prior,
)
from accelsim.study._calibrate_common import (
    RUNS,
    SEED,
    Z95,
    CalibrationWarning,
    Evidence,
    Group,
    invert,
    label,
    median,
    noise,
    scenario,
    update_group,
)
from accelsim.study._simulate import simulate

# Two-sided prior-predictive probability below which an interruption count is flagged: the
# 3.29-standard-deviation rule of the normal updates (posterior.OUTLIER_Z).
_OUTLIER_TAIL = 0.001


def measured_mfu(m: TrainingMeasurement, cat: Catalog) -> float:
    """The record's MFU, or 6 x params x tokens/s over the chips' peak at its precision."""
    if m.mfu is not None:
        return m.mfu
    assert m.tokens_per_s is not None
    peak = cat.chip(m.chip).peak_tflops(m.precision) * 1e12 * m.count
    mfu = 6.0 * m.params * m.tokens_per_s / peak
    if not 0.0 < mfu <= 1.0:
        raise ValueError(
            f"{label(m)}: tokens_per_s {m.tokens_per_s:g} is an MFU of {mfu:.3g} on "
            f"{m.count} {m.chip} (must be in (0, 1]): check the units"
        )
    return mfu


def _chip_key(m: TrainingMeasurement, cat: Catalog) -> str:
    return mfu_reference_key(cat.chip(m.chip).id, m.total_params is not None)


def _config_key(m: TrainingMeasurement, cat: Catalog) -> str:
    return mfu_reference_key(cat.chip(m.chip).id, m.total_params is not None, m.params)


def _chip_of(key: str) -> str:
    return key.split("/", 1)[0].split(":", 1)[0]


def _template(cat: Catalog, key: str) -> Prior:
    """The provenance a calibrated reference MFU starts from: an earlier calibration's, else
    the ceiling prior its runs would draw (the MoE one for ``"<chip>:moe"``)."""
    p = cat.priors
    if key in p.mfu_reference_by_chip:
        return p.mfu_reference_by_chip[key]
    chip = _chip_of(key)
    if ":moe" in key and p.mfu_ceiling_moe is not None:
        return p.mfu_ceiling_moe
    return p.mfu_ceiling_by_chip.get(chip) or p.mfu_ceiling[cat.chip(chip).kind]


def _scale(cat: Catalog, count: float) -> Prior:
    """The measured scale as a reference-chips prior (the shipped one's provenance)."""
    return cat.priors.mfu_reference_chips.model_copy(update={"value": count})


def _with_mfu(cat: Catalog, key: str, value: float, count: float) -> Catalog:
    """``cat`` with the reference MFU under ``key`` fixed at ``value`` at ``count`` chips."""
    p = cat.priors
    fixed = _template(cat, key).model_copy(update={"value": value})
    priors = p.model_copy(
        update={
            "mfu_reference_by_chip": {**p.mfu_reference_by_chip, key: fixed},
            "mfu_reference_chips_by_chip": {
                **p.mfu_reference_chips_by_chip,
                key: _scale(cat, count),
            },
        }
    )
    return replace(cat, priors=priors)


def _predictor(m: TrainingMeasurement, cat: Catalog, count: float) -> Callable[[float], float]:
    """Median MFU of the measured configuration with its reference MFU fixed at a trial
    value, at the reference scale ``count``."""
    s, key = scenario(m), _config_key(m, cat)

    def predict(value: float) -> float:
        result = simulate(s, runs=RUNS, seed=SEED, catalog=_with_mfu(cat, key, value, count))
        return median(result.samples("mfu"), label(m))

    return predict


def _prior(m: TrainingMeasurement, cat: Catalog, count: float) -> tuple[float, float]:
    """(mu, sigma) of the log reference MFU under the catalog's priors: their prediction for
    the measured configuration, inverted at its 5/50/95 % quantiles."""
    prior = simulate(scenario(m), runs=4 * RUNS, seed=SEED, catalog=cat)
    qs = np.quantile(prior.samples("mfu"), [0.05, 0.5, 0.95])
    predict = _predictor(m, cat, count)
    logs = [invert(predict, float(q), "the prior's MFU")[0] for q in qs]
    return logs[1], (logs[2] - logs[0]) / (2.0 * Z95)


def _geometric_count(runs: Sequence[TrainingMeasurement]) -> float:
    return math.exp(math.fsum(math.log(m.count) for m in runs) / len(runs))


def calibrate_training(
    training: Sequence[TrainingMeasurement], cat: Catalog
) -> tuple[dict[str, Prior], dict[str, Prior], list[CalibratedPrior]]:
    """Posterior reference MFUs (by chip key and by measured model size), their reference
    scales (the measured runs' geometric-mean chip count) and the records."""
    ordered = sorted(training, key=lambda m: m.model_dump_json())  # order-independent prior
    chips = sorted({_chip_key(m, cat) for m in ordered})
    configs = sorted({_config_key(m, cat) for m in ordered})
    scale = {
        k: _geometric_count([m for m in ordered if k in (_chip_key(m, cat), _config_key(m, cat))])
        for k in [*chips, *configs]
    }
    first = {c: next(m for m in ordered if _chip_key(m, cat) == c) for c in chips}
    priors = {c: _prior(first[c], cat, scale[_config_key(first[c], cat)]) for c in chips}
    evidence = []
    for m in ordered:
        config = _config_key(m, cat)
        y, edge = invert(_predictor(m, cat, scale[config]), measured_mfu(m, cat), label(m))
        if edge:
            warnings.warn(f"{label(m)}: {edge}", CalibrationWarning, stacklevel=3)
        v = noise(m.noise, "training") ** 2
        evidence.append(Evidence(_chip_key(m, cat), config, y, v, label(m)))
    p = calibration_priors()
    out: dict[str, Prior] = {}
    records: list[CalibratedPrior] = []
    for kind in sorted({cat.chip(_chip_of(c)).kind for c in chips}):
        members = [c for c in chips if cat.chip(_chip_of(c)).kind == kind]
        group = Group(
            priors={c: priors[c] for c in members},
            templates={c: _template(cat, c) for c in members},
            rho=float(p.mfu_chip_correlation.dist().expected_value()),
            share=float(p.mfu_config_share.dist().expected_value()),
            chip_name="priors.mfu_reference_by_chip.{}",
            config_name="priors.mfu_reference_by_chip.{}",
        )
        by_chip, by_config, done = update_group(group, evidence)
        out |= by_chip | by_config
        records += done
    return out, {k: _scale(cat, n) for k, n in scale.items()}, records


def calibrate_failures(
    training: Sequence[TrainingMeasurement], cat: Catalog
) -> tuple[Prior | None, list[CalibratedPrior]]:
    """The job-interruption rate updated by the interruptions the runs saw over their
    chip-hours (gamma-Poisson on the pooled count; ``None`` when no run states any)."""
    seen = [m for m in training if m.interruptions is not None and m.duration_hours is not None]
    if not seen:
        return None, []
    events = sum(m.interruptions or 0 for m in seen)
    exposure = math.fsum(m.count * (m.duration_hours or 0.0) for m in seen)
    prior = cat.priors.failure_rate_per_chip_hour
    (low, _, high), tail = poisson_rate_posterior(prior.dist(), events, exposure)
    name = "assumptions.failure_rate_per_chip_hour"
    flags: tuple[str, ...] = ()
    if tail < _OUTLIER_TAIL:
        flags = (
            f"{events} interruptions in {exposure:,.0f} chip-hours ({events / exposure:.3g} per "
            f"chip-hour) has prior-predictive probability {tail:.2g}: likely a unit or "
            "configuration error (hours vs days, chips vs nodes); used all the same",
        )
        warnings.warn(f"{name}: {flags[0]}", CalibrationWarning, stacklevel=3)
    before = prior.dist()
    record = CalibratedPrior(
        name=name,
        measurements=len(seen),
        pooled=len(seen),
        prior=(float(before.ppf(0.05)), float(before.ppf(0.5)), float(before.ppf(0.95))),
        posterior=(low, math.sqrt(low * high), high),
        flags=flags,
    )
    mu, sigma = math.log(low * high) / 2.0, math.log(high / low) / (2.0 * Z95)
    return posterior_prior(prior, mu, sigma, record), [record]


__all__ = ["calibrate_failures", "calibrate_training", "measured_mfu"]
