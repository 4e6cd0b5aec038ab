"""accelsim.plot: every plot renders to a PNG from real results and shows what it claims.

Each test draws on the Agg backend, writes a PNG, checks its signature and size, and checks
the plotted data against the numbers it was drawn from. The numbers are exact copies (means,
quantiles, samples), so equality holds to floating-point rounding (rel 1e-12) except where
noted.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from matplotlib.axes import Axes
from matplotlib.collections import PolyCollection
from matplotlib.container import BarContainer
from matplotlib.patches import PathPatch, StepPatch

import accelsim as acs
from accelsim import plot
from accelsim._typing import FloatArray
from accelsim.engines.cluster.des import PoolSpec, poisson_stream, run
from accelsim.engines.cluster.des._metrics import TimeSeries
from accelsim.results._result import Result
from accelsim.seeding import as_seed_sequence

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
WORK = acs.TrainingRun(params=7e9, tokens=1e11)
GPU = acs.Scenario(
    name="gpu", workload=WORK, fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")]
)
TPU = acs.Scenario(
    name="tpu", workload=WORK, fleet=[acs.Pool(chip="tpu-v5p", count=128, provider="gcp")]
)


@pytest.fixture(scope="module")
def cmp() -> acs.Comparison:
    return acs.compare({"h100 x64 aws": GPU, "tpu-v5p x128 gcp": TPU}, runs=200, seed=1)


@pytest.fixture(autouse=True)
def _close_figures() -> Iterator[None]:
    yield
    plt.close("all")


def _save(ax: Axes, path: Path) -> None:
    """Render to PNG and check it is one: the 8-byte signature and more than a header."""
    ax.figure.savefig(path, dpi=80)
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > 1000


def _scaled(res: Result, factor: float, name: str) -> Result:
    """A copy of ``res`` with every metric scaled: a worse option on both axes if > 1."""
    return Result(name, {k: np.asarray(v) * factor for k, v in res.data.items()})


def test_ecdf_has_one_step_line_per_option_ending_at_the_samples(
    cmp: acs.Comparison, tmp_path: Path
) -> None:
    """One line per option, its x data the sorted samples, labelled by option."""
    ax = plot.ecdf(cmp, "time_to_train_days")
    _save(ax, tmp_path / "ecdf.png")
    lines = ax.get_lines()
    assert [ln.get_label() for ln in lines] == list(cmp.options)
    for ln, opt in zip(lines, cmp.options, strict=True):
        xs = np.asarray(ln.get_xdata(), dtype=float)
        finite = xs[np.isfinite(xs)]
        samples = cmp[opt].samples("time_to_train_days")
        np.testing.assert_array_equal(np.unique(finite), np.unique(samples))
    assert ax.get_xlabel() == "time to train [d]"


def test_ecdf_takes_one_result_and_an_existing_axes(cmp: acs.Comparison, tmp_path: Path) -> None:
    """Drawing on a given Axes returns that Axes; a lone Result is labelled by its name."""
    fig, ax = plt.subplots()
    out = plot.ecdf(cmp["h100 x64 aws"], "tco_usd", ax=ax)
    assert out is ax
    assert [ln.get_label() for ln in ax.get_lines()] == [cmp["h100 x64 aws"].scenario_name]
    assert ax.get_xlabel() == "TCO [USD]"
    _save(ax, tmp_path / "ecdf_one.png")
    plt.close(fig)


def test_tco_breakdown_bars_stack_to_the_mean_tco(cmp: acs.Comparison, tmp_path: Path) -> None:
    """The parts sum to tco_usd run by run, so the stacked heights sum to its mean (1e-9).

    The error bar spans P5-P95 of tco_usd around the mean.
    """
    ax = plot.tco_breakdown(cmp)
    _save(ax, tmp_path / "tco_breakdown.png")
    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert [b.get_label() for b in bars] == ["hardware", "energy", "engineering", "delay"]
    for i, opt in enumerate(cmp.options):
        top = sum(b.patches[i].get_height() for b in bars)
        assert top == pytest.approx(cmp[opt].mean("tco_usd"), rel=1e-9)
        # each part's bar is that part's mean, stacked on the previous ones
        assert bars[0].patches[i].get_height() == pytest.approx(cmp[opt].mean("hardware_cost_usd"))
        assert bars[1].patches[i].get_y() == pytest.approx(bars[0].patches[i].get_height())
    err = next(c for c in ax.containers if not isinstance(c, BarContainer))
    segments = err.lines[2][0].get_segments()  # one vertical segment per option
    for seg, opt in zip(segments, cmp.options, strict=True):
        lo, hi = cmp[opt].interval("tco_usd", 0.9)
        assert sorted(seg[:, 1]) == pytest.approx([lo, hi], rel=1e-12)


def test_tco_distribution_boxes_span_the_quartiles(cmp: acs.Comparison, tmp_path: Path) -> None:
    """Each filled box runs from P25 to P75 of that option's tco_usd samples (rel 1e-12)."""
    ax = plot.tco_distribution(cmp)
    _save(ax, tmp_path / "tco_distribution.png")
    boxes = [p for p in ax.patches if isinstance(p, PathPatch)]
    assert len(boxes) == len(cmp.options)
    for box, opt in zip(boxes, cmp.options, strict=True):
        ys = box.get_path().vertices[:, 1]
        q25, q75 = np.quantile(cmp[opt].samples("tco_usd"), [0.25, 0.75])
        assert (ys.min(), ys.max()) == pytest.approx((q25, q75), rel=1e-12)
    assert [t.get_text() for t in ax.get_xticklabels()] == list(cmp.options)


def test_tornado_orders_bars_by_abs_rho_and_keeps_the_top(tmp_path: Path) -> None:
    """Given shuffled pairs, the bars run from the largest |rho| (top) down; only `top` kept."""
    pairs = acs.sensitivity(GPU, runs=512, seed=1)
    shuffled = pairs[::-1]
    ax = plot.tornado(shuffled, top=5)
    _save(ax, tmp_path / "tornado.png")
    bars = ax.patches
    assert len(bars) == 5
    by_y = sorted(bars, key=lambda b: b.get_y(), reverse=True)  # top of the chart first
    widths = [b.get_width() for b in by_y]
    expected = sorted(pairs, key=lambda p: -abs(p[1]))[:5]
    assert widths == pytest.approx([r for _, r in expected], rel=1e-12)
    labels = [t.get_text() for t in ax.get_yticklabels()][::-1]
    assert labels == [n for n, _ in expected]


def test_tornado_rejects_a_nonpositive_top() -> None:
    with pytest.raises(ValueError, match="top"):
        plot.tornado([("a", 0.5)], top=0)


def test_cost_vs_time_frontier_holds_the_option_best_on_both(
    cmp: acs.Comparison, tmp_path: Path
) -> None:
    """An option made worse on both axes (all metrics x 1.5) is never on the frontier; the
    option with the lowest mean TCO and time (found directly here) is, and the frontier line
    passes through its means."""
    gpu = cmp.options[0]
    options = {**cmp.results, "gpu, 1.5x worse": _scaled(cmp[gpu], 1.5, "worse")}
    ax = plot.cost_vs_time(options)
    _save(ax, tmp_path / "cost_vs_time.png")
    legend = ax.get_legend()
    assert legend is not None
    labels = [t.get_text() for t in legend.get_texts()]
    assert labels[:-1] == list(options)  # options first, the frontier last
    t = {k: r.mean("time_to_train_days") for k, r in options.items()}
    c = {k: r.mean("tco_usd") for k, r in options.items()}
    best = [k for k in options if all(t[k] <= t[j] and c[k] <= c[j] for j in options)]
    assert best, "this comparison has an option best on both means"
    front = plot.pareto_frontier(options)
    assert set(best) <= set(front)
    assert "gpu, 1.5x worse" not in front
    assert labels[-1] == "Pareto frontier: " + ", ".join(front)
    (line,) = [ln for ln in ax.get_lines() if ln.get_label() == labels[-1]]
    assert list(line.get_xdata()) == [t[k] for k in front]
    assert list(line.get_ydata()) == [c[k] for k in front]


points = st.lists(
    st.tuples(st.integers(0, 20), st.integers(0, 20)), min_size=1, max_size=8, unique=True
)


@given(points)
def test_pareto_frontier_is_exactly_the_undominated_options(pts: list[tuple[int, int]]) -> None:
    """No frontier member is dominated; every other option is dominated by a member."""
    opts = {
        f"o{i}": Result(
            f"o{i}",
            {"time_to_train_days": np.array([float(t)]), "tco_usd": np.array([float(c)])},
        )
        for i, (t, c) in enumerate(pts)
    }
    front = plot.pareto_frontier(opts)

    def dominates(b: tuple[int, int], a: tuple[int, int]) -> bool:
        return b[0] <= a[0] and b[1] <= a[1] and b != a

    by_name = dict(zip(opts, pts, strict=True))
    for k, a in by_name.items():
        beaten = any(dominates(b, a) for b in by_name.values())
        assert (k in front) == (not beaten)
    assert [by_name[k][0] for k in front] == sorted(by_name[k][0] for k in front)


def test_sweep_line_draws_p50_with_a_p5_p95_band(tmp_path: Path) -> None:
    """The line is the P50 row by row in x order; the band's edge at each x is P5 and P95."""
    rows = acs.sweep(GPU, {"fleet.0.count": [128, 32, 64]}, runs=200, seed=1).rows
    ax = plot.sweep_line(rows, "fleet.0.count", "tco_usd")
    _save(ax, tmp_path / "sweep_line.png")
    mine = sorted((r for r in rows if r["metric"] == "tco_usd"), key=lambda r: r["fleet.0.count"])
    (line,) = ax.get_lines()
    assert list(line.get_xdata()) == [32.0, 64.0, 128.0]
    assert list(line.get_ydata()) == pytest.approx([r["p50"] for r in mine], rel=1e-12)
    (band,) = [c for c in ax.collections if isinstance(c, PolyCollection)]
    verts = band.get_paths()[0].vertices
    for r in mine:
        at_x = verts[np.isclose(verts[:, 0], r["fleet.0.count"]), 1]
        assert set(np.round(at_x, 6)) == {round(r["p5"], 6), round(r["p95"], 6)}


def test_sweep_line_groups_other_keys_and_places_names_evenly(tmp_path: Path) -> None:
    """Two grid keys: one line per value of the other key; string x values at 0, 1, ..."""
    rows = [
        {"chip": chip, "count": n, "metric": "m_usd", "mean": v, "std_error": 0.1,
         "p5": v - 1, "p50": v, "p95": v + 1}
        for n in (8, 16)
        for v, chip in ((1.0 * n, "a100"), (2.0 * n, "h100"))
    ]  # fmt: skip
    ax = plot.sweep_line(rows, "chip", "m_usd")
    _save(ax, tmp_path / "sweep_cat.png")
    lines = ax.get_lines()
    assert [ln.get_label() for ln in lines] == ["count=8", "count=16"]
    assert list(lines[1].get_xdata()) == [0.0, 1.0]
    assert list(lines[1].get_ydata()) == [16.0, 32.0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a100", "h100"]
    with pytest.raises(ValueError, match="no rows for metric 'tco_usd'"):
        plot.sweep_line(rows, "chip", "tco_usd")


def _series() -> TimeSeries:
    seed = as_seed_sequence(7)

    def exp(mean: float):  # type: ignore[no-untyped-def]
        def sample(rng: np.random.Generator, n: int) -> FloatArray:
            return rng.exponential(mean, n)

        return sample

    def const(v: float):  # type: ignore[no-untyped-def]
        def sample(rng: np.random.Generator, n: int) -> FloatArray:
            return np.full(n, v)

        return sample

    jobs = poisson_stream(
        seed, interarrival_hours=exp(0.3), chips=const(3.0), work_hours=exp(1.0), until_hours=95.0
    )
    res = run(
        [PoolSpec("p", chips=16)],
        jobs,
        scheduler="fifo",
        horizon_hours=95.0,
        seed_seq=seed,
        utilization_resolution_hours=5.0,
    )
    assert res.series is not None
    return res.series


def test_utilization_series_draws_busy_up_and_queue(tmp_path: Path) -> None:
    """Busy and up steps equal the series per bin; the twin axis holds the queue length."""
    series = _series()
    ax = plot.utilization_series(series, pool_names=["gpu"], horizon_hours=95.0)
    _save(ax, tmp_path / "utilization.png")
    steps = {p.get_label(): p for p in ax.patches if isinstance(p, StepPatch)}
    assert set(steps) == {"busy (gpu)", "up (gpu)"}
    np.testing.assert_array_equal(steps["busy (gpu)"].get_data().values, series.busy_chips[:, 0])
    np.testing.assert_array_equal(steps["up (gpu)"].get_data().values, series.up_chips[:, 0])
    edges = steps["busy (gpu)"].get_data().edges
    assert edges[0] == 0.0
    assert edges[-1] == 95.0
    (twin,) = [a for a in ax.figure.axes if a is not ax]
    (queue,) = [p for p in twin.patches if isinstance(p, StepPatch)]
    np.testing.assert_array_equal(queue.get_data().values, series.queued_jobs)
    assert float(series.queued_jobs.max()) > 0  # the stream does queue: the axis shows something


def test_missing_matplotlib_names_the_extra(
    cmp: acs.Comparison, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With matplotlib unimportable, a plot raises ImportError naming the install command."""
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"pip install 'accelsim\[plot\]'"):
        plot.ecdf(cmp)
