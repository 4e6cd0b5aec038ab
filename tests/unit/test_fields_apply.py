"""A field that does not apply is an error, never silently ignored (issue 15, the class).

The audit: for every field of the scenario models, where is it read? The answer for
``Assumptions`` is :data:`accelsim.scenario._applies.ASSUMPTION_READERS`, checked here
against the engines themselves from both sides: every field a situation's engine reads is
drawn by it when set (it appears in ``Result.inputs``), and every ``assumptions.*`` input an
engine draws with nothing set is one the table says it reads. Each (field, situation) the
table says is not read is refused with an error naming the field and what to do.

The other fields are in :data:`FIELDS`, one entry per field of every scenario model (a test
holds it to the models, so a new field must be placed): where it is read, or the rule that
refuses it where it is not.

``repair_hours`` and ``spot_return_hours`` on a training run are read by its recovery
(:mod:`accelsim.engines.training._recovery`): the return time on a spot pool, the repair time with
``Pool.spare_hosts`` (refused on a lone run without spares, by the scenario's recovery
rules); the table lists them as read by training, and the engine-side test below skips
them (the stream DES samples them without recording them).
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

import accelsim as acs
from accelsim.engines import OverloadWarning
from accelsim.errors import IgnoredFieldWarning
from accelsim.scenario._applies import ASSUMPTION_READERS, Situation

_EVERY = "every engine"
_REPLICA_FIELDS = (
    "kind", "model", "params", "active_params", "layers", "d_model", "kv_heads", "head_dim",
    "attention_heads", "full_attention_layers", "kv_lora_rank", "qk_rope_head_dim",
    "qk_nope_head_dim", "v_head_dim", "precision", "kv_precision", "chips_per_replica",
    "kv_share", "max_batch", "prefill_chunk_tokens",
)  # fmt: skip
_DEMAND_FIELDS = (
    "rate_rps", "daily_profile", "burstiness", "burst_window_minutes", "growth_per_month",
    "input_tokens", "output_tokens", "horizon_days",
)  # fmt: skip
_MIX = "a workload in a mix (Scenario.workloads); refused on a lone workload (check_lone)"
FIELDS: dict[type, dict[str, str]] = {
    acs.Scenario: {
        "name": "labels; Result.scenario_name",
        "workload": _EVERY,
        "workloads": "the mixed-fleet DES",
        "fleet": "every pool in streams, traces and backgrounds; a training run alone trains "
        "on the first (documented on Scenario.fleet, tested in test_study_des.py); the others' "
        "term_share and spot pricing are refused",
        "assumptions": "ASSUMPTION_READERS",
        "background": "training runs (the DES hero); refused on other workloads",
        "scheduler": "the shared-cluster DES; refused on a lone training run and on serving",
        "horizon_days": "streams, traces, backgrounds (the window); serving (equal to its "
        "own); refused on a lone training run (TrainingRun.horizon_days is its horizon)",
        "warmup_days": "streams, traces, backgrounds; refused without a window and on serving",
        "credits": "pricing (credits_usd); refused where no cost is reported",
        "description": "free text for the reader, by design",
    },
    acs.TrainingRun: {
        "kind": _EVERY,
        "params": "FLOPs, memory fit, scaling model",
        "total_params": "memory (every expert), the MoE MFU prior",
        "tokens": "FLOPs",
        "framework": "porting hours (framework fit)",
        "stage": "re-optimisation per architecture change, instability prior",
        "recovery": "checkpoint-write and restart priors of both training engines",
        "start_year": "the default recovery technique (priors.frontier_recovery_from_year)",
        "fine_tune": "memory fit, FLOPs (LoRA/QLoRA), porting share, no re-optimisation",
        "trainable_params": "adapter memory and FLOPs (refused without lora/qlora)",
        "regime": "the MFU prior (mfu_ceiling_benchmark)",
        "target": "tokens to a target loss: the FLOPs grow with the engine's batch",
        "precision": "the chip's peak, the precision MFU factor",
        "sharding": "the memory-fit check (its documented purpose)",
        "flops": "compute time (overrides 6 N D)",
        "layers": "attention FLOPs, pipeline layout; refused with flops and mfu both set",
        "seq_len": "attention FLOPs, micro-batch, batch check; as layers",
        "d_model": "attention FLOPs, pipeline layout; as layers",
        "global_batch_tokens": "the scaling model; refused with assumptions.mfu",
        "horizon_days": "the censoring horizon of both training engines",
        "phases": "the analytic engine (refused on the DES)",
        "name": _MIX,
        "priority": _MIX,
        "chips": _MIX,
    },
    acs.TrainingPhase: {
        "chips": "the phase's MFU, failures and chip-hours",
        "token_share": "the phase's share of the FLOPs",
        "global_batch_tokens": "the phase's scaling model; refused with assumptions.mfu",
    },
    acs.JobStream: {
        "kind": _EVERY,
        "interarrival_hours": "the arrival process",
        "chips": "job sizes",
        "duration_hours": "job work",
        "priority": "schedulers priority, priority_preemptive; a warning under the others",
        "framework": "the pools a job may use",
        "whole_domains": "allocation in whole scale-up domains",
        "name": _MIX,
    },
    acs.Trace: {
        "kind": _EVERY,
        "path": "the trace reader",
        "columns": "the trace reader; a mapped priority or estimate column under a "
        "scheduler that ignores it is a warning",
        "time_unit": "the trace reader",
        "framework": "the pools a job may use",
        "chip_types": "the pools of each chip type; refused by check_runnable on a trace "
        "without the chip-type column",
        "skip_zero": "the trace reader",
        "name": _MIX,
    },
    acs.Serving: {
        **dict.fromkeys(
            _REPLICA_FIELDS,
            "the replica model (both serving engines)",
        ),
        **dict.fromkeys(
            _DEMAND_FIELDS,
            "the demand model (both serving engines)",
        ),
        "framework": "porting hours (framework fit)",
        "slo": "SLO attainment and capacity; the recommendation's goal",
        "router": "the request DES only; refused by simulate on the fast path",
        "scaling": "the replica plan",
        **dict.fromkeys(
            ("min_replicas", "max_replicas", "cold_start_minutes", "target_utilization"),
            "the replica plan under follow_demand; refused under fixed",
        ),
        "disaggregated": "the fast path (refused by the request DES)",
        "speculative": "the replica's iteration (both serving engines); refused with "
        "disaggregated pools",
        "expert_parallel": "the replica layout (both serving engines); refused with "
        "disaggregated pools and on a dense model",
        "name": _MIX,
        "priority": _MIX,
        "chips": _MIX,
    },
    acs.Speculative: {
        "draft_tokens": "the replica's iteration (tokens per verification step)",
        "acceptance": "the replica's iteration (tokens per verification step)",
        "draft_cost": "the replica's iteration (the draft pass)",
    },
    acs.SLO: {
        "ttft_ms": "SLO capacity and attainment",
        "tpot_ms": "SLO capacity and attainment",
        "percentile": "SLO capacity and attainment",
        "attainment": "the recommendation's SLO goal",
    },
    acs.Pool: {
        "chip": _EVERY,
        "count": _EVERY,
        "provider": "pricing (None: unpriced)",
        "pricing": "pricing, lead times, spot preemptions",
        "region": "which offer prices the pool (and its spot preemption rate, if it has one)",
        "term_share": "pricing of reserved pools; refused where the pool's cost is not reported",
        "block_days": "pricing of capacity blocks (required for and only for them)",
        "spare_hosts": "a training run's recovery and pricing (its own pool; not on spot)",
        "fallback_after_preemptions": "a spot training run's fallback (its own pool)",
        "fallback_after_days": "a spot training run's fallback (its own pool)",
    },
    acs.Credit: {
        "usd": "credits_usd",
        "chip_hours": "credits_usd",
        "provider": "credits_usd (scope; out of the fleet's scope its line is 0, stated)",
        "chip": "credits_usd (scope)",
        "expires_days": "credits_usd",
        "name": "labels, by design",
    },
}


@pytest.mark.parametrize("model", list(FIELDS), ids=lambda m: m.__name__)
def test_every_field_of_every_scenario_model_is_placed(model: type) -> None:
    """Each field is in the table, read somewhere or refused where not (no field unplaced)."""
    assert set(FIELDS[model]) == set(model.model_fields)  # type: ignore[attr-defined]


SITUATIONS: tuple[Situation, ...] = ("training", "shared_training", "stream", "serving")

# A valid value of each assumption (in its range, and for every situation that reads it).
VALUES: dict[str, float] = {
    "mfu": 0.4,
    "failure_rate_per_chip_hour": 1e-5,
    "checkpoint_interval_hours": 2.0,
    "checkpoint_write_hours": 0.05,
    "restart_hours": 0.5,
    "startup_hours": 0.1,
    "repair_hours": 4.0,
    "spot_preemptions_per_hour": 1e-4,
    "spot_return_hours": 2.0,
    "lead_time_days": 1.0,
    "porting_hours": 10.0,
    "optimization_hours": 10.0,
    "engineers": 2.0,
    "engineer_usd_per_hour": 100.0,
    "electricity_usd_per_kwh": 0.1,
    "pue": 1.2,
    "delay_usd_per_day": 100.0,
    "wait_usd_per_job_hour": 1.0,
    "badput_fraction": 0.05,
    "architecture_changes": 2.0,
    "emission_kg_per_kwh": 0.4,
    "instability_events_per_day": 0.01,
    "price_change_per_year": -0.1,
}
# Read by the stream DES as samplers of repair and return times (not recorded as inputs);
# the training engines read them only on a spot pool or with spare hosts.
NOT_RECORDED = {"repair_hours", "spot_return_hours"}

_STREAM = acs.JobStream(interarrival_hours=4.0, chips=8, duration_hours=2.0)


def _pool(field: str | None = None) -> acs.Pool:
    """A 64-chip H100 pool whose pricing lets ``field`` apply (spot, on-prem)."""
    if field in ("spot_preemptions_per_hour", "spot_return_hours"):
        return acs.Pool(chip="h100-sxm", count=64, provider="gcp", pricing="spot")
    if field == "electricity_usd_per_kwh":
        return acs.Pool(chip="h100-sxm", count=64, provider="on_prem", pricing="on_prem")
    return acs.Pool(chip="h100-sxm", count=64, provider="aws")


def scenario(where: Situation, field: str | None = None, **kw: Any) -> acs.Scenario:
    """A small valid scenario of each situation, with assumption ``field`` set if given."""
    base: dict[str, Any] = {"name": where, "fleet": [_pool(field)]}
    if where in ("training", "shared_training"):
        base["workload"] = acs.TrainingRun(params=7e9, tokens=1e11, stage="prototype")
    if where == "shared_training":
        base |= {"background": _STREAM, "horizon_days": 2.0}
    if where == "stream":
        base |= {"workload": _STREAM, "horizon_days": 1.0}
    if where == "serving":
        base["workload"] = acs.Serving(
            model="llama-3.1-8b",
            rate_rps=1.0,
            input_tokens=200,
            output_tokens=100,
            slo=acs.SLO(ttft_ms=2000, tpot_ms=100),
            horizon_days=1.0,
        )
    if field is not None:
        base["assumptions"] = acs.Assumptions(**{field: VALUES[field]})
    base.update(kw)
    return acs.Scenario(**base)


def _simulate(s: acs.Scenario) -> acs.Result:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OverloadWarning)
        return acs.simulate(s, runs=2, seed=1, progress=False)


def _drawn_assumptions(res: acs.Result) -> set[str]:
    """The ``Assumptions`` fields an engine drew (input names ``assumptions.<field>[.x]``)."""
    return {k.split(".")[1] for k in res.inputs if k.startswith("assumptions.")}


def test_the_table_has_every_assumption_and_every_value() -> None:
    """A new Assumptions field must be placed in the table (and given a value here)."""
    assert set(ASSUMPTION_READERS) == set(acs.Assumptions.model_fields)
    assert set(VALUES) == set(acs.Assumptions.model_fields)


NOT_READ = [
    (field, where)
    for field, readers in ASSUMPTION_READERS.items()
    for where in SITUATIONS
    if where not in readers
]


@pytest.mark.parametrize(("field", "where"), NOT_READ, ids=[f"{f}-{w}" for f, w in NOT_READ])
def test_an_assumption_no_engine_reads_is_refused(field: str, where: Situation) -> None:
    with pytest.raises(ValidationError, match=rf"assumptions\.{field} applies to .*remove it"):
        scenario(where, field)


READ = [
    (field, where)
    for field, readers in ASSUMPTION_READERS.items()
    for where in readers
    if field not in NOT_RECORDED
]


@pytest.mark.parametrize(("field", "where"), READ, ids=[f"{f}-{w}" for f, w in READ])
def test_an_assumption_the_table_says_is_read_is_drawn_by_the_engine(
    field: str, where: Situation
) -> None:
    """Set, it validates and the engine draws it (recorded as the user's input)."""
    res = _simulate(scenario(where, field))
    assert field in _drawn_assumptions(res), sorted(res.inputs)


@pytest.mark.parametrize("where", SITUATIONS)
def test_every_assumption_an_engine_draws_is_in_the_table(where: Situation) -> None:
    """Nothing set: the priors an engine draws are all of fields the table says it reads."""
    drawn = _drawn_assumptions(_simulate(scenario(where)))
    assert drawn, "the engine drew no assumption at all"
    unlisted = {f for f in drawn if where not in ASSUMPTION_READERS[f]}
    assert not unlisted, unlisted


def _trace(tmp_path: Path, **kw: Any) -> acs.Trace:
    path = tmp_path / "jobs.csv"
    path.write_text("submit,chips,duration,priority,estimate\n0,4,3600,1,7200\n", "utf-8")
    return acs.Trace(path=str(path), **kw)


def _serving_scheduler() -> acs.Scenario:
    return scenario("serving", scheduler="backfill")


def _lone_with_horizon() -> acs.Scenario:
    return scenario("training", horizon_days=30.0)


def _production_changes() -> acs.Scenario:
    return scenario(
        "training",
        workload=acs.TrainingRun(params=7e9, tokens=1e11, stage="production"),
        assumptions=acs.Assumptions(architecture_changes=3.0),
    )


def _batch_with_mfu() -> acs.Scenario:
    run = acs.TrainingRun(params=7e9, tokens=1e11, global_batch_tokens=4e6)
    return scenario("training", workload=run, assumptions=acs.Assumptions(mfu=0.4))


def _phase_batch_with_mfu() -> acs.Scenario:
    phases = [
        acs.TrainingPhase(chips=32, token_share=0.5, global_batch_tokens=2e6),
        acs.TrainingPhase(chips=64, token_share=0.5),
    ]
    run = acs.TrainingRun(params=7e9, tokens=1e11, phases=phases)
    return scenario("training", workload=run, assumptions=acs.Assumptions(mfu=0.4))


def _attention_with_flops_and_mfu() -> acs.Scenario:
    run = acs.TrainingRun(
        params=7e9, tokens=1e11, flops=5e21, layers=32, seq_len=4096, d_model=4096
    )
    return scenario("training", workload=run, assumptions=acs.Assumptions(mfu=0.4))


def _unpriced(**kw: Any) -> acs.Scenario:
    return scenario("training", fleet=[acs.Pool(chip="h100-sxm", count=64, provider=None)], **kw)


def _stream_with_an_unpriced_pool() -> acs.Scenario:
    fleet = [
        acs.Pool(chip="h100-sxm", count=64, provider="aws"),
        acs.Pool(chip="v100", count=8, provider=None),
    ]
    return scenario("stream", fleet=fleet, assumptions=acs.Assumptions(wait_usd_per_job_hour=5.0))


def _term_share_on_a_background_pool() -> acs.Scenario:
    fleet = [
        acs.Pool(chip="h100-sxm", count=64, provider="aws"),
        acs.Pool(chip="h100-sxm", count=64, provider="gcp", pricing="commit_1y", term_share=0.5),
    ]
    return scenario("shared_training", fleet=fleet)


def _spot_on_a_lone_runs_second_pool() -> acs.Scenario:
    fleet = [_pool(), _pool("spot_preemptions_per_hour")]
    a = acs.Assumptions(spot_preemptions_per_hour=1e-4)
    return scenario("training", fleet=fleet, assumptions=a)


def _term_share_on_a_lone_runs_second_pool() -> acs.Scenario:
    fleet = [
        _pool(),
        acs.Pool(chip="h100-sxm", count=64, provider="gcp", pricing="commit_1y", term_share=0.5),
    ]
    return scenario("training", fleet=fleet)


def _unpriced_on_prem_electricity() -> acs.Scenario:
    pool = acs.Pool(chip="h100-sxm", count=64, provider=None, pricing="on_prem")
    return scenario(
        "training", fleet=[pool], assumptions=acs.Assumptions(electricity_usd_per_kwh=0.1)
    )


# (case, builder, the field named, what to do instead)
REFUSED: list[tuple[str, Any, str, str]] = [
    (
        "lone run horizon_days",
        _lone_with_horizon,
        r"^.*horizon_days is the window",
        r"workload\.horizon_days",
    ),
    ("serving scheduler", _serving_scheduler, r"scheduler='backfill'", r"workload\.router"),
    (
        "production architecture_changes",
        _production_changes,
        r"assumptions\.architecture_changes",
        r"stage 'prototype'",
    ),
    ("batch with mfu", _batch_with_mfu, r"workload\.global_batch_tokens", r"remove one"),
    (
        "phase batch with mfu",
        _phase_batch_with_mfu,
        r"workload\.phases\[0\]\.global_batch_tokens",
        r"remove one",
    ),
    (
        "attention with flops and mfu",
        _attention_with_flops_and_mfu,
        r"workload\.layers",
        r"remove them",
    ),
    (
        "unpriced engineer wage",
        lambda: _unpriced(assumptions=acs.Assumptions(engineer_usd_per_hour=90.0)),
        r"assumptions\.engineer_usd_per_hour prices a cost",
        r"remove it",
    ),
    (
        "unpriced delay",
        lambda: _unpriced(assumptions=acs.Assumptions(delay_usd_per_day=1e4)),
        r"assumptions\.delay_usd_per_day prices a cost",
        r"remove it",
    ),
    (
        "unpriced credits",
        lambda: _unpriced(credits=[acs.Credit(usd=1e4)]),
        r"credits offset hardware cost",
        r"remove them",
    ),
    (
        "stream with an unpriced pool",
        _stream_with_an_unpriced_pool,
        r"assumptions\.wait_usd_per_job_hour prices a cost",
        r"remove it",
    ),
    (
        "term_share on a background pool",
        _term_share_on_a_background_pool,
        r"fleet\[1\]\.term_share",
        r"remove it",
    ),
    (
        "spot rate with a lone run's first pool not spot",
        _spot_on_a_lone_runs_second_pool,
        r"assumptions\.spot_preemptions_per_hour applies to spot pools and the training run's",
        r"use pricing spot",
    ),
    (
        "term_share on a lone run's second pool",
        _term_share_on_a_lone_runs_second_pool,
        r"fleet\[1\]\.term_share",
        r"pays for its first pool only",
    ),
    (
        "electricity on an unpriced on-prem pool",
        _unpriced_on_prem_electricity,
        r"assumptions\.electricity_usd_per_kwh",
        r"remove it",
    ),
]


@pytest.mark.parametrize(("case", "build", "field", "advice"), REFUSED, ids=[r[0] for r in REFUSED])
def test_a_field_that_does_not_apply_is_refused_naming_it(
    case: str, build: Any, field: str, advice: str
) -> None:
    with pytest.raises(ValidationError) as err:
        build()
    message = str(err.value)
    assert re.search(field, message, flags=re.M), message
    assert re.search(advice, message), message


@pytest.mark.parametrize("scheduler", ["fifo", "backfill", "smallest_first"])
@pytest.mark.parametrize("where", ["stream", "shared_training"])
def test_a_stream_priority_under_a_scheduler_that_ignores_it_is_a_stated_warning(
    where: Situation, scheduler: str
) -> None:
    """Accepted with a warning naming the field, not refused: one stream compared across
    schedulers (a sweep over ``scheduler``) is a study of its own."""
    stream = _STREAM.model_copy(update={"priority": acs.Choice(values=[0, 2])})
    field = "workload" if where == "stream" else "background"
    with pytest.warns(IgnoredFieldWarning, match=rf"{field}\.priority applies to .*ignores"):
        assert scenario(where, scheduler=scheduler, **{field: stream}).scheduler == scheduler
    with warnings.catch_warnings():
        warnings.simplefilter("error", IgnoredFieldWarning)
        for accepted in ("priority", "priority_preemptive"):
            assert scenario(where, scheduler=accepted, **{field: stream}).scheduler == accepted
        # the default priority (0 for every job) is no choice, so no scheduler warns
        assert scenario(where, scheduler=scheduler).scheduler == scheduler


def test_a_sweep_compares_schedulers_on_a_prioritised_stream() -> None:
    stream = _STREAM.model_copy(update={"priority": 2})
    base = scenario("stream", scheduler="priority", workload=stream)
    with pytest.warns(IgnoredFieldWarning):
        sw = acs.sweep(
            base,
            {"scheduler": ["fifo", "priority"]},
            runs=2,
            seed=1,
            metrics=["mean_wait_hours"],
        )
    assert [r["scheduler"] for r in sw.rows] == ["fifo", "priority"]


def test_a_trace_priority_or_estimate_column_the_scheduler_ignores_is_a_stated_warning(
    tmp_path: Path,
) -> None:
    mapped = {"submit": "submit", "chips": "chips", "duration": "duration"}
    prio = _trace(tmp_path, columns={**mapped, "priority": "priority"})
    with pytest.warns(IgnoredFieldWarning, match=r"workload\.columns maps a priority column"):
        scenario("stream", workload=prio, scheduler="backfill")
    estimate = _trace(tmp_path, columns={**mapped, "estimate": "estimate"})
    with pytest.warns(IgnoredFieldWarning, match=r"workload\.columns maps an estimate column"):
        scenario("stream", workload=estimate, scheduler="fifo")
    with warnings.catch_warnings():
        warnings.simplefilter("error", IgnoredFieldWarning)
        assert scenario("stream", workload=prio, scheduler="priority").scheduler == "priority"
        assert scenario("stream", workload=estimate, scheduler="backfill").scheduler == "backfill"


def test_the_serving_router_is_refused_on_the_fast_path() -> None:
    s = scenario("serving")
    rr = s.replace("workload.router", "round_robin")
    with pytest.raises(
        ValueError, match=r"workload\.router='round_robin' applies to the request DES"
    ):
        acs.simulate(rr, runs=2, seed=1, progress=False)
    assert acs.simulate(s, runs=2, seed=1, progress=False).engine == "analytic"


def test_what_stays_accepted() -> None:
    """The stated exceptions: a spot run's return time and a repair time with spare hosts
    (read by the training engines' recovery; a repair time without spares is refused), and
    a credit outside the fleet's provider (an organisation's credits, reused across
    options: its line is 0, printed)."""
    spot = acs.Pool(chip="h100-sxm", count=64, provider="gcp", pricing="spot")
    a = acs.Assumptions(spot_return_hours=2.0)
    drawn = _simulate(scenario("training", fleet=[spot], assumptions=a)).inputs
    assert "assumptions.spot_return_hours" in drawn
    spares = acs.Pool(chip="h100-sxm", count=64, provider="gcp", spare_hosts=1)
    r = acs.Assumptions(repair_hours=4.0)
    drawn = _simulate(scenario("training", fleet=[spares], assumptions=r)).inputs
    assert "assumptions.repair_hours" in drawn
    with pytest.raises(ValidationError, match="repair_hours applies to a training run alone"):
        scenario("training", assumptions=r)
    res = _simulate(scenario("training", credits=[acs.Credit(usd=1e4, provider="gcp")]))
    assert not res.samples("credits_usd").any()


def test_replace_several_paths_is_validated_once_at_the_end() -> None:
    """A training run sharing its fleet -> alone: dropping the background alone leaves a
    lone run with a window, dropping the window alone leaves a background without one."""
    shared = scenario("shared_training")
    with pytest.raises(ValidationError, match="horizon_days is the window"):
        shared.replace("background", None)
    with pytest.raises(ValidationError, match="horizon_days is required with a background"):
        shared.replace("horizon_days", None)
    alone = shared.replace({"background": None, "horizon_days": None})
    assert alone.background is None
    assert alone.horizon_days is None
    assert alone == scenario("training").model_copy(update={"name": "shared_training"})
    with pytest.raises(TypeError, match="takes no value"):
        shared.replace({"horizon_days": 3.0}, 4.0)
    with pytest.raises(TypeError, match="needs a value"):
        shared.replace("horizon_days")
    with pytest.raises(KeyError, match="no field at path"):
        shared.replace({"horizon_days": 3.0, "fleet.7.count": 8})
