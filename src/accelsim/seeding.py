"""Seeds and random streams: the only place accelsim builds a ``numpy.random.Generator``.

A study has one root :class:`numpy.random.SeedSequence`. Every stream is *addressed*: run
chunk, input field or process id form a spawn key under the root, so a draw never depends on
the executor, the chunk size, the number of workers, or on which other streams exist.
"""

from __future__ import annotations

import zlib

import numpy as np
import numpy.typing as npt

from accelsim._typing import ArrayLike, FloatArray

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


# SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
# OOPSLA 2014): its state after ``i`` steps is ``key + i * gamma``, so its ``i``-th output
# is one mixing of that, for any ``i`` at once; it passes TestU01's BigCrush.
_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _mix64(z: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """SplitMix64's output function (Stafford's Mix13), in place on a uint64 array."""
    z ^= z >> np.uint64(30)
    z *= _MIX1
    z ^= z >> np.uint64(27)
    z *= _MIX2
    z ^= z >> np.uint64(31)
    return z


def addressed_uniforms(seq: np.random.SeedSequence, index: ArrayLike) -> FloatArray:
    """U(0, 1) variates addressed by ``index`` (integers >= 0) in the stream ``seq``.

    The value at an index depends only on ``seq`` and that index, not on which other
    indices are asked for, so a draw of variable length per run (one value per event of the
    run, say) can be addressed by ``(run, event)`` and a chunk of runs takes its own values
    only, at a cost proportional to their number. Value ``i`` is SplitMix64's ``i``-th
    output for a key from ``seq``, mixed once more with a second key from ``seq`` (two
    streams whose SplitMix64 sequences overlap still give unrelated values); the top 53
    bits make a float on the grid ``j / 2**53`` of ``[0, 1)``, as ``Generator.random``.
    Oracles: uniformity and independence of neighbouring indices and of streams
    (chi-square), in tests/unit/test_seeding.py.

    Examples
    --------
    >>> root = as_seed_sequence(7)
    >>> u = addressed_uniforms(child(root, "x"), np.arange(5))
    >>> bool((addressed_uniforms(child(root, "x"), np.array([3])) == u[3]).all())
    True
    """
    key, salt = seq.generate_state(2, np.uint64)
    z = np.array(index, dtype=np.uint64, ndmin=1)
    z *= _GAMMA  # arithmetic modulo 2**64, as SplitMix64's
    z += key
    z = _mix64(z)
    z ^= salt
    z = _mix64(z)
    z >>= np.uint64(11)
    return np.asarray(z * 2.0**-53, dtype=float).reshape(np.shape(index))


__all__ = ["SeedLike", "addressed_uniforms", "as_seed_sequence", "child", "key_of", "stream"]
