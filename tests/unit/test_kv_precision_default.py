"""The KV-cache precision of a serving scenario that leaves ``kv_precision`` unset.

Oracle: the published convention (catalog/data/serving.yaml ``kv_precision``): NVIDIA's NVFP4
checkpoints declare an FP8 KV cache, so FP4 weights get an FP8 cache; every other weight
precision keeps its own. The cache's bytes per token follow the layer count, KV heads and head
dimension of the preset (2 · layers · kv_heads · head_dim · bytes per value).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import accelsim as acs
from accelsim import catalog
from accelsim.engines.serving._setup import serving_setup


def _scenario(precision: str, kv_precision: str | None) -> acs.Scenario:
    work = acs.Serving(
        model="llama-3.3-70b",
        precision=precision,
        kv_precision=kv_precision,
        rate_rps=1.0,
        input_tokens=1000,
        output_tokens=1000,
        slo=acs.SLO(ttft_ms=2000, tpot_ms=100),
        chips_per_replica=1,  # the layout is the model's choice otherwise, and follows the cache
    )
    return acs.Scenario(
        name="kv", workload=work, fleet=[acs.Pool(chip="b200", count=8, provider="gcp")]
    )


def _kv_bytes(precision: str, kv_precision: str | None) -> float:
    return serving_setup(_scenario(precision, kv_precision), catalog.active()).kv_bytes_per_token


def test_fp4_weights_keep_an_fp8_cache() -> None:
    preset = catalog.model_preset("llama-3.3-70b")
    expected = 2.0 * preset.layers * preset.kv_heads * preset.head_dim * 1.0
    assert _kv_bytes("fp4", None) == pytest.approx(expected)
    assert _kv_bytes("fp4", None) == _kv_bytes("fp4", "fp8")
    assert _kv_bytes("fp4", "fp4") == pytest.approx(expected / 2.0)


@given(st.sampled_from(["bf16", "fp8", "int8"]))
def test_other_precisions_keep_their_own_cache(precision: str) -> None:
    assert _kv_bytes(precision, None) == _kv_bytes(precision, precision)


def test_the_rule_is_the_shipped_one_for_a_file_without_it() -> None:
    shipped = catalog.serving_priors()
    assert shipped.kv_precision is not None
    assert shipped.kv_precision.sources
    bare = shipped.model_copy(update={"kv_precision": None})
    assert bare.kv_precision_for("fp4") == "fp8"
    assert bare.kv_precision_for("bf16") == "bf16"


def test_an_fp4_cache_holds_more_sequences_than_the_default() -> None:
    runs = {"runs": 50, "seed": 3}
    default = acs.serving_capacity(_scenario("fp4", None), **runs).samples("batch_limit")
    fp4 = acs.serving_capacity(_scenario("fp4", "fp4"), **runs).samples("batch_limit")
    fp8 = acs.serving_capacity(_scenario("fp4", "fp8"), **runs).samples("batch_limit")
    assert (default == fp8).all()
    assert (fp4 > default).all()
