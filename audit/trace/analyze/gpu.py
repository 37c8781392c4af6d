"""The GPU events as arrays, and what the trace file holds (`TraceInfo`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from audit.trace.analyze.arrays import (
    GpuEvents,
    int_or_none,
    stream_labels,
    us,
)
from audit.trace.analyze.options import TraceOptions
from audit.trace.collect import (
    KERNEL,
    MEMCPY,
    MEMSET,
    _Collected,
)
from audit.trace.models import (
    TraceInfo,
)
from audit.trace.reader import TraceError, TraceReader


def gpu_events(c: _Collected, reader: TraceReader) -> GpuEvents:
    """The GPU events' arrays; a trace without any is refused, naming what it holds."""
    ts = np.frombuffer(c.g_ts, dtype=np.int64)
    if len(ts) == 0:
        raise TraceError(_no_gpu_activity(c, Path(reader.path).name), path=reader.label)
    dur = np.frombuffer(c.g_dur, dtype=np.int64)
    dev = np.frombuffer(c.g_dev, dtype=np.int64)
    cat = np.frombuffer(c.g_cat, dtype=np.int8)
    stream, labels = stream_labels(dev, np.frombuffer(c.g_stream, dtype=np.int64))
    return GpuEvents(name=np.frombuffer(c.g_name, dtype=np.int64), cat=cat, ts=ts, dur=dur, end=ts + dur, dev=dev,
                stream=stream, stream_labels=labels, is_kernel=cat == KERNEL)


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


def trace_info(c: _Collected, gpu: GpuEvents, options: TraceOptions) -> TraceInfo:
    meta = c.metadata
    dist: dict[str, Any] = meta["distributedInfo"] if isinstance(meta.get("distributedInfo"), dict) else {}
    props = {d.get("id"): d.get("name") for d in meta.get("deviceProperties", []) if isinstance(d, dict)} \
        if isinstance(meta.get("deviceProperties"), list) else {}
    is_kernel = gpu.is_kernel
    return TraceInfo(
        kineto_schema_version=int_or_none(meta.get("schemaVersion")),
        rank=int_or_none(dist.get("rank")), world_size=int_or_none(dist.get("world_size")),
        devices=[f"{d}: {name}" if isinstance(name := props.get(d), str) and (name.strip() or options.analysis < 3)
                 else f"{d}"
                 for d in sorted(set(gpu.dev.tolist()))],
        events=c.events, events_by_category=dict(sorted(c.categories.items())),
        kernels=int(is_kernel.sum()), memcpy=int((gpu.cat == MEMCPY).sum()), memset=int((gpu.cat == MEMSET).sum()),
        kernel_us=us(int(gpu.dur[is_kernel].sum())), kernel_names=len(set(gpu.name[is_kernel].tolist())))
