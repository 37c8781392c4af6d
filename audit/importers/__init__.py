"""Importers: result files other tools wrote, turned into raw packages.

Each importer reads its format into `audit.pack.SourceRow` streams and hands
them to `audit.pack.build_package`, so schema checks, duplicate detection and
atomic writing are the same as for `audit pack`. Modules, one per format:

- `mmlu_pro`: TIGER-AI-Lab/MMLU-Pro result files (`*_result.json`, the zips, JSONL);
- `lm_eval`: lm-evaluation-harness `--log_samples` JSONL (`samples_<task>_<date>.jsonl`), or the same
  records as Parquet (the Open LLM Leaderboard's details datasets, read through `datasets`);
- `lm_eval_dir`: a whole lm-eval output folder, one package per task, cross-checked with its results file;
- `inspect_ai`: inspect_ai evaluation logs (`.eval`, `.json`), read with inspect_ai's own reader;
- `lighteval`: lighteval per-sample details (`details_<task>_<date>.parquet`, every layout), read through
  `datasets`, checked against lighteval's results file;
- `table`: any JSONL / JSON / CSV / Parquet table with a column mapping;
- `verdicts`: another tool's per-item verdicts, as a verdict file;
- `mapping`: column expressions, ASCII-only number reads, and the shared `--map` / `--where` (RecordMap).
- `formats`: the importer catalog: each module above registers its name, the formats it recognises and its
  command module (audit/cli/imports/); `detect` loops over it to name the right importer for a file.

Every importer keeps the items it read (gold answers, options) inside the responses package, so
`audit grade PKG` needs nothing else.

Mapping problems (a missing column, a template that cannot be filled) stop the
import at once with one line naming file, row and field; rows that break their
schema are collected by `build_package`. Either way nothing is written.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audit.errors import AuditError
from audit.importers.sources import SourceFile
from audit.models import Manifest, Provenance
from audit.outputs import check_output, publish
from audit.pack import Table, build_package


@dataclass(frozen=True)
class Output:
    """One package an import writes."""

    out: Path
    kind: str
    tables: list[Table]
    provenance: Provenance | Callable[[], Provenance]
    benchmark: str | None = None
    package_id: str | None = None


def import_provenance(base: Provenance | None, *, files: list[SourceFile], importer: dict[str, Any],
                      engine: str | None = None, model: str | None = None, **fields: Any) -> Provenance:
    """Provenance of an import: what the user gave wins; the importer adds the source files by
    sha256 and its own configuration (`extra.source_files`, `extra.import`)."""
    base = base or Provenance()
    data = base.model_dump(exclude_none=True)
    if model is not None:
        data["model"] = model
    if engine is not None:
        data.setdefault("engine", engine)
    for k, v in fields.items():
        if v is not None:
            data.setdefault(k, v)
    if files and "source" not in data:
        if len(files) == 1:
            data["source"] = f"{files[0].name} sha256:{files[0].sha256}"
        else:
            data["source"] = f"{len(files)} files; name and sha256 of each in extra.source_files"
    extra = dict(data.get("extra") or {})
    extra["source_files"] = [f.as_json() for f in files]
    extra["import"] = importer
    data["extra"] = extra
    return Provenance.model_validate(data)


def write_outputs(outputs: list[Output], *, overwrite: bool = False) -> list[Manifest]:
    """Build every output, then move them all into place: one failing leaves none written.

    Each package is built next to its destination under a hidden name (as
    PackageWriter does) and renamed only when all of them were built.
    """
    dests = [o.out for o in outputs]
    if len({os.path.abspath(d) for d in dests}) != len(dests):
        raise AuditError("two outputs name the same path", path=str(dests[0]))
    for d in dests:
        check_output(d, force=overwrite)
        if d.name.endswith((".tar.gz", ".tgz")):
            raise AuditError("write the package as a directory; tar it with `audit bundle`", path=str(d))
    if len(outputs) == 1:
        o = outputs[0]
        return [build_package(o.out, kind=o.kind, tables=o.tables, benchmark=o.benchmark,
                              provenance=o.provenance, package_id=o.package_id, overwrite=overwrite)]
    staged: list[tuple[Path, Path]] = []
    manifests = []
    try:
        for o in outputs:
            stage = o.out.parent / f".{o.out.name}.import-{uuid.uuid4().hex[:8]}"
            manifests.append(build_package(stage, kind=o.kind, tables=o.tables, benchmark=o.benchmark,
                                           provenance=o.provenance, package_id=o.package_id))
            staged.append((stage, o.out))
        for stage, dest in staged:
            publish(stage, dest, force=overwrite)
    except BaseException:
        for stage, _ in staged:
            shutil.rmtree(stage, ignore_errors=True)
        raise
    return manifests


def data_file(kind: str, gzip: bool) -> tuple[str, str]:
    """(file name in the package, row schema) for a package kind."""
    ext = ".jsonl.gz" if gzip else ".jsonl"
    if kind == "responses":
        return "responses" + ext, "response_row.v1"
    if kind == "items":
        return "items" + ext, "item_row.v1"
    raise AuditError(f"unknown kind {kind!r}: expected responses or items")
