"""Speculative decoding and multi-token prediction (MTP): tokens per verification step.

Part of :mod:`accelsim.models.serving` (import the names from there). A replica that
speculates drafts ``k`` tokens per sequence (an MTP head, an EAGLE head, a small draft
model), then runs the target model once over the ``k + 1`` positions of every decoding
sequence and keeps the longest prefix of drafts the target agrees with, plus the target's
own next token. With a per-token acceptance rate ``a`` (each draft accepted with
probability ``a`` given that every earlier one was), one verification step emits
:func:`expected_accepted_tokens` tokens per sequence on average.

:func:`speculative_step_seconds` is the time of one such step of a decode-only batch (the
verification pass over ``k + 1`` tokens per sequence plus the ``k`` draft passes), and
:func:`speculative_cost` folds it into an :class:`~accelsim.models.serving.IterationCost`
whose decode iteration is the time per *emitted* token of a sequence, so every formula
built on :func:`~accelsim.models.serving.iteration_seconds` (throughput, latency under
load, SLO capacity, the request DES) serves a speculating replica unchanged.

Units: seconds [s], tokens, [fraction].
"""

from __future__ import annotations

import dataclasses

import numpy as np

from accelsim._typing import ArrayLike, FloatArray
from accelsim.models.serving._iteration import IterationCost, _f, iteration_seconds


def expected_accepted_tokens(acceptance: ArrayLike, draft_tokens: ArrayLike) -> FloatArray:
    """Mean tokens one verification step emits per sequence. [tokens]

    Parameters
    ----------
    acceptance : array_like
        Probability that a draft token is accepted given that every earlier draft of the
        step was, in [0, 1]. [fraction]
    draft_tokens : array_like
        Draft tokens per sequence and step, ``k >= 0`` (0: no speculation). [count]

    Returns
    -------
    FloatArray
        ``(1 − a^(k+1)) / (1 − a)``, from 1 (``a = 0`` or ``k = 0``) to ``k + 1``
        (``a = 1``). [tokens]

    Notes
    -----
    Step ``i`` (from 1) of the drafts is reached with probability ``a^i`` and the target's
    own token always counts, so the mean is ``sum_{i=0}^{k} a^i``, the geometric sum of
    Leviathan, Kalman & Matias (2023), eq. 1. Oracle: that sum, and a Monte Carlo of
    Bernoulli acceptances (tests/validation/test_speculative_theory.py).

    References
    ----------
    Leviathan, Kalman, Matias, "Fast Inference from Transformers via Speculative Decoding",
    ICML 2023, arXiv:2211.17192.

    Examples
    --------
    >>> float(expected_accepted_tokens(0.9, 1)), float(expected_accepted_tokens(1.0, 3))
    (1.9, 4.0)
    """
    a = np.clip(_f(acceptance), 0.0, 1.0)
    k = _f(draft_tokens)
    with np.errstate(divide="ignore", invalid="ignore"):
        geometric = (1.0 - np.power(a, k + 1.0)) / (1.0 - a)
    return _f(np.where(a >= 1.0, k + 1.0, geometric))


def speculative_step_seconds(
    cost: IterationCost,
    decode_batch: ArrayLike,
    kv_tokens: ArrayLike,
    draft_tokens: ArrayLike,
    draft_cost: ArrayLike,
) -> FloatArray:
    """Time of one speculative step of a decode-only batch: ``k`` drafts, one verification.

    Parameters
    ----------
    cost : IterationCost
        The target replica's coefficients (:func:`~accelsim.models.serving.iteration_cost`).
    decode_batch : array_like
        Sequences decoding. [count]
    kv_tokens : array_like
        Cached tokens they attend to, summed over them. [tokens]
    draft_tokens : array_like
        Draft tokens per sequence, ``k``. [count]
    draft_cost : array_like
        Time of one draft pass over the batch as a share of a target decode iteration of
        the same batch (an MTP module of one layer: about one layer's share). [fraction]

    Returns
    -------
    FloatArray
        ``verify + k · draft_cost · T(B)``. [s]

    Notes
    -----
    The verification runs ``B·(k + 1)`` tokens through the target: dense FLOPs and the
    tensor-parallel traffic scale with them, each of the ``k + 1`` query positions attends
    to its sequence's cache (``(k + 1)·kv`` pairs), the weights are read once (a mixture of
    experts: those ``B·(k + 1)`` tokens touch), and the cache once::

        c = (2·N_active·B(k+1) + 4·L·d·(k+1)·kv·r)·s_flop
        m = (W·(1 − (1 − a)^(B(k+1))) + kv_bytes·kv)·s_byte
        verify = max(c, m) + e·min(c, m) + comm·B(k+1) + overhead

    (``e`` the exposed share, :attr:`IterationCost.exposed_fraction`; 0 for the roofline max;
    ``r`` the attention's time per FLOP over the dense one,
    :attr:`IterationCost.attention_peak_ratio`).

    ``T(B)`` is :func:`~accelsim.models.serving.iteration_seconds` of the batch without
    speculation. Oracle: ``k = 0`` gives ``T(B)`` exactly.

    Examples
    --------
    >>> from accelsim.models.serving import iteration_cost
    >>> c = iteration_cost(active_params=8e9, total_params=8e9, layers=32, d_model=4096,
    ...     weight_bytes=16e9, kv_bytes_per_token=131072.0, chips=1, peak_tflops=989,
    ...     hbm_tbps=3.35, interconnect_gbps=900, efficiency=1.0, overhead_seconds=0.0)
    >>> plain = float(iteration_seconds(c, 8, 0, 8000))
    >>> float(speculative_step_seconds(c, 8, 8000, 0, 0.05)) == plain
    True
    """
    batch, kv = _f(decode_batch), _f(kv_tokens)
    positions = _f(draft_tokens) + 1.0
    n = batch * positions
    attention = cost.attention_flops_per_context_token * positions * kv
    compute = (cost.flops_per_token * n + attention * cost.attention_peak_ratio) * (
        cost.seconds_per_flop
    )
    touched = 1.0 - np.power(1.0 - cost.active_fraction, n)
    memory = (cost.weight_bytes * touched + cost.kv_bytes_per_token * kv) * cost.seconds_per_byte
    # the longer side plus the exposed share of the shorter, as iteration_seconds
    exposed = cost.exposed_fraction
    roofline = np.where(compute >= memory, compute + exposed * memory, memory + exposed * compute)
    verify = roofline + cost.comm_seconds_per_token * n + cost.overhead_seconds
    drafts = (positions - 1.0) * _f(draft_cost) * iteration_seconds(cost, batch, 0.0, kv)
    return _f(verify + drafts)


def speculative_cost(
    cost: IterationCost,
    acceptance: ArrayLike,
    draft_tokens: ArrayLike,
    draft_cost: ArrayLike,
) -> IterationCost:
    """The coefficients of a speculating replica per emitted token of each sequence.

    Parameters
    ----------
    cost : IterationCost
        The target replica's coefficients without speculation.
    acceptance : array_like
        Per-token acceptance rate (:func:`expected_accepted_tokens`). [fraction]
    draft_tokens : array_like
        Draft tokens per sequence and step, ``k``. [count]
    draft_cost : array_like
        One draft pass as a share of a target decode iteration (as in
        :func:`speculative_step_seconds`). [fraction]

    Returns
    -------
    IterationCost
        Coefficients ``c'`` with ``iteration_seconds(c', B, 0, kv)`` the time per emitted
        token of a sequence: the speculative step over the ``E`` tokens it emits.

    Notes
    -----
    With ``E`` = :func:`expected_accepted_tokens`, ``r = k + 1 + k·draft_cost`` and
    ``m = 1 + k·draft_cost``: the per-token FLOPs, attention FLOPs and collective traffic
    scale by ``r / E`` (each step processes ``k + 1`` positions plus the drafts), the weight
    and cache bytes and the fixed overhead by ``m / E`` (read and paid once per step, plus
    once per draft pass), and a token's share of the expert weights becomes
    ``1 − (1 − a)^(k+1)`` (the ``k + 1`` positions of a sequence route independently).
    For a dense model whose verification and draft passes are both compute-bound or both
    memory-bound, ``iteration_seconds(c', B, 0, kv) = speculative_step_seconds(...) / E``
    exactly; otherwise the two differ by at most ``k·draft_cost·|compute − memory| / E`` of
    a plain iteration, and a mixture of experts charges each draft pass the expert bytes
    the verified positions touch (over by ``k·draft_cost`` times the difference)
    (tests/validation/test_speculative_theory.py). Prompt tokens in a mixed
    iteration are charged at the same ``r / E`` rate: conservative for prefill, which does
    not speculate, by that factor (1.5 at ``k = 3``, ``a = 0.75``, a 3 % draft).
    """
    k, c = _f(draft_tokens), _f(draft_cost)
    emitted = expected_accepted_tokens(acceptance, k)
    per_position = (k + 1.0 + k * c) / emitted
    per_step = (1.0 + k * c) / emitted
    untouched = np.power(1.0 - cost.active_fraction, k + 1.0)
    parts = np.broadcast_arrays(
        cost.flops_per_token * per_position,
        cost.attention_flops_per_context_token * per_position,
        cost.weight_bytes * per_step,
        1.0 - untouched,
        cost.kv_bytes_per_token * per_step,
        cost.comm_seconds_per_token * per_position,
        cost.overhead_seconds * per_step,
        cost.seconds_per_flop,
        cost.seconds_per_byte,
    )
    fields = (
        "flops_per_token",
        "attention_flops_per_context_token",
        "weight_bytes",
        "active_fraction",
        "kv_bytes_per_token",
        "comm_seconds_per_token",
        "overhead_seconds",
        "seconds_per_flop",
        "seconds_per_byte",
    )
    return dataclasses.replace(
        cost, **{f: np.array(p, dtype=np.float64) for f, p in zip(fields, parts, strict=True)}
    )


__all__ = ["expected_accepted_tokens", "speculative_cost", "speculative_step_seconds"]
