"""Results of a study: one array per metric, with the summaries users read.

Every summary states its Monte Carlo error: a mean is printed with the half-width of its
95 % confidence interval (1.96 standard errors, see :meth:`Result.std_error`), so a reader
can tell a real difference from sampling noise.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from accelsim._typing import FloatArray
from accelsim.results._format import Z95, Table, format_error, format_value
from accelsim.scenario import Scenario

if TYPE_CHECKING:
    import pandas as pd

SUMMARY_STATS = ("mean", "std_error", "p5", "p50", "p95")
"""The statistics every summary of a metric reports, in this order (:meth:`Result.stats`)."""


def _same(a: Any, b: Any) -> bool:
    """Bit-for-bit equality of arrays (dtype, shape and bytes, so ``nan`` equals the same
    ``nan``), recursively through mappings and sequences; ``==`` for anything else."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return False
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    return bool(a == b)


def quantiles(x: FloatArray, q: FloatArray | Sequence[float]) -> FloatArray:
    """``numpy.quantile`` (linear interpolation) that reads infinite runs as values.

    Between two infinite order statistics numpy interpolates ``inf - inf`` and returns
    ``nan`` with a warning; the quantile there is that infinity (a run that never finishes
    has an infinite time and cost, and the median of mostly such runs is infinite). Where
    the data hold no ``nan``, such a ``nan`` is replaced by the lower order statistic.
    """
    with np.errstate(invalid="ignore"):
        out = np.asarray(np.quantile(x, q), dtype=float)
    if np.isnan(out).any() and not np.isnan(x).any():
        lower = np.asarray(np.quantile(x, q, method="lower"), dtype=float)
        out = np.where(np.isnan(out), lower, out)
    return out


LOWER_BOUND_MARK = "≥ "
"""Prefix of a printed statistic that is a lower bound (censored at the horizon)."""

CENSORED_METRICS = frozenset(
    {
        "time_to_train_days",
        "training_days",
        "compute_days",
        "failure_overhead_days",
        "instability_days",
        "recovery_wait_days",
        "fallback_days",
        "tco_usd",
        "hardware_cost_usd",
        "energy_cost_usd",
        "delay_cost_usd",
        "chip_hours",
        "held_hours",
        "energy_kwh",
        "emissions_kg_co2e",
        "interruptions",
    }
)
"""Metrics of a training run that accumulate up to its end, hence up to the horizon in a
run that does not finish (a mix's fleet-wide ``tco_usd`` and the like with them)."""


def _training_unfinished(res: Result) -> bool:
    """Whether some run of a training workload (lone or in a mix) does not finish."""
    if "time_to_train_days" in res.data and "finished" in res.data:
        return bool(np.any(res.samples("finished") == 0))
    for metric in res.data:
        who, _, base = metric.rpartition(".")
        finished = f"{who}.finished"
        named = who and base == "time_to_train_days" and finished in res.data
        if named and np.any(res.samples(finished) == 0):
            return True
    return False


def lower_bounds(res: Result) -> frozenset[str]:
    """The metrics of ``res`` whose statistics are lower bounds: those of
    :data:`CENSORED_METRICS` of a training run that does not finish within the horizon in
    some run (a lone run's, or in a mix that workload's ``<name>.`` ones; a mix's fleet is
    priced over the whole horizon, so its own metrics are not censored); empty otherwise."""
    if not _training_unfinished(res):
        return frozenset()
    lone = "time_to_train_days" in res.data
    out = set()
    for metric in res.data:
        who, _, base = metric.rpartition(".")
        if base not in CENSORED_METRICS or (not who and not lone):
            continue
        finished = f"{who}.finished" if who else "finished"
        if who and (finished not in res.data or not np.any(res.samples(finished) == 0)):
            continue
        out.add(metric)
    return frozenset(out)


def fleet_absent(res: Result) -> np.ndarray:
    """Runs in which no pool of a job stream's or trace's fleet is there before the horizon
    (every ``held_hours_pool<i>`` is 0: each lead time ends past it), so no job runs."""
    held = [res.samples(m) for m in res.data if m.startswith("held_hours_pool")]
    if not held or "jobs_arrived" not in res.data:
        return np.zeros(res.runs, dtype=bool)
    return np.asarray(np.all(np.stack(held) <= 0.0, axis=0), dtype=bool)


def fleet_absent_note(res: Result) -> str | None:
    """The sentence saying in how many runs a stream's fleet arrives after the horizon."""
    absent = fleet_absent(res)
    if not absent.any():
        return None
    return (
        f"in {float(np.mean(absent)):.1%} of runs the fleet arrives after the horizon (its "
        f"capacity lead time is longer): no job runs and nothing is paid, so its $0 is no "
        f"saving; set assumptions.lead_time_days (0 for a fleet already in service) or a "
        f"longer horizon"
    )


STALE_PRICE_DAYS = 182
"""Default age beyond which a price used is flagged: about six months. [days]"""


def stale_price_warning(
    stale: Sequence[Mapping[str, str]], as_of: datetime.date | None = None
) -> str | None:
    """One line naming the stale offers a study used (provider, chip, pricing, as_of), or
    ``None`` when there are none."""
    if not stale:
        return None
    today = as_of if as_of is not None else datetime.date.today()
    named = "; ".join(
        f"{p['provider']} {p['chip']} {p['pricing']} as of {p['as_of']} "
        f"({(today - datetime.date.fromisoformat(p['as_of'])).days} days old)"
        for p in stale
    )
    return (
        f"warning: stale prices used: {named}. Check current prices and load your own sheet "
        f"(acs.catalog.load) if they moved."
    )


def _mean(x: np.ndarray) -> float:
    """The mean of ``x``; exactly the value where every element has the same finite one."""
    if x.size and np.isfinite(x[0]) and np.ptp(x) == 0.0:
        return float(x[0])
    return float(np.mean(x))


@dataclass(frozen=True, eq=False)
class Result:
    """Samples of every metric of one scenario, one value per Monte Carlo run.

    Two results are equal (``==``) when they hold the same study: the same scenario name,
    engine, seed entropy and option facts (``info``), the same metric and input names in the
    same order, every array equal bit for bit (dtype, shape and bytes: a ``nan`` equals the
    same ``nan``, ``0.0`` differs from ``-0.0``), and equal ``extras``. This is what
    "bit-identical whatever the executor" means, so ``simulate(s, seed=1) == simulate(s,
    seed=1)`` holds and a result differing in one bit of one run is unequal. A result hashes
    by its scenario name and run count (consistent with ``==``).

    A study of one run is allowed (a single replay of a trace, a single DES run): its
    quantiles and intervals are that run's value, and its standard error is not available
    (``nan`` from :meth:`std_error`, ``n/a`` in every text table, ``null`` in JSON).

    Examples
    --------
    >>> import numpy as np
    >>> r = Result("demo", {"tco_usd": np.array([1.0, 2.0, 3.0])}, seed_entropy=1)
    >>> r.mean("tco_usd")
    2.0
    """

    scenario_name: str
    data: Mapping[str, FloatArray]
    seed_entropy: int | None = None
    """Root entropy of the study's seed, to replay it exactly."""
    engine: str = "analytic"
    info: Any = None
    """Fixed facts of the option (chip, provider, framework fit...) used by comparisons."""
    inputs: Mapping[str, FloatArray] = field(default_factory=dict)
    """The drawn uncertain inputs by name, aligned with the metric samples."""
    extras: Mapping[str, Any] = field(default_factory=dict)
    """Engine-specific outputs (per-job records, time series) when asked for."""
    scenario: Scenario | None = None
    """The validated scenario the study ran (None for results built by hand): reports and
    recommendations read what the user set (assumptions, a serving SLO) from it."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Result):
            return NotImplemented
        return (
            self.scenario_name == other.scenario_name
            and self.engine == other.engine
            and self.seed_entropy == other.seed_entropy
            and _same(self.info, other.info)
            and _same(self.data, other.data)
            and _same(self.inputs, other.inputs)
            and _same(self.extras, other.extras)
            and self.scenario == other.scenario
        )

    def __hash__(self) -> int:
        return hash((self.scenario_name, self.runs))

    def __post_init__(self) -> None:
        # Read-only, metrics and inputs alike: a value that does not vary between runs may
        # be a zero-stride view of one number (accelsim.engines.constant).
        for arr in (*self.data.values(), *self.inputs.values()):
            arr.flags.writeable = False

    @property
    def runs(self) -> int:
        """Number of Monte Carlo runs."""
        return len(next(iter(self.data.values()))) if self.data else 0

    @property
    def metrics(self) -> tuple[str, ...]:
        """Names of the metrics present (each carries its unit)."""
        return tuple(self.data)

    def samples(self, metric: str) -> FloatArray:
        """All runs' values of ``metric`` (read-only array of shape ``(runs,)``)."""
        try:
            return self.data[metric]
        except KeyError:
            known = ", ".join(self.data)
            raise KeyError(f"no metric {metric!r} in this result; it has: {known}") from None

    @property
    def design(self) -> str:
        """How the study drew its inputs: ``extras["design"]``, else ``"mc"`` (independent)."""
        return str(self.extras.get("design", "mc"))

    def mean(self, metric: str) -> float:
        """Sample mean of ``metric`` (exactly the value where every run has the same one:
        a float sum of equal values need not return them)."""
        return _mean(self.samples(metric))

    def std_error(self, metric: str) -> float:
        """Monte Carlo standard error of the mean of ``metric``.

        Independent runs (:attr:`design` ``"mc"``): ``s / sqrt(n)``, with ``s`` the sample
        standard deviation (``ddof=1``) of the ``n`` runs.

        ``"antithetic"``: runs ``2k`` and ``2k + 1`` share mirrored inputs, so they are
        correlated and ``s / sqrt(n)`` is not the error of their mean. The ``n / 2`` pair
        means ``y_k = (x_2k + x_2k+1) / 2`` are independent and identically distributed,
        and the mean of the runs is the mean of the ``y_k``, so the standard error is
        ``s_y / sqrt(n / 2)`` (``ddof=1``; Owen 2013, sec. 8.2). It needs an even ``n`` and
        is ``nan`` for a single pair.

        With one run (or one antithetic pair) there is no spread to estimate the error from,
        and with an infinite run (a job that never finishes) the mean is infinite: the
        result is then ``nan``, which every summary prints as ``n/a`` (not available).

        ``"lhs"`` and ``"sobol"``: still ``s / sqrt(n)``, the error plain Monte Carlo would
        have with as many runs. The designs' runs are not independent and their true error
        is usually smaller (a Latin hypercube's variance is at most ``n / (n - 1)`` times
        that of plain Monte Carlo), so for them this is an estimate of an upper bound.

        Examples
        --------
        >>> r = Result("pairs", {"x": np.array([1.0, 3.0, 2.5, 1.5])},
        ...            extras={"design": "antithetic"})
        >>> r.std_error("x")  # pair means 2.0 and 2.0: no error left
        0.0
        >>> round(Result("iid", {"x": np.array([1.0, 3.0, 2.5, 1.5])}).std_error("x"), 4)
        0.4564
        """
        x = self.samples(metric)
        if self.design == "antithetic":
            if x.size % 2:
                raise ValueError(
                    f"an antithetic result pairs runs (2k, 2k+1): {metric!r} has an odd "
                    f"number of runs ({x.size})"
                )
            x = 0.5 * (x[0::2] + x[1::2])
        if x.size < 2 or not np.isfinite(x).all():
            return float("nan")  # one run, or an infinite run: no finite error to state
        if np.ptp(x) == 0.0:
            return 0.0  # every run the same: no spread (np.std would report rounding noise)
        return float(np.std(x, ddof=1) / np.sqrt(x.size))

    def quantile(self, metric: str, q: float) -> float:
        """Sample quantile ``q`` in [0, 1] of ``metric``."""
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"q must lie in [0, 1], got {q}")
        return float(quantiles(self.samples(metric), [q])[0])

    def interval(self, metric: str, level: float = 0.9) -> tuple[float, float]:
        """Central interval holding ``level`` of the runs, e.g. P5-P95 for 0.9."""
        if not 0.0 < level < 1.0:
            raise ValueError(f"level must lie in (0, 1), got {level}")
        # (1 - 0.9) / 2 is 0.04999999999999999 in floating point: round it back to the
        # decimal the user meant, so P5-P95 is exactly the 0.05 and 0.95 quantiles.
        tail = round((1.0 - level) / 2.0, 12)
        return self.quantile(metric, tail), self.quantile(metric, 1.0 - tail)

    def stats(self, metric: str) -> dict[str, float]:
        """The summary of ``metric``: :data:`SUMMARY_STATS` (mean, its standard error, P5,
        P50, P95), the one place every table, JSON and sweep row takes them from.

        Quantiles are ``numpy.quantile``'s default (linear interpolation between order
        statistics), so with one run they are that run's value; ``std_error`` is ``nan``
        (not available) with one run.

        Examples
        --------
        >>> Result("r", {"x": np.array([4.0])}).stats("x")
        {'mean': 4.0, 'std_error': nan, 'p5': 4.0, 'p50': 4.0, 'p95': 4.0}
        """
        x = self.samples(metric)
        p5, p50, p95 = (float(v) for v in quantiles(x, [0.05, 0.5, 0.95]))
        values = (_mean(x), self.std_error(metric), p5, p50, p95)
        return dict(zip(SUMMARY_STATS, values, strict=True))

    def as_table(self, metrics: Sequence[str] | None = None) -> Table:
        """:meth:`summary` as a :class:`~accelsim.results.Table` (its cells, for the CLI)."""
        names = list(metrics) if metrics is not None else list(self.data)
        bounds = lower_bounds(self)

        def mark(metric: str) -> str:
            return LOWER_BOUND_MARK if metric in bounds else ""

        rows = []
        for m in names:
            st = self.stats(m)
            rows.append(
                (
                    m,
                    mark(m)
                    + f"{format_value(m, st['mean'])} ± {format_error(m, Z95 * st['std_error'])}",
                    mark(m) + format_value(m, st["p5"]),
                    mark(m) + format_value(m, st["p50"]),
                    mark(m) + format_value(m, st["p95"]),
                )
            )
        how = f"{self.engine} engine" + ("" if self.design == "mc" else f", {self.design} design")
        head = f"{self.scenario_name}: {self.runs} run{'s' * (self.runs != 1)} ({how})"
        if (note := self.unfinished_note()) is not None:
            head += f"; {note}"
        if bounds:
            head += f"\n{LOWER_BOUND_MARK.strip()} marks a lower bound (counted up to the horizon)"
        return Table(("metric", "mean ± 95% MC error", "P5", "P50", "P95"), tuple(rows), head)

    def unfinished_note(self) -> str | None:
        """``P(finish)`` and what an unfinished run means for its workloads (and, for an
        endpoint that cannot hold its model, the share of such runs), or ``None`` when every
        run finishes: the words :meth:`summary`'s first line and the report's warnings use."""
        if (absent := fleet_absent_note(self)) is not None:
            return absent
        if "finished" not in self.data or (p := float(np.mean(self.data["finished"]))) >= 1.0:
            return None
        return (
            f"{_finish_label(self.data)} {p:.1%}: {_unfinished_reason(self.data)}"
            f"{_no_fit_note(self.data)}"
        )

    def summary(
        self,
        metrics: Sequence[str] | None = None,
        *,
        max_price_age_days: int | None = STALE_PRICE_DAYS,
    ) -> str:
        """A table: mean ± 95 % Monte Carlo error, P5, P50, P95 of each metric; the first line
        states ``P(finish)`` when some runs do not finish: a training run not done within the
        horizon (its time and cost censored there), an endpoint that sheds requests.

        The error is ``1.96 * std_error(metric)``, so it follows the design of the study
        (over pair means for ``"antithetic"``), which the first line names when not ``"mc"``.
        With one run the error reads ``n/a``.

        A line states when the fleet exists (``extras["fleet_available"]``, the one rule of
        :func:`accelsim.scenario.fleet_available`).

        With a calibrated catalog (:func:`accelsim.catalog.calibrate`), a line per calibrated
        prior the study drew names it, the measurements behind it and its prior and
        posterior, and repeats any flag raised on a measurement.

        A last line warns when a price the study used is older than ``max_price_age_days``
        today (default 182, about six months; ``None`` turns the warning off), naming each
        such offer: see :meth:`stale_prices`.
        """
        text = str(self.as_table(metrics))
        if (fleet := self.extras.get("fleet_available")) is not None:
            text = f"{text}\nfleet: {fleet}"
        if (moved := self.price_change_note()) is not None:
            text = f"{text}\n{moved}"
        for record in self.extras.get("calibration", ()):
            text += f"\ncalibrated: {record['summary']}"
            text += "".join(f"\n  flagged: {flag}" for flag in record.get("flags", ()))
        if max_price_age_days is None:
            return text
        warning = self.price_age_warning(max_price_age_days)
        return text if warning is None else f"{text}\n{warning}"

    def price_change_note(self) -> str | None:
        """The line :meth:`summary` and the report print when on-demand or spot prices moved
        over the horizon (``assumptions.price_change_per_year`` drawn and not all 0), or
        ``None``."""
        g = self.inputs.get("assumptions.price_change_per_year")
        if g is None or not np.any(g):
            return None
        low, high = np.quantile(g, [0.05, 0.95]) if g.size > 1 else (g[0], g[0])
        spread = f" (P5 {low:+.1%}, P95 {high:+.1%})" if high > low else ""
        return (
            f"Prices move over the horizon: on-demand and spot prices change by "
            f"{float(np.mean(g)):+.1%} a year on average{spread}, from the catalog's prices "
            f"at day 0; commitments keep theirs (assumptions.price_change_per_year; 0 fixes "
            f"prices)."
        )

    def price_age_warning(self, max_age_days: int = STALE_PRICE_DAYS) -> str | None:
        """The line :meth:`summary` and the CLI print about prices older than
        ``max_age_days`` (provider, chip, pricing, as_of of each), or ``None``."""
        return stale_price_warning(self.stale_prices(max_age_days))

    def stale_prices(
        self, max_age_days: int = STALE_PRICE_DAYS, as_of: datetime.date | None = None
    ) -> list[dict[str, str]]:
        """The offers this study priced with (``extras["prices_used"]``) that were observed
        more than ``max_age_days`` before ``as_of`` (default today), oldest first."""
        if max_age_days < 0:
            raise ValueError(f"max_age_days must be >= 0, got {max_age_days}")
        today = as_of if as_of is not None else datetime.date.today()
        return [
            p
            for p in self.extras.get("prices_used", ())
            if (today - datetime.date.fromisoformat(p["as_of"])).days > max_age_days
        ]

    def _repr_html_(self) -> str:
        """:meth:`summary` as an HTML table, for notebooks."""
        from accelsim.results._html import result_html

        return result_html(self)

    def to_pandas(self) -> pd.DataFrame:
        """One row per run, one column per metric (needs pandas: ``pip install pandas``)."""
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "Result.to_pandas() needs pandas: pip install 'accelsim[pandas]'"
            ) from exc
        frame = pd.DataFrame({m: np.asarray(v) for m, v in self.data.items()})
        frame.index.name = "run"
        return frame


def _no_fit_note(data: Mapping[str, Any]) -> str:
    """Why an endpoint serves nothing in some runs, if it is memory: the share of runs in
    which a replica cannot hold its weights and one mean-length sequence (its offline
    throughput is 0), per serving workload; empty where every replica fits."""
    notes = []
    for m, values in data.items():
        if m.split(".")[-1] != "offline_tokens_per_s_per_chip":
            continue
        share = float(np.mean(np.asarray(values) <= 0.0))
        if share > 0.0:
            where = f"{m.rsplit('.', 1)[0]}: " if "." in m else ""
            notes.append(
                f"{where}in {share:.1%} of runs a replica's memory does not hold the weights "
                "and one mean-length sequence (offline_tokens_per_s_per_chip 0, nothing "
                "served; more chips_per_replica, a lower precision or a larger chip)"
            )
    return "".join(f"; {note}" for note in notes)


def _finish_label(data: Mapping[str, Any]) -> str:
    """What ``finished`` means, as the label of its share: ``P(finish)`` for training, the
    share of runs serving every request for an endpoint (it has no end to reach)."""
    training = any(m.split(".")[-1] == "time_to_train_days" for m in data)
    serving = any(m.split(".")[-1] == "requests_dropped" for m in data)
    if serving and not training:
        return "P(every request served)"
    if serving:
        return "P(finish: every training run done and every request served)"
    return "P(finish)"


def _unfinished_reason(data: Mapping[str, Any]) -> str:
    """What an unfinished run means for the workloads behind ``data``'s metrics (training:
    ``time_to_train_days``; serving: ``requests_dropped``; both in a mix)."""
    training = any(m.split(".")[-1] == "time_to_train_days" for m in data)
    serving = any(m.split(".")[-1] == "requests_dropped" for m in data)
    # in a mix the fleet is priced over the whole horizon: only the run's times are censored
    mix = any(m.endswith(".time_to_train_days") for m in data)
    what = "times are" if mix else "times and costs are"
    censored = (
        f"a training run does not finish within the horizon (its {what} censored there: at "
        "least the values shown)"
    )
    shed = (
        "an endpoint's replicas do not serve all its requests (requests_dropped; its "
        "per-token prices count the tokens served)"
    )
    if serving and not training:
        return f"in the other runs {shed}"
    if serving:
        return f"in the other runs {censored}, or {shed}"
    return (
        "the other runs do not finish within the horizon, and their times and costs are "
        "censored there (at least the values shown)"
    )
