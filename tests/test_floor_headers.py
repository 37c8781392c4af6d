"""safetensors headers: sizes by dtype from data_offsets, and every bad header refused in one line."""

from __future__ import annotations

import json
import struct

import pytest

from audit.errors import AuditError
from audit.floor.safetensors import DTYPE_BITS, read_checkpoint, read_header
from tests.floor_helpers import TINY_LLAMA, nbytes, tiny_dense, write_checkpoint, write_raw, write_safetensors


@pytest.mark.parametrize("dtype, shape, size", [
    ("BF16", [3, 5], 30), ("F16", [7], 14), ("F32", [2, 2], 16), ("F64", [3], 24), ("C64", [2], 16),
    ("F8_E4M3", [4, 3], 12), ("F8_E5M2", [5], 5), ("F8_E8M0", [6], 6), ("I8", [9], 9), ("U8", [9], 9),
    ("BOOL", [3], 3), ("I16", [2], 4), ("U16", [2], 4), ("I32", [2], 8), ("U32", [2], 8), ("I64", [1], 8),
    ("U64", [1], 8),
    ("F4", [2, 3], 3),  # MXFP4: two elements a byte
    ("F6_E2M3", [4], 3), ("F6_E3M2", [8], 6),  # 6 bits: four elements in three bytes
    ("BF16", [0, 5], 0), ("BF16", [], 2),  # empty tensor, scalar
])
def test_sizes_come_from_offsets_and_match_shape_times_dtype(tmp_path, dtype, shape, size):
    f = write_safetensors(tmp_path / "m.safetensors", {"t": (dtype, shape)})
    (t,) = read_header(f, "m.safetensors").tensors
    assert (t.dtype, t.shape, t.nbytes) == (dtype, tuple(shape), size)


def test_every_safetensors_dtype_is_known():
    # The format's dtypes as of huggingface/safetensors 0.6 (`Dtype::bitsize`).
    assert set(DTYPE_BITS) == {"BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0",
                               "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "C64", "F64", "I64", "U64"}


def test_header_order_is_irrelevant_and_metadata_is_kept(tmp_path):
    # Offsets laid out b, a but the JSON lists a first; the reference reader sorts by offset too.
    header = {"a": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]},
              "__metadata__": {"format": "pt", "note": "x"},
              "b": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}
    f = write_raw(tmp_path / "m.safetensors", json.dumps(header).encode(), 12)
    shard = read_header(f, "m.safetensors")
    assert [t.name for t in shard.tensors] == ["b", "a"]
    assert shard.metadata == {"format": "pt", "note": "x"}
    assert (shard.data_bytes, shard.data_state) == (12, "complete")


@pytest.mark.parametrize("data, state, on_disk", [("complete", "complete", 48), ("absent", "absent", 0),
                                                   ("partial", "partial", 24)])
def test_a_file_shorter_than_its_data_is_a_header_only_copy(tmp_path, data, state, on_disk):
    f = write_safetensors(tmp_path / "m.safetensors", {"w": ("BF16", [4, 6])}, data=data)
    shard = read_header(f, "m.safetensors")
    assert (shard.data_state, shard.data_on_disk, shard.data_bytes) == (state, on_disk, 48)


def _hdr(obj) -> bytes:
    return json.dumps(obj).encode()


ONE = {"w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]}}

BAD_FILES = [
    # (case, header bytes, data bytes, declared length or None, expected message after "PATH: ")
    ("file shorter than 8 bytes", None, b"\x01\x02\x03", None,
     "file is 3 bytes, too short for the 8-byte header length"),
    ("length past the end", _hdr(ONE), 0, 5000, "header length 5,000 bytes runs past the end of the file (73 bytes)"),
    ("header over 100 MB", b"{}", 0, 100_000_001,
     "header length 100,000,001 bytes is over the 100,000,000-byte limit"),
    ("not JSON", b"{\"w\": nope}", 0, None, "header is not valid JSON: Expecting value at line 1 column 7"),
    ("not UTF-8", b"{\"\xff\": 1}", 0, None, "header is not valid UTF-8 (byte 2)"),
    ("NaN", b"{\"w\": NaN}", 0, None, "header is not valid JSON: NaN is not valid JSON"),
    ("not an object", b"[1, 2]", 0, None, "header does not start with '{'"),
    ("a tensor named twice", b"{\"w\": {}, \"w\": {}}", 0, None, "header is not valid JSON: key 'w' appears twice"),
    ("unknown dtype", _hdr({"w": {"dtype": "F8_E4M3FN", "shape": [2], "data_offsets": [0, 2]}}), 2, None,
     "tensor 'w': unknown dtype 'F8_E4M3FN' (known: " + ", ".join(DTYPE_BITS) + ")"),
    ("missing field", _hdr({"w": {"dtype": "BF16", "shape": [2]}}), 0, None, "tensor 'w': missing data_offsets"),
    ("unknown field", _hdr({"w": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2], "x": 1}}), 2, None,
     "tensor 'w': unknown field 'x'"),
    ("boolean in shape", _hdr({"w": {"dtype": "BF16", "shape": [True], "data_offsets": [0, 2]}}), 2, None,
     "tensor 'w': shape must be a list of non-negative integers, found [True]"),
    ("negative offset", _hdr({"w": {"dtype": "BF16", "shape": [1], "data_offsets": [-2, 0]}}), 0, None,
     "tensor 'w': data_offsets must be [begin, end] of non-negative integers, found [-2, 0]"),
    ("end before begin", _hdr({"w": {"dtype": "BF16", "shape": [1], "data_offsets": [4, 2]}}), 4, None,
     "tensor 'w': data_offsets [4, 2] are out of order (end before begin)"),
    ("offsets not shape x dtype", _hdr({"w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 4]}}), 4, None,
     "tensor 'w': data_offsets [0, 4] span 4 bytes but shape [2, 2] x BF16 is 8 bytes"),
    ("sub-byte not whole bytes", _hdr({"w": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}}), 2, None,
     "tensor 'w': 3 elements of F4 (4 bits) are not a whole number of bytes"),
    ("overlap", _hdr({"a": {"dtype": "BF16", "shape": [4], "data_offsets": [0, 8]},
                      "b": {"dtype": "BF16", "shape": [2], "data_offsets": [6, 10]}}), 10, None,
     "tensor 'b': data_offsets [6, 10] overlap tensor 'a' [0, 8]"),
    ("same span twice", _hdr({"a": {"dtype": "BF16", "shape": [4], "data_offsets": [0, 8]},
                              "b": {"dtype": "BF16", "shape": [4], "data_offsets": [0, 8]}}), 8, None,
     "tensor 'b': data_offsets [0, 8] overlap tensor 'a' [0, 8]"),
    ("gap", _hdr({"a": {"dtype": "BF16", "shape": [4], "data_offsets": [0, 8]},
                  "b": {"dtype": "BF16", "shape": [2], "data_offsets": [12, 16]}}), 16, None,
     "tensor 'b': data_offsets [12, 16] leave a gap of 4 bytes after tensor 'a'"),
    ("data not from 0", _hdr({"a": {"dtype": "BF16", "shape": [2], "data_offsets": [4, 8]}}), 8, None,
     "tensor 'a': data_offsets [4, 8] leave a gap of 4 bytes before the first tensor"),
    ("metadata not strings", _hdr({"__metadata__": {"n": 1}, **ONE}), 8, None, "__metadata__ must map strings to strings"),
    ("bytes after the data", _hdr(ONE), 12, None, "file has 4 bytes after the last tensor's data (header declares 8)"),
]


@pytest.mark.parametrize("case, header, data, length, message", BAD_FILES, ids=[c[0] for c in BAD_FILES])
def test_bad_headers_are_one_line_errors_and_nothing_is_written(tmp_path, cli, case, header, data, length, message):
    ckpt = tmp_path / "ckpt"
    config, _ = tiny_dense()
    ckpt.mkdir()
    (ckpt / "config.json").write_text(json.dumps(config), encoding="utf-8")
    f = ckpt / "model.safetensors"
    if header is None:
        f.write_bytes(data)
    else:
        write_raw(f, header, data, length)
    out = tmp_path / "pkg"
    r = cli("floor", ckpt, "--hbm-tbps", "4.8", "-o", out)
    assert (r.code, r.out, r.err) == (2, "", f"audit: error: {f}: {message}\n")
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["ckpt"]


def test_library_raises_audit_error_naming_the_file(tmp_path):
    f = write_raw(tmp_path / "x.safetensors", _hdr(ONE), 0, 999)
    with pytest.raises(AuditError, match=r"x\.safetensors: header length 999 bytes runs past the end"):
        read_header(f, "x.safetensors")


# --------------------------------------------------------------------------- checkpoints and indexes


def _sharded(tmp_path, weight_map, shards):
    root = tmp_path / "ckpt"
    config, _ = tiny_dense()
    root.mkdir()
    (root / "config.json").write_text(json.dumps(config), encoding="utf-8")
    for name, tensors in shards.items():
        write_safetensors(root / name, tensors)
    (root / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 0}, "weight_map": weight_map}), encoding="utf-8")
    return root


def test_sharded_checkpoint_reads_every_shard_through_the_index(tmp_path):
    root = _sharded(tmp_path, {"a": "s1.safetensors", "b": "s2.safetensors"},
                    {"s1.safetensors": {"a": ("BF16", [2])}, "s2.safetensors": {"b": ("F32", [3])},
                     "stray.safetensors": {"c": ("F32", [1])}})  # not in the index: not read
    ckpt = read_checkpoint(root)
    assert [s.file for s in ckpt.shards] == ["s1.safetensors", "s2.safetensors"]
    assert [(t.name, t.nbytes) for t in ckpt.tensors] == [("a", 4), ("b", 12)]
    assert [i.kind for i in ckpt.inputs()] == ["config", "index", "header", "header"]


BAD_CHECKPOINTS = [
    ("index names a missing shard", {"a": "s1.safetensors", "b": "gone.safetensors"},
     {"s1.safetensors": {"a": ("BF16", [2])}},
     "{root}/model.safetensors.index.json: field weight_map: names shard 'gone.safetensors', which is missing"),
    ("index escapes the directory", {"a": "../s1.safetensors"}, {"s1.safetensors": {"a": ("BF16", [2])}},
     "{root}/model.safetensors.index.json: field weight_map: tensor 'a' maps to '../s1.safetensors': "
     "path has an empty, '.' or '..' component"),
    ("index maps a tensor the shard lacks", {"a": "s1.safetensors", "z": "s1.safetensors"},
     {"s1.safetensors": {"a": ("BF16", [2])}},
     "{root}/model.safetensors.index.json: field weight_map: maps 'z' to s1.safetensors, whose header has no "
     "such tensor"),
    ("shard holds a tensor the index lacks", {"a": "s1.safetensors"},
     {"s1.safetensors": {"a": ("BF16", [2]), "b": ("BF16", [2])}},
     "{root}/s1.safetensors: tensor 'b' is not in model.safetensors.index.json"),
]


@pytest.mark.parametrize("case, weight_map, shards, message", BAD_CHECKPOINTS, ids=[c[0] for c in BAD_CHECKPOINTS])
def test_bad_indexes_are_one_line_errors(tmp_path, cli, case, weight_map, shards, message):
    root = _sharded(tmp_path, weight_map, shards)
    r = cli("floor", root, "--hbm-tbps", "4.8", "-o", tmp_path / "pkg")
    assert (r.code, r.err) == (2, f"audit: error: {message.format(root=root)}\n")
    assert not (tmp_path / "pkg").exists()


def test_a_tensor_in_two_files_is_refused(tmp_path, cli):
    root = tmp_path / "ckpt"
    config, _ = tiny_dense()
    write_checkpoint(root, config, {"a": ("BF16", [2])})
    write_safetensors(root / "more.safetensors", {"a": ("BF16", [2])})
    r = cli("floor", root, "--hbm-tbps", "4.8", "-o", tmp_path / "pkg")
    assert r.err == f"audit: error: {root}/more.safetensors: tensor 'a' is also in model.safetensors\n"


def test_missing_config_and_missing_weights(tmp_path, cli):
    (tmp_path / "empty").mkdir()
    r = cli("floor", tmp_path / "empty", "--hbm-tbps", "4.8", "-o", tmp_path / "pkg")
    assert r.err == f"audit: error: {tmp_path / 'empty'}: no config.json (the floor needs the model's shape)\n"
    (tmp_path / "empty" / "config.json").write_text("{}", encoding="utf-8")
    r = cli("floor", tmp_path / "empty", "--hbm-tbps", "4.8", "-o", tmp_path / "pkg")
    assert r.err == (f"audit: error: {tmp_path / 'empty'}: no *.safetensors files and no "
                     f"model.safetensors.index.json\n")
    r = cli("floor", tmp_path / "nope", "--hbm-tbps", "4.8", "-o", tmp_path / "pkg")
    assert (r.code, r.err) == (2, f"audit: error: {tmp_path / 'nope'}: no such directory\n")


def test_tiny_llama_fixture_is_the_header_of_the_real_file():
    # The fixture is the first 8 + N bytes of the model.safetensors make-tiny-llama.py wrote (see its README).
    raw = (TINY_LLAMA / "model.safetensors").read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    assert len(raw) == 8 + n == 2240
    shard = read_header(TINY_LLAMA / "model.safetensors", "model.safetensors")
    assert (len(shard.tensors), shard.data_bytes, shard.data_state) == (21, 2_884_864, "absent")
    assert shard.header_sha256 == "f39f780a8f877e36308f0927e2c77e1067f399b916e0844f55eefda311f0f74f"
    assert sum(nbytes(t.dtype, t.shape) for t in shard.tensors) == 2_884_864


def test_shards_linked_into_a_cache_snapshot_are_read(tmp_path):
    # A Hugging Face cache snapshot holds symbolic links to ../../blobs/<hash>.
    blobs = tmp_path / "blobs"
    write_safetensors(blobs / "abc123", {"a": ("BF16", [2])}, data="absent")
    root = tmp_path / "snapshots" / "rev"
    config, _ = tiny_dense()
    root.mkdir(parents=True)
    (root / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (root / "model.safetensors").symlink_to(blobs / "abc123")
    assert [(t.name, t.nbytes) for t in read_checkpoint(root).tensors] == [("a", 4)]
