"""The `release` package kind: published per-item verdicts, as one registered Kind (rows, release.json, the
recompute `audit show` runs)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pydantic
from pydantic import BaseModel

from audit.errors import AuditError, field_errors
from audit.packages.kinds import Kind, register_kind
from audit.release.build import release_figures
from audit.release.models import (
    INFO_FILE,
    MAX_ROWS_FILE_BYTES,
    PUBLIC_TEXT_SCHEMA,
    ROWS_FILE,
    ROWS_SCHEMA,
    ROWS_SCHEMA_V1,
    ClosedReleaseRow,
    PublicTextRow,
    ReleaseInfo,
    ReleaseRow,
)
from audit.views import release_view

if TYPE_CHECKING:
    from audit.packages.read import Package


@dataclass(frozen=True)
class ReleaseView:
    """A release package read back: its release.json (checked against the rows) as a JSON object."""

    info: dict[str, Any]


def rows_file_problem(pkg: Package) -> str | None:
    """Why a release's rows file is too large to be read back (`MAX_ROWS_FILE_BYTES`: its rows are held in
    memory), from the size its manifest pins (which validation checked); None if it is not."""
    big = next((f for f in pkg.manifest.files if f.path == ROWS_FILE and f.bytes > MAX_ROWS_FILE_BYTES), None)
    return f"{ROWS_FILE}: larger than the {MAX_ROWS_FILE_BYTES:,}-byte limit for a release's rows" if big else None


def rows_schema(pkg: Package) -> str:
    """The row schema of a release's rows file: `release_row.v2` (structural) or `release_row.v1`."""
    entry = next((f for f in pkg.manifest.files if f.path == ROWS_FILE), None)
    return ROWS_SCHEMA if entry is not None and entry.schema_ == ROWS_SCHEMA else ROWS_SCHEMA_V1


def release_rows(pkg: Package) -> list[ReleaseRow | ClosedReleaseRow]:
    """The rows of a release, under the schema its manifest names for them."""
    return list(pkg.iter_rows(rows_schema(pkg)))


def _read_release(pkg: Package, label: str) -> ReleaseView:
    """release.json from the bytes the manifest pins, validated as `release_info.v1`; its counts,
    statuses and figures recomputed from the rows (AuditError naming `label` and the first that differs)."""
    where = f"{label}/{INFO_FILE}"
    obj = pkg.read_json(INFO_FILE)
    try:
        info = ReleaseInfo.model_validate(obj)
    except pydantic.ValidationError as e:
        first = field_errors(e)[0]
        raise AuditError(first.message, path=where, field=first.field) from None
    if problem := rows_file_problem(pkg):
        raise AuditError(problem, path=label)
    rows = release_rows(pkg)
    fresh = {"rows": len(rows), "items": len({r.item_id for r in rows}), "samples": len({r.sample for r in rows}),
             "statuses": dict(sorted(Counter(r.status for r in rows).items())),
             "figures": [f.model_dump(mode="json") for f in release_figures(rows)]}
    stored = info.model_dump(mode="json")
    for key, value in fresh.items():
        if stored[key] != value:
            raise AuditError(f"{key}: differs from what {ROWS_FILE} gives", path=where, field=key)
    return ReleaseView(obj)


def _release_view(view: ReleaseView) -> list[str]:
    return release_view(view.info)


def _release_schemas() -> dict[str, type[BaseModel]]:
    return {"release_info.v2": ReleaseInfo}


RELEASE = register_kind(Kind(
    "release", "published per-item verdicts, protected items as verdict and status only",
    rows={ROWS_SCHEMA_V1: ReleaseRow, ROWS_SCHEMA: ClosedReleaseRow, PUBLIC_TEXT_SCHEMA: PublicTextRow},
    row_keys={ROWS_SCHEMA_V1: ("item_id", "sample"), ROWS_SCHEMA: ("item_id", "sample"),
              PUBLIC_TEXT_SCHEMA: ("item_id", "sample")},
    schemas=_release_schemas, reader=_read_release, viewer=_release_view), __name__)
