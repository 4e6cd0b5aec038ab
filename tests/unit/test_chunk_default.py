"""The default chunked-prefill budget of a colocated replica (``Serving.prefill_chunk_tokens``
unset): vLLM's default ``max_num_batched_tokens`` for ``vllm serve``, per chip, from the
serving prior ``prefill_chunk_tokens`` (catalog/data/serving.yaml).

The oracle of the per-chip values is vLLM's rule re-stated here from its source
(vllm/engine/arg_utils.py at commit 99d7eb5d, ``EngineArgs._set_default_args``, usage context
OPENAI_API_SERVER), applied to each catalog chip's memory and name as chips.yaml gives them.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

import accelsim as acs
from accelsim import catalog
from accelsim.catalog import ServingPriors
from accelsim.engines._inputs import InputDraws
from accelsim.engines.serving._setup import Replica, ServingSetup, draw_replica, serving_setup
from accelsim.engines.serving._usage import (
    LOAD_NODES,
    METRIC_PERCENTILE,
    LatencyTable,
    _column,
    latency_table,
)
from accelsim.models import serving as physics

_GIB = 2.0**30
_TPU_TABLE = {"v6e": 1024, "v5e": 512, "v5p": 256}
"""vLLM's API-server TPU table (``default_max_num_batched_tokens_tpu``)."""


def _vllm_default(chip: catalog.Chip) -> int:
    """vLLM's default max_num_batched_tokens for ``vllm serve`` on one device of ``chip``.

    TPU: its table by generation; a TPU missing from it (and any accelerator vLLM cannot read
    the memory of: the TPU platform's ``get_device_total_memory`` raises, so vLLM takes 0)
    gets the GPU defaults at 0 GiB. CPU: 2048 x world size, one worker per catalog chip.
    GPU: 8192 with >= 70 GiB unless the name has "a100", else 2048.
    """
    name = chip.name.lower()
    if chip.kind == "cpu":
        # A replica is one chip (tensor parallelism stays in one scale-up domain): world size 1.
        assert chip.scale_up_domain_chips == 1, chip.id
        return 2048
    if chip.kind == "tpu":
        for generation, tokens in _TPU_TABLE.items():
            if generation in name.split():
                return tokens
        memory = 0.0
    else:
        memory = chip.hbm_gib * _GIB
    return 8192 if memory >= 70 * _GIB and "a100" not in name else 2048


@pytest.mark.parametrize("chip_id", catalog.chips())
def test_every_catalog_chip_defaults_to_vllms_rule(chip_id: str) -> None:
    chip = catalog.chip(chip_id)
    name, prior = catalog.serving_priors().prefill_chunk_for(chip.id, chip.software_stack)
    assert prior.value == _vllm_default(chip), (name, chip.name, chip.hbm_gib)
    assert prior.unit == "tokens"
    assert any("vllm-project/vllm" in str(s.url) for s in prior.sources)


def test_the_rule_separates_the_chips_it_names() -> None:
    """The oracle is not constant: each branch of vLLM's rule holds some catalog chip."""
    values = {cid: _vllm_default(catalog.chip(cid)) for cid in catalog.chips()}
    expected = {
        "h100-sxm": 8192,
        "mi300x": 8192,
        "a100-80gb": 2048,
        "l4": 2048,
        "tpu-v6e": 1024,
        "tpu-v5e": 512,
        "tpu-v5p": 256,
        "tpu-v7": 2048,
        "epyc-9654-2s": 2048,
    }
    assert {k: values[k] for k in expected} == expected


def _priors_with(**changes: object) -> dict[str, object]:
    raw = catalog.serving_priors().model_dump(mode="json")
    raw.update(changes)
    return raw


@pytest.mark.parametrize(
    "value", [0, 1.5, {"dist": "uniform", "low": 1024, "high": 2048}], ids=["zero", "frac", "dist"]
)
def test_a_chunk_prior_must_be_a_whole_budget(value: object) -> None:
    raw = _priors_with()
    raw["prefill_chunk_tokens"]["cuda"]["value"] = value  # type: ignore[index]
    with pytest.raises(ValidationError, match="whole number of tokens"):
        ServingPriors.model_validate(raw)


def test_a_chunk_prior_must_name_every_stack() -> None:
    raw = _priors_with()
    del raw["prefill_chunk_tokens"]["cpu"]  # type: ignore[attr-defined]
    with pytest.raises(ValidationError, match="prefill_chunk_tokens must name every stack"):
        ServingPriors.model_validate(raw)


def _serving(**kw: object) -> acs.Serving:
    base: dict[str, object] = {
        "model": "llama-3.1-8b",
        "precision": "bf16",
        "rate_rps": 6.0,
        "input_tokens": acs.LogNormal(low=200, high=3000),
        "output_tokens": 150,
        "slo": acs.SLO(ttft_ms=2000, tpot_ms=100),
        "horizon_days": 0.1 / 24,
    }
    base.update(kw)
    return acs.Serving(**base)  # type: ignore[arg-type]


def _scenario(chip: str = "h100-sxm", provider: str = "aws", **kw: object) -> acs.Scenario:
    return acs.Scenario(
        name="chunk",
        workload=_serving(**kw),
        fleet=[acs.Pool(chip=chip, count=2, provider=provider)],
    )


def _same(a: acs.Result, b: acs.Result) -> None:
    assert a.metrics == b.metrics
    for m in a.metrics:
        np.testing.assert_array_equal(a.samples(m), b.samples(m), err_msg=m)


@pytest.mark.parametrize(
    ("chip", "provider", "budget"),
    [("h100-sxm", "aws", 8192), ("a100-80gb", "aws", 2048), ("tpu-v5e", "gcp", 512)],
)
@pytest.mark.parametrize("engine", ["analytic", "des"])
def test_unset_is_the_resolved_budget_set_explicitly(
    chip: str, provider: str, budget: int, engine: str
) -> None:
    unset = acs.simulate(_scenario(chip, provider), runs=3, seed=4, engine=engine, progress=False)
    given = acs.simulate(
        _scenario(chip, provider, prefill_chunk_tokens=budget),
        runs=3,
        seed=4,
        engine=engine,
        progress=False,
    )
    _same(unset, given)
    (name,) = [k for k in unset.inputs if "prefill_chunk_tokens" in k]
    assert name.startswith("priors.serving.prefill_chunk_tokens")
    np.testing.assert_array_equal(unset.inputs[name], budget)
    np.testing.assert_array_equal(given.inputs["workload.prefill_chunk_tokens"], budget)


def test_serving_capacity_reads_the_same_default() -> None:
    unset = acs.serving_capacity(_scenario("h100-sxm"), runs=8, seed=2)
    given = acs.serving_capacity(_scenario("h100-sxm", prefill_chunk_tokens=8192), runs=8, seed=2)
    first = acs.serving_capacity(_scenario("h100-sxm", prefill_chunk_tokens=0), runs=8, seed=2)
    _same(unset, given)
    slo = "slo_tokens_per_s_per_chip"
    assert not np.array_equal(unset.samples(slo), first.samples(slo))


def _replica_and_table(
    scenario: acs.Scenario,
) -> tuple[ServingSetup, Replica, LatencyTable]:
    cat = catalog.active()
    setup = serving_setup(scenario, cat)
    draws = InputDraws(root=np.random.SeedSequence(7), start=0, stop=4)
    replica = draw_replica(setup, draws, cat.serving_priors)
    return setup, replica, latency_table(setup, replica)


@given(
    offer=st.sampled_from(
        [("h100-sxm", "aws"), ("a100-80gb", "aws"), ("h200", "aws"), ("l4", "runpod")]
    ),
    budget=st.one_of(st.none(), st.integers(0, 1 << 20)),
)
def test_the_replica_runs_the_budget_set_or_the_chips_default(
    offer: tuple[str, str], budget: int | None
) -> None:
    """Over the whole budget range (unset, 0, up to a million tokens): the replica carries
    the value set, else vLLM's default for the chip, and every latency is finite."""
    chip, provider = offer
    scenario = _scenario(chip, provider, prefill_chunk_tokens=budget)
    _, replica, table = _replica_and_table(scenario)
    expected = _vllm_default(catalog.chip(chip)) if budget is None else budget
    np.testing.assert_array_equal(replica.prefill_chunk_tokens, float(expected))
    for field in ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "slo_load"):
        assert np.isfinite(getattr(table, field)).all(), field


def test_explicit_zero_is_the_prefill_first_model() -> None:
    """``prefill_chunk_tokens=0`` is what the old default ran: the fast path's table is
    ``latency_under_load`` with a scalar 0 (prefill-first), as it was called before, up to
    the sustained load (beyond it the sustained node's latencies, as the fast path reads)."""
    setup, replica, table = _replica_and_table(_scenario(prefill_chunk_tokens=0))
    np.testing.assert_array_equal(replica.prefill_chunk_tokens, 0.0)
    _, _, chunked = _replica_and_table(_scenario())
    sat = np.where(replica.feasible, replica.saturated_rps, 1.0)
    ref = physics.latency_under_load(
        _column(replica.cost),
        sat[:, None] * LOAD_NODES,
        setup.input_mean,
        setup.output_mean,
        np.maximum(replica.batch_limit, 1.0)[:, None],
        METRIC_PERCENTILE,
        prefill_chunk_tokens=0.0,
        input_variance=setup.input_variance,
        input_third_moment=setup.input_third_moment,
        input_fourth_moment=setup.input_fourth_moment,
        input_nodes=setup.input_nodes,
        input_weights=setup.input_weights,
    )
    # up to the sustained load; beyond it the table holds the sustained node's latencies
    served = LOAD_NODES[None, :] <= table.sustained_load[:, None]
    last = np.maximum(served.sum(axis=1) - 1, 0)
    rows = np.arange(served.shape[0])
    for got, want in ((table.tpot_p99_s, ref.tpot_tail_s), (table.ttft_p99_s, ref.ttft_tail_s)):
        np.testing.assert_array_equal(got[served], want[served])
        held = np.broadcast_to(want[rows, last][:, None], want.shape)
        np.testing.assert_array_equal(got[~served], held[~served])
    assert not np.array_equal(chunked.tpot_p99_s, ref.tpot_tail_s)


def test_the_default_is_chunked_not_prefill_first() -> None:
    default = acs.simulate(_scenario(), runs=3, seed=4, progress=False)
    first = acs.simulate(_scenario(prefill_chunk_tokens=0), runs=3, seed=4, progress=False)
    assert not np.array_equal(default.samples("tpot_p99_ms"), first.samples("tpot_p99_ms"))


def test_a_mix_resolves_the_default_per_endpoint() -> None:
    def mix(**kw: object) -> acs.Scenario:
        return acs.Scenario(
            name="mix",
            fleet=[acs.Pool(chip="a100-80gb", count=8, provider="aws")],
            workloads=[
                _serving(name="chat", horizon_days=1.0, **kw),
                _serving(name="batch", horizon_days=1.0, prefill_chunk_tokens=0),
            ],
            horizon_days=1.0,
        )

    unset = acs.simulate(mix(), runs=2, seed=3, progress=False)
    _same(unset, acs.simulate(mix(prefill_chunk_tokens=2048), runs=2, seed=3, progress=False))
    first = acs.simulate(mix(prefill_chunk_tokens=0), runs=2, seed=3, progress=False)
    tpot = "chat.tpot_p99_ms"
    assert not np.array_equal(unset.samples(tpot), first.samples(tpot))


def test_disaggregated_pools_take_no_budget() -> None:
    dis = acs.Disaggregation(prefill_pool=0, decode_pool=1)
    assert _serving(disaggregated=dis).prefill_chunk_tokens is None
    for value in (0, 2048):
        with pytest.raises(ValidationError, match="prefill_chunk_tokens does not apply"):
            _serving(disaggregated=dis, prefill_chunk_tokens=value)


def test_the_json_schema_and_the_validator_agree() -> None:
    schema = acs.Serving.model_json_schema()["properties"]["prefill_chunk_tokens"]
    assert schema["default"] is None
    kinds = {option.get("type"): option for option in schema["anyOf"]}
    assert set(kinds) == {"integer", "null"}
    assert kinds["integer"]["minimum"] == 0
    for value in (None, 0, 1, 8192):
        assert _serving(prefill_chunk_tokens=value).prefill_chunk_tokens == value
    for bad in (-1, 1.5, "x"):
        with pytest.raises(ValidationError):
            _serving(prefill_chunk_tokens=bad)
    assert json.dumps(schema)


@pytest.mark.parametrize(
    "line", ["", "  prefill_chunk_tokens: 0\n", "  prefill_chunk_tokens: 512\n"]
)
def test_yaml_scenarios_load_with_and_without_the_key(tmp_path: Path, line: str) -> None:
    text = (
        "name: y\n"
        "workload:\n"
        "  kind: serving\n"
        "  model: llama-3.1-8b\n"
        "  rate_rps: 2\n"
        "  input_tokens: 500\n"
        "  output_tokens: 100\n"
        "  slo: {ttft_ms: 2000, tpot_ms: 100}\n"
        f"{line}"
        "fleet:\n"
        "  - {chip: h100-sxm, count: 1, provider: aws}\n"
    )
    path = tmp_path / "s.yaml"
    path.write_text(text, encoding="utf-8")
    work = acs.load_scenario(path).workload
    assert isinstance(work, acs.Serving)
    assert work.prefill_chunk_tokens == (None if not line else int(line.split(":")[1]))


@pytest.mark.parametrize(("budget", "cap"), [(None, 2048), (512, 512), (0, 2048), (4096, 2048)])
def test_the_budget_caps_the_stacks_batch_prior(budget: int | None, cap: int) -> None:
    """Each running sequence takes a token of a chunked iteration's budget (vLLM refuses
    max_num_seqs > max_num_batched_tokens): the cuda prior's 2048 sequences are capped at a
    smaller budget, kept prefill-first (0) and under a larger one (H100's default 8192)."""
    _, replica, _ = _replica_and_table(_scenario(prefill_chunk_tokens=budget))
    np.testing.assert_array_equal(replica.max_batch, float(cap))


@given(
    cap=st.floats(1.0, 1e5, allow_nan=False),
    budget=st.one_of(st.just(0.0), st.floats(1.0, 1e6, allow_nan=False)),
)
def test_the_budget_cap_is_the_smaller_of_the_two_where_chunked(cap: float, budget: float) -> None:
    got = float(physics.budget_batch_cap(cap, budget))
    assert got == (min(cap, budget) if budget > 0.0 else cap)


def test_a_batch_set_above_the_budget_set_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"max_batch \(1024\) exceeds prefill_chunk_tokens"):
        _serving(max_batch=1024, prefill_chunk_tokens=512)
    assert _serving(max_batch=512, prefill_chunk_tokens=512).max_batch == 512
    assert _serving(max_batch=4096, prefill_chunk_tokens=0).max_batch == 4096


def test_a_batch_set_above_the_chips_default_budget_names_both() -> None:
    """TPU v5e's default budget is 512: a max_batch of 1024 set without a budget is refused
    when the replica is drawn, naming the chip and its default, not silently capped."""
    scenario = _scenario("tpu-v5e", "gcp", max_batch=1024)
    with pytest.raises(ValueError, match=r"max_batch \(1024\).*tpu-v5e.*512"):
        acs.simulate(scenario, runs=2, seed=1, progress=False)
    acs.simulate(_scenario("tpu-v5e", "gcp", max_batch=512), runs=2, seed=1, progress=False)
