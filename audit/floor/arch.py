"""What the floor needs from `config.json`, across families whose field names differ.

Experts: DeepSeek-V2/V3 and GLM-4.5 `n_routed_experts`, Qwen-MoE `num_experts`, Mixtral/gpt-oss/Llama-4
`num_local_experts`, DBRX `ffn_config.moe_num_experts`; experts per token `num_experts_per_tok`
(`experts_per_token`, `moe_top_k`). Attention: `num_key_value_heads` x `head_dim` per layer, or DeepSeek
MLA's compressed latent (`kv_lora_rank` + `qk_rope_head_dim`, one per token and layer, as vLLM caches it).
Layer types: `layer_types`, Qwen3-Next's `full_attention_interval`, sliding windows. Linear attention
(gated DeltaNet: `linear_num_key_heads`, `linear_num_value_heads`, `linear_key_head_dim`,
`linear_value_head_dim`, `linear_conv_kernel_dim`) keeps a fixed-size state instead of a KV cache. MTP:
`num_nextn_predict_layers` (DeepSeek, GLM) or `mtp_num_hidden_layers` (Qwen3-Next). Multimodal configs
are read through their `text_config`. Every value records the field it came from.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, Literal

from audit.errors import AuditError
from audit.floor.report import ShapeRef

TORCH_DTYPES = {
    "bfloat16": "BF16", "float16": "F16", "half": "F16", "float32": "F32", "float": "F32",
    "float64": "F64", "double": "F64", "float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2",
}
"""torch dtype names as configs spell them, to safetensors dtype names."""

EXPERT_COUNT_FIELDS = ("n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts", "n_experts")
EXPERTS_PER_TOKEN_FIELDS = ("num_experts_per_tok", "experts_per_token", "moe_top_k", "num_experts_per_token")
SHARED_EXPERT_FIELDS = ("n_shared_experts", "num_shared_experts")
MTP_FIELDS = ("num_nextn_predict_layers", "mtp_num_hidden_layers")

FULL, SLIDING, LINEAR = "full_attention", "sliding_attention", "linear_attention"
_LAYER_TYPE_ALIASES = {"full_attention": FULL, "attention": FULL, "global": FULL, "sliding_attention": SLIDING,
                       "local": SLIDING, "linear_attention": LINEAR}


@dataclass(frozen=True)
class LinearAttention:
    """Gated DeltaNet dimensions (per layer)."""

    num_key_heads: int
    num_value_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel: int

    @property
    def conv_elements(self) -> int:
        """The causal-conv state: (2 x key dim + value dim) channels x (kernel - 1) past inputs."""
        return (2 * self.num_key_heads * self.key_head_dim + self.num_value_heads * self.value_head_dim) * \
            (self.conv_kernel - 1)

    @property
    def ssm_elements(self) -> int:
        """The recurrent state: one value-dim x key-dim matrix per value head."""
        return self.num_value_heads * self.value_head_dim * self.key_head_dim


@dataclass(frozen=True)
class ConfigShape:
    """`read_shape`'s answer: the shape as floor.json records it, and what else the config tells the floor."""

    shape: ShapeRef
    ssm_dtype: str | None = None
    """The recurrent state's dtype (`mamba_ssm_dtype`) when the config gives one; else the model's."""
    notes: tuple[str, ...] = ()
    """What the floor assumed or left out while reading the config."""


def kv_elements_per_token_layer(shape: ShapeRef) -> int | None:
    """Cached elements per token in one attention layer (None when the config does not give them)."""
    if shape.attention == "mla":
        assert shape.kv_lora_rank is not None and shape.qk_rope_head_dim is not None
        return shape.kv_lora_rank + shape.qk_rope_head_dim
    if shape.num_kv_heads is None or shape.head_dim is None:
        return None
    return 2 * shape.num_kv_heads * shape.head_dim


def linear_attention(shape: ShapeRef) -> LinearAttention | None:
    """The gated DeltaNet dimensions of the linear-attention layers, when the model has any."""
    return None if shape.linear_attention is None else LinearAttention(**shape.linear_attention)


MAX_CONFIG_INT = 2**31 - 1
"""Largest number a config field may hold (every real model is far below): bounds the arithmetic, and a
config of 10^12 layers or hidden_size 10^400 is refused in one line instead of exhausting memory."""


def _describe(v: int) -> str:
    return f"{v:,}" if v < 10**30 else f"a {len(str(v))}-digit number"


def config_int(cfg: dict[str, Any], key: str, where: str, minimum: int = 0) -> int | None:
    """`cfg[key]` as an integer in [minimum, MAX_CONFIG_INT], None when absent; anything else (a bool, a float,
    a string, a negative or huge number) is refused naming the field."""
    v = cfg.get(key)
    if v is None:
        return None
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise AuditError(f"must be a non-negative integer, found {v!r:.60}", path=where, field=key)
    if v > MAX_CONFIG_INT:
        raise AuditError(f"{_describe(v)} is over the limit ({MAX_CONFIG_INT:,})", path=where, field=key)
    if v < minimum:
        raise AuditError(f"must be at least {minimum}, found {v}", path=where, field=key)
    return v


def _bool(cfg: dict[str, Any], key: str, where: str) -> bool | None:
    v = cfg.get(key)
    if v is None or isinstance(v, bool):
        return v
    raise AuditError(f"must be true or false, found {v!r:.60}", path=where, field=key)


def _first(cfg: dict[str, Any], keys: tuple[str, ...], where: str, fields: dict[str, str],
           name: str) -> int | None:
    for k in keys:
        v = config_int(cfg, k, where)
        if v:  # 0 means "none" in configs that keep the field (dense Qwen3-Next variants)
            fields[name] = k
            return v
    return None


def _layer_types(cfg: dict[str, Any], n: int, where: str, fields: dict[str, str]) -> dict[str, int]:
    """Layers per type, counted without a per-layer list (n may be large)."""
    lt = cfg.get("layer_types")
    if lt is not None:
        if not isinstance(lt, list) or not all(isinstance(x, str) for x in lt):
            raise AuditError("must be a list of strings", path=where, field="layer_types")
        if len(lt) != n:
            raise AuditError(f"has {len(lt):,} entries for {n:,} layers", path=where, field="layer_types")
        fields["layer_types"] = "layer_types"
        names: list[str] = lt
        return dict(Counter(_LAYER_TYPE_ALIASES.get(x, x) for x in names))
    interval = config_int(cfg, "full_attention_interval", where, minimum=1)
    if interval and "linear_num_value_heads" in cfg:
        fields["layer_types"] = "full_attention_interval"
        return {FULL: n // interval, LINEAR: n - n // interval}
    window = config_int(cfg, "sliding_window", where)
    pattern = config_int(cfg, "sliding_window_pattern", where, minimum=1)
    use = _bool(cfg, "use_sliding_window", where)
    max_window = config_int(cfg, "max_window_layers", where)
    if window:
        if pattern:
            fields["layer_types"] = "sliding_window_pattern"
            return {FULL: n // pattern, SLIDING: n - n // pattern}
        if use is False:
            return {FULL: n}
        if use is True and max_window is not None:
            fields["layer_types"] = "use_sliding_window+max_window_layers"
            return {FULL: min(n, max_window), SLIDING: n - min(n, max_window)}
        fields["layer_types"] = "sliding_window"
        return {SLIDING: n}
    return {FULL: n}


def read_shape(config: dict[str, Any], where: str = "config.json") -> ConfigShape:
    """The floor's view of a config.json; raises AuditError naming the field when one is unusable."""
    fields: dict[str, str] = {}
    notes: list[str] = []
    cfg = dict(config)
    text = config.get("text_config")
    if text is not None and not isinstance(text, dict):
        raise AuditError(f"must be an object, found {type(text).__name__}", path=where, field="text_config")
    if text is not None:
        cfg.update(text)
        fields["text_config"] = "text_config"
    ffn = cfg.get("ffn_config")
    if isinstance(ffn, dict):  # DBRX keeps its MoE settings here
        cfg = {**{f"ffn_config.{k}": v for k, v in ffn.items()}, **cfg}
    layer_key = next((k for k in ("num_hidden_layers", "n_layer", "num_layers") if cfg.get(k) is not None), None)
    if layer_key is None:
        raise AuditError("has no num_hidden_layers", path=where, field="num_hidden_layers")
    n = config_int(cfg, layer_key, where, minimum=1)
    assert n is not None
    hidden = config_int(cfg, "hidden_size", where)
    dtype_field = "torch_dtype" if "torch_dtype" in cfg else ("dtype" if "dtype" in cfg else None)
    model_dtype = "BF16"
    if dtype_field is None:
        notes.append("config.json names no torch_dtype: the model dtype is taken as BF16")
    else:
        name = str(cfg[dtype_field]).removeprefix("torch.")
        if name not in TORCH_DTYPES:
            raise AuditError(f"unknown {dtype_field} {cfg[dtype_field]!r}", path=where, field=dtype_field)
        model_dtype = TORCH_DTYPES[name]
        fields["model_dtype"] = dtype_field

    experts = _first(cfg, EXPERT_COUNT_FIELDS + ("ffn_config.moe_num_experts",), where, fields, "routed_experts")
    per_token = _first(cfg, EXPERTS_PER_TOKEN_FIELDS + ("ffn_config.moe_top_k",), where, fields,
                       "experts_per_token")
    shared = _first(cfg, SHARED_EXPERT_FIELDS, where, fields, "shared_experts")
    if shared is None and config_int(cfg, "shared_expert_intermediate_size", where):
        shared, fields["shared_experts"] = 1, "shared_expert_intermediate_size"
    first_dense = config_int(cfg, "first_k_dense_replace", where)
    if first_dense is not None:
        fields["first_dense_layers"] = "first_k_dense_replace"
    if experts and per_token and per_token > experts:
        raise AuditError(f"{per_token} exceeds {fields['routed_experts']} ({experts})", path=where,
                         field=fields["experts_per_token"])

    heads = config_int(cfg, "num_attention_heads", where)
    kv_heads = config_int(cfg, "num_key_value_heads", where)
    if kv_heads is None and heads is not None:
        kv_heads = heads
        fields["num_kv_heads"] = "num_attention_heads"
    elif kv_heads is not None:
        fields["num_kv_heads"] = "num_key_value_heads"
    head_dim = config_int(cfg, "head_dim", where)
    if head_dim:
        fields["head_dim"] = "head_dim"
    elif heads and hidden:
        head_dim = hidden // heads
        fields["head_dim"] = "hidden_size/num_attention_heads"
    kv_lora = config_int(cfg, "kv_lora_rank", where)
    rope_dim = config_int(cfg, "qk_rope_head_dim", where)
    attention: Literal["mla", "kv_heads"] = "mla" if kv_lora and rope_dim is not None else "kv_heads"
    if attention == "mla":
        fields["kv_cache"] = "kv_lora_rank+qk_rope_head_dim"

    counts = dict(sorted((t, c) for t, c in _layer_types(cfg, n, where, fields).items() if c))
    linear = None
    if LINEAR in counts:
        keys = ("linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
                "linear_conv_kernel_dim")
        vals = [config_int(cfg, k, where) for k in keys]
        missing = [k for k, v in zip(keys, vals, strict=True) if not v]
        if missing:
            raise AuditError("is missing or 0, but the model has linear-attention layers", path=where,
                             field=missing[0])
        linear = LinearAttention(*vals)  # type: ignore[arg-type]
    unknown = sorted(set(counts) - {FULL, SLIDING, LINEAR})
    for t in unknown:
        notes.append(f"layer type {t!r} ({counts[t]} layers): no cache model, counted as 0 bytes")
    ssm_dtype = None
    if "mamba_ssm_dtype" in cfg:
        name = str(cfg["mamba_ssm_dtype"]).removeprefix("torch.")
        if name not in TORCH_DTYPES:
            raise AuditError(f"unknown mamba_ssm_dtype {cfg['mamba_ssm_dtype']!r}", path=where,
                             field="mamba_ssm_dtype")
        ssm_dtype = TORCH_DTYPES[name]
        fields["ssm_dtype"] = "mamba_ssm_dtype"
    window = config_int(cfg, "sliding_window", where) if SLIDING in counts else None
    mtp = _first(cfg, MTP_FIELDS, where, fields, "mtp_layers") or 0
    tie = _bool(cfg, "tie_word_embeddings", where)
    archs = config.get("architectures") or cfg.get("architectures") or []
    return ConfigShape(ShapeRef(
        model_type=cfg.get("model_type") if isinstance(cfg.get("model_type"), str) else None,
        architectures=[a for a in archs if isinstance(a, str)] if isinstance(archs, list) else [],
        num_hidden_layers=n, hidden_size=hidden, vocab_size=config_int(cfg, "vocab_size", where),
        model_dtype=model_dtype, routed_experts=experts, experts_per_token=per_token, shared_experts=shared,
        first_dense_layers=first_dense, attention=attention, num_kv_heads=kv_heads, head_dim=head_dim,
        kv_lora_rank=kv_lora, qk_rope_head_dim=rope_dim, layer_types=counts, sliding_window=window,
        linear_attention=None if linear is None else asdict(linear), mtp_layers=mtp, tie_word_embeddings=tie,
        fields=dict(sorted(fields.items())),
    ), ssm_dtype=ssm_dtype, notes=tuple(notes))
