"""The `checkpoint-headers` package: the floor, and a header-only copy of the checkpoint it came from.

Layout:
    floor.json                     the FloorReport (schema floor_report.v1)
    floor.txt                      the table `audit floor` printed
    checkpoint/config.json         verbatim
    checkpoint/model.safetensors.index.json   verbatim, when the checkpoint has one
    checkpoint/<shard>.safetensors 8-byte length + the header bytes, no data

The copy is itself a checkpoint `audit floor` reads, so `audit floor-check PACKAGE` recomputes the floor
from it with the recorded options and bandwidth and compares byte for byte.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

import pydantic

from audit.errors import AuditError
from audit.floor.bandwidth import Bandwidth
from audit.floor.compute import FloorOptions, compute_floor
from audit.floor.render import render
from audit.floor.report import FLOOR_REPORT_SCHEMA_VERSION, FloorReport
from audit.floor.roles import TABLES, table_sha256
from audit.floor.safetensors import CONFIG_FILE, INDEX_FILE, Checkpoint, parse_json, read_checkpoint
from audit.jsonl import dumps_pretty, read_document
from audit.models import Provenance
from audit.packages import PackageWriter, open_package

KIND = "checkpoint-headers"
REPORT_FILE = "floor.json"
TABLE_FILE = "floor.txt"
CHECKPOINT_DIR = "checkpoint"


def report_json(report: FloorReport) -> str:
    return dumps_pretty(report.model_dump(mode="json"))


def table_text(report: FloorReport) -> str:
    return "\n".join(render(report)) + "\n"


def write_package(ckpt: Checkpoint, report: FloorReport, out: str | os.PathLike[str], *,
                  package_id: str | None = None, overwrite: bool = False) -> str:
    """Write the package atomically; returns its id."""
    bw = report.bandwidth
    hardware = None
    if bw.source == "nvml":
        names = sorted({d.name for d in bw.devices})
        hardware = f"{len(bw.devices)}x {' + '.join(names)}"
    prov = Provenance(model=ckpt.label, hardware=hardware, source=f"checkpoint digest {report.checkpoint_digest}",
                      notes="Decode bandwidth floor from safetensors headers; see floor.txt and floor.json.")
    writer = PackageWriter(out, kind=KIND, provenance=prov, package_id=package_id, overwrite=overwrite)
    try:
        writer.add_text(REPORT_FILE, report_json(report))
        writer.add_text(TABLE_FILE, table_text(report))
        writer.add_bytes(f"{CHECKPOINT_DIR}/{CONFIG_FILE}", ckpt.config_bytes)
        if ckpt.index_bytes is not None:
            writer.add_bytes(f"{CHECKPOINT_DIR}/{INDEX_FILE}", ckpt.index_bytes)
        for s in ckpt.shards:
            writer.add_bytes(f"{CHECKPOINT_DIR}/{s.file}", struct.pack("<Q", len(s.header)) + s.header)
        manifest = writer.commit()
    except BaseException:
        writer.abort()
        raise
    return manifest.package_id


@dataclass(frozen=True)
class CheckResult:
    identical: bool
    differences: list[str]


def _load_report(root: Path, label: str) -> FloorReport:
    data, err = read_document(root / REPORT_FILE)
    if err:
        raise AuditError(err, path=f"{label}/{REPORT_FILE}")
    assert data is not None
    try:
        obj = parse_json(data, "file")
    except ValueError as e:
        raise AuditError(str(e), path=f"{label}/{REPORT_FILE}") from None
    version = obj.get("schema_version") if isinstance(obj, dict) else None
    if isinstance(version, int) and version > FLOOR_REPORT_SCHEMA_VERSION:
        raise AuditError(f"schema_version {version} is newer than this audit reads "
                         f"({FLOOR_REPORT_SCHEMA_VERSION}); upgrade audit", path=f"{label}/{REPORT_FILE}")
    try:
        return FloorReport.model_validate(obj)
    except pydantic.ValidationError as e:
        first = e.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        raise AuditError(f"{first['msg']}", path=f"{label}/{REPORT_FILE}", field=where) from None


def check_package(path: str | os.PathLike[str]) -> CheckResult:
    """Recompute the floor from the package's header-only checkpoint; compare with floor.json and floor.txt."""
    with open_package(path, kind=KIND) as pkg:
        label = str(path)
        recorded = _load_report(pkg.root, label)
        table = recorded.role_table
        if table.table not in TABLES:
            raise AuditError(f"role table {table.table!r} is unknown to this audit", path=f"{label}/{REPORT_FILE}")
        if table_sha256(TABLES[table.table]) != table.sha256:
            return CheckResult(False, [f"role table {table.table} has sha256 {table_sha256(TABLES[table.table])} "
                                       f"here, {table.sha256} in the package"])
        opts = FloorOptions(gpus=recorded.options.gpus, context=recorded.options.context,
                            with_mtp=recorded.options.with_mtp,
                            engine_dtypes=tuple(recorded.options.engine_dtypes.items()),
                            role_table=table.table,
                            role_overrides=tuple((r.role, r.pattern) for r in table.overrides))
        ckpt = read_checkpoint(pkg.root / CHECKPOINT_DIR)
        again = compute_floor(ckpt, Bandwidth(recorded.bandwidth.tbps_per_gpu, recorded.bandwidth), opts)
        # The copy holds headers only: what the original files held after them is the one thing that differs.
        differences = []
        if [(s.file, s.tensors, s.header_bytes, s.data_bytes) for s in again.shards] != \
                [(s.file, s.tensors, s.header_bytes, s.data_bytes) for s in recorded.shards]:
            differences.append("shards: the header-only copy does not match the recorded shards")
        again = again.model_copy(update={"shards": recorded.shards})
        mine, theirs = again.model_dump(mode="json"), recorded.model_dump(mode="json")
        differences += [f"{k}: recomputed value differs" for k in mine if mine[k] != theirs[k]]
        stored = (pkg.root / REPORT_FILE).read_text(encoding="utf-8")
        if not differences and report_json(again) != stored:
            differences.append(f"{REPORT_FILE}: same content, different bytes")
        if (pkg.root / TABLE_FILE).read_text(encoding="utf-8") != table_text(again):
            differences.append(f"{TABLE_FILE}: differs from the table floor.json renders")
        return CheckResult(not differences, differences)
