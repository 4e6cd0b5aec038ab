"""numpy's ``SeedSequence`` hash, recomputed in plain Python so that a stream costs ~1/4.

:func:`accelsim.seeding.stream` builds one ``Generator`` per input and block: a dozen per
block of a study, which through ``np.random.SeedSequence`` and ``PCG64`` costs ~45 us each,
some 0.1 us per run. The seed sequence's hash is a short loop over 32-bit words: its pool is
a running state that absorbs the words of the entropy and then of the spawn key one by one.
Streams of a study share every word but the last few of their spawn keys (``"input"``, the
input's name, the block), so :func:`pcg64_state` absorbs the shared prefix once (cached)
and only the last ``tail`` words per stream, then expands the pool into the four 64-bit
words that seed ``PCG64`` exactly as ``SeedSequence.generate_state(4, np.uint64)`` does.

The result is the same generator, bit for bit: ``tests/unit/test_seed_hash.py`` holds it to
``np.random.PCG64(np.random.SeedSequence(entropy, spawn_key=key))`` over random entropy and
keys. The algorithm is numpy's (``numpy/random/bit_generator.pyx``, after M. E. O'Neill's
``seed_seq_fe``), whose output numpy guarantees stable across versions; only the default
pool of 4 words and integer entropy take this path, anything else goes through numpy.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
from numpy.random.bit_generator import ISpawnableSeedSequence

_MASK = 0xFFFFFFFF
_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875  # hash of the entropy (mix_entropy)
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED  # hash of the output (generate_state)
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715
_POOL = 4  # numpy's default pool size, in 32-bit words
_Pool = tuple[tuple[int, int, int, int], int]  # (pool words, running hash constant)


def words(value: int) -> list[int]:
    """The 32-bit words of a non-negative integer, least significant first (at least one)."""
    out = [value & _MASK]
    value >>= 32
    while value:
        out.append(value & _MASK)
        value >>= 32
    return out


def _hashmix(value: int, const: int) -> tuple[int, int]:
    value = ((value ^ const) * (const * _MULT_A & _MASK)) & _MASK
    return value ^ (value >> 16), const * _MULT_A & _MASK


def _mix(x: int, y: int) -> int:
    result = (_MIX_L * x - _MIX_R * y) & _MASK
    return result ^ (result >> 16)


def _absorb(state: _Pool, more: tuple[int, ...]) -> _Pool:
    """Feed words past the first ``_POOL`` into the pool, as ``mix_entropy`` does.

    ``_hashmix`` and ``_mix`` written out inline: this runs for every stream.
    """
    pool, const = list(state[0]), state[1]
    for word in more:
        for dst in range(_POOL):
            following = const * _MULT_A & _MASK
            hashed = ((word ^ const) * following) & _MASK
            hashed ^= hashed >> 16
            mixed = (_MIX_L * pool[dst] - _MIX_R * hashed) & _MASK
            pool[dst] = mixed ^ (mixed >> 16)
            const = following
    return (pool[0], pool[1], pool[2], pool[3]), const


@lru_cache(maxsize=256)
def _prefix(entropy: tuple[int, ...]) -> _Pool:
    """The pool after absorbing ``entropy`` (at least ``_POOL`` words), cached by prefix."""
    if len(entropy) > _POOL:
        return _absorb(_prefix(entropy[:-1]), entropy[-1:])
    pool: list[int] = []
    const = _INIT_A
    for word in entropy:
        hashed, const = _hashmix(word, const)
        pool.append(hashed)
    for src in range(_POOL):
        for dst in range(_POOL):
            if src != dst:
                hashed, const = _hashmix(pool[src], const)
                pool[dst] = _mix(pool[dst], hashed)
    return (pool[0], pool[1], pool[2], pool[3]), const


def pool_of(entropy: int, spawn_key: tuple[int, ...], tail: int = 2) -> tuple[int, ...]:
    """The 4-word pool of ``np.random.SeedSequence(entropy, spawn_key=spawn_key)``.

    The last ``tail`` words are absorbed afresh; the words before them come from a cache.

    Examples
    --------
    >>> pool_of(7, (1, 2)) == tuple(np.random.SeedSequence(7, spawn_key=(1, 2)).pool)
    True
    """
    if entropy < 0 or min(spawn_key, default=0) < 0:
        raise ValueError("entropy and spawn key words must be non-negative")
    run = words(entropy)
    if max(spawn_key, default=0) <= _MASK:  # the usual case: one word per key
        key = list(spawn_key)
    else:
        key = [w for k in spawn_key for w in words(k)]
    if key and len(run) < _POOL:
        run += [0] * (_POOL - len(run))  # numpy pads so spawn keys cannot collide with entropy
    assembled = (*run, *key)
    if len(assembled) < _POOL:
        assembled += (0,) * (_POOL - len(assembled))
    cut = max(_POOL, len(assembled) - tail)
    return _absorb(_prefix(assembled[:cut]), assembled[cut:])[0]


def pcg64_state(entropy: int, spawn_key: tuple[int, ...]) -> np.ndarray:
    """``SeedSequence(entropy, spawn_key=spawn_key).generate_state(4, np.uint64)``."""
    pool = pool_of(entropy, spawn_key)
    out = []
    for word, (const, following) in zip(pool + pool, _OUTPUT_CONSTANTS, strict=True):
        value = ((word ^ const) * following) & _MASK
        out.append(value ^ (value >> 16))
    return np.array([lo | hi << 32 for lo, hi in zip(out[0::2], out[1::2], strict=True)], np.uint64)


def _output_constants(count: int) -> tuple[tuple[int, int], ...]:
    """The running constant of ``generate_state`` before and after each output word."""
    out = []
    const = _INIT_B
    for _ in range(count):
        following = const * _MULT_B & _MASK
        out.append((const, following))
        const = following
    return tuple(out)


_OUTPUT_CONSTANTS = _output_constants(2 * 4)  # 4 words of uint64 for PCG64


class _State(ISpawnableSeedSequence):
    """A seed sequence that hands ``PCG64`` a state computed beforehand.

    Anything else asked of it (``spawn``, as ``Generator.spawn`` and scipy's ``qmc`` do;
    ``entropy``, ``pool``...) goes to the numpy ``SeedSequence`` it stands for, made on first
    use, so a generator from :func:`pcg64` behaves like numpy's in every respect.
    """

    def __init__(self, state: np.ndarray, entropy: int, spawn_key: tuple[int, ...]) -> None:
        self._state = state
        self._key = (entropy, spawn_key)
        self._numpy: np.random.SeedSequence | None = None

    def generate_state(self, n_words: int, dtype: Any = np.uint32) -> np.ndarray:
        if n_words == 4 and np.dtype(dtype) == np.uint64:
            return self._state.copy()
        return self._sequence().generate_state(n_words, dtype)

    def spawn(self, n_children: int) -> list[Any]:
        # numpy's children (SeedSequence), not this type's: what numpy's own spawn gives
        return self._sequence().spawn(n_children)

    def _sequence(self) -> np.random.SeedSequence:
        if self._numpy is None:
            self._numpy = np.random.SeedSequence(self._key[0], spawn_key=self._key[1])
        return self._numpy

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._sequence(), name)


def pcg64(entropy: int, spawn_key: tuple[int, ...]) -> np.random.Generator:
    """``Generator(PCG64(SeedSequence(entropy, spawn_key=spawn_key)))``, bit for bit."""
    state = _State(pcg64_state(entropy, spawn_key), entropy, spawn_key)
    return np.random.Generator(np.random.PCG64(state))


__all__ = ["pcg64", "pcg64_state", "pool_of", "words"]
