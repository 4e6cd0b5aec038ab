"""The engine's MFU-at-scale function against MLPerf Training scaling pairs, leave-one-out.

Oracle: MLPerf Training LLM-pretraining results (GPT-3 175B, Llama 3.1 405B and 8B on NVIDIA
H100/H200/B200/GB200, tests/validation/data/mlperf_scaling.csv; GPT-3 on TPU v5p (v4.0) and
TPU v6e (v4.1), mlperf_tpu_gpt3.csv, read from the submission logs) and the benchmarks'
reference convergence points (mlperf_rcp.csv). Every row keeps its source URL.

What is predicted. For each series (one submitter, round, benchmark and chip at several
scales) the smallest scale is the reference and each larger one is held out: the run's
relative efficiency -- chip-time of the reference over chip-time of the held-out run,
(n₁·t₁)/(n₂·t₂), the issue's measure -- is predicted from the reference alone by

    predicted = MFU(n₂)/MFU(n₁) × S(B₁)/S(B₂)

with the MFU ratio from :func:`accelsim.models.perf.mfu_at_scale` -- the function the
analytic engine calls, with the engine's own model-parallel group (the fewest chips that
hold the training state), its pipeline layout (:func:`accelsim.engines.pipeline_layout`),
the catalog's chip and network -- at the rows' published global batches, and S(B) the
benchmark's published samples to converge at batch B (a time-to-target workload needs more
tokens at a larger batch; ``rcp_checker`` interpolates the RCP means the same way). Nothing
is fitted: the scaling model's constants come from ``catalog/data/scaling.yaml``, fitted on
one non-MLPerf pair (Llama 3), and no row's outcome enters its own prediction.

The measured time is MLPerf's time to train, which the RCP checker already normalised to
S(B) (``time_to_train = raw × rcp_scaling_factor``); the raw figure (divided by the factor)
is reported beside it. For the TPU rows the time is the steady throughput of the logged
blocks (tokens per second), so their measured efficiency is the throughput ratio times
S(B₁)/S(B₂) from the RCPs; the one raw time-to-train ratio read from the logs is checked
separately.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import accelsim as acs
from accelsim import catalog
from accelsim.catalog import builtin_catalog
from accelsim.engines import pipeline_layout
from accelsim.models import perf
from accelsim.scenario import TrainingRun

DATA = Path(__file__).parent / "data"
TOLERANCE = 0.10  # the issue's criterion: within ±0.10 of the measured efficiency
# Layers and width of each benchmark's model: GPT-3 175B, arXiv:2005.14165 table 2.1;
# Llama 3.1 405B and 8B, arXiv:2407.21783 table 3.
LAYERS = {"gpt3": 96, "llama31_405b": 126, "llama31_8b": 32}
D_MODEL = {"gpt3": 12288, "llama31_405b": 16384, "llama31_8b": 4096}
# MLPerf accelerator family -> catalog chip (the engine's specs and network).
CHIPS = {
    "NVIDIA H100-SXM": "h100-sxm",
    "NVIDIA H200": "h200",
    "NVIDIA B200": "b200",
    "NVIDIA GB200": "gb200",
    "NVIDIA GB300": "gb300",
    "Google TPU v5p": "tpu-v5p",
    "Google TPU v6e": "tpu-v6e",
}
_HBM_SHARE = 0.9  # the engine's usable HBM share for the model-parallel group


@dataclass(frozen=True)
class Pair:
    series: str
    chip: str
    kind: str
    chips_ref: int
    chips: int
    measured: float
    predicted: float
    raw: float

    @property
    def ok(self) -> bool:
        return abs(self.predicted - self.measured) <= TOLERANCE

    @property
    def size(self) -> str:
        """Pair size class by the chip ratio."""
        ratio = self.chips / self.chips_ref
        return "x<=2" if ratio <= 2 else ("2<x<=8" if ratio <= 8 else "x>8")


def _samples_to_converge(benchmark: str, version: str, batch_seqs: np.ndarray) -> np.ndarray:
    """Olympic-mean RCP samples at each batch, linearly interpolated (clipped at the ends)."""
    rcp = pd.read_csv(DATA / "mlperf_rcp.csv")
    rcp = rcp[(rcp["benchmark"] == benchmark) & (rcp["rcp_version"].astype(str) == version)]
    seq = float(
        pd.read_csv(DATA / "mlperf_benchmarks.csv").set_index("benchmark").loc[benchmark, "seq_len"]
    )
    batches, means = [], []
    for row in rcp.sort_values("global_batch_seqs").itertuples():
        runs = np.sort([float(v) for v in str(row.epochs_to_converge).split(";")])
        mean = runs[1:-1].mean() / (seq if row.unit == "tokens" else 1.0)
        batches.append(float(row.global_batch_seqs))
        means.append(mean)
    return np.interp(batch_seqs, batches, means)


def _mfu_ratio(
    benchmark: str, chip_id: str, chips: np.ndarray, batch_seqs: np.ndarray
) -> np.ndarray:
    """MFU(n)/MFU(n[0]) from the engine's function at the published batches."""
    cat = builtin_catalog()
    chip = cat.chip(chip_id)
    bench = pd.read_csv(DATA / "mlperf_benchmarks.csv").set_index("benchmark").loc[benchmark]
    params, seq = float(bench["params"]), int(bench["seq_len"])
    work = TrainingRun(
        params=params,
        tokens=1e12,
        layers=LAYERS[benchmark],
        seq_len=seq,
        d_model=D_MODEL[benchmark],
    )
    group = perf.min_chips_to_fit(
        params, chip.hbm_gib, sharding="zero3", usable_fraction=_HBM_SHARE
    )
    tokens = batch_seqs * seq
    mfu_ref = 0.4  # sets the level only; the ratio is what is compared
    got = perf.mfu_at_scale(
        mfu_ref,
        chips,
        params=params,
        chips_ref=chips[0],
        params_ref=params,
        model_parallel_chips=group,
        batch=perf.BatchPrior(
            base_tokens=tokens[0],
            tokens_per_chip=0.0,
            ceiling_tokens=np.inf,
            fixed_tokens=tokens,
            reference_tokens=tokens[0],
        ),
        layout=lambda g: pipeline_layout(work, chip, g, cat),
        network={
            "peak_tflops": chip.peak_tflops("fp8"),
            "scale_up_domain_chips": chip.scale_up_domain_chips,
            "scale_up_gbps": chip.interconnect_gbps,
            "scale_out_gbps": chip.scale_out_gbps,
            "overlap": catalog.scaling_defaults().overlap,
        },
        tensor=perf.TensorTraffic(
            collectives_per_layer=cat.scaling.tensor_parallel_collectives_per_layer,
            overlap=cat.scaling.tensor_parallel_overlap,
            bytes_per_activation=cat.scaling.activation_bytes,
        ),
    )
    return np.asarray(got) / mfu_ref


def _gpu_pairs() -> list[Pair]:
    runs = pd.read_csv(DATA / "mlperf_scaling.csv")
    bench = pd.read_csv(DATA / "mlperf_benchmarks.csv").set_index("benchmark")
    runs = runs[runs["global_batch_seqs"].notna() & runs["accelerator_family"].isin(CHIPS)]
    pairs: list[Pair] = []
    for series, rows in runs.groupby("scaling_series_id", sort=True):
        rows = rows.sort_values("num_accelerators", kind="stable")
        if rows["num_accelerators"].nunique() < 2:
            continue  # the engine's own layout is used, so a published layout change is kept
        name = str(rows["benchmark"].iloc[0])
        versions = dict(
            v.split(":") for v in str(bench.loc[name, "rcp_version_by_round"]).split(";")
        )
        chips = rows["num_accelerators"].to_numpy(float)
        batch = rows["global_batch_seqs"].to_numpy(float)
        minutes = rows["time_to_train_min"].to_numpy(float)
        raw = minutes / rows["rcp_scaling_factor"].to_numpy(float)
        s = _samples_to_converge(name, versions[str(rows["round"].iloc[0])], batch)
        chip = CHIPS[str(rows["accelerator_family"].iloc[0])]
        ratio = _mfu_ratio(name, chip, chips, batch)
        pairs.extend(
            Pair(
                str(series),
                chip,
                "gpu",
                int(chips[0]),
                int(chips[i]),
                measured=float(chips[0] * minutes[0] / (chips[i] * minutes[i])),
                predicted=float(ratio[i] * s[0] / s[i]),
                raw=float(chips[0] * raw[0] / (chips[i] * raw[i])),
            )
            for i in range(1, len(rows))
        )
    return pairs


def _tpu_pairs() -> list[Pair]:
    """Each TPU series of mlperf_tpu_gpt3.csv (one round and chip), referred to its
    smallest scale: GPT-3 on v5p (v4.0, one ICI pod) and on v6e (v4.1, 256-chip slices
    over DCN)."""
    data = pd.read_csv(DATA / "mlperf_tpu_gpt3.csv")
    versions = dict(
        v.split(":")
        for v in str(
            pd.read_csv(DATA / "mlperf_benchmarks.csv")
            .set_index("benchmark")
            .loc["gpt3", "rcp_version_by_round"]
        ).split(";")
    )
    pairs: list[Pair] = []
    for (round_, family), rows in data.groupby(["round", "accelerator_family"], sort=True):
        rows = rows.sort_values("num_accelerators")
        chips = rows["num_accelerators"].to_numpy(float)
        batch = rows["global_batch_seqs"].to_numpy(float)
        per_chip = rows["block_tokens"] / rows["block_seconds"] / rows["num_accelerators"]
        throughput = per_chip.to_numpy(float) / float(per_chip.iloc[0])
        s = _samples_to_converge("gpt3", versions[str(round_)], batch)
        chip = CHIPS[str(family)]
        ratio = _mfu_ratio("gpt3", chip, chips, batch)
        pairs.extend(
            Pair(
                f"{round_}|Google|gpt3|{family}",
                chip,
                "tpu",
                int(chips[0]),
                int(chips[i]),
                measured=float(throughput[i] * s[0] / s[i]),
                predicted=float(ratio[i] * s[0] / s[i]),
                raw=float("nan"),
            )
            for i in range(1, len(rows))
        )
    return pairs


@pytest.fixture(scope="module")
def pairs() -> list[Pair]:
    return _gpu_pairs() + _tpu_pairs()


def _share(pairs: list[Pair]) -> float:
    return float(np.mean([p.ok for p in pairs])) if pairs else float("nan")


def test_held_out_pairs_meet_the_issue_target(pairs: list[Pair]) -> None:
    """At least 60 % of held-out pairs within ±0.10 (issue 29's target), on >= 25 pairs."""
    assert len(pairs) >= 25
    assert _share(pairs) >= 0.60, "\n".join(
        f"{p.series} {p.chips_ref}->{p.chips}: {p.measured:.3f} vs {p.predicted:.3f}"
        for p in pairs
        if not p.ok
    )


def test_the_model_beats_free_scaling(pairs: list[Pair]) -> None:
    """What the engine did before issue 29 (efficiency 1 below its reference scale) meets
    ±0.10 on under half of the same pairs; the model on well over half."""
    free = float(np.mean([abs(1.0 - p.measured) <= TOLERANCE for p in pairs]))
    assert free < 0.5 < _share(pairs)


def test_gpt3_h100_series_six_of_eight(pairs: list[Pair]) -> None:
    """NVIDIA's public GPT-3 175B H100 series (v3.1 768 -> 4,096-10,752; v4.0 512 -> 10,752
    and 11,616; v4.1 256 -> 512): 6 of the 8 pairs within ±0.10 (the issue's target).
    v3.1's 512-GPU row has no published batch, so its series is referred to 768 GPUs."""
    gpt3 = [p for p in pairs if "|NVIDIA|gpt3|NVIDIA H100-SXM" in p.series]
    assert len(gpt3) == 8
    assert sum(p.ok for p in gpt3) >= 6, gpt3


def test_every_class_is_reported_and_none_collapses(pairs: list[Pair]) -> None:
    """Per class (pair size, chip, TPU vs GPU): each class with 3+ pairs keeps at least
    40 % within ±0.10, so the overall share is not one easy class carrying the rest."""
    classes: dict[str, list[Pair]] = {}
    for p in pairs:
        for key in (f"size {p.size}", f"chip {p.chip}", f"kind {p.kind}"):
            classes.setdefault(key, []).append(p)
    assert {"kind gpu", "kind tpu"} <= set(classes)
    weak = {k: _share(v) for k, v in classes.items() if len(v) >= 3 and _share(v) < 0.40}
    assert not weak, weak


def test_tpu_v5p_pairs_within_tolerance(pairs: list[Pair]) -> None:
    """The v5p series (512 -> 1,024 / 1,536 / 6,144 chips, one ICI pod): the throughput per
    chip is flat (343-348 tokens/s), and the efficiency falls by the convergence cost of
    the larger batch (2,048 -> 6,144 sequences), which the RCPs give."""
    tpu = [p for p in pairs if p.chip == "tpu-v5p"]
    assert len(tpu) == 3
    assert all(p.ok for p in tpu), tpu


def test_tpu_v6e_pairs_within_tolerance(pairs: list[Pair]) -> None:
    """The v6e (Trillium) series of MLPerf v4.1 (512 -> 1,024 / 2,048 / 3,072 chips, 2-12
    slices of 256 chips over the data-centre network): held out like the rest (no scaling
    constant was fitted on it). The throughput per chip falls 4 % from 512 to 3,072 chips
    (385 -> 368 tokens/s) and the batch grows 1,536 -> 6,144 sequences; all three pairs
    within ±0.10, 512 -> 3,072 included (the issue's second TPU pair)."""
    tpu = [p for p in pairs if p.chip == "tpu-v6e"]
    assert [(p.chips_ref, p.chips) for p in tpu] == [(512, 1024), (512, 2048), (512, 3072)]
    assert all(p.ok for p in tpu), tpu


@pytest.mark.parametrize(
    ("family", "chip", "version", "published"),
    [("Google TPU v5p", "tpu-v5p", "3.0.0", 0.786), ("Google TPU v6e", "tpu-v6e", "3.0.0", 0.827)],
)
def test_raw_tpu_time_to_train_ratio_matches_the_prediction(
    family: str, chip: str, version: str, published: float
) -> None:
    """The raw time-to-train pair of each TPU series read from the logs (v5p 512 -> 6,144
    chips, v6e 512 -> 3,072; run_start -> run_stop of result_0): (n₁t₁)/(n₂t₂) = 0.786 and
    0.827, the issue's "0.78" and "0.82"; the prediction (MFU ratio x the RCP convergence
    ratio) lies within ±0.10 of each. The rest of the gap is the per-run overhead
    (first-block compilation, evaluation) and the runs' own sample counts."""
    rows = pd.read_csv(DATA / "mlperf_tpu_gpt3.csv")
    rows = rows[rows["accelerator_family"] == family].dropna(subset=["run_minutes"])
    rows = rows.sort_values("num_accelerators").iloc[[0, -1]]
    n = rows["num_accelerators"].to_numpy(float)
    t = rows["run_minutes"].to_numpy(float)
    measured = n[0] * t[0] / (n[1] * t[1])
    assert measured == pytest.approx(published, abs=0.001)
    batch = rows["global_batch_seqs"].to_numpy(float)
    s = _samples_to_converge("gpt3", version, batch)
    predicted = _mfu_ratio("gpt3", chip, n, batch)[1] * s[0] / s[1]
    assert abs(predicted - measured) <= TOLERANCE


def test_the_engine_reproduces_the_function_at_the_published_batch() -> None:
    """The analytic engine itself (``acs.simulate``, default priors, the rows' batches as
    ``global_batch_tokens``) on GPT-3 175B, H100, 512 -> 10,752 GPUs (MLPerf v4.0): its
    median MFU ratio times the RCP convergence ratio is within ±0.10 of the measured 0.651
    (the engine before issue 29 gave 1.000)."""
    rows = pd.read_csv(DATA / "mlperf_scaling.csv")
    rows = rows[rows["scaling_series_id"] == "v4.0|NVIDIA|gpt3|NVIDIA H100-SXM"]
    rows = rows.set_index("num_accelerators")
    seq = 2048.0

    def median_mfu(chips: int) -> float:
        work = acs.TrainingRun(
            params=175e9,
            tokens=1e11,
            layers=96,
            seq_len=2048,
            d_model=12288,
            precision="fp8",
            global_batch_tokens=float(rows.loc[chips, "global_batch_seqs"]) * seq,
        )
        scenario = acs.Scenario(
            name=f"gpt3-{chips}",
            workload=work,
            fleet=[acs.Pool(chip="h100-sxm", count=chips, provider=None)],
            assumptions=acs.Assumptions(lead_time_days=0.0, porting_hours=0.0),
        )
        return float(np.median(acs.simulate(scenario, runs=300, seed=0).samples("mfu")))

    n1, n2 = 512, 10752
    measured = n1 * rows.loc[n1, "time_to_train_min"] / (n2 * rows.loc[n2, "time_to_train_min"])
    batch = rows.loc[[n1, n2], "global_batch_seqs"].to_numpy(float)
    s = _samples_to_converge("gpt3", "3.0.0", batch)
    predicted = median_mfu(n2) / median_mfu(n1) * s[0] / s[1]
    assert measured == pytest.approx(0.651, abs=0.001)
    assert abs(predicted - measured) <= TOLERANCE


def scaling_report(pairs: list[Pair]) -> str:
    """The per-class table docs/calibration.md quotes (``python -m`` this file prints it)."""
    lines = ["| class | pairs | within ±0.10 |", "|---|---|---|"]
    classes: dict[str, list[Pair]] = {"all": pairs}
    for p in pairs:
        for key in (f"pair size {p.size}", f"chip {p.chip}", f"{p.kind.upper()}"):
            classes.setdefault(key, []).append(p)
    for key, group in classes.items():
        lines.append(f"| {key} | {len(group)} | {sum(p.ok for p in group)} ({_share(group):.0%}) |")
    return "\n".join(lines)


if __name__ == "__main__":
    found = _gpu_pairs() + _tpu_pairs()
    for p in found:
        print(
            f"{p.series:50s} {p.chips_ref:>6}->{p.chips:<6} measured {p.measured:.3f} "
            f"raw {p.raw:.3f} predicted {p.predicted:.3f} {'ok' if p.ok else 'MISS'}"
        )
    print(scaling_report(found))
