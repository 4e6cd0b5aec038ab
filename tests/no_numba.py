"""pytest plugin: run the suite as if numba were not installed (``-p tests.no_numba``).

:func:`block` sets ``sys.modules["numba"] = None``, so every later ``import numba`` raises
ImportError, which is what an install without the ``fast`` extra sees; the serving DES then
runs its kernel as plain Python (``accelsim.engines.serving.des._jit``). Loaded as a plugin
(``make test-no-numba``), it blocks numba in :func:`pytest_configure`; importing the module
does nothing by itself (``--doctest-modules`` imports every module of ``tests/``), and a
script calls :func:`block`.
"""

import sys

import pytest


def block() -> None:
    """Make ``import numba`` fail for the rest of the process."""
    if "accelsim.engines.serving.des._jit" in sys.modules:
        raise RuntimeError("numba must be blocked before accelsim's serving DES is imported")
    sys.modules["numba"] = None  # type: ignore[assignment]


def pytest_configure(config: pytest.Config) -> None:
    """Block numba for the whole run (only when loaded with ``-p tests.no_numba``)."""
    del config
    block()
