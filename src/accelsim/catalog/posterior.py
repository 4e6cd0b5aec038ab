"""The Bayesian update behind :func:`accelsim.catalog.calibrate`, in closed form.

Each calibrated figure (a serving efficiency, a reference MFU) is log-normal: its log is
normal under the prior. A measurement, inverted through the library's own model
(:mod:`accelsim.study._calibrate`), gives an *implied* log-figure ``y`` with known noise
variance ``v`` (the record's stated run-to-run noise, squared). The figure of a
*configuration* (a model, precision and layout on a chip) is the chip's term plus its own:

    log x_k = m_c + a_c + e_k,   Var a_c = (1 - share) s_c**2,   Var e_k = share s_c**2,

the chip terms of one group (a software stack, a chip kind) correlating by ``rho``
(``data/calibration.yaml``), so the prior of any configuration is the chip's prior
``N(m_c, s_c**2)``. The posterior of every chip term and every measured configuration is
the normal conditional on the measurements (a hierarchical normal with known variances, so
conjugate: no sampling). A measured configuration is then known to its noise; another one
on its chip keeps at least ``share`` of its prior variance; another chip learns through
``rho``. Each configuration's precision-weighted mean of its measurements is sufficient and
is summed with :func:`math.fsum` (exactly rounded), so the result does not depend on the
order of the measurements; adding a measurement never widens a posterior (a conditional
variance only shrinks).

Examples
--------
>>> new, seen = hierarchical_posterior(
...     {"a": (0.0, 1.0), "b": (0.0, 1.0)}, 0.5, 0.5, [("a", "a/k", 1.0, 0.01)])
>>> [round(x, 3) for x in seen["a/k"]], [round(x, 3) for x in new["b"]]
([0.99, 0.1], [0.248, 0.969])
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import scipy.stats
from pydantic import BaseModel, ConfigDict

from accelsim.catalog._priors import Prior, load_validated, shipped
from accelsim.dists import Dist, LogNormal

_Z95 = 1.6448536269514722  # Phi^-1(0.95): a log-normal's 90 % interval is mu +- z sigma
OUTLIER_Z = 3.29
"""A measurement whose implied log-figure lies more than this many standard deviations (of
prior and noise together) from the prior is flagged: 0.1 % two-sided under the prior. A
convention, not a measured figure."""


class _Frozen(BaseModel):
    model_config = ConfigDict(
        frozen=True, extra="forbid", allow_inf_nan=False, use_attribute_docstrings=True
    )


class CalibrationPriors(_Frozen):
    """The priors of the calibration itself, as shipped in ``data/calibration.yaml``."""

    efficiency_chip_correlation: Prior
    """Correlation of two chips' log serving efficiency within a software stack. [-]"""
    mfu_chip_correlation: Prior
    """Correlation of two chips' log MFU at the reference scale within a chip kind. [-]"""
    efficiency_config_share: Prior
    """Share of the serving-efficiency prior's log-variance specific to a configuration. [-]"""
    mfu_config_share: Prior
    """Share of the reference-MFU prior's log-variance specific to a model size. [-]"""
    serving_noise: Prior
    """Run-to-run noise of a serving measurement stating none: log-standard deviation. [-]"""
    training_noise: Prior
    """Run-to-run noise of a training measurement stating none: log-standard deviation. [-]"""


def load_calibration_priors(path: str | Path) -> CalibrationPriors:
    """Read and validate a file laid out like the shipped ``calibration.yaml``."""
    return load_validated(path, CalibrationPriors, "calibration priors")


@functools.cache
def calibration_priors() -> CalibrationPriors:
    """The shipped calibration priors, read once per process (frozen)."""
    return shipped("calibration.yaml", load_calibration_priors)


class CalibratedPrior(_Frozen):
    """What calibration did to one prior: its name, the evidence and prior vs posterior."""

    name: str
    """Dotted input name, e.g. ``"priors.serving.efficiency_by_chip.h100-sxm"``."""
    measurements: int
    """Measurements on this chip itself (others inform it through the pooling only)."""
    pooled: int
    """Measurements of its group (stack or chip kind) behind the posterior."""
    prior: tuple[float, float, float]
    """Prior 5 %, 50 % and 95 % quantiles. [unit of the prior]"""
    posterior: tuple[float, float, float]
    """Posterior 5 %, 50 % and 95 % quantiles. [unit of the prior]"""
    flags: tuple[str, ...] = ()
    """Measurements on this chip far outside the prior (still used), one sentence each."""

    def describe(self) -> str:
        """One line: name, evidence, prior and posterior 90 % intervals.

        >>> CalibratedPrior(name="x", measurements=2, pooled=3, prior=(0.2, 0.4, 0.8),
        ...                 posterior=(0.45, 0.5, 0.55)).describe()
        'x: 2 measurements (3 pooled); prior 0.4 [0.2-0.8] -> posterior 0.5 [0.45-0.55]'
        """
        p, q = self.prior, self.posterior
        return (
            f"{self.name}: {self.measurements} measurement{'s' * (self.measurements != 1)} "
            f"({self.pooled} pooled); prior {p[1]:.3g} [{p[0]:.3g}-{p[2]:.3g}] -> posterior "
            f"{q[1]:.3g} [{q[0]:.3g}-{q[2]:.3g}]"
        )


def log_normal_params(dist: Dist) -> tuple[float, float]:
    """(mu, sigma) of the log-normal with the same median and 5-95 % log-width as ``dist``.

    Exact for a :class:`~accelsim.dists.LogNormal`; for another shape (a PERT MFU ceiling)
    the log-normal approximation the conjugate update needs. A fixed value has sigma 0.
    """
    low, mid, high = (float(dist.ppf(q)) for q in (0.05, 0.5, 0.95))
    if not 0.0 < low <= mid <= high:
        raise ValueError(f"a calibrated prior must be positive, got quantiles {low}, {high}")
    return math.log(mid), (math.log(high) - math.log(low)) / (2.0 * _Z95)


def outlier(y: float, prior: tuple[float, float], noise_var: float) -> float:
    """Standard score of an implied log-figure ``y`` under the prior plus noise."""
    mu, sigma = prior
    return (y - mu) / math.sqrt(sigma**2 + noise_var)


def poisson_rate_posterior(
    prior: Dist, events: int, exposure: float
) -> tuple[tuple[float, float, float], float]:
    """A rate's posterior 5/50/95 % quantiles after ``events`` in ``exposure`` (gamma-Poisson),
    and the prior-predictive tail probability of a count at least that far out.

    The prior is matched by a gamma of the same mean and variance (exact conjugacy for a
    Poisson count); the posterior is gamma(shape + events, rate + exposure). Its 5-95 %
    width on the log scale depends on the shape alone and shrinks as the shape grows, so a
    further measurement never widens it. The tail probability is the smaller of P(K >= k)
    and P(K <= k) under the negative binomial prior predictive.

    >>> from accelsim.dists import LogNormal
    >>> (low, mid, high), tail = poisson_rate_posterior(LogNormal(low=8e-6, high=8e-5), 0, 0.0)
    >>> round(low * 1e6, 1), round(high * 1e5, 1), tail
    (4.1, 8.3, 1.0)
    """
    mean, var = prior.expected_value(), prior.variance()
    if not (mean > 0.0 and var > 0.0):
        raise ValueError("a calibrated rate needs a prior with a positive mean and variance")
    shape, rate = mean**2 / var, mean / var
    post = scipy.stats.gamma(shape + events, scale=1.0 / (rate + exposure))
    low, mid, high = (float(post.ppf(q)) for q in (0.05, 0.5, 0.95))
    if exposure <= 0.0:
        return (low, mid, high), 1.0
    predictive = scipy.stats.nbinom(shape, rate / (rate + exposure))
    tail = min(float(predictive.sf(events - 1)), float(predictive.cdf(events)))
    return (low, mid, high), min(1.0, 2.0 * tail)


def hierarchical_posterior(
    priors: Mapping[str, tuple[float, float]],
    rho: float,
    share: float,
    evidence: Sequence[tuple[str, str, float, float]],
) -> tuple[dict[str, tuple[float, float]], dict[str, tuple[float, float]]]:
    """Posteriors of each chip's and each measured configuration's log-figure.

    A configuration (a model, precision and layout on a chip) deviates from its chip by its
    own term: ``log x = m_c + a_c + e_k``, where the chip terms ``a_c`` carry ``1 - share``
    of the prior variance ``s_c**2`` and correlate by ``rho`` between chips, and the
    configuration term ``e_k`` carries ``share`` of it, independently. The prior marginal of
    any configuration is the prior, ``N(m_c, s_c**2)``.

    Parameters
    ----------
    priors : mapping
        Chip -> prior (mu, sigma) of the log-figure of a configuration on it.
    rho : float
        Correlation of two chips' chip terms, in [0, 1).
    share : float
        Share of the prior variance specific to a configuration, in [0, 1).
    evidence : sequence of (chip, configuration, y, v)
        Implied log-figure ``y`` of a measurement of ``configuration`` on ``chip`` with
        noise variance ``v`` > 0.

    Returns
    -------
    (dict, dict)
        Chip -> (mu, sigma) of a configuration not measured on it (chip term posterior plus
        the configuration term), for every chip of ``priors``; configuration -> (mu, sigma)
        of each measured configuration.

    Examples
    --------
    >>> new, seen = hierarchical_posterior({"a": (0.0, 1.0)}, 0.0, 0.5, [("a", "k", 1.0, 0.01)])
    >>> [round(x, 3) for x in seen["k"]], [round(x, 3) for x in new["a"]]
    ([0.99, 0.1], [0.495, 0.867])
    """
    if not (0.0 <= rho < 1.0 and 0.0 <= share < 1.0):
        raise ValueError(f"rho and share must be in [0, 1), got {rho}, {share}")
    chips = sorted(priors)
    configs = sorted({(c, k) for c, k, _, _ in evidence})
    sd = np.array([priors[c][1] for c in chips]) * math.sqrt(1.0 - share)
    mu = np.array([priors[c][0] for c in chips])
    # Targets: every chip term, then every measured configuration (chip term + own term).
    index = [chips.index(c) for c, _ in configs]
    load = np.vstack([np.eye(len(chips)), np.eye(len(chips))[index]]) if configs else None
    chip_cov = rho * np.outer(sd, sd)
    np.fill_diagonal(chip_cov, sd**2)
    if load is None:
        return {c: priors[c] for c in chips}, {}
    own = np.zeros(len(chips) + len(configs))
    own[len(chips) :] = [share * priors[c][1] ** 2 for c, _ in configs]
    cov = load @ chip_cov @ load.T + np.diag(own)
    mean = load @ mu
    precision = [math.fsum(1.0 / v for c, k, _, v in evidence if (c, k) == ck) for ck in configs]
    means = [
        math.fsum(y / v for c, k, y, v in evidence if (c, k) == ck) / p
        for ck, p in zip(configs, precision, strict=True)
    ]
    obs = list(range(len(chips), len(chips) + len(configs)))
    gain = np.linalg.solve(
        cov[np.ix_(obs, obs)] + np.diag(1.0 / np.array(precision)), cov[obs, :]
    ).T
    post_mu = mean + gain @ (np.array(means) - mean[obs])
    post_var = np.maximum(np.diag(cov) - np.einsum("ij,ji->i", gain, cov[obs, :]), 0.0)
    new = {
        c: (float(post_mu[i]), math.sqrt(float(post_var[i]) + share * priors[c][1] ** 2))
        for i, c in enumerate(chips)
    }
    seen = {
        k: (float(post_mu[len(chips) + j]), math.sqrt(float(post_var[len(chips) + j])))
        for j, (_, k) in enumerate(configs)
    }
    return new, seen


def quantiles(mu: float, sigma: float) -> tuple[float, float, float]:
    """5 %, 50 % and 95 % quantiles of the log-normal (mu, sigma)."""
    return (math.exp(mu - _Z95 * sigma), math.exp(mu), math.exp(mu + _Z95 * sigma))


def posterior_prior(prior: Prior, mu: float, sigma: float, record: CalibratedPrior) -> Prior:
    """``prior`` with its value replaced by the log-normal posterior (mu, sigma); the
    sources stay, and the note says what the calibration did. A posterior without spread
    (sigma 0: a noiseless prior) stays a fixed value."""
    low, mid, high = quantiles(mu, sigma)
    value = LogNormal(low=low, high=high) if high > low else mid
    note = f"Calibrated to the team's measurements: {record.describe()}. Before: {prior.note}"
    return prior.model_copy(update={"value": value, "note": note})


__all__ = [
    "OUTLIER_Z",
    "CalibratedPrior",
    "CalibrationPriors",
    "calibration_priors",
    "hierarchical_posterior",
    "log_normal_params",
    "outlier",
    "poisson_rate_posterior",
    "posterior_prior",
    "quantiles",
]
