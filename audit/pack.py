"""Build packages from row sources: plain JSONL (`audit pack`) and importers alike.

Every input row is validated against its schema while it is written; any
problem aborts the build, so a package exists only when all of its rows were good.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pydantic

from audit.errors import AuditError, Problem, ValidationFailed
from audit.fileio import SourceRow, document_bytes, parse_object
from audit.models import Manifest, Provenance
from audit.packages.kinds import ROW_KEYS, ROW_MODELS
from audit.packages.validate import MAX_PROBLEMS_PER_FILE, pydantic_problems
from audit.packages.write import PackageWriter


@dataclass(frozen=True)
class Table:
    """One data file to write: its path in the package, its row schema and its rows."""

    path: str
    schema: str
    rows: Iterable[SourceRow]


def load_provenance(path: str | os.PathLike[str] | None) -> Provenance:
    """Read a provenance JSON file; errors name the file and field."""
    if path is None:
        return Provenance()
    p = str(path)
    if not Path(p).is_file():
        raise AuditError("no such file", path=p)
    data = document_bytes(p)
    obj, err = parse_object(data.replace(b"\n", b" "))
    if err:
        raise AuditError(err, path=p)
    try:
        return Provenance.model_validate(obj)
    except pydantic.ValidationError as e:
        raise ValidationFailed(p, pydantic_problems(p, None, e)) from None


class RowsRejected(ValidationFailed):
    """Input rows broke their schema: bad input (exit 2), unlike a package failing `validate` (exit 1)."""

    exit_code = 2


def build_package(out: str | os.PathLike[str], *, kind: str, tables: list[Table],
                  benchmark: str | None = None,
                  provenance: Provenance | Callable[[], Provenance] | None = None,
                  package_id: str | None = None, overwrite: bool = False) -> Manifest:
    """Write a package from row sources; raise RowsRejected (writing nothing) on any bad row.

    `provenance` may be a function, called after every row was read: importers
    learn some of it (sample numbering, parameters as sent) only from the rows.
    """
    deferred = provenance if callable(provenance) else None
    if not tables:
        raise AuditError("nothing to pack: give at least one data file")
    problems: list[Problem] = []
    writer = PackageWriter(out, kind=kind, benchmark=benchmark,
                           provenance=None if deferred or callable(provenance) else provenance,
                           package_id=package_id, overwrite=overwrite)
    try:
        for table in tables:
            model = ROW_MODELS[table.schema]
            keys = ROW_KEYS.get(table.schema, ())
            seen: dict[tuple[Any, ...], str] = {}
            file_problems: list[Problem] = []
            with writer.rows(table.path, table.schema) as sink:
                for src in table.rows:
                    if len(file_problems) >= MAX_PROBLEMS_PER_FILE:
                        file_problems.append(Problem(src.path, f"stopped reading after {MAX_PROBLEMS_PER_FILE} "
                                                               f"problems"))
                        break
                    if src.error:
                        file_problems.append(Problem(src.path, src.error, src.row, src.field))
                        continue
                    try:
                        rec = model.model_validate(src.obj)
                    except pydantic.ValidationError as e:
                        file_problems += pydantic_problems(src.path, src.row, e)
                        continue
                    if keys:
                        key = tuple(getattr(rec, k) for k in keys)
                        if key in seen:
                            desc = ", ".join(f"{k}={v!r}" for k, v in zip(keys, key, strict=True))
                            file_problems.append(Problem(src.path, f"duplicate ({desc}); first seen in "
                                                                   f"{seen[key]}", src.row, keys[0]))
                            continue
                        seen[key] = f"row {src.row}"
                    if not file_problems:
                        sink.write(rec)
            # Tables read from one source (responses and the items their records carry) name a bad record once.
            said = {(p.path, p.row, p.field, p.message) for p in problems}
            problems += [p for p in file_problems if (p.path, p.row, p.field, p.message) not in said]
        if problems:
            raise RowsRejected(str(out), problems)
        if deferred is not None:
            writer.provenance = deferred()
        return writer.commit()
    except BaseException:
        writer.abort()
        raise
