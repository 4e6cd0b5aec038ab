"""Iteration runs for the request DES: consecutive iterations of a fixed batch, in closed form.

Part of :mod:`accelsim.models.serving` (import the names from there). A *run* is a
replica's iterations between two changes of its batch: the same ``decode_batch`` sequences
decode one token each per iteration, and the same prompt, if any, is prefilled
``prefill_tokens`` at a time (full chunks of a chunked prefill). Iteration ``i`` (from 0)
then holds ``kv_tokens + decode_batch·i`` cached tokens and its prefilled tokens attend to
``prefill_context_tokens + prefill_tokens·i`` tokens each, so every term of
:func:`~accelsim.models.serving.iteration_seconds` is affine in ``i``, and the run's time
has a closed form (:func:`~accelsim.models.serving.decode_stretch_seconds` is the
decode-only case). A DES times one run at several lengths (its end; when an arrival cuts
it, the few boundaries around the arrival), so :func:`terms_iteration_run` computes the
terms that depend on the batch once and :func:`run_seconds` the time of the run's first
``iterations`` from them, in a few float operations.

Units: seconds [s], tokens [tokens], iterations [count].
"""

from __future__ import annotations

import math

from accelsim.models.serving._iteration import IterationTerms

IterationRun = tuple[float, float, float, float, int, float]
"""A run's prepared terms ``(first0, first1, then0, then1, leading, per_iteration)``: the
roofline time of iteration ``i`` is ``first0 + first1·i`` for ``i < leading`` and
``then0 + then1·i`` after (it switches side at most once), plus ``per_iteration`` (tensor-
parallel traffic and overhead). [s]"""

# "the roofline never switches side": more iterations than any run holds
_NEVER = 1 << 62


def terms_iteration_run(
    terms: IterationTerms, decode: int, kv: int, prefill: int, context: float
) -> IterationRun:
    """The :class:`IterationRun` of a run: ``decode`` sequences decoding beside ``prefill``
    prompt tokens per iteration, ``kv`` tokens cached and ``context`` tokens of prompt
    context at its first iteration, from the plain
    :func:`~accelsim.models.serving.iteration_terms` of its replica. Plain Python with no
    closure, so the request DES's compiled kernel runs this very function.

    With ``n = decode + prefill`` fixed, iteration ``i``'s compute time ``c0 + c1·i`` and
    memory time ``m0 + m1·i`` are affine in ``i`` (``c1`` from the ``decode`` new cached
    tokens and ``prefill²`` new prefill context pairs per iteration, ``m1`` from the new
    cached tokens; the MoE weight share is constant; each side carries the exposed share of
    the other, ``c + e·m`` and ``m + e·c``), so the roofline ``max`` switches side at most
    once, at ``i* = (m0 − c0) / (c1 − m1)``; ties go to compute, as in
    :func:`~accelsim.models.serving.iteration_seconds`. Oracles: the sum of
    :func:`~accelsim.models.serving.iteration_seconds` over the run, equal to float
    rounding (a few 1e-16 relative), and the float closed form of a decode stretch, bit for
    bit (tests/unit/test_serving_runs.py).

    Examples
    --------
    >>> from accelsim.models.serving import iteration_cost, iteration_terms, run_seconds
    >>> from accelsim.models.serving import decode_stretch_seconds
    >>> c = iteration_cost(active_params=8e9, total_params=8e9, layers=32, d_model=4096,
    ...     weight_bytes=16e9, kv_bytes_per_token=131072.0, chips=1, peak_tflops=989,
    ...     hbm_tbps=3.35, interconnect_gbps=900, efficiency=1.0, overhead_seconds=0.001)
    >>> run = terms_iteration_run(iteration_terms(c), 8, 800, 0, 0.0)
    >>> seconds = run_seconds(run, 100)
    >>> bool(abs(seconds / float(decode_stretch_seconds(c, 8, 800, 100)) - 1) < 1e-14)
    True
    """
    n = decode + prefill
    s_flop, s_byte = terms.seconds_per_flop, terms.seconds_per_byte
    attention, kv_bytes = terms.attention_flops_per_context_token, terms.kv_bytes_per_token
    prompt_attention = terms.prefill_attention_flops_per_context_token
    # attention FLOPs weighted by their time ratio (the attention's peak), in dense-FLOP time
    ratio = terms.attention_peak_ratio
    compute0 = (
        terms.flops_per_token * n
        + (attention * kv + prompt_attention * (prefill * context)) * ratio
    ) * s_flop
    compute1 = (attention * decode + prompt_attention * (prefill * prefill)) * ratio * s_flop
    untouched = terms.untouched_fraction ** float(n)
    memory0 = (terms.weight_bytes * (1.0 - untouched) + kv_bytes * kv) * s_byte
    memory1 = kv_bytes * decode * s_byte
    # Each side with the exposed share of the other (max(c, m) + e·min(c, m)): still affine.
    exposed = terms.exposed_fraction
    compute0, memory0 = compute0 + exposed * memory0, memory0 + exposed * compute0
    compute1, memory1 = compute1 + exposed * memory1, memory1 + exposed * compute1
    per_iteration = terms.comm_seconds_per_token * n + terms.overhead_seconds
    gap0, gap1 = compute0 - memory0, compute1 - memory1
    if gap0 >= 0.0:  # compute-bound first, until the gap turns negative
        leading = _NEVER if gap1 >= 0.0 else max(math.floor(-gap0 / gap1) + 1, 0)
        return compute0, compute1, memory0, memory1, leading, per_iteration
    # memory-bound first, until the gap reaches 0
    leading = _NEVER if gap1 <= 0.0 else max(math.ceil(-gap0 / gap1), 0)
    return memory0, memory1, compute0, compute1, leading, per_iteration


def run_seconds(run: IterationRun, iterations: int) -> float:
    """Time of the first ``iterations`` iterations (>= 0, whole) of a prepared run. [s]"""
    first0, first1, then0, then1, leading, per_iteration = run
    if leading >= iterations:  # one side throughout: ``before`` below (``after`` adds 0.0)
        return (
            iterations * first0
            + first1 * (iterations * (iterations - 1) / 2.0)
            + (iterations * per_iteration)
        )
    before = leading * first0 + first1 * (leading * (leading - 1) / 2.0)
    after = (iterations - leading) * then0 + then1 * (
        (iterations * (iterations - 1) - leading * (leading - 1)) / 2.0
    )
    roofline = before + after
    return roofline + iterations * per_iteration


__all__ = ["IterationRun", "run_seconds", "terms_iteration_run"]
