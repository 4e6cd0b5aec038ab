"""The one YAML loader: YAML 1.2 (``6e23`` is a float, ``no`` is a string), duplicate keys
are errors, and every mapping remembers the line of each key so errors can point at it."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError

from accelsim.errors import ScenarioFileError


def _yaml() -> YAML:
    # Round-trip mode keeps line numbers (``.lc``); it resolves scalars as YAML 1.2 too.
    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    return yaml


def load_yaml_text(text: str, source: str = "<string>") -> Any:
    """Parse YAML text; a syntax error or duplicate key raises :class:`ScenarioFileError`."""
    try:
        return _yaml().load(io.StringIO(text))
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        raise ScenarioFileError(f"{where}: {exc.problem or exc.context}") from None


def load_yaml(path: str | Path) -> Any:
    """Read and parse a YAML file (see :func:`load_yaml_text`)."""
    p = Path(path)
    return load_yaml_text(p.read_text(encoding="utf-8"), source=str(p))


def line_of(doc: Any, loc: Sequence[str | int]) -> int | None:
    """1-based line of the deepest key of ``loc`` found in a round-trip YAML document."""
    node, line = doc, None
    for key in loc:
        try:
            if isinstance(node, CommentedMap) and key in node:
                line = node.lc.key(key)[0] + 1
            elif isinstance(node, CommentedSeq) and isinstance(key, int) and key < len(node):
                line = node.lc.item(key)[0] + 1
            else:
                break
            node = node[key]
        except (KeyError, IndexError, TypeError, AttributeError):
            break
    return line


def to_plain(node: Any) -> Any:
    """Convert ruamel's round-trip containers and scalars into plain dicts, lists and floats."""
    if isinstance(node, dict):
        return {str(k): to_plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [to_plain(v) for v in node]
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, str):
        return str(node)
    return node


__all__ = ["line_of", "load_yaml", "load_yaml_text", "to_plain"]
