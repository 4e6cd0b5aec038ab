"""acs.catalog.calibrate judged leave-one-out on the published MLPerf Offline rows.

Every Offline row of ``tests/validation/data/inference.csv`` that the serving calibration can
evaluate (40 rows) becomes a :class:`acs.ServingMeasurement`. For each
row, the catalog is calibrated on all the *other* rows and the row is predicted with
``serving_capacity``: its per-chip offline throughput against the calibrated P5-P95.

The rows are different submitters' builds, not repeats of one team's stack: the same
configuration (chip, model, precision, replica size) published by two submitters differs by a
median 12 % (|log error| 0.117 over the 9 such rows with 5 % noise), a standard deviation of
about 0.17. So each row is given ``noise=0.15``; a team's own repeated runs would state less.

Measured (seed 1, 500 runs per prediction; ``PYTHONPATH=src python -m pytest
tests/validation/test_calibrate_loo.py``) on the 40 rows since the set was widened with the
MLPerf v6.0 rows (issue 28; 31 before): P5-P95 coverage 33/40 = 0.825 (the prior: 0.925);
median |log error| of the P50 0.119 (the prior: 0.152); median P95/P5 1.66 (the prior: 2.65).
On the 20 rows whose configuration no other row measured: coverage 20/20 (the prior: 19/20),
median |log error| 0.103 (the prior: 0.128), median P95/P5 2.92 (the prior: 2.30: a row
nothing like it was measured borrows the spread of the measured ones). Three of the seven
misses are the v6.0 DeepSeek-R1 Offline rows on B200 x8, GB200 x72 and GB300 x72 (published
6,752-8,987 per chip, calibrated P95 5,482-7,378): the same configurations were published in v5.1
at 4,024-5,843, and the v6.0 figures are 1.5-1.7x those (pitfall 5 of the README).
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
    assert len(loo) == 40


def test_held_out_rows_are_covered_at_about_the_nominal_rate(loo: list) -> None:  # type: ignore[type-arg]
    # 90 % intervals; 40 rows: 32 or more covered (0.80) is within the binomial spread.
    assert _coverage(loo, 4) >= 0.79
    new = [r for r in loo if not r[1]]
    assert len(new) == 20
    assert _coverage(new, 4) >= 0.79


def test_calibration_cuts_the_error_and_narrows_the_interval(loo: list) -> None:  # type: ignore[type-arg]
    # By a tenth or more (measured 0.17 on all rows and 0.14 on the unmeasured ones; 0.27 and
    # 0.24 on the first 24 rows): the shipped priors pool chips by stack and precision and give
    # FP4 its own efficiency, so less is left for calibration to remove.
    assert _error(loo, 4) <= 0.9 * _error(loo, 3)
    new = [r for r in loo if not r[1]]
    assert _error(new, 4) <= 0.9 * _error(new, 3)
    width = [r[4][2] / r[4][0] for r in loo]
    prior_width = [r[3][2] / r[3][0] for r in loo]
    assert np.median(width) < np.median(prior_width)
