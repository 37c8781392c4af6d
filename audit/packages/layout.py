"""What a package is on disk: its manifest's name, data file suffixes, its content identity, and how
a data file's rows are read and written. The row schemas, the fields that key each and the document
schemas come from the package kinds (`audit.packages.kinds`); `ROW_KEYS` and `DOCUMENT_SCHEMAS` are
their tables, kept importable from here.

Shared by `validate` (checks), `read` (a validated package's rows) and `write`.
"""

from __future__ import annotations

import functools
import gzip
import io
import math
import types
import typing
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, Protocol, cast

from pydantic_core import from_json

from audit.fileio import (
    CHUNK,
    MAX_LINE_BYTES,
    READ_ERRORS,
    HashingReader,
    JsonError,
    ParseError,
    dumps,
    gzip_limit,
    iter_raw_lines,
    loads_strict,
    open_regular,
    sha256_bytes,
)
from audit.models import FileEntry, Manifest, Record
from audit.packages.kinds import DOCUMENT_SCHEMAS
from audit.packages.kinds import ROW_KEYS as ROW_KEYS

MANIFEST = "manifest.json"

DATA_SUFFIXES = (".jsonl", ".jsonl.gz", ".parquet")


def document_model(schema: str) -> type[Record]:
    """The model of document schema `schema` (registered by its package kind)."""
    return DOCUMENT_SCHEMAS[schema]


def content_digest(files: Iterable[FileEntry]) -> str:
    """sha256 over files' paths and hashes, sorted by path: the identity of a schema_version 1 package
    (see `package_digest`), and the suffix of a package id derived from its content."""
    listing = sorted((f.path, f.sha256) for f in files)
    return sha256_bytes(dumps([{"path": p, "sha256": h} for p, h in listing]).encode())


MANIFEST_IDENTITY_SINCE = 2
"""The manifest schema_version from which a package's digest covers its whole manifest."""

_IDENTITY_TAG = b"audit package identity: manifest.json but created\n"
"""Before the manifest's JSON in the identity's preimage: never the JSON list an old digest hashes."""


def package_digest(manifest: Manifest) -> str:
    """A package's identity, by the scheme of its manifest's schema_version.

    From schema_version 2: sha256 over the whole manifest but its `created` time (kind, benchmark,
    package id, producer, provenance with model and sampling, every file's path, hash, size, rows
    and schema), so relabelling any of them gives another digest. Packages of schema_version 1,
    written before, keep the digest they were pinned by: their files' paths and hashes only
    (`content_digest`); `digest_scope` says so. Editing schema_version changes the scheme and so the
    digest: a pin of a version 2 package is never met by a relabelled version 1 copy.
    """
    if manifest.schema_version < MANIFEST_IDENTITY_SINCE:
        return content_digest(manifest.files)
    data = manifest.model_dump(mode="json", by_alias=True)
    del data["created"]
    return sha256_bytes(_IDENTITY_TAG + dumps(data).encode())


def digest_scope(manifest: Manifest) -> str | None:
    """None when the package's digest covers its manifest; else what it covers, in words for output."""
    if manifest.schema_version >= MANIFEST_IDENTITY_SINCE:
        return None
    return (f"its digest is of the old scheme (manifest schema_version {manifest.schema_version}): it covers "
            f"file paths and hashes only, not the manifest's provenance, producer, kind or row counts")


class Readable(Protocol):
    """What TarTail reads from: `read(n)` bytes."""

    def read(self, n: int = -1, /) -> bytes: ...


class TarTail:
    """A tar stream read through, keeping its last bytes: tarfile stops at the first zero block and
    may have buffered past it, so what follows the archive is checked from here (see trailing_problem)."""

    KEEP = 4 * 10240  # more than tarfile reads ahead (one record) plus the end block

    def __init__(self, fh: Readable):
        self._fh = fh
        self.count = 0
        self._tail = bytearray()

    def read(self, n: int = -1) -> bytes:
        data = self._fh.read(n)
        self.count += len(data)
        self._tail += data
        if len(self._tail) > self.KEEP:
            del self._tail[: len(self._tail) - self.KEEP]
        return data

    def readable(self) -> bool:
        return True

    def trailing_problem(self, end: int) -> str | None:
        """Why the stream after offset `end` (tarfile's offset at the end of the archive) is not only the
        zero blocks that end it, or None. Reads the rest of the stream (bounded by what it reads through).

        `tar --ignore-zeros` unpacks a second archive after the first (and gzip readers a second
        member), so anything but zeros after the end is refused, never ignored."""
        start = end - (self.count - len(self._tail))
        if start < 0:  # not expected: tarfile reads ahead one record at most
            return "data after the end of the tar archive could not be checked"
        if self._tail[start:].count(0) != len(self._tail) - start:
            return _TRAILING
        while chunk := self.read(CHUNK):
            if chunk.count(0) != len(chunk):
                return _TRAILING
        return None


_TRAILING = "data after the end of the tar archive (a second archive or garbage; nothing may follow it)"


def row_to_json(row: Record) -> dict[str, Any]:
    """A row as a JSON object in schema field order, leaving out empty optional fields."""
    out = row.model_dump(mode="json", by_alias=True)
    required = _required(type(row))
    return {k: v for k, v in out.items() if k in required or not (v is None or (k == "extra" and not v))}


@functools.cache
def _required(model: type[Record]) -> frozenset[str]:
    # Asked once per row schema, not once per field of every row (a 50,000-row write asked it 1.1 million times).
    return frozenset(k for k, f in model.model_fields.items() if f.is_required())


def _from_parquet(obj: dict[str, Any]) -> dict[str, Any]:
    """Object-valued fields travel as JSON text in Parquet (see write._ParquetSink): decoded strictly
    (a duplicate key, NaN or deep nesting raises JsonError naming the column), as JSONL rows are."""
    out = {}
    for k, v in obj.items():
        if k in JSON_COLUMNS and isinstance(v, str):
            try:
                v = loads_strict(v)
            except JsonError as e:
                raise JsonError(f"column {k}: {e}", k) from None
        out[k] = v
    return out


JSON_COLUMNS = ("extra",)


Item = tuple[int, "bytes | None", "dict[str, Any] | None", "str | None"]


class PinnedRead:
    """One pass over a data file of a package: its rows, and the sha256 and size of exactly the bytes read.

    The file is opened once and every byte parsed is hashed on the way, so what is validated or
    graded is what the digest describes: a file swapped or rewritten while it is read (or between
    two reads) gives another digest, never other rows under the recorded one. Reading stops
    at the manifest's bounds for a gzip'd file, which alone can expand past its size on disk: more
    lines (blank ones included) than its `rows`, or more decompressed bytes than its `uncompressed_bytes`.
    After the loop, `sha256` and `size` describe the whole file (the rest is hashed unparsed when
    reading stopped early) and `problems` holds (message, field) for each bound passed.

    Items are (row number, raw JSONL line, object, error): JSONL rows come as raw lines (object
    None), so callers choose how to parse them; Parquet rows come as objects (line None).
    """

    def __init__(self, root: Path, entry: FileEntry):
        self.entry = entry
        self.path = root / entry.path
        self.sha256: str | None = None
        self.size: int | None = None
        self.problems: list[tuple[str, str | None]] = []
        self.stopped = False
        """True when reading stopped at a bound (more lines or bytes than the manifest says)."""

    @property
    def intact(self) -> bool:
        """True when the bytes read are the ones the manifest pins, and no bound was passed."""
        return (self.sha256 == self.entry.sha256 and self.size == self.entry.bytes and not self.problems)

    def __iter__(self) -> Iterator[Item]:
        try:
            f, size = open_regular(self.path)
        except OSError as e:  # swapped for a FIFO, a device or a link since it was listed
            yield 0, None, None, f"unreadable: {e.strerror or e}"
            self.sha256, self.size = None, None
            return
        with f:
            raw = HashingReader(f, size)
            try:
                if self.entry.path.endswith(".parquet"):
                    yield from self._parquet(_read_all(raw, size))
                else:
                    yield from self._jsonl(raw, size)
                raw.drain()
            finally:
                self.sha256, self.size = raw.sha.hexdigest(), raw.bytes

    def _jsonl(self, raw: HashingReader, size: int) -> Iterator[Item]:
        entry = self.entry
        gz = entry.path.endswith(".gz")
        fh = cast(IO[bytes], gzip.GzipFile(fileobj=raw, mode="rb") if gz else io.BufferedReader(raw, CHUNK))
        # A plain file is bounded by its size on disk; a gzip'd one by what the manifest says (no more
        # lines, blank ones included, than its rows; no more bytes than its uncompressed_bytes) and,
        # whatever it says, by gzip_limit of its size, and by the line limit (an over-long line ends it).
        max_lines = entry.rows if gz else None
        max_bytes = entry.uncompressed_bytes if gz else None
        lines = total = 0
        try:
            for line in iter_raw_lines(fh, keep_blank=gz, max_total=gzip_limit(size) if gz else None):
                lines += 1
                total += len(line.data) if line.data is not None else line.size or 0
                if max_lines is not None and lines > max_lines:
                    self.problems.append((f"has more lines than the {max_lines:,} rows manifest.json says", "rows"))
                    self.stopped = True
                    return
                if max_bytes is not None and total > max_bytes:
                    self.problems.append((f"decompresses to more than the {max_bytes:,} bytes manifest.json says",
                                          "uncompressed_bytes"))
                    self.stopped = True
                    return
                if line.bound:
                    self.problems.append((f"line {line.lineno}: {line.error}", None))
                    self.stopped = True
                    return
                if line.error:
                    yield line.lineno, None, None, line.error
                elif not gz or not (line.data or b"").isspace():  # (iter_raw_lines skipped blank lines of plain files)
                    yield line.lineno, line.data, None, None
        except READ_ERRORS as e:  # damaged gzip stream
            yield 0, None, None, f"unreadable: {e}"
            return
        if max_bytes is not None and total != max_bytes:
            self.problems.append((f"decompresses to {total:,} bytes, manifest.json says {max_bytes:,}",
                                  "uncompressed_bytes"))

    def _parquet(self, data: memoryview) -> Iterator[Item]:
        try:  # parsed from the bytes hashed, never from the path again
            pf = open_parquet(data)
        except ParquetBound as e:
            self.problems.append((str(e), None))
            self.stopped = True
            return
        except Exception as e:  # pyarrow raises several types for damaged files
            yield 0, None, None, f"not a readable Parquet file: {e}"
            return
        if self.entry.rows is not None and pf.metadata.num_rows > self.entry.rows:
            self.problems.append((f"has {pf.metadata.num_rows:,} rows, more than the {self.entry.rows:,} "
                                  f"manifest.json says", "rows"))
            self.stopped = True
            return
        n = 0
        try:
            for batch in parquet_batches(pf, len(data)):
                for obj in batch.to_pylist():
                    n += 1
                    try:
                        item: Item = (n, None, _from_parquet(obj), None)
                    except JsonError as e:
                        item = (n, None, None, ParseError(str(e), e.field))
                    yield item
        except ParquetBound as e:
            self.problems.append((str(e), None))
            self.stopped = True
        except Exception as e:  # a damaged column chunk surfaces only while reading
            yield 0, None, None, f"not a readable Parquet file after row {n}: {e}"


class ParquetBound(ValueError):
    """A Parquet file refused at a bound of reading (see open_parquet, parquet_batches); its message is the
    reason, one line."""


def open_parquet(data: Any) -> Any:
    """A pyarrow ParquetFile over the bytes `data` (any buffer), refused with ParquetBound from its footer and
    page headers before any value is decoded (parquet_shape_problem, parquet_pages_problem). Text columns
    are read as dictionaries: one value repeated through a dictionary costs a few bytes on disk and its
    full size for every row decoded, so parquet_batches counts each batch's decoded size first. A damaged
    file raises pyarrow's own errors (several types)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    view = memoryview(data)
    footer = pq.ParquetFile(pa.BufferReader(pa.py_buffer(view)), thrift_container_size_limit=PARQUET_MAX_LIST)
    refused = parquet_shape_problem(footer.metadata, len(view)) or parquet_pages_problem(footer.metadata, view)
    if refused:
        raise ParquetBound(refused)
    texts = [c.path for c in footer.schema if c.physical_type in ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY")]
    return pq.ParquetFile(pa.BufferReader(pa.py_buffer(view)), thrift_container_size_limit=PARQUET_MAX_LIST,
                          read_dictionary=texts)


def parquet_batches(pf: Any, size: int, batch_size: int = 8192, columns: list[str] | None = None) -> Iterator[Any]:
    """The record batches of `pf` (from open_parquet over a `size`-byte file), each counted decoded before
    it is handed out (decoded_size): ParquetBound for a value over MAX_LINE_BYTES, or past gzip_limit(size)
    in all (bounded like a .gz file). Text columns come as dictionaries (to_pylist decodes them)."""
    n = decoded = 0
    limit = gzip_limit(size)
    for batch in pf.iter_batches(batch_size=batch_size, columns=columns):
        got, longest = decoded_size(batch)
        decoded += got
        if longest > MAX_LINE_BYTES:
            raise ParquetBound(f"rows {n + 1:,} to {n + batch.num_rows:,} hold a value of {longest:,} bytes, over "
                               f"the {MAX_LINE_BYTES:,}-byte limit for a row")
        if decoded > limit:
            raise ParquetBound(f"decodes to more than {limit:,} bytes by row {n + batch.num_rows:,}, the most a "
                               f"{size:,}-byte file may expand to")
        n += batch.num_rows
        yield batch


def decoded_size(batch: Any) -> tuple[int, int]:
    """(bytes the batch's values take decoded, the longest text value) without decoding any: text by
    its lengths (a dictionary's looked up through its indices), lists by their elements."""
    import pyarrow as pa
    import pyarrow.compute as pc

    total = longest = 0

    def visit(arr: Any) -> None:
        nonlocal total, longest
        t = arr.type
        if pa.types.is_dictionary(t):
            lengths = pc.binary_length(arr.dictionary) if _is_text(t.value_type) else None
            if lengths is not None:
                per_row = lengths.take(arr.indices)
                total += pc.sum(per_row).as_py() or 0
                longest = max(longest, pc.max(per_row).as_py() or 0)
            else:
                visit(arr.dictionary.take(arr.indices))
        elif _is_text(t):
            lengths = pc.binary_length(arr)
            total += pc.sum(lengths).as_py() or 0
            longest = max(longest, pc.max(lengths).as_py() or 0)
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            total += 8 * len(arr)
            visit(arr.flatten())
        elif pa.types.is_struct(t):
            for i in range(t.num_fields):
                visit(arr.field(i))
        else:
            total += arr.nbytes

    for col in batch.columns:
        visit(col)
    return total, longest


def _is_text(t: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or \
        pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)


PARQUET_MAX_LIST = 65_536
"""Longest list in a Parquet file's footer (row groups, columns, ...), refused while it is parsed."""

PARQUET_MAX_ROW_GROUPS = 10_000
PARQUET_MAX_COLUMNS = 512
PARQUET_MAX_DEPTH = 16
"""Deepest nesting of a Parquet column (its definition level); audit's rows nest 3 deep at most."""


def parquet_shape_problem(md: Any, size: int) -> str | None:
    """Why a Parquet file is refused before any of it is decoded, from its footer alone, or None: too many
    row groups or columns, nesting too deep, or decoding past gzip_limit of its size (bounded like a .gz
    file: a 14 KiB file holding one 400 MiB value is refused unread). The sizes are the footer's own: a
    footer understating them is not caught here."""
    if md.num_row_groups > PARQUET_MAX_ROW_GROUPS:
        return f"has {md.num_row_groups:,} row groups, more than the {PARQUET_MAX_ROW_GROUPS:,} read"
    if md.num_columns > PARQUET_MAX_COLUMNS:
        return f"has {md.num_columns:,} columns, more than the {PARQUET_MAX_COLUMNS:,} read"
    schema = md.schema
    for i in range(md.num_columns):
        col = schema.column(i)
        if col.max_definition_level > PARQUET_MAX_DEPTH or col.max_repetition_level > PARQUET_MAX_DEPTH:
            return f"column {col.path} is nested deeper than {PARQUET_MAX_DEPTH} levels"
    limit = gzip_limit(size)
    total = 0
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        total += sum(max(0, rg.column(c).total_uncompressed_size) for c in range(rg.num_columns))
        if total > limit:
            return (f"decodes to more than {limit:,} bytes (its footer says), the most a {size:,}-byte file may "
                    "expand to")
    return None


PARQUET_MAX_PAGES = 1_000_000


def parquet_pages_problem(md: Any, data: memoryview) -> str | None:
    """parquet_shape_problem's size bound from the page headers, which the reader sizes its buffers
    by (a footer may understate them): why the file is refused, or None. Headers that cannot be read
    are left to the reader, which reports them."""
    limit = gzip_limit(len(data))
    total = pages = 0
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        for c in range(rg.num_columns):
            col = rg.column(c)
            pos = col.dictionary_page_offset if col.has_dictionary_page and col.dictionary_page_offset else \
                col.data_page_offset
            end = min(len(data), pos + max(0, col.total_compressed_size))
            while 0 <= pos < end:
                header = _page_header(data, pos)
                if header is None:
                    break
                pos, uncompressed, compressed = header
                pos += max(0, compressed)
                total += max(0, uncompressed)
                pages += 1
                if total > limit:
                    return (f"decodes to more than {limit:,} bytes (its page headers say), the most a "
                            f"{len(data):,}-byte file may expand to")
                if pages > PARQUET_MAX_PAGES:
                    return f"has more than {PARQUET_MAX_PAGES:,} pages"
    return None


def _page_header(data: memoryview, pos: int) -> tuple[int, int, int] | None:
    """(end of the header, uncompressed_page_size, compressed_page_size) of the Thrift compact-encoded
    PageHeader at `pos` (parquet.thrift: fields 2 and 3, i32), or None when it cannot be read."""
    n = len(data)

    def varint(i: int) -> tuple[int, int]:
        shift = out = 0
        while True:
            if i >= n or shift > 63:
                raise ValueError
            b = data[i]
            i += 1
            out |= (b & 0x7F) << shift
            if not b & 0x80:
                return out, i
            shift += 7

    def skip(i: int, kind: int, depth: int) -> int:
        if depth > 32:
            raise ValueError
        if kind in (1, 2):  # booleans inside a struct carry their value in the type
            return i
        if kind == 3:
            return i + 1
        if kind in (4, 5, 6):
            return varint(i)[1]
        if kind == 7:
            return i + 8
        if kind == 8:
            length, i = varint(i)
            return i + length
        if kind in (9, 10):
            if i >= n:
                raise ValueError
            b = data[i]
            size, elem, i = b >> 4, b & 0x0F, i + 1
            if size == 15:
                size, i = varint(i)
            for _ in range(size):
                i = i + 1 if elem in (1, 2) else skip(i, elem, depth + 1)
                if i > n:
                    raise ValueError
            return i
        if kind == 11:
            size, i = varint(i)
            if size:
                if i >= n:
                    raise ValueError
                kv, i = data[i], i + 1
                for _ in range(size):
                    i = skip(skip(i, kv >> 4, depth + 1), kv & 0x0F, depth + 1)
                    if i > n:
                        raise ValueError
            return i
        if kind == 12:
            return struct(i, depth + 1)[0]
        raise ValueError

    def struct(i: int, depth: int) -> tuple[int, dict[int, int]]:
        last, found = 0, dict[int, int]()
        while True:
            if i >= n:
                raise ValueError
            b = data[i]
            i += 1
            if b == 0:
                return i, found
            kind, delta = b & 0x0F, b >> 4
            if delta:
                fid = last + delta
            else:
                z, i = varint(i)
                fid = (z >> 1) ^ -(z & 1)
            last = fid
            if depth == 0 and fid in (2, 3) and kind == 5:
                z, i = varint(i)
                found[fid] = (z >> 1) ^ -(z & 1)
            else:
                i = skip(i, kind, depth)

    try:
        end, found = struct(pos, 0)
    except ValueError:
        return None
    if 2 not in found or 3 not in found:
        return None
    return end, found[2], found[3]


def _read_all(raw: HashingReader, size: int) -> memoryview:
    """The `size` bytes of a file (fewer if it shrank), read into one buffer allocated up front."""
    view = memoryview(bytearray(size))
    got = 0
    while got < size and (n := raw.readinto(view[got:])):
        got += n
    return view[:got]


class PinnedBytes:
    """The whole of one file of a package, read once from a regular file (a FIFO, device or link swapped
    in is refused, never waited on) with the sha256 and size of exactly the bytes read.

    `data` holds the bytes when the file is at most `keep` bytes (a document read whole), else None
    and `error` says so; larger files are still hashed in full, in bounded memory.
    """

    def __init__(self, path: Path, keep: int = 0):
        self.data: bytes | None = None
        self.sha256: str | None = None
        self.size: int | None = None
        self.error: str | None = None
        try:
            f, size = open_regular(path)
        except OSError as e:
            self.error = f"unreadable: {e.strerror or e}"
            return
        with f:
            raw = HashingReader(f, size)
            if size <= keep:
                self.data = bytes(_read_all(raw, size))
            else:
                if keep:
                    self.error = f"larger than the {keep:,}-byte limit for a JSON document"
                raw.drain()
            self.sha256, self.size = raw.sha.hexdigest(), raw.bytes


# Fast paths. pydantic-core parses JSON in Rust, several times faster than `json` plus model
# validation in Python. Its parser is more lenient in one way: it reads NaN, Infinity and
# out-of-range numbers (1e400) as non-finite floats, which the strict reader refuses. So a row
# takes the fast path only when it validates and every float in it is finite; anything else
# goes through the strict path, whose messages are the ones reported. Rows pydantic-core
# rejects but the strict reader accepts (lone surrogates such as "\ud800", deep nesting) take
# the strict path too.


_JSON_TYPES = (str, int, float, bool, type(None))


def _json_native(annotation: Any) -> bool:
    """True when a field's type is made of JSON's own: there strict validation of JSON input
    accepts exactly what strict validation of the parsed object accepts (not so for tuples,
    dates or bytes, which pydantic reads from JSON arrays and strings)."""
    if annotation is Any or annotation in _JSON_TYPES:
        return True
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:  # constraints (models.Count) apply alike to JSON and to objects
        return _json_native(args[0])
    if origin is typing.Literal:
        return all(isinstance(a, (str, int, bool)) for a in args)
    if origin in (typing.Union, types.UnionType, list, dict):
        return all(_json_native(a) for a in args)
    return False


@functools.cache
def _float_fields(model: type[Record]) -> tuple[str, ...] | None:
    """Fields of a row model that can hold a float (float, Any, dict[str, Any], ...); None when
    the model has a field type that is not JSON-native (then rows take the strict path only)."""
    fields = model.model_fields
    if not all(_json_native(f.annotation) for f in fields.values()):
        return None
    return tuple(name for name, f in fields.items() if "float" in str(f.annotation) or "Any" in str(f.annotation))


_CONTAINERS = (float, dict, list)


def _finite(value: Any) -> bool:
    """False when a float anywhere in a parsed JSON value is NaN or infinite."""
    t = type(value)
    if t is float:
        return math.isfinite(value)
    if t is dict or t is list:
        for v in value.values() if t is dict else value:
            if type(v) in _CONTAINERS and not _finite(v):
                return False
    return True


def _key_count(value: Any) -> int:
    """Keys of every JSON object in a parsed value (nested ones too)."""
    t = type(value)
    if t is dict:
        return len(value) + sum(_key_count(v) for v in value.values() if type(v) in (dict, list))
    if t is list:
        return sum(_key_count(v) for v in value if type(v) in (dict, list))
    return 0


_WS = b" \t\r\n"


def _no_duplicate_keys(data: bytes, keys: int) -> bool:
    """True when the line cannot hold a key twice: pydantic-core keeps the last of two equal keys.

    Every key of a line is followed (after any whitespace) by one colon, so a line with as many
    colons as its parsed objects have keys holds no key twice. Otherwise: with the whitespace
    removed each key adds one `":` to the bytes (an escaped quote before a colon inside a string
    adds more, never fewer), so as many `":` as keys means none was dropped; anything else (a
    duplicate, a key written with escapes, `\":` in a text) takes the strict path, which names
    the duplicate.
    """
    if data.count(b":") == keys:
        return True  # each key has its colon, and there are no more colons than keys: no key twice
    return data.translate(None, _WS).count(b'":') == keys


def fast_row(model: type[Record], data: bytes, check_keys: bool = True) -> Record | None:
    """The row model of one JSONL line through pydantic-core's parser, or None: use the strict path.

    `check_keys=False` skips the duplicate-key check, for lines of a validated file read under its
    pinned digest (they are the bytes that passed it)."""
    floats = _float_fields(model)
    if floats is None:
        return None
    try:
        rec = model.__pydantic_validator__.validate_json(data)
    except ValueError:  # pydantic.ValidationError, including malformed JSON
        return None
    for name in floats:
        if not _finite(getattr(rec, name)):
            return None
    if check_keys:
        keys = len(rec.model_fields_set)
        for name in _container_fields(model):
            if name in rec.model_fields_set:
                keys += _key_count(getattr(rec, name))
        if not _no_duplicate_keys(data, keys):
            return None
    return rec


@functools.cache
def _container_fields(model: type[Record]) -> tuple[str, ...]:
    """Fields of a row model that can hold JSON objects (whose keys count too)."""
    return tuple(name for name, f in model.model_fields.items()
                 if any(w in str(f.annotation) for w in ("dict", "Any", "list")))


def fast_object(data: bytes) -> dict[str, Any] | None:
    """One JSONL line of a validated file as a dict through pydantic-core's parser, or None.

    No duplicate-key check: the line was validated (strictly) and its bytes are pinned by sha256.
    """
    try:
        obj = from_json(data, allow_inf_nan=False)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) and _finite(obj) else None
