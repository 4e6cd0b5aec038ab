"""Whether a port is worth it for one job: its cost against the job's compute.

A port that costs more than the job's whole compute bill (hardware and energy) cannot pay
for itself within the job, whatever the target chip's price per FLOP: the recommendation
then says the option is "not worth porting for this job" (issue 29: a 7B LoRA fine-tune on
100M tokens has ~$30 of compute and a week of porting to TPU).
"""

from __future__ import annotations

import numpy as np

from accelsim.results._result import Result

# Porting that costs more than the job's whole compute bill cannot pay for itself within the
# job: even a chip that made the compute free would save less than the port costs.
PORTING_NOT_WORTH = 1.0


def porting_over_compute(res: Result) -> float:
    """Median, over runs, of the porting cost over the compute (hardware and energy) cost;
    0 without porting, inf-free: runs without compute cost are left out. [ratio]

    Porting cost is the share ``porting_days / engineering_days`` of the engineering cost
    (calendar days are hours over one team's weekly hours, so the share is the hours').
    """
    need = ("porting_days", "engineering_days", "engineering_cost_usd", "hardware_cost_usd")
    if any(m not in res.data for m in need):
        return 0.0
    eng_days = res.samples("engineering_days")
    compute = res.samples("hardware_cost_usd")
    if "energy_cost_usd" in res.data:
        compute = compute + res.samples("energy_cost_usd")
    ok = (eng_days > 0) & (compute > 0)
    if not ok.any():
        return 0.0
    porting = res.samples("engineering_cost_usd")[ok] * res.samples("porting_days")[ok]
    return float(np.median(porting / eng_days[ok] / compute[ok]))


__all__ = ["PORTING_NOT_WORTH", "porting_over_compute"]
