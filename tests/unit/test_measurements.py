"""acs.Measurements and Measurements.from_file: the records and the files tools write.

The fixtures in examples/measurements use the tools' own key names: vLLM ``bench serve
--save-result`` (the ``result_json`` of vllm/benchmarks/serve.py: ``completed``,
``total_output_tokens``, ``output_throughput``, ``median_ttft_ms`` ...) and MLPerf loadgen's
``mlperf_log_summary.txt`` (``Scenario``, ``Tokens per second``, ``Result is``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

import accelsim as acs
from accelsim.errors import ScenarioFileError

DATA = Path(__file__).resolve().parents[2] / "examples" / "measurements"


def test_vllm_json_reads_into_a_serving_measurement() -> None:
    m = acs.Measurements.from_file(DATA / "vllm_bench_serve.json", chip="h100-sxm", chips=2,
                                   precision="fp8")  # fmt: skip
    assert m.training == ()
    (s,) = m.serving
    assert s.model == "llama-3.1-70b"  # from model_id meta-llama/Llama-3.1-70B-Instruct
    assert (s.chip, s.precision, s.chips_per_replica) == ("h100-sxm", "fp8", 2)
    assert s.input_tokens == pytest.approx(1000.0)  # total_input_tokens / completed
    assert s.output_tokens == pytest.approx(1000.0)
    assert s.output_tokens_per_s_per_chip == pytest.approx(1550.0)  # output_throughput / 2
    assert s.request_rate_rps is None  # request_rate "inf": an offline run
    assert s.ttft_ms["p50"] == pytest.approx(60120.2)
    assert s.tpot_ms["p99"] == pytest.approx(110.3)
    assert s.stack is not None
    assert "vLLM" in s.stack


def test_context_overrides_the_file_and_splits_replicas() -> None:
    m = acs.Measurements.from_file(
        DATA / "vllm_bench_serve.json", chip="h200", chips=4, chips_per_replica=2,
        precision="fp8", model="llama-3.3-70b",
    )  # fmt: skip
    (s,) = m.serving
    assert (s.model, s.chip, s.chips_per_replica) == ("llama-3.3-70b", "h200", 2)
    assert s.output_tokens_per_s_per_chip == pytest.approx(775.0)  # 3,100 tok/s over 4 chips


@pytest.mark.parametrize(
    ("context", "field"),
    [
        ({"chip": "h100-sxm", "precision": "fp8"}, "chips"),
        ({"chips": 2, "precision": "fp8"}, "chip"),
        ({"chips": 2, "chip": "h100-sxm"}, "precision"),
    ],
)
def test_missing_context_is_refused_naming_the_field(
    context: dict[str, object], field: str
) -> None:
    with pytest.raises(ScenarioFileError, match=f"missing field '{field}'"):
        acs.Measurements.from_file(DATA / "vllm_bench_serve.json", **context)


def test_a_result_without_its_throughput_is_refused(tmp_path: Path) -> None:
    doc = json.loads((DATA / "vllm_bench_serve.json").read_text())
    doc["output_throughput"] = None
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ScenarioFileError, match="missing field 'output_throughput'"):
        acs.Measurements.from_file(path, chip="h100-sxm", chips=2, precision="fp8")


def test_mlperf_summary_reads_tokens_per_second() -> None:
    m = acs.Measurements.from_file(
        DATA / "mlperf_log_summary.txt", chip="h100-sxm", chips=8, chips_per_replica=2,
        precision="fp8", model="llama-2-70b", input_tokens=294, output_tokens=284,
    )  # fmt: skip
    (s,) = m.serving
    assert s.output_tokens_per_s_per_chip == pytest.approx(12530.6 / 8)
    assert s.request_rate_rps is None  # Scenario : Offline
    assert s.stack is not None
    assert "Offline" in s.stack


def test_mlperf_summary_needs_the_token_lengths() -> None:
    with pytest.raises(ScenarioFileError, match="missing field 'input_tokens'"):
        acs.Measurements.from_file(
            DATA / "mlperf_log_summary.txt", chip="h100-sxm", chips=8, precision="fp8",
            model="llama-2-70b",
        )  # fmt: skip


def test_guidellm_report_reads_one_record_per_benchmark() -> None:
    m = acs.Measurements.from_file(DATA / "guidellm_report.json", chip="h100-sxm", chips=2,
                                   precision="fp8", model="llama-3.1-70b")  # fmt: skip
    saturated, constant = m.serving
    assert saturated.output_tokens_per_s_per_chip == pytest.approx(1520.0)  # 3,040 over 2
    assert (saturated.input_tokens, saturated.output_tokens) == (1000.0, 1000.0)
    assert saturated.request_rate_rps is None
    assert saturated.ttft_ms["p99"] == pytest.approx(41000.0)
    assert saturated.tpot_ms["p50"] == pytest.approx(95.1)
    assert constant.request_rate_rps == pytest.approx(0.5)
    with pytest.raises(ScenarioFileError, match="missing field 'model'"):
        acs.Measurements.from_file(DATA / "guidellm_report.json", chip="h100-sxm", chips=2,
                                   precision="fp8")  # fmt: skip


def test_inference_perf_report_reads_throughput_and_load() -> None:
    m = acs.Measurements.from_file(
        DATA / "inference_perf_summary_lifecycle_metrics.json", chip="h100-sxm", chips=2,
        precision="fp8", model="llama-3.1-70b",
    )  # fmt: skip
    (s,) = m.serving
    assert s.output_tokens_per_s_per_chip == pytest.approx(2925.4 / 2)
    assert (s.input_tokens, s.output_tokens) == (1000.0, 1000.0)
    assert s.request_rate_rps == pytest.approx(5.0)
    assert s.ttft_ms["p99"] == pytest.approx(98000.0)  # seconds in the report
    assert s.tpot_ms["p50"] == pytest.approx(97.0)


def test_mllog_reads_a_training_measurement() -> None:
    m = acs.Measurements.from_file(DATA / "mllog_result_0.txt", chip="h100-sxm", chips=8,
                                   params=8e9)  # fmt: skip
    (t,) = m.training
    assert t.count == 8
    assert t.tokens_per_s == pytest.approx(8.05 * 8192)  # mean samples/s x sequence length
    assert t.batch_tokens == pytest.approx(32 * 8192)
    with pytest.raises(ScenarioFileError, match="missing field 'params'"):
        acs.Measurements.from_file(DATA / "mllog_result_0.txt", chip="h100-sxm", chips=8)


def test_own_yaml_and_csv_read_both_kinds() -> None:
    yml = acs.Measurements.from_file(DATA / "measurements.yaml")
    csv = acs.Measurements.from_file(DATA / "measurements.csv")
    for m in (yml, csv):
        assert len(m.serving) == 1
        assert len(m.training) == 1
        assert m.training[0].mfu == pytest.approx(0.45)
        assert m.training[0].count == 1024
    assert yml.serving[0].stack == "vLLM 0.11"
    assert csv.serving[0].output_tokens_per_s_per_chip == pytest.approx(1600.0)
    assert (yml + csv).count == 4


def test_unknown_format_and_missing_file_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello\n")
    with pytest.raises(ScenarioFileError, match="no known measurements format"):
        acs.Measurements.from_file(path)
    with pytest.raises(ScenarioFileError, match="no such measurements file"):
        acs.Measurements.from_file(tmp_path / "absent.json")


def test_a_bad_value_in_a_file_names_the_field(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("training:\n  - {chip: h100-sxm, count: 8, params: 7.0e9, mfu: 1.5}\n")
    with pytest.raises(ScenarioFileError, match="mfu"):
        acs.Measurements.from_file(path)


def test_training_measurement_needs_exactly_one_rate() -> None:
    with pytest.raises(ValidationError, match="exactly one of mfu or tokens_per_s"):
        acs.TrainingMeasurement(chip="h100-sxm", count=8, params=7e9)
    with pytest.raises(ValidationError, match="exactly one of mfu or tokens_per_s"):
        acs.TrainingMeasurement(chip="h100-sxm", count=8, params=7e9, mfu=0.4, tokens_per_s=1e5)
    with pytest.raises(ValidationError, match="go together"):
        acs.TrainingMeasurement(chip="h100-sxm", count=8, params=7e9, mfu=0.4, interruptions=2)
