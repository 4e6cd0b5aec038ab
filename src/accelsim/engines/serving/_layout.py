"""The replica size of a colocated endpoint whose ``chips_per_replica`` is not given.

The memory rule (:meth:`accelsim.catalog.ServingPriors.auto_replica_chips`) gives the
smallest replica that holds the weights with room for KV cache. A larger replica (more
tensor parallelism) prefills and decodes faster, which can serve more within a tight TTFT or
TPOT bound per chip (a long prompt under a 2 s TTFT; a 40 ms TPOT), but it comes in bigger
steps, which a small demand that follows the load pays for; and the memory rule leaves a
fixed share of memory to KV cache, more than a model with a small cache per token needs. So
the engines try the memory rule's size, its doublings within the pool and the scale-up
domain, and its halvings that hold a sequence with the memory share near its low end
(:func:`candidate_sizes`); a halving must also meet the SLO's attainment over a fixed
sample of the inputs (:func:`vetting_draws`), since the medians cannot show the runs where
its thin margins fail. They run the fast path's own usage model on each at the inputs'
medians (one run: the planner's expected case, the same whatever the seed, chunking or
design of the study) and keep the size that
:func:`accelsim.models.serving.best_replica_size` picks: the SLO's attainment met, then the
fewest chip-hours, then the highest SLO rate per chip (a fixed pool) or the smallest size
(a fleet that follows the demand).

A mixture of experts whose preset gives its expert layout serves as wide expert
parallelism with data-parallel attention where the user sets ``Serving.expert_parallel``
(unset or False: tensor parallelism only; the automatic choice does not pick expert
parallelism, whose rack-scale per-chip gain the published results do not show, see
docs/serving.md). Its candidates are the doublings from 2 chips within the pool and the scale-up
domain, and the whole domain where the pool holds whole domains (an NVL72 rack: 72), each
holding a sequence at the near-worst memory share (:func:`expert_parallel_sizes`); the
same rule picks among every (size, layout) pair, tensor parallelism first at equal size.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from accelsim.catalog import Catalog
from accelsim.engines._inputs import InputDraws
from accelsim.engines.serving._inputs import draw_demand
from accelsim.engines.serving._rack import expert_layout
from accelsim.engines.serving._setup import (
    ServingSetup,
    build_replica,
    draw_replica,
    draw_replica_inputs,
    serving_setup,
)
from accelsim.engines.serving._stages import colocated_stage, hour_totals
from accelsim.engines.serving._usage import latency_table
from accelsim.models import serving as physics
from accelsim.scenario import Scenario

_MEDIAN = 0.5
# A size below the memory rule must hold a sequence with every uncertain input at
# physics.NEAR_WORST_QUANTILE, and meet the SLO's attainment on average over this many
# runs of the inputs (a fixed Latin hypercube sample), not only at their medians: with
# little KV room or a thin TPOT margin it fails where the inputs fall short, which the
# medians cannot show.
_VETTING_RUNS = 32


@dataclasses.dataclass(frozen=True)
class LayoutOutcome:
    """One candidate replica size at the inputs' medians (one run)."""

    chips: int
    """Chips per replica. [count]"""
    compliant_share: float
    """Requests within the SLO over those that arrived. [fraction]"""
    chip_hours: float
    """Chip-hours the endpoint holds over the horizon. [chip-hours]"""
    slo_tokens_per_s_per_chip: float
    """Output tokens/s per chip at the largest load meeting the SLO (0: none). [tokens/s]"""


def with_replica_size(
    setup: ServingSetup, chips: int, pool_count: int, expert_parallel: bool | None = None
) -> ServingSetup:
    """``setup`` with replicas of ``chips`` chips: ``pool_count // chips`` of them (on the
    layout ``expert_parallel`` says; unset: ``setup``'s)."""
    layout = setup.expert_parallel if expert_parallel is None else expert_parallel
    return dataclasses.replace(
        setup, chips_per_replica=chips, replicas_pool=pool_count // chips, expert_parallel=layout
    )


def median_draws() -> InputDraws:
    """One run with every uncertain input at its median."""
    return InputDraws(np.random.SeedSequence(0), 0, 1, at_quantile=_MEDIAN)


def vetting_draws() -> InputDraws:
    """A fixed Latin hypercube sample of the inputs (the same for every study)."""
    return InputDraws(np.random.SeedSequence(0), 0, _VETTING_RUNS, sampling="lhs")


def layout_outcomes(
    setup: ServingSetup,
    scenario: Scenario,
    cat: Catalog,
    sizes: list[int],
    draws: InputDraws | None = None,
    expert_parallel: bool | None = None,
) -> list[LayoutOutcome]:
    """The fast path's usage of the serving scenario (``setup`` its resolved facts) at each
    replica size in ``sizes``, averaged over the runs of ``draws`` (default: one run at the
    medians of the uncertain inputs, priors and the user's distributions alike; the same
    draws for every size; on the layout ``expert_parallel`` says, unset: ``setup``'s)."""
    work, pool = setup.work, scenario.fleet[0]
    draws = median_draws() if draws is None else draws
    load = draw_demand(work, draws)
    drawn = draw_replica_inputs(setup, draws, cat.serving_priors)  # the same at every size
    out = []
    for chips in sizes:
        sized = with_replica_size(setup, chips, pool.count, expert_parallel)
        replica = build_replica(sized, drawn)
        table = latency_table(sized, replica)
        totals = hour_totals(sized, load, (colocated_stage(sized, replica, table),))
        demand = totals.demand_requests
        compliant = np.where(replica.feasible, totals.compliant_requests, 0.0)
        share = np.divide(compliant, demand, out=np.ones_like(demand), where=demand > 0.0)
        per_chip = table.slo_load * replica.saturated_rps * sized.output_mean / chips
        out.append(
            LayoutOutcome(
                chips=chips,
                compliant_share=float(np.mean(share)),
                chip_hours=float(np.mean(totals.replica_hours)) * chips,
                slo_tokens_per_s_per_chip=float(np.mean(per_chip)),
            )
        )
    return out


def candidate_sizes(setup: ServingSetup, scenario: Scenario, cat: Catalog) -> list[int]:
    """The sizes the automatic layout tries (:func:`~accelsim.models.serving.replica_sizes`
    from the smallest below the memory rule's size that holds a sequence in nearly every
    run, :func:`~accelsim.models.serving.smallest_safe_size`), keeping under
    ``follow_demand`` only those whose pool holds ``min_replicas`` and ``max_replicas``;
    the user's size alone where given."""
    work, pool = setup.work, scenario.fleet[0]
    if work.chips_per_replica is not None:
        return [setup.chips_per_replica]
    most = min(pool.count, setup.chip.scale_up_domain_chips)
    worst = InputDraws(np.random.SeedSequence(0), 0, 1, at_quantile=physics.NEAR_WORST_QUANTILE)

    def holds(chips: int) -> bool:
        sized = with_replica_size(setup, chips, pool.count)
        return bool(draw_replica(sized, worst, cat.serving_priors).feasible[0])

    smallest = physics.smallest_safe_size(setup.chips_per_replica, holds)
    sizes = physics.replica_sizes(smallest, most, pool.count)
    if work.scaling == "follow_demand":
        need = max(work.min_replicas, work.max_replicas or 0)
        sizes = [c for c in sizes if pool.count // c >= need] or sizes[:1]
    return sizes


def expert_parallel_sizes(setup: ServingSetup, scenario: Scenario, cat: Catalog) -> list[int]:
    """The sizes at which the layout choice tries wide expert parallelism: none for a
    model without an expert layout or unless ``expert_parallel=True``; the user's size where
    given; else the doublings from 2 within the pool and the scale-up domain, and the whole
    domain where it divides the pool, each holding a sequence in nearly every run (and,
    under ``follow_demand``, ``min_replicas`` and ``max_replicas`` in the pool)."""
    work, pool = setup.work, scenario.fleet[0]
    if setup.experts is None or not work.expert_parallel:
        return []
    if work.chips_per_replica is not None:
        return [setup.chips_per_replica]
    most = min(pool.count, setup.chip.scale_up_domain_chips)
    sizes = physics.replica_sizes(2, most, pool.count) if most >= 2 else []
    if most >= 2 and pool.count % most == 0 and most not in sizes:
        sizes.append(most)
    worst = InputDraws(np.random.SeedSequence(0), 0, 1, at_quantile=physics.NEAR_WORST_QUANTILE)
    sizes = [
        c
        for c in sizes
        if bool(
            draw_replica(
                with_replica_size(setup, c, pool.count, True), worst, cat.serving_priors
            ).feasible[0]
        )
    ]
    if work.scaling == "follow_demand":
        need = max(work.min_replicas, work.max_replicas or 0)
        sizes = [c for c in sizes if pool.count // c >= need]
    return sizes


def _tensor_parallel_sizes(setup: ServingSetup, scenario: Scenario, cat: Catalog) -> list[int]:
    """The tensor-parallel candidates, a halving below the memory rule kept only where it
    meets the SLO's attainment over :func:`vetting_draws`."""
    sizes = candidate_sizes(setup, scenario, cat)
    below = [chips for chips in sizes if chips < setup.chips_per_replica]
    if below:
        vetted = layout_outcomes(setup, scenario, cat, below, vetting_draws())
        attainment = setup.work.slo.attainment
        failed = {o.chips for o in vetted if o.compliant_share < attainment}
        sizes = [chips for chips in sizes if chips not in failed] or sizes
    return sizes


def _with_expert_parallel(
    setup: ServingSetup, scenario: Scenario, cat: Catalog, ep: list[int]
) -> ServingSetup:
    """The planned setup of a mixture of experts whose layouts include expert parallelism:
    every (size, layout) pair through one :func:`~accelsim.models.serving.best_replica_size`
    (sizes coded ``2·chips + layout``, so tensor parallelism comes first at equal size)."""
    pool = scenario.fleet[0]
    tp = [] if setup.work.expert_parallel else _tensor_parallel_sizes(setup, scenario, cat)
    if not ep:
        raise ValueError(
            f"no expert-parallel replica of {setup.work.model} holds a sequence on a pool "
            f"of {pool.count} {setup.chip.id}: set expert_parallel to False or unset"
        )
    outcomes = [
        *layout_outcomes(setup, scenario, cat, tp, expert_parallel=False),
        *layout_outcomes(setup, scenario, cat, ep, expert_parallel=True),
    ]
    code = _best(setup, [2 * c for c in tp] + [2 * c + 1 for c in ep], outcomes)
    return with_replica_size(setup, code // 2, pool.count, bool(code % 2))


def _best(setup: ServingSetup, candidates: list[int], outcomes: list[LayoutOutcome]) -> int:
    """The candidate :func:`~accelsim.models.serving.best_replica_size` picks from its layout
    outcomes (``candidates[i]`` scored by ``outcomes[i]``), for the scenario's SLO attainment
    and scaling."""
    return physics.best_replica_size(
        candidates,
        [o.slo_tokens_per_s_per_chip for o in outcomes],
        compliant_share=[o.compliant_share for o in outcomes],
        chip_hours=[o.chip_hours for o in outcomes],
        attainment=setup.work.slo.attainment,
        follows_demand=setup.work.scaling == "follow_demand",
    )


def planned_setup(scenario: Scenario, cat: Catalog) -> ServingSetup:
    """:func:`~accelsim.engines.serving._setup.serving_setup` of a colocated endpoint with
    its replica size chosen as the module docstring says when the user gives none."""
    setup = serving_setup(scenario, cat)
    experts = expert_layout(setup.work, cat)
    forced = bool(setup.work.expert_parallel) and experts is not None
    setup = dataclasses.replace(setup, experts=experts, expert_parallel=forced)
    ep = expert_parallel_sizes(setup, scenario, cat)
    if ep or setup.work.expert_parallel:
        return _with_expert_parallel(setup, scenario, cat, ep)
    sizes = _tensor_parallel_sizes(setup, scenario, cat)
    if sizes == [setup.chips_per_replica]:
        return setup
    chips = _best(setup, sizes, layout_outcomes(setup, scenario, cat, sizes))
    if chips == setup.chips_per_replica:
        return setup
    return with_replica_size(setup, chips, scenario.fleet[0].count)


__all__ = [
    "LayoutOutcome",
    "candidate_sizes",
    "expert_parallel_sizes",
    "layout_outcomes",
    "median_draws",
    "planned_setup",
    "vetting_draws",
    "with_replica_size",
]
