"""Read SkyPilot's catalog files (``catalogs/v7/<cloud>/vms.csv``) as dated price sheets.

Many ML infrastructure teams keep SkyPilot's multi-cloud price feed on disk
(``~/.sky/catalogs/v7``, or a checkout of ``skypilot-org/skypilot-catalog``). Its rows price
instances per hour; this module turns each accelerator row into a price per chip-hour, per
region, on demand and spot, following the mapping in ``data/skypilot.yaml``:

- a GPU row's price is divided by its ``AcceleratorCount``. GCP's GPU rows price the GPUs
  alone; the machine type that carries them (``gcp_hosts`` in the mapping, e.g.
  ``a3-highgpu-8g`` for 8 H100s) is added from the same zone when the file has it, else the
  offer is the GPUs alone and its note says so;
- a TPU slice ``tpu-<version>-<n>`` holds ``n / cores_per_chip`` chips (v5p, v4, v3: 2 cores
  per chip; v5litepod and v6e: the number counts chips), and its price is divided by them;
- within a region, the cheapest zone and instance type is the region's offer (the note
  gives the range across zones and instances);
- an empty or zero price is no price (SkyPilot writes 0 where it found none).

Each offer is dated with the file's last git commit date when the file sits unmodified in a
git checkout, else the file's modification date, and names the file as its source
(``file://...``); its note starts with "SkyPilot catalog". An accelerator name the mapping
does not know is listed (:attr:`SkyPilotFeed.unmapped`), never guessed.
"""

from __future__ import annotations

import csv
import datetime
import math
import re
import subprocess
import warnings
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path

from accelsim._yaml import load_yaml_text, to_plain
from accelsim.catalog._loader import Catalog, activate, builtin_catalog
from accelsim.catalog._schema import Offer, PriceSheet, Pricing
from accelsim.errors import ScenarioFileError

FEED_NAME = "SkyPilot catalog"
"""How an offer read by this module names its feed (its note starts with it)."""

_TPU = re.compile(r"^tpu-(?P<version>[a-z0-9]+)-(?P<n>\d+)$", re.IGNORECASE)
_GIT_TIMEOUT_S = 10.0


class UnmappedAcceleratorWarning(UserWarning):
    """A SkyPilot catalog names accelerators that map to no chip of the catalog."""


@dataclass(frozen=True)
class UnmappedAccelerator:
    """An accelerator name in a SkyPilot file that maps to no catalog chip (not guessed)."""

    cloud: str
    """SkyPilot cloud folder, e.g. ``aws``."""
    name: str
    """The ``AcceleratorName`` as written, e.g. ``A10G`` or ``tpu-v2-8``."""
    rows: int
    """Rows of the file that name it [count]."""
    file: str
    """Path of the file."""


@dataclass(frozen=True)
class SkyPilotFeed:
    """What :func:`read_skypilot` found: one price sheet per cloud, and what it left out."""

    sheets: tuple[PriceSheet, ...]
    """One sheet per cloud with at least one mapped, priced accelerator row."""
    unmapped: tuple[UnmappedAccelerator, ...]
    """Accelerators the mapping does not know, per cloud, in file order."""
    files: tuple[str, ...]
    """The ``vms.csv`` files read."""


@dataclass(frozen=True)
class _Mapping:
    clouds: Mapping[str, str]
    gpus: Mapping[str, str]
    tpus: Mapping[str, tuple[str, int]]
    gcp_hosts: Mapping[tuple[str, int], str]
    """(GPU name upper-cased, GPU count) -> the GCP machine type that carries them."""


def _mapping() -> _Mapping:
    text = resources.files("accelsim.catalog").joinpath("data", "skypilot.yaml").read_text("utf-8")
    doc = to_plain(load_yaml_text(text, "skypilot.yaml"))
    return _Mapping(
        clouds=dict(doc["clouds"]),
        gpus={k.upper(): v["chip"] for k, v in doc["accelerators"].items()},
        tpus={k.lower(): (v["chip"], int(v["cores_per_chip"])) for k, v in doc["tpus"].items()},
        gcp_hosts={
            (name.upper(), int(n)): host
            for name, by_count in doc["gcp_hosts"].items()
            for n, host in by_count.items()
        },
    )


def _files(path: Path) -> list[tuple[str, Path]]:
    """(cloud, vms.csv) pairs under ``path``: a file, a cloud folder, a catalog version folder
    (``catalogs/v7``), or a folder holding ``catalogs/v<N>`` or ``v<N>`` (highest N wins)."""
    if path.is_file():
        return [(path.parent.name, path)]
    if (path / "vms.csv").is_file():
        return [(path.name, path / "vms.csv")]
    found = sorted((p.parent.name, p) for p in path.glob("*/vms.csv"))
    if found:
        return found
    for parent in (path / "catalogs", path):
        versions = sorted(
            (int(p.name[1:]), p) for p in parent.glob("v*") if p.is_dir() and p.name[1:].isdigit()
        )
        if versions:
            return _files(versions[-1][1])
    return []


def file_date(path: Path) -> datetime.date:
    """The date a price file holds for: its last git commit date when it is committed and
    unmodified in a git checkout, else its modification date (UTC)."""
    try:
        status = subprocess.run(
            ["git", "-C", str(path.parent), "status", "--porcelain", "--", path.name],
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
        )
        if status.returncode == 0 and not status.stdout.strip():
            log = subprocess.run(
                ["git", "-C", str(path.parent), "log", "-1", "--format=%cs", "--", path.name],
                capture_output=True,
                text=True,
                timeout=_GIT_TIMEOUT_S,
                check=False,
            )
            if log.returncode == 0 and log.stdout.strip():
                return datetime.date.fromisoformat(log.stdout.strip())
    except (OSError, subprocess.SubprocessError, ValueError):
        pass  # no git, or not a checkout: the file's own date
    stamp = path.stat().st_mtime
    return datetime.datetime.fromtimestamp(stamp, tz=datetime.UTC).date()


def _price(cell: str | None) -> float | None:
    """A price cell as USD, or None for an empty, unparsable, zero or negative cell."""
    try:
        value = float(cell) if cell not in (None, "") else math.nan
    except ValueError:
        return None
    return value if math.isfinite(value) and value > 0 else None


@dataclass(frozen=True)
class _Row:
    chip: str
    chips: float
    instance: str
    region: str
    zone: str
    prices: Mapping[Pricing, float]
    accelerators_only: bool
    """True for a row with no InstanceType (GCP: GPUs priced apart from their host)."""


def _chips_of(name: str, count: str, m: _Mapping) -> tuple[str, float, str] | None:
    """(chip id, chips per priced unit, label) of an accelerator, or None if unmapped."""
    tpu = _TPU.match(name)
    if tpu is not None:
        found = m.tpus.get(tpu["version"].lower())
        if found is None or int(tpu["n"]) % found[1]:
            return None
        chips = int(tpu["n"]) // found[1]
        return found[0], float(chips), f"{name} ({chips} chips)"
    chip = m.gpus.get(name.upper())
    if chip is None:
        return None
    try:
        n = float(count)
    except ValueError:
        return None
    return (chip, n, f"{n:g}x {name}") if n >= 1 else None


def _prices(rec: Mapping[str, str | None]) -> dict[Pricing, float]:
    """The on-demand and spot prices a row states (per instance- or slice-hour)."""
    cells: tuple[tuple[Pricing, str | None], ...] = (
        ("on_demand", rec.get("Price")),
        ("spot", rec.get("SpotPrice")),
    )
    return {pricing: value for pricing, cell in cells if (value := _price(cell)) is not None}


def _with_host(
    row: _Row, name: str, hosts: Mapping[tuple[str, str], Mapping[Pricing, float]], m: _Mapping
) -> _Row:
    """A GCP GPU row with the price of its machine type in the same zone added, per chip.

    Where the file has no row for that machine type in the zone (or the mapping names
    none), the row stays the GPUs alone (its offer's note says so). A pricing the machine
    type's row leaves empty is dropped: an offer is a whole price or none.
    """
    host = m.gcp_hosts.get((name.upper(), round(row.chips)))
    machine = hosts.get((host, row.zone)) if host is not None else None
    if machine is None:
        return row
    priced = {p: usd + machine[p] / row.chips for p, usd in row.prices.items() if p in machine}
    return replace(row, instance=f"{host} ({row.instance})", prices=priced, accelerators_only=False)


def _read(cloud: str, path: Path, m: _Mapping) -> tuple[list[_Row], list[UnmappedAccelerator]]:
    rows: list[tuple[str, _Row]] = []
    hosts: dict[tuple[str, str], Mapping[Pricing, float]] = {}
    unmapped: dict[str, int] = {}
    with path.open(newline="", encoding="utf-8") as fh:
        for rec in csv.DictReader(fh):
            name = (rec.get("AcceleratorName") or "").strip()
            instance = (rec.get("InstanceType") or "").strip()
            zone = (rec.get("AvailabilityZone") or "").strip()
            if not name:  # a machine type without accelerators: a possible GCP GPU host
                hosts[(instance, zone)] = _prices(rec)
                continue
            found = _chips_of(name, rec.get("AcceleratorCount") or "", m)
            if found is None:
                unmapped[name] = unmapped.get(name, 0) + 1
                continue
            chip, chips, label = found
            per_chip = {p: usd / chips for p, usd in _prices(rec).items()}
            row = _Row(
                chip=chip,
                chips=chips,
                instance=f"{instance} ({label})" if instance else label,
                region=(rec.get("Region") or "").strip(),
                zone=zone,
                prices=per_chip,
                accelerators_only=not instance and _TPU.match(name) is None,
            )
            rows.append((name, row))
    paired = [_with_host(r, n, hosts, m) if r.accelerators_only else r for n, r in rows]
    missing = [UnmappedAccelerator(cloud, n, k, str(path)) for n, k in unmapped.items()]
    return paired, missing


def _offers(provider: str, cloud: str, path: Path, rows: Iterable[_Row]) -> list[Offer]:
    """One offer per (chip, pricing, region): the cheapest zone and instance of the region."""
    groups: dict[tuple[str, Pricing, str], list[tuple[float, _Row]]] = defaultdict(list)
    for row in rows:
        for pricing, usd in row.prices.items():
            groups[(row.chip, pricing, row.region)].append((usd, row))
    as_of = file_date(path)
    uri = path.resolve().as_uri()
    out = []
    for (chip, pricing, region), priced in sorted(groups.items()):
        usd, best = min(priced, key=lambda p: (p[0], p[1].instance, p[1].zone))
        high = max(p[0] for p in priced)
        spread = (
            f"; cheapest of {len(priced)} zone/instance rows (up to ${high:.4f}/chip-h)"
            if len(priced) > 1
            else ""
        )
        gpus_only = (
            "; the GPUs alone: the host machine type is billed apart"
            if best.accelerators_only
            else ""
        )
        out.append(
            Offer(
                provider=provider,
                chip=chip,
                pricing=pricing,
                usd_per_chip_hour=round(usd, 6),
                region=region or None,
                instance=best.instance,
                as_of=as_of,
                source=uri,
                note=(
                    f"{FEED_NAME} {cloud}/vms.csv: ${usd * best.chips:.4f}/h for "
                    f"{best.instance} in {best.zone or region} / {best.chips:g} chips"
                    f"{spread}{gpus_only}."
                ),
            )
        )
    return out


def read_skypilot(path: str | Path, names: Mapping[str, str] | None = None) -> SkyPilotFeed:
    """Read SkyPilot catalog files into one price sheet per cloud (without activating them).

    Parameters
    ----------
    path : str or Path
        A folder holding ``<cloud>/vms.csv`` (e.g. ``~/.sky/catalogs/v7``), a folder holding
        ``catalogs/v<N>`` or ``v<N>`` (the highest version is read), one cloud's folder, or
        one ``vms.csv``.
    names : mapping, optional
        Provider id -> sheet name to keep (e.g. the built-in sheets' names).

    Raises
    ------
    ScenarioFileError
        If no ``vms.csv`` is found, or a file has no ``AcceleratorName`` column.
    """
    root = Path(path).expanduser()
    files = _files(root)
    if not files:
        raise ScenarioFileError(
            f"{root}: no SkyPilot catalog here (expected <cloud>/vms.csv, e.g. "
            f"~/.sky/catalogs/v7/aws/vms.csv)"
        )
    m = _mapping()
    sheets: list[PriceSheet] = []
    unmapped: list[UnmappedAccelerator] = []
    for cloud, file in files:
        with file.open(newline="", encoding="utf-8") as fh:
            header = next(csv.reader(fh), [])
        if "AcceleratorName" not in header:
            raise ScenarioFileError(f"{file}: not a SkyPilot vms.csv (no AcceleratorName column)")
        rows, missing = _read(cloud, file, m)
        unmapped += missing
        provider = m.clouds.get(cloud, cloud.lower())
        offers = _offers(provider, cloud, file, rows)
        if offers:
            name = (names or {}).get(provider, provider)
            sheets.append(
                PriceSheet(provider=provider, name=f"{name} ({FEED_NAME})", offers=tuple(offers))
            )
    return SkyPilotFeed(tuple(sheets), tuple(unmapped), tuple(str(f) for _, f in files))


def unmapped_message(unmapped: Iterable[UnmappedAccelerator]) -> str:
    """One line naming the accelerators a feed left out, by cloud."""
    by_cloud: dict[str, list[str]] = defaultdict(list)
    for u in unmapped:
        by_cloud[u.cloud].append(u.name)
    listed = "; ".join(f"{c}: {', '.join(sorted(n))}" for c, n in sorted(by_cloud.items()))
    return (
        f"{FEED_NAME}: accelerators that map to no catalog chip were left out ({listed}); "
        f"add the chip with acs.catalog.load or price it with 'accelsim catalog quote'"
    )


def load_skypilot(path: str | Path) -> Catalog:
    """Merge a SkyPilot catalog over the built-ins and make the result the active catalog.

    Like :func:`accelsim.catalog.load`: the feed's offers replace built-in offers of the same
    (provider, chip, pricing); a study snapshots the active catalog when it is called. The
    accelerators the mapping does not know are named in an
    :class:`UnmappedAcceleratorWarning` (and listed by :func:`read_skypilot`).
    """
    base = builtin_catalog()
    feed = read_skypilot(path, names={p: s.name for p, s in base.sheets.items()})
    catalog = base.merged((), feed.sheets)
    activate(catalog)
    if feed.unmapped:
        warnings.warn(unmapped_message(feed.unmapped), UnmappedAcceleratorWarning, stacklevel=2)
    return catalog


__all__ = [
    "FEED_NAME",
    "SkyPilotFeed",
    "UnmappedAccelerator",
    "UnmappedAcceleratorWarning",
    "file_date",
    "load_skypilot",
    "read_skypilot",
]
