"""The scaling model on the pair it is calibrated on: Llama 3 405B from 8,192 to 16,384 GPUs.

Published figure (Dubey et al. 2024, "The Llama 3 Herd of Models", table 4,
https://arxiv.org/abs/2407.21783; also Balaji, SC'24): 405B parameters, 126 layers, TP 8 x
PP 16 (128 GPUs per replica), 2,048 sequences of 8,192 tokens per step (16M tokens) at both
scales, 430 TFLOP/s per H100 at 8,192 GPUs and 400 at 16,384: an efficiency of 0.930 for the
doubling. ``catalog/data/scaling.yaml`` fits its ``overlap`` (0) and
``layers_per_virtual_stage`` (1) to this pair and states what the model gives without the
pipeline bubble (0.978); the MLPerf series (tests/validation/test_perf_mlperf.py) are the
validation set. So this is a labelled **regression guard of the calibration**, in sample by
construction, not a validation: a change to the scaling formulas or to the shipped defaults
that moves the pair off its fit fails here, and the data note must then be redone.

Tolerance: 1 % on the efficiency, the rounding of the published TFLOP/s (430 and 400 are
given to 2-3 significant figures, +-0.5 each: +-0.2 % on the ratio) with margin for the
non-integer layers per stage the shipped interleaving implies (126 / 16).
"""

from __future__ import annotations

import pytest

from accelsim import catalog
from accelsim.models import perf

PARAMS = 405e9
LAYERS = 126
PIPELINE = 16
REPLICA_GPUS = 128  # TP 8 x PP 16
SEQ_LEN = 8192
BATCH_TOKENS = 2048 * SEQ_LEN
TFLOPS_8K, TFLOPS_16K = 430.0, 400.0


def _carry(with_bubble: bool) -> float:
    """MFU carried from 8,192 to 16,384 GPUs over MFU at 8,192 (the predicted efficiency)."""
    h100 = catalog.chip("h100-sxm")
    d = catalog.scaling_defaults()
    mfu_8k = TFLOPS_8K / h100.bf16_tflops
    bubble = {
        "micro_batch_tokens": SEQ_LEN * d.micro_batch_sequences,
        "virtual_stages": LAYERS / PIPELINE / d.layers_per_virtual_stage,
    }
    carried = perf.carry_mfu(
        mfu_8k,
        8192,
        16_384,
        params=PARAMS,
        global_batch_tokens=BATCH_TOKENS,
        peak_tflops=h100.bf16_tflops,
        scale_up_domain_chips=h100.scale_up_domain_chips,
        scale_up_gbps=h100.interconnect_gbps,
        scale_out_gbps=h100.scale_out_gbps,
        model_parallel_chips=REPLICA_GPUS,
        overlap=d.overlap,
        pipeline_chips=PIPELINE,
        **(bubble if with_bubble else {}),  # no micro-batch size: no bubble
    )
    return float(carried) / mfu_8k


def test_the_shipped_defaults_reproduce_the_llama3_doubling() -> None:
    """With the shipped overlap and interleaving the model gives the published 0.930
    (400 / 430) within 1 % (computed: 0.929)."""
    assert _carry(with_bubble=True) == pytest.approx(TFLOPS_16K / TFLOPS_8K, rel=0.01)


def test_without_the_bubble_the_model_gives_what_the_data_note_states() -> None:
    """scaling.yaml: "the model predicts 0.978 for the Llama 3 doubling even with no overlap
    at all, above the measured 0.930": the all-reduce alone explains a third of the loss,
    which is why the bubble term was fitted. To 1e-3: the note rounds the MFU to 0.43
    (430 / 989 = 0.435 here; computed 0.9786)."""
    alone = _carry(with_bubble=False)
    assert alone == pytest.approx(0.978, abs=0.001)
    assert alone > TFLOPS_16K / TFLOPS_8K
