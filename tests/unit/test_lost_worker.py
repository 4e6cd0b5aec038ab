"""A Dask worker that dies mid-study: its chunk is retried elsewhere and counted once.

The fault is injected from outside the library: ``executor=`` gets a thin stand-in for the
Dask client whose executor wraps every submitted chunk in :func:`_die_once`, which kills
its own worker process (SIGKILL) the first time it runs the chosen chunk.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

import accelsim as acs
from accelsim.engines._inputs import BLOCK_RUNS

CHUNKS = 6
RUNS = CHUNKS * BLOCK_RUNS
DOOMED_START = 2 * BLOCK_RUNS
"""The chunk whose first attempt kills its worker: runs [8192, 12288)."""


def scenario() -> acs.Scenario:
    return acs.Scenario(
        name="lost-worker",
        workload=acs.TrainingRun(params=7e9, tokens=1e11),
        fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")],
        assumptions=acs.Assumptions(mfu=acs.Uniform(low=0.3, high=0.5)),
    )


def _die_once(
    marker: str, doomed_start: int, fn: Callable[..., Any], *args: Any, **kwargs: Any
) -> Any:
    """Run ``fn(*args)`` on a Dask worker, but first kill the worker if this is the doomed
    chunk (``args[1]`` is the chunk's first run) and ``marker`` does not exist yet.

    The marker is created atomically (``O_EXCL``) before the kill and records the dying
    worker's address, pid and task key, so exactly one attempt dies and the test can check
    that the scheduler saw it go.
    """
    if args[1] == doomed_start:
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            pass
        else:
            from distributed import get_worker

            worker = get_worker()
            note = {
                "address": worker.address,
                "pid": os.getpid(),
                "key": str(worker.get_current_task()),
            }
            os.write(fd, json.dumps(note).encode())
            os.fsync(fd)
            os.close(fd)
            os.kill(os.getpid(), signal.SIGKILL)
    return fn(*args, **kwargs)


class _FaultyExecutor(Executor):
    """A ``concurrent.futures`` executor that wraps every task in :func:`_die_once`."""

    def __init__(self, inner: Executor, marker: Path) -> None:
        self.inner = inner
        self.marker = marker

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        return self.inner.submit(_die_once, str(self.marker), DOOMED_START, fn, *args, **kwargs)


class _FaultyClient:
    """Stands in for a Dask client: ``get_executor`` is all the runner asks of one."""

    def __init__(self, client: Any, marker: Path) -> None:
        self.client = client
        self.marker = marker
        self.asked: list[dict[str, Any]] = []

    def get_executor(self, **kwargs: Any) -> Executor:
        self.asked.append(kwargs)
        return _FaultyExecutor(self.client.get_executor(**kwargs), self.marker)


@pytest.mark.slow
def test_a_killed_workers_chunk_is_retried_and_counted_once(tmp_path: Path) -> None:
    """A 6-chunk study with a Parquet store on a 2-worker, 2-process Dask LocalCluster, where
    the worker running chunk 2 for the first time is SIGKILLed.

    The scheduler marks the lost task suspicious and reruns it on a live worker (it gives
    up only after ``distributed.scheduler.allowed-failures`` = 3 deaths), so the study must
    finish with a result bit-identical to an uninterrupted in-process study of the same
    seed, one part file per chunk, each run exactly once in the store, and progress counting
    every chunk once, up to the total. The fault must really have fired: the marker exists,
    the scheduler logged the unexpected removal of the dying worker with the doomed task
    among those it was processing, and the dead worker's address and pid are gone.
    """
    import dask
    from distributed import Client, LocalCluster

    assert dask.config.get("distributed.scheduler.allowed-failures") >= 1, "no retry allowed"
    marker = tmp_path / "killed.json"
    store = tmp_path / "s.parquet"
    alone = acs.simulate(scenario(), runs=RUNS, seed=11, chunk_runs=BLOCK_RUNS, progress=False)
    calls: list[tuple[int, int]] = []
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0"
        ) as cluster,
        Client(cluster) as client,
    ):
        faulty = _FaultyClient(client, marker)
        res = acs.simulate(
            scenario(),
            runs=RUNS,
            seed=11,
            chunk_runs=BLOCK_RUNS,
            executor=faulty,  # a HasExecutor, like a Dask Client
            store=store,
            progress=lambda *a: calls.append(a),
        )
        assert marker.exists(), "the fault never fired"
        dead = json.loads(marker.read_text())
        events = [e for _, e in client.get_events("all")]
        live_pids = set(client.run(os.getpid).values())
        live = set(client.scheduler_info()["workers"])

    assert faulty.asked == [{"pure": False}]
    removals = [e for e in events if e.get("action") == "remove-worker"]
    assert [e["worker"] for e in removals] == [dead["address"]]
    assert removals[0]["expected"] is False
    assert dead["key"] in removals[0]["processing-tasks"]
    assert dead["address"] not in live
    assert dead["pid"] not in live_pids

    assert res.runs == RUNS
    for m in alone.data:
        np.testing.assert_array_equal(res.samples(m), alone.samples(m), err_msg=m)
    for k in alone.inputs:
        np.testing.assert_array_equal(res.inputs[k], alone.inputs[k], err_msg=k)

    parts = sorted(p.name for p in store.iterdir() if p.name.startswith("part-"))
    assert parts == [f"part-{i:06d}.parquet" for i in range(CHUNKS)]
    assert not [p.name for p in store.iterdir() if p.name.endswith(".tmp")]
    stored_runs = np.sort(pq.read_table(store, columns=["run"]).column("run").to_numpy())
    np.testing.assert_array_equal(stored_runs, np.arange(RUNS))

    assert [d for d, _ in calls] == [BLOCK_RUNS * k for k in range(1, CHUNKS + 1)]
    assert {t for _, t in calls} == {RUNS}

    # the store alone rebuilds the study: resuming it runs nothing and gives the same result
    again = acs.simulate(
        scenario(),
        runs=RUNS,
        seed=11,
        chunk_runs=BLOCK_RUNS,
        store=store,
        resume=True,
        progress=False,
    )
    for m in alone.data:
        np.testing.assert_array_equal(again.samples(m), alone.samples(m), err_msg=m)
