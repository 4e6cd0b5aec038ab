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

What is calibrated, hierarchically (:func:`accelsim.catalog.posterior.hierarchical_posterior`):
a measured *configuration* is known to its noise, other configurations on its chip and
other chips of its group learn from it in part.

- serving: the roofline efficiency of each measured configuration (chip, model, precision,
  chips per replica: ``priors.serving.efficiency_by_workload.<key>``) and of every chip of
  a measured chip's software stack for other configurations
  (``priors.serving.efficiency_by_chip.<chip>``), each from the chip's own prior;
- training: the MFU a team's code reaches at the measured scale, for each measured model
  size on its chip (``priors.mfu_reference_by_chip.<chip>/<params>``) and for other sizes
  on the chip (``priors.mfu_reference_by_chip.<chip>``; ``<chip>:moe`` for a mixture of
  experts); its prior is the catalog's prediction for the measured configuration (ceiling,
  learning curve and scaling together), inverted at its 5/50/95 % quantiles;
- the job interruption rate, from interruptions over a stated duration (gamma-Poisson).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import replace

from accelsim.catalog import (
    Catalog,
    Measurements,
    Prior,
    ServingMeasurement,
    active,
    serving_workload_key,
)
from accelsim.catalog.posterior import CalibratedPrior, calibration_priors, log_normal_params
from accelsim.engines import offline_capacity
from accelsim.seeding import as_seed_sequence
from accelsim.study._calibrate_common import (
    RUNS,
    SEED,
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
from accelsim.study._calibrate_training import (
    calibrate_failures,
    calibrate_training,
    measured_mfu,
)

# An open-loop run delivering less than this share of its offered output tokens could not keep
# up: it ran saturated, at its capacity (a convention; run-to-run noise is a few per cent).
_SATURATED_SHARE = 0.9


def _workload(m: ServingMeasurement, cat: Catalog) -> str:
    return serving_workload_key(cat.chip(m.chip).id, m.model, m.precision, m.chips_per_replica)


def _with_efficiency(cat: Catalog, key: str, value: float, template: Prior) -> Catalog:
    """``cat`` with the efficiency of the configuration ``key`` fixed at ``value``."""
    sp = cat.serving_priors
    fixed = template.model_copy(update={"value": value})
    serving = sp.model_copy(
        update={"efficiency_by_workload": {**sp.efficiency_by_workload, key: fixed}}
    )
    return replace(cat, serving_priors=serving)


def _implied_efficiency(m: ServingMeasurement, cat: Catalog) -> tuple[float, str]:
    """log of the efficiency whose median offline throughput per chip, at the measured
    configuration, is the measured one (and a flag at the edge of (0, 1])."""
    s, key = scenario(m), _workload(m, cat)
    chip = cat.chip(m.chip)
    template = cat.serving_priors.efficiency_for(chip.id, chip.software_stack)
    root = as_seed_sequence(SEED)  # the draws serving_capacity makes for this seed

    def predict(value: float) -> float:
        calibrated = _with_efficiency(cat, key, value, template)
        return median(offline_capacity(s, root, RUNS, cat=calibrated), label(m))

    return invert(predict, m.output_tokens_per_s_per_chip, label(m))


def _saturated(m: ServingMeasurement) -> bool:
    """Whether a serving run measured the capacity: offline, closed loop, or an open loop
    whose delivered output falls short of the offered load by more than
    ``_SATURATED_SHARE``."""
    if m.request_rate_rps is None or m.concurrency is not None:
        return True
    offered = m.request_rate_rps * m.output_tokens / (m.chips or m.chips_per_replica)
    return m.output_tokens_per_s_per_chip <= _SATURATED_SHARE * offered


def _serving_evidence(serving: Sequence[ServingMeasurement], cat: Catalog) -> list[Evidence]:
    evidence = []
    for m in serving:
        if not _saturated(m):
            warnings.warn(
                f"{label(m)}: at a request rate of {m.request_rate_rps:g}/s the endpoint "
                "delivered the offered load, so the run bounds the capacity rather than "
                "measures it; not used (measure offline, request rate inf, closed-loop at a "
                "concurrency that fills the replica, or at a rate above the capacity)",
                CalibrationWarning,
                stacklevel=3,
            )
            continue
        y, edge = _implied_efficiency(m, cat)
        if edge:
            warnings.warn(f"{label(m)}: {edge}", CalibrationWarning, stacklevel=3)
        v = noise(m.noise, "serving") ** 2
        evidence.append(Evidence(cat.chip(m.chip).id, _workload(m, cat), y, v, label(m)))
    return evidence


def _calibrate_serving(
    serving: Sequence[ServingMeasurement], cat: Catalog
) -> tuple[dict[str, Prior], dict[str, Prior], list[CalibratedPrior]]:
    """Posterior efficiencies by chip (other configurations) and by measured configuration,
    for every chip of each measured software stack, and their records."""
    evidence = _serving_evidence(serving, cat)
    p = calibration_priors()
    by_chip: dict[str, Prior] = {}
    by_config: dict[str, Prior] = {}
    records: list[CalibratedPrior] = []
    for stack in sorted({cat.chip(e.chip).software_stack for e in evidence}):
        members = sorted(c for c, chip in cat.chips.items() if chip.software_stack == stack)
        templates = {c: cat.serving_priors.efficiency_for(c, stack) for c in members}
        group = Group(
            priors={c: log_normal_params(t.dist()) for c, t in templates.items()},
            templates=templates,
            rho=float(p.efficiency_chip_correlation.dist().expected_value()),
            share=float(p.efficiency_config_share.dist().expected_value()),
            chip_name="priors.serving.efficiency_by_chip.{}",
            config_name="priors.serving.efficiency_by_workload.{}",
        )
        chips, configs, done = update_group(group, evidence)
        by_chip |= chips
        by_config |= configs
        records += done
    return by_chip, by_config, records


def calibrate(measurements: Measurements, *, catalog: Catalog | None = None) -> Catalog:
    """A catalog whose priors are updated by ``measurements`` (Bayesian, conjugate).

    Serving benchmarks update the roofline efficiency of their configuration (chip, model,
    precision, chips per replica) and, for other configurations, of their chip and, partially
    pooled (``data/calibration.yaml``), of the other chips of its software stack. Training
    runs update the MFU the team's code reaches on their chip at the measured scale, for the
    measured model size and, less, for others; interruptions over a stated duration update
    the job interruption rate. Each measurement is inverted through the model at its own
    configuration, so it informs other shapes and scales through the model, not by copying
    the number. The result records what changed (:attr:`Catalog.calibration`); pass it to
    the studies with ``catalog=``. No measurements: ``catalog`` itself (the active one by
    default).

    Warns
    -----
    CalibrationWarning
        For a measurement far outside its prior (likely a unit or configuration error; it is
        still used), one at the model's edge, or an open-loop serving run that kept up with
        its rate (not used: it bounds the capacity only).

    Raises
    ------
    ValueError
        For a measurement whose configuration the model cannot run (naming it).

    Examples
    --------
    >>> import accelsim as acs
    >>> acs.catalog.calibrate(acs.Measurements()) is acs.catalog.active()
    True
    """
    cat = active() if catalog is None else catalog
    if measurements.count == 0:
        return cat
    efficiency, workloads, serving_records = _calibrate_serving(measurements.serving, cat)
    mfu, scales, training_records = (
        calibrate_training(measurements.training, cat) if measurements.training else ({}, {}, [])
    )
    failures, failure_records = calibrate_failures(measurements.training, cat)
    return cat.calibrated(
        [*serving_records, *training_records, *failure_records],
        efficiency=efficiency,
        efficiency_workload=workloads,
        mfu=mfu,
        mfu_chips=scales,
        failure_rate=failures,
    )


__all__ = ["CalibrationWarning", "calibrate", "measured_mfu"]
