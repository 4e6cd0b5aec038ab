"""Which calibrated priors a study drew: the records a result carries in its extras."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from accelsim.catalog import Catalog


def calibration_used(cat: Catalog, inputs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The calibration records (:attr:`Catalog.calibration`) of the priors this study drew,
    as plain dicts with a one-line ``summary`` (name, measurements, prior -> posterior);
    empty for an uncalibrated catalog or a study that drew none of them."""
    return [
        {**r.model_dump(mode="json"), "summary": r.describe()}
        for r in cat.calibration
        if r.name in inputs
    ]


__all__ = ["calibration_used"]
