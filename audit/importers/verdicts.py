"""Per-item verdicts another tool recorded, as a verdict file `audit diff` can compare.

A lab's runner, lm-eval's `--log_samples` metrics or a spreadsheet give, per item,
an answer and whether it was counted correct. Imported as a verdict file with no
extractor and no grader (they are unknown), those verdicts become the "recorded"
side of `audit diff recorded.json regraded.json`.

Input rows (JSONL, JSON array, CSV or Parquet): `item_id` (required), `sample`
(default 0), `answer`, and either `correct` (true/false; null for not graded) or
`verdict` (`correct`/`incorrect`/`ungraded`); optionally `status`, `reason`,
`reference`. With `--package`, the responses package the verdicts were computed
from is pinned by digest, so the diff knows both sides graded the same texts.
"""

from __future__ import annotations

import json
import os
from itertools import pairwise
from pathlib import Path
from typing import Any

from audit.errors import AuditError
from audit.importers.formats import Format, Importer, register_importer
from audit.importers.mapping import RecordMap, parse_int
from audit.importers.sources import TABLE_SUFFIXES, iter_table_records, source_file
from audit.packages import Package, open_package
from audit.producer import producer
from audit.summary import summarize
from audit.verdicts import (
    VERDICT_ROW_FIELDS,
    PackageRef,
    Policies,
    VerdictFile,
    write_verdict_file,
)
from audit.verdicts.models import row_contradiction

_VERDICT_OF = {True: "correct", False: "incorrect", None: "ungraded"}


def _text(v: Any, label: str, row: int, field: str) -> str | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (str, int)):
        raise AuditError(f"expected text, got {type(v).__name__}", path=label, row=row, field=field)
    return str(v)


def _row(obj: dict[str, Any], label: str, row: int, tool: str) -> dict[str, Any]:
    item_id = _text(obj.get("item_id"), label, row, "item_id")
    if not item_id:
        raise AuditError("missing required field", path=label, row=row, field="item_id")
    sample = obj.get("sample", 0)
    if isinstance(sample, str):
        sample = parse_int(sample) if parse_int(sample) is not None else sample
    if not isinstance(sample, int) or isinstance(sample, bool) or sample < 0:
        raise AuditError(f"expected a non-negative integer in ASCII digits, got {obj.get('sample')!r}", path=label,
                         row=row, field="sample")
    if "verdict" in obj and obj["verdict"] is not None:
        verdict = obj["verdict"]
        if verdict not in ("correct", "incorrect", "ungraded"):
            raise AuditError(f"expected correct, incorrect or ungraded, got {verdict!r}", path=label, row=row,
                             field="verdict")
    elif "correct" in obj:
        correct = obj["correct"]
        if isinstance(correct, str) and correct.lower() in ("true", "false"):
            correct = correct.lower() == "true"
        if correct not in (True, False, None):
            raise AuditError(f"expected true, false or null, got {correct!r}", path=label, row=row, field="correct")
        verdict = _VERDICT_OF[correct]
    else:
        raise AuditError("needs `correct` or `verdict`", path=label, row=row, field="correct")
    answer = _text(obj.get("answer"), label, row, "answer")
    status = _text(obj.get("status"), label, row, "status") or (verdict if verdict != "ungraded" else "excluded")
    reason = _text(obj.get("reason"), label, row, "reason") or f"recorded by {tool}"
    contradiction = row_contradiction(verdict, status, answer)
    if contradiction is not None:  # (a row that contradicts itself is no evidence either way)
        raise AuditError(f"the row contradicts itself: {contradiction}", path=label, row=row, field="verdict")
    return recorded_row(item_id, sample, answer=answer, verdict=verdict, status=status, reason=reason,
                        reference=_text(obj.get("reference"), label, row, "reference"))


FIELDS = ("item_id", "sample", "answer", "correct", "verdict", "status", "reason", "reference", "subject")
"""The columns `import verdicts` reads (`--map` fills any of them from other columns)."""


def import_verdicts(src: str | Path, out: str | Path, *, benchmark: str, tool: str,
                    package: str | Path | None = None, rmap: RecordMap | None = None,
                    overwrite: bool = True, fmt: str | None = None) -> VerdictFile:
    """Write `out` (a verdict file) from a table of recorded verdicts (of format `fmt` when its name does not tell
    it); errors name file, row and field.

    A `subject` column (one per item) gives the file its per-subject figures. `rmap` (`--map`, `--where`)
    selects and renames the columns of a table written another way first.
    """
    rows, subject_of, source = _read_recorded(src, tool, rmap, fmt)
    return write_recorded(out, rows, benchmark=benchmark, tool=tool, source=source, package=package,
                          package_path=package_path_from(out, package) if package is not None else None,
                          subject_of=subject_of,
                          mapping=json.dumps(rmap.as_json(), ensure_ascii=False) if rmap else None,
                          overwrite=overwrite)


def recorded_verdicts(src: str | Path, *, benchmark: str, tool: str, package: Package | None = None,
                      base_dir: str | Path | None = None) -> tuple[VerdictFile, list[dict[str, Any]]]:
    """`import_verdicts` in memory: the header and rows of the verdict file it would write in `base_dir`
    (where the header's package path starts), nothing written; `package` is the responses package, open."""
    rows, subject_of, source = _read_recorded(src, tool, None)
    package_path = None
    if package is not None:
        folder = Path(base_dir if base_dir is not None else Path.cwd()).resolve()
        package_path = Path(os.path.relpath(package.source.resolve(), folder)).as_posix()
    return recorded_header(rows, benchmark=benchmark, tool=tool, source=source, package=package,
                           package_path=package_path, subject_of=subject_of)


def _read_recorded(src: str | Path, tool: str, rmap: RecordMap | None,
                   fmt: str | None = None) -> tuple[list[dict[str, Any]], dict[str, str | None], str]:
    """The rows of a table of recorded verdicts, each item's subject, and the table named by sha256."""
    sf = source_file(src, TABLE_SUFFIXES, fmt)
    rows: list[dict[str, Any]] = []
    seen: dict[tuple[str, int], int] = {}
    subject_of: dict[str, str | None] = {}
    for rec in iter_table_records(sf):
        if rec.error:
            raise AuditError(rec.error, path=rec.label, row=rec.row)
        assert rec.obj is not None
        obj = rec.obj
        if rmap:
            if not rmap.selected(obj, rec.label, rec.row):
                continue
            obj = rmap.apply(obj, rec.label, rec.row)
        r = _row(obj, rec.label, rec.row, tool)
        key = (r["item_id"], r["sample"])
        if key in seen:
            raise AuditError(f"duplicate (item_id={key[0]!r}, sample={key[1]}); first seen in row {seen[key]}",
                             path=rec.label, row=rec.row, field="item_id")
        seen[key] = rec.row
        subject = _text(obj.get("subject"), rec.label, rec.row, "subject")
        if subject_of.setdefault(r["item_id"], subject) != subject:
            raise AuditError(f"item {r['item_id']!r} has subject {subject!r} here and {subject_of[r['item_id']]!r} "
                             f"in another row", path=rec.label, row=rec.row, field="subject")
        rows.append(r)
    if not rows:
        raise AuditError("no verdict rows", path=str(src))
    return rows, subject_of, f"{sf.name} sha256:{sf.sha256}"


def package_path_from(out: str | Path, package: str | Path) -> str:
    """Where a verdict file at `out` records `package`: relative to the verdict file's folder, as `audit grade`
    and `audit release` read it, never to the working folder of the command that wrote it."""
    return Path(os.path.relpath(Path(package).resolve(), Path(out).resolve().parent)).as_posix()


def recorded_row(item_id: str, sample: int, *, answer: str | None, verdict: str, status: str, reason: str,
                 reference: str | None) -> dict[str, Any]:
    """A verdict row as another tool recorded it: no attempt, response hash, rule, span or detail."""
    values = {"item_id": item_id, "sample": sample, "attempt": None, "response_sha256": None, "answer": answer,
              "rule": None, "span": None, "verdict": verdict, "status": status, "reason": reason,
              "reference": reference, "detail": {}}
    return {k: values[k] for k in VERDICT_ROW_FIELDS}


def write_recorded(out: str | Path, rows: list[dict[str, Any]], *, benchmark: str, tool: str, source: str,
                   package: str | Path | None = None, package_path: str | None = None,
                   subject_of: dict[str, str | None] | None = None, mapping: str | None = None,
                   overwrite: bool = True, recorded_by: dict[str, str] | None = None) -> VerdictFile:
    """Write the verdict file of recorded rows (VERDICT_ROW_FIELDS dicts, unique by item and sample), pinned to
    the responses `package` when given (recorded at `package_path`); `source` names the input by sha256;
    `recorded_by`: what the tool says of the grader behind the verdicts (e.g. `recorded_scorer_kind`), kept in the
    header's environment."""
    header, rows = recorded_header(rows, benchmark=benchmark, tool=tool, source=source, package=package,
                                   package_path=package_path, subject_of=subject_of, mapping=mapping, where=str(out),
                                   recorded_by=recorded_by)
    write_verdict_file(out, header, rows, overwrite=overwrite)
    return header


def recorded_header(rows: list[dict[str, Any]], *, benchmark: str, tool: str, source: str,
                    package: str | Path | Package | None = None, package_path: str | None = None,
                    subject_of: dict[str, str | None] | None = None, mapping: str | None = None,
                    where: str | None = None,
                    recorded_by: dict[str, str] | None = None) -> tuple[VerdictFile, list[dict[str, Any]]]:
    """The header of recorded rows (see `write_recorded`; an open `package` is read as it is), and the rows
    sorted by item and sample; a repeated (item, sample) is refused, naming `where`."""
    rows = sorted(rows, key=lambda r: (r["item_id"], r["sample"]))
    for a, b in pairwise(rows):
        if (a["item_id"], a["sample"]) == (b["item_id"], b["sample"]):
            raise AuditError(f"duplicate (item_id={a['item_id']!r}, sample={a['sample']})", path=where,
                             field="item_id")
    responses_ref = None
    if isinstance(package, Package):
        if package.kind != "responses":  # what `open_package(..., kind="responses")` refuses
            raise AuditError(f"is a {package.kind!r} package, expected 'responses'", path=str(package.source))
        responses_ref = PackageRef(package_id=package.manifest.package_id, digest=package.digest, path=package_path)
    elif package is not None:
        with open_package(package, kind="responses") as pkg:
            responses_ref = PackageRef(package_id=pkg.manifest.package_id, digest=pkg.digest, path=package_path)
    import pandas as pd  # here: detecting a file's format loads this module, which needs no pandas

    df = pd.DataFrame({k: [r[k] for r in rows] for k in ("item_id", "sample", "verdict", "status", "reason",
                                                         "answer")})
    header = VerdictFile(
        benchmark=benchmark, responses_package=responses_ref, extractor=None, grader=None, producer=producer(),
        environment={"imported_from": source, "recorded_by": tool, **({"mapping": mapping} if mapping else {}),
                     **(recorded_by or {})},
        policies=Policies(), summary=summarize(df, subject_of or {}), items=[])
    return header, rows


register_importer(Importer(
    "verdicts", "audit.cli.imports.verdicts",
    (Format("verdicts-table", "a table of recorded per-item verdicts (item_id with correct or verdict)",
            "audit import verdicts FILE --benchmark NAME -o OUT.json", "verdicts", order=50,
            record=lambda keys: "item_id" in keys and bool(keys & {"correct", "verdict"})),),
    fields=frozenset({"item_id", "correct", "verdict"})), __name__)
