"""Reading the files other tools write, one record at a time, with bounded memory.

Each reader yields `Record(label, row, obj, error)`: `row` is the 1-based line
number (JSONL), element number (JSON array) or data-row number (CSV, Parquet),
so every error can name file and row. A damaged file ends its stream with an
error record instead of raising from deep inside a parser.

A reader given a `SourceFile` (the file pinned by sha256 for the provenance) parses only the bytes that digest
names: it reads the file once, through a hash, and when its stream ends compares the digest and size of what
it read with the pin (a zip or Parquet file, read whole, is compared before it is parsed). A file replaced or
rewritten since it was hashed raises AuditError (CHANGED), so an import is never written under the digest of
bytes it did not parse. Each read is checked: an importer that reads a file once per table checks every time.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import io
import json
import os
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from audit.errors import AuditError
from audit.fileio import (
    CHUNK,
    DECODER,
    MAX_GZIP_BYTES,
    MAX_GZIP_RATIO,
    MAX_LINE_BYTES,
    READ_ERRORS,
    HashingReader,
    gunzip_bounded,
    gzip_limit,
    iter_raw_lines,
    open_regular,
    parse_object,
    read_regular,
    sha256_bytes,
)

JSON_SUFFIXES = (".json", ".jsonl", ".jsonl.gz", ".ndjson", ".zip")
TABLE_SUFFIXES = (*JSON_SUFFIXES, ".csv", ".csv.gz", ".parquet")
_CHUNK = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Record:
    """One input record: where it came from, and the object or why it could not be read."""

    label: str
    row: int
    obj: dict[str, Any] | None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class SourceFile:
    """An input file pinned by content: recorded in the package's provenance."""

    path: Path
    sha256: str
    bytes: int
    fmt: str | None = None
    """The format `--format` named (a suffix without its dot, e.g. `jsonl`), for a name that does not tell it;
    None: the name's extension tells it."""

    @property
    def name(self) -> str:
        return self.path.name

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "sha256": self.sha256, "bytes": self.bytes,
                **({"format": self.fmt} if self.fmt else {})}


def format_name(src: str | os.PathLike[str] | SourceFile, fmt: str | None = None) -> str:
    """The name, lower case, that a reader tells the format of `src` by: the file's own, or with the suffix of the
    format `--format` named after it (`fmt`, else the SourceFile's): the one place `--format` takes effect."""
    fmt = fmt or (src.fmt if isinstance(src, SourceFile) else None)
    name = (src.path if isinstance(src, SourceFile) else Path(src)).name.lower()
    return f"{name}.{fmt}" if fmt else name


def format_choices(suffixes: tuple[str, ...]) -> list[str]:
    """`--format` values for a reader of these suffixes: each without its dot."""
    return [x.removeprefix(".") for x in suffixes]


def source_file(path: str | os.PathLike[str], suffixes: tuple[str, ...], fmt: str | None = None, *,
                format_hint: bool = True) -> SourceFile:
    """Check that `path` is a readable file of a known format (by its extension, or `fmt`, one of
    `format_choices(suffixes)`, for a name that says none or another) and hash it. `format_hint`: the refusal of
    an unknown extension names `--format` (False for a command whose --format means something else)."""
    p = Path(path)
    if not p.is_file():
        raise AuditError("no such file", path=str(p))
    if fmt is not None and fmt not in format_choices(suffixes):
        raise AuditError(f"--format {fmt}: expected one of {', '.join(format_choices(suffixes))}", path=str(p))
    if not format_name(p, fmt).endswith(suffixes):
        raise AuditError(f"unknown file type: expected {', '.join(suffixes)}"
                         + (" (or give --format)" if format_hint else ""), path=str(p))
    try:
        f, size = open_regular(p, follow_links=True)
        with f:
            h = HashingReader(f, size)
            h.drain()
    except OSError as e:
        raise AuditError(f"unreadable: {e.strerror or e}", path=str(p)) from None
    return SourceFile(p, h.sha.hexdigest(), h.bytes, fmt)


CHANGED = "the file changed since it was hashed: run again"
"""Why a read of a pinned source stops: its bytes are not the ones its SourceFile hashed (replaced, rewritten,
grown or cut since). One line, after the file's name."""


def _path(src: Path | SourceFile) -> Path:
    return src.path if isinstance(src, SourceFile) else src


def check_pinned(src: Path | SourceFile, data: bytes) -> None:
    """Refuse (AuditError CHANGED) bytes read whole from a pinned source that are not the bytes it pinned."""
    if isinstance(src, SourceFile) and (len(data) != src.bytes or sha256_bytes(data) != src.sha256):
        raise AuditError(CHANGED, path=str(src.path))


class _Read:
    """One read of an input file: a binary stream of it (un-gzipped for `.gz`, bounded as open_binary's) through a
    HashingReader, and `check`, which proves the bytes read are the ones a SourceFile pinned. Only a regular file
    is opened (a link to one is followed), and no more of it is read than its size when opened."""

    def __init__(self, src: Path | SourceFile, fmt: str | None = None):
        self.pin = src if isinstance(src, SourceFile) else None
        self.path = _path(src)
        self._f, size = open_regular(self.path, follow_links=True)
        try:
            if self.pin is not None and size != self.pin.bytes:
                raise AuditError(CHANGED, path=str(self.path))  # refused before a byte is parsed
            self.hashed = HashingReader(self._f, size)
            # A large buffer: skipping an over-long line with an 8 KiB one is 3x slower.
            self._raw = io.BufferedReader(self.hashed, CHUNK)
            self.stream: IO[bytes] = (gunzip_bounded(self._raw, size) if format_name(src, fmt).endswith(".gz")
                                      else self._raw)
        except BaseException:
            self._f.close()
            raise

    def check(self) -> None:
        """Hash what is left of the file unread (a parser may stop before its end) and raise AuditError CHANGED
        unless all of it is the pinned file."""
        if self.pin is None:
            return
        try:
            self.hashed.drain()
        except OSError as e:
            raise AuditError(f"unreadable: {e.strerror or e}", path=str(self.path)) from None
        if (self.hashed.bytes, self.hashed.sha.hexdigest()) != (self.pin.bytes, self.pin.sha256):
            raise AuditError(CHANGED, path=str(self.path))

    def close(self) -> None:
        self._f.close()


def _read_checked(src: Path | SourceFile, parse: Callable[[IO[bytes]], Iterator[Record]],
                  label: str | None = None, fmt: str | None = None) -> Iterator[Record]:
    """The records `parse` reads from one read of `src` (see _Read), checked against its pin when they end. An
    error record is held until the next record comes: one that ends the stream is told only after the check, so
    a file swapped for a damaged one says it changed rather than where the other file is damaged."""
    path = _path(src)
    label = label or str(path)
    try:
        read = _Read(src, fmt)
    except OSError as e:
        yield Record(label, 0, None, f"unreadable: {e.strerror or e}")
        return
    try:
        held: Record | None = None
        try:
            for rec in parse(read.stream):
                if held is not None:
                    yield held
                    held = None
                if rec.error is None:
                    yield rec
                else:
                    held = rec
        except READ_ERRORS as e:
            if held is not None:
                yield held
            held = Record(label, 0, None, f"unreadable: {e}")
        read.check()
        if held is not None:
            yield held
    finally:
        read.close()


# --------------------------------------------------------------------------- JSON


def iter_json_records(src: Path | SourceFile, fmt: str | None = None) -> Iterator[Record]:
    """Records of a JSONL (`.jsonl`, `.jsonl.gz`, `.ndjson`), JSON array (`.json`) or `.zip` of those (by the name,
    or `fmt`: see format_name); of a SourceFile, checked to be the bytes it pinned (AuditError CHANGED otherwise)."""
    path = _path(src)
    name = format_name(src, fmt)
    label = str(path)
    if name.endswith(".zip"):
        yield from _iter_zip(src)
        return

    def parse(fh: IO[bytes]) -> Iterator[Record]:
        if name.endswith(".json") and _first_char(fh) == b"[":
            yield from iter_json_array(fh, label)
        else:
            yield from _iter_jsonl(fh, label)

    yield from _read_checked(src, parse, fmt=fmt)


def _first_char(fh: IO[bytes]) -> bytes:
    # Peek past leading whitespace without consuming anything.
    head = fh.peek(4096) if hasattr(fh, "peek") else b""
    stripped = head.lstrip()
    return stripped[:1]


def _iter_jsonl(fh: IO[bytes], label: str) -> Iterator[Record]:
    for raw in iter_raw_lines(fh):
        if raw.data is None:  # unreadable: error says why
            yield Record(label, raw.lineno, None, raw.error)
            continue
        obj, err = parse_object(raw.data)
        yield Record(label, raw.lineno, obj, err)


MAX_ZIP_MEMBERS = 100_000
"""Most entries a zip input may list (an inspect_ai log holds one per sample and epoch, a few summaries)."""


_ZIP_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA)


def zip_problem(zf: zipfile.ZipFile, size: int, methods: bool = True) -> str | None:
    """Why a `size`-byte zip archive is refused before any member is read, or None: too many members, a
    member name that is not a plain relative path (`..`, absolute, control characters: error lines name
    members), an encrypted member or one of a compression method zipfile cannot read, or members that
    say they decompress past gzip_limit(size) together (bounded like a .gz file; zipfile stops each
    member at the size it says, so overlapping members count every time). Without `methods`, any
    compression method passes (for a reader of its own: inspect_ai reads zstd, method 93)."""
    infos = zf.infolist()
    if len(infos) > MAX_ZIP_MEMBERS:
        return f"zip archive has {len(infos):,} members, more than the {MAX_ZIP_MEMBERS:,} read"
    limit = gzip_limit(size)
    total = 0
    for i in infos:
        name = i.filename
        parts = name.replace("\\", "/").split("/")
        if name.startswith(("/", "\\")) or ".." in parts or (len(name) > 1 and name[1] == ":") or \
                any(ord(c) < 32 or ord(c) == 127 for c in name):
            return f"zip archive has a member named {name!r}: not a plain relative path"
        if i.flag_bits & 0x1:
            return f"zip archive member {name!r} is encrypted"
        if methods and i.compress_type not in _ZIP_METHODS:  # zipfile raises NotImplementedError only when it is opened
            return f"zip archive member {name!r} uses compression method {i.compress_type}, which is not read"
        total += i.file_size
        if total > limit:
            return (f"zip archive decompresses to more than {limit:,} bytes (its members say), the most a "
                    f"{size:,}-byte file may expand to (at most {MAX_GZIP_RATIO} times its size, "
                    f"{MAX_GZIP_BYTES:,} bytes in all)")
    return None


def _iter_zip(src: Path | SourceFile) -> Iterator[Record]:
    # Upstream MMLU-Pro keeps results as a zip holding one JSON array. zipfile seeks (its directory is at the end),
    # so the archive is read whole, once: the bytes checked against the pin are the bytes its members come from.
    path = _path(src)
    try:
        data = read_regular(path, follow_links=True)
    except OSError as e:
        yield Record(str(path), 0, None, f"unreadable: {e.strerror or e}")
        return
    check_pinned(src, data)
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, *READ_ERRORS) as e:
        yield Record(str(path), 0, None, f"not a readable zip archive: {e}")
        return
    with zf:
        refused = zip_problem(zf, len(data))
        if refused:
            yield Record(str(path), 0, None, refused)
            return
        members = sorted(i.filename for i in zf.infolist()
                         if not i.is_dir() and i.filename.lower().endswith((".json", ".jsonl"))
                         and not i.filename.startswith("__MACOSX/"))
        if not members:
            yield Record(str(path), 0, None, "zip archive holds no .json or .jsonl file")
            return
        for member in members:
            label = f"{path}:{member}"
            try:
                with zf.open(member) as raw:
                    # zf.open gives a ZipExtFile (typeshed says IO[bytes]), which BufferedReader takes
                    fh = io.BufferedReader(raw, buffer_size=_CHUNK)  # type: ignore[type-var]
                    if member.lower().endswith(".json") and _first_char(fh) == b"[":
                        yield from iter_json_array(fh, label)
                    else:
                        yield from _iter_jsonl(fh, label)
            except (zipfile.BadZipFile, *READ_ERRORS) as e:
                yield Record(label, 0, None, f"unreadable: {e}")
                return


def iter_json_array(fh: IO[bytes], label: str, max_element_bytes: int = MAX_LINE_BYTES) -> Iterator[Record]:
    """Elements of a top-level JSON array, decoded one at a time (never the whole file at once).

    A syntax error ends the stream: inside an array there is no next line to resume at.
    """
    text = io.TextIOWrapper(fh, encoding="utf-8", newline="")
    buf = ""
    pos = 0
    eof = False
    row = 0

    def more(n: int = _CHUNK) -> bool:
        nonlocal buf, pos, eof
        if eof:
            return False
        chunk = text.read(n)
        if not chunk:
            eof = True
            return False
        if pos:
            buf = buf[pos:]
            pos = 0
        buf += chunk
        return True

    def skip_ws() -> str:
        # The next non-blank character, or "" at the end of the input.
        nonlocal pos
        while True:
            while pos < len(buf) and buf[pos] in " \t\r\n":
                pos += 1
            if pos < len(buf):
                return buf[pos]
            if not more():
                return ""

    try:
        if skip_ws() != "[":
            yield Record(label, 0, None, "expected a JSON array")
            return
        pos += 1
        if skip_ws() == "]":
            pos += 1
        else:
            while True:
                row += 1
                want = _CHUNK
                while True:
                    try:
                        obj, end = DECODER.raw_decode(buf, pos)
                        # A number or literal cut at the buffer's end decodes too early.
                        if end < len(buf) or eof or isinstance(obj, (dict, list, str)):
                            break
                    except json.JSONDecodeError as e:
                        if len(buf) - pos > max_element_bytes:
                            yield Record(label, row, None,
                                         f"element is over the {max_element_bytes:,}-byte limit")
                            return
                        if not more(want):
                            yield Record(label, row, None, f"malformed JSON: {e.msg}")
                            return
                        want *= 2  # grow geometrically: re-decoding stays linear overall
                        continue
                    except ValueError as e:
                        yield Record(label, row, None, f"malformed JSON: {e}")
                        return
                    except RecursionError:
                        yield Record(label, row, None, "malformed JSON: nested too deeply")
                        return
                    if not more(want):
                        break
                pos = end
                if isinstance(obj, dict):
                    yield Record(label, row, obj)
                else:
                    yield Record(label, row, None, f"expected a JSON object, found {type(obj).__name__}")
                c = skip_ws()
                if c == ",":
                    pos += 1
                    skip_ws()
                    continue
                if c == "]":
                    pos += 1
                    break
                yield Record(label, row, None, "malformed JSON: expected ',' or ']' after the element")
                return
        if skip_ws() != "":
            yield Record(label, row, None, "malformed JSON: data after the closing ']'")
    except UnicodeDecodeError as e:
        yield Record(label, row or 0, None, f"not valid UTF-8 near element {row or 1}: {e.reason}")


# --------------------------------------------------------------------------- tables


def iter_table_records(src: Path | SourceFile, fmt: str | None = None) -> Iterator[Record]:
    """Records of any supported table file: JSONL/JSON/zip, CSV (all values as text) or Parquet, told by the name
    or `fmt` (see format_name); of a SourceFile, checked to be the bytes it pinned (AuditError CHANGED otherwise)."""
    name = format_name(src, fmt)
    if name.endswith((".csv", ".csv.gz")):
        yield from _iter_csv(src, fmt=fmt)
    elif name.endswith(".parquet"):
        yield from _iter_parquet(src)
    else:
        yield from iter_json_records(src, fmt)


class LineTooLong(OSError):
    """A text input ran past MAX_LINE_BYTES without a newline (an OSError: readers report it as unreadable)."""


class _LineBound(io.RawIOBase):
    """A binary stream that raises LineTooLong once more than MAX_LINE_BYTES pass without a newline."""

    def __init__(self, fh: IO[bytes]):
        self._fh = fh
        self._run = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        data = self._fh.read(len(b))
        n = len(data)
        b[:n] = data
        nl = data.rfind(b"\n")
        self._run = self._run + n if nl < 0 else n - nl - 1
        if self._run > MAX_LINE_BYTES:
            raise LineTooLong(f"a line is over the {MAX_LINE_BYTES:,}-byte limit")
        return n

    def close(self) -> None:
        self._fh.close()
        super().close()


def _iter_csv(src: Path | SourceFile, chunk_rows: int = 8192, fmt: str | None = None) -> Iterator[Record]:
    import pandas as pd

    label = str(_path(src))

    def parse(stream: IO[bytes]) -> Iterator[Record]:
        row = 0
        try:
            # Every cell as text: CSV has no types, and guessing them would turn "007" into 7.
            # An empty cell is null: CSV cannot tell an empty string from a missing value.
            # A .csv.gz is read through the bounded gzip of _Read (pandas' own would expand a bomb), and
            # every file through _LineBound (pandas would hold a cell of any length, and the rows are JSONL later).
            fh = io.BufferedReader(_LineBound(stream), _CHUNK)
            reader = pd.read_csv(fh, dtype=str, keep_default_na=False, chunksize=chunk_rows, compression=None,
                                 encoding="utf-8", encoding_errors="strict")
            with fh, reader:
                for chunk in reader:
                    for obj in chunk.to_dict("records"):
                        row += 1
                        yield Record(label, row, {k: (None if v == "" else v) for k, v in obj.items()})
        except UnicodeDecodeError as e:
            yield Record(label, row + 1, None, f"not valid UTF-8: {e.reason}")
        except pd.errors.EmptyDataError:
            return
        except (pd.errors.ParserError, ValueError, *READ_ERRORS) as e:
            msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            yield Record(label, row + 1, None, f"malformed CSV: {msg}")

    yield from _read_checked(src, parse, fmt=fmt)


def _iter_parquet(src: Path | SourceFile, batch_rows: int = 8192) -> Iterator[Record]:
    from audit.packages.layout import ParquetBound, open_parquet, parquet_batches

    path = _path(src)
    label = str(path)
    row = 0
    try:
        data = read_regular(path, follow_links=True)
    except OSError as e:
        yield Record(label, 0, None, f"unreadable: {e.strerror or e}")
        return
    check_pinned(src, data)  # the bytes decoded are the ones pinned
    try:
        # The bytes read once (memory as the file's size), bounded as a package's Parquet file is: footer
        # and page headers checked before decoding, each batch's decoded size counted before it is decoded.
        pf = open_parquet(data)
        for batch in parquet_batches(pf, len(data), batch_rows):
            for obj in batch.to_pylist():
                row += 1
                yield Record(label, row, {k: _plain(v) for k, v in obj.items()})
    except ParquetBound as e:
        yield Record(label, row + 1, None, str(e))
    except Exception as e:  # pyarrow raises several types for damaged files
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        yield Record(label, row + 1, None, f"not a readable Parquet file: {msg}")


def parquet_problem(data: bytes) -> str | None:
    """Why a Parquet input (its bytes) is refused at a bound of reading (see _iter_parquet), or None; for a
    reader that decodes it with another library (datasets). Damaged files are left to that reader."""
    from audit.packages.layout import ParquetBound, open_parquet, parquet_batches

    try:
        for _ in parquet_batches(open_parquet(data), len(data)):
            pass
    except ParquetBound as e:
        return str(e)
    except Exception:  # pyarrow raises several types for damaged files
        return None
    return None


def _plain(v: Any) -> Any:
    # Parquet types JSON has no word for: dates and times as ISO text, decimals as text.
    if isinstance(v, (_dt.datetime, _dt.date, _dt.time)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v
