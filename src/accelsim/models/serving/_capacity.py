"""A serving replica's capacity under an SLO: the largest Poisson rate meeting its bounds.

Part of :mod:`accelsim.models.serving` (import the names from there):
:func:`slo_capacity_rps` and its result :class:`SloCapacity`. Units: rates [1/s].
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from accelsim._typing import ArrayLike, BoolArray, FloatArray
from accelsim.models.serving._iteration import IterationCost, _f
from accelsim.models.serving._load import latency_under_load
from accelsim.models.serving._memory import batch_limit, offline_tokens_per_s

# Iterations of the fixed-iteration bisection on the rate: the bracket shrinks by 2**-40, far
# below any tolerance a rate is quoted to.
_RATE_ITERATIONS = 40
_SCAN_SHARES = np.linspace(0.05, 1.0, 20)
"""Shares of ``λ_sat`` :func:`slo_capacity_rps` scans before it bisects."""


@dataclass(frozen=True)
class SloCapacity:
    """Largest Poisson rate per replica meeting an SLO (:func:`slo_capacity_rps`)."""

    rate_rps: FloatArray
    """Largest rate meeting both bounds; 0 where infeasible. [1/s]"""
    saturated_rps: FloatArray
    """Saturated (offline) request rate of the replica, the upper end of the search. [1/s]"""
    feasible: BoolArray
    """False where even a vanishing rate misses the SLO (or the model does not fit)."""


def slo_capacity_rps(
    cost: IterationCost,
    input_tokens: ArrayLike,
    output_tokens: ArrayLike,
    kv_capacity_tokens: ArrayLike,
    max_batch: ArrayLike,
    ttft_s: ArrayLike,
    tpot_s: ArrayLike,
    percentile: ArrayLike = 0.99,
    *,
    prefill_chunk_tokens: ArrayLike = 0.0,
    input_variance: ArrayLike = 0.0,
    input_third_moment: ArrayLike = 0.0,
    input_fourth_moment: ArrayLike | None = None,
    input_nodes: ArrayLike | None = None,
    input_weights: ArrayLike | None = None,
    output_nodes: ArrayLike | None = None,
    output_weights: ArrayLike | None = None,
) -> SloCapacity:
    """Largest Poisson rate one replica serves with TTFT and TPOT within bounds at a percentile.

    Parameters
    ----------
    cost : IterationCost
        The replica's coefficients.
    input_tokens, output_tokens : array_like
        Mean prompt and output lengths (> 0). [tokens]
    kv_capacity_tokens : array_like
        KV-cache capacity. [tokens]
    max_batch : array_like
        Scheduler cap on running sequences. [count]
    ttft_s, tpot_s : array_like
        SLO bounds on time to first token and time per output token. [s]
    percentile : array_like, optional
        Percentile the bounds apply at (MLPerf: 0.99). [fraction]
    prefill_chunk_tokens, input_variance, input_third_moment, input_fourth_moment : optional
    input_nodes, input_weights, output_nodes, output_weights : optional
        The scheduler's prefill chunk, the prompt-length law (central moments, or
        nodes and their probabilities) and the output-length law's nodes, as in
        :func:`latency_under_load`. [tokens], [tokens²], [tokens³], [tokens⁴], [tokens],
        [–], [tokens], [–]
    Returns
    -------
    SloCapacity
        Rate, saturated rate and feasibility per run.

    Notes
    -----
    A scan of ``λ_sat`` at shares 0.05, 0.1, ..., 1, then bisection (fixed iteration
    count, vectorised over runs) between the last share that meets the SLO and the first
    that does not, with ``λ_sat = offline_tokens_per_s / output_tokens`` (under the chunk's
    token budget); no rate above a failing share counts (near saturation the model's TPOT
    can dip), and the result never exceeds ``λ_sat``. Infeasible (rate 0) where the SLO
    fails already at ``10⁻⁶ · λ_sat`` or the model does not fit.
    """
    inp = _f(input_tokens)
    out = _f(output_tokens)
    limit = batch_limit(kv_capacity_tokens, inp, out, max_batch)
    saturated_rps = (
        offline_tokens_per_s(cost, kv_capacity_tokens, inp, out, max_batch, prefill_chunk_tokens)
        / out
    )
    ttft_bound = _f(ttft_s)
    tpot_bound = _f(tpot_s)

    def meets(rate: FloatArray) -> BoolArray:
        lat = latency_under_load(
            cost,
            rate,
            inp,
            out,
            limit,
            percentile,
            prefill_chunk_tokens=prefill_chunk_tokens,
            input_variance=input_variance,
            input_third_moment=input_third_moment,
            input_fourth_moment=input_fourth_moment,
            input_nodes=input_nodes,
            input_weights=input_weights,
            output_nodes=output_nodes,
            output_weights=output_weights,
        )
        ok = (~lat.saturated) & (lat.ttft_tail_s <= ttft_bound) & (lat.tpot_tail_s <= tpot_bound)
        return np.asarray(ok, dtype=np.bool_)

    hi_rate = np.maximum(saturated_rps, 1e-300)
    feasible = meets(hi_rate * 1e-6) & (limit >= 1.0)
    rate = _largest_meeting(meets, hi_rate)
    rate, saturated_rps, feasible = np.broadcast_arrays(
        np.where(feasible, rate, 0.0), np.where(limit >= 1.0, saturated_rps, 0.0), feasible
    )
    return SloCapacity(
        rate_rps=_f(rate.copy()),
        saturated_rps=_f(saturated_rps.copy()),
        feasible=np.array(feasible, dtype=np.bool_),
    )


def _largest_meeting(meets: Callable[[FloatArray], BoolArray], top: FloatArray) -> FloatArray:
    """The largest rate in ``(0, top]`` below the first failing share of a scan at which
    ``meets`` holds: a scan of shares of ``top`` (:data:`_SCAN_SHARES`), then bisection
    between the last passing and the first failing share, vectorised over runs. [1/s]

    At the shipped compute-memory overlap 0 the model's latency rises with the rate; at a
    user's overlap above 0 it need not near ``λ_sat`` (a prompt's interference falls as the
    averaged batch grows; ``tests/unit/test_serving_near_saturation.py``), so the search
    stops at the first failing share, as the fast path's SLO load does at its first failing
    load node: no rate above a failing one counts. The predicate is a step (saturation, bounds),
    not a continuous function whose sign changes, so scipy's root finders do not apply; a
    fixed number of halvings (:data:`_RATE_ITERATIONS`) keeps every run's work the same.
    Cost (``acs.serving_capacity`` of ``examples/serve_llama70b_h100.yaml``, CPU time): 1
    run 158 ms, 1,000 runs 573 ms, 61 latency evaluations each; a scalar bracketing solver
    run by run (``brentq``, ~12 one-run evaluations of ~2.6 ms) would take ~31 s for the
    1,000 runs even where the bounds' margin is continuous.
    """
    lo = top * 1e-6
    hi = top.copy()
    top_ok = np.ones(np.shape(top), dtype=np.bool_)
    for share in _SCAN_SHARES:
        ok = top_ok & meets(top * share)
        failed_here = top_ok & ~ok
        hi = np.where(failed_here, top * share, hi)
        top_ok = ok
        lo = np.where(ok, top * share, lo)
    for _ in range(_RATE_ITERATIONS):
        mid = 0.5 * (lo + hi)
        ok = meets(mid)
        lo = np.where(ok, mid, lo)
        hi = np.where(ok, hi, mid)
    return _f(np.where(top_ok, top, lo))
