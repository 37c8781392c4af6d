"""Peak memory bandwidth: given on the command line, or read from the GPU through NVML.

NVML gives the memory bus width in bits (`nvmlDeviceGetMemoryBusWidth`) and the maximum memory clock
in MHz (`nvmlDeviceGetMaxClockInfo(NVML_CLOCK_MEM)`). For HBM (HBM2e, HBM3, HBM3e) the clock NVML
reports transfers twice per cycle, so bandwidth = bits / 8 x MHz x 1e6 x 2, the same double-data-rate
factor as CUDA's `memoryClockRate` x 2 x bus width. Checked for HBM3e: B200 reports 7680 bits and a
3996 MHz max memory clock, 7.67 TB/s (pytorch/ao#4002, nvidia-smi `clocks.max.memory`); H200 reports
a 3201 MHz memory clock (awslabs/amazon-eks-ami#1985, `nvidia-smi -q -d CLOCK`) on a 6144-bit bus (six
1024-bit stacks), 4.92 TB/s, against the datasheet's rounded 4.8 TB/s. It is the theoretical peak: no
kernel streams faster, so the floor it gives is a true lower bound.
"""

from __future__ import annotations

from dataclasses import dataclass

from audit.errors import AuditError, one_line
from audit.floor.report import BandwidthRef, NvmlDevice

DDR_FACTOR = 2
"""Transfers per memory clock cycle, as NVML reports the HBM clock."""


@dataclass(frozen=True)
class Bandwidth:
    tbps: float
    ref: BandwidthRef


MIN_TBPS, MAX_TBPS = 1e-3, 1e3
"""Bandwidths accepted from --hbm-tbps: 1 GB/s to 1 PB/s per GPU (an H200 is 4.8 TB/s)."""


def from_flag(tbps: float) -> Bandwidth:
    if not tbps > 0 or tbps != tbps or tbps == float("inf"):
        raise AuditError(f"--hbm-tbps must be a positive number of TB/s, got {tbps}")
    if not MIN_TBPS <= tbps <= MAX_TBPS:
        raise AuditError(f"--hbm-tbps must be between {MIN_TBPS:g} and {MAX_TBPS:g} TB/s, got {tbps:g}")
    return Bandwidth(tbps, BandwidthRef(tbps_per_gpu=tbps, source="flag"))


def nvml_tbps(bus_width_bits: int, max_memory_clock_mhz: int) -> float:
    return bus_width_bits / 8 * max_memory_clock_mhz * 1e6 * DDR_FACTOR / 1e12


def from_nvml(gpus: int) -> Bandwidth:
    """Read devices 0..gpus-1; the floor uses the slowest. Raises a one-line AuditError without NVML."""
    try:
        import pynvml  # nvidia-ml-py
    except ImportError:
        raise AuditError("--from-nvml: NVML is not available (pip install nvidia-ml-py, on a machine with an "
                         "NVIDIA driver); give --hbm-tbps instead") from None
    try:
        pynvml.nvmlInit()
    except Exception as e:  # pynvml.NVMLError and friends: no driver, no library
        raise AuditError(f"--from-nvml: NVML is not available ({one_line(e)}); give --hbm-tbps instead") from None
    try:
        count = pynvml.nvmlDeviceGetCount()
        if count < gpus:
            raise AuditError(f"--from-nvml: --gpus {gpus} but NVML sees {count} device(s)")
        devices = []
        for i in range(gpus):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            name = pynvml.nvmlDeviceGetName(h)
            name = name.decode() if isinstance(name, bytes) else str(name)
            bits = int(pynvml.nvmlDeviceGetMemoryBusWidth(h))
            mhz = int(pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_MEM))
            if bits <= 0 or mhz <= 0:
                raise AuditError(f"--from-nvml: device {i} ({name}) reports bus width {bits} bits and memory clock "
                                 f"{mhz} MHz; give --hbm-tbps instead")
            devices.append(NvmlDevice(index=i, name=name, bus_width_bits=bits, max_memory_clock_mhz=mhz,
                                      tbps=nvml_tbps(bits, mhz)))
    except AuditError:
        raise
    except Exception as e:
        raise AuditError(f"--from-nvml: {one_line(e)}") from None
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass
    slowest = min(d.tbps for d in devices)
    return Bandwidth(slowest, BandwidthRef(tbps_per_gpu=slowest, source="nvml", devices=devices))
