"""The scaling model against MLPerf Training LLM-pretraining scaling series.

Oracle: MLPerf Training v3.0-v5.1 closed-division results (tests/validation/data/
mlperf_scaling.csv, rows of ../shared/reference/validation/mlperf.csv with their source
URLs), the global batch and model-parallel layout of each submission (its config file, URL
in the row) and the benchmark's reference convergence points (RCPs, mlperf_rcp.csv).

What is compared. MLPerf times are time-to-target, so they mix throughput with the samples a
run needs to converge, which grow with the global batch. The RCP checker scores a run that
converged in fewer samples than the RCP mean S(B) at its batch B as if it had needed S(B):
``time_to_train = raw_time * rcp_scaling_factor`` with factor = S(B) / samples of the run.
Dividing the factor out of both the time and the work, the run processed S(B)/factor samples
in time/factor, so its throughput is S(B)/time_to_train and its measured MFU is

    MFU = 6·N·S(B)·seq_len / (n · time_to_train · peak).

The model carries the MFU of each series' smallest assessable scale to its larger scales
(:func:`carry_mfu`, with each row's own batch and layout, its pipeline degree and micro-batch
size read from the published config file's name, and one layer per interleaved chunk as
``catalog/data/scaling.yaml`` states) and predicts the ratio
MFU(n)/MFU(n_ref); the criterion (the issue's) is that it lies within ±10 % of the measured
ratio. Peak is the FP8 dense peak (every
submission here trains in FP8 or FP4); the ratio does not depend on which peak is used.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from accelsim import catalog
from accelsim.models import perf

DATA = Path(__file__).parent / "data"
TOLERANCE = 0.10  # the criterion: predicted efficiency within ±10 % of measured
# Transformer layers of each benchmark's model: GPT-3 175B, arXiv:2005.14165 table 2.1;
# Llama 3.1 405B and 8B, arXiv:2407.21783 table 3.
LAYERS = {"gpt3": 96, "llama31_405b": 126, "llama31_8b": 32}

# Series the model is not run on, with the reason; decided from the data alone (chip specs,
# published configs), before any prediction: the chip must be in the reference chip table,
# the global batch known at two or more scales, and the model-parallel layout the same at all
# of them (the local MFU the model carries belongs to one layout).
EXCLUDED_SERIES = {
    "v3.0|Intel-HabanaLabs|gpt3|Intel Gaudi2": "Gaudi2 is not in ../shared/reference/chips.csv",
    "v3.1|Intel-HabanaLabs|gpt3|Intel Gaudi2": "Gaudi2 is not in ../shared/reference/chips.csv",
    "v5.1|NVIDIA|llama31_8b|NVIDIA GB300": "GB300 is not in ../shared/reference/chips.csv",
    "v3.0|NVIDIA|gpt3|NVIDIA H100-SXM": "global batch known at one scale only (no 64-node config)",
    "v5.1|Nebius|llama31_405b|NVIDIA H200": "no config file with the global batch found",
    "v5.1|NVIDIA|llama31_8b|NVIDIA GB200": "no config file with the global batch found",
    "v5.1|Oracle|llama31_8b|NVIDIA B200": "no config file with the global batch found",
    "v4.0|NVIDIA|gpt3|NVIDIA H100-SXM": "layout changes: TP4 x PP8 at 512 GPUs, TP4 x PP6 above",
    "v5.1|Cisco|llama31_8b|NVIDIA H100-SXM": "layout changes: TP1 at 64 GPUs, TP2 at 128",
}

# Pairs outside ±10 %, found by running this test, each with the reason the model's
# assumptions do not hold there. Listed, not tuned away: the model has no per-series knob.
_DELL_8B = (
    "30 % measured loss from one 8-GPU node to two at an unchanged 2 sequences per GPU, "
    "against 8 % predicted for a bf16 gradient all-reduce at 400 Gb/s per GPU (and ~14 % "
    "even with fp32 gradients): leaving the NVLink node costs this system more than the "
    "nominal NIC bandwidth implies, for reasons the published data does not show. The "
    "8-GPU run's rcp factor is 1, so its work is only bounded below and the true loss is, "
    "if anything, larger"
)
KNOWN_FAILURES = {
    ("v3.1|NVIDIA|gpt3|NVIDIA H100-SXM", 10240): (
        "predicts 15 % more loss than measured: with 8 micro-batches per replica the exposed "
        "DP traffic reaches 0.55 of compute, part of which NeMo hides behind the backward "
        "pass (overlap = 0 charges all of it), and the 8-stage pipeline's bubble (7/96 with "
        "one layer per chunk) adds to it"
    ),
    ("v3.1|NVIDIA|gpt3|NVIDIA H100-SXM", 10752): "as the 10,240-GPU row (-14.0 %)",
    ("v4.1|Oracle|gpt3|NVIDIA H100-SXM", 3072): (
        "19 % measured loss on doubling at the same batch and layout, against 7 % "
        "predicted and 1-7 % errors for NVIDIA's own H100 pairs at this scale: a "
        "fabric-specific cost (Oracle's RoCE cluster) that 400 Gb/s per GPU does not capture"
    ),
    ("v5.1|Dell|llama31_8b|NVIDIA B200", 16): _DELL_8B,
    ("v5.1|Nebius|llama31_8b|NVIDIA B200", 16): (
        "the Dell mechanism, milder (18 % measured, 8 % predicted); the 8 -> 32 GPU pair of "
        "the same series agrees (-2 %)"
    ),
}


def _pipeline(config_url: str) -> tuple[float, float]:
    """(pipeline stages, micro-batch sequences) from a config file name.

    NVIDIA's names spell the layout: ``..._NxGxMINIBSxTPxPP_mbsK.sh`` (GPT-3) or
    ``...xtpTppPcpC...`` (Llama 3.1, micro-batch 1 in those recipes); others have no pipeline.
    """
    name = config_url.rsplit("/", 1)[-1]
    if found := re.search(r"tp\d+pp(\d+)", name):
        return float(found.group(1)), 1.0
    if found := re.search(r"x\d+x(\d+)_mbs(\d+)", name):
        return float(found.group(1)), float(found.group(2))
    return 1.0, 1.0


@dataclass(frozen=True)
class Pair:
    series: str
    chips_ref: int
    chips: int
    measured: float
    predicted: float

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1.0


def _rcp_samples() -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
    """(benchmark, rcp_version) -> (batch sizes, olympic-mean samples to converge)."""
    rcp = pd.read_csv(DATA / "mlperf_rcp.csv")
    bench = pd.read_csv(DATA / "mlperf_benchmarks.csv").set_index("benchmark")
    table: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for row in rcp.itertuples():
        runs = np.sort(np.array([float(v) for v in str(row.epochs_to_converge).split(";")]))
        mean = runs[1:-1].mean()  # drop the fastest and slowest, as rcp_checker does
        if row.unit == "tokens":
            mean /= float(bench.loc[row.benchmark, "seq_len"])
        table.setdefault((row.benchmark, str(row.rcp_version)), []).append(
            (float(row.global_batch_seqs), mean)
        )
    return {k: (np.array([b for b, _ in v]), np.array([s for _, s in v])) for k, v in table.items()}


def _rcp_version(benchmark_row: pd.Series, round_: str) -> str:
    versions = dict(
        item.split(":") for item in str(benchmark_row["rcp_version_by_round"]).split(";")
    )
    return versions[round_]


def agreement() -> list[Pair]:
    """Measured and predicted MFU ratios for every assessable pair of every series."""
    runs = pd.read_csv(DATA / "mlperf_scaling.csv")
    bench = pd.read_csv(DATA / "mlperf_benchmarks.csv").set_index("benchmark")
    systems = pd.read_csv(DATA / "mlperf_systems.csv").set_index("accelerator_family")
    rcp = _rcp_samples()
    runs = runs[~runs["scaling_series_id"].isin(EXCLUDED_SERIES)]
    runs = runs[runs["global_batch_seqs"].notna()]
    pairs: list[Pair] = []
    for series, rows in runs.groupby("scaling_series_id", sort=True):
        rows = rows.sort_values("num_accelerators", kind="stable")
        b = bench.loc[rows["benchmark"].iloc[0]]
        s = systems.loc[rows["accelerator_family"].iloc[0]]
        batches, samples = rcp[(b.name, _rcp_version(b, rows["round"].iloc[0]))]
        # Below the smallest RCP batch the checker uses the smallest RCP, as np.interp does.
        work_seqs = np.interp(rows["global_batch_seqs"].to_numpy(float), batches, samples)
        chips = rows["num_accelerators"].to_numpy(float)
        seconds = rows["time_to_train_min"].to_numpy(float) * 60.0
        peak = float(s["fp8_dense_tflops"])
        mfu = 6.0 * b["params"] * work_seqs * b["seq_len"] / (chips * seconds * peak * 1e12)
        network = {
            "params": float(b["params"]),
            "peak_tflops": peak,
            "scale_up_domain_chips": float(s["scale_up_domain_chips"]),
            "scale_up_gbps": float(s["interconnect_bw_gbps"]),
            "scale_out_gbps": float(s["scale_out_gbps"]),
            "overlap": catalog.scaling_defaults().overlap,
        }
        tokens = rows["global_batch_seqs"].to_numpy(float) * b["seq_len"]
        layout = rows["model_parallel_chips"].to_numpy(float)
        stages, micro = np.array([_pipeline(str(u)) for u in rows["config_url"]]).T
        scaling = catalog.scaling_defaults()
        predicted = perf.carry_mfu(
            mfu[0],
            chips[0],
            chips,
            global_batch_tokens=tokens,
            model_parallel_chips=layout,
            global_batch_tokens_ref=tokens[0],
            model_parallel_chips_ref=layout[0],
            pipeline_chips=stages,
            pipeline_chips_ref=stages[0],
            micro_batch_tokens=micro * b["seq_len"],
            virtual_stages=LAYERS[str(b.name)] / (stages * scaling.layers_per_virtual_stage),
            **network,
        )
        pairs += [
            Pair(str(series), int(chips[0]), int(n), float(m / mfu[0]), float(p / mfu[0]))
            for n, m, p in zip(chips[1:], mfu[1:], predicted[1:], strict=True)
        ]
    return pairs


@pytest.fixture(scope="module")
def pairs() -> list[Pair]:
    return agreement()


def test_every_series_is_assessed_or_excluded_with_a_reason(pairs: list[Pair]) -> None:
    """No series of the data file drops out silently: each is assessed or listed above."""
    runs = pd.read_csv(DATA / "mlperf_scaling.csv")
    assessed = {p.series for p in pairs}
    assert set(runs["scaling_series_id"]) == assessed | set(EXCLUDED_SERIES)
    assert not assessed & set(EXCLUDED_SERIES)
    assert {(p.series, p.chips) for p in pairs} >= set(KNOWN_FAILURES)  # no stale entries


def test_predicted_efficiency_within_10_percent_of_measured(pairs: list[Pair]) -> None:
    """Every assessable pair not listed in KNOWN_FAILURES meets the ±10 % criterion.

    Tolerance: the issue's ±10 %. Scale of the noise it must absorb: the measured ratio
    carries the run-to-run spread of MLPerf times (a few %) and of the RCP means (the
    olympic-mean standard error is 1-3 % of S(B)), so ±10 % is about three of those spreads.
    """
    outside = [
        p for p in pairs if abs(p.error) > TOLERANCE and (p.series, p.chips) not in KNOWN_FAILURES
    ]
    assert not outside, "\n".join(f"{p}: error {p.error:+.1%}" for p in outside)


def test_coverage_of_the_criterion(pairs: list[Pair]) -> None:
    """At least 70 % of the assessable pairs meet ±10 %, and half of each benchmark's.

    A regression floor set below the present share (22 of 28 with the pipeline bubble, 21
    before it; so the listed failures are allowed) and above what ignoring scaling
    achieves: a model with efficiency 1 everywhere meets ±10 % on fewer than half of the
    same pairs, which the second assertion checks.
    """
    ok = [abs(p.error) <= TOLERANCE for p in pairs]
    assert len(pairs) >= 25
    assert np.mean(ok) >= 0.70
    naive = [abs(1.0 / p.measured - 1.0) <= TOLERANCE for p in pairs]
    assert np.mean(naive) < 0.5 < np.mean(ok)
    for bench in ("gpt3", "llama31_405b", "llama31_8b"):
        sub = [o for p, o in zip(pairs, ok, strict=True) if f"|{bench}|" in p.series]
        assert sub, bench
        assert np.mean(sub) >= 0.5, bench
