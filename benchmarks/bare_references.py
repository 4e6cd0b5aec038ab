"""Bare numpy samplers of a training run's completion time: the yardsticks of the benchmarks.

Written apart from :mod:`accelsim` (they import nothing from it), each is the least numpy
that samples the time to finish ``work_hours`` of work under Poisson interruptions of rate
``lambda``, with a checkpoint write of ``C`` hours after every ``tau`` hours of work (and at
the end) and a restart of ``R`` hours, itself exposed to interruptions, after each one:

- :func:`exact_completion_hours` samples that law exactly: negative-binomial failure counts
  per phase (full segments, the partial last segment, restarts) and, per failure, one
  uniform turned into the exponential time lost, truncated to its phase, by inversion. The
  losses of a run and phase are summed as the log of their product, one logarithm per
  phase (the straightforward vectorised form, ``np.repeat`` of the phase constants and one
  ``np.multiply.reduceat``, over chunks of phases of ~130,000 uniforms so that its passes
  stay in the CPU cache).
- :func:`approximate_completion_hours` draws the failure counts of the full segments only
  and stands in for the sum of their losses by one gamma variable of the same mean: about
  two numbers per run, so it is cheaper than any exact sampler can be, but it samples a
  different law (no partial segment, no failed restarts, a gamma in place of the exact sum).
"""

from __future__ import annotations

import numpy as np

# Products of k factors, each at least exp(-lambda L), stay well inside float64 while
# k lambda L < _PRODUCT_EXPONENT_MAX; the rare phase beyond is summed one logarithm per loss.
_PRODUCT_EXPONENT_MAX = 600.0
# Losses summed per chunk: 1 MiB of uniforms, which stays in the CPU cache between passes
# (the fastest of 2**14 ... 2**22 on the benchmark machine, by ~1.3x over 2**15 or 2**22).
_UNIFORMS_PER_CHUNK = 1 << 17


def exact_completion_hours(
    rng: np.random.Generator,
    work_hours: np.ndarray,
    interval_hours: np.ndarray,
    write_hours: np.ndarray,
    restart_hours: np.ndarray,
    rate_per_hour: np.ndarray,
) -> np.ndarray:
    """Wall-clock hours of one run per element of the 1-d inputs, exactly (interval < inf)."""
    full = np.floor(work_hours / interval_hours)
    partial = work_hours - full * interval_hours
    full_length = interval_hours + write_hours
    partial_length = np.where(partial > 0, partial + write_hours, 0.0)
    full_fails = _negative_binomial(rng, full, np.exp(-rate_per_hour * full_length))
    partial_fails = _negative_binomial(
        rng, (partial > 0).astype(float), np.exp(-rate_per_hour * partial_length)
    )
    work_fails = full_fails + partial_fails
    restart_fails = _negative_binomial(
        rng, work_fails.astype(float), np.exp(-rate_per_hour * restart_hours)
    )
    counts = np.stack([full_fails, partial_fails, restart_fails], axis=1).ravel()
    lengths = np.stack([full_length, partial_length, restart_hours], axis=1).ravel()
    rates = np.repeat(rate_per_hour, 3)
    lost = np.zeros(counts.size)
    some = np.flatnonzero(counts)
    ends = np.cumsum(counts[some])
    first = 0
    while first < some.size:  # groups in chunks of ~_UNIFORMS_PER_CHUNK losses
        drawn = ends[first] - counts[some[first]]
        stop = max(first + 1, int(np.searchsorted(ends, drawn + _UNIFORMS_PER_CHUNK, "right")))
        groups = some[first:stop]
        lost[groups] = _lost_hours(rng, counts[groups], lengths[groups], rates[groups])
        first = stop
    hours = full * full_length + partial_length + work_fails * restart_hours
    return np.asarray(hours + lost.reshape(-1, 3).sum(axis=1))


def _lost_hours(
    rng: np.random.Generator, counts: np.ndarray, length_hours: np.ndarray, rate: np.ndarray
) -> np.ndarray:
    """Per group, the sum of ``counts`` losses ``-log(1 - c u) / rate``, ``c = 1 - e^{-rate L}``."""
    exponent = rate * length_hours
    factors = 1.0 + np.repeat(np.expm1(-exponent), counts) * rng.random(counts.sum())
    starts = np.cumsum(counts) - counts
    with np.errstate(divide="ignore"):  # an underflowed product is recomputed below
        log_products = np.log(np.multiply.reduceat(factors, starts))
    for i in np.flatnonzero(counts * exponent >= _PRODUCT_EXPONENT_MAX):
        log_products[i] = np.log(factors[starts[i] : starts[i] + counts[i]]).sum()
    return np.asarray(-log_products / rate)


def approximate_completion_hours(
    rng: np.random.Generator,
    work_hours: float,
    interval_hours: float,
    write_hours: float,
    restart_hours: float,
    rate_per_hour: float,
    runs: int,
) -> np.ndarray:
    """NB failure counts of the full segments plus a gamma stand-in for their lost time."""
    segments = np.floor(work_hours / interval_hours)
    length = interval_hours + write_hours
    fails = rng.negative_binomial(segments, np.exp(-rate_per_hour * length), size=runs)
    # Mean loss per failure of an exponential truncated to the segment; gamma for the sum.
    loss_mean = 1 / rate_per_hour - length / np.expm1(rate_per_hour * length)
    lost = rng.gamma(np.maximum(fails, 1e-9), loss_mean)
    return np.asarray(segments * length + fails * restart_hours + lost)


def _negative_binomial(
    rng: np.random.Generator, successes: np.ndarray, success_probability: np.ndarray
) -> np.ndarray:
    """Failures before ``successes`` successes, 0 where there are none (numpy needs > 0)."""
    draws = np.zeros(successes.shape, dtype=np.int64)
    some = successes > 0
    draws[some] = rng.negative_binomial(successes[some], success_probability[some])
    return draws
