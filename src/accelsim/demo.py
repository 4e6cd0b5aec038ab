"""The built-in default question: a 70B-parameter PyTorch production run, H100 vs TPU v5p.

The two fleets are sized to similar peak bf16 compute (the TPU count is rounded to a
valid v5p slice size from the catalog), so the comparison is about cost per
delivered FLOP, utilisation, porting and waits rather than about raw fleet size.
"""

from __future__ import annotations

from accelsim import catalog
from accelsim.results import render_table
from accelsim.scenario import Pool, Scenario, TrainingRun

GPU_CHIPS = 1024
"""H100s in the GPU option (a common reservation size for a 70B run)."""


def default_scenarios() -> dict[str, Scenario]:
    """The GPU and TPU options of the default comparison, both on-demand."""
    workload = TrainingRun(params=70e9, tokens=2e12, framework="pytorch", stage="production")
    gpu_peak = catalog.chip("h100-sxm").bf16_tflops * GPU_CHIPS
    tpu = catalog.chip("tpu-v5p")
    # Round to a valid slice: above 32 chips, v5p slices are multiples of 64 (4x4x4 cubes).
    multiple = tpu.slice_multiple or 1
    tpu_chips = multiple * round(gpu_peak / tpu.bf16_tflops / multiple)
    return {
        "h100-aws": Scenario(
            name="llama-70b-h100",
            workload=workload,
            fleet=[Pool(chip="h100-sxm", count=GPU_CHIPS, provider="aws", pricing="on_demand")],
        ),
        "tpu-v5p-gcp": Scenario(
            name="llama-70b-tpu-v5p",
            workload=workload,
            fleet=[Pool(chip="tpu-v5p", count=tpu_chips, provider="gcp", pricing="on_demand")],
        ),
    }


def catalog_table(mfu: float = 0.4) -> str:
    """Chips with peak bf16, HBM, power and the cheapest on-demand price, at a stated MFU.

    USD per delivered PFLOP-hour = USD per chip-hour / (peak PFLOP/s x MFU x 3600 s/h) x
    3600, i.e. the price of one PFLOP/s sustained for an hour at that MFU.
    """
    rows = []
    for chip in sorted(catalog.chips().values(), key=lambda c: (c.kind, c.vendor, c.id)):
        offer = catalog.cheapest(chip.id, pricing="on_demand")
        if offer is None or offer.usd_per_chip_hour is None:
            price, per_pflop, where = "-", "-", "no on-demand offer"
        else:
            price = f"{offer.usd_per_chip_hour:.2f}"
            per_pflop = f"{offer.usd_per_chip_hour / (chip.bf16_tflops / 1000 * mfu):.2f}"
            where = f"{offer.provider} ({offer.as_of})"
        power = f"{chip.tdp_watts:.0f}{'*' if chip.tdp_is_assumption else ''}"
        rows.append(
            [
                chip.id,
                chip.kind,
                f"{chip.bf16_tflops:.0f}",
                f"{chip.hbm_gib:.0f}",
                power,
                price,
                per_pflop,
                where,
                f"{chip.sources[0].url} ({chip.sources[0].as_of})",
            ]
        )
    header = [
        "chip",
        "kind",
        "bf16 TFLOP/s",
        "HBM GiB",
        "W",
        "USD/chip-h",
        f"USD/PFLOP-h @MFU {mfu:.0%}",
        "cheapest (as of)",
        "spec source (as of)",
    ]
    note = "* power not published by the vendor: an assumption (see the chip's sources)"
    return f"{render_table(header, rows)}\n{note}"


__all__ = ["catalog_table", "default_scenarios"]
