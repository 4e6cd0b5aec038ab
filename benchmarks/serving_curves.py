"""Waits at high load: the serving fast path against published latency-vs-load curves.

Reads ``tests/validation/data/serving_curves.csv`` (one row per curve and load point) and,
per curve:

1. fits ONE number, the chip's serving efficiency, by the same rule on every curve: the
   model's median TPOT p50 at the curve's lowest load equals the published ITL there
   (bisection; the efficiency enters as ``efficiency_by_chip`` through
   ``Catalog.calibrated``, every other prior stays as shipped);
2. runs ``acs.simulate`` (the fast path, ``engine="analytic"``, or ``engine="des"``) on a
   fixed fleet of one replica at each published load, as an open Poisson arrival rate
   equal to the published *achieved* request throughput (a closed-loop concurrency sweep
   has no arrival rate of its own);
3. compares the shape: TTFT and TPOT at each load over the same at the lowest load, model
   against published, and the rate where the published TTFT blows up against the model's
   sustained load (``serving_capacity``'s ``offline_rps_per_replica``).

Published TTFT and ITL are means (AIPerf); the model's are medians over runs of its
per-run p50. Nothing here is tuned per curve.

Run: ``PYTHONPATH=src python benchmarks/serving_curves.py [--des] [--runs N]``; it prints
the table at the shipped ``compute_memory_overlap`` and at overlap 0.
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

import accelsim as acs
from accelsim import catalog as _catalog
from accelsim.catalog import Catalog, Prior, Source

Engine = Literal["analytic", "des"]

CSV = Path(__file__).resolve().parents[1] / "tests" / "validation" / "data" / "serving_curves.csv"

RUNS = 16
"""Monte Carlo runs per load point (the priors other than the efficiency are drawn)."""
SEED = 7
BLOWUP = 3.0
"""A published load point 'blows up' where its TTFT is this many times the previous one's."""
PLATEAU = 0.01
"""Relative difference of the last two achieved rates below which a curve has plateaued."""
HORIZON_DAYS = 1.0 / 24.0
DES_HORIZON_DAYS = 0.25 / 24.0


@dataclass(frozen=True)
class Point:
    """One load point of one curve, published against model. Times [ms], rates [1/s]."""

    curve: str
    concurrency: int
    rate_rps: float
    ttft_pub: float
    itl_pub: float
    ttft_model: float
    ttft_p99_model: float
    tpot_model: float
    utilization: float

    @property
    def above_model_capacity(self) -> bool:
        """True where the model's replica cannot sustain the rate (utilisation near 1)."""
        return self.utilization >= 0.999


@dataclass(frozen=True)
class CurveResult:
    """A curve's fitted efficiency, its points, and the two saturation rates [1/s]."""

    curve: str
    efficiency: float
    points: tuple[Point, ...]
    published_blowup_rps: float
    published_max_rps: float
    model_sustained_rps: float
    blows_up: bool
    """True where some published TTFT is ``BLOWUP`` times the previous point's."""
    plateau: bool
    """True where the published throughput has stopped rising (the last two achieved rates
    within ``PLATEAU`` of each other): its maximum is then the engine's capacity, otherwise
    only a lower bound of it."""


def load_curves(path: Path = CSV) -> dict[str, pd.DataFrame]:
    """Each curve's rows, lowest load first."""
    data = pd.read_csv(path)
    return {
        str(name): rows.sort_values("concurrency").reset_index(drop=True)
        for name, rows in data.groupby("curve", sort=True)
    }


def with_overlap(cat: Catalog, value: float) -> Catalog:
    """``cat`` with its serving ``compute_memory_overlap`` fixed at ``value``."""
    sp = cat.serving_priors
    prior = sp.overlap_prior().model_copy(update={"value": value})
    return dataclasses.replace(
        cat, serving_priors=sp.model_copy(update={"compute_memory_overlap": prior})
    )


def with_efficiency(cat: Catalog, rows: pd.DataFrame, value: float) -> Catalog:
    """``cat`` with the curve's chip's serving efficiency fixed at ``value`` (fraction)."""
    r = rows.iloc[0]
    prior = Prior(
        value=value,
        unit="fraction",
        assumption=False,
        sources=(Source(url=str(r["source_url"]), as_of=date.fromisoformat(str(r["date"]))),),
        note=f"fitted to the lowest-load ITL of curve {r['curve']} (serving_curves.py)",
    )
    return cat.calibrated([], efficiency={str(r["chip"]): prior})


def scenario(
    rows: pd.DataFrame, rate: float, *, horizon_days: float = HORIZON_DAYS
) -> acs.Scenario:
    """One replica of the curve's deployment at Poisson rate ``rate`` [1/s]; the SLO is
    loose on purpose (the comparison is of latencies, not of attainment)."""
    r = rows.iloc[0]
    fields = {
        "model": str(r["model"]),
        "precision": str(r["precision"]),
        "rate_rps": float(rate),
        "input_tokens": int(r["input_tokens"]),
        "output_tokens": int(r["output_tokens"]),
        "slo": acs.SLO(ttft_ms=600_000, tpot_ms=10_000),
        "chips_per_replica": int(r["chips"]),
        "horizon_days": horizon_days,
    }
    svc = acs.Serving.model_validate(fields)
    pool = acs.Pool(chip=str(r["chip"]), count=int(r["chips"]), provider=None)
    return acs.Scenario(name=f"curve-{r['curve']}", workload=svc, fleet=[pool])


def _medians(s: acs.Scenario, cat: Catalog, runs: int, engine: Engine) -> dict[str, float]:
    horizon = DES_HORIZON_DAYS if engine == "des" else HORIZON_DAYS
    if engine == "des":
        work = s.workload
        assert isinstance(work, acs.Serving)
        s = s.model_copy(update={"workload": work.model_copy(update={"horizon_days": horizon})})
    res = acs.simulate(s, runs=runs, seed=SEED, catalog=cat, engine=engine)
    names = ("ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "utilization")
    return {m: float(res.quantile(m, 0.5)) for m in names}


def fit_efficiency(rows: pd.DataFrame, cat: Catalog, runs: int = RUNS) -> float:
    """The efficiency at which the model's median TPOT p50 at the lowest load equals the
    published ITL there (bisection on a log scale over 0.02-1; TPOT falls as it rises)."""
    r = rows.iloc[0]
    s = scenario(rows, float(r["request_rate_rps"]))
    lo, hi = np.log(0.02), np.log(1.0)
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        fitted = with_efficiency(cat, rows, float(np.exp(mid)))
        tpot = _medians(s, fitted, runs, "analytic")["tpot_p50_ms"]
        lo, hi = (lo, mid) if tpot < float(r["itl_ms"]) else (mid, hi)
    return float(np.exp(0.5 * (lo + hi)))


def _published_blowup(rows: pd.DataFrame) -> tuple[float, bool]:
    """Request rate [1/s] of the first point whose TTFT is ``BLOWUP`` times the previous
    point's (the highest rate if none), and whether there is one."""
    ttft = rows["ttft_ms"].to_numpy()
    jumps = np.nonzero(ttft[1:] >= BLOWUP * ttft[:-1])[0]
    at = int(jumps[0]) + 1 if jumps.size else len(rows) - 1
    return float(rows["request_rate_rps"].iloc[at]), bool(jumps.size)


def run_curve(
    rows: pd.DataFrame,
    cat: Catalog,
    *,
    runs: int = RUNS,
    engine: Engine = "analytic",
    efficiency: float | None = None,
) -> CurveResult:
    """Fit (unless ``efficiency`` is given), simulate every load point, and measure both
    saturation rates of one curve."""
    name = str(rows["curve"].iloc[0])
    eff = fit_efficiency(rows, cat, runs) if efficiency is None else efficiency
    fitted = with_efficiency(cat, rows, eff)
    points = []
    for _, r in rows.iterrows():
        rate = float(r["request_rate_rps"])
        m = _medians(scenario(rows, rate), fitted, runs, engine)
        points.append(
            Point(
                curve=name,
                concurrency=int(r["concurrency"]),
                rate_rps=rate,
                ttft_pub=float(r["ttft_ms"]),
                itl_pub=float(r["itl_ms"]),
                ttft_model=m["ttft_p50_ms"],
                ttft_p99_model=m["ttft_p99_ms"],
                tpot_model=m["tpot_p50_ms"],
                utilization=m["utilization"],
            )
        )
    lowest = scenario(rows, float(rows["request_rate_rps"].iloc[0]))
    cap = acs.serving_capacity(lowest, runs=runs, seed=SEED, catalog=fitted)
    blowup, blows_up = _published_blowup(rows)
    last = rows["request_rate_rps"].to_numpy()[-2:]
    return CurveResult(
        curve=name,
        efficiency=eff,
        points=tuple(points),
        published_blowup_rps=blowup,
        published_max_rps=float(rows["request_rate_rps"].max()),
        model_sustained_rps=float(cap.quantile("offline_rps_per_replica", 0.5)),
        blows_up=blows_up,
        plateau=bool(abs(last[1] / last[0] - 1.0) < PLATEAU),
    )


def markdown(result: CurveResult) -> str:
    """The curve's table: per load, published vs model and the ratios to the lowest load."""
    base = result.points[0]
    blowup = (
        f"blows up at {result.published_blowup_rps:.2f} req/s"
        if result.blows_up
        else "does not blow up"
    )
    top = "plateau" if result.plateau else "max, still rising"
    lines = [
        f"Curve `{result.curve}`: fitted efficiency {result.efficiency:.3f}; published TTFT "
        f"{blowup} ({top} {result.published_max_rps:.2f} req/s); "
        f"model sustained load {result.model_sustained_rps:.2f} req/s "
        f"({result.model_sustained_rps / result.published_max_rps:.2f}x the published {top}).",
        "",
        "| C | req/s | TTFT pub ms | TTFT model p50 | TTFT model p99 | TTFT ratio pub | "
        "TTFT ratio model | ITL pub ms | TPOT model | TPOT ratio pub | TPOT ratio model | util |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines.extend(
        f"| {p.concurrency} | {p.rate_rps:.3f} | {p.ttft_pub:.0f} | {p.ttft_model:.0f} | "
        f"{p.ttft_p99_model:.0f} | {p.ttft_pub / base.ttft_pub:.2f} | "
        f"{p.ttft_model / base.ttft_model:.2f} | {p.itl_pub:.1f} | {p.tpot_model:.1f} | "
        f"{p.itl_pub / base.itl_pub:.2f} | {p.tpot_model / base.tpot_model:.2f} | "
        f"{p.utilization:.2f} |"
        for p in result.points
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--des", action="store_true", help="also the request DES (slow)")
    args = parser.parse_args()
    shipped = _catalog.builtin_catalog()
    overlap = shipped.serving_priors.overlap_prior().value
    for label, cat in (
        (f"shipped (overlap {overlap})", shipped),
        ("overlap 0", with_overlap(shipped, 0.0)),
    ):
        for rows in load_curves().values():
            fast = run_curve(rows, cat, runs=args.runs)
            print(f"\n### {label}, fast path (analytic), {args.runs} runs\n")
            print(markdown(fast))
            if args.des:
                runs = min(args.runs, 4)
                des = run_curve(rows, cat, runs=runs, engine="des", efficiency=fast.efficiency)
                print(f"\n### {label}, request DES, {runs} runs, same efficiency\n")
                print(markdown(des))


if __name__ == "__main__":
    main()
