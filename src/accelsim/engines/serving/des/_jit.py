"""The serving DES's compiler: numba, and the model formulas the compiled kernel calls.

The request DES plays every batch iteration of every replica; in pure Python that cost
~1.2 µs per iteration of interpreter overhead (an hour of 50 requests/s on 8 replicas:
~1.7 s of CPU), so its state machine (``_replica``, ``_fleet``) is compiled
by numba, and machine code is cached on disk (``cache=True``: the first call in a fresh
install compiles for ~6 s, later processes load it in ~0.2 s).

numba checks a cached function against its own source file only, not against the files of
the functions it calls, so an edit to an iteration formula in ``accelsim.models.serving``
would leave the kernel running the old one. :func:`clear_stale_cache` closes that gap: it
keeps a digest of every file the kernel is built from and deletes the kernel's cache files
(numba's documented ``.nbi``/``.nbc`` files in ``__pycache__``) when any of them changes.

The iteration formulas are not rewritten for it: :func:`seconds`, :func:`prepare` and
:func:`run_time` are :func:`~accelsim.models.serving.terms_iteration_seconds`,
:func:`~accelsim.models.serving.terms_iteration_run` and
:func:`~accelsim.models.serving.run_seconds` themselves, compiled (plain-float functions
that the model tests validate bit for bit against the array formulas; numba follows IEEE
754 without fast-math, so the compiled code gives the same bits).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

import numba

import accelsim.models.serving as model_formulas
from accelsim.models.serving import run_seconds, terms_iteration_run, terms_iteration_seconds

F = TypeVar("F", bound=Callable[..., Any])


def jit(function: F) -> F:
    """``function`` compiled in nopython mode, its machine code cached on disk.

    Indexing is bounds-checked: the state arrays are sized by proven bounds (tested), and
    a check turns any future breach into an ``IndexError`` instead of memory corrupted in
    silence. It costs ~40 % of the kernel's time (an hour of 50 requests/s on 8 replicas:
    0.17 s against 0.12 s unchecked), which leaves it well under its target.
    """
    return cast(F, numba.njit(cache=True, boundscheck=True)(function))


class OverBudget(Exception):
    """Raised by the kernel when the events exceed ``max_events`` (the caller words it)."""


class BadIteration(Exception):
    """Raised by the kernel for an iteration time that is not > 0 (the caller words it)."""


def kernel_sources() -> list[Path]:
    """The files the compiled kernel is built from: the DES's serving modules and the
    iteration formulas it compiles."""
    des = Path(__file__).parent
    models = Path(model_formulas.__file__).parent
    return [
        *sorted(des.glob("_*.py")),
        models / "_iteration.py",
        models / "_runs.py",
    ]


def clear_stale_cache(sources: Sequence[Path], marker_name: str = "accelsim_kernel.digest") -> bool:
    """Delete the numba cache files beside ``sources`` when their digest has changed.

    The digest (SHA-256 of the files' bytes, in order) is kept in ``marker_name`` in each
    source folder's ``__pycache__``. Returns whether a stale cache was cleared. A folder
    that cannot be written (a read-only install) is left alone: numba then caches in its
    user-wide folder, keyed by each file's own stamp, and an upgrade replaces every file.
    """
    digest = hashlib.sha256(b"".join(path.read_bytes() for path in sources)).hexdigest()
    cleared = False
    for folder in sorted({path.parent / "__pycache__" for path in sources}):
        marker = folder / marker_name
        if marker.is_file() and marker.read_text(encoding="utf-8") == digest:
            continue
        try:
            stale = sorted(folder.glob("*.nb[ic]"))
            for path in stale:
                path.unlink()
            folder.mkdir(exist_ok=True)
            marker.write_text(digest, encoding="utf-8")
        except OSError:
            continue
        cleared = cleared or bool(stale)
    return cleared


clear_stale_cache(kernel_sources())
seconds = jit(terms_iteration_seconds)
prepare = jit(terms_iteration_run)
run_time = jit(run_seconds)
