"""Decode bandwidth floors from safetensors headers: `audit floor`.

    ckpt = read_checkpoint("ckpt/")                      # config.json, index, headers; never the weights
    report = compute_floor(ckpt, from_flag(4.8), FloorOptions(context=4096))
    write_package(ckpt, report, "floor-pkg/")            # checkpoint-headers package

Modules: `safetensors` (headers and their checks), `roles` (the versioned name-pattern table), `arch`
(config.json across families), `bandwidth` (flag or NVML), `compute` (bytes per token and the floor),
`report` (the typed floor.json), `render` (the table), `package` (write and re-check the package).
"""

from audit.floor.bandwidth import Bandwidth, from_flag, from_nvml
from audit.floor.compute import FloorOptions, compute_floor, parse_engine_dtype
from audit.floor.package import open_floor, write_package
from audit.floor.report import FloorReport, FloorReportV1
from audit.floor.roles import DEFAULT_TABLE, ROLES, TABLES, parse_override
from audit.floor.safetensors import Checkpoint, read_checkpoint, read_header

__all__ = [
    "Bandwidth", "Checkpoint", "DEFAULT_TABLE", "FloorOptions", "FloorReport", "FloorReportV1", "ROLES", "TABLES",
    "open_floor", "compute_floor", "from_flag", "from_nvml", "parse_engine_dtype", "parse_override",
    "read_checkpoint", "read_header", "write_package",
]
