"""Reading a verdict file: one reader, `read_verdicts`, with its strict checks and its Arrow paths.

JSON is read strictly (a key twice, NaN, nesting too deep, a lone surrogate, bytes that are not
UTF-8: refused), every problem named by file, row and field; the rows come from the Parquet sidecar
or the JSON rows, both pins checked either way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pydantic

from audit.errors import AuditError, ValidationFailed
from audit.fileio import (
    CHUNK,
    MAX_DOCUMENT_BYTES,
    JsonError,
    document_bytes,
    loads_strict,
    open_regular,
    parse_object,
    sha256_bytes,
)
from audit.models import MAX_COUNT
from audit.verdicts.models import VERDICT_FILE_SCHEMA_VERSION, VERDICTS, RowsFileRef, VerdictFile, VerdictRow


class BadVerdictFile(ValidationFailed):
    """A verdict file that does not validate: bad input to whichever command reads it (exit 2)."""

    exit_code = 2


MAX_VERDICT_FILE_BYTES = 1 << 30
"""The largest verdict file (and Parquet rows file) read: 1 GiB, some two million rows of ~500 bytes (13,000
rows of MMLU-Pro responses take 6.5 MB). Read whole, as one read every check and row comes from: a larger file
is refused from its size, unread."""

RowsAs = Literal["table", "frame", "models"]
"""How `read_verdicts` gives the rows: an Arrow table, a pandas DataFrame, or validated VerdictRow models."""


@dataclass(frozen=True)
class VerdictRead:
    """A verdict file as one read gave it: header, rows, where they came from, and the sha256 of the bytes read
    (so a release names the file whose rows it published)."""

    header: VerdictFile
    """The validated header; its `items` are empty, except with `rows="models"` (the whole file)."""
    rows: Any
    """The rows in the form asked for: an Arrow table with every FRAME_COLUMNS column (`table`), a pandas
    DataFrame with `FRAME_COLUMNS` (`frame`; `attempt` a nullable Int64 column, text columns pandas' string
    dtype), the header's `items` (`models`), or None (header only)."""
    source: str
    """Where the rows came from: `parquet` (the sidecar), `json-stream` (the one-row-per-line layout) or
    `json` (a full load); `header` when only the header was asked for."""
    sha256: str | None
    """sha256 of the bytes read, when asked for (nothing is hashed but what the pins need otherwise)."""


def read_verdicts(path: str | Path, *, rows: RowsAs | None = "table", sha256: bool = False) -> VerdictRead:
    """Read and validate a verdict file; errors name the file, row and field.

    `rows`: `table` and `frame` read the Parquet sidecar when the file names one (both pins checked), else the
    JSON rows with pyarrow (see `_verdict_table`); `models` validates every row with pydantic (JSON read strictly:
    a key twice, NaN, nesting too deep refused; a Parquet copy must hold the same rows, so a reader of the copy
    and a reader of the JSON see one grading, or neither reads it); None reads the header alone, only up to the
    `items` key when the file has `dump_verdict_file`'s layout. Header and rows come from one read of the file's
    bytes, hashed when `sha256` is set.
    """
    p = Path(path)
    if rows is None and not sha256:
        return VerdictRead(_header(p, _read_head(p), None), None, "header", None)
    data = _read_bytes(p)
    digest = sha256_bytes(data) if sha256 else None
    if rows is None:
        i = data.find(_ITEMS_MARKER)
        return VerdictRead(_header(p, data[:i] if i >= 0 else None, data), None, "header", digest)
    if rows == "models":
        vf = _load(p, data)
        return VerdictRead(vf, vf.items, "json", digest)
    header, table, source = _verdict_table(p, data)
    return VerdictRead(header, _to_frame(table) if rows == "frame" else table, source, digest)


def load_verdict_file(path: str | Path) -> VerdictFile:
    """The whole verdict file, every row validated: `read_verdicts(path, rows="models").header`."""
    return read_verdicts(path, rows="models").header


def _check_kind_and_version(obj: dict[str, Any], p: Path) -> None:
    """Refuse other documents (a manifest, a release.json) and unknown formats before validating fields."""
    kind = obj.get("kind")
    if isinstance(kind, str) and kind != "verdicts":
        raise AuditError(f"is a {kind!r} document, not a verdict file (kind 'verdicts', written by `audit grade`)",
                         path=str(p), field="kind")
    version = obj.get("schema_version")
    if isinstance(version, int) and version > VERDICT_FILE_SCHEMA_VERSION:
        raise AuditError(f"schema_version {version} is newer than this audit reads "
                         f"({VERDICT_FILE_SCHEMA_VERSION}); upgrade audit", path=str(p), field="schema_version")
    if isinstance(version, int) and version < 1:
        raise AuditError(f"schema_version {version} is not one this audit reads ({VERDICT_FILE_SCHEMA_VERSION})",
                         path=str(p), field="schema_version")


def _must_be_a_file(p: Path) -> None:
    """AuditError unless `p` is a regular file: "no such file", else "not a regular file" (a FIFO or a folder,
    which is never opened: a FIFO would be waited on)."""
    if not p.is_file():
        raise AuditError("not a regular file" if p.exists() else "no such file", path=str(p))


def _read_bytes(p: Path) -> bytes:
    """The verdict file's bytes, read once: every check and every row a reader uses come from them."""
    _must_be_a_file(p)
    return document_bytes(p, MAX_VERDICT_FILE_BYTES, what="a verdict file", follow_links=False)


def _load(p: Path, data: bytes) -> VerdictFile:
    try:
        obj = loads_strict(data)
    except JsonError as e:
        row, field, message = _locate(data, e)
        raise AuditError(message, path=str(p), row=row, field=field) from None
    if not isinstance(obj, dict):
        raise AuditError("not a JSON verdict file: expected an object", path=str(p))
    _check_unicode(obj, p, data)
    _check_kind_and_version(obj, p)
    try:
        vf = VerdictFile.model_validate(obj)
    except pydantic.ValidationError as e:
        from audit.packages.validate import pydantic_problems

        problems = pydantic_problems(str(p), None, e)
        # Rows are addressed as items.N: report them as rows (1-based).
        fixed = []
        for pr in problems:
            if pr.field and pr.field.startswith("items."):
                idx, _, rest = pr.field[6:].partition(".")
                if idx.isdigit():
                    fixed.append(type(pr)(pr.path, _unquoted(pr.message), int(idx) + 1, rest or None))
                    continue
            fixed.append(type(pr)(pr.path, _unquoted(pr.message), pr.row, pr.field))
        raise BadVerdictFile(str(p), fixed) from None
    if vf.rows_file is not None:
        if vf.rows_file.json_rows_sha256 is not None:
            _check_json_pin(p, data, vf.rows_file)
        side = _read_sidecar(p, vf.rows_file)
        if not _same_rows(side, _rows_to_table(vf.items)):
            raise AuditError(f"its Parquet copy {vf.rows_file.path} holds other rows than its JSON rows (one of "
                             f"them was edited after grading)", path=str(p), field="rows_file")
    return vf


_QUOTED = re.compile(r" \(got [\'\"\[{].*\)$")


def _unquoted(message: str) -> str:
    """A row problem without the text it quotes: a row's value may be protected text (numbers stay)."""
    return _QUOTED.sub("", message)


def _check_unicode(obj: dict[str, Any], p: Path, data: bytes) -> None:
    """Refuse a lone surrogate (a `\\uD800`-`\\uDFFF` escape without its pair) in any key or value, naming
    the row and field: it is not Unicode text, and every writer of it (UTF-8, Parquet) would crash."""
    if not _SURROGATE.search(data):
        return
    lone = re.compile("[\ud800-\udfff]")

    def first(value: Any, path: str) -> tuple[str, str] | None:
        if isinstance(value, str):
            m = lone.search(value)
            return (path, m.group()) if m else None
        if isinstance(value, dict):
            for k, v in value.items():
                q = f"{path}.{k}" if path else str(k)
                found = first(k, q) if lone.search(k) else first(v, q)
                if found:
                    return found
        elif isinstance(value, list):
            for i, v in enumerate(value):
                found = first(v, f"{path}.{i}" if path else str(i))
                if found:
                    return found
        return None

    found = first(obj, "")
    if found is None:
        return
    field, char = found
    row = None
    if field.startswith("items."):
        idx, _, rest = field[6:].partition(".")
        if idx.isdigit():
            row, field = int(idx) + 1, rest or "items"
    raise AuditError(f"invalid Unicode: a lone surrogate (U+{ord(char):04X}); text must be UTF-8",
                     path=str(p), row=row, field=field)


_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
_KEY = re.compile(rb'"([A-Za-z_][A-Za-z0-9_]*)":')


def _check_utf8(p: Path, data: bytes, items_at: int) -> None:
    """Refuse bytes that are not UTF-8 (a surrogate encoded as bytes, a stray 0xFF) before any reader
    sees them (pyarrow's JSON reader takes them into a string column), naming the row and field."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        row = field = None
        if 0 <= items_at < e.start:
            row = data.count(b"\n", items_at + len(_ITEMS_MARKER), e.start) or None
        line = data[data.rfind(b"\n", 0, e.start) + 1:e.start]
        keys = _KEY.findall(line)
        field = keys[-1].decode() if keys else None
        raise AuditError(f"not valid UTF-8 at byte {e.start}", path=str(p), row=row, field=field) from None


def _locate(data: bytes, e: JsonError) -> tuple[int | None, str | None, str]:
    """(row, field, message) of a JSON error: the row is found when the file has audit's layout."""
    i = data.find(_ITEMS_MARKER)
    if i >= 0:
        for n, line in enumerate(data[i + len(_ITEMS_MARKER):].split(b"\n")[1:], 1):
            line = line.strip().rstrip(b",")
            if not line.startswith(b"{"):
                break
            obj, err = parse_object(line)
            if err:
                return n, getattr(err, "field", None), str(err)
    return None, e.field, str(e) if e.field else f"not a JSON verdict file: {e}"


def _check_json_pin(p: Path, data: bytes, ref: RowsFileRef) -> None:
    i = data.find(_ITEMS_MARKER)
    if i < 0 or sha256_bytes(data[i + len(_ITEMS_MARKER):]) != ref.json_rows_sha256:
        raise AuditError("its rows differ from the ones recorded beside its Parquet copy (the JSON rows were edited "
                         "after grading)", path=str(p), field="items")


def _same_rows(a: Any, b: Any) -> bool:
    """The same rows in FRAME_COLUMNS, whatever their order."""
    if a.num_rows != b.num_rows:
        return False
    a, b = a.select(list(FRAME_COLUMNS)), b.select(list(FRAME_COLUMNS)).cast(a.select(list(FRAME_COLUMNS)).schema)
    if a.num_rows > 1:
        a, b = a.take(sort_indices(a)), b.take(sort_indices(b))
    return bool(a.equals(b))


# --------------------------------------------------------------------------- rows as a table
#
# A million-row verdict file is ~250 MB of JSON: validating it row by row with
# pydantic takes tens of seconds and gigabytes. `audit diff` and `audit release`
# read the rows as an Arrow table instead: from the Parquet sidecar when the file
# names one (pinned by sha256), else from the one-row-per-line layout that
# `dump_verdict_file` writes, parsed by pyarrow's JSON reader with a strict schema.
# Anything else (foreign formatting, a row pyarrow rejects) falls back to the full
# load (`rows="models"`), whose errors name the row and field.

FRAME_COLUMNS = ("item_id", "sample", "attempt", "answer", "rule", "verdict", "status", "reason", "reference",
                 "response_sha256")
"""Columns of the rows `read_verdicts` gives as a table or frame (`span` and `detail` stay in the JSON and the
sidecar)."""

REQUIRED_COLUMNS = ("item_id", "sample", "verdict", "status", "reason")
"""Columns every row has a value in (the sidecar's writer and every reader check them)."""

_ITEMS_MARKER = b'\n  "items": '


def rows_arrow_schema() -> Any:
    """The Arrow schema of the Parquet sidecar: every VerdictRow field, `detail` as canonical JSON text."""
    import pyarrow as pa

    return pa.schema([
        ("item_id", pa.string()), ("sample", pa.int64()), ("attempt", pa.int64()), ("answer", pa.string()),
        ("rule", pa.string()), ("span", pa.list_(pa.int64())), ("verdict", pa.string()),
        ("status", pa.string()), ("reason", pa.string()), ("reference", pa.string()), ("detail", pa.string()),
        ("response_sha256", pa.string()),
    ])


def _json_rows_schema() -> Any:
    # What pyarrow's JSON reader must find in each row; `detail` is read by inference, then dropped.
    schema = rows_arrow_schema()
    return schema.remove(schema.get_field_index("detail"))


def _to_frame(table: Any) -> Any:
    """An Arrow rows table as a pandas DataFrame with `FRAME_COLUMNS`."""
    import pandas as pd
    import pyarrow as pa

    return table.select(list(FRAME_COLUMNS)).to_pandas(
        types_mapper={pa.int64(): pd.Int64Dtype()}.get)


def _header(p: Path, head: bytes | None, data: bytes | None) -> VerdictFile:
    """The header (empty `items`) from its bytes up to the `items` key; else, for another layout or a
    problem to name, from a full load of `data` (read now when None)."""
    if head is not None:
        try:
            return _validate_header(p, head)
        except AuditError:
            pass
    vf = _load(p, _read_bytes(p) if data is None else data)
    return vf.model_copy(update={"items": []})


def _verdict_table(p: Path, data: bytes) -> tuple[VerdictFile, Any, str]:
    """The verdict file's header and rows, from one read of its bytes.

    The source is `parquet` (the sidecar), `json-stream` (the one-row-per-line layout) or
    `json` (a full load, for other formatting). The table has every FRAME_COLUMNS column;
    rows are unique by (item_id, sample). Both pins are checked wherever either copy is read:
    taking the sidecar, its sha256 and the JSON rows' sha256; taking the JSON rows, theirs and
    the sidecar's. A file whose sidecar does not pin the JSON rows (older audit) is read from its
    JSON rows. What the pins cannot tell (a forger who rewrites a copy and its pin) `audit
    reproduce` does: it regrades and compares both copies.
    """
    i = data.find(_ITEMS_MARKER)
    _check_utf8(p, data, i)
    head = data[:i] if i >= 0 else None
    header = None
    if head is not None:
        try:
            header = _validate_header(p, head)
        except AuditError:
            header = None  # the full load below names the problem
    if header is not None:
        ref = header.rows_file
        if ref is not None and ref.json_rows_sha256 is not None:
            _check_json_pin(p, data, ref)
            return header, _read_sidecar(p, ref), "parquet"
        table = _read_json_stream(data, i)  # the header is data[:i]
        if table is not None:
            check_table(table, str(p))
            if ref is not None:
                _read_sidecar(p, ref)  # its pin holds, though its rows are not the ones read
            return header, table, "json-stream"
    vf = _load(p, data)  # raises with row and field on any problem; checks the pair
    table = _rows_to_table(vf.items)
    check_table(table, str(p))
    return vf.model_copy(update={"items": []}), table, "json"


def _read_head(p: Path) -> bytes | None:
    """Bytes of the header, up to (not including) the top-level `items` key; None if not found in the first
    MAX_DOCUMENT_BYTES (a header is a few kilobytes: the full read then names what is wrong)."""
    _must_be_a_file(p)
    buf = bytearray()
    try:
        f, size = open_regular(p)  # a regular file: a FIFO swapped in is refused, not waited on
        with f:
            while len(buf) < min(size, MAX_DOCUMENT_BYTES) and (chunk := f.read(CHUNK)):
                start = max(0, len(buf) - len(_ITEMS_MARKER))
                buf += chunk
                i = buf.find(_ITEMS_MARKER, start)
                if i >= 0:
                    return bytes(buf[:i])
    except OSError as e:
        raise AuditError(f"unreadable: {e.strerror or e}", path=str(p)) from None
    return None


def _validate_header(p: Path, head: bytes) -> VerdictFile:
    text = head.rstrip()
    if not text.endswith(b","):
        raise AuditError("not the dump_verdict_file layout", path=str(p))
    try:
        obj = loads_strict(text[:-1] + b"\n}")
    except JsonError as e:
        raise AuditError(str(e), path=str(p), field=e.field) from None
    if not isinstance(obj, dict) or "items" in obj:
        raise AuditError("not the dump_verdict_file layout", path=str(p))
    _check_unicode(obj, p, head)
    _check_kind_and_version(obj, p)
    obj["items"] = []
    try:
        return VerdictFile.model_validate(obj)
    except pydantic.ValidationError:
        raise AuditError("header does not validate", path=str(p)) from None


def _read_sidecar(p: Path, ref: RowsFileRef) -> Any:
    """The sidecar's rows, parsed from the bytes whose sha256 was checked (never from the path again)."""
    import pyarrow as pa

    from audit.packages.parquet import ParquetBound, open_parquet, parquet_batches

    side = p.parent / ref.path
    where = f"{p}: rows_file {ref.path}"
    if not side.is_file() or side.is_symlink():
        raise AuditError("the Parquet rows file it names is missing", path=where)
    data = document_bytes(side, MAX_VERDICT_FILE_BYTES, what="a Parquet rows file", follow_links=False, label=where)
    digest = sha256_bytes(data)
    if digest != ref.sha256:
        raise AuditError(f"sha256 is {digest}, the verdict file says {ref.sha256} (the file was altered)",
                         path=where)
    try:
        # Bounded as a package's Parquet file: footer and page headers checked before decoding, each
        # batch's decoded size (a value repeated through a dictionary counted every time) before it is decoded.
        pf = open_parquet(data)
        meta = pf.metadata
        # Before decoding: the row count it declares, and a decoded size in proportion to it (a few
        # hundred bytes a row; a small file that decodes to gigabytes is refused, not decoded).
        if meta.num_rows != ref.rows:
            raise AuditError(f"has {meta.num_rows} rows, the verdict file says {ref.rows}", path=where)
        decoded = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
        if decoded > max(64 << 20, 64 * len(data), 4096 * ref.rows):
            raise AuditError(f"decodes to {decoded:,} bytes, far more than its {ref.rows:,} rows can hold",
                             path=where)
        batches = list(parquet_batches(pf, len(data), 1 << 16, columns=list(FRAME_COLUMNS)))
        table = pa.Table.from_batches(batches) if batches else pf.read(columns=list(FRAME_COLUMNS))
        for i, f in enumerate(table.schema):  # text columns were read as dictionaries
            if pa.types.is_dictionary(f.type):
                table = table.set_column(i, f.name, table.column(i).cast(f.type.value_type))
    except AuditError:
        raise
    except ParquetBound as e:
        raise AuditError(str(e), path=where) from None
    except Exception as e:  # pyarrow raises several types for damaged files
        raise AuditError(f"not a readable Parquet rows file: {e}", path=where) from None
    if table.num_rows != ref.rows:
        raise AuditError(f"has {table.num_rows} rows, the verdict file says {ref.rows}", path=where)
    expected = _json_rows_schema()
    for name in FRAME_COLUMNS:
        if not table.schema.field(name).type.equals(expected.field(name).type):
            raise AuditError(f"column {name} has type {table.schema.field(name).type}", path=where)
    check_table(table, where)
    return table


_LONG_LINE = 16 << 10
"""Rows longer than this are parsed by Python first: pyarrow's JSON reader crashes (SIGSEGV) on
JSON nested tens of thousands deep, which needs a line this long; Python refuses it cleanly."""


def _read_json_stream(data: bytes, head_len: int) -> Any | None:
    """Rows of the one-row-per-line layout via pyarrow's JSON reader; None when the layout differs or
    a row needs the strict reader (NaN or Infinity, a row that may nest too deeply, a key twice)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.json as pj

    start = head_len + len(_ITEMS_MARKER)
    tail = b"\n  ]\n}\n"
    if data[start:start + 3] == b"[]\n" and data[start + 3:].strip() == b"}":
        return pa.Table.from_pylist([], schema=_json_rows_schema()).select(list(FRAME_COLUMNS))
    if not (data[start:start + 6] == b"[\n    " and data.endswith(tail)):
        return None
    body = data[start + 6:-len(tail)]
    if b"NaN" in body or b"Infinity" in body:  # pyarrow reads them as numbers; JSON has none (maybe in text)
        return None
    # Rows are compact JSON: `,\n    ` separates them and cannot occur inside one.
    ndjson = body.replace(b",\n    ", b"\n")
    del body
    ends = np.flatnonzero(np.frombuffer(ndjson, dtype=np.uint8) == 10)
    starts = np.concatenate([[0], ends + 1])
    ends = np.concatenate([ends, [len(ndjson)]])
    for i in np.flatnonzero(ends - starts > _LONG_LINE):
        try:
            loads_strict(ndjson[starts[i]:ends[i]])
        except JsonError:
            return None
    schema = _json_rows_schema()
    for behaviour in ("infer", "ignore"):
        try:
            table = pj.read_json(pa.py_buffer(ndjson), read_options=pj.ReadOptions(block_size=16 << 20),
                                 parse_options=pj.ParseOptions(explicit_schema=schema,
                                                               unexpected_field_behavior=behaviour))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            # "infer" fails when `detail` objects disagree on a key's type; retry ignoring them.
            continue
        extra = [n for n in table.schema.names if n not in schema.names and n != "detail"]
        if extra:
            return None  # an unknown field: let the full load name it
        return table.select(list(FRAME_COLUMNS))
    return None


def _rows_to_table(rows: list[VerdictRow]) -> Any:
    import pyarrow as pa

    schema = rows_arrow_schema()
    cols: dict[str, list[Any]] = {c: [] for c in FRAME_COLUMNS}
    for r in rows:
        for c in FRAME_COLUMNS:
            cols[c].append(getattr(r, c))
    return pa.Table.from_pydict(cols, schema=pa.schema([schema.field(c) for c in FRAME_COLUMNS]))


def sort_indices(table: Any) -> Any:
    import pyarrow.compute as pc

    return pc.sort_indices(table, sort_keys=[("item_id", "ascending"), ("sample", "ascending")])


def check_table(table: Any, where: str) -> None:
    """Required columns non-null, verdicts known, (item_id, sample) unique: vectorised checks."""
    import pyarrow.compute as pc

    for name in REQUIRED_COLUMNS:
        col = table.column(name)
        if col.null_count:
            row = int(pc.index(pc.is_null(col), True).as_py()) + 1
            raise AuditError("missing required field", path=where, row=row, field=name)
    for name in ("sample", "attempt"):  # the bounds the row model gives (MAX_COUNT), for every reader
        col = table.column(name)
        for bad, what in ((pc.less(col, 0), "greater than or equal to 0"),
                          (pc.greater(col, MAX_COUNT), f"less than or equal to {MAX_COUNT}")):
            if pc.any(bad).as_py():
                row = int(pc.index(pc.fill_null(bad, False), True).as_py())
                raise AuditError(f"Input should be {what} (got {col[row].as_py()})", path=where, row=row + 1,
                                 field=name)
    bad = pc.invert(pc.is_in(table.column("verdict"), value_set=_pa_strings(VERDICTS)))
    if pc.any(bad).as_py():
        row = int(pc.index(bad, True).as_py())
        raise AuditError(f"verdict must be one of {', '.join(VERDICTS)}", path=where, row=row + 1,
                         field="verdict")  # the value is not quoted: it may be protected text
    if table.num_rows > 1 and not sorted_unique(table):
        keys = table.select(["item_id", "sample"]).group_by(["item_id", "sample"]).aggregate([])
        if keys.num_rows != table.num_rows:  # named by rows, not by id: an id may be protected text
            first: dict[tuple[Any, Any], int] = {}
            ids, samples = table.column("item_id").to_pylist(), table.column("sample").to_pylist()
            for n, key in enumerate(zip(ids, samples, strict=True), 1):
                if key in first:
                    raise AuditError(f"duplicate row: the item_id and sample of row {first[key]}", path=where,
                                     row=n, field="items")
                first[key] = n


def sorted_unique(table: Any) -> bool:
    """True when rows are strictly increasing by (item_id, sample): then they are unique (cheap check)."""
    import pyarrow.compute as pc

    ids, samples = table.column("item_id"), table.column("sample")
    n = table.num_rows
    a_id, b_id = ids.slice(0, n - 1), ids.slice(1)
    a_s, b_s = samples.slice(0, n - 1), samples.slice(1)
    ok = pc.or_(pc.less(a_id, b_id), pc.and_(pc.equal(a_id, b_id), pc.less(a_s, b_s)))
    return bool(pc.all(ok).as_py())


def _pa_strings(values: tuple[str, ...]) -> Any:
    import pyarrow as pa

    return pa.array(list(values), pa.string())
