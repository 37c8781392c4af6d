"""Attacks on `audit trace`'s reader (issue 19): a gzip file that expands to gigabytes of blank space, numeric
fields no trace holds (Infinity, 1e999999999, 10**300, booleans, out-of-range ids), and keys named twice.
Each gets one line naming the file, the event and the field, exit 2, and nothing written.
See tests/attacks.py for the registry.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.attacks import attack
from tests.trace_builders import TraceBuilder

MB = 1_000_000


def _run(cli, path: Path, tmp_path: Path, *args: str):
    out = tmp_path / "pkg"
    r = cli("trace", "--unattributed", path, "-o", out, *args)
    assert not out.exists()
    return r


def _whitespace_trace(path: Path, blank_mb: int, gz: bool) -> Path:
    opener = gzip.open if gz else open
    with opener(path, "wb") as f:
        f.write(b'{"traceEvents": [')
        block = b" \n" * (MB // 2)
        for _ in range(blank_mb):
            f.write(block)
        f.write(b"]}")
    return path


@attack("trace.gzip-whitespace-bomb")
def test_decompressed_json_text_is_capped(cli, tmp_path):
    path = _whitespace_trace(tmp_path / "bomb.json.gz", 64, gz=True)
    assert path.stat().st_size < 200_000
    r = _run(cli, path, tmp_path, "--max-json-mb", "16")
    assert (r.code, r.out) == (2, "")
    assert r.err == (f"audit: error: {path}: more than 16,000,000 characters of JSON text after gzip decompression: "
                     f"over the limit (--max-json-mb raises it)\n")


@attack("trace.plain-whitespace-cap")
def test_plain_json_text_is_capped_too(cli, tmp_path):
    path = _whitespace_trace(tmp_path / "blank.json", 24, gz=False)
    r = _run(cli, path, tmp_path, "--max-json-mb", "16")
    assert r.err == (f"audit: error: {path}: more than 16,000,000 characters of JSON text: over the limit "
                     f"(--max-json-mb raises it)\n")


def test_default_cap_is_recorded_nowhere_but_bounds_every_read():
    from audit.trace.analyze import TraceOptions
    from audit.trace.reader import MAX_JSON_CHARS, TraceReader

    assert TraceOptions().max_json_chars == MAX_JSON_CHARS == TraceReader("x").max_json_chars == 4_000_000_000


def _kernel_trace(tmp_path: Path, field: str, raw: str, where: str = "kernel") -> Path:
    """One launch and its kernel, with `field` of the kernel (or the launch, or args) written as the raw JSON
    text `raw`."""
    b = TraceBuilder()
    b.kernel("k", 10.0, 20.0, 5.0)
    launch, kernel = b.events
    target = {"kernel": kernel, "launch": launch, "kernel.args": kernel["args"], "launch.args": launch["args"]}[where]
    target[field] = "@@RAW@@"
    path = tmp_path / "t.json"
    path.write_text(json.dumps(b.document()).replace('"@@RAW@@"', raw))
    return path


_TS = "'ts' is not a time ({}): a number of µs, 0 or more"
_DUR = "'dur' is not a duration ({}): a number of µs, 0 or more"
NUMERIC = {
    # issue 19
    "ts-string-infinity": ("ts", '"Infinity"', "kernel", "trace.numeric-ts", _TS.format("Infinity")),
    "ts-1e999999999": ("ts", "1e999999999", "kernel", "trace.numeric-ts", _TS.format("1e999999999")),
    "ts-10^300": ("ts", "1" + "0" * 300, "kernel", "trace.numeric-ts", _TS.format("an integer of 997 bits")),
    # the class (added)
    "ts-true": ("ts", "true", "kernel", "trace.numeric-class", _TS.format("true")),
    "ts-negative": ("ts", "-5", "kernel", "trace.numeric-class", _TS.format("-5")),
    "ts-string-nan": ("ts", '"NaN"', "kernel", "trace.numeric-class", _TS.format("NaN")),
    "ts-string-snan": ("ts", '"sNaN"', "kernel", "trace.numeric-class", _TS.format("sNaN")),
    "ts-1e308": ("ts", "1.5e308", "kernel", "trace.numeric-class", _TS.format("1.5e308")),
    "ts-5000-digits": ("ts", "9" * 5000 + ".5", "kernel", "trace.numeric-class", _TS.format("9" * 40 + "…")),
    "ts-4000-digit-int": ("ts", "9" * 4000, "kernel", "trace.numeric-class", _TS.format("an integer of 13288 bits")),
    "dur-string-infinity": ("dur", '"Infinity"', "kernel", "trace.numeric-class", _DUR.format("Infinity")),
    "dur-1e999999999": ("dur", "1e999999999", "kernel", "trace.numeric-class", _DUR.format("1e999999999")),
    "dur-10^30": ("dur", "1" + "0" * 30, "kernel", "trace.numeric-class", _DUR.format("1" + "0" * 30)),
    "launch-ts-1e999999999": ("ts", "1e999999999", "launch", "trace.numeric-class", _TS.format("1e999999999")),
    "launch-ts-negative": ("ts", "-1e-3", "launch", "trace.numeric-class", _TS.format("-1e-3")),
    "launch-correlation-10^30": ("correlation", "1" + "0" * 30, "launch.args", "trace.numeric-class",
                                 "args.correlation " + "1" + "0" * 30 + " is not an id from 0 to 2**62"),
    "kernel-correlation-10^30": ("correlation", "1" + "0" * 30, "kernel.args", "trace.numeric-class",
                                 "args.correlation " + "1" + "0" * 30 + " is not an id from 0 to 2**62"),
    "stream-10^30": ("stream", "1" + "0" * 30, "kernel.args", "trace.numeric-class",
                     "no stream: args.stream (or tid) must be an integer from 0 to 2**62"),
    "stream-true": ("stream", "true", "kernel.args", "trace.numeric-class",
                    "no stream: args.stream (or tid) must be an integer from 0 to 2**62"),
    "device-10^30": ("device", "1" + "0" * 30, "kernel.args", "trace.numeric-class",
                     "args.device " + "1" + "0" * 30 + " is not an id from 0 to 2**62"),
    "device-negative": ("device", "-1", "kernel.args", "trace.numeric-class",
                        "args.device -1 is not an id from 0 to 2**62"),
}


@pytest.mark.parametrize("case", [pytest.param(c, marks=attack(NUMERIC[c][3]), id=c) for c in sorted(NUMERIC)])
def test_numeric_fields_no_trace_holds_get_one_line(cli, tmp_path, case):
    field, raw, where, _, message = NUMERIC[case]
    path = _kernel_trace(tmp_path, field, raw, where)
    r = _run(cli, path, tmp_path)
    index, what = (0, "cuda_runtime 'cudaLaunchKernel'") if where.startswith("launch") else (1, "kernel 'k'")
    assert (r.code, r.out, r.err) == (2, "", f"audit: error: {path}: traceEvents[{index}] ({what}): {message}\n")


@attack("trace.numeric-class")
def test_huge_pid_and_tid_are_only_thread_names(tmp_path):
    """pid/tid name a thread (any JSON value); a huge integer there is no number to range-check."""
    from audit.trace.analyze import analyze

    b = TraceBuilder()
    b.kernel("k", 10.0, 20.0, 5.0)
    b.events[0]["pid"] = b.events[0]["tid"] = 10**30
    s = analyze(b.write(tmp_path / "t.json")).summary
    assert s.trace.kernels == 1 and s.linking.unlinked == 0


def _dup(text: str, marker: str, forged: str) -> str:
    i = text.index(marker)
    return text[:i] + forged + text[i:]


DUPLICATES = {
    # issue 19: "dur" twice in an event
    "event-dur": ('"dur": 5.0', '"dur": 500.0, ', "trace.dup-key-event", "traceEvents[1] names the key 'dur' twice"),
    # added
    "args-correlation": ('"cbid": 211', '"correlation": 7, ',
                         "trace.dup-key-class", "traceEvents[0] names the key 'correlation' twice"),
    "blank-before-colon": ('"dur": 5.0', '"dur" : 500.0, ', "trace.dup-key-class",
                           "traceEvents[1] names the key 'dur' twice"),
    "newline-before-colon": ('"dur": 5.0', '"dur"\n:500.0, ', "trace.dup-key-class",
                             "traceEvents[1] names the key 'dur' twice"),
    "metadata-value": ('"name": "NVIDIA H200"', '"name": "NVIDIA H100", ', "trace.dup-key-class",
                       "the value of 'deviceProperties' names the key 'name' twice"),
    "top-level-key": ('"traceName"', '"schemaVersion": 2, ', "trace.dup-key-class",
                      "the top-level key 'schemaVersion' appears twice"),
}


@pytest.mark.parametrize("case", [pytest.param(c, marks=attack(DUPLICATES[c][2]), id=c) for c in sorted(DUPLICATES)])
def test_a_key_named_twice_is_refused(cli, tmp_path, case):
    marker, forged, _, message = DUPLICATES[case]
    b = TraceBuilder()
    b.kernel("k", 10.0, 20.0, 5.0)
    text = json.dumps(b.document())
    path = tmp_path / "t.json"
    path.write_text(_dup(text, marker, forged))
    r = _run(cli, path, tmp_path)
    assert (r.code, r.out) == (2, "")
    assert r.err.startswith(f"audit: error: {path}: {message} at line 1 column "), r.err
    assert r.err.count("\n") == 1


def test_a_name_holding_blank_then_colon_still_reads_exactly(tmp_path):
    """A name holding `" :` (which looks like a key before its colon) reads as any other name."""
    from audit.trace.analyze import analyze

    b = TraceBuilder()
    b.marker("ProfilerStep#0", 1.0, dur=5.0)
    b.kernel("k : with a colon", 10.0, 20.0, 5.0)
    b.marker("ProfilerStep#1", 50.0, dur=5.0)
    s = analyze(b.write(tmp_path / "t.json")).summary
    assert s.steps.kernels_per_step.min == 1
