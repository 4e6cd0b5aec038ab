"""acs.catalog.calibrate judged leave-one-out on the published MLPerf Offline rows.

Every Offline row of ``tests/validation/data/inference.csv`` that the serving calibration can
evaluate (31 rows) becomes a :class:`acs.ServingMeasurement`. For each
row, the catalog is calibrated on all the *other* rows and the row is predicted with
``serving_capacity``: its per-chip offline throughput against the calibrated P5-P95.

The rows are different submitters' builds, not repeats of one team's stack: the same
configuration (chip, model, precision, replica size) published by two submitters differs by a
median 12 % (|log error| 0.117 over the 9 such rows with 5 % noise), a standard deviation of
about 0.17. So each row is given ``noise=0.15``; a team's own repeated runs would state less.

Measured (seed 1, 500 runs per prediction; ``PYTHONPATH=src python -m pytest
tests/validation/test_calibrate_loo.py``) on the 31 rows, at the shipped
``compute_memory_overlap`` 0: P5-P95 coverage 27/31 = 0.871 (the prior: 0.903); median |log
error| of the P50 0.132 (the prior: 0.127); median P95/P5 2.46 (the prior: 2.69). On the 22
rows whose configuration no other row measured: coverage 0.864 (the prior: 0.864), median
|log error| 0.139 (the prior: 0.138), median P95/P5 2.60 (the prior: 2.37: a row nothing like
it was measured borrows the spread of the measured ones). The shipped efficiency priors were
re-centred on these rows' implied efficiencies at overlap 0, so the prior's error here is
in-sample, not held out: calibration from the other rows now matches it rather than cutting
it. At the roofline max with the priors set there (overlap 1), the calibrated error was 0.139
against the prior's 0.167 (0.153 against 0.178 on the 22 rows).
"""

from __future__ import annotations

import csv
import math
import warnings
from pathlib import Path

import numpy as np
import pytest

import accelsim as acs
from accelsim.serving_calibration import _case

CSV = Path(__file__).resolve().parent / "data" / "inference.csv"
NOISE = 0.15  # cross-submitter spread of one configuration (module docstring)


def _rows() -> list[tuple[acs.ServingMeasurement, float]]:
    out = []
    with CSV.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if row["scenario"].strip() != "Offline":
                continue
            case = _case(row)
            if isinstance(case, str):
                continue
            published = float(row["throughput_per_accelerator"])
            m = acs.ServingMeasurement(
                model=case.model.id, precision=case.precision, chip=case.chip.id,
                chips_per_replica=case.chips, input_tokens=case.input_tokens,
                output_tokens=case.output_tokens, output_tokens_per_s_per_chip=published,
                noise=NOISE, source=row["id"],
            )  # fmt: skip
            out.append((m, published))
    return out


def _interval(m: acs.ServingMeasurement, cat: acs.catalog.Catalog | None) -> np.ndarray:
    svc = acs.Serving(model=m.model, precision=m.precision, input_tokens=m.input_tokens,
                      output_tokens=m.output_tokens, rate_rps=1.0,
                      slo=acs.SLO(ttft_ms=1e6, tpot_ms=1e6),
                      chips_per_replica=m.chips_per_replica)  # fmt: skip
    pool = acs.Pool(chip=m.chip, count=m.chips_per_replica, provider=None)
    s = acs.Scenario(name=m.source, workload=svc, fleet=[pool])
    cap = acs.serving_capacity(s, runs=500, seed=1, catalog=cat)
    return np.percentile(cap.samples("offline_tokens_per_s_per_chip"), [5, 50, 95])


@pytest.fixture(scope="module")
def loo() -> list[tuple[str, bool, float, np.ndarray, np.ndarray]]:
    rows = _rows()
    key = [acs.catalog.serving_workload_key(m.chip, m.model, m.precision, m.chips_per_replica)
           for m, _ in rows]  # fmt: skip
    out = []
    for i, (m, published) in enumerate(rows):
        others = [r for j, (r, _) in enumerate(rows) if j != i]
        with warnings.catch_warnings():
            # rows far from the prior (DeepSeek-R1 on B200/GB200) are flagged and used
            warnings.simplefilter("ignore", acs.CalibrationWarning)
            cat = acs.catalog.calibrate(acs.Measurements(serving=others))
        seen = any(k == key[i] for j, k in enumerate(key) if j != i)
        out.append((m.source, seen, published, _interval(m, None), _interval(m, cat)))
    return out


def _coverage(rows: list, which: int) -> float:  # type: ignore[type-arg]
    return float(np.mean([r[which][0] <= r[2] <= r[which][2] for r in rows]))


def _error(rows: list, which: int) -> float:  # type: ignore[type-arg]
    return float(np.median([abs(math.log(r[which][1] / r[2])) for r in rows]))


def test_every_evaluable_offline_row_is_used(loo: list) -> None:  # type: ignore[type-arg]
    assert len(loo) == 31


def test_held_out_rows_are_covered_at_about_the_nominal_rate(loo: list) -> None:  # type: ignore[type-arg]
    # 90 % intervals; 31 rows: 25 or more covered (0.80) is within the binomial spread.
    assert _coverage(loo, 4) >= 0.79
    new = [r for r in loo if not r[1]]
    assert len(new) == 22
    assert _coverage(new, 4) >= 0.79


def test_calibration_keeps_the_error_and_narrows_the_interval(loo: list) -> None:  # type: ignore[type-arg]
    # Held out, the calibrated P50 is within a tenth of the error of priors set with every
    # row in view (measured 0.132 against 0.127, 0.139 against 0.138 on the unmeasured rows)
    # and below the calibrated error at the roofline max (0.139, 0.153).
    assert _error(loo, 4) <= 1.1 * _error(loo, 3)
    assert _error(loo, 4) <= 0.139
    new = [r for r in loo if not r[1]]
    assert _error(new, 4) <= 1.1 * _error(new, 3)
    assert _error(new, 4) <= 0.153
    width = [r[4][2] / r[4][0] for r in loo]
    prior_width = [r[3][2] / r[3][0] for r in loo]
    assert np.median(width) < np.median(prior_width)
