"""The reliability priors against published figures: their derivation, leave-one-out, and
figures they were not fitted to.

Figures are copied here with their source, since tests must not read files outside the
repository (record ids of ../shared/reference/validation/reliability.csv in brackets):

- the seven per-GPU interruption rates ``failure_rate_per_chip_hour`` is fitted to (its
  ``note`` in catalog/data/priors.yaml lists them): Llama 3 [L3-03] 1.97e-5, RSC-1 [RSC-02]
  3.39e-5, RSC-2 [RSC-03] 1.22e-5, BLOOM 1.55e-5, OPT-175B 8.1e-5, Crusoe H200 [CR-01]
  4.45e-5, SKT B200 [SK-02] 1.5e-5 /GPU-h;
- Meta's research clusters, not used by the fit (Kokolis et al. 2024, arXiv:2410.21680):
  observed mean time to failure of 1,024-GPU jobs 7.9 h [RSC-05], projected for
  16,384-GPU jobs 1.8 h [RSC-06];
- DeepSeek-V3, no rollback in ~56 days of training [DS-01] (arXiv:2412.19437), a source of
  the production instability prior: a consistency check, not a validation;
- the AWS spot traces (UC Berkeley Sky, github.com/skypilot-org/spot-traces) behind the
  spot preemption prior [SP-01, SP-03, SP-04].

Leave-one-out (as tests/validation/test_calibration.py does for runs): each rate is held
out, the log-normal is refitted to the other six with the shipped log-spread, and the
held-out rate must lie in its 90 % interval; the one rate that does not is a known miss,
with its reason. Nothing here tunes a prior: a change to the data file that moves a figure
across a boundary fails here and must say why.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from accelsim import catalog
from accelsim.dists import PERT, LogNormal
from accelsim.models.reliability import interruption_rate_per_hour

Z95 = float(stats.norm.ppf(0.95))
HOURS_PER_DAY = 24.0

# (label, per-GPU interruption rate [1/(GPU h)]), as the prior's note derives them.
FITTED_RATES = [
    ("Llama 3 405B, L3-03: 419 / (16,384 x 54 x 24)", 1.97e-5),
    ("Meta RSC-1, RSC-02: 6.50 / 1000 node-days / 8 / 24", 3.39e-5),
    ("Meta RSC-2, RSC-03: 2.34 / 1000 node-days / 8 / 24", 1.22e-5),
    ("BLOOM, one GPU a week on 384 A100", 1.55e-5),
    ("OPT-175B, ~2 machines a day on 1,024 A100 (2021 cloud)", 8.1e-5),
    ("Crusoe H200, CR-01: ~205 in ~120 days on 1,600 GPUs", 4.45e-5),
    ("SKT B200, SK-02: 0.132 per GPU-year", 1.5e-5),
]

# Held out, the rate outside the 90 % interval of the other six, and why.
KNOWN_LOO_MISSES = {
    "OPT-175B, ~2 machines a day on 1,024 A100 (2021 cloud)": (
        "the 2021 cloud cluster of the OPT logbook (nodes replaced through the cloud "
        "interface, bad machines returned) is 1.8x the next highest rate; the other six "
        "(1.2-4.5e-5) put it at P97.3 with the shipped log-spread (P99.6 with their own)"
    ),
}


def _log_params(d: LogNormal) -> tuple[float, float]:
    """Log-mean and log-sd of a LogNormal given by its 5-95 % interval."""
    mu = 0.5 * (math.log(d.low) + math.log(d.high))
    return mu, (math.log(d.high) - math.log(d.low)) / (2.0 * Z95)


def _failure_prior() -> LogNormal:
    d = catalog.priors().failure_rate_per_chip_hour.dist()
    assert isinstance(d, LogNormal)
    return d


def test_the_failure_prior_is_the_log_normal_fit_of_its_sources() -> None:
    """The shipped 5-95 % interval is the fit the note states: log-mean and log-sd
    (``ddof = 1``) of the seven rates, 5-95 % at ``exp(mu -+ 1.645 sd)`` = 8.15e-6 -
    7.92e-5, rounded to 8e-6 - 8e-5. Tolerance 3 %: the rounding."""
    logs = np.log([rate for _, rate in FITTED_RATES])
    mu, sd = float(logs.mean()), float(logs.std(ddof=1))
    d = _failure_prior()
    assert d.low == pytest.approx(math.exp(mu - Z95 * sd), rel=0.03)
    assert d.high == pytest.approx(math.exp(mu + Z95 * sd), rel=0.03)


@pytest.mark.parametrize(("label", "rate"), FITTED_RATES, ids=[x for x, _ in FITTED_RATES])
def test_each_rate_left_out_lies_in_the_refit_interval(label: str, rate: float) -> None:
    """Leave-one-out: the log-normal with the shipped log-spread, centred on the other six
    rates' log-mean, must hold the held-out rate in its 5-95 % interval, except the known
    misses (each with a reason); a miss that appears or goes away fails here."""
    _, sigma = _log_params(_failure_prior())
    others = np.log([r for name, r in FITTED_RATES if name != label])
    z = (math.log(rate) - float(others.mean())) / sigma
    inside = abs(z) <= Z95
    assert inside == (label not in KNOWN_LOO_MISSES), (label, stats.norm.cdf(z))


def test_leave_one_out_coverage_is_what_a_90_percent_interval_promises() -> None:
    """6 of 7 held-out rates covered (86 %): a 90 % interval misses 0-2 of 7 with
    probability 0.97 (binomial), so anything below 5 of 7 would mean the spread is too
    narrow for its own sources."""
    covered = len(FITTED_RATES) - len(KNOWN_LOO_MISSES)
    assert covered >= 5


@pytest.mark.parametrize(
    ("label", "gpus", "mttf_hours", "band"),
    [
        ("RSC-05 observed, 1,024-GPU jobs", 1024, 7.9, (0.01, 0.99)),
        ("RSC-06 projected, 16,384-GPU jobs", 16_384, 1.8, (0.05, 0.95)),
    ],
)
def test_meta_cluster_job_mttf_not_ruled_out_by_the_prior(
    label: str, gpus: int, mttf_hours: float, band: tuple[float, float]
) -> None:
    """Out of sample (the fit uses RSC-02/03, not these): the per-GPU rate a job's mean time
    to failure implies, ``1 / (MTTF x GPUs)``, must lie inside the prior's P1-P99 for the
    observed figure and its P5-P95 for the projection (a projection of the same cluster
    is the smoother figure). Observed: 1.24e-4 /GPU-h at P98.8, near the top, since these
    job failures count every cause on a research cluster; projected: 3.4e-5 at P66. Exact
    quantiles, no sampling."""
    d = _failure_prior()
    rate = 1.0 / (mttf_hours * gpus)
    mu, sigma = _log_params(d)
    level = float(stats.norm.cdf((math.log(rate) - mu) / sigma))
    assert band[0] <= level <= band[1], (label, level)
    # the model's rate arithmetic turns it back into the published MTTF
    assert 1.0 / float(interruption_rate_per_hour(gpus, rate)) == pytest.approx(mttf_hours)


def _prob_no_event(prior: LogNormal, days: float) -> float:
    """``P(N = 0) = E[exp(-r D)]`` for ``r`` drawn from the prior, by quadrature over the
    prior's quantile function (an integral over ``u`` in (0, 1))."""
    value, _ = integrate.quad(
        lambda u: math.exp(-float(prior.ppf(u)) * days), 0.0, 1.0, limit=200, epsabs=1e-10
    )
    return float(value)


def test_deepseek_v3_without_rollbacks_is_plausible_under_the_production_prior() -> None:
    """DeepSeek-V3 [DS-01]: no rollback in ~56 days. Consistency check (DS-01 is one of the
    production prior's sources): the prior gives it a probability of at least 10 % (it is
    0.225), and the prototype prior, for first-of-recipe runs, a smaller one. Oracle for the
    integral: the mean of ``exp(-r D)`` over 200,000 prior draws, within 5 SE."""
    fits = catalog.priors().instability_events_per_day
    production, prototype = fits["production"].dist(), fits["prototype"].dist()
    assert isinstance(production, LogNormal)
    assert isinstance(prototype, LogNormal)
    p_prod = _prob_no_event(production, 56.0)
    assert p_prod >= 0.10
    assert _prob_no_event(prototype, 56.0) < p_prod
    draws = np.exp(-56.0 * production.sample(np.random.default_rng(3), 200_000))
    assert abs(draws.mean() - p_prod) <= 5.0 * draws.std(ddof=1) / math.sqrt(draws.size)


# Zone rates of the spot traces [per instance-hour] and where the per-instance prior puts
# them; the ends of the range are known misses of its P5-P95, with the reason.
SPOT_ZONE_RATES = {
    "SP-03 lowest zone": 0.06,
    "SP-01 us-west-2b": 0.31,
    "SP-04 lowest per-node": 0.38,
    "SP-01 us-west-2c": 0.44,
    "SP-03 highest zone": 0.46,
    "SP-04 highest per-node": 0.54,
    "SP-01 us-east-1f": 0.57,
    "SP-01 us-east-1c": 0.74,
}
SPOT_KNOWN_MISSES = {
    # The PERT describes the typical zone (mode 0.45, where the zone rates cluster, as the
    # note chooses), not the spread between zones: the calmest and the busiest zone fall in
    # its tails (P0.001 and P99.3).
    "SP-03 lowest zone",
    "SP-01 us-east-1c",
}


def test_the_spot_preemption_prior_is_the_per_instance_traces_over_eight_gpus() -> None:
    """The spot prior's derivation in its note: the AWS single-V100 traces as PERT(0.05,
    0.45, 0.80) per instance-hour (mean 0.44), divided by 8 GPUs per current training
    instance (the labelled assumption). Every published zone rate lies in the support; those
    not listed as known misses lie inside P5-P95; a known miss that moves inside fails."""
    d = catalog.priors().spot_preemptions_per_chip_hour.dist()
    assert isinstance(d, PERT)
    per_instance = PERT(low=8 * d.low, mode=8 * d.mode, high=8 * d.high, lamb=d.lamb)
    assert (per_instance.low, per_instance.mode, per_instance.high) == pytest.approx(
        (0.05, 0.45, 0.80)
    )
    assert per_instance.expected_value() == pytest.approx(0.44, abs=0.005)
    p5, p95 = (float(x) for x in per_instance.ppf([0.05, 0.95]))
    for label, rate in SPOT_ZONE_RATES.items():
        assert per_instance.low <= rate <= per_instance.high, label
        assert (p5 <= rate <= p95) == (label not in SPOT_KNOWN_MISSES), (label, rate, p5, p95)
