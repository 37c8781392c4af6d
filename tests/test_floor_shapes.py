"""Floors of real architectures' shapes, on header-only checkpoints written from their config.json.

Every expected figure is worked out here from the published config values, independently of the code
under test: parameter counts against the published ones, bytes per token by hand.
"""

from __future__ import annotations

import json
from fractions import Fraction
from math import ceil

import pytest

from audit.errors import AuditError
from audit.floor import FloorOptions, compute_floor, from_flag, read_checkpoint
from audit.floor.synth import assign_dtypes, tensor_specs, write_header_only
from scripts.make_header_only_checkpoint import main as make_header_only
from tests.floor_helpers import SHAPES, tiny_dense, write_checkpoint

BW = from_flag(4.8)


def _config(name: str) -> dict:
    return json.loads((SHAPES / f"{name}.config.json").read_text(encoding="utf-8"))


def _write(root, config: dict, mix: dict | None = None, **kw):
    raw = json.dumps(config, indent=2).encode()
    write_header_only(root, raw, assign_dtypes(config, tensor_specs(config), mix or {}), **kw)
    return read_checkpoint(root)


_FLOORS: dict = {}


def _floor(ckpt, **opts):
    """The floor of a checkpoint, computed once per module run for each set of options (DeepSeek-V3's 92k
    tensors take a second)."""
    key = (id(ckpt), tuple(sorted(opts.items())))
    if key not in _FLOORS:
        _FLOORS[key] = (ckpt, compute_floor(ckpt, BW, FloorOptions(**opts)))
    return _FLOORS[key][1]


def _role(report, role: str) -> float:
    return report.by_role.get(role, 0.0)


# --------------------------------------------------------------------------- Llama-3.1-8B (dense BF16)


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    return _write(tmp_path_factory.mktemp("llama") / "ckpt", _config("llama-3.1-8b"))


def test_llama_3_1_8b_shape_and_floor(llama):
    report = _floor(llama)
    assert report.total_elements == 8_030_261_248  # published parameter count
    assert len(llama.shards) == 4 and all(s.data == "absent" for s in report.shards)  # 5 GB shards, headers only
    # Everything but the embedding, of which one row of 4096 BF16 values.
    per_token = 2 * (8_030_261_248 - 128_256 * 4096) + 4096 * 2
    assert report.floor.bytes_per_token == per_token == 15_009_857_536
    assert report.floor.ms_per_token == pytest.approx(per_token / 4.8e12 * 1e3)  # 3.127 ms
    assert round(report.floor.tokens_per_s, 1) == 319.8


def test_llama_kv_cache_grows_with_context_and_halves_in_fp8(llama):
    base = _floor(llama).floor.bytes_per_token
    # 32 layers x (K + V) x 8 KV heads x 128 x 2 bytes = 131,072 bytes per cached token.
    assert _floor(llama, context=4096).floor.bytes_per_token - base == 4096 * 131_072
    fp8 = _floor(llama, context=4096, engine_dtypes=(("kv_cache", "F8_E4M3"),))
    assert fp8.floor.bytes_per_token - base == 4096 * 131_072 // 2
    assert [(c.part, c.dtype, c.layers, c.tokens, c.elements_per_layer_token) for c in fp8.caches] == \
        [("keys+values", "F8_E4M3", 32, 4096, 2 * 8 * 128)]


def test_gpus_divide_the_time_not_the_bytes(llama):
    one, eight = _floor(llama), _floor(llama, gpus=8)
    assert eight.floor.bytes_per_token == one.floor.bytes_per_token
    assert eight.floor.ms_per_token == pytest.approx(one.floor.ms_per_token / 8)


def test_sharding_and_sparse_files_change_nothing(tmp_path, llama):
    config = _config("llama-3.1-8b")
    one = _write(tmp_path / "one", config, shard_bytes=10**12)
    sparse = _write(tmp_path / "sparse", config, shard_bytes=3 * 10**9, sparse=True)
    assert len(one.shards) == 1 and len(sparse.shards) == 6 and one.index_bytes is None
    assert all(s.data_state == "complete" for s in sparse.shards)  # full length, holes for data
    floors = [_floor(c) for c in (llama, one, sparse)]
    assert {(f.floor.bytes_per_token, f.total_stored_bytes) for f in floors} == {(15_009_857_536, 16_060_522_496)}


# --------------------------------------------------------------------------- Qwen3-30B-A3B (128 experts, 8 per token)


@pytest.mark.slow
def test_qwen3_30b_a3b_routes_8_of_128_experts(tmp_path):
    ckpt = _write(tmp_path / "q", _config("qwen3-30b-a3b"))
    report = _floor(ckpt)
    assert report.total_elements == 30_532_122_624  # "30.5B" published
    h, v, layers, e, inter = 2048, 151_936, 48, 128, 768
    experts = layers * e * 3 * inter * h * 2
    router = layers * e * h * 2
    attention = layers * (2 * (32 * 128 * h) + 2 * (4 * 128 * h) + 2 * 128) * 2  # q, o, k, v + q/k norms
    norms = (2 * layers + 1) * h * 2
    assert _role(report, "routed_experts") == experts * 8 / 128
    assert report.floor.bytes_per_token == experts * 8 // 128 + router + attention + norms + h * 2 + v * h * 2
    (row,) = [w for w in report.weights if w.role == "routed_experts"]
    assert (row.tensors, row.reading) == (48 * 128 * 3, "8/128 experts")
    assert (report.shape.routed_experts, report.shape.experts_per_token) == (128, 8)
    assert report.shape.fields["routed_experts"] == "num_experts"


@pytest.mark.slow
def test_qwen3_fp8_experts_config_keeps_its_ignored_layers_in_bf16(tmp_path):
    # The config vLLM would serve: FP8 block-quantized experts; attention, router and head in ignored_layers.
    ckpt = _write(tmp_path / "q8", _config("qwen3-30b-a3b-fp8-experts"))
    report = _floor(ckpt)
    dtypes = {(w.role, w.kind): w.dtype for w in report.weights}
    assert dtypes == {("embeddings", "embeddings"): "BF16", ("attention", "attention"): "BF16",
                      ("router", "router"): "BF16", ("routed_experts", "routed_experts"): "F8_E4M3",
                      ("norms", "norms"): "BF16", ("output_head", "output_head"): "BF16",
                      ("quant_scales", "routed_experts"): "F32"}
    experts = 48 * 128 * (3 * 768 * 2048 + 3 * 6 * 16 * 4)  # FP8 weights + 128x128 block scales
    assert _role(report, "routed_experts") + _role(report, "quant_scales") == experts * 8 / 128
    # Most of what a token reads is still BF16: a floor that took the model for FP8 would be far too fast.
    assert report.by_dtype["BF16"] / report.floor.bytes_per_token > 0.55


# --------------------------------------------------------------------------- DeepSeek-V3 (MLA, FP8 + block scales, MTP)


H, V, L = 7168, 129_280, 61


def _scales(o: int, i: int) -> int:
    return ceil(o / 128) * ceil(i / 128) * 4  # F32 per 128x128 block


def _mla_attention(dtype_bytes: int, scales: bool) -> int:
    mats = [(1536, H), (128 * 192, 1536), (576, H), (128 * 256, 512), (H, 128 * 128)]
    return sum(o * i * dtype_bytes + (_scales(o, i) if scales else 0) for o, i in mats) + (1536 + 512) * 2


def _fp8_mlp(inter: int) -> int:
    return 3 * inter * H + 2 * _scales(inter, H) + _scales(H, inter)


def _deepseek_per_token(attention: int, mtp: bool = False) -> int:
    moe = 256 * H * 2 + 256 * 4 + _fp8_mlp(2048) + _fp8_mlp(2048) * 256 * 8 // 256  # router, bias, shared, 8/256
    main = H * 2 + L * attention + 3 * _fp8_mlp(18_432) + 58 * moe + (2 * L + 1) * H * 2 + V * H * 2
    if not mtp:
        return main
    # The MTP layer: its own embedding (one row), enorm, hnorm, eh_proj (BF16), shared head norm and head, and
    # one MoE decoder layer.
    return main + H * 2 + 2 * H * 2 + H * 2 * H * 2 + H * 2 + V * H * 2 + attention + 2 * H * 2 + moe


@pytest.fixture(scope="module")
def deepseek(tmp_path_factory):
    return _write(tmp_path_factory.mktemp("ds") / "ckpt", _config("deepseek-v3"))


@pytest.fixture(scope="module")
def deepseek_bf16_attention(tmp_path_factory):
    """FP8 experts and MLPs, BF16 attention: the mix a floor that assumed FP8 everywhere got wrong."""
    return _write(tmp_path_factory.mktemp("dsmix") / "ckpt", _config("deepseek-v3"), {"attention": "BF16"})


@pytest.mark.slow
def test_deepseek_v3_fp8_checkpoint(deepseek):
    report = _floor(deepseek, context=1000)
    assert sum(s.tensors for s in report.shards) == 91_991
    assert report.total_elements == 684_531_386_000  # "685B" with the MTP module
    assert report.stored_by_dtype == {"BF16": 7_837_573_120, "F32": 166_222_400, "F8_E4M3": 680_571_043_840}
    kv = 1000 * L * (512 + 64) * 2  # MLA: the 512-wide latent and the 64-wide rope key per token and layer
    assert [(c.part, c.bytes if hasattr(c, "bytes") else c.active_bytes) for c in report.caches] == \
        [("mla latent", kv)]
    assert report.floor.bytes_per_token == _deepseek_per_token(_mla_attention(1, scales=True)) + kv
    assert report.shape.first_dense_layers == 3 and report.shape.mtp_layers == 1
    scale_rows = {w.kind: w.reading for w in report.weights if w.role == "quant_scales"}
    assert scale_rows == {"attention": "all", "dense_mlp": "all", "shared_experts": "all",
                          "routed_experts": "8/256 experts"}  # an expert's scales are read with it
    assert {w.reading for w in report.weights if w.role == "mtp"} == {"none: MTP (use --with-mtp)"}


@pytest.mark.slow
def test_deepseek_v3_with_mtp_reads_the_mtp_layer_and_its_kv(deepseek):
    without, with_mtp = _floor(deepseek, context=1000), _floor(deepseek, context=1000, with_mtp=True)
    attention = _mla_attention(1, scales=True)
    assert with_mtp.floor.bytes_per_token - without.floor.bytes_per_token == \
        _deepseek_per_token(attention, mtp=True) - _deepseek_per_token(attention) + 1000 * 576 * 2
    assert with_mtp.caches[0].layers == 62


@pytest.mark.slow
def test_engine_dtype_bf16_attention_equals_a_checkpoint_storing_it(deepseek, deepseek_bf16_attention):
    # FP8 attention held in BF16 by the engine == the same shape stored with BF16 attention (its scales gone).
    retyped = _floor(deepseek, context=1000, engine_dtypes=(("attention", "BF16"),))
    stored = _floor(deepseek_bf16_attention, context=1000)
    assert retyped.floor.bytes_per_token == stored.floor.bytes_per_token == \
        _deepseek_per_token(_mla_attention(2, scales=False)) + 1000 * L * 576 * 2 == 49_149_390_336
    assert [w.reading for w in retyped.weights if w.role == "quant_scales" and w.kind == "attention"] == \
        ["none: attention re-typed"]
    assert retyped.options.engine_dtypes == {"attention": "BF16"}


def test_bf16_attention_makes_the_token_about_a_third_heavier_than_all_fp8(deepseek, deepseek_bf16_attention):
    # A floor that assumes FP8 everywhere is a quarter too fast for this mix.
    fp8 = _floor(deepseek, context=1000).floor.bytes_per_token
    mixed = _floor(deepseek_bf16_attention, context=1000)
    assert Fraction(13, 10) < Fraction(round(mixed.floor.bytes_per_token), round(fp8)) < Fraction(14, 10)
    assert mixed.by_dtype["BF16"] > mixed.by_dtype["F8_E4M3"]  # most of what a token reads is BF16


# --------------------------------------------------------------------------- Qwen3-Next-like (gated DeltaNet hybrid)

QWEN3_NEXT = {  # Qwen3-Next-80B-A3B's published shape (as the Qwen3-Coder-Next config repeats it)
    "architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "hidden_size": 2048,
    "num_hidden_layers": 48, "intermediate_size": 5120, "num_attention_heads": 16, "num_key_value_heads": 2,
    "head_dim": 256, "full_attention_interval": 4, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128,
    "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_value_head_dim": 128, "num_experts": 512,
    "num_experts_per_tok": 10, "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512,
    "decoder_sparse_step": 1, "mlp_only_layers": [], "vocab_size": 151_936, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16", "mtp_num_hidden_layers": 1,
}


@pytest.mark.slow
def test_qwen3_next_linear_attention_state_and_kv(tmp_path):
    ckpt = _write(tmp_path / "qn", QWEN3_NEXT)
    report = _floor(ckpt, context=2048)
    mtp = sum(w.elements for w in report.weights if w.role == "mtp")
    assert report.total_elements - mtp == 79_674_391_296  # the Hub's parameter count for this shape
    assert report.shape.layer_types == {"full_attention": 12, "linear_attention": 36}
    conv = (2 * 16 * 128 + 32 * 128) * (4 - 1)  # q, k, v channels x the kernel's 3 past inputs
    ssm = 32 * 128 * 128  # one 128 x 128 state per value head
    assert [(c.role, c.part, c.layers, c.active_bytes) for c in report.caches] == [
        ("kv_cache", "keys+values", 12, 2048 * 12 * 2 * 2 * 256 * 2),
        ("recurrent_state", "conv state", 36, 36 * conv * 2),
        ("recurrent_state", "ssm state", 36, 36 * ssm * 2)]
    # Linear-attention projections are attention; 10 of 512 routed experts; the shared expert always.
    assert _role(report, "routed_experts") == 48 * 512 * 3 * 512 * 2048 * 2 * 10 / 512
    f32 = _floor(ckpt, context=2048, engine_dtypes=(("recurrent_state", "F32"),))
    assert f32.floor.bytes_per_token - report.floor.bytes_per_token == 36 * (conv + ssm) * 2


# --------------------------------------------------------------------------- other families and rules


def test_mixtral_experts_by_num_local_experts(tmp_path):
    config = {"model_type": "mixtral", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100, "num_local_experts": 8,
              "num_experts_per_tok": 2, "torch_dtype": "bfloat16"}
    report = _floor(_write(tmp_path / "m", config))
    assert report.shape.fields["routed_experts"] == "num_local_experts"
    assert _role(report, "routed_experts") == 2 * 8 * 3 * 128 * 64 * 2 * 2 / 8
    assert _role(report, "router") == 2 * 8 * 64 * 2


def test_fused_expert_tensors_and_their_mxfp4_scales(tmp_path):
    config, tensors = tiny_dense()
    config.update(num_local_experts=4, num_experts_per_tok=1)
    tensors.update({"model.layers.0.mlp.router.weight": ("BF16", [4, 8]),
                    "model.layers.0.mlp.experts.gate_up_proj_blocks": ("U8", [4, 32, 4]),
                    "model.layers.0.mlp.experts.gate_up_proj_scales": ("U8", [4, 32]),
                    "model.layers.0.mlp.experts.gate_up_proj_bias": ("BF16", [4, 32])})
    report = _floor(write_checkpoint(tmp_path / "c", config, tensors) and read_checkpoint(tmp_path / "c"))
    rows = {(w.role, w.kind, w.dtype): w.active_bytes for w in report.weights}
    assert rows[("routed_experts", "routed_experts", "U8")] == 4 * 32 * 4 / 4
    assert rows[("quant_scales", "routed_experts", "U8")] == 4 * 32 / 4
    assert rows[("routed_experts", "routed_experts", "BF16")] == 4 * 32 * 2 / 4
    assert rows[("router", "router", "BF16")] == 4 * 8 * 2


def test_tied_embeddings_read_the_whole_matrix_as_the_head(tmp_path):
    config, tensors = tiny_dense(tied=True)
    report = _floor(read_checkpoint(write_checkpoint(tmp_path / "c", config, tensors)))
    (head,) = [w for w in report.weights if w.role == "output_head"]
    assert (head.tensors, head.stored_bytes, head.engine_bytes, head.reading) == \
        (0, 0, 32 * 8 * 2, "all: tied to model.embed_tokens.weight")


def test_multimodal_encoders_are_not_read_per_token(tmp_path):
    config, tensors = tiny_dense()
    tensors["model.visual.blocks.0.attn.qkv.weight"] = ("BF16", [24, 8])
    report = _floor(read_checkpoint(write_checkpoint(tmp_path / "c", config, tensors)))
    (row,) = [w for w in report.weights if w.role == "multimodal_encoder"]
    assert (row.active_bytes, row.reading) == (0, "none: multimodal encoder")


def test_role_overrides_come_first_and_are_recorded(tmp_path):
    config, tensors = tiny_dense()
    ckpt = read_checkpoint(write_checkpoint(tmp_path / "c", config, tensors))
    report = _floor(ckpt, role_overrides=(("other", r"\.mlp\.down_proj\."),))
    assert [(w.role, w.tensors) for w in report.weights if w.role in ("dense_mlp", "other")] == \
        [("dense_mlp", 2), ("other", 1)]
    assert [(r.role, r.pattern) for r in report.role_table.overrides] == [("other", r"\.mlp\.down_proj\.")]
    assert report.role_table.table == "default@2"


def test_expert_tensors_without_expert_counts_are_refused(tmp_path):
    config, tensors = tiny_dense()
    tensors["model.layers.0.mlp.experts.0.up_proj.weight"] = ("BF16", [16, 8])
    with pytest.raises(AuditError, match="config.json: has routed-expert tensors but no expert count"):
        _floor(read_checkpoint(write_checkpoint(tmp_path / "c", config, tensors)))


def test_engine_dtype_refuses_packed_integer_matrices(tmp_path):
    config, tensors = tiny_dense()
    tensors["model.layers.0.self_attn.q_proj.weight"] = ("I32", [8, 8])  # GPTQ-style packed weights
    tensors.pop("model.layers.0.self_attn.k_proj.weight")
    ckpt = read_checkpoint(write_checkpoint(tmp_path / "c", config, tensors))
    with pytest.raises(AuditError, match="tensor 'model.layers.0.self_attn.q_proj.weight' is I32, whose elements "
                                         "may be packed"):
        _floor(ckpt, engine_dtypes=(("attention", "BF16"),))


def test_expert_count_mismatch_is_noted(tmp_path):
    config, tensors = tiny_dense()
    config.update(n_routed_experts=4, num_experts_per_tok=2)
    for j in range(3):
        tensors[f"model.layers.0.mlp.experts.{j}.up_proj.weight"] = ("BF16", [16, 8])
    report = _floor(read_checkpoint(write_checkpoint(tmp_path / "c", config, tensors)))
    assert "config says 4 routed experts per layer; tensor names show [3] per layer" in report.notes


def test_make_header_only_checkpoint_script(tmp_path, capsys):
    out = tmp_path / "llama"
    assert make_header_only([str(SHAPES / "llama-3.1-8b.config.json"), str(out), "--dtype-mix",
                             "attention=F8_E4M3", "--fp8-scales", "tensor"]) == 0
    assert capsys.readouterr().out.startswith(f"wrote {out}: 3 file(s), 419 tensors, 8,030,261,376 elements")
    report = _floor(read_checkpoint(out))
    assert {w.dtype for w in report.weights if w.role == "attention"} == {"F8_E4M3"}
    assert sum(w.tensors for w in report.weights if w.role == "quant_scales") == 128  # one scale per matrix
    assert make_header_only([str(SHAPES / "llama-3.1-8b.config.json"), str(out)]) == 2  # refuses a non-empty dir
    assert "exists and is not empty" in capsys.readouterr().err


def test_glm4_moe_mtp_layers_by_index_and_a_truncated_file(tmp_path, cli):
    # GLM-4.5 keeps its MTP module as layer num_hidden_layers (here 2), like DeepSeek-V3.
    config = {"model_type": "glm4_moe", "hidden_size": 64, "intermediate_size": 96, "moe_intermediate_size": 32,
              "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
              "n_routed_experts": 8, "num_experts_per_tok": 2, "n_shared_experts": 1, "first_k_dense_replace": 1,
              "num_nextn_predict_layers": 1, "attention_bias": True, "use_qk_norm": True, "vocab_size": 128,
              "topk_method": "noaux_tc", "torch_dtype": "bfloat16"}
    ckpt = _write(tmp_path / "glm", config, sparse=True)
    report = _floor(ckpt, context=3)
    assert report.shape.fields["routed_experts"] == "n_routed_experts" and report.shape.mtp_layers == 1
    mtp = [w for w in report.weights if w.role == "mtp"]
    assert mtp and all(w.reading == "none: MTP (use --with-mtp)" for w in mtp)
    # MTP glue (embedding, enorm, hnorm, eh_proj, shared head norm and head), 2 norms, attention (4 projections,
    # 3 biases, q/k norms), router, 8 experts and the shared one; the router's correction bias in F32.
    assert {(w.dtype, w.tensors) for w in mtp} == {("BF16", 6 + 2 + 9 + 1 + 8 * 3 + 3), ("F32", 1)}
    assert report.caches[0].layers == 2 and _floor(ckpt, context=3, with_mtp=True).caches[0].layers == 3
    # Cut the file short: the floor is the same, and the table says the file was truncated.
    shard = tmp_path / "glm" / "model.safetensors"
    with open(shard, "r+b") as f:
        f.truncate(shard.stat().st_size - 100)
    r = cli("floor", tmp_path / "glm", "--hbm-tbps", "1", "--context", "3", "-o", tmp_path / "p", "-q")
    assert r.out.splitlines()[1] == ("note: 1 of 1 safetensors files hold less data than their headers declare "
                                     "(1 truncated); sizes come from the headers")
    assert json.loads((tmp_path / "p" / "floor.json").read_text())["floor"]["bytes_per_token"] == \
        report.floor.bytes_per_token
