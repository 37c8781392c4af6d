"""Header-only safetensors checkpoints for a Hugging Face config.json: the tensors a real checkpoint of that
shape holds (names and shapes as the families' HF checkpoints store them), in a chosen dtype mix, with
headers only (or sparse files of full length).

Families: dense Llama-style (`llama`, `mistral`, `qwen2`, `qwen3`; `mimo`: Qwen2-style with an MTP module
`model.mtp_layers.{i}`), `mixtral`, `qwen2_moe`/`qwen3_moe`,
`deepseek_v2`/`deepseek_v3` (MLA, shared experts, leading dense layers, MTP layers), `glm4_moe`
(GQA, shared experts, leading dense layers, MTP layers) and `qwen3_next` (gated DeltaNet linear attention
mixed with gated full attention, shared expert, `mtp.*` module).

Dtypes: every tensor starts in the config's dtype. A `quantization_config` converts every linear layer of
attention and MLPs, except the modules it lists (exact names; compressed-tensors `re:` patterns), as the
method stores them: `fp8` (DeepSeek-V3, Qwen FP8) F8_E4M3 with `weight_scale_inv` block scales of
`weight_block_size` (F32, or BF16 with `scale_dtype`), or one `weight_scale` without blocks;
`compressed-tensors` FP8 (GLM-4.5-Air-FP8) F8_E4M3 with `weight_scale` per channel [out, 1], per tensor [1]
or per block; `bitsandbytes` 8-bit I8 with F32 row scales `SCB` and a U8 `weight_format`. Any other method
(GPTQ, AWQ, bitsandbytes 4-bit, ...) is refused: headers in the unquantized dtype would be wrong. Routers,
embeddings, head and norms stay in the model dtype. `dtype_mix` (`{role: dtype}`, roles as `audit floor`
names them) overrides per role; only linear-layer weights are re-typed, and an FP8 weight the config
does not quantize gets 128x128 block scales (`fp8_scales`: `block128`, `tensor` one F32 scale, `none`).
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audit.errors import AuditError
from audit.floor.arch import TORCH_DTYPES, config_int
from audit.floor.safetensors import DTYPE_BITS, INDEX_FILE, U64_MAX, dtype_bytes

FAMILIES = ("llama", "mistral", "qwen2", "qwen3", "mimo", "mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v2",
            "deepseek_v3", "glm4_moe", "qwen3_next")
FP8 = ("F8_E4M3", "F8_E5M2")


@dataclass(frozen=True)
class Spec:
    """One tensor to declare."""

    name: str
    shape: tuple[int, ...]
    role: str
    linear: bool = False  # a linear layer's weight: may be re-typed and quantized
    dtype: str | None = None  # fixed dtype (e.g. F32 routing bias); None: decided by the mix


MAX_TENSORS = 2_000_000
"""Most tensors a header-only checkpoint may declare (DeepSeek-V3 has 91,991): bounds time and memory."""


class _Cfg:
    def __init__(self, config: dict[str, Any]):
        self.c = {**config, **config["text_config"]} if isinstance(config.get("text_config"), dict) else config

    def get(self, key: str, default: Any = None) -> Any:
        v = self.c.get(key)
        return default if v is None else v

    def num(self, key: str, default: int | None = None, minimum: int = 0) -> Any:
        """An integer field in [minimum, MAX_CONFIG_INT] (the floor's bound), or `default` when absent."""
        v = config_int(self.c, key, "config.json", minimum)
        return default if v is None else v

    def need(self, key: str, minimum: int = 0) -> int:
        v = self.num(key, minimum=minimum)
        if v is None:
            raise AuditError(f"config.json has no {key}", field=key)
        return int(v)


def _attention_gqa(p: str, c: _Cfg, *, bias: bool, qk_norm: bool, output_gate: bool = False) -> list[Spec]:
    h, n = c.need("hidden_size"), c.need("num_attention_heads")
    kv = c.num("num_key_value_heads", n)
    hd = c.num("head_dim") or h // max(n, 1)
    q_out = n * hd * (2 if output_gate else 1)
    out = [Spec(f"{p}.self_attn.q_proj.weight", (q_out, h), "attention", True),
           Spec(f"{p}.self_attn.k_proj.weight", (kv * hd, h), "attention", True),
           Spec(f"{p}.self_attn.v_proj.weight", (kv * hd, h), "attention", True),
           Spec(f"{p}.self_attn.o_proj.weight", (h, n * hd), "attention", True)]
    if bias:
        out += [Spec(f"{p}.self_attn.q_proj.bias", (q_out,), "attention"),
                Spec(f"{p}.self_attn.k_proj.bias", (kv * hd,), "attention"),
                Spec(f"{p}.self_attn.v_proj.bias", (kv * hd,), "attention")]
    if qk_norm:
        out += [Spec(f"{p}.self_attn.q_norm.weight", (hd,), "attention"),
                Spec(f"{p}.self_attn.k_norm.weight", (hd,), "attention")]
    return out


def _attention_mla(p: str, c: _Cfg) -> list[Spec]:
    h, n = c.need("hidden_size"), c.need("num_attention_heads")
    q_lora, kv_lora = c.num("q_lora_rank"), c.need("kv_lora_rank")
    nope, rope, v = c.need("qk_nope_head_dim"), c.need("qk_rope_head_dim"), c.need("v_head_dim")
    a = f"{p}.self_attn"
    out = []
    if q_lora:
        out += [Spec(f"{a}.q_a_proj.weight", (q_lora, h), "attention", True),
                Spec(f"{a}.q_a_layernorm.weight", (q_lora,), "attention"),
                Spec(f"{a}.q_b_proj.weight", (n * (nope + rope), q_lora), "attention", True)]
    else:
        out.append(Spec(f"{a}.q_proj.weight", (n * (nope + rope), h), "attention", True))
    out += [Spec(f"{a}.kv_a_proj_with_mqa.weight", (kv_lora + rope, h), "attention", True),
            Spec(f"{a}.kv_a_layernorm.weight", (kv_lora,), "attention"),
            Spec(f"{a}.kv_b_proj.weight", (n * (nope + v), kv_lora), "attention", True),
            Spec(f"{a}.o_proj.weight", (h, n * v), "attention", True)]
    return out


def _gated_deltanet(p: str, c: _Cfg) -> list[Spec]:
    h = c.need("hidden_size")
    nk, nv = c.need("linear_num_key_heads"), c.need("linear_num_value_heads")
    dk, dv, k = c.need("linear_key_head_dim"), c.need("linear_value_head_dim"), c.need("linear_conv_kernel_dim")
    key, value = nk * dk, nv * dv
    a = f"{p}.linear_attn"
    return [Spec(f"{a}.in_proj_qkvz.weight", (2 * key + 2 * value, h), "attention", True),
            Spec(f"{a}.in_proj_ba.weight", (2 * nv, h), "attention", True),
            Spec(f"{a}.conv1d.weight", (2 * key + value, 1, k), "attention"),
            Spec(f"{a}.dt_bias", (nv,), "attention"),
            Spec(f"{a}.A_log", (nv,), "attention"),
            Spec(f"{a}.norm.weight", (dv,), "attention"),
            Spec(f"{a}.out_proj.weight", (h, value), "attention", True)]


def _mlp(p: str, h: int, inter: int, role: str, names: tuple[str, str, str] = ("gate_proj", "up_proj",
                                                                                  "down_proj")) -> list[Spec]:
    g, u, d = names
    return [Spec(f"{p}.{g}.weight", (inter, h), role, True), Spec(f"{p}.{u}.weight", (inter, h), role, True),
            Spec(f"{p}.{d}.weight", (h, inter), role, True)]


def _norms(p: str, h: int) -> list[Spec]:
    return [Spec(f"{p}.input_layernorm.weight", (h,), "norms"),
            Spec(f"{p}.post_attention_layernorm.weight", (h,), "norms")]


def _mlp_only(c: _Cfg) -> frozenset[int]:
    v = c.get("mlp_only_layers", [])
    if not isinstance(v, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in v):
        raise AuditError("config.json: mlp_only_layers must be a list of layer numbers", field="mlp_only_layers")
    return frozenset(v)


def _is_moe_layer(family: str, i: int, c: _Cfg) -> bool:
    if family in ("deepseek_v2", "deepseek_v3", "glm4_moe"):
        first, freq = c.num("first_k_dense_replace", 0), c.num("moe_layer_freq", 1, minimum=1)
        return bool(c.num("n_routed_experts")) and i >= first and (i - first) % freq == 0
    if family in ("qwen2_moe", "qwen3_moe", "qwen3_next"):
        return (i not in _mlp_only(c) and c.num("num_experts", 0) > 0
                and (i + 1) % c.num("decoder_sparse_step", 1, minimum=1) == 0)
    return family == "mixtral"


def _moe(p: str, family: str, c: _Cfg) -> list[Spec]:
    h = c.need("hidden_size")
    if family == "mixtral":
        e, inter = c.need("num_local_experts"), c.need("intermediate_size")
        out = [Spec(f"{p}.block_sparse_moe.gate.weight", (e, h), "router")]
        for j in range(e):
            out += _mlp(f"{p}.block_sparse_moe.experts.{j}", h, inter, "routed_experts", ("w1", "w3", "w2"))
        return out
    inter = c.need("moe_intermediate_size")
    e = c.need("n_routed_experts") if family in ("deepseek_v2", "deepseek_v3", "glm4_moe") else c.need("num_experts")
    out = [Spec(f"{p}.mlp.gate.weight", (e, h), "router")]
    if c.get("topk_method") == "noaux_tc" or family == "glm4_moe":  # GLM-4.5's router always has the bias
        out.append(Spec(f"{p}.mlp.gate.e_score_correction_bias", (e,), "router", dtype="F32"))
    for j in range(e):
        out += _mlp(f"{p}.mlp.experts.{j}", h, inter, "routed_experts")
    if family in ("deepseek_v2", "deepseek_v3", "glm4_moe") and c.num("n_shared_experts"):
        out += _mlp(f"{p}.mlp.shared_experts", h, inter * c.num("n_shared_experts"), "shared_experts")
    if family in ("qwen2_moe", "qwen3_next") and c.num("shared_expert_intermediate_size"):
        out += _mlp(f"{p}.mlp.shared_expert", h, c.num("shared_expert_intermediate_size"), "shared_experts")
        out.append(Spec(f"{p}.mlp.shared_expert_gate.weight", (1, h), "shared_experts"))
    return out


def _layer(p: str, i: int, family: str, c: _Cfg, *, full_attention: bool = True) -> list[Spec]:
    h = c.need("hidden_size")
    out = _norms(p, h)
    if family in ("deepseek_v2", "deepseek_v3"):
        out += _attention_mla(p, c)
    elif family == "qwen3_next" and not full_attention:
        out += _gated_deltanet(p, c)
    else:
        bias = family == "qwen2" or family == "qwen2_moe" or bool(c.get("attention_bias"))
        qk_norm = family in ("qwen3", "qwen3_moe", "qwen3_next") or bool(c.get("use_qk_norm"))
        out += _attention_gqa(p, c, bias=bias, qk_norm=qk_norm, output_gate=family == "qwen3_next")
    if _is_moe_layer(family, i, c):
        out += _moe(p, family, c)
    else:
        out += _mlp(f"{p}.mlp", h, c.need("intermediate_size"), "dense_mlp")
    return out


def tensor_specs(config: dict[str, Any]) -> list[Spec]:
    """Every tensor a checkpoint of this config holds, in HF naming, in state-dict order."""
    c = _Cfg(config)
    family = c.get("model_type")
    if family not in FAMILIES:
        raise AuditError(f"config.json: model_type {family!r} is not one of {', '.join(FAMILIES)}", field="model_type")
    h, vocab, n = c.need("hidden_size"), c.need("vocab_size"), c.need("num_hidden_layers", minimum=1)
    experts = max(c.num("num_local_experts", 0), c.num("n_routed_experts", 0), c.num("num_experts", 0))
    mtp = c.num("num_nextn_predict_layers", 0) + c.num("mtp_num_hidden_layers", 0)
    if (n + mtp) * (24 + 3 * experts) > MAX_TENSORS:  # a layer declares at most ~20 tensors and 3 per expert
        raise AuditError(f"config.json: {n:,} layers (+{mtp} MTP) of {experts:,} experts would declare more than "
                         f"{MAX_TENSORS:,} tensors", field="num_hidden_layers")
    specs = [Spec("model.embed_tokens.weight", (vocab, h), "embeddings")]
    types = c.get("layer_types")
    if family == "qwen3_next" and types is not None:
        if not isinstance(types, list) or len(types) != n:
            raise AuditError(f"config.json: layer_types must list {n} layer types", field="layer_types")
    interval = c.need("full_attention_interval", minimum=1) if family == "qwen3_next" and types is None else 1
    for i in range(n):
        full = family != "qwen3_next" or (types[i] == "full_attention" if types is not None
                                          else (i + 1) % interval == 0)
        specs += _layer(f"model.layers.{i}", i, family, c, full_attention=full)
    specs.append(Spec("model.norm.weight", (h,), "norms"))
    if not c.get("tie_word_embeddings", False):
        specs.append(Spec("lm_head.weight", (vocab, h), "output_head"))
    if family in ("deepseek_v3", "glm4_moe"):
        for m in range(c.num("num_nextn_predict_layers", 0)):
            p = f"model.layers.{n + m}"
            specs += [Spec(f"{p}.embed_tokens.weight", (vocab, h), "mtp"), Spec(f"{p}.enorm.weight", (h,), "mtp"),
                      Spec(f"{p}.hnorm.weight", (h,), "mtp"), Spec(f"{p}.eh_proj.weight", (h, 2 * h), "mtp", True),
                      Spec(f"{p}.shared_head.norm.weight", (h,), "mtp"),
                      Spec(f"{p}.shared_head.head.weight", (vocab, h), "mtp")]
            specs += [Spec(s.name, s.shape, "mtp", s.linear, s.dtype) for s in _layer(p, n + m, family, c)]
    if family == "mimo":  # MiMo keeps its MTP module in its own namespace, model.mtp_layers.{m}
        for m in range(c.num("num_nextn_predict_layers", 0)):
            p = f"model.mtp_layers.{m}"
            specs += [Spec(s.name, s.shape, "mtp", s.linear, s.dtype) for s in _layer(p, m, family, c)]
            specs += [Spec(f"{p}.token_layernorm.weight", (h,), "mtp"),
                      Spec(f"{p}.hidden_layernorm.weight", (h,), "mtp"),
                      Spec(f"{p}.input_proj.weight", (h, 2 * h), "mtp", True),
                      Spec(f"{p}.final_layernorm.weight", (h,), "mtp")]
    if family == "qwen3_next":
        for m in range(c.num("mtp_num_hidden_layers", 0)):
            specs += [Spec(s.name, s.shape, "mtp", s.linear, s.dtype) for s in _layer(f"mtp.layers.{m}", m, family, c)]
        if c.num("mtp_num_hidden_layers", 0):
            specs += [Spec("mtp.fc.weight", (h, 2 * h), "mtp", True),
                      Spec("mtp.pre_fc_norm_embedding.weight", (h,), "mtp"),
                      Spec("mtp.pre_fc_norm_hidden.weight", (h,), "mtp"), Spec("mtp.norm.weight", (h,), "mtp")]
    return specs


def _inner_role(spec: Spec) -> str:
    """For MTP tensors, the role of what they are inside the MTP layer (so a mix applies to them too)."""
    if spec.role != "mtp":
        return spec.role
    for key, role in ((".experts.", "routed_experts"), (".shared_expert", "shared_experts"), (".mlp.gate.", "router"),
                      (".self_attn.", "attention"), (".linear_attn.", "attention"), (".mlp.", "dense_mlp")):
        if key in spec.name:
            return role
    return "mtp"


QUANTIZED_ROLES = ("attention", "dense_mlp", "shared_experts", "routed_experts")
"""Roles whose linear layers a quantization_config converts; routers, embeddings, head and norms keep the
model dtype (DeepSeek and GLM routers are not Linear modules; Qwen's FP8 releases list theirs as kept)."""


@dataclass(frozen=True)
class _Quant:
    """How a quantization_config stores a converted linear layer's weight."""

    weight: str  # dtype of the weight
    scale: str | None  # name of the scale tensor beside it (None: no scale)
    scale_dtype: str
    block: tuple[int, int] | None  # block scales; None with `channel` False: one scale per tensor
    channel: bool = False  # one scale per output row, shape [out, 1] (compressed-tensors `channel`)
    input_scale: bool = False  # a static activation scale `input_scale`, shape [1]
    side: tuple[tuple[str, str, str], ...] = ()  # bitsandbytes: (suffix, dtype, "rows" or "scalar")
    kept: frozenset[str] = frozenset()  # module names left in the model dtype
    kept_patterns: tuple[re.Pattern[str], ...] = ()
    tensor_scale: tuple[int, ...] = ()  # shape of a per-tensor scale: () as vLLM's fp8, [1] as compressed-tensors

    def keeps(self, module: str) -> bool:
        return module in self.kept or any(p.match(module) for p in self.kept_patterns)


def _names(q: dict[str, Any], key: str) -> list[str]:
    v = q.get(key) or []
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise AuditError(f"config.json: quantization_config.{key} must be a list of module names",
                         field=f"quantization_config.{key}")
    return v


def _block(v: Any, key: str) -> tuple[int, int]:
    if (not isinstance(v, list) or len(v) != 2
            or not all(isinstance(x, int) and not isinstance(x, bool) and 1 <= x <= 2**20 for x in v)):
        raise AuditError(f"config.json: {key} must be [rows, columns] of positive integers, found {v!r:.60}",
                         field=key)
    return v[0], v[1]


def read_quantization(config: dict[str, Any], scale_dtype: str = "F32") -> _Quant | None:
    """The storage layout a config's `quantization_config` gives converted linear layers; refuses any
    `quant_method` (or variant) not modelled, rather than writing headers in the unquantized dtype."""
    q = _Cfg(config).get("quantization_config")
    if q is None:
        return None
    if not isinstance(q, dict):
        raise AuditError("config.json: quantization_config must be an object", field="quantization_config")
    method = q.get("quant_method")
    if method == "fp8":
        fmt = q.get("fmt", "e4m3")
        if fmt not in ("e4m3", "e5m2"):
            raise AuditError(f"config.json: quantization_config.fmt {fmt!r} is not e4m3 or e5m2",
                             field="quantization_config.fmt")
        if q.get("activation_scheme", "dynamic") not in ("dynamic", "static"):
            raise AuditError("config.json: quantization_config.activation_scheme must be dynamic or static",
                             field="quantization_config.activation_scheme")
        block = q.get("weight_block_size")
        # Block scales are DeepSeek's `weight_scale_inv`; per-tensor FP8 (vLLM's) stores `weight_scale`.
        return _Quant("F8_E4M3" if fmt == "e4m3" else "F8_E5M2",
                      "weight_scale_inv" if block is not None else "weight_scale", scale_dtype,
                      None if block is None else _block(block, "quantization_config.weight_block_size"),
                      input_scale=q.get("activation_scheme") == "static",
                      kept=frozenset(_names(q, "ignored_layers") + _names(q, "modules_to_not_convert")))
    if method == "compressed-tensors":
        groups = q.get("config_groups")
        if not isinstance(groups, dict) or len(groups) != 1:
            raise AuditError("config.json: compressed-tensors with other than one config group is not modelled",
                             field="quantization_config.config_groups")
        (group,) = groups.values()
        w = group.get("weights") if isinstance(group, dict) else None
        if (not isinstance(w, dict) or group.get("targets") != ["Linear"] or w.get("type") != "float"
                or w.get("num_bits") != 8 or w.get("strategy") not in ("channel", "tensor", "block")
                or q.get("format") not in (None, "float-quantized")):
            raise AuditError("config.json: compressed-tensors is modelled only for FP8 weights of Linear layers "
                             "(float-quantized, 8 bits, channel, tensor or block strategy)",
                             field="quantization_config.config_groups")
        acts = group.get("input_activations")
        static = isinstance(acts, dict) and acts.get("dynamic") is False
        ignore = _names(q, "ignore")
        patterns = tuple(re.compile(x[3:]) for x in ignore if x.startswith("re:"))
        return _Quant("F8_E4M3", "weight_scale", "F32",
                      _block(w.get("block_structure"), "weights.block_structure") if w["strategy"] == "block"
                      else None, channel=w["strategy"] == "channel", input_scale=static, tensor_scale=(1,),
                      kept=frozenset(x for x in ignore if not x.startswith("re:")), kept_patterns=patterns)
    if method == "bitsandbytes":
        if q.get("load_in_4bit") or q.get("_load_in_4bit") or not (q.get("load_in_8bit") or q.get("_load_in_8bit")):
            raise AuditError("config.json: bitsandbytes 4-bit is not modelled (only load_in_8bit)",
                             field="quantization_config.load_in_4bit")
        # LLM.int8(): an I8 weight of the same shape, its F32 row scales `SCB` and a U8 `weight_format`.
        skip = _names(q, "llm_int8_skip_modules") or ["lm_head"]
        return _Quant("I8", None, "F32", None, side=(("SCB", "F32", "rows"), ("weight_format", "U8", "scalar")),
                      kept=frozenset(skip))
    raise AuditError(f"config.json: quantization_config.quant_method {method!r} is not modelled (fp8, "
                     f"compressed-tensors FP8, bitsandbytes 8-bit): its headers would be wrong",
                     field="quantization_config.quant_method")


def assign_dtypes(config: dict[str, Any], specs: list[Spec], dtype_mix: dict[str, str],
                  fp8_scales: str = "config", scale_dtype: str = "F32") -> list[tuple[str, str, tuple[int, ...]]]:
    """(name, dtype, shape) for every tensor, scale tensors included.

    `fp8_scales`: `config` (what the quantization_config says; 128x128 blocks for an FP8 weight the
    config does not quantize, e.g. one `dtype_mix` makes FP8), `block128`, `tensor` or `none`."""
    c = _Cfg(config)
    name = str(c.get("torch_dtype") or c.get("dtype") or "bfloat16").removeprefix("torch.")
    if name not in TORCH_DTYPES:
        raise AuditError(f"config.json: unknown torch_dtype {name!r}", field="torch_dtype")
    base = TORCH_DTYPES[name]
    if scale_dtype not in ("F32", "BF16"):
        raise AuditError(f"fp8 scale dtype {scale_dtype!r}: expected F32 or BF16")
    quant = read_quantization(config, scale_dtype)
    for role, dt in dtype_mix.items():
        if dt not in DTYPE_BITS:
            raise AuditError(f"--dtype-mix {role}={dt}: unknown dtype")
    if fp8_scales not in ("config", "block128", "tensor", "none"):
        raise AuditError(f"fp8 scales {fp8_scales!r}: expected config, block128, tensor or none")
    out = []
    for s in specs:
        role = _inner_role(s)
        module = s.name.removesuffix(".weight")
        converted = (quant is not None and s.linear and role in QUANTIZED_ROLES and s.name.endswith(".weight")
                     and not quant.keeps(module))
        if s.dtype is not None:
            dt = s.dtype
        elif s.linear:
            dt = dtype_mix.get(role) or dtype_mix.get(s.role) or (quant.weight if converted and quant else base)
        else:
            dt = base
        out.append((s.name, dt, s.shape))
        if not s.linear:
            continue
        if converted and quant is not None and dt == quant.weight:
            for suffix, side_dtype, kind in quant.side:
                out.append((f"{module}.{suffix}", side_dtype, (s.shape[0],) if kind == "rows" else ()))
        if dt not in FP8 or fp8_scales == "none":
            continue
        from_config = fp8_scales == "config" and converted and quant is not None and quant.scale is not None
        if from_config:
            assert quant is not None and quant.scale is not None
            scale_name, sdt = quant.scale, quant.scale_dtype
            if quant.block is not None:
                scale_shape: tuple[int, ...] = (math.ceil(s.shape[0] / quant.block[0]),
                                                math.ceil(s.shape[1] / quant.block[1]))
            elif quant.channel:
                scale_shape = (s.shape[0], 1)
            else:
                scale_shape = quant.tensor_scale
        elif fp8_scales == "tensor":
            scale_name, sdt, scale_shape = "weight_scale", "F32", ()
        else:
            scale_name, sdt = "weight_scale_inv", scale_dtype
            scale_shape = tuple(math.ceil(d / 128) for d in s.shape)
        out.append((f"{module}.{scale_name}", sdt, scale_shape))
        if from_config and quant is not None and quant.input_scale:
            out.append((f"{module}.input_scale", "F32", quant.tensor_scale))
    return out


def header_bytes(tensors: list[tuple[str, str, tuple[int, ...]]]) -> tuple[bytes, int]:
    """A safetensors header for tensors laid out as the reference writer does (alignment descending, then
    name), padded with spaces to 8 bytes; returns (header, data bytes)."""
    order = sorted(tensors, key=lambda t: (-DTYPE_BITS[t[1]], t[0]))
    entries: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    at = 0
    for name, dtype, shape in order:
        size = dtype_bytes(dtype, math.prod(shape))
        if math.prod(shape) * DTYPE_BITS[dtype] > U64_MAX:  # a header the reader (and the reference) refuses
            raise AuditError(f"tensor {name!r}: shape {list(shape)} x {dtype} overflows 64 bits")
        if size is None:
            raise AuditError(f"tensor {name!r}: {math.prod(shape):,} elements of {dtype} are not whole bytes")
        entries[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [at, at + size]}
        at += size
    raw = json.dumps(entries, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    return raw, at


def write_header_only(out: str | os.PathLike[str], config_bytes: bytes,
                      tensors: list[tuple[str, str, tuple[int, ...]]], *, shard_bytes: int = 5 * 10**9,
                      sparse: bool = False) -> list[str]:
    """Write config.json, the shards' headers (no data; with `sparse`, files of full length whose data are
    holes) and, for more than one shard, model.safetensors.index.json. Returns the shard file names."""
    root = Path(out)
    groups: list[list[tuple[str, str, tuple[int, ...]]]] = [[]]
    size = 0
    for t in tensors:
        nbytes = dtype_bytes(t[1], math.prod(t[2])) or 0
        if groups[-1] and size + nbytes > shard_bytes:
            groups.append([])
            size = 0
        groups[-1].append(t)
        size += nbytes
    names = (["model.safetensors"] if len(groups) == 1 else
             [f"model-{i + 1:05d}-of-{len(groups):05d}.safetensors" for i in range(len(groups))])
    headers = [header_bytes(group) for group in groups]  # every header checked before anything is written
    root.mkdir(parents=True, exist_ok=True)
    weight_map: dict[str, str] = {}
    total = 0
    for fname, group, (header, data) in zip(names, groups, headers, strict=True):
        with open(root / fname, "wb") as f:
            f.write(struct.pack("<Q", len(header)) + header)
            if sparse and data:
                f.truncate(8 + len(header) + data)
        total += data
        weight_map.update({t[0]: fname for t in group})
    (root / "config.json").write_bytes(config_bytes)
    if len(groups) > 1:
        index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
        (root / INDEX_FILE).write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")
    return names
