"""`audit diff OLD NEW`: every figure that fell or rose between two gradings, with the rows whose verdict changed.

    report   the `diff_report.v1` document and `DiffResult` (changed rows as Arrow tables)
    compare  `diff_files`: align rows, attribute each changed verdict to one cause, recompute figures; files
             or gradings in memory (`VerdictRows`: a header and its rows, nothing written)
    render   `render_markdown` (the readable report) and `render_json` (the document, stable bytes)

Causes and their precedence are documented in `audit.diff.compare`.
"""

from audit.diff.compare import VerdictRows, diff_files, responses_differ
from audit.diff.render import render_json, render_markdown
from audit.diff.report import (
    CAUSES,
    DIFF_REPORT_SCHEMA_VERSION,
    NO_ANSWER_STATUSES,
    SELECTION_STATUSES,
    Cause,
    CauseCount,
    ChangedRow,
    DiffReport,
    DiffResult,
    FigureChange,
    OneSidedRow,
    RowState,
    RuleWords,
    SideInfo,
    SubjectChange,
)
from audit.models import Verdict

__all__ = [
    "CAUSES", "DIFF_REPORT_SCHEMA_VERSION", "NO_ANSWER_STATUSES", "SELECTION_STATUSES", "Cause", "CauseCount",
    "ChangedRow", "DiffReport", "DiffResult", "FigureChange", "OneSidedRow", "RowState", "RuleWords", "SideInfo",
    "SubjectChange", "Verdict", "VerdictRows",
    "diff_files", "render_json", "render_markdown", "responses_differ",
]
