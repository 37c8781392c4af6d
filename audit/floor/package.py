"""The `checkpoint-headers` package: the floor, and a header-only copy of the checkpoint it came from.

Layout:
    floor.json                     the FloorReport (schema floor_report.v2; v1 packages still check)
    floor.txt                      the table `audit floor` printed
    checkpoint/config.json         verbatim
    checkpoint/model.safetensors.index.json   verbatim, when the checkpoint has one
    checkpoint/<shard>.safetensors 8-byte length + the header bytes, no data

The copy is itself a checkpoint `audit floor` reads, so `audit floor-check PACKAGE` recomputes the floor
from it with the recorded options and bandwidth and compares byte for byte. The kind is registered at the
end of this module (`CHECKPOINT_HEADERS`): its reader is that check, refusing any difference.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pydantic

from audit.errors import AuditError, field_errors
from audit.fileio import dumps_pretty, sha256_bytes
from audit.floor.bandwidth import Bandwidth
from audit.floor.compute import FloorOptions, compute_floor
from audit.floor.render import render
from audit.floor.report import FLOOR_REPORT_SCHEMA_VERSION, FloorReport, FloorReportV1
from audit.floor.roles import TABLES, table_sha256
from audit.floor.safetensors import CONFIG_FILE, INDEX_FILE, Checkpoint, parse_json, read_checkpoint
from audit.models import Provenance, Subject
from audit.packages import Package, PackageWriter, open_package
from audit.packages.kinds import Kind, register_kind

REPORT_FILE = "floor.json"
TABLE_FILE = "floor.txt"
CHECKPOINT_DIR = "checkpoint"


def report_json(report: FloorReportV1) -> str:
    return dumps_pretty(report.model_dump(mode="json"))


def table_text(report: FloorReportV1) -> str:
    return "\n".join(render(report)) + "\n"


def write_package(ckpt: Checkpoint, report: FloorReport, out: str | os.PathLike[str], *,
                  package_id: str | None = None, overwrite: bool = False, subject: Subject | None = None) -> str:
    """Write the package atomically; returns its id. `subject` (`audit.subject`): what the floor is of."""
    bw = report.bandwidth
    hardware = None
    if bw.source == "nvml":
        names = sorted({d.name for d in bw.devices})
        hardware = f"{len(bw.devices)}x {' + '.join(names)}"
    prov = Provenance(model=subject.model if subject else ckpt.label,
                      hardware=subject.hardware if subject else hardware,
                      subject=subject, source=f"checkpoint digest {report.checkpoint_digest}",
                      notes="Decode bandwidth floor from safetensors headers; see floor.txt and floor.json.")
    with PackageWriter(out, kind=KIND, provenance=prov, package_id=package_id, overwrite=overwrite) as writer:
        writer.add_text(REPORT_FILE, report_json(report))
        writer.add_text(TABLE_FILE, table_text(report))
        writer.add_bytes(f"{CHECKPOINT_DIR}/{CONFIG_FILE}", ckpt.config_bytes)
        if ckpt.index_bytes is not None:
            writer.add_bytes(f"{CHECKPOINT_DIR}/{INDEX_FILE}", ckpt.index_bytes)
        for s in ckpt.shards:
            writer.add_bytes(f"{CHECKPOINT_DIR}/{s.file}", s.header_only)
    assert writer.manifest is not None
    return writer.manifest.package_id


@dataclass(frozen=True)
class CheckResult:
    identical: bool
    differences: list[str]
    report: FloorReportV1 | None = None
    """The recorded floor.json, parsed from the bytes that were compared (what a reader may use)."""
    digest: str | None = None
    """The content digest of the package that was read."""


def _parse_report(data: bytes, label: str) -> FloorReportV1:
    try:
        obj = parse_json(data, "file")
    except ValueError as e:
        raise AuditError(str(e), path=f"{label}/{REPORT_FILE}") from None
    version = obj.get("schema_version") if isinstance(obj, dict) else None
    if isinstance(version, int) and version > FLOOR_REPORT_SCHEMA_VERSION:
        raise AuditError(f"schema_version {version} is newer than this audit reads "
                         f"({FLOOR_REPORT_SCHEMA_VERSION}); upgrade audit", path=f"{label}/{REPORT_FILE}")
    if version not in (1, FLOOR_REPORT_SCHEMA_VERSION):
        raise AuditError(f"schema_version {version!r:.40} is not 1 or {FLOOR_REPORT_SCHEMA_VERSION}",
                         path=f"{label}/{REPORT_FILE}", field="schema_version")
    try:
        return (FloorReportV1 if version == 1 else FloorReport).model_validate(obj)
    except pydantic.ValidationError as e:
        first = field_errors(e)[0]
        raise AuditError(first.message, path=f"{label}/{REPORT_FILE}", field=first.field) from None


def _read_as_listed(pkg: Package, ckpt: Checkpoint, label: str) -> None:
    """Refuse a checkpoint copy that is not, byte for byte, what the manifest pins: the floor recomputed from
    files read after validation must come from the validated bytes (every byte read is compared: the config,
    the index and each shard, whose header-only copy is its 8-byte length and header)."""
    listed = {f.path: f for f in pkg.manifest.files if f.path.startswith(f"{CHECKPOINT_DIR}/")}
    read = {f"{CHECKPOINT_DIR}/{CONFIG_FILE}": ckpt.config_bytes}
    if ckpt.index_bytes is not None:
        read[f"{CHECKPOINT_DIR}/{INDEX_FILE}"] = ckpt.index_bytes
    sizes = {}
    for shard in ckpt.shards:
        read[f"{CHECKPOINT_DIR}/{shard.file}"] = shard.header_only
        sizes[f"{CHECKPOINT_DIR}/{shard.file}"] = shard.file_bytes
    for rel in sorted(set(read) | set(listed)):
        entry = listed.get(rel)
        if entry is None:
            raise AuditError("changed while being read: not listed in manifest.json", path=f"{label}/{rel}")
        data = read.get(rel)
        if data is None:
            raise AuditError("changed while being read: listed in manifest.json but not read as part of the "
                             "checkpoint", path=f"{label}/{rel}")
        if (len(data) != entry.bytes or sizes.get(rel, entry.bytes) != entry.bytes
                or sha256_bytes(data) != entry.sha256):
            raise AuditError(f"changed while being read: sha256 is {sha256_bytes(data)}, manifest.json says "
                             f"{entry.sha256}", path=f"{label}/{rel}")


def open_floor(path: str | os.PathLike[str]) -> CheckResult:
    """Recompute the floor from the package's header-only checkpoint; compare with floor.json and floor.txt.

    Everything compared is what the manifest pins: floor.json and floor.txt are read once through
    `Package.read_bytes`, and the checkpoint's bytes as read are checked against their listed sha256."""
    with open_package(path, kind=KIND) as pkg:
        return read_floor(pkg, str(path))


def read_floor(pkg: Package, label: str) -> CheckResult:
    """`open_floor` of a checkpoint-headers package already open (and validated), named `label` in errors."""
    report_bytes = pkg.read_bytes(REPORT_FILE)
    table_bytes = pkg.read_bytes(TABLE_FILE)
    recorded = _parse_report(report_bytes, label)
    table = recorded.role_table
    if table.table not in TABLES:
        raise AuditError(f"role table {table.table!r} is unknown to this audit", path=f"{label}/{REPORT_FILE}")
    if table_sha256(TABLES[table.table]) != table.sha256:
        return CheckResult(False, [f"role table {table.table} has sha256 {table_sha256(TABLES[table.table])} "
                                   f"here, {table.sha256} in the package"], recorded, pkg.digest)
    opts = FloorOptions(gpus=recorded.options.gpus, context=recorded.options.context,
                        with_mtp=recorded.options.with_mtp,
                        engine_dtypes=tuple(recorded.options.engine_dtypes.items()),
                        role_table=table.table,
                        role_overrides=tuple((r.role, r.pattern) for r in table.overrides),
                        report_version=recorded.schema_version)
    ckpt = read_checkpoint(pkg.root / CHECKPOINT_DIR)
    _read_as_listed(pkg, ckpt, label)
    again = compute_floor(ckpt, Bandwidth(recorded.bandwidth.tbps_per_gpu, recorded.bandwidth), opts)
    # The copy holds headers only: what the original files held after them is the one thing that differs.
    differences = []
    if [(s.file, s.tensors, s.header_bytes, s.data_bytes) for s in again.shards] != \
            [(s.file, s.tensors, s.header_bytes, s.data_bytes) for s in recorded.shards]:
        differences.append("shards: the header-only copy does not match the recorded shards")
    again = again.model_copy(update={"shards": recorded.shards})
    mine, theirs = again.model_dump(mode="json"), recorded.model_dump(mode="json")
    differences += [f"{k}: recomputed value differs" for k in mine if mine[k] != theirs[k]]
    if not differences and report_json(again).encode("utf-8") != report_bytes:
        differences.append(f"{REPORT_FILE}: same content, different bytes")
    if table_bytes != table_text(again).encode("utf-8"):
        differences.append(f"{TABLE_FILE}: differs from the table floor.json renders")
    return CheckResult(not differences, differences, recorded, pkg.digest)


# --------------------------------------------------------------------------- the checkpoint-headers kind


@dataclass(frozen=True)
class CheckedFloor:
    """A checkpoint-headers package whose floor recomputed identically: the report and the table it renders."""

    report: FloorReportV1
    table: str
    """floor.txt, as compared byte for byte with what floor.json renders."""


def read_identical(pkg: Package, label: str) -> CheckedFloor:
    """`read_floor`, refusing a package whose floor does not recompute identically (AuditError naming the
    first difference)."""
    check = read_floor(pkg, label)
    if not check.identical or check.report is None:
        more = f" (and {len(check.differences) - 1} more)" if len(check.differences) > 1 else ""
        first = check.differences[0] if check.differences else "no report"
        raise AuditError(f"the floor recomputed from its checkpoint headers differs from floor.json: {first}{more}",
                         path=label)
    return CheckedFloor(check.report, table_text(check.report))


def _show(checked: CheckedFloor) -> list[str]:
    return [line for line in checked.table.splitlines() if line.startswith(("floor:", "bytes/token by dtype"))]


def _schemas() -> dict[str, type[pydantic.BaseModel]]:
    return {"floor_report.v1": FloorReportV1, "floor_report.v2": FloorReport}


CHECKPOINT_HEADERS = register_kind(Kind(
    "checkpoint-headers", "a decode bandwidth floor and the header-only copy of the checkpoint it came from",
    schemas=_schemas(), reader=read_identical, viewer=_show), __name__)

KIND = CHECKPOINT_HEADERS.name
