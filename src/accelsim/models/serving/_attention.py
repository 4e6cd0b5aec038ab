"""Attention FLOPs per (query token, context token) pair from a model's attention widths.

Part of :mod:`accelsim.models.serving` (import the names from there).
:func:`attention_flops_per_context_token` is the one place the serving models turn a
model's architecture (query heads, head widths, MLA ranks, sliding-window layers) into the
FLOPs one query token spends on one cached token in one layer; :func:`iteration_cost`
multiplies it by the layers. Units: widths [count], FLOPs [FLOP].
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from accelsim._typing import ArrayLike, FloatArray


def _f(x: ArrayLike) -> FloatArray:
    return np.asarray(x, dtype=np.float64)


class AttentionFlops(NamedTuple):
    """Attention FLOPs per (query token, context token) pair and layer, averaged over the
    model's layers (:func:`attention_flops_per_context_token`). [FLOP]"""

    decode: FloatArray
    """For a decoded token against its cached context. [FLOP]"""
    prefill: FloatArray
    """For a prompt token against the prompt's (and any cached prefix's) tokens. [FLOP]"""


def attention_flops_per_context_token(
    *,
    d_model: ArrayLike,
    layers: ArrayLike = 1.0,
    attention_heads: ArrayLike | None = None,
    head_dim: ArrayLike | None = None,
    kv_lora_rank: ArrayLike | None = None,
    qk_rope_head_dim: ArrayLike | None = None,
    qk_nope_head_dim: ArrayLike | None = None,
    v_head_dim: ArrayLike | None = None,
    full_attention_layers: ArrayLike | None = None,
) -> AttentionFlops:
    """Attention FLOPs one query token spends on one context token, per layer.

    Parameters
    ----------
    d_model : array_like
        Hidden size; the query width when the heads are not given. [count]
    layers : array_like, optional
        Transformer layers (only the share ``full_attention_layers / layers`` is used). [count]
    attention_heads : array_like, optional
        Query heads per layer (``num_attention_heads``); unset: ``4·d_model``. [count]
    head_dim : array_like, optional
        Width of one query, key and value head (multi-head / grouped-query attention). [count]
    kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim : array_like, optional
        Multi-head latent attention (DeepSeek-V2/V3): the rank of the cached latent, the
        decoupled RoPE width of a query/key head, its non-RoPE width, and a value head's
        width; all four or none. [count]
    full_attention_layers : array_like, optional
        Layers attending to the whole context; the others attend to a sliding window and
        are charged nothing (exact for a context far beyond the window, as the KV cache's
        ``kv_values_per_token_per_layer``); unset: all layers. [count]

    Returns
    -------
    AttentionFlops
        ``decode`` and ``prefill`` FLOPs per pair and layer, averaged over the layers. [FLOP]

    Notes
    -----
    A pair costs one query-key dot product and one weighted sum of values per head, two
    FLOPs per multiply-add (the FLOP count of FlashAttention's and FlashMLA's benchmarks,
    ``2·heads·(d_qk + d_v)``):

    - grouped-query or multi-head attention: ``2·h·head_dim + 2·h·head_dim = 4·h·head_dim``
      for decode and prefill alike (``4·d_model`` when ``h·head_dim = d_model``; Qwen3-32B's
      64 heads of 128 are 8,192 wide against a hidden size of 5,120);
    - multi-head latent attention decodes in the weight-absorbed form, every head attending
      to the shared latent and RoPE key: ``2·h·(kv_lora_rank + qk_rope_head_dim) +
      2·h·kv_lora_rank`` (DeepSeek-V3: 2·128·576 + 2·128·512 = 278,528), and prefills in
      the decompressed form, per-head keys and values: ``2·h·(qk_nope_head_dim +
      qk_rope_head_dim) + 2·h·v_head_dim`` (2·128·192 + 2·128·128 = 81,920), as vLLM's
      MLA backends and SGLang choose by phase;
    - no heads given: ``4·d_model`` (the assumption when the widths are unknown).

    The projections (Q, K, V, output, MLA's up-projections) are in ``2·N_active`` per token,
    not here. Oracles: Llama 3.1 70B (64 heads of 128, d_model 8,192) gives ``4·8192``;
    DeepSeek-V3 the figures above (tests/unit/test_serving_attention.py).

    Examples
    --------
    >>> a = attention_flops_per_context_token(d_model=7168, attention_heads=128,
    ...     kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128)
    >>> float(a.decode), float(a.prefill)
    (278528.0, 81920.0)
    >>> float(attention_flops_per_context_token(d_model=5120, attention_heads=64,
    ...     head_dim=128).decode) / (4 * 5120)
    1.6
    """
    default = 4.0 * _f(d_model)
    mla = (kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim)
    decode: FloatArray
    if attention_heads is None:
        decode, prefill = default, default
    elif (
        kv_lora_rank is not None
        and qk_rope_head_dim is not None
        and qk_nope_head_dim is not None
        and v_head_dim is not None
    ):
        h = 2.0 * _f(attention_heads)
        rank, rope = _f(kv_lora_rank), _f(qk_rope_head_dim)
        decode = h * (rank + rope) + h * rank
        prefill = h * (_f(qk_nope_head_dim) + rope) + h * _f(v_head_dim)
    elif head_dim is not None and all(v is None for v in mla):
        decode = 4.0 * _f(attention_heads) * _f(head_dim)
        prefill = decode
    else:
        raise ValueError(
            "attention_heads needs head_dim (grouped-query attention) or all of "
            "kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim and v_head_dim (MLA)"
        )
    if full_attention_layers is not None:
        share = _f(full_attention_layers) / _f(layers)
        decode, prefill = decode * share, prefill * share
    return AttentionFlops(
        *(np.array(p, dtype=np.float64) for p in np.broadcast_arrays(decode, prefill))
    )


__all__ = ["AttentionFlops", "attention_flops_per_context_token"]
