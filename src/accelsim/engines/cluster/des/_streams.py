"""Synthetic job streams: jobs drawn lazily from distributions, in blocks.

:func:`poisson_stream` yields :class:`~accelsim.engines.cluster.des._specs.JobSpec` objects one at a
time (so :func:`~accelsim.engines.cluster.des.run` holds only the next one), drawing inter-arrival
times, sizes, work and priorities in blocks of :data:`BLOCK` from one addressed stream per
attribute: adding a priority sampler, say, never changes the arrival times or durations.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from accelsim.engines.cluster.des._specs import JobSpec, Sampler
from accelsim.errors import AccelsimError
from accelsim.seeding import stream

BLOCK = 4096
"""Draws per block and attribute."""
MAX_JOBS = 1_000_000
"""Default cap on the jobs one stream submits in a run: a stated bound, not a sourced figure,
so that no input (a vanishing inter-arrival time) can hang a study."""


def _blocks(sampler: Sampler, rng: np.random.Generator, what: str) -> Iterator[np.ndarray]:
    while True:
        block = np.asarray(sampler(rng, BLOCK))
        if block.shape != (BLOCK,):
            raise ValueError(f"the {what} sampler returned shape {block.shape}, not ({BLOCK},)")
        yield block


def poisson_stream(
    seed_seq: np.random.SeedSequence,
    *,
    interarrival_hours: Sampler,
    chips: Sampler,
    work_hours: Sampler,
    priority: Sampler | None = None,
    until_hours: float,
    template: JobSpec | None = None,
    key: str = "jobs",
    first_job_id: int = 0,
    max_jobs: int = MAX_JOBS,
) -> Iterator[JobSpec]:
    """Yield jobs whose inter-arrival times, sizes, work and priorities are drawn iid.

    With exponential inter-arrival times this is a Poisson stream; any other sampler gives
    a renewal stream. The first job arrives one inter-arrival time after 0.

    Parameters
    ----------
    seed_seq : numpy.random.SeedSequence
        Root; attribute ``a`` is drawn from ``stream(seed_seq, "des", key, a)``.
    interarrival_hours : Sampler
        Draws times between submissions (>= 0). [h]
    chips : Sampler
        Draws chips per job (rounded to the nearest integer, >= 1). [chips]
    work_hours : Sampler
        Draws failure-free compute on a speed-1 pool (> 0). [h]
    priority : Sampler or None
        Draws priorities (rounded to integers); ``None``: all 0.
    until_hours : float
        Stop before the first submission at or after this time. [h]
    template : JobSpec or None
        Supplies the other fields (pools, whole_domains, checkpointing, restart,
        preemptible); its ``estimate_hours`` is not copied (estimates are exact).
    key : str
        Names this stream among others under the same root.
    first_job_id : int
        Id of the first job; the next ones count up.
    max_jobs : int
        Most jobs to submit before ``until_hours``; one more raises
        :class:`~accelsim.errors.AccelsimError` naming the cap. [count]

    Yields
    ------
    JobSpec
        In order of submission.

    Examples
    --------
    >>> one = lambda rng, n: np.ones(n)
    >>> exp = lambda rng, n: rng.exponential(2.0, n)
    >>> jobs = list(poisson_stream(np.random.SeedSequence(3), interarrival_hours=exp,
    ...                            chips=one, work_hours=one, until_hours=100.0))
    >>> 30 < len(jobs) < 70, all(j.submit_hours < 100.0 for j in jobs)
    (True, True)
    """
    t = template or JobSpec(0, 0.0, 1, 1.0)
    gaps = _blocks(interarrival_hours, stream(seed_seq, "des", key, "interarrival"), "interarrival")
    sizes = _blocks(chips, stream(seed_seq, "des", key, "chips"), "chips")
    works = _blocks(work_hours, stream(seed_seq, "des", key, "work_hours"), "work_hours")
    prios = (
        None
        if priority is None
        else _blocks(priority, stream(seed_seq, "des", key, "priority"), "priority")
    )
    now = 0.0
    job_id = first_job_id
    while True:
        gap_block = next(gaps)
        if np.any(gap_block < 0):
            raise ValueError("the interarrival sampler returned a negative time")
        submit = now + np.cumsum(gap_block)
        size_block = np.rint(next(sizes)).astype(np.int64).tolist()
        work_block = np.asarray(next(works), dtype=float).tolist()
        prio_block = (
            [0] * BLOCK if prios is None else np.rint(next(prios)).astype(np.int64).tolist()
        )
        for s, c, w, pr in zip(submit.tolist(), size_block, work_block, prio_block, strict=True):
            if s >= until_hours:
                return
            if job_id - first_job_id >= max_jobs:
                raise AccelsimError(
                    f"the job stream submitted {max_jobs:,} jobs by {s:.3g} h, before the "
                    f"horizon at {until_hours:.3g} h: more than the cap of {max_jobs:,} jobs "
                    f"per run; lengthen interarrival_hours or shorten horizon_days"
                )
            yield JobSpec(
                job_id,
                s,
                c,
                w,
                pr,
                t.pools,
                None,
                t.whole_domains,
                t.checkpoint_interval_hours,
                t.checkpoint_write_hours,
                t.restart_hours,
                t.preemptible,
            )
            job_id += 1
        now = float(submit[-1])


__all__ = ["BLOCK", "MAX_JOBS", "poisson_stream"]
