"""Throughput of the analytic engine (runs/s) beside bare numpy references, same process.

Run with ``make bench``. Two cases: 1,024 chips for 30 days (~15 interruptions per run) and
16,384 chips for 60 days (~580), at 2e-5 failures per chip-hour; every other input is drawn
from its prior, as in a real study. Timed in steady state (each callable ``BACK_TO_BACK``
times in a row, see ``_best_runs_per_s``), interleaved and best of ``REPEATS`` rounds:

- the **pipeline**: ``acs.simulate`` of ``RUNS`` runs -- draw every input, engineering and
  calendar phases, failures (exact), usage and the cost breakdown -- in-process, so one
  chunk of 4 blocks taken in one vectorised pass
  (``accelsim.study._chunks.ANALYTIC_CHUNK_BLOCKS``);
  the page faults of one more study after it are printed (a study that faults its memory
  in again pays ~3-4 us a page on this VM; accelsim no longer tunes the allocator for it);
- its **failure sampler** alone (``sample_completion_hours``) on the pipeline's own drawn
  work, checkpoint interval, write, restart and rate per run, one call per block of 4,096
  runs as the engine makes them: the part of the pipeline that samples completion times;
- the **exact bare reference** (``bare_references.exact_completion_hours``): the least
  numpy that samples the same completion-time law exactly -- negative-binomial failure
  counts per phase, one uniform per failure for its truncated-exponential loss, restarts
  and writes; no inputs, no cost -- on the same per-run parameters and blocks. This is the
  issue's "bare reference that samples only the completion time" like for like, and the one
  the target "pipeline within 2x" applies to. The verdict takes the ratio round by round,
  the pipeline and the reference timed side by side under the same load, and its median
  over the rounds; the ratio of each one's best of all rounds is printed beside it. On this
  2-core VM a process now and then runs slow for a stretch, and the two bests can come from
  different stretches (seen: 2.3x best of each against a 1.7x median, when other processes
  gave 1.5-1.7x on both counts). Before timing, the benchmark checks that it
  samples the pipeline's law: the mean of completion / failure-free time per run agrees
  within 4 standard errors (paired by run, so each pair shares its parameters). It is a
  plain vectorised sampler; the pipeline's own sampler runs ~10-25 % faster (it takes every
  count's law from one transcendental pass per phase, and lays out the losses for the CPU
  cache), so the pipeline's time over its sampler's is printed too: that is the cost of
  everything but the failures, whatever the reference;
- the **approximate bare reference** (``approximate_completion_hours``): NB counts of the
  full segments plus a gamma stand-in for the lost work, at fixed write and restart times.
  About two numbers per run, cheaper than any exact sampler can be but a different law; its
  ratio is printed so that nobody mistakes one reference for the other.

Targets: issue 3's pipeline within 2x of the exact bare reference (met at 16,384 chips; at
1,024 chips the per-run physics issue 14 added -- rollbacks, phases, recovery -- costs more
than the failures themselves, so it is printed NOT met), and >= 50,000 runs/s on one core at
16,384 chips. Issue 12 then allowed the engine up to 2x its own time when that issue was
filed; ``compare_trees.py --against`` an unpacked copy of that commit (f7af520) measures it.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable, Mapping

import numpy as np
import pytest
from bare_references import approximate_completion_hours, exact_completion_hours

import accelsim as acs
from accelsim.engines._inputs import BLOCK_RUNS
from accelsim.models.reliability import sample_completion_hours

RUNS = 4 * BLOCK_RUNS
REPEATS = 7
BACK_TO_BACK = 3
FAILURE_RATE = 2e-5  # per chip-hour, ~ the Llama 3 405B figure (reliability.csv)
WRITE_H, RESTART_H = 0.05, 0.25  # the approximate reference's fixed times
AGREEMENT_SE = 4.0  # a correct pair of samplers differs by more with probability ~6e-5
TARGET_RATIO = 2.0
TARGET_RUNS_PER_S = 50_000


def _scenario(chips: int, days: float) -> acs.Scenario:
    mfu = 0.4
    peak = acs.catalog.chip("h100-sxm").bf16_tflops * 1e12
    flops = days * 86400 * chips * peak * mfu
    return acs.Scenario(
        name=f"bench-{chips}",
        workload=acs.TrainingRun(params=70e9, tokens=2e12, flops=flops),
        fleet=[acs.Pool(chip="h100-sxm", count=chips, provider="aws")],
        assumptions=acs.Assumptions(mfu=mfu, failure_rate_per_chip_hour=FAILURE_RATE),
    )


def _either(inputs: Mapping[str, np.ndarray], name: str) -> np.ndarray:
    """The draw of ``assumptions.<name>``, or of the frontier technique's prior (a
    frontier-size run draws ``priors.frontier_<name>`` under its own name)."""
    return inputs.get(f"assumptions.{name}", inputs.get(f"priors.frontier_{name}", np.zeros(0)))


def _failure_parameters(res: acs.Result, chips: int) -> tuple[np.ndarray, ...]:
    """Per run: (work, interval, write, restart, rate) as the pipeline drew them."""
    inputs = res.inputs
    rate = chips * (
        inputs["assumptions.failure_rate_per_chip_hour"]
        + inputs["assumptions.spot_preemptions_per_hour"]
    )
    return (
        res.samples("compute_days") * 24.0,
        res.samples("checkpoint_interval_hours"),
        _either(inputs, "checkpoint_write_hours"),
        _either(inputs, "restart_hours"),
        rate,
    )


def _per_block(sample: Callable[..., object], params: tuple[np.ndarray, ...]) -> None:
    """``sample(rng, *params)`` on each block of BLOCK_RUNS runs, as the engine calls it."""
    rng = np.random.default_rng(3)
    for first in range(0, RUNS, BLOCK_RUNS):
        sample(rng, *(p[first : first + BLOCK_RUNS] for p in params))


def _best_runs_per_s(
    timed: dict[str, Callable[[], object]],
) -> tuple[dict[str, float], dict[str, list[float]]]:
    """Runs/s of each callable in steady state: best of REPEATS rounds, interleaved so that
    load drifts hit all alike, each round running each callable BACK_TO_BACK times. Also
    each round's best seconds per callable, so that ratios can be taken round by round.

    Back to back, because the first call after another callable's work pays for that work's
    memory: glibc returns freed heap to the OS and the next call faults it in again, at
    ~3-4 us a page on the benchmark machine (a VM), ~0.1 us a run for the pipeline here.
    Which callable ran just before is an artefact of the interleaving: a study run after a
    study (a sweep, a notebook) starts warm and faults nothing (measured: 0 minor faults a
    call), as do the references when they run after themselves.
    """
    rounds: dict[str, list[float]] = {name: [] for name in timed}
    for _ in range(REPEATS):
        for name, fn in timed.items():
            seconds = np.inf
            for _ in range(BACK_TO_BACK):
                start = time.perf_counter()
                fn()
                seconds = min(seconds, time.perf_counter() - start)
            rounds[name].append(seconds)
    return {name: RUNS / min(s) for name, s in rounds.items()}, rounds


@pytest.mark.bench
@pytest.mark.parametrize(("chips", "days"), [(1024, 30.0), (16384, 60.0)])
def test_analytic_engine_vs_bare_references(chips: int, days: float) -> None:
    scenario = _scenario(chips, days)
    acs.simulate(scenario, runs=BLOCK_RUNS, seed=0)  # warm caches (catalog, scipy)
    res = acs.simulate(scenario, runs=RUNS, seed=1)
    params = _failure_parameters(res, chips)
    work_h = params[0]

    # Same law: completion / failure-free time, pipeline vs exact reference, paired by run.
    # rollbacks (instability_days) are no part of the failure law
    failure_days = res.samples("training_days") - res.samples("instability_days")
    completion_h = failure_days * 24.0 * (1.0 - res.inputs["assumptions.badput_fraction"])
    reference_h = exact_completion_hours(np.random.default_rng(2), *params)
    diff = completion_h / work_h - reference_h / work_h
    se = diff.std(ddof=1) / np.sqrt(diff.size)
    assert abs(diff.mean()) <= AGREEMENT_SE * se

    rng = np.random.default_rng(3)
    rates, rounds = _best_runs_per_s(
        {
            "pipeline": lambda: acs.simulate(scenario, runs=RUNS, seed=1),
            "sampler": lambda: _per_block(sample_completion_hours, params),
            "exact": lambda: _per_block(exact_completion_hours, params),
            "approximate": lambda: approximate_completion_hours(
                rng,
                days * 24.0,
                np.sqrt(2 * WRITE_H / (chips * FAILURE_RATE)),
                WRITE_H,
                RESTART_H,
                chips * FAILURE_RATE,
                RUNS,
            ),
        }
    )
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    acs.simulate(scenario, runs=RUNS, seed=1)  # a study after a study, an earlier result held
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    pipeline = rates["pipeline"]
    best_ratio = rates["exact"] / pipeline
    # The verdict's ratio: round by round (each round's pipeline and reference timed side by
    # side, under the same load), the median over rounds.
    round_ratios = np.array(rounds["pipeline"]) / np.array(rounds["exact"])
    exact_ratio = float(np.median(round_ratios))
    sampler_ratio = rates["sampler"] / pipeline
    approx_ratio = rates["approximate"] / pipeline
    lines = [
        f"\n{chips:,} chips, {days:.0f} d: {res.mean('interruptions'):.0f} interruptions per "
        f"run; {RUNS:,} runs, best of {REPEATS} rounds x {BACK_TO_BACK} back to back, "
        "one process",
        f"  pipeline (inputs, phases, failures, usage, cost)  {pipeline:>12,.0f} runs/s"
        f"  ({faults} page faults in a study after a study)",
        f"  its failure sampler alone, same parameters        {rates['sampler']:>12,.0f} runs/s"
        f"  -> pipeline {sampler_ratio:.2f}x its time (the rest adds {sampler_ratio - 1:.0%})",
        f"  exact bare reference (same law)                   {rates['exact']:>12,.0f} runs/s"
        f"  -> pipeline {exact_ratio:.2f}x its time, median of {REPEATS} paired rounds "
        f"(range {round_ratios.min():.2f}-{round_ratios.max():.2f}x; best of each "
        f"{best_ratio:.2f}x) (issue 3's target <= {TARGET_RATIO:.0f}x: "
        f"{'met' if exact_ratio <= TARGET_RATIO else 'NOT met'}; issue 12 since allows the "
        "engine up to 2x its own time at filing: benchmarks/compare_trees.py measures that)",
        f"  approximate bare reference (NB + gamma, other law){rates['approximate']:>12,.0f} "
        f"runs/s  -> pipeline {approx_ratio:.1f}x its time (for comparison only)",
        f"  same law: mean completion / failure-free time {np.mean(completion_h / work_h):.5f} "
        f"(pipeline) vs {np.mean(reference_h / work_h):.5f} (exact reference), "
        f"difference {diff.mean() / se:+.1f} SE",
    ]
    if chips == 16384:
        met = "met" if pipeline >= TARGET_RUNS_PER_S else "NOT met"
        lines.append(f"  target >= {TARGET_RUNS_PER_S:,} runs/s on one core: {met}")
    print("\n".join(lines))
    if chips == 16384:
        assert res.mean("interruptions") > 100  # hundreds of interruptions per run
