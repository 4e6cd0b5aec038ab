"""Memory and capacity of one serving replica: weights, KV cache, batch limit, throughput.

Part of :mod:`accelsim.models.serving` (import the names from there): weight and KV-cache
bytes, the KV capacity left by the weights, the batch limit it allows, and the steady-state
(offline) throughput at that batch. Units: bytes [B], tokens, counts, tokens/s.
"""

from __future__ import annotations

import numpy as np

from accelsim._typing import ArrayLike, FloatArray
from accelsim.models.serving._iteration import IterationCost, _f, iteration_seconds


def weight_bytes(params: ArrayLike, bytes_per_param: ArrayLike) -> FloatArray:
    """Bytes of model weights.

    Parameters
    ----------
    params : array_like
        Total parameters (all experts of a mixture of experts). [count]
    bytes_per_param : array_like
        Storage per parameter: 2 for bf16, 1 for fp8/int8, 0.5 for fp4. [B]

    Returns
    -------
    FloatArray
        Weight bytes. [B]

    Examples
    --------
    >>> float(weight_bytes(70e9, 1.0))
    70000000000.0
    """
    return _f(params) * _f(bytes_per_param)


def kv_bytes_per_token(
    layers: ArrayLike, kv_heads: ArrayLike, head_dim: ArrayLike, bytes_per_value: ArrayLike
) -> FloatArray:
    """Bytes of KV cache one token occupies across all layers (keys and values).

    Parameters
    ----------
    layers : array_like
        Transformer layers that keep a KV cache. [count]
    kv_heads : array_like
        Key/value heads per layer (GQA groups; equal to the query heads for MHA). [count]
    head_dim : array_like
        Dimension of one head. [count]
    bytes_per_value : array_like
        Bytes per cached value (2 for bf16, 1 for fp8). [B]

    Returns
    -------
    FloatArray
        KV-cache bytes per token. [B]

    Notes
    -----
    ``2 · L · h_kv · d_head · b``: one key and one value vector per KV head and layer. Oracle:
    the closed form for Llama-3.1-70B at bf16, ``2·80·8·128·2 = 327,680`` B. For MLA
    (DeepSeek-V3/R1) the cache holds one latent per layer instead; pass the per-layer values
    through :func:`kv_bytes_per_token_from_values`.

    Examples
    --------
    >>> float(kv_bytes_per_token(80, 8, 128, 2))
    327680.0
    """
    return 2.0 * _f(layers) * _f(kv_heads) * _f(head_dim) * _f(bytes_per_value)


def kv_bytes_per_token_from_values(
    layers: ArrayLike, values_per_token_per_layer: ArrayLike, bytes_per_value: ArrayLike
) -> FloatArray:
    """KV-cache bytes per token from the cached values per layer (MLA latents, windows).

    Parameters
    ----------
    layers : array_like
        Transformer layers. [count]
    values_per_token_per_layer : array_like
        Values cached per token and layer, keys and values together (DeepSeek-V3 MLA: the
        512-value latent plus the 64-value decoupled RoPE key = 576). [count]
    bytes_per_value : array_like
        Bytes per cached value. [B]

    Returns
    -------
    FloatArray
        KV-cache bytes per token. [B]

    Examples
    --------
    >>> float(kv_bytes_per_token_from_values(61, 576, 1))
    35136.0
    """
    return _f(layers) * _f(values_per_token_per_layer) * _f(bytes_per_value)


def tensor_parallel_kv_copies(kv_heads: ArrayLike, chips: ArrayLike) -> FloatArray:
    """Copies of the KV cache a tensor-parallel replica holds over its chips. [ratio]

    Applies to a replica that splits attention over ``t`` chips by KV head (tensor
    parallelism). A chip cannot hold part of a head, so each holds ``ceil(h/t)`` of the
    ``h`` KV heads: with more chips than KV heads each holds one head, replicated ``t/h``
    times over the replica (vLLM: "Number of KV heads is less than TP size, so we replicate
    the KV heads across multiple tensor parallel GPUs"). Multi-head latent attention caches
    one latent per token and layer shared by all query heads, ``h = 1``: every chip holds
    the whole cache. Not for data-parallel attention, where each rank holds only its own
    sequences' cache (one copy).

    Parameters
    ----------
    kv_heads : array_like
        Heads the KV cache is split by (GQA groups; 1 for MLA), >= 1. [count]
    chips : array_like
        Tensor-parallel ranks ``t``, >= 1. [count]

    Returns
    -------
    FloatArray
        ``t · ceil(h/t) / h`` [ratio], >= 1: the bytes the replica's chips hold (and read)
        together per cached token over the model's KV bytes per token
        (:func:`kv_bytes_per_token`).

    Notes
    -----
    The busiest chip holds ``ceil(h/t)`` heads, ``ceil(h/t)/h`` of each token's cache,
    and every chip reserves as much (the engines size one cache per rank), so the replica
    holds ``t · ceil(h/t)/h`` copies: 1 where ``t`` divides ``h``, ``t/h`` where ``h``
    divides ``t`` (the two layouts vLLM accepts; its ``max(1, h // t)`` heads per rank
    agree), ``max(1, t/h)`` in both. Oracle: the closed forms, Llama-3.1-70B (``h = 8``)
    at TP8 1 and at TP16 2; DeepSeek-R1 (MLA, ``h = 1``) at TP8 8; ``h = 4`` at TP8 2.

    References
    ----------
    vLLM ``model_executor/models/deepseek.py`` (``DeepseekAttention``, v0.9.2),
    https://docs.vllm.ai/en/v0.9.2/api/vllm/model_executor/models/deepseek.html;
    Tang et al. (2025), "TPLA: Tensor Parallel Latent Attention", arXiv:2508.15881 (under
    TP "each device must load the full [MLA] cache").

    Examples
    --------
    >>> tensor_parallel_kv_copies([8, 8, 1, 4, 8], [8, 16, 8, 8, 3]).tolist()
    [1.0, 2.0, 8.0, 2.0, 1.125]
    """
    h, t = _f(kv_heads), _f(chips)
    return _f(t * np.ceil(h / t) / h)


def kv_capacity_tokens(
    hbm_bytes_per_replica: ArrayLike,
    weight_bytes: ArrayLike,
    kv_bytes_per_token: ArrayLike,
    memory_share: ArrayLike,
) -> FloatArray:
    """Tokens of KV cache one replica holds.

    Parameters
    ----------
    hbm_bytes_per_replica : array_like
        Device memory of all chips of the replica. [B]
    weight_bytes : array_like
        Bytes of the weights (one copy, sharded over the replica). [B]
    kv_bytes_per_token : array_like
        KV-cache bytes per token (> 0). [B]
    memory_share : array_like
        Share of device memory the serving engine may use for weights and KV cache together
        (vLLM's ``gpu_memory_utilization``); the rest holds activations, workspace and the
        runtime. [fraction]

    Returns
    -------
    FloatArray
        KV-cache capacity [tokens]. Zero or negative means the weights do not fit: the caller
        must report the replica infeasible, never use the number.

    Notes
    -----
    ``(share · HBM − W) / kv_bytes``. Oracle: the closed form.

    Examples
    --------
    >>> float(kv_capacity_tokens(160e9, 70e9, 163840.0, 0.9))
    451660.15625
    """
    usable = _f(memory_share) * _f(hbm_bytes_per_replica) - _f(weight_bytes)
    return usable / _f(kv_bytes_per_token)


def batch_limit(
    kv_capacity_tokens: ArrayLike,
    input_tokens: ArrayLike,
    output_tokens: ArrayLike,
    max_batch: ArrayLike,
) -> FloatArray:
    """Largest number of concurrent sequences a replica runs: KV cache or scheduler cap.

    Parameters
    ----------
    kv_capacity_tokens : array_like
        KV-cache capacity (:func:`kv_capacity_tokens`). [tokens]
    input_tokens, output_tokens : array_like
        Mean prompt and output lengths. [tokens]
    max_batch : array_like
        Scheduler cap on running sequences (vLLM ``max_num_seqs``). [count]

    Returns
    -------
    FloatArray
        ``floor(min(capacity / (input + output), max_batch))``, at least 0 [count]; 0 means
        not even one sequence of full length fits (infeasible).

    Examples
    --------
    >>> float(batch_limit(451660.0, 222.0, 290.0, 256))
    256.0
    """
    per_sequence = _f(input_tokens) + _f(output_tokens)
    fit = np.floor(np.maximum(_f(kv_capacity_tokens), 0.0) / per_sequence)
    return _f(np.minimum(fit, np.floor(_f(max_batch))))


def budget_batch_cap(max_batch: ArrayLike, prefill_chunk_tokens: ArrayLike) -> FloatArray:
    """The scheduler's cap on running sequences under a chunked iteration's token budget.

    Parameters
    ----------
    max_batch : array_like
        Cap on running sequences (vLLM ``max_num_seqs``). [count]
    prefill_chunk_tokens : array_like
        Token budget of a chunked iteration, decodes first (``max_num_batched_tokens``);
        0 = prefill-first, no budget. [tokens]

    Returns
    -------
    FloatArray
        ``min(max_batch, budget)`` where chunked, else ``max_batch`` [count]: each running
        sequence takes one token of the budget, and vLLM refuses ``max_num_seqs >
        max_num_batched_tokens``.

    Examples
    --------
    >>> budget_batch_cap([2048, 2048, 256], [512, 0, 8192]).tolist()
    [512.0, 2048.0, 256.0]
    """
    cap, budget = _f(max_batch), _f(prefill_chunk_tokens)
    return _f(np.where(budget > 0.0, np.minimum(cap, budget), cap))


def throughput_at_batch(
    cost: IterationCost, batch: ArrayLike, input_tokens: ArrayLike, output_tokens: ArrayLike
) -> FloatArray:
    """Output tokens per second of a replica running ``batch`` sequences in steady state.

    Parameters
    ----------
    cost : IterationCost
        The replica's coefficients.
    batch : array_like
        Concurrent sequences. [count]
    input_tokens, output_tokens : array_like
        Mean prompt and output lengths (> 0). [tokens]

    Returns
    -------
    FloatArray
        Output tokens per second of the replica. [tokens/s]

    Notes
    -----
    Steady state of continuous batching: every iteration decodes ``B`` tokens and, since a
    sequence finishes every ``output`` iterations on average, prefills
    ``B · input / output`` prompt tokens (each attending to ``input / 2`` on average);
    the decoding sequences hold ``B · (input + output / 2)`` cached tokens on average.
    Throughput = ``B / iteration_seconds``. Oracle: at batch 1 with ``input → 0`` it is the
    inverse of the batch-1 decode time.
    """
    b = _f(batch)
    inp = _f(input_tokens)
    out = _f(output_tokens)
    seconds = iteration_seconds(cost, b, b * inp / out, b * (inp + out / 2.0), inp / 2.0)
    return _f(b / seconds)


def offline_tokens_per_s(
    cost: IterationCost,
    kv_capacity_tokens: ArrayLike,
    input_tokens: ArrayLike,
    output_tokens: ArrayLike,
    max_batch: ArrayLike,
    prefill_chunk_tokens: ArrayLike = 0.0,
) -> FloatArray:
    """Saturated (offline) output tokens per second of a replica, no latency bound.

    Parameters
    ----------
    cost : IterationCost
        The replica's coefficients.
    kv_capacity_tokens : array_like
        KV-cache capacity. [tokens]
    input_tokens, output_tokens : array_like
        Mean prompt and output lengths (> 0). [tokens]
    max_batch : array_like
        Scheduler cap on running sequences. [count]
    prefill_chunk_tokens : array_like, optional
        A chunked iteration's token budget (vLLM's ``max_num_batched_tokens``); 0 =
        prefill-first, no budget. [tokens]

    Returns
    -------
    FloatArray
        Output tokens per second of the replica at :func:`batch_limit` [tokens/s]; 0 where
        the batch limit is 0 (the model or one sequence does not fit: infeasible).

    Notes
    -----
    MLPerf Offline issues every query at t = 0, so the replica runs at its batch limit,
    unless a chunked iteration's token budget ``C`` binds first: an iteration of ``B``
    decodes carries ``B·in/out`` prompt tokens in steady state, so ``B + B·in/out <= C``
    caps the batch at ``C·out/(in + out)`` (the request DES realises that batch within 3 %,
    ``tests/validation/test_serving_des_theory.py``). A 256-token budget with 8,000-token prompts
    and 100 output tokens holds 3.2 sequences, far below a KV-bound limit of hundreds.
    """
    limit = batch_limit(kv_capacity_tokens, input_tokens, output_tokens, max_batch)
    inp, out, budget = _f(input_tokens), _f(output_tokens), _f(prefill_chunk_tokens)
    batch = np.maximum(limit, 1.0)
    batch = np.where(budget > 0.0, np.minimum(batch, budget * out / (inp + out)), batch)
    return _f(
        np.where(limit >= 1.0, throughput_at_batch(cost, batch, input_tokens, output_tokens), 0.0)
    )
