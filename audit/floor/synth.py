"""Header-only safetensors checkpoints for a Hugging Face config.json: the tensors a real checkpoint of that
shape holds (names and shapes as the families' HF checkpoints store them), in a chosen dtype mix, with
headers only (or sparse files of full length).

Families: dense Llama-style (`llama`, `mistral`, `qwen2`, `qwen3`), `mixtral`, `qwen2_moe`/`qwen3_moe`,
`deepseek_v2`/`deepseek_v3` (MLA, shared experts, leading dense layers, MTP layers), `glm4_moe`
(GQA, shared experts, leading dense layers, MTP layers) and `qwen3_next` (gated DeltaNet linear attention
mixed with gated full attention, shared expert, `mtp.*` module).

Dtypes: every tensor starts in the config's dtype. A config with an FP8 `quantization_config` (DeepSeek-V3)
stores every linear layer of attention and MLPs in F8_E4M3 with 128x128 block scales `weight_scale_inv`
(F32), except the modules it lists in `ignored_layers` / `modules_to_not_convert`; the router,
embeddings, head and norms stay in the model dtype. `dtype_mix` (`{role: dtype}`, roles as
`audit floor` names them) overrides per role; only linear-layer weights are re-typed, and an FP8 weight
gets its scale tensor (`fp8_scales`: `block128` as DeepSeek, `tensor` one F32 scale, or `none`).
"""

from __future__ import annotations

import json
import math
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audit.errors import AuditError
from audit.floor.arch import TORCH_DTYPES
from audit.floor.safetensors import DTYPE_BITS, INDEX_FILE, dtype_bytes

FAMILIES = ("llama", "mistral", "qwen2", "qwen3", "mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3",
            "glm4_moe", "qwen3_next")
FP8 = ("F8_E4M3", "F8_E5M2")


@dataclass(frozen=True)
class Spec:
    """One tensor to declare."""

    name: str
    shape: tuple[int, ...]
    role: str
    linear: bool = False  # a linear layer's weight: may be re-typed and quantized
    dtype: str | None = None  # fixed dtype (e.g. F32 routing bias); None: decided by the mix


class _Cfg:
    def __init__(self, config: dict[str, Any]):
        self.c = {**config, **config["text_config"]} if isinstance(config.get("text_config"), dict) else config

    def get(self, key: str, default: Any = None) -> Any:
        v = self.c.get(key)
        return default if v is None else v

    def need(self, key: str) -> Any:
        v = self.c.get(key)
        if v is None:
            raise AuditError(f"config.json has no {key}", field=key)
        return v


def _attention_gqa(p: str, c: _Cfg, *, bias: bool, qk_norm: bool, output_gate: bool = False) -> list[Spec]:
    h, n = c.need("hidden_size"), c.need("num_attention_heads")
    kv = c.get("num_key_value_heads", n)
    hd = c.get("head_dim") or h // n
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
    q_lora, kv_lora = c.get("q_lora_rank"), c.need("kv_lora_rank")
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


def _is_moe_layer(family: str, i: int, c: _Cfg) -> bool:
    if family in ("deepseek_v2", "deepseek_v3", "glm4_moe"):
        first, freq = c.get("first_k_dense_replace", 0), c.get("moe_layer_freq", 1)
        return bool(c.get("n_routed_experts")) and i >= first and (i - first) % freq == 0
    if family in ("qwen2_moe", "qwen3_moe", "qwen3_next"):
        return (i not in c.get("mlp_only_layers", []) and c.get("num_experts", 0) > 0
                and (i + 1) % c.get("decoder_sparse_step", 1) == 0)
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
    if c.get("topk_method") == "noaux_tc":
        out.append(Spec(f"{p}.mlp.gate.e_score_correction_bias", (e,), "router", dtype="F32"))
    for j in range(e):
        out += _mlp(f"{p}.mlp.experts.{j}", h, inter, "routed_experts")
    if family in ("deepseek_v2", "deepseek_v3", "glm4_moe") and c.get("n_shared_experts"):
        out += _mlp(f"{p}.mlp.shared_experts", h, inter * c.get("n_shared_experts"), "shared_experts")
    if family in ("qwen2_moe", "qwen3_next") and c.get("shared_expert_intermediate_size"):
        out += _mlp(f"{p}.mlp.shared_expert", h, c.get("shared_expert_intermediate_size"), "shared_experts")
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
    h, vocab, n = c.need("hidden_size"), c.need("vocab_size"), c.need("num_hidden_layers")
    specs = [Spec("model.embed_tokens.weight", (vocab, h), "embeddings")]
    full = [True] * n
    if family == "qwen3_next":
        types = c.get("layer_types") or ["full_attention" if (i + 1) % c.need("full_attention_interval") == 0
                                         else "linear_attention" for i in range(n)]
        full = [t == "full_attention" for t in types]
    for i in range(n):
        specs += _layer(f"model.layers.{i}", i, family, c, full_attention=full[i])
    specs.append(Spec("model.norm.weight", (h,), "norms"))
    if not c.get("tie_word_embeddings", False):
        specs.append(Spec("lm_head.weight", (vocab, h), "output_head"))
    if family in ("deepseek_v3", "glm4_moe"):
        for m in range(c.get("num_nextn_predict_layers", 0)):
            p = f"model.layers.{n + m}"
            specs += [Spec(f"{p}.embed_tokens.weight", (vocab, h), "mtp"), Spec(f"{p}.enorm.weight", (h,), "mtp"),
                      Spec(f"{p}.hnorm.weight", (h,), "mtp"), Spec(f"{p}.eh_proj.weight", (h, 2 * h), "mtp", True),
                      Spec(f"{p}.shared_head.norm.weight", (h,), "mtp"),
                      Spec(f"{p}.shared_head.head.weight", (vocab, h), "mtp")]
            specs += [Spec(s.name, s.shape, "mtp", s.linear, s.dtype) for s in _layer(p, n + m, family, c)]
    if family == "qwen3_next":
        for m in range(c.get("mtp_num_hidden_layers", 0)):
            specs += [Spec(s.name, s.shape, "mtp", s.linear, s.dtype) for s in _layer(f"mtp.layers.{m}", m, family, c)]
        if c.get("mtp_num_hidden_layers", 0):
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


def assign_dtypes(config: dict[str, Any], specs: list[Spec], dtype_mix: dict[str, str],
                  fp8_scales: str = "block128") -> list[tuple[str, str, tuple[int, ...]]]:
    """(name, dtype, shape) for every tensor, scale tensors included."""
    c = _Cfg(config)
    name = str(c.get("torch_dtype") or c.get("dtype") or "bfloat16").removeprefix("torch.")
    if name not in TORCH_DTYPES:
        raise AuditError(f"config.json: unknown torch_dtype {name!r}", field="torch_dtype")
    base = TORCH_DTYPES[name]
    q = c.get("quantization_config") or {}
    default_linear = "F8_E4M3" if q.get("quant_method") == "fp8" else base
    # Modules an FP8 config leaves unquantized (vLLM reads `ignored_layers`, transformers `modules_to_not_convert`).
    kept = set(q.get("ignored_layers") or []) | set(q.get("modules_to_not_convert") or [])
    for role, dt in dtype_mix.items():
        if dt not in DTYPE_BITS:
            raise AuditError(f"--dtype-mix {role}={dt}: unknown dtype")
    if fp8_scales not in ("block128", "tensor", "none"):
        raise AuditError(f"fp8 scales {fp8_scales!r}: expected block128, tensor or none")
    out = []
    for s in specs:
        role = _inner_role(s)
        if s.dtype is not None:
            dt = s.dtype
        elif s.linear:
            quantized = role in ("attention", "dense_mlp", "shared_experts", "routed_experts") and \
                s.name.removesuffix(".weight") not in kept
            dt = dtype_mix.get(role) or dtype_mix.get(s.role) or (default_linear if quantized else base)
        else:
            dt = base
        out.append((s.name, dt, s.shape))
        if dt in FP8 and s.linear and fp8_scales != "none":
            scale_shape: tuple[int, ...] = () if fp8_scales == "tensor" else \
                tuple(math.ceil(d / 128) for d in s.shape)
            out.append((s.name.removesuffix(".weight") + (".weight_scale_inv" if fp8_scales == "block128"
                                                          else ".weight_scale"), "F32", scale_shape))
    return out


def header_bytes(tensors: list[tuple[str, str, tuple[int, ...]]]) -> tuple[bytes, int]:
    """A safetensors header for tensors laid out as the reference writer does (alignment descending, then
    name), padded with spaces to 8 bytes; returns (header, data bytes)."""
    order = sorted(tensors, key=lambda t: (-DTYPE_BITS[t[1]], t[0]))
    entries: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    at = 0
    for name, dtype, shape in order:
        size = dtype_bytes(dtype, math.prod(shape))
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
    root.mkdir(parents=True, exist_ok=True)
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
    weight_map: dict[str, str] = {}
    total = 0
    for fname, group in zip(names, groups):
        header, data = header_bytes(group)
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
