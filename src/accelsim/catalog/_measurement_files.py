"""Read measurement records from the files benchmark tools write, as plain field dicts.

Formats, told apart by content, not by file name:

- vLLM ``vllm bench serve --save-result`` (formerly ``benchmarks/benchmark_serving.py``)
  JSON: ``completed``, ``total_input_tokens``, ``total_output_tokens``,
  ``output_throughput`` [tok/s of the whole endpoint], ``request_rate`` (``"inf"`` for an
  offline run), ``max_concurrency``, ``median_ttft_ms``, ``p99_ttft_ms``, ...;
- GuideLLM's report JSON (``guidellm benchmark --output-path``): one record per entry of
  ``benchmarks``, from ``metrics.output_tokens_per_second.successful.mean``,
  ``prompt_token_count``, ``output_token_count``, the latency summaries [ms] and
  ``config.strategy`` (``throughput``, ``concurrent``, ``constant``, ``poisson``...);
- inference-perf's lifecycle report (``summary_lifecycle_metrics.json``, a stage's
  ``stage_N_lifecycle_metrics.json``): ``successes.throughput.output_tokens_per_sec``, the
  token lengths, latencies [s] and ``load_summary`` (``requested_rate``, ``concurrency``);
- MLPerf loadgen ``mlperf_log_summary.txt``: ``Scenario``, ``Tokens per second`` (LLM
  benchmarks), ``Result is``;
- MLPerf Training MLLOG logs (``:::MLLOG {...}`` lines): ``tracked_stats`` throughput
  [samples/s] x ``max_sequence_length``, ``global_batch_size``: a training measurement;
- a CSV or YAML of :mod:`accelsim.catalog._measurements`'s own field names (YAML:
  ``serving:`` and ``training:`` lists; CSV: one row a record, a ``kind`` column of
  ``serving`` or ``training``).

The caller's ``context`` fills what a file does not state (chip, chips, precision, model) and
overrides what it does. This module returns dicts; validation into the record models happens
in :meth:`accelsim.catalog.Measurements.from_file`.
"""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path
from typing import Any

from accelsim._yaml import load_yaml, to_plain
from accelsim.errors import ScenarioFileError

Record = dict[str, Any]
_SUFFIXES = ("-instruct", "-chat", "-hf", "-fp8", "-fp8-dynamic", "-awq", "-gptq")


def _missing(path: Path, field: str, hint: str) -> ScenarioFileError:
    return ScenarioFileError(f"{path}: missing field {field!r}: {hint}")


def model_id_from_name(name: str) -> str:
    """A preset-like id from a Hugging Face model name or path.

    >>> model_id_from_name("meta-llama/Llama-3.1-70B-Instruct")
    'llama-3.1-70b'
    >>> model_id_from_name("/models/Meta-Llama-3.1-8B-Instruct-FP8")
    'llama-3.1-8b'
    """
    base = name.rstrip("/").split("/")[-1].lower()
    base = base.removeprefix("meta-")
    changed = True
    while changed:
        changed = False
        for suffix in _SUFFIXES:
            if base.endswith(suffix):
                base, changed = base[: -len(suffix)], True
    return base


def _replica_chips(path: Path, context: Record) -> tuple[int, int]:
    """(chips behind the endpoint, chips of one replica) from the context."""
    chips = context.pop("chips", None)
    per_replica = context.pop("chips_per_replica", None)
    if chips is None and per_replica is None:
        raise _missing(
            path, "chips", "the file does not say how many chips served it; pass chips=N "
            "(and chips_per_replica=M if the endpoint ran several replicas)"
        )  # fmt: skip
    chips = int(chips if chips is not None else per_replica)
    return chips, int(per_replica if per_replica is not None else chips)


def _need(path: Path, context: Record, field: str, hint: str) -> Any:
    if context.get(field) is None:
        raise _missing(path, field, hint)
    return context[field]


def _vllm(path: Path, doc: Record, context: Record) -> Record:
    chips, per_replica = _replica_chips(path, context)
    for key in ("completed", "total_input_tokens", "total_output_tokens", "output_throughput"):
        if doc.get(key) is None:
            raise _missing(path, key, "not a complete vLLM bench serve result")
    completed = float(doc["completed"])
    if completed <= 0:
        raise ScenarioFileError(f"{path}: completed: no request completed ({doc['completed']})")
    rate = doc.get("request_rate")
    record: Record = {
        "model": model_id_from_name(str(doc.get("model_id", ""))) or None,
        "chips": chips,
        "chips_per_replica": per_replica,
        "input_tokens": float(doc["total_input_tokens"]) / completed,
        "output_tokens": float(doc["total_output_tokens"]) / completed,
        "output_tokens_per_s_per_chip": float(doc["output_throughput"]) / chips,
        "request_rate_rps": None if rate in (None, "inf") or math.isinf(float(rate)) else rate,
        "concurrency": doc.get("max_concurrency"),
        "ttft_ms": _percentiles(doc, "ttft"),
        "tpot_ms": _percentiles(doc, "tpot"),
        "stack": f"vLLM bench serve ({doc.get('backend') or doc.get('endpoint_type') or 'vllm'})",
        "source": str(path),
    }
    record.update(context)
    _need(path, record, "model", "pass model=<preset id>")
    _need(path, record, "chip", "pass chip=<chip id>, e.g. chip='h100-sxm'")
    _need(path, record, "precision", "pass precision=, e.g. precision='fp8'")
    return record


def _percentiles(doc: Record, metric: str) -> dict[str, float]:
    names = {"mean": f"mean_{metric}_ms", "p50": f"median_{metric}_ms"}
    names |= {f"p{p}": f"p{p}_{metric}_ms" for p in (90, 95, 99)}
    return {k: float(doc[v]) for k, v in names.items() if doc.get(v) is not None}


_MLPERF_LINE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9 ()_/\-]*?)\s*:\s*(.+?)\s*$")


def _mlperf_summary(path: Path, text: str, context: Record) -> Record:
    fields: dict[str, str] = {}
    for line in text.splitlines():
        match = _MLPERF_LINE.match(line)
        if match:
            fields.setdefault(match.group(1).strip(), match.group(2))
    scenario = fields.get("Scenario")
    if scenario is None:
        raise _missing(path, "Scenario", "not an MLPerf loadgen summary")
    if "Tokens per second" not in fields:
        raise _missing(path, "Tokens per second", "only LLM (token) benchmarks calibrate")
    if fields.get("Result is", "VALID").strip() != "VALID":
        raise ScenarioFileError(f"{path}: Result is: {fields['Result is']} (not a valid run)")
    chips, per_replica = _replica_chips(path, context)
    record: Record = {
        "chips": chips,
        "chips_per_replica": per_replica,
        "output_tokens_per_s_per_chip": float(fields["Tokens per second"]) / chips,
        "stack": f"MLPerf loadgen ({fields.get('SUT name', 'SUT')}, {scenario})",
        "source": str(path),
    }
    if scenario.strip() != "Offline":
        target = fields.get("Scheduled samples per second") or fields.get("target_qps")
        record["request_rate_rps"] = float(target) if target is not None else None
    record.update(context)
    for field, hint in (
        ("model", "pass model=<preset id>"),
        ("chip", "pass chip=<chip id>"),
        ("precision", "pass precision="),
        ("input_tokens", "the summary has no token lengths; pass input_tokens="),
        ("output_tokens", "the summary has no token lengths; pass output_tokens="),
    ):
        _need(path, record, field, hint)
    return record


def _get(doc: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(doc, dict) or doc.get(key) is None:
            return None
        doc = doc[key]
    return doc


def _serving_context(path: Path, record: Record, context: Record) -> Record:
    """``record`` with the context laid over, refused if a needed field is still missing."""
    record.update(context)
    _need(path, record, "model", "pass model=<preset id>")
    _need(path, record, "chip", "pass chip=<chip id>, e.g. chip='h100-sxm'")
    _need(path, record, "precision", "pass precision=, e.g. precision='fp8'")
    return record


def _guidellm(path: Path, doc: Record, context: Record) -> list[Record]:
    """One record per benchmark of a GuideLLM report (``guidellm benchmark --output-path``):
    ``benchmarks[i].metrics.<metric>.successful.{mean,median,percentiles}`` and the
    strategy in ``benchmarks[i].config.strategy`` (older reports: ``args.strategy``)."""
    chips, per_replica = _replica_chips(path, context)
    records = []
    for i, bench in enumerate(doc["benchmarks"]):
        metrics = _get(bench, "metrics") or {}
        where = f"benchmarks[{i}].metrics"
        values = {}
        for key in ("output_tokens_per_second", "prompt_token_count", "output_token_count"):
            value = _get(metrics, key, "successful", "mean")
            if value is None:
                raise _missing(path, f"{where}.{key}.successful.mean", "not a GuideLLM report")
            values[key] = float(value)
        strategy = _get(bench, "config", "strategy") or _get(bench, "args", "strategy") or {}
        kind = strategy.get("type_", "throughput")
        record: Record = {
            "chips": chips,
            "chips_per_replica": per_replica,
            "input_tokens": values["prompt_token_count"],
            "output_tokens": values["output_token_count"],
            "output_tokens_per_s_per_chip": values["output_tokens_per_second"] / chips,
            "request_rate_rps": strategy.get("rate") if kind in ("constant", "poisson") else None,
            "concurrency": 1 if kind == "synchronous" else strategy.get("streams"),
            "ttft_ms": _summary_ms(_get(metrics, "time_to_first_token_ms", "successful"), 1.0),
            "tpot_ms": _summary_ms(_get(metrics, "time_per_output_token_ms", "successful"), 1.0),
            "stack": f"GuideLLM ({kind})",
            "source": f"{path}#benchmarks[{i}]",
        }
        records.append(_serving_context(path, record, context))
    return records


def _summary_ms(summary: Any, scale: float) -> dict[str, float]:
    """Mean and percentiles of a tool's latency summary, in ms (``scale``: ms per unit)."""
    if not isinstance(summary, dict):
        return {}
    flat = {**summary, **(summary.get("percentiles") or {})}
    names = {"mean": "mean", "p50": "median", "p90": "p90", "p95": "p95", "p99": "p99"}
    return {k: float(flat[v]) * scale for k, v in names.items() if flat.get(v) is not None}


def _inference_perf(path: Path, doc: Record, context: Record) -> Record:
    """An inference-perf lifecycle report (``summary_lifecycle_metrics.json`` or a stage's):
    ``successes.throughput.output_tokens_per_sec``, the prompt and output lengths
    (``successes.prompt_tokens`` / ``prompt_len`` and ``output_tokens`` / ``output_len``,
    by version), latencies in seconds and the load in ``load_summary``."""
    chips, per_replica = _replica_chips(path, context)
    ok = doc["successes"]
    rate = _get(ok, "throughput", "output_tokens_per_sec")
    if rate is None:
        raise _missing(path, "successes.throughput.output_tokens_per_sec", "no throughput")
    lengths = {}
    for field, keys in (("input_tokens", ("prompt_tokens", "prompt_len")),
                        ("output_tokens", ("output_tokens", "output_len"))):  # fmt: skip
        found = next((_get(ok, k, "mean") for k in keys if _get(ok, k, "mean") is not None), None)
        if found is None and field not in context:
            raise _missing(path, f"successes.{keys[0]}.mean", f"or pass {field}=")
        lengths[field] = found
    load = doc.get("load_summary") or {}
    record: Record = {
        "chips": chips,
        "chips_per_replica": per_replica,
        **lengths,
        "output_tokens_per_s_per_chip": float(rate) / chips,
        "request_rate_rps": None if load.get("concurrency") else load.get("requested_rate"),
        "concurrency": load.get("concurrency"),
        "ttft_ms": _summary_ms(_get(ok, "latency", "time_to_first_token"), 1000.0),
        "tpot_ms": _summary_ms(_get(ok, "latency", "time_per_output_token"), 1000.0),
        "stack": "inference-perf",
        "source": str(path),
    }
    return _serving_context(path, record, context)


def _mllog(path: Path, text: str, context: Record) -> Record:
    """An MLPerf Training MLLOG log (``:::MLLOG {json}`` lines): the mean of the
    ``tracked_stats`` throughput [samples/s] x the sequence length over the run."""
    events: dict[str, list[Any]] = {}
    for line in text.splitlines():
        _, sep, payload = line.partition(":::MLLOG ")
        if not sep:
            continue
        try:
            event = json.loads(payload)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict) and "key" in event:
            events.setdefault(str(event["key"]), []).append(event.get("value"))
    stats = [v["throughput"] for v in events.get("tracked_stats", ()) if isinstance(v, dict)
             and v.get("throughput") is not None]  # fmt: skip
    if not stats:
        raise _missing(path, "tracked_stats.throughput", "no throughput logged; pass the run "
                       "as a CSV/YAML training measurement with tokens_per_s")  # fmt: skip
    seq = context.pop("seq_len", None) or (events.get("max_sequence_length") or [None])[-1]
    if seq is None:
        raise _missing(path, "max_sequence_length", "pass seq_len= (tokens per sample)")
    chips = context.pop("chips", None)
    record: Record = {
        "count": chips,
        "tokens_per_s": math.fsum(float(v) for v in stats) / len(stats) * float(seq),
        "batch_tokens": _batch_tokens(events, float(seq)),
        "source": str(path),
    }
    record.update(context)
    _need(path, record, "count", "pass chips=N (or count=N)")
    _need(path, record, "chip", "pass chip=<chip id>")
    _need(path, record, "params", "pass params= (parameters of the trained model)")
    return record


def _batch_tokens(events: dict[str, list[Any]], seq: float) -> float | None:
    batch = (events.get("global_batch_size") or [None])[-1]
    return None if batch is None else float(batch) * seq


def _own_yaml(path: Path, context: Record) -> tuple[list[Record], list[Record]]:
    doc = to_plain(load_yaml(path))
    if not isinstance(doc, dict) or not ({"serving", "training"} & set(doc)):
        raise _missing(path, "serving", "a measurements YAML holds serving: and training: lists")
    serving = [{**r, "source": str(path), **context} for r in doc.get("serving") or []]
    training = [{**r, "source": str(path), **context} for r in doc.get("training") or []]
    return serving, training


def _own_csv(path: Path, context: Record) -> tuple[list[Record], list[Record]]:
    serving: list[Record] = []
    training: list[Record] = []
    with path.open(newline="", encoding="utf-8") as handle:
        for line, row in enumerate(csv.DictReader(handle), start=2):
            kind = (row.pop("kind", None) or "").strip()
            record: Record = {k: v for k, v in row.items() if v not in (None, "")}
            record |= {"source": f"{path}:{line}", **context}
            if kind == "serving":
                serving.append(record)
            elif kind == "training":
                training.append(record)
            else:
                raise _missing(path, "kind", f"row {line}: kind must be serving or training")
    return serving, training


def read_records(path: Path, context: Record) -> tuple[list[Record], list[Record]]:
    """(serving records, training records) read from ``path`` with ``context`` laid over.

    Raises
    ------
    accelsim.errors.ScenarioFileError
        If the file is missing or unreadable, of no known format, or lacks a needed field
        (the message names the field and how to give it).
    """
    if not path.is_file():
        raise ScenarioFileError(f"{path}: no such measurements file")
    context = dict(context)
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        return _own_yaml(path, context)
    if suffix == ".csv":
        return _own_csv(path, context)
    text = path.read_text(encoding="utf-8")
    if suffix == ".json" or text.lstrip().startswith("{"):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ScenarioFileError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
        if isinstance(doc, dict) and "output_throughput" in doc:
            return [_vllm(path, doc, context)], []
        if isinstance(doc, dict) and isinstance(doc.get("benchmarks"), list):
            return _guidellm(path, doc, context), []
        if isinstance(doc, dict) and isinstance(doc.get("successes"), dict):
            return [_inference_perf(path, doc, context)], []
        raise ScenarioFileError(
            f"{path}: a JSON file of no known benchmark format (vLLM bench serve "
            "'output_throughput', GuideLLM 'benchmarks', inference-perf 'successes')"
        )
    if "MLPerf Results Summary" in text:
        return [_mlperf_summary(path, text, context)], []
    if ":::MLLOG " in text:
        return [], [_mllog(path, text, context)]
    raise ScenarioFileError(
        f"{path}: no known measurements format (vLLM JSON, MLPerf loadgen summary, or a "
        "CSV/YAML of the measurement fields)"
    )


__all__ = ["model_id_from_name", "read_records"]
