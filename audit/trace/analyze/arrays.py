"""The compact arrays the analyzers share (GPU events, links, steps, the main stream) and small helpers over them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import numpy as np

from audit.trace.collect import (
    Marker,
)
from audit.trace.models import (
    Durations,
    Linking,
    StepSpread,
)


def us(ns: float | int) -> float:
    return round(ns / 1000, 3)


def spread(values: np.ndarray) -> StepSpread:
    return StepSpread(median=float(np.median(values)), min=int(values.min()), max=int(values.max()),
                  constant=bool(values.min() == values.max()))


def durations(ns: np.ndarray) -> Durations:
    if len(ns) == 0:
        return Durations(count=0, median_us=0.0, min_us=0.0, max_us=0.0, total_us=0.0)
    return Durations(count=int(len(ns)), median_us=us(float(np.median(ns))), min_us=us(int(ns.min())),
                     max_us=us(int(ns.max())), total_us=us(int(ns.sum())))


@dataclass(frozen=True)
class GpuEvents:
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
class Links:
    """Each GPU event's launch: its correlation id (a flow's id where the event has none) and the launch's start."""

    corr: np.ndarray
    launch_ts: np.ndarray
    """-1: no launch in the trace (a real launch at ts -1 ns is not a thing profilers write)."""
    linked: np.ndarray
    linking: Linking


@dataclass(frozen=True)
class Steps:
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


class Window(NamedTuple):
    """The GPU window of one selected step (step -1: the whole trace)."""

    step: int
    start: int
    end: int


@dataclass(frozen=True)
class MainStreamEvents:
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
class CollectiveOf:
    """The collective kind of each GPU event (-1: none) and the kinds' names."""

    of: np.ndarray
    kinds: list[str]


def stream_labels(dev: np.ndarray, stream: np.ndarray) -> tuple[np.ndarray, list[str]]:
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


def merge_intervals(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def clipped(ms: np.ndarray, me: np.ndarray, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
    """Starts and ends of the union intervals that meet [a, b), clipped to it."""
    i0 = int(np.searchsorted(me, a, side="right"))
    i1 = int(np.searchsorted(ms, b, side="left"))
    return np.maximum(ms[i0:i1], a), np.minimum(me[i0:i1], b)


def overlap(ms: np.ndarray, me: np.ndarray, a: int, b: int) -> int:
    """Length of the union intervals' overlap with [a, b)."""
    s, e = clipped(ms, me, a, b)
    return int(np.clip(e - s, 0, None).sum())


def int_or_none(v: Any) -> int | None:
    return v if type(v) is int else None


def thread_label(key: tuple[Any, Any]) -> str:
    return f"{key[0]}/{key[1]}"
