"""``--measurements FILE...`` and ``--measured KEY=VALUE`` of the CLI's study commands: a
catalog calibrated to the team's own measurements (:func:`accelsim.catalog.calibrate`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Annotated

import typer

from accelsim.catalog import Catalog, Measurements
from accelsim.errors import AccelsimError
from accelsim.study import calibrate

_MeasurementFiles = Annotated[
    list[str] | None,
    typer.Option(
        "--measurements",
        metavar="FILE",
        help="Calibrate the priors to your own measurements first: a vLLM 'bench serve "
        "--save-result' JSON, an MLPerf loadgen mlperf_log_summary.txt, or a CSV/YAML of "
        "accelsim's measurement fields. Repeatable.",
        show_default=False,
    ),
]
_MeasuredContext = Annotated[
    list[str] | None,
    typer.Option(
        "--measured",
        metavar="KEY=VALUE",
        help="What the measurement files do not say, e.g. chip=h100-sxm, chips=2, "
        "precision=fp8, model=llama-3.1-70b. Repeatable; applies to every --measurements file.",
        show_default=False,
    ),
]


def _context(pairs: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise AccelsimError(f"--measured takes KEY=VALUE, e.g. chip=h100-sxm, not {pair!r}")
        out[key.strip()] = value.strip()
    return out


def measured_catalog(files: Sequence[str] | None, context: Sequence[str] | None) -> Catalog | None:
    """The calibrated catalog of ``--measurements`` (``None`` without any); its calibrated
    priors, prior against posterior, are listed on stderr."""
    if not files:
        if context:
            raise AccelsimError("--measured describes --measurements files: give one")
        return None
    given = _context(context or ())
    measurements = Measurements()
    for path in files:
        measurements = measurements + Measurements.from_file(path, **given)
    cat = calibrate(measurements)
    print(
        f"accelsim: calibrated to {measurements.count} measurement(s) from {len(files)} file(s):",
        file=sys.stderr,
    )
    for record in cat.calibration:
        if record.measurements:
            print(f"accelsim:   {record.describe()}", file=sys.stderr)
    pooled = sum(1 for r in cat.calibration if not r.measurements)
    if pooled:
        print(
            f"accelsim:   and {pooled} other chip(s) of the same stack or kind, partially pooled",
            file=sys.stderr,
        )
    return cat


__all__ = ["_MeasuredContext", "_MeasurementFiles", "measured_catalog"]
