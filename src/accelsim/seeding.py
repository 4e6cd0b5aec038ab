"""Seeds and random streams: the only place accelsim builds a ``numpy.random.Generator``.

A study has one root :class:`numpy.random.SeedSequence`. Every stream is *addressed*: run
chunk, input field or process id form a spawn key under the root, so a draw never depends on
the executor, the chunk size, the number of workers, or on which other streams exist.
"""

from __future__ import annotations

import zlib

import numpy as np

SeedLike = int | np.random.SeedSequence | None


def as_seed_sequence(seed: SeedLike) -> np.random.SeedSequence:
    """Normalise a user seed once, at the edge (``0`` is a seed; ``None`` draws fresh entropy).

    Examples
    --------
    >>> as_seed_sequence(42).entropy
    42
    """
    if seed is None:
        return np.random.SeedSequence()
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise TypeError(f"seed must be an int, a SeedSequence or None, not {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    return np.random.SeedSequence(int(seed))


def key_of(name: str) -> int:
    """Stable integer id of a stream name (CRC32), e.g. ``key_of("assumptions.mfu")``."""
    return zlib.crc32(name.encode("utf-8"))


def child(root: np.random.SeedSequence, *key: int | str) -> np.random.SeedSequence:
    """The seed sequence addressed by ``key`` under ``root`` (strings hashed by :func:`key_of`).

    It equals what ``root.spawn`` would hand out at that position, without spawning, so it
    does not depend on how many children were spawned before.
    """
    ints = tuple(key_of(k) if isinstance(k, str) else int(k) for k in key)
    return np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, *ints))


def stream(root: np.random.SeedSequence, *key: int | str) -> np.random.Generator:
    """A fresh ``Generator`` for the stream addressed by ``key`` under ``root``.

    Examples
    --------
    >>> root = as_seed_sequence(7)
    >>> a = stream(root, "assumptions.mfu").random(3)
    >>> b = stream(root, "assumptions.mfu").random(3)
    >>> bool((a == b).all())
    True
    """
    return np.random.Generator(np.random.PCG64(child(root, *key)))


__all__ = ["SeedLike", "as_seed_sequence", "child", "key_of", "stream"]
