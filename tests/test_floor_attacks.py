"""Attacks on `audit floor` (issue 19, round 3): config numbers and safetensors headers.

Every bad input is ONE line naming the file and field, exit 2, nothing written: never a traceback, never a
silent default. The classes: every config number (negative, zero, bool, float where an int is meant,
huge, nested deeply, huge lists); every header field the reference reader (huggingface/safetensors)
refuses (offsets or dims past 2^64, a shape product that overflows, a header not starting with `{`,
non-ASCII digits, duplicate names, unknown dtypes, overlaps).
"""

from __future__ import annotations

import json

import pytest
from tests.attacks import attack
from tests.floor_helpers import tiny_dense, write_checkpoint, write_raw

from scripts.make_header_only_checkpoint import main as make_header_only


def _floor(cli, tmp_path, config, tensors=None, *args):
    if tensors is None:
        tensors = tiny_dense()[1]
    ckpt = write_checkpoint(tmp_path / "ckpt", config, tensors, data="absent")
    out = tmp_path / "pkg"
    r = cli("floor", ckpt, "--hbm-tbps", "4.8", "-o", out, *args)
    return r, ckpt, out


def _refused(r, out, message):
    assert (r.code, r.out) == (2, "")
    assert r.err.count("\n") == 1 and "Traceback" not in r.err, r.err
    assert message in r.err, r.err
    assert not out.exists()


# --------------------------------------------------------------------------- config numbers


@attack("floor.config-huge-layers")
def test_a_trillion_layers_is_one_line(cli, tmp_path):
    config, tensors = tiny_dense()
    r, ckpt, out = _floor(cli, tmp_path, {**config, "num_hidden_layers": 10**12})
    _refused(r, out, "ckpt/config.json: field num_hidden_layers: 1,000,000,000,000 is over the limit (2,147,483,647)")


@attack("floor.config-huge-layers")
def test_a_trillion_layers_of_a_hybrid_is_one_line(cli, tmp_path):
    config, tensors = tiny_dense()
    hybrid = {**config, "num_hidden_layers": 10**12, "full_attention_interval": 4, "linear_num_value_heads": 2,
              "linear_num_key_heads": 1, "linear_key_head_dim": 4, "linear_value_head_dim": 4,
              "linear_conv_kernel_dim": 4}
    r, ckpt, out = _floor(cli, tmp_path, hybrid)
    _refused(r, out, "field num_hidden_layers: 1,000,000,000,000 is over the limit")


@attack("floor.config-huge-hidden")
def test_hidden_size_ten_to_the_400_is_one_line(cli, tmp_path):
    config, tensors = tiny_dense()
    config = {**config, "hidden_size": 10**400}
    del config["head_dim"]
    r, ckpt, out = _floor(cli, tmp_path, config)
    _refused(r, out, "ckpt/config.json: field hidden_size: a 401-digit number is over the limit")


BAD_NUMBERS = [
    # (case, config changes, expected message after "config.json: ")
    ("negative heads", {"num_key_value_heads": -1}, "field num_key_value_heads: must be a non-negative integer"),
    ("bool layers", {"num_hidden_layers": True}, "field num_hidden_layers: must be a non-negative integer"),
    ("float layers", {"num_hidden_layers": 1.0}, "field num_hidden_layers: must be a non-negative integer"),
    ("string vocab", {"vocab_size": "32"}, "field vocab_size: must be a non-negative integer"),
    ("zero layers", {"num_hidden_layers": 0}, "field num_hidden_layers: must be at least 1, found 0"),
    ("huge heads", {"num_attention_heads": 2**70}, "field num_attention_heads: 1,180,591,620,717,411,303,424 is over"),
    ("huge experts", {"num_local_experts": 10**30, "num_experts_per_tok": 2}, "field num_local_experts: "),
    ("float sliding window", {"sliding_window": 4096.0}, "field sliding_window: must be a non-negative integer"),
    ("bool sliding window", {"sliding_window": True}, "field sliding_window: must be a non-negative integer"),
    ("zero full-attention interval", {"full_attention_interval": 0, "linear_num_value_heads": 2},
     "field full_attention_interval: must be at least 1, found 0"),
    ("zero sliding pattern", {"sliding_window": 8, "sliding_window_pattern": 0},
     "field sliding_window_pattern: must be at least 1, found 0"),
    ("float max_window_layers", {"sliding_window": 8, "use_sliding_window": True, "max_window_layers": 0.5},
     "field max_window_layers: must be a non-negative integer"),
    ("string tie", {"tie_word_embeddings": "no"}, "field tie_word_embeddings: must be true or false, found 'no'"),
    ("huge layer_types", {"layer_types": ["full_attention"] * 2_000_000},
     "field layer_types: has 2,000,000 entries for 1 layers"),
    ("layer_types of numbers", {"layer_types": [1]}, "field layer_types: must be a list of strings"),
    ("text_config a list", {"text_config": [{"num_hidden_layers": 3}]},
     "field text_config: must be an object, found list"),
    ("bad value in text_config", {"text_config": {"num_hidden_layers": -3}},
     "field num_hidden_layers: must be a non-negative integer, found -3"),
    ("zero linear heads", {"layer_types": ["linear_attention"], "linear_num_key_heads": 0},
     "field linear_num_key_heads: is missing or 0, but the model has linear-attention layers"),
    ("dtype a number", {"torch_dtype": 16}, "field torch_dtype: unknown torch_dtype 16"),
]


@pytest.mark.slow
@attack("floor.config-numbers")
@pytest.mark.parametrize("case, change, message", BAD_NUMBERS, ids=[c[0] for c in BAD_NUMBERS])
def test_every_config_number_is_checked_in_one_line(cli, tmp_path, case, change, message):
    config, tensors = tiny_dense()
    r, ckpt, out = _floor(cli, tmp_path, {**config, **change}, tensors)
    _refused(r, out, f"ckpt/config.json: {message}")


@attack("floor.config-numbers")
def test_deeply_nested_config_is_one_line(cli, tmp_path):
    config, tensors = tiny_dense()
    ckpt = write_checkpoint(tmp_path / "ckpt", config, tensors, data="absent")
    (ckpt / "config.json").write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    r = cli("floor", ckpt, "--hbm-tbps", "4.8", "-o", tmp_path / "pkg")
    _refused(r, tmp_path / "pkg", f"{ckpt}/config.json: is not valid JSON: nested too deeply")


@attack("floor.options-huge")
@pytest.mark.parametrize("args, message", [
    (("--context", str(10**400)), "--context must be at most 1,099,511,627,776 tokens, got a 401-digit number"),
    (("--gpus", str(10**400)), "--gpus must be at most 1,048,576, got a 401-digit number"),
    (("--hbm-tbps", "1e-300"), "--hbm-tbps must be between 0.001 and 1000 TB/s, got 1e-300"),
], ids=["context", "gpus", "tbps"])
def test_huge_options_are_one_line(cli, tmp_path, args, message):
    config, tensors = tiny_dense()
    ckpt = write_checkpoint(tmp_path / "ckpt", config, tensors, data="absent")
    base = ["--hbm-tbps", "4.8"] if args[0] != "--hbm-tbps" else []
    r = cli("floor", ckpt, *base, *args, "-o", tmp_path / "pkg")
    assert r.code == 2 and r.out == "" and r.err.count("\n") == 1 and message in r.err, r.err
    assert not (tmp_path / "pkg").exists()


@attack("floor.synth-huge")
@pytest.mark.parametrize("change, message", [
    ({"num_hidden_layers": 10**12}, "num_hidden_layers: 1,000,000,000,000 is over the limit"),
    ({"hidden_size": 10**400}, "hidden_size: a 401-digit number is over the limit"),
    ({"num_hidden_layers": 200_000}, "would declare more than 2,000,000 tensors"),
    ({"num_hidden_layers": -1}, "num_hidden_layers: must be a non-negative integer"),
    ({"intermediate_size": 2.5}, "intermediate_size: must be a non-negative integer"),
    ({"vocab_size": 2**31 - 1, "hidden_size": 2**31 - 1, "torch_dtype": "float32"},
     "tensor 'model.embed_tokens.weight': shape [2147483647, 2147483647] x F32 overflows 64 bits"),
    ({"decoder_sparse_step": 0, "model_type": "qwen2_moe", "num_experts": 2, "moe_intermediate_size": 4},
     "decoder_sparse_step: must be at least 1, found 0"),
], ids=["layers", "hidden", "tensors", "negative", "float", "tensor-bits", "zero-step"])
def test_make_header_only_checkpoint_bounds_every_config_number(tmp_path, capsys, change, message):
    config, _ = tiny_dense()
    src = tmp_path / "config.json"
    src.write_text(json.dumps({**config, **change}), encoding="utf-8")
    out = tmp_path / "out"
    assert make_header_only([str(src), str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not out.exists()


# --------------------------------------------------------------------------- safetensors headers


def _hdr(obj) -> bytes:
    raw = json.dumps(obj, separators=(",", ":")).encode()
    return raw + b" " * (-len(raw) % 8)


U64 = 2**64
BAD_HEADERS = [
    # (case, header bytes, expected message after "PATH: ")
    ("offset past 2^64", _hdr({"w": {"dtype": "U8", "shape": [U64], "data_offsets": [0, U64]}}),
     "tensor 'w': data_offsets [0, 18446744073709551616] are past 2^64"),
    ("begin past 2^64", _hdr({"w": {"dtype": "U8", "shape": [0], "data_offsets": [U64 + 5, U64 + 5]}}),
     "are past 2^64"),
    ("dim past 2^64", _hdr({"w": {"dtype": "U8", "shape": [0, U64], "data_offsets": [0, 0]}}),
     "tensor 'w': shape [0, 18446744073709551616] has a dimension past 2^64"),
    ("shape product overflows", _hdr({"w": {"dtype": "U8", "shape": [2**40, 2**40, 0], "data_offsets": [0, 0]}}),
     "tensor 'w': shape [1099511627776, 1099511627776, 0]: the element count overflows 64 bits"),
    ("bits overflow", _hdr({"w": {"dtype": "F32", "shape": [2**62], "data_offsets": [0, 2**64 - 1]}}),
     "the size in bits overflows 64 bits"),
    ("header not starting with {", b" " + _hdr({"w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}})[:-1],
     "header does not start with '{'"),
    ("non-ASCII digits", '{"w":{"dtype":"U8","shape":[\u0661],"data_offsets":[0,1]}}'.encode() + b"   ",
     "header is not valid JSON"),
    ("huge integer text", b'{"w":{"dtype":"U8","shape":[1' + b"0" * 5000 + b'],"data_offsets":[0,1]}}',
     "header is not valid JSON"),
]


@attack("floor.header-offsets")
@pytest.mark.parametrize("case, header, message", BAD_HEADERS, ids=[c[0] for c in BAD_HEADERS])
def test_header_numbers_the_reference_reader_refuses(tmp_path, cli, case, header, message):
    ckpt = tmp_path / "ckpt"
    config, _ = tiny_dense()
    ckpt.mkdir()
    (ckpt / "config.json").write_text(json.dumps(config), encoding="utf-8")
    f = write_raw(ckpt / "model.safetensors", header)
    out = tmp_path / "pkg"
    r = cli("floor", ckpt, "--hbm-tbps", "4.8", "-o", out)
    assert (r.code, r.out) == (2, "") and r.err.count("\n") == 1, r.err
    assert r.err.startswith(f"audit: error: {f}: ") and message in r.err, r.err
    assert not out.exists()


@attack("floor.header-offsets")
@pytest.mark.parametrize("total", [2**64, -1, 1.5, True, "8"], ids=["2^64", "negative", "float", "bool", "string"])
def test_index_total_size_is_checked(tmp_path, cli, total):
    config, tensors = tiny_dense()
    ckpt = write_checkpoint(tmp_path / "ckpt", config, tensors, data="absent")
    (ckpt / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": total}, "weight_map": {n: "model.safetensors" for n in tensors}}))
    r = cli("floor", ckpt, "--hbm-tbps", "4.8", "-o", tmp_path / "pkg")
    assert (r.code, r.out) == (2, "") and r.err.count("\n") == 1, r.err
    assert r.err.startswith(f"audit: error: {ckpt}/model.safetensors.index.json: field metadata.total_size: "
                            "must be an integer from 0 to 2^64 - 1"), r.err
