"""How busy the main stream is in the selected steps' GPU windows (or the whole trace), and its idle gaps."""

from __future__ import annotations

from typing import Literal, NamedTuple

import numpy as np

from audit.trace.analyze.arrays import (
    GpuEvents,
    MainStreamEvents,
    Steps,
    Window,
    clipped,
    merge_intervals,
    us,
)
from audit.trace.analyze.options import SPACING_NS, TraceOptions
from audit.trace.models import (
    Gap,
    MainStream,
)
from audit.trace.reader import TraceError

LARGEST_GAPS = 10


_GAP_BUCKETS = ((1_000, "<1us"), (10_000, "1-10us"), (100_000, "10-100us"), (1_000_000, "100us-1ms"),
                (None, ">=1ms"))


def pick_main_stream(options: TraceOptions, gpu: GpuEvents, steps: Steps, label: str) -> MainStreamEvents:
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
    busy_starts, busy_ends = merge_intervals(ts, end)
    return MainStreamEvents(index=main, chosen=chosen, ts=ts, end=end, name=gpu.name[on_main][order],
                             busy_starts=busy_starts, busy_ends=busy_ends)


class _Idle(NamedTuple):
    """An idle stretch of the main stream inside a window."""

    start: int
    length: int
    step: int


def main_stream_figures(label: str, chosen: Literal["most kernels", "given"], window: Literal["steps", "trace"],
                        windows: list[Window], main: MainStreamEvents, names: list[str], options: TraceOptions
                        ) -> MainStream:
    """How busy the main stream is in the windows, and its idle gaps."""
    ms, me, m_ts, m_end, m_name = main.busy_starts, main.busy_ends, main.ts, main.end, main.name
    total = busy = 0
    spacing = SPACING_NS if options.analysis >= 3 else 0  # ROCm's 1 ns between back-to-back kernels is no gap
    starts, lengths, steps = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)], [np.zeros(0, np.int64)]
    for w in windows:
        total += w.end - w.start
        s, e = clipped(ms, me, w.start, w.end)
        busy += int(np.clip(e - s, 0, None).sum())
        # idle: before the first interval, between intervals, after the last
        bounds_s = np.concatenate((np.array([w.start], dtype=np.int64), e))
        idle = np.concatenate((s, np.array([w.end], dtype=np.int64))) - bounds_s
        gap = idle > spacing
        starts.append(bounds_s[gap])
        lengths.append(idle[gap])
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
        stream=label, chosen=chosen, window=window, window_us=us(total), busy_us=us(busy),
        busy_fraction=round(busy / total, 6) if total else 0.0, gaps=len(gap_lengths), idle_us=us(total - busy),
        gap_median_us=us(float(np.median(gap_lengths))) if len(gap_lengths) else None,
        gap_max_us=us(int(gap_lengths.max())) if len(gap_lengths) else None, gap_histogram=hist,
        largest_gaps=[Gap(start_ns=g.start, duration_us=us(g.length), step=g.step if g.step >= 0 else None,
                          before=before(g.start), after=after(g.start + g.length)) for g in largest])
