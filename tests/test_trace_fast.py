"""The reader's fast paths (the compiled pass, and msgspec batches) against the exact path (the stdlib decoder,
one event at a time).

A fast path may give up (FastPathUnsure, or a TraceError: the analysis then reads the file again by the
exact path), but where it finishes it must have collected exactly what the exact path collects, and it
must never finish where the exact path refuses the file (a key named twice, a value it does not read).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audit.trace import analyze as analyze_mod
from audit.trace import collect as collect_mod
from audit.trace import reader as reader_mod
from audit.trace.analyze import TraceOptions, analyze
from audit.trace.collect import collect, collect_fast
from audit.trace.reader import FastPathUnsure, TraceError, TraceReader
from audit.trace.scan import COMPILED
from tests.attacks import attack


@pytest.fixture(params=["compiled", "msgspec"])
def fast_path(request, monkeypatch):
    """Each test that takes it runs on both fast paths: the compiled pass, and msgspec's batches (what runs
    where the extension is not built)."""
    if request.param == "compiled":
        assert COMPILED, "the compiled pass is not built (pip install -e . builds it)"
    monkeypatch.setattr(collect_mod, "COMPILED", request.param == "compiled")
    return request.param

REAL = ("alexnet_a100_benchmark_trace.json.gz", "hta_amd_mi250_minitoy_train_rocm6_2.json.gz",
        "hta_nccl_parser_config_nccl_data.json.gz", "hta_negative_queue_length_rank0.json.gz",
        "recsys_a100_sampled_rank-0.json.gz", "vllm_tp4_h100_1000isl_10osl_32con.pt.trace.json.gz",
        "vllm_tp4_mi300x_1000isl_10osl_32con.pt.trace.json.gz", "hta_mtia_inference_rank_0.json.gz")


def _both(path: Path):
    """(fast result or the exception it raised, exact result or its TraceError)."""
    o = TraceOptions()
    marker = o.compiled()[0]
    try:
        fast = collect_fast(TraceReader(path), marker, o.marker_categories, o.ops_compiled())
    except (FastPathUnsure, TraceError) as e:
        fast = e
    try:
        exact = collect(TraceReader(path), marker, o.marker_categories, o.ops_compiled())
    except TraceError as e:
        exact = e
    return fast, exact


def _agree(fast, exact, must_finish: bool = False) -> None:
    if isinstance(exact, TraceError):
        assert isinstance(fast, (FastPathUnsure, TraceError)), f"fast path finished where the exact path said {exact}"
        return
    if must_finish:
        assert not isinstance(fast, Exception), f"fast path gave up: {fast!r}"
    if not isinstance(fast, Exception):
        assert fast == exact


@pytest.mark.slow
@pytest.mark.parametrize("chunk", [1 << 20, 4096])
def test_fast_path_collects_what_the_exact_path_does_on_every_real_trace(shared, monkeypatch, chunk, fast_path):
    monkeypatch.setattr(reader_mod, "CHUNK_CHARS", chunk)
    for name in REAL:
        fast, exact = _both(shared(f"torch_profiler_traces/{name}"))
        _agree(fast, exact, must_finish=True)


def test_analyze_takes_the_fast_path_on_real_traces(shared, monkeypatch, fast_path):
    def exact_path(*a, **k):
        raise AssertionError("fell back to the exact path")

    monkeypatch.setattr(analyze_mod, "collect", exact_path)
    r = analyze(shared("torch_profiler_traces/recsys_a100_sampled_rank-0.json.gz"))
    assert r.summary.trace.kernels > 0


def _kernel(i: int, **extra) -> dict:
    e = {"ph": "X", "cat": "kernel", "name": f"k{i % 7}", "pid": 0, "tid": 7, "ts": f"{1000 + i * 10}.125",
         "dur": "5.500", "args": {"correlation": i, "stream": 7, "device": 0}}
    e.update(extra)
    return e


def _launch(i: int) -> dict:
    return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2,
            "ts": f"{999 + i * 10}.5", "dur": 1, "args": {"correlation": i, "cbid": 211}}


def _write(path: Path, texts: list[str]) -> Path:
    path.write_text('{"schemaVersion": 1, "traceEvents": [\n' + ",\n".join(texts) + "\n]}\n")
    return path


def _trace(n: int, odd: dict[int, str]) -> list[str]:
    """`n` launch+kernel pairs as JSON text; `odd` replaces event texts by index."""
    texts = []
    for i in range(n):
        texts += [json.dumps(_launch(i)), json.dumps(_kernel(i))]
    for k, text in odd.items():
        texts[k] = text
    return texts


DUPLICATES = {
    "top-level ts": '{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5, "ts": 6, "dur": 1}',
    "an args key no one reads": '{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 5, '
                                '"args": {"Ev Idx": 1, "Ev Idx": 2}}',
    "a key whose dropped value holds colons": '{"ph": "X", "cat": "cpu_op", "name": "a::b", "pid": 1, "tid": 2, '
                                              '"ts": 5, "args": {"x": "c10d::x:y", "x": 1}}',
    "inside a nested object": '{"ph": "i", "cat": "cpu_op", "name": "n", "pid": 1, "tid": 2, "ts": 5, '
                              '"args": {"o": {"a": [1, {"b": 1, "b": 1}]}}}',
    "beside an escaped colon": '{"ph": "X", "cat": "cpu_op", "name": "a\\u003ab", "pid": 1, "tid": 2, "ts": 5, '
                               '"pid": 1}',
    "written escaped the second time": '{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5, '
                                       '"t\\u0073": 6, "dur": 1}',
    "with blank space before the colon": '{"ph" : "X", "cat" : "cpu_op", "name" : "n", "pid": 1, "tid": 2, '
                                         '"ts": 5, "ph" : "X"}',
}


def _refused_as_before(path: Path) -> None:
    fast, exact = _both(path)
    assert isinstance(exact, TraceError) and "twice" in str(exact)
    _agree(fast, exact)
    with pytest.raises(TraceError) as e:
        analyze(path)
    assert str(e.value) == str(exact)


@pytest.mark.parametrize("where", [11, 3001, 7999])
@pytest.mark.parametrize("case", sorted(DUPLICATES))
@attack("trace.scan-escaped-duplicate")
def test_a_key_named_twice_deep_in_a_large_trace_is_refused_as_before(tmp_path, monkeypatch, case, where, fast_path):
    """Issue 19's refusal holds on the fast path: the message is the exact path's, wherever the batch falls."""
    monkeypatch.setattr(reader_mod, "CHUNK_CHARS", 64 << 10)
    _refused_as_before(_write(tmp_path / "t.json", _trace(4000, {where: DUPLICATES[case]})))


ODD_BUT_FINE = {
    "braces and commas in a string": '{"ph": "X", "cat": "cpu_op", "name": "x},{\\"y\\": 1}, {", "pid": 1, '
                                     '"tid": 2, "ts": 5, "dur": 1}',
    "a nested object ending in a comma": '{"ph": "X", "cat": "cpu_op", "name": "n", "pid": 1, "tid": 2, "ts": 5, '
                                         '"args": {"o": {"a": 1}, "b": [{"c": 2}, {"d": 3}]}}',
    "an integer over 64 bits": '{"ph": "X", "cat": "cpu_op", "name": "n", "pid": 1, "tid": 2, "ts": 5, '
                               '"args": {"big": 123456789012345678901234567890}}',
    "exponent and sub-ns times": json.dumps(_kernel(5)).replace('"1050.125"', '1.050125e3').replace('"5.500"',
                                                                                               '5.5004'),
    "an explicit null": '{"ph": "X", "cat": "cpu_op", "name": null, "pid": 1, "tid": 2, "ts": 5}',
    "a lone surrogate": '{"ph": "X", "cat": "cpu_op", "name": "\\ud800", "pid": 1, "tid": 2, "ts": 5}',
    "non-ASCII text": '{"ph": "X", "cat": "cpu_op", "name": "größe::µ", "pid": 1, "tid": 2, "ts": 5}',
    "an unknown top-level key": '{"ph": "X", "cat": "cpu_op", "name": "n", "pid": 1, "tid": 2, "ts": 5, "tts": 3}',
    "a boolean time": json.dumps(_kernel(9, ts=True)),
    "a list as tid (refused by both)": '{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, '
                                       '"tid": [2], '
                                       '"ts": 5, "args": {"correlation": 3}}',
}


@pytest.mark.parametrize("case", sorted(ODD_BUT_FINE))
def test_odd_events_give_the_exact_paths_result(tmp_path, monkeypatch, case, fast_path):
    monkeypatch.setattr(reader_mod, "CHUNK_CHARS", 16 << 10)
    path = _write(tmp_path / "t.json", _trace(1500, {1001: ODD_BUT_FINE[case], 2998: ODD_BUT_FINE[case]}))
    fast, exact = _both(path)
    _agree(fast, exact)
    ref = analyze  # and end to end: the same summary as the exact path alone gives
    got = ref(path) if not isinstance(exact, TraceError) else None
    monkeypatch.setattr(analyze_mod, "collect_fast", lambda *a, **k: (_ for _ in ()).throw(FastPathUnsure("off")))
    if got is None:
        with pytest.raises(TraceError):
            analyze(path)
    else:
        assert analyze(path).summary == got.summary


def test_text_a_nested_object_cuts_keeps_the_fast_path(tmp_path, monkeypatch, fast_path):
    """A `},` inside an event's args is no event boundary: the batch is read exactly, the rest stays fast."""
    monkeypatch.setattr(reader_mod, "CHUNK_CHARS", 16 << 10)
    path = _write(tmp_path / "t.json", _trace(1500, {1001: ODD_BUT_FINE["a nested object ending in a comma"]}))
    fast, exact = _both(path)
    _agree(fast, exact, must_finish=True)


_KEYS = st.sampled_from(["ph", "cat", "name", "ts", "dur", "pid", "tid", "id", "args", "correlation", "stream",
                         "device", "x"])
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 2**64), st.sampled_from(
    ['"X"', '"f"', '"kernel"', '"cuda_runtime"', '"ac2g"', '"cpu_op"', '"ProfilerStep#1"', '"12.345"', '"a:b"',
     '"\\u003a"', '"x\\"y"', '"}, {"', '1.5e3', '-0.0', '7.0005', '"nccl:all_reduce"']))


def _obj(depth: int) -> st.SearchStrategy[str]:
    value = _SCALARS.map(lambda v: v if isinstance(v, str) else json.dumps(v))
    if depth:
        value = st.one_of(value, st.deferred(lambda: _obj(depth - 1)))
    pairs = st.lists(st.tuples(_KEYS, value), max_size=6)
    return pairs.map(lambda ps: "{" + ", ".join(f'"{k}": {v}' for k, v in ps) + "}")


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(odd=st.lists(st.tuples(st.integers(0, 399), _obj(2)), max_size=4))
def test_fast_path_never_differs_from_the_exact_path(tmp_path_factory, odd, fast_path):
    """Random events (repeated keys, nulls, escapes, colons and braces in strings, nesting) among normal ones."""
    reader_mod.CHUNK_CHARS, saved = 2048, reader_mod.CHUNK_CHARS
    try:
        path = _write(tmp_path_factory.mktemp("h") / "t.json", _trace(200, dict(odd)))
        fast, exact = _both(path)
        _agree(fast, exact)
    finally:
        reader_mod.CHUNK_CHARS = saved


def _split_always(monkeypatch, chunk: int) -> None:
    """Every trace read by two processes (where the machine splits at all), in batches of `chunk` characters."""
    import os

    from audit.trace import collect as collect_mod

    if not sys.platform.startswith("linux") or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("not Linux, or one core: never split")
    monkeypatch.setattr(collect_mod, "SPLIT_BYTES", 1)
    monkeypatch.setattr(collect_mod, "COMPILED", False)  # the split is the msgspec path's (without the extension)
    monkeypatch.setattr(reader_mod, "CHUNK_CHARS", chunk)


READER_FIGURES = ("sha256", "bytes", "text_chars", "events_read", "metadata", "gzip")
"""What a reader measures of the bytes it read: two readers of one file must agree on each."""


def _assert_split_is_exact(path: Path) -> None:
    """The split pass (a forked child reads the second half) collects what the exact path does, and its reader
    measures the same bytes."""
    o = TraceOptions()
    fast_reader, exact_reader = TraceReader(path), TraceReader(path)
    fast = collect_fast(fast_reader, o.compiled()[0], o.marker_categories, o.ops_compiled())
    exact = collect(exact_reader, o.compiled()[0], o.marker_categories, o.ops_compiled())
    assert fast_reader.split_at is not None, "the split was not taken"
    assert fast == exact
    for attr in READER_FIGURES:
        assert getattr(fast_reader, attr) == getattr(exact_reader, attr), attr


@pytest.mark.parametrize("name", ["hta_nccl_parser_config_nccl_data.json.gz", "recsys_a100_sampled_rank-0.json.gz",
                                  "vllm_tp4_h100_1000isl_10osl_32con.pt.trace.json.gz"])
@pytest.mark.slow
def test_two_processes_collect_what_one_does(shared, tmp_path, monkeypatch, name):
    """Split across a forked child (events after the middle) and merged, the pass is the exact path's, with
    the reader's hash, sizes and top-level keys."""
    import gzip

    path = tmp_path / name.removesuffix(".gz")
    path.write_bytes(gzip.open(shared(f"torch_profiler_traces/{name}")).read())
    _split_always(monkeypatch, 64 << 10)  # many batches on each side of the split
    _assert_split_is_exact(path)


@pytest.mark.parametrize("name", ["recsys_a100_sampled_rank-0.json.gz",
                                  "vllm_tp4_h100_1000isl_10osl_32con.pt.trace.json.gz"])
def test_a_gzip_trace_is_read_by_two_processes_too_and_collects_what_one_does(shared, monkeypatch, name):
    """A gzip'd trace is split where its trailer's size says (the child inflates the first half unread): the pass,
    hash and sizes are the exact path's."""
    _split_always(monkeypatch, 64 << 10)
    path = shared(f"torch_profiler_traces/{name}")
    _assert_split_is_exact(path)


@pytest.mark.parametrize("first", [10, 40_000, -10])
def test_a_gzip_trailer_that_misleads_about_the_size_changes_nothing(tmp_path, monkeypatch, first):
    """The trailer's size is only where to split: a file of two gzip members, whose trailer gives the last one's
    size alone (all but `first` characters, or 10), is read as one process reads it; a trailer damaged to a
    size past the end is refused in the standard library's words."""
    import gzip

    _split_always(monkeypatch, 16 << 10)
    text = ('{"schemaVersion": 1, "traceEvents": [\n' + ",\n".join(_trace(1500, {})) + "\n]}\n").encode()
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(text[:first], mtime=0) + gzip.compress(text[first:], mtime=0))
    fast, exact = _both(path)
    assert not isinstance(exact, Exception)
    _agree(fast, exact, must_finish=True)
    data = gzip.compress(text, mtime=0)
    path.write_bytes(data[:-4] + ((1 << 32) - 1).to_bytes(4, "little"))
    fast, exact = _both(path)
    _agree(fast, exact)
    assert isinstance(exact, TraceError) and "gzip" in str(exact)


@pytest.mark.parametrize("where", [150, 2500])
@pytest.mark.parametrize("case", ["top-level ts", "an args key no one reads"])
def test_a_key_named_twice_on_either_side_of_the_split_is_refused_as_before(tmp_path, monkeypatch, case, where):
    _split_always(monkeypatch, 16 << 10)
    _refused_as_before(_write(tmp_path / "t.json", _trace(1500, {where: DUPLICATES[case]})))


@pytest.mark.parametrize("case", ["a nested object ending in a comma", "braces and commas in a string",
                                  "a lone surrogate", "non-ASCII text", "an unknown top-level key"])
def test_odd_events_around_the_split_give_the_exact_paths_result(tmp_path, monkeypatch, case):
    _split_always(monkeypatch, 16 << 10)
    odd = {k: ODD_BUT_FINE[case] for k in (100, 1490, 1500, 1510, 1600, 2900)}
    path = _write(tmp_path / "t.json", _trace(1500, odd))
    fast, exact = _both(path)
    _agree(fast, exact)
    got = analyze(path)
    monkeypatch.setattr(analyze_mod, "collect_fast", lambda *a, **k: (_ for _ in ()).throw(FastPathUnsure("off")))
    assert analyze(path).summary == got.summary


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(odd=st.lists(st.tuples(st.integers(150, 250), _obj(2)), max_size=4))
def test_two_processes_never_differ_from_the_exact_path(tmp_path_factory, monkeypatch, odd):
    """The random events of the test above, placed around the middle where the two readers meet."""
    _split_always(monkeypatch, 2048)
    path = _write(tmp_path_factory.mktemp("h") / "t.json", _trace(200, dict(odd)))
    fast, exact = _both(path)
    _agree(fast, exact)


@attack("trace.split-swap")
def test_a_file_rewritten_between_the_two_readers_opens_is_read_again_exactly(tmp_path, monkeypatch):
    """The forked child opens the trace again: when the first bytes it reads are not the bytes this process
    read (the file replaced in between, here with a kernel renamed in the first half, same length, so both
    readers still meet at the same event), the split read gives up and the exact path reads the file once."""
    import hashlib

    from audit.trace import collect as collect_mod

    _split_always(monkeypatch, 16 << 10)
    path = _write(tmp_path / "t.json", _trace(1500, {}))
    swapped = tmp_path / "swapped.json"
    swapped.write_text(path.read_text().replace('"name": "k3"', '"name": "k8"', 1))
    assert swapped.read_bytes() != path.read_bytes() and swapped.stat().st_size == path.stat().st_size
    real = collect_mod.TraceReader
    monkeypatch.setattr(collect_mod, "TraceReader", lambda p, *a: real(swapped, *a))  # what the child opens
    o = TraceOptions()
    with pytest.raises(FastPathUnsure, match="the two readers read different bytes"):
        collect_fast(TraceReader(path), o.compiled()[0], o.marker_categories, o.ops_compiled())
    got = analyze(path)
    monkeypatch.setattr(collect_mod, "TraceReader", real)
    monkeypatch.setattr(analyze_mod, "collect_fast", lambda *a, **k: (_ for _ in ()).throw(FastPathUnsure("off")))
    exact = analyze(path)
    assert got.summary == exact.summary
    assert got.summary.source.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


# --------------------------------------------------------------------------- the fast path's inflate (ISA-L)

GZ_TRACES = ("recsys_a100_sampled_rank-0.json.gz", "hta_nccl_parser_config_nccl_data.json.gz",
             "vllm_tp4_h100_1000isl_10osl_32con.pt.trace.json.gz")


def _fast_with(path: Path, gz_module, monkeypatch):
    monkeypatch.setattr(reader_mod, "FAST_GZIP", gz_module)
    o = TraceOptions()
    r = TraceReader(path)
    return collect_fast(r, o.compiled()[0], o.marker_categories, o.ops_compiled()), r


def test_the_fast_path_inflates_with_isal_and_collects_what_zlib_gives(shared, monkeypatch):
    """ISA-L (a dependency) inflates on the fast path; with the standard library's gzip in its place (the fallback
    where isal is missing) the pass, the hash and the sizes are the same on real traces."""
    import gzip

    from isal import igzip

    assert reader_mod.FAST_GZIP is igzip
    for name in GZ_TRACES:
        path = shared(f"torch_profiler_traces/{name}")
        fast, r1 = _fast_with(path, igzip, monkeypatch)
        slow, r2 = _fast_with(path, gzip, monkeypatch)
        assert fast == slow, name
        for attr in READER_FIGURES:
            assert getattr(r1, attr) == getattr(r2, attr), (name, attr)


def _damaged(data: bytes) -> dict[str, bytes]:
    mid = len(data) // 2
    return {"cut in half": data[:mid], "cut before the trailer": data[:-4],
            "a byte flipped mid-stream": data[:mid] + bytes([data[mid] ^ 0xFF]) + data[mid + 1:],
            "a wrong CRC": data[:-8] + bytes([data[-8] ^ 1]) + data[-7:],
            "a wrong length": data[:-4] + bytes([data[-4] ^ 1]) + data[-3:],
            "junk after the stream": data + b"junk", "a second member cut short": data + data[:100]}


@pytest.mark.parametrize("case", sorted(_damaged(b"x" * 64)))
def test_a_damaged_gzip_stream_is_refused_as_the_standard_library_words_it(tmp_path, monkeypatch, case):
    """Whatever ISA-L says of a damaged stream, the fast path never finishes on it, and the refusal is the exact
    path's (the standard library's gzip) word for word."""
    import gzip

    monkeypatch.setattr(reader_mod, "CHUNK_CHARS", 64 << 10)
    text = '{"schemaVersion": 1, "traceEvents": [\n' + ",\n".join(_trace(3000, {})) + "\n]}\n"
    path = tmp_path / "t.json.gz"
    path.write_bytes(_damaged(gzip.compress(text.encode(), mtime=0))[case])
    fast, exact = _both(path)
    assert isinstance(exact, TraceError)
    assert isinstance(fast, (FastPathUnsure, TraceError)), f"fast path finished where the exact path said {exact}"
    with pytest.raises(TraceError) as e:
        analyze(path)
    assert str(e.value) == str(exact)


# Events of the categories the pass reads, with every field drawn from values of each kind it must tell apart:
# the column pass (compiled) and the Event pass (msgspec) must collect what the exact pass does, or give up.
_CATS = st.sampled_from(["kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver", "ac2g", "cpu_op",
                         "user_annotation", "python_function", "Kernel", None])
_PHASES = st.sampled_from(["X", "f", "s", "i", "I", "B", None])
_NAMES = st.sampled_from(["cudaLaunchKernel", "cudaGraphLaunch", "ProfilerStep#3", "ProfilerStep#4", "nccl:all_reduce",
                          "record_param_comms", "execute_context_1(8)_generation_1(8)", "step[DECODE bs=1]",
                          "k1", "k\u00e9", "vllm/v1/worker/gpu_worker.py(1): execute_model", None])
_TIMES = st.one_of(st.integers(-5, 10**6), st.sampled_from(["12.345", "7", "-3.5", "1.2345", "abc", "1e3", True,
                                                            1.5, 2**70, "0012.5", None]))
_IDS = st.one_of(st.integers(-2, 40), st.sampled_from([2**62, 2**70, -(2**70), 1.5, "7", True, None]))
_THREADS = st.one_of(st.integers(0, 3), st.sampled_from(["t1", None, 2**40]))


@st.composite
def _pass_event(draw) -> str:
    e: dict = {}
    for key, values in (("ph", _PHASES), ("cat", _CATS), ("name", _NAMES), ("ts", _TIMES), ("dur", _TIMES),
                        ("pid", _THREADS), ("tid", _THREADS), ("id", _IDS)):
        if draw(st.integers(0, 9)):  # most events carry the field
            e[key] = draw(values)
    if draw(st.booleans()):
        args: dict = {}
        for key, values in (("correlation", _IDS), ("stream", _IDS), ("device", _IDS),
                            ("Collective name", st.sampled_from(["allreduce", "broadcast", 3, None]))):
            if draw(st.booleans()):
                args[key] = draw(values)
        e["args"] = args
    return json.dumps(e, ensure_ascii=draw(st.booleans()))


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=st.lists(_pass_event(), min_size=1, max_size=60))
def test_every_field_kind_the_pass_reads_gives_the_exact_paths_result(tmp_path_factory, events, fast_path):
    """Kernels, copies, launches, flows and named CPU events with each field of each kind (absent, null, an integer
    in and out of range, a time as text, a float, a boolean, a string pid), after 25 normal pairs."""
    reader_mod.CHUNK_CHARS, saved = 1024, reader_mod.CHUNK_CHARS
    try:
        path = _write(tmp_path_factory.mktemp("p") / "t.json", _trace(25, {}) + events)
        fast, exact = _both(path)
        _agree(fast, exact)
    finally:
        reader_mod.CHUNK_CHARS = saved


@attack("trace.scan-odd-everywhere")
def test_a_trace_whose_every_event_the_compiled_pass_leaves_keeps_the_buffer_small(tmp_path, monkeypatch):
    """Times written with exponents (valid JSON the compiled pass does not convert): every event is read by the exact
    reader, one at a time, with the same result, and the buffer is never refilled ahead of what was read (a refill
    per odd event would grow it by a chunk each time)."""
    monkeypatch.setattr(reader_mod, "CHUNK_CHARS", 16 << 10)
    texts = [json.dumps(_kernel(i)).replace(f'"{1000 + i * 10}.125"', f"{1000 + i * 10}.125e0") for i in range(3000)]
    path = _write(tmp_path / "t.json", [json.dumps(_launch(i)) for i in range(3000)] + texts)
    longest = 0
    fill = TraceReader._fill

    def watched(self):
        nonlocal longest
        fill(self)
        longest = max(longest, len(self._buf))

    monkeypatch.setattr(TraceReader, "_fill", watched)
    reader = TraceReader(path)
    fast = collect_fast(reader, TraceOptions().compiled()[0], TraceOptions().marker_categories)
    assert fast == collect(TraceReader(path), TraceOptions().compiled()[0], TraceOptions().marker_categories)
    assert reader._exact_batches == 3000  # the kernels, one by one; the launches were scanned
    assert longest < (64 << 10) + 2 * (16 << 10)  # a refill only within 64 KiB of the buffer's end
