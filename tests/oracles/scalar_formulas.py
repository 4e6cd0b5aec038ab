"""The serving formulas on plain floats of one replica, for the tests.

:func:`scalar_iteration_seconds` and :func:`scalar_iteration_run` bind the library's own
plain-float functions (:func:`accelsim.models.serving.terms_iteration_seconds`,
:func:`~accelsim.models.serving.terms_iteration_run`, which the request DES's kernel runs) to
one replica's :func:`~accelsim.models.serving.iteration_terms`, as the tests call them.
:func:`scalar_decode_stretch_seconds` is an oracle:
:func:`accelsim.models.serving.decode_stretch_seconds` written again on floats, with no numpy
call, which the library does not use.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

from accelsim.models.serving import (
    IterationCost,
    IterationRun,
    iteration_terms,
    terms_iteration_run,
    terms_iteration_seconds,
)


def scalar_iteration_seconds(cost: IterationCost) -> Callable[[float, float, float, float], float]:
    """``f(decode_batch, prefill_tokens, kv_tokens, prefill_context_tokens) -> seconds`` of
    one replica: :func:`~accelsim.models.serving.iteration_seconds` on floats, bit for bit."""
    return partial(terms_iteration_seconds, iteration_terms(cost))


def scalar_iteration_run(cost: IterationCost) -> Callable[[int, int, int, float], IterationRun]:
    """``f(decode_batch, kv_tokens, prefill_tokens, prefill_context_tokens) -> IterationRun``
    of one replica (:func:`~accelsim.models.serving.terms_iteration_run`)."""
    return partial(terms_iteration_run, iteration_terms(cost))


def scalar_decode_stretch_seconds(cost: IterationCost) -> Callable[[int, int, int], float]:
    """:func:`decode_stretch_seconds` of one run as a plain-float function.

    The same closed form on Python floats (no numpy call per stretch).

    Parameters
    ----------
    cost : IterationCost
        Coefficients of one run (every field of shape ``()`` or size 1).

    Returns
    -------
    callable
        ``f(decode_batch, kv_tokens, iterations) -> seconds``, arguments as in
        :func:`decode_stretch_seconds` ([count], [tokens], [count]), result [s].

    Examples
    --------
    >>> from accelsim.models.serving import decode_stretch_seconds, iteration_cost
    >>> c = iteration_cost(active_params=8e9, total_params=8e9, layers=32, d_model=4096,
    ...     weight_bytes=16e9, kv_bytes_per_token=131072.0, chips=1, peak_tflops=989,
    ...     hbm_tbps=3.35, interconnect_gbps=900, efficiency=1.0, overhead_seconds=0.001)
    >>> f = scalar_decode_stretch_seconds(c)
    >>> bool(abs(f(8, 800, 100) / float(decode_stretch_seconds(c, 8, 800, 100)) - 1) < 1e-15)
    True
    """
    flops_per_token = float(cost.flops_per_token)
    attention = float(cost.attention_flops_per_context_token)
    untouched = 1.0 - float(cost.active_fraction)
    weight = float(cost.weight_bytes)
    kv_bytes = float(cost.kv_bytes_per_token)
    s_flop = float(cost.seconds_per_flop)
    ratio = float(cost.attention_peak_ratio)  # attention's time per FLOP over the dense one
    s_byte = float(cost.seconds_per_byte)
    comm = float(cost.comm_seconds_per_token)
    overhead = float(cost.overhead_seconds)
    exposed = float(cost.exposed_fraction)

    def seconds(decode: int, kv: int, iterations: int) -> float:
        compute0 = (flops_per_token * decode + attention * kv * ratio) * s_flop
        compute1 = attention * decode * ratio * s_flop
        memory0 = (weight * (1.0 - untouched**decode) + kv_bytes * kv) * s_byte
        memory1 = kv_bytes * decode * s_byte
        # each side with the exposed share of the other: max(c, m) + e·min(c, m)
        compute0, memory0 = compute0 + exposed * memory0, memory0 + exposed * compute0
        compute1, memory1 = compute1 + exposed * memory1, memory1 + exposed * compute1
        gap0, gap1 = compute0 - memory0, compute1 - memory1
        if gap0 >= 0.0:  # compute-bound first, until the gap turns negative
            leading = iterations if gap1 >= 0.0 else math.floor(-gap0 / gap1) + 1
            first0, first1, then0, then1 = compute0, compute1, memory0, memory1
        else:  # memory-bound first, until the gap reaches 0
            leading = iterations if gap1 <= 0.0 else math.ceil(-gap0 / gap1)
            first0, first1, then0, then1 = memory0, memory1, compute0, compute1
        leading = min(max(leading, 0), iterations)
        before = leading * first0 + first1 * (leading * (leading - 1) / 2.0)
        after = (iterations - leading) * then0 + then1 * (
            (iterations * (iterations - 1) - leading * (leading - 1)) / 2.0
        )
        roofline = before + after
        return roofline + iterations * (comm * decode + overhead)

    return seconds
