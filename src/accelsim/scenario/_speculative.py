"""Speculative decoding / multi-token prediction of a serving endpoint (:class:`Speculative`)."""

from __future__ import annotations

from pydantic import Field, model_validator

from accelsim.dists import Uncertain
from accelsim.scenario._common import _check_range, _Model


class Speculative(_Model):
    """Speculative decoding or multi-token prediction (MTP) on a serving endpoint.

    Each decode step drafts ``draft_tokens`` tokens per sequence (an MTP module, an EAGLE
    head, a small draft model) and verifies them in one pass of the model; a step emits
    ``(1 − a^(k+1)) / (1 − a)`` tokens per sequence on average for a per-token acceptance
    rate ``a`` (:func:`accelsim.models.serving.expected_accepted_tokens`). Unset on
    :class:`Serving` (the default): no speculation, as ``vllm serve`` and TensorRT-LLM run
    unless told to speculate.

    Examples
    --------
    >>> Speculative(draft_tokens=3).acceptance is None  # the catalog prior
    True
    """

    draft_tokens: int = Field(ge=1, le=16)
    """Draft tokens per sequence and step, ``k`` (DeepSeek-V3's MTP: 1; TensorRT-LLM's
    min-latency DeepSeek-R1: 3). [count]"""
    acceptance: Uncertain | None = None
    """Probability that a draft token is accepted given the earlier ones were, in [0, 1];
    unset = the serving prior ``speculative_acceptance``. [fraction]"""
    draft_cost: Uncertain | None = None
    """Time of one draft pass over the batch as a share of a decode iteration of the model,
    in [0, 1]; unset = the serving prior ``speculative_draft_cost``. [fraction]"""

    @model_validator(mode="after")
    def _ranges(self) -> Speculative:
        _check_range("speculative.acceptance", self.acceptance, 0, 1, low_open=False)
        _check_range("speculative.draft_cost", self.draft_cost, 0, 1, low_open=False)
        return self


__all__ = ["Speculative"]
