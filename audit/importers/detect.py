"""What a file looks like, from its first record: which importer (or command) reads it.

Used when a file is given to the wrong importer (an lm-eval samples file to `audit import
mmlu-pro`, a verdict file to `audit import table`, ...) so that the error is one line naming
the format and the command to use, instead of the same "missing field" on every row; and by
`audit show` for files that are not packages.

Detection looks at field names only (the first record of a table, or the top level of a
JSON document), never at the whole file: a 10 GB file is sniffed as fast as a small one.

The formats are declared by the importers themselves (`audit.importers.formats`): each module registers
what it recognises, and the functions here loop over that catalog, after audit's own documents.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path
from typing import Any

from audit.fileio import READ_ERRORS, open_binary, read_document
from audit.importers.formats import IMPORTERS, Format, all_formats
from audit.importers.table import TABLE

_HEAD_BYTES = 1 << 16

# audit's own files: what reads them is another command, never an importer.
VERDICT_FILE = Format("verdict-file", "an audit verdict file (written by audit grade or audit import verdicts): "
                      "nothing to import", "audit show FILE", order=10,
                      document=lambda obj: obj.get("kind") == "verdicts")
DIFF_REPORT = Format("diff-report", "an audit diff report (audit diff --format json): nothing to import",
                     "audit diff OLD NEW", order=11, document=lambda obj: obj.get("kind") == "diff_report")
RELEASE_INFO = Format("release-info", "the release.json of an audit release package: nothing to import",
                      "audit show DIR (its folder)", order=12, document=lambda obj: obj.get("kind") == "release_info")
PACKAGE = Format("package", "an audit package: nothing to import", "audit show FILE", order=20,
                 document=lambda obj: "schema_version" in obj and "package_id" in obj and "files" in obj,
                 suffixes=(".tar.gz", ".tgz"))
OWN = (VERDICT_FILE, DIFF_REPORT, RELEASE_INFO, PACKAGE)
"""audit's own documents, recognised before any importer's format."""


def formats() -> list[Format]:
    """audit's own formats, then every registered importer's, in detection order."""
    return [*OWN, *all_formats()]


def classify_record(obj: dict[str, Any]) -> Format:
    """The format a file whose records look like `obj` is in (TABLE when nothing more specific fits)."""
    keys = set(obj)
    return next((f for f in formats() if f.record is not None and f.record(keys)), TABLE)


def classify_document(obj: dict[str, Any], among: list[Format] | tuple[Format, ...] | None = None) -> Format | None:
    """The format of a whole-JSON document (a results file, a verdict file, a manifest), or None."""
    return next((f for f in (formats() if among is None else among) if f.document is not None and f.document(obj)),
                None)


_KIND = re.compile(rb'^\s*\{\s*"schema_version"\s*:\s*\d+\s*,\s*"kind"\s*:\s*"([a-z_]+)"')


def sniff(path: str | os.PathLike[str], fmt: str | None = None) -> Format | None:
    """The format of `path` from its first record or its top level; None when it cannot be read. `fmt`: the
    extension `--format` gave a name that has none (see sources.format_name)."""
    from audit.importers.sources import format_name

    p = Path(path)
    if p.is_dir():
        return PACKAGE if (p / "manifest.json").is_file() else None
    name = format_name(p, fmt)
    named = False
    for by_name in formats():
        if by_name.suffixes and name.endswith(by_name.suffixes):
            if by_name.file_test is None:
                return by_name
            named = True
            if p.is_file() and by_name.file_test(p):  # e.g. inspect_ai's .eval: a zip with header.json
                return by_name
    if named or not p.is_file():  # (a name that only a file test can confirm is no table)
        return None
    try:
        with open_binary(p) as fh:
            head = fh.read(_HEAD_BYTES)
    except READ_ERRORS:
        return None
    if head.lstrip().startswith(b"{"):
        m = _KIND.match(head)  # audit's own documents start with schema_version, then kind
        if m:
            found = classify_document({"kind": m.group(1).decode()}, OWN)
            if found is not None:
                return found
        doc = _whole_document(p, head) if name.endswith(".json") else None
        if doc is not None:
            found = classify_document(doc)
            return found if found is not None else classify_record(doc)
    rec = first_record(p, fmt)
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


def first_record(path: str | os.PathLike[str], fmt: str | None = None) -> dict[str, Any] | None:
    """The first record of a table file (of format `fmt` when given), or None."""
    from audit.importers.sources import iter_table_records

    try:
        for rec in iter_table_records(Path(path), fmt):
            return rec.obj
    except READ_ERRORS:
        return None
    return None


def wrong_importer(path: str | os.PathLike[str], importer: str, fmt: str | None = None) -> Format | None:
    """The format of `path` when another command, not `audit import <importer>`, reads it; else None.

    `table` reads any table, so it is wrong only for audit's own documents and for files whose
    dedicated importer must be used (an lm-eval results file holds no rows at all). A table of
    unknown columns is wrong for another importer only when its first record has none of the
    fields that importer reads (a damaged record of the right format gets the importer's own error).
    """
    found = sniff(path, fmt)
    fields = IMPORTERS[importer].fields
    if found is TABLE and fields is not None:
        rec = first_record(path, fmt) or {}
        if rec and not set(rec) & fields:
            names = ", ".join(list(rec)[:6]) + (", ..." if len(rec) > 6 else "")
            return dataclasses.replace(TABLE, what=f"a table with other columns ({names})")
        return None
    if found is None or found is TABLE or found.importer == importer:
        return None
    if importer == "table" and found.importer is not None and found.tabular:
        return None  # a mapping may legitimately read any table; a failing one gets the hint instead
    return found


def wrong_importer_for_verdicts(path: str | os.PathLike[str], fmt: str | None = None) -> str | None:
    """Why `audit import verdicts` should not read `path`, and what writes a verdict file from it; else None.

    `import verdicts` makes a verdict file, so its hint names a command that makes one too (a package is
    not what was asked for): each format's `verdicts_hint`."""
    found = wrong_importer(path, "verdicts", fmt)
    if found is None:
        return None
    if found.verdicts_hint:
        given = f"{path} --format {fmt}" if fmt else str(path)
        return f"this looks like {found.what}{found.verdicts_hint.replace('FILE', given)}"
    return found.message(path, fmt)
