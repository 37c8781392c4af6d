"""CPU cost of the telemetry sampler thread (audit.bench.telemetry.Sampler) at 10 Hz.

Target (issue 13): under 1% of one core at 10 Hz.

The cost is the sampler thread's own CPU time (`time.thread_time`, user + system, as the telemetry
package records it for every run) over its wall time. On a machine without NVML the device layer is a
stub whose every call burns a fixed CPU time (busy wait), swept over 0 (the named baseline: the loop's
own Python work, no device calls), 20 and 100 microseconds per call; each reading of one GPU makes 6
legacy calls, each GPM sample 1 call per GPU plus 1 metrics call per interval. The stub's per-call
costs are assumptions, not measurements of NVML: `--real` measures the real NVML layer (run it on the
GPU host), and every `audit bench throughput` run records the real figure in its telemetry package.

    .venv/bin/python benchmarks/bench_sampler.py [--seconds 5] [--runs 3] [--gpus 1,8] [--real]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from audit.bench.clock import RunClock  # noqa: E402
from audit.bench.telemetry import GPM_METRICS, DeviceInfo, DeviceLayer, NvmlLayer, Sampler  # noqa: E402

TARGET = 0.01


class StubLayer(DeviceLayer):
    """Every call burns `cost_us` of CPU, then returns a constant."""

    def __init__(self, gpus: int, cost_us: float):
        self.gpus = gpus
        self.cost = cost_us / 1e6

    def _burn(self) -> None:
        if self.cost:
            end = time.thread_time() + self.cost
            while time.thread_time() < end:
                pass

    def open(self) -> list[DeviceInfo]:
        return [DeviceInfo(i, "stub") for i in range(self.gpus)]

    def utilization(self, gpu: int) -> tuple[float, float]:
        self._burn()
        return 50.0, 20.0

    def power_w(self, gpu: int) -> float:
        self._burn()
        return 300.0

    def energy_j(self, gpu: int) -> float:
        self._burn()
        return 1000.0

    def clock_mhz(self, gpu: int, which: str) -> int:
        self._burn()
        return 1980

    def temperature_c(self, gpu: int) -> int:
        self._burn()
        return 40

    def gpm_supported(self, gpu: int) -> bool:
        return True

    def gpm_alloc(self) -> object:
        return object()

    def gpm_get(self, gpu: int, sample: object) -> None:
        self._burn()

    def gpm_metrics(self, first, second, names):
        self._burn()
        return {n: 10.0 for n in names}


def measure(layer: DeviceLayer, seconds: float, energy_interval_s: float = 5.0) -> tuple[float, int, int]:
    """(CPU fraction of one core, legacy rows, GPM rows) of one sampler run at 10 Hz, GPM every 0.5 s,
    the energy counter every `energy_interval_s`."""
    s = Sampler(layer, RunClock(), hz=10.0, gpm_interval_s=0.5, energy_interval_s=energy_interval_s).start()
    time.sleep(seconds)
    r = s.stop()
    if r.status != "ok":
        raise SystemExit(f"sampler: {r.status}")
    return r.cpu_s / r.wall_s, len(r.gpu_rows), len(r.gpm_rows)


def per_call(layer: DeviceLayer, n: int = 200) -> None:
    """CPU and wall time of each device-layer call on GPU 0, medians of n calls (what a stub should cost)."""
    layer.open()
    calls = {"utilization": lambda: layer.utilization(0), "power_w": lambda: layer.power_w(0),
             "energy_j": lambda: layer.energy_j(0), "clock sm": lambda: layer.clock_mhz(0, "sm"),
             "clock mem": lambda: layer.clock_mhz(0, "mem"), "temperature_c": lambda: layer.temperature_c(0)}
    if layer.gpm_supported(0):
        sample, other = layer.gpm_alloc(), layer.gpm_alloc()
        calls["gpm_get"] = lambda: layer.gpm_get(0, sample)
        layer.gpm_get(0, other)
        calls["gpm_metrics (4 metrics)"] = lambda: layer.gpm_metrics(other, sample, GPM_METRICS)
    for name, fn in calls.items():
        cpu, wall = [], []
        for _ in range(n):
            c, w = time.thread_time(), time.perf_counter()
            try:
                fn()
            except Exception as e:  # an unsupported counter: say so
                print(f"  {name}: {type(e).__name__}: {e}")
                break
            cpu.append(time.thread_time() - c)
            wall.append(time.perf_counter() - w)
        else:
            print(f"  {name}: {statistics.median(cpu) * 1e6:.1f} us CPU, {statistics.median(wall) * 1e6:.1f} us wall "
                  f"(median of {n})")
    layer.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--gpus", default="1,8", help="GPU counts for the stub")
    ap.add_argument("--costs", default="0,20,100", help="stub microseconds per device call")
    ap.add_argument("--real", action="store_true", help="measure the real NVML layer (GPU host)")
    args = ap.parse_args()
    print(f"sampler at 10 Hz (GPM every 0.5 s), {args.runs} runs of {args.seconds:g} s each; target < "
          f"{TARGET:.0%} of one core; medians")
    if args.real:
        probe = Sampler(NvmlLayer(), RunClock()).start()
        res = probe.stop()
        if res.status != "ok":
            print(f"real NVML: {res.status}")
            return 1
        per_call(NvmlLayer())
        # Baseline, measured in the same run: the energy counter read at every 10 Hz tick, as before
        # it cost 3 ms a read on the H200; then once a second; then the sampler as it runs.
        for label, every in (("baseline: energy at every tick (10 Hz)", 0.1), ("energy every 1 s", 1.0),
                             ("sampler: energy every 5 s (and at each window edge in a run)", 5.0)):
            fr = [measure(NvmlLayer(), args.seconds, every) for _ in range(args.runs)]
            med = statistics.median(f[0] for f in fr)
            print(f"real NVML, {len(res.devices)} GPU ({res.devices[0].name}), {label}: {med:.3%} of one core "
                  f"({med / TARGET:.2f}x the target; {fr[0][1]} readings, {fr[0][2]} GPM intervals per run)")
        return 0
    base = {}
    print(f"{'GPUs':>4}  {'us/call':>7}  {'CPU of one core':>15}  {'x target':>8}  {'x baseline':>10}")
    for n in (int(x) for x in args.gpus.split(",")):
        for cost in (float(x) for x in args.costs.split(",")):
            med = statistics.median(measure(StubLayer(n, cost), args.seconds)[0] for _ in range(args.runs))
            if cost == 0:
                base[n] = med
            ratio = f"{med / base[n]:.1f}" if base.get(n) else "-"
            print(f"{n:>4}  {cost:>7g}  {med:>15.3%}  {med / TARGET:>8.2f}  {ratio:>10}")
    print("baseline: the same loop with 0 us per call (the sampler's own Python work)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
