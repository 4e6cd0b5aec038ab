"""sweep and sensitivity over serving scenarios, end to end (issue 13).

Serving runs its fast path for every designed study (sobol, morris, tornado, the
lhs/sobol/antithetic designs of ``simulate``); the request DES draws by plain Monte Carlo
only and says so. The checks use a metric whose drivers are known by construction:
``offline_tokens_per_s_per_chip`` is the replica's saturated throughput, a function of the
serving priors (efficiency, iteration overhead, memory share) and not of the request rate,
so the rate's indices and swing must be exactly 0 and the efficiency's must not.
"""

from __future__ import annotations

import numpy as np
import pytest

import accelsim as acs
from accelsim.engines import BLOCK_RUNS
from accelsim.results import format_value

EFFICIENCY = "priors.serving.efficiency_by_group.cuda-fp8-dense"
RATE = "workload.rate_rps"
OFFLINE = "offline_tokens_per_s_per_chip"


def _serve(**kw: object) -> acs.Scenario:
    svc = acs.Serving(
        model="llama-3.1-8b",
        precision="fp8",
        rate_rps=acs.Uniform(low=20, high=60),
        input_tokens=1000,
        output_tokens=200,
        slo=acs.SLO(ttft_ms=2000, tpot_ms=100),
        chips_per_replica=1,
        horizon_days=7,
        **kw,
    )
    return acs.Scenario(
        name="serve", workload=svc, fleet=[acs.Pool(chip="h100-sxm", count=16, provider="aws")]
    )


def test_sweep_over_fleet_and_rate() -> None:
    s = _serve(scaling="follow_demand")
    grid = {"fleet.0.count": [8, 16], "workload.rate_rps": [10.0, 40.0]}
    sw = acs.sweep(s, grid=grid, runs=64, seed=3, progress=False)
    assert sw.metrics == acs.study.SERVING_SWEEP_METRICS
    table = sw.to_pandas()
    assert len(table) == 4 * len(sw.metrics)
    # A point is the study of the replaced scenario with the same seed, bit for bit.
    point = s.replace("fleet.0.count", 8).replace("workload.rate_rps", 40.0)
    alone = acs.simulate(point, runs=64, seed=3, progress=False)
    assert np.array_equal(
        sw.samples(1, "usd_per_million_output_tokens"),
        alone.samples("usd_per_million_output_tokens"),
    )
    # Common random numbers: per run, 4x the traffic never needs fewer replicas.
    for lo, hi in ((0, 1), (2, 3)):
        assert (sw.samples(hi, "replicas_peak") >= sw.samples(lo, "replicas_peak")).all()
        assert (sw.samples(hi, "replicas_peak") > sw.samples(lo, "replicas_peak")).any()


def test_tornado_and_sobol_find_the_driver() -> None:
    s = _serve()
    tor = acs.sensitivity(s, OFFLINE, method="tornado", runs=32, seed=1)
    assert isinstance(tor, acs.TornadoResult)
    names = list(tor.names)
    i, j = names.index(EFFICIENCY), names.index(RATE)
    assert tor.high[i] > tor.low[i]  # a faster stack serves more tokens per chip
    assert tor.high[j] == tor.low[j] == tor.base  # the rate does not change the replica
    sob = acs.sensitivity(s, OFFLINE, method="sobol", runs=64, seed=1)
    assert isinstance(sob, acs.SobolResult)
    names = list(sob.names)
    i, j = names.index(EFFICIENCY), names.index(RATE)
    assert sob.total_order[j] == 0.0
    assert sob.first_order[j] == 0.0
    assert sob.total_order[i] == max(sob.total_order)
    assert sob.total_order[i] > 0.5


def test_morris_and_spearman_on_serving() -> None:
    s = _serve()
    mor = acs.sensitivity(s, OFFLINE, method="morris", runs=10, seed=2)
    assert isinstance(mor, acs.MorrisResult)
    names = list(mor.names)
    assert mor.mu_star[names.index(RATE)] == 0.0
    assert mor.mu_star[names.index(EFFICIENCY)] == max(mor.mu_star) > 0.0
    spear = acs.sensitivity(s, OFFLINE, method="spearman", runs=256, seed=2)
    assert spear[0][0] == EFFICIENCY
    assert spear[0][1] > 0.5
    assert RATE not in dict(spear) or abs(dict(spear)[RATE]) < 0.2  # noise only


@pytest.mark.parametrize("design", ["lhs", "sobol", "antithetic"])
def test_designs_run_on_the_serving_fast_path(design: str) -> None:
    s = _serve()
    runs = 256
    res = acs.simulate(s, runs=runs, seed=4, design=design, progress=False)
    rate = res.inputs[RATE]
    u = (rate - 20.0) / 40.0  # the rate's uniforms (U(20, 60))
    if design == "antithetic":
        assert np.allclose(u[0::2] + u[1::2], 1.0)
    else:  # one point in each of the runs strata
        assert runs <= BLOCK_RUNS
        assert np.array_equal(np.sort(np.floor(u * runs)), np.arange(runs))
    mc = acs.simulate(s, runs=runs, seed=4, progress=False)
    assert not np.array_equal(mc.inputs[RATE], rate)


def test_des_refuses_designs_with_the_reason() -> None:
    s = _serve()
    short = s.replace("workload.horizon_days", 0.01)
    with pytest.raises(ValueError, match="engine='des' draws a serving scenario's inputs by"):
        acs.simulate(short, runs=2, seed=1, design="antithetic", engine="des", progress=False)


def test_serving_comparison_table_shows_cost_per_token_and_the_slo() -> None:
    """The default table of a serving comparison leads with what the choice is made on
    (cost per token, SLO attainment, tail latencies, fleet size), each cell the option's
    own mean, and shows no training row."""
    cmp = acs.compare(
        {"a": _serve(), "b": _serve().replace("workload.rate_rps", 4.0)}, runs=64, seed=3
    )
    table = cmp.as_table()
    rows = [row[0] for row in table.rows]
    assert rows[:7] == [
        "tco_usd",
        "usd_per_million_output_tokens",
        "usd_per_million_tokens",
        "slo_attainment",
        "ttft_p99_ms",
        "tpot_p99_ms",
        "replicas_peak",
    ]
    assert "time_to_train_days" not in rows
    for metric in ("usd_per_million_output_tokens", "slo_attainment"):
        cells = table.rows[rows.index(metric)][1:]
        for cell, name in zip(cells, ("a", "b"), strict=True):
            assert cell.startswith(format_value(metric, cmp[name].mean(metric)) + " ")
