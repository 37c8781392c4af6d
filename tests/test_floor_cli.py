"""`audit floor` and `audit floor-check`: exact output, the package, reproducibility, NVML, usage errors."""

from __future__ import annotations

import json
import shutil
import sys
import types

import pytest

from audit.floor.roles import TABLES, table_sha256
from audit.fileio import dumps_pretty, sha256_file
from tests.floor_helpers import TINY_LLAMA

# What a floor of GPU evidence (--from-nvml) must name; the tiny model stands in for a public one.
SUBJECT = ("--model-name", "meta-llama/Llama-3.1-8B", "--engine", "vllm==0.26.0", "--run", "test-run")

TINY_TABLE = """\
role                           dtype             tensors        parameters        stored bytes  read per token                         bytes/token
embeddings                     BF16                    1           524,288           1,048,576  1 row of 4,096                                 256
attention                      BF16                    8           196,608             393,216  all                                        393,216
dense_mlp                      BF16                    6           196,608             393,216  all                                        393,216
norms                          BF16                    5               640               1,280  all                                          1,280
output_head                    BF16                    1           524,288           1,048,576  all                                      1,048,576
kv_cache:keys+values           BF16                    -                 -                   -  16 tok x 2 layers                           16,384
total                                                 21         1,442,432           2,884,864                                           1,852,928
bytes/token by dtype: BF16 1,852,928
floor: 1,852,928 bytes/token / (1 GPU x 4.800 TB/s from --hbm-tbps) = 0.000386 ms/token, 2,590,494.6 tok/s (context 16)
note: 1 of 1 safetensors files hold less data than their headers declare (1 header-only); sizes come from the headers
"""


def test_tiny_llama_exact_output_and_package(cli, tmp_path):
    # make-tiny-llama.py's model: hidden 128, 2 layers, 4 heads of 64, 2 KV heads, vocab 4096, all BF16.
    # Per token: everything but the embedding, of which one row (128 x 2 bytes); KV at 16 tokens:
    # 16 x 2 layers x 2 (K, V) x 2 heads x 64 x 2 bytes = 16,384.
    out = tmp_path / "pkg"
    r = cli("floor", TINY_LLAMA, "--hbm-tbps", "4.8", "--context", "16", "-o", out, "--id", "tiny-floor")
    assert (r.code, r.err) == (0, "")
    assert r.out == TINY_TABLE + f"wrote {out}: checkpoint-headers package tiny-floor\n"
    assert 2_884_864 - 1_048_576 + 256 + 16_384 == 1_852_928
    assert (out / "floor.txt").read_text(encoding="utf-8") == TINY_TABLE
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["kind"] == "checkpoint-headers"
    assert [f["path"] for f in manifest["files"]] == ["checkpoint/config.json", "checkpoint/model.safetensors",
                                                      "floor.json", "floor.txt"]
    # The package holds the headers, not the weights: the copy is the fixture itself (header only).
    assert (out / "checkpoint" / "model.safetensors").read_bytes() == (TINY_LLAMA / "model.safetensors").read_bytes()
    assert (out / "checkpoint" / "config.json").read_bytes() == (TINY_LLAMA / "config.json").read_bytes()
    report = json.loads((out / "floor.json").read_text())
    assert list(report)[:2] == ["schema_version", "kind"]
    assert {i["path"]: i["sha256"] for i in report["inputs"]} == {
        "config.json": sha256_file(TINY_LLAMA / "config.json")[0],
        "model.safetensors": "f39f780a8f877e36308f0927e2c77e1067f399b916e0844f55eefda311f0f74f"}
    assert report["floor"]["bytes_per_token"] == 1_852_928
    assert report["floor"]["ms_per_token"] == pytest.approx(1_852_928 / 4.8e12 * 1e3, rel=1e-12)
    assert report["bandwidth"] == {"tbps_per_gpu": 4.8, "source": "flag", "devices": []}
    assert cli("validate", out).code == 0


def test_quiet_prints_the_floor_only(cli, tmp_path):
    r = cli("floor", TINY_LLAMA, "--hbm-tbps", "3.35", "--gpus", "2", "-o", tmp_path / "p", "-q")
    assert r.out.splitlines()[0] == ("floor: 1,836,544 bytes/token / (2 GPUs x 3.350 TB/s from --hbm-tbps) = "
                                     "0.0002741 ms/token, 3,648,156.5 tok/s (context 0)")
    assert len(r.out.splitlines()) == 3  # floor, the header-only note, wrote


def test_same_inputs_give_byte_identical_packages(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    for name in ("a", "b"):
        assert cli("floor", TINY_LLAMA, "--hbm-tbps", "4.8", "--context", "7", "-o", tmp_path / name).code == 0
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert len(files) == 5
    for rel in files:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel


def test_a_copy_of_the_checkpoint_elsewhere_gives_the_same_floor(cli, tmp_path, monkeypatch):
    # Only content counts: the directory's name and location are not in floor.json.
    shutil.copytree(TINY_LLAMA, tmp_path / "renamed")
    cli("floor", TINY_LLAMA, "--hbm-tbps", "4.8", "-o", tmp_path / "a")
    cli("floor", tmp_path / "renamed", "--hbm-tbps", "4.8", "-o", tmp_path / "b")
    assert (tmp_path / "a" / "floor.json").read_bytes() == (tmp_path / "b" / "floor.json").read_bytes()


def test_existing_output_is_refused_without_force(cli, tmp_path):
    (tmp_path / "p").mkdir()
    r = cli("floor", TINY_LLAMA, "--hbm-tbps", "4.8", "-o", tmp_path / "p")
    assert (r.code, r.err) == (2, f"audit: error: {tmp_path / 'p'}: already exists (use --force to replace it)\n")
    assert cli("floor", TINY_LLAMA, "--hbm-tbps", "4.8", "-o", tmp_path / "p", "--force").code == 0


# --------------------------------------------------------------------------- floor-check


def _rehash(pkg, rel):
    """What an attacker who edits a file would do next: fix its hash and size in the manifest."""
    m = json.loads((pkg / "manifest.json").read_text())
    for f in m["files"]:
        if f["path"] == rel:
            f["sha256"], f["bytes"] = sha256_file(pkg / rel)
    (pkg / "manifest.json").write_text(dumps_pretty(m), encoding="utf-8")


def test_floor_check_recomputes_from_the_header_only_copy(cli, tmp_path):
    pkg = tmp_path / "p"
    cli("floor", TINY_LLAMA, "--hbm-tbps", "4.8", "--context", "100", "--engine-dtype", "kv_cache=F8_E4M3", "-o", pkg)
    r = cli("floor-check", pkg)
    assert (r.code, r.out) == (0, f"identical: {pkg}\n")


def test_floor_check_catches_an_edited_figure_even_when_rehashed(cli, tmp_path):
    pkg = tmp_path / "p"
    cli("floor", TINY_LLAMA, "--hbm-tbps", "4.8", "-o", pkg)
    report = json.loads((pkg / "floor.json").read_text())
    report["floor"]["tokens_per_s"] *= 2
    (pkg / "floor.json").write_text(dumps_pretty(report), encoding="utf-8")
    r = cli("floor-check", pkg)
    assert r.code == 1 and "floor.json" in r.err  # the manifest's sha256 no longer matches
    _rehash(pkg, "floor.json")
    r = cli("floor-check", pkg)
    assert (r.code, r.out) == (1, f"differs: {pkg} (1 differences)\n  floor: recomputed value differs\n")


def test_floor_check_catches_an_edited_header(cli, tmp_path):
    pkg = tmp_path / "p"
    cli("floor", TINY_LLAMA, "--hbm-tbps", "4.8", "-o", pkg)
    shard = pkg / "checkpoint" / "model.safetensors"
    # A consistent edit (same span, other shape) passes every header check; the recorded sha256 catches it.
    raw = shard.read_bytes()
    edited = raw.replace(b'"lm_head.weight":{"dtype":"BF16","shape":[4096,128]',
                         b'"lm_head.weight":{"dtype":"BF16","shape":[8192, 64]')
    assert edited != raw and len(edited) == len(raw)
    shard.write_bytes(edited)
    _rehash(pkg, "checkpoint/model.safetensors")
    r = cli("floor-check", pkg)
    assert (r.code, r.out) == (1, f"differs: {pkg} (2 differences)\n  checkpoint_digest: recomputed value differs\n"
                                  f"  inputs: recomputed value differs\n")


def test_floor_check_refuses_other_packages(cli, tmp_path):
    r = cli("floor-check", tmp_path / "none")
    assert (r.code, r.err) == (2, f"audit: error: {tmp_path / 'none'}: no such file or directory\n")


def test_the_published_role_table_never_changes():
    # A change to default@1 must be a new version beside it (default@2), never an edit in place.
    assert table_sha256(TABLES["default@1"]) == "b0ae742cf69f5641a6c83c796a0cee951bd1b624a7d5bdf873f3b72be316867b"
    assert table_sha256(TABLES["default@2"]) == "572907c32bb6efc89f8ea8f0217376e2e5db9930febc9d2c3446ab43a03de74a"


# --------------------------------------------------------------------------- bandwidth from NVML


def _fake_nvml(monkeypatch, devices, init_error=None):
    m = types.ModuleType("pynvml")
    m.NVML_CLOCK_MEM = 2

    def init():
        if init_error:
            raise RuntimeError(init_error)

    m.nvmlInit = init
    m.nvmlShutdown = lambda: None
    m.nvmlDeviceGetCount = lambda: len(devices)
    m.nvmlDeviceGetHandleByIndex = lambda i: i
    m.nvmlDeviceGetName = lambda h: devices[h][0]
    m.nvmlDeviceGetMemoryBusWidth = lambda h: devices[h][1]
    m.nvmlDeviceGetMaxClockInfo = lambda h, clock: devices[h][2] if clock == 2 else 0
    monkeypatch.setitem(sys.modules, "pynvml", m)


def test_from_nvml_is_bus_width_times_max_memory_clock_times_two(cli, tmp_path, monkeypatch):
    # H200: 6144-bit bus, 3201 MHz max memory clock (nvidia-smi), double data rate: 4.917 TB/s.
    _fake_nvml(monkeypatch, [("NVIDIA H200", 6144, 3201), ("NVIDIA H200", 6144, 3201)])
    r = cli("floor", TINY_LLAMA, "--from-nvml", "--gpus", "2", "-o", tmp_path / "p", "-q", *SUBJECT)
    assert r.out.splitlines()[0] == (
        "floor: 1,836,544 bytes/token / (2 GPUs x 4.917 TB/s from NVML (NVIDIA H200: 6144-bit bus x 3201 MHz x 2)) "
        "= 0.0001868 ms/token, 5,354,335.1 tok/s (context 0)")
    report = json.loads((tmp_path / "p" / "floor.json").read_text())
    assert report["bandwidth"]["source"] == "nvml"
    assert report["bandwidth"]["tbps_per_gpu"] == 6144 / 8 * 3201e6 * 2 / 1e12
    assert [d["index"] for d in report["bandwidth"]["devices"]] == [0, 1]
    manifest = json.loads((tmp_path / "p" / "manifest.json").read_text())
    assert manifest["provenance"]["hardware"] == "2x NVIDIA H200"
    assert manifest["provenance"]["subject"] == {
        "model": "meta-llama/Llama-3.1-8B", "model_config_sha256": sha256_file(TINY_LLAMA / "config.json")[0],
        "engine": "vllm", "engine_version": "0.26.0", "hardware": "2x NVIDIA H200", "weights": "headers-only",
        "run": "test-run"}
    assert manifest["provenance"]["model"] == "meta-llama/Llama-3.1-8B"
    assert cli("floor-check", tmp_path / "p").code == 0  # re-checked with the recorded bandwidth, no GPU needed


def test_from_nvml_uses_the_slowest_device(cli, tmp_path, monkeypatch):
    _fake_nvml(monkeypatch, [("A", 6144, 3201), ("B", 5120, 2619)])
    r = cli("floor", TINY_LLAMA, "--from-nvml", "--gpus", "2", "-o", tmp_path / "p", "-q", *SUBJECT)
    assert "x 3.352 TB/s from NVML (B: 5120-bit bus x 2619 MHz x 2)" in r.out


@pytest.mark.parametrize("setup, message", [
    ("missing", "--from-nvml: NVML is not available (pip install nvidia-ml-py, on a machine with an NVIDIA "
                "driver); give --hbm-tbps instead"),
    ("init", "--from-nvml: NVML is not available (NVML Shared Library Not Found); give --hbm-tbps instead"),
    ("count", "--from-nvml: --gpus 2 but NVML sees 1 device(s)"),
])
def test_from_nvml_without_nvml_is_one_line(cli, tmp_path, monkeypatch, setup, message):
    if setup == "missing":
        monkeypatch.setitem(sys.modules, "pynvml", None)  # import raises ImportError
    else:
        _fake_nvml(monkeypatch, [("X", 6144, 3201)], "NVML Shared Library Not Found" if setup == "init" else None)
    r = cli("floor", TINY_LLAMA, "--from-nvml", "--gpus", "2", "-o", tmp_path / "p", *SUBJECT)
    assert (r.code, r.out, r.err) == (2, "", f"audit: error: {message}\n")
    assert not (tmp_path / "p").exists()


def test_from_nvml_without_a_subject_is_refused_before_reading(cli, tmp_path, monkeypatch):
    _fake_nvml(monkeypatch, [("NVIDIA H100 80GB HBM3", 5120, 2619)])
    r = cli("floor", TINY_LLAMA, "--from-nvml", "-o", tmp_path / "p", "--engine", "vllm==0.26.0")
    assert (r.code, r.out, r.err) == (2, "", "audit: error: checkpoint-headers package of GPU evidence must say "
                                             "what it measured: give --model-name OWNER/NAME, --run ID\n")
    assert not (tmp_path / "p").exists()


@pytest.mark.parametrize("flags, message", [
    (("--model-name", "/tmp/models/qwen"), "--model-name '/tmp/models/qwen': give the model's public name OWNER/NAME "
                                           "(e.g. Qwen/Qwen3-30B-A3B-FP8), not a local path"),
    (("--model-name", ".dev/tiny-llama"), "--model-name '.dev/tiny-llama': give the model's public name OWNER/NAME "
                                          "(e.g. Qwen/Qwen3-30B-A3B-FP8), not a local path"),
    (("--engine", "vllm 0.26.0"), "--engine 'vllm 0.26.0': give NAME==VERSION, e.g. vllm==0.26.0"),
])
def test_subject_flags_are_checked(cli, tmp_path, monkeypatch, flags, message):
    _fake_nvml(monkeypatch, [("NVIDIA H100 80GB HBM3", 5120, 2619)])
    args = dict(zip(SUBJECT[::2], SUBJECT[1::2]))
    args.update(dict(zip(flags[::2], flags[1::2])))
    r = cli("floor", TINY_LLAMA, "--from-nvml", "-o", tmp_path / "p", *[x for kv in args.items() for x in kv])
    assert (r.code, r.out, r.err) == (2, "", f"audit: error: {message}\n")


def test_a_stated_bandwidth_records_a_subject_only_when_given(cli, tmp_path):
    assert cli("floor", TINY_LLAMA, "--hbm-tbps", "4.8", "-o", tmp_path / "a", "-q").code == 0
    assert "subject" not in json.loads((tmp_path / "a" / "manifest.json").read_text())["provenance"]
    r = cli("floor", TINY_LLAMA, "--hbm-tbps", "4.8", "-o", tmp_path / "b", "-q", *SUBJECT[:2])
    assert (r.code, r.err) == (2, "audit: error: checkpoint-headers package names part of what it measured: give "
                                  "--engine NAME==VERSION, --hardware TEXT, --run ID\n")
    r = cli("floor", TINY_LLAMA, "--hbm-tbps", "4.8", "-o", tmp_path / "c", "-q", *SUBJECT,
            "--hardware", "1x NVIDIA H100 80GB HBM3")
    assert r.code == 0
    assert json.loads((tmp_path / "c" / "manifest.json").read_text())["provenance"]["subject"]["hardware"] == \
        "1x NVIDIA H100 80GB HBM3"


# --------------------------------------------------------------------------- usage


@pytest.mark.parametrize("args, message", [
    ((), "give one of --hbm-tbps X or --from-nvml"),
    (("--hbm-tbps", "4.8", "--from-nvml"), "give one of --hbm-tbps X or --from-nvml"),
    (("--hbm-tbps", "0"), "--hbm-tbps must be a positive number of TB/s, got 0.0"),
    (("--hbm-tbps", "nan"), "--hbm-tbps must be a positive number of TB/s, got nan"),
    (("--hbm-tbps", "4.8", "--gpus", "0"), "--gpus must be at least 1, got 0"),
    (("--hbm-tbps", "4.8", "--context", "-1"), "--context must be at least 0, got -1"),
    (("--hbm-tbps", "4.8", "--engine-dtype", "attention"),
     "--engine-dtype 'attention': expected ROLE=DTYPE, e.g. attention=BF16"),
    (("--hbm-tbps", "4.8", "--engine-dtype", "attn=BF16"), "--engine-dtype 'attn=BF16': unknown role 'attn' "
     "(roles: multimodal_encoder, mtp, routed_experts, shared_experts, router, dense_mlp, attention, embeddings, "
     "output_head, norms, other, kv_cache, recurrent_state)"),
    (("--hbm-tbps", "4.8", "--engine-dtype", "attention=FP8"), "--engine-dtype 'attention=FP8': unknown dtype 'FP8' "
     "(known: BOOL, F4, F6_E2M3, F6_E3M2, U8, I8, F8_E5M2, F8_E4M3, F8_E8M0, I16, U16, F16, BF16, I32, U32, F32, C64, "
     "F64, I64, U64)"),
    (("--hbm-tbps", "4.8", "--role-pattern", "attention=("), "--role-pattern 'attention=(': not a regular "
     "expression: missing ), unterminated subpattern at position 0"),
    (("--hbm-tbps", "4.8", "--role-pattern", "heads=x"), "--role-pattern 'heads=x': unknown role 'heads' (roles: "
     "multimodal_encoder, mtp, quant_scales, routed_experts, shared_experts, router, dense_mlp, attention, "
     "embeddings, output_head, norms, other)"),
    (("--hbm-tbps", "4.8", "--roles", "default@9"), "unknown role table 'default@9' (known: default@1, default@2)"),
])
def test_usage_errors_are_one_line_exit_2(cli, tmp_path, args, message):
    r = cli("floor", TINY_LLAMA, "-o", tmp_path / "p", *args)
    assert (r.code, r.out, r.err) == (2, "", f"audit: error: {message}\n")
    assert not (tmp_path / "p").exists()


TINY_DEEPSEEK = {  # DeepSeek-V3's layout at toy size: MLA, 1 dense + 1 MoE layer, FP8 with block scales, 1 MTP layer
    "model_type": "deepseek_v3", "hidden_size": 128, "intermediate_size": 256, "moe_intermediate_size": 64,
    "num_hidden_layers": 2, "first_k_dense_replace": 1, "n_routed_experts": 4, "num_experts_per_tok": 2,
    "n_shared_experts": 1, "num_attention_heads": 2, "num_key_value_heads": 2, "q_lora_rank": 64, "kv_lora_rank": 64,
    "qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 32, "vocab_size": 256,
    "num_nextn_predict_layers": 1, "topk_method": "noaux_tc", "torch_dtype": "bfloat16",
    "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}}

TINY_DEEPSEEK_TABLE = """\
role                           dtype             tensors        parameters        stored bytes  read per token                         bytes/token
embeddings                     BF16                    1            32,768              65,536  1 row of 256                                   256
attention                      BF16                    4               256                 512  all                                            512
attention                      F8_E4M3>BF16           10            81,920              81,920  all                                        163,840
dense_mlp                      F8_E4M3                 3            98,304              98,304  all                                         98,304
router                         BF16                    1               512               1,024  all                                          1,024
router                         F32                     1                 4                  16  all                                             16
shared_experts                 F8_E4M3                 3            24,576              24,576  all                                         24,576
routed_experts                 F8_E4M3                12            98,304              98,304  2/4 experts                                 49,152
norms                          BF16                    5               640               1,280  all                                          1,280
output_head                    BF16                    1            32,768              65,536  all                                         65,536
quant_scales:attention         F32                    10              (10)                  40  none: attention re-typed                         0
quant_scales:dense_mlp         F32                     3               (6)                  24  all                                             24
quant_scales:shared_experts    F32                     3               (3)                  12  all                                             12
quant_scales:routed_experts    F32                    12              (12)                  48  2/4 experts                                     24
mtp                            BF16                   11            99,584             199,168  none: MTP (use --with-mtp)                       0
mtp                            F32                    21                 4                  96  none: MTP (use --with-mtp)                       0
mtp                            F8_E4M3>BF16            5            40,960              40,960  none: MTP (use --with-mtp)                       0
mtp                            F8_E4M3                15           122,880             122,880  none: MTP (use --with-mtp)                       0
kv_cache:mla latent            BF16                    -                 -                   -  8 tok x 2 layers                             2,560
total                                                121           633,480             800,236                                             407,116
parameters exclude 51 elements of quantization scales (in parentheses where a row holds only scales)
bytes/token by dtype: BF16 235,008, F32 76, F8_E4M3 172,032
floor: 407,116 bytes/token / (1 GPU x 2.000 TB/s from --hbm-tbps) = 0.0002036 ms/token, 4,912,604.8 tok/s (context 8)
note: 1 of 1 safetensors files hold less data than their headers declare (1 header-only); sizes come from the headers
"""


def test_fp8_moe_with_mla_mtp_and_a_dequantized_role_exact_output(cli, tmp_path):
    from audit.floor.synth import assign_dtypes, tensor_specs, write_header_only

    write_header_only(tmp_path / "ckpt", json.dumps(TINY_DEEPSEEK).encode(),
                      assign_dtypes(TINY_DEEPSEEK, tensor_specs(TINY_DEEPSEEK), {}))
    r = cli("floor", tmp_path / "ckpt", "--hbm-tbps", "2", "--context", "8", "--engine-dtype", "attention=BF16",
            "-o", tmp_path / "p", "--id", "x")
    # By hand: attention matrices q_a 64x128, q_b 96x64, kv_a 80x128, kv_b 128x64, o 128x64 = 40,960 FP8 values
    # a layer, 163,840 bytes for two layers in BF16, their 10 scales dropped; routed experts 2 of 4:
    # 4 x 3 x 64 x 128 / 2 = 49,152; MLA cache 8 tokens x 2 layers x (64 + 16) x 2 bytes = 2,560.
    assert r.out == TINY_DEEPSEEK_TABLE + f"wrote {tmp_path / 'p'}: checkpoint-headers package x\n"
