"""One pass over a trace: the compact arrays that the figures are computed from.

`collect` reads event by event through the exact reader; `collect_fast` reads decoded batches and gives
up (FastPathUnsure) on anything unusual, so the exact pass decides. Both fill one `_Collected`. Where the compiled
pass is built (audit.trace.scan.COMPILED), `collect_fast` reads its `Columns` in this process alone
(`_ColumnPass`: the fast pass's tests on whole columns); otherwise msgspec's batches, as below.

A large trace (by its JSON text's size: the file's, or a gzip file's trailer's) is read by two processes
(`SPLIT_BYTES`): a forked child cuts the text into batches exactly as this process does, skips those before
the middle undecoded, collects the rest and sends its `_Collected` back (pickled, through a pipe); this
process collects the batches before the middle and adds the child's, renumbering its names and threads, as
one pass over both halves gives. The split holds only where both readers switched at the same offset and no
batch before it needed the exact reader (whose cuts may differ); otherwise this process reads on alone, or
(the child gave up) the exact pass decides.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import signal
import sys
from array import array
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from audit.fileio import open_regular
from audit.trace.reader import MAX_NS, Event, FastPathUnsure, TraceError, TraceReader, to_id, to_ns
from audit.trace.scan import (
    CAT,
    COLLECTIVE,
    COMPILED,
    CORR,
    CORR_TAG,
    DEVICE,
    DEVICE_TAG,
    DUR,
    DUR_TAG,
    ID,
    ID_TAG,
    NAME,
    PH,
    PH_F,
    PH_LI,
    PH_UI,
    PH_X,
    PID,
    PID_TAG,
    STREAM,
    STREAM_TAG,
    T_INT,
    T_NONE,
    T_NULL,
    THREAD_KEY,
    TID,
    TID_TAG,
    TS,
    TS_TAG,
    Columns,
)

VLLM_STEP_MARKER = r"^execute_context_"
"""vLLM's per-step annotation (`execute_context_N(T)_generation_M(T)`, gpu_worker.annotate_profile)."""

SGLANG_STEP_MARKER = r"^step\["
"""SGLang's per-forward annotation (`step[EXTEND bs=15 toks=15360]`, `step[DECODE bs=…]`: one per scheduler
step), as its profiler traces hold it (a user_annotation)."""

VLLM_WORKER_STEP_MARKER = r"gpu_worker\.py\(\d+\): execute_model$"
"""Older vLLM V1 traces taken with Python stacks: each engine step is a `python_function` event
`vllm/v1/worker/gpu_worker.py(N): execute_model` (the model runner's own execute_model nests in it)."""

MARKER_CATEGORIES = ("user_annotation", "cpu_op", "cpu_instant_event", "operator", "python_function")
"""CPU event categories that may hold step markers (GPU-side copies of annotations never do)."""

MARKER_CATEGORIES_V1 = ("user_annotation", "cpu_op", "cpu_instant_event", "operator")
"""The categories of analysis 1 (packages written before python_function markers were read)."""

_OP_PREFIXES = ("nccl:", "c10d::", "vllm::", "record_param_comms")

KERNEL, MEMCPY, MEMSET = 0, 1, 2

CATEGORY_NAMES = ("kernel", "memcpy", "memset")

_GPU_CATEGORIES = {"kernel": KERNEL, "gpu_memcpy": MEMCPY, "memcpy": MEMCPY, "gpu_memset": MEMSET, "memset": MEMSET}

_LAUNCH_CATEGORIES = {"cuda_runtime", "cuda_driver", "runtime", "driver"}


_MISSING_CORRELATION = -1


class Marker(NamedTuple):
    """A step marker event (fields in sort order: by start, then file order)."""

    start: int
    """ns."""
    event: int
    """Its index in traceEvents."""
    name: str
    thread: int
    """Index into `_Collected.threads`."""
    end: int | None
    """start + dur in ns; None for an instant event."""


class CommOp(NamedTuple):
    """A communication op (nccl:*, c10d::*, ...) on the CPU: its span and the index of its kind."""

    start: int
    end: int
    kind: int


@dataclass
class _Collected:
    """Compact arrays of what one pass over the trace found."""

    names: list[str] = field(default_factory=list)
    name_ids: dict[str, int] = field(default_factory=dict)
    # GPU activity, one entry per event
    g_name: array = field(default_factory=lambda: array("q"))
    g_cat: array = field(default_factory=lambda: array("b"))
    g_ts: array = field(default_factory=lambda: array("q"))
    g_dur: array = field(default_factory=lambda: array("q"))
    g_dev: array = field(default_factory=lambda: array("q"))
    g_stream: array = field(default_factory=lambda: array("q"))
    g_corr: array = field(default_factory=lambda: array("q"))
    g_thread: array = field(default_factory=lambda: array("q"))
    # launches: correlation id -> start (ns), and the thread that launched; graph launches by correlation id
    launches: dict[int, int] = field(default_factory=dict)
    launch_threads: dict[int, int] = field(default_factory=dict)
    graph_launches: set[int] = field(default_factory=set)
    markers: list[Marker] = field(default_factory=list)
    # communication ops by thread id
    comm_ops: dict[int, list[CommOp]] = field(default_factory=dict)
    # ac2g flow ends: thread id -> ts ns -> flow id (by thread: merged halves renumber threads cheaply)
    flow_ends: dict[int, dict[int, int]] = field(default_factory=dict)
    threads: dict[tuple[Any, Any], int] = field(default_factory=dict)
    categories: Counter[str] = field(default_factory=Counter)
    vllm_annotations: int = 0
    vllm_worker_steps: int = 0
    vllm_functions: int = 0
    sglang_steps: int = 0
    events: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)

    def add_gpu(self, name: str, cat: int, ts: int, dur: int, dev: int, stream: int, corr: int | None,
                thread: int) -> None:
        """Append one GPU event (its name numbered in order of first appearance)."""
        self.g_name.append(self.name_id(name))
        self.g_cat.append(cat)
        self.g_ts.append(ts)
        self.g_dur.append(dur)
        self.g_dev.append(dev)
        self.g_stream.append(stream)
        self.g_corr.append(corr if corr is not None else _MISSING_CORRELATION)
        self.g_thread.append(thread)

    def name_id(self, name: str) -> int:
        """The index of a GPU event's name in `names`, numbered in order of first appearance."""
        nid = self.name_ids.get(name)
        if nid is None:
            nid = self.name_ids[name] = len(self.names)
            self.names.append(name)
        return nid

    def thread_id(self, pid: Any, tid: Any) -> int:
        """The index of the thread (pid, tid), numbered in order of first appearance; BadThread where either is
        neither an integer nor a string (a list, an object, a bool: which thread it names is ambiguous)."""
        key = (pid, tid)
        try:
            t = self.threads.get(key)
        except TypeError:  # a list or object
            t = None
        if t is None:
            for field_name, v in (("pid", pid), ("tid", tid)):
                if v is not None and type(v) is not int and type(v) is not str:
                    raise BadThread(f"'{field_name}' is a {type(v).__name__}, not an integer or string")
            t = self.threads[key] = len(self.threads)
        return t


class BadThread(FastPathUnsure):
    """A pid or tid that is no thread id (the exact pass names the event)."""


_NAME_CACHE, _NAME_CACHE_CHARS = 100_000, 256
"""Names (of at most 256 characters) whose marker/op tests the fast pass remembers per category: at most
about 25 MB however many distinct names a trace holds."""
_VLLM_WORKER = re.compile(VLLM_WORKER_STEP_MARKER)


def _bad(reader: TraceReader, index: int, event: dict[str, Any], what: str) -> TraceError:
    name = event.get("name")
    shown = f" {str(name)[:60]!r}" if isinstance(name, str) else ""
    return TraceError(f"traceEvents[{index}] ({event.get('cat')}{shown}): {what}", path=reader.label)


def _field(e: dict[str, Any], key: str) -> str:
    """A numeric field's value as the error shows it (cut short)."""
    if key not in e:
        return "missing"
    v = e[key]
    text = v if type(v) is str else json.dumps(v) if type(v) is not int or v.bit_length() < 200 else \
        f"an integer of {v.bit_length()} bits"
    return text if len(text) <= 40 else text[:40] + "…"


GPU_EVENT, LAUNCH, NAMED, FLOW, OTHER = 1, 2, 3, 4, 0
"""What a category's events are to the pass (`_Kind.branch`): GPU activity, launches, CPU events whose names
count (markers, communication ops), ac2g flows, nothing."""


class _Kind:
    """What the events of one category are to the pass, worked out once per category."""

    __slots__ = ("label", "gpu", "branch", "marker", "op", "python_function", "events", "names")

    def __init__(self, cat: Any, marker_cats: set[str], op_cats: set[str]):
        self.label = cat if isinstance(cat, str) else "(none)"
        low = self.label.lower()
        self.gpu: int | None = _GPU_CATEGORIES.get(low)
        """KERNEL, MEMCPY or MEMSET; None: no GPU activity."""
        self.marker = low in marker_cats
        self.op = low in op_cats
        self.branch = GPU_EVENT if self.gpu is not None else LAUNCH if low in _LAUNCH_CATEGORIES else \
            NAMED if self.marker or self.op else FLOW if self.label == "ac2g" else OTHER
        self.python_function = low == "python_function"
        self.events = 0
        self.names: dict[str, int] = {}
        """The fast pass's flags by name (`_FastPass.name_flags`)."""


def _phase(reader: TraceReader, index: int, e: dict[str, Any]) -> Any:
    """The event's `ph` where the pass reads it: absent, or a string (7 or a list is refused, never taken for
    "not X")."""
    ph = e.get("ph")
    if ph is not None and type(ph) is not str:
        raise _bad(reader, index, e, f"'ph' is {_field(e, 'ph')}, not a phase string")
    return ph


def _args(reader: TraceReader, index: int, e: dict[str, Any]) -> dict[str, Any]:
    """The event's `args` where the pass reads them: absent ({}) or an object (a list is refused)."""
    args = e.get("args")
    if args is None:
        return {}
    if type(args) is not dict:
        raise _bad(reader, index, e, f"'args' is a {type(args).__name__}, not an object")
    return args


def _exact_gpu_event(c: _Collected, reader: TraceReader, index: int, e: dict[str, Any], gpu: int) -> None:
    """A kernel, copy or memset event (ph X) of the exact pass; one it cannot place is refused."""
    name = e.get("name")
    ts = to_ns(e.get("ts"))
    dur = to_ns(e.get("dur"))
    if type(name) is not str:
        raise _bad(reader, index, e, "no 'name' string")
    if ts is None or ts < 0:
        raise _bad(reader, index, e, f"'ts' is not a time ({_field(e, 'ts')}): a number of µs, "
                                     f"0 or more")
    if dur is None or dur < 0:
        raise _bad(reader, index, e, f"'dur' is not a duration ({_field(e, 'dur')}): a number of µs, "
                                     f"0 or more")
    args = _args(reader, index, e)
    thread = c.thread_id(e.get("pid"), e.get("tid"))
    stream = to_id(args.get("stream", e.get("tid")))
    if stream is None:
        raise _bad(reader, index, e, "no stream: args.stream (or tid) must be an integer from 0 to 2**62")
    dev = args.get("device")
    dev = (to_id(e.get("pid")) or 0) if dev is None else to_id(dev)
    if dev is None:
        raise _bad(reader, index, e, f"args.device {_field(args, 'device')} is not an id from 0 to 2**62")
    corr = args.get("correlation")
    if type(corr) is int and corr >= MAX_NS:  # negative: no correlation, as before
        raise _bad(reader, index, e, f"args.correlation {_field(args, 'correlation')} is not an id from 0 "
                                     f"to 2**62")
    c.add_gpu(name, gpu, ts, dur, dev, stream, to_id(corr), thread)


def collect(reader: TraceReader, marker: re.Pattern[str], marker_categories: Iterable[str] = MARKER_CATEGORIES,
            ops: list[tuple[str, re.Pattern[str]]] | None = None) -> _Collected:
    """One streaming pass over the trace. `ops`: communication-op patterns by kind (none: not collected).

    What the pass reads must be unambiguous: a correlation id launched twice, a pid or tid that is neither an
    integer nor a string, `args` that are no object, or a `ph` that is no string is refused, naming the event."""
    c = _Collected()
    categories = c.categories
    marker_cats = {m.lower() for m in marker_categories}
    op_cats = {"cpu_op", "user_annotation"} if ops else set()
    kind_of: dict[Any, _Kind] = {}
    kinds: list[_Kind] = []
    launched_by: dict[int, int] = {}
    for index, e in reader.events():
        cat = e.get("cat")
        kind = kind_of.get(cat) if type(cat) is str or cat is None else None
        if kind is None:
            kind = _Kind(cat, marker_cats, op_cats)
            kinds.append(kind)
            if type(cat) is str or cat is None:
                kind_of[cat] = kind
        kind.events += 1
        if kind.branch == OTHER:
            continue
        try:
            _exact_event(c, reader, index, e, kind, marker, ops, launched_by)
        except BadThread as err:
            raise _bad(reader, index, e, str(err)) from None
    for kind in kinds:
        categories[kind.label] += kind.events
    c.events = reader.events_read
    c.metadata = reader.metadata
    return c


def _exact_event(c: _Collected, reader: TraceReader, index: int, e: dict[str, Any], kind: _Kind,
                 marker: re.Pattern[str], ops: list[tuple[str, re.Pattern[str]]] | None,
                 launched_by: dict[int, int]) -> None:
    """One event of a category that counts, in the exact pass."""
    thread_id = c.thread_id
    if kind.gpu is not None:
        if _phase(reader, index, e) == "X":
            _exact_gpu_event(c, reader, index, e, kind.gpu)
    elif kind.branch == LAUNCH:
        ph = _phase(reader, index, e)
        corr = _args(reader, index, e).get("correlation")
        if type(corr) is not int or corr < 0 or ph != "X":
            return
        if corr >= MAX_NS:
            raise _bad(reader, index, e, f"args.correlation {_field(e['args'], 'correlation')} is not an id "
                                         f"from 0 to 2**62")
        ts = to_ns(e.get("ts"))
        if ts is None or ts < 0:
            raise _bad(reader, index, e, f"'ts' is not a time ({_field(e, 'ts')}): a number of µs, "
                                         f"0 or more")
        if corr in launched_by:
            raise _bad(reader, index, e, f"args.correlation {corr} is launched twice (also by "
                                         f"traceEvents[{launched_by[corr]}]): which launch a GPU event belongs "
                                         f"to is ambiguous")
        launched_by[corr] = index
        c.launches[corr] = ts
        c.launch_threads[corr] = thread_id(e.get("pid"), e.get("tid"))
        name = e.get("name")
        if type(name) is str and "GraphLaunch" in name:
            c.graph_launches.add(corr)
    elif kind.branch == NAMED:
        name = e.get("name")
        if type(name) is not str:
            return
        if kind.python_function:
            if "vllm" in name:
                c.vllm_functions += 1
                if name.endswith("execute_model") and _VLLM_WORKER.search(name):
                    c.vllm_worker_steps += 1
        elif name.startswith("execute_context_"):
            c.vllm_annotations += 1
        elif name.startswith("step["):
            c.sglang_steps += 1
        is_op = kind.op and name.startswith(_OP_PREFIXES)
        is_marker = kind.marker and bool(marker.search(name))
        if not (is_op or is_marker):
            return
        ph = _phase(reader, index, e)
        if is_op and ph == "X":
            op = name
            if name == "record_param_comms":
                args = e.get("args")
                cn = args.get("Collective name") if type(args) is dict else None
                op = f"record_param_comms:{cn}" if type(cn) is str else name
            ck = next((i for i, (_, r) in enumerate(ops or ()) if r.fullmatch(op)), -1)
            ts, dur = to_ns(e.get("ts")), to_ns(e.get("dur"))
            if ck >= 0 and ts is not None and dur is not None and dur >= 0:
                c.comm_ops.setdefault(thread_id(e.get("pid"), e.get("tid")), []).append(CommOp(ts, ts + dur, ck))
        if is_marker and ph in ("X", "i", "I"):
            ts = to_ns(e.get("ts"))
            if ts is None:
                raise _bad(reader, index, e, f"step marker whose 'ts' is not a time ({_field(e, 'ts')})")
            dur = to_ns(e.get("dur")) if ph == "X" else None
            if dur is not None and dur < 0:
                raise _bad(reader, index, e, f"step marker with a negative 'dur' ({_field(e, 'dur')})")
            c.markers.append(Marker(ts, index, name, thread_id(e.get("pid"), e.get("tid")),
                                    ts + dur if dur is not None else None))
    elif kind.branch == FLOW:
        ph = _phase(reader, index, e)
        if ph == "f":
            fid, ts = to_id(e.get("id")), to_ns(e.get("ts"))
            if fid is not None and ts is not None:
                c.flow_ends.setdefault(thread_id(e.get("pid"), e.get("tid")), {})[ts] = fid


SPLIT_BYTES = 64 << 20
"""Traces of at least this many bytes of JSON text (a gzip'd one's by its trailer; the child inflates the
first half too, unread) are read by two processes where the machine has two cores or more: a forked child reads
the second half of the events array (`TraceReader.batches(start_at=)`) while this process reads the first
(`stop_at=`); the child's compact arrays are merged in file order."""


def collect_fast(reader: TraceReader, marker: re.Pattern[str], marker_categories: Iterable[str] = MARKER_CATEGORIES,
                 ops: list[tuple[str, re.Pattern[str]]] | None = None) -> _Collected:
    """`collect` over the reader's fast path (`TraceReader.batches`): the same pass, on `Event` structs.

    Where `collect` would refuse an event this raises FastPathUnsure instead, and the caller reads the file
    again with `collect`, which names the problem exactly as before."""
    pass_ = _FastPass(marker, marker_categories, ops)
    if COMPILED:  # the compiled pass: in this process alone (measured: faster on one core than two readers)
        pass_.run(reader.columns())
        return pass_.done(reader)
    half = _split_point(reader)
    if half is not None:
        return _collect_split(reader, pass_, half)
    pass_.run(reader.batches())
    return pass_.done(reader)


def _split_point(reader: TraceReader) -> int | None:
    """Where the second process starts reading (a character offset), or None: read by this process alone."""
    # Linux only: fork there copies nothing up front and is what this was measured with
    if not sys.platform.startswith("linux") or len(os.sched_getaffinity(0)) < 2:
        return None
    try:  # through the one open-regular-file gate: a FIFO (or a link to one) is refused, never waited on
        f, size = open_regular(reader.path, follow_links=True)
        with f:
            if f.read(2) == b"\x1f\x8b" and size >= 20:
                # gzip's trailer says the text's size (mod 2**32): a guess only, for where to split (a wrong one
                # splits elsewhere or past the end, and then this process reads every event)
                f.seek(size - 4)
                size = int.from_bytes(f.read(4), "little")
    except OSError:
        return None
    # the child also reads (without decoding) the first half and hashes the whole file: give it a bit less
    return int(size * 0.53) if size >= SPLIT_BYTES else None


def _collect_split(reader: TraceReader, pass_: _FastPass, half: int) -> _Collected:
    """Read the events before `half` here and those after it in a forked child; merged as one pass gives."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the caller
        code = 1
        try:
            os.close(rfd)
            child = TraceReader(reader.path, reader.max_json_chars)
            child.prefix_marks = {}
            result: tuple[Any, ...] | None
            try:
                pass_.run(child.batches(start_at=half))
                result = (child.split_at, pass_.done(child), child.sha256, child.bytes, child.text_chars,
                          child.prefix_marks, child.opened)
            except (FastPathUnsure, TraceError):
                result = None
            with os.fdopen(wfd, "wb") as out:
                pickle.dump(result, out, protocol=pickle.HIGHEST_PROTOCOL)
            code = 0
        finally:
            os._exit(code)
    os.close(wfd)
    reaped = False
    try:
        with os.fdopen(rfd, "rb") as got:
            pass_.run(reader.batches(stop_at=half))
            first = pass_.done(reader)
            if reader.split_at is None:  # this process read every event (the split was not safe to take)
                return first
            try:
                result = pickle.load(got)
            except (EOFError, pickle.UnpicklingError):  # the child died before it said anything
                result = None
        os.waitpid(pid, 0)
        reaped = True
    finally:
        if not reaped:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    if result is None or result[0] != reader.split_at:
        raise FastPathUnsure("the second half")
    # The child opened the file again: its digest names what both read only if the bytes this process read
    # are the child's first bytes too (a file replaced or rewritten between the two opens is re-read exactly).
    read, digest = reader.prefix
    if result[5].get(read) != digest or result[6] != reader.opened:
        raise FastPathUnsure("the two readers read different bytes")
    reader.check_unchanged()  # not rewritten in place while the child read on (its own check ends earlier)
    _, second, reader.sha256, reader.bytes, reader.text_chars, _, _ = result
    del result
    reader.metadata = second.metadata
    reader.events_read += second.events
    return _merged(first, second)


def _merged(c: _Collected, later: _Collected) -> _Collected:
    """`later` (the events after `c`'s, read apart) added to `c` as one pass over both would have."""
    offset = c.events
    name_of = [c.name_id(name) for name in later.names]
    thread_of = [c.thread_id(*key) for key in later.threads]
    same_threads = thread_of == list(range(len(thread_of)))  # the usual case: no renumbering
    c.g_name.extend(array("q", [name_of[i] for i in later.g_name]))
    c.g_thread.extend(later.g_thread if same_threads else array("q", [thread_of[i] for i in later.g_thread]))
    for part in ("g_cat", "g_ts", "g_dur", "g_dev", "g_stream", "g_corr"):
        getattr(c, part).extend(getattr(later, part))
    # each part of `later` is dropped once merged: the peak holds one copy of it, not two
    launches = len(c.launches) + len(later.launches)
    c.launches.update(later.launches)
    later.launches = {}
    if len(c.launches) != launches:  # a correlation id launched in both halves: the exact pass names it
        raise FastPathUnsure("a correlation id launched twice")
    c.graph_launches |= later.graph_launches
    c.markers.extend(m._replace(event=m.event + offset, thread=thread_of[m.thread]) for m in later.markers)
    for t, ops in later.comm_ops.items():
        c.comm_ops.setdefault(thread_of[t], []).extend(ops)
    lt = later.launch_threads
    c.launch_threads.update(lt if same_threads else zip(lt, map(thread_of.__getitem__, lt.values()), strict=True))
    later.launch_threads = {}
    for t, by_ts in later.flow_ends.items():
        c.flow_ends.setdefault(thread_of[t], {}).update(by_ts)
    later.flow_ends = {}
    c.categories.update(later.categories)
    c.vllm_annotations += later.vllm_annotations
    c.vllm_worker_steps += later.vllm_worker_steps
    c.vllm_functions += later.vllm_functions
    c.sglang_steps += later.sglang_steps
    c.events += later.events
    c.metadata = later.metadata
    return c


def _ns(v: Any) -> int | None:
    """`to_ns`, with the times Kineto writes (\"1695835542514261.123\" µs) converted inline."""
    if type(v) is str and 4 < len(v) <= 19 and v[-4] == ".":
        d = v[:-4] + v[-3:]
        if d.isdigit() and d.isascii():
            return int(d)
    return to_ns(v)


class _FastPass:
    """The pass of `collect` over decoded batches; `run` may be called on the batches of two readers in turn
    (the second time in a forked child), each run starting a fresh `_Collected`."""

    def __init__(self, marker: re.Pattern[str], marker_categories: Iterable[str],
                 ops: list[tuple[str, re.Pattern[str]]] | None):
        self.marker_search = marker.search
        self.marker_cats = {m.lower() for m in marker_categories}
        self.op_cats = {"cpu_op", "user_annotation"} if ops else set()
        self.ops = ops or []
        self.c = _Collected()
        self.kinds: list[_Kind] = []

    def kind(self, cat: Any) -> _Kind:
        kind = _Kind(cat, self.marker_cats, self.op_cats)
        self.kinds.append(kind)
        return kind

    def done(self, reader: TraceReader) -> _Collected:
        """The collected arrays (the pass starts afresh for the next run)."""
        c, self.c = self.c, _Collected()
        for kind in self.kinds:
            c.categories[kind.label] += kind.events
        self.kinds = []
        c.events = reader.events_read
        c.metadata = reader.metadata
        return c

    def run(self, batches: Iterable[Columns | list[Event]]) -> None:
        """Collect from the batches in file order: `Columns` of the compiled pass, or lists of `Event`."""
        kind_of: dict[Any, _Kind] = {}
        index = -1
        columns = _ColumnPass(self, kind_of)
        for batch in batches:
            if type(batch) is list:
                index = self.events(batch, index, kind_of)
            else:
                index = columns.run(batch, index)  # type: ignore[arg-type]  # Columns

    def events(self, batch: list[Event], index: int, kind_of: dict[Any, _Kind]) -> int:
        """Collect from one batch of `Event`, in the hot loop: one branch per category, names' tests looked up
        once; the index of its last event."""
        c = self.c
        threads, thread_id = c.threads, c.thread_id
        launches, launch_threads, graph_launches, flow_ends = c.launches, c.launch_threads, c.graph_launches, \
            c.flow_ends
        new_kind, gpu_event, named = self.kind, self.gpu_event, self.named
        for e in batch:
            index += 1
            cat = e.cat
            kind = kind_of.get(cat) if type(cat) is str or cat is None else None
            if kind is None:
                kind = new_kind(cat)
                if type(cat) is str or cat is None:
                    kind_of[cat] = kind
            kind.events += 1
            code = kind.branch  # literals below: OTHER 0, FLOW 4, LAUNCH 2, GPU_EVENT 1, NAMED 3
            if code == 0:
                continue
            ph = e.ph
            if code == 4:
                if ph != "f":
                    if ph is not None and type(ph) is not str:
                        raise FastPathUnsure(index)
                    continue
                ts = e.ts
                ts = int(d) if type(ts) is str and 4 < len(ts) <= 19 and ts[-4] == "." and \
                    (d := ts[:-4] + ts[-3:]).isdigit() and d.isascii() else to_ns(ts)
                fid = e.id
                if type(fid) is int and 0 <= fid < MAX_NS and ts is not None:
                    key = (e.pid, e.tid)
                    try:
                        t = threads[key]
                    except (KeyError, TypeError):
                        t = thread_id(*key)
                    by_ts = flow_ends.get(t)
                    if by_ts is None:
                        by_ts = flow_ends[t] = {}
                    by_ts[ts] = fid
            elif code == 2:
                args = e.args
                if type(args) is dict:
                    corr = args.get("correlation")
                elif args is None:
                    corr = None
                else:
                    raise FastPathUnsure(index)
                if type(corr) is not int or corr < 0 or ph != "X":
                    if ph is not None and type(ph) is not str:
                        raise FastPathUnsure(index)
                    continue
                ts = e.ts
                ts = int(d) if type(ts) is str and 4 < len(ts) <= 19 and ts[-4] == "." and \
                    (d := ts[:-4] + ts[-3:]).isdigit() and d.isascii() else to_ns(ts)
                if corr >= MAX_NS or ts is None or ts < 0 or corr in launches:
                    raise FastPathUnsure(index)
                launches[corr] = ts
                key = (e.pid, e.tid)
                try:
                    launch_threads[corr] = threads[key]
                except (KeyError, TypeError):
                    launch_threads[corr] = thread_id(*key)
                name = e.name
                if type(name) is str and "GraphLaunch" in name:
                    graph_launches.add(corr)
            elif code == 1:
                if ph == "X":
                    gpu_event(e, kind.gpu, index)  # type: ignore[arg-type]  # set on this branch
                elif ph is not None and type(ph) is not str:
                    raise FastPathUnsure(index)
            else:
                name = e.name
                if type(name) is str:
                    # names repeat (aten::mm, ...): what each says, per category, is looked up once
                    flags = kind.names.get(name)
                    if flags is None:
                        flags = self.name_flags(kind, name)
                    if flags:
                        named(e, name, ph, flags, index)
        return index

    def gpu_event(self, e: Event, gpu: int, index: int) -> None:
        c = self.c
        name = e.name
        ts, dur = _ns(e.ts), _ns(e.dur)
        if type(name) is not str or ts is None or ts < 0 or dur is None or dur < 0:
            raise FastPathUnsure(index)
        args = e.args
        if type(args) is not dict:
            if args is not None:
                raise FastPathUnsure(index)
            args = {}
        thread = c.thread_id(e.pid, e.tid)
        stream = to_id(args.get("stream", e.tid))
        dev = args.get("device")
        dev = (to_id(e.pid) or 0) if dev is None else to_id(dev)
        corr = args.get("correlation")
        if stream is None or dev is None or (type(corr) is int and corr >= MAX_NS):
            raise FastPathUnsure(index)
        c.add_gpu(name, gpu, ts, dur, dev, stream, to_id(corr), thread)

    def name_flags(self, kind: _Kind, name: str) -> int:
        """What a CPU event's name says in its category: 1 vLLM annotation, 2 vLLM function, 4 vLLM worker
        step, 8 communication op, 16 step marker, 32 SGLang step annotation (remembered for names that repeat)."""
        flags = 0
        if kind.python_function:
            if "vllm" in name:
                flags |= 2
                if name.endswith("execute_model") and _VLLM_WORKER.search(name):
                    flags |= 4
        elif name.startswith("execute_context_"):
            flags |= 1
        elif name.startswith("step["):
            flags |= 32
        if kind.op and name.startswith(_OP_PREFIXES):
            flags |= 8
        if kind.marker and self.marker_search(name):
            flags |= 16
        seen = kind.names
        if len(seen) < _NAME_CACHE and len(name) <= _NAME_CACHE_CHARS:
            seen[name] = flags
        return flags

    def named(self, e: Event, name: str, ph: Any, flags: int, index: int) -> None:
        """A CPU event whose name counts: vLLM's, a communication op, a step marker."""
        c = self.c
        c.vllm_annotations += flags & 1
        c.vllm_functions += (flags & 2) >> 1
        c.vllm_worker_steps += (flags & 4) >> 2
        c.sglang_steps += (flags & 32) >> 5
        if flags & 24 and ph is not None and type(ph) is not str:
            raise FastPathUnsure(index)
        if flags & 8 and ph == "X":
            op = name
            if name == "record_param_comms":
                args = e.args
                cn = args.get("Collective name") if type(args) is dict else None
                op = f"record_param_comms:{cn}" if type(cn) is str else name
            ck = next((i for i, (_, r) in enumerate(self.ops) if r.fullmatch(op)), -1)
            ts, dur = to_ns(e.ts), to_ns(e.dur)
            if ck >= 0 and ts is not None and dur is not None and dur >= 0:
                c.comm_ops.setdefault(c.thread_id(e.pid, e.tid), []).append(CommOp(ts, ts + dur, ck))
        if flags & 16 and ph in ("X", "i", "I"):
            ts = to_ns(e.ts)
            dur = to_ns(e.dur) if ph == "X" else None
            if ts is None or (dur is not None and dur < 0):
                raise FastPathUnsure(index)
            c.markers.append(Marker(ts, index, name, c.thread_id(e.pid, e.tid), ts + dur if dur is not None else None))


def _numbered(table: np.ndarray, keys: np.ndarray, number: Callable[[int], int]) -> tuple[np.ndarray, np.ndarray]:
    """(`table`, grown to hold every key; `table[keys]`), where each key not yet numbered (-1 in the table) is
    numbered by `number(key)`, in the order the keys first appear."""
    if len(keys) and int(keys.max()) >= len(table):
        grown = np.full(max(2 * len(table), int(keys.max()) + 1), -1, dtype=table.dtype)
        grown[:len(table)] = table
        table = grown
    of = table[keys]
    new = of < 0
    if new.any():
        fresh, at = np.unique(keys[new], return_index=True)
        for key in fresh[np.argsort(at)].tolist():
            table[key] = number(key)
        of = table[keys]
    return table, of


_BINCOUNT_SLOTS = 1 << 16
"""Categories are counted by `np.bincount` while their string ids stay below this (a table of that many counts)."""


class _ColumnPass:
    """`_FastPass.events` over the compiled pass's `Columns`: the same tests, on whole columns at once (numpy);
    only the rows whose names count (step markers, communication ops) are read one by one."""

    def __init__(self, fast: _FastPass, kind_of: dict[Any, _Kind]):
        self.fast, self.kind_of = fast, kind_of
        self.scanner: Any = None

    def _start(self, scanner: Any) -> None:
        """Caches by the scanner's ids (a file read again, or by a child process, has a scanner of its own)."""
        self.scanner = scanner
        self.kind_by_slot: dict[int, _Kind] = {}
        """Category slot (its string id + 1; 0: none) -> its kind, once looked up (`_kinds`)."""
        self.branch_of = np.full(16, -1, dtype=np.int8)
        """Category slot (its string id + 1; 0: none) -> `_Kind.branch` (-1: not yet looked up)."""
        self.gpu_of = np.full(16, -1, dtype=np.int8)
        """Category slot -> `_Kind.gpu` (-1: none)."""
        self.flags_by_pair: dict[int, int] = {}
        self.graph_by_id: dict[int, bool] = {}
        self.thread_of = np.full(64, -1, dtype=np.int64)
        """Thread key -> index into `_Collected.threads` (-1: not yet met by the pass)."""
        self.gpu_name_of = np.full(64, -1, dtype=np.int64)
        """String id -> index into `_Collected.names` (-1: no GPU event of that name yet)."""

    def _kinds(self, slots: np.ndarray) -> None:
        """Look up the kinds of these categories (string id + 1; 0: none) in the tables by slot."""
        size = int(slots[-1]) + 1
        if size > len(self.branch_of):
            size = max(size, 2 * len(self.branch_of))
            self.branch_of = np.concatenate([self.branch_of, np.full(size - len(self.branch_of), -1, np.int8)])
            self.gpu_of = np.concatenate([self.gpu_of, np.full(size - len(self.gpu_of), -1, np.int8)])
        for slot in slots.tolist():
            if slot not in self.kind_by_slot:
                cat = None if slot == 0 else self.scanner.string(slot - 1)
                kind = self.kind_of.get(cat)
                if kind is None:
                    kind = self.kind_of[cat] = self.fast.kind(cat)
                self.kind_by_slot[slot] = kind
                self.branch_of[slot] = kind.branch
                self.gpu_of[slot] = -1 if kind.gpu is None else kind.gpu

    def run(self, b: Columns, index: int) -> int:
        """Collect from one scan's columns; the index of its last event."""
        if b.scanner is not self.scanner:
            self._start(b.scanner)
        first = index + 1
        cat = b.i32[CAT] + 1  # 0: no category
        if int(cat.max()) < _BINCOUNT_SLOTS:
            counts = np.bincount(cat)
            seen = np.flatnonzero(counts)
            counts = counts[seen]
        else:  # a category first met after many other strings: counted by sorting, not a table that long
            seen, counts = np.unique(cat, return_counts=True)
        if int(seen[-1]) >= len(self.branch_of) or (self.branch_of[seen] < 0).any():
            self._kinds(seen)
        for slot, count in zip(seen.tolist(), counts.tolist(), strict=True):
            self.kind_by_slot[slot].events += count
        branch, gpu_of = self.branch_of[cat], self.gpu_of[cat]
        ph, ts_ok = b.i8[PH], b.i8[TS_TAG] == T_INT
        corr, corr_int = b.i64[CORR], b.i8[CORR_TAG] == T_INT
        launch = np.flatnonzero((branch == LAUNCH) & (ph == PH_X) & corr_int & (corr >= 0))
        fid = b.i64[ID]
        flow = np.flatnonzero((branch == FLOW) & (ph == PH_F) & (b.i8[ID_TAG] == T_INT) & (fid >= 0) & (fid < MAX_NS)
                              & ts_ok)
        gpu = np.flatnonzero((branch == GPU_EVENT) & (ph == PH_X))
        named = np.flatnonzero((branch == NAMED) & (b.i32[NAME] >= 0))
        comms, marks = self._named(b, named, first)
        calling = np.zeros(b.rows, dtype=bool)  # the rows that name a thread, read in file order
        for rows in (launch, flow, gpu, [r for r, _ in comms + marks]):
            calling[rows] = True
        calls = np.flatnonzero(calling)
        thread = np.full(b.rows, -1, dtype=np.int64)
        thread[calls] = self._threads(b.i32[THREAD_KEY][calls])
        self._launches(b, launch, thread, first)
        self._flows(b, flow, thread)
        self._gpu(b, gpu, gpu_of, thread, first)
        c = self.fast.c
        for row, op in comms:
            start = int(b.i64[TS][row])
            c.comm_ops.setdefault(int(thread[row]), []).append(CommOp(start, start + int(b.i64[DUR][row]), op))
        for row, end in marks:
            name = self.scanner.string(int(b.i32[NAME][row]))
            c.markers.append(Marker(int(b.i64[TS][row]), first + row, name, int(thread[row]), end))
        return index + b.rows

    def _threads(self, keys: np.ndarray) -> np.ndarray:
        """The thread index of each thread key, numbering new threads in the order first met."""
        thread_id, thread_key = self.fast.c.thread_id, self.scanner.thread_key
        self.thread_of, of = _numbered(self.thread_of, keys, lambda key: thread_id(*thread_key(key)))
        return of

    def _launches(self, b: Columns, rows: np.ndarray, thread: np.ndarray, first: int) -> None:
        if not len(rows):
            return
        c = self.fast.c
        corr, ts = b.i64[CORR][rows], b.i64[TS][rows]
        bad = (corr >= MAX_NS) | (b.i8[TS_TAG][rows] != T_INT) | (ts < 0)
        if bad.any():
            raise FastPathUnsure(first + int(rows[np.argmax(bad)]))
        keys = corr.tolist()
        before = len(c.launches)
        c.launches.update(zip(keys, ts.tolist(), strict=True))
        if len(c.launches) != before + len(keys):  # launched twice: the exact pass names the event
            raise FastPathUnsure("a correlation id launched twice")
        c.launch_threads.update(zip(keys, thread[rows].tolist(), strict=True))
        names, inverse = np.unique(b.i32[NAME][rows], return_inverse=True)
        graph = np.array([self._graph(sid) for sid in names.tolist()], dtype=bool)[inverse]
        if graph.any():
            c.graph_launches.update(corr[graph].tolist())

    def _graph(self, sid: int) -> bool:
        """Whether the launch of that name is a CUDA-graph launch."""
        got = self.graph_by_id.get(sid)
        if got is None:
            got = self.graph_by_id[sid] = sid >= 0 and "GraphLaunch" in self.scanner.string(sid)
        return got

    def _flows(self, b: Columns, rows: np.ndarray, thread: np.ndarray) -> None:
        if not len(rows):
            return
        flow_ends = self.fast.c.flow_ends
        on, ts, fid = thread[rows], b.i64[TS][rows], b.i64[ID][rows]
        threads, at = np.unique(on, return_index=True)
        for t in threads[np.argsort(at)].tolist():
            mine = on == t
            by_ts = flow_ends.get(t)
            if by_ts is None:
                by_ts = flow_ends[t] = {}
            by_ts.update(zip(ts[mine].tolist(), fid[mine].tolist(), strict=True))

    def _gpu(self, b: Columns, rows: np.ndarray, gpu_of: np.ndarray, thread: np.ndarray, first: int) -> None:
        if not len(rows):
            return
        i64, i8 = b.i64, b.i8
        name, ts, dur = b.i32[NAME][rows], i64[TS][rows], i64[DUR][rows]
        tid, pid, corr = i64[TID][rows], i64[PID][rows], i64[CORR][rows]
        stream_tag, device_tag, corr_tag = i8[STREAM_TAG][rows], i8[DEVICE_TAG][rows], i8[CORR_TAG][rows]
        # args.stream, else the tid; args.device, else the pid where it is an id, else 0 (as `gpu_event` reads them)
        stream = np.where(stream_tag == T_NONE, tid, i64[STREAM][rows])
        stream_ok = np.where(stream_tag == T_NONE, i8[TID_TAG][rows] == T_INT, stream_tag == T_INT) & \
            (stream >= 0) & (stream < MAX_NS)
        pid_id = (i8[PID_TAG][rows] == T_INT) & (pid >= 0) & (pid < MAX_NS)
        default_device = (device_tag == T_NONE) | (device_tag == T_NULL)
        dev = np.where(default_device, np.where(pid_id, pid, 0), i64[DEVICE][rows])
        dev_ok = default_device | ((device_tag == T_INT) & (dev >= 0) & (dev < MAX_NS))
        corr_int = corr_tag == T_INT
        bad = (name < 0) | (i8[TS_TAG][rows] != T_INT) | (ts < 0) | (i8[DUR_TAG][rows] != T_INT) | (dur < 0) | \
            ~stream_ok | ~dev_ok | (corr_int & (corr >= MAX_NS))
        if bad.any():
            raise FastPathUnsure(first + int(rows[np.argmax(bad)]))
        c = self.fast.c
        c.g_name.frombytes(self._gpu_names(name).tobytes())
        c.g_cat.frombytes(gpu_of[rows].tobytes())
        c.g_ts.frombytes(ts.tobytes())
        c.g_dur.frombytes(dur.tobytes())
        c.g_dev.frombytes(dev.astype(np.int64).tobytes())
        c.g_stream.frombytes(stream.astype(np.int64).tobytes())
        c.g_corr.frombytes(np.where(corr_int & (corr >= 0), corr, _MISSING_CORRELATION).astype(np.int64).tobytes())
        c.g_thread.frombytes(thread[rows].tobytes())

    def _gpu_names(self, sids: np.ndarray) -> np.ndarray:
        """Each GPU event's name as its index into `_Collected.names` (numbered in the order first met)."""
        name_id, string = self.fast.c.name_id, self.scanner.string
        self.gpu_name_of, of = _numbered(self.gpu_name_of, sids, lambda sid: name_id(string(sid)))
        return of

    def _named(self, b: Columns, rows: np.ndarray, first: int) -> tuple[list[tuple[int, int]],
                                                                         list[tuple[int, int | None]]]:
        """The counts that CPU events' names add, and the rows that are communication ops (row, op kind) and
        step markers (row, end), as `_FastPass.named` reads them."""
        if not len(rows):
            return [], []
        fast, c = self.fast, self.fast.c
        pairs = (b.i32[CAT][rows].astype(np.int64) + 1) << 32 | b.i32[NAME][rows].astype(np.int64)
        unique, inverse = np.unique(pairs, return_inverse=True)
        flags = np.array([self._flags(p) for p in unique.tolist()], dtype=np.int64)[inverse]
        c.vllm_annotations += int(np.count_nonzero(flags & 1))
        c.vllm_functions += int(np.count_nonzero(flags & 2))
        c.vllm_worker_steps += int(np.count_nonzero(flags & 4))
        c.sglang_steps += int(np.count_nonzero(flags & 32))
        comms: list[tuple[int, int]] = []
        marks: list[tuple[int, int | None]] = []
        counting = (flags & 24) != 0
        for row, f in zip(rows[counting].tolist(), flags[counting].tolist(), strict=True):
            ph = int(b.i8[PH][row])
            ts_ok, dur_ok = b.i8[TS_TAG][row] == T_INT, b.i8[DUR_TAG][row] == T_INT
            ts, dur = int(b.i64[TS][row]), int(b.i64[DUR][row])
            if f & 8 and ph == PH_X:
                op = name = self.scanner.string(int(b.i32[NAME][row]))
                cn = int(b.i32[COLLECTIVE][row])
                if name == "record_param_comms" and cn >= 0:
                    op = f"record_param_comms:{self.scanner.string(cn)}"
                ck = next((i for i, (_, r) in enumerate(fast.ops) if r.fullmatch(op)), -1)
                if ck >= 0 and ts_ok and dur_ok and dur >= 0:
                    comms.append((row, ck))
            if f & 16 and ph in (PH_X, PH_LI, PH_UI):
                if not ts_ok or (ph == PH_X and dur_ok and dur < 0):
                    raise FastPathUnsure(first + row)
                marks.append((row, ts + dur if ph == PH_X and dur_ok else None))
        return comms, marks

    def _flags(self, pair: int) -> int:
        """`_FastPass.name_flags` of a (category, name) pair of string ids, remembered by the pair."""
        got = self.flags_by_pair.get(pair)
        if got is None:
            kind = self.kind_by_slot[pair >> 32]  # looked up by `run` before the names are read
            name = self.scanner.string(pair & 0xFFFFFFFF)
            got = kind.names.get(name)
            if got is None:
                got = self.fast.name_flags(kind, name)
            if len(self.flags_by_pair) < _NAME_CACHE:
                self.flags_by_pair[pair] = got
        return got
