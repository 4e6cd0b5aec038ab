"""How much memory a study or one run may hold: a stated share of this process's memory.

Used before work starts: a study estimates its arrays (:mod:`accelsim.study`), the serving
request DES its requests (:mod:`accelsim.engines.serving._requests`), and each refuses,
with the figure, what would not fit instead of growing until the machine swaps or numpy
fails to allocate.
"""

from __future__ import annotations

import os

MEMORY_FRACTION = 0.5
"""Share of the memory available to this process a study may hold: of the physical
memory, or of the address-space limit (``ulimit -v``) where that is lower."""


def memory_limit_bytes() -> int:
    """Bytes a study may hold: :data:`MEMORY_FRACTION` of the physical memory, or of the
    process's address-space limit where one is set and lower. [B]"""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not a POSIX system
        physical = 16 * 2**30
    available = physical
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            available = min(available, soft)
    except (ImportError, OSError, ValueError):
        pass
    return int(MEMORY_FRACTION * available)


def format_bytes(nbytes: float) -> str:
    """``nbytes`` as MiB or GiB with three significant digits."""
    return f"{nbytes / 2**30:.3g} GiB" if nbytes >= 2**30 else f"{nbytes / 2**20:.3g} MiB"


__all__ = ["MEMORY_FRACTION", "format_bytes", "memory_limit_bytes"]
