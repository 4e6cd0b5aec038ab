"""The DES's priority schedulers and more FIFO queues against queueing theory.

Oracles
-------
- ``priority`` (non-preemptive, highest first, FIFO within a class) on ``c`` one-chip
  servers with exponential service of one rate ``mu`` for every class: Cobham's formula,
  ``W_k = W_0 / ((1 - s_{k-1}) (1 - s_k))`` with ``s_k`` the load of the classes ranked
  ``k`` and above, and ``W_0 = C(c, a) / (c mu)`` (Erlang's C), which for ``c = 1`` is the
  mean residual work ``sum_i lambda_i E[S_i^2] / 2 = rho / mu``. (A. Cobham, "Priority
  assignment in waiting line problems", Oper. Res. 2(1), 1954; Kleinrock, *Queueing
  Systems* vol. 2, 1976, sec. 3.6; the multi-server form with one service rate, ibid.)
- ``priority_preemptive`` on one server, jobs checkpointing every 1e-4 h with free writes
  and restarts, is preemptive-resume priority M/M/1 (an evicted job loses at most 1e-4 h):
  the high class sees an M/M/1 queue of its own, ``W_1 = lambda_1 / (mu (mu - lambda_1))``,
  and the low class's mean time in system is
  ``T_2 = (1 / mu) / (1 - rho_1) + R_2 / ((1 - rho_1)(1 - rho))`` with
  ``R_2 = sum_i lambda_i E[S^2] / 2`` (Kleinrock vol. 2, sec. 3.7). The semantics fit: the
  scheduler evicts the lower-priority job the moment a higher one cannot start, and an
  evicted job requeues at its submission place (``_schedulers.priority_preemptive``).
- ``fifo``: M/M/c (Erlang C) at loads and sizes ``test_des_queueing.py`` does not cover,
  and M/G/1 by Pollaczek-Khinchine, ``W = lambda E[S^2] / (2 (1 - rho))``, with Erlang-2
  service (``E[S^2] = 1.5``) and a balanced-means hyperexponential of squared coefficient
  of variation 4 (``E[S^2] = 5``), which probe the second moment on both sides of the
  exponential's.

Tolerances
----------
Each case runs ``R = 10`` independent replications (own seeds; the first jobs discarded
as warm-up, about ten relaxation times), and the estimate is the mean of the replication
means, with its standard error from their spread (9 degrees of freedom; replications are
independent, so no autocorrelation model is needed). The test allows 4.5 SE (two-sided
p = 0.0015 under t with 9 degrees of freedom) and checks that the SE is at most 6 % of the
oracle, so a mistake of 27 % or more always fails. The bugs these catch move the numbers
much further: serving classes in FIFO order moves each class of the M/M/1 case by 43 %,
ignoring eviction doubles the high class's wait of the preemptive case, and using the mean
service time instead of its second moment moves P-K by 25 % (Erlang-2) or 150 % (H2).
Measured relative SEs at these seeds and sizes: 1.9-5.0 %.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

from accelsim.engines.cluster.des import JobSpec, PoolSpec, run
from accelsim.seeding import as_seed_sequence, stream

ROOT = as_seed_sequence(20_261_128)
REPLICATIONS = 10
K_SE = 4.5
MAX_RELATIVE_SE = 0.06
DRAIN_HOURS = 10_000.0


def erlang_c(servers: int, offered_erlangs: float) -> float:
    """Probability an arrival waits in M/M/c (Erlang's C formula)."""
    c, a = servers, offered_erlangs
    below = sum(a**k / math.factorial(k) for k in range(c))
    top = a**c / math.factorial(c) * c / (c - a)
    return top / (below + top)


def _check(label: str, samples: np.ndarray, oracle: float) -> None:
    mean = float(samples.mean())
    se = float(samples.std(ddof=1)) / math.sqrt(samples.size)
    assert se <= MAX_RELATIVE_SE * oracle, f"{label}: SE {se / oracle:.1%}, too weak a test"
    assert abs(mean - oracle) <= K_SE * se, (
        f"{label}: {mean:.4f} h vs oracle {oracle:.4f} h ({mean / oracle - 1:+.1%}, "
        f"SE {se / oracle:.1%})"
    )


@dataclass(frozen=True)
class PriorityCase:
    """Two classes of one-chip jobs on ``servers`` chips, each half of the arrivals."""

    label: str
    scheduler: str
    servers: int
    rho: float
    jobs: int
    warmup_jobs: int

    def replication(self, r: int) -> tuple[float, float, float, float]:
        """(high wait, high JCT, low wait, low JCT) means of one replication. [h]"""
        rng = stream(ROOT, "priority-theory", self.label, r)
        n = self.jobs
        submit = np.cumsum(rng.exponential(1.0 / (self.rho * self.servers), n))
        work = rng.exponential(1.0, n)
        high = rng.random(n) < 0.5
        tau = 1e-4 if self.scheduler == "priority_preemptive" else None
        jobs = [
            JobSpec(i, s, 1, w, int(h), checkpoint_interval_hours=tau)
            for i, (s, w, h) in enumerate(
                zip(submit.tolist(), work.tolist(), high.tolist(), strict=True)
            )
        ]
        start = float(submit[self.warmup_jobs])
        res = run(
            [PoolSpec("servers", chips=self.servers)],
            jobs,
            scheduler=self.scheduler,
            horizon_hours=float(submit[-1]) + DRAIN_HOURS,
            warmup_hours=start,
            seed_seq=ROOT,
            keep_jobs=True,
        )
        assert res.jobs is not None
        assert res.jobs_completed == n  # the horizon drains the queue: no censored job
        out = []
        for cls in (1, 0):
            mine = [j for j in res.jobs if j.priority == cls and j.submit_hours >= start]
            out += [float(np.mean([j.wait_hours for j in mine]))]
            out += [float(np.mean([j.jct_hours for j in mine]))]
        return out[0], out[1], out[2], out[3]


PRIORITY_CASES = [
    PriorityCase("M/M/1 priority rho=0.6", "priority", 1, 0.6, 4_000, 200),
    PriorityCase("M/M/3 priority rho=0.6", "priority", 3, 0.6, 4_000, 200),
    PriorityCase("M/M/1 preemptive rho=0.6", "priority_preemptive", 1, 0.6, 3_000, 200),
]


@pytest.fixture(scope="module")
def priority_rows() -> dict[str, np.ndarray]:
    return {
        case.label: np.array([case.replication(r) for r in range(REPLICATIONS)])
        for case in PRIORITY_CASES
    }


def test_cobham_nonpreemptive_priority_mm1(priority_rows: dict[str, np.ndarray]) -> None:
    """lambda = 0.6 split evenly, mu = 1: W_high = 0.6 / 0.7, W_low = 0.6 / (0.7 * 0.4)."""
    rows = priority_rows["M/M/1 priority rho=0.6"]
    _check("high class wait", rows[:, 0], 0.6 / 0.7)
    _check("low class wait", rows[:, 2], 0.6 / (0.7 * 0.4))
    # Non-preemptive: time in system is the wait plus one service, E[S] = 1, per class.
    _check("high class JCT", rows[:, 1], 0.6 / 0.7 + 1.0)
    _check("low class JCT", rows[:, 3], 0.6 / (0.7 * 0.4) + 1.0)


def test_cobham_nonpreemptive_priority_mmc(priority_rows: dict[str, np.ndarray]) -> None:
    """Three servers, a = 1.8 Erlangs: W_0 = C(3, 1.8) / 3, then Cobham's divisors."""
    rows = priority_rows["M/M/3 priority rho=0.6"]
    w0 = erlang_c(3, 1.8) / 3.0
    _check("high class wait", rows[:, 0], w0 / 0.7)
    _check("low class wait", rows[:, 2], w0 / (0.7 * 0.4))
    # Conservation: the load-weighted mean of the class waits is FIFO's Erlang C wait.
    both = 0.5 * (rows[:, 0] + rows[:, 2])
    _check("mean over classes", both, erlang_c(3, 1.8) / (3.0 - 1.8))


def test_preemptive_resume_priority_mm1(priority_rows: dict[str, np.ndarray]) -> None:
    """lambda_1 = lambda_2 = 0.3, mu = 1: W_1 = 0.3 / 0.7; T_2 = 1 / 0.7 + 0.6 / (0.7 * 0.4)."""
    rows = priority_rows["M/M/1 preemptive rho=0.6"]
    _check("high class wait", rows[:, 0], 0.3 / 0.7)
    _check("high class JCT", rows[:, 1], 0.3 / 0.7 + 1.0)  # never interrupted
    _check("low class JCT", rows[:, 3], 1.0 / 0.7 + 0.6 / (0.7 * 0.4))


@dataclass(frozen=True)
class FifoCase:
    label: str
    servers: int
    rho: float
    service: str
    """``exp``, ``erlang2`` or ``h2`` (balanced-means hyperexponential, SCV 4), mean 1 h."""
    jobs: int
    warmup_jobs: int

    @property
    def oracle_wait_hours(self) -> float:
        lam = self.rho * self.servers
        if self.service == "exp":
            return erlang_c(self.servers, lam) / (self.servers - lam)
        assert self.servers == 1
        second_moment = {"erlang2": 1.5, "h2": 5.0}[self.service]
        return lam * second_moment / (2.0 * (1.0 - self.rho))

    def service_hours(self, rng: np.random.Generator) -> np.ndarray:
        n = self.jobs
        if self.service == "exp":
            return rng.exponential(1.0, n)
        if self.service == "erlang2":
            return rng.gamma(2.0, 0.5, n)
        # Balanced means: branch i has probability p_i and mean 1 / (2 p_i), SCV 4.
        p = 0.5 * (1.0 + math.sqrt(3.0 / 5.0))
        fast = rng.random(n) < p
        return np.where(fast, rng.exponential(0.5 / p, n), rng.exponential(0.5 / (1.0 - p), n))

    def replication(self, r: int) -> float:
        rng = stream(ROOT, "fifo-theory", self.label, r)
        submit = np.cumsum(rng.exponential(1.0 / (self.rho * self.servers), self.jobs))
        work = self.service_hours(rng)
        jobs = (
            JobSpec(i, s, 1, w)
            for i, (s, w) in enumerate(zip(submit.tolist(), work.tolist(), strict=True))
        )
        res = run(
            [PoolSpec("servers", chips=self.servers)],
            jobs,
            scheduler="fifo",
            horizon_hours=float(submit[-1]) + DRAIN_HOURS,
            warmup_hours=float(submit[self.warmup_jobs]),
            seed_seq=ROOT,
        )
        assert res.jobs_waiting_at_horizon == 0
        return res.mean_wait_hours


FIFO_CASES = [
    FifoCase("M/M/4 rho=0.7", 4, 0.7, "exp", 10_000, 500),
    FifoCase("M/M/8 rho=0.7", 8, 0.7, "exp", 15_000, 500),
    FifoCase("M/E2/1 rho=0.6", 1, 0.6, "erlang2", 8_000, 300),
    FifoCase("M/H2/1 rho=0.5", 1, 0.5, "h2", 12_000, 500),
]


@pytest.mark.parametrize("case", FIFO_CASES, ids=lambda c: c.label)
def test_fifo_mean_wait_matches_erlang_c_and_pollaczek_khinchine(case: FifoCase) -> None:
    waits = np.array([case.replication(r) for r in range(REPLICATIONS)])
    _check(case.label, waits, case.oracle_wait_hours)


def test_utilisation_is_the_offered_load_in_a_stable_queue() -> None:
    """M/M/4 at rho = 0.7 over a window that ends while jobs still arrive.

    Utilisation converges to the offered load rho (Kleinrock vol. 1, eq. 2.30), and the
    engine's own ``offered_load`` measures it from the jobs; both agree within 4.5 SE of
    ten replications, and with rho = 0.7 to the same tolerance.
    """
    util, offered = [], []
    for r in range(REPLICATIONS):
        rng = stream(ROOT, "utilisation", r)
        submit = np.cumsum(rng.exponential(1.0 / 2.8, 6_000))
        work = rng.exponential(1.0, submit.size)
        jobs = [
            JobSpec(i, s, 1, w)
            for i, (s, w) in enumerate(zip(submit.tolist(), work.tolist(), strict=True))
        ]
        res = run(
            [PoolSpec("servers", chips=4)],
            jobs,
            scheduler="fifo",
            horizon_hours=float(submit[-1]),
            warmup_hours=float(submit[300]),
            seed_seq=ROOT,
        )
        util.append(res.utilization)
        offered.append(res.offered_load)
    _check("utilisation", np.array(util), 0.7)
    _check("offered load", np.array(offered), 0.7)
    _check("utilisation - offered load + 0.7", np.array(util) - np.array(offered) + 0.7, 0.7)
