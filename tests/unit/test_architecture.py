"""The layers of DESIGN.md, held by the source itself.

Every ``import`` in ``src/accelsim`` (also those inside functions) is read from the syntax
tree and resolved to a module of the package. Three rules:

1. A module imports only from its own layer or the layers below it.
2. A ``_private`` module is imported only from inside its own layer package (anything under
   ``accelsim.engines`` may import ``accelsim.engines._inputs``; ``accelsim.study`` may not).
3. There is no import cycle between modules, package ``__init__`` files included: a
   submodule that imports from its own package's namespace (``from accelsim.engines import
   des`` inside a module that ``accelsim/engines/__init__`` imports) closes a cycle.

The extras (demo, calibration, strategies) sit beside the surface (the CLI runs them) and
are never imported by the core.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "accelsim"

# Bottom to top, as drawn in DESIGN.md and docs/architecture.md. A module's layer is that of
# the longest prefix listed here.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("accelsim._typing", "accelsim.errors", "accelsim.seeding", "accelsim._yaml"),
    ("accelsim.dists",),
    ("accelsim.catalog",),
    ("accelsim.scenario",),
    ("accelsim.models",),
    ("accelsim.engines",),
    ("accelsim.results",),
    ("accelsim.study",),
    ("accelsim.cli", "accelsim.plot", "accelsim.report", "accelsim"),
)
EXTRAS = (
    "accelsim.demo",
    "accelsim.calibration",
    "accelsim.serving_calibration",
    "accelsim.strategies",
)
SURFACE = len(LAYERS) - 1


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _is_module(name: str) -> bool:
    return name in MODULES


def _is_extra(module: str) -> bool:
    return any(module == e or module.startswith(e + ".") for e in EXTRAS)


def _layer(module: str) -> int:
    best, layer = -1, -1
    for i, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, layer = len(prefix), i
    if _is_extra(module):
        return SURFACE
    assert layer >= 0, f"{module} is in no layer: add it to LAYERS or EXTRAS"
    return layer


def _package_of(module: str) -> str:
    return module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]


def _imports(module: str) -> set[str]:
    """Modules of accelsim that ``module`` imports, anywhere in its body."""
    return _imports_of(MODULES[module].read_text(encoding="utf-8"), module)


def _imports_of(source: str, module: str) -> set[str]:
    """Modules of accelsim that ``source``, the text of ``module``, imports."""
    tree = ast.parse(source)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("accelsim")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = importlib.util.resolve_name("." * node.level + base, _package_of(module))
            if not base.startswith("accelsim"):
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if _is_module(sub) else base)
                # ``from package import submodule`` reads the name from the package's
                # namespace, so it runs (and waits on) the package's __init__: an edge to it
                # (not the root package, whose __init__ is always run first, by any import).
                if base != "accelsim" and MODULES.get(base, SRC).name == "__init__.py":
                    found.add(base)
    return {m for m in found if m != module}


GRAPH = {m: _imports(m) for m in MODULES}


def _layer_package(module: str) -> str:
    """The package that owns a module's layer, e.g. ``accelsim.engines`` for des modules."""
    parts = module.split(".")
    return ".".join(parts[:2])


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_only_go_down(module: str) -> None:
    own = _layer(module)
    upward = sorted(t for t in GRAPH[module] if _layer(t) > own)
    assert not upward, f"{module} (layer {own}) imports upward: {upward}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_private_modules_stay_in_their_layer_package(module: str) -> None:
    leaks = []
    for target in GRAPH[module]:
        # accelsim._typing, accelsim._yaml: the package's own toolkit, shared by every layer.
        private = [p for p in target.split(".")[2:] if p.startswith("_")]
        if private and _layer_package(target) != _layer_package(module):
            leaks.append(target)
    assert not leaks, f"{module} imports private modules of another layer: {sorted(leaks)}"


def test_no_import_cycles() -> None:
    # A package's __init__ importing its own submodules is an edge like any other: a
    # submodule that imports back from the package's namespace closes a real cycle.
    def edges(m: str) -> set[str]:
        return GRAPH[m]

    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in sorted(edges(m)):
            if state.get(t) == 1:
                cycles.append([*stack[stack.index(t) :], t])
            elif t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(MODULES):
        if m not in state:
            visit(m)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_core_never_imports_an_extra() -> None:
    core = [m for m in MODULES if _layer(m) < SURFACE]
    bad = {m: sorted(t for t in GRAPH[m] if _is_extra(t)) for m in core}
    assert not {m: t for m, t in bad.items() if t}


def test_models_do_no_io() -> None:
    banned = {"accelsim._yaml", "accelsim.catalog", "importlib.resources", "simpy"}
    for m in MODULES:
        if not m.startswith("accelsim.models"):
            continue
        tree = ast.parse(MODULES[m].read_text(encoding="utf-8"))
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not names & banned, f"{m} imports {sorted(names & banned)}"


def test_the_rules_can_fail() -> None:
    """The checks above see what they should: a known downward import and a known layer."""
    assert any(
        t.startswith("accelsim.models") for t in GRAPH["accelsim.engines.training._analytic"]
    )
    assert _layer("accelsim.study._simulate") > _layer("accelsim.engines.training._analytic")
    assert _is_extra("accelsim.demo")
    assert not _is_extra("accelsim.engines.cluster.des")


def test_a_cycle_through_a_package_init_is_seen() -> None:
    """``from accelsim.engines import des`` inside a module the engines' __init__ imports was
    the cycle of issue 27: the graph holds the edge to the package's __init__."""
    found = _imports_of("from accelsim.engines import cluster\n", "accelsim.engines.serving._fast")
    assert found == {"accelsim.engines", "accelsim.engines.cluster"}
