"""TEST DOUBLE: a device layer for `audit.bench.telemetry` with made-up GPUs and injectable failures.

Counters are deterministic functions of how many readings were taken. Options: `unavailable`
(open() raises TelemetryUnavailable with that reason), `unsupported` (counter names that raise
CounterUnsupported, legacy or GPM), `lose` ({gpu: n}: raise GpuLost from the n-th reading of that
GPU on), `flaky` ({gpu: every}: every n-th utilization reading raises CounterError), `gpm` (GPM
support per GPU), `gpm_nan` (GPM metrics come back as errors like NaN with a success code),
`gpm_fail` (every GPM sample raises CounterError).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from audit.bench.telemetry import (
    CounterError,
    CounterUnsupported,
    DeviceInfo,
    DeviceLayer,
    GpuLost,
    TelemetryUnavailable,
)


class FakeLayer(DeviceLayer):
    def __init__(self, gpus: Sequence[str] = ("NVIDIA H200",), *, unavailable: str | None = None,
                 unsupported: Sequence[str] = (), lose: dict[int, int] | None = None,
                 flaky: dict[int, int] | None = None, gpm: Sequence[bool] | bool = True, gpm_nan: bool = False,
                 gpm_fail: bool = False):
        self.names = list(gpus)
        self.unavailable = unavailable
        self.unsupported = set(unsupported)
        self.lose = dict(lose or {})
        self.flaky = dict(flaky or {})
        self.gpm = [gpm] * len(self.names) if isinstance(gpm, bool) else list(gpm)
        self.gpm_nan = gpm_nan
        self.gpm_fail = gpm_fail
        self.reads = [0] * len(self.names)
        self.closed = False
        self.freed = 0
        self.lock = threading.Lock()

    def open(self) -> list[DeviceInfo]:
        if self.unavailable:
            raise TelemetryUnavailable(self.unavailable)
        return [DeviceInfo(i, n, f"GPU-fake-{i}") for i, n in enumerate(self.names)]

    def info(self) -> dict[str, Any]:
        return {"driver_version": "fake"}

    def _check(self, gpu: int, name: str) -> None:
        if name in self.unsupported:
            raise CounterUnsupported(f"{name}: Not Supported")
        if gpu in self.lose and self.reads[gpu] >= self.lose[gpu]:
            raise GpuLost("GPU is lost")

    def utilization(self, gpu: int) -> tuple[float, float]:
        self.reads[gpu] += 1
        self._check(gpu, "kernel_running_pct")
        every = self.flaky.get(gpu)
        if every and self.reads[gpu] % every == 0:
            raise CounterError("Unknown Error")
        return 99.0 - gpu, 40.0 + gpu

    def power_w(self, gpu: int) -> float:
        self._check(gpu, "power_w")
        return 300.0 + 10 * gpu

    def energy_j(self, gpu: int) -> float:
        self._check(gpu, "energy_j")
        return 1000.0 + 30.0 * self.reads[gpu]

    def clock_mhz(self, gpu: int, which: str) -> int:
        self._check(gpu, f"{which}_clock_mhz")
        return 1980 if which == "sm" else 2619

    def temperature_c(self, gpu: int) -> int:
        self._check(gpu, "temperature_c")
        return 45

    def gpm_supported(self, gpu: int) -> bool:
        return self.gpm[gpu]

    def gpm_alloc(self) -> Any:
        return {"gpu": None, "n": 0}

    def gpm_get(self, gpu: int, sample: Any) -> None:
        if self.gpm_fail:
            raise CounterError("Insufficient Permissions")
        if gpu in self.lose and self.reads[gpu] >= self.lose[gpu]:
            raise GpuLost("GPU is lost")
        sample["gpu"] = gpu
        sample["n"] += 1

    def gpm_metrics(self, first: Any, second: Any, names: Sequence[str]) -> dict[str, float | Exception]:
        out: dict[str, float | Exception] = {}
        for n in names:
            if n in self.unsupported:
                out[n] = CounterUnsupported(f"{n}: Not Supported")
            elif self.gpm_nan:
                out[n] = CounterError(f"{n}: nan with a success code")
            else:
                out[n] = {"sm_util_pct": 41.0, "sm_occupancy_pct": 12.5, "any_tensor_util_pct": 8.0,
                          "dram_bw_util_pct": 72.0}[n]
        return out

    def gpm_free(self, sample: Any) -> None:
        self.freed += 1

    def close(self) -> None:
        self.closed = True
