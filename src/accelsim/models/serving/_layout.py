"""The replica size a planner picks when none is given: candidates and the choice among them.

Pure functions of per-size figures the caller computes with the serving model (the fast
path's usage at the inputs' medians in the engines; the published SLO bounds in the serving
calibration), so both choose by one rule.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence


def replica_sizes(smallest: int, most: int, pool: int | None = None) -> list[int]:
    """The replica sizes worth trying: ``smallest`` and its doublings up to ``most``, each
    dividing ``pool`` when given (whole replicas). [chips]

    ``smallest`` is the smallest size that holds the weights with room for KV cache (the
    memory rule, :meth:`accelsim.catalog.ServingPriors.auto_replica_chips`); ``most`` the
    scale-up domain within the pool (tensor parallelism spans one domain). Sizes beyond it
    are not tried; ``smallest`` always is.

    Examples
    --------
    >>> replica_sizes(2, 8), replica_sizes(1, 8, pool=12), replica_sizes(4, 2)
    ([2, 4, 8], [1, 2, 4], [4])
    """
    if smallest < 1 or most < 1:
        raise ValueError(f"replica sizes are >= 1 chip, got smallest={smallest}, most={most}")
    sizes = [smallest]
    size = 2 * smallest
    while size <= most:
        if pool is None or pool % size == 0:
            sizes.append(size)
        size *= 2
    return sizes


NEAR_WORST_QUANTILE = 0.001
"""The quantile at which a size below the memory rule must still hold a sequence
(:func:`smallest_safe_size`): with the memory share there, about 1 run in 1,000 or fewer
could find the replica unable to."""


def smallest_safe_size(start: int, holds: Callable[[int], bool]) -> int:
    """The smallest of ``start`` and its halvings whose replica still ``holds`` its model
    in (nearly) every run. [chips]

    ``start`` is the memory rule's size (:meth:`accelsim.catalog.ServingPriors.
    auto_replica_chips`), which leaves the KV cache a fixed share of memory: a model with a
    small cache per token (a mixture of experts, grouped-query attention) can serve from
    fewer chips, and often more per chip. ``holds(chips)`` is the caller's feasibility rule
    (weights plus one mean-length sequence in the usable memory) taken at the uncertain
    inputs' near-worst quantile, so a size below the rule is tried only where no plausible
    run finds it unable to hold a sequence. Feasibility grows with the size, so halving
    stops at the first size that fails.

    Examples
    --------
    >>> smallest_safe_size(8, lambda chips: chips >= 2), smallest_safe_size(4, lambda c: False)
    (2, 4)
    """
    size = start
    while size % 2 == 0 and holds(size // 2):
        size //= 2
    return size


def best_replica_size(
    sizes: Sequence[int],
    per_chip_rate: Sequence[float],
    *,
    compliant_share: Sequence[float] | None = None,
    chip_hours: Sequence[float] | None = None,
    attainment: float = 1.0,
    follows_demand: bool = False,
) -> int:
    """The size a planner picks: one whose fleet meets the SLO's attainment (else the
    highest share within the SLO), then the fewest chip-hours, then the highest SLO rate
    per chip (for a fleet that follows the demand, the smallest size instead), then the
    smallest size.

    Parameters
    ----------
    sizes : sequence of int
        Candidate replica sizes (:func:`replica_sizes`), at least one. [chips]
    per_chip_rate : sequence of float
        Output tokens/s per chip at the largest request rate that meets the SLO, per size
        (0 where none does). [tokens/s]
    compliant_share : sequence of float, optional
        Share of the requests served within the SLO over the horizon, per size (a fleet
        of fixed size serves more within it on the faster layout). [fraction]
    chip_hours : sequence of float, optional
        Chip-hours the fleet holds over the horizon, per size (a fleet that follows a small
        demand holds fewer on smaller replicas). [chip-hours]
    attainment : float
        The share of requests the SLO asks to be within its bounds: shares at or above it
        count as equal, so a sliver of compliance never outweighs chip-hours. [fraction]
    follows_demand : bool
        The fleet scales with the demand: of sizes that meet the attainment tied on
        chip-hours at the inputs' medians the smallest wins, since smaller replicas follow
        a demand that moves from the medians in finer steps (a fixed pool holds its
        chip-hours whatever the size, and a fleet that meets no attainment is closest with
        the highest rate per chip: there that wins).

    Returns
    -------
    int
        The chosen size. Shares are compared to 1e-6 and chip-hours to a relative 1e-9, so
        rounding never decides; a size whose rate is 0 (no load meets the SLO) wins only
        when every size's does. [chips]

    Examples
    --------
    Saturated (the serving calibration): the highest rate per chip.

    >>> best_replica_size([2, 4, 8], [48.0, 134.0, 159.0])
    8

    A small demand that follows the load: the fewest chip-hours, then the rate.

    >>> best_replica_size([2, 4, 8], [48.0, 134.0, 159.0], compliant_share=[0.995, 1.0, 1.0],
    ...                   chip_hours=[48.0, 96.0, 192.0], attainment=0.99)
    2
    """
    n = len(sizes)
    if n == 0 or len(per_chip_rate) != n:
        raise ValueError(
            f"best_replica_size needs one rate per size, got {n} sizes and "
            f"{len(per_chip_rate)} rates"
        )
    share = [1.0] * n if compliant_share is None else list(compliant_share)
    hours = [1.0] * n if chip_hours is None else list(chip_hours)
    if len(share) != n or len(hours) != n:
        raise ValueError("best_replica_size needs one compliant share and chip-hours per size")
    meets = [rate > 0.0 for rate in per_chip_rate]
    least = min(h for h, ok in zip(hours, meets, strict=True) if ok) if any(meets) else 1.0
    scale = least if least > 0.0 else 1.0

    def key(i: int) -> tuple[bool, float, float, float, int]:
        return (
            not meets[i],
            -round(min(share[i], attainment), 6),
            round(hours[i] / scale, 9),
            0.0 if follows_demand and share[i] >= attainment else -per_chip_rate[i],
            sizes[i],
        )

    return sizes[min(range(n), key=key)]


__all__ = ["NEAR_WORST_QUANTILE", "best_replica_size", "replica_sizes", "smallest_safe_size"]
