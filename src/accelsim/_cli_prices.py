"""``--prices FILE|DIR`` of the study commands: a price sheet or a SkyPilot feed for one command.

Used by :mod:`accelsim.cli`. The prices are made active for the command (scenario files
validate against them and the study snapshots them), and the catalog found before is put back
afterwards, so a command run in-process (``accelsim.cli.main``) leaves no state behind.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, ParamSpec, TypeVar

import typer

from accelsim import catalog
from accelsim.catalog import activate, active
from accelsim.errors import AccelsimError

_Prices = Annotated[
    str | None,
    typer.Option(
        "--prices",
        metavar="FILE|DIR",
        help="Prices to use: a price-sheet YAML (as written by 'accelsim catalog quote'), or "
        "a SkyPilot catalog folder (<DIR>/<cloud>/vms.csv, e.g. ~/.sky/catalogs/v7), merged "
        "over the built-in prices.",
        show_default=False,
    ),
]


def load_prices(path: str) -> catalog.Catalog:
    """Load ``path`` and make it active: a folder or a ``.csv`` is a SkyPilot catalog, any
    other file a price-sheet YAML (:func:`accelsim.catalog.load`)."""
    where = Path(path).expanduser()
    if not where.exists():
        raise AccelsimError(f"--prices: {path}: no such file or folder")
    if where.is_dir() or where.suffix.lower() == ".csv":
        return catalog.load_skypilot(where)
    return catalog.load(where)


@contextmanager
def use_prices(path: str | None) -> Iterator[None]:
    """Within the block, ``path``'s prices are active (nothing changes for ``None``)."""
    if path is None:
        yield
        return
    before = active()
    try:
        load_prices(path)
        yield
    finally:
        activate(before)


_P = ParamSpec("_P")
_R = TypeVar("_R")


def with_prices(command: Callable[_P, _R]) -> Callable[_P, _R]:
    """A command with a ``prices`` parameter (``--prices``) runs within :func:`use_prices`.

    typer reads the command's own signature (``functools.wraps``), so the option is the
    command's; the body needs no extra indentation.
    """

    @functools.wraps(command)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        path = kwargs.get("prices")
        with use_prices(path if isinstance(path, str) else None):
            return command(*args, **kwargs)

    return run


__all__ = ["load_prices", "use_prices", "with_prices"]
