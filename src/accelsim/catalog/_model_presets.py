"""Model presets: the sourced architecture of published LLMs, for serving.

The figures live in ``data/model_presets.yaml`` (each with its config.json, paper or model
card and date); this module validates and loads them.

Examples
--------
>>> m = model_preset("llama-3.1-70b")
>>> m.layers, m.kv_heads, m.head_dim
(80, 8, 128)
>>> m.kv_bytes_per_token(2.0)
327680.0
>>> model_preset("deepseek-r1").kv_values_per_layer(), model_preset("deepseek-r1").kv_cache_heads()
(576.0, 1)
"""

from __future__ import annotations

import functools
import importlib.resources
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from accelsim._yaml import load_yaml, to_plain
from accelsim.catalog._schema import ChipId, Source
from accelsim.errors import ScenarioFileError, UnknownModelError

_SHIPPED = "model_presets.yaml"


class _Frozen(BaseModel):
    model_config = ConfigDict(
        frozen=True, extra="forbid", allow_inf_nan=False, use_attribute_docstrings=True
    )


class ModelPreset(_Frozen):
    """The architecture of one LLM, as serving needs it.

    The KV cache per token and layer is ``2 · kv_heads · head_dim`` values unless
    ``kv_values_per_token_per_layer`` is given (MLA latents, sliding-window layers).

    Examples
    --------
    >>> ModelPreset(id="tiny", name="Tiny", params=1e9, active_params=1e9, layers=2,
    ...     d_model=64, kv_heads=2, head_dim=32, max_context=128,
    ...     sources=[{"url": "https://example.org", "as_of": "2024-01-01"}]).kv_values_per_layer()
    128.0
    """

    id: ChipId
    """Preset id, lower case, e.g. ``llama-3.1-70b``."""
    name: str = Field(min_length=1)
    """Human-readable model name."""
    params: float = Field(gt=0)
    """Total parameters (all experts of a mixture of experts). [parameters]"""
    active_params: float = Field(gt=0)
    """Parameters used per token (= ``params`` for a dense model). [parameters]"""
    layers: int = Field(ge=1)
    """Transformer layers. [count]"""
    d_model: int = Field(ge=1)
    """Hidden size. [count]"""
    kv_heads: int | None = Field(default=None, ge=1)
    """Key/value heads per layer (GQA groups), the heads tensor parallelism splits the KV
    cache by; multi-head latent attention: 1, the latent every query head shares (not
    config.json's ``num_key_value_heads``, the decompressed view). None: unknown, the cache
    is taken to split evenly over any number of chips. [count]"""
    head_dim: int | None = Field(default=None, ge=1)
    """Dimension of one attention head. [count]"""
    kv_values_per_token_per_layer: float | None = Field(default=None, gt=0)
    """Values cached per token and layer, keys and values together, where not
    ``2 · kv_heads · head_dim`` (DeepSeek MLA: 512 + 64 = 576). [count]"""
    max_context: int = Field(ge=1)
    """Longest context the model supports. [tokens]"""
    attention_heads: int | None = Field(default=None, ge=1)
    """Query heads per layer (``num_attention_heads``); with ``head_dim`` or the MLA widths
    it sets the attention FLOPs, unset: ``4 · d_model`` per context token and layer
    (an assumption). [count]"""
    kv_lora_rank: int | None = Field(default=None, ge=1)
    """Multi-head latent attention: rank of the cached KV latent (DeepSeek-V3: 512). [count]"""
    qk_rope_head_dim: int | None = Field(default=None, ge=1)
    """MLA: decoupled RoPE width of a query/key head, cached once per token (64). [count]"""
    qk_nope_head_dim: int | None = Field(default=None, ge=1)
    """MLA: non-RoPE width of a query/key head once decompressed (128). [count]"""
    v_head_dim: int | None = Field(default=None, ge=1)
    """MLA: width of a value head once decompressed (128). [count]"""
    full_attention_layers: int | None = Field(default=None, ge=1)
    """Layers attending to the whole context where the others use a sliding window
    (gpt-oss: 18 of 36); unset: all layers. [count]"""
    experts: int | None = Field(default=None, ge=2)
    """Routed experts per MoE layer (a mixture of experts; None for a dense model, or where
    the preset does not give its expert layout). [count]"""
    experts_per_token: int | None = Field(default=None, ge=1)
    """Routed experts each token uses per MoE layer, ``top-k``. [count]"""
    moe_layers: int | None = Field(default=None, ge=1)
    """Layers with routed experts (DeepSeek-V3: 58 of 61, the first 3 dense). [count]"""
    expert_params: float | None = Field(default=None, gt=0)
    """Parameters of all routed experts of all layers; the rest (attention, dense layers,
    shared experts, embeddings) is what data-parallel attention copies to every chip.
    [parameters]"""
    sources: tuple[Source, ...] = Field(min_length=1)
    """Where each figure comes from, with dates and DERIVED / ASSUMPTION notes."""

    @model_validator(mode="after")
    def _consistent(self) -> ModelPreset:
        if self.active_params > self.params:
            msg = f"active_params ({self.active_params:g}) exceeds params ({self.params:g})"
            raise ValueError(msg)
        layout = (self.experts, self.experts_per_token, self.moe_layers, self.expert_params)
        if any(v is not None for v in layout) and any(v is None for v in layout):
            raise ValueError(
                "give all of experts, experts_per_token, moe_layers and expert_params, or none"
            )
        if self.expert_params is not None and self.expert_params >= self.params:
            raise ValueError(f"expert_params ({self.expert_params:g}) must be below params")
        if self.experts is not None and (self.experts_per_token or 0) > self.experts:
            raise ValueError("experts_per_token exceeds experts")
        if self.moe_layers is not None and self.moe_layers > self.layers:
            raise ValueError("moe_layers exceeds layers")
        problem = attention_widths_problem(self.attention_widths(), self.layers)
        if problem is not None:
            raise ValueError(problem)
        if self.kv_lora_rank is not None and self.kv_heads not in (None, 1):
            raise ValueError(
                f"kv_heads ({self.kv_heads}) must be 1 with multi-head latent attention: its "
                "latent is one cached head every query head shares"
            )
        per_head = self.kv_heads is not None and self.head_dim is not None
        if not per_head and self.kv_values_per_token_per_layer is None:
            raise ValueError(
                "give kv_heads and head_dim, or kv_values_per_token_per_layer (e.g. MLA)"
            )
        return self

    def attention_widths(self) -> dict[str, int | None]:
        """The attention widths as keyword arguments of
        :func:`accelsim.models.serving.attention_flops_per_context_token` (None: unknown)."""
        widths = {f: getattr(self, f) for f in ATTENTION_FIELDS}
        return {"head_dim": self.head_dim, **widths}

    def has_expert_layout(self) -> bool:
        """Whether the preset gives its routed-expert layout (wide expert parallelism)."""
        return self.expert_params is not None

    def kv_values_per_layer(self) -> float:
        """Values cached per token and layer (keys and values together). [count]"""
        if self.kv_values_per_token_per_layer is not None:
            return float(self.kv_values_per_token_per_layer)
        heads, dim = self.kv_heads or 0, self.head_dim or 0  # both set, by the validator
        return 2.0 * heads * dim

    def kv_cache_heads(self) -> int | None:
        """Heads tensor parallelism splits the KV cache by: 1 under multi-head latent
        attention, else ``kv_heads`` (None: unknown, the cache splits evenly). [count]"""
        return 1 if self.kv_lora_rank is not None else self.kv_heads

    def kv_bytes_per_token(self, bytes_per_value: float) -> float:
        """KV-cache bytes per token across all layers at ``bytes_per_value``. [B]"""
        return self.layers * self.kv_values_per_layer() * bytes_per_value


ATTENTION_FIELDS = (
    "attention_heads",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "v_head_dim",
    "full_attention_layers",
)
"""The optional attention widths of a model (a preset's or a scenario's explicit one)."""
_MLA_FIELDS = ATTENTION_FIELDS[1:5]


def attention_widths_problem(widths: Mapping[str, int | None], layers: int | None) -> str | None:
    """What is wrong with a model's attention widths (``head_dim`` and
    :data:`ATTENTION_FIELDS`), or None: the MLA widths come all together or not at all and
    with ``attention_heads``; ``attention_heads`` needs ``head_dim`` or the MLA widths;
    ``full_attention_layers`` is at most ``layers``."""
    mla = [f for f in _MLA_FIELDS if widths.get(f) is not None]
    if mla and len(mla) < len(_MLA_FIELDS):
        missing = ", ".join(f for f in _MLA_FIELDS if f not in mla)
        return (
            f"multi-head latent attention needs all of {', '.join(_MLA_FIELDS)}; missing {missing}"
        )
    if mla and widths.get("attention_heads") is None:
        return "the MLA widths need attention_heads (the query heads)"
    heads = widths.get("attention_heads") is not None
    if heads and not mla and widths.get("head_dim") is None:
        return "attention_heads needs head_dim, or the MLA widths"
    full = widths.get("full_attention_layers")
    if full is not None and layers is not None and full > layers:
        return f"full_attention_layers ({full}) exceeds layers ({layers})"
    return None


class _PresetFile(_Frozen):
    models: tuple[ModelPreset, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> _PresetFile:
        ids = [m.id for m in self.models]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"duplicate model preset ids: {dupes}")
        return self


def load_model_presets(path: str | Path) -> dict[str, ModelPreset]:
    """Read and validate a model-preset file laid out like the shipped one, keyed by id.

    A bad file raises :class:`~accelsim.errors.ScenarioFileError` naming file and field.
    """
    raw = to_plain(load_yaml(path, aliases=True))  # a shipped file, bounded by the size cap
    try:
        parsed = _PresetFile.model_validate(raw)
    except ValidationError as exc:
        raise ScenarioFileError(f"{path}: invalid model presets\n{exc}") from None
    return {m.id: m for m in parsed.models}


@functools.cache
def _shipped() -> dict[str, ModelPreset]:
    resource = importlib.resources.files("accelsim.catalog").joinpath("data", _SHIPPED)
    with importlib.resources.as_file(resource) as path:
        return load_model_presets(path)


def model_presets() -> dict[str, ModelPreset]:
    """All shipped model presets keyed by id (a fresh dict; the presets are frozen)."""
    return dict(_shipped())


def model_preset(model_id: str) -> ModelPreset:
    """The preset with id ``model_id`` (case-insensitive).

    Raises
    ------
    accelsim.errors.UnknownModelError
        If no preset has that id; the message lists the closest ids.
    """
    presets = _shipped()
    try:
        return presets[model_id.lower()]
    except KeyError:
        raise UnknownModelError(model_id, presets) from None


__all__ = [
    "ATTENTION_FIELDS",
    "ModelPreset",
    "attention_widths_problem",
    "load_model_presets",
    "model_preset",
    "model_presets",
]
