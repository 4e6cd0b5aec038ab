"""Synthetic job streams: lazy, reproducible, one addressed random stream per attribute."""

from __future__ import annotations

import math

import numpy as np
import pytest

from accelsim._typing import FloatArray
from accelsim.engines.cluster.des import JobSpec, poisson_stream
from accelsim.seeding import as_seed_sequence


def _exp(rng: np.random.Generator, n: int) -> FloatArray:
    return rng.exponential(0.5, n)


def _sizes(rng: np.random.Generator, n: int) -> FloatArray:
    return rng.choice([1.0, 2.0, 8.0], n)


def _work(rng: np.random.Generator, n: int) -> FloatArray:
    return rng.lognormal(0.0, 1.0, n)


def _prio(rng: np.random.Generator, n: int) -> FloatArray:
    return rng.integers(0, 3, n).astype(float)


def test_stream_rate_matches_the_interarrival_mean() -> None:
    """~20k jobs at rate 2/h over 10,000 h: the count is Poisson, within 5 SE of 20,000."""
    jobs = list(
        poisson_stream(
            as_seed_sequence(1),
            interarrival_hours=_exp,
            chips=_sizes,
            work_hours=_work,
            until_hours=10_000.0,
        )
    )
    assert abs(len(jobs) - 20_000) <= 5 * math.sqrt(20_000)
    submits = np.array([j.submit_hours for j in jobs])
    assert np.all(np.diff(submits) >= 0)
    assert submits[-1] < 10_000.0
    assert [j.job_id for j in jobs[:3]] == [0, 1, 2]
    assert {j.chips for j in jobs} == {1, 2, 8}


def test_adding_priorities_leaves_times_sizes_and_work_unchanged() -> None:
    """Each attribute has its own addressed stream, so a new sampler shifts no other draws."""

    def key(with_prio: bool) -> list[tuple[float, int, float]]:
        stream = poisson_stream(
            as_seed_sequence(3),
            interarrival_hours=_exp,
            chips=_sizes,
            work_hours=_work,
            priority=_prio if with_prio else None,
            until_hours=3_000.0,
        )
        return [(j.submit_hours, j.chips, j.work_hours) for j in stream]

    assert key(True) == key(False)


def test_template_supplies_the_other_fields() -> None:
    template = JobSpec(
        0, 0.0, 1, 1.0, pools=(1,), whole_domains=True, restart_hours=0.2, estimate_hours=9.0
    )
    job = next(
        poisson_stream(
            as_seed_sequence(0),
            interarrival_hours=_exp,
            chips=_sizes,
            work_hours=_work,
            until_hours=10.0,
            template=template,
        )
    )
    assert (job.pools, job.whole_domains, job.restart_hours) == ((1,), True, 0.2)
    assert job.estimate_hours is None  # estimates are exact: never one number for every job


def test_a_sampler_of_the_wrong_shape_is_refused() -> None:
    with pytest.raises(ValueError, match="chips sampler returned shape"):
        next(
            poisson_stream(
                as_seed_sequence(0),
                interarrival_hours=_exp,
                chips=lambda rng, n: np.ones(3),
                work_hours=_work,
                until_hours=10.0,
            )
        )
