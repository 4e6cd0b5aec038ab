"""Second code paths and hand-written root loops, each against its alternative, same process.

Run with ``make bench``. Issue 27 keeps a second implementation of a rule only where a study a
user runs by default takes it and is measurably faster with it, and a hand-written Newton or
bisection loop only where scipy's root finding makes a user study measurably slower. Each
case below times a whole study both ways, interleaved round by round (CPU time,
``time.process_time``), and prints the median over the rounds of the round's ratio
(alternative / kept) with its 10th-90th percentile range, and each side's best: on this
2-core VM shared with other processes a ratio of two bests can come from different
stretches of load, a paired ratio cannot. "Measurably" slower or faster means the whole
10-90 % range of the paired ratio lies on one side of 1 ("other slower": the kept path wins
at least 9 rounds in 10).

The studies (each what a user runs by default for that workload):

- **training**: ``examples/llama70b_h100_aws.yaml``, 16,384 runs in-process
  (``acs.simulate``), every input from its prior; its instability counts invert the Poisson
  CDF at means of 0.01-140 (98 % at most 16).
- **serving**: ``bench_serving_fast.py``'s fixed fleet (Llama 3.1 70B FP8 on 64 H100, 30
  days hourly), 16,384 runs through ``simulate_serving_fast``.
- **serving, MoE**: the same with Mixtral 8x7B (the only serving study whose decode fixed
  point takes the MoE memory root's Newton steps past the first).
- **serving, disaggregated**: ``bench_serving_disaggregated.py``'s study, 16,384 runs (the
  only study whose TTFT mixture has more cells than one block of the mixture's cache
  blocking).

The alternatives are kept here, as references: the removed or replaced code, or scipy.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from bench_serving_disaggregated import _scenario as _disaggregated_scenario
from bench_serving_fast import _scenario as _serving_scenario
from scipy import stats

import accelsim as acs
from accelsim import catalog as _catalog
from accelsim.engines import simulate_serving_fast
from accelsim.models import _poisson, instability
from accelsim.models._roots import newton_roots
from accelsim.models.serving import _decode

CAT = _catalog.builtin_catalog()
ROOT = Path(__file__).resolve().parent.parent
RUNS = 16_384
ROUNDS = 9


@contextmanager
def _patched(module: Any, name: str, value: Any) -> Iterator[None]:
    old = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, old)


def _paired(
    study: Callable[[], object],
    kept: Callable[[], AbstractContextManager[Any]],
    other: Callable[[], AbstractContextManager[Any]],
) -> dict[str, float]:
    """CPU seconds of ``study`` under the ``kept`` and the ``other`` context, interleaved
    (which goes first alternates): best of each and the paired ratio other / kept."""
    seconds: dict[str, list[float]] = {"kept": [], "other": []}
    for side in ("kept", "other"):  # warm both
        with (kept if side == "kept" else other)():
            study()
    for i in range(ROUNDS):
        order = ("kept", "other") if i % 2 == 0 else ("other", "kept")
        for side in order:
            with (kept if side == "kept" else other)():
                start = time.process_time()
                study()
                seconds[side].append(time.process_time() - start)
    ratios = np.array(seconds["other"]) / np.array(seconds["kept"])
    return {
        "kept_s": min(seconds["kept"]),
        "other_s": min(seconds["other"]),
        "median": float(np.median(ratios)),
        "p10": float(np.percentile(ratios, 10)),
        "p90": float(np.percentile(ratios, 90)),
    }


def _print(name: str, r: dict[str, float]) -> None:
    if r["p10"] > 1.0:
        verdict = "other slower"
    elif r["p90"] < 1.0:
        verdict = "other faster"
    else:
        verdict = "no measurable difference"
    print(
        f"  {name:58s} kept {r['kept_s'] * 1e3:8.1f} ms  other {r['other_s'] * 1e3:8.1f} ms"
        f"  other/kept {r['median']:.3f} [{r['p10']:.3f}, {r['p90']:.3f}]  {verdict}"
    )


def _training_study() -> None:
    acs.simulate(_TRAINING, runs=RUNS, seed=1)


def _serving_study(s: acs.Scenario) -> Callable[[], object]:
    return lambda: simulate_serving_fast(s, np.random.SeedSequence(1), 0, RUNS, cat=CAT)


def _moe_scenario() -> acs.Scenario:
    """``bench_serving_fast.py``'s fixed fleet serving Mixtral 8x7B on 2 H100 per replica."""
    base = _serving_scenario()
    svc = type(base.workload).model_validate(
        {**base.workload.model_dump(), "model": "mixtral-8x7b", "chips_per_replica": 2}
    )
    return acs.Scenario(name="bench-moe", workload=svc, fleet=base.fleet)


_TRAINING = acs.load_scenario(ROOT / "examples" / "llama70b_h100_aws.yaml")


def _without_small_mean_search(q: Any, mean: Any) -> np.ndarray:
    """``poisson_quantile`` with every quantile from the guess and check."""
    q_all, m_all = np.broadcast_arrays(np.asarray(q, float), np.asarray(mean, float))
    out = np.zeros(q_all.shape)
    at = np.flatnonzero((q_all > 0.0) & (m_all > 0.0))
    out.reshape(-1)[at] = _poisson._guess_and_check(q_all.ravel()[at], m_all.ravel()[at])
    return out


@pytest.mark.bench
def test_poisson_quantile_paths(capsys: pytest.CaptureFixture[str]) -> None:
    """The small-mean search and the guess and check against the guess alone and scipy."""
    rows = {
        "training: no small-mean search (guess and check only)": _paired(
            _training_study,
            nullcontext,
            lambda: _patched(instability, "poisson_quantile", _without_small_mean_search),
        ),
        "training: scipy.stats.poisson.ppf": _paired(
            _training_study,
            nullcontext,
            lambda: _patched(instability, "poisson_quantile", stats.poisson.ppf),
        ),
        "serving: no small-mean search": _paired(
            _serving_study(_serving_scenario()),
            nullcontext,
            lambda: _patched(_decode, "poisson_quantile", _without_small_mean_search),
        ),
        "serving: scipy.stats.poisson.ppf": _paired(
            _serving_study(_serving_scenario()),
            nullcontext,
            lambda: _patched(_decode, "poisson_quantile", stats.poisson.ppf),
        ),
    }
    with capsys.disabled():
        print(f"\nPoisson quantile, {RUNS:,} runs, CPU time, {ROUNDS} paired rounds")
        for name, r in rows.items():
            _print(name, r)
    assert all(np.isfinite(r["median"]) for r in rows.values())


def _sorted_double(flat_y: np.ndarray, flat_w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``_mixture._sorted_single`` in double precision: an argsort and two gathers (the
    single-precision path packs node and weight into one 64-bit sort key instead)."""
    y = np.maximum(flat_y, 0.0) + 0.0
    order = np.argsort(y, axis=-1)
    nodes = np.take_along_axis(y, order, axis=-1).astype(np.float64)
    weights = np.take_along_axis(np.broadcast_to(flat_w, y.shape), order, axis=-1)
    return np.ascontiguousarray(nodes.T), np.ascontiguousarray(weights.T, dtype=np.float64)


@contextmanager
def _double_precision() -> Iterator[None]:
    from accelsim.models.serving import _first_token, _mixture, _prefill_queue

    with ExitStack() as stack:
        for module in (_mixture, _prefill_queue, _first_token):
            stack.enter_context(_patched(module, "_SINGLE", np.float64))
        stack.enter_context(_patched(_mixture, "_sorted_single", _sorted_double))
        yield


@pytest.mark.bench
def test_single_precision_and_cache_blocks(capsys: pytest.CaptureFixture[str]) -> None:
    """float32 nodes and the two cache blockings against double precision / one block."""
    from accelsim.engines.serving import _usage

    serving = _serving_study(_serving_scenario())
    rows = {
        "serving: double precision TTFT mixture and prompt pieces": _paired(
            serving, nullcontext, _double_precision
        ),
        "serving: latency table in one block (RUN_BLOCK = all runs)": _paired(
            serving, nullcontext, lambda: _patched(_usage, "RUN_BLOCK", 1 << 40)
        ),
        "serving: hourly arrays in one block (_SUB_RUNS = all runs)": _paired(
            serving, nullcontext, lambda: _patched(_usage, "_SUB_RUNS", 1 << 40)
        ),
    }
    with capsys.disabled():
        print(f"\nsingle precision and cache blocks, {RUNS:,} runs, CPU time, {ROUNDS} rounds")
        for name, r in rows.items():
            _print(name, r)
    assert all(np.isfinite(r["median"]) for r in rows.values())


def _blocked_mixture(block: int) -> Callable[..., list[np.ndarray]]:
    """``wait_mixture_quantiles`` taken ``block`` cells at a time (the blocking it had)."""
    from accelsim.models.serving import _mixture

    whole = _mixture.wait_mixture_quantiles

    def blocked(nodes: Any, weights: Any, rho: Any, phases: Any, levels: Any) -> list[np.ndarray]:
        p1, r1, r2 = (np.asarray(v) for v in phases)
        shape = np.broadcast_shapes(
            np.shape(nodes), np.shape(weights), (*np.shape(rho), 1), (*p1.shape, 1)
        )
        n, rest = shape[-1], shape[:-1]
        y = np.broadcast_to(nodes, shape).reshape(-1, n)
        w = np.broadcast_to(weights, shape).reshape(-1, n)
        cell = [np.broadcast_to(np.asarray(v), rest).reshape(-1) for v in (rho, p1, r1, r2)]
        qs = [np.broadcast_to(np.asarray(q, float), rest).reshape(-1) for q in levels]
        out = [np.empty(y.shape[0]) for _ in levels]
        for lo in range(0, y.shape[0], block):
            part = slice(lo, lo + block)
            got = whole(
                y[part], w[part], cell[0][part], tuple(c[part] for c in cell[1:]),
                tuple(q[part] for q in qs),
            )  # fmt: skip
            for dest, value in zip(out, got, strict=True):
                dest[part] = value
        return [v.reshape(rest) for v in out]

    return blocked


@pytest.mark.bench
def test_mixture_cache_blocks(capsys: pytest.CaptureFixture[str]) -> None:
    """The TTFT mixture in one pass against blocks of 8,192 cells (what it had)."""
    from accelsim.models.serving import _disaggregated, _first_token

    def blocked() -> AbstractContextManager[Any]:
        stack = ExitStack()
        for module in (_first_token, _disaggregated):
            stack.enter_context(_patched(module, "wait_mixture_quantiles", _blocked_mixture(8192)))
        return stack

    rows = {
        "disaggregated: TTFT mixture in blocks of 8,192 cells": _paired(
            _serving_study(_disaggregated_scenario(True)), nullcontext, blocked
        ),
    }
    with capsys.disabled():
        print(f"\nTTFT mixture blocks, {RUNS:,} runs, CPU time, {ROUNDS} rounds")
        for name, r in rows.items():
            _print(name, r)
    assert all(np.isfinite(r["median"]) for r in rows.values())


def _loop_concave_root(
    weights: np.ndarray,
    intercept: np.ndarray,
    slope: np.ndarray,
    untouched: np.ndarray,
    token_rate: np.ndarray,
) -> np.ndarray:
    """The hand-written loop ``_decode._concave_root`` replaced: 6 Newton steps, no test."""
    log_untouched = np.log(np.maximum(untouched, 1e-300))
    slope_m = np.where(slope < 0.0, slope, -1.0)
    t = (weights + intercept) / -slope_m
    for _ in range(6):
        power = np.power(untouched, 1.0 + token_rate * t)
        excess = weights * (1.0 - power) + intercept + slope_m * t
        t = t - excess / (slope_m - weights * log_untouched * power * token_rate)
    return np.asarray(t, dtype=float)


def _scipy_segment_root(
    a: np.ndarray, b: np.ndarray, r1: np.ndarray, r2: np.ndarray, target: np.ndarray
) -> np.ndarray:
    """``_mixture._segment_root`` by ``scipy.optimize.newton`` (vectorised, from 0, on
    ``v = τ·min(r₁, r₂)``, tolerance 1e-12, 50 steps at most); the steps are not clamped,
    so cells whose root is below 0 (unused by the caller) are floored at the end."""
    slow = np.maximum(np.minimum(r1, r2), 1e-300)

    def value(v: np.ndarray, *args: np.ndarray) -> np.ndarray:
        a_, b_, r1_, r2_, t_, s_ = args
        tau = np.maximum(v, 0.0) / s_
        return np.asarray(
            t_ + np.log(np.maximum(a_ * np.exp(-r1_ * tau) + b_ * np.exp(-r2_ * tau), 1e-300))
        )

    def slope(v: np.ndarray, *args: np.ndarray) -> np.ndarray:
        a_, b_, r1_, r2_, _, s_ = args
        tau = np.maximum(v, 0.0) / s_
        ea, eb = a_ * np.exp(-r1_ * tau), b_ * np.exp(-r2_ * tau)
        return np.asarray(
            -np.maximum((r1_ * ea + r2_ * eb) / np.maximum(ea + eb, 1e-300), 1e-300) / s_
        )

    with np.errstate(over="ignore", under="ignore"):
        v = newton_roots(value, slope, 0.0, (a, b, r1, r2, target, slow), tol=1e-12, maxiter=50)
    return np.maximum(v, 0.0) / slow


@pytest.mark.bench
def test_root_finding_loops(capsys: pytest.CaptureFixture[str]) -> None:
    """scipy's root finding (kept) against the hand-written loops it replaced (other)."""
    moe = _serving_study(_moe_scenario())
    from accelsim.models.serving import _mixture

    rows = {
        "serving, MoE: decode concave roots, hand loop (6 steps)": _paired(
            moe, nullcontext, lambda: _patched(_decode, "_concave_root", _loop_concave_root)
        ),
        "serving: TTFT segment root by scipy.optimize.newton": _paired(
            _serving_study(_serving_scenario()),
            nullcontext,
            lambda: _patched(_mixture, "_segment_root", _scipy_segment_root),
        ),
    }
    with capsys.disabled():
        print(f"\nroot finding, {RUNS:,} runs, CPU time, {ROUNDS} rounds")
        for name, r in rows.items():
            _print(name, r)
    assert all(np.isfinite(r["median"]) for r in rows.values())
