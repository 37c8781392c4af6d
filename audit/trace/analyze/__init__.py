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
`step_span="marker"` reads each marker's own span (start to start + dur) as the step instead, under which one
marker is one step; it is recorded in the summary's config. HTA 0.5.0 reads marker spans too but drops the last
ProfilerStep by default, so it counts one step fewer than `marker` (as many as `next_marker`).

The analysis has HTA's shape: one module per analyzer over the one parsed trace, and `analyze` as the facade.
Each analyzer returns its figure and its notes; the facade orders the notes as they appear in the summary:
- `gpu`: the GPU events as arrays, and what the trace holds;
- `linking`: each GPU event's launch;
- `steps`: the steps, their rows and spread;
- `main_stream`: the main stream's busy time and gaps;
- `collectives`: collective kinds and positions;
- `graphs`: CUDA graphs;
- `kernels`: the per-kernel rows;
- `options`: `TraceOptions`, and the one mapping to and from the recorded `config`.
"""

from __future__ import annotations

import gc
import re
from dataclasses import dataclass
from pathlib import Path

from audit.trace.analyze.arrays import Window
from audit.trace.analyze.collectives import classify_collectives, collective_rows
from audit.trace.analyze.gpu import gpu_events, trace_info
from audit.trace.analyze.graphs import graph_figures
from audit.trace.analyze.kernels import kernel_rows
from audit.trace.analyze.linking import link_launches
from audit.trace.analyze.main_stream import main_stream_figures, pick_main_stream
from audit.trace.analyze.options import (
    ANALYSIS_VERSION,
    DEFAULT_COLLECTIVE_OPS,
    DEFAULT_COLLECTIVES,
    EMBED_LIMIT_BYTES,
    NOT_RECORDED,
    STEP_SPANS,
    TraceOptions,
    with_collectives,
)
from audit.trace.analyze.steps import find_steps, marker_info, step_figures, step_rows
from audit.trace.collect import _Collected, collect, collect_fast
from audit.trace.models import ProfileCollectiveRow, ProfileKernelRow, ProfileStepRow, TraceSource, TraceSummary
from audit.trace.reader import FastPathUnsure, TraceError, TraceReader

__all__ = ["ANALYSIS_VERSION", "DEFAULT_COLLECTIVES", "DEFAULT_COLLECTIVE_OPS", "EMBED_LIMIT_BYTES", "NOT_RECORDED",
           "STEP_SPANS", "TraceOptions", "TraceResult", "analyze", "with_collectives"]


@dataclass
class TraceResult:
    """A summary and the rows of its package."""

    summary: TraceSummary
    steps: list[ProfileStepRow]
    kernels: list[ProfileKernelRow]
    collectives: list[ProfileCollectiveRow]


def analyze(path: str | Path, options: TraceOptions | None = None) -> TraceResult:
    """Summarise one trace file. Raises TraceError (one line) on bad input.

    One pass collects the compact arrays (`collect_fast`, else `collect`); each analyzer then computes its
    figure over them and returns its notes, gathered here in the order they appear."""
    options = options or TraceOptions()
    marker_re, filter_re, collective_res = options.compiled()
    c, reader = _collect(path, options, marker_re)
    gpu = gpu_events(c, reader)
    links, notes = link_launches(c, gpu)
    steps, more = find_steps(c, options, filter_re, gpu, links, reader.label)
    notes += more
    main = pick_main_stream(options, gpu, steps, reader.label)
    coll, more = classify_collectives(c, options, gpu, links, collective_res)
    notes += more
    rows, windows = step_rows(c, gpu, links, steps, coll, main)
    figures, more = step_figures(gpu, steps, rows, windows)
    notes += more
    if steps.refused:
        windows = [Window(-1, int(gpu.ts.min()), int(gpu.end.max()))]
    stream = main_stream_figures(gpu.stream_labels[main.index], main.chosen, "trace" if steps.refused else "steps",
                                 windows, main, c.names, options)
    graphs, more = graph_figures(c, links, gpu, steps, rows)
    notes += more
    coll_rows, coll_kinds = collective_rows(c, gpu, steps, coll)
    summary = TraceSummary(
        source=TraceSource(file=Path(reader.path).name, sha256=reader.sha256, bytes=reader.bytes,
                           gzip=reader.gzip, json_chars=reader.text_chars, included=None),
        config=options.to_config(), trace=trace_info(c, gpu, options), linking=links.linking,
        markers=marker_info(c, steps), steps=figures, main_stream=stream,
        cuda_graphs=graphs, collectives=coll_kinds, notes=notes)
    return TraceResult(summary, rows, kernel_rows(c.names, gpu, steps, coll), coll_rows)


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
