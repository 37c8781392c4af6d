"""The project's file I/O: bounded reads of regular files and gzip, streaming JSON Lines with
bounded memory per line, strict JSON (no duplicate keys, no NaN), byte-stable JSON, hashes,
and atomic writes. Every reader and writer in audit goes through here.

Lines are read in binary with a length cap, so a multi-GB line is reported and
skipped instead of being loaded; decoding and parsing errors name the line.
Writers replace a file only when it is complete (temp file, fsync, rename).
"""

from __future__ import annotations

import errno
import gzip
import hashlib
import io
import json
import math
import os
import re
import stat
import unicodedata
import uuid
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from audit.errors import AuditError, short_repr

MAX_LINE_BYTES = 64 * 1024 * 1024
"""Longest JSONL line read; longer lines are errors (responses cut at 65,536 tokens are well under 1 MB)."""

MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
"""Largest single JSON document read whole (manifest, provenance file)."""

MAX_BLANK_LINES = 1_000_000
"""Most blank lines skipped in one file: each costs a read, so a file of newlines (8 GiB from 8 MB of
gzip) would take an hour without making a row."""

MAX_GZIP_RATIO = 200
"""Most bytes a `.gz` file may decompress to per compressed byte, whatever its manifest says: JSONL rows
compress 3 to 30 times; a bomb (one gzip member repeated, a run of one byte) a thousand times."""

MAX_GZIP_BYTES = 16 * 1024 * 1024 * 1024
"""Most bytes any `.gz` file may decompress to, whatever its size and its manifest say."""

CHUNK = 1024 * 1024


def gzip_limit(compressed: int) -> int:
    """Most bytes a `.gz` file of `compressed` bytes is read to (see MAX_GZIP_RATIO, MAX_GZIP_BYTES); a
    small file may still hold one line of the longest length."""
    return min(MAX_GZIP_BYTES, max(MAX_LINE_BYTES, compressed * MAX_GZIP_RATIO))

READ_ERRORS = (OSError, EOFError, zlib.error)
"""What reading a damaged file or gzip stream raises (zlib.error is not an OSError)."""


@dataclass(frozen=True, slots=True)
class RawLine:
    """One line of a JSONL file: its 1-based number and bytes, or why it could not be read."""

    lineno: int
    data: bytes | None
    """The line's bytes; None exactly when `error` says why it could not be read."""
    error: str | None = None
    size: int | None = None
    """Bytes of an over-long line that was skipped (data is then None)."""
    bound: bool = False
    """True when reading stopped here, at a bound of a compressed stream (see iter_raw_lines)."""


def open_binary(path: str | os.PathLike[str]) -> IO[bytes]:
    """Open a file for binary reading, transparently un-gzipping `*.gz`."""
    p = str(path)
    if p.endswith(".gz"):
        return io.BufferedReader(_BoundedGzip(p), CHUNK)
    # A large buffer: skipping an over-long line with an 8 KiB one is 3x slower.
    return open(p, "rb", buffering=CHUNK)


def gunzip_bounded(fh: IO[bytes], compressed: int) -> IO[bytes]:
    """The un-gzipped bytes of an open `compressed`-byte gzip stream, bounded as open_binary's `.gz` (GzipBound
    past gzip_limit); closing it leaves `fh` open."""
    return io.BufferedReader(_BoundedGzip(fh, compressed), CHUNK)


class GzipBound(OSError):
    """A `.gz` stream decompressed past gzip_limit of its size (an OSError: readers report it as unreadable)."""


class _BoundedGzip(io.RawIOBase):
    """A gzip file's decompressed bytes that raise GzipBound past gzip_limit of its size on disk, so no
    reader of it (importers, judges, inputs) can be kept decompressing a bomb."""

    def __init__(self, path: str | IO[bytes], compressed: int | None = None):
        # A path, or an open binary file of `compressed` bytes (left open: its owner closes it).
        if isinstance(path, str):
            self._gz = gzip.GzipFile(path, "rb")
            compressed = os.path.getsize(path)
        else:
            assert compressed is not None
            self._gz = gzip.GzipFile(fileobj=path, mode="rb")
        self._limit = gzip_limit(compressed)
        self._n = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = self._gz.readinto(b)
        self._n += n
        if self._n > self._limit:
            raise GzipBound(f"decompresses to more than {self._limit:,} bytes, the most this file may expand to "
                            f"(at most {MAX_GZIP_RATIO} times its size, {MAX_GZIP_BYTES:,} bytes in all)")
        return n

    def close(self) -> None:
        self._gz.close()
        super().close()


def iter_raw_lines(fh: IO[bytes], max_line_bytes: int = MAX_LINE_BYTES,
                   keep_blank: bool = False, max_total: int | None = None) -> Iterator[RawLine]:
    """Yield each non-blank line (every line with `keep_blank`) with its number; an over-long line
    yields an error and is skipped.

    `max_total` is for a decompressed stream, which can expand without end: an over-long line then
    ends reading (skipping it would decompress all of it: a 48 GiB line from 49 MiB), and so does
    passing `max_total` bytes; the last line yielded then has `bound` set."""
    lineno = total = blank = 0
    readline, cap = fh.readline, max_line_bytes + 1
    while True:
        line = readline(cap)
        if not line:
            return
        lineno += 1
        if len(line) > max_line_bytes and not line.endswith(b"\n"):
            if max_total is not None:
                yield RawLine(lineno, None, f"line is over the {max_line_bytes:,}-byte limit (decompressed); "
                                            "reading stopped there", len(line), bound=True)
                return
            # Skip the rest of the line in bounded chunks.
            skipped = len(line)
            while True:
                rest = fh.readline(CHUNK)
                skipped += len(rest)
                if not rest or rest.endswith(b"\n"):
                    break
            yield RawLine(lineno, None, f"line is {skipped:,} bytes, over the {max_line_bytes:,}-byte limit",
                          skipped)
            continue
        if max_total is not None and (total := total + len(line)) > max_total:
            yield RawLine(lineno, None, f"decompresses to more than {max_total:,} bytes, the most this file "
                                        f"may expand to (at most {MAX_GZIP_RATIO} times its size, "
                                        f"{MAX_GZIP_BYTES:,} bytes in all); reading stopped there", len(line),
                          bound=True)
            return
        if keep_blank or not line.isspace():  # (isspace: no copy of a long line, unlike strip)
            yield RawLine(lineno, line)
        else:
            blank += 1
            if blank > MAX_BLANK_LINES:
                yield RawLine(lineno, None, f"more than {MAX_BLANK_LINES:,} blank lines; reading stopped there",
                              bound=True)
                return


class _Slice(io.RawIOBase):
    """`n` bytes of `fh` from where it stands (a zip member's compressed data)."""

    def __init__(self, fh: IO[bytes], n: int) -> None:
        self.fh, self.left = fh, n

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        if self.left <= 0:
            return 0
        data = self.fh.read(min(len(b), self.left, CHUNK))
        b[:len(data)] = data
        self.left -= len(data)
        return len(data)


def _member_chunks(method: int, raw: _Slice) -> Iterator[bytes] | None:
    """The decompressed bytes of one member, at most CHUNK at a time (None: a method not counted here)."""
    if method == 0:
        return iter(lambda: raw.read(CHUNK), b"")
    if method == 8:
        def inflate() -> Iterator[bytes]:
            d = zlib.decompressobj(-15)
            while data := raw.read(CHUNK):
                while data:
                    out = d.decompress(data, CHUNK)
                    yield out
                    data = d.unconsumed_tail
        return inflate()
    if method == 93:
        try:
            import zstandard
        except ImportError:
            return None
        reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)  # type: ignore[arg-type]  # (any .read())
        return iter(lambda: reader.read(CHUNK), b"")
    return None


def zip_expansion_problem(fh: IO[bytes], infos: list[Any], limit: int) -> str | None:
    """Why a zip archive is refused once its members are actually decompressed, counting every byte produced,
    or None: a member that expands past the size it declares (a reader trusting the declaration holds all of
    it: 6,000 bytes declared, 2 GiB produced), or members producing more than `limit` together. Stored,
    deflate and zstd members are counted (inspect_ai writes zstd); another method is refused. `fh` is the
    archive, seekable; `infos` its zipfile.ZipInfo list. The one counted decompression for zip inputs."""
    names: set[str] = set()
    for info in infos:  # one name twice: zipfile reads the last copy, other readers the first
        if info.filename in names:
            return (f"zip archive holds a member named {info.filename!r} twice (readers disagree on which copy "
                    "counts)")
        names.add(info.filename)
    total = 0
    for info in infos:
        fh.seek(info.header_offset)
        head = fh.read(30)
        if len(head) < 30 or head[:4] != b"PK\x03\x04":
            return f"zip archive member {info.filename!r} has no local header where the directory says"
        start = info.header_offset + 30 + int.from_bytes(head[26:28], "little") + int.from_bytes(head[28:30], "little")
        fh.seek(start)
        chunks = _member_chunks(info.compress_type, _Slice(fh, info.compress_size))
        if chunks is None:
            return (f"zip archive member {info.filename!r} uses compression method {info.compress_type}, which is "
                    "not read")
        produced = 0
        try:
            for out in chunks:
                produced += len(out)
                total += len(out)
                if produced > info.file_size:
                    return (f"zip archive member {info.filename!r} expands past the {info.file_size:,} bytes it "
                            f"declares")
                if total > limit:
                    return f"zip archive decompresses to more than {limit:,} bytes"
        except Exception as e:  # zlib.error, zstandard.ZstdError: a damaged member
            return f"zip archive member {info.filename!r} does not decompress: {str(e)[:100]}"
    return None


def decode_utf8(data: bytes) -> tuple[str | None, str | None]:
    """Decode bytes as UTF-8; return (text, None) or (None, error naming the byte offset)."""
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as e:
        return None, f"not valid UTF-8 at byte {e.start} of the line"


def reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


class DuplicateKey(ValueError):
    """A JSON object names one key twice: readers disagree on which value counts, so it is refused."""

    def __init__(self, key: str):
        self.key = key
        super().__init__("duplicate key in a JSON object")


def unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise DuplicateKey(k)
            seen.add(k)
    return obj


DECODER = json.JSONDecoder(object_pairs_hook=unique_pairs, parse_constant=reject_constant,
                           parse_float=_finite_float)
"""Strict JSON decoding: duplicate keys, NaN, Infinity and out-of-range numbers raise ValueError
(DuplicateKey for the first), nesting deeper than the recursion limit raises RecursionError."""


class ParseError(str):
    """An error message (a str, so it reads like one) that may name the field it concerns."""

    field: str | None

    def __new__(cls, message: str, field: str | None = None) -> ParseError:
        self = super().__new__(cls, message)
        self.field = field
        return self


class JsonError(ValueError):
    """Why a JSON document was refused (one line), and the key it concerns when known."""

    def __init__(self, message: str, field: str | None = None):
        self.field = field
        super().__init__(message)


def loads_strict(data: bytes | str) -> Any:
    """Decode one JSON document strictly (see DECODER); raise JsonError (one line, naming the key of a
    duplicate) on malformed JSON, a duplicate key, NaN or Infinity, or nesting too deep."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError as e:
        raise JsonError(f"not valid UTF-8 at byte {e.start}") from None
    try:
        return DECODER.decode(text)
    except DuplicateKey as e:
        raise JsonError(str(e), e.key) from None
    except json.JSONDecodeError as e:
        raise JsonError(f"malformed JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except RecursionError:
        raise JsonError("malformed JSON: nested too deeply") from None
    except ValueError as e:
        raise JsonError(f"malformed JSON: {e}") from None


def parse_object(data: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """Parse one line as a JSON object; return (object, None) or (None, error).

    NaN, Infinity and out-of-range numbers are errors: they are not JSON, and
    written back out they would become null or fail. A key given twice is an error
    (readers disagree on which value counts); its error is a ParseError naming the key.
    """
    text, err = decode_utf8(data.rstrip(b"\r\n"))
    if text is None:  # not UTF-8: err says where
        return None, err
    try:
        obj = DECODER.decode(text)
    except DuplicateKey as e:
        return None, ParseError(str(e), e.key)
    except json.JSONDecodeError as e:
        return None, f"malformed JSON: {e.msg} at column {e.colno}"
    except ValueError as e:
        return None, f"malformed JSON: {e}"
    except RecursionError:
        return None, "malformed JSON: nested too deeply"
    if not isinstance(obj, dict):
        return None, f"expected a JSON object, found {type(obj).__name__}"
    if _SURROGATE_ESCAPE.search(data):
        bad = _lone_surrogate(obj)
        if bad:
            return None, f"string has a lone surrogate \\u{ord(bad):04x}: not valid Unicode"
    return obj, None


# A \uD800-\uDFFF escape: the only way a lone surrogate gets into parsed JSON (UTF-8 bytes cannot hold one).
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _lone_surrogate(value: Any) -> str | None:
    """The first lone surrogate in any string of a parsed JSON value (pairs decode to one character)."""
    if isinstance(value, str):
        m = re.search("[\ud800-\udfff]", value)
        return m.group() if m else None
    if isinstance(value, dict):
        items = list(value.keys()) + list(value.values())
    elif isinstance(value, list):
        items = value
    else:
        return None
    for v in items:
        bad = _lone_surrogate(v)
        if bad:
            return bad
    return None


def open_regular(path: str | os.PathLike[str], *, follow_links: bool = False) -> tuple[IO[bytes], int]:
    """An unbuffered binary file and its size, opened only if `path` is a regular file at the moment of
    opening (not a symbolic link, FIFO or device: a FIFO swapped in would block the reader, /dev/zero
    would never end). Raise OSError otherwise. Read at most the returned size: a file that grows
    while it is read is read as it was when opened. `follow_links` accepts a link to a regular file
    (a user's own files, such as a Hugging Face cache snapshot; never a file inside a package)."""
    nofollow = 0 if follow_links else getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | nofollow | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb", buffering=0), st.st_size
    except BaseException:
        os.close(fd)
        raise


def head_and_tail(path: str | os.PathLike[str], max_bytes: int) -> tuple[bytes, int]:
    """A regular file's bytes when it holds at most `max_bytes`, else its first and last `max_bytes // 2` with a
    line between them saying how many bytes were left out there; returns (bytes, bytes left out)."""
    f, size = open_regular(path)
    with f:
        if size <= max_bytes:
            return _read_exactly(f, size), 0
        half = max_bytes // 2
        head = _read_exactly(f, half)
        f.seek(size - half)
        tail = _read_exactly(f, half)
    left_out = size - 2 * half
    return head + f"\n[audit: {left_out:,} bytes left out here]\n".encode() + tail, left_out


def _read_exactly(f: IO[bytes], n: int) -> bytes:
    """Up to `n` bytes of an unbuffered file (fewer where it ended sooner: it shrank since it was opened). One
    read asks for all of them, so a whole file is held once, not in pieces and again joined."""
    parts, left = [], n
    while left > 0 and (chunk := f.read(left)):
        parts.append(chunk)
        left -= len(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)


class HashingReader(io.RawIOBase):
    """A raw reader over an open binary file that hashes (sha256) and counts every byte it hands out,
    so a digest is of exactly the bytes parsed or copied. It stops at `limit` bytes: the size
    open_regular returned, so a file growing while it is read is not followed."""

    def __init__(self, f: IO[bytes], limit: int):
        self._f = f
        self._limit = limit
        self.sha = hashlib.sha256()
        self.bytes = 0
        self.marks: dict[int, str] | None = None
        """When a dict: the digest of the bytes so far after every read, by their count (so another reader of
        the same file can prove it read the same first bytes)."""

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        room = self._limit - self.bytes
        if room <= 0:
            return 0
        if len(b) > room:
            b = memoryview(b)[:room]
        n = self._f.readinto(b)  # type: ignore[attr-defined]  # open_regular's raw file has it; IO[bytes] omits it
        if n:
            self.sha.update(memoryview(b)[:n])
            self.bytes += n
            if self.marks is not None:
                self.marks[self.bytes] = self.sha.copy().hexdigest()
        return n or 0

    def drain(self) -> None:
        """Hash the rest of the file (to report the digest of what is on disk), reading nothing else."""
        buf = bytearray(CHUNK)
        while self.readinto(buf):
            pass


def read_regular(path: str | os.PathLike[str], *, follow_links: bool = False, limit: int | None = None) -> bytes:
    """All bytes of a regular file as it was when opened (see open_regular), or its first `limit`."""
    f, size = open_regular(path, follow_links=follow_links)
    if limit is not None:
        size = min(size, limit)
    with f:
        data = bytearray()
        while len(data) < size:
            chunk = f.read(min(CHUNK, size - len(data)))
            if not chunk:
                break
            data += chunk
    return bytes(data)


def read_document(path: str | os.PathLike[str], max_bytes: int = MAX_DOCUMENT_BYTES, *,
                  what: str = "a JSON document", follow_links: bool = True) -> tuple[bytes | None, str | None]:
    """A whole file's bytes, or (None, error) when it is larger than `max_bytes` (the limit "for `what`") or
    unreadable. Only a regular file is read (a link to one is followed unless `follow_links` is false): a FIFO
    or device is refused, not waited on. A file over the limit is refused from its size when opened, before a
    byte is read; one that grows while it is read is read as it was when opened."""
    try:
        f, size = open_regular(path, follow_links=follow_links)
        with f:
            if size > max_bytes:
                return None, f"larger than the {max_bytes:,}-byte limit for {what}"
            data = _read_exactly(f, size)
    except OSError as e:
        return None, f"unreadable: {e.strerror or e}"
    return data, None


def document_bytes(path: str | os.PathLike[str], max_bytes: int = MAX_DOCUMENT_BYTES, *,
                   what: str = "a JSON document", follow_links: bool = True, label: str | None = None) -> bytes:
    """`read_document`'s bytes, or AuditError (its one line, naming `label`, else the path) where it gives none."""
    data, err = read_document(path, max_bytes, what=what, follow_links=follow_links)
    if data is None:
        raise AuditError(err or "unreadable", path=label if label is not None else str(path))
    return data


MAX_NAME_BYTES = 255
"""Longest file name (in UTF-8 bytes) that Linux and macOS file systems hold."""

_INVISIBLE_NAME = frozenset(("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"))
"""Unicode categories that print as nothing or break a line (controls, zero-width and bidirectional format
characters, surrogates, private use, unassigned, line and paragraph separators)."""


def unsafe_name_reason(name: object) -> str | None:
    """Why `name` may not be one component of a path audit writes or reads (None: it may)."""
    if not isinstance(name, str):
        return f"is {type(name).__name__}, not text"
    if name in ("", ".", ".."):
        return "is empty, '.' or '..'"
    if "/" in name or "\\" in name:
        return "holds a path separator"
    if "\x00" in name:
        return "holds a NUL character"
    for ch in name:
        if unicodedata.category(ch) in _INVISIBLE_NAME:
            return f"holds an invisible or control character (U+{ord(ch):04X})"
    if name.startswith("."):
        return "starts with '.' (a hidden name, as audit's partial folders are)"
    if name != name.strip():
        return "starts or ends with white space"
    if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        return f"is longer than {MAX_NAME_BYTES} bytes"
    return None


def safe_part(name: object, *, what: str, path: str | os.PathLike[str] | None = None) -> str:
    """`name` (taken from an input: a task, an arm, a member) as one path component, or AuditError naming
    `what` and the input file. The one gate every input-derived path part passes (tests/test_path_gate.py)."""
    why = unsafe_name_reason(name)
    if why is not None:
        raise AuditError(f"{what} {short_repr(name)} {why}: it cannot name a file or folder",
                         path=None if path is None else str(path))
    assert isinstance(name, str)
    return name


def join_inside(base: str | os.PathLike[str], *parts: object, what: str,
                path: str | os.PathLike[str] | None = None) -> Path:
    """`base / part / ...` with every part through `safe_part`: the result is always inside `base`."""
    out = Path(base)
    for part in parts:
        out = out / safe_part(part, what=what, path=path)
    return out


def dumps(obj: Any) -> str:
    """Canonical one-line JSON: key order as given, no spaces, UTF-8 kept, no NaN."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps_pretty(obj: Any) -> str:
    """Stable indented JSON for documents (manifests, verdict files), ending in a newline."""
    return json.dumps(obj, ensure_ascii=False, indent=2, allow_nan=False) + "\n"


def sha256_file(path: str | os.PathLike[str]) -> tuple[str, int]:
    """sha256 hex digest and byte size of a file, read in chunks."""
    h = hashlib.sha256()
    n = 0
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
            n += len(chunk)
    return h.hexdigest(), n


def copy_regular(src: str | os.PathLike[str], dest: str | os.PathLike[str]) -> tuple[str, int]:
    """Copy a regular file (a link to one is followed; see open_regular) in one pass; return the sha256
    and size of exactly the bytes copied, so a private copy is known to be what its digest says."""
    h = hashlib.sha256()
    n = 0
    f, size = open_regular(src, follow_links=True)
    with f, open(dest, "xb") as out:
        while n < size and (chunk := f.read(min(CHUNK, size - n))):
            h.update(chunk)
            out.write(chunk)
            n += len(chunk)
    return h.hexdigest(), n


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class JsonlWriter:
    """Write canonical JSONL rows, counting rows and bytes; gzip (with a fixed mtime) for `*.gz` paths."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.rows = 0
        self.bytes = 0
        """Bytes of JSONL written (before compression)."""
        raw = open(self.path, "wb", buffering=CHUNK)
        if self.path.name.endswith(".gz"):
            # mtime=0 and no file name: the same rows give the same bytes.
            self._raw: IO[bytes] | None = raw
            self._gz: gzip.GzipFile | None = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0)
            # Rows reach zlib in 1 MiB blocks, not one compress call per row (the same bytes, sooner).
            self._fh: IO[bytes] = io.BufferedWriter(self._gz, CHUNK)
        else:
            self._raw = self._gz = None
            self._fh = raw

    def write(self, obj: Any) -> None:
        line = (dumps(obj) + "\n").encode("utf-8")
        self._fh.write(line)
        self.bytes += len(line)
        self.rows += 1

    def flush(self) -> None:
        """Flush to the OS, so a crash loses at most the row being written."""
        self._fh.flush()
        if self._gz is not None:
            self._gz.flush()  # (BufferedWriter.flush does not flush the object under it)
        if self._raw is not None:
            self._raw.flush()

    def close(self) -> None:
        self._fh.close()  # (closing the buffer closes the GzipFile under it, which leaves `raw` open)
        if self._raw is not None:
            self._raw.close()

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Flush a folder's entries (the renames just made in it) to disk; best effort where the platform
    cannot open or sync a folder."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def json_differences(stored: Any, fresh: Any, where: str = "") -> list[str]:
    """Every leaf where two JSON values differ, as `path: stored X, recomputed Y` (reprs cut at 60
    characters), for a summary checked against the figures recomputed from its rows."""
    if isinstance(stored, dict) and isinstance(fresh, dict):
        out: list[str] = []
        for k in sorted(set(stored) | set(fresh)):
            out += json_differences(stored.get(k, "<missing>"), fresh.get(k, "<missing>"),
                                    f"{where}.{k}" if where else k)
        return out
    if isinstance(stored, list) and isinstance(fresh, list) and len(stored) == len(fresh):
        out = []
        for i, (a, b) in enumerate(zip(stored, fresh, strict=True)):  # equal lengths: checked above
            out += json_differences(a, b, f"{where}[{i}]")
        return out
    return [] if stored == fresh else [f"{where}: stored {short_repr(stored)}, recomputed {short_repr(fresh)}"]


@contextmanager
def atomic_text(path: str | os.PathLike[str]) -> Iterator[IO[str]]:
    """A text file that appears at `path` only when the block completes (temp file, fsync, rename);
    on any error the temp file is removed and `path` is left as it was."""
    p = Path(path)
    tmp = p.parent / f".{p.name}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write a text file by temp file + fsync + rename: readers see the old or the new file, never half."""
    with atomic_text(path) as f:
        f.write(text)


@dataclass(frozen=True, slots=True)
class SourceRow:
    """One input row: where it came from, and the object or why it could not be read."""

    path: str
    row: int
    obj: dict[str, Any] | None
    error: str | None = None
    field: str | None = None


def jsonl_source(path: str | os.PathLike[str]) -> Iterator[SourceRow]:
    """Rows of a JSONL (or .jsonl.gz) input file, with line numbers; never raises on bad lines, but a
    .gz file is read only to its bounds (see iter_raw_lines), past which it raises AuditError."""
    p = str(path)
    if not Path(p).is_file():
        raise AuditError("no such file", path=p)
    limit = gzip_limit(os.path.getsize(p)) if p.endswith(".gz") else None
    with open_binary(p) as fh:
        try:
            for raw in iter_raw_lines(fh, max_total=limit):
                if raw.bound:
                    raise AuditError(raw.error or "", path=p, row=raw.lineno)
                if raw.data is None:  # unreadable: error says why
                    yield SourceRow(p, raw.lineno, None, raw.error)
                    continue
                obj, err = parse_object(raw.data)
                yield SourceRow(p, raw.lineno, obj, err, getattr(err, "field", None))
        except READ_ERRORS as e:
            raise AuditError(f"unreadable: {e}", path=p) from None
