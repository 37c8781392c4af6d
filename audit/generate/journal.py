"""Crash safety: the journal of finished requests, read back by `--resume`, and the run's lock."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import IO

import pydantic

from audit.errors import AuditError
from audit.fileio import dumps
from audit.models import ResponseRow
from audit.packages import row_to_json

RowKey = tuple[str, int, int]
"""(item_id, sample, attempt): one request, at most one row."""


class Journal:
    """Rows appended one `write` at a time and fsync'd: a kill loses at most the row being written."""

    def __init__(self, path: Path):
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def append(self, row: ResponseRow) -> None:
        """Write one row and make it durable before returning."""
        data = (dumps(row_to_json(row)) + "\n").encode("utf-8")
        os.write(self._fd, data)
        os.fsync(self._fd)

    def close(self) -> None:
        """Close the file (again is harmless)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def read_journal(path: Path, repair: bool = False) -> list[ResponseRow]:
    """The journal's rows; a torn last line (a kill mid-write) is dropped, and cut off when `repair`."""
    if not path.exists():
        return []
    data = path.read_bytes()
    keep = len(data)
    if data and not data.endswith(b"\n"):
        keep = data.rfind(b"\n") + 1
    rows = []
    lines = data[:keep].split(b"\n")
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rows.append(ResponseRow.model_validate(json.loads(line)))
        except (json.JSONDecodeError, UnicodeDecodeError, pydantic.ValidationError) as e:
            if n == len(lines) - 1 and keep == len(data):
                # The last complete-looking line can still be torn if it was cut exactly at a newline.
                keep = len(b"\n".join(lines[:n - 1])) + (1 if n > 1 else 0)
                break
            raise AuditError(f"unreadable journal line: {str(e).splitlines()[0]}", path=str(path), row=n) from None
    if repair and keep != len(data):
        with open(path, "r+b") as f:
            f.truncate(keep)
    return rows


def row_key(row: ResponseRow) -> RowKey:
    """The request a row answers."""
    return (row.item_id, row.sample, row.attempt)


def rows_by_key(rows: list[ResponseRow], path: Path) -> dict[RowKey, ResponseRow]:
    """The journal's rows by (item, sample, attempt); a key seen twice means the journal is not this code's."""
    out: dict[RowKey, ResponseRow] = {}
    for r in rows:
        k = row_key(r)
        if k in out:
            raise AuditError(f"the journal holds two results for item {k[0]!r} sample {k[1]} attempt {k[2]}",
                             path=str(path))
        out[k] = r
    return out


def lock_run(work: Path) -> IO[str]:
    """Hold the run's lock file (closing it lets go): one `audit generate` at a time on a run."""
    fh = open(work / "lock", "w")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.close()
        raise AuditError("another `audit generate` is working on this run", path=str(work)) from None
    return fh
