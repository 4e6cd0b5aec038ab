"""Credits as a hand-computed oracle and as invariants, over amounts, expiries and kinds.

The rule (``engines/_pricing.py`` module docstring): a training run's rented hardware cost
is spread evenly over its training phase, ``[t_end - training_days, t_end]`` days from
the decision; a credit covers the part billed before ``expires_days``, up to its amount
(dollars, or chip-hours valued at the pool's price), credits in order of expiry; the
offset is the negative line ``credits_usd`` and ``tco_usd`` includes it. Credits change
no physics and no other line, so runs with and without them are compared run for run
(same seed).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import accelsim as acs

RUNS = 6
SEED = 17
CHIP, PROVIDER = "h100-sxm", "gcp"
RTOL = 1e-9

amounts_usd = st.floats(1e3, 5e7)
expiries = st.none() | st.floats(1.0, 130.0)  # the training windows lie in days 2-117


def _scenario(*credits: acs.Credit) -> acs.Scenario:
    return acs.Scenario(
        name="credited",
        workload=acs.TrainingRun(params=7e9, tokens=2e11),
        fleet=[acs.Pool(chip=CHIP, count=64, provider=PROVIDER, pricing="on_demand")],
        credits=list(credits),
    )


_BASE: list[acs.Result] = []


def _base() -> acs.Result:
    """The same study without credits (computed once)."""
    if not _BASE:
        _BASE.append(acs.simulate(_scenario(), runs=RUNS, seed=SEED, progress=False))
    return _BASE[0]


def _price() -> float:
    offer = acs.catalog.price(CHIP, provider=PROVIDER, pricing="on_demand")
    assert offer.usd_per_chip_hour is not None
    return offer.usd_per_chip_hour


def _billed_before(expires: float | None) -> np.ndarray:
    """Hardware cost billed before ``expires`` days, per run (even over the training)."""
    base = _base()
    hardware = base.samples("hardware_cost_usd")
    if expires is None:
        return hardware
    end = base.samples("time_to_train_days")
    start = end - base.samples("training_days")
    share = np.clip((expires - start) / (end - start), 0.0, 1.0)
    return hardware * share


@settings(max_examples=15)
@given(amounts_usd, expiries)
def test_a_dollar_credit_covers_the_cost_billed_before_it_expires_up_to_its_amount(
    usd: float, expires: float | None
) -> None:
    res = acs.simulate(
        _scenario(acs.Credit(usd=usd, expires_days=expires)), runs=RUNS, seed=SEED, progress=False
    )
    want = -np.minimum(usd, _billed_before(expires))
    np.testing.assert_allclose(res.samples("credits_usd"), want, rtol=RTOL, atol=1e-6)


@settings(max_examples=15)
@given(st.floats(10.0, 2e6), expiries)
def test_a_chip_hour_credit_is_valued_at_the_pools_price(
    chip_hours: float, expires: float | None
) -> None:
    res = acs.simulate(
        _scenario(acs.Credit(chip_hours=chip_hours, expires_days=expires)),
        runs=RUNS,
        seed=SEED,
        progress=False,
    )
    want = -np.minimum(chip_hours * _price(), _billed_before(expires))
    np.testing.assert_allclose(res.samples("credits_usd"), want, rtol=RTOL, atol=1e-6)


@settings(max_examples=15)
@given(st.lists(st.tuples(amounts_usd, expiries), min_size=1, max_size=3))
def test_credits_change_only_their_line_and_the_tco_and_never_exceed_hardware(
    specs: list[tuple[float, float | None]],
) -> None:
    """Every other metric and input bit-identical to the uncredited study; ``credits_usd``
    in ``[-hardware, 0]`` and at most the credits' total; ``tco = tco without + credits``."""
    credits = [acs.Credit(usd=u, expires_days=e) for u, e in specs]
    res = acs.simulate(_scenario(*credits), runs=RUNS, seed=SEED, progress=False)
    base = _base()
    assert set(res.metrics) == set(base.metrics) | {"credits_usd"}
    for m in base.metrics:
        if m != "tco_usd":
            assert res.samples(m).tobytes() == base.samples(m).tobytes(), m
    line = res.samples("credits_usd")
    assert np.all(line <= 0.0)
    assert np.all(-line <= base.samples("hardware_cost_usd") * (1 + 1e-12))
    assert np.all(-line <= sum(u for u, _ in specs) * (1 + 1e-12))
    np.testing.assert_allclose(res.samples("tco_usd"), base.samples("tco_usd") + line, rtol=1e-12)
    # With no expiry at all, the credits pool: min(total, hardware).
    if all(e is None for _, e in specs):
        want = -np.minimum(sum(u for u, _ in specs), base.samples("hardware_cost_usd"))
        np.testing.assert_allclose(line, want, rtol=RTOL)


@settings(max_examples=10)
@given(amounts_usd, st.floats(1.0, 300.0), st.floats(1.01, 3.0))
def test_a_larger_or_longer_lived_credit_never_covers_less(
    usd: float, expires: float, factor: float
) -> None:
    def covered(u: float, e: float | None) -> np.ndarray:
        res = acs.simulate(
            _scenario(acs.Credit(usd=u, expires_days=e)), runs=RUNS, seed=SEED, progress=False
        )
        return -res.samples("credits_usd")

    base = covered(usd, expires)
    assert np.all(covered(usd * factor, expires) >= base * (1 - 1e-12))
    assert np.all(covered(usd, expires * factor) >= base * (1 - 1e-12))
    assert np.all(covered(usd, None) >= base * (1 - 1e-12))


def test_credits_for_another_chip_or_provider_or_on_prem_cover_nothing() -> None:
    """Scope: a credit names a provider and/or chip; on-prem hardware is never covered."""
    for credit in (
        acs.Credit(usd=1e6, provider="aws"),
        acs.Credit(usd=1e6, chip="tpu-v5p"),
    ):
        res = acs.simulate(_scenario(credit), runs=RUNS, seed=SEED, progress=False)
        assert np.all(res.samples("credits_usd") == 0.0)
    owned = acs.Scenario(
        name="owned",
        workload=acs.TrainingRun(params=7e9, tokens=2e11),
        fleet=[acs.Pool(chip=CHIP, count=64, provider="on_prem", pricing="on_prem")],
        credits=[acs.Credit(usd=1e6)],
    )
    res = acs.simulate(owned, runs=RUNS, seed=SEED, progress=False)
    assert np.all(res.samples("credits_usd") == 0.0)
    assert np.all(res.samples("hardware_cost_usd") > 0.0)
