"""The convergence cost of a larger batch, for a run trained to a target loss.

A run with ``TrainingRun.target == "loss"`` states the tokens its target takes at a small
batch (E_min); at the engine's global batch B it needs
E = E_min (1 + B / B_noise) (:func:`accelsim.models.perf.tokens_to_target`). B is the batch
:func:`accelsim.models.perf.mfu_at_scale` gives the run at its chips (its own where it sets
one, else the prior that grows with scale); B_noise is the critical batch of the run's
compute at E_min (``scaling.yaml`` ``critical_batch_*``, DeepSeek LLM's law).
"""

from __future__ import annotations

import numpy as np

from accelsim._typing import FloatArray
from accelsim.catalog import Catalog, Chip
from accelsim.engines.training._inputs import TrainingInputs, training_flops
from accelsim.models import perf
from accelsim.scenario import TrainingRun

# The same conventions as accelsim.engines.training._analytic (HBM share, default context).
_USABLE_HBM_FRACTION = 0.9
_DEFAULT_SEQ_LEN = 4096.0


def noise_batch_tokens(work: TrainingRun, cat: Catalog) -> float:
    """B_noise of the run: the critical batch of its compute at E_min tokens. [tokens]

    McCandlish et al. (arXiv:1812.06162) find the critical batch, where a run spends twice
    the minimum steps and twice the minimum tokens, close to the noise scale; DeepSeek LLM's
    law (arXiv:2401.02954) gives it from the compute. For MLPerf's Llama 3.1 8B (from scratch,
    ~1.5e9 tokens, 7e19 FLOP) it gives 0.9M tokens, which the reference convergence points
    (``tests/validation/data/mlperf_rcp.csv``) bear out.
    """
    s = cat.scaling
    flops = training_flops(work, 1)[0]
    return float(
        perf.critical_batch_tokens(
            flops, coefficient=s.critical_batch_coefficient, exponent=s.critical_batch_exponent
        )
    )


def run_batch_tokens(
    inputs: TrainingInputs, work: TrainingRun, chip: Chip, chips: int, cat: Catalog
) -> FloatArray:
    """The run's global batch at ``chips`` chips, as :func:`accelsim.models.perf.mfu_at_scale`
    sets it: the run's own (``inputs.mfu.batch_fixed``), else the prior that grows with the
    chips (:func:`accelsim.models.perf.batch_prior_tokens`) between one micro-batch per
    replica and the critical batch. [tokens]"""
    m = inputs.mfu
    assert m.global_batch_tokens is not None  # drawn for every run to a target loss
    if m.batch_fixed:
        return np.asarray(m.global_batch_tokens, dtype=float)
    s = cat.scaling
    group = perf.min_chips_to_fit(
        work.state_params, chip.hbm_gib, sharding="zero3", usable_fraction=_USABLE_HBM_FRACTION
    )
    seq = float(work.seq_len) if work.seq_len is not None else _DEFAULT_SEQ_LEN
    micro = s.micro_batch_sequences * seq
    return perf.batch_prior_tokens(
        float(chips),
        base_tokens=m.global_batch_tokens,
        tokens_per_chip=m.tokens_per_chip,
        ceiling_tokens=noise_batch_tokens(work, cat),
        floor_tokens=float(chips) / np.minimum(group, float(chips)) * micro,
    )


def token_factor(
    inputs: TrainingInputs, work: TrainingRun, chip: Chip, chips: int, cat: Catalog
) -> FloatArray | float:
    """Tokens the run needs over its stated ``tokens``, per run: 1 for a fixed-token run,
    else ``1 + B / B_noise`` at its batch on ``chips`` chips. [dimensionless]"""
    if work.target != "loss":
        return 1.0
    batch = run_batch_tokens(inputs, work, chip, chips, cat)
    return perf.tokens_to_target(1.0, batch, noise_batch_tokens(work, cat))


__all__ = ["noise_batch_tokens", "run_batch_tokens", "token_factor"]
