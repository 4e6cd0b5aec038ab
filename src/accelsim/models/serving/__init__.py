"""LLM serving on one replica: memory, iteration time, throughput and latency under load.

Pure, vectorised formulas (arrays in, arrays out, broadcast by numpy; no SimPy, no I/O, no
RNG). A *replica* is the group of ``chips`` that holds one copy of the weights (tensor or
expert parallel) and runs continuous batching: every iteration decodes one token for each
running sequence and prefills a chunk of new prompt tokens.

One formula, :func:`iteration_seconds`, gives the time of such an iteration. Everything else
is built on it, so the request-level DES (one call per iteration, plain floats) and the
analytic fast path (arrays of runs) share it. :func:`iteration_cost` turns a replica's
hardware, model and uncertain efficiency into an :class:`IterationCost` of per-run
coefficients once; each iteration then costs a handful of multiplications.

Units: bytes [B], seconds [s], rates [1/s]; ``peak_tflops`` [TFLOP/s], ``hbm_tbps`` [TB/s],
``interconnect_gbps`` [GB/s] as in :class:`accelsim.catalog.Chip`.

The formulas live in private modules, re-exported here: ``_iteration`` (iteration time,
decode stretches), ``_attention`` (attention FLOPs per context token from the model's
head widths), ``_memory`` (weights, KV cache, batch limit, throughput), ``_load``
(latency under load), ``_decode`` (its decode fixed point), ``_admission`` (its batch slots'
queue), ``_capacity`` (capacity under an SLO), ``_layout`` (the replica size chosen when
none is given), ``_interference`` (the time prompts add to the decoding sequences' token
gaps), ``_disaggregated`` (prefill and decode replicas on separate pools), ``_runs``
(runs of iterations in closed form, for the DES), ``_speculative`` (speculative decoding
and multi-token prediction: tokens per verification step) and ``_expert_parallel`` (wide
expert parallelism with data-parallel attention inside a scale-up domain; ``_expert_balance``
the busiest rank's routed load, ``_rank_balance`` the slowest rank's prompts)."""

from __future__ import annotations

from accelsim.models.serving._attention import AttentionFlops, attention_flops_per_context_token
from accelsim.models.serving._capacity import SloCapacity, slo_capacity_rps
from accelsim.models.serving._disaggregated import (
    DecodeLatency,
    PrefillLatency,
    decode_latency,
    decode_saturated_rps,
    kv_transfer_seconds,
    prefill_latency,
    prefill_seconds,
)
from accelsim.models.serving._expert_balance import expected_max_normal, expert_load_imbalance
from accelsim.models.serving._expert_parallel import (
    all_to_all_seconds_per_token,
    expert_parallel_cost,
    expert_parallel_kv_capacity,
    expert_parallel_weight_bytes,
)
from accelsim.models.serving._iteration import (
    IterationCost,
    IterationTerms,
    decode_stretch_seconds,
    iteration_cost,
    iteration_seconds,
    iteration_terms,
    terms_iteration_seconds,
)
from accelsim.models.serving._layout import (
    NEAR_WORST_QUANTILE,
    best_replica_size,
    replica_sizes,
    smallest_safe_size,
)
from accelsim.models.serving._load import LoadLatency, latency_under_load
from accelsim.models.serving._memory import (
    batch_limit,
    budget_batch_cap,
    kv_bytes_per_token,
    kv_bytes_per_token_from_values,
    kv_capacity_tokens,
    offline_tokens_per_s,
    tensor_parallel_kv_copies,
    throughput_at_batch,
    weight_bytes,
)
from accelsim.models.serving._prefill_batch import shared_prefill_seconds
from accelsim.models.serving._prefill_queue import mg1_wait_moments
from accelsim.models.serving._rank_balance import (
    expected_max_poisson,
    rank_straggle_flops_per_token,
    slowest_rank_prompt_tokens,
)
from accelsim.models.serving._runs import (
    IterationRun,
    run_seconds,
    terms_iteration_run,
)
from accelsim.models.serving._speculative import (
    expected_accepted_tokens,
    speculative_cost,
    speculative_step_seconds,
)

__all__ = [
    "NEAR_WORST_QUANTILE",
    "AttentionFlops",
    "DecodeLatency",
    "IterationCost",
    "IterationRun",
    "IterationTerms",
    "LoadLatency",
    "PrefillLatency",
    "SloCapacity",
    "all_to_all_seconds_per_token",
    "attention_flops_per_context_token",
    "batch_limit",
    "best_replica_size",
    "budget_batch_cap",
    "decode_latency",
    "decode_saturated_rps",
    "decode_stretch_seconds",
    "expected_accepted_tokens",
    "expected_max_normal",
    "expected_max_poisson",
    "expert_load_imbalance",
    "expert_parallel_cost",
    "expert_parallel_kv_capacity",
    "expert_parallel_weight_bytes",
    "iteration_cost",
    "iteration_seconds",
    "iteration_terms",
    "kv_bytes_per_token",
    "kv_bytes_per_token_from_values",
    "kv_capacity_tokens",
    "kv_transfer_seconds",
    "latency_under_load",
    "mg1_wait_moments",
    "offline_tokens_per_s",
    "prefill_latency",
    "prefill_seconds",
    "rank_straggle_flops_per_token",
    "replica_sizes",
    "run_seconds",
    "shared_prefill_seconds",
    "slo_capacity_rps",
    "slowest_rank_prompt_tokens",
    "smallest_safe_size",
    "speculative_cost",
    "speculative_step_seconds",
    "tensor_parallel_kv_copies",
    "terms_iteration_run",
    "terms_iteration_seconds",
    "throughput_at_batch",
    "weight_bytes",
]
