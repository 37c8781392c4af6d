"""What a file looks like, from its first record: which importer (or command) reads it.

Used when a file is given to the wrong importer (an lm-eval samples file to `audit import
mmlu-pro`, a verdict file to `audit import table`, ...) so that the error is one line naming
the format and the command to use, instead of the same "missing field" on every row; and by
`audit show` for files that are not packages.

Detection looks at field names only (the first record of a table, or the top level of a
JSON document), never at the whole file: a 10 GB file is sniffed as fast as a small one.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audit.fileio import READ_ERRORS, open_binary, read_document
from audit.importers.mmlu_pro import TEXT_FIELDS

_HEAD_BYTES = 1 << 16


@dataclass(frozen=True)
class Format:
    """A recognised file format and what reads it."""

    key: str
    """Short id, e.g. `lm-eval-samples`."""
    what: str
    """What the file is, in words: "an lm-evaluation-harness --log_samples file"."""
    use: str
    """The command that reads it (FILE stands for the file)."""
    importer: str | None = None
    """The `audit import` subcommand that reads it, when one does."""
    after: str = ""
    """Words after the command, e.g. which file to give it."""

    def message(self, path: str | os.PathLike[str]) -> str:
        """One line: what the file looks like and the command to use."""
        use, after = self.use, self.after
        if self is LM_EVAL_RESULTS:
            samples = _samples_beside(Path(path))
            if samples:
                use = use.replace("samples_<task>_<date>.jsonl", "FILE")
                after = (" (the --log_samples file written beside it)" if len(samples) == 1 else
                         f" (one of the {len(samples)} --log_samples files written beside it: "
                         + ", ".join(p.name for p in samples) + ")")
                path = samples[0]
        return f"this looks like {self.what}; use `{use.replace('FILE', str(path))}`{after}"


def _samples_beside(results: Path) -> list[Path]:
    """The samples files lm-eval wrote in the same run as `results_<date>.json` (same folder, same date)."""
    date = results.name.removeprefix("results_").removesuffix(".json")
    if date == results.name:
        return []
    return sorted(results.parent.glob(f"samples_*_{date}.jsonl"))


MMLU_PRO = Format("mmlu-pro", "a TIGER-AI-Lab/MMLU-Pro result file (question_id, options, pred and the model's text)",
                  "audit import mmlu-pro FILE -o OUT [--recorded RECORDED.json]", "mmlu-pro")
LM_EVAL_SAMPLES = Format("lm-eval-samples", "an lm-evaluation-harness --log_samples file (doc_id, doc, resps)",
                         "audit import lm-eval FILE --benchmark NAME -o OUT [--recorded RECORDED.json]", "lm-eval")
LM_EVAL_RESULTS = Format(
    "lm-eval-results", "an lm-evaluation-harness results file (aggregate scores only, no per-item rows)",
    "audit import lm-eval samples_<task>_<date>.jsonl --benchmark NAME -o OUT",
    after=" on the samples file --log_samples writes beside it")
MMLU_PRO_QUESTIONS = Format(
    "mmlu-pro-questions", "the MMLU-Pro question set (question_id, options, answer; no model text)",
    "audit import table FILE --kind items --map item_id=question_id --map reference=answer --map choices=options "
    "--map subject=category -o OUT", "table")
GPQA_RESPONSES = Format(
    "gpqa-responses", "GPQA responses by item_index and version (no question text)",
    "audit import table FILE --kind responses --map item_id=gpqa-{item_index:03d}-v{version} --sample-from model "
    "-o OUT", "table")
VERDICTS_TABLE = Format("verdicts-table", "a table of recorded per-item verdicts (item_id with correct or verdict)",
                        "audit import verdicts FILE --benchmark NAME -o OUT.json", "verdicts")
RESPONSE_ROWS = Format("response-rows", "audit response rows (item_id, response)",
                       "audit pack OUT --responses FILE", "table")
ITEM_ROWS = Format("item-rows", "audit item rows (item_id, reference)", "audit pack OUT --kind items --items FILE",
                   "table")
VERDICT_FILE = Format("verdict-file", "an audit verdict file (written by audit grade or audit import verdicts): "
                      "nothing to import", "audit show FILE")
DIFF_REPORT = Format("diff-report", "an audit diff report (audit diff --format json): nothing to import",
                     "audit diff OLD NEW")
RELEASE_INFO = Format("release-info", "the release.json of an audit release package: nothing to import",
                      "audit show DIR (its folder)")
PACKAGE = Format("package", "an audit package: nothing to import", "audit show FILE")
INSPECT_LOG = Format("inspect-log", "an inspect_ai evaluation log (samples, scores, model)",
                     "audit import inspect FILE -o OUT [--recorded RECORDED.json]", "inspect")
LIGHTEVAL_DETAILS = Format("lighteval-details", "lighteval per-sample details (doc, model_response, metric; or "
                           "example, predictions, metrics)",
                           "audit import lighteval FILE --benchmark NAME -o OUT [--recorded RECORDED.json]",
                           "lighteval")
LIGHTEVAL_RESULTS = Format(
    "lighteval-results", "a lighteval results file (aggregate scores only, no per-item rows)",
    "audit import lighteval details_<task>_<date>.parquet --benchmark NAME -o OUT",
    after=" on the details file --save-details writes under details/<model>/<date>/")
TABLE = Format("table", "a table of unknown columns",
               "audit import table FILE --kind responses --map item_id=COLUMN --map response=COLUMN -o OUT", "table")



def classify_record(obj: dict[str, Any]) -> Format:
    """The format a file whose records look like `obj` is in (TABLE when nothing more specific fits)."""
    keys = set(obj)
    if "doc_id" in keys and keys & {"resps", "filtered_resps"}:
        return LM_EVAL_SAMPLES
    if {"doc", "model_response", "metric"} <= keys or {"example", "predictions", "metrics"} <= keys:
        return LIGHTEVAL_DETAILS
    if "question_id" in keys and "options" in keys:
        if keys & {"pred", *TEXT_FIELDS}:
            return MMLU_PRO
        if "answer" in keys:
            return MMLU_PRO_QUESTIONS
    if {"item_index", "version", "response"} <= keys:
        return GPQA_RESPONSES
    if "item_id" in keys and keys & {"correct", "verdict"}:
        return VERDICTS_TABLE
    if "item_id" in keys and "response" in keys:
        return RESPONSE_ROWS
    if "item_id" in keys and "reference" in keys:
        return ITEM_ROWS
    return TABLE


def classify_document(obj: dict[str, Any]) -> Format | None:
    """The format of a whole-JSON document (a results file, a verdict file, a manifest), or None."""
    kind = obj.get("kind")
    if kind == "verdicts":
        return VERDICT_FILE
    if kind == "diff_report":
        return DIFF_REPORT
    if kind == "release_info":
        return RELEASE_INFO
    if "schema_version" in obj and "package_id" in obj and "files" in obj:
        return PACKAGE
    if isinstance(obj.get("eval"), dict) and "status" in obj and "version" in obj:
        return INSPECT_LOG
    if isinstance(obj.get("results"), dict) and isinstance(obj.get("config_general"), dict):
        return LIGHTEVAL_RESULTS
    if isinstance(obj.get("results"), dict) and obj.keys() & {"config", "configs", "versions", "n-shot",
                                                              "lm_eval_version", "n-samples"}:
        return LM_EVAL_RESULTS
    return None


_KIND = re.compile(rb'^\s*\{\s*"schema_version"\s*:\s*\d+\s*,\s*"kind"\s*:\s*"([a-z_]+)"')


def sniff(path: str | os.PathLike[str]) -> Format | None:
    """The format of `path` from its first record or its top level; None when it cannot be read."""
    p = Path(path)
    if p.is_dir():
        return PACKAGE if (p / "manifest.json").is_file() else None
    name = p.name.lower()
    if name.endswith((".tar.gz", ".tgz")):
        return PACKAGE
    if name.endswith(".eval") and p.is_file():
        import zipfile

        try:
            with zipfile.ZipFile(p) as zf:  # inspect_ai's .eval: a zip with header.json (or _journal/start.json)
                names = set(zf.namelist())
        except (zipfile.BadZipFile, *READ_ERRORS):
            return None
        return INSPECT_LOG if names & {"header.json", "_journal/start.json"} else None
    if not p.is_file():
        return None
    try:
        with open_binary(p) as fh:
            head = fh.read(_HEAD_BYTES)
    except READ_ERRORS:
        return None
    if head.lstrip().startswith(b"{"):
        m = _KIND.match(head)  # audit's own documents start with schema_version, then kind
        if m:
            found = classify_document({"kind": m.group(1).decode()})
            if found is not None:
                return found
        doc = _whole_document(p, head) if name.endswith(".json") else None
        if doc is not None:
            found = classify_document(doc)
            return found if found is not None else classify_record(doc)
    rec = first_record(p)
    return classify_record(rec) if rec is not None else None


def _whole_document(p: Path, head: bytes, limit: int = 64 << 20) -> dict[str, Any] | None:
    """A JSON object spanning the whole file (a pretty-printed document, not JSON Lines), if small enough."""
    if len(head) < _HEAD_BYTES:
        data = head
    else:  # a regular file of at most `limit` bytes, read once (a file swapped after the stat is not read whole)
        whole, _ = read_document(p, limit)
        if whole is None:
            return None
        data = whole
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


_SIGNATURES = {
    "mmlu-pro": {"question_id", "options", "pred", "answer", *TEXT_FIELDS},
    "lm-eval": {"doc_id", "doc", "resps", "filtered_resps", "arguments", "target"},
    "verdicts": {"item_id", "correct", "verdict"},
}
"""Fields of which an importer's input has at least one in its first record (else it is another table)."""


def first_record(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The first record of a table file, or None."""
    from audit.importers.sources import iter_table_records

    try:
        for rec in iter_table_records(Path(path)):
            return rec.obj
    except READ_ERRORS:
        return None
    return None


def wrong_importer(path: str | os.PathLike[str], importer: str) -> Format | None:
    """The format of `path` when another command, not `audit import <importer>`, reads it; else None.

    `table` reads any table, so it is wrong only for audit's own documents and for files whose
    dedicated importer must be used (an lm-eval results file holds no rows at all). A table of
    unknown columns is wrong for another importer only when its first record has none of the
    fields that importer reads (a damaged record of the right format gets the importer's own error).
    """
    found = sniff(path)
    if found is TABLE and importer in _SIGNATURES:
        rec = first_record(path) or {}
        if rec and not set(rec) & _SIGNATURES[importer]:
            names = ", ".join(list(rec)[:6]) + (", ..." if len(rec) > 6 else "")
            return dataclasses.replace(TABLE, what=f"a table with other columns ({names})")
        return None
    if found is None or found is TABLE or found.importer == importer:
        return None
    if importer == "table" and found.importer is not None and found is not INSPECT_LOG:
        return None  # a mapping may legitimately read any table; a failing one gets the hint instead
    return found


_RECORDED = {
    "mmlu-pro": "audit import mmlu-pro FILE -o PACKAGE --recorded OUT.json",
    "lm-eval-samples": "audit import lm-eval FILE --benchmark NAME -o PACKAGE --recorded OUT.json",
    "lighteval-details": "audit import lighteval FILE --benchmark NAME -o PACKAGE --recorded OUT.json",
}
"""Formats whose run's own verdicts another command writes as a verdict file."""


def wrong_importer_for_verdicts(path: str | os.PathLike[str]) -> str | None:
    """Why `audit import verdicts` should not read `path`, and what writes a verdict file from it; else None.

    `import verdicts` makes a verdict file, so its hint names a command that makes one too (a package is
    not what was asked for)."""
    found = wrong_importer(path, "verdicts")
    if found is None:
        return None
    p = str(path)
    if found.key in _RECORDED:
        return (f"this looks like {found.what}; its run's own verdicts: `{_RECORDED[found.key].replace('FILE', p)}` "
                f"(writes the responses package and the verdict file)")
    if found.key == "lm-eval-results":
        return (f"this looks like {found.what}; per-item verdicts are in its --log_samples files: `audit import "
                f"lm-eval samples_<task>_<date>.jsonl --benchmark NAME -o PACKAGE --recorded OUT.json`")
    if found.key in ("table", "mmlu-pro-questions", "gpqa-responses", "response-rows"):
        return (f"this looks like {found.what}, with no `correct` or `verdict` column; name the columns that hold "
                f"them: `audit import verdicts {p} --benchmark NAME --map item_id=COLUMN --map correct=COLUMN "
                f"-o OUT.json`, or grade its responses: `audit grade PACKAGE --benchmark NAME -o OUT.json`")
    return found.message(path)
