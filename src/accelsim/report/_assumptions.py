"""The report's assumptions and prices: every input with who set it and its sources, and the
catalog offer behind each pool."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from accelsim import catalog
from accelsim.catalog import Prior
from accelsim.dists import EVERY_DIST_TYPE
from accelsim.report._page_data import Assumption, Price
from accelsim.results import Result, format_usd, format_value
from accelsim.scenario import Scenario

# ---------------------------------------------------------------- assumptions


_PRIOR_ALIASES = {"spot_preemptions_per_hour": "spot_preemptions_per_chip_hour"}
_SITE_FIELDS = {"pue": "pue", "electricity_usd_per_kwh": "usd_per_kwh"}


def describe_value(value: object) -> str:
    """A number or distribution as its YAML form, e.g. ``pert(low=0.3, mode=0.42, high=0.56)``."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | float):
        return f"{value:g}"
    if isinstance(value, EVERY_DIST_TYPE):
        fields = value.model_dump()
        tag = fields.pop("dist")
        inner = ", ".join(
            f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in fields.items()
        )
        return f"{tag}({inner})"
    return str(value)


def _drawn(x: np.ndarray) -> str:
    if np.ptp(x) == 0:
        return f"{format_value('', float(x[0]))} (every run)"
    p5, p50, p95 = np.quantile(x, [0.05, 0.5, 0.95])
    return " / ".join(format_value("", float(v)) for v in (p5, p50, p95))


def source_label(url: str) -> str:
    """A source's link text: host and path, without the scheme, cut to 40 characters."""
    text = url.split("://", 1)[-1].removeprefix("www.").rstrip("/")
    return text if len(text) <= 40 else text[:39] + "…"


def _sources(sources: Sequence[catalog.Source]) -> tuple[tuple[str, str], ...]:
    return tuple((str(s.url), s.as_of.isoformat()) for s in sources)


def _user_value(scenario: Scenario | None, scope: str, path: str) -> object | None:
    if scenario is None:
        return None
    field_name = path.split(".")[0]
    holder: object = scenario.assumptions if scope == "assumptions" else scenario.workload
    if scope not in ("assumptions", "workload"):
        return None
    # Only what the user set is the user's: a field left at its default is not "you".
    if field_name not in getattr(holder, "model_fields_set", ()):
        return None
    value = getattr(holder, field_name, None)
    return value


_MEASURED_SCALE = "priors.mfu_reference_chips_by_chip."


def _calibrated_row(
    name: str, record: dict[str, Any] | None, drawn: str, used_by: str
) -> Assumption:
    """The row of a prior calibrated to the user's measurements (``record``: the result's
    ``extras["calibration"]`` entry; ``None`` for the measured scale of a calibrated MFU)."""
    if record is None:
        value, basis, note = drawn.removesuffix(" (every run)"), "the measured runs' scale", ""
    else:
        low, mid, high = record["posterior"]
        value = f"{mid:.3g} [{low:.3g}-{high:.3g}]"
        basis = f"{record['measurements']} measurement(s), {record['pooled']} pooled"
        note = f"{record['summary']}" + "".join(f" Flagged: {f}" for f in record["flags"])
    return Assumption(name, value, "", "your measurements", False, basis, (), drawn, used_by, note)


def _is_default(scenario: Scenario | None, scope: str, path: str) -> bool:
    """Whether ``scope.path`` is a scenario field the user left at its default."""
    if scenario is None or scope not in ("assumptions", "workload"):
        return False
    holder: object = scenario.assumptions if scope == "assumptions" else scenario.workload
    field_name = path.split(".")[0]
    return field_name in getattr(type(holder), "model_fields", {}) and field_name not in getattr(
        holder, "model_fields_set", ()
    )


def assumptions(
    results: Mapping[str, Result], scenarios: Mapping[str, Scenario]
) -> tuple[Assumption, ...]:
    """Every drawn input (and every assumption the user set) with its provenance."""
    by_name = catalog.priors().by_name()
    # Serving priors are drawn as ``priors.serving.<name>`` (max_batch.cuda,
    # prefill_chunk_tokens_by_chip.a100-80gb...): looked up under ``serving.<name>``.
    by_name |= {f"serving.{k}": v for k, v in catalog.serving_priors().by_name().items()}
    names = list(dict.fromkeys(k for r in results.values() for k in r.inputs))
    calibrated = {c["name"]: c for r in results.values() for c in r.extras.get("calibration", ())}
    rows = [_input_row(name, results, scenarios, by_name, calibrated) for name in names]
    rows += _set_not_drawn(scenarios, {r.name for r in rows}, by_name)
    return tuple(sorted(rows, key=lambda a: (not a.user_set, a.name)))


def _input_row(
    name: str,
    results: Mapping[str, Result],
    scenarios: Mapping[str, Scenario],
    by_name: Mapping[str, Prior],
    calibrated: Mapping[str, dict[str, Any]],
) -> Assumption:
    """The provenance of one drawn input: the user's value, the team's measurements, an
    on-prem site sheet, a catalog prior, a derived figure, or a fixed or engine value."""
    users = [n for n, r in results.items() if name in r.inputs]
    option = users[0]
    res, scenario = results[option], scenarios.get(option)
    x = np.asarray(res.inputs[name])
    scope, _, path = name.partition(".")
    used_by = "all" if len(users) == len(results) else ", ".join(users)
    user = _user_value(scenario, scope, path)
    prior = by_name.get(_PRIOR_ALIASES.get(path, path))
    pricing = getattr(res.info, "pricing", None) or (
        scenario.fleet[0].pricing if scenario is not None else None
    )
    unit = prior.unit if prior else ""
    if user is not None:
        return Assumption(name, describe_value(user), unit, "you", True, "set in the scenario",
                          (), _drawn(x), used_by)  # fmt: skip
    if name in calibrated or name.startswith(_MEASURED_SCALE):
        return _calibrated_row(name, calibrated.get(name), _drawn(x), used_by)
    if path in _SITE_FIELDS and pricing == "on_prem":
        site = catalog.site(getattr(res.info, "provider", None) or "on_prem")
        return Assumption(name, describe_value(getattr(site, _SITE_FIELDS[path])), unit,
                          "on-prem site sheet", False, "published", _sources(site.sources),
                          _drawn(x), used_by)  # fmt: skip
    if prior is not None and not (
        np.ptp(x) == 0
        and not (isinstance(prior.value, int | float) and float(prior.value) == float(x[0]))
    ):
        basis = "judgement" if prior.assumption else "published"
        value, sources = describe_value(prior.value), _sources(prior.sources)
        return Assumption(name, value, prior.unit, "catalog prior", False, basis, sources,
                          _drawn(x), used_by, prior.note)  # fmt: skip
    if name == "engineering.reoptimization_hours":
        value = "architecture changes × hours per change"
        return Assumption(name, value, "engineer·h", "derived", False,
                          "from the priors above", (), _drawn(x), used_by)  # fmt: skip
    fixed = "default (not set)" if _is_default(scenario, scope, path) else "the scenario"
    source = fixed if np.ptp(x) == 0 else "engine"
    value = _drawn(x).removesuffix(" (every run)")
    return Assumption(name, value, "", source, False, "—", (), _drawn(x), used_by)


def _set_not_drawn(
    scenarios: Mapping[str, Scenario], seen: set[str], by_name: Mapping[str, Prior]
) -> list[Assumption]:
    """Assumptions the user set that the engine did not draw (listed, not hidden)."""
    rows = []
    for option, scenario in scenarios.items():
        for field_name in type(scenario.assumptions).model_fields:
            value = getattr(scenario.assumptions, field_name)
            name = f"assumptions.{field_name}"
            if value is None or name in seen or any(s.startswith(name + ".") for s in seen):
                continue
            seen.add(name)
            prior = by_name.get(field_name)
            rows.append(
                Assumption(name, describe_value(value), prior.unit if prior else "", "you", True,
                           "set in the scenario", (), "not drawn by this engine", option)
            )  # fmt: skip
    return rows


def prices(results: Mapping[str, Result], scenarios: Mapping[str, Scenario]) -> tuple[Price, ...]:
    """The catalog offer behind each pool of each option (from the scenario, else its info)."""
    out = []
    for name, res in results.items():
        pools: list[tuple[str, str | None, str, int | None, str | None]] = []
        if name in scenarios:
            pools = [
                (p.chip, p.provider, p.pricing, p.block_days, p.region)
                for p in scenarios[name].fleet
            ]
        elif res.info is not None:
            pools = [(res.info.chip, res.info.provider, res.info.pricing, None, None)]
        for chip_id, provider, pricing, block_days, region in pools:
            if provider is None:
                continue
            try:
                offer = catalog.price(chip_id, provider, pricing, region)  # type: ignore[arg-type]
            except (LookupError, ValueError):
                continue
            price = (
                f"{format_usd(offer.usd_per_chip_hour, small=',.2f')} per chip-hour"
                if offer.usd_per_chip_hour is not None
                else f"{format_usd(offer.purchase_usd_per_chip or 0.0)} per chip, "
                f"{offer.amortization_years:g} years"
            )
            if pricing == "capacity_block":  # bought (and paid) by the window
                window = "" if block_days is None else f"{block_days}-day "
                price += f", in {window}blocks paid whole"
            out.append(
                Price(
                    name,
                    offer.provider,
                    offer.chip,
                    offer.pricing,
                    price,
                    offer.as_of.isoformat(),
                    str(offer.source),
                )
            )
    return tuple(out)
