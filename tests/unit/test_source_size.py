"""Small modules and small functions, everywhere in ``src/`` (issue 27).

A module has at most 600 lines; a function at most 60 code lines, a code line being one
that is not blank, not a comment and not part of the docstring (counted on the syntax
tree). The code reads as named steps (inputs, model calls, pricing; the serving replica's
boundary loop as the rules of ``accelsim.engines.serving.des._run``), and this keeps it so.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import accelsim

MAX_CODE_LINES = 60
MAX_MODULE_LINES = 600
MODULES = sorted(Path(accelsim.__file__).parent.rglob("*.py"))


def code_lines(source: str) -> dict[str, int]:
    """Code lines of every function (methods as ``Class.name``) in ``source``."""
    lines = source.splitlines()
    sizes: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                first = child.body[0]
                docstring: set[int] = set()
                if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                    docstring = set(range(first.lineno, (first.end_lineno or first.lineno) + 1))
                end = child.end_lineno or child.lineno
                sizes[prefix + child.name] = sum(
                    1
                    for number in range(child.lineno, end + 1)
                    if number not in docstring
                    and lines[number - 1].strip()
                    and not lines[number - 1].strip().startswith("#")
                )
                visit(child, f"{prefix}{child.name}.")

    visit(ast.parse(source), "")
    return sizes


def test_code_lines_counts_only_code() -> None:
    source = 'def f(x):\n    """Doc.\n\n    More.\n    """\n\n    # why\n    y = x\n    return y\n'
    assert code_lines(source) == {"f": 3}  # the def line and two statements


def test_every_module_is_found() -> None:
    names = {path.name for path in MODULES}
    assert {"_analytic.py", "_pricing.py", "_replica.py", "_cluster.py", "cli.py"} <= names


def _id(path: Path) -> str:
    return str(path.relative_to(Path(accelsim.__file__).parent))


@pytest.mark.parametrize("path", MODULES, ids=_id)
def test_no_function_over_sixty_code_lines(path: Path) -> None:
    sizes = code_lines(path.read_text(encoding="utf-8"))
    too_long = {name: n for name, n in sizes.items() if n > MAX_CODE_LINES}
    assert not too_long, f"{_id(path)}: functions over {MAX_CODE_LINES} code lines: {too_long}"


@pytest.mark.parametrize("path", MODULES, ids=_id)
def test_no_module_over_six_hundred_lines(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{_id(path)}: {lines} lines (at most {MAX_MODULE_LINES})"
