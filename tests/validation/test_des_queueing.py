"""The DES engine against queueing theory: Erlang C, Pollaczek-Khinchine, Little's law.

Oracles
-------
- M/M/c, FIFO: mean wait ``W = C(c, a) / (c mu - lambda)`` with Erlang's C formula
  (A. K. Erlang 1917; e.g. Kleinrock, *Queueing Systems* vol. 1, 1975, sec. 3.5).
- M/D/1: Pollaczek-Khinchine, ``W = rho / (2 mu (1 - rho))`` (Kleinrock sec. 5.7).
- The Kiefer-Wolfowitz recursion (FIFO c-server queue, one heap of server-free times): an
  independent implementation that must give the engine's waits exactly on the same inputs.

How the tolerances hold
-----------------------
Waits are strongly autocorrelated near saturation, so the mean of one long run converges
slowly: the variance of the mean wait of ``N`` customers is ``K W**2 / N`` with ``K`` about
115 customers for M/M/1 at rho = 0.8 and 370 at rho = 0.9. With each replication's own
input means as control variates (the mean inter-arrival and service times of its measured
customers, whose expectations are known exactly), ``K`` falls to about 25-32 (M/M/2, rho =
0.5), 41-67 (M/M/1, 0.8), 130-155 (M/M/1, 0.9) and 11 (M/D/1, 0.5), as measured with 60
replications of the Kiefer-Wolfowitz recursion (the ranges span repeated measurements).
The estimate is the intercept of an ordinary least-squares fit of the replication means on
the centred input means. Its standard error comes from that fit over ``R = 20``
independent replications, which are independent batches, so no autocorrelation model is
needed (17 or 18 degrees of freedom).

- rho = 0.5, 0.8 and M/D/1: the jobs below make 3 % equal to 4 design SE, using the upper
  ``K`` (0.57, 1.2 and 0.21 million measured jobs).
- rho = 0.9: 3 % would need about 2.7 million measured jobs even with control variates
  (6.6 million without), about a minute of CPU. So the tolerance is 5 %, which is 4 design SE
  with 0.96 million jobs. The exact Kiefer-Wolfowitz test below also runs at rho = 0.9.

Each test also checks that the fitted SE is at most a third of its tolerance, so it cannot
silently lose its power. The margin over the design value of a quarter allows for the
sampling error of an SE estimated with 17 degrees of freedom (about 17 %). Replications
start empty and discard their first customers: 3,000 at rho = 0.9, about nine relaxation
times, and fewer at lower load. They run to a horizon after the last arrival, so every
measured customer starts. The replications of all cases (3 million jobs) run in two worker
processes.
"""

from __future__ import annotations

import heapq
import math
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np
import pytest

from accelsim._typing import FloatArray
from accelsim.engines.des import JobSpec, PoolSpec, run
from accelsim.seeding import as_seed_sequence, child, stream

ROOT = as_seed_sequence(20_241_122)
REPLICATIONS = 20
DRAIN_HOURS = 10_000.0


@dataclass(frozen=True)
class Case:
    """One queue: ``servers`` 1-chip servers, service rate 1, utilisation ``rho``."""

    label: str
    servers: int
    rho: float
    deterministic: bool
    jobs: int
    """Jobs per replication, warm-up included."""
    warmup_jobs: int
    tolerance: float
    """Allowed relative error of the mean wait (see the module docstring)."""

    @property
    def arrival_rate(self) -> float:
        return self.rho * self.servers

    @property
    def oracle_wait_hours(self) -> float:
        """Erlang C for exponential service; Pollaczek-Khinchine for M/D/1."""
        if self.deterministic:
            assert self.servers == 1
            return self.rho / (2.0 * (1.0 - self.rho))
        c, a = self.servers, self.arrival_rate
        below = sum(a**k / math.factorial(k) for k in range(c))
        top = a**c / math.factorial(c) * c / (c - a)
        return top / (below + top) / (c - a)


CASES = [
    Case("M/M/2 rho=0.5", 2, 0.5, False, 29_000, 500, 0.03),
    Case("M/M/1 rho=0.8", 1, 0.8, False, 61_500, 1_500, 0.03),
    Case("M/M/1 rho=0.9", 1, 0.9, False, 51_000, 3_000, 0.05),
    Case("M/D/1 rho=0.5", 1, 0.5, True, 11_000, 500, 0.03),
]


def _inputs(case: Case, r: int) -> tuple[FloatArray, FloatArray]:
    rng = stream(ROOT, "validation.queueing", case.label, r)
    gaps = rng.exponential(1.0 / case.arrival_rate, case.jobs)
    work = np.ones(case.jobs) if case.deterministic else rng.exponential(1.0, case.jobs)
    return gaps, work


def _replication(case: Case, r: int) -> tuple[float, float, float, float]:
    """(mean wait, centred mean gap, centred mean work, Little's-law gap) of one replication."""
    gaps, work = _inputs(case, r)
    submit = np.cumsum(gaps)
    jobs = (
        JobSpec(i, s, 1, w)
        for i, (s, w) in enumerate(zip(submit.tolist(), work.tolist(), strict=True))
    )
    res = run(
        [PoolSpec("servers", chips=case.servers)],
        jobs,
        scheduler="fifo",
        horizon_hours=float(submit[-1]) + DRAIN_HOURS,
        warmup_hours=float(submit[case.warmup_jobs]),
        seed_seq=child(ROOT, "validation.queueing.run", r),
    )
    assert res.wait_hours.size == case.jobs - case.warmup_jobs  # every measured job started
    little = res.mean_queue_length / (res.arrival_rate_per_hour * res.mean_wait_hours) - 1.0
    measured = slice(case.warmup_jobs, None)
    return (
        res.mean_wait_hours,
        float(gaps[measured].mean()) * case.arrival_rate - 1.0,
        float(work[measured].mean()) - 1.0,
        little,
    )


def _task(args: tuple[int, int]) -> tuple[float, float, float, float]:
    return _replication(CASES[args[0]], args[1])


@pytest.fixture(scope="module")
def replications() -> dict[str, np.ndarray]:
    """Every replication of every case, over two worker processes (largest cases first)."""
    tasks = sorted(
        ((i, r) for i in range(len(CASES)) for r in range(REPLICATIONS)),
        key=lambda t: -CASES[t[0]].jobs,
    )
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        results = dict(zip(tasks, pool.map(_task, tasks, chunksize=2), strict=True))
    return {
        case.label: np.array([results[(i, r)] for r in range(REPLICATIONS)])
        for i, case in enumerate(CASES)
    }


def _control_variate_mean(rows: np.ndarray, deterministic: bool) -> tuple[float, float]:
    """OLS intercept of the replication means on the centred input means, and its SE."""
    controls = rows[:, 1:2] if deterministic else rows[:, 1:3]
    design = np.column_stack([np.ones(len(rows)), controls])
    coef, *_ = np.linalg.lstsq(design, rows[:, 0], rcond=None)
    resid = rows[:, 0] - design @ coef
    dof = len(rows) - design.shape[1]
    cov = resid @ resid / dof * np.linalg.inv(design.T @ design)
    return float(coef[0]), math.sqrt(cov[0, 0])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.label)
def test_mean_wait_matches_the_oracle(case: Case, replications: dict[str, np.ndarray]) -> None:
    """Mean wait within 3 % (5 % at rho = 0.9) of Erlang C / Pollaczek-Khinchine.

    Tolerances and their standard errors: module docstring.
    """
    estimate, se = _control_variate_mean(replications[case.label], case.deterministic)
    oracle = case.oracle_wait_hours
    tol = case.tolerance * oracle
    assert se <= tol / 3.0, f"SE {se / oracle:.2%} of the oracle: too few jobs for the tolerance"
    assert abs(estimate - oracle) <= tol, (
        f"{case.label}: {estimate:.4f} h vs {oracle:.4f} h ({estimate / oracle - 1:+.2%}, "
        f"SE {se / oracle:.2%})"
    )


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.label)
def test_littles_law_holds_on_each_replication(
    case: Case, replications: dict[str, np.ndarray]
) -> None:
    """L = lambda W per replication, within 1 %.

    On a sample path, the queue-length area over the window equals the waits of the jobs
    submitted in it, plus the part inside the window of the waits of the jobs already queued
    when it opens (the window closes after the queue drains, so nothing is cut at the end).
    That edge term is about Q x R: the Q jobs queued at the warm-up times their remaining
    wait R. Against the area ``L T`` (about 1.9e5 job-hours at rho = 0.8, 4e5 at 0.9) it
    stays under 1 % unless Q and R both exceed about 40 (for M/M/1 at rho = 0.9,
    P(Q >= 40) = 0.9**41, about 1.3 %, and R is then near 40 h only with a similar chance).
    """
    assert np.all(np.abs(replications[case.label][:, 3]) <= 1e-2)


def _kiefer_wolfowitz(submit: FloatArray, work: FloatArray, servers: int) -> FloatArray:
    """FIFO waits of a ``servers``-server queue: each customer takes the earliest-free server."""
    free = [0.0] * servers
    waits = np.empty(submit.size)
    for i, (arrive, service) in enumerate(zip(submit.tolist(), work.tolist(), strict=True)):
        wait = max(free[0] - arrive, 0.0)
        waits[i] = wait
        heapq.heapreplace(free, arrive + wait + service)
    return waits


@pytest.mark.parametrize("servers", [1, 3, 8])
def test_fifo_waits_equal_the_kiefer_wolfowitz_recursion(servers: int) -> None:
    """Same inputs, independent implementation: waits agree to 1e-9 h (float rounding only)."""
    rng = stream(ROOT, "validation.kiefer_wolfowitz", servers)
    n = 20_000
    submit = np.cumsum(rng.exponential(1.0 / (0.9 * servers), n))
    work = rng.exponential(1.0, n)
    jobs = (
        JobSpec(i, s, 1, w)
        for i, (s, w) in enumerate(zip(submit.tolist(), work.tolist(), strict=True))
    )
    res = run(
        [PoolSpec("servers", chips=servers)],
        jobs,
        scheduler="fifo",
        horizon_hours=float(submit[-1]) + DRAIN_HOURS,
        seed_seq=ROOT,
    )
    np.testing.assert_allclose(
        res.wait_hours, _kiefer_wolfowitz(submit, work, servers), rtol=0, atol=1e-9
    )
