"""Wide expert parallelism with data-parallel attention: a mixture of experts on a domain.

Part of :mod:`accelsim.models.serving` (import the names from there). The tensor-parallel
replica of :func:`~accelsim.models.serving.iteration_cost` splits every weight over its
chips and all-reduces every layer's activations: the all-reduce moves each token's hidden
state over every link whatever the replica's size, so past a few chips it caps the tokens a
chip can process. The layout large mixture-of-experts deployments use instead (DeepSeek-V3
§3.4, SGLang's and TensorRT-LLM's wide EP on NVL72 racks) gives each of ``N`` chips:

* its own sequences (attention data parallel): a full copy of the non-expert weights
  (attention, dense layers, shared experts, embeddings), and the KV cache of its own
  sequences only;
* ``1/N`` of the routed experts (expert parallel), reached by an all-to-all per MoE layer:
  each token's hidden state goes to the ranks of its ``top-k`` experts (dispatch) and their
  outputs come back (combine). Each chip sends only its own tokens, so the traffic per
  chip falls as ``1/N`` of the replica's tokens.

:func:`expert_parallel_cost` gives that layout's :class:`~accelsim.models.serving.
IterationCost` (so every formula built on it runs unchanged) and
:func:`expert_parallel_kv_capacity` its KV cache. A large domain then holds far more
sequences per chip for a big mixture of experts than eight chips can, and reads far fewer
weight bytes per chip per iteration.

Units: bytes [B], seconds [s], ``interconnect_gbps`` [GB/s] as in
:class:`accelsim.catalog.Chip`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from accelsim._typing import ArrayLike, FloatArray
from accelsim.models.serving._iteration import IterationCost, _f
from accelsim.models.serving._rank_balance import rank_straggle_flops_per_token

_GIGA = 1e9


def expert_parallel_weight_bytes(
    chips: ArrayLike, dense_weight_bytes: ArrayLike, expert_weight_bytes: ArrayLike
) -> FloatArray:
    """Weight bytes the ``chips`` of a data-parallel-attention, expert-parallel replica hold
    together: a copy of the non-expert weights on every chip, the experts once. [B]

    Examples
    --------
    >>> float(expert_parallel_weight_bytes(72, 8.5e9, 327e9))
    939000000000.0
    """
    return _f(chips) * _f(dense_weight_bytes) + _f(expert_weight_bytes)


def expert_parallel_kv_capacity(
    hbm_bytes_per_chip: ArrayLike,
    chips: ArrayLike,
    dense_weight_bytes: ArrayLike,
    expert_weight_bytes: ArrayLike,
    kv_bytes_per_token: ArrayLike,
    memory_share: ArrayLike,
) -> FloatArray:
    """Tokens of KV cache an expert-parallel replica holds over all its chips.

    Parameters
    ----------
    hbm_bytes_per_chip : array_like
        Device memory of one chip. [B]
    chips : array_like
        Chips of the replica, ``N`` (expert-parallel ranks, each an attention rank). [count]
    dense_weight_bytes : array_like
        Bytes of the non-expert weights, copied on every chip. [B]
    expert_weight_bytes : array_like
        Bytes of all routed experts, split over the chips. [B]
    kv_bytes_per_token : array_like
        KV-cache bytes per token (each sequence's cache on its own rank only). [B]
    memory_share : array_like
        Share of device memory for weights and KV cache. [fraction]

    Returns
    -------
    FloatArray
        ``(N·(share·HBM − dense) − experts) / kv_bytes`` [tokens]; zero or negative: the
        weights do not fit (infeasible, as :func:`~accelsim.models.serving.
        kv_capacity_tokens`).

    Examples
    --------
    >>> round(float(expert_parallel_kv_capacity(186e9, 72, 8.5e9, 327e9, 35136.0, 0.9)))
    316308060
    """
    weights = expert_parallel_weight_bytes(chips, dense_weight_bytes, expert_weight_bytes)
    usable = _f(memory_share) * _f(hbm_bytes_per_chip) * _f(chips) - weights
    return _f(usable / _f(kv_bytes_per_token))


def all_to_all_seconds_per_token(
    chips: ArrayLike,
    moe_layers: ArrayLike,
    experts_per_token: ArrayLike,
    d_model: ArrayLike,
    interconnect_gbps: ArrayLike,
    dispatch_bytes: ArrayLike = 1.0,
    combine_bytes: ArrayLike = 2.0,
) -> FloatArray:
    """Replica time per processed token of the expert all-to-all (dispatch and combine). [s]

    Parameters
    ----------
    chips : array_like
        Expert-parallel ranks ``N``. [count]
    moe_layers : array_like
        Layers with routed experts. [count]
    experts_per_token : array_like
        Routed experts per token, ``top-k``. [count]
    d_model : array_like
        Hidden size. [count]
    interconnect_gbps : array_like
        Scale-up bandwidth per chip, bidirectional aggregate as in the catalog. [GB/s]
    dispatch_bytes, combine_bytes : array_like, optional
        Bytes per value sent to the experts (FP8 dispatch: 1) and back (BF16 combine: 2),
        as DeepEP's normal and low-latency kernels send them. [B]

    Returns
    -------
    FloatArray
        ``L_moe · k · d · (b_dispatch + b_combine) · (N − 1)/N / (N · link)`` [s], with
        ``link`` one direction of the chip's links (half the bidirectional figure): each
        chip sends its own ``1/N`` of the tokens, a share ``(N − 1)/N`` of their expert
        copies leaves the chip, and the ``N`` chips send at once. 0 on one chip.

    Notes
    -----
    Charged in full, not overlapped with compute (two-batch overlap hides part of it):
    conservative. Oracle: the closed form.

    Examples
    --------
    >>> round(float(all_to_all_seconds_per_token(72, 58, 8, 7168, 1800)) * 1e9, 2)  # ns
    151.84
    """
    n = _f(chips)
    link = np.maximum(_f(interconnect_gbps), 1e-300) * _GIGA / 2.0
    values = _f(moe_layers) * _f(experts_per_token) * _f(d_model)
    per_token = values * (_f(dispatch_bytes) + _f(combine_bytes)) * (n - 1.0) / n
    return _f(per_token / (n * link))


def expert_parallel_cost(
    cost: IterationCost,
    *,
    chips: ArrayLike,
    dense_weight_bytes: ArrayLike,
    expert_weight_bytes: ArrayLike,
    expert_share: ArrayLike,
    moe_layers: ArrayLike,
    experts_per_token: ArrayLike,
    d_model: ArrayLike,
    interconnect_gbps: ArrayLike,
    routed_active_params: ArrayLike = 0.0,
    imbalance: ArrayLike = 1.0,
    step_tokens: ArrayLike = 0.0,
    input_tokens: ArrayLike = 0.0,
    output_tokens: ArrayLike = 1.0,
    chunk_tokens: ArrayLike = 0.0,
) -> IterationCost:
    """The coefficients of a data-parallel-attention, expert-parallel replica.

    Parameters
    ----------
    cost : IterationCost
        The same replica's tensor-parallel coefficients (:func:`~accelsim.models.serving.
        iteration_cost` with ``chips = N``): compute and bandwidth per byte stay.
    chips : array_like
        Ranks ``N``. [count]
    dense_weight_bytes, expert_weight_bytes : array_like
        Non-expert weights (on every chip) and all routed experts (split). [B]
    expert_share : array_like
        Share of the routed experts one token uses, ``top-k / experts``. [fraction]
    moe_layers, experts_per_token, d_model, interconnect_gbps : array_like
        As in :func:`all_to_all_seconds_per_token`.
    routed_active_params : array_like, optional
        Routed-expert parameters one token uses, ``top-k`` experts' worth. [count]
    imbalance : array_like, optional
        Busiest rank's routed load over the mean (:func:`~accelsim.models.serving.
        expert_load_imbalance`; 1: perfectly balanced). [ratio]
    step_tokens : array_like, optional
        Tokens of the replica's saturated iteration over all ranks, at which the slowest
        rank's prompt work is charged (0: every rank prefills the mean). [tokens]
    input_tokens, output_tokens : array_like, optional
        Mean prompt and output lengths of the workload. [tokens]
    chunk_tokens : array_like, optional
        A chunked iteration's token budget over all ranks (0: whole prompts). [tokens]

    Returns
    -------
    IterationCost
        ``cost`` with the weights the ranks read and the all-to-all in place of the
        all-reduce; the routed experts' FLOPs and the all-to-all are the busiest rank's,
        and the non-routed FLOPs of the prompts one iteration prefills are the slowest
        rank's (:func:`~accelsim.models.serving.rank_straggle_flops_per_token`: a prompt
        token's ``2·(active − routed)`` parameters and its attention to half its prompt,
        spread over the step's tokens as the routed imbalance is).

    Notes
    -----
    Each rank reads its copy of the non-expert weights and the experts its tokens touch,
    so an iteration of ``n`` tokens spread over the ranks reads ``N·D + X·(1 − (1 − s)^n)``
    bytes in all (``D`` dense, ``X`` experts, ``s`` the expert share). The iteration
    formula's one weight term ``W'·(1 − (1 − a')^n)`` takes ``W' = N·D + X`` and
    ``a' = (D + s·X) / W'``: exact for one token (``D + s·X``) and for a batch that
    touches every expert on every rank (``W'``), the regime of any loaded replica; in
    between it reads fewer bytes than the sum (a fifth fewer for DeepSeek-R1 on 72 chips at
    one token per rank, under 1 % fewer from four tokens per rank). Oracle: those two
    limits (tests/validation/test_expert_parallel_theory.py).
    """
    n = _f(chips)
    dense, experts = _f(dense_weight_bytes), _f(expert_weight_bytes)
    total = expert_parallel_weight_bytes(n, dense, experts)
    one_token = dense + _f(expert_share) * experts
    hot = _f(imbalance)
    comm = hot * all_to_all_seconds_per_token(
        n, moe_layers, experts_per_token, d_model, interconnect_gbps
    )
    routed = 2.0 * _f(routed_active_params)
    # A prompt token's FLOPs on its own rank: all but the routed experts; its attention
    # FLOPs are charged at the dense peak's rate, so at their own peak's ratio to it.
    attention = cost.prefill_attention_flops_per_context_token * cost.attention_peak_ratio
    own = (cost.flops_per_token - routed) + attention * (_f(input_tokens) / 2.0)
    straggle = rank_straggle_flops_per_token(
        step_tokens, n, input_tokens, output_tokens, own, chunk_tokens
    )
    flops = cost.flops_per_token + routed * (hot - 1.0) + straggle
    weight, share, comm_b, flops_b, _ = np.broadcast_arrays(
        total, one_token / total, comm, flops, cost.seconds_per_flop
    )
    return dataclasses.replace(
        cost,
        flops_per_token=np.array(flops_b, dtype=np.float64),
        weight_bytes=np.array(weight, dtype=np.float64),
        active_fraction=np.array(share, dtype=np.float64),
        comm_seconds_per_token=np.array(comm_b, dtype=np.float64),
    )


__all__ = [
    "all_to_all_seconds_per_token",
    "expert_parallel_cost",
    "expert_parallel_kv_capacity",
    "expert_parallel_weight_bytes",
]
