"""Cost models against published figures and hand calculations.

Figures come from /work/shared/reference (copied here with source, since tests must not read
files outside the repository):

- DGX H100 system max power 10.2 kW for 8 GPUs (NVIDIA spec, reproduced at
  kshirol-dev.github.io/learnAI/AIInfrastructure/08-training-clusters.html; onprem_and_labor.csv).
- H100 SXM TDP 700 W (NVIDIA H100 datasheet; chips.csv). The remaining
  10 200 / 8 - 700 = 575 W per GPU is the host share (CPUs, memory, NICs, fans).
- Industry average PUE 1.58 (Uptime Institute survey, 2023; onprem_and_labor.csv).
- Virginia average industrial electricity price 8.92 US cents/kWh (EIA Electric Power
  Annual, 2023 data; onprem_and_labor.csv).
- DGX H100 price about 270 000 USD, i.e. 33 750 USD per GPU (SemiAnalysis 2023 via Epoch AI;
  onprem_and_labor.csv); 5-year server life (Amazon 10-K, 2025; onprem_and_labor.csv).
- Colocation 184.06 USD/kW-month, 250-500 kW, N. America primary markets (CBRE H2 2024;
  onprem_and_labor.csv).
- H100 on demand: AWS p5.48xlarge 6.88 USD/GPU-h after the June 2025 cut; Lambda 3.99
  USD/GPU-h (prices.csv).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import brentq

from accelsim.models.cost import (
    HOURS_PER_YEAR,
    energy_cost_usd,
    energy_kwh,
    hosting_cost_usd,
    onprem_capex_usd,
    ops_cost_usd,
    rental_cost_usd,
)

GPUS_PER_DGX = 8
DGX_H100_MAX_KW = 10.2
H100_TDP_WATTS = 700.0
HOST_WATTS_PER_GPU = DGX_H100_MAX_KW * 1000.0 / GPUS_PER_DGX - H100_TDP_WATTS  # 575 W
PUE_INDUSTRY_2023 = 1.58
VIRGINIA_USD_PER_KWH = 0.0892
DGX_H100_USD_PER_GPU = 270_000.0 / GPUS_PER_DGX  # 33 750
LIFE_YEARS = 5.0
COLO_USD_PER_KW_MONTH = 184.06
# Operations staff and support: no published figure in the reference data, so none is charged.
OPS_USD_PER_GPU_YEAR = 0.0


def test_dgx_h100_year_at_max_power_energy_and_cost() -> None:
    """A DGX H100 at its 10.2 kW maximum for a Julian year, PUE 1.58, Virginia tariff.

    Hand calculation: 10.2 kW × 8766 h = 89 413.2 kWh of IT energy; × 1.58 = 141 272.856 kWh
    at the meter; × 0.0892 USD/kWh = 12 601.5387552 USD. The model is driven per GPU
    (8 × 8766 chip-hours, 700 W TDP at full power plus 575 W of host share).
    Tolerance rtol 1e-12: the hand values are exact decimals and the model does ~6 roundings.
    """
    kwh = energy_kwh(
        GPUS_PER_DGX * HOURS_PER_YEAR,
        H100_TDP_WATTS,
        1.0,
        PUE_INDUSTRY_2023,
        host_watts_per_chip=HOST_WATTS_PER_GPU,
    )
    assert kwh == pytest.approx(141_272.856, rel=1e-12)
    assert energy_cost_usd(kwh, VIRGINIA_USD_PER_KWH) == pytest.approx(12_601.5387552, rel=1e-12)


def _onprem_usd_per_gpu_year(used_hours: float) -> float:
    """Cost of owning one H100 for a year, used `used_hours` of it, through the model functions.

    Capex, colocation and operations accrue over all 8766 held hours; energy only over the
    used hours (idle draw is neglected, a simplification shared with the closed form).
    """
    held = HOURS_PER_YEAR
    fixed = (
        onprem_capex_usd(1, DGX_H100_USD_PER_GPU, LIFE_YEARS, held)
        + hosting_cost_usd(1, H100_TDP_WATTS, HOST_WATTS_PER_GPU, COLO_USD_PER_KW_MONTH, held)
        + ops_cost_usd(1, OPS_USD_PER_GPU_YEAR, held)
    )
    kwh = energy_kwh(used_hours, H100_TDP_WATTS, 1.0, PUE_INDUSTRY_2023, HOST_WATTS_PER_GPU)
    return float(fixed + energy_cost_usd(kwh, VIRGINIA_USD_PER_KWH))


@pytest.mark.parametrize(
    ("on_demand_usd_per_gpu_hour", "hand_break_even_hours"),
    [(6.88, 1427.7135), (3.99, 2510.5901)],
    ids=["aws-p5-2025", "lambda-2026"],
)
def test_break_even_hours_per_year_onprem_vs_on_demand(
    on_demand_usd_per_gpu_hour: float, hand_break_even_hours: float
) -> None:
    """Hours of use per year above which owning an H100 beats renting it on demand.

    Closed form: u* = F / (p - e) with fixed cost per GPU-year
    F = 33 750 / 5 + 1.275 kW × 184.06 × 12 + 0 = 6750 + 2816.118 = 9566.118 USD and energy
    per used hour e = 1.275 kW × 1.58 × 0.0892 = 0.1796934 USD. By hand: u* = 1427.7135 h at
    6.88 USD/h (16.3 % of the year) and 2510.5901 h at 3.99 USD/h (28.6 %); these literals are
    rounded to 1e-4 h, the tolerance of the first check.

    Second way: the root in u of rental(u) - onprem(u) built from the model functions, by
    Brent's method with xtol 1e-10 h; it must match the closed form to 1e-9 relative (root
    tolerance plus ~10 roundings in each side). Each side of the root must order the options.
    """
    tdp_plus_host_kw = (H100_TDP_WATTS + HOST_WATTS_PER_GPU) / 1000.0
    fixed_usd = (
        DGX_H100_USD_PER_GPU / LIFE_YEARS
        + tdp_plus_host_kw * COLO_USD_PER_KW_MONTH * 12.0
        + OPS_USD_PER_GPU_YEAR
    )
    energy_usd_per_hour = tdp_plus_host_kw * PUE_INDUSTRY_2023 * VIRGINIA_USD_PER_KWH
    closed_form = fixed_usd / (on_demand_usd_per_gpu_hour - energy_usd_per_hour)
    assert closed_form == pytest.approx(hand_break_even_hours, abs=1e-4)

    def rent_minus_own(used_hours: float) -> float:
        rent = float(rental_cost_usd(used_hours, on_demand_usd_per_gpu_hour))
        return rent - _onprem_usd_per_gpu_year(used_hours)

    root = brentq(rent_minus_own, 0.0, HOURS_PER_YEAR, xtol=1e-10, rtol=1e-14)
    assert root == pytest.approx(closed_form, rel=1e-9)
    assert rent_minus_own(0.99 * closed_form) < 0.0  # little use: renting is cheaper
    assert rent_minus_own(1.01 * closed_form) > 0.0  # heavy use: owning is cheaper
    np.testing.assert_allclose(
        rental_cost_usd(closed_form, on_demand_usd_per_gpu_hour),
        _onprem_usd_per_gpu_year(closed_form),
        rtol=1e-12,
    )
