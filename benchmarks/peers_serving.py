"""Peers on the serving validation set: NVIDIA aiconfigurator and GenZ (PyPI ``genz-llm``).

Predicts the per-chip output tokens/s of every row of ``tests/validation/data/inference.csv``
that a peer can express and writes one line per (peer, row) to a CSV that
``accelsim.serving_calibration`` reads to print the peers' errors beside ours (the page never
needs the peers installed). Not part of the package and not run by the tests. Run with the
peers on the path and nothing of accelsim (they bring their own numpy and pandas)::

    pip install --target /tmp/peers aiconfigurator==0.12.0 genz-llm==0.0.16
    PYTHONPATH=/tmp/peers python benchmarks/peers_serving.py \
        tests/validation/data/inference.csv tests/validation/data/serving_peers.csv

Rows: those the calibration page rates, i.e. a numeric per-chip throughput, numeric mean input
and output lengths, a stated precision (fp8, fp4, bf16), and either an offline or closed-loop
load or p99 TTFT and TPOT bounds. A row is expressed by a peer when the peer ships the chip and
the model (an architecture twin is used where the row's own checkpoint is not shipped: it is
named in the note). The published figure is never read by a prediction; it is copied into the
output only so that the file can be read on its own.

How each peer is used (as shipped; nothing is fitted to the rows):

* **aiconfigurator** (profiled kernels of NVIDIA GPUs): ``cli_exp`` with one aggregated
  (in-flight batching) experiment per row on the row's system size, backend ``trtllm`` (``vllm``
  for rows served by vLLM), quantisation as the row states it (FP8: FP8 GEMM, KV and attention;
  FP4: NVFP4 GEMM and MoE with FP8 KV and attention, as NVFP4 checkpoints declare; DeepSeek-R1:
  block-FP8 attention and FP8 or NVFP4 experts; vLLM: attention left to the backend), the row's
  TTFT / TPOT bounds (Offline and closed loop: no bound, 10^6 ms), and its rank-1 configuration's
  ``tokens/s/gpu``. A config aiconfigurator ships but does not list as a default model
  (Mixtral 8x7B) is passed as a local folder, since the package would fetch it otherwise.
* **GenZ** (roofline operators, no scheduler): for each tensor-parallel size (powers of two
  up to the system, at most 64) and batch (1 to 1,024, powers of two) that fits the chip's
  memory, a replica fills its batch with one prefill of the batch and then decodes ``output``
  tokens at the step latency of the mean context; its per-chip rate is
  ``batch * output / (prefill + output * step) / tp``. Server and Interactive rows keep the
  points whose step latency meets the TPOT bound and whose one-request prefill meets the TTFT
  bound; closed-loop rows cap the batch at the client's concurrency per replica. The best
  point is the prediction. Only GenZ's shipped systems are used (H100, GB200, MI300X, MI325X,
  TPU v6e).
"""

from __future__ import annotations

import contextlib
import csv
import functools
import io
import logging
import math
import re
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

AIC_CHIPS = {
    "h100-sxm": "h100_sxm",
    "h200": "h200_sxm",
    "b200": "b200_sxm",
    "b300": "b300_sxm",
    "gb200": "gb200",
    "gb300": "gb300",
    "l40s": "l40s",
    "rtx-pro-6000": "rtx_pro_6000_server",
}
AIC_MODELS = {
    "llama-2-70b-chat": ("meta-llama/Meta-Llama-3.1-70B", "Llama 3.1 70B config as Llama 2 70B"),
    "llama-3.3-70b-instruct": ("meta-llama/Meta-Llama-3.1-70B", "Llama 3.1 70B config"),
    "llama-3.1-70b-instruct": ("meta-llama/Meta-Llama-3.1-70B", ""),
    "llama-3.1-8b-instruct": ("meta-llama/Meta-Llama-3.1-8B", ""),
    "llama-3.1-405b-instruct": ("meta-llama/Meta-Llama-3.1-405B", ""),
    "mixtral-8x7b-instruct": ("mistralai/Mixtral-8x7B-v0.1", ""),
    "deepseek-r1": ("deepseek-ai/DeepSeek-R1", ""),
}
GENZ_CHIPS = {
    "h100-sxm": "H100_GPU",
    "gb200": "GB200",
    "mi300x": "MI300X",
    "mi325x": "MI325X",
    "tpu-v6e": "TPUv6",
}
GENZ_MODELS = {
    "llama-2-70b-chat": ("meta-llama/Llama-2-70B", ""),
    "llama-3.3-70b-instruct": ("meta-llama/Llama-3.1-70B", "Llama 3.1 70B config"),
    "llama-3.1-70b-instruct": ("meta-llama/Llama-3.1-70B", ""),
    "llama-3.1-8b-instruct": ("meta-llama/Llama-3.1-8B", ""),
    "llama-3.1-405b-instruct": ("meta-llama/Llama-3.1-405B", ""),
    "mixtral-8x7b-instruct": ("mistralai/Mixtral-8x7B", ""),
    "deepseek-r1": ("deepseek-ai/DeepSeek-V3-Base", "DeepSeek-V3 config (same architecture)"),
}
NO_BOUND_MS = 1e6
FIELDS = ["peer", "peer_version", "id", "status", "predicted_per_chip", "published_per_chip",
          "config", "note"]  # fmt: skip


@dataclass(frozen=True)
class Row:
    """What a peer needs of a validation row."""

    id: str
    model: str
    chip: str
    precision: str
    system: int
    isl: float
    osl: float
    published: float
    ttft_ms: float
    tpot_ms: float
    concurrency: int | None
    vllm: bool


def _number(text: str) -> float | None:
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) and value > 0 else None


def rows(csv_path: str) -> list[Row]:
    """The rows the calibration page rates (see the module docstring)."""
    out = []
    with open(csv_path, newline="", encoding="utf-8") as handle:
        for r in csv.DictReader(handle):
            precision = r["precision"].strip().split(" ")[0].lower()
            keys = ("input_tokens", "output_tokens", "throughput_per_accelerator",
                    "accelerators_count")  # fmt: skip
            values = [_number(r[k]) for k in keys]
            if precision not in ("fp8", "fp4", "bf16") or any(v is None for v in values):
                continue
            isl, osl, published, system = (float(v) for v in values)  # type: ignore[arg-type]
            bounds = dict(re.findall(r"(TTFT|TPOT) p99<=([\d,]+) ms", r["latency_constraint"]))
            offline = re.search(r"offline|closed-loop", r["scenario"], re.IGNORECASE)
            if not offline and len(bounds) < 2:
                continue
            ttft = float(bounds["TTFT"].replace(",", "")) if bounds else NO_BOUND_MS
            tpot = float(bounds["TPOT"].replace(",", "")) if bounds else NO_BOUND_MS
            conc = re.search(r"max concurrency (\d+)", r["scenario"])
            out.append(Row(r["id"], r["model"].strip().lower(), r["accelerator"].strip(),
                           precision, int(system), isl, osl, published, ttft, tpot,
                           int(conc.group(1)) if conc else None,
                           "vllm" in r["software"].lower()))  # fmt: skip
    return out


def _aic_quant(row: Row, moe: bool) -> dict[str, str]:
    if row.precision == "bf16":
        return {}
    if row.model == "deepseek-r1":  # block-FP8 attention; experts FP8 or NVFP4 (NVIDIA's FP4)
        experts = "nvfp4" if row.precision == "fp4" else "fp8_block"
        return {"gemm_quant_mode": "fp8_block", "moe_quant_mode": experts,
                "kvcache_quant_mode": "fp8"}  # fmt: skip
    gemm = "nvfp4" if row.precision == "fp4" else "fp8"
    quant = {"gemm_quant_mode": gemm, "kvcache_quant_mode": "fp8"}
    if not row.vllm:  # aiconfigurator's vLLM tables have no FP8 attention
        quant["fmha_quant_mode"] = "fp8"
    return quant | ({"moe_quant_mode": gemm} if moe else {})


@functools.cache
def _aic_model_path(model: str) -> str:
    """The model id, or a folder holding the config aiconfigurator ships for it: a shipped
    config outside its default list (Mixtral) is otherwise fetched from Hugging Face."""
    from aiconfigurator_core.sdk.common import DefaultHFModels
    from aiconfigurator_core.sdk.utils import _get_model_config_path

    shipped = Path(str(_get_model_config_path())) / f"{model.replace('/', '--')}_config.json"
    if model in DefaultHFModels or not shipped.exists():
        return model
    folder = Path(tempfile.mkdtemp(prefix="aic-model-"))
    shutil.copyfile(shipped, folder / "config.json")
    return str(folder)


def aiconfigurator(row: Row) -> tuple[float, str] | str:
    """Rank-1 ``tokens/s/gpu`` of an aggregated aiconfigurator sweep, or why not."""
    from aiconfigurator.cli.api import cli_exp

    if row.chip not in AIC_CHIPS:
        return f"chip {row.chip} not shipped"
    if row.model not in AIC_MODELS:
        return f"model {row.model} not shipped"
    model, note = AIC_MODELS[row.model]
    moe = row.model in ("mixtral-8x7b-instruct", "deepseek-r1")
    exp = {
        "serving_mode": "agg",
        "model_path": _aic_model_path(model),
        "system_name": AIC_CHIPS[row.chip],
        "backend_name": "vllm" if row.vllm else "trtllm",
        "total_gpus": row.system,
        "isl": round(row.isl),
        "osl": round(row.osl),
        "ttft": row.ttft_ms,
        "tpot": row.tpot_ms,
        **_aic_quant(row, moe),
    }
    result = cli_exp(config={"exps": ["row"], "row": exp}, top_n=1)
    best = result.best_configs.get("row")
    if best is None or len(best) == 0:
        return "no configuration meets the bounds"
    top = best.iloc[0]
    config = f"{exp['backend_name']} {top['parallel']} bs {int(top['bs'])} gemm {top['gemm']}"
    return float(top["tokens/s/gpu"]), config + (f"; {note}" if note else "")


def _genz_point(row: Row, model: str, tp: int, batch: int) -> float | None:
    """Per-chip output tokens/s of one (tp, batch) point, or None if it does not fit."""
    from GenZ import decode_moddeling, prefill_moddeling

    system = GENZ_CHIPS[row.chip]
    ctx = round(row.isl + row.osl / 2)
    common = {"model": model, "system_name": system, "bits": row.precision,
              "tensor_parallel": tp}  # fmt: skip
    try:
        step = decode_moddeling(batch_size=batch, input_tokens=ctx, output_tokens=0, **common)
        fill = prefill_moddeling(batch_size=batch, input_tokens=round(row.isl), **common)
        first = prefill_moddeling(batch_size=1, input_tokens=round(row.isl), **common)
    except ValueError:  # GenZ: the weights and KV cache do not fit the chips
        return None
    step_ms, fill_ms, first_ms = (float(o["Latency"]) for o in (step, fill, first))
    if step_ms > row.tpot_ms or first_ms > row.ttft_ms:
        return 0.0
    return batch * row.osl / ((fill_ms + row.osl * step_ms) / 1e3) / tp


def genz(row: Row) -> tuple[float, str] | str:
    """Best per-chip rate over GenZ's (tp, batch) points (module docstring), or why not."""
    if row.chip not in GENZ_CHIPS:
        return f"chip {row.chip} not shipped"
    if row.model not in GENZ_MODELS:
        return f"model {row.model} not shipped"
    model, note = GENZ_MODELS[row.model]
    best, config = 0.0, ""
    for tp in (t for t in (1, 2, 4, 8, 16, 32, 64) if t <= row.system):
        cap = 1024 if row.concurrency is None else max(1, row.concurrency * tp // row.system)
        for batch in (b for b in (2**k for k in range(11)) if b <= cap):
            rate = _genz_point(row, model, tp, batch)
            if rate is None:
                break
            if rate > best:
                best, config = rate, f"TP{tp} batch {batch} bits {row.precision}"
    if best <= 0.0:
        return "no point fits the memory and the bounds"
    return best, config + (f"; {note}" if note else "")


def _quiet(fn: Callable[[Row], tuple[float, str] | str], row: Row) -> tuple[float, str] | str:
    sink = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(sink):
        warnings.simplefilter("ignore")
        try:
            return fn(row)
        except Exception as exc:  # a peer's own refusal is recorded, not hidden
            return f"error: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}"


def main(csv_path: str, out_path: str) -> None:
    """Run both peers on the rows and write ``out_path`` (see the module docstring)."""
    logging.disable(logging.CRITICAL)
    peers = {
        "aiconfigurator": (aiconfigurator, f"aiconfigurator {metadata.version('aiconfigurator')}"),
        "genz": (genz, f"genz-llm {metadata.version('genz-llm')}"),
    }
    with open(out_path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(FIELDS)
        for row in rows(csv_path):
            for peer, (fn, version) in peers.items():
                start = time.perf_counter()
                got = _quiet(fn, row)
                published = f"{row.published:g}"
                if isinstance(got, str):
                    line = [peer, version, row.id, "not expressed", "", published, "", got]
                else:
                    line = [peer, version, row.id, "ok", f"{got[0]:.4g}", published, got[1], ""]
                writer.writerow(line)
                handle.flush()
                seconds = time.perf_counter() - start
                print(f"{peer:15} {row.id:60} {line[3]:14} {line[4]:>10} ({seconds:.1f} s) "
                      f"{line[7]}", file=sys.stderr)  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
