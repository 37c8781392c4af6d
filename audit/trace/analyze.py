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
from typing import Any

import numpy as np

from audit.models import ProfileCollectiveRow, ProfileKernelRow, ProfileStepRow
from audit.trace import DEFAULT_STEP_MARKER
from audit.trace.collect import (
    CATEGORY_NAMES,
    KERNEL,
    MARKER_CATEGORIES,
    MEMCPY,
    MEMSET,
    VLLM_STEP_MARKER,
    VLLM_WORKER_STEP_MARKER,
    _MISSING_CORRELATION,
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
    "reduce_scatter": (_FAMILY + r"nccl(?:Dev)?Kernel_ReduceScatter", _FAMILY + r"(?:two_shot|multimem)_reduce_scatter"),
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


# --------------------------------------------------------------------------- collection


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


def _stream_labels(dev: np.ndarray, stream: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Stream index per event and the label of each index (`STREAM`, or `DEVICE:STREAM` over several GPUs)."""
    if len(stream) == 0:
        return np.zeros(0, dtype=np.int64), []
    pairs = np.stack([dev, stream], axis=1)
    uniq, inverse = np.unique(pairs, axis=0, return_inverse=True)
    many = len(np.unique(dev)) > 1
    labels = [f"{d}:{s}" if many else f"{s}" for d, s in uniq.tolist()]
    return inverse.reshape(-1).astype(np.int64), labels


def analyze(path: str | Path, options: TraceOptions | None = None) -> TraceResult:
    """Summarise one trace file. Raises TraceError (one line) on bad input."""
    options = options or TraceOptions()
    marker_re, filter_re, collective_res = options.compiled()
    reader = TraceReader(path, options.max_json_chars)
    v2 = options.analysis >= 2
    ops = options.ops_compiled() if v2 else None
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
    notes: list[str] = []

    g_name = np.frombuffer(c.g_name, dtype=np.int64)
    g_cat = np.frombuffer(c.g_cat, dtype=np.int8)
    g_ts = np.frombuffer(c.g_ts, dtype=np.int64)
    g_dur = np.frombuffer(c.g_dur, dtype=np.int64)
    g_end = g_ts + g_dur
    g_dev = np.frombuffer(c.g_dev, dtype=np.int64)
    g_corr = np.frombuffer(c.g_corr, dtype=np.int64).copy()
    n_gpu = len(g_ts)
    if n_gpu == 0:
        raise TraceError(_no_gpu_activity(c, Path(reader.path).name), path=reader.label)
    g_sidx, stream_labels = _stream_labels(g_dev, np.frombuffer(c.g_stream, dtype=np.int64))

    # ---- link GPU events to their launch: correlation id, else the ac2g flow ending on the event
    by_flow = disagreements = 0
    if c.flow_ends:
        flow_ends = c.flow_ends
        corr_list = g_corr.tolist()
        for i, key in enumerate(zip(c.g_thread.tolist(), c.g_ts.tolist())):
            fid = flow_ends.get(key)
            if fid is None:
                continue
            if corr_list[i] == _MISSING_CORRELATION:
                corr_list[i] = fid
                by_flow += 1
            elif fid != corr_list[i]:
                disagreements += 1
        g_corr = np.array(corr_list, dtype=np.int64)
    get = c.launches.get
    launch_ts = np.array([get(x, -1) for x in g_corr.tolist()], dtype=np.int64)
    # ts -1 marks "no launch"; a real launch at ts -1 ns is not a thing profilers write.
    linked = launch_ts != -1
    n_linked = int(linked.sum())
    linking = Linking(launch_events=len(c.launches), gpu_events=n_gpu, by_correlation=n_linked - by_flow,
                      by_flow=by_flow, unlinked=n_gpu - n_linked, flow_disagreements=disagreements)
    if linking.unlinked:
        notes.append(f"{linking.unlinked:,} of {n_gpu:,} GPU events have no launching CPU event in the trace "
                     f"(launched before profiling started, or events dropped): they count in whole-trace totals "
                     f"only, never in a step")

    # ---- markers and steps
    markers = sorted(c.markers)
    marker_threads = Counter(m[3] for m in markers)
    thread_names = {v: k for k, v in c.threads.items()}
    if len(marker_threads) > 1:
        shown = ", ".join(f"{_thread_label(thread_names[t])} ({n})" for t, n in marker_threads.most_common(4))
        raise TraceError(f"step markers /{options.step_marker}/ are on {len(marker_threads)} threads: {shown}; "
                         f"use a --step-marker that matches one event per step", path=reader.label)
    for a, b in zip(markers, markers[1:]):
        if b[0] == a[0] or (a[4] is not None and b[0] < a[4]):
            raise TraceError(f"step markers overlap: {a[2]!r} and {b[2]!r} (traceEvents[{a[1]}], [{b[1]}]); "
                             f"use a --step-marker that matches one event per step", path=reader.label)
    by_span = options.step_span == "marker"
    if by_span:
        no_dur = next((m for m in markers if m[4] is None), None)
        if no_dur is not None:
            raise TraceError(f"--step-span marker: the step marker {no_dur[2]!r} (traceEvents[{no_dur[1]}]) has "
                             f"no duration", path=reader.label)
    starts = [m[0] for m in markers]
    n_steps = len(markers) if by_span else max(len(markers) - 1, 0)
    ends = [m[4] for m in markers] if by_span else starts[1:]
    step_of = np.full(n_gpu, -3, dtype=np.int64)  # -3 unlinked, -2 before first marker, -1 after last
    between = 0
    if markers:
        idx = np.searchsorted(np.asarray(starts, dtype=np.int64), launch_ts, side="right") - 1
        step_of = np.where(idx < 0, -2, np.where(idx >= n_steps, -1, idx))
        if by_span:  # launched after its marker's span ended: in no step (-4)
            end_of = np.asarray(ends, dtype=np.int64)[np.clip(idx, 0, None)]
            gap = (idx >= 0) & (launch_ts >= end_of)
            step_of = np.where(gap & (idx < n_steps - 1), -4, np.where(gap, -1, step_of))
            between = int(((step_of == -4) & linked).sum())
        step_of[~linked] = -3
    else:
        step_of[linked] = -2
    selected = np.array([filter_re is None or bool(filter_re.search(markers[k][2])) for k in range(n_steps)],
                        dtype=bool)
    n_sel = int(selected.sum())
    in_sel = (step_of >= 0) & selected[np.clip(step_of, 0, None)] if n_steps else np.zeros(n_gpu, dtype=bool)

    refused = None
    if not markers:
        refused = f"no event matches the step marker /{options.step_marker}/"
        if v2:
            refused += f" (markers are read from {', '.join(options.marker_categories)} events)"
    elif len(markers) == 1 and not by_span:
        refused = (f"only one step marker ({markers[0][2]!r}): a step needs a marker at each end, so no step "
                   f"is complete")
        if v2 and markers[0][4] is not None:
            refused += "; --step-span marker counts the marker's own span as one step (as HTA does)"
    elif n_sel == 0:
        refused = f"no complete step's marker matches --step-filter /{options.step_filter}/"
    elif not in_sel.any():
        refused = "no GPU activity was launched inside a selected complete step"
    if refused and c.vllm_annotations and options.step_marker != VLLM_STEP_MARKER:
        notes.append(f"the trace has {c.vllm_annotations:,} vLLM step annotations (execute_context_…): "
                     f"try --step-marker '{VLLM_STEP_MARKER}'")
    elif refused and v2 and c.vllm_worker_steps and options.step_marker != VLLM_WORKER_STEP_MARKER:
        notes.append(f"the trace has {c.vllm_worker_steps:,} vLLM engine steps (python_function "
                     f"…gpu_worker.py(N): execute_model): try --step-marker '{VLLM_WORKER_STEP_MARKER}'")
    if between:
        notes.append(f"{between:,} GPU events were launched between step markers' spans (--step-span marker): "
                     f"they are in no step")
    if refused:
        notes.append(f"no per-step figures: {refused}")
    marker_info = Markers(
        found=len(markers), first=markers[0][2] if markers else None, last=markers[-1][2] if markers else None,
        thread=_thread_label(thread_names[markers[0][3]]) if markers else None,
        complete_steps=n_steps, selected_steps=n_sel if not refused else 0,
        gpu_events_before_first=int((step_of == -2).sum()), gpu_events_after_last=int((step_of == -1).sum()),
        refused=refused)

    # ---- main stream: given, or the one that ran the most kernels (in the selected steps when there are);
    # not the most kernel time: a collective stream's kernels sit waiting for peers for long stretches.
    is_kernel = g_cat == KERNEL
    scope = in_sel if not refused else np.ones(n_gpu, dtype=bool)
    if options.main_stream is not None:
        if options.main_stream not in stream_labels:
            raise TraceError(f"--main-stream {options.main_stream}: no such stream in the trace "
                             f"(streams: {', '.join(stream_labels)})", path=reader.label)
        main = stream_labels.index(options.main_stream)
        chosen = "given"
    else:
        pick = scope & is_kernel if (scope & is_kernel).any() else np.ones(n_gpu, dtype=bool)
        count_by_stream = np.bincount(g_sidx[pick], minlength=len(stream_labels))
        time_by_stream = np.bincount(g_sidx[pick], weights=g_dur[pick], minlength=len(stream_labels))
        # most kernels, then most kernel time, then the lowest stream
        main = min(range(len(stream_labels)), key=lambda s: (-count_by_stream[s], -time_by_stream[s], s))
        chosen = "most kernels"
    on_main = g_sidx == main
    m_order = np.argsort(g_ts[on_main], kind="stable")
    m_ts, m_end = g_ts[on_main][m_order], g_end[on_main][m_order]
    m_name = g_name[on_main][m_order]
    merged_s, merged_e = _merge(m_ts, m_end)

    # ---- per-step rows
    step_rows: list[ProfileStepRow] = []
    windows: list[tuple[int, int, int]] = []  # (step, start, end) GPU windows of selected steps
    n_streams = len(stream_labels)
    kinds_all = [k for k, _ in collective_res]
    g_coll = np.array(_collective_kinds(c.names, collective_res), dtype=np.int64)[g_name] if n_gpu else \
        np.zeros(0, dtype=np.int64)
    if v2:
        kinds_all += [k for k in options.collective_ops if k not in kinds_all]
        g_coll, left_out = _by_enclosing_op(c, options, kinds_all, g_name, g_cat, g_corr, g_coll)
        collective_res = [(k, None) for k in kinds_all]
        if left_out:
            notes.append(f"{len(left_out):,} NCCL/RCCL kernels ({int(g_dur[left_out].sum()) / 1e6:,.3f} ms) are not "
                         f"counted as "
                         f"collectives: neither their name nor a communication op enclosing their launch "
                         f"(nccl:*, c10d::*, vllm::*, record_param_comms) names a collective kind")
    if n_steps:
        sk = step_of >= 0
        k_idx = step_of[sk]
        per_kernel = np.bincount(k_idx[is_kernel[sk]], minlength=n_steps)
        per_memcpy = np.bincount(k_idx[g_cat[sk] == MEMCPY], minlength=n_steps)
        per_memset = np.bincount(k_idx[g_cat[sk] == MEMSET], minlength=n_steps)
        per_stream = np.zeros((n_steps, max(n_streams, 1)), dtype=np.int64)
        np.add.at(per_stream, (k_idx[is_kernel[sk]], g_sidx[sk][is_kernel[sk]]), 1)
        first_gpu = np.full(n_steps, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(first_gpu, k_idx, g_ts[sk])
        last_gpu = np.full(n_steps, np.iinfo(np.int64).min, dtype=np.int64)
        np.maximum.at(last_gpu, k_idx, g_end[sk])
        after = step_of == -1
        next_after = int(g_ts[after].min()) if after.any() else None
        graph_corr = np.isin(g_corr, np.fromiter(c.graph_launches, dtype=np.int64, count=len(c.graph_launches)))
        per_graph = Counter()
        in_graph = sk & graph_corr
        for k, corr in set(zip(step_of[in_graph].tolist(), g_corr[in_graph].tolist())):
            per_graph[k] += 1
        per_coll: dict[int, Counter[str]] = {}
        is_coll = sk & (g_coll >= 0) & is_kernel
        for k, ck in zip(step_of[is_coll].tolist(), g_coll[is_coll].tolist()):
            per_coll.setdefault(k, Counter())[collective_res[ck][0]] += 1
        # A step's GPU window ends where the next step's GPU activity starts.
        next_start: list[int | None] = [None] * n_steps
        following = next_after
        for k in range(n_steps - 1, -1, -1):
            next_start[k] = following
            if first_gpu[k] != np.iinfo(np.int64).max:
                following = int(first_gpu[k])
        for k in range(n_steps):
            has_gpu = first_gpu[k] != np.iinfo(np.int64).max
            win = busy = None
            if has_gpu:
                start = int(first_gpu[k])
                end = next_start[k] if next_start[k] is not None else int(last_gpu[k])
                end = max(end, start)
                win = end - start
                busy = _overlap(merged_s, merged_e, start, end)
                if selected[k]:
                    windows.append((k, start, end))
            step_rows.append(ProfileStepRow(
                step=k, marker=markers[k][2], start_ns=starts[k], duration_us=_us(ends[k] - starts[k]),
                selected=bool(selected[k]), kernels=int(per_kernel[k]),
                kernels_by_stream={stream_labels[s]: int(per_stream[k, s]) for s in range(n_streams)
                                   if per_stream[k, s]},
                memcpy=int(per_memcpy[k]), memset=int(per_memset[k]), graph_launches=per_graph.get(k, 0),
                collectives=dict(sorted(per_coll.get(k, Counter()).items())),
                gpu_start_ns=int(first_gpu[k]) if has_gpu else None,
                gpu_window_us=_us(win) if win is not None else None,
                main_stream_busy_us=_us(busy) if busy is not None else None))

    # ---- step figures
    sel_steps = np.flatnonzero(selected) if not refused else np.zeros(0, dtype=np.int64)
    step_figures = None
    if not refused:
        rows = [step_rows[k] for k in sel_steps]
        per_stream_spread = {}
        for s in range(n_streams):
            counts = np.array([r.kernels_by_stream.get(stream_labels[s], 0) for r in rows])
            if counts.any():
                per_stream_spread[stream_labels[s]] = _spread(counts)
        step_ns = np.array([ends[k] - starts[k] for k in sel_steps], dtype=np.int64)
        win_ns = np.array([e - s for _, s, e in windows], dtype=np.int64)
        step_figures = StepFigures(
            steps=n_sel,
            kernels_per_step=_spread(np.array([r.kernels for r in rows])),
            kernels_per_step_by_stream=per_stream_spread,
            memcpy_per_step=_spread(np.array([r.memcpy for r in rows])),
            memset_per_step=_spread(np.array([r.memset for r in rows])),
            step_us=_durations(step_ns), gpu_window_us=_durations(win_ns),
            kernel_us=_durations(g_dur[in_sel & is_kernel]))
        if not step_figures.kernels_per_step.constant:
            notes.append(f"kernels per step vary from {step_figures.kernels_per_step.min:,} to "
                         f"{step_figures.kernels_per_step.max:,} across {n_sel:,} steps")

    # ---- main stream busy and gaps
    if refused:
        windows = [(-1, int(g_ts.min()), int(g_end.max()))]
    main_stream = _main_stream(stream_labels[main], chosen, "trace" if refused else "steps", windows,
                               merged_s, merged_e, m_ts, m_end, m_name, c.names)

    # ---- CUDA graphs
    graph_scope = in_sel if not refused else linked
    graph_counts = Counter(x for x in g_corr[graph_scope & is_kernel].tolist() if x in c.graph_launches)
    launch_sizes = Counter(x for x in g_corr[graph_scope].tolist() if x >= 0)
    multi = sum(1 for corr, n in launch_sizes.items() if n > 1 and corr not in c.graph_launches)
    cuda_graphs = CudaGraphs(
        graph_launches=len(graph_counts), kernels=sum(graph_counts.values()),
        kernels_per_launch=_spread(np.array(list(graph_counts.values()))) if graph_counts else None,
        launches_per_step=_spread(np.array([step_rows[k].graph_launches for k in sel_steps]))
        if not refused and graph_counts else None,
        multi_kernel_launches=multi)
    if graph_counts:
        notes.append(f"{len(graph_counts):,} CUDA-graph launches ran {sum(graph_counts.values()):,} kernels "
                     f"(each kernel counted in the step of its graph's launch)")

    # ---- collectives per position
    coll_rows: list[ProfileCollectiveRow] = []
    coll_kinds: list[CollectiveKind] = []
    if not refused and collective_res:
        sel = in_sel & is_kernel & (g_coll >= 0)
        idx = np.flatnonzero(sel)
        order = np.lexsort((g_sidx[idx], g_ts[idx], step_of[idx]))
        idx = idx[order]
        position: Counter[tuple[int, int]] = Counter()
        by_pos: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for i in idx.tolist():
            k, ck = int(step_of[i]), int(g_coll[i])
            p = position[(k, ck)]
            position[(k, ck)] += 1
            coll_rows.append(ProfileCollectiveRow(
                step=k, kind=collective_res[ck][0], position=p, name=c.names[int(g_name[i])],
                start_ns=int(g_ts[i]), duration_us=_us(int(g_dur[i])), stream=stream_labels[int(g_sidx[i])]))
            by_pos.setdefault((ck, p), []).append((int(g_dur[i]), int(g_name[i])))
        coll_rows.sort(key=lambda r: (r.step, r.kind, r.position))
        for ck, (kind, _) in enumerate(collective_res):
            calls = np.array([position.get((int(k), ck), 0) for k in sel_steps])
            if not calls.any():
                continue
            positions = []
            for p in range(int(calls.max())):
                items = by_pos[(ck, p)]
                durs = np.array([d for d, _ in items], dtype=np.int64)
                common = Counter(nm for _, nm in items).most_common()
                top = min(nid for nid, n in common if n == common[0][1])
                positions.append(CollectivePosition(
                    position=p, steps=len(items), median_us=_us(float(np.median(durs))), min_us=_us(int(durs.min())),
                    max_us=_us(int(durs.max())), name=c.names[top]))
            coll_kinds.append(CollectiveKind(kind=kind, calls=int(calls.sum()), calls_per_step=_spread(calls),
                                             positions=positions))
        coll_kinds.sort(key=lambda ck: ck.kind)

    # ---- kernel rows
    kernel_rows = _kernel_rows(c.names, g_name, g_cat, g_dur, g_sidx, stream_labels, in_sel, step_of,
                               sel_steps, g_coll, collective_res)

    meta = c.metadata
    dist = meta.get("distributedInfo") if isinstance(meta.get("distributedInfo"), dict) else {}
    used_devices = sorted(set(g_dev.tolist()))
    props = {d.get("id"): d.get("name") for d in meta.get("deviceProperties", []) if isinstance(d, dict)} \
        if isinstance(meta.get("deviceProperties"), list) else {}
    kernels_all = g_dur[is_kernel]
    info = TraceInfo(
        kineto_schema_version=_int_or_none(meta.get("schemaVersion")),
        rank=_int_or_none(dist.get("rank")), world_size=_int_or_none(dist.get("world_size")),
        devices=[f"{d}: {props[d]}" if isinstance(props.get(d), str) else f"{d}" for d in used_devices],
        events=c.events, events_by_category=dict(sorted(c.categories.items())),
        kernels=int(is_kernel.sum()), memcpy=int((g_cat == MEMCPY).sum()), memset=int((g_cat == MEMSET).sum()),
        kernel_us=_us(int(kernels_all.sum())), kernel_names=len(set(g_name[is_kernel].tolist())))
    summary = TraceSummary(
        source=TraceSource(file=Path(reader.path).name, sha256=reader.sha256, bytes=reader.bytes,
                           gzip=reader.gzip, json_chars=reader.text_chars, included=None),
        config=TraceConfig(step_marker=options.step_marker, step_filter=options.step_filter,
                           marker_categories=list(options.marker_categories),
                           collectives={k: list(v) for k, v in options.collectives.items()},
                           main_stream=options.main_stream, embed_limit_bytes=options.embed_limit_bytes,
                           **({"analysis": options.analysis, "step_span": options.step_span,
                               "collective_ops": {k: list(v) for k, v in options.collective_ops.items()}}
                              if v2 else {})),
        trace=info, linking=linking, markers=marker_info, steps=step_figures, main_stream=main_stream,
        cuda_graphs=cuda_graphs, collectives=coll_kinds, notes=notes)
    return TraceResult(summary, step_rows, kernel_rows, coll_rows)


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
        hint = "; a vLLM server's API process writes such a trace (*.async_llm.*): the GPU workers' traces hold the kernels"
    return f"{what}: a CPU-only trace (it holds {held}){hint}"


def _by_enclosing_op(c: _Collected, options: TraceOptions, kinds: list[str], g_name: np.ndarray,
                     g_cat: np.ndarray, g_corr: np.ndarray, g_coll: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """Give NCCL/RCCL kernels that their name leaves unclassified the kind of the innermost communication op
    enclosing their launch on the launching thread; returns the kinds and the kernels still left out."""
    op_kinds = [kinds.index(k) for k, _ in options.ops_compiled()]
    nccl_names = np.array([bool(_NCCL_KERNEL.match(n)) for n in c.names], dtype=bool)
    todo = np.flatnonzero((g_coll < 0) & (g_cat == KERNEL) & nccl_names[g_name] if len(g_name) else
                          np.zeros(0, dtype=bool))
    if not len(todo):
        return g_coll, []
    g_coll = g_coll.copy()
    per_thread = {t: sorted(v) for t, v in c.comm_ops.items()}
    starts = {t: [o[0] for o in v] for t, v in per_thread.items()}
    longest = {t: max(o[1] - o[0] for o in v) for t, v in per_thread.items()}
    left = []
    for i in todo.tolist():
        corr = int(g_corr[i])
        ts, thread = c.launches.get(corr), c.launch_threads.get(corr)
        ops = per_thread.get(thread)
        kind = -1
        if ts is not None and ops:
            j = bisect_right(starts[thread], ts) - 1
            while j >= 0 and ops[j][0] >= ts - longest[thread]:
                if ops[j][1] >= ts:  # the latest-starting op still open at the launch: the innermost
                    kind = op_kinds[ops[j][2]]
                    break
                j -= 1
        if kind >= 0:
            g_coll[i] = kind
        else:
            left.append(i)
    return g_coll, left


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


def _main_stream(label: str, chosen: str, window: str, windows: list[tuple[int, int, int]], ms: np.ndarray,
                 me: np.ndarray, m_ts: np.ndarray, m_end: np.ndarray, m_name: np.ndarray,
                 names: list[str]) -> MainStream:
    total = busy = 0
    gaps: list[tuple[int, int, int]] = []  # (start, length, step)
    for step, a, b in windows:
        total += b - a
        s, e = _clipped(ms, me, a, b)
        busy += int(np.clip(e - s, 0, None).sum())
        # idle: before the first interval, between intervals, after the last
        bounds_s = np.concatenate(([a], e))
        bounds_e = np.concatenate((s, [b]))
        lengths = bounds_e - bounds_s
        for gs, gl in zip(bounds_s[lengths > 0].tolist(), lengths[lengths > 0].tolist()):
            gaps.append((gs, gl, step))
    lengths = np.array([g[1] for g in gaps], dtype=np.int64)
    hist: dict[str, int] = {}
    lo = 0
    for hi, name in _GAP_BUCKETS:
        sel = (lengths >= lo) & (lengths < hi) if hi is not None else lengths >= lo
        hist[name] = int(sel.sum())
        lo = hi or 0
    largest = sorted(gaps, key=lambda g: (-g[1], g[0]))[:LARGEST_GAPS]

    def before(t: int) -> str | None:
        # the main-stream event that ends exactly where the gap starts (the latest-starting one)
        j = np.flatnonzero(m_end == t)
        return names[int(m_name[j[-1]])] if len(j) else None

    def after(t: int) -> str | None:
        j = int(np.searchsorted(m_ts, t, side="left"))
        return names[int(m_name[j])] if j < len(m_ts) and m_ts[j] == t else None

    return MainStream(
        stream=label, chosen=chosen, window=window, window_us=_us(total), busy_us=_us(busy),
        busy_fraction=round(busy / total, 6) if total else 0.0, gaps=len(gaps), idle_us=_us(total - busy),
        gap_median_us=_us(float(np.median(lengths))) if len(lengths) else None,
        gap_max_us=_us(int(lengths.max())) if len(lengths) else None, gap_histogram=hist,
        largest_gaps=[Gap(start_ns=s, duration_us=_us(n), step=k if k >= 0 else None, before=before(s),
                          after=after(s + n)) for s, n, k in largest])


def _kernel_rows(names: list[str], g_name: np.ndarray, g_cat: np.ndarray, g_dur: np.ndarray, g_sidx: np.ndarray,
                 stream_labels: list[str], in_sel: np.ndarray, step_of: np.ndarray, sel_steps: np.ndarray,
                 g_coll: np.ndarray, coll_res: list[tuple[str, re.Pattern[str]]]) -> list[ProfileKernelRow]:
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
            name=names[nid], category=CATEGORY_NAMES[cat],
            collective="+".join(sorted(coll_res[ck][0] for ck in cks)) or None,
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
