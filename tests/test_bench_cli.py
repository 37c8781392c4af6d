"""`audit bench` on the command line: exact output on deterministic packages, help for every command,
one-line errors, and whole runs against tests/fake_openai_server.py (stalls, --launch, --anchor)."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest
from tests.bench_helpers import synthetic_run, write_run
from tests.conftest import REPO
from tests.fake_openai_server import FakeOpenAIServer

from audit.fileio import dumps_pretty, head_and_tail, sha256_file
from audit.generate.vllm_server import KEPT_LOG_BYTES
from tests.attacks import attack

FAKE = f"{sys.executable} {REPO / 'tests' / 'fake_openai_server.py'}"
FAKE_BENCH_SERVE = f"{sys.executable} {REPO / 'tests' / 'fake_vllm_bench_serve.py'}"

REPORT_FAST = [
    'throughput package throughput-fast-7db74acd27a1 (arm fast)',
    '  model m (vllm 0.26.0) on 1x NVIDIA H200',
    "  prompt 64 tokens (counted by the server's /tokenize, filler 'the'), output cap 8, ignore_eos, greedy; 1 request(s) in flight on 1 server(s)",
    '  3 windows of 2 s after 1 warm-up requests; 50 timed requests (49 done, 1 cut at the end, 0 failed)',
    'window  tok/s  tokens  requests  TTFT median  longest silence  valid',
    '0       65.0   130     17        50.0 ms      0.05 s           yes',
    '1       67.0   134     17        50.0 ms      0.05 s           yes',
    '2       65.5   131     16        50.0 ms      0.05 s           yes',
    'tok/s over 3 valid window(s): 65.8 ± 1.2 (2·se), 65.0–67.0 by window',
    'decode after the first token: per request mean 100.0 tok/s (min 100.0, max 100.0; 50 requests); overall 346 tokens / 3.46 s = 100.0 tok/s',
    'time to first token: median 50.0 ms, mean 50.0 ms (50 requests)',
    'streaming: 396 chunks with tokens, 0 bundled (several tokens in one chunk, 0 tokens)',
    'speculative decoding: 1,185 draft tokens, 395 accepted (33.3%), mean acceptance length 2.00 (per window: 2.00, 2.00, 2.00)',
    # the synthetic rows stream one token per chunk beside counters that say 2 per step: the cross-check shows it
    'engine steps from the stream: 1.00 tokens per decode step (per request mean 1.00, 1.00–1.00); 0 of 49 requests '
    'ran at the ceiling of 4 tokens per step, 0 chunks over it; counters 2.00, stream / counters 0.500',
    'telemetry telemetry-fast-<id>: 1 GPU(s) (0: NVIDIA H200), status ok',
    '  sampled at 2 Hz, GPM every 0.5 s; sampler used 0.1% of one core',
    'window  kernel running (utilization.gpu)  SM_UTIL  DRAM_BW_UTIL  ANY_TENSOR  SM_OCCUPANCY  power W (sum of 1 GPU)  energy J  SM MHz',
    '0       99.0%                             40.5%    70.0%         8.0%        -             400.0                   800       1,980',
    '1       99.0%                             40.5%    70.0%         8.0%        -             400.0                   800       1,980',
    '2       99.0%                             40.5%    70.0%         8.0%        -             400.0                   800       1,980',
    '  (percentages are means over the GPUs; kernel running = share of time any kernel ran, SM_UTIL = share of SMs busy)',
    'unsupported: GPU 0 temperature_c, GPU 0 sm_occupancy_pct',
]

REPORT_SLOW = [
    'throughput package throughput-slow-0feedfd909f9 (arm slow)',
    '  model m (vllm 0.26.0) on unrecorded hardware',
    "  prompt 64 tokens (counted by the server's /tokenize, filler 'the'), output cap 8, ignore_eos, greedy; 1 request(s) in flight on 1 server(s)",
    '  3 windows of 2 s after 1 warm-up requests; 26 timed requests (25 done, 1 cut at the end, 0 failed)',
    'window  tok/s   tokens  requests  TTFT median  longest silence  valid',
    '0       (17.5)  35      5         50.0 ms      1.18 s           no: no token arrived for 1.2 s from +0.6 s (stall threshold 1 s)',
    '1       42.5    85      11        50.0 ms      0.05 s           yes',
    '2       41.5    83      10        50.0 ms      0.05 s           yes',
    'tok/s over 2 valid window(s): 42.0 ± 1.0 (2·se), 41.5–42.5 by window',
    'decode after the first token: per request mean 50.0 tok/s (min 50.0, max 50.0; 21 requests); overall 143 tokens / 2.86 s = 50.0 tok/s',
    'time to first token: median 50.0 ms, mean 50.0 ms (21 requests)',
    'streaming: 204 chunks with tokens, 0 bundled (several tokens in one chunk, 0 tokens)',
    'telemetry: no telemetry package beside it (give --telemetry)',
]

COMPARE = [
    'A: throughput-fast-7db74acd27a1 (arm fast)',
    'B: throughput-slow-0feedfd909f9 (arm slow)',
    'window  A tok/s  B tok/s  A/B',
    '1       67.0     42.5     1.576×',
    '2       65.5     41.5     1.578×',
    'tok/s A/B: 1.58×, 1.58–1.58 by window pair (worst to best), ± 0.00 (2·se, 2 pairs)',
    'decode after the first token (mean per request) A/B: 2.00×',
    'TTFT median A/B: 1.00×',
    'skipped: window 0: B invalid (no token arrived for 1.2 s from +0.6 s (stall threshold 1 s))',
]


@pytest.fixture
def runs(tmp_path):
    a, _ = write_run(tmp_path, "fast", synthetic_run("fast", interval=0.01, spec=(3, 1)))
    b, _ = write_run(tmp_path, "slow", synthetic_run("slow", interval=0.02, gap=(0.5, 1.2), telemetry=False))
    return a, b


def test_report_prints_every_figure(cli, runs):
    r = cli("bench", "report", runs[0], "--no-png")
    assert (r.code, r.err) == (0, "")
    # The telemetry package's id names its content, which holds the throughput package's digest: that covers the
    # manifest, producer (git commit) included, so it changes with every commit of audit.
    assert [re.sub(r"telemetry-fast-[0-9a-f]{12}:", "telemetry-fast-<id>:", line)
            for line in r.out.splitlines()] == REPORT_FAST


def test_report_names_invalid_windows_and_missing_telemetry(cli, runs):
    r = cli("bench", "report", runs[1], "--no-png")
    assert (r.code, r.err) == (0, "")
    assert r.out.splitlines() == REPORT_SLOW


def test_compare_pairs_windows(cli, runs):
    r = cli("bench", "compare", *runs)
    assert (r.code, r.err) == (0, "")
    assert r.out.splitlines() == COMPARE
    j = cli("bench", "compare", *runs, "--json")
    doc = json.loads(j.out)
    assert doc["schema_version"] == 1 and [p["window"] for p in doc["pairs"]] == [1, 2]


@pytest.mark.slow
def test_report_writes_a_png_timeline(cli, runs, tmp_path):
    r = cli("bench", "report", runs[0])
    png = tmp_path / "fast-report.png"
    assert r.code == 0 and r.out.splitlines()[-1] == f"wrote {png}"
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    out = tmp_path / "x.png"
    assert cli("bench", "report", runs[1], "--png", out).code == 0 and out.stat().st_size > 20_000


@pytest.mark.parametrize("cmd", [["bench"], ["bench", "throughput"], ["bench", "compare"], ["bench", "report"]])
def test_every_command_has_help(cli, cmd):
    r = cli(*cmd, "--help")
    assert r.code == 0 and r.out.startswith(f"Usage: audit {' '.join(cmd)} ")
    assert len(r.out.splitlines()) > 4


def test_a_tampered_summary_fails_the_report(cli, runs):
    a = runs[0]
    s = json.loads((a / "summary.json").read_text())
    s["windows"][1]["valid"] = False
    (a / "summary.json").write_text(dumps_pretty(s))
    m = json.loads((a / "manifest.json").read_text())
    for f in m["files"]:
        if f["path"] == "summary.json":
            f["sha256"], f["bytes"] = sha256_file(a / "summary.json")
    (a / "manifest.json").write_text(dumps_pretty(m))
    r = cli("bench", "report", a, "--no-png")
    assert r.code == 1 and r.out == ""
    assert r.err == (f"audit: error: {a}/summary.json: differs from the figures recomputed from the rows: "
                     "windows[1].valid: stored False, recomputed True\n")


def test_one_line_errors(cli, runs, tmp_path):
    tel = f"{runs[0]}.telemetry"
    cases = [
        (["bench", "throughput", "--arm", "x", "-o", tmp_path / "o"], 2,
         "audit: error: give --server URL (repeatable) or --launch ARGS\n"),
        (["bench", "throughput", "--server", "http://127.0.0.1:9", "--arm", "x", "-o", tmp_path / "o",
          "--gpm-interval-s", "0.05"], 2,
         "audit: error: --gpm-interval-s must be >= 0.1 (GPM returns zeros or NaN over shorter intervals)\n"),
        (["bench", "throughput", "--server", "http://127.0.0.1:9", "--arm", "x", "-o", runs[0]], 2,
         f"audit: error: {runs[0]}: already exists (use --force to replace it)\n"),
        (["bench", "report", tmp_path / "nope"], 2, f"audit: error: {tmp_path / 'nope'}: no such file or directory\n"),
        (["bench", "compare", runs[0], tel], 2, f"audit: error: {tel}: is a 'telemetry' package, expected 'throughput'\n"),
        (["bench", "report", runs[1], "--telemetry", tel, "--no-png"], 2, None),
    ]
    for args, code, err in cases:
        r = cli(*args)
        assert r.code == code, (args, r.err)
        assert len(r.err.splitlines()) == 1, r.err
        if err is not None:
            assert r.err == err
    assert "belongs to throughput package throughput-fast-" in cli(*cases[-1][0]).err


# --------------------------------------------------------------------------- whole runs


RUN_LINE = re.compile(r"^wrote (\S+): throughput package throughput-(\S+)-[0-9a-f]{12}, (\d) of (\d) windows valid, "
                      r"[0-9.]+ tok/s$")
TEL_LINE = re.compile(r"^wrote (\S+): telemetry package telemetry-(\S+)-[0-9a-f]{12}, counters (ok|unavailable: .+)$")


def _no_leftovers(d: Path) -> None:
    assert not [p.name for p in d.iterdir() if p.name.startswith(".")]


@pytest.mark.slow
def test_throughput_against_a_server(cli, tmp_path):
    with FakeOpenAIServer(max_model_len=4096, token_delay=0.001, bundle=[2, 1]) as srv:
        r = cli("bench", "throughput", "--server", srv.url, "--arm", "cli", "-o", tmp_path / "run", "--windows", "2",
                "--window-s", "0.6", "--prompt-tokens", "100", "--max-tokens", "20", "--ignore-eos", "-q")
    assert (r.code, r.err) == (0, "")
    first, second = r.out.splitlines()
    m = RUN_LINE.match(first)
    assert m and m.group(1) == str(tmp_path / "run") and m.groups()[2:] == ("2", "2")
    assert TEL_LINE.match(second) and TEL_LINE.match(second).group(1) == str(tmp_path / "run.telemetry")
    assert cli("validate", tmp_path / "run").code == 0 and cli("validate", tmp_path / "run.telemetry").code == 0
    rows = [json.loads(x) for x in (tmp_path / "run" / "requests.jsonl").read_text().splitlines()]
    assert all(r["prompt_tokens"] == 100 for r in rows if r["ended"] == "done")
    assert all(r["output_tokens"] == 20 and r["bundled_chunks"] > 0 for r in rows if r["ended"] == "done")
    _no_leftovers(tmp_path)


@pytest.mark.slow
def test_a_stalled_server_invalidates_its_window(cli, tmp_path):
    faults = [{"kind": "stall", "match": "#00004 ", "after": 2, "seconds": 1.5}]
    with FakeOpenAIServer(max_model_len=4096, token_delay=0.002, faults=faults) as srv:
        r = cli("bench", "throughput", "--server", srv.url, "--arm", "stall", "-o", tmp_path / "run", "--windows", "3",
                "--window-s", "1.0", "--stall-s", "0.5", "--prompt-tokens", "50", "--max-tokens", "10",
                "--ignore-eos", "--warmup-requests", "1", "-q")
    assert r.code == 0, r.err
    assert RUN_LINE.match(r.out.splitlines()[0]).group(3) == "2"
    rep = cli("bench", "report", tmp_path / "run", "--no-png")
    bad = [line for line in rep.out.splitlines() if " no: " in line]
    assert len(bad) == 1, rep.out
    assert re.search(r"no: request \d+ failed at \+[0-9.]+ s: stalled: no event for 0\.\d s \(read timeout 0\.5 s\)$",
                     bad[0]), bad[0]
    assert "tok/s over 2 valid window(s)" in rep.out


def test_a_server_without_per_chunk_usage_writes_nothing(cli, tmp_path):
    with FakeOpenAIServer(max_model_len=4096, no_chunk_usage=True) as srv:
        r = cli("bench", "throughput", "--server", srv.url, "--arm", "x", "-o", tmp_path / "run", "--prompt-tokens",
                "20", "--max-tokens", "5", "-q")
    assert r.code == 2 and r.out == ""
    assert r.err == ("audit: error: POST /v1/completions: a chunk came without `usage`: the server does not report "
                     "usage per chunk (stream_options.continuous_usage_stats), so tokens cannot be timed\n")
    assert list(tmp_path.iterdir()) == []


def test_a_prompt_that_does_not_fit_is_refused_before_measuring(cli, tmp_path):
    with FakeOpenAIServer(max_model_len=512) as srv:
        r = cli("bench", "throughput", "--server", srv.url, "--arm", "x", "-o", tmp_path / "run", "-q")
    assert (r.code, r.err) == (2, "audit: error: --prompt-tokens 1024 + --max-tokens 256 exceed the server's context "
                                  "window (512 tokens)\n")


@pytest.mark.slow
def test_launch_and_anchor(cli, tmp_path):
    anchor = (f"{FAKE_BENCH_SERVE} bench serve --base-url {{url}} --model {{model}} --random-input-len {{prompt_tokens}} "
              f"--random-output-len {{max_tokens}} --num-prompts 3 --ignore-eos --save-result --result-dir "
              f"{{result_dir}} --result-filename {{result_name}}")
    r = cli("bench", "throughput", "--launch", "--max-model-len 2048 --fake-config '{\"token_delay\": 0.002}'",
            "--launch-program", FAKE, "--model", "m", "--arm", "launched", "-o", tmp_path / "run", "--windows", "2",
            "--window-s", "0.5", "--prompt-tokens", "40", "--max-tokens", "12", "--ignore-eos", "--anchor", anchor,
            "--no-telemetry", "-q")
    assert r.code == 0, r.err
    assert len(r.out.splitlines()) == 1 and RUN_LINE.match(r.out)
    files = sorted(p.name for p in (tmp_path / "run").iterdir())
    assert files == ["anchor.json", "anchor.log", "manifest.json", "requests.jsonl", "server.log", "summary.json",
                     "windows.jsonl"]
    log = (tmp_path / "run" / "server.log").read_text()
    pid = int(re.search(r"pid=(\d+)", log).group(1))
    assert not os.path.exists(f"/proc/{pid}")  # stopped at the end
    rep = cli("bench", "report", tmp_path / "run", "--no-png").out
    assert re.search(r"^vllm bench serve on the same server: [0-9.]+ tok/s, TTFT median [0-9.]+ ms \(3 requests, mean "
                     r"prompt 40 and output 12 tokens\); ours / its: tok/s [0-9.]+, TTFT median [0-9.]+$", rep, re.M)
    assert "telemetry: no telemetry package beside it (give --telemetry)" in rep
    _no_leftovers(tmp_path)


@pytest.mark.slow
@attack("bench.huge-server-log")
def test_a_launched_servers_huge_log_is_kept_in_part(cli, tmp_path):
    # The fake server grows its log by 256 MiB (sparse) as it stops: the package kept all of it before.
    r = cli("bench", "throughput", "--launch", "--max-model-len 2048 --fake-config '{\"pad_log_bytes\": 268435456}'",
            "--launch-program", FAKE, "--model", "m", "--arm", "big-log", "-o", tmp_path / "run", "--windows", "1",
            "--window-s", "0.3", "--prompt-tokens", "40", "--max-tokens", "8", "--no-telemetry", "-q")
    assert r.code == 0, r.err
    log = (tmp_path / "run" / "server.log").read_bytes()
    half = KEPT_LOG_BYTES // 2
    assert b"INFO Starting vLLM API server" in log[:half] and log[-half:] == b"\0" * half
    left_out = re.match(rb"\n\[audit: ([0-9,]+) bytes left out here\]\n$", log[half:-half])
    assert left_out and int(left_out.group(1).replace(b",", b"")) > (256 << 20) - KEPT_LOG_BYTES
    assert cli("validate", tmp_path / "run").code == 0


def test_head_and_tail_keeps_a_small_file_whole_and_a_large_ones_two_ends(tmp_path):
    small, large = tmp_path / "small", tmp_path / "large"
    small.write_bytes(b"abcdef")
    large.write_bytes(bytes(range(256)) * 40)  # 10,240 bytes
    assert head_and_tail(small, 6) == (b"abcdef", 0)
    data, left_out = head_and_tail(large, 1000)
    assert left_out == 9240
    assert data == (bytes(range(256)) * 40)[:500] + \
        b"\n[audit: 9,240 bytes left out here]\n" + (bytes(range(256)) * 40)[-500:]



# --------------------------------------------------------------------------- what the run measured


def test_the_subject_is_recorded_in_both_packages(cli, tmp_path):
    model = tmp_path / "qwen3-30b-a3b-fp8"
    model.mkdir()
    (model / "config.json").write_text('{"architectures": ["Qwen3MoeForCausalLM"]}\n')
    r = cli("bench", "throughput", "--launch", "--load-format dummy --max-model-len 2048 --fake-config "
            "'{\"token_delay\": 0.002}'", "--launch-program", FAKE, "--model", model, "--arm", "base",
            "-o", tmp_path / "run", "--windows", "1", "--window-s", "0.3", "--prompt-tokens", "40", "--max-tokens", "8",
            "--model-name", "Qwen/Qwen3-30B-A3B-FP8", "--weights", "random", "--run", "h100-test",
            "--hardware", "1x NVIDIA H100 80GB HBM3", "-q")
    assert r.code == 0, r.err
    for pkg in ("run", "run.telemetry"):
        prov = json.loads((tmp_path / pkg / "manifest.json").read_text())["provenance"]
        assert prov["subject"] == {
            "model": "Qwen/Qwen3-30B-A3B-FP8", "model_config_sha256": sha256_file(model / "config.json")[0],
            "engine": "vllm", "engine_version": "0.26.0-fake",  # as the (fake) server reports it
            "hardware": "1x NVIDIA H100 80GB HBM3", "weights": "random", "run": "h100-test"}, pkg
        assert prov["model"] == "Qwen/Qwen3-30B-A3B-FP8"  # not the local directory
        assert cli("validate", tmp_path / pkg).code == 0


@pytest.mark.parametrize("launch, weights, message", [
    ("--load-format dummy", "checkpoint", "--weights checkpoint: the launch line loads random weights "
                                          "(--load-format dummy); give --weights random"),
    ("--max-model-len 2048", "random", "--weights random: the launch line has no --load-format dummy, so vLLM "
                                       "loads the checkpoint's weights; give --weights checkpoint"),
])
def test_weights_that_contradict_the_launch_line_are_refused(cli, tmp_path, launch, weights, message):
    r = cli("bench", "throughput", "--launch", launch, "--launch-program", FAKE, "--model", "m", "--arm", "x",
            "-o", tmp_path / "run", "--weights", weights, "-q")
    assert (r.code, r.out, r.err) == (2, "", f"audit: error: {message}\n")


def test_gpu_evidence_without_its_subject_is_refused_before_the_run(cli, tmp_path, monkeypatch):
    import audit.subject

    monkeypatch.setattr(audit.subject, "gpus_visible", lambda: 1)
    r = cli("bench", "throughput", "--server", "http://127.0.0.1:9", "--arm", "x", "-o", tmp_path / "run",
            "--model-name", "Qwen/Qwen3-30B-A3B-FP8", "-q")
    assert (r.code, r.out, r.err) == (2, "", "audit: error: throughput package of GPU evidence must say what it "
                                             "measured: give --model-config CONFIG.json, --weights random|checkpoint, "
                                             "--run ID\n")
    assert list(tmp_path.iterdir()) == []
