"""The verdict file: what `audit grade` writes and `audit diff` / `audit release` read.

One JSON document: a header naming every input by hash (responses and items
packages), the extractor and grader by `name@version` and fingerprint, the code
version and every policy; per-item rows under `items`; figures with their
intervals under `summary`. Rows are written one per line so the file diffs well
and stays byte-identical for identical inputs.

By job: the models (`audit.verdicts.models`), writing and publishing (`audit.verdicts.write`),
reading with its strict checks and Arrow paths (`audit.verdicts.read`). The names callers use are
re-exported here.
"""

from __future__ import annotations

from audit.verdicts.models import (
    ROW_STATUSES,
    VERDICT_FILE_SCHEMA_VERSION,
    VERDICT_ROW_FIELDS,
    VERDICTS,
    ComponentRef,
    Figure,
    Interval,
    JudgeGrading,
    PackageRef,
    Policies,
    RowsFileRef,
    SubjectSummary,
    Summary,
    SummaryV1,
    SummaryV2,
    SummaryV3,
    VerdictFile,
    VerdictFileV1,
    VerdictFileV2,
    VerdictFileV3,
    VerdictFileV4,
    VerdictRow,
)
from audit.verdicts.read import (
    FRAME_COLUMNS,
    BadVerdictFile,
    RowsAs,
    VerdictRead,
    load_verdict_file,
    read_verdicts,
    rows_arrow_schema,
)
from audit.verdicts.write import (
    dump_verdict_file,
    encode_rows,
    items_section_sha256,
    write_rows_parquet,
    write_verdict_file,
    write_verdict_lines,
)

__all__ = [
    "FRAME_COLUMNS",
    "ROW_STATUSES",
    "VERDICTS",
    "VERDICT_FILE_SCHEMA_VERSION",
    "VERDICT_ROW_FIELDS",
    "BadVerdictFile",
    "ComponentRef",
    "Figure",
    "Interval",
    "JudgeGrading",
    "PackageRef",
    "Policies",
    "RowsAs",
    "RowsFileRef",
    "SubjectSummary",
    "Summary",
    "SummaryV1",
    "SummaryV2",
    "SummaryV3",
    "VerdictFile",
    "VerdictFileV1",
    "VerdictFileV2",
    "VerdictFileV3",
    "VerdictFileV4",
    "VerdictRead",
    "VerdictRow",
    "dump_verdict_file",
    "encode_rows",
    "items_section_sha256",
    "load_verdict_file",
    "read_verdicts",
    "rows_arrow_schema",
    "write_rows_parquet",
    "write_verdict_file",
    "write_verdict_lines",
]
