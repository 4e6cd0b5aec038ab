"""Data-parallel attention waits for its slowest rank: the prompts one iteration prefills.

Part of :mod:`accelsim.models.serving` (import the names from there). Under wide expert
parallelism with data-parallel attention (:func:`~accelsim.models.serving.
expert_parallel_cost`) each of ``N`` ranks runs its own sequences, and the expert
all-to-all after every MoE layer synchronises the ranks: an iteration lasts as long as
its slowest rank's attention and dense (non-routed) work. The routed experts' load is
charged at the busiest rank already (:func:`~accelsim.models.serving.
expert_load_imbalance`); this module charges the ranks' own prompt tokens the same way.

Derivation
----------
In steady state a rank decoding ``B`` sequences of mean output ``out`` finishes
``B/out`` of them per iteration and admits as many prompts. Take the admissions of one
rank in one iteration as Poisson with mean ``λ = B/out`` (independent completions of many
sequences: the law of rare events), independently over the ranks, and each prompt at the
mean length ``in``. A scheduler that prefills a prompt whole when it admits it (TensorRT-LLM
with ``enable_chunked_context: False``, as the MLPerf Offline configs run) then prefills
``in·K_i`` tokens on rank ``i``, ``K_i ~ Poisson(λ)``, and the iteration waits for

    E[max_i in·K_i] = in · Σ_{k>=0} (1 − F_λ(k)^N)

(``F_λ`` the Poisson CDF; ``E[M] = Σ_k P(M > k)`` for a count ``M``, and
``P(max <= k) = F_λ(k)^N``), against ``in·λ`` on the mean rank, which is what the
replica-wide iteration formula charges (:func:`~accelsim.models.serving.
iteration_seconds`: all tokens over all chips). :func:`expected_max_poisson` sums the
series exactly up to a truncation of ``1e-15`` in each tail. With a chunked budget, a
rank prefills at most its budget per iteration and carries the rest: the slowest rank's
prompt tokens are then capped at the budget, and never below the mean (which the budget
must carry in steady state).

What is approximated: (1) every prompt at the mean length. Prompt lengths that vary make
the slowest rank's work larger still (it is also the rank with the longest prompt), so the
term is a lower bound where few ranks admit per iteration; (2) the Poisson count: a rank
at its batch cap admits exactly as many prompts as it finished, and the completions of
``B`` sequences are a superposition of ``B`` renewal processes, near Poisson for large ``B``
(Palm-Khintchine; a simulation of continuous batching with log-normal outputs agrees within
3 %, ``tests/validation/test_rank_balance_theory.py``); (3) the decode side is taken as
balanced. In Offline each rank runs at its batch cap (or its KV limit), so its batch is
fixed and only its cached tokens vary: the sum of ``B`` contexts has a relative spread of
about ``CV/sqrt(B)`` (``CV`` that of one sequence's context, about 1 for long reasoning
outputs), so at ``B = 512`` the busiest of 8 ranks holds ``1.42·1/sqrt(512)`` ≈ 6 % more
cache than the mean, on the KV read and decode-attention terms only (under half the
iteration): about 3 % of the iteration, against the prefill term's tens of percent. It is
neglected. (4) The charge is spread over an iteration's tokens at the replica's saturated
iteration (as the routed imbalance is): exact there, proportional to the tokens elsewhere.
(5) A speculating replica is charged at ``λ = B/out`` and then, like every prompt token, at
:func:`~accelsim.models.serving.speculative_cost`'s ``r/E`` rate; the faster turnover of
``E`` tokens per step would give ``Δ(λE)/E <= Δ(λ)`` per emitted token (``Δ`` the slowest
rank's excess), so the charge is conservative by at least ``r/E``.

Units: tokens [count], FLOPs [FLOP].
"""

from __future__ import annotations

import numpy as np
from scipy.stats import poisson

from accelsim._typing import ArrayLike, FloatArray

_TAIL = 1e-15
"""Probability left out in each tail of the Poisson series (below: terms taken as 1,
above: as 0; the latter's error is at most ``N·_TAIL`` times the tail's length)."""
_BLOCK = 1 << 20
_MAX_MEAN = 1e8
"""Largest mean count the series takes (~1.7e5 terms per pair); a rank admits at most its
batch limit per iteration, so a serving replica stays many orders below it."""
"""Grid cells evaluated at once (bounds the memory of a wide array of large means)."""


def _f(x: ArrayLike) -> FloatArray:
    return np.asarray(x, dtype=np.float64)


def _series(mean: FloatArray, ranks: FloatArray) -> FloatArray:
    """``Σ_k (1 − F(k)^N)`` for 1-d arrays of distinct (mean, ranks) pairs (mean > 0)."""
    # Bernstein's bounds on the Poisson tails, P(|X − λ| >= t) <= exp(−t²/(2(λ + t/3))):
    # below ``lo`` every term is 1 within _TAIL, above ``hi`` every term is 0 within _TAIL.
    low_log = np.log(1.0 / _TAIL)
    lo = np.maximum(np.floor(mean - np.sqrt(2.0 * mean * low_log)) - 1.0, 0.0)
    high_log = np.log(ranks / _TAIL)
    t = high_log / 3.0 + np.sqrt(high_log**2 / 9.0 + 2.0 * mean * high_log)
    hi = np.ceil(mean + t) + 1.0
    width = int(np.max(hi - lo)) + 1
    out = np.empty_like(mean)
    step = max(1, _BLOCK // width)
    grid = np.arange(width, dtype=np.float64)
    for start in range(0, mean.size, step):
        part = slice(start, start + step)
        k = lo[part, None] + grid[None, :]
        below = poisson.cdf(k, mean[part, None]) ** ranks[part, None]
        out[part] = lo[part] + np.sum(1.0 - below, axis=1)
    return out


def expected_max_poisson(mean: ArrayLike, ranks: ArrayLike) -> FloatArray:
    """Expected largest of ``N`` independent Poisson counts of one mean. [count]

    Parameters
    ----------
    mean : array_like
        Mean of each count, ``λ >= 0``. [count]
    ranks : array_like
        Independent counts ``N >= 1``. [count]

    Returns
    -------
    FloatArray
        ``Σ_{k>=0} (1 − F_λ(k)^N)``, ``F_λ`` the Poisson CDF; ``λ`` on one rank, 0 at
        ``λ = 0``. [count]

    Notes
    -----
    Exact but for the two tails of the series (``1e-15`` each); the sum runs over
    ``O(sqrt(λ))`` terms per distinct (mean, ranks) pair. Oracles: one rank gives the mean;
    a Monte Carlo of the maximum (``tests/validation/test_rank_balance_theory.py``).

    Examples
    --------
    >>> round(float(expected_max_poisson(0.137, 8)), 4)
    0.7355
    >>> round(float(expected_max_poisson(2.0, 1)), 12)
    2.0
    """
    lam, n = np.broadcast_arrays(np.maximum(_f(mean), 0.0), np.maximum(_f(ranks), 1.0))
    if not np.all(np.isfinite(lam) & (lam <= _MAX_MEAN)):
        # The series runs over ~17·sqrt(λ) terms: bound the work before allocating it.
        raise ValueError(
            f"expected_max_poisson: every mean must be finite and at most {_MAX_MEAN:.0e} "
            f"(prompts a rank admits per iteration); got max {float(np.max(lam)):.3g}"
        )
    out = np.array(lam, dtype=np.float64)  # one rank, or no admissions: the mean itself
    todo = (lam > 0.0) & (n > 1.0)
    if np.any(todo):
        pairs, back = np.unique(np.stack([lam[todo], n[todo]]), axis=1, return_inverse=True)
        out[todo] = np.maximum(_series(pairs[0], pairs[1])[back.ravel()], lam[todo])
    return out


def slowest_rank_prompt_tokens(
    rank_batch: ArrayLike,
    input_tokens: ArrayLike,
    output_tokens: ArrayLike,
    ranks: ArrayLike,
    prompt_budget: ArrayLike = 0.0,
) -> FloatArray:
    """Prompt tokens the slowest of ``N`` data-parallel ranks prefills in one steady-state
    iteration, expected. [tokens]

    Parameters
    ----------
    rank_batch : array_like
        Sequences each rank decodes, ``B``. [count]
    input_tokens, output_tokens : array_like
        Mean prompt and output lengths (output > 0). [tokens]
    ranks : array_like
        Data-parallel attention ranks ``N``. [count]
    prompt_budget : array_like, optional
        Prompt tokens a rank may prefill per iteration under a chunked budget; 0: a
        prompt is prefilled whole in the iteration that admits it. [tokens]

    Returns
    -------
    FloatArray
        ``in · E[max of N Poisson(B/out)]`` (:func:`expected_max_poisson`), under a budget
        ``max(in·B/out, min(that, budget))``: never below the mean rank's ``in·B/out``,
        equal to it on one rank. [tokens]

    Examples
    --------
    >>> round(float(slowest_rank_prompt_tokens(512, 803.8, 3736.0, 8)))
    591
    >>> round(float(slowest_rank_prompt_tokens(512, 803.8, 3736.0, 1)), 3)  # the mean
    110.157
    """
    inp = _f(input_tokens)
    lam = _f(rank_batch) / np.maximum(_f(output_tokens), 1e-300)
    mean = inp * lam
    slowest = inp * expected_max_poisson(lam, ranks)
    budget = _f(prompt_budget)
    capped = np.maximum(mean, np.minimum(slowest, budget))
    return _f(np.where(budget > 0.0, capped, slowest))


def rank_straggle_flops_per_token(
    step_tokens: ArrayLike,
    ranks: ArrayLike,
    input_tokens: ArrayLike,
    output_tokens: ArrayLike,
    rank_flops_per_prompt_token: ArrayLike,
    chunk_tokens: ArrayLike = 0.0,
) -> FloatArray:
    """Replica FLOPs per processed token that charge an iteration its slowest rank's
    prompt work instead of the mean rank's. [FLOP]

    Parameters
    ----------
    step_tokens : array_like
        Tokens of the replica's saturated iteration over all ranks, ``N·B·(1 + in/out)``
        (0: nothing charged). [tokens]
    ranks : array_like
        Data-parallel attention ranks ``N``. [count]
    input_tokens, output_tokens : array_like
        Mean prompt and output lengths (output > 0). [tokens]
    rank_flops_per_prompt_token : array_like
        FLOPs a prompt token costs on its own rank: the non-routed parameters' ``2·P`` and
        its attention to the prompt before it. [FLOP]
    chunk_tokens : array_like, optional
        A chunked iteration's token budget over all ranks (``N`` times a rank's); a rank
        prefills at most its share less its decodes. 0: whole prompts. [tokens]

    Returns
    -------
    FloatArray
        ``N·(p_max − p̄)·f / step_tokens``: the replica formula spreads every FLOP over
        ``N`` chips, so ``N`` times the slowest rank's extra prompt FLOPs ``(p_max − p̄)·f``
        (:func:`slowest_rank_prompt_tokens`, ``p̄ = in·B/out``, ``B`` the step's decodes per
        rank) add that rank's time to the iteration's compute; spread over the step's
        tokens. 0 on one rank. [FLOP]

    Examples
    --------
    >>> round(float(rank_straggle_flops_per_token(4977, 8, 803.8, 3736.0, 3.5e10)) / 1e9, 2)
    27.07
    """
    n, tokens = np.maximum(_f(ranks), 1.0), _f(step_tokens)
    inp, out = _f(input_tokens), np.maximum(_f(output_tokens), 1e-300)
    batch = tokens * out / np.maximum(inp + out, 1e-300) / n  # decodes per rank
    chunk = _f(chunk_tokens)
    room = np.where(chunk > 0.0, np.maximum(chunk / n - batch, 1e-300), 0.0)
    slowest = slowest_rank_prompt_tokens(batch, inp, out, n, room)
    extra = n * (slowest - inp * batch / out) * _f(rank_flops_per_prompt_token)
    return _f(np.where(tokens > 0.0, extra / np.maximum(tokens, 1e-300), 0.0))


__all__ = [
    "expected_max_poisson",
    "rank_straggle_flops_per_token",
    "slowest_rank_prompt_tokens",
]
