"""The replica size of an endpoint that leaves ``chips_per_replica`` unset.

The pure rule (``models.serving.replica_sizes``, ``best_replica_size``) over its whole input
space, and the engines' use of it (``engines.serving._layout.planned_setup``): the cases of
``docs/serving.md``, a small demand that follows the load, the bounds that restrict the
candidates, and one layout whatever the seed, the engine or the entry point.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import accelsim as acs
from accelsim import catalog
from accelsim.engines.serving._layout import (
    candidate_sizes,
    layout_outcomes,
    planned_setup,
    vetting_draws,
)
from accelsim.engines.serving._setup import serving_setup
from accelsim.models.serving import best_replica_size, replica_sizes, smallest_safe_size

CAT = catalog.builtin_catalog()


def _scenario(
    model: str,
    precision: str,
    chip: str,
    inp: float,
    out: float,
    ttft_ms: float,
    tpot_ms: float,
    *,
    count: int = 64,
    **fields: Any,
) -> acs.Scenario:
    svc = acs.Serving(
        model=model,
        precision=precision,
        rate_rps=fields.pop("rate_rps", 20.0),
        input_tokens=inp,
        output_tokens=out,
        slo=acs.SLO(ttft_ms=ttft_ms, tpot_ms=tpot_ms),
        horizon_days=fields.pop("horizon_days", 1.0),
        **fields,
    )
    return acs.Scenario(
        name="layout", workload=svc, fleet=[acs.Pool(chip=chip, count=count, provider=None)]
    )


LONG_PROMPTS_70B = ("llama-3.1-70b", "fp8", "h100-sxm", 8000, 500, 2000, 100)
TIGHT_TPOT_QWEN = ("qwen3-32b", "bf16", "tpu-v6e", 1500, 300, 2000, 22)


# ------------------------------------------------------------------ the pure rule


@given(
    smallest=st.sampled_from([1, 2, 4, 8, 16, 3, 6]),
    most=st.integers(1, 10_000),
    pool=st.one_of(st.none(), st.integers(1, 100_000)),
)
def test_the_candidates_are_the_smallest_and_its_doublings_that_fit(
    smallest: int, most: int, pool: int | None
) -> None:
    sizes = replica_sizes(smallest, most, pool)
    assert sizes[0] == smallest
    for size in sizes[1:]:
        assert size <= most
        assert size % smallest == 0
        assert (size // smallest) & (size // smallest - 1) == 0
        assert pool is None or pool % size == 0
    assert sizes == sorted(set(sizes))
    # nothing left out: every doubling within the bound that divides the pool is there
    size = 2 * smallest
    while size <= most:
        assert (size in sizes) == (pool is None or pool % size == 0)
        size *= 2


def test_a_size_below_one_chip_is_an_error() -> None:
    with pytest.raises(ValueError, match=">= 1 chip"):
        replica_sizes(0, 8)


_rates = st.floats(0.0, 1e6, allow_nan=False)
_shares = st.floats(0.0, 1.0)
_hours = st.floats(0.0, 1e9, allow_nan=False)


@given(
    rows=st.lists(st.tuples(_rates, _shares, _hours), min_size=1, max_size=8),
    attainment=st.floats(0.01, 1.0),
)
def test_the_choice_is_a_candidate_no_other_candidate_beats(
    rows: list[tuple[float, float, float]], attainment: float
) -> None:
    sizes = [2**i for i in range(len(rows))]
    rates, shares, hours = (list(col) for col in zip(*rows, strict=True))
    chosen = best_replica_size(
        sizes, rates, compliant_share=shares, chip_hours=hours, attainment=attainment
    )
    assert chosen in sizes
    c = sizes.index(chosen)
    meets = [r > 0.0 for r in rates]
    if any(meets):
        assert meets[c]
    for i in range(len(sizes)):
        if meets[i] != meets[c]:
            continue
        # no candidate of the same standing has a clearly better share within the target
        assert min(shares[i], attainment) <= min(shares[c], attainment) + 1e-6


def test_the_choice_at_saturation_is_the_highest_rate_per_chip_and_ties_the_smallest() -> None:
    assert best_replica_size([2, 4, 8], [48.0, 134.0, 159.0]) == 8
    assert best_replica_size([2, 4, 8], [100.0, 100.0, 50.0]) == 2
    assert best_replica_size([1, 2], [0.0, 0.0]) == 1  # none meets the SLO: the smallest


def test_compliance_beyond_the_target_does_not_outweigh_chip_hours() -> None:
    args = {"compliant_share": [0.995, 1.0], "chip_hours": [48.0, 96.0], "attainment": 0.99}
    assert best_replica_size([2, 4], [50.0, 150.0], **args) == 2
    args["attainment"] = 1.0  # now only the larger replica meets it
    assert best_replica_size([2, 4], [50.0, 150.0], **args) == 4


def test_mismatched_lengths_are_errors() -> None:
    with pytest.raises(ValueError, match="one rate per size"):
        best_replica_size([1, 2], [1.0])
    with pytest.raises(ValueError, match="compliant share"):
        best_replica_size([1, 2], [1.0, 2.0], chip_hours=[1.0])


# ------------------------------------------------------------------ in the engines


def test_long_prompts_under_a_ttft_bound_serve_on_tp4_as_docs_serving_says() -> None:
    s = _scenario(*LONG_PROMPTS_70B)
    rates = {
        o.chips: o.slo_tokens_per_s_per_chip
        for o in layout_outcomes(serving_setup(s, CAT), s, CAT, [2, 4, 8])
    }
    # docs/serving.md: 115, 198 and 196 output tokens/s per chip (rounded; 3 % for the VM's
    # last bits and any later change of the model that the page must then follow)
    for chips, doc in ((2, 115.0), (4, 198.0), (8, 196.0)):
        assert rates[chips] == pytest.approx(doc, rel=0.03)
    assert planned_setup(s, CAT).chips_per_replica == 4
    res = acs.simulate(s, runs=64, seed=3)
    np.testing.assert_array_equal(res.samples("chips_per_replica"), 4.0)


def test_a_tight_tpot_bound_the_memory_rule_cannot_meet_is_met_on_a_larger_replica() -> None:
    s = _scenario(*TIGHT_TPOT_QWEN)
    assert s.workload.replica_chips(CAT.chip("tpu-v6e"), 64) == 4  # type: ignore[union-attr]
    outcomes = {o.chips: o for o in layout_outcomes(serving_setup(s, CAT), s, CAT, [4, 8, 16])}
    # docs/serving.md: 68, 303 and 299 output tokens/s per chip; Qwen3-32B's 8 KV heads
    # are each held on two chips at TP16 (two copies of the cache), so each chip reads as
    # many KV bytes per sequence as at TP8 and holds half the sequences per chip; TP4's
    # fleet serves none of the 20 requests/s within the bound
    assert outcomes[4].slo_tokens_per_s_per_chip == pytest.approx(68.0, rel=0.03)
    assert outcomes[4].compliant_share == 0.0
    assert outcomes[8].slo_tokens_per_s_per_chip == pytest.approx(303.0, rel=0.03)
    assert outcomes[16].slo_tokens_per_s_per_chip == pytest.approx(299.0, rel=0.03)
    res = acs.simulate(s, runs=64, seed=3)
    assert res.quantile("chips_per_replica", 0.5) == 8
    assert res.quantile("slo_attainment", 0.5) > 0.99


def test_a_small_demand_that_follows_the_load_keeps_small_replicas() -> None:
    """0.2 requests/s of 1,000/200 tokens: one Llama 3.1 70B FP8 replica on a single H100
    (below the memory rule's TP2) serves them within a 100 ms TPOT over the vetting sample,
    so a larger replica's higher rate per chip would only hold more chips."""
    s = _scenario(
        "llama-3.1-70b", "fp8", "h100-sxm", 1000, 200, 2000, 100,
        rate_rps=0.2, scaling="follow_demand",
    )  # fmt: skip
    res = acs.simulate(s, runs=64, seed=3)
    assert res.quantile("chips_per_replica", 0.5) == 1
    assert res.quantile("chip_hours", 0.5) == pytest.approx(1 * 24.0)
    assert res.quantile("slo_attainment", 0.5) > 0.99


def test_the_pool_bounds_the_candidates() -> None:
    # min_replicas=16 on 64 chips: at most 4 chips per replica
    s = _scenario(*LONG_PROMPTS_70B, scaling="follow_demand", min_replicas=16)
    assert planned_setup(s, CAT).chips_per_replica == 4
    # a pool of 12 H100s: 8 does not divide it
    s = _scenario(*LONG_PROMPTS_70B, count=12)
    assert planned_setup(s, CAT).chips_per_replica == 4


def test_a_given_size_is_served_as_given() -> None:
    s = _scenario(*LONG_PROMPTS_70B, chips_per_replica=2)
    assert planned_setup(s, CAT).chips_per_replica == 2
    np.testing.assert_array_equal(acs.simulate(s, runs=8, seed=1).samples("chips_per_replica"), 2)


def test_one_layout_whatever_the_seed_the_engine_or_the_entry_point() -> None:
    s = _scenario(*LONG_PROMPTS_70B, rate_rps=0.5, horizon_days=0.01)
    fast = [acs.simulate(s, runs=16, seed=seed) for seed in (1, 2)]
    des = acs.simulate(s, runs=2, seed=1, engine="des")
    cap = acs.serving_capacity(s, runs=16, seed=1)
    chosen = planned_setup(s, CAT).chips_per_replica
    for res in (*fast, des):
        np.testing.assert_array_equal(res.samples("chips_per_replica"), chosen)
    # serving_capacity reports that replica: its per-chip rate is the fast path's per-chip
    # offline throughput for the same draws
    np.testing.assert_allclose(
        cap.samples("offline_tokens_per_s_per_chip"),
        fast[0].samples("offline_tokens_per_s_per_chip"),
        rtol=1e-12,
    )


def test_a_fleet_that_follows_the_demand_breaks_chip_hour_ties_toward_small_replicas() -> None:
    rates = [100.0, 200.0, 300.0]
    args = {"compliant_share": [1.0, 1.0, 1.0], "chip_hours": [192.0, 192.0, 192.0]}
    assert best_replica_size([2, 4, 8], rates, **args) == 8  # a fixed pool: headroom
    assert best_replica_size([2, 4, 8], rates, **args, follows_demand=True) == 2
    # where none meets the attainment, the highest rate per chip is still the closest
    short = {"compliant_share": [0.5, 0.5, 0.5], "chip_hours": [192.0, 192.0, 192.0]}
    assert best_replica_size([2, 4, 8], rates, **short, attainment=0.99, follows_demand=True) == 8


def test_a_pool_no_power_of_two_divides_keeps_a_power_of_two() -> None:
    """70B FP8 on 5 H100s: no power of two above 1 divides the pool, so the replica is one
    chip (the weights fit, validation checks it), never 5 (tensor parallelism over 5 chips
    does not divide the model's 64 attention heads)."""
    s = _scenario(*LONG_PROMPTS_70B, count=5, rate_rps=0.2)
    assert planned_setup(s, CAT).chips_per_replica == 1


@given(
    start_log2=st.integers(0, 12),
    fits_log2=st.integers(0, 13),
)
def test_smallest_safe_size_halves_while_the_replica_holds(start_log2: int, fits_log2: int) -> None:
    """Feasibility grows with the size: the rule stops at the last size that holds, and
    never goes above ``start`` (the memory rule's size, kept even when it does not hold)."""
    start, fits = 2**start_log2, 2**fits_log2
    calls: list[int] = []

    def holds(chips: int) -> bool:
        calls.append(chips)
        return chips >= fits

    got = smallest_safe_size(start, holds)
    assert got == (max(fits, 1) if fits <= start else start)
    assert all(chips < start for chips in calls)  # only halvings are asked


def test_a_mixture_of_experts_with_a_small_cache_serves_on_fewer_chips() -> None:
    """gpt-oss-120b FP8 on H100 at 5 requests/s following the demand: the memory rule says
    TP4 (117 GB of weights over 0.6 of two chips' usable memory), but two chips leave
    ~1,700 mean-length sequences of cache, and TP2 meets the SLO over the vetting sample on
    about half the chip-hours."""
    s = _scenario(
        "gpt-oss-120b", "fp8", "h100-sxm", 1000, 200, 2000, 100,
        count=16, rate_rps=5.0, scaling="follow_demand",
    )  # fmt: skip
    setup = serving_setup(s, CAT)
    assert setup.chips_per_replica == 4  # the memory rule
    assert candidate_sizes(setup, s, CAT)[:2] == [2, 4]
    assert planned_setup(s, CAT).chips_per_replica == 2
    tp2, tp4 = layout_outcomes(setup, s, CAT, [2, 4], vetting_draws())
    assert tp2.compliant_share >= 0.99
    assert tp2.chip_hours < 0.6 * tp4.chip_hours  # 51 against 96 over the sample
    res = acs.simulate(s, runs=64, seed=3)
    np.testing.assert_array_equal(res.samples("chips_per_replica"), 2.0)
    assert res.quantile("slo_attainment", 0.05) >= 0.99


def test_a_size_below_the_memory_rule_that_fails_in_some_runs_is_not_served() -> None:
    """Llama 3.1 70B FP8 on one H100 holds a sequence even with the memory share low (2.6 GB
    of cache) and meets a 60 ms TPOT at the medians, so the medians alone would pick it
    for a small demand (half the chip-hours of TP2); over the vetting sample it misses the
    SLO in the runs of low efficiency (a compliant share of 0.97 over the sample, below the
    0.99 attainment), so the engines keep TP2.
    (At 100 ms its share is 1, the test above.)"""
    s = _scenario(
        "llama-3.1-70b", "fp8", "h100-sxm", 1000, 200, 2000, 60,
        rate_rps=0.2, scaling="follow_demand",
    )  # fmt: skip
    setup = serving_setup(s, CAT)
    assert candidate_sizes(setup, s, CAT)[0] == 1
    (median,) = layout_outcomes(setup, s, CAT, [1])
    (vetted,) = layout_outcomes(setup, s, CAT, [1], vetting_draws())
    assert median.compliant_share >= 0.99
    assert vetted.compliant_share < 0.99
    assert planned_setup(s, CAT).chips_per_replica == 2
