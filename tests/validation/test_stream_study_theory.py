"""Job streams through the whole study (``acs.simulate``) against queueing theory.

``tests/validation/test_des_queueing.py`` and ``test_des_priority_theory.py`` hold the DES
engine to Erlang C and Cobham on hand-built jobs. These tests hold the *adapter* to them:
a :class:`~accelsim.JobStream` scenario (interarrival and duration distributions in hours,
``horizon_days`` and ``warmup_days``, the scheduler by name, the catalog's pool) must turn
into the same queue, so a units slip (days for hours), a warm-up applied to the wrong
clock, a distribution drawn once per run instead of once per job, or a scheduler name
resolved to another policy moves these numbers.

Oracles: M/M/c mean wait ``C(c, a) / (c mu - lambda)`` (Erlang C), utilisation ``rho``,
``lambda T`` arrivals (Poisson), and for two equally likely priority classes on one
server Cobham's ``W_high = rho / (1 - rho_1)``, ``W_low = rho / ((1 - rho_1)(1 - rho))``,
whose arrival-weighted mean is FIFO's ``rho / (1 - rho)`` (the conservation law).

Tolerance: 4.5 standard errors of the mean over the study's independent runs (the runs
are replications; each run's statistics are over its own window), and each SE at most 10 %
of its oracle so the check keeps power. Measured at these seeds: SEs 0.6-7.4 % of the
oracles, every estimate within 0.9 SE of its oracle.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import accelsim as acs

K_SE = 4.5
RUNS = 12


def erlang_c(servers: int, offered_erlangs: float) -> float:
    c, a = servers, offered_erlangs
    below = sum(a**k / math.factorial(k) for k in range(c))
    top = a**c / math.factorial(c) * c / (c - a)
    return top / (below + top)


def _check(label: str, x: np.ndarray, oracle: float, max_relative_se: float = 0.10) -> None:
    mean = float(np.mean(x))
    se = float(np.std(x, ddof=1)) / math.sqrt(x.size)
    assert se <= max_relative_se * oracle, f"{label}: SE {se / oracle:.1%} too large"
    assert abs(mean - oracle) <= K_SE * se, f"{label}: {mean:.4g} vs {oracle:.4g} (SE {se:.2g})"


def _stream(
    servers: int, rho: float, days: float, scheduler: str = "fifo", **workload: object
) -> acs.Scenario:
    return acs.Scenario(
        name=f"mm{servers}",
        workload=acs.JobStream(
            interarrival_hours=acs.Exponential(mean=1.0 / (rho * servers)),
            chips=1,
            duration_hours=acs.Exponential(mean=1.0),
            **workload,  # type: ignore[arg-type]
        ),
        fleet=[acs.Pool(chip="h100-sxm", count=servers, provider="gcp", pricing="on_demand")],
        assumptions=acs.Assumptions(failure_rate_per_chip_hour=0.0, lead_time_days=0),
        horizon_days=days,
        warmup_days=5,
        scheduler=scheduler,  # type: ignore[arg-type]
    )


def test_a_poisson_stream_on_four_chips_is_erlang_c() -> None:
    """M/M/4 at rho = 0.7 for 60 days (55 measured): wait, JCT, utilisation, arrivals."""
    res = acs.simulate(_stream(4, 0.7, 60), runs=RUNS, seed=2024, progress=False)
    wait = erlang_c(4, 2.8) / (4.0 - 2.8)
    _check("mean wait", res.samples("mean_wait_hours"), wait)
    _check("mean JCT", res.samples("mean_jct_hours"), wait + 1.0)
    _check("utilisation", res.samples("utilization"), 0.7)
    _check("offered load", res.samples("offered_load"), 0.7)
    arrivals = res.samples("jobs_arrived")  # over the whole 60 days, warm-up included
    expected = 2.8 * 60 * 24
    se = math.sqrt(expected / RUNS)
    assert abs(float(arrivals.mean()) - expected) <= K_SE * se
    assert np.all(res.samples("jobs_waiting_at_horizon") <= 0.01 * arrivals)


@pytest.fixture(scope="module")
def priority_study() -> acs.Result:
    two_classes = acs.Choice(values=[0, 1], weights=[0.5, 0.5])
    scenario = _stream(1, 0.6, 120, scheduler="priority", priority=two_classes)
    return acs.simulate(scenario, runs=RUNS, seed=7, keep_jobs=True, progress=False)


def _class_waits(res: acs.Result, cls: int) -> np.ndarray:
    """Per run, the mean wait of class ``cls`` jobs submitted after the warm-up. [h]"""
    jobs = res.extras["jobs"]
    out = []
    for k in range(res.runs):
        mine = jobs[(jobs["run"] == k) & (jobs["priority"] == cls) & (jobs["submit_hours"] >= 120)]
        started = mine[~np.isnan(mine["first_start_hours"])]
        out.append(float(np.mean(started["first_start_hours"] - started["submit_hours"])))
    return np.array(out)


def test_a_two_class_priority_stream_is_cobham(priority_study: acs.Result) -> None:
    """One server, rho = 0.6 split evenly: W_high = 0.857 h, W_low = 2.143 h."""
    _check("high class", _class_waits(priority_study, 1), 0.6 / 0.7)
    _check("low class", _class_waits(priority_study, 0), 0.6 / (0.7 * 0.4))


def test_priorities_reorder_the_waits_but_keep_their_mean(priority_study: acs.Result) -> None:
    """Conservation: with one exponential service law, serving by priority instead of by
    arrival leaves the mean wait at FIFO's rho / (1 - rho) = 1.5 h."""
    _check("mean wait", priority_study.samples("mean_wait_hours"), 0.6 / 0.4)
