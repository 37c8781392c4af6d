"""The floor against real configs and real indexes (../shared/data/model_configs), with the makers' counts.

Header-only checkpoints are written from each real config.json by scripts/make_header_only_checkpoint.py's
library; for the two models whose real model.safetensors.index.json is there, the tensor names and the
declared bytes must be exactly the real ones. Parameter counts must round to the published figures.
"""

from __future__ import annotations

import json
import math

import pytest
from tests.conftest import shared_path

from audit.errors import AuditError
from audit.floor import FloorOptions, compute_floor, from_flag, read_checkpoint
from audit.floor.synth import assign_dtypes, tensor_specs, write_header_only
from scripts.make_header_only_checkpoint import main as make_header_only

BW = from_flag(4.8)
DIR = "model_configs"


def _config(name: str) -> dict:
    return json.loads(shared_path(f"{DIR}/{name}.config.json").read_text(encoding="utf-8"))


def _index(name: str) -> dict:
    return json.loads(shared_path(f"{DIR}/{name}.model.safetensors.index.json").read_text(encoding="utf-8"))


def _floor(tmp_path, name: str, **opts):
    config = _config(name)
    write_header_only(tmp_path / name, json.dumps(config).encode(), assign_dtypes(config, tensor_specs(config), {}))
    return compute_floor(read_checkpoint(tmp_path / name), BW, FloorOptions(**opts))


def _params(report) -> int:
    return sum(w.elements for w in report.weights if w.role != "quant_scales")


@pytest.mark.parametrize("name, tensors, total_size", [
    ("llama-3.1-8b-bnb8", 739, 11_188_584_672),
    ("wizardlm-2-8x22b", 1_739, 281_241_268_224),
])
def test_headers_match_the_real_index(tmp_path, name, tensors, total_size):
    config, index = _config(name), _index(name)
    made = assign_dtypes(config, tensor_specs(config), {})
    assert len(made) == len(index["weight_map"]) == tensors
    assert {n for n, _, _ in made} == set(index["weight_map"])  # every real name, no other
    declared = sum(math.prod(s) * {"I8": 8, "U8": 8, "F32": 32, "BF16": 16}[d] // 8 for _, d, s in made)
    assert declared == index["metadata"]["total_size"] == total_size


def test_bitsandbytes_8bit_floor_reads_i8_weights_not_f32(tmp_path):
    # Llama-3.1-8B under LLM.int8(): torch_dtype float32, so embeddings, head and norms stay F32; every
    # linear layer of the 32 blocks is I8 with an F32 row scale (SCB) and a one-byte weight_format.
    report = _floor(tmp_path, "llama-3.1-8b-bnb8")
    h, inter, kv, vocab, layers = 4096, 14336, 1024, 128_256, 32
    rows = h + kv + kv + h + inter + inter + h  # q, k, v, o, gate, up, down: output rows
    linear = (h * h + kv * h + kv * h + h * h + 3 * inter * h) * layers  # I8: one byte each
    per_token = (linear + rows * layers * 4 + 7 * layers  # weights, SCB, weight_format
                 + (2 * layers + 1) * h * 4  # norms
                 + h * 4 + vocab * h * 4)  # one embedding row, the whole head
    assert report.floor.bytes_per_token == per_token == 9_087_254_752  # 9.09 GB, not 30.0 GB of F32 headers
    assert {w.dtype for w in report.weights if w.role in ("attention", "dense_mlp")} == {"I8"}
    scales = [w for w in report.weights if w.role == "quant_scales"]
    assert sum(w.tensors for w in scales) == 2 * 7 * layers  # SCB and weight_format of each linear layer
    assert _params(report) == 8_030_261_248  # the published count: the side tensors are not parameters
    assert report.total_parameters == 8_030_261_248
    assert report.quant_scale_elements == rows * layers + 7 * layers


@pytest.mark.parametrize("name, total, digit, active_published, embedding_in_active", [
    ("llama-3.1-8b", 8.03e9, 0.01e9, None, True),
    ("qwen2-7b", 7.61e9, 0.01e9, None, True),  # 7,615,616,512: Qwen writes 7.61B
    ("mixtral-8x7b-v0.1", 46.7e9, 0.1e9, 12.9e9, True),
    ("qwen1.5-moe-a2.7b", 14.3e9, 0.1e9, 2.7e9, True),
    ("deepseek-v2-lite", 15.7e9, 0.1e9, 2.4e9, False),
])
def test_published_parameter_counts(tmp_path, name, total, digit, active_published, embedding_in_active):
    report = _floor(tmp_path, name)
    assert abs(_params(report) - total) < digit  # within the last digit the maker publishes
    if active_published is None:
        return
    # BF16 throughout: bytes per token / 2 = parameters a token reads (one embedding row, the whole head).
    config = _config(name)
    emb = config["vocab_size"] * config["hidden_size"]
    active = report.floor.bytes_per_token / 2
    if embedding_in_active:  # the maker counts the whole embedding matrix, not the row a token reads
        active += emb - config["hidden_size"]
    assert abs(active - active_published) < 0.1e9


def test_qwen2_7b_non_embedding_count(tmp_path):
    report = _floor(tmp_path, "qwen2-7b")
    emb = 152_064 * 3_584
    assert _params(report) == 7_615_616_512 and round((_params(report) - 2 * emb) / 1e9, 2) == 6.53


def test_mixtral_8x22b_counts_141b_and_39b_active(tmp_path):
    config = _config("wizardlm-2-8x22b")
    report = _floor(tmp_path, "wizardlm-2-8x22b")
    assert round(_params(report) / 1e9) == 141
    active = report.floor.bytes_per_token / 2 + config["vocab_size"] * config["hidden_size"] - config["hidden_size"]
    assert round(active / 1e9) == 39


@pytest.mark.parametrize("quant, message", [
    ({"quant_method": "gptq", "bits": 4}, "quantization_config.quant_method 'gptq' is not modelled"),
    ({"quant_method": "awq"}, "quantization_config.quant_method 'awq' is not modelled"),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True}, "bitsandbytes 4-bit is not modelled"),
    ({"quant_method": "fp8", "weight_block_size": [128]}, "weight_block_size must be [rows, columns]"),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {"targets": ["Linear"], "weights": {
        "num_bits": 4, "type": "int", "strategy": "group"}}}}, "compressed-tensors is modelled only for FP8"),
])
def test_unmodelled_quantization_is_refused_not_written_in_f32(tmp_path, capsys, quant, message):
    config = {**_config("llama-3.1-8b"), "quantization_config": quant}
    with pytest.raises(AuditError, match=message.replace("[", r"\[")):
        assign_dtypes(config, tensor_specs(config), {})
    src = tmp_path / "config.json"
    src.write_text(json.dumps(config), encoding="utf-8")
    assert make_header_only([str(src), str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and not (tmp_path / "out").exists()
