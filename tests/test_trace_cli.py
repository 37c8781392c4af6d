"""`audit trace` and `audit trace diff`: exact output, exit codes, packages, bad input."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from audit.fileio import sha256_file
from audit.models import MANIFEST_SCHEMA_VERSION
from audit.packages import open_package, package_digest, validate_package
from tests.trace_builders import TraceBuilder, decode_steps

EXPECTED = """\
trace       decode.json: 10,502 bytes, sha256 ec84e8226113dbdb…, copied into the package as trace/decode.json
            rank 0 of 2; GPU 0: NVIDIA H200
events      56: 32 kernels (8 names), 0 memcpy, 0 memset
launches    32 of 32 GPU events matched to their launching CPU event (32 by correlation id)
markers     4 matching /^ProfilerStep#\\d+$/ on thread 4242/4242: ProfilerStep#0 … ProfilerStep#3
steps       3 complete; GPU events launched before the first marker: 0, after the last (a step without an end): 8
kernels     per step: 8 (constant); by stream 7: 7 (constant), 13: 1 (constant)
step time   median 1.000 ms (marker to marker), GPU window median 1.000 ms
kernel time median 7.500 µs over 24 kernels
main stream 7 (most kernels): busy 16.60% of 3.000 ms (the selected steps' GPU windows); 6 gaps, median 417.000 µs, \
longest 756.000 µs
            gaps <1us: 0, 1-10us: 0, 10-100us: 3, 100us-1ms: 3, >=1ms: 0
cuda graphs 3 launches ran 12 kernels; kernels per launch: 4 (constant); launches per step: 1 (constant)
collectives per position in the step (median over the steps that have a call there):
  all_reduce: calls per step: 2 (constant)
    #0       101.000 µs  (3 steps, 100.000 µs to 102.000 µs)  ncclDevKernel_AllReduce_Sum_bf16_RING_LL
    #1        25.000 µs  (3 steps, 24.000 µs to 26.000 µs)  void vllm::cross_device_reduce_1stage<__nv_bfloat16, 2>
note: 3 CUDA-graph launches ran 12 kernels (each kernel counted in the step of its graph's launch)
"""


@pytest.fixture
def decode(tmp_path) -> Path:
    b = TraceBuilder()
    decode_steps(b, steps=3)
    return b.write(tmp_path / "decode.json")


def _leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


def test_trace_exact_output_and_package(cli, decode, tmp_path):
    out = tmp_path / "pkg"
    r = cli("trace", "--unattributed", decode, "-o", out)
    assert r.code == 0, r.err
    assert r.out.startswith(EXPECTED)
    assert r.out[len(EXPECTED):].startswith(f"wrote {out}: profile package, 5 files, content digest ")
    assert r.out.count("\n") == EXPECTED.count("\n") + 1 and r.err == ""
    assert validate_package(out) == []
    with open_package(out, kind="profile") as pkg:
        paths = [f.path for f in pkg.manifest.files]
        assert paths == ["collectives.jsonl", "kernels.jsonl", "steps.jsonl", "summary.json", "trace/decode.json"]
        assert (out / "trace/decode.json").read_bytes() == decode.read_bytes()
        summary = pkg.document("trace_summary.v1")
        assert summary.source.included == "trace/decode.json" and summary.steps.steps == 3
        assert [r.kernels for r in pkg.iter_rows("profile_step.v1")] == [8, 8, 8]
        assert len(list(pkg.iter_rows("profile_collective.v1"))) == 6
        assert pkg.manifest.provenance.hardware == "1x NVIDIA H200"


def test_same_trace_gives_byte_identical_content(cli, decode, tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    for name in ("a", "b"):
        assert cli("trace", "summarize", "--unattributed", decode, "-o", tmp_path / name).code == 0
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert len(files) == 6
    for f in files:
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f
    with open_package(tmp_path / "a") as a, open_package(tmp_path / "b") as b:
        assert a.digest == b.digest == package_digest(a.manifest)


def test_large_trace_is_pinned_not_copied(cli, decode, tmp_path):
    out = tmp_path / "pkg"
    r = cli("trace", "--unattributed", decode, "-o", out, "--embed-limit-mb", "0.01", "--json")
    assert r.code == 0
    summary = json.loads(r.out)
    assert summary["source"]["included"] is None and summary["source"]["bytes"] == 10502
    assert not (out / "trace").exists()
    assert validate_package(out) == []


def test_existing_output_needs_force(cli, decode, tmp_path):
    out = tmp_path / "pkg"
    out.mkdir()
    r = cli("trace", "--unattributed", decode, "-o", out)
    assert (r.code, r.out) == (2, "")
    assert r.err == f"audit: error: {out}: already exists (use --force to replace it)\n"
    assert cli("trace", "--unattributed", decode, "-o", out, "--force").code == 0
    assert validate_package(out) == []


def _truncated_gzip(tmp_path: Path, decode: Path) -> Path:
    data = gzip.compress(decode.read_bytes(), mtime=0)
    p = tmp_path / "cut.json.gz"
    p.write_bytes(data[: len(data) // 2])
    return p


BAD_INPUTS = {
    "not_json": (lambda tmp, d: _write(tmp / "x.json", "hello world"),
                 "not a JSON trace: expected a JSON object, found 'h' at line 1 column 1"),
    "truncated_gzip": (_truncated_gzip, "damaged or truncated gzip stream: Compressed file ended before the "
                                        "end-of-stream marker was reached"),
    "truncated_json": (lambda tmp, d: _write(tmp / "x.json", d.read_text()[:5000]),
                       "ends inside traceEvents[26] (truncated file?) at line 1 column 4952"),
    "no_trace_events": (lambda tmp, d: _write(tmp / "x.json", '{"schemaVersion": 1, "deviceProperties": []}'),
                        "no traceEvents: not a PyTorch profiler trace (top-level keys: deviceProperties, "
                        "schemaVersion)"),
    "bare_array": (lambda tmp, d: _write(tmp / "x.json", "[{}]"),
                   "a bare JSON array, not a profiler trace object with traceEvents at line 1 column 1"),
    "empty": (lambda tmp, d: _write(tmp / "x.json", ""), "empty file: not a JSON trace"),
    "event_not_object": (lambda tmp, d: _write(tmp / "x.json", '{"traceEvents": [{"ph": "X"}, 3]}'),
                         "traceEvents[1] is a int, not an event object at line 1 column 32"),
    "kernel_without_dur": (lambda tmp, d: _write(tmp / "x.json", json.dumps({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "args": {"stream": 7}}]})),
        "traceEvents[0] (kernel 'k'): 'dur' is not a duration (missing): a number of µs, 0 or more"),
    "kernel_without_stream": (lambda tmp, d: _write(tmp / "x.json", json.dumps({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2, "pid": 0, "tid": "stream 7"}]})),
        "traceEvents[0] (kernel 'k'): no stream: args.stream (or tid) must be an integer from 0 to 2**62"),
    "trailing_data": (lambda tmp, d: _write(tmp / "x.json", d.read_text() + "}"),
                      "trailing data after the JSON document at line 1 column 10503"),
    "nan": (lambda tmp, d: _write(tmp / "x.json", '{"traceEvents": [{"ts": NaN}]}'),
            "malformed JSON in traceEvents[0] (NaN is not valid JSON) at line 1 column 18"),
    "missing_file": (lambda tmp, d: tmp / "nope.json", "unreadable: No such file or directory"),
}


def _write(p: Path, text: str) -> Path:
    p.write_text(text)
    return p


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_one_line_exit_2_and_nothing_written(cli, decode, tmp_path, case):
    make, message = BAD_INPUTS[case]
    bad = make(tmp_path, decode)
    out = tmp_path / "pkg"
    before = _leftovers(tmp_path)
    r = cli("trace", "--unattributed", bad, "-o", out)
    assert (r.code, r.out) == (2, "")
    assert r.err == f"audit: error: {bad}: {message}\n"
    assert not out.exists() and _leftovers(tmp_path) == before


def test_bad_options_are_one_line_errors(cli, decode, tmp_path):
    r = cli("trace", "--unattributed", decode, "-o", tmp_path / "p", "--step-marker", "(")
    assert r.code == 2 and r.err.startswith("audit: error: --step-marker '(' is not a valid regular expression")
    r = cli("trace", "--unattributed", decode, "-o", tmp_path / "p", "--collective", "all_reduce")
    assert r.code == 2 and r.err == ("audit: error: --collective 'all_reduce': expected KIND=REGEX, "
                                     "e.g. all_reduce=my_ar_kernel\n")
    r = cli("trace", "--unattributed", decode)
    assert r.code == 2 and "Missing option '-o'" in r.err
    assert not (tmp_path / "p").exists()


def test_refused_steps_still_write_a_package(cli, tmp_path):
    b = TraceBuilder()
    for i in range(3):
        b.kernel("k", 100.0 + i, 200.0 + 10 * i, 5.0)
    path = b.write(tmp_path / "t.json")
    r = cli("trace", "--unattributed", path, "-o", tmp_path / "pkg")
    assert r.code == 0
    assert ("steps       per-step figures refused: no event matches the step marker /^ProfilerStep#\\d+$/ (markers "
            "are read from user_annotation, cpu_op, cpu_instant_event, operator, python_function events)\n") in r.out
    assert "kernels     per step" not in r.out
    assert validate_package(tmp_path / "pkg") == []


def test_tampered_summary_fails_validation(cli, decode, tmp_path):
    out = tmp_path / "pkg"
    assert cli("trace", "--unattributed", decode, "-o", out).code == 0
    summary = json.loads((out / "summary.json").read_text())
    summary["steps"]["kernels_per_step"]["median"] = 1529.0
    (out / "summary.json").write_text(json.dumps(summary))
    problems = [str(p) for p in validate_package(out)]
    assert any(p.startswith("summary.json: field sha256: sha256 is") and p.endswith("(the file was altered)")
               for p in problems)
    # consistent hashes do not make a malformed summary valid
    from audit.fileio import dumps_pretty, sha256_file

    summary["steps"]["kernels_per_step"]["median"] = "many"
    (out / "summary.json").write_text(json.dumps(summary))
    manifest = json.loads((out / "manifest.json").read_text())
    for f in manifest["files"]:
        if f["path"] == "summary.json":
            f["sha256"], f["bytes"] = sha256_file(out / "summary.json")
    (out / "manifest.json").write_text(dumps_pretty(manifest))
    assert [str(p) for p in validate_package(out)] == [
        "summary.json: field steps.kernels_per_step.median: Input should be a valid number (got 'many')"]


# --------------------------------------------------------------------------- diff


def _variant(tmp_path: Path, name: str, extra_kernel: bool) -> Path:
    b = TraceBuilder()
    decode_steps(b, steps=3)
    if extra_kernel:  # one more kernel in every complete step
        for k in range(3):
            t0 = 1_000_000.0 + k * 1000
            b.kernel("extra_kernel", t0 + 60, t0 + 1500 + 400, 50.0)
    return b.write(tmp_path / name)


def test_diff_same_trace_exit_0(cli, decode, tmp_path):
    assert cli("trace", "--unattributed", decode, "-o", tmp_path / "pkg").code == 0
    assert cli("bundle", tmp_path / "pkg", "-o", tmp_path / "pkg.tar.gz").code == 0
    for side in (tmp_path / "pkg", tmp_path / "pkg.tar.gz"):
        r = cli("trace", "diff", side, decode, "--top", "2")
        assert r.code == 0
        assert r.out.splitlines()[2] == "basis: per step; 0 of 8 kernel names changed count"


def test_diff_refuses_a_package_of_another_kind(cli, decode, tmp_path):
    items = tmp_path / "items.jsonl"
    items.write_text('{"item_id": "1", "reference": "A"}\n')
    assert cli("pack", tmp_path / "items", "--kind", "items", "--items", items).code == 0
    r = cli("trace", "diff", tmp_path / "items", decode)
    assert r.code == 2 and r.err == f"audit: error: {tmp_path / 'items'}: is a 'items' package, expected 'profile'\n"


def test_diff_lists_count_and_time_changes(cli, tmp_path):
    a = _variant(tmp_path, "a.json", False)
    b = _variant(tmp_path, "b.json", True)
    r = cli("trace", "diff", a, b, "--top", "2")
    assert r.code == 1
    lines = r.out.splitlines()
    assert lines[2:] == [
        "basis: per step; 1 of 9 kernel names changed count",
        "   count A    count B    Δcount        time A        time B         Δtime  name",
        "         0          1        +1      0.000 µs     50.000 µs    +50.000 µs  extra_kernel",
        "         1          1         0      5.000 µs      5.000 µs      0.000 µs  graph_kernel_0",
        "… 7 more (--top 0 for all, --format json for every row)",
    ]
    r = cli("trace", "diff", a, b, "--format", "json")
    doc = json.loads(r.out)
    assert r.code == 1 and doc["basis"] == "per_step" and doc["count_changes"] == 1 and len(doc["rows"]) == 9
    assert doc["rows"][0] == {"name": "extra_kernel", "category": "kernel", "count_a": 0.0, "count_b": 1.0,
                              "time_a_us": 0.0, "time_b_us": 50.0}


def test_diff_without_steps_compares_whole_traces(cli, tmp_path):
    a = _variant(tmp_path, "a.json", False)
    b = _variant(tmp_path, "b.json", True)
    r = cli("trace", "diff", a, b, "--step-marker", "^nothing$", "--format", "json")
    doc = json.loads(r.out)
    assert r.code == 1 and doc["basis"] == "whole_trace" and doc["rows"][0]["count_b"] == 3.0


def test_diff_bad_side_is_exit_2(cli, decode, tmp_path):
    r = cli("trace", "diff", decode, tmp_path / "missing.json")
    missing = tmp_path / "missing.json"
    assert r.code == 2 and r.err == f"audit: error: {missing}: unreadable: No such file or directory\n"


def test_help(cli):
    r = cli("trace", "--help")
    assert r.code == 0 and "audit trace TRACE.json[.gz] -o PACKAGE" in r.out and "audit trace diff A B" in r.out
    r = cli("trace", "summarize", "--help")
    assert r.code == 0 and "--step-marker REGEX" in r.out and "--step-filter REGEX" in r.out
    assert "'^execute_context_'" in r.out
    r = cli("trace", "diff", "--help")
    assert r.code == 0 and "Exit 0 when every kernel name's count is the same" in " ".join(r.out.split())


# --------------------------------------------------------------------------- what the trace measured

_SUBJECT = ("--model-name", "Qwen/Qwen3-30B-A3B-FP8", "--engine", "vllm==0.26.0", "--weights", "random",
            "--run", "h100-test")


def test_a_trace_without_its_subject_is_refused_before_it_is_read(cli, decode, tmp_path):
    out = tmp_path / "pkg"
    r = cli("trace", decode, "-o", out)
    assert (r.code, r.out, r.err) == (2, "", (
        "audit: error: profile package of GPU evidence must say what it measured: give --model-name OWNER/NAME, "
        "--model-config CONFIG.json, --engine NAME==VERSION, --weights random|checkpoint, --run ID (or "
        "--unattributed for a trace you did not make)\n"))
    assert not out.exists()
    r = cli("trace", decode, "-o", out, "--unattributed", "--run", "x")
    assert (r.code, r.err) == (2, "audit: error: --unattributed records no subject: drop --run\n")


def test_the_subject_is_recorded_and_covered_by_the_digest(cli, decode, tmp_path):
    config = tmp_path / "config.json"
    config.write_text('{"architectures": ["Qwen3MoeForCausalLM"]}\n')
    out = tmp_path / "pkg"
    r = cli("trace", decode, "-o", out, "--model-config", config, *_SUBJECT)
    assert r.code == 0, r.err
    with open_package(out) as pkg:
        m = pkg.manifest
        subject = m.provenance.subject
        digest = package_digest(m)
    assert subject is not None and m.schema_version == MANIFEST_SCHEMA_VERSION
    assert (subject.model, subject.engine, subject.engine_version, subject.weights, subject.run) == (
        "Qwen/Qwen3-30B-A3B-FP8", "vllm", "0.26.0", "random", "h100-test")
    assert subject.model_config_sha256 == sha256_file(config)[0]
    assert subject.hardware == m.provenance.hardware and m.provenance.model == "Qwen/Qwen3-30B-A3B-FP8"
    unattributed = tmp_path / "bare"
    assert cli("trace", decode, "-o", unattributed, "--unattributed").code == 0
    with open_package(unattributed) as pkg:
        assert pkg.manifest.provenance.subject is None
        assert "subject" not in json.loads((unattributed / "manifest.json").read_text())["provenance"]
        assert package_digest(pkg.manifest) != digest  # the same files, another identity


# --------------------------------------------------------------------------- the H200 script, without a GPU


@pytest.mark.slow
def test_h200_script_dry_run(tmp_path):
    """DRY=1 runs the audit half of scripts/h200_trace.sh on synthetic traces named and shaped as vLLM 0.26
    writes them (one .pt.trace.json.gz per TP rank, execute_context_ markers, decode steps as graph replays,
    sampling launched after the annotation)."""
    import os
    import subprocess

    repo = Path(__file__).resolve().parent.parent
    env = {**os.environ, "DRY": "1", "PROF": str(tmp_path / "prof")}
    out = tmp_path / "out"
    r = subprocess.run(["bash", "scripts/h200_trace.sh", str(out)], cwd=repo, env=env, capture_output=True,
                       text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    for rank in (0, 1):
        s = json.loads((out / f"profile-tp{rank}" / "summary.json").read_text())
        assert s["trace"]["rank"] == rank and s["markers"]["complete_steps"] == 10
        assert s["steps"]["steps"] == 8  # the prefill and the idle step are left out by --step-filter
        assert s["steps"]["kernels_per_step"] == {"median": 9.0, "min": 9, "max": 9, "constant": True}
        assert s["cuda_graphs"]["graph_launches"] == 8
        (ar,) = s["collectives"]
        assert [(p["position"], p["median_us"]) for p in ar["positions"]] == [(0, 35.0), (1, 12.0)]
    subject = json.loads((out / "profile-tp0" / "manifest.json").read_text())["provenance"]["subject"]
    assert {k: subject[k] for k in ("model", "engine", "engine_version", "weights")} == {
        "model": "meta-llama/Llama-3.1-8B", "engine": "vllm", "engine_version": "0.26.0", "weights": "random"}
    s = json.loads((out / "profile-tp0-default-marker" / "summary.json").read_text())
    assert s["steps"] is None and any("^execute_context_" in n for n in s["notes"])
    assert (out / "diff-tp0-tp1.txt").read_text().splitlines()[2] == \
        "basis: per step; 0 of 8 kernel names changed count"
