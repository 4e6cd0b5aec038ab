"""The one YAML loader: YAML 1.2 (``6e23`` is a float, ``no`` is a string), duplicate keys
are errors, and every mapping remembers the line of each key so errors can point at it.

It is bounded for any input: nesting deeper than :data:`MAX_DEPTH` is refused while
parsing (before Python's recursion limit), aliases (``*name``) are refused in files a user
gives, since a few hundred bytes of nested aliases expand to gigabytes ("billion laughs"),
and a document whose expanded size passes :data:`MAX_NODES` is refused before anything
copies it. Shipped data files may use anchors; the size cap bounds them too.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.composer import Composer, ComposerError, MaxDepthExceededError
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import AliasEvent

from accelsim.errors import ScenarioFileError

MAX_DEPTH = 64
"""Deepest nesting of mappings and sequences accepted in a YAML or JSON file."""

MAX_NODES = 1_000_000
"""Most values (scalars, mappings, sequences, aliases expanded) one YAML document may hold."""

_TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels; accelsim refuses it"
_NO_ALIASES = (
    "YAML anchors and aliases (&name, *name) are not accepted here; write the value out in full"
)


class _NoAliasComposer(Composer):
    """A composer that refuses anchors and aliases before it builds a node from them."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        """Compose one node, refusing an alias or an anchor at its mark."""
        event = self.parser.peek_event()
        if isinstance(event, AliasEvent) or getattr(event, "anchor", None) is not None:
            raise ComposerError(None, None, _NO_ALIASES, event.start_mark)
        return super().compose_node(parent, index)


def _yaml(aliases: bool) -> YAML:
    # Round-trip mode keeps line numbers (``.lc``); it resolves scalars as YAML 1.2 too.
    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    yaml.max_depth = MAX_DEPTH
    if not aliases:
        yaml.Composer = _NoAliasComposer
    return yaml


def _check_size(doc: Any, source: str) -> None:
    """Refuse a document whose expanded tree holds more than :data:`MAX_NODES` values.

    Walks the tree as :func:`to_plain` would copy it (an alias counted each time it is
    used) and stops at the cap, so the check itself costs at most ``MAX_NODES`` steps; a
    self-referencing anchor reaches the cap instead of looping.
    """
    stack, seen = [doc], 0
    while stack:
        node = stack.pop()
        seen += 1
        if seen > MAX_NODES:
            raise ScenarioFileError(
                f"{source}: the document expands to more than {MAX_NODES:,} values "
                "(nested aliases?); accelsim refuses it"
            )
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def load_yaml_text(text: str, source: str = "<string>", *, aliases: bool = False) -> Any:
    """Parse YAML text; a syntax error, a duplicate key, nesting deeper than
    :data:`MAX_DEPTH`, a document larger than :data:`MAX_NODES` once expanded or (unless
    ``aliases``) an anchor or alias raises :class:`ScenarioFileError` naming ``source``."""
    try:
        doc = _yaml(aliases).load(io.StringIO(text))
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        problem = _TOO_DEEP if isinstance(exc, MaxDepthExceededError) else exc.problem
        raise ScenarioFileError(f"{where}: {problem or exc.context}") from None
    except YAMLError as exc:  # a character YAML does not allow, before any mark exists
        raise ScenarioFileError(f"{source}: {str(exc).splitlines()[0]}") from None
    _check_size(doc, source)
    return doc


def load_yaml(path: str | Path, *, aliases: bool = False) -> Any:
    """Read and parse a YAML file (see :func:`load_yaml_text`)."""
    p = Path(path)
    return load_yaml_text(read_text(p), source=str(p), aliases=aliases)


MAX_FILE_BYTES = 16 * 2**20
"""Largest scenario, grid or catalog file read (16 MiB); traces are read apart."""


def read_text(path: Path) -> str:
    """The UTF-8 text of ``path``, refused with the file's name if it is over
    :data:`MAX_FILE_BYTES` or not UTF-8."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ScenarioFileError(f"{path}: cannot read it ({exc.strerror})") from None
    if size > MAX_FILE_BYTES:
        raise ScenarioFileError(
            f"{path}: {size / 2**20:.3g} MiB is over the {MAX_FILE_BYTES // 2**20} MiB "
            "accepted for a scenario, grid or catalog file"
        )
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioFileError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise ScenarioFileError(f"{path}: cannot read it ({exc.strerror})") from None


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


def too_deep(source: str) -> ScenarioFileError:
    """The error for a file nested deeper than :data:`MAX_DEPTH`, naming ``source``."""
    return ScenarioFileError(f"{source}: {_TOO_DEEP}")


def check_depth(data: Any, source: str) -> None:
    """Refuse plain data (from JSON or TOML) nested deeper than :data:`MAX_DEPTH`."""
    stack = [(data, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise too_deep(source)
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)


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


__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_NODES",
    "check_depth",
    "line_of",
    "load_yaml",
    "load_yaml_text",
    "read_text",
    "to_plain",
    "too_deep",
]
