"""Unit tests of accelsim.dists: sampled moments against closed forms, validation, parsing.

One conformance battery runs over ``EVERY_DIST`` (STYLE.md pattern 4): a new distribution is one
more entry there, and ``test_every_type_is_in_the_battery`` makes sure it gets one.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import scipy.integrate
from pydantic import BaseModel, TypeAdapter, ValidationError

from accelsim._typing import FloatArray
from accelsim.dists import (
    EVERY_DIST_TYPE,
    PERT,
    Beta,
    Choice,
    Dist,
    Exponential,
    Fixed,
    LogNormal,
    Normal,
    Triangular,
    Uncertain,
    Uniform,
    as_dist,
    parse_uncertain,
)
from accelsim.dists._continuous import _std_truncnorm_moments

EVERY_DIST: list[Dist] = [
    Fixed(3.0),
    Uniform(low=1, high=4),
    Triangular(low=0.3, mode=0.4, high=0.5),
    Triangular(low=0, mode=0, high=2),  # mode at an end
    PERT(low=10, mode=40, high=200),
    PERT(low=0, mode=1, high=1, lamb=2),
    Exponential(mean=5),
    Normal(mean=0, sd=2),
    Normal(mean=0.4, sd=0.2, low=0, high=1),  # truncated on both sides
    Normal(mean=1, sd=1, low=0),  # truncated below only
    Beta(alpha=2, beta=5),
    Beta(alpha=0.5, beta=0.5, low=-1, high=3),
    LogNormal(low=1e3, high=1e5),
    LogNormal(low=2, high=5),
    Choice(values=[1, 2, 8], weights=[0.5, 0.3, 0.2]),
    Choice(values=[4, 1, 1]),  # equal weights, unsorted, a repeated value
]

# sigma = ln(100) / 3.29 = 1.4: the sample variance's spread depends on the 8th moment,
# e^(32 sigma²) / e^(16 sigma²) = e^31 times the squared 4th, so 200k draws cannot estimate its
# standard error; LogNormal(2, 5) (sigma = 0.28) covers the lognormal variance instead.
HEAVY_TAILED = {repr(LogNormal(low=1e3, high=1e5))}

N_DRAWS = 200_000
K_SE = 5.0  # a 5-standard-error band: false-alarm rate ~6e-7 per check under normality
_DRAWS: dict[str, FloatArray] = {}


def draws(d: Dist) -> FloatArray:
    """``N_DRAWS`` draws of ``d`` from a fixed seed, computed once per module run."""
    key = repr(d)
    if key not in _DRAWS:
        _DRAWS[key] = d.sample(np.random.default_rng(2024), N_DRAWS)
    return _DRAWS[key]


def test_every_type_is_in_the_battery() -> None:
    """Each type in EVERY_DIST_TYPE has at least one entry in EVERY_DIST, and nothing else."""
    assert {type(d) for d in EVERY_DIST} == set(EVERY_DIST_TYPE)


@pytest.mark.parametrize("d", EVERY_DIST, ids=repr)
def test_sample_mean_matches_expected_value(d: Dist) -> None:
    """Oracle: the closed-form mean. Tolerance: 5 standard errors of the sample mean (CLT)."""
    x = draws(d)
    se = x.std(ddof=1) / math.sqrt(x.size)
    assert abs(x.mean() - d.expected_value()) <= K_SE * se


@pytest.mark.parametrize("d", [d for d in EVERY_DIST if repr(d) not in HEAVY_TAILED], ids=repr)
def test_sample_variance_matches_variance(d: Dist) -> None:
    """Oracle: the closed-form variance.

    Tolerance: 5 standard errors of the sample variance, ``sqrt((mu4 - s**4) / n)`` with the
    central 4th moment ``mu4`` and variance ``s**2`` estimated from the same sample.
    """
    x = draws(d)
    centred = x - x.mean()
    s2 = centred.var(ddof=1)
    se = math.sqrt(max(np.mean(centred**4) - s2**2, 0.0) / x.size)
    assert abs(s2 - d.variance()) <= K_SE * se


@pytest.mark.parametrize("d", EVERY_DIST, ids=repr)
@pytest.mark.parametrize("q", [0.1, 0.5, 0.9])
def test_ppf_lies_in_the_order_statistic_interval(d: Dist, q: float) -> None:
    """``ppf(q)`` against the sample quantile (for q = 0.5, the sample median).

    Distribution-free: the count of draws <= the true q-quantile is binomial, so it lies
    between the sample quantiles at ``q -+ 5 sqrt(q(1-q)/n)``. This holds for Choice too,
    where the median can sit on a jump of the CDF.
    """
    x = draws(d)
    half_width = K_SE * math.sqrt(q * (1.0 - q) / x.size)
    lo, hi = np.quantile(x, [q - half_width, q + half_width])
    assert lo <= float(d.ppf(q)) <= hi


@pytest.mark.parametrize("d", EVERY_DIST, ids=repr)
def test_samples_lie_in_support_and_ppf_is_monotone(d: Dist) -> None:
    """Every draw lies in the support; ``ppf`` on a fine grid never decreases."""
    low, high = d.support()
    x = draws(d)
    assert low <= x.min() <= x.max() <= high
    y = d.ppf(np.linspace(0.0, 1.0, 1001))
    assert np.all(y[1:] >= y[:-1])
    assert (y[0], y[-1]) == (low, high)


_BETA_BASED = (PERT, Beta)


@pytest.mark.parametrize("d", [d for d in EVERY_DIST if not isinstance(d, Fixed)], ids=repr)
def test_sample_is_ppf_of_the_generators_uniforms(d: Dist) -> None:
    """Sampling is ``ppf(rng.random(size))``, the map LHS and Sobol designs reuse (not Fixed,
    which does not advance the generator)."""
    got = d.sample(np.random.default_rng(7), 50)
    u = np.random.default_rng(7).random(50)
    np.testing.assert_array_equal(got, d.ppf(u))


@pytest.mark.parametrize("d", [d for d in EVERY_DIST if not isinstance(d, Fixed)], ids=repr)
def test_the_fast_path_for_generator_uniforms_equals_ppf(d: Dist) -> None:
    """``from_uniforms`` (no argument checks, pinned in place) is ``ppf`` on [0, 1),
    bit for bit, the lower end included."""
    u = np.concatenate([[0.0, 2.0**-53, 0.5, 1.0 - 2.0**-53], np.random.default_rng(3).random(500)])
    np.testing.assert_array_equal(d.from_uniforms(u.copy()), d.ppf(u))


def test_fixed_does_not_advance_the_generator() -> None:
    """``Fixed.sample`` returns ``np.full`` and leaves the stream where it was."""
    rng = np.random.default_rng(3)
    before = rng.bit_generator.state
    np.testing.assert_array_equal(Fixed(2.5).sample(rng, 4), np.full(4, 2.5))
    assert rng.bit_generator.state == before


def test_ppf_keeps_the_shape_and_rejects_non_probabilities() -> None:
    """Scalar in, 0-d out; q outside [0, 1] or nan is an error naming the allowed range."""
    assert Uniform(low=0, high=2).ppf(0.25).shape == ()
    assert Choice(values=[1, 2]).ppf([[0.1, 0.9]]).shape == (1, 2)
    for bad in (1.5, -0.1, math.nan):
        with pytest.raises(ValueError, match=r"\[0, 1\]"):
            Triangular(low=0, mode=1, high=2).ppf([0.5, bad])


def test_lognormal_low_and_high_are_the_5_and_95_percent_quantiles() -> None:
    """The defining property of ``LogNormal(low, high)``, to rounding (rel 1e-9)."""
    d = LogNormal(low=1e3, high=1e5)
    assert float(d.ppf(0.05)) == pytest.approx(1e3, rel=1e-9)
    assert float(d.ppf(0.95)) == pytest.approx(1e5, rel=1e-9)


def test_pert_known_values() -> None:
    """Hand-computed: PERT(10, 40, 200) has mean (10 + 4*40 + 200) / 6 = 61.667 and variance
    (m - 10)(200 - m) / 7; a symmetric PERT has its mode as mean; lamb = 0 is Uniform."""
    d = PERT(low=10, mode=40, high=200)
    m = 370.0 / 6.0
    assert d.expected_value() == pytest.approx(m, rel=1e-15)
    assert d.variance() == pytest.approx((m - 10.0) * (200.0 - m) / 7.0, rel=1e-15)
    assert PERT(low=0, mode=5, high=10).expected_value() == 5.0
    flat = PERT(low=1, mode=3, high=4, lamb=0)
    u = Uniform(low=1, high=4)
    q = np.linspace(0.0, 1.0, 11)
    # the beta quantile is scipy's numerical inversion, u-error below 1e-10: on a width of 3
    # and a density of 1 that is at most 3e-10 in x
    np.testing.assert_allclose(flat.ppf(q), u.ppf(q), rtol=0, atol=3e-10)
    assert (flat.expected_value(), flat.variance()) == pytest.approx((2.5, 0.75))


def test_beta_quantile_survives_tiny_probabilities() -> None:
    """scipy's inverse fails at small q for some shapes (nan or a wrong tiny value); the
    repaired quantile matches the leading term ``(q a B(a, b))**(1/a)`` of the series of
    ``I_x(a, b)`` near 0, whose relative error is O(x) (here < 1e-15)."""
    a, b = 1.03125, 0.75
    q = np.array([1e-300, 1e-100, 1e-20])
    expected = (q * a * math.gamma(a) * math.gamma(b) / math.gamma(a + b)) ** (1.0 / a)
    np.testing.assert_allclose(Beta(alpha=a, beta=b).ppf(q), expected, rtol=1e-9)


def _quad_truncnorm_moments(a: float, b: float) -> tuple[float, float]:
    """Mean and variance of N(0, 1) on [a, b] by numerical integration (independent oracle).

    The density is scaled by exp(c**2 / 2), c the point of [a, b] nearest 0, so that far-tail
    windows do not underflow, and integrated in t = x - mid (mid the window's middle) so that
    narrow windows keep their digits. An infinite end is cut 40 / max(1, |c|) past c, where
    the scaled density has fallen below e^-40.
    """
    c = min(max(0.0, a), b)
    reach = 40.0 / max(1.0, abs(c))
    lo, hi = max(a, c - reach), min(b, c + reach)
    mid, half = 0.5 * (lo + hi), 0.5 * (hi - lo)

    def integral(power: int, shift: float, epsabs: float) -> float:
        def f(t: float) -> float:
            x = mid + t
            return (t - shift) ** power * math.exp(-0.5 * (x - c) * (x + c))

        return float(scipy.integrate.quad(f, -half, half, epsabs=epsabs, epsrel=1e-12)[0])

    mass = integral(0, 0.0, 0.0)
    offset = integral(1, 0.0, 1e-13 * mass * half) / mass  # absolute: the integral nears 0
    return mid + offset, integral(2, offset, 1e-13 * mass * half**2) / mass


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (-1.0, 2.0),
        (0.0, math.inf),
        (-math.inf, -3.0),
        (30.0, math.inf),  # far tail, one-sided
        (-36.0, -35.0),  # far tail, both ends
        (2.0, 2.01),  # narrow: the series branch
        (-5.0, -4.99),
        (1.0, 1.0 + 1e-9),  # narrower than Phi(b) - Phi(a) can resolve
        (-0.3, 0.7),
        (-36.6, -36.5944),  # far out and 0.0056 wide: the closed form's worst cancellation
    ],
)
def test_truncated_normal_moments_match_numerical_integration(a: float, b: float) -> None:
    """Oracle: quadrature of the density (relative precision ~1e-12).

    Tolerance: 1e-9 of the sd (plus 1e-15 of the value, its rounding) on the mean, and rel
    1e-6 on the variance. A scan of centres out to 37 sd and widths from 1e-9 to 100 sd found
    at most 5e-7 on the variance, for windows ~0.005 sd wide 36 sd out, where the closed form
    cancels (the narrow-window series takes over below); elsewhere errors are ~1e-10 or less.
    """
    mean, var = _std_truncnorm_moments(a, b)
    ref_mean, ref_var = _quad_truncnorm_moments(a, b)
    scale = math.sqrt(ref_var)
    assert abs(mean - ref_mean) <= 1e-9 * max(scale, 1e-300) + 1e-15 * abs(ref_mean)
    assert var == pytest.approx(ref_var, rel=1e-6)


def test_normal_moments_of_simple_truncations() -> None:
    """Closed forms from the literature: half-normal mean sd*sqrt(2/pi), variance
    sd**2 (1 - 2/pi); an untruncated Normal is (mean, sd**2) exactly."""
    half = Normal(mean=0, sd=3, low=0)
    assert half.expected_value() == pytest.approx(3 * math.sqrt(2 / math.pi), rel=1e-14)
    assert half.variance() == pytest.approx(9 * (1 - 2 / math.pi), rel=1e-13)
    assert (Normal(mean=1.5, sd=2).expected_value(), Normal(mean=1.5, sd=2).variance()) == (
        1.5,
        4.0,
    )


def test_choice_ignores_zero_weights() -> None:
    """A zero-weight value is never drawn and lies outside the support."""
    d = Choice(values=[-100, 1, 2, 100], weights=[0, 1, 1, 0])
    assert d.support() == (1.0, 2.0)
    assert set(np.unique(d.sample(np.random.default_rng(5), 1000))) == {1.0, 2.0}
    assert d.expected_value() == 1.5


@pytest.mark.parametrize(
    ("cls", "kwargs", "words"),
    [
        (Triangular, {"low": 3, "mode": 1, "high": 2}, ["low < high", "low=3", "high=2"]),
        (Triangular, {"low": 0, "mode": 3, "high": 2}, ["mode must lie in [low, high]"]),
        (PERT, {"low": 0, "mode": -1, "high": 1}, ["mode", "[0.0, 1.0]"]),
        (PERT, {"low": 0, "mode": 1, "high": 2, "lamb": -1}, ["lamb", "greater than or equal"]),
        (Uniform, {"low": 1, "high": 1}, ["low < high", "Fixed"]),
        (Uniform, {"low": math.nan, "high": 1}, ["low", "finite"]),
        (Uniform, {"low": 0, "high": math.inf}, ["high", "finite"]),
        (Uniform, {"low": 0, "high": 1, "hgh": 2}, ["hgh", "Extra inputs"]),
        (Normal, {"mean": 0, "sd": 0}, ["sd", "greater than 0"]),
        (Normal, {"mean": 0, "sd": 1, "low": 2, "high": 1}, ["low < high"]),
        (Normal, {"mean": 0, "sd": 1, "low": 40}, ["within 37 sd", "low"]),
        (Exponential, {"mean": 0}, ["mean", "greater than 0"]),
        (LogNormal, {"low": 0, "high": 1}, ["low", "greater than 0"]),
        (LogNormal, {"low": 2, "high": 1}, ["low < high"]),
        (Beta, {"alpha": 0, "beta": 1}, ["alpha", "greater than 0"]),
        (Beta, {"alpha": 1, "beta": -1}, ["beta", "greater than 0"]),
        (Beta, {"alpha": 1, "beta": 1, "low": 1, "high": 0}, ["low < high"]),
        (Choice, {"values": [1, 2], "weights": [0, 0]}, ["weights", "sum > 0"]),
        (Choice, {"values": [1, 2, 3], "weights": [1, -1, 1]}, ["weights", ">= 0"]),
        (Choice, {"values": [1, 2], "weights": [1]}, ["weights", "one entry per value"]),
        (Choice, {"values": []}, ["values", "at least 1"]),
        (Choice, {"values": [1, math.nan]}, ["values.1", "finite"]),
        (Fixed, {}, ["value", "Field required"]),
    ],
)
def test_invalid_parameters_raise_naming_the_field(
    cls: type[BaseModel], kwargs: dict[str, Any], words: list[str]
) -> None:
    """Validation happens once, at construction; the message names field and allowed range."""
    with pytest.raises(ValidationError) as caught:
        cls.model_validate(kwargs)
    for word in words:
        assert word in str(caught.value)


def test_models_are_frozen() -> None:
    """Fields hold what the user wrote and cannot be reassigned."""
    d = Uniform(low=0, high=1)
    with pytest.raises(ValidationError, match="frozen"):
        d.low = 0.5  # type: ignore[misc]


def test_fixed_takes_its_value_positionally_or_by_keyword() -> None:
    """``Fixed(3.0)`` as in DESIGN.md; a value given twice is a TypeError."""
    assert Fixed(3.0) == Fixed(value=3) == Fixed(3)
    with pytest.raises(TypeError, match="both"):
        Fixed(3.0, value=4.0)


@pytest.mark.parametrize("d", EVERY_DIST, ids=repr)
def test_yaml_like_and_json_round_trips(d: Dist) -> None:
    """``model_dump`` holds the ``dist`` tag, and parses back to an equal model of the same type,
    from Python objects (YAML) and from JSON text."""
    dumped = d.model_dump()
    assert dumped["dist"] == type(d).model_fields["dist"].default
    for back in (
        parse_uncertain(dumped),
        TypeAdapter(Uncertain).validate_json(d.model_dump_json()),
    ):
        assert back == d
        assert type(back) is type(d)


def test_the_issues_yaml_mapping_parses() -> None:
    """The example from DESIGN.md: ``{dist: triangular, low: 0.3, mode: 0.4, high: 0.5}``."""
    got = parse_uncertain({"dist": "triangular", "low": 0.3, "mode": 0.4, "high": 0.5})
    assert got == Triangular(low=0.3, mode=0.4, high=0.5)


def test_a_bare_number_is_a_float() -> None:
    """A bare 3 validates to the float 3.0, not to Fixed (``as_dist`` does that)."""
    got = parse_uncertain(3)
    assert got == 3.0
    assert type(got) is float
    assert as_dist(got) == Fixed(3.0)


@pytest.mark.parametrize(
    ("obj", "words"),
    [
        ({"low": 1, "high": 2}, ["Unable to extract tag using discriminator 'dist'"]),
        ({"dist": "unifrom", "low": 1, "high": 2}, ["'unifrom'", "'uniform'"]),
        ({"dist": "uniform", "low": 2, "high": 1}, ["low < high"]),
        (math.inf, ["finite"]),
        ("three", ["valid number"]),
    ],
)
def test_parse_uncertain_rejects_with_a_useful_message(obj: object, words: list[str]) -> None:
    """A mapping without ``dist``, a misspelt tag, an invalid model or a non-number."""
    with pytest.raises(ValidationError) as caught:
        parse_uncertain(obj)
    for word in words:
        assert word in str(caught.value)


def test_uncertain_as_a_model_field() -> None:
    """As a field type: numbers and distributions dump to what a file holds and load back, and
    an error's location starts at the field's name."""

    class Holder(BaseModel):
        mfu: Uncertain
        more: list[Uncertain] = []

    h = Holder.model_validate(
        {"mfu": Uniform(low=0, high=1), "more": [1, {"dist": "choice", "values": [1, 2]}]}
    )
    dumped = h.model_dump()
    assert dumped["mfu"] == {"dist": "uniform", "low": 0.0, "high": 1.0}
    assert dumped["more"][0] == 1.0
    assert Holder.model_validate(dumped) == h
    assert Holder.model_validate_json(h.model_dump_json()) == h
    with pytest.raises(ValidationError) as caught:
        Holder.model_validate({"mfu": {"dist": "beta", "alpha": 2, "beta": 0}})
    loc = caught.value.errors()[0]["loc"]
    assert loc[0] == "mfu"
    assert "beta" in loc


@pytest.mark.parametrize("cls", EVERY_DIST_TYPE, ids=lambda c: c.__name__)
def test_schema_and_validator_agree_that_dist_is_required(cls: type[BaseModel]) -> None:
    """STACK.md pitfall 9: the tag has a default for Python calls, yet in a file it is required;
    the JSON schema of the model and of the union must say so, as the union validator does."""
    assert "dist" in cls.model_json_schema()["required"]
    union_defs = TypeAdapter(Uncertain).json_schema()["$defs"]
    assert "dist" in union_defs[cls.__name__]["required"]
    example = next(d for d in EVERY_DIST if type(d) is cls).model_dump()
    del example["dist"]
    with pytest.raises(ValidationError, match="discriminator 'dist'"):
        parse_uncertain(example)


def test_as_dist() -> None:
    """Numbers (int, float, numpy scalars) become Fixed; distributions pass through; a bool
    or a string is a TypeError, not a silent 1.0."""
    assert as_dist(2) == Fixed(2.0)
    assert as_dist(np.float64(2.5)) == Fixed(2.5)
    d = Uniform(low=0, high=1)
    assert as_dist(d) is d
    for bad in (True, "3"):
        with pytest.raises(TypeError, match="number or a distribution"):
            as_dist(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("d", [d for d in EVERY_DIST if isinstance(d, _BETA_BASED)], ids=repr)
def test_beta_based_draws_have_scipys_beta_law(d: Dist) -> None:
    """PERT and Beta draws (inverse transform through the tabulated quantile) against the
    exact CDF of the scaled ``scipy.stats.beta``, one-sample KS test at a fixed seed: under
    the right law the p-value is uniform, so p > 0.001 fails a correct sampler one time in a
    thousand seeds (the table's own error, <= 1e-9 in probability, is invisible at this n)."""
    from scipy.stats import beta, kstest

    a, b = d._shape()  # type: ignore[union-attr]
    low, high = d.support()
    x = d.sample(np.random.default_rng(11), 20_000)
    assert kstest(x, beta(a, b, loc=low, scale=high - low).cdf).pvalue > 1e-3


@pytest.mark.parametrize(
    "d",
    [
        Uniform(low=-3.0, high=7.5),
        Exponential(mean=40.0),
        Normal(mean=2.0, sd=0.5),
    ],
    ids=repr,
)
def test_closed_form_quantiles_equal_scipys(d: Dist) -> None:
    """The numpy quantiles of Uniform, Exponential and untruncated Normal equal the frozen
    scipy objects they map onto (their oracle) to a few ulp: the same formulas (``loc +
    scale q``, ``-log1p(-q) scale``, ``mean + sd ndtri(q)``), differing only in the order of
    rounding. Ends included (0 and 1 pin to the support). Tolerance: a few ulp, times ``1 +
    |log x|`` for the exponentials, whose relative error is the absolute error of their
    argument (``log x``) times one."""
    p = np.concatenate([[0.0, 1e-300, 1e-12, 0.5, 1.0 - 1e-12, 1.0], np.linspace(0, 1, 1001)])
    ours = d.ppf(p)
    with np.errstate(over="ignore"):
        theirs = np.asarray(d._frozen().ppf(p), dtype=float)  # type: ignore[union-attr]
    finite = np.isfinite(theirs)
    assert np.array_equal(np.isfinite(ours), finite)
    x, y = ours[finite], theirs[finite]
    ulps = (
        8.0
        * np.finfo(float).eps
        * (1.0 + np.abs(np.log(np.abs(y), where=y != 0, out=np.zeros_like(y))))
    )
    assert np.all(np.abs(x - y) <= ulps * np.abs(y)), np.max(np.abs(x - y) / np.abs(y))
