"""Training FLOPs, memory per chip (and the fewest chips that fit), delivered TFLOP/s and
failure-free compute time.

Part of :mod:`accelsim.models.perf`, the public module.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from accelsim._typing import ArrayLike, FloatArray

Sharding = Literal["none", "zero1", "zero2", "zero3", "fsdp"]

_BYTES_PER_GIB = 2.0**30
_SECONDS_PER_HOUR = 3600.0

# Which of (parameters, gradients, optimizer states) each strategy shards across the chips,
# after Rajbhandari et al. (2020): ZeRO-1 = P_os, ZeRO-2 = P_os+g, ZeRO-3 = P_os+g+p; PyTorch
# FSDP FULL_SHARD shards all three, like ZeRO-3 (Zhao et al. 2023).
_SHARDED: dict[str, tuple[bool, bool, bool]] = {
    "none": (False, False, False),
    "zero1": (False, False, True),
    "zero2": (False, True, True),
    "zero3": (True, True, True),
    "fsdp": (True, True, True),
}


def _f(x: ArrayLike) -> FloatArray:
    return np.asarray(x, dtype=np.float64)


def training_flops(
    params: ArrayLike,
    tokens: ArrayLike,
    *,
    layers: ArrayLike | None = None,
    seq_len: ArrayLike | None = None,
    d_model: ArrayLike | None = None,
) -> FloatArray:
    """Model FLOPs of training a dense transformer: 6·N·D, plus attention if its shape is given.

    The 6·N·D count (forward 2N, backward 4N per token) is the convention MFU is reported in;
    it ignores attention score FLOPs and activation recomputation. Giving ``layers``,
    ``seq_len`` and ``d_model`` together adds the attention term of PaLM's MFU definition.

    Parameters
    ----------
    params : array_like
        Parameters active per token (for a mixture of experts, the active ones). [count]
    tokens : array_like
        Training tokens. [count]
    layers, seq_len, d_model : array_like, optional
        Transformer layers [count], sequence length [tokens] and attention width
        (heads × head dimension) [count]. All three, or none for the plain 6·N·D.

    Returns
    -------
    ndarray
        Training FLOPs. [FLOP]

    Notes
    -----
    .. math:: F = 6 N D + 12 L T d \\cdot D

    The attention term is PaLM's (Chowdhery et al. 2022, appendix B): QKᵀ and scores·V of
    every layer over the full T×T matrix, forward and backward, 12·L·H·Q·T per token with
    H·Q = d (Kaplan et al. 2020 count QKᵀ only, half of it). Oracle: Narayanan et al. (2021)
    eq. 3 without recomputation or logit layer, 72·B·s·l·h²·(1 + s/6h), with N = 12·l·h².

    References
    ----------
    Chowdhery et al. (2022), PaLM, arXiv:2204.02311, appendix B.
    Narayanan et al. (2021), Efficient large-scale language model training on GPU clusters
    using Megatron-LM, arXiv:2104.04473.

    Examples
    --------
    >>> float(training_flops(175e9, 300e9))
    3.15e+23
    >>> float(training_flops(175e9, 300e9, layers=96, seq_len=2048, d_model=12288))  # +2.8 %
    3.237e+23
    """
    flops = 6.0 * _f(params) * _f(tokens)
    if layers is None or seq_len is None or d_model is None:
        return flops
    return flops + 12.0 * _f(layers) * _f(seq_len) * _f(d_model) * _f(tokens)


def _state_bytes(
    params: ArrayLike,
    sharding: Sharding,
    bytes_per_param: ArrayLike,
    optimizer_bytes_per_param: ArrayLike,
    grad_bytes_per_param: ArrayLike,
) -> tuple[FloatArray, FloatArray]:
    """(bytes every chip holds in full, bytes sharded over the chips) of the model states."""
    try:
        sharded_flags = _SHARDED[sharding]
    except KeyError:
        raise ValueError(f"sharding must be one of {sorted(_SHARDED)}, got {sharding!r}") from None
    per_param = (_f(bytes_per_param), _f(grad_bytes_per_param), _f(optimizer_bytes_per_param))
    replicated = np.zeros(())
    sharded = np.zeros(())
    for size, is_sharded in zip(per_param, sharded_flags, strict=True):
        if is_sharded:
            sharded = sharded + size
        else:
            replicated = replicated + size
    n = _f(params)
    return n * replicated, n * sharded


def memory_per_chip_gib(
    params: ArrayLike,
    chips: ArrayLike,
    *,
    sharding: Sharding,
    bytes_per_param: ArrayLike = 2.0,
    optimizer_bytes_per_param: ArrayLike = 12.0,
    grad_bytes_per_param: ArrayLike = 2.0,
    activation_gib: ArrayLike = 0.0,
) -> FloatArray:
    """HBM one chip needs for the model states of mixed-precision Adam, after ZeRO.

    Data parallelism over ``chips`` with the chosen sharding of parameters, gradients and
    optimizer states. Activations are per chip and are not sharded.

    Parameters
    ----------
    params : array_like
        Model parameters. [count]
    chips : array_like
        Chips the states are sharded over (the data-parallel group). [count]
    sharding : {"none", "zero1", "zero2", "zero3", "fsdp"}
        Sharded: nothing; optimizer states; + gradients; + parameters ("fsdp" = FULL_SHARD).
    bytes_per_param, grad_bytes_per_param : array_like, optional
        Weights and gradients in bf16/fp16. [B per parameter]
    optimizer_bytes_per_param : array_like, optional
        fp32 master weights, Adam momentum and variance (K = 12). [B per parameter]
    activation_gib : array_like, optional
        Activations and buffers per chip. [GiB]

    Returns
    -------
    ndarray
        Memory per chip. [GiB]

    Notes
    -----
    With Ψ parameters, K optimizer bytes and N_d chips (Rajbhandari et al. 2020, fig. 1):
    none (2 + 2 + K)Ψ; zero1 2Ψ + 2Ψ + KΨ/N_d; zero2 2Ψ + (2 + K)Ψ/N_d;
    zero3 (2 + 2 + K)Ψ/N_d. Oracle: the paper's figure 1 at Ψ = 7.5 B, N_d = 64, K = 12:
    120, 31.4, 16.6 and 1.9 GB.

    References
    ----------
    Rajbhandari et al. (2020), ZeRO: memory optimizations toward training trillion
    parameter models, arXiv:1910.02054.

    Examples
    --------
    >>> float(memory_per_chip_gib(7.5e9, 64, sharding="zero2") * 2**30 / 1e9)
    16.640625
    """
    replicated, sharded = _state_bytes(
        params, sharding, bytes_per_param, optimizer_bytes_per_param, grad_bytes_per_param
    )
    return (replicated + sharded / _f(chips)) / _BYTES_PER_GIB + _f(activation_gib)


def min_chips_to_fit(
    params: ArrayLike,
    hbm_gib: ArrayLike,
    *,
    sharding: Sharding,
    usable_fraction: ArrayLike = 1.0,
    bytes_per_param: ArrayLike = 2.0,
    optimizer_bytes_per_param: ArrayLike = 12.0,
    grad_bytes_per_param: ArrayLike = 2.0,
    activation_gib: ArrayLike = 0.0,
) -> FloatArray:
    """Fewest chips whose HBM holds the model states under a sharding strategy.

    Parameters
    ----------
    params : array_like
        Model parameters. [count]
    hbm_gib : array_like
        HBM per chip. [GiB]
    sharding : {"none", "zero1", "zero2", "zero3", "fsdp"}
        As in :func:`memory_per_chip_gib`.
    usable_fraction : array_like, optional
        Share of the HBM the training states may use (the rest holds the runtime context,
        communication buffers and fragmentation). [fraction]
    bytes_per_param, optimizer_bytes_per_param, grad_bytes_per_param, activation_gib
        As in :func:`memory_per_chip_gib`.

    Returns
    -------
    ndarray
        Minimum chips, a whole number ≥ 1; ``inf`` where no chip count fits (the replicated
        part alone exceeds the usable HBM). [count]

    Notes
    -----
    With R the replicated bytes plus activations and S the sharded bytes, the states fit on
    n chips when R + S/n ≤ f·HBM, so n = max(1, ⌈S / (f·HBM − R)⌉). Oracle: the result fits
    (:func:`memory_per_chip_gib` ≤ f·HBM) and one chip fewer does not (property test).

    Examples
    --------
    >>> float(min_chips_to_fit(70e9, 80, sharding="zero3"))
    14.0
    >>> float(min_chips_to_fit(70e9, 80, sharding="none"))
    inf
    """
    replicated, sharded = _state_bytes(
        params, sharding, bytes_per_param, optimizer_bytes_per_param, grad_bytes_per_param
    )
    capacity = _f(usable_fraction) * _f(hbm_gib) * _BYTES_PER_GIB
    spare = capacity - replicated - _f(activation_gib) * _BYTES_PER_GIB
    with np.errstate(divide="ignore", invalid="ignore"):
        needed = np.maximum(np.ceil(sharded / spare), 1.0)
    fits_unsharded = (sharded == 0.0) & (spare >= 0.0)
    return np.where(spare > 0.0, needed, np.where(fits_unsharded, 1.0, np.inf))


def delivered_tflops(peak_tflops: ArrayLike, mfu: ArrayLike) -> FloatArray:
    """Model FLOP/s one chip delivers: its dense peak [TFLOP/s] times the MFU [fraction].

    Returns [TFLOP/s]. Notes: the definition of MFU (Chowdhery et al. 2022, appendix B).

    Examples
    --------
    >>> float(delivered_tflops(989.0, 0.4))
    395.6
    """
    return _f(peak_tflops) * _f(mfu)


def compute_hours(
    flops: ArrayLike, chips: ArrayLike, peak_tflops: ArrayLike, mfu: ArrayLike
) -> FloatArray:
    """Failure-free training time: the FLOPs at the fleet's delivered throughput.

    Parameters
    ----------
    flops : array_like
        Training FLOPs (e.g. :func:`training_flops`). [FLOP]
    chips : array_like
        Chips training together. [count]
    peak_tflops : array_like
        Dense peak per chip at the training precision. [TFLOP/s]
    mfu : array_like
        MFU of the run at this scale (see :func:`carry_mfu`). [fraction]

    Returns
    -------
    ndarray
        Wall-clock hours without failures, restarts or checkpoints. [h]

    Notes
    -----
    .. math:: t = F / (n \\cdot P \\cdot 10^{12} \\cdot \\mathrm{MFU}) / 3600

    Oracle: ``derived_ideal_days_at_reported_mfu`` of ../shared/reference/validation/
    training_runs.csv (GLM-130B: 46.4 days), recomputed in the validation tests.

    Examples
    --------
    >>> round(float(compute_hours(3.12e23, 768, 312.0, 0.325)) / 24, 1)
    46.4
    """
    delivered = _f(chips) * _f(peak_tflops) * 1e12 * _f(mfu)
    return _f(flops) / delivered / _SECONDS_PER_HOUR
