"""The event loop against an independent FIFO recursion (``tests/oracles``), run for run.

Oracle: the engine's own SimPy event loop (``des._event_loop``) on the same jobs, which
tests/validation/test_des_queueing.py holds to Erlang C, Pollaczek-Khinchine and an
independent Kiefer-Wolfowitz recursion. The recursion uses the event loop's arithmetic
(docstring of ``tests/oracles/fifo_recursion.py``), so with continuous draws (no two events
at one instant) every field of the result must be *equal*, not close: per-job starts and
ends, waits in order, counts, every level integral and sum. Tolerance 0: any difference is a
bug in one of the two. Ties are the hypothesis property's business (tests/properties).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pytest
from tests.oracles import fifo_recursion as _fifo
from tests.oracles.fifo_recursion import (
    gang_fifo_starts,
    kiefer_wolfowitz_starts,
    simulate_fifo,
)

from accelsim.engines.cluster import des
from accelsim.engines.cluster.des import DesResult, JobSpec, PoolSpec, run
from accelsim.engines.cluster.des._schedulers import resolve_scheduler
from accelsim.seeding import as_seed_sequence, stream

ROOT = as_seed_sequence(20_250_117)
SEEDS = range(40)


def _jobs(seed: int, n: int, capacity: int, sizes: list[int], rho: float) -> list[JobSpec]:
    rng = stream(ROOT, "fifo", seed)
    chips = rng.choice(np.asarray(sizes), n)
    work = rng.lognormal(0.0, 1.0, n)
    rate = rho * capacity / float(np.mean(chips) * np.exp(0.5))
    submit = np.cumsum(rng.exponential(1.0 / rate, n))
    checkpointed = rng.random(n) < 0.2  # some with checkpoint writes: longer attempts
    return [
        JobSpec(
            i,
            float(submit[i]),
            int(chips[i]),
            float(work[i]),
            int(i % 3),
            None,
            None,
            bool(i % 5 == 0),
            0.3 if checkpointed[i] else None,
            0.02 if checkpointed[i] else 0.0,
            0.1,
        )
        for i in range(n)
    ]


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return all(_equal(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def assert_same_result(fast: DesResult, slow: DesResult) -> None:
    """Every field of the two results equal (nan equals nan), naming the first that is not."""
    for f in dataclasses.fields(DesResult):
        x, y = getattr(fast, f.name), getattr(slow, f.name)
        assert _equal(x, y), f"{f.name}: recursion {x!r} != event loop {y!r}"


def both(pools: list[PoolSpec], jobs: list[JobSpec], **kw: Any) -> tuple[DesResult, DesResult]:
    """(the recursion's result, the event loop's result) on the same jobs."""
    fast = simulate_fifo(
        pools,
        iter(jobs),
        horizon_hours=kw["horizon_hours"],
        warmup_hours=kw.get("warmup_hours", 0.0),
        keep_jobs=kw.get("keep_jobs", False),
        utilization_resolution_hours=kw.get("utilization_resolution_hours"),
    )
    slow = des._event_loop(
        pools,
        iter(jobs),
        resolve_scheduler("fifo"),
        horizon_hours=kw["horizon_hours"],
        warmup_hours=kw.get("warmup_hours", 0.0),
        seed_seq=ROOT,
        keep_jobs=kw.get("keep_jobs", False),
        keep_events=False,
        utilization_resolution_hours=kw.get("utilization_resolution_hours"),
    )
    return fast, slow


@pytest.mark.parametrize("seed", SEEDS)
def test_single_chip_jobs_equal_the_event_loop(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """M/G/c (Kiefer-Wolfowitz branch): c from 1 to 16, load 0.6-1.1, horizon cutting the run;
    blocks of 1 to 4,096 jobs (an event is integrated in the block where it becomes final)."""
    rng = stream(ROOT, "mgc", seed)
    monkeypatch.setattr(_fifo, "BLOCK", int(rng.choice([1, 7, 64, 4096])))
    c = int(rng.integers(1, 17))
    jobs = _jobs(seed, 600, c, [1], float(rng.uniform(0.6, 1.1)))
    jobs = [j._replace(whole_domains=False) for j in jobs]
    horizon = jobs[-1].submit_hours * float(rng.uniform(0.7, 1.3))
    fast, slow = both(
        [PoolSpec("p", chips=c, speed=float(rng.choice([1.0, 1.7])))],
        jobs,
        horizon_hours=horizon,
        warmup_hours=horizon * float(rng.uniform(0.0, 0.3)),
        keep_jobs=True,
    )
    assert fast.jobs is not None
    assert fast.jobs_completed > 0
    assert_same_result(fast, slow)


@pytest.mark.parametrize("seed", SEEDS)
def test_gang_jobs_equal_the_event_loop(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Gang jobs of 1-64 chips on 64-256 chips, whole domains, checkpoint writes, a series;
    blocks of 1 to 4,096 jobs, and one-chip blocks before the first gang job."""
    rng = stream(ROOT, "gang", seed)
    monkeypatch.setattr(_fifo, "BLOCK", int(rng.choice([1, 7, 64, 4096])))
    cap = int(rng.choice([64, 96, 256]))
    jobs = _jobs(seed, 800, cap, [1, 2, 4, 8, 16, 32, 64], float(rng.uniform(0.5, 1.05)))
    if seed % 4 == 0:  # the first 100 jobs on one chip: the recursion switches form mid-run
        jobs[:100] = [j._replace(chips=1, whole_domains=False) for j in jobs[:100]]
    horizon = jobs[-1].submit_hours * float(rng.uniform(0.7, 1.3))
    fast, slow = both(
        [PoolSpec("p", chips=cap, domain_chips=int(rng.choice([1, 4, 8])))],
        jobs,
        horizon_hours=horizon,
        warmup_hours=horizon * float(rng.uniform(0.0, 0.3)),
        keep_jobs=bool(seed % 2),
        utilization_resolution_hours=horizon / float(rng.integers(1, 50)) if seed % 3 else None,
    )
    assert fast.jobs_completed > 0
    assert_same_result(fast, slow)


def test_the_starts_are_the_recursion() -> None:
    """The promoted oracles: Kiefer-Wolfowitz and its gang form give the DES's first starts."""
    jobs = _jobs(3, 2000, 8, [1], 0.95)
    jobs = [j._replace(whole_domains=False, checkpoint_interval_hours=None,
                       checkpoint_write_hours=0.0) for j in jobs]  # fmt: skip
    res = run([PoolSpec("p", chips=8)], jobs, scheduler="fifo", horizon_hours=1e9,
              seed_seq=ROOT, keep_jobs=True)  # fmt: skip
    assert res.jobs is not None
    arrive = [j.submit_hours for j in jobs]
    work = [j.work_hours for j in jobs]
    got = [r.first_start_hours for r in res.jobs]
    assert got == kiefer_wolfowitz_starts(arrive, work, 8, 1e9)
    assert got == gang_fifo_starts(arrive, [1] * len(jobs), work, 8, 1e9)


def test_waits_by_hand() -> None:
    """Gang FIFO on 6 chips, worked by hand: 4 (0-2 h), 4 waits to 2, 2 waits behind it."""
    starts = gang_fifo_starts([0.0, 0.5, 0.6, 2.5], [4, 4, 2, 2], [2.0, 1.0, 1.0, 0.5], 6, 9.0)
    # job 2 fits at 0.6 (2 free) but strict FIFO holds it behind job 1 until 2.0
    assert starts == [0.0, 2.0, 2.0, 3.0]


def test_queue_order_and_reused_ids_as_in_the_oracle() -> None:
    """Batches of equal submission times queue by id, ids out of order: ``run`` equals the
    recursion; an id reused while its job is in the system is refused by both."""
    jobs = _jobs(7, 300, 16, [1, 2, 4], 0.8)
    base = PoolSpec("p", chips=16)
    shuffled = [
        j._replace(job_id=(37 * j.job_id) % 301, submit_hours=round(j.submit_hours)) for j in jobs
    ]
    got = run([base], shuffled, scheduler="fifo", horizon_hours=200.0, seed_seq=ROOT)
    want = simulate_fifo([base], iter(shuffled), horizon_hours=200.0, warmup_hours=0.0,
                         keep_jobs=False, utilization_resolution_hours=None)  # fmt: skip
    assert_same_result(want, got)
    reused = [*jobs[:10], jobs[10]._replace(job_id=9)]
    with pytest.raises(ValueError, match="already in the system"):
        run([base], reused, scheduler="fifo", horizon_hours=200.0, seed_seq=ROOT)
    with pytest.raises(ValueError, match="already in the system"):
        simulate_fifo([base], iter(reused), horizon_hours=200.0, warmup_hours=0.0,
                      keep_jobs=False, utilization_resolution_hours=None)  # fmt: skip


@pytest.mark.parametrize(
    ("job", "message"),
    [
        (JobSpec(5, 1.0, 0, 1.0), "chips must be >= 1"),
        (JobSpec(5, 1.0, 99, 1.0), "more than any pool"),
        (JobSpec(5, 1.0, 2, 1.0, pools=(1,)), "lists pool 1"),
        (JobSpec(5, 0.1, 2, 1.0), "order of submission"),
    ],
)
def test_bad_jobs_raise_as_in_the_event_loop(job: JobSpec, message: str) -> None:
    jobs = [JobSpec(0, 0.5, 1, 1.0), job]
    pools = [PoolSpec("p", chips=8)]
    with pytest.raises(ValueError, match=message):
        simulate_fifo(pools, jobs, horizon_hours=10.0, warmup_hours=0.0, keep_jobs=False,
                      utilization_resolution_hours=None)  # fmt: skip
    with pytest.raises(ValueError, match=message):
        des._event_loop(pools, jobs, resolve_scheduler("fifo"), horizon_hours=10.0,
                        warmup_hours=0.0, seed_seq=ROOT, keep_jobs=False, keep_events=False,
                        utilization_resolution_hours=None)  # fmt: skip
