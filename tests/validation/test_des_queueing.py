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
slowly: the variance of the mean wait of ``N`` customers is ``K W**2 / N``, with ``K``
about 49 customers for M/M/2 at rho = 0.5, 115 for M/M/1 at 0.8 and 425 at 0.9. Each
replication therefore carries control variates, statistics of its own measured inputs
whose expectations are exactly zero (``_controls``):

- linear: the centred mean inter-arrival and service times (unit variance per customer);
- quadratic: with ``u`` the centred service minus the centred inter-arrival time, the mean
  over whole blocks of ``b`` customers of ``b * mean(u)**2 / var(u) - 1``, for two block
  lengths near a third of and one relaxation time of the queue (about
  ``1 / (c (1 - sqrt(rho))**2)`` hours: 340 customers at rho = 0.9, 70 at 0.8). The mean
  wait responds convexly to the local drift of the input random walk, which the linear
  controls miss.

The estimate is the intercept of an ordinary least-squares fit of the replication means on
the controls; its standard error comes from that fit over ``R = 40`` independent
replications, which are independent batches, so no autocorrelation model is needed (35
degrees of freedom, 36 for M/D/1). Measured with 400 replications of the Kiefer-Wolfowitz
recursion at exactly these run lengths (with other seeds than the test's), the controls
bring ``K`` to 22 (M/M/2, 0.5), 33 (M/M/1, 0.8), 117 (M/M/1, 0.9) and 7.2 (M/D/1, 0.5),
against 33, 61, 204 and 9.7 with the linear controls alone; each ``K`` is good to about
7 %. Fitting ``q`` controls on ``R`` replications inflates the variance by
``(R - 2) / (R - 2 - q)`` (1.12 for four controls). Design SE and tolerance, all 3 %:

=============  ===============  =========  =====================
case           measured jobs    design SE  tolerance / design SE
=============  ===============  =========  =====================
M/M/2, 0.5     40 x 10,500      0.77 %     3.9
M/M/1, 0.8     40 x 15,000      0.79 %     3.8
M/M/1, 0.9     40 x 53,500      0.78 %     3.8
M/D/1, 0.5     40 x 3,000       0.81 %     3.7
=============  ===============  =========  =====================

At this seed the fitted SEs are 0.69, 0.64, 0.79 and 0.71 %. More servers do not help at
a given load: at rho = 0.9, ``K`` grows with ``c`` (about 340 with linear controls for
M/M/8, against 210 for M/M/1), so the rho = 0.9 case stays M/M/1. The exact
Kiefer-Wolfowitz test below also runs at rho = 0.9.

Each test also checks that the fitted SE is at most a third of its tolerance (1 % of the
oracle), so it cannot silently lose its power. The margin of a quarter over the design SE
covers the sampling error of an SE estimated with 35 degrees of freedom (about 12 %).
Replications start empty and discard their first customers: 3,000 at rho = 0.9, about nine
relaxation times, and fewer at lower load. They run to a horizon after the last arrival, so
every measured customer starts. The replications of all cases (3.5 million jobs, about
a minute of CPU) run in two worker processes.
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
from accelsim.engines.cluster.des import JobSpec, PoolSpec, run
from accelsim.seeding import as_seed_sequence, child, stream

ROOT = as_seed_sequence(20_241_122)
REPLICATIONS = 40
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
    blocks: tuple[int, ...]
    """Block lengths [customers] of the quadratic control variates (module docstring)."""
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
    Case("M/M/2 rho=0.5", 2, 0.5, False, 11_000, 500, (3, 10), 0.03),
    Case("M/M/1 rho=0.8", 1, 0.8, False, 16_500, 1_500, (30, 100), 0.03),
    Case("M/M/1 rho=0.9", 1, 0.9, False, 56_500, 3_000, (100, 300), 0.03),
    Case("M/D/1 rho=0.5", 1, 0.5, True, 3_500, 500, (3, 10), 0.03),
]


def _inputs(case: Case, r: int) -> tuple[FloatArray, FloatArray]:
    rng = stream(ROOT, "validation.queueing", case.label, r)
    gaps = rng.exponential(1.0 / case.arrival_rate, case.jobs)
    work = np.ones(case.jobs) if case.deterministic else rng.exponential(1.0, case.jobs)
    return gaps, work


def _controls(case: Case, gaps: FloatArray, work: FloatArray) -> list[float]:
    """Input statistics of the measured customers whose expectations are exactly zero.

    The centred mean gap and mean work (unit variance per customer each: both exponential
    with their means scaled out; the work column is identically zero for M/D/1), then for
    each block length ``b`` the mean over whole blocks of ``b * mean(u)**2 / var(u) - 1``,
    ``u`` being the centred work minus the centred gap (independent, so ``var(u)`` is 2, or
    1 when the work is deterministic).
    """
    gap = gaps * case.arrival_rate - 1.0
    wrk = work - 1.0
    u = wrk - gap
    var_u = 1.0 if case.deterministic else 2.0
    out = [float(gap.mean()), float(wrk.mean())]
    for b in case.blocks:
        means = u[: u.size // b * b].reshape(-1, b).mean(axis=1)
        out.append(float(np.mean(means**2)) * b / var_u - 1.0)
    return out


def _replication(case: Case, r: int) -> list[float]:
    """[mean wait, Little's-law gap, *controls] of one replication."""
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
    return [res.mean_wait_hours, little, *_controls(case, gaps[measured], work[measured])]


def _task(args: tuple[int, int]) -> list[float]:
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
    """OLS intercept of the replication means on the controls (all mean zero), and its SE."""
    controls = np.delete(rows[:, 2:], 1, axis=1) if deterministic else rows[:, 2:]
    design = np.column_stack([np.ones(len(rows)), controls])
    coef, *_ = np.linalg.lstsq(design, rows[:, 0], rcond=None)
    resid = rows[:, 0] - design @ coef
    dof = len(rows) - design.shape[1]
    cov = resid @ resid / dof * np.linalg.inv(design.T @ design)
    return float(coef[0]), math.sqrt(cov[0, 0])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.label)
def test_mean_wait_matches_the_oracle(case: Case, replications: dict[str, np.ndarray]) -> None:
    """Mean wait within 3 % of Erlang C / Pollaczek-Khinchine, at most a third of it one SE.

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
    That edge term is about ``Q**2 / (2 c)`` job-hours: the k-th of the Q jobs queued when
    the window opens still waits about ``k / c`` hours. The area ``L T`` is about the measured
    jobs times W: 3.5e3 job-hours (M/M/2, 0.5), 6e4 (M/M/1, 0.8), 4.8e5 (0.9) and 1.5e3
    (M/D/1). The edge stays under 1 % of it unless Q reaches 12, 35, 98 and 6 respectively,
    which the stationary queue-length tails make rare: about 1e-4, 4e-4, 3e-5 (``0.8**35``,
    ``0.9**98``) and 5e-4 (M/D/1 at 0.5 decays about 0.28 per job) per replication.
    """
    assert np.all(np.abs(replications[case.label][:, 1]) <= 1e-2)


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
