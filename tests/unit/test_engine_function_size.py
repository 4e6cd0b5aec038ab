"""Every engine function stays under ~60 code lines (issue 12, item 3).

A code line is one that is not blank, not a comment and not part of the docstring. The
engines read as named steps (inputs, model calls, pricing; the serving replica's boundary
loop as the rules of ``accelsim.engines.serving.des._run``), and this keeps them so.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import accelsim.engines as engines

MAX_CODE_LINES = 60
ENGINE_MODULES = sorted(Path(engines.__file__).parent.rglob("*.py"))


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


def test_the_engine_modules_are_found() -> None:
    names = {path.name for path in ENGINE_MODULES}
    assert {"_analytic.py", "_pricing.py", "_replica.py", "_cluster.py"} <= names


@pytest.mark.parametrize("path", ENGINE_MODULES, ids=lambda path: path.name)
def test_no_engine_function_over_sixty_code_lines(path: Path) -> None:
    sizes = code_lines(path.read_text(encoding="utf-8"))
    too_long = {name: n for name, n in sizes.items() if n > MAX_CODE_LINES}
    assert not too_long, f"{path.name}: functions over {MAX_CODE_LINES} code lines: {too_long}"
