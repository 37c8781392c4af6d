"""GPU counters sampled beside a throughput run, through NVML (nvidia-ml-py, `import pynvml`).

A sampler thread reads, for every GPU, at `hz` (default 10):

- `utilization.gpu`, stored as `kernel_running_pct`: the percent of the driver's last sample period
  in which at least one kernel ran. It says nothing of how many SMs worked: a GPU running one small
  kernel at a time reads 100. `utilization.memory` (`memory_busy_pct`): percent of that period in
  which memory was read or written.
- power (W), SM and memory clocks, temperature;

the total-energy counter (J; a window's energy is the difference at its edges) at the first reading
after each `mark()` (the throughput run marks every window edge) and every `energy_interval_s`
(default 5 s): on an H200 one energy read cost 3 ms of CPU, a thousand times the other counters, so
reading it at 10 Hz took 2.9% of a core;

and, on GPUs with NVML GPM (Hopper and newer), every `gpm_interval_s` (at least 0.1 s: GPM metrics
over a shorter interval come back as zeros or NaN with a success code) a GPM sample, whose metrics
are computed over the interval from the previous one: SM_UTIL (share of SMs busy), SM_OCCUPANCY,
ANY_TENSOR_UTIL and DRAM_BW_UTIL.

Bad conditions are records, not crashes: no NVML library, no GPU or no nvidia-ml-py gives a telemetry
package that says counters were unavailable and why; a counter the GPU does not support is recorded
as unsupported (its values null, never zero); a GPU that is lost mid-run gets an error row and an
event, and the other GPUs and the run go on.

NVML is reached through `DeviceLayer`, a small interface, so tests inject failures.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from audit import schemas
from audit.bench.clock import RunClock
from audit.bench.figures import FiguresDoc
from audit.bench.rows import GpmSampleRow, GpuSampleRow

GPM_FAILURES_KEPT = 3
"""GPM sample failures of one GPU recorded as events one by one."""
GPM_GIVE_UP = 10
"""Consecutive GPM sample failures after which a GPU's GPM metrics are no longer read."""

MIN_GPM_INTERVAL_S = 0.1
"""Shortest interval between the two GPM samples of a metric: NVML returns zeros or NaN below it."""

LEGACY_COUNTERS = ("kernel_running_pct", "memory_busy_pct", "power_w", "energy_j", "sm_clock_mhz",
                   "mem_clock_mhz", "temperature_c")
GPM_METRICS = ("sm_util_pct", "sm_occupancy_pct", "any_tensor_util_pct", "dram_bw_util_pct")
GPM_IDS = {"sm_util_pct": 2, "sm_occupancy_pct": 3, "any_tensor_util_pct": 5, "dram_bw_util_pct": 10}
"""pynvml's NVML_GPM_METRIC_SM_UTIL, _SM_OCCUPANCY, _ANY_TENSOR_UTIL and _DRAM_BW_UTIL."""


# --------------------------------------------------------------------------- the device layer


class TelemetryUnavailable(Exception):
    """No counters can be read at all (no library, no driver, no GPU)."""


class CounterUnsupported(Exception):
    """This GPU or driver does not have the counter."""


class GpuLost(Exception):
    """The GPU stopped answering (fell off the bus, was reset)."""


class CounterError(Exception):
    """Any other failure of one reading."""


@dataclass(frozen=True)
class DeviceInfo:
    index: int
    name: str
    uuid: str | None = None


class DeviceLayer:
    """What the sampler needs from NVML. Methods raise CounterUnsupported, GpuLost or CounterError."""

    def open(self) -> list[DeviceInfo]:
        """Initialise; the GPUs. Raises TelemetryUnavailable."""
        raise NotImplementedError

    def info(self) -> dict[str, Any]:
        """Versions of the library and driver, for the record."""
        return {}

    def utilization(self, gpu: int) -> tuple[float, float]:
        """(utilization.gpu, utilization.memory), percent."""
        raise NotImplementedError

    def power_w(self, gpu: int) -> float:
        raise NotImplementedError

    def energy_j(self, gpu: int) -> float:
        raise NotImplementedError

    def clock_mhz(self, gpu: int, which: str) -> int:
        """`which` is `sm` or `mem`."""
        raise NotImplementedError

    def temperature_c(self, gpu: int) -> int:
        raise NotImplementedError

    def gpm_supported(self, gpu: int) -> bool:
        return False

    def gpm_alloc(self) -> Any:
        raise CounterUnsupported("GPM")

    def gpm_get(self, gpu: int, sample: Any) -> None:
        """Fill `sample` with the GPU's GPM counters now."""
        raise CounterUnsupported("GPM")

    def gpm_metrics(self, first: Any, second: Any, names: Sequence[str]) -> dict[str, float | Exception]:
        """Each GPM metric over the interval between two samples, or the exception that prevented it."""
        raise CounterUnsupported("GPM")

    def gpm_free(self, sample: Any) -> None:
        pass

    def close(self) -> None:
        pass


class NvmlLayer(DeviceLayer):
    """The real device layer: nvidia-ml-py's `pynvml`."""

    def __init__(self) -> None:
        self._nv: Any = None
        self._handles: list[Any] = []

    def _call(self, fn: Any, *args: Any) -> Any:
        nv = self._nv
        try:
            return fn(*args)
        except nv.NVMLError as e:
            code = getattr(e, "value", None)
            if code in (nv.NVML_ERROR_NOT_SUPPORTED, nv.NVML_ERROR_FUNCTION_NOT_FOUND):
                raise CounterUnsupported(str(e)) from None
            if code == nv.NVML_ERROR_GPU_IS_LOST:
                raise GpuLost(str(e)) from None
            raise CounterError(str(e)) from None

    def open(self) -> list[DeviceInfo]:
        try:
            import pynvml
        except ImportError:
            raise TelemetryUnavailable("nvidia-ml-py (pynvml) is not installed") from None
        self._nv = pynvml
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as e:
            raise TelemetryUnavailable(f"NVML did not initialise: {e}") from None
        except OSError as e:  # a broken library file
            raise TelemetryUnavailable(f"NVML did not load: {e}") from None
        try:
            n = pynvml.nvmlDeviceGetCount()
            if n == 0:
                raise TelemetryUnavailable("NVML found no GPU")
            devices = []
            for i in range(n):
                h = pynvml.nvmlDeviceGetHandleByIndex(i)
                self._handles.append(h)
                devices.append(DeviceInfo(i, _text(pynvml.nvmlDeviceGetName(h)), _text(pynvml.nvmlDeviceGetUUID(h))))
            return devices
        except pynvml.NVMLError as e:
            pynvml.nvmlShutdown()
            raise TelemetryUnavailable(f"NVML could not list the GPUs: {e}") from None

    def info(self) -> dict[str, Any]:
        nv = self._nv
        out: dict[str, Any] = {}
        for key, fn in (("driver_version", "nvmlSystemGetDriverVersion"), ("nvml_version", "nvmlSystemGetNVMLVersion")):
            try:
                out[key] = _text(getattr(nv, fn)())
            except Exception:  # informational only
                pass
        try:
            from importlib.metadata import version

            out["nvidia_ml_py"] = version("nvidia-ml-py")
        except Exception:
            pass
        return out

    def utilization(self, gpu: int) -> tuple[float, float]:
        u = self._call(self._nv.nvmlDeviceGetUtilizationRates, self._handles[gpu])
        return float(u.gpu), float(u.memory)

    def power_w(self, gpu: int) -> float:
        return float(self._call(self._nv.nvmlDeviceGetPowerUsage, self._handles[gpu])) / 1000.0

    def energy_j(self, gpu: int) -> float:
        return float(self._call(self._nv.nvmlDeviceGetTotalEnergyConsumption, self._handles[gpu])) / 1000.0

    def clock_mhz(self, gpu: int, which: str) -> int:
        kind = self._nv.NVML_CLOCK_SM if which == "sm" else self._nv.NVML_CLOCK_MEM
        return int(self._call(self._nv.nvmlDeviceGetClockInfo, self._handles[gpu], kind))

    def temperature_c(self, gpu: int) -> int:
        return int(self._call(self._nv.nvmlDeviceGetTemperature, self._handles[gpu], self._nv.NVML_TEMPERATURE_GPU))

    def gpm_supported(self, gpu: int) -> bool:
        if not hasattr(self._nv, "nvmlGpmQueryDeviceSupport"):
            return False
        try:
            return bool(self._call(self._nv.nvmlGpmQueryDeviceSupport, self._handles[gpu]).isSupportedDevice)
        except (CounterUnsupported, CounterError):
            return False

    def gpm_alloc(self) -> Any:
        return self._call(self._nv.nvmlGpmSampleAlloc)

    def gpm_get(self, gpu: int, sample: Any) -> None:
        self._call(self._nv.nvmlGpmSampleGet, self._handles[gpu], sample)

    def gpm_metrics(self, first: Any, second: Any, names: Sequence[str]) -> dict[str, float | Exception]:
        nv = self._nv
        mg = nv.c_nvmlGpmMetricsGet_t()
        mg.version = nv.NVML_GPM_METRICS_GET_VERSION
        mg.numMetrics = len(names)
        mg.sample1 = first
        mg.sample2 = second
        for j, name in enumerate(names):
            mg.metrics[j].metricId = GPM_IDS[name]
        self._call(nv.nvmlGpmMetricsGet, mg)
        out: dict[str, float | Exception] = {}
        for j, name in enumerate(names):
            m = mg.metrics[j]
            if m.nvmlReturn == nv.NVML_ERROR_NOT_SUPPORTED:
                out[name] = CounterUnsupported(f"{name}: Not Supported")
            elif m.nvmlReturn != nv.NVML_SUCCESS:
                out[name] = CounterError(f"{name}: NVML error {m.nvmlReturn}")
            elif not math.isfinite(m.value):
                out[name] = CounterError(f"{name}: {m.value} with a success code")
            else:
                out[name] = float(m.value)
        return out

    def gpm_free(self, sample: Any) -> None:
        try:
            self._nv.nvmlGpmSampleFree(sample)
        except Exception:
            pass

    def close(self) -> None:
        if self._nv is not None:
            try:
                self._nv.nvmlShutdown()
            except Exception:
                pass


def _text(v: Any) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


# --------------------------------------------------------------------------- the sampler


@dataclass
class _Gpu:
    info: DeviceInfo
    status: dict[str, str] = field(default_factory=dict)
    lost: bool = False
    gpm: bool = False
    gpm_samples: list[Any] = field(default_factory=list)
    gpm_prev_t: float | None = None
    gpm_failures: int = 0


@dataclass
class SamplerResult:
    """Everything the sampler recorded; becomes the telemetry package."""

    status: str
    """`ok`, `unavailable: <why>` or `failed: <why>` (the thread stopped mid-run)."""
    devices: list[DeviceInfo]
    counters: dict[str, dict[str, str]]
    """Per GPU (index as text), per counter: `ok`, `unsupported` or `not read: <why>`."""
    gpu_rows: list[dict[str, Any]]
    gpm_rows: list[dict[str, Any]]
    events: list[dict[str, Any]]
    info: dict[str, Any]
    hz: float
    gpm_interval_s: float
    cpu_s: float
    wall_s: float
    late_ticks: int


class Sampler:
    """Reads the counters of every GPU on a thread until `stop()`.

    Rows are kept as plain dicts in memory (a few hundred bytes a reading: an hour at 10 Hz on 8 GPUs
    is under 100 MB) and validated into row models when the package is written.
    """

    def __init__(self, layer: DeviceLayer, clock: RunClock, *, hz: float = 10.0, gpm_interval_s: float = 0.5,
                 gpm: bool = True, energy_interval_s: float = 5.0):
        if not 0 < hz <= 100:
            raise ValueError("hz must be in (0, 100]")
        if energy_interval_s <= 0:
            raise ValueError("energy_interval_s must be positive")
        if gpm_interval_s < MIN_GPM_INTERVAL_S:
            raise ValueError(f"GPM intervals shorter than {MIN_GPM_INTERVAL_S} s return zeros or NaN; "
                             f"got {gpm_interval_s}")
        self.layer = layer
        self.clock = clock
        self.hz = hz
        self.gpm_interval_s = gpm_interval_s
        self.use_gpm = gpm
        self.energy_interval_s = energy_interval_s
        self._energy_due = True  # the first reading, every interval, each mark and the last reading
        self._next_energy = 0.0
        self.status = "ok"
        self.devices: list[DeviceInfo] = []
        self._gpus: list[_Gpu] = []
        self.gpu_rows: list[dict[str, Any]] = []
        self.gpm_rows: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.info: dict[str, Any] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._cpu_s = 0.0
        self._wall_s = 0.0
        self.late_ticks = 0

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Sampler:
        try:
            self.devices = self.layer.open()
        except TelemetryUnavailable as e:
            self.status = f"unavailable: {e}"
            return self
        self.info = self.layer.info()
        for d in self.devices:
            g = _Gpu(d, status={c: "ok" for c in LEGACY_COUNTERS})
            if self.use_gpm:
                try:
                    g.gpm = self.layer.gpm_supported(d.index)
                except Exception as e:  # a GPU already lost: its readings will say so
                    self.events.append({"t": self.clock.now(), "gpu": d.index, "event": f"GPM support unknown: {e}"})
            for m in GPM_METRICS:
                g.status[m] = "ok" if g.gpm else ("unsupported" if self.use_gpm else "not read: --no-gpm")
            self._gpus.append(g)
        self._thread = threading.Thread(target=self._run, name="audit-telemetry", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> SamplerResult:
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=30)
            for g in self._gpus:
                for s in g.gpm_samples:
                    self.layer.gpm_free(s)
                g.gpm_samples = []
            self.layer.close()
            self._thread = None
        return SamplerResult(
            status=self.status, devices=self.devices,
            counters={str(g.info.index): dict(g.status) for g in self._gpus},
            gpu_rows=self.gpu_rows, gpm_rows=self.gpm_rows, events=self.events, info=self.info, hz=self.hz,
            gpm_interval_s=self.gpm_interval_s, cpu_s=self._cpu_s, wall_s=self._wall_s, late_ticks=self.late_ticks)

    def mark(self) -> None:
        """Read the energy counter at the next tick (a window edge: the window's energy is interpolated there)."""
        self._energy_due = True

    # ------------------------------------------------------------------ the thread

    def _run(self) -> None:
        cpu0, wall0 = time.thread_time(), time.perf_counter()
        period = 1.0 / self.hz
        next_tick = next_gpm = time.perf_counter()
        try:
            while not self._stop.is_set():
                now = time.perf_counter()
                if now >= next_tick:
                    self.tick()
                    next_tick += period
                    if time.perf_counter() > next_tick:  # fell behind: skip, do not burst
                        self.late_ticks += 1
                        next_tick = time.perf_counter() + period
                if self.use_gpm and now >= next_gpm:
                    self.gpm_tick()
                    next_gpm += self.gpm_interval_s
                    if time.perf_counter() > next_gpm:
                        next_gpm = time.perf_counter() + self.gpm_interval_s
                wake = min(next_tick, next_gpm) if self.use_gpm else next_tick
                self._stop.wait(max(0.0, wake - time.perf_counter()))
            # A last reading, so the energy counter brackets the end of the last window.
            self._energy_due = True
            self.tick()
        except Exception as e:  # the run goes on without counters; the package says so
            self.status = f"failed: {type(e).__name__}: {e}"
            self.events.append({"t": self.clock.now(), "gpu": None, "event": f"sampler stopped: {e}"})
        finally:
            self._cpu_s = time.thread_time() - cpu0
            self._wall_s = time.perf_counter() - wall0

    def _lost(self, g: _Gpu, t: float, e: Exception) -> None:
        g.lost = True
        self.events.append({"t": t, "gpu": g.info.index, "event": f"GPU lost: {e}; no further readings"})

    def tick(self) -> None:
        """One reading of the legacy counters of every GPU still present."""
        t = round(self.clock.now(), 6)
        layer = self.layer
        now = time.perf_counter()
        energy = self._energy_due or now >= self._next_energy
        if energy:
            self._energy_due = False
            self._next_energy = now + self.energy_interval_s
        for g in self._gpus:
            if g.lost:
                continue
            i = g.info.index
            row: dict[str, Any] = {"t": t, "gpu": i}
            errors: list[str] = []
            reads = (
                (("kernel_running_pct", "memory_busy_pct"), lambda i=i: layer.utilization(i)),
                (("power_w",), lambda i=i: (layer.power_w(i),)),
                (("energy_j",), lambda i=i: (layer.energy_j(i),)),
                (("sm_clock_mhz",), lambda i=i: (layer.clock_mhz(i, "sm"),)),
                (("mem_clock_mhz",), lambda i=i: (layer.clock_mhz(i, "mem"),)),
                (("temperature_c",), lambda i=i: (layer.temperature_c(i),)),
            )
            try:
                for names, read in reads:
                    if g.status[names[0]] != "ok" or (names[0] == "energy_j" and not energy):
                        continue
                    try:
                        values = read()
                    except CounterUnsupported:
                        for n in names:
                            g.status[n] = "unsupported"
                        continue
                    except CounterError as e:
                        errors.append(f"{'/'.join(names)}: {e}")
                        continue
                    for n, v in zip(names, values, strict=True):  # one value per name, by the layer's types
                        row[n] = v
            except GpuLost as e:
                errors.append(f"GPU lost: {e}")
                self._lost(g, t, e)
            if errors:
                row["error"] = "; ".join(errors)
            self.gpu_rows.append(row)

    def gpm_tick(self) -> None:
        """A GPM sample of every GPU that has GPM; metrics over the interval since the previous one."""
        for g in self._gpus:
            if g.lost or not g.gpm:
                continue
            i = g.info.index
            try:
                if not g.gpm_samples:
                    g.gpm_samples = [self.layer.gpm_alloc(), self.layer.gpm_alloc()]
                cur = g.gpm_samples[1]
                self.layer.gpm_get(i, cur)
                t = round(self.clock.now(), 6)
                prev_t = g.gpm_prev_t
                if prev_t is not None and t - prev_t >= MIN_GPM_INTERVAL_S:
                    self._gpm_row(g, prev_t, t)
                g.gpm_samples.reverse()  # the sample just taken is the next interval's first
                g.gpm_prev_t = t
            except CounterUnsupported as e:
                g.gpm = False
                for m in GPM_METRICS:
                    g.status[m] = "unsupported"
                self.events.append({"t": self.clock.now(), "gpu": i, "event": f"GPM unsupported: {e}"})
            except GpuLost as e:
                self.gpm_rows.append({"t_start": g.gpm_prev_t or self.clock.now() - 1e-3,
                                      "t_end": round(self.clock.now(), 6), "gpu": i, "error": f"GPU lost: {e}"})
                self._lost(g, self.clock.now(), e)
            except CounterError as e:
                # The pair is broken: start a new interval from the next sample. A GPU whose samples keep
                # failing is given up on (one event per failure would flood the record).
                g.gpm_prev_t = None
                g.gpm_failures += 1
                if g.gpm_failures <= GPM_FAILURES_KEPT:
                    self.events.append({"t": self.clock.now(), "gpu": i, "event": f"GPM sample failed: {e}"})
                if g.gpm_failures >= GPM_GIVE_UP:
                    g.gpm = False
                    for m in GPM_METRICS:
                        g.status[m] = f"not read: {GPM_GIVE_UP} GPM samples failed ({e})"
                    self.events.append({"t": self.clock.now(), "gpu": i,
                                        "event": f"GPM given up after {GPM_GIVE_UP} failed samples"})
                continue
            g.gpm_failures = 0

    def _gpm_row(self, g: _Gpu, t0: float, t1: float) -> None:
        names = [m for m in GPM_METRICS if g.status[m] == "ok"]
        row: dict[str, Any] = {"t_start": t0, "t_end": t1, "gpu": g.info.index}
        if not names:
            return
        try:
            values = self.layer.gpm_metrics(g.gpm_samples[0], g.gpm_samples[1], names)
        except CounterError as e:
            row["error"] = str(e)
            self.gpm_rows.append(row)
            return
        errors = []
        for name in names:
            v = values.get(name)
            if isinstance(v, CounterUnsupported):
                g.status[name] = "unsupported"
            elif isinstance(v, Exception) or v is None:
                errors.append(str(v) if v is not None else f"{name}: no value")
            else:
                row[name] = v
        if errors:
            row["error"] = "; ".join(errors)
        self.gpm_rows.append(row)


# --------------------------------------------------------------------------- the summary


class GpuWindowFigures(FiguresDoc):
    """Means of one GPU's counters over one window (null: no reading of that counter in the window)."""

    gpu: int
    """NVML device index."""
    samples: int
    """Legacy readings in the window (a reading at time t belongs to the window with start <= t < end)."""
    kernel_running_pct: float | None = None
    """Mean utilization.gpu: percent of time at least one kernel ran."""
    memory_busy_pct: float | None = None
    """Mean utilization.memory."""
    power_w: float | None = None
    """Mean power draw, W."""
    energy_j: float | None = None
    """Energy over the window: the energy counter interpolated linearly at the window's edges, end minus start;
    null unless readings bracket both edges."""
    sm_clock_mhz: float | None = None
    """Mean SM clock, MHz."""
    mem_clock_mhz: float | None = None
    """Mean memory clock, MHz."""
    temperature_c: float | None = None
    """Mean temperature, C."""
    gpm_intervals: int = 0
    """GPM intervals that overlap the window."""
    sm_util_pct: float | None = None
    """GPM SM_UTIL, mean over the window weighted by each interval's overlap with it."""
    sm_occupancy_pct: float | None = None
    """GPM SM_OCCUPANCY, overlap-weighted mean."""
    any_tensor_util_pct: float | None = None
    """GPM ANY_TENSOR_UTIL, overlap-weighted mean."""
    dram_bw_util_pct: float | None = None
    """GPM DRAM_BW_UTIL, overlap-weighted mean."""
    errors: int = 0
    """Readings of this GPU in the window that carried an NVML error."""


class WindowTelemetry(FiguresDoc):
    """One window's counters: per GPU, and across GPUs."""

    window: int
    """Window index (as in the throughput package)."""
    start: float
    """Run-clock start of the window (from the throughput package)."""
    end: float
    """Run-clock end of the window."""
    gpus: list[GpuWindowFigures]
    """Per GPU."""
    mean_kernel_running_pct: float | None = None
    """Mean over GPUs of each GPU's mean utilization.gpu."""
    mean_memory_busy_pct: float | None = None
    """Mean over GPUs of utilization.memory."""
    mean_sm_util_pct: float | None = None
    """Mean over GPUs of GPM SM_UTIL."""
    mean_sm_occupancy_pct: float | None = None
    """Mean over GPUs of GPM SM_OCCUPANCY."""
    mean_any_tensor_util_pct: float | None = None
    """Mean over GPUs of GPM ANY_TENSOR_UTIL."""
    mean_dram_bw_util_pct: float | None = None
    """Mean over GPUs of GPM DRAM_BW_UTIL."""
    power_w_sum_over_gpus: float | None = None
    """Sum over GPUs of each GPU's mean power, W (null when any GPU has none)."""
    energy_j_sum_over_gpus: float | None = None
    """Sum over GPUs of each GPU's window energy, J (null when any GPU has none)."""


class TelemetrySummary(FiguresDoc):
    """`summary.json` of a telemetry package: every figure recomputable from its rows (`recompute`)."""

    schema_version: int = 1
    """Version of this summary format."""
    throughput_package_id: str
    """The throughput package whose run these counters were read during."""
    throughput_digest: str
    """That package's content digest: the link is part of this package's content."""
    status: str
    """`ok`, `unavailable: ...` or `failed: ...`."""
    gpus: int
    """GPUs the sampler saw."""
    windows: list[WindowTelemetry]
    """Per window of the linked throughput run."""


_MEAN_FIELDS = ("kernel_running_pct", "memory_busy_pct", "power_w", "sm_clock_mhz", "mem_clock_mhz", "temperature_c")


def mean(values: Iterable[float]) -> float | None:
    """The mean (math.fsum), None for no values."""
    vs = list(values)
    return math.fsum(vs) / len(vs) if vs else None


def _interp(points: list[tuple[float, float]], x: float) -> float | None:
    """The counter at time x, linear between the readings around it; None outside them."""
    for (t0, v0), (t1, v1) in pairwise(points):
        if t0 <= x <= t1:
            return v0 if t1 == t0 else v0 + (v1 - v0) * (x - t0) / (t1 - t0)
    return None


def summarize(link: tuple[str, str], status: str, gpus: int, windows: Sequence[tuple[int, float, float]],
              gpu_rows: Sequence[GpuSampleRow], gpm_rows: Sequence[GpmSampleRow]) -> TelemetrySummary:
    """Per-window figures from the rows; `link` is the throughput package's (id, digest), `windows` its
    (index, start, end)."""
    by_gpu: dict[int, list[GpuSampleRow]] = {}
    for r in sorted(gpu_rows, key=lambda r: (r.t, r.gpu)):
        by_gpu.setdefault(r.gpu, []).append(r)
    gpm_by_gpu: dict[int, list[GpmSampleRow]] = {}
    for m in sorted(gpm_rows, key=lambda m: (m.t_start, m.gpu)):
        gpm_by_gpu.setdefault(m.gpu, []).append(m)
    indices = sorted(set(by_gpu) | set(gpm_by_gpu) | set(range(gpus)))
    energy_by_gpu = {g: [(r.t, r.energy_j) for r in by_gpu.get(g, []) if r.energy_j is not None] for g in indices}
    out = []
    for w, start, end in windows:
        per = []
        for g in indices:
            rows = [r for r in by_gpu.get(g, []) if start <= r.t < end]
            fig: dict[str, Any] = {"gpu": g, "samples": len(rows), "errors": sum(r.error is not None for r in rows)}
            for name in _MEAN_FIELDS:
                fig[name] = mean(getattr(r, name) for r in rows if getattr(r, name) is not None)
            energy = energy_by_gpu[g]
            e0, e1 = _interp(energy, start), _interp(energy, end)
            fig["energy_j"] = e1 - e0 if e0 is not None and e1 is not None else None
            overlaps = [(r, min(end, r.t_end) - max(start, r.t_start)) for r in gpm_by_gpu.get(g, [])]
            overlaps = [(r, o) for r, o in overlaps if o > 0]
            fig["gpm_intervals"] = len(overlaps)
            for name in GPM_METRICS:
                pairs = [(getattr(r, name), o) for r, o in overlaps if getattr(r, name) is not None]
                weight = math.fsum(o for _, o in pairs)
                fig[name] = math.fsum(v * o for v, o in pairs) / weight if pairs and weight > 0 else None
            per.append(GpuWindowFigures(**fig))

        def across(name: str, per: list[GpuWindowFigures] = per) -> float | None:
            return mean(getattr(f, name) for f in per if getattr(f, name) is not None)

        def total(name: str, per: list[GpuWindowFigures] = per) -> float | None:
            vals = [getattr(f, name) for f in per]
            return math.fsum(vals) if vals and all(v is not None for v in vals) else None

        out.append(WindowTelemetry(
            window=w, start=start, end=end, gpus=per,
            mean_kernel_running_pct=across("kernel_running_pct"), mean_memory_busy_pct=across("memory_busy_pct"),
            mean_sm_util_pct=across("sm_util_pct"), mean_sm_occupancy_pct=across("sm_occupancy_pct"),
            mean_any_tensor_util_pct=across("any_tensor_util_pct"), mean_dram_bw_util_pct=across("dram_bw_util_pct"),
            power_w_sum_over_gpus=total("power_w"), energy_j_sum_over_gpus=total("energy_j")))
    return TelemetrySummary(throughput_package_id=link[0], throughput_digest=link[1], status=status, gpus=gpus,
                            windows=out)


schemas.register("telemetry_summary.v1", TelemetrySummary)
