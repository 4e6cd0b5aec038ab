"""Mixed-fleet engine speed: one training run, one serving endpoint and a research stream.

Run with ``make bench`` (pytest-benchmark); not part of the test suite. The issue's case: a
4,096-chip H100 fleet for 90 days holding a 70B training run on a quarter of it, a Llama
3.1 70B endpoint following a daily demand on up to a quarter, and a research job stream
offering half the fleet's chip-hours, under ``priority_preemptive`` (so the endpoint's
peaks evict research jobs). One replication is one :func:`accelsim.simulate` run (``runs=1``:
validation, the training run's two analytic passes, the serving plan, the DES and the
metrics), timed in CPU seconds. The reference, measured in the same process, is the
research stream alone on the same fleet (a stream scenario under the same scheduler), so
the ratio says what the other workloads and the attribution cost on top of the stream.

Growth: the same mix scaled with the fleet (every workload's chips and the stream's rate in
proportion) at 1,024, 2,048 and 4,096 chips for 90 days, and the 4,096-chip fleet for 22.5,
45 and 90 days; the exponent is the least-squares slope of log seconds on log size (or
horizon). Jobs grow in proportion to chips x days, so an exponent near 1 is linear per job.

Measured (CPU seconds, one replication, two cores shared with other work at a load average
of ~6, so +-30 % run to run), 2026-11-25: the mix on 4,096 chips for 90 days 6.96 s
(128,361 research jobs; the 70B run finishes in 48.9 d; the endpoint holds its plan's 14
replicas, SLO attainment 1.000; fleet utilisation 0.647); the research stream alone 3.54 s
(1.97x). Seconds grow as chips^0.61 (1,024: 2.98 s, 2,048: 3.57 s, 4,096: 6.96 s) and
days^1.05 (22.5 d: 1.62 s, 45 d: 3.10 s, 90 d: 6.96 s). A profile (cProfile, 1,024 chips,
90 days) puts ~57 % of the time in ``priority_preemptive`` sorting its queue at every event
(the same scheduler the stream alone runs, on a longer queue here since the training run and
the endpoint hold chips) and ~5 % in the mix's own code (``Holdings``, the job classes, the
training passes, the serving plan, the per-workload metrics).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

import accelsim as acs

pytestmark = pytest.mark.bench

SIZES = np.array([1, 2, 4, 8, 16, 64, 256])
WEIGHTS = [0.5, 0.1, 0.1, 0.2, 0.05, 0.04, 0.01]
MEAN_WORK_HOURS = 4.0
RESEARCH_LOAD = 0.5
"""Research chip-hours offered per hour, as a share of the fleet's chips."""
IN_SERVICE = acs.Assumptions(lead_time_days=0.0)
"""No lead time: a stream scenario's pools are otherwise delivered after it (the mix's fleet
is in service from time 0), and the stream alone would queue its first days' jobs."""


def _research(chips: int) -> acs.JobStream:
    mean_chips = float(SIZES @ np.array(WEIGHTS))
    rate = RESEARCH_LOAD * chips / (mean_chips * MEAN_WORK_HOURS)
    return acs.JobStream(
        interarrival_hours=acs.Exponential(mean=1.0 / rate),
        chips=acs.Choice(values=SIZES.tolist(), weights=WEIGHTS),
        duration_hours=acs.LogNormal(low=0.5, high=14.0),
        name="research",
    )


def _fleet(chips: int) -> list[acs.Pool]:
    return [acs.Pool(chip="h100-sxm", count=chips, provider="aws")]


def mixed(chips: int, days: float) -> acs.Scenario:
    """The issue's mix on ``chips`` H100s for ``days``."""
    train = acs.TrainingRun(params=70e9, tokens=1.4e12, chips=chips // 4, name="llm")
    serve = acs.Serving(
        model="llama-3.1-70b",
        precision="fp8",
        rate_rps=0.05 * chips,
        daily_profile=[0.4] * 8 + [1.6] * 8 + [1.0] * 8,
        input_tokens=acs.LogNormal(low=200, high=4000),
        output_tokens=300,
        slo=acs.SLO(ttft_ms=2000, tpot_ms=100),
        chips_per_replica=8,
        scaling="follow_demand",
        chips=chips // 4,
        horizon_days=days,
        name="chat",
    )
    return acs.Scenario(
        name=f"org-{chips}",
        fleet=_fleet(chips),
        workloads=[train, serve, _research(chips)],
        horizon_days=days,
        scheduler="priority_preemptive",
        assumptions=IN_SERVICE,
    )


def stream_only(chips: int, days: float) -> acs.Scenario:
    """The research stream alone on the same fleet (the reference)."""
    work = _research(chips).model_copy(update={"name": None})
    return acs.Scenario(
        name=f"research-{chips}",
        fleet=_fleet(chips),
        workload=work,
        horizon_days=days,
        scheduler="priority_preemptive",
        assumptions=IN_SERVICE,
    )


def _seconds(scenario: acs.Scenario) -> tuple[float, acs.Result]:
    start = time.process_time()
    res = acs.simulate(scenario, runs=1, seed=17, progress=False)
    return time.process_time() - start, res


def _slope(points: Sequence[tuple[float, float]]) -> float:
    """Least-squares slope of log y on log x."""
    x, y = np.log(np.array(points)).T
    return float(np.polyfit(x, y, 1)[0])


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_mixed_fleet_4096_chips_90_days(benchmark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """``.venv/bin/python -m pytest benchmarks/bench_mixed_fleet.py -q -p no:cacheprovider
    -o addopts="" -o testpaths=benchmarks -o python_files="bench_*.py" -s``"""
    seconds, res = _seconds(mixed(4096, 90.0))
    alone, ref = _seconds(stream_only(4096, 90.0))
    by_size = [(c, _seconds(mixed(c, 90.0))[0]) for c in (1024, 2048)] + [(4096, seconds)]
    by_days = [(d, _seconds(mixed(4096, d))[0]) for d in (22.5, 45.0)] + [(90.0, seconds)]
    size_exp, days_exp = _slope(by_size), _slope(by_days)
    for key in res.metrics:
        assert np.isfinite(res.samples(key)).all(), key
    benchmark.extra_info.update(
        {
            "s/replication": round(seconds, 2),
            "stream alone s": round(alone, 2),
            "size exponent": round(size_exp, 2),
            "horizon exponent": round(days_exp, 2),
        }
    )
    benchmark.pedantic(_seconds, args=(mixed(1024, 22.5),), rounds=1, iterations=1)
    with capsys.disabled():
        print(
            f"\nmixed fleet, 4,096 H100 for 90 days (training + serving + research): "
            f"{seconds:.2f} s CPU per replication; the research stream alone "
            f"{alone:.2f} s ({seconds / alone:.2f}x); "
            f"{res.mean('research.jobs_arrived'):,.0f} research jobs, "
            f"{res.mean('research.interruptions'):,.0f} evicted or interrupted "
            f"(alone: {ref.mean('jobs_arrived'):,.0f} jobs)"
        )
        print(
            f"  llm finished {res.mean('llm.finished'):.0f} in "
            f"{res.mean('llm.time_to_train_days'):.1f} d; chat SLO attainment "
            f"{res.mean('chat.slo_attainment'):.3f} on {res.mean('chat.replicas_mean'):.1f} "
            f"replicas (plan {res.mean('chat.replicas_planned_mean'):.1f}); fleet "
            f"utilisation {res.mean('utilization'):.3f}"
        )
        print(
            f"  seconds ~ chips^{size_exp:.2f} "
            f"({', '.join(f'{c}: {t:.2f} s' for c, t in by_size)}), "
            f"~ days^{days_exp:.2f} ({', '.join(f'{d:g} d: {t:.2f} s' for d, t in by_days)})"
        )
