"""The seed's model class on header-only files (issue 22's GPU work): Qwen3-Next-80B-A3B FP8, GLM-4.5-Air FP8,
MiMo-7B. Every expected byte is worked out here from the config values, not read from the code under test.

Qwen3-Next-80B-A3B: 48 layers, every 4th full attention (gated, 16 heads of 256, 2 KV heads), the other 36
gated DeltaNet (16 key heads and 32 value heads of 128, conv kernel 4); 512 experts of 512, 10 per token,
one shared expert of 512; hidden 2048, vocab 151,936; one MTP layer `mtp.*`. FP8 e4m3 with 128x128 block
scales; in_proj_ba, routers, shared-expert gates, mtp.fc and lm_head kept in BF16 (modules_to_not_convert).
"""

from __future__ import annotations

import json
from math import ceil

import pytest

from audit.floor import FloorOptions, compute_floor, from_flag, read_checkpoint
from audit.floor.synth import assign_dtypes, tensor_specs, write_header_only
from scripts.make_header_only_checkpoint import main as make_header_only
from tests.floor_helpers import SHAPES

BW = from_flag(4.8)


def _config(name: str) -> dict:
    return json.loads((SHAPES / f"{name}.config.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def qwen3_next(tmp_path_factory):
    out = tmp_path_factory.mktemp("qn") / "ckpt"
    assert make_header_only([str(SHAPES / "qwen3-next-80b-a3b-fp8.config.json"), str(out)]) == 0
    return read_checkpoint(out)


@pytest.fixture(scope="module")
def qwen3_next_4096(qwen3_next):
    return compute_floor(qwen3_next, BW, FloorOptions(context=4096))


def _fp8(rows: int, cols: int) -> int:
    """Bytes of an FP8 matrix and its F32 128x128 block scales."""
    return rows * cols + ceil(rows / 128) * ceil(cols / 128) * 4


H, VOCAB, LAYERS, FULL, LINEAR = 2048, 151_936, 48, 12, 36
Q, KV = 2 * 16 * 256, 2 * 256  # gated q_proj (query + gate), k/v_proj rows
QKVZ, BA, CONV = 2 * 16 * 128 + 2 * 32 * 128, 2 * 32, 2 * 16 * 128 + 32 * 128
EXPERT = 2 * _fp8(512, H) + _fp8(H, 512)  # gate, up, down


@pytest.mark.slow
def test_qwen3_next_fp8_headers(qwen3_next):
    t = {x.name: x for x in qwen3_next.tensors}
    w = "model.layers.0.linear_attn"
    assert (t[f"{w}.in_proj_qkvz.weight"].dtype, t[f"{w}.in_proj_qkvz.weight"].shape) == ("F8_E4M3", (QKVZ, H))
    assert (t[f"{w}.in_proj_qkvz.weight_scale_inv"].dtype,
            t[f"{w}.in_proj_qkvz.weight_scale_inv"].shape) == ("F32", (QKVZ // 128, H // 128))
    assert t[f"{w}.in_proj_ba.weight"].dtype == "BF16" and f"{w}.in_proj_ba.weight_scale_inv" not in t
    assert t[f"{w}.conv1d.weight"].shape == (CONV, 1, 4)
    assert t["model.layers.3.self_attn.q_proj.weight"].shape == (Q, H)  # full attention every 4th layer
    assert "model.layers.3.linear_attn.out_proj.weight" not in t and "model.layers.2.self_attn.q_proj.weight" not in t
    assert t["model.layers.5.mlp.experts.511.down_proj.weight_scale_inv"].shape == (16, 4)
    for kept in ("model.layers.5.mlp.gate.weight", "model.layers.5.mlp.shared_expert_gate.weight", "lm_head.weight",
                 "mtp.fc.weight", "model.embed_tokens.weight"):
        assert t[kept].dtype == "BF16" and kept.replace(".weight", ".weight_scale_inv") not in t
    mtp = [n for n in t if n.startswith("mtp.")]
    assert "mtp.layers.0.self_attn.q_proj.weight" in t and "mtp.layers.0.mlp.experts.0.up_proj.weight_scale_inv" in t
    # The MTP layer: 4 glue tensors, 2 norms, gated attention (4 + 2 q/k norms), router, 512 experts and the
    # shared expert with its gate; every FP8 matrix with its scale.
    assert len(mtp) == 4 + 2 + (4 * 2 + 2) + 1 + 512 * 3 * 2 + 3 * 2 + 1
    assert len(t) == 151_479


@pytest.mark.slow
def test_qwen3_next_fp8_parameters(qwen3_next_4096):
    r = qwen3_next_4096
    mtp = sum(w.parameters for w in r.weights if w.role == "mtp")
    assert r.total_parameters - mtp == 79_674_391_296  # the Hub's count for Qwen3-Next-80B-A3B
    assert r.shape.layer_types == {"full_attention": FULL, "linear_attention": LINEAR}


def test_qwen3_next_fp8_bytes_per_token_at_4096(qwen3_next_4096):
    r = qwen3_next_4096
    full = _fp8(Q, H) + 2 * _fp8(KV, H) + _fp8(H, 16 * 256) + 2 * 256 * 2  # + q/k norms (BF16)
    linear = _fp8(QKVZ, H) + BA * H * 2 + CONV * 4 * 2 + (32 + 32 + 128) * 2 + _fp8(H, 32 * 128)
    moe = 512 * H * 2 + 10 * EXPERT + EXPERT + H * 2  # router, 10 of 512 experts, shared expert, its gate (BF16)
    weights = FULL * full + LINEAR * linear + LAYERS * (moe + 2 * H * 2) + H * 2 + H * 2 + VOCAB * H * 2
    kv = FULL * 4096 * 2 * 2 * 256 * 2  # K and V, 2 heads of 256, BF16, full-attention layers only
    state = LINEAR * (CONV * 3 + 32 * 128 * 128) * 2  # conv (kernel - 1 past inputs) and delta state, BF16
    assert r.floor.bytes_per_token == weights + kv + state == 4_072_435_200
    assert [(c.role, c.part, c.layers, c.active_bytes) for c in r.caches] == [
        ("kv_cache", "keys+values", 12, kv), ("recurrent_state", "conv state", 36, LINEAR * CONV * 3 * 2),
        ("recurrent_state", "ssm state", 36, LINEAR * 32 * 128 * 128 * 2)]
    assert r.by_role["routed_experts"] + r.by_role["quant_scales"] > LAYERS * 10 * 3 * 512 * H  # scales go along
    assert round(r.floor.tokens_per_s, 1) == 1178.7  # at 4.8 TB/s


@pytest.mark.slow
def test_qwen3_next_fp8_with_mtp_and_f32_state(qwen3_next, qwen3_next_4096):
    mtp = compute_floor(qwen3_next, BW, FloorOptions(context=4096, with_mtp=True))
    layer = _fp8(Q, H) + 2 * _fp8(KV, H) + _fp8(H, 16 * 256) + 2 * 256 * 2 + 512 * H * 2 + 11 * EXPERT + H * 2 \
        + 2 * H * 2
    glue = H * 2 * H * 2 + 3 * H * 2  # mtp.fc (BF16), its two input norms and final norm
    assert mtp.floor.bytes_per_token - qwen3_next_4096.floor.bytes_per_token == layer + glue + 4096 * 2 * 2 * 256 * 2
    f32 = compute_floor(qwen3_next, BW, FloorOptions(context=4096, engine_dtypes=(("recurrent_state", "F32"),)))
    assert f32.floor.bytes_per_token - qwen3_next_4096.floor.bytes_per_token == LINEAR * (CONV * 3 + 32 * 128 * 128) * 2


# --------------------------------------------------------------------------- fallbacks


@pytest.mark.slow
def test_glm_4_5_air_fp8_channel_scales_and_mtp(tmp_path):
    config = _config("glm-4.5-air-fp8")
    write_header_only(tmp_path / "glm", json.dumps(config).encode(), assign_dtypes(config, tensor_specs(config), {}))
    ckpt = read_checkpoint(tmp_path / "glm")
    t = {x.name: x for x in ckpt.tensors}
    q = "model.layers.1.self_attn.q_proj"
    assert (t[f"{q}.weight"].dtype, t[f"{q}.weight_scale"].dtype, t[f"{q}.weight_scale"].shape) == \
        ("F8_E4M3", "F32", (96 * 128, 1))  # compressed-tensors channel: one F32 scale per output row
    assert t["model.layers.1.mlp.gate.weight"].dtype == "BF16" and t["lm_head.weight"].dtype == "BF16"
    assert t["model.layers.1.mlp.gate.e_score_correction_bias"].dtype == "F32"
    assert "model.layers.46.eh_proj.weight" in t  # the MTP layer, stored as layer num_hidden_layers
    r = compute_floor(ckpt, BW, FloorOptions(context=4096))
    mtp = sum(w.parameters for w in r.weights if w.role == "mtp")
    assert round((r.total_parameters - mtp) / 1e9) == 107  # "106B" total (110B on the Hub with the MTP layer)
    # Active, as Z.ai counts it (no embedding, no head): attention, the dense layer, routers, the shared expert
    # and 8 of 128 experts: "12B". The floor's weights add one embedding row and the whole head.
    attn = 46 * ((96 * 128 + 2 * 8 * 128) * 4096 + 4096 * 96 * 128 + 96 * 128 + 2 * 8 * 128)
    experts = 45 * (8 + 1) * 3 * 1408 * 4096
    active = attn + 3 * 10944 * 4096 + experts + 45 * 128 * 4096
    assert round(active / 1e9) == 12
    read = sum(w.active_bytes for w in r.weights if w.role not in ("quant_scales", "norms", "embeddings",
                                                                     "output_head"))
    # FP8 matrices one byte an element; the BF16 biases and routers two; the routers' F32 correction bias.
    assert read == active + 46 * (96 * 128 + 2 * 8 * 128) + 45 * 128 * 4096 + 45 * 128 * 4 == 12_206_504_448
    assert r.caches[0].layers == 46 and r.caches[0].active_bytes == 46 * 4096 * 2 * 8 * 128 * 2


def test_mimo_7b_mtp_layers_are_mtp(tmp_path):
    config = _config("mimo-7b")
    write_header_only(tmp_path / "mimo", json.dumps(config).encode(), assign_dtypes(config, tensor_specs(config), {}))
    ckpt = read_checkpoint(tmp_path / "mimo")
    r = compute_floor(ckpt, BW, FloorOptions(context=1000))
    h, inter, vocab = 4096, 11008, 151_680
    layer = (2 * h * h + 2 * 1024 * h) + (h + 2 * 1024) + 3 * inter * h + 2 * h  # attention (+ biases), MLP, norms
    mtp_params = layer + 3 * h + 2 * h * h  # + token/hidden/final norms and input_proj
    assert sum(w.parameters for w in r.weights if w.role == "mtp") == mtp_params
    assert r.total_parameters == 36 * layer + h + 2 * vocab * h + mtp_params == 7_833_409_536  # "7.8B"
    base = 36 * layer + h + h + vocab * h  # one embedding row, the head
    assert r.floor.bytes_per_token == 2 * base + 36 * 1000 * 2 * 1024 * 2
    with_mtp = compute_floor(ckpt, BW, FloorOptions(context=1000, with_mtp=True))
    assert with_mtp.floor.bytes_per_token - r.floor.bytes_per_token == 2 * mtp_params + 1000 * 2 * 1024 * 2


def test_block_scales_in_bf16_when_asked():
    config = _config("qwen3-next-80b-a3b-fp8")
    made = {n: (d, s) for n, d, s in assign_dtypes(config, tensor_specs(config), {}, scale_dtype="BF16")}
    assert made["model.layers.0.linear_attn.out_proj.weight_scale_inv"] == ("BF16", (16, 32))
    assert made["model.layers.0.linear_attn.out_proj.weight"] == ("F8_E4M3", (H, 32 * 128))
