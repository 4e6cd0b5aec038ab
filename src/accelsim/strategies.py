"""Hypothesis strategies for your own property tests of planning rules.

Each function returns a :class:`hypothesis.strategies.SearchStrategy` that draws *valid*
accelsim objects inside the bounds you give: distributions, uncertain numbers, pools drawn
from the catalog's real offers, training runs, assumptions and whole scenarios whose
training run fits in the fleet's memory. Use them to check a rule of thumb over every
plausible input rather than over the three you thought of::

    from hypothesis import given, settings
    import accelsim as acs
    from accelsim import strategies as acst

    @settings(max_examples=20, deadline=None)
    @given(acst.scenarios(fleet=acst.pools(chips=["h100-sxm"], pricing="on_demand")))
    def test_my_rule(scenario):
        res = acs.simulate(scenario, runs=50, seed=0)
        assert res.mean("tco_usd") > 0

The draws are built explicitly rather than with ``st.builds``, which ignores the models'
cross-field rules (ordered triangular parameters, offers that exist, memory fit).
accelsim itself never imports this module, so hypothesis stays an optional dependency.

Examples
--------
>>> from hypothesis import given, settings
>>> from accelsim import strategies as acst
>>> @settings(max_examples=10, deadline=None)
... @given(acst.dists(0.2, 0.6))
... def check(d):
...     low, high = d.support()
...     assert 0.2 <= low <= high <= 0.6
>>> check()
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any, Literal, get_args

try:
    from hypothesis import assume, reject
    from hypothesis import strategies as st
except ImportError as exc:  # pragma: no cover - exercised only without hypothesis
    raise ImportError(
        "accelsim.strategies needs hypothesis, which accelsim does not install: "
        "pip install hypothesis"
    ) from exc
from pydantic import ValidationError

from accelsim import catalog
from accelsim.catalog import Pricing
from accelsim.dists import (
    PERT,
    Beta,
    Choice,
    Dist,
    Exponential,
    Fixed,
    LogNormal,
    Normal,
    Triangular,
    Uniform,
)
from accelsim.scenario import (
    Assumptions,
    Framework,
    Pool,
    Precision,
    Scenario,
    Stage,
    TrainingRun,
    training_state_gib,
)

Range = tuple[float, float]
FRAMEWORKS: tuple[Framework, ...] = get_args(Framework)
"""Every framework a scenario accepts (from the ``Framework`` Literal: one definition)."""
STAGES: tuple[Stage, ...] = get_args(Stage)


def _floats(lo: float, hi: float) -> st.SearchStrategy[float]:
    """Finite, non-subnormal floats in ``[lo, hi]``."""
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False, allow_subnormal=False)


def _check_bounds(min_value: float, max_value: float) -> None:
    if not (math.isfinite(min_value) and math.isfinite(max_value)) or min_value > max_value:
        raise ValueError(
            f"need finite min_value <= max_value, got min_value={min_value!r}, "
            f"max_value={max_value!r}"
        )


def _pair(lo: float, hi: float) -> st.SearchStrategy[tuple[float, float]]:
    """Two floats ``a < b`` in ``[lo, hi]`` (``lo < hi``)."""
    x = _floats(lo, hi)
    return st.tuples(x, x).filter(lambda t: t[0] != t[1]).map(lambda t: (min(t), max(t)))


def _triple(lo: float, hi: float) -> st.SearchStrategy[tuple[float, float, float]]:
    """Three floats ``a <= m <= b`` with ``a < b`` in ``[lo, hi]`` (``lo < hi``)."""
    x = _floats(lo, hi)
    return (
        st.tuples(x, x, x)
        .map(lambda t: tuple(sorted(t)))
        .filter(lambda t: t[0] < t[2])
        .map(lambda t: (t[0], t[1], t[2]))
    )


@st.composite
def _truncated_normal(draw: st.DrawFn, lo: float, hi: float) -> Dist:
    """Normal truncated to a window inside ``[lo, hi]``, with its mean in the window."""
    a, b = draw(_pair(lo, hi))
    mean = draw(_floats(a, b))
    sd = draw(st.floats(0.0, min(hi - lo, 1e300), exclude_min=True, allow_subnormal=False))
    try:
        return Normal(mean=mean, sd=sd, low=a, high=b)
    except ValidationError:  # a window narrower than rounding at this sd: use a Uniform
        return Uniform(low=a, high=b)


@st.composite
def _open_normal(draw: st.DrawFn, lo: float, hi: float) -> Dist:
    """Normal with its mean in ``[lo, hi]``, untruncated or truncated on one side (the bound
    in the range too): its support leaves the range."""
    mean = draw(_floats(lo, hi))
    sd = draw(st.floats(0.0, min(hi - lo, 1e300), exclude_min=True, allow_subnormal=False))
    side = draw(st.sampled_from(["none", "low", "high"]))
    bound = draw(_floats(lo, hi))
    try:
        return Normal(
            mean=mean,
            sd=sd,
            low=bound if side == "low" else None,
            high=bound if side == "high" else None,
        )
    except ValidationError:  # a bound too far in the tail to standardise: rare, rejected
        reject()


def _lognormal(lo: float, hi: float) -> st.SearchStrategy[LogNormal]:
    """LogNormal whose 90 % interval lies in ``[lo, hi]`` (``0 < lo < hi``), distinct in
    log space too (the model requires it)."""
    return (
        _pair(lo, hi)
        .filter(lambda t: math.log(t[0]) < math.log(t[1]))
        .map(lambda t: LogNormal(low=t[0], high=t[1]))
    )


def _choice(lo: float, hi: float) -> st.SearchStrategy[Choice]:
    def with_weights(values: list[float]) -> st.SearchStrategy[Choice]:
        n = len(values)
        weights = st.lists(_floats(0.0, 10.0), min_size=n, max_size=n).filter(
            lambda w: sum(w) > 0.0
        )
        return st.one_of(
            st.just(Choice(values=values)), weights.map(lambda w: Choice(values=values, weights=w))
        )

    return st.lists(_floats(lo, hi), min_size=1, max_size=6).flatmap(with_weights)


def dists(
    min_value: float,
    max_value: float,
    *,
    unbounded: bool = False,
    kinds: Sequence[type[Dist]] | None = None,
) -> st.SearchStrategy[Dist]:
    """Any distribution whose whole support lies in ``[min_value, max_value]``, or with
    ``unbounded``, also the laws whose support leaves it.

    Parameters
    ----------
    min_value, max_value : float
        Finite bounds, ``min_value <= max_value`` [unit of the quantity].
    unbounded : bool
        Also draw the unbounded laws with their parameters in the range: ``Exponential``
        (mean in it) and ``LogNormal`` (90 % interval in it) where ``max_value > 0``, and a
        ``Normal`` untruncated or truncated on one side (mean and bound in it). Their draws
        leave the range: for testing what a field accepts, or a rule over any input law.
    kinds : sequence of Dist types, optional
        Draw only these types (e.g. ``[acs.PERT]``); default every type that fits.

    Returns
    -------
    hypothesis.strategies.SearchStrategy of Dist
        ``Fixed``, ``Uniform``, ``Triangular``, ``PERT``, ``Beta``, ``Choice`` or a
        ``Normal`` truncated on both sides (parameters to the extremes: Beta shapes from
        1e-3 to 1e3, PERT's lambda up to 50), plus the unbounded laws with ``unbounded``.
        With ``min_value == max_value`` only ``Fixed`` is drawn.

    Raises
    ------
    ValueError
        If a bound is not finite, ``min_value > max_value``, or no type of ``kinds`` can
        be drawn in the range.
    """
    _check_bounds(min_value, max_value)
    lo, hi = float(min_value), float(max_value)
    shape = _floats(1e-3, 1e3)
    laws: list[tuple[type[Dist], st.SearchStrategy[Dist]]] = [(Fixed, _floats(lo, hi).map(Fixed))]
    if lo < hi:
        laws += [
            (Uniform, _pair(lo, hi).map(lambda t: Uniform(low=t[0], high=t[1]))),
            (
                Triangular,
                _triple(lo, hi).map(lambda t: Triangular(low=t[0], mode=t[1], high=t[2])),
            ),
            (
                PERT,
                st.builds(
                    lambda t, lamb: PERT(low=t[0], mode=t[1], high=t[2], lamb=lamb),
                    _triple(lo, hi),
                    _floats(0.0, 50.0),
                ),
            ),
            (
                Beta,
                st.builds(
                    lambda a, b, t: Beta(alpha=a, beta=b, low=t[0], high=t[1]),
                    shape,
                    shape,
                    _pair(lo, hi),
                ),
            ),
            (Choice, _choice(lo, hi)),
            (Normal, _truncated_normal(lo, hi)),
        ]
    if unbounded and lo < hi:
        laws.append((Normal, _open_normal(lo, hi)))
        if hi > 0.0:
            positive = max(lo, sys.float_info.min)
            laws.append((Exponential, _floats(positive, hi).map(lambda m: Exponential(mean=m))))
            if positive < hi:
                laws.append((LogNormal, _lognormal(positive, hi)))
    wanted = None if kinds is None else tuple(kinds)
    choices = [law for kind, law in laws if wanted is None or kind in wanted]
    if not choices:
        raise ValueError(
            f"no distribution of kinds {[k.__name__ for k in wanted or ()]} can be drawn in "
            f"[{lo!r}, {hi!r}]" + ("" if unbounded else " (unbounded=False)")
        )
    return st.one_of(choices)


def uncertain(
    min_value: float, max_value: float, *, numbers_only: bool = False, unbounded: bool = False
) -> st.SearchStrategy[float | Dist]:
    """A plain number or a distribution (see :func:`dists`) in ``[min_value, max_value]``.

    Parameters
    ----------
    min_value, max_value : float
        Finite bounds, ``min_value <= max_value`` [unit of the quantity].
    numbers_only : bool
        Draw plain floats only (no distributions).
    unbounded : bool
        Also draw the unbounded laws (see :func:`dists`).

    Returns
    -------
    hypothesis.strategies.SearchStrategy of float or Dist
        What an ``Uncertain`` field of a scenario holds.
    """
    _check_bounds(min_value, max_value)
    numbers = _floats(float(min_value), float(max_value))
    if numbers_only:
        return numbers
    return st.one_of(numbers, dists(min_value, max_value, unbounded=unbounded))


def _as_tuple(value: str | Sequence[str] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    return (value,) if isinstance(value, str) else tuple(value)


def pools(
    chips: str | Sequence[str] | None = None,
    providers: str | Sequence[str] | None = None,
    pricing: Pricing | Sequence[Pricing] | None = None,
    min_count: int = 1,
    max_count: int = 4096,
) -> st.SearchStrategy[Pool]:
    """Pools of chips priced by an offer that exists in the active catalog.

    Parameters
    ----------
    chips : str, sequence of str or None
        Chip ids to draw from (case-insensitive); None for every chip with an offer.
    providers : str, sequence of str or None
        Provider ids (``"aws"``, ``"gcp"``, ``"on_prem"``, ...); None for all.
    pricing : str, sequence of str or None
        Pricing models (``"on_demand"``, ``"spot"``, ``"commit_1y"``, ``"commit_3y"``,
        ``"capacity_block"``, ``"on_prem"``); None for all. A capacity-block pool gets one
        of the window lengths its offer sells.
    min_count, max_count : int
        Bounds of the pool's chip count, ``1 <= min_count <= max_count`` [chips].

    Returns
    -------
    hypothesis.strategies.SearchStrategy of Pool
        Pools whose (chip, provider, pricing) is one of the catalog's offers when the
        strategy is built; the count is drawn log-uniformly-ish (small and large fleets
        alike) and shrinks towards ``min_count``.

    Raises
    ------
    ValueError
        If the bounds are wrong or no offer matches the filters.
    accelsim.errors.UnknownChipError
        If a chip id is not in the catalog.
    """
    if not 1 <= min_count <= max_count:
        raise ValueError(f"need 1 <= min_count <= max_count, got {min_count}, {max_count}")
    chip_ids = _as_tuple(chips)
    wanted_chips = None if chip_ids is None else {catalog.chip(c).id for c in chip_ids}
    wanted_providers = _as_tuple(providers)
    wanted_pricing = _as_tuple(pricing)
    keys = sorted(
        {
            (o.chip, o.provider, o.pricing)
            for o in catalog.offers()
            if (wanted_chips is None or o.chip in wanted_chips)
            and (wanted_providers is None or o.provider in wanted_providers)
            and (wanted_pricing is None or o.pricing in wanted_pricing)
        }
    )
    if not keys:
        raise ValueError(
            f"no catalog offer matches chips={chip_ids}, providers={wanted_providers}, "
            f"pricing={wanted_pricing}"
        )
    exponent = _floats(math.log2(min_count), math.log2(max_count))
    counts = exponent.map(lambda e: min(max(round(2.0**e), min_count), max_count))
    # a capacity block's window: one of the lengths its offer sells (shrinks to the shortest)
    windows = {
        k: catalog.price(k[0], provider=k[1], pricing=k[2]).block
        for k in keys
        if k[2] == "capacity_block"
    }

    def pool(key: tuple[str, str, Pricing], count: int, pick: int) -> Pool:
        block = windows.get(key)
        days = None if block is None else block.allowed_days()[pick % len(block.allowed_days())]
        return Pool(chip=key[0], provider=key[1], pricing=key[2], count=count, block_days=days)

    return st.builds(pool, st.sampled_from(keys), counts, st.integers(0, 1_000))


def _log_uniform(lo: float, hi: float) -> st.SearchStrategy[float]:
    """Floats in ``[lo, hi]`` (``0 < lo <= hi``), uniform in the exponent."""
    return _floats(math.log10(lo), math.log10(hi)).map(lambda e: min(max(10.0**e, lo), hi))


def training_runs(
    min_params: float = 1e8,
    max_params: float = 1e11,
    min_tokens: float = 1e9,
    max_tokens: float = 1e13,
    frameworks: Sequence[Framework] = FRAMEWORKS,
    stages: Sequence[Stage] = STAGES,
    precisions: Sequence[Precision] = ("bf16",),
) -> st.SearchStrategy[TrainingRun]:
    """Training runs with parameters and tokens in the given ranges.

    Parameters
    ----------
    min_params, max_params : float
        Model size bounds, ``0 < min_params <= max_params`` [parameters].
    min_tokens, max_tokens : float
        Training-set bounds, ``0 < min_tokens <= max_tokens`` [tokens].
    frameworks : sequence of {"pytorch", "jax", "tensorflow"}
        Frameworks to draw from.
    stages : sequence of {"prototype", "production"}
        Stages to draw from.
    precisions : sequence of {"bf16", "fp8", "fp32"}
        Precisions to draw from. :func:`scenarios` rejects a draw whose chip has no
        published peak at the precision, so keep ``("bf16",)`` unless your chips have one.

    Returns
    -------
    hypothesis.strategies.SearchStrategy of TrainingRun
        Sizes drawn uniformly in the exponent, so 1e8 and 1e11 are equally likely.
    """
    for name, lo, hi in (("params", min_params, max_params), ("tokens", min_tokens, max_tokens)):
        if not 0 < lo <= hi < math.inf:
            raise ValueError(f"need 0 < min_{name} <= max_{name} < inf, got {lo!r}, {hi!r}")
    for name, options in (
        ("frameworks", frameworks),
        ("stages", stages),
        ("precisions", precisions),
    ):
        if not options:
            raise ValueError(f"{name} must not be empty")
    return st.builds(
        lambda p, t, fw, stage, prec: TrainingRun(
            params=p, tokens=t, framework=fw, stage=stage, precision=prec
        ),
        _log_uniform(min_params, max_params),
        _log_uniform(min_tokens, max_tokens),
        st.sampled_from(tuple(frameworks)),
        st.sampled_from(tuple(stages)),
        st.sampled_from(tuple(precisions)),
    )


def _valid_end(name: str, value: float, toward: float) -> float:
    """``value`` if ``name=value`` is a valid assumption, else the next float toward
    ``toward`` if that is (an open bound such as MFU's 0); otherwise a ``ValueError``."""
    for candidate in (value, math.nextafter(value, toward)):
        try:
            Assumptions.model_validate({name: candidate})
        except ValidationError as exc:
            error = exc
            continue
        return candidate
    raise ValueError(f"assumptions: {name} range end {value!r} is not allowed: {error}")


def assumptions(
    mfu: Range | None = None, *, numbers_only: bool = False, **ranges: Range
) -> st.SearchStrategy[Assumptions]:
    """Assumptions with the named fields drawn in their ranges; the rest keep the priors.

    Parameters
    ----------
    mfu : (float, float) or None
        Range of the MFU [fraction], within [0.001, 1]; None leaves it to the scaling model
        and priors. (An open bound at 0, such as ``checkpoint_write_hours``'s, moves to the
        next float.)
    numbers_only : bool
        Draw plain numbers only; by default each field is a number or a distribution
        whose support lies in its range (see :func:`uncertain`).
    **ranges : (float, float)
        Any other field of :class:`accelsim.Assumptions`, e.g.
        ``delay_usd_per_day=(0, 5e4)`` or ``pue=(1.1, 1.5)`` [units of the field].

    Returns
    -------
    hypothesis.strategies.SearchStrategy of Assumptions
        With no ranges at all, always ``Assumptions()``.

    Raises
    ------
    ValueError
        If a name is not a field of ``Assumptions`` or a range leaves the field's
        allowed values (e.g. ``pue`` below 1).
    """
    given: dict[str, Range] = dict(ranges)
    if mfu is not None:
        given["mfu"] = mfu
    fields: dict[str, st.SearchStrategy[float | Dist]] = {}
    for name, bounds in given.items():
        if name not in Assumptions.model_fields:
            known = ", ".join(sorted(Assumptions.model_fields))
            raise ValueError(f"assumptions: no field {name!r}; the fields are {known}")
        lo, hi = (float(b) for b in bounds)
        _check_bounds(lo, hi)
        lo, hi = _valid_end(name, lo, hi), _valid_end(name, hi, lo)
        fields[name] = uncertain(lo, hi, numbers_only=numbers_only)
    return st.fixed_dictionaries(fields).map(lambda values: Assumptions(**values))


def _fitting_count(params: float, chip_id: str) -> int:
    """Fewest chips of ``chip_id`` whose HBM holds the training state of ``params``."""
    need_gib = training_state_gib(params)
    return max(1, math.ceil(need_gib / catalog.chip(chip_id).hbm_gib))


def _supports(chip_id: str, precision: Precision) -> bool:
    return precision == "bf16" or getattr(catalog.chip(chip_id), f"{precision}_tflops") is not None


@st.composite
def _scenario(
    draw: st.DrawFn,
    workload: st.SearchStrategy[TrainingRun],
    fleet: st.SearchStrategy[Any],
    assumptions: st.SearchStrategy[Assumptions],
    max_pools: int,
    fit: Literal["grow", "reject"],
    name: str,
) -> Scenario:
    run = draw(workload)
    drawn = draw(fleet if max_pools == 1 else st.lists(fleet, min_size=1, max_size=max_pools))
    chosen: list[Pool] = [drawn] if isinstance(drawn, Pool) else list(drawn)
    assume(all(_supports(p.chip, run.precision) for p in chosen))
    if len(chosen) > 1:
        # Several pools send the run to the shared-cluster engine, which simulates each
        # interruption of its job and refuses one expecting over a million: a spot pool of
        # thousands of chips does (8.97e6 for 3,132 h200). Its pool (the first) is not spot.
        assume(chosen[0].pricing != "spot")
    sized = []
    for pool in chosen:
        need = _fitting_count(run.params, pool.chip)
        if pool.count < need:
            assume(fit == "grow")
            pool = pool.model_copy(update={"count": need})
        sized.append(pool)
    return Scenario(name=name, workload=run, fleet=sized, assumptions=draw(assumptions))


def scenarios(
    workload: st.SearchStrategy[TrainingRun] | None = None,
    fleet: st.SearchStrategy[Pool] | st.SearchStrategy[Sequence[Pool]] | None = None,
    assumptions: st.SearchStrategy[Assumptions] | None = None,
    *,
    max_pools: int = 1,
    fit: Literal["grow", "reject"] = "grow",
    name: str = "generated",
) -> st.SearchStrategy[Scenario]:
    """Valid training scenarios: a run, a fleet that can hold it, and assumptions.

    Parameters
    ----------
    workload : SearchStrategy of TrainingRun, optional
        Default :func:`training_runs` ``()``.
    fleet : SearchStrategy of Pool or of a list of Pools, optional
        Default :func:`pools` ``()``. A strategy of single pools gives a fleet of 1 to
        ``max_pools`` of them (the run uses the first).
    assumptions : SearchStrategy of Assumptions, optional
        Default ``assumptions()``: every field from the catalog priors.
    max_pools : int
        Most pools per fleet when ``fleet`` draws single pools [pools]. A fleet of several
        pools runs the training job in the shared-cluster engine, one event per
        interruption: its first pool (the run's) is then never a spot pool, whose
        preemptions on thousands of chips are more events than that engine simulates.
    fit : {"grow", "reject"}
        A pool too small to hold the run's weights, gradients and Adam state (16 bytes
        per parameter over the chips' HBM, the check :class:`accelsim.Scenario` makes):
        ``"grow"`` raises its count to the fewest chips that fit, which can exceed the
        ``max_count`` you gave :func:`pools`; ``"reject"`` discards the draw (slower, and
        hypothesis gives up if most draws are too small).
    name : str
        The scenarios' name.

    Returns
    -------
    hypothesis.strategies.SearchStrategy of Scenario
        Scenarios that ``accelsim.simulate`` accepts. Draws whose run asks for a precision
        a chip has no peak for are discarded.
    """
    if max_pools < 1:
        raise ValueError(f"max_pools must be >= 1, got {max_pools}")
    if fit not in ("grow", "reject"):
        raise ValueError(f"fit must be 'grow' or 'reject', got {fit!r}")
    return _scenario(
        training_runs() if workload is None else workload,
        pools() if fleet is None else fleet,
        st.just(Assumptions()) if assumptions is None else assumptions,
        max_pools,
        fit,
        name,
    )


__all__ = [
    "FRAMEWORKS",
    "STAGES",
    "assumptions",
    "dists",
    "pools",
    "scenarios",
    "training_runs",
    "uncertain",
]
