"""Writing a verdict file: its bytes (`dump_verdict_file`, `encode_rows`), its Parquet sidecar and the
publish protocol that puts the pair in place atomically.

Rows are written one per line so the file diffs well and stays byte-identical for identical inputs.
"""

from __future__ import annotations

import fcntl
import hashlib
import itertools
import json
import os
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from audit.errors import AuditError
from audit.fileio import dumps, fsync_dir
from audit.outputs import EXISTS, not_ours, refusal
from audit.verdicts.models import VERDICT_FILE_SCHEMA_VERSION, VERDICT_ROW_FIELDS, RowsFileRef, VerdictFile
from audit.verdicts.read import REQUIRED_COLUMNS, check_table, rows_arrow_schema, sort_indices, sorted_unique

STORED_SINCE_V3 = ("wilson", "clopper_pearson")
"""Interval methods a figure stores from schema version 3 on (earlier, they were computed when printed)."""


def _header_data(header: VerdictFile) -> dict[str, Any]:
    """The header as JSON values in the layout of its own schema version (`items` removed)."""
    data = header.model_dump(mode="json", by_alias=True)
    data.pop("items")
    if data.get("policies", {}).get("at_budget") == "count":
        data["policies"].pop("at_budget")  # the default, older than the key: files graded before it reproduce
    if data.get("policies", {}).get("judge_error") == "wrong":
        data["policies"].pop("judge_error")  # (the same: older than the key)
    if data.get("judge", 0) is None:
        data.pop("judge")  # a file graded without a judge is written as version 3, byte for byte
    version = data.get("schema_version", VERDICT_FILE_SCHEMA_VERSION)
    if version < 3:  # versions 1 and 2 stored neither: their files reproduce byte for byte
        data["summary"].pop("sample_figures", None)
        for f in data["summary"]["figures"]:
            f["intervals"] = [iv for iv in f["intervals"] if iv["method"] not in STORED_SINCE_V3]
    if version < 2:
        data["summary"].pop("subjects", None)  # version 1 had no such key: its files reproduce byte for byte
    return data


def dump_verdict_file(vf: VerdictFile) -> str:
    """Serialise: header keys indented, one row per line; identical inputs give identical bytes."""
    data = _header_data(vf)
    rows = [r.model_dump(mode="json", by_alias=True) for r in vf.items]
    head = json.dumps(data, ensure_ascii=False, indent=2, allow_nan=False)
    body = ",\n".join("    " + dumps(r) for r in rows)
    items = "[\n" + body + "\n  ]" if rows else "[]"
    return head[:-2] + ',\n  "items": ' + items + "\n}\n"


def write_verdict_file(path: str | Path, header: VerdictFile, rows: Iterable[dict[str, Any]], *,
                       overwrite: bool = True) -> None:
    """Stream a verdict file to `path` atomically: `header` (its `items` ignored) then `rows`.

    Each row is a dict with every VERDICT_ROW_FIELDS key in that order, as `model_dump(mode="json")`
    gives; the bytes equal `dump_verdict_file` of the same content, without building a model per row.
    `overwrite`: see `write_verdict_lines`.
    """
    write_verdict_lines(path, header, (dumps(row) for row in rows), overwrite=overwrite)


def _items_section(lines: Iterable[str]) -> Iterator[str]:
    """The text of a verdict file after `"items": `, in pieces: the rows array and the closing brace."""
    first = True
    for line in lines:
        yield ("[\n    " if first else ",\n    ") + line
        first = False
    yield "[]\n}\n" if first else "\n  ]\n}\n"


def items_section_sha256(lines: Iterable[str]) -> str:
    """sha256 of the rows text `write_verdict_lines` writes for these serialised rows."""
    h = hashlib.sha256()
    for piece in _items_section(lines):
        h.update(piece.encode("utf-8"))
    return h.hexdigest()


def write_verdict_lines(path: str | Path, header: VerdictFile,
                        lines: Iterable[str] | Callable[[], Iterable[str]],
                        sidecar: dict[str, list[Any]] | None = None, *, overwrite: bool = True) -> VerdictFile:
    """`write_verdict_file` with each row already serialised as `dumps(row)` (see `encode_rows`);
    `lines` may be a function giving them afresh (they are read twice when a sidecar is written).

    With `sidecar` (the rows as columns, see `write_rows_parquet`), the rows are also written as
    Parquet beside the file and the header names it (`rows_file`, both pins). Returns the header
    written. The file and its sidecar appear together or not at all (see `_publish`).

    An existing `path` is replaced only when `overwrite` is set and it is a verdict file (audit's own:
    a user's file with a .json name is refused, see `audit.outputs`); without `overwrite` the file
    is published with a no-replace link, so of two writers racing for one name the second fails.
    """
    p = Path(path)
    fresh = lines if callable(lines) else (lambda: lines)
    if sidecar is not None and not callable(lines):
        kept = list(lines)
        fresh = lambda: kept  # noqa: E731
    tmp_side: Path | None = None
    try:
        if sidecar is not None:
            tmp_side = _temp_name(p.parent, f"{_stem(p)}.rows.parquet")
            ref = write_rows_parquet(sidecar, tmp_side, atomic=False)
            ref = ref.model_copy(update={"path": f"{_stem(p)}.rows-{ref.sha256[:16]}.parquet",
                                         "json_rows_sha256": items_section_sha256(fresh())})
            header = header.model_copy(update={"rows_file": ref})
        elif header.rows_file is not None:
            header = header.model_copy(update={"rows_file": None})
        data = _header_data(header)
        head = json.dumps(data, ensure_ascii=False, indent=2, allow_nan=False)
        tmp_json = _temp_name(p.parent, p.name)
        try:
            with open(tmp_json, "w", encoding="utf-8", newline="\n") as f:
                f.write(head[:-2] + ',\n  "items": ')
                for piece in _items_section(fresh()):
                    f.write(piece)
                f.flush()
                os.fsync(f.fileno())
            _publish(p, tmp_json, tmp_side, header.rows_file.path if header.rows_file else None, overwrite)
        finally:
            tmp_json.unlink(missing_ok=True)
    finally:
        if tmp_side is not None:
            tmp_side.unlink(missing_ok=True)
    return header


def _stem(p: Path) -> str:
    return p.name.removesuffix(".json")


def _temp_name(folder: Path, name: str) -> Path:
    """A hidden file name no other writer uses (two writers never share a temporary file)."""
    return folder / f".{name}.tmp-{uuid.uuid4().hex}"


def _publish(p: Path, tmp_json: Path, tmp_side: Path | None, side_name: str | None, overwrite: bool) -> None:
    """Move a verdict file (and its sidecar) into place so that readers see the old pair or the new one.

    The sidecar's name holds its digest, so it never replaces the sidecar the current file names: it
    is moved in first, then the file is renamed over the old one (the atomic step that switches
    pairs), then sidecars no longer named are removed. Writers take turns on a lock of the folder
    (flock on its descriptor: no lock file, released when a writer dies), so one never removes the
    sidecar of a pair another is putting in place; a writer killed at any point leaves the old pair
    (and at worst an unnamed sidecar, removed by the next write).

    The switch replaces only a verdict file, proven under the lock, and only with `overwrite`; without
    it, it is a hard link that fails when the name exists (the check and the publish are one step).
    """
    fd = os.open(p.parent, os.O_RDONLY)
    placed: Path | None = None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if os.path.lexists(p):
            if not overwrite:
                raise AuditError(EXISTS, path=str(p))
            why = not_ours(p, "verdicts")
            if why is not None:
                raise refusal(p, "verdicts", why)
        if tmp_side is not None and side_name is not None:
            final = p.parent / side_name
            existed = final.exists()  # the same content (its name holds its digest), maybe named by the file
            os.replace(tmp_side, final)
            placed = None if existed else final
        if overwrite:
            os.replace(tmp_json, p)
        else:
            try:
                os.link(tmp_json, p)  # fails when `p` exists: no writer's file is ever replaced
            except FileExistsError:
                raise AuditError(EXISTS, path=str(p)) from None
        placed = None
        fsync_dir(p.parent)
        stem = _stem(p)
        for old in p.parent.iterdir():
            name = old.name
            if name != side_name and (name == f"{stem}.rows.parquet" or (
                    name.startswith(f"{stem}.rows-") and name.endswith(".parquet"))):
                try:
                    old.unlink()
                except OSError:
                    pass  # another reader's copy, a permission: a stale sidecar is harmless
    finally:
        if placed is not None:  # the file was not switched: its new sidecar is named by nothing
            placed.unlink(missing_ok=True)
        os.close(fd)  # releases the lock


_encode_str = getattr(json.encoder, "c_encode_basestring", None) or json.encoder.py_encode_basestring
"""The string encoder `json.dumps(..., ensure_ascii=False)` uses."""

_ENCODE_CHUNK = 65536
_NONE = type(None)


def _encode_column(kind: str, prefix: str, values: list[Any]) -> list[str]:
    """`prefix` + the JSON text of each value as `dumps` writes it, by a fast path for the
    column's usual types; values of any other type go through `dumps` itself."""
    types = set(map(type, values))
    if kind in ("text", "int") and types <= ({str, _NONE} if kind == "text" else {int, _NONE}):
        # Few distinct values (verdicts, statuses, rules, reasons, letters, sample numbers):
        # encode each once. `int.__repr__` is what `json` writes for an int.
        enc = _encode_str if kind == "text" else int.__repr__
        table = {v: prefix + ("null" if v is None else enc(v)) for v in set(values)}
        return list(map(table.__getitem__, values))
    if kind == "unique" and types <= {str, _NONE}:
        return [prefix + ("null" if v is None else _encode_str(v)) for v in values]
    if kind == "span" and types <= {tuple, list, _NONE}:
        spans = [v for v in values if v]
        if set(map(len, spans)) <= {2} and set(map(type, itertools.chain.from_iterable(spans))) <= {int}:
            pair = prefix.replace("%", "%%") + "[%d,%d]"
            return [pair % v if v else prefix + ("null" if v is None else "[]") for v in values]
    if kind == "detail" and types <= {dict, _NONE}:
        return [prefix + ("{}" if not v else dumps(v)) for v in values]
    return [prefix + dumps({} if kind == "detail" and v is None else v) for v in values]


_COLUMN_KINDS = {"sample": "int", "attempt": "int", "span": "span", "detail": "detail", "response_sha256": "unique"}


def encode_rows(columns: dict[str, list[Any]]) -> Iterator[str]:
    """Rows given as columns (lists keyed by VERDICT_ROW_FIELDS, `span` lists or tuples, an empty
    `detail` as None or {}), each serialised exactly as `dumps(row)` serialises its dict.

    Several times faster than `dumps` per row: rows are encoded a chunk at a time, column by
    column, each by a fast path for its usual types (values that repeat are encoded once),
    and each row is then one join; a column chunk holding anything else goes through `dumps`.
    """
    fields = VERDICT_ROW_FIELDS
    prefixes = [("{" if i == 0 else ",") + _encode_str(k) + ":" for i, k in enumerate(fields)]
    kinds = [_COLUMN_KINDS.get(k, "text") for k in fields]
    cols = [columns[k] for k in fields]
    n = len(cols[0])
    for start in range(0, n, _ENCODE_CHUNK):
        end = min(n, start + _ENCODE_CHUNK)
        encoded = [_encode_column(kind, pre, col[start:end])
                   for kind, pre, col in zip(kinds, prefixes, cols, strict=True)]
        encoded.append(["}"] * (end - start))
        yield from map("".join, zip(*encoded, strict=False))


def write_rows_parquet(rows_df: Any, path: str | Path, *, atomic: bool = True) -> RowsFileRef:
    """Write the Parquet sidecar of a verdict file; same rows give the same bytes.

    `rows_df` is a pandas DataFrame with VerdictRow columns (`item_id`, `sample`, `verdict`,
    `status`, `reason` required; the others may be missing: null; `detail` may hold dicts or
    JSON text), or a dict of such columns as lists (no DataFrame to build: faster for a
    million rows). Rows are sorted by item_id then sample, like `items`. Bytes are stable for
    a given pyarrow version (the file's `created_by` names it). The returned ref's `path` is
    the file name: put the sidecar beside the verdict file. The file appears whole (temporary
    name, fsync, rename) unless `atomic` is False (`path` is then a temporary name already).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    p = Path(path)
    lists = isinstance(rows_df, dict)
    names = set(rows_df) if lists else set(rows_df.columns)
    missing = [c for c in REQUIRED_COLUMNS if c not in names]
    if missing:
        raise AuditError(f"rows lack column(s) {', '.join(missing)}", path=str(p))
    n = len(rows_df["item_id"]) if lists else len(rows_df)
    schema = rows_arrow_schema()
    arrays = []
    for f in schema:
        if f.name not in names:
            arrays.append(pa.array(["{}"] * n if f.name == "detail" else [None] * n, f.type))
            continue
        col = rows_df[f.name]
        if f.name == "detail":
            values = [v if isinstance(v, str) else dumps(v) if isinstance(v, dict) else "{}"
                      for v in (col if lists else col.tolist())]
            arrays.append(pa.array(values, pa.string()))
        elif f.name == "span":
            values = col if lists else col.tolist()
            if set(map(type, values)) <= {list, tuple, type(None)}:
                arrays.append(pa.array(values, f.type))  # what the loop below does, in one call
            else:
                arrays.append(pa.array([None if v is None or (isinstance(v, float) and v != v) else list(v)
                                        for v in values], f.type))
        else:
            try:
                arrays.append(pa.array(col, f.type, from_pandas=True))
            except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
                raise AuditError(f"column {f.name}: {e}", path=str(p)) from None
    table = pa.Table.from_arrays(arrays, schema=schema)
    check_table(table, str(p))
    if table.num_rows > 1 and not sorted_unique(table):
        table = table.take(sort_indices(table))
    tmp = _temp_name(p.parent, p.name) if atomic else p  # not atomic: `p` is already a temporary name
    try:
        pq.write_table(table, tmp, compression="zstd", compression_level=3, row_group_size=1 << 20,
                       use_dictionary=True, write_statistics=True, store_schema=True)
        with open(tmp, "rb") as f:
            digest = hashlib.file_digest(f, "sha256").hexdigest()
            os.fsync(f.fileno())
        if atomic:
            os.replace(tmp, p)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return RowsFileRef(path=p.name, sha256=digest, rows=n)
