"""The steps the markers bound, each GPU event's step (by its launch), the per-step rows and their spread."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import numpy as np

from audit.trace.analyze.arrays import (
    CollectiveOf,
    GpuEvents,
    Links,
    MainStreamEvents,
    Steps,
    Window,
    durations,
    overlap,
    spread,
    thread_label,
    us,
)
from audit.trace.analyze.options import TraceOptions
from audit.trace.collect import (
    MEMCPY,
    MEMSET,
    SGLANG_STEP_MARKER,
    VLLM_STEP_MARKER,
    VLLM_WORKER_STEP_MARKER,
    Marker,
    _Collected,
)
from audit.trace.models import (
    Markers,
    ProfileStepRow,
    StepFigures,
)
from audit.trace.reader import TraceError


def _checked_markers(c: _Collected, options: TraceOptions, label: str) -> list[Marker]:
    """The step markers by start; markers on several threads, overlapping, or (--step-span marker) without a
    duration are refused."""
    markers = sorted(c.markers)
    marker_threads = Counter(m.thread for m in markers)
    if len(marker_threads) > 1:
        thread_names = {v: k for k, v in c.threads.items()}
        shown = ", ".join(f"{thread_label(thread_names[t])} ({n})" for t, n in marker_threads.most_common(4))
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


def _step_of(markers: list[Marker], by_span: bool, links: Links) -> tuple[np.ndarray, int]:
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
        if options.analysis >= 3 and markers[0].end is not None:
            refused += ("; --step-span marker counts the marker's own span as one step (HTA 0.5.0 reads marker "
                        "spans too, but drops the last ProfilerStep by default, which leaves it none here)")
        elif v2 and markers[0].end is not None:
            refused += "; --step-span marker counts the marker's own span as one step (as HTA does)"
        return refused
    if selected_count == 0:
        return f"no complete step's marker matches --step-filter /{options.step_filter}/"
    if not in_selected.any():
        return "no GPU activity was launched inside a selected complete step"
    return None


def find_steps(c: _Collected, options: TraceOptions, filter_re: re.Pattern[str] | None, gpu: GpuEvents, links: Links,
           label: str) -> tuple[Steps, list[str]]:
    """The steps: marker k's start to marker k+1's (or, --step-span marker, marker k's own span); and the notes
    on them (a step-marker hint, events between spans, why there are no per-step figures)."""
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
    steps = Steps(markers=markers, starts=starts, ends=ends, count=n_steps,
                  step_of=step_of, selected=selected, selected_count=selected_count, in_selected=in_selected,
                  between=between, refused=_refusal(options, markers, selected_count, in_selected))
    return steps, _step_notes(c, options, steps)


def _step_notes(c: _Collected, options: TraceOptions, steps: Steps) -> list[str]:
    """A hint at vLLM's (or SGLang's) step marker where the trace has its annotations, how --step-span marker's
    count differs from HTA's, and why steps are missing."""
    notes = []
    refused, v2, v3 = steps.refused, options.analysis >= 2, options.analysis >= 3
    if refused and c.vllm_annotations and options.step_marker != VLLM_STEP_MARKER:
        notes.append(f"the trace has {c.vllm_annotations:,} vLLM step annotations (execute_context_…): "
                     f"try --step-marker '{VLLM_STEP_MARKER}'")
    elif refused and v2 and c.vllm_worker_steps and options.step_marker != VLLM_WORKER_STEP_MARKER:
        notes.append(f"the trace has {c.vllm_worker_steps:,} vLLM engine steps (python_function "
                     f"…gpu_worker.py(N): execute_model): try --step-marker '{VLLM_WORKER_STEP_MARKER}'")
    elif refused and v3 and c.sglang_steps and options.step_marker != SGLANG_STEP_MARKER:
        notes.append(f"the trace has {c.sglang_steps:,} SGLang step annotations (step[EXTEND bs=… toks=…], "
                     f"step[DECODE …]): try --step-marker '{SGLANG_STEP_MARKER}'")
    if v3 and options.step_span == "marker" and steps.count and not refused:
        notes.append(f"--step-span marker: each of the {steps.count:,} markers' own spans is a step; HTA 0.5.0 "
                     f"drops the last ProfilerStep by default, so it reports {steps.count - 1:,} (a step marker at "
                     f"each end, the default --step-span next_marker, gives HTA's count)")
    if steps.between:
        notes.append(f"{steps.between:,} GPU events were launched between step markers' spans (--step-span "
                     f"marker): they are in no step")
    if refused:
        notes.append(f"no per-step figures: {refused}")
    return notes


def marker_info(c: _Collected, steps: Steps) -> Markers:
    markers = steps.markers
    thread_names = {v: k for k, v in c.threads.items()}
    return Markers(
        found=len(markers), first=markers[0].name if markers else None, last=markers[-1].name if markers else None,
        thread=thread_label(thread_names[markers[0].thread]) if markers else None,
        complete_steps=steps.count, selected_steps=steps.selected_count if not steps.refused else 0,
        gpu_events_before_first=int((steps.step_of == -2).sum()),
        gpu_events_after_last=int((steps.step_of == -1).sum()), refused=steps.refused)


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


def _per_step(c: _Collected, gpu: GpuEvents, links: Links, steps: Steps, coll: CollectiveOf) -> _PerStep:
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


def step_rows(c: _Collected, gpu: GpuEvents, links: Links, steps: Steps, coll: CollectiveOf,
               main: MainStreamEvents) -> tuple[list[ProfileStepRow], list[Window]]:
    """One row per complete step, and the GPU windows of the selected steps."""
    rows: list[ProfileStepRow] = []
    windows: list[Window] = []
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
            busy = overlap(main.busy_starts, main.busy_ends, start, end)
            if steps.selected[k]:
                windows.append(Window(k, start, end))
        rows.append(ProfileStepRow(
            step=k, marker=steps.markers[k].name, start_ns=steps.starts[k],
            duration_us=us(steps.ends[k] - steps.starts[k]), selected=bool(steps.selected[k]),
            kernels=int(per.kernels[k]),
            kernels_by_stream={labels[s]: int(per.by_stream[k, s]) for s in range(len(labels))
                               if per.by_stream[k, s]},
            memcpy=int(per.memcpy[k]), memset=int(per.memset[k]), graph_launches=per.graph_launches.get(k, 0),
            collectives=dict(sorted(per.collectives.get(k, Counter()).items())),
            gpu_start_ns=int(per.first_gpu[k]) if has_gpu else None,
            gpu_window_us=us(win) if win is not None else None,
            main_stream_busy_us=us(busy) if busy is not None else None))
    return rows, windows


def step_figures(gpu: GpuEvents, steps: Steps, step_rows: list[ProfileStepRow], windows: list[Window]
                 ) -> tuple[StepFigures | None, list[str]]:
    """How the selected steps' counts and times spread (None when per-step figures are refused)."""
    if steps.refused:
        return None, []
    sel_steps = steps.selected_steps
    rows = [step_rows[k] for k in sel_steps]
    per_stream_spread = {}
    for label in gpu.stream_labels:
        counts = np.array([r.kernels_by_stream.get(label, 0) for r in rows])
        if counts.any():
            per_stream_spread[label] = spread(counts)
    step_ns = np.array([steps.ends[k] - steps.starts[k] for k in sel_steps], dtype=np.int64)
    win_ns = np.array([w.end - w.start for w in windows], dtype=np.int64)
    figures = StepFigures(
        steps=steps.selected_count,
        kernels_per_step=spread(np.array([r.kernels for r in rows])),
        kernels_per_step_by_stream=per_stream_spread,
        memcpy_per_step=spread(np.array([r.memcpy for r in rows])),
        memset_per_step=spread(np.array([r.memset for r in rows])),
        step_us=durations(step_ns), gpu_window_us=durations(win_ns),
        kernel_us=durations(gpu.dur[steps.in_selected & gpu.is_kernel]))
    notes = []
    if not figures.kernels_per_step.constant:
        notes.append(f"kernels per step vary from {figures.kernels_per_step.min:,} to "
                     f"{figures.kernels_per_step.max:,} across {steps.selected_count:,} steps")
    return figures, notes
