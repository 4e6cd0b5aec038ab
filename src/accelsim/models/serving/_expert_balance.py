"""Expert load imbalance of an expert-parallel layer: the busiest rank sets the step.

Part of :mod:`accelsim.models.serving` (import the names from there). Under wide expert
parallelism each MoE layer waits for its slowest rank, and a rank's expert work is the
number of (token, expert) pairs routed to the experts it hosts. Tokens route top-``k`` over
``E`` experts, ``E/R`` per rank on ``R`` ranks, so the per-rank load is random even when
every expert is equally popular (a multinomial count), and real routing is skewed: a few
hot experts (TensorRT-LLM's "Scaling Expert Parallelism" part 1, DeepSeek-R1 on 32 GB200:
the hottest rank received 2.56 times the mean without a load balancer, 1.11 times with
EPLB's redundant experts). :func:`expert_load_imbalance` gives the expected ratio of the
busiest rank's load to the mean, in closed form.

Units: counts and ratios, no time.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri

from accelsim._typing import ArrayLike, FloatArray


def _f(x: ArrayLike) -> FloatArray:
    return np.asarray(x, dtype=np.float64)


def expected_max_normal(ranks: ArrayLike) -> FloatArray:
    """Expected largest of ``R`` independent standard normals, Blom's approximation
    ``Φ⁻¹((R − 0.375)/(R + 0.25))``; 0 for one rank. [standard deviations]

    Examples
    --------
    >>> round(float(expected_max_normal(32)), 3)
    2.067
    """
    r = np.maximum(_f(ranks), 1.0)
    return _f(np.where(r > 1.0, ndtri((r - 0.375) / (r + 0.25)), 0.0))


def expert_load_imbalance(
    tokens: ArrayLike,
    ranks: ArrayLike,
    experts: ArrayLike,
    experts_per_token: ArrayLike,
    residual_spread: ArrayLike = 0.0,
) -> FloatArray:
    """Expected busiest-rank routed load over the mean load of an expert-parallel layer.

    Parameters
    ----------
    tokens : array_like
        Tokens the layer routes in one step, over all ranks (> 0). [count]
    ranks : array_like
        Expert-parallel ranks ``R`` (>= 1), each hosting ``E/R`` experts. [count]
    experts : array_like
        Routed experts ``E`` (expert slots, with redundant copies). [count]
    experts_per_token : array_like
        Routed experts per token, ``k <= E``. [count]
    residual_spread : array_like, optional
        Relative standard deviation of the per-rank load that routing skew leaves after the
        deployment's load balancing (0: every expert equally popular). [fraction]

    Returns
    -------
    FloatArray
        ``1 + z_R · sqrt((1 − 1/R)(E − k)/((E − 1)·m) + ρ²)``, capped at the load of one
        rank receiving every token, ``R·min(k, E/R)/k``; ``m = tokens·k/R`` is the mean
        load per rank, ``z_R`` :func:`expected_max_normal` and ``ρ`` the residual spread.
        1 on one rank. [ratio]

    Notes
    -----
    A token picks ``k`` distinct experts uniformly, so the pairs it sends to one rank are
    hypergeometric with variance ``k·p(1 − p)(E − k)/(E − 1)``, ``p = 1/R``; summed over
    tokens the per-rank load has relative variance ``(1 − p)(E − k)/((E − 1)·m)``, falling
    as ``1/m`` (law of large numbers: small batches, as under a tight TPOT bound, are the
    most imbalanced). Skew adds a relative variance ``ρ²`` that does not fall with the batch
    (the same hot experts for hundreds of steps). The busiest of ``R`` near-normal loads
    sits ``z_R`` standard deviations above the mean. Oracles: a Monte Carlo of uniform
    top-``k`` routing (``tests/validation/test_expert_balance_theory.py``, within 6 % from
    two tokens per rank); with ``ρ`` from TensorRT-LLM's EPLB measurement it gives their
    measured ratio (1.105 against 1.109 on EP32, 1.111 against 1.115 on EP36). A normal
    tail understates heavily skewed loads (without EPLB they measured 2.56, this form with
    their spread 1.99).

    Examples
    --------
    >>> round(float(expert_load_imbalance(4096, 32, 288, 8, 0.042)), 3)
    1.107
    """
    r = np.maximum(_f(ranks), 1.0)
    e, k = _f(experts), _f(experts_per_token)
    mean_load = np.maximum(_f(tokens), 1e-300) * k / r
    sampling = (1.0 - 1.0 / r) * (e - k) / (np.maximum(e - 1.0, 1.0) * mean_load)
    spread = np.sqrt(sampling + _f(residual_spread) ** 2)
    ceiling = r * np.minimum(k, e / r) / k
    ratio = np.minimum(1.0 + expected_max_normal(r) * spread, ceiling)
    return _f(np.where(r > 1.0, np.maximum(ratio, 1.0), 1.0))


__all__ = ["expected_max_normal", "expert_load_imbalance"]
