"""accelsim.seed_hash against numpy's SeedSequence: the same streams, bit for bit.

The fast path of :func:`accelsim.seeding.stream` must not change a single draw of any study,
so every check here is exact equality with what numpy derives from the same entropy and
spawn key.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from accelsim import seed_hash
from accelsim.seeding import as_seed_sequence, child, stream

entropies = st.one_of(st.integers(0, 2**32 - 1), st.integers(0, 2**256))
spawn_keys = st.lists(st.integers(0, 2**70), max_size=7).map(tuple)


@given(entropy=entropies, key=spawn_keys)
def test_pool_equals_numpy(entropy: int, key: tuple[int, ...]) -> None:
    expected = tuple(int(w) for w in np.random.SeedSequence(entropy, spawn_key=key).pool)
    assert seed_hash.pool_of(entropy, key) == expected
    assert seed_hash.pool_of(entropy, key, tail=0) == expected  # any cut of the cache


@given(entropy=entropies, key=spawn_keys)
def test_pcg64_stream_equals_numpy(entropy: int, key: tuple[int, ...]) -> None:
    ss = np.random.SeedSequence(entropy, spawn_key=key)
    assert np.array_equal(seed_hash.pcg64_state(entropy, key), ss.generate_state(4, np.uint64))
    ours = seed_hash.pcg64(entropy, key)
    theirs = np.random.Generator(np.random.PCG64(ss))
    assert ours.bit_generator.state == theirs.bit_generator.state
    assert np.array_equal(ours.random(5), theirs.random(5))


@given(seed=st.integers(0, 2**64), name=st.text(max_size=20), block=st.integers(0, 10**6))
def test_stream_is_numpys_addressed_stream(seed: int, name: str, block: int) -> None:
    root = as_seed_sequence(seed)
    expected = np.random.Generator(np.random.PCG64(child(root, "input", name, block)))
    assert np.array_equal(stream(root, "input", name, block).random(3), expected.random(3))


def test_spawned_roots_and_other_pools_still_match() -> None:
    """A spawned root (non-empty spawn key) takes the fast path; pool_size 8 goes to numpy."""
    for root in (
        np.random.SeedSequence(11).spawn(3)[2],
        np.random.SeedSequence(11, pool_size=8),
        np.random.SeedSequence([1, 2, 3]),
    ):
        expected = np.random.Generator(np.random.PCG64(child(root, "x", 4)))
        assert np.array_equal(stream(root, "x", 4).random(4), expected.random(4))


def test_negative_words_are_refused() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        seed_hash.pool_of(1, (-1,))


@given(entropy=entropies, key=spawn_keys)
def test_the_generator_behaves_like_numpys_beyond_its_state(
    entropy: int, key: tuple[int, ...]
) -> None:
    """Spawning (Generator.spawn, scipy.stats.qmc) and the seed's attributes match numpy's."""
    ours = seed_hash.pcg64(entropy, key)
    theirs = np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy, spawn_key=key)))
    for a, b in zip(ours.spawn(2), theirs.spawn(2), strict=True):
        assert np.array_equal(a.random(3), b.random(3))
    seq, numpy_seq = ours.bit_generator.seed_seq, theirs.bit_generator.seed_seq
    assert seq.entropy == numpy_seq.entropy
    assert seq.spawn_key == numpy_seq.spawn_key
    assert np.array_equal(seq.generate_state(3), numpy_seq.generate_state(3))
