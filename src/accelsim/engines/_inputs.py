"""Drawing every uncertain input of a study, one addressed stream per input.

Each input is keyed by a stable name (its field path, e.g. ``"assumptions.mfu"``) and has
one stream for the whole study, ``stream(root, "input", name)`` (see
:func:`input_uniforms`): run ``i`` maps the stream's ``i``-th uniform through the input's
``ppf`` (the inverse transform, ``Dist.sample``). A chunk of runs ``[start, stop)``
advances the stream to ``start`` (``PCG64.advance``, logarithmic in ``start``) and draws
``stop - start`` values, so results do not depend on how runs are grouped into chunks or
workers, and two scenarios compared with the same seed share the draws of every input they
share (common random numbers), whatever else either of them draws.

Runs are also grouped in **blocks** of :data:`BLOCK_RUNS` run indices (the last block of a
study may be shorter): the unit of the stratified designs and of the engines' other random
sources (:meth:`InputDraws.block_rngs`, e.g. the failures of a block). A chunk that holds
part of a block draws the block's full length of those and keeps its slice, which needs
the study's total runs (:attr:`InputPlan.total_runs`).

How a study draws is one explicit value, its :class:`InputPlan` (root seed, total runs,
design, designed uniforms), which travels with the study to every worker and makes each
chunk's :class:`InputDraws` (:meth:`InputPlan.draws`). A sensitivity analysis replaces the
random draws of chosen inputs by designed uniforms (``InputPlan.designed[name]``): every
:class:`InputDraws` maps ``u[start:stop]`` through the input's ``ppf`` instead of sampling
(see :mod:`accelsim.study`).

A study may also draw its inputs from a stratified design (``InputPlan.design`` ``"lhs"``
or ``"sobol"``, see :func:`design_uniforms`): each input's uniforms for a block come from a
one-dimensional design seeded by ``stream(root, "design", name, b)`` and are mapped through
the input's ``ppf``. Designs are per block, so chunks slice them as they slice random draws
and results stay independent of the chunking.

``InputPlan.design == "antithetic"`` pairs runs: run ``2k`` maps the input's own uniform ``u``
(the one plain Monte Carlo gives run ``2k``) through ``ppf`` and run ``2k + 1`` maps
``1 - u`` (see :func:`design_uniforms`). Blocks have an even length, so no pair crosses a
block.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from itertools import pairwise
from typing import Literal

import numpy as np
from scipy.stats import qmc

from accelsim._typing import FloatArray
from accelsim.dists import Dist, Fixed, Uncertain, as_dist
from accelsim.seeding import stream

BLOCK_RUNS = 4096
"""Run indices per block: the unit of random-stream addressing."""


Design = Literal["mc", "lhs", "sobol", "antithetic"]
DESIGNS: tuple[Design, ...] = ("mc", "lhs", "sobol", "antithetic")


def check_design_runs(design: Design, runs: int) -> None:
    """Raise ``ValueError`` unless every block of a ``runs``-run study suits ``design``.

    A scrambled Sobol' sequence is balanced only over a power-of-two number of points, so
    ``"sobol"`` needs ``runs`` a multiple of :data:`BLOCK_RUNS` or a power of two below it.
    ``"antithetic"`` pairs runs ``(2k, 2k + 1)``, so it needs an even number of runs (then
    every block, the last one included, has an even length).

    Examples
    --------
    >>> check_design_runs("sobol", 3 * BLOCK_RUNS)
    >>> check_design_runs("sobol", 1000)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: design='sobol' needs runs a multiple of 4096 or a power of two ... not 1000
    >>> check_design_runs("antithetic", 1000)
    >>> check_design_runs("antithetic", 1001)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: design='antithetic' pairs runs (2k, 2k+1), ... (e.g. 1000 or 1002), not 1001
    """
    if design not in DESIGNS:
        raise ValueError(f"design must be one of {', '.join(DESIGNS)}, not {design!r}")
    if design == "antithetic":
        if runs % 2:
            even = f"{runs - 1} or {runs + 1}" if runs > 2 else f"{runs + 1}"
            raise ValueError(
                f"design='antithetic' pairs runs (2k, 2k+1), so runs must be even "
                f"(e.g. {even}), not {runs}"
            )
        return
    if design != "sobol" or runs % BLOCK_RUNS == 0 or runs & (runs - 1) == 0:
        return
    below = 1 << (runs.bit_length() - 1)
    raise ValueError(
        f"design='sobol' needs runs a multiple of {BLOCK_RUNS} or a power of two up to "
        f"{BLOCK_RUNS} (e.g. {below} or {min(2 * below, BLOCK_RUNS)}), not {runs}"
    )


def design_uniforms(
    design: Design, root: np.random.SeedSequence, name: str, block: int, n: int
) -> FloatArray:
    """The ``n`` designed U(0, 1) values of input ``name`` in block ``block``.

    Each input has its own one-dimensional design, seeded by ``stream(root, "design", name,
    block)`` (the input's own stream for ``"antithetic"``) and independent of every other
    input's:

    - ``"lhs"``: ``scipy.stats.qmc.LatinHypercube`` with ``d=1``, a random permutation of
      one uniform point in each of the ``n`` strata ``[i/n, (i+1)/n)``. Independent
      permutations across inputs make the joint design a Latin hypercube over all inputs,
      whatever inputs a scenario draws. Every value is marginally U(0, 1), so every
      estimate of a mean is unbiased, and its variance is never more than ``n/(n-1)``
      times that of plain Monte Carlo (McKay et al. 1979; Owen 1997), much less for a
      metric that is nearly additive in the inputs.
    - ``"sobol"``: ``scipy.stats.qmc.Sobol(d=1, scramble=True)``, a scrambled
      van der Corput sequence (``n`` must be a power of two), with an independent scramble
      per input: randomised quasi-Monte Carlo per input. Each value is marginally
      U(0, 1), so means are unbiased, and each input's ``n`` values have exactly one point
      in each of the ``n`` strata. Inputs are scrambled independently, so across inputs
      this is a Latin hypercube-like design, not a joint ``d``-dimensional Sobol' net:
      it guarantees one-dimensional stratification, not low discrepancy in ``d``
      dimensions.
    - ``"antithetic"``: the input's own uniforms (:func:`input_uniforms`, the ones plain
      Monte Carlo maps) at the block's even runs, each followed by its mirror: value ``2k``
      is the uniform ``u`` of run ``2k`` and value ``2k + 1`` is ``1 - u`` (``n`` must be
      even). Every value is marginally U(0, 1), so means are
      unbiased; pairs are independent of one another, as are the inputs. Mapped
      through ``ppf``, every input of run ``2k + 1`` is the mirror quantile of run ``2k``'s,
      so a metric monotone in each input (in either direction) has negatively correlated
      pair members, and the variance of its mean is at most that of plain Monte Carlo with
      as many runs (Hammersley and Morton 1956; Owen 2013, sec. 8.2). Where that
      does not apply, a metric far from monotone (e.g. U-shaped in an input) can have
      positively correlated pairs, up to twice the variance of plain Monte Carlo. Only
      inputs are antithetic: other randomness of the engines (the failure sampler of
      :meth:`InputDraws.rng`, the DES event streams) stays independent between the two
      runs of a pair, which dilutes the reduction by its share of the variance. No value is
      clipped: ``u`` lies on the grid ``j / 2**53`` of ``[0, 1)``, so ``1 - u`` is exact and
      lies in ``(0, 1]``, and ``ppf`` maps an end of ``[0, 1]`` to the end of the support.
      An unbounded input is infinite only where ``u == 0`` (probability ``2**-53`` per
      pair), as under plain Monte Carlo (``ppf(rng.random())``) and the other designs.

    Examples
    --------
    >>> u = design_uniforms("lhs", np.random.SeedSequence(1), "x", 0, 8)
    >>> sorted(np.floor(u * 8).astype(int).tolist())
    [0, 1, 2, 3, 4, 5, 6, 7]
    >>> a = design_uniforms("antithetic", np.random.SeedSequence(1), "x", 0, 6)
    >>> bool(np.all(a[1::2] == 1.0 - a[0::2]))
    True
    """
    if design == "antithetic":
        if n < 0 or n % 2:
            raise ValueError(f"an antithetic design pairs runs: it needs an even n, not {n}")
        out = input_uniforms(root, name, block * BLOCK_RUNS, n)
        out[1::2] = 1.0 - out[0::2]
        return out
    rng = stream(root, "design", name, block)
    if design == "lhs":
        return np.asarray(qmc.LatinHypercube(d=1, rng=rng).random(n)[:, 0], dtype=float)
    if design == "sobol":
        if n < 1 or n & (n - 1):
            raise ValueError(f"a Sobol' design needs a power-of-two number of runs, not {n}")
        m = n.bit_length() - 1
        return np.asarray(qmc.Sobol(d=1, scramble=True, rng=rng).random_base2(m)[:, 0])
    raise ValueError(f"design_uniforms needs 'lhs', 'sobol' or 'antithetic', not {design!r}")


def constant(value: float, runs: int) -> FloatArray:
    """``runs`` copies of ``value`` as a read-only zero-stride view of one float64.

    For the values that do not vary between runs (fixed inputs, known quantities): no
    memory per run, and an attempt to write into it is an error rather than a change of
    every run at once.

    Examples
    --------
    >>> x = constant(2.5, 3)
    >>> x.tolist(), x.flags.writeable
    ([2.5, 2.5, 2.5], False)
    """
    return np.broadcast_to(np.float64(value), (runs,))


def input_uniforms(root: np.random.SeedSequence, name: str, start: int, n: int) -> FloatArray:
    """The U(0, 1) values of input ``name`` for runs ``start`` to ``start + n - 1``.

    Outputs ``start`` on of the input's stream ``stream(root, "input", name)``, one per run:
    the stream is advanced to ``start`` (``PCG64.advance``, as if ``start`` values had been
    drawn; ``Generator.random`` takes one 64-bit output per value), so any range of runs
    costs one seeding and its own values.

    Examples
    --------
    >>> root = np.random.SeedSequence(1)
    >>> whole = input_uniforms(root, "x", 0, 10)
    >>> bool((input_uniforms(root, "x", 4, 6) == whole[4:]).all())
    True
    """
    rng = stream(root, "input", name)
    if start:
        rng.bit_generator.advance(start)  # type: ignore[attr-defined]
    return rng.random(n)


def blocks(start: int, stop: int) -> list[tuple[int, int]]:
    """Split runs ``[start, stop)`` at multiples of :data:`BLOCK_RUNS`.

    Examples
    --------
    >>> blocks(4000, 8300)
    [(4000, 4096), (4096, 8192), (8192, 8300)]
    """
    cuts = [start, *range((start // BLOCK_RUNS + 1) * BLOCK_RUNS, stop, BLOCK_RUNS), stop]
    return list(pairwise(cuts)) if stop > start else []


@dataclass(frozen=True)
class BlockPiece:
    """The runs ``[start, stop)`` of block ``block`` (of ``length`` runs) that a chunk keeps,
    counted from the block's first run; they sit at ``at`` in the chunk."""

    block: int
    length: int
    start: int
    stop: int
    at: int

    def keep(self, full: FloatArray) -> FloatArray:
        """This piece's runs of the block's full-length values ``full``."""
        return full if self.start == 0 and self.stop == full.size else full[self.start : self.stop]


@dataclass
class InputDraws:
    """Draws of uncertain inputs for the runs ``[start, stop)``, which may span blocks.

    Plain Monte Carlo draws take the chunk's runs of each input's stream
    (:func:`input_uniforms`). What is drawn per block (designs, :meth:`block_rngs`) draws
    each touched block's full length and keeps the chunk's runs, so a chunk's draws are the
    same runs of the whole study's whatever the chunking. Given ``total_runs`` a chunk
    may start and end anywhere. Outside it, a chunk that needs blocks must start on a block
    boundary, and its last block is taken to end where the chunk ends.
    """

    root: np.random.SeedSequence
    start: int
    stop: int
    drawn: dict[str, FloatArray] = field(default_factory=dict)
    """Every input drawn so far, by name (for sensitivity analysis and replay)."""
    source: dict[str, str] = field(default_factory=dict)
    """``"user"`` or ``"prior"`` per input name."""
    design: Mapping[str, FloatArray] | None = None
    """Designed U(0, 1) values by input name, indexed by run (``None``: sample every input)."""
    total_runs: int | None = None
    """Runs in the whole study (``None``: this chunk ends its last block)."""
    sampling: Design = "mc"
    """How inputs not in ``design`` are drawn: ``"mc"`` or a design of :data:`DESIGNS`."""
    at_quantile: float | None = None
    """Every uncertain input at this quantile in every run instead of drawn (``0.5``: the
    medians, for a decision made before the runs, such as the automatic replica size)."""

    @property
    def runs(self) -> int:
        """Number of runs in this chunk."""
        return self.stop - self.start

    def _check_runs(self) -> None:
        """Raise ValueError unless ``[start, stop)`` is a non-empty range of the study."""
        if not 0 <= self.start < self.stop:
            raise ValueError(f"runs [{self.start}, {self.stop}) are empty or negative")
        if self.total_runs is not None and self.stop > self.total_runs:
            raise ValueError(
                f"runs [{self.start}, {self.stop}) exceed the study's {self.total_runs}"
            )

    @cached_property
    def pieces(self) -> tuple[BlockPiece, ...]:
        """The blocks this chunk touches, in order, with the runs it keeps of each."""
        self._check_runs()
        if self.total_runs is None and self.start % BLOCK_RUNS:
            raise ValueError(
                f"runs [{self.start}, {self.stop}) are part of a block: draws of part of "
                f"a block need the study's total runs (InputPlan.total_runs)"
            )
        end = self.stop if self.total_runs is None else self.total_runs
        out = []
        for a, b in blocks(self.start, self.stop):
            block = a // BLOCK_RUNS
            first = block * BLOCK_RUNS
            length = min(BLOCK_RUNS, end - first)
            out.append(BlockPiece(block, length, a - first, b - first, a - self.start))
        return tuple(out)

    def _per_block(self, draw: Callable[[BlockPiece], FloatArray]) -> FloatArray:
        """The chunk's slices of ``draw(piece)`` (a block's full-length values), end to end."""
        pieces = self.pieces
        if len(pieces) == 1:
            return pieces[0].keep(draw(pieces[0]))
        out = np.empty(self.runs)
        for piece in pieces:
            out[piece.at : piece.at + piece.stop - piece.start] = piece.keep(draw(piece))
        return out

    def __post_init__(self) -> None:
        if self.sampling not in DESIGNS:
            raise ValueError(f"design must be one of {', '.join(DESIGNS)}, not {self.sampling!r}")
        if self.at_quantile is not None and not 0.0 < self.at_quantile < 1.0:
            raise ValueError(f"at_quantile must be in (0, 1), got {self.at_quantile!r}")

    def block_rngs(self, name: str) -> list[tuple[slice, np.random.Generator]]:
        """Per block of the chunk, its runs (a slice of the chunk) and its generator for
        a named random source other than an input.

        Per block, not per run: what a chunk draws from it depends on the chunk's runs, so
        an engine that uses it must run whole blocks to be independent of the chunking.
        """
        return [
            (slice(p.at, p.at + p.stop - p.start), stream(self.root, name, p.block))
            for p in self.pieces
        ]

    def uniforms(self, name: str) -> FloatArray:
        """U(0, 1) variates of input ``name`` for this chunk's runs (:func:`input_uniforms`)."""
        self._check_runs()
        return input_uniforms(self.root, name, self.start, self.runs)

    def get(self, name: str, user: Uncertain | None, prior: Uncertain) -> FloatArray:
        """Draws of input ``name``: the user's value if set, else the catalog prior.

        A fixed value comes back as a read-only :func:`constant`; draws are a new array.
        """
        value = prior if user is None else user
        self.source[name] = "prior" if user is None else "user"
        dist: Dist = as_dist(value)
        if isinstance(dist, Fixed):
            out = constant(dist.value, self.runs)
        elif self.at_quantile is not None:
            out = np.asarray(dist.ppf(np.full(self.runs, self.at_quantile)), dtype=float)
        elif self.design is not None and name in self.design:
            u = np.asarray(self.design[name], dtype=float)[self.start : self.stop]
            if u.shape != (self.runs,):
                raise ValueError(
                    f"the design of {name!r} covers {u.size} of runs [{self.start}, {self.stop})"
                )
            out = np.asarray(dist.ppf(u), dtype=float)
        elif self.sampling != "mc":
            sampling = self.sampling
            u = self._per_block(
                lambda p: design_uniforms(sampling, self.root, name, p.block, p.length)
            )
            out = np.asarray(dist.ppf(u), dtype=float)
        else:
            out = np.asarray(dist.from_uniforms(self.uniforms(name)), dtype=float)
        self.drawn[name] = out
        return out

    def fixed(self, name: str, value: float) -> FloatArray:
        """A known constant input, recorded alongside the draws (read-only, see
        :func:`constant`)."""
        out = constant(value, self.runs)
        self.drawn[name] = out
        self.source[name] = "fixed"
        return out


@dataclass(frozen=True)
class InputPlan:
    """How a study draws its inputs: plain, picklable data passed to every chunk.

    Examples
    --------
    >>> plan = InputPlan(np.random.SeedSequence(1), total_runs=10)
    >>> plan.draws(0, 10).get("x", None, 2.5).tolist()[:2]
    [2.5, 2.5]
    """

    root: np.random.SeedSequence
    """The study's root seed."""
    total_runs: int | None = None
    """Runs in the whole study (``None``: each chunk ends its last block)."""
    design: Design = "mc"
    """How inputs not in ``designed`` are drawn (see :func:`design_uniforms`)."""
    designed: Mapping[str, FloatArray] | None = None
    """Designed U(0, 1) values by input name, indexed by run from 0 (sensitivity)."""

    def __post_init__(self) -> None:
        if self.design not in DESIGNS:
            raise ValueError(f"design must be one of {', '.join(DESIGNS)}, not {self.design!r}")
        if self.total_runs is not None and self.total_runs < 1:
            raise ValueError(f"a study has at least one run, not {self.total_runs}")

    def draws(self, start: int, stop: int) -> InputDraws:
        """The :class:`InputDraws` of runs ``[start, stop)`` under this plan."""
        return InputDraws(
            root=self.root,
            start=start,
            stop=stop,
            design=self.designed,
            total_runs=self.total_runs,
            sampling=self.design,
        )


def as_plan(plan: InputPlan | np.random.SeedSequence) -> InputPlan:
    """``plan``, or a plain Monte Carlo plan of root seed ``plan``."""
    return plan if isinstance(plan, InputPlan) else InputPlan(plan)


__all__ = [
    "BLOCK_RUNS",
    "DESIGNS",
    "BlockPiece",
    "Design",
    "InputDraws",
    "InputPlan",
    "as_plan",
    "blocks",
    "check_design_runs",
    "constant",
    "design_uniforms",
    "input_uniforms",
]
