"""pytest plugin: run the suite as if numba were not installed (``-p tests.no_numba``).

``sys.modules["numba"] = None`` makes every ``import numba`` raise ImportError, which is what
an install without the ``fast`` extra sees; the serving DES then runs its kernel as plain
Python (``accelsim.engines.serving.des._jit``). ``make test-no-numba`` runs the serving DES
tests this way.
"""

import sys

if "accelsim.engines.serving.des._jit" in sys.modules:  # pragma: no cover - misuse guard
    raise RuntimeError("tests.no_numba must load before accelsim's serving DES is imported")
sys.modules["numba"] = None  # type: ignore[assignment]
