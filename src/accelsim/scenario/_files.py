"""Reading a scenario file (YAML, JSON, TOML) with errors that name the file and line."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from pydantic import (
    ValidationError,
)

from accelsim._yaml import check_depth, line_of, load_yaml_text, read_text, to_plain, too_deep
from accelsim.errors import ScenarioFileError
from accelsim.scenario._scenario import Scenario


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's pairs as a dict; a key given twice is an error, as it is in YAML."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _parse_json(text: str, source: str) -> Any:
    """JSON text as plain data; a duplicate key or deep nesting is refused naming ``source``."""
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise ScenarioFileError(f"{source}:{exc.lineno}:{exc.colno}: {exc.msg}") from None
    except ValueError as exc:  # from _unique_keys
        raise ScenarioFileError(f"{source}: {exc}") from None
    except RecursionError:
        raise too_deep(source) from None
    check_depth(data, source)
    return data


def _read(path: Path) -> tuple[Any, Any]:
    """(plain data, YAML document or None) from a .yaml/.yml/.json/.toml file."""
    text = read_text(path)
    suffix = path.suffix.lower()
    if suffix in {".yaml", ".yml"}:
        doc = load_yaml_text(text, source=str(path))
        return to_plain(doc), doc
    if suffix == ".json":
        return _parse_json(text, str(path)), None
    if suffix == ".toml":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ScenarioFileError(f"{path}: {exc}") from None
        except RecursionError:
            raise too_deep(str(path)) from None
        check_depth(data, str(path))
        return data, None
    raise ScenarioFileError(
        f"{path}: unknown scenario file type {suffix!r}; use .yaml, .json or .toml"
    )


def format_validation_error(exc: ValidationError, source: str, doc: Any = None) -> str:
    """One line per problem: ``file:line: field.path: message``."""
    lines = []
    for err in exc.errors():
        loc = [part for part in err["loc"] if not (isinstance(part, str) and "[" in part)]
        field = ".".join(str(p) for p in loc) or "(top level)"
        line = line_of(doc, loc) if doc is not None else None
        where = f"{source}:{line}" if line is not None else source
        lines.append(f"{where}: {field}: {err['msg']}")
    return "\n".join(lines)


def load_scenario(path: str | Path) -> Scenario:
    """Read a scenario from YAML, JSON or TOML; errors name the file, line and field path.

    A relative ``Trace.path`` (of the workload or the background) is resolved against the
    scenario file's folder.
    """
    p = Path(path)
    if not p.is_file():
        raise ScenarioFileError(f"{p}: no such scenario file")
    data, doc = _read(p)
    if not isinstance(data, dict):
        raise ScenarioFileError(f"{p}: a scenario file must hold a mapping at the top level")
    for key in ("workload", "background"):
        work = data.get(key)
        if isinstance(work, dict) and work.get("kind") == "trace" and "path" in work:
            trace_path = Path(str(work["path"]))
            if not trace_path.is_absolute():
                work["path"] = str((p.parent / trace_path).resolve())
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise ScenarioFileError(format_validation_error(exc, str(p), doc)) from exc
