"""Round 4 attacks on `audit trace` (issue 28, classes 3, 4 and 8): a FIFO given as the trace, a trace rewritten
in place while it is read, and events that are ambiguous (a correlation id launched twice, a list as `pid`, `tid`
or `args`, a `ph` that is no phase string). Each is refused with one line, or read so that the package pins the
bytes that were parsed. See tests/attacks.py for the registry.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
from pathlib import Path

import pytest

from tests.attacks import attack
from tests.trace_builders import TraceBuilder


def _in_thread(fn, fifo: Path, seconds: float = 20.0):
    """Run `fn` in a thread; if it is still waiting after `seconds`, open the FIFO's other end (so it ends) and
    fail: the reader blocked on it."""
    box: dict[str, object] = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed back to the test
            box["error"] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        try:  # a writer that opens and closes at once: the blocked open returns and reads the end of the file
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
        except OSError:
            pass
        t.join(10)
        pytest.fail(f"the reader waited on the FIFO for {seconds:.0f} s")
    return box


@attack("trace.fifo")
@pytest.mark.parametrize("how", ["fifo", "link to a fifo"])
def test_a_fifo_is_refused_before_any_open_blocks(cli, tmp_path, how):
    fifo = tmp_path / "trace.json"
    os.mkfifo(fifo)
    path = fifo
    if how != "fifo":
        path = tmp_path / "link.json"
        path.symlink_to(fifo)
    out = tmp_path / "pkg"
    box = _in_thread(lambda: cli("trace", path, "-o", out, "--unattributed"), fifo)
    assert "error" not in box, box.get("error")
    r = box["value"]
    assert (r.code, r.out) == (2, "")
    assert r.err == f"audit: error: {path}: unreadable: not a regular file\n"
    assert not out.exists()


def _kernels_trace(n: int) -> TraceBuilder:
    b = TraceBuilder()
    for k in range(3):
        b.marker(f"ProfilerStep#{k}", k * 10_000.0, dur=9_000.0)
    for i in range(n):
        b.kernel(f"k{i % 7}", 1.0 + i * 20.0 / n * 1000, 5.0 + i * 20.0 / n * 1000, 0.5)
    return b


@attack("trace.rewritten-in-place")
@pytest.mark.parametrize("split", [False, True], ids=["one process", "two processes"])
def test_a_trace_rewritten_in_place_while_read_pins_what_was_parsed(tmp_path, monkeypatch, split):
    """After the reader's first chunk, the file is rewritten in place (same inode, same length: a kernel renamed
    throughout). The package must pin bytes that were parsed: the file as it now is, with the figures it
    gives, never the digest of old first bytes and new last bytes, which no file ever held."""
    import time

    from audit.fileio import HashingReader
    from audit.trace import collect as collect_mod
    from audit.trace import reader as reader_mod
    from audit.trace.analyze import analyze
    from audit.trace.reader import TraceError

    if split:
        if not sys.platform.startswith("linux") or len(os.sched_getaffinity(0)) < 2:
            pytest.skip("one core: never split")
        monkeypatch.setattr(collect_mod, "SPLIT_BYTES", 1)
    monkeypatch.setattr(reader_mod, "CHUNK_CHARS", 16 << 10)
    path = _kernels_trace(3000).write(tmp_path / "t.json")
    old = path.read_bytes()
    first, last = old.find(b'"name": "k3"'), old.rfind(b'"name": "k3"')
    assert first < 16 << 10 and last > len(old) // 2
    new = old.replace(b'"name": "k3"', b'"name": "k9"')  # before the reader's position and after it
    assert len(new) == len(old)
    real = HashingReader.readinto
    done = []

    def readinto(self, b):
        n = real(self, b)
        if not done and self.bytes >= 16 << 10:
            done.append(True)
            time.sleep(0.05)  # past the file system's timestamp tick, as a real rewriter is
            with open(path, "r+b") as f:
                f.write(new)
        return n

    monkeypatch.setattr(HashingReader, "readinto", readinto)
    try:
        got = analyze(path)
    except TraceError as e:
        assert "changed since it was hashed" in str(e)
        return
    monkeypatch.setattr(HashingReader, "readinto", real)
    assert got.summary.source.sha256 == hashlib.sha256(new).hexdigest()
    assert got.summary == analyze(path).summary


def _event_trace(tmp_path: Path, change) -> Path:
    b = TraceBuilder()
    b.marker("ProfilerStep#0", 1.0, dur=90.0)
    b.kernel("k", 10.0, 20.0, 5.0)
    b.kernel("k2", 30.0, 40.0, 5.0)
    b.marker("ProfilerStep#1", 100.0, dur=90.0)
    change(b.events)
    path = tmp_path / "t.json"
    path.write_text(json.dumps(b.document()))
    return path


def _set(index: int, key: str, value):
    def change(events):
        events[index][key] = value
    return change


def _same_correlation(events):
    launches = [e for e in events if e.get("cat") == "cuda_runtime"]
    launches[1]["args"]["correlation"] = launches[0]["args"]["correlation"]


AMBIGUOUS = {
    # events: 0 marker, 1 launch, 2 kernel, 3 launch, 4 kernel, 5 marker
    "correlation launched twice": (_same_correlation, "traceEvents[3] (cuda_runtime 'cudaLaunchKernel'): "
                                   "args.correlation 1001 is launched twice (also by traceEvents[1]): which launch "
                                   "a GPU event belongs to is ambiguous"),
    "list as pid of a kernel": (_set(2, "pid", [0, 1]), "traceEvents[2] (kernel 'k'): 'pid' is a list, not an "
                                "integer or string"),
    "list as pid of a launch": (_set(1, "pid", [1, 2]), "traceEvents[1] (cuda_runtime 'cudaLaunchKernel'): 'pid' "
                                "is a list, not an integer or string"),
    "object as tid of a marker": (_set(0, "tid", {"a": 1}), "traceEvents[0] (user_annotation 'ProfilerStep#0'): "
                                  "'tid' is a dict, not an integer or string"),
    "true as pid of a kernel": (_set(2, "pid", True), "traceEvents[2] (kernel 'k'): 'pid' is a bool, not an "
                                "integer or string"),
    "list as args of a kernel": (_set(2, "args", [{"stream": 7}]), "traceEvents[2] (kernel 'k'): 'args' is a "
                                 "list, not an object"),
    "list as args of a launch": (_set(1, "args", [1001]), "traceEvents[1] (cuda_runtime 'cudaLaunchKernel'): "
                                 "'args' is a list, not an object"),
    "ph 7 on a kernel": (_set(2, "ph", 7), "traceEvents[2] (kernel 'k'): 'ph' is 7, not a phase string"),
    "ph 7 on a launch": (_set(1, "ph", 7), "traceEvents[1] (cuda_runtime 'cudaLaunchKernel'): 'ph' is 7, not a "
                         "phase string"),
    "ph 7 on a marker": (_set(5, "ph", 7), "traceEvents[5] (user_annotation 'ProfilerStep#1'): 'ph' is 7, not a "
                         "phase string"),
}


@attack("trace.ambiguous-events")
@pytest.mark.parametrize("case", sorted(AMBIGUOUS))
def test_ambiguous_events_are_refused_naming_the_event(cli, tmp_path, case, monkeypatch):
    change, message = AMBIGUOUS[case]
    path = _event_trace(tmp_path, change)
    out = tmp_path / "pkg"
    r = cli("trace", path, "-o", out, "--unattributed")
    assert (r.code, r.out, r.err) == (2, "", f"audit: error: {path}: {message}\n")
    assert not out.exists()


@attack("trace.ambiguous-events")
def test_the_unchanged_trace_reads(tmp_path):
    from audit.trace.analyze import analyze

    s = analyze(_event_trace(tmp_path, lambda events: None)).summary
    assert s.steps is not None and s.steps.kernels_per_step.min == 2
