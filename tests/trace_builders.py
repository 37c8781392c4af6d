"""Small PyTorch-profiler-shaped traces that tests write themselves (event shapes as Kineto writes them)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

PID, TID = 4242, 4242


class TraceBuilder:
    """Build a Chrome trace: CPU step markers, launch events, GPU kernels sharing correlation ids."""

    def __init__(self, device: int = 0, rank: int | None = 0, world_size: int | None = 2):
        self.device = device
        self.events: list[dict[str, Any]] = []
        self.meta: dict[str, Any] = {"schemaVersion": 1}
        if rank is not None:
            self.meta["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": world_size}
        self.meta["deviceProperties"] = [{"id": device, "name": "NVIDIA H200"}]
        self._corr = 1000

    def next_corr(self) -> int:
        self._corr += 1
        return self._corr

    def marker(self, name: str, ts: float, dur: float | None = 50.0, cat: str = "user_annotation",
               tid: int = TID) -> None:
        e: dict[str, Any] = {"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": tid, "ts": ts}
        if dur is not None:
            e["dur"] = dur
        self.events.append(e)

    def launch(self, ts: float, name: str = "cudaLaunchKernel", corr: int | None = None,
               cat: str = "cuda_runtime") -> int:
        corr = self.next_corr() if corr is None else corr
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": TID, "ts": ts, "dur": 3.0,
                            "args": {"External id": corr, "cbid": 211, "correlation": corr}})
        return corr

    def gpu(self, name: str, ts: float, dur: float, corr: int | None, stream: int = 7, cat: str = "kernel",
            flow: bool = False) -> None:
        args: dict[str, Any] = {"device": self.device, "stream": stream}
        if corr is not None:
            args["correlation"] = corr
            args["External id"] = corr
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": self.device, "tid": stream, "ts": ts,
                            "dur": dur, "args": args})

    def kernel(self, name: str, launch_ts: float, ts: float, dur: float, stream: int = 7, *,
               with_correlation: bool = True, flow: bool = False) -> int:
        """A cudaLaunchKernel at launch_ts and its kernel on the GPU at ts."""
        corr = self.launch(launch_ts)
        self.gpu(name, ts, dur, corr if with_correlation else None, stream)
        if flow:
            self.events.append({"ph": "s", "id": corr, "pid": PID, "tid": TID, "ts": launch_ts, "cat": "ac2g",
                                "name": "ac2g"})
            self.events.append({"ph": "f", "id": corr, "pid": self.device, "tid": stream, "ts": ts, "cat": "ac2g",
                                "name": "ac2g", "bp": "e"})
        return corr

    def graph(self, launch_ts: float, kernels: list[tuple[str, float, float]], stream: int = 7) -> int:
        """One cudaGraphLaunch whose kernels (name, ts, dur) all carry its correlation id."""
        corr = self.launch(launch_ts, name="cudaGraphLaunch")
        for name, ts, dur in kernels:
            self.gpu(name, ts, dur, corr, stream)
        return corr

    def document(self) -> dict[str, Any]:
        return {**self.meta, "traceEvents": self.events, "traceName": "test"}

    def write(self, path: Path, gz: bool | None = None, indent: int | None = None) -> Path:
        text = json.dumps(self.document(), indent=indent)
        if gz if gz is not None else path.name.endswith(".gz"):
            with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as f:
                f.write(text.encode())
        else:
            path.write_text(text)
        return path


def decode_steps(b: TraceBuilder, steps: int = 3, period: float = 1000.0, *, lag: float = 1500.0,
                 start: float = 1_000_000.0, marker: str = "ProfilerStep#{k}") -> None:
    """`steps` complete decode-like steps, plus the last marker's step that has no end.

    Step k's launches happen at t0 = start + k*period (+10..+50 µs) and the GPU runs them `lag`
    µs later, i.e. inside a later step's CPU window: only the correlation id places them right.
    On the GPU, from G = t0 + lag, stream 7 runs back to back:
      rms_norm [G, G+20); NCCL all-reduce [G+20, G+120+k); idle until G+200;
      a CUDA graph (one cudaGraphLaunch) of 4 kernels [G+200, G+220); vLLM custom all-reduce
      [G+220, G+244+k); idle until the next step's G.
    Stream 13 runs one sampler kernel [G+300, G+310).
    So per step: 8 kernels (7 on stream 7, 1 on 13), main-stream busy 164+2k µs of 1000, two
    gaps (80-k and 756-k µs), all-reduce #0 = 100+k µs and #1 = 24+k µs.
    """
    for k in range(steps + 1):
        t0 = start + k * period
        g = t0 + lag
        b.marker(marker.format(k=k), t0, dur=period - 10)
        b.kernel("rms_norm_kernel", t0 + 10, g, 20.0)
        b.kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", t0 + 20, g + 20, 100.0 + k)
        b.graph(t0 + 30, [(f"graph_kernel_{i}", g + 200 + 5 * i, 5.0) for i in range(4)])
        b.kernel("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 2>", t0 + 40, g + 220, 24.0 + k)
        b.kernel("sampler_kernel", t0 + 50, g + 300, 10.0, stream=13)
