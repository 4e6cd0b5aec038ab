"""The run() entry point: strike processes, streams, laziness, errors, metrics and series."""

from __future__ import annotations

import itertools
import math
import tracemalloc
from collections.abc import Iterator

import numpy as np
import pytest

from accelsim._typing import FloatArray
from accelsim.engines.cluster.des import DesResult, JobSpec, PoolSpec, poisson_stream, run
from accelsim.models import reliability
from accelsim.seeding import as_seed_sequence

SEED = as_seed_sequence(7)


def _const(hours: float):  # type: ignore[no-untyped-def]
    def sample(rng: np.random.Generator, n: int) -> FloatArray:
        return np.full(n, hours)

    return sample


def _exp(mean: float):  # type: ignore[no-untyped-def]
    def sample(rng: np.random.Generator, n: int) -> FloatArray:
        return rng.exponential(mean, n)

    return sample


def test_failures_strike_up_chips_at_their_rate() -> None:
    """Failures seen = rate x up chip-hours, within 5 Poisson SE.

    With repairs of 5 h and a rate of 0.01 per chip-hour, ~5 % of chips are down at any
    time: the thinning (strikes on down chips do nothing) must keep the rate per *up* chip.
    By the martingale property E[N] = rate * E[up chip-hours], so N - rate * A has SD sqrt(rate A).
    """
    pool = PoolSpec("p", chips=64, failure_rate_per_chip_hour=0.01, repair_hours=_const(5.0))
    res = run([pool], [], scheduler="fifo", horizon_hours=2000.0, seed_seq=SEED)
    expected = 0.01 * res.pools[0].available_chip_hours
    assert abs(res.pools[0].chip_failures - expected) <= 5 * math.sqrt(expected)
    assert res.pools[0].available_chip_hours < 64 * 2000.0 * 0.97  # chips really went down


def test_preemptions_interrupt_jobs_at_chips_times_rate() -> None:
    """A 16-chip job on a 16-chip spot pool is interrupted at 16 x rate per held hour.

    Each preempted chip returns after 0.5 h; with no checkpoint the job restarts from scratch.
    Interruptions ~ Poisson(rate x busy chip-hours) by the same martingale argument: 5 SE.
    """
    pool = PoolSpec(
        "spot", chips=16, preemptions_per_chip_hour=0.002, preemption_return_hours=_const(0.5)
    )
    jobs = (JobSpec(i, float(i) * 4.0, 16, 1.0) for i in range(1000))
    res = run([pool], jobs, scheduler="fifo", horizon_hours=4000.0, seed_seq=SEED)
    expected = 0.002 * res.pools[0].allocated_chip_hours
    assert abs(res.pools[0].interruptions_preemption - expected) <= 5 * math.sqrt(expected)
    assert res.interruptions == res.pools[0].interruptions_preemption > 0


def test_a_new_random_source_never_shifts_another() -> None:
    """Adding a preemption process leaves the failure times as they were (addressed streams).

    Nothing goes down (no repair or return sampler), so every strike is logged.
    """
    base = PoolSpec("p", chips=8, failure_rate_per_chip_hour=0.05)
    both = PoolSpec("p", chips=8, failure_rate_per_chip_hour=0.05, preemptions_per_chip_hour=0.1)

    def fail_times(pool: PoolSpec) -> list[float]:
        res = run([pool], [], scheduler="fifo", horizon_hours=50.0, seed_seq=SEED, keep_events=True)
        assert res.events is not None
        return [e.time_hours for e in res.events if e.kind == "fail"]

    assert len(fail_times(base)) > 5
    assert fail_times(base) == fail_times(both)


def test_same_seed_same_result_and_another_seed_differs() -> None:
    pool = PoolSpec("p", chips=8, failure_rate_per_chip_hour=0.01, repair_hours=_const(2.0))

    def once(seed: int) -> DesResult:
        jobs = poisson_stream(
            as_seed_sequence(seed),
            interarrival_hours=_exp(0.5),
            chips=_const(2.0),
            work_hours=_exp(1.5),
            until_hours=300.0,
        )
        return run(
            [pool],
            jobs,
            scheduler="backfill",
            horizon_hours=300.0,
            seed_seq=as_seed_sequence(seed),
            keep_events=True,
        )

    a, b, c = once(1), once(1), once(2)
    assert a.events == b.events
    assert (a.mean_wait_hours, a.utilization, a.goodput) == (
        b.mean_wait_hours,
        b.utilization,
        b.goodput,
    )
    assert a.events != c.events


def test_jobs_are_read_lazily_up_to_the_horizon() -> None:
    """An endless stream ends at the horizon: only one job past it is ever read."""
    pulled = itertools.count()

    def endless() -> Iterator[JobSpec]:
        for i in itertools.count():
            next(pulled)
            yield JobSpec(i, i * 0.1, 1, 0.05)

    res = run(
        [PoolSpec("p", chips=1)], endless(), scheduler="fifo", horizon_hours=100.0, seed_seq=SEED
    )
    assert next(pulled) == res.jobs_arrived + 1 == 1001


def test_memory_does_not_grow_with_finished_jobs() -> None:
    """Peak memory for 12k jobs exceeds that for 2k by little more than their waits (8 B each).

    Keeping a record per job would add ~200 B per job (~2 MB for 10k more jobs); the bound
    of 600 kB leaves room for the 80 kB of waits and allocator noise.
    """

    def peak(n: int) -> int:
        jobs = (JobSpec(i, i * 0.1, 1, 0.08) for i in range(n))
        tracemalloc.start()
        run(
            [PoolSpec("p", chips=1)],
            jobs,
            scheduler="fifo",
            horizon_hours=n * 0.1 + 1,
            seed_seq=SEED,
        )
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return top

    assert peak(12_000) - peak(2_000) < 600_000


def test_time_series_integrates_to_the_totals() -> None:
    """Bin means times bin widths sum to the window totals (warm-up 0, ragged last bin)."""
    jobs = poisson_stream(
        SEED,
        interarrival_hours=_exp(0.3),
        chips=_const(3.0),
        work_hours=_exp(1.0),
        until_hours=95.0,
    )
    res = run(
        [PoolSpec("p", chips=16)],
        jobs,
        scheduler="fifo",
        horizon_hours=95.0,
        seed_seq=SEED,
        utilization_resolution_hours=10.0,
    )
    series = res.series
    assert series is not None
    widths = np.minimum(series.start_hours + 10.0, 95.0) - series.start_hours
    assert series.busy_chips.shape == (10, 1)
    assert float(series.busy_chips[:, 0] @ widths) == pytest.approx(
        res.pools[0].allocated_chip_hours
    )
    assert float(series.queued_jobs @ widths) == pytest.approx(res.mean_queue_length * 95.0)
    assert np.all(series.utilization <= 1.0)


def test_warmup_excludes_early_jobs_and_hours() -> None:
    """Jobs submitted before the warm-up count as arrived but not in waits; hours are clipped."""
    jobs = [JobSpec(0, 0.0, 2, 10.0), JobSpec(1, 1.0, 2, 1.0), JobSpec(2, 6.0, 2, 1.0)]
    res = run(
        [PoolSpec("p", chips=2)],
        jobs,
        scheduler="fifo",
        horizon_hours=20.0,
        warmup_hours=5.0,
        seed_seq=SEED,
    )
    assert res.jobs_arrived == 3
    assert res.wait_hours.tolist() == [5.0]  # job 2 waits 6 -> 11 behind jobs 0 and 1
    assert res.pools[0].allocated_chip_hours == pytest.approx(2 * (10 - 5) + 2 * 1 + 2 * 1)
    assert res.pools[0].available_chip_hours == pytest.approx(2 * 15.0)


def test_hero_run_matches_the_exact_expected_runtime() -> None:
    """One checkpointed job alone on its chips: mean time to finish = reliability's E[T].

    Chips come back at once (hot spares), the case models.reliability describes. 300 runs,
    tolerance 5 SE of the sample mean.
    """
    work, interval, write, restart, rate = 50.0, 2.0, 0.2, 0.5, 1e-3
    pool = PoolSpec("p", chips=128, failure_rate_per_chip_hour=rate)
    job = JobSpec(
        0,
        0.0,
        128,
        work,
        checkpoint_interval_hours=interval,
        checkpoint_write_hours=write,
        restart_hours=restart,
    )
    ends = []
    for i in range(300):
        res = run(
            [pool],
            [job],
            scheduler="fifo",
            horizon_hours=1e4,
            seed_seq=as_seed_sequence(i),
            keep_jobs=True,
        )
        assert res.jobs is not None
        ends.append(res.jobs[0].end_hours)
    expected = float(
        reliability.expected_completion_hours(work, interval, write, restart, 128 * rate)
    )
    sample = np.asarray(ends)
    assert abs(sample.mean() - expected) <= 5 * sample.std(ddof=1) / math.sqrt(sample.size)


@pytest.mark.parametrize(
    ("jobs", "message"),
    [
        ([JobSpec(0, 2.0, 1, 1.0), JobSpec(1, 1.0, 1, 1.0)], "order of submission"),
        ([JobSpec(0, 0.0, 1, 1.0), JobSpec(0, 0.0, 1, 1.0)], "ids must be unique"),
        ([JobSpec(0, 0.0, 9, 1.0)], "more than any pool it may use holds"),
        ([JobSpec(0, 0.0, 1, 1.0, pools=(3,))], "lists pool 3"),
        ([JobSpec(0, 0.0, 1, -1.0)], "work_hours must be"),
        ([JobSpec(0, float("nan"), 1, 1.0)], "submit_hours must be"),
        ([JobSpec(0, -1.0, 1, 1.0)], "submit_hours must be"),
    ],
)
def test_bad_jobs_are_refused_with_the_reason(jobs: list[JobSpec], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        run([PoolSpec("p", chips=8)], jobs, scheduler="fifo", horizon_hours=10.0, seed_seq=SEED)


def test_bad_run_arguments_are_refused() -> None:
    pool = [PoolSpec("p", chips=1)]
    with pytest.raises(ValueError, match="horizon_hours"):
        run(pool, [], scheduler="fifo", horizon_hours=0.0, seed_seq=SEED)
    with pytest.raises(ValueError, match="warmup_hours"):
        run(pool, [], scheduler="fifo", horizon_hours=1.0, warmup_hours=1.0, seed_seq=SEED)
    with pytest.raises(ValueError, match="speed must be > 0"):
        PoolSpec("p", chips=1, speed=0.0)
