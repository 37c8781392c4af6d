"""What a package is on disk: its manifest's name, data file suffixes, its content identity (digests), tar
tails, and the pinned reads of its files (every byte read is the byte hashed). Parquet's bounds are
`audit.packages.parquet`; fast row decoding is `audit.packages.fastrow`. The row schemas, the fields
that key each and the document schemas come from the package kinds (`audit.packages.kinds`); `ROW_KEYS`
and `DOCUMENT_SCHEMAS` are their tables, kept importable from here.

Shared by `validate` (checks), `read` (a validated package's rows) and `write`.
"""

from __future__ import annotations

import functools
import gzip
import io
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, Protocol, cast

from audit.fileio import (
    CHUNK,
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
from audit.models import PROVENANCE_PINNED_SINCE, FileEntry, Manifest, Record
from audit.packages.kinds import DOCUMENT_SCHEMAS
from audit.packages.kinds import ROW_KEYS as ROW_KEYS
from audit.packages.parquet import ParquetBound, open_parquet, parquet_batches

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


MANIFEST_IDENTITY_SINCE = PROVENANCE_PINNED_SINCE
"""The manifest schema_version from which a package's digest covers its whole manifest (below it, the manifest
model sets its provenance aside: `Manifest.unpinned_provenance`)."""

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
