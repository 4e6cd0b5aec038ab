"""Properties of the attention FLOPs from a model's widths and of the two-coefficient
iteration (models/serving/_attention.py, _iteration.py) over wide input spaces."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from accelsim.models import serving as sv

widths = st.integers(1, 1024)
heads = st.integers(1, 256)


@given(h=heads, head_dim=widths)
def test_grouped_query_attention_is_4_heads_head_dim_in_both_phases(h: int, head_dim: int) -> None:
    a = sv.attention_flops_per_context_token(
        d_model=h * head_dim, attention_heads=h, head_dim=head_dim
    )
    assert float(a.decode) == float(a.prefill) == 4.0 * h * head_dim
    # heads exactly as wide as the hidden size: the 4·d_model of unknown widths, bit for bit
    assert float(a.decode) == float(
        sv.attention_flops_per_context_token(d_model=h * head_dim).decode
    )


@given(h=heads, rank=widths, rope=widths, nope=widths, v=widths, k=st.integers(1, 8))
def test_mla_is_linear_in_heads_and_its_phases_differ_by_the_latent(
    h: int, rank: int, rope: int, nope: int, v: int, k: int
) -> None:
    def mla(n: int) -> sv.AttentionFlops:
        return sv.attention_flops_per_context_token(
            d_model=1, attention_heads=n, kv_lora_rank=rank, qk_rope_head_dim=rope,
            qk_nope_head_dim=nope, v_head_dim=v,
        )  # fmt: skip

    one, many = mla(h), mla(k * h)
    assert float(many.decode) == k * float(one.decode)
    assert float(many.prefill) == k * float(one.prefill)
    # absorbed: keys rank + rope and values rank wide; decompressed: nope + rope and v
    assert float(one.decode) - float(one.prefill) == 2.0 * h * (2 * rank - nope - v)


@given(h=heads, head_dim=widths, layers=st.integers(1, 200), data=st.data())
def test_sliding_window_layers_scale_by_the_full_layers_share(
    h: int, head_dim: int, layers: int, data: st.DataObject
) -> None:
    full = data.draw(st.integers(1, layers))
    kw = {"d_model": 1, "attention_heads": h, "head_dim": head_dim, "layers": layers}
    every = sv.attention_flops_per_context_token(**kw)
    some = sv.attention_flops_per_context_token(**kw, full_attention_layers=full)
    assert float(some.decode) == float(every.decode) * (full / layers)
    assert float(
        sv.attention_flops_per_context_token(**kw, full_attention_layers=layers).decode
    ) == (float(every.decode))


def _cost(ratio: float, exposed: float) -> sv.IterationCost:
    base = sv.iteration_cost(
        active_params=37e9, total_params=671e9, layers=61, d_model=7168, weight_bytes=671e9,
        kv_bytes_per_token=35136.0, chips=8, peak_tflops=1979, hbm_tbps=4.8,
        interconnect_gbps=900, efficiency=0.5, overhead_seconds=0.002, overlap=1.0 - exposed,
    )  # fmt: skip
    return dataclasses.replace(base, prefill_attention_ratio=np.array(ratio))


@given(
    ratio=st.floats(0.01, 20.0),
    more=st.floats(1.0, 5.0),
    exposed=st.sampled_from([0.0, 0.5, 1.0]),
    decode=st.integers(0, 2048),
    prefill=st.integers(0, 16384),
    kv=st.integers(0, 10**7),
    context=st.floats(0.0, 1e5),
)
def test_prompt_pairs_cost_more_as_their_form_widens_and_the_des_form_agrees(
    ratio: float, more: float, exposed: float, decode: int, prefill: int, kv: int, context: float
) -> None:
    narrow, wide = _cost(ratio, exposed), _cost(ratio * more, exposed)
    args = (decode, prefill, kv, context)
    t_narrow, t_wide = (
        float(sv.iteration_seconds(narrow, *args)),
        float(sv.iteration_seconds(wide, *args)),
    )
    assert np.isfinite(t_narrow)
    assert t_wide >= t_narrow
    assert sv.terms_iteration_seconds(sv.iteration_terms(wide), *args) == t_wide
    # decode-only iterations do not see the prefill form at all
    if prefill == 0:
        assert t_wide == t_narrow
