"""Checkpoints the floor tests write themselves: safetensors headers built with json + struct."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any

from audit.floor.safetensors import DTYPE_BITS

REPO = Path(__file__).resolve().parent.parent
SHAPES = REPO / "scripts" / "shapes"
TINY_LLAMA = REPO / "tests" / "fixtures" / "floor" / "tiny-llama"


def nbytes(dtype: str, shape: tuple[int, ...] | list[int]) -> int:
    return math.prod(shape) * DTYPE_BITS[dtype] // 8


def header_for(tensors: dict[str, tuple[str, list[int]]], metadata: dict[str, Any] | None = None) -> tuple[dict, int]:
    """A header dict with offsets laid out in the given order; returns (header, data bytes)."""
    header: dict[str, Any] = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    at = 0
    for name, (dtype, shape) in tensors.items():
        size = nbytes(dtype, shape)
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [at, at + size]}
        at += size
    return header, at


def write_raw(path: Path, header: bytes, data: int | bytes = 0, length: int | None = None) -> Path:
    """8-byte length (default: the header's) + header bytes + data (a count of zero bytes, or bytes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = bytes(data) if isinstance(data, int) else data
    path.write_bytes(struct.pack("<Q", len(header) if length is None else length) + header + body)
    return path


def write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int]]], *, data: str = "complete",
                      metadata: dict[str, Any] | None = None) -> Path:
    """A safetensors file; `data`: complete (zeros), absent (header only) or partial (half)."""
    header, size = header_for(tensors, metadata)
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    body = {"complete": size, "absent": 0, "partial": size // 2}[data]
    return write_raw(path, raw, body)


def write_checkpoint(root: Path, config: dict[str, Any], tensors: dict[str, tuple[str, list[int]]], *,
                     data: str = "complete") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    write_safetensors(root / "model.safetensors", tensors, data=data, metadata={"format": "pt"})
    return root


def tiny_dense(h: int = 8, inter: int = 16, vocab: int = 32, layers: int = 1, dtype: str = "BF16",
               tied: bool = False) -> tuple[dict[str, Any], dict[str, tuple[str, list[int]]]]:
    """A Llama-shaped config and its tensors: 2 heads of 4, 1 KV head."""
    config = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": h,
              "intermediate_size": inter, "num_hidden_layers": layers, "num_attention_heads": 2,
              "num_key_value_heads": 1, "head_dim": 4, "vocab_size": vocab, "torch_dtype": "bfloat16",
              "tie_word_embeddings": tied}
    t: dict[str, tuple[str, list[int]]] = {"model.embed_tokens.weight": (dtype, [vocab, h])}
    for i in range(layers):
        p = f"model.layers.{i}"
        t.update({f"{p}.input_layernorm.weight": (dtype, [h]),
                  f"{p}.self_attn.q_proj.weight": (dtype, [8, h]), f"{p}.self_attn.k_proj.weight": (dtype, [4, h]),
                  f"{p}.self_attn.v_proj.weight": (dtype, [4, h]), f"{p}.self_attn.o_proj.weight": (dtype, [h, 8]),
                  f"{p}.post_attention_layernorm.weight": (dtype, [h]),
                  f"{p}.mlp.gate_proj.weight": (dtype, [inter, h]), f"{p}.mlp.up_proj.weight": (dtype, [inter, h]),
                  f"{p}.mlp.down_proj.weight": (dtype, [h, inter])})
    t["model.norm.weight"] = (dtype, [h])
    if not tied:
        t["lm_head.weight"] = (dtype, [vocab, h])
    return config, t
