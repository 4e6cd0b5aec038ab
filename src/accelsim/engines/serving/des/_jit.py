"""The serving DES's compiler: numba when it is installed, plain Python when it is not.

The request DES plays every batch iteration of every replica. Its state machine
(``_replica``, ``_fleet``) is written as plain Python functions over numpy record arrays;
:func:`jit` compiles them with numba when ``import numba`` works (the ``fast`` extra,
``pip install accelsim[fast]``) and returns them unchanged when it does not. One
implementation at two speeds, with the same rules and, on one platform, the same bits
(numba follows IEEE 754 without fast-math; the MoE power takes a float exponent, whose
result numba and CPython round alike). Measured on ``bench_serving_des.py``'s load (50
requests/s on 8 replicas), 6 minutes of it: 0.015 s of CPU compiled, 7.5 s as plain Python
(~500x), so without numba the request DES suits short horizons only.

Compiled machine code is cached on disk, never inside the installed package: in
``$ACCELSIM_CACHE_DIR`` if set, else the user's cache folder (``$XDG_CACHE_HOME/accelsim``,
``~/.cache/accelsim``, ``~/Library/Caches/accelsim`` on macOS, ``%LOCALAPPDATA%\\accelsim``
on Windows), in a subfolder named by a digest of every file the kernel is built from
(:func:`kernel_sources`). numba checks a cached function against its own source file only,
not against the files of the functions it calls; a digest of them all in the folder's name
means an edit to an iteration formula in ``accelsim.models.serving`` compiles afresh
instead of running stale machine code. A cache folder that cannot be created leaves the
kernel compiled in memory for the process (first call ~6-9 s).

The iteration formulas are not rewritten for it: :func:`seconds`, :func:`prepare` and
:func:`run_time` are :func:`~accelsim.models.serving.terms_iteration_seconds`,
:func:`~accelsim.models.serving.terms_iteration_run` and
:func:`~accelsim.models.serving.run_seconds` themselves (plain-float functions that the
model tests validate bit for bit against the array formulas).
"""

from __future__ import annotations

import hashlib
import importlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar, cast

import accelsim.models.serving as model_formulas
from accelsim.models.serving import run_seconds, terms_iteration_run, terms_iteration_seconds

F = TypeVar("F", bound=Callable[..., Any])


def _numba() -> ModuleType | None:
    """numba if it imports, else None (the DES then runs as plain Python)."""
    try:
        return importlib.import_module("numba")
    except ImportError:
        return None


NUMBA = _numba()
COMPILED = NUMBA is not None
"""Whether the kernel is compiled (numba imported) or runs as plain Python."""


def kernel_sources() -> list[Path]:
    """The files the compiled kernel is built from: the request DES's modules and the
    iteration formulas it compiles."""
    des = Path(__file__).parent
    models = Path(model_formulas.__file__).parent
    return [*sorted(des.glob("_*.py")), models / "_iteration.py", models / "_runs.py"]


def user_cache_root(environ: dict[str, str] | None = None, platform: str = sys.platform) -> Path:
    """The user's cache folder for accelsim (``$ACCELSIM_CACHE_DIR`` wins)."""
    env = os.environ if environ is None else environ
    if env.get("ACCELSIM_CACHE_DIR"):
        return Path(env["ACCELSIM_CACHE_DIR"])
    if platform.startswith("win") and env.get("LOCALAPPDATA"):
        return Path(env["LOCALAPPDATA"]) / "accelsim"
    if platform == "darwin":
        return Path.home() / "Library" / "Caches" / "accelsim"
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "accelsim"


def cache_folder(sources: list[Path], root: Path) -> Path | None:
    """``root/numba/<digest of sources>``, created; None when it cannot be created."""
    digest = hashlib.sha256(b"".join(path.read_bytes() for path in sources)).hexdigest()
    folder = root / "numba" / digest[:20]
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return folder if os.access(folder, os.W_OK) else None


_CACHE = cache_folder(kernel_sources(), user_cache_root()) if COMPILED else None


def jit(function: F) -> F:
    """``function`` compiled in nopython mode when numba is installed, else ``function``.

    Indexing is bounds-checked: the state arrays are sized by proven bounds (tested), and
    a check turns any future breach into an ``IndexError`` instead of memory corrupted in
    silence (plain Python checks bounds anyway). It costs ~40 % of the compiled kernel's
    time. The machine code is cached in :data:`_CACHE` (numba's documented ``CACHE_DIR``,
    set only while this function is decorated, so a user's own numba functions keep theirs).
    """
    if NUMBA is None:
        return function
    if _CACHE is None:
        return cast(F, NUMBA.njit(cache=False, boundscheck=True)(function))
    config = NUMBA.config
    saved = config.CACHE_DIR
    config.CACHE_DIR = str(_CACHE)
    try:
        return cast(F, NUMBA.njit(cache=True, boundscheck=True)(function))
    finally:
        config.CACHE_DIR = saved


class OverBudget(Exception):
    """Raised by the kernel when the events exceed ``max_events`` (the caller words it)."""


class BadIteration(Exception):
    """Raised by the kernel for an iteration time that is not > 0 (the caller words it)."""


seconds = jit(terms_iteration_seconds)
prepare = jit(terms_iteration_run)
run_time = jit(run_seconds)
