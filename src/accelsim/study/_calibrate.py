"""``calibrate``: a team's measurements, inverted through the library's own model, narrow the
priors they inform (bound as :func:`accelsim.catalog.calibrate`).

Why this lives in the study layer: a measurement is carried to other chips, shapes and
scales *through the model*, so calibration needs the model's forward prediction of the
measured figure. The forward prediction is the public study itself --
:func:`accelsim.serving_capacity` for a serving benchmark (``offline_tokens_per_s_per_chip``)
and :func:`accelsim.simulate` for a training run (``mfu``) -- run on the measurement's own
configuration with the calibrated prior fixed at a trial value and every other prior drawn as
usual (common random numbers: same seed, same input names). The *implied* value is the one
whose median prediction equals the measurement (Brent's method on the log, the prediction
rising with the value). Whatever the serving physics or the scaling model become, the
inversion follows them: no formula is copied here. The catalog layer, below the models,
holds the conjugate update (:mod:`accelsim.catalog.posterior`); ``accelsim/__init__``
binds this function as ``accelsim.catalog.calibrate``, so the public name sits with the
catalog it returns while the layers stay acyclic.

What is calibrated:

- serving: the roofline efficiency of each chip of a measured chip's software stack
  (``priors.serving.efficiency_by_chip.<chip>``), its prior the chip's own;
- training: the MFU a team's code reaches at the reference scale on each measured chip
  (``priors.mfu_reference_by_chip.<chip>``); its prior is the built-in prior's prediction
  for the measured configuration (ceiling, learning curve and scaling together), inverted
  at its 5/50/95 % quantiles.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
from pydantic import ValidationError
from scipy.optimize import brentq

from accelsim.catalog import (
    Catalog,
    Measurements,
    Prior,
    ServingMeasurement,
    TrainingMeasurement,
    active,
    mfu_reference_key,
)
from accelsim.catalog.posterior import (
    OUTLIER_Z,
    CalibratedPrior,
    calibration_priors,
    log_normal_params,
    outlier,
    poisson_rate_posterior,
    pooled_posterior,
    posterior_prior,
    quantiles,
)
from accelsim.engines import offline_capacity
from accelsim.scenario import SLO, Pool, Scenario, Serving, TrainingRun
from accelsim.seeding import as_seed_sequence
from accelsim.study._simulate import simulate

_RUNS = 256  # Monte Carlo runs behind each median prediction of the inversion
_SEED = 20261129  # fixed: the same measurements give the same catalog
_LOG_LOW = math.log(1e-4)  # smallest efficiency / MFU the inversion searches
# An open-loop run delivering less than this share of its offered output tokens could not keep
# up: it ran saturated, at its capacity (a convention; run-to-run noise is a few per cent).
_SATURATED_SHARE = 0.9
_TOKENS = 1e12  # training tokens of the measured configuration (MFU does not depend on it)
_Z95 = 1.6448536269514722  # Phi^-1(0.95)
# Two-sided prior-predictive probability below which an interruption count is flagged: the
# 3.29-standard-deviation rule of the normal updates (posterior.OUTLIER_Z).
_OUTLIER_TAIL = 0.001


class CalibrationWarning(UserWarning):
    """A measurement lies far outside the prior (likely a unit or configuration error); it is
    still used."""


def _invert(predict: Callable[[float], float], measured: float, what: str) -> tuple[float, str]:
    """log of the value whose median prediction is ``measured``, and a flag if it is at the
    edge of (0, 1]."""
    target = math.log(measured)

    def gap(log_value: float) -> float:
        return math.log(predict(math.exp(log_value))) - target

    if gap(0.0) <= 0.0:
        return 0.0, f"{what}: the model predicts at most {predict(1.0):.4g} at 100 %"
    if gap(_LOG_LOW) >= 0.0:
        return _LOG_LOW, f"{what}: the model predicts {predict(1e-4):.4g} already at 0.01 %"
    return float(brentq(gap, _LOG_LOW, 0.0, xtol=1e-6, rtol=1e-10)), ""


def _median(values: np.ndarray, what: str) -> float:
    median = float(np.median(values))
    if not median > 0.0:
        raise ValueError(f"{what}: the configuration is infeasible in the model (median 0)")
    return median


def _label(m: ServingMeasurement | TrainingMeasurement) -> str:
    if isinstance(m, ServingMeasurement):
        where = f"{m.model} on {m.chips_per_replica} x {m.chip}"
        return f"serving measurement {m.source or where} ({where})"
    return f"training measurement {m.source or m.chip} ({m.count} x {m.chip})"


def _scenario(m: ServingMeasurement | TrainingMeasurement) -> Scenario:
    """The measurement's own configuration as a scenario; one the model refuses (a model
    that does not fit its chips, say) is an error naming the measurement."""
    try:
        if isinstance(m, ServingMeasurement):
            return _serving_scenario(m)
        return _training_scenario(m)
    except ValidationError as exc:
        reasons = "; ".join(str(e["msg"]) for e in exc.errors(include_url=False))
        raise ValueError(
            f"{_label(m)}: the model cannot run its configuration: {reasons}"
        ) from None


def _serving_scenario(m: ServingMeasurement) -> Scenario:
    svc = Serving(
        model=m.model,
        precision=m.precision,
        input_tokens=m.input_tokens,
        output_tokens=m.output_tokens,
        rate_rps=1.0,  # offline capacity does not depend on the rate
        slo=SLO(ttft_ms=1e6, tpot_ms=1e6),
        chips_per_replica=m.chips_per_replica,
    )
    pool = Pool(chip=m.chip, count=m.chips_per_replica, provider=None)
    return Scenario(name="measurement", workload=svc, fleet=[pool])


def _with_efficiency(cat: Catalog, chip: str, value: float) -> Catalog:
    base = cat.serving_priors.efficiency_for(chip, cat.chip(chip).software_stack)
    fixed = base.model_copy(update={"value": value})
    serving = cat.serving_priors.model_copy(
        update={"efficiency_by_chip": {**cat.serving_priors.efficiency_by_chip, chip: fixed}}
    )
    return replace(cat, serving_priors=serving)


def _implied_efficiency(m: ServingMeasurement, cat: Catalog) -> tuple[float, str]:
    scenario = _scenario(m)
    what = _label(m)
    root = as_seed_sequence(_SEED)  # the draws serving_capacity makes for this seed

    chip = cat.chip(m.chip).id  # the catalog's spelling, which the engines look up

    def predict(value: float) -> float:
        calibrated = _with_efficiency(cat, chip, value)
        return _median(offline_capacity(scenario, root, _RUNS, cat=calibrated), what)

    return _invert(predict, m.output_tokens_per_s_per_chip, what)


def _training_scenario(m: TrainingMeasurement) -> Scenario:
    run = TrainingRun(
        params=m.params,
        total_params=m.total_params,
        tokens=_TOKENS,
        precision=m.precision,
        framework=m.framework,
        global_batch_tokens=m.batch_tokens,
    )
    return Scenario(
        name="measurement", workload=run, fleet=[Pool(chip=m.chip, count=m.count, provider=None)]
    )


def measured_mfu(m: TrainingMeasurement, cat: Catalog) -> float:
    """The record's MFU, or 6 x params x tokens/s over the chips' peak at its precision."""
    if m.mfu is not None:
        return m.mfu
    assert m.tokens_per_s is not None
    peak = cat.chip(m.chip).peak_tflops(m.precision) * 1e12 * m.count
    mfu = 6.0 * m.params * m.tokens_per_s / peak
    if not 0.0 < mfu <= 1.0:
        raise ValueError(
            f"training measurement {m.source or m.chip}: tokens_per_s {m.tokens_per_s:g} is "
            f"an MFU of {mfu:.3g} on {m.count} {m.chip} (must be in (0, 1]): check the units"
        )
    return mfu


def _reference_chips(cat: Catalog, count: float) -> Prior:
    """The measured scale as a reference-chips prior (the shipped one's provenance)."""
    return cat.priors.mfu_reference_chips.model_copy(update={"value": count})


def _with_mfu(cat: Catalog, key: str, value: float, count: float) -> Catalog:
    """``cat`` with the reference MFU under ``key`` (:func:`mfu_reference_key`) fixed at
    ``value`` at ``count`` chips."""
    p = cat.priors
    template = _mfu_template(cat, key)
    priors = p.model_copy(
        update={
            "mfu_reference_by_chip": {
                **p.mfu_reference_by_chip,
                key: template.model_copy(update={"value": value}),
            },
            "mfu_reference_chips_by_chip": {
                **p.mfu_reference_chips_by_chip,
                key: _reference_chips(cat, count),
            },
        }
    )
    return replace(cat, priors=priors)


def _key(m: TrainingMeasurement, cat: Catalog) -> str:
    return mfu_reference_key(cat.chip(m.chip).id, m.total_params is not None)


def _chip_of(key: str) -> str:
    return key.split(":", 1)[0]


def _mfu_predictor(m: TrainingMeasurement, cat: Catalog, count: float) -> Callable[[float], float]:
    """Median MFU of the measured configuration with the chip's reference MFU fixed at a
    trial value, at the reference scale ``count``."""
    scenario = _scenario(m)
    key = _key(m, cat)

    def predict(value: float) -> float:
        result = simulate(
            scenario, runs=_RUNS, seed=_SEED, catalog=_with_mfu(cat, key, value, count)
        )
        return _median(result.samples("mfu"), f"training measurement on {key}")

    return predict


def _mfu_prior(m: TrainingMeasurement, cat: Catalog, count: float) -> tuple[float, float]:
    """(mu, sigma) of the log MFU at the reference scale under the built-in priors: their
    prediction for the measured configuration, inverted at its 5/50/95 % quantiles."""
    prior = simulate(_scenario(m), runs=4 * _RUNS, seed=_SEED, catalog=cat)
    low, mid, high = np.quantile(prior.samples("mfu"), [0.05, 0.5, 0.95])
    predict = _mfu_predictor(m, cat, count)
    logs = [_invert(predict, float(q), "the prior's MFU")[0] for q in (low, mid, high)]
    return logs[1], (logs[2] - logs[0]) / (2.0 * _Z95)


def _record(
    name: str,
    prior: tuple[float, float],
    post: tuple[float, float],
    own: Sequence[tuple[float, float, str]],
    pooled: int,
) -> CalibratedPrior:
    """The record of one calibrated prior; ``own``: (y, v, label) of its chip's evidence."""
    flags = []
    for y, v, label in own:
        z = outlier(y, prior, v)
        if abs(z) > OUTLIER_Z:
            flags.append(
                f"{label} implies {math.exp(y):.3g}, {abs(z):.1f} standard deviations "
                f"{'above' if z > 0 else 'below'} the prior median {math.exp(prior[0]):.3g}: "
                "likely a unit or configuration error (per-chip vs per-replica throughput, "
                "chips, precision, model); used all the same"
            )
    for flag in flags:
        warnings.warn(f"{name}: {flag}", CalibrationWarning, stacklevel=4)
    return CalibratedPrior(
        name=name,
        measurements=len(own),
        pooled=pooled,
        prior=quantiles(*prior),
        posterior=quantiles(*post),
        flags=tuple(flags),
    )


Evidence = list[tuple[str, float, float, str]]
"""(chip, implied log-value, noise variance, label) of each used measurement."""


def _noise(stated: float | None, kind: str) -> float:
    """The record's own noise, else the shipped default for its kind."""
    if stated is not None:
        return stated
    p = calibration_priors()
    default = p.serving_noise if kind == "serving" else p.training_noise
    return float(default.dist().expected_value())


def _saturated(m: ServingMeasurement) -> bool:
    """Whether a serving run measured the capacity: offline, closed loop, or an open loop
    whose delivered output falls short of the offered load by more than
    ``_SATURATED_SHARE``."""
    if m.request_rate_rps is None or m.concurrency is not None:
        return True
    offered = m.request_rate_rps * m.output_tokens / (m.chips or m.chips_per_replica)
    return m.output_tokens_per_s_per_chip <= _SATURATED_SHARE * offered


def _serving_evidence(serving: Sequence[ServingMeasurement], cat: Catalog) -> Evidence:
    evidence: Evidence = []
    for m in serving:
        label = _label(m)
        if not _saturated(m):
            warnings.warn(
                f"{label}: at a request rate of {m.request_rate_rps:g}/s the endpoint "
                "delivered the offered load, so the run bounds the capacity rather than "
                "measures it; not used (measure offline, request rate inf, closed-loop at a "
                "concurrency that fills the replica, or at a rate above the capacity)",
                CalibrationWarning,
                stacklevel=3,
            )
            continue
        y, edge = _implied_efficiency(m, cat)
        if edge:
            warnings.warn(f"{label}: {edge}", CalibrationWarning, stacklevel=3)
        evidence.append((cat.chip(m.chip).id, y, _noise(m.noise, "serving") ** 2, label))
    return evidence


def _calibrate_serving(
    serving: Sequence[ServingMeasurement], cat: Catalog
) -> tuple[dict[str, Prior], list[CalibratedPrior]]:
    evidence = _serving_evidence(serving, cat)
    rho = float(calibration_priors().efficiency_chip_correlation.dist().expected_value())
    out: dict[str, Prior] = {}
    records: list[CalibratedPrior] = []
    for stack in sorted({cat.chip(c).software_stack for c, *_ in evidence}):
        group = sorted(c for c, chip in cat.chips.items() if chip.software_stack == stack)
        base = {c: cat.serving_priors.efficiency_for(c, stack) for c in group}
        priors = {c: log_normal_params(base[c].dist()) for c in group}
        inside = [(c, y, v) for c, y, v, _ in evidence if c in base]
        post = pooled_posterior(priors, rho, inside)
        for c in group:
            own = [(y, v, label) for chip, y, v, label in evidence if chip == c]
            name = f"priors.serving.efficiency_by_chip.{c}"
            record = _record(name, priors[c], post[c], own, len(inside))
            out[c] = posterior_prior(base[c], *post[c], record)
            records.append(record)
    return out, records


def _calibrate_training(
    training: Sequence[TrainingMeasurement], cat: Catalog
) -> tuple[dict[str, Prior], dict[str, Prior], list[CalibratedPrior]]:
    """Posterior reference MFUs, their reference scales and records, by measured chip."""
    ordered = sorted(training, key=lambda m: m.model_dump_json())  # order-independent prior
    chips = sorted({_key(m, cat) for m in ordered})  # chip ids, "<chip>:moe" for MoE runs
    mine = {c: [m for m in ordered if _key(m, cat) == c] for c in chips}
    # The measured runs' own scale is the reference: their geometric mean chip count.
    count = {
        c: math.exp(math.fsum(math.log(m.count) for m in ms) / len(ms)) for c, ms in mine.items()
    }
    priors = {c: _mfu_prior(mine[c][0], cat, count[c]) for c in chips}
    evidence: Evidence = []
    for m in ordered:
        chip = _key(m, cat)
        label = _label(m)
        y, edge = _invert(_mfu_predictor(m, cat, count[chip]), measured_mfu(m, cat), label)
        if edge:
            warnings.warn(f"{label}: {edge}", CalibrationWarning, stacklevel=3)
        evidence.append((chip, y, _noise(m.noise, "training") ** 2, label))
    rho = float(calibration_priors().mfu_chip_correlation.dist().expected_value())
    out: dict[str, Prior] = {}
    records: list[CalibratedPrior] = []
    for kind in sorted({cat.chip(_chip_of(c)).kind for c in chips}):
        group = [c for c in chips if cat.chip(_chip_of(c)).kind == kind]
        inside = [(c, y, v) for c, y, v, _ in evidence if c in group]
        post = pooled_posterior({c: priors[c] for c in group}, rho, inside)
        for c in group:
            own = [(y, v, label) for chip, y, v, label in evidence if chip == c]
            name = f"priors.mfu_reference_by_chip.{c}"
            record = _record(name, priors[c], post[c], own, len(inside))
            out[c] = posterior_prior(_mfu_template(cat, c), *post[c], record)
            records.append(record)
    return out, {c: _reference_chips(cat, count[c]) for c in chips}, records


def _mfu_template(cat: Catalog, key: str) -> Prior:
    """The provenance a calibrated reference MFU starts from: an earlier calibration's, else
    the ceiling prior its runs would draw (the MoE one for ``"<chip>:moe"``)."""
    p = cat.priors
    if key in p.mfu_reference_by_chip:
        return p.mfu_reference_by_chip[key]
    chip = _chip_of(key)
    if key != chip and p.mfu_ceiling_moe is not None:
        return p.mfu_ceiling_moe
    return p.mfu_ceiling_by_chip.get(chip) or p.mfu_ceiling[cat.chip(chip).kind]


def _calibrate_failures(
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
    mu, sigma = math.log(low * high) / 2.0, math.log(high / low) / (2.0 * _Z95)
    return posterior_prior(prior, mu, sigma, record), [record]


def calibrate(measurements: Measurements, *, catalog: Catalog | None = None) -> Catalog:
    """A catalog whose priors are updated by ``measurements`` (Bayesian, conjugate).

    Serving benchmarks update the roofline efficiency of their chip and, partially pooled
    (``data/calibration.yaml``), of the other chips of its software stack; training runs
    update the MFU the team's code reaches at the reference scale on their chip (pooled with
    other measured chips of the kind). Each measurement is inverted through the model at its
    own configuration (model, precision, chips, token lengths; chips, parameters, batch), so
    it informs other shapes and scales through the model, not by copying the number. The
    result records what changed (:attr:`Catalog.calibration`); pass it to the studies with
    ``catalog=``. No measurements: ``catalog`` itself (the active one by default).

    Warns
    -----
    CalibrationWarning
        For a measurement far outside its prior (likely a unit or configuration error; it is
        still used), one at the model's edge, or an open-loop serving run at a finite rate
        (not used: it bounds the capacity only).

    Examples
    --------
    >>> import accelsim as acs
    >>> acs.catalog.calibrate(acs.Measurements()) is acs.catalog.active()
    True
    """
    cat = active() if catalog is None else catalog
    if measurements.count == 0:
        return cat
    efficiency, serving_records = _calibrate_serving(measurements.serving, cat)
    mfu, scale, training_records = (
        _calibrate_training(measurements.training, cat) if measurements.training else ({}, {}, [])
    )
    failures, failure_records = _calibrate_failures(measurements.training, cat)
    records = [*serving_records, *training_records, *failure_records]
    return cat.calibrated(efficiency, mfu, records, scale, failures)


__all__ = ["CalibrationWarning", "calibrate", "measured_mfu"]
