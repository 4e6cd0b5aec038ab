"""The MFU of a run at its own scale, carried up or down from a reference configuration:
the global-batch prior that grows with scale, the reference configuration of a model-size
class, and :func:`mfu_at_scale`, the one function the analytic engine and the scaling
validation both call.

Part of :mod:`accelsim.models.perf`, the public module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from accelsim._typing import ArrayLike, FloatArray
from accelsim.models._perf_compute import _f
from accelsim.models._perf_scaling import local_mfu, scaling_efficiency
from accelsim.models._perf_tensor import (
    TensorTraffic,
    carry_tensor,
    tensor_over_compute_at_peak,
)

Layout = Callable[[FloatArray], Mapping[str, ArrayLike]]
"""Model-parallel chips -> the pipeline keywords of :func:`carry_mfu` (``pipeline_chips``,
``micro_batch_tokens``, ``virtual_stages``) and, optionally, the tensor-parallel layout
(``tensor_chips``, ``layers``, ``d_model``) of the tensor-parallel term."""
_TENSOR_KEYS = ("tensor_chips", "layers", "d_model")


def critical_batch_tokens(
    training_flops: ArrayLike, *, coefficient: float, exponent: float
) -> FloatArray:
    """Compute-optimal global batch of a pretraining run, B = a · C^b. [tokens]

    Parameters
    ----------
    training_flops : array_like
        Training compute C. [FLOP]
    coefficient, exponent : float
        a and b of the power law (``catalog/data/scaling.yaml``: DeepSeek LLM's fit,
        a = 0.2920, b = 0.3271, arXiv:2401.02954 section 3.1).

    Returns
    -------
    ndarray
        The batch beyond which a larger one buys no fewer steps. [tokens]

    Examples
    --------
    GPT-3 175B (3.14e23 FLOP) and Llama 3 405B (3.8e25 FLOP):

    >>> [round(float(critical_batch_tokens(c, coefficient=0.292, exponent=0.3271)) / 1e6, 1)
    ...  for c in (3.14e23, 3.8e25)]
    [14.2, 68.0]
    """
    return _f(coefficient * np.power(_f(training_flops), exponent))


def batch_prior_tokens(
    chips: ArrayLike,
    *,
    base_tokens: ArrayLike,
    tokens_per_chip: ArrayLike,
    ceiling_tokens: ArrayLike,
    floor_tokens: ArrayLike = 0.0,
) -> FloatArray:
    """Global batch of a run on ``chips`` chips, growing with scale as published runs do.

    Parameters
    ----------
    chips : array_like
        Chips training together. [count]
    base_tokens : array_like
        Batch of a run small enough that the batch, not the chips, sets it (the
        ``global_batch_tokens`` prior, 2-16M tokens). [tokens]
    tokens_per_chip : array_like
        Tokens per chip and step that large runs keep as they grow (Llama 3 405B: 16M tokens
        on 16,384 GPUs; ``global_batch_tokens_per_chip``). [tokens]
    ceiling_tokens : array_like
        Largest useful batch (:func:`critical_batch_tokens`). [tokens]
    floor_tokens : array_like, optional
        Smallest feasible batch: one micro-batch per model replica. [tokens]

    Returns
    -------
    ndarray
        B = max(min(max(base, t · n), ceiling), floor). [tokens]

    Notes
    -----
    Published runs grow the batch with the chips (Nemotron-4 15B: 384 -> 1,152 sequences
    from 768 to 2,304 GPUs; Llama 3 405B: 4M -> 16M tokens) so that each chip keeps
    enough work per step, up to the batch beyond which more tokens per step no longer
    save steps. Below ``base / t`` chips the batch is the base one and the per-chip batch
    grows as the run shrinks (gradient accumulation). The floor wins over the ceiling: a
    replica cannot run less than one micro-batch.

    Examples
    --------
    >>> kw = dict(base_tokens=4e6, tokens_per_chip=1024.0, ceiling_tokens=6.8e7)
    >>> [round(float(batch_prior_tokens(n, **kw)) / 1e6, 2) for n in (512, 16384, 100000)]
    [4.0, 16.78, 68.0]
    """
    grown = np.maximum(_f(base_tokens), _f(tokens_per_chip) * _f(chips))
    return _f(np.maximum(np.minimum(grown, _f(ceiling_tokens)), _f(floor_tokens)))


def reference_chips(
    params: ArrayLike,
    *,
    chips_ref: ArrayLike,
    params_ref: ArrayLike,
    model_parallel_chips: ArrayLike,
) -> FloatArray:
    """Chips of the reference configuration of a model of ``params`` parameters. [count]

    The MFU priors were measured on published runs whose chip count grew with the model
    (``mfu_reference_chips`` for models of ``mfu_reference_params``): a model of N
    parameters has its reference at chips_ref · N / N_ref, and never below one replica.

    Examples
    --------
    >>> [round(float(reference_chips(n, chips_ref=4096, params_ref=1.75e11,
    ...                              model_parallel_chips=2))) for n in (7e9, 4.05e11, 1e6)]
    [164, 9479, 2]
    """
    scaled = _f(chips_ref) * _f(params) / _f(params_ref)
    return _f(np.maximum(scaled, _f(model_parallel_chips)))


@dataclass(frozen=True)
class BatchPrior:
    """Inputs of :func:`batch_prior_tokens` shared by the run and its reference."""

    base_tokens: ArrayLike
    """Batch of a small run. [tokens]"""
    tokens_per_chip: ArrayLike
    """Tokens per chip kept at scale. [tokens]"""
    ceiling_tokens: ArrayLike
    """Largest useful batch. [tokens]"""
    fixed_tokens: ArrayLike | None = None
    """The run's own batch where it is known (the reference keeps the prior). [tokens]"""
    reference_tokens: ArrayLike | None = None
    """The reference configuration's own batch where it is a measured run; ``None``: the
    prior's at the reference chips. [tokens]"""
    reference_efficiency: ArrayLike = 0.0
    """Least scaling efficiency of the reference configuration (``scaling.yaml``
    ``reference_efficiency`` for the priors' reference; 0 for a measured one). [fraction]"""


def mfu_at_scale(
    mfu_ref: ArrayLike,
    chips: ArrayLike,
    *,
    params: ArrayLike,
    chips_ref: ArrayLike,
    params_ref: ArrayLike,
    model_parallel_chips: ArrayLike,
    batch: BatchPrior,
    layout: Layout,
    network: Mapping[str, ArrayLike],
    tensor: TensorTraffic | None = None,
) -> FloatArray:
    r"""MFU of a run on ``chips`` chips from the MFU of its reference configuration.

    Parameters
    ----------
    mfu_ref : array_like
        MFU the prior gives at the reference configuration. [fraction]
    chips : array_like
        Chips of the run. [count]
    params : array_like
        Parameters whose gradients are exchanged (active ones for a mixture). [count]
    chips_ref, params_ref : array_like
        Scale of the published runs behind the prior and their model size
        (:func:`reference_chips`). [count]
    model_parallel_chips : array_like
        Chips holding one replica (the fewest that hold its training state). [count]
    batch : BatchPrior
        The global-batch prior (:func:`batch_prior_tokens`).
    layout : callable
        Model-parallel chips -> pipeline keywords of :func:`carry_mfu`, plus
        ``tensor_chips``, ``layers`` and ``d_model`` for the tensor-parallel term.
    network : mapping
        ``peak_tflops``, ``scale_up_domain_chips``, ``scale_up_gbps``,
        ``scale_out_gbps``, ``overlap`` (and optionally ``bytes_per_grad``) of
        :func:`carry_mfu`.
    tensor : TensorTraffic, optional
        Constants of the tensor-parallel term (``scaling.yaml``); ``None`` (or a layout
        without ``tensor_chips``) leaves it out.

    Returns
    -------
    ndarray
        MFU at ``chips``; where no local MFU in (0, 1] reaches ``mfu_ref`` (a measured
        reference the communication model cannot explain) the reference MFU itself.
        [fraction]

    Notes
    -----
    The reference configuration is the run's own model at :func:`reference_chips`, with
    the batch the prior gives there (not capped by the run's compute-optimal batch: it is
    the published runs' practice) and the run's model-parallel layout. Its MFU is
    ``mfu_ref``; the local MFU behind it (:func:`local_mfu`) is carried to the run's own
    chips and batch, up or down: a run smaller than its reference exchanges less and gains
    (never beyond the local MFU of one replica), a larger one loses. Two runs of the same
    model on one chip differ by the ratio of their scaling efficiencies at one local MFU;
    the reference sets that local MFU (the level, and through the exposed traffic's
    dependence on it, the ratio slightly), and carrying is transitive: referring a run to
    any point carried from the reference gives the same MFU.

    Tensor-parallel activation traffic (:func:`tensor_parallel_seconds`, exposed: it sits
    between dependent GEMMs) is a fixed share a·μ_c of compute at a given tensor degree and
    link, whatever the batch. A step costs (C + T_TP)(1 + b) + T_DP: the bubble idles
    micro-batch slots that include their collectives. The local MFU of the reference keeps
    its tensor traffic inside; where the run's tensor degree or link differs (a' ≠ a: a
    group crossing the scale-up domain, a run smaller than one replica) it is carried by
    :func:`carry_tensor`, μ' = μ_c / (1 + a' μ_c) with μ_c = μ / (1 − a μ). Otherwise the
    term changes nothing: the MFU ratio of any two configurations with one tensor layout is
    the ratio of their (compute + tensor) (1 + bubble) + exposed data-parallel terms.

    The reference is never less efficient than ``batch.reference_efficiency`` η*: the
    published runs behind the priors were tuned not to be communication-bound, so where the
    prior's batch would make the reference so (a chip with much compute per unit of
    network, a small model's replicas over thousands of chips) the reference moves to the
    larger batch at which η = η*, and the local MFU is ``mfu_ref / η*``. That bounds every
    run, however small, by ``mfu_ref / η*``: a small run does not get an MFU above the
    published ones by inheriting a badly configured reference.

    .. math:: \mathrm{MFU}(n) = \mu\,\eta(n; \mu), \qquad
              \mu = \min\!\left(\mathrm{MFU_{local}}(n_{ref}),\;
              \mathrm{MFU_{ref}}/\eta^*\right)

    with :func:`local_mfu` and :func:`scaling_efficiency`. Oracle: MLPerf Training LLM
    scaling pairs, leave-one-out (tests/validation/test_perf_scaling_pairs.py).

    Examples
    --------
    Llama 3 405B on H100 (8-GPU NVLink nodes, 50 GB/s per GPU out), MFU 0.40 at its
    reference, carried down to 2,048 and up to 16,384 GPUs with the batch prior:

    >>> from accelsim.models.perf import BatchPrior
    >>> layout = lambda g: dict(pipeline_chips=g / 8, micro_batch_tokens=8192.0,
    ...                         virtual_stages=8.0)
    >>> net = dict(peak_tflops=989.0, scale_up_domain_chips=8, scale_up_gbps=900.0,
    ...            scale_out_gbps=50.0, overlap=0.0)
    >>> batch = BatchPrior(base_tokens=4e6, tokens_per_chip=1024.0, ceiling_tokens=6.8e7,
    ...                    reference_efficiency=0.85)
    >>> [round(float(mfu_at_scale(0.40, n, params=405e9, chips_ref=4096, params_ref=1.75e11,
    ...     model_parallel_chips=128, batch=batch, layout=layout, network=net)), 3)
    ...  for n in (2048, 9479, 16384)]
    [0.429, 0.4, 0.4]
    """
    n = _f(chips)
    mp = _f(model_parallel_chips)
    mp_run = np.minimum(mp, n)
    n_ref = reference_chips(
        params, chips_ref=chips_ref, params_ref=params_ref, model_parallel_chips=mp
    )
    ref_full = layout(mp)
    run_full = layout(mp_run)
    ref_layout = {k: v for k, v in ref_full.items() if k not in _TENSOR_KEYS}
    run_layout = {k: v for k, v in run_full.items() if k not in _TENSOR_KEYS}
    batch_ref, batch_run = _batches(
        batch, (n_ref, mp, ref_layout["micro_batch_tokens"]),
        (n, mp_run, run_layout["micro_batch_tokens"]),
    )  # fmt: skip
    local = local_mfu(
        mfu_ref,
        n_ref,
        params=params,
        global_batch_tokens=batch_ref,
        model_parallel_chips=mp,
        pipeline_chips=ref_layout["pipeline_chips"],
        micro_batch_tokens=ref_layout["micro_batch_tokens"],
        virtual_stages=ref_layout["virtual_stages"],
        **network,
    )
    floor = _f(batch.reference_efficiency)
    with np.errstate(divide="ignore"):
        bound = np.where(floor > 0.0, _f(mfu_ref) / np.where(floor > 0.0, floor, 1.0), np.inf)
    # A reference less efficient than the floor is moved to the larger batch that reaches it
    # (the published runs behind the prior were not communication-bound); a nan (no local
    # MFU reaches mfu_ref at the prior's batch) is the same case.
    local = _f(np.where(np.isnan(local) | (local > bound), bound, local))
    if tensor is not None:
        a_ref = tensor_over_compute_at_peak(params, ref_full, network, tensor)
        a_run = tensor_over_compute_at_peak(params, run_full, network, tensor)
        local = carry_tensor(local, a_ref, a_run)
    eta = scaling_efficiency(
        n,
        params=params,
        global_batch_tokens=batch_run,
        model_parallel_chips=mp_run,
        mfu_local=local,
        **run_layout,
        **network,
    )
    carried = local * eta
    usable = (local > 0.0) & (local <= 1.0) & np.isfinite(carried)
    return _f(np.where(usable, carried, _f(mfu_ref)))


def _batches(
    batch: BatchPrior,
    reference: tuple[FloatArray, FloatArray, ArrayLike],
    run: tuple[FloatArray, FloatArray, ArrayLike],
) -> tuple[FloatArray, FloatArray]:
    """Global batches of the reference configuration and of the run, each ``(chips,
    model-parallel chips, micro-batch tokens)``: the prior's, or the ones fixed in ``batch``.

    The reference is the published runs' practice at its scale, which the run's own
    compute-optimal batch does not cap: so the reference (and the local MFU) does not depend
    on the run's token count, and a longer run's larger batch only helps it. [tokens]
    """

    def prior(config: tuple[FloatArray, FloatArray, ArrayLike], ceiling: ArrayLike) -> FloatArray:
        count, group, micro = config
        return batch_prior_tokens(
            count,
            base_tokens=batch.base_tokens,
            tokens_per_chip=batch.tokens_per_chip,
            ceiling_tokens=ceiling,
            floor_tokens=count / group * _f(micro),
        )

    batch_ref = (
        prior(reference, np.inf) if batch.reference_tokens is None else _f(batch.reference_tokens)
    )
    batch_run = (
        prior(run, batch.ceiling_tokens) if batch.fixed_tokens is None else _f(batch.fixed_tokens)
    )
    return batch_ref, batch_run


def tokens_to_target(
    tokens_min: ArrayLike, batch_tokens: ArrayLike, noise_batch_tokens: ArrayLike
) -> FloatArray:
    """Tokens a run needs to reach a target loss at global batch B, E = E_min (1 + B / B_noise).

    Parameters
    ----------
    tokens_min : array_like
        E_min: tokens to the target at a batch much smaller than B_noise. [tokens]
    batch_tokens : array_like
        B: the run's global batch. [tokens]
    noise_batch_tokens : array_like
        B_noise: the gradient noise scale in tokens; a batch of B_noise costs twice E_min.
        [tokens]

    Returns
    -------
    ndarray
        E >= E_min, non-decreasing in B. [tokens]

    Notes
    -----
    McCandlish et al. 2018, "An Empirical Model of Large-Batch Training" (arXiv:1812.06162),
    eq. 2.11: steps S and examples E to a given loss trade off as
    (S / S_min - 1)(E / E_min - 1) = 1, with E = E_min (1 + B / B_noise). A larger batch
    takes fewer steps but more tokens.

    Examples
    --------
    >>> float(tokens_to_target(1e9, 3e6, 3e6))  # B = B_noise: twice the tokens
    2000000000.0
    """
    return _f(tokens_min) * (1.0 + _f(batch_tokens) / _f(noise_batch_tokens))


__all__ = [
    "BatchPrior",
    "Layout",
    "batch_prior_tokens",
    "critical_batch_tokens",
    "mfu_at_scale",
    "reference_chips",
    "tokens_to_target",
]
