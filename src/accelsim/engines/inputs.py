"""Drawing every uncertain input of a study, one addressed stream per input.

Runs are processed in **blocks** of :data:`BLOCK_RUNS` run indices (the last block of a
study may be shorter). Each input is keyed by a stable name (its field path, e.g.
``"assumptions.mfu"``), and its draws in block ``b`` come from ``stream(root, "input", name,
b)``. So results do not depend on how blocks are grouped into chunks or workers, and two
scenarios compared with the same seed share the draws of every input they share (common
random numbers), whatever else either of them draws.

A sensitivity analysis replaces the random draws of chosen inputs by designed uniforms:
inside ``with designed({name: u}):`` every :class:`InputDraws` maps ``u[start:stop]``
through the input's ``ppf`` instead of sampling (see :mod:`accelsim.sensitivity_analysis`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

import numpy as np

from accelsim._typing import FloatArray
from accelsim.dists import Dist, Fixed, Uncertain, as_dist
from accelsim.seeding import stream

BLOCK_RUNS = 4096
"""Run indices per block: the unit of random-stream addressing."""


_DESIGN: ContextVar[Mapping[str, FloatArray] | None] = ContextVar("accelsim_design", default=None)


@contextmanager
def designed(design: Mapping[str, FloatArray]) -> Iterator[None]:
    """Within the block, inputs named in ``design`` take their designed uniforms.

    ``design[name]`` holds one U(0, 1) value per run index of the study (from run 0); an
    :class:`InputDraws` created inside the block maps its slice through the input's ``ppf``.
    """
    token = _DESIGN.set(design)
    try:
        yield
    finally:
        _DESIGN.reset(token)


def _active_design() -> Mapping[str, FloatArray] | None:
    return _DESIGN.get()


def blocks(start: int, stop: int) -> list[tuple[int, int]]:
    """Split runs ``[start, stop)`` at multiples of :data:`BLOCK_RUNS` (``start`` must be one)."""
    if start % BLOCK_RUNS:
        raise ValueError(f"a chunk must start at a multiple of {BLOCK_RUNS} runs, not {start}")
    return [(s, min(s + BLOCK_RUNS, stop)) for s in range(start, stop, BLOCK_RUNS)]


@dataclass
class InputDraws:
    """Draws of uncertain inputs for the runs ``[start, stop)`` of one block."""

    root: np.random.SeedSequence
    start: int
    stop: int
    drawn: dict[str, FloatArray] = field(default_factory=dict)
    """Every input drawn so far, by name (for sensitivity analysis and replay)."""
    source: dict[str, str] = field(default_factory=dict)
    """``"user"`` or ``"prior"`` per input name."""
    design: Mapping[str, FloatArray] | None = field(default_factory=_active_design)
    """Designed U(0, 1) values by input name, indexed by run (``None``: sample every input)."""

    @property
    def runs(self) -> int:
        """Number of runs in this chunk."""
        return self.stop - self.start

    @property
    def block(self) -> int:
        """Index of this block in the study."""
        return self.start // BLOCK_RUNS

    def rng(self, name: str) -> np.random.Generator:
        """The generator of this block for a named random source other than an input."""
        return stream(self.root, name, self.block)

    def uniforms(self, name: str) -> FloatArray:
        """U(0, 1) variates of input ``name`` for this block's runs."""
        return stream(self.root, "input", name, self.block).random(self.runs)

    def get(self, name: str, user: Uncertain | None, prior: Uncertain) -> FloatArray:
        """Draws of input ``name``: the user's value if set, else the catalog prior."""
        value = prior if user is None else user
        self.source[name] = "prior" if user is None else "user"
        dist: Dist = as_dist(value)
        if isinstance(dist, Fixed):
            out = np.full(self.runs, float(dist.value))
        elif self.design is not None and name in self.design:
            u = np.asarray(self.design[name], dtype=float)[self.start : self.stop]
            if u.shape != (self.runs,):
                raise ValueError(
                    f"the design of {name!r} covers {u.size} of runs [{self.start}, {self.stop})"
                )
            out = np.asarray(dist.ppf(u), dtype=float)
        else:
            out = dist.sample(stream(self.root, "input", name, self.block), self.runs)
        self.drawn[name] = out
        return out

    def fixed(self, name: str, value: float) -> FloatArray:
        """A known constant input, recorded alongside the draws."""
        out = np.full(self.runs, float(value))
        self.drawn[name] = out
        self.source[name] = "fixed"
        return out


__all__ = ["BLOCK_RUNS", "InputDraws", "blocks", "designed"]
