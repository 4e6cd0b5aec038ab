"""``serving_capacity``: what one replica of a serving scenario delivers, as distributions."""

from __future__ import annotations

from accelsim.catalog import Catalog, active
from accelsim.engines import pair_capacity, replica_capacity
from accelsim.results import Result
from accelsim.scenario import Scenario, Serving
from accelsim.seeding import SeedLike, as_seed_sequence
from accelsim.study._calibration_used import calibration_used


def serving_capacity(
    scenario: Scenario,
    *,
    runs: int = 1000,
    seed: SeedLike = None,
    catalog: Catalog | None = None,
) -> Result:
    """Capacity of one replica of a serving scenario, per Monte Carlo run.

    Draws the serving priors (efficiency, iteration overhead, memory share, max batch) as
    :func:`accelsim.simulate` does (same input names, so the same values for a seed) and
    returns a :class:`~accelsim.Result` with, per run:

    - ``offline_tokens_per_s_per_chip``: output tokens/s per chip with the replica saturated
      at its batch limit and no latency bound (MLPerf Offline);
    - ``slo_tokens_per_s_per_chip``: output tokens/s per chip at the largest Poisson request
      rate whose TTFT and TPOT percentiles meet the scenario's SLO (0 where none does);
    - ``offline_rps_per_replica``, ``slo_rps_per_replica`` [1/s]: the same as request rates
      of one replica; ``batch_limit`` [sequences]; ``feasible`` (1 or 0).

    With disaggregated prefill and decode pools (``Serving(disaggregated=...)``) the capacity
    is that of a balanced prefill + decode pair: ``offline_tokens_per_s_per_chip`` and
    ``slo_tokens_per_s_per_chip`` per chip of both pools in the ratio that balances them
    (each pool at its saturated rate, or at its SLO capacity: TTFT for prefill, TPOT for
    decode, the rates the fast path sizes the pools with);
    ``prefill_/decode_offline_rps_per_replica``, ``prefill_/decode_slo_rps_per_replica``
    [1/s]; ``decode_per_prefill_replicas``; ``batch_limit`` (decode) and ``feasible``.

    Parameters
    ----------
    scenario : Scenario
        A scenario with a :class:`~accelsim.Serving` workload.
    runs : int
        Monte Carlo runs (>= 1).
    seed : int, SeedSequence or None
        Root seed; the same seed gives the same draws.
    catalog : Catalog, optional
        Chips and priors to use; by default the active catalog (``accelsim.catalog.load``).

    Examples
    --------
    >>> import accelsim as acs
    >>> svc = acs.Serving(model="llama-3.1-8b", precision="fp8", rate_rps=10.0,
    ...                   input_tokens=1000, output_tokens=200,
    ...                   slo=acs.SLO(ttft_ms=2000, tpot_ms=100))
    >>> s = acs.Scenario(name="s", workload=svc,
    ...                  fleet=[acs.Pool(chip="h100-sxm", count=8, provider="aws")])
    >>> cap = acs.serving_capacity(s, runs=100, seed=1)
    >>> bool((cap.samples("slo_tokens_per_s_per_chip")
    ...       <= cap.samples("offline_tokens_per_s_per_chip")).all())
    True
    """
    if not isinstance(scenario.workload, Serving):
        raise ValueError(
            f"serving_capacity needs a serving workload; scenario {scenario.name!r} has a "
            f"{scenario.workload_kind} workload"
        )
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ValueError(f"runs must be an integer >= 1, got {runs!r}")
    root = as_seed_sequence(seed)
    cat = active() if catalog is None else catalog
    if scenario.workload.disaggregated is not None:
        data, draws = pair_capacity(scenario, root, 0, runs, cat=cat)
    else:
        data, draws = replica_capacity(scenario, root, 0, runs, cat=cat)
    entropy = root.entropy if isinstance(root.entropy, int) else None
    calibrated = calibration_used(cat, draws.drawn)
    return Result(
        scenario_name=scenario.name,
        data={k: v.copy() for k, v in data.items()},
        seed_entropy=entropy,
        engine="serving_capacity",
        inputs={k: v.copy() for k, v in draws.drawn.items()},
        scenario=scenario,
        extras={"calibration": calibrated} if calibrated else {},
    )


__all__ = ["serving_capacity"]
