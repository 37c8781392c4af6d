"""Where a step's time goes: steps, kernels per step, main-stream gaps, CUDA graphs and collectives.

One pass over the trace collects what the figures need, in compact arrays:
- GPU activity (`kernel`, `gpu_memcpy`, `gpu_memset`): name, start, duration, device, stream,
  correlation id;
- launch events (CPU `cuda_runtime` / `cuda_driver` events with `args.correlation`): their start,
  and whether they launch a CUDA graph;
- step markers: CPU events (`user_annotation`, `cpu_op`, `python_function`, ...) whose name matches the
  marker pattern;
- communication ops (`nccl:*`, `c10d::*`, `vllm::*`, `record_param_comms`): their span and kind, which
  classify the NCCL/RCCL kernels launched inside them that the kernel name leaves unclassified;
- `ac2g` flow events, used only for GPU events that lack `args.correlation`.

A GPU event belongs to the step in which the CPU event that launched it started: matched through
the correlation id, never by the GPU event's own timestamp (the GPU runs behind the CPU, often by
more than a step). Step k runs from marker k's start to marker k+1's start, so n markers bound
n − 1 complete steps; work launched after the last marker belongs to a step without an end and
is left out, and with fewer than two markers per-step figures are refused, never estimated.
`step_span="marker"` reads each marker's own span (start to start + dur) as the step instead: HTA's
reading, under which one marker is one step; it is recorded in the summary's config.
"""

from __future__ import annotations

import gc
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np

from audit.trace import DEFAULT_STEP_MARKER
from audit.trace.collect import (
    _MISSING_CORRELATION,
    CATEGORY_NAMES,
    KERNEL,
    MARKER_CATEGORIES,
    MEMCPY,
    MEMSET,
    VLLM_STEP_MARKER,
    VLLM_WORKER_STEP_MARKER,
    Marker,
    _Collected,
    collect,
    collect_fast,
)
from audit.trace.models import (
    CollectiveKind,
    CollectivePosition,
    CudaGraphs,
    Durations,
    Gap,
    Linking,
    MainStream,
    Markers,
    ProfileCollectiveRow,
    ProfileKernelRow,
    ProfileStepRow,
    StepFigures,
    StepSpread,
    TraceConfig,
    TraceInfo,
    TraceSource,
    TraceSummary,
)
from audit.trace.reader import MAX_JSON_CHARS, FastPathUnsure, TraceError, TraceReader

ANALYSIS_VERSION = 2
"""Version of the analysis a new summary records (`config.analysis`). 1: collectives by a substring of the
kernel name only; 2: by kernel family, then NCCL/RCCL kernels by the communication op enclosing their launch,
python_function markers, marker-span steps, refusals that say what the trace holds. A package recomputes with
the version and options it records, so old packages keep reproducing."""

_FAMILY = r"(?:^|[\s:&*])"
"""Start of a kernel's own identifier (after `void `, a namespace `::`, or nothing): a pattern anchored here
matches a kernel family, never a word inside a fused name such as Inductor's
`triton_poi_fused_add_all_reduce_...`."""

DEFAULT_COLLECTIVES: dict[str, tuple[str, ...]] = {
    # NCCL/RCCL (ncclDevKernel_AllReduce_Sum_bf16_RING_LL, older ncclKernel_AllReduce_...), vLLM's custom
    # all-reduce (vllm::cross_device_reduce_1stage/2stage), torch symmetric memory (one_shot_all_reduce,
    # two_shot_all_reduce, multimem_all_reduce), FlashInfer/TensorRT-LLM (allreduce_fusion_kernel...).
    "all_reduce": (_FAMILY + r"nccl(?:Dev)?Kernel_AllReduce", _FAMILY + r"cross_device_reduce_",
                   _FAMILY + r"(?:one_shot|two_shot|multimem)_all_reduce", _FAMILY + r"allreduce_fusion"),
    "all_gather": (_FAMILY + r"nccl(?:Dev)?Kernel_AllGather", _FAMILY + r"multimem_all_gather"),
    "reduce_scatter": (_FAMILY + r"nccl(?:Dev)?Kernel_ReduceScatter",
                       _FAMILY + r"(?:two_shot|multimem)_reduce_scatter"),
    "all_to_all": (_FAMILY + r"nccl(?:Dev)?Kernel_AllToAll",),
    "send_recv": (_FAMILY + r"nccl(?:Dev)?Kernel_(?:SendRecv|Send|Recv)",),
    "broadcast": (_FAMILY + r"nccl(?:Dev)?Kernel_Broadcast",),
}
"""Collective kinds and their kernel-family patterns (case-insensitive `re.search`, anchored at the start of
an identifier); extend with --collective."""

_OP = r"(?:nccl:|c10d::|vllm::|record_param_comms:)_?"
DEFAULT_COLLECTIVE_OPS: dict[str, tuple[str, ...]] = {
    "all_reduce": (_OP + r"all_?reduce(?:_coalesced)?_?",),
    "all_gather": (_OP + r"all_?gather(?:_base|_into_tensor(?:_coalesced)?|_coalesced)?_?",),
    "reduce_scatter": (_OP + r"reduce_?scatter(?:_base|_tensor(?:_coalesced)?)?_?",),
    "all_to_all": (_OP + r"all_?to_?all(?:_base|_single)?_?",),
    "send_recv": (_OP + r"(?:send|recv(?:_any_source)?|batch_isend_irecv)_?",),
    "broadcast": (_OP + r"broadcast_?",),
}
"""Communication ops (CPU `cpu_op`/`user_annotation` names, `re.fullmatch`, case-insensitive) and the kind of
the NCCL/RCCL kernels launched inside them: `nccl:all_reduce`, `c10d::allreduce_`, `vllm::all_reduce`, and
`record_param_comms` by its `Collective name` argument (read as `record_param_comms:NAME`). Only a kernel whose
name says NCCL/RCCL but no kind (`ncclDevKernel_Generic_2`) is classified so: a copy kernel that a
communication op launches is no collective."""

_NCCL_KERNEL = re.compile(r"^(?:void\s+)?[nr]ccl", re.IGNORECASE)

STEP_SPANS = ("next_marker", "marker")
"""`next_marker`: a step runs from its marker's start to the next marker's start (n markers, n − 1 steps);
`marker`: a step is its marker's own span, start to start + dur (HTA's reading; one marker, one step)."""

EMBED_LIMIT_BYTES = 20_000_000
"""Trace files up to this size are copied into the package; larger ones are pinned by sha256 only."""

LARGEST_GAPS = 10

_GAP_BUCKETS = ((1_000, "<1us"), (10_000, "1-10us"), (100_000, "10-100us"), (1_000_000, "100us-1ms"),
                (None, ">=1ms"))


@dataclass(frozen=True)
class TraceOptions:
    """Everything that shapes a summary (recorded in `summary.json`'s `config`)."""

    step_marker: str = DEFAULT_STEP_MARKER
    step_filter: str | None = None
    collectives: dict[str, tuple[str, ...]] = field(default_factory=lambda: dict(DEFAULT_COLLECTIVES))
    main_stream: str | None = None
    embed_limit_bytes: int = EMBED_LIMIT_BYTES
    marker_categories: tuple[str, ...] = MARKER_CATEGORIES
    collective_ops: dict[str, tuple[str, ...]] = field(default_factory=lambda: dict(DEFAULT_COLLECTIVE_OPS))
    step_span: str = "next_marker"
    analysis: int = ANALYSIS_VERSION
    max_json_chars: int = MAX_JSON_CHARS

    def ops_compiled(self) -> list[tuple[str, re.Pattern[str]]]:
        """The communication-op patterns, one alternation per kind."""
        out = []
        for kind, pats in self.collective_ops.items():
            if pats:
                try:
                    out.append((kind, re.compile("|".join(f"(?:{p})" for p in pats), re.IGNORECASE)))
                except re.error as e:
                    raise TraceError(f"collective op pattern for {kind} is not a valid regular expression: {e}"
                                     ) from None
        return out

    def compiled(self) -> tuple[re.Pattern[str], re.Pattern[str] | None, list[tuple[str, re.Pattern[str]]]]:
        def comp(pattern: str, what: str, flags: int = 0) -> re.Pattern[str]:
            try:
                return re.compile(pattern, flags)
            except re.error as e:
                raise TraceError(f"{what} {pattern!r} is not a valid regular expression: {e}") from None

        if self.step_span not in STEP_SPANS:
            raise TraceError(f"--step-span {self.step_span!r}: expected one of {', '.join(STEP_SPANS)}")
        if self.analysis not in (1, ANALYSIS_VERSION):
            raise TraceError(f"analysis version {self.analysis} is not one this audit runs (1, {ANALYSIS_VERSION})")
        marker = comp(self.step_marker, "--step-marker")
        flt = comp(self.step_filter, "--step-filter") if self.step_filter is not None else None
        coll = [(kind, comp("|".join(f"(?:{p})" for p in pats), f"--collective {kind}=", re.IGNORECASE))
                for kind, pats in self.collectives.items() if pats]
        return marker, flt, coll


def with_collectives(base: dict[str, tuple[str, ...]], specs: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Add `KIND=REGEX` patterns to the collective table (a new KIND is a new kind)."""
    out = {k: tuple(v) for k, v in base.items()}
    for spec in specs:
        kind, sep, pattern = spec.partition("=")
        kind = kind.strip()
        if not sep or not kind or not pattern or not re.fullmatch(r"[A-Za-z0-9_.-]+", kind):
            raise TraceError(f"--collective {spec!r}: expected KIND=REGEX, e.g. all_reduce=my_ar_kernel")
        try:
            re.compile(pattern)
        except re.error as e:
            raise TraceError(f"--collective {spec!r}: not a valid regular expression: {e}") from None
        out[kind] = out.get(kind, ()) + (pattern,)
    return out


# --------------------------------------------------------------------------- figures


def _us(ns: float | int) -> float:
    return round(ns / 1000, 3)


def _spread(values: np.ndarray) -> StepSpread:
    return StepSpread(median=float(np.median(values)), min=int(values.min()), max=int(values.max()),
                  constant=bool(values.min() == values.max()))


def _durations(ns: np.ndarray) -> Durations:
    if len(ns) == 0:
        return Durations(count=0, median_us=0.0, min_us=0.0, max_us=0.0, total_us=0.0)
    return Durations(count=int(len(ns)), median_us=_us(float(np.median(ns))), min_us=_us(int(ns.min())),
                     max_us=_us(int(ns.max())), total_us=_us(int(ns.sum())))


@dataclass
class TraceResult:
    """A summary and the rows of its package."""

    summary: TraceSummary
    steps: list[ProfileStepRow]
    kernels: list[ProfileKernelRow]
    collectives: list[ProfileCollectiveRow]


@dataclass(frozen=True)
class _Gpu:
    """The GPU events (kernels, copies, memsets) as arrays, one entry per event in file order."""

    name: np.ndarray
    """Index into `_Collected.names`."""
    cat: np.ndarray
    """KERNEL, MEMCPY or MEMSET."""
    ts: np.ndarray
    dur: np.ndarray
    end: np.ndarray
    dev: np.ndarray
    stream: np.ndarray
    """Index into `stream_labels`."""
    stream_labels: list[str]
    is_kernel: np.ndarray

    @property
    def count(self) -> int:
        """How many GPU events."""
        return len(self.ts)


@dataclass(frozen=True)
class _Links:
    """Each GPU event's launch: its correlation id (a flow's id where the event has none) and the launch's start."""

    corr: np.ndarray
    launch_ts: np.ndarray
    """-1: no launch in the trace (a real launch at ts -1 ns is not a thing profilers write)."""
    linked: np.ndarray
    linking: Linking


@dataclass(frozen=True)
class _Steps:
    """The steps the markers bound and the step of each GPU event."""

    markers: list[Marker]
    """Sorted by start."""
    starts: list[int]
    ends: list[int]
    count: int
    """Complete steps."""
    step_of: np.ndarray
    """Per GPU event: its step, or -1 after the last, -2 before the first marker, -3 unlinked, -4 between spans."""
    selected: np.ndarray
    """Per step: its marker matches --step-filter."""
    selected_count: int
    in_selected: np.ndarray
    """Per GPU event: launched in a selected step."""
    between: int
    """GPU events launched between markers' spans (--step-span marker)."""
    refused: str | None
    """Why there are no per-step figures."""

    @property
    def selected_steps(self) -> np.ndarray:
        """The selected steps' numbers (none when refused)."""
        return np.flatnonzero(self.selected) if not self.refused else np.zeros(0, dtype=np.int64)


class _Window(NamedTuple):
    """The GPU window of one selected step (step -1: the whole trace)."""

    step: int
    start: int
    end: int


@dataclass(frozen=True)
class _MainStreamEvents:
    """The main stream's events by start, and the union of their intervals."""

    index: int
    """Index into the stream labels."""
    chosen: Literal["most kernels", "given"]
    ts: np.ndarray
    end: np.ndarray
    name: np.ndarray
    busy_starts: np.ndarray
    busy_ends: np.ndarray


@dataclass(frozen=True)
class _Collectives:
    """The collective kind of each GPU event (-1: none) and the kinds' names."""

    of: np.ndarray
    kinds: list[str]


def _stream_labels(dev: np.ndarray, stream: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Stream index per event and the label of each index (`STREAM`, or `DEVICE:STREAM` over several GPUs)."""
    if len(stream) == 0:
        return np.zeros(0, dtype=np.int64), []
    many = len(np.unique(dev)) > 1
    if int(dev.max()) < 1 << 31 and int(stream.max()) < 1 << 31:  # one key sorts as the pairs do, faster
        keys, inverse = np.unique((dev << 31) | stream, return_inverse=True)
        uniq = [(k >> 31, k & ((1 << 31) - 1)) for k in keys.tolist()]
    else:
        pairs, inverse = np.unique(np.stack([dev, stream], axis=1), axis=0, return_inverse=True)
        uniq = pairs.tolist()
    labels = [f"{d}:{s}" if many else f"{s}" for d, s in uniq]
    return inverse.reshape(-1).astype(np.int64), labels


def analyze(path: str | Path, options: TraceOptions | None = None) -> TraceResult:
    """Summarise one trace file. Raises TraceError (one line) on bad input.

    One pass collects the compact arrays (`collect_fast`, else `collect`); each figure then has its own
    analyzer over them, in the order their notes appear."""
    options = options or TraceOptions()
    marker_re, filter_re, collective_res = options.compiled()
    c, reader = _collect(path, options, marker_re)
    label = reader.label
    gpu = _gpu_events(c, reader)
    links = _link(c, gpu)
    notes = _linking_notes(links.linking)
    steps = _steps(c, options, filter_re, gpu, links, label)
    notes += _step_notes(c, options, steps)
    main = _pick_main_stream(options, gpu, steps, label)
    coll = _collective_of(c, options, gpu, links, collective_res, notes)
    step_rows, windows = _step_rows(c, gpu, links, steps, coll, main)
    step_figures = _step_figures(gpu, steps, step_rows, windows, notes)
    if steps.refused:
        windows = [_Window(-1, int(gpu.ts.min()), int(gpu.end.max()))]
    main_stream = _main_stream(gpu.stream_labels[main.index], main.chosen, "trace" if steps.refused else "steps",
                               windows, main, c.names)
    cuda_graphs = _cuda_graphs(c, links, gpu, steps, step_rows, notes)
    coll_rows, coll_kinds = _collectives(c, gpu, steps, coll)
    kernel_rows = _kernel_rows(c.names, gpu, steps, coll)
    summary = TraceSummary(
        source=TraceSource(file=Path(reader.path).name, sha256=reader.sha256, bytes=reader.bytes,
                           gzip=reader.gzip, json_chars=reader.text_chars, included=None),
        config=_config(options), trace=_trace_info(c, gpu), linking=links.linking,
        markers=_marker_info(c, steps), steps=step_figures, main_stream=main_stream,
        cuda_graphs=cuda_graphs, collectives=coll_kinds, notes=notes)
    return TraceResult(summary, step_rows, kernel_rows, coll_rows)


def _collect(path: str | Path, options: TraceOptions, marker_re: re.Pattern[str]) -> tuple[_Collected, TraceReader]:
    """The one pass over the trace: the fast path, else (anything unusual) the exact path again from the start."""
    reader = TraceReader(path, options.max_json_chars)
    ops = options.ops_compiled() if options.analysis >= 2 else None
    # The pass makes millions of small objects and no cycles: the cyclic collector would only re-walk them.
    collecting = gc.isenabled()
    gc.disable()
    try:
        try:
            c = collect_fast(reader, marker_re, options.marker_categories, ops)
        except (FastPathUnsure, TraceError):  # the exact path reads it all again: the same result, or its error
            reader = TraceReader(path, options.max_json_chars)
            c = collect(reader, marker_re, options.marker_categories, ops)
    finally:
        if collecting:
            gc.enable()
    return c, reader


def _gpu_events(c: _Collected, reader: TraceReader) -> _Gpu:
    """The GPU events' arrays; a trace without any is refused, naming what it holds."""
    ts = np.frombuffer(c.g_ts, dtype=np.int64)
    if len(ts) == 0:
        raise TraceError(_no_gpu_activity(c, Path(reader.path).name), path=reader.label)
    dur = np.frombuffer(c.g_dur, dtype=np.int64)
    dev = np.frombuffer(c.g_dev, dtype=np.int64)
    cat = np.frombuffer(c.g_cat, dtype=np.int8)
    stream, labels = _stream_labels(dev, np.frombuffer(c.g_stream, dtype=np.int64))
    return _Gpu(name=np.frombuffer(c.g_name, dtype=np.int64), cat=cat, ts=ts, dur=dur, end=ts + dur, dev=dev,
                stream=stream, stream_labels=labels, is_kernel=cat == KERNEL)


def _link(c: _Collected, gpu: _Gpu) -> _Links:
    """Link GPU events to their launch: by correlation id, else by the ac2g flow ending on the event."""
    corr = np.frombuffer(c.g_corr, dtype=np.int64).copy()
    by_flow = disagreements = 0
    thread = np.frombuffer(c.g_thread, dtype=np.int64)
    for t, by_ts in c.flow_ends.items():  # the flow ending on each event's (thread, start), by thread
        on_t = np.flatnonzero(thread == t)
        if not len(on_t) or not by_ts:
            continue
        flow_ts = np.fromiter(by_ts.keys(), dtype=np.int64, count=len(by_ts))
        flow_id = np.fromiter(by_ts.values(), dtype=np.int64, count=len(by_ts))
        order = np.argsort(flow_ts)
        flow_ts, flow_id = flow_ts[order], flow_id[order]
        j = np.minimum(np.searchsorted(flow_ts, gpu.ts[on_t]), len(flow_ts) - 1)
        hit = flow_ts[j] == gpu.ts[on_t]
        on_t, fid = on_t[hit], flow_id[j[hit]]
        missing = corr[on_t] == _MISSING_CORRELATION
        corr[on_t[missing]] = fid[missing]
        by_flow += int(missing.sum())
        disagreements += int((fid[~missing] != corr[on_t[~missing]]).sum())
    get = c.launches.get
    launch_ts = np.array([get(x, -1) for x in corr.tolist()], dtype=np.int64)
    linked = launch_ts != -1
    n_linked = int(linked.sum())
    linking = Linking(launch_events=len(c.launches), gpu_events=gpu.count, by_correlation=n_linked - by_flow,
                      by_flow=by_flow, unlinked=gpu.count - n_linked, flow_disagreements=disagreements)
    return _Links(corr=corr, launch_ts=launch_ts, linked=linked, linking=linking)


def _linking_notes(linking: Linking) -> list[str]:
    if not linking.unlinked:
        return []
    return [f"{linking.unlinked:,} of {linking.gpu_events:,} GPU events have no launching CPU event in the trace "
            f"(launched before profiling started, or events dropped): they count in whole-trace totals "
            f"only, never in a step"]


def _checked_markers(c: _Collected, options: TraceOptions, label: str) -> list[Marker]:
    """The step markers by start; markers on several threads, overlapping, or (--step-span marker) without a
    duration are refused."""
    markers = sorted(c.markers)
    marker_threads = Counter(m.thread for m in markers)
    if len(marker_threads) > 1:
        thread_names = {v: k for k, v in c.threads.items()}
        shown = ", ".join(f"{_thread_label(thread_names[t])} ({n})" for t, n in marker_threads.most_common(4))
        raise TraceError(f"step markers /{options.step_marker}/ are on {len(marker_threads)} threads: {shown}; "
                         f"use a --step-marker that matches one event per step", path=label)
    for a, b in zip(markers, markers[1:], strict=False):
        if b.start == a.start or (a.end is not None and b.start < a.end):
            raise TraceError(f"step markers overlap: {a.name!r} and {b.name!r} (traceEvents[{a.event}], "
                             f"[{b.event}]); use a --step-marker that matches one event per step", path=label)
    if options.step_span == "marker":
        no_dur = next((m for m in markers if m.end is None), None)
        if no_dur is not None:
            raise TraceError(f"--step-span marker: the step marker {no_dur.name!r} (traceEvents[{no_dur.event}]) "
                             f"has no duration", path=label)
    return markers


def _step_of(markers: list[Marker], by_span: bool, links: _Links) -> tuple[np.ndarray, int]:
    """Each GPU event's step (by its launch's start) and how many fell between markers' spans."""
    launch_ts, linked = links.launch_ts, links.linked
    step_of = np.full(len(launch_ts), -3, dtype=np.int64)
    if not markers:
        step_of[linked] = -2
        return step_of, 0
    n_steps = len(markers) if by_span else len(markers) - 1
    idx = np.searchsorted(np.asarray([m.start for m in markers], dtype=np.int64), launch_ts, side="right") - 1
    step_of = np.where(idx < 0, -2, np.where(idx >= n_steps, -1, idx))
    between = 0
    if by_span:  # launched after its marker's span ended: in no step (-4)
        end_of = np.asarray([m.end for m in markers], dtype=np.int64)[np.clip(idx, 0, None)]
        gap = (idx >= 0) & (launch_ts >= end_of)
        step_of = np.where(gap & (idx < n_steps - 1), -4, np.where(gap, -1, step_of))
        between = int(((step_of == -4) & linked).sum())
    step_of[~linked] = -3
    return step_of, between


def _refusal(options: TraceOptions, markers: list[Marker], selected_count: int, in_selected: np.ndarray) -> str | None:
    """Why no per-step figures are given, or None."""
    v2 = options.analysis >= 2
    if not markers:
        refused = f"no event matches the step marker /{options.step_marker}/"
        if v2:
            refused += f" (markers are read from {', '.join(options.marker_categories)} events)"
        return refused
    if len(markers) == 1 and options.step_span != "marker":
        refused = (f"only one step marker ({markers[0].name!r}): a step needs a marker at each end, so no step "
                   f"is complete")
        if v2 and markers[0].end is not None:
            refused += "; --step-span marker counts the marker's own span as one step (as HTA does)"
        return refused
    if selected_count == 0:
        return f"no complete step's marker matches --step-filter /{options.step_filter}/"
    if not in_selected.any():
        return "no GPU activity was launched inside a selected complete step"
    return None


def _steps(c: _Collected, options: TraceOptions, filter_re: re.Pattern[str] | None, gpu: _Gpu, links: _Links,
           label: str) -> _Steps:
    """The steps: marker k's start to marker k+1's (or, --step-span marker, marker k's own span)."""
    markers = _checked_markers(c, options, label)
    by_span = options.step_span == "marker"
    starts = [m.start for m in markers]
    n_steps = len(markers) if by_span else max(len(markers) - 1, 0)
    # (under --step-span marker every marker has an end: _checked_markers refused those without)
    ends = [e for e in (m.end for m in markers) if e is not None] if by_span else starts[1:]
    step_of, between = _step_of(markers, by_span, links)
    selected = np.array([filter_re is None or bool(filter_re.search(markers[k].name)) for k in range(n_steps)],
                        dtype=bool)
    selected_count = int(selected.sum())
    in_selected = (step_of >= 0) & selected[np.clip(step_of, 0, None)] if n_steps else \
        np.zeros(gpu.count, dtype=bool)
    return _Steps(markers=markers, starts=starts, ends=ends, count=n_steps,
                  step_of=step_of, selected=selected, selected_count=selected_count, in_selected=in_selected,
                  between=between, refused=_refusal(options, markers, selected_count, in_selected))


def _step_notes(c: _Collected, options: TraceOptions, steps: _Steps) -> list[str]:
    """A hint at the vLLM step marker where the trace has its annotations, and why steps are missing."""
    notes = []
    refused, v2 = steps.refused, options.analysis >= 2
    if refused and c.vllm_annotations and options.step_marker != VLLM_STEP_MARKER:
        notes.append(f"the trace has {c.vllm_annotations:,} vLLM step annotations (execute_context_…): "
                     f"try --step-marker '{VLLM_STEP_MARKER}'")
    elif refused and v2 and c.vllm_worker_steps and options.step_marker != VLLM_WORKER_STEP_MARKER:
        notes.append(f"the trace has {c.vllm_worker_steps:,} vLLM engine steps (python_function "
                     f"…gpu_worker.py(N): execute_model): try --step-marker '{VLLM_WORKER_STEP_MARKER}'")
    if steps.between:
        notes.append(f"{steps.between:,} GPU events were launched between step markers' spans (--step-span "
                     f"marker): they are in no step")
    if refused:
        notes.append(f"no per-step figures: {refused}")
    return notes


def _marker_info(c: _Collected, steps: _Steps) -> Markers:
    markers = steps.markers
    thread_names = {v: k for k, v in c.threads.items()}
    return Markers(
        found=len(markers), first=markers[0].name if markers else None, last=markers[-1].name if markers else None,
        thread=_thread_label(thread_names[markers[0].thread]) if markers else None,
        complete_steps=steps.count, selected_steps=steps.selected_count if not steps.refused else 0,
        gpu_events_before_first=int((steps.step_of == -2).sum()),
        gpu_events_after_last=int((steps.step_of == -1).sum()), refused=steps.refused)


def _pick_main_stream(options: TraceOptions, gpu: _Gpu, steps: _Steps, label: str) -> _MainStreamEvents:
    """The main stream: given, or the one that ran the most kernels (in the selected steps when there are);
    not the most kernel time: a collective stream's kernels sit waiting for peers for long stretches."""
    labels = gpu.stream_labels
    if options.main_stream is not None:
        if options.main_stream not in labels:
            raise TraceError(f"--main-stream {options.main_stream}: no such stream in the trace "
                             f"(streams: {', '.join(labels)})", path=label)
        main = labels.index(options.main_stream)
        chosen: Literal["most kernels", "given"] = "given"
    else:
        scope = steps.in_selected if not steps.refused else np.ones(gpu.count, dtype=bool)
        pick = scope & gpu.is_kernel if (scope & gpu.is_kernel).any() else np.ones(gpu.count, dtype=bool)
        count_by_stream = np.bincount(gpu.stream[pick], minlength=len(labels))
        time_by_stream = np.bincount(gpu.stream[pick], weights=gpu.dur[pick], minlength=len(labels))
        # most kernels, then most kernel time, then the lowest stream
        main = min(range(len(labels)), key=lambda s: (-count_by_stream[s], -time_by_stream[s], s))
        chosen = "most kernels"
    on_main = gpu.stream == main
    order = np.argsort(gpu.ts[on_main], kind="stable")
    ts, end = gpu.ts[on_main][order], gpu.end[on_main][order]
    busy_starts, busy_ends = _merge(ts, end)
    return _MainStreamEvents(index=main, chosen=chosen, ts=ts, end=end, name=gpu.name[on_main][order],
                             busy_starts=busy_starts, busy_ends=busy_ends)


def _collective_of(c: _Collected, options: TraceOptions, gpu: _Gpu, links: _Links,
                   collective_res: list[tuple[str, re.Pattern[str]]], notes: list[str]) -> _Collectives:
    """Each kernel's collective kind: by its name's family, then (analysis 2) NCCL/RCCL kernels by the
    communication op enclosing their launch."""
    kinds = [k for k, _ in collective_res]
    of = np.array(_collective_kinds(c.names, collective_res), dtype=np.int64)[gpu.name]
    if options.analysis >= 2:
        kinds += [k for k in options.collective_ops if k not in kinds]
        of, left_out = _by_enclosing_op(c, options, kinds, gpu, links.corr, of)
        if left_out:
            notes.append(f"{len(left_out):,} NCCL/RCCL kernels ({int(gpu.dur[left_out].sum()) / 1e6:,.3f} ms) are "
                         f"not counted as collectives: neither their name nor a communication op enclosing their "
                         f"launch (nccl:*, c10d::*, vllm::*, record_param_comms) names a collective kind")
    return _Collectives(of=of, kinds=kinds)


@dataclass(frozen=True)
class _PerStep:
    """Counts per complete step."""

    kernels: np.ndarray
    memcpy: np.ndarray
    memset: np.ndarray
    by_stream: np.ndarray
    """[step, stream] kernels."""
    first_gpu: np.ndarray
    """Earliest GPU start (int64 max: none)."""
    last_gpu: np.ndarray
    graph_launches: Counter[int]
    collectives: dict[int, Counter[str]]
    next_start: list[int | None]
    """Where the next step's GPU activity (or, after the last, any later activity) starts."""


_NONE_YET = np.iinfo(np.int64).max


def _per_step(c: _Collected, gpu: _Gpu, links: _Links, steps: _Steps, coll: _Collectives) -> _PerStep:
    n_steps, step_of = steps.count, steps.step_of
    sk = step_of >= 0
    k_idx = step_of[sk]
    kernel_in = gpu.is_kernel[sk]
    by_stream = np.zeros((n_steps, max(len(gpu.stream_labels), 1)), dtype=np.int64)
    np.add.at(by_stream, (k_idx[kernel_in], gpu.stream[sk][kernel_in]), 1)
    first_gpu = np.full(n_steps, _NONE_YET, dtype=np.int64)
    np.minimum.at(first_gpu, k_idx, gpu.ts[sk])
    last_gpu = np.full(n_steps, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(last_gpu, k_idx, gpu.end[sk])
    graph_corr = np.isin(links.corr, np.fromiter(c.graph_launches, dtype=np.int64, count=len(c.graph_launches)))
    graph_launches: Counter[int] = Counter()
    in_graph = sk & graph_corr
    for k, _ in set(zip(step_of[in_graph].tolist(), links.corr[in_graph].tolist(), strict=True)):
        graph_launches[k] += 1
    collectives: dict[int, Counter[str]] = {}
    is_coll = sk & (coll.of >= 0) & gpu.is_kernel
    for k, ck in zip(step_of[is_coll].tolist(), coll.of[is_coll].tolist(), strict=True):
        collectives.setdefault(k, Counter())[coll.kinds[ck]] += 1
    # A step's GPU window ends where the next step's GPU activity starts.
    after = step_of == -1
    following = int(gpu.ts[after].min()) if after.any() else None
    next_start: list[int | None] = [None] * n_steps
    for k in range(n_steps - 1, -1, -1):
        next_start[k] = following
        if first_gpu[k] != _NONE_YET:
            following = int(first_gpu[k])
    return _PerStep(kernels=np.bincount(k_idx[kernel_in], minlength=n_steps),
                    memcpy=np.bincount(k_idx[gpu.cat[sk] == MEMCPY], minlength=n_steps),
                    memset=np.bincount(k_idx[gpu.cat[sk] == MEMSET], minlength=n_steps), by_stream=by_stream,
                    first_gpu=first_gpu, last_gpu=last_gpu, graph_launches=graph_launches, collectives=collectives,
                    next_start=next_start)


def _step_rows(c: _Collected, gpu: _Gpu, links: _Links, steps: _Steps, coll: _Collectives,
               main: _MainStreamEvents) -> tuple[list[ProfileStepRow], list[_Window]]:
    """One row per complete step, and the GPU windows of the selected steps."""
    rows: list[ProfileStepRow] = []
    windows: list[_Window] = []
    if not steps.count:
        return rows, windows
    per = _per_step(c, gpu, links, steps, coll)
    labels = gpu.stream_labels
    for k in range(steps.count):
        has_gpu = per.first_gpu[k] != _NONE_YET
        win = busy = None
        if has_gpu:
            start = int(per.first_gpu[k])
            nxt = per.next_start[k]
            end = max(nxt if nxt is not None else int(per.last_gpu[k]), start)
            win = end - start
            busy = _overlap(main.busy_starts, main.busy_ends, start, end)
            if steps.selected[k]:
                windows.append(_Window(k, start, end))
        rows.append(ProfileStepRow(
            step=k, marker=steps.markers[k].name, start_ns=steps.starts[k],
            duration_us=_us(steps.ends[k] - steps.starts[k]), selected=bool(steps.selected[k]),
            kernels=int(per.kernels[k]),
            kernels_by_stream={labels[s]: int(per.by_stream[k, s]) for s in range(len(labels))
                               if per.by_stream[k, s]},
            memcpy=int(per.memcpy[k]), memset=int(per.memset[k]), graph_launches=per.graph_launches.get(k, 0),
            collectives=dict(sorted(per.collectives.get(k, Counter()).items())),
            gpu_start_ns=int(per.first_gpu[k]) if has_gpu else None,
            gpu_window_us=_us(win) if win is not None else None,
            main_stream_busy_us=_us(busy) if busy is not None else None))
    return rows, windows


def _step_figures(gpu: _Gpu, steps: _Steps, step_rows: list[ProfileStepRow], windows: list[_Window],
                  notes: list[str]) -> StepFigures | None:
    """How the selected steps' counts and times spread (None when per-step figures are refused)."""
    if steps.refused:
        return None
    sel_steps = steps.selected_steps
    rows = [step_rows[k] for k in sel_steps]
    per_stream_spread = {}
    for label in gpu.stream_labels:
        counts = np.array([r.kernels_by_stream.get(label, 0) for r in rows])
        if counts.any():
            per_stream_spread[label] = _spread(counts)
    step_ns = np.array([steps.ends[k] - steps.starts[k] for k in sel_steps], dtype=np.int64)
    win_ns = np.array([w.end - w.start for w in windows], dtype=np.int64)
    figures = StepFigures(
        steps=steps.selected_count,
        kernels_per_step=_spread(np.array([r.kernels for r in rows])),
        kernels_per_step_by_stream=per_stream_spread,
        memcpy_per_step=_spread(np.array([r.memcpy for r in rows])),
        memset_per_step=_spread(np.array([r.memset for r in rows])),
        step_us=_durations(step_ns), gpu_window_us=_durations(win_ns),
        kernel_us=_durations(gpu.dur[steps.in_selected & gpu.is_kernel]))
    if not figures.kernels_per_step.constant:
        notes.append(f"kernels per step vary from {figures.kernels_per_step.min:,} to "
                     f"{figures.kernels_per_step.max:,} across {steps.selected_count:,} steps")
    return figures


def _cuda_graphs(c: _Collected, links: _Links, gpu: _Gpu, steps: _Steps, step_rows: list[ProfileStepRow],
                 notes: list[str]) -> CudaGraphs:
    """CUDA-graph launches and the kernels each ran (in the selected steps, else in the whole trace)."""
    corr = links.corr
    scope = steps.in_selected if not steps.refused else links.linked
    graph_ids = np.fromiter(c.graph_launches, dtype=np.int64, count=len(c.graph_launches))
    kernels = corr[scope & gpu.is_kernel]
    per_launch = np.unique(kernels[np.isin(kernels, graph_ids)], return_counts=True)[1]  # kernels per graph launch
    launched = corr[scope]
    ids, sizes = np.unique(launched[launched >= 0], return_counts=True)
    multi = int(((sizes > 1) & ~np.isin(ids, graph_ids)).sum())
    graphs, graph_kernels = len(per_launch), int(per_launch.sum())
    if graphs:
        notes.append(f"{graphs:,} CUDA-graph launches ran {graph_kernels:,} kernels "
                     f"(each kernel counted in the step of its graph's launch)")
    return CudaGraphs(
        graph_launches=graphs, kernels=graph_kernels, kernels_per_launch=_spread(per_launch) if graphs else None,
        launches_per_step=_spread(np.array([step_rows[k].graph_launches for k in steps.selected_steps]))
        if not steps.refused and graphs else None,
        multi_kernel_launches=multi)


def _collectives(c: _Collected, gpu: _Gpu, steps: _Steps,
                 coll: _Collectives) -> tuple[list[ProfileCollectiveRow], list[CollectiveKind]]:
    """Each selected step's collectives by kind and position (the n-th call of a kind in its step)."""
    rows: list[ProfileCollectiveRow] = []
    if steps.refused or not coll.kinds:
        return rows, []
    step_of = steps.step_of
    idx = np.flatnonzero(steps.in_selected & gpu.is_kernel & (coll.of >= 0))
    idx = idx[np.lexsort((gpu.stream[idx], gpu.ts[idx], step_of[idx]))]
    position: Counter[tuple[int, int]] = Counter()
    by_pos: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for i in idx.tolist():
        k, ck = int(step_of[i]), int(coll.of[i])
        p = position[(k, ck)]
        position[(k, ck)] += 1
        rows.append(ProfileCollectiveRow(
            step=k, kind=coll.kinds[ck], position=p, name=c.names[int(gpu.name[i])], start_ns=int(gpu.ts[i]),
            duration_us=_us(int(gpu.dur[i])), stream=gpu.stream_labels[int(gpu.stream[i])]))
        by_pos.setdefault((ck, p), []).append((int(gpu.dur[i]), int(gpu.name[i])))
    rows.sort(key=lambda r: (r.step, r.kind, r.position))
    kinds = []
    for ck, kind in enumerate(coll.kinds):
        calls = np.array([position.get((int(k), ck), 0) for k in steps.selected_steps])
        if calls.any():
            kinds.append(CollectiveKind(kind=kind, calls=int(calls.sum()), calls_per_step=_spread(calls),
                                        positions=[_position(c.names, p, by_pos[(ck, p)])
                                                   for p in range(int(calls.max()))]))
    kinds.sort(key=lambda k: k.kind)
    return rows, kinds


def _position(names: list[str], position: int, calls: list[tuple[int, int]]) -> CollectivePosition:
    """One position's calls (duration ns, name index) across the steps; named by its commonest kernel."""
    durs = np.array([d for d, _ in calls], dtype=np.int64)
    common = Counter(nm for _, nm in calls).most_common()
    top = min(nid for nid, n in common if n == common[0][1])
    return CollectivePosition(position=position, steps=len(calls), median_us=_us(float(np.median(durs))),
                              min_us=_us(int(durs.min())), max_us=_us(int(durs.max())), name=names[top])


def _trace_info(c: _Collected, gpu: _Gpu) -> TraceInfo:
    meta = c.metadata
    dist: dict[str, Any] = meta["distributedInfo"] if isinstance(meta.get("distributedInfo"), dict) else {}
    props = {d.get("id"): d.get("name") for d in meta.get("deviceProperties", []) if isinstance(d, dict)} \
        if isinstance(meta.get("deviceProperties"), list) else {}
    is_kernel = gpu.is_kernel
    return TraceInfo(
        kineto_schema_version=_int_or_none(meta.get("schemaVersion")),
        rank=_int_or_none(dist.get("rank")), world_size=_int_or_none(dist.get("world_size")),
        devices=[f"{d}: {props[d]}" if isinstance(props.get(d), str) else f"{d}"
                 for d in sorted(set(gpu.dev.tolist()))],
        events=c.events, events_by_category=dict(sorted(c.categories.items())),
        kernels=int(is_kernel.sum()), memcpy=int((gpu.cat == MEMCPY).sum()), memset=int((gpu.cat == MEMSET).sum()),
        kernel_us=_us(int(gpu.dur[is_kernel].sum())), kernel_names=len(set(gpu.name[is_kernel].tolist())))


def _config(options: TraceOptions) -> TraceConfig:
    # analysis 1 wrote none of the fields after embed_limit_bytes (their defaults are its reading)
    later: dict[str, Any] = {"analysis": options.analysis, "step_span": options.step_span,
                             "collective_ops": {k: list(v) for k, v in options.collective_ops.items()}} \
        if options.analysis >= 2 else {}
    return TraceConfig(step_marker=options.step_marker, step_filter=options.step_filter,
                       marker_categories=list(options.marker_categories),
                       collectives={k: list(v) for k, v in options.collectives.items()},
                       main_stream=options.main_stream, embed_limit_bytes=options.embed_limit_bytes, **later)


def _no_gpu_activity(c: _Collected, file: str) -> str:
    """Why a trace without kernels, copies or memsets is refused, naming what it holds instead."""
    cats = c.categories
    held = ", ".join(f"{k} {n:,}" for k, n in cats.most_common(4)) or "no events"
    what = "no GPU activity (kernel, gpu_memcpy, gpu_memset events)"
    if cats.get("cuda_profiler_range"):
        return (f"{what}: a CUPTI range-profiler trace ({cats['cuda_profiler_range']:,} cuda_profiler_range "
                f"events hold counters per range, not kernels); take the trace with CUDA activity "
                f"(ProfilerActivity.CUDA) and without the range profiler")
    device = sorted(k for k in cats if k.lower().startswith(("mtia", "xpu", "hpu", "npu", "tpu")))
    if device:
        shown = ", ".join(f"{k} {cats[k]:,}" for k in device)
        return (f"{what}: the device activity is {shown} (an accelerator other than a CUDA or ROCm GPU), which "
                f"audit trace does not read")
    hint = ""
    if "async_llm" in file or c.vllm_functions:
        hint = ("; a vLLM server's API process writes such a trace (*.async_llm.*): the GPU workers' traces hold "
                "the kernels")
    return f"{what}: a CPU-only trace (it holds {held}){hint}"


def _by_enclosing_op(c: _Collected, options: TraceOptions, kinds: list[str], gpu: _Gpu, corr: np.ndarray,
                     of: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """Give NCCL/RCCL kernels that their name leaves unclassified the kind of the innermost communication op
    enclosing their launch on the launching thread; returns the kinds and the kernels still left out."""
    op_kinds = [kinds.index(k) for k, _ in options.ops_compiled()]
    nccl_names = np.array([bool(_NCCL_KERNEL.match(n)) for n in c.names], dtype=bool)
    todo = np.flatnonzero((of < 0) & gpu.is_kernel & nccl_names[gpu.name])
    if not len(todo):
        return of, []
    of = of.copy()
    per_thread = {t: sorted(v) for t, v in c.comm_ops.items()}
    starts = {t: [o.start for o in v] for t, v in per_thread.items()}
    longest = {t: max(o.end - o.start for o in v) for t, v in per_thread.items()}
    left = []
    for i in todo.tolist():
        launch = int(corr[i])
        ts, thread = c.launches.get(launch), c.launch_threads.get(launch)
        ops = per_thread.get(thread) if thread is not None else None
        kind = -1
        if ts is not None and thread is not None and ops:
            j = bisect_right(starts[thread], ts) - 1
            while j >= 0 and ops[j].start >= ts - longest[thread]:
                if ops[j].end >= ts:  # the latest-starting op still open at the launch: the innermost
                    kind = op_kinds[ops[j].kind]
                    break
                j -= 1
        if kind >= 0:
            of[i] = kind
        else:
            left.append(i)
    return of, left


def _int_or_none(v: Any) -> int | None:
    return v if type(v) is int else None


def _thread_label(key: tuple[Any, Any]) -> str:
    return f"{key[0]}/{key[1]}"


def _collective_kinds(names: list[str], res: list[tuple[str, re.Pattern[str]]]) -> list[int]:
    """For each kernel name, the index of the first collective kind it matches, or -1."""
    out = []
    for name in names:
        out.append(next((i for i, (_, r) in enumerate(res) if r.search(name)), -1))
    return out


def _merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of intervals (sorted by start) as disjoint sorted intervals."""
    if len(starts) == 0:
        return starts, ends
    run_end = np.maximum.accumulate(ends)
    new = np.empty(len(starts), dtype=bool)
    new[0] = True
    new[1:] = starts[1:] > run_end[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(starts) - 1)
    return starts[first], run_end[last]


def _clipped(ms: np.ndarray, me: np.ndarray, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
    """Starts and ends of the union intervals that meet [a, b), clipped to it."""
    i0 = int(np.searchsorted(me, a, side="right"))
    i1 = int(np.searchsorted(ms, b, side="left"))
    return np.maximum(ms[i0:i1], a), np.minimum(me[i0:i1], b)


def _overlap(ms: np.ndarray, me: np.ndarray, a: int, b: int) -> int:
    """Length of the union intervals' overlap with [a, b)."""
    s, e = _clipped(ms, me, a, b)
    return int(np.clip(e - s, 0, None).sum())


class _Idle(NamedTuple):
    """An idle stretch of the main stream inside a window."""

    start: int
    length: int
    step: int


def _main_stream(label: str, chosen: Literal["most kernels", "given"], window: Literal["steps", "trace"],
                 windows: list[_Window], main: _MainStreamEvents, names: list[str]) -> MainStream:
    """How busy the main stream is in the windows, and its idle gaps."""
    ms, me, m_ts, m_end, m_name = main.busy_starts, main.busy_ends, main.ts, main.end, main.name
    total = busy = 0
    starts, lengths, steps = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)], [np.zeros(0, np.int64)]
    for w in windows:
        total += w.end - w.start
        s, e = _clipped(ms, me, w.start, w.end)
        busy += int(np.clip(e - s, 0, None).sum())
        # idle: before the first interval, between intervals, after the last
        bounds_s = np.concatenate((np.array([w.start], dtype=np.int64), e))
        idle = np.concatenate((s, np.array([w.end], dtype=np.int64))) - bounds_s
        starts.append(bounds_s[idle > 0])
        lengths.append(idle[idle > 0])
        steps.append(np.full(len(starts[-1]), w.step, dtype=np.int64))
    gap_starts, gap_lengths, gap_steps = np.concatenate(starts), np.concatenate(lengths), np.concatenate(steps)
    hist: dict[str, int] = {}
    lo = 0
    for hi, name in _GAP_BUCKETS:
        sel = (gap_lengths >= lo) & (gap_lengths < hi) if hi is not None else gap_lengths >= lo
        hist[name] = int(sel.sum())
        lo = hi or 0
    # longest first, then earliest (a stable sort: ties keep window order)
    top = np.lexsort((gap_starts, -gap_lengths))[:LARGEST_GAPS]
    largest = [_Idle(int(gap_starts[i]), int(gap_lengths[i]), int(gap_steps[i])) for i in top.tolist()]

    def before(t: int) -> str | None:
        # the main-stream event that ends exactly where the gap starts (the latest-starting one)
        j = np.flatnonzero(m_end == t)
        return names[int(m_name[j[-1]])] if len(j) else None

    def after(t: int) -> str | None:
        j = int(np.searchsorted(m_ts, t, side="left"))
        return names[int(m_name[j])] if j < len(m_ts) and m_ts[j] == t else None

    return MainStream(
        stream=label, chosen=chosen, window=window, window_us=_us(total), busy_us=_us(busy),
        busy_fraction=round(busy / total, 6) if total else 0.0, gaps=len(gap_lengths), idle_us=_us(total - busy),
        gap_median_us=_us(float(np.median(gap_lengths))) if len(gap_lengths) else None,
        gap_max_us=_us(int(gap_lengths.max())) if len(gap_lengths) else None, gap_histogram=hist,
        largest_gaps=[Gap(start_ns=g.start, duration_us=_us(g.length), step=g.step if g.step >= 0 else None,
                          before=before(g.start), after=after(g.start + g.length)) for g in largest])


def _kernel_rows(names: list[str], gpu: _Gpu, steps: _Steps, coll: _Collectives) -> list[ProfileKernelRow]:
    """One row per kernel (copy, memset) name: counts and times in the selected steps and in the whole trace."""
    g_name, g_cat, g_dur, g_sidx, stream_labels = gpu.name, gpu.cat, gpu.dur, gpu.stream, gpu.stream_labels
    in_sel, step_of, sel_steps, g_coll = steps.in_selected, steps.step_of, steps.selected_steps, coll.of
    key = g_name * 3 + g_cat
    rows = []
    n_sel = len(sel_steps)
    # a selected step may have launched no GPU activity, so size by both
    step_pos = np.full(max(int(step_of.max()) + 1, int(sel_steps.max()) + 1 if n_sel else 0, 1), -1, dtype=np.int64)
    step_pos[sel_steps] = np.arange(n_sel)
    order = np.lexsort((g_dur, key))
    key_sorted = key[order]
    bounds = np.flatnonzero(np.diff(key_sorted)) + 1
    for grp in np.split(order, bounds):
        if len(grp) == 0:
            continue
        k = int(key[grp[0]])
        nid, cat = divmod(k, 3)
        sel = grp[in_sel[grp]]  # still sorted by duration
        d_sel = g_dur[sel]
        per_min = per_max = None
        if n_sel:
            counts = np.bincount(step_pos[step_of[sel]], minlength=n_sel)
            per_min, per_max = int(counts.min()), int(counts.max())
        cks = sorted({int(x) for x in g_coll[grp].tolist()} - {-1}) if cat == KERNEL else []
        rows.append(ProfileKernelRow(
            name=names[nid], category=CATEGORY_NAMES[cat],  # type: ignore[arg-type]  # one of the three
            collective="+".join(sorted(coll.kinds[ck] for ck in cks)) or None,
            count=int(len(sel)), total_us=_us(int(d_sel.sum())),
            median_us=_us(float(np.median(d_sel))) if len(sel) else None,
            min_us=_us(int(d_sel[0])) if len(sel) else None, max_us=_us(int(d_sel[-1])) if len(sel) else None,
            per_step_min=per_min, per_step_max=per_max, count_all=int(len(grp)),
            total_us_all=_us(int(g_dur[grp].sum())),
            streams=sorted({stream_labels[int(s)] for s in g_sidx[grp].tolist()}, key=_stream_sort_key)))
    rows.sort(key=lambda r: (-r.total_us, -r.total_us_all, r.name, r.category))
    return rows


def _stream_sort_key(label: str) -> tuple[int, ...]:
    return tuple(int(x) for x in label.split(":"))
