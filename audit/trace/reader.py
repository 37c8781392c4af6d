"""Streaming reader of Chrome trace files as the PyTorch profiler (Kineto) writes them.

A trace is one JSON object whose `traceEvents` array holds every event; files reach
hundreds of MB, so the array is never held whole. The file is read in 1 MiB chunks
(gzip'd or not: detected from its first bytes), and each event object is decoded on its
own by the standard library's C scanner (`json.JSONDecoder.raw_decode`), which measured
several times faster than an event-callback parser (benchmarks/bench_trace.py prints
both). Memory holds one chunk and the event being decoded.

Floats are kept as their decimal text (`parse_float=str`): Kineto writes timestamps
such as `1695835542514261.123` µs, which a float64 cannot hold to the nanosecond;
`to_ns` converts the text exactly, and refuses (None) what is no time: non-finite, out of
range, or too long to be one.

Bounds: at most `max_json_chars` characters of JSON text are read (a small gzip file can
expand to gigabytes of whitespace), and an object naming a key twice is refused, as every
other reader of the project refuses it (the pairs hook costs about 5% of the decoding, less
than any check on the text measured).

Fast path (`TraceReader.batches`): the events array is cut at the last `},` of the buffer and the
part before it decoded in one call by msgspec into `Event` structs (only the fields the analysis
reads; `args` whole). A cut that decodes as an array is an event boundary (a cut inside a string or
a nested value cannot close). msgspec keeps the last of a repeated key silently, so each batch is
re-encoded and its colons counted: JSON text without `\\u003a` escapes holds exactly one colon per
key plus those inside strings, so a batch whose re-encoding holds fewer colons than its text lost
a key (a repeated one, an explicit null, a field Event lacks). Such a batch, one msgspec refuses
(NaN, a lone surrogate, nesting over the limit) and the last events are decoded by the exact path
above, one by one, and converted. Anything else unusual raises `FastPathUnsure`: the analysis then
reads the file again by the exact path alone, so the fast path never changes a result or an error.
`batches(stop_at=)` / `batches(start_at=)` let two readers share the array (audit.trace.collect).

Compiled path (`TraceReader.columns`, where audit/trace/_scan.c is built: audit.trace.scan): the scanner reads the
buffer from the cursor to its end in one call, checking JSON and unique keys as it goes, and returns `Columns`; an
event it stops before (the one the buffer's end cuts, after one refill; or anything it is not sure of) is read
alone by the exact path and converted; text that is not all ASCII is decoded as on the fast path above. It
replaces both the msgspec decoding and the colon count, so the duplicate-key proof costs no second pass.
A gzip'd trace is inflated by ISA-L (`isal.igzip`, about 3.5x zlib's speed) on the fast path where it is installed;
the exact path keeps the standard library's `gzip`, so every refusal of a damaged stream is still worded by it
(any error of the fast path's inflate sends the file to the exact path).
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import sys
import zlib
from collections.abc import Iterator
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from pathlib import Path
from types import FrameType
from typing import IO, Any, cast

import msgspec
import numpy as np

from audit.errors import AuditError
from audit.fileio import DuplicateKey, HashingReader, open_regular, reject_constant, unique_pairs
from audit.trace.scan import BADSEP as SCAN_BADSEP
from audit.trace.scan import COMPILED, Columns, Scanner
from audit.trace.scan import END as SCAN_END
from audit.trace.scan import EVENT as SCAN_EVENT
from audit.trace.scan import MORE as SCAN_MORE
from audit.trace.scan import SEP as SCAN_SEP
from audit.trace.scan import TEXT as SCAN_TEXT
from audit.trace.scan import columns as scan_columns

_isal_gzip: Any
_IsalError: type[Exception]
try:
    from isal import igzip as _isal_gzip
    from isal import isal_zlib as _isal_zlib

    _IsalError = cast("type[Exception]", _isal_zlib.error)  # its stubs type the class as an instance
except ImportError:  # pragma: no cover - isal is a dependency; without it the fast path inflates with zlib
    _isal_gzip, _IsalError = None, zlib.error

CHUNK_CHARS = 1 << 20
"""Characters read per refill of the buffer."""

MAX_VALUE_CHARS = 64 << 20
"""Largest single event (or other top-level value) read; a longer one is an error, not a memory blow-up."""

MAX_JSON_CHARS = 4_000_000_000
"""Most characters of JSON text read from one trace (after gzip): bounds the time a small file can cost."""

MAX_NS = 1 << 62
"""Times, durations and ids at or above this (about 146 years in ns) are refused as no real trace's."""

_MAX_NUMBER_TEXT = 40

_WS = re.compile(r"[ \t\n\r]*")
_SEP = re.compile(r"[ \t\n\r]*,[ \t\n\r]*")


_DECODER = json.JSONDecoder(parse_float=str, parse_constant=reject_constant, object_pairs_hook=unique_pairs)
"""A repeated key raises DuplicateKey, which names it."""


class TraceError(AuditError):
    """The trace file cannot be read as a PyTorch profiler trace (exit 2, one line)."""


class FastPathUnsure(Exception):
    """The fast path met something it does not read exactly as the exact path does: read again by that."""


class Event(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True, gc=False):
    """The fields of a trace event that the analysis reads (every key real traces hold); None: absent."""

    ph: Any = None
    cat: Any = None
    name: Any = None
    ts: Any = None
    dur: Any = None
    pid: Any = None
    tid: Any = None
    id: Any = None
    bp: Any = None
    s: Any = None
    args: Any = None


class _ExactEvent(Event, forbid_unknown_fields=False):
    """An event the exact path decoded, as the pass reads it (its other keys are no loss: the pass reads none)."""


_FAST = msgspec.json.Decoder(list[Event], float_hook=str)
_ENCODE_INTO = msgspec.json.Encoder().encode_into

FAST_GZIP: Any = _isal_gzip or gzip
"""The gzip module whose `GzipFile` inflates on the fast path (ISA-L's where installed; the exact path always uses
the standard library's)."""
_CUT_EVENT_CHARS = 64 << 10
"""The compiled pass stopped this close to the buffer's end: read more text and scan again before the exact reader
reads the event (an odd event further from the end is read at once: a refill per odd event would grow the buffer)."""
_FAST_DEPTH = 100
"""Nesting the fast decoder may reach (below the exact path's limit, so it never accepts what that refuses)."""


def to_ns(value: Any) -> int | None:
    """A profiler time in µs (JSON integer or decimal text) as integer nanoseconds; None if not a number, not
    finite, or not within ±MAX_NS ns (booleans, strings such as "Infinity", 1e999999999, 10**300)."""
    t = type(value)
    if t is int:
        ns = value * 1000 if -MAX_NS < value < MAX_NS else MAX_NS
    elif t is not str or len(value) > _MAX_NUMBER_TEXT:
        return None
    else:
        dot = value.find(".")
        if 0 < dot and value[0] != "-" and len(value) - dot <= 4 and value[:dot].isdigit() \
                and value[dot + 1:].isdigit() and value.isascii():
            ns = int(value[:dot]) * 1000 + int(value[dot + 1:].ljust(3, "0"))
        else:
            try:  # exponents, signs, sub-nanosecond digits: exact decimal arithmetic, after a range check
                d = Decimal(value)
                if not d.is_finite() or d.adjusted() > 18:
                    return None
                ns = int((d * 1000).to_integral_value(ROUND_HALF_EVEN))
            except (InvalidOperation, ValueError):
                return None
    return ns if -MAX_NS < ns < MAX_NS else None


def to_id(value: Any) -> int | None:
    """An id or index field (correlation, stream, device, flow id): an integer in [0, MAX_NS), else None."""
    return value if type(value) is int and 0 <= value < MAX_NS else None


class TraceReader:
    """Iterate the events of one trace file; `metadata` collects the other top-level keys.

    >>> r = TraceReader("trace.json.gz")
    >>> for index, event in r.events(): ...
    >>> r.metadata["distributedInfo"]

    Every problem raises TraceError naming the file and, where known, the line and the
    event's index: not JSON, a damaged or truncated gzip stream, no `traceEvents`,
    an event that is not an object, trailing data after the document.
    """

    def __init__(self, path: str | Path, max_json_chars: int = MAX_JSON_CHARS):
        self.path = Path(path)
        self.max_json_chars = max_json_chars
        self.label = str(path)
        self.metadata: dict[str, Any] = {}
        self.events_read = 0
        self.gzip = False
        self.text_chars = 0
        """Characters of JSON text read (the uncompressed size, for ASCII traces)."""
        self.sha256 = ""
        """sha256 of the file's bytes, set once every event was read."""
        self.bytes = 0
        """Size of the file, set with `sha256`."""
        self.prefix_marks: dict[int, str] | None = None
        """Set to a dict before reading: filled with the digest of the file's first bytes after every read, by
        their count (the child of a split read proves with them that both read the same file)."""
        self.prefix: tuple[int, str] = (0, "")
        """`batches(stop_at=)` that stopped early: (bytes read, their sha256), for that proof."""
        self.opened: tuple[int, ...] = ()
        """The file's identity and last change when opened (`file_state`): the read is refused if it differs
        once every byte was read (rewritten in place, or replaced, while read)."""
        self.split_at: int | None = None
        """`batches(stop_at=)`: the offset of the first event left unread (None: every event was read);
        `batches(start_at=)`: the offset of the first event read."""

    # The buffer: `_buf[_pos:]` is unread text; `_lines` counts newlines before `_buf`.
    def _open(self, fast: bool = False) -> None:
        try:
            # A regular file (a link to one is followed): a FIFO or device is refused, never waited on.
            raw, _ = open_regular(self.path, follow_links=True)
            self.opened = file_state(os.fstat(raw.fileno()))
            self._file = io.BufferedReader(cast(io.RawIOBase, raw), CHUNK_CHARS)
        except OSError as e:
            raise TraceError(f"unreadable: {e.strerror or e}", path=self.label) from None
        self._hashing = HashingReader(self._file, sys.maxsize)  # the whole file, however long
        self._hashing.marks = self.prefix_marks
        buffered = io.BufferedReader(self._hashing, CHUNK_CHARS)
        self.gzip = buffered.peek(2)[:2] == b"\x1f\x8b"
        gz = FAST_GZIP if fast else gzip
        data = cast(IO[bytes], gz.GzipFile(fileobj=buffered, mode="rb") if self.gzip else buffered)
        self._text = io.TextIOWrapper(data, encoding="utf-8", errors="strict")
        self._buf = ""
        self._pos = 0
        self._eof = False
        self._lines = 0
        self._col0 = 0  # characters of the current line that were dropped from the buffer
        self._dropped = 0  # characters dropped from the buffer's front
        self._fast = False
        self._stopped = False  # batches(stop_at=) stopped before the array's end
        self._exact_batches = 0

    def _fill(self) -> None:
        """Drop the consumed text and append the next chunk; sets `_eof` at the end of the file."""
        buf, pos = self._buf, self._pos
        newlines = buf.count("\n", 0, pos) if not self._fast else 0  # the fast path's errors are never shown
        if newlines:
            self._lines += newlines
            self._col0 = pos - buf.rfind("\n", 0, pos) - 1
        else:
            self._col0 += pos
        try:
            chunk = self._text.read(CHUNK_CHARS)
        except UnicodeDecodeError as e:
            raise TraceError(f"not valid UTF-8 (byte {e.start} of a chunk near line {self._lines + 1})",
                             path=self.label) from None
        except (EOFError, zlib.error, gzip.BadGzipFile, _IsalError) as e:
            raise TraceError(f"damaged or truncated gzip stream: {e}", path=self.label) from None
        except OSError as e:
            raise TraceError(f"unreadable: {e.strerror or e}", path=self.label) from None
        if not chunk:
            self._eof = True
        self.text_chars += len(chunk)
        if self.text_chars > self.max_json_chars:
            raise TraceError(f"more than {self.max_json_chars:,} characters of JSON text"
                             f"{' after gzip decompression' if self.gzip else ''}: over the limit "
                             f"(--max-json-mb raises it)", path=self.label)
        self._buf = buf[pos:] + chunk
        self._dropped += pos
        self._pos = 0

    def check_unchanged(self) -> None:
        """Refuse (TraceError CHANGED) a file that is not the one opened, as it was then."""
        try:
            now = file_state(os.stat(self.path))
        except OSError:
            now = ()
        if now != self.opened:
            raise TraceError(CHANGED, path=self.label)

    def _where(self, pos: int) -> str:
        newlines = self._buf.count("\n", 0, pos)
        col = pos - self._buf.rfind("\n", 0, pos) if newlines else self._col0 + pos + 1
        return f"line {self._lines + newlines + 1} column {col}"

    def _fail(self, message: str, pos: int | None = None) -> TraceError:
        where = f" at {self._where(self._pos if pos is None else pos)}" if self._buf or pos else ""
        return TraceError(f"{message}{where}", path=self.label)

    def _peek(self) -> str:
        """The next non-blank character ('' at the end of the file), without consuming it."""
        while True:
            self._pos = _WS.match(self._buf, self._pos).end()  # type: ignore[union-attr]  # matches ""
            if self._pos < len(self._buf):
                return self._buf[self._pos]
            if self._eof:
                return ""
            self._fill()

    def _expect(self, ch: str, what: str) -> None:
        got = self._peek()
        if got != ch:
            shown = repr(got) if got else "the end of the file"
            if not got and self.events_read:
                raise self._fail(f"ends inside traceEvents after {self.events_read:,} events (truncated file?)")
            raise self._fail(f"not a JSON trace: expected {what}, found {shown}")
        self._pos += 1

    def _value(self, what: str) -> Any:
        """Decode the JSON value at the cursor (a repeated key refused), reading more of the file as needed."""
        self._peek()
        while True:
            start = self._pos
            try:
                obj, end = _DECODER.raw_decode(self._buf, start)
            except DuplicateKey as e:
                raise self._fail(f"{what} names the key {e.key!r} twice", start) from None
            except json.JSONDecodeError as e:
                # Text cut at the buffer's end fails at (or, for a string, from) that end; read on then.
                cut = e.pos >= len(self._buf) - 16 or e.msg.startswith("Unterminated string")
                if cut and not self._eof and len(self._buf) - start <= MAX_VALUE_CHARS:
                    self._fill()
                    continue
                if cut and not self._eof:
                    raise self._fail(f"{what} is longer than {MAX_VALUE_CHARS:,} characters", start) from None
                if self._eof and cut:
                    raise self._fail(f"ends inside {what} (truncated file?)", start) from None
                raise self._fail(f"malformed JSON in {what} ({e.msg})", e.pos) from None
            except ValueError as e:  # NaN / Infinity
                raise self._fail(f"malformed JSON in {what} ({e})", start) from None
            except RecursionError:
                raise self._fail(f"malformed JSON in {what} (nested too deeply)", start) from None
            if end == len(self._buf) and not self._eof:
                self._fill()  # a number at the buffer's end may go on in the next chunk
                continue
            self._pos = end
            return obj

    def events(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """(index in traceEvents, event object) for every event, in file order."""
        return self._read(fast=False)

    def columns(self) -> Iterator[Columns | list[Event]]:
        """The events in file order, read by the compiled pass (`audit.trace.scan`): `Columns` of what it read,
        and, for each event it does not read, that event alone as a list of one `Event`, read by the exact
        path. Raises FastPathUnsure (or TraceError) where the exact path must read the file instead."""
        if not COMPILED:
            raise FastPathUnsure("the compiled pass is not built")
        self._scanner = Scanner()
        return self._read(fast=True, compiled=True)

    def batches(self, start_at: int | None = None, stop_at: int | None = None) -> Iterator[list[Event]]:
        """The events in file order, as lists of `Event` (the fast path); raises FastPathUnsure (or
        TraceError) where the exact path must read the file instead.

        Two readers can share the work (`collect_fast`): `stop_at` ends before the first batch that starts at
        or after that character offset (nothing after it is read or hashed), unless a batch before it was
        read by the exact path (whose cuts differ): then every event is read; `start_at` cuts the batches
        before it the same way but skips them undecoded. `split_at` says where each switched."""
        return self._read(fast=True, start_at=start_at, stop_at=stop_at)

    def _read(self, fast: bool, start_at: int | None = None, stop_at: int | None = None,
              compiled: bool = False) -> Iterator[Any]:
        self._open(fast)
        self._fast = fast
        try:
            yield from self._document(fast=fast, start_at=start_at, stop_at=stop_at, compiled=compiled)
            if not self._stopped:
                # Hash what the decompressor left unread too: the digest pins the whole file.
                while self._hashing.read(CHUNK_CHARS):
                    pass
                self.sha256, self.bytes = self._hashing.sha.hexdigest(), self._hashing.bytes
            else:
                self.prefix = (self._hashing.bytes, self._hashing.sha.hexdigest())
            if file_state(os.fstat(self._file.fileno())) != self.opened:
                raise TraceError(CHANGED, path=self.label)
        finally:
            self._text.close()
            self._file.close()

    def _document(self, fast: bool = False, start_at: int | None = None,
                  stop_at: int | None = None, compiled: bool = False) -> Iterator[Any]:
        first = self._peek()
        if first == "":
            raise TraceError("empty file: not a JSON trace", path=self.label)
        if first == "[":
            raise self._fail("a bare JSON array, not a profiler trace object with traceEvents")
        self._expect("{", "a JSON object")
        seen_events = False
        if self._peek() == "}":
            self._pos += 1
        else:
            while True:
                if self._peek() != '"':
                    raise self._fail("malformed JSON: expected a key string in the top-level object")
                key = self._value("a top-level key")
                self._expect(":", "':' after a key")
                if key == "traceEvents":
                    if seen_events:
                        raise self._fail("traceEvents appears twice")
                    seen_events = True
                    yield from (self._column_events() if compiled else
                                self._fast_events(start_at, stop_at) if fast else self._events())
                    if self._stopped:
                        return
                else:
                    if key in self.metadata:
                        raise self._fail(f"the top-level key {key!r} appears twice")
                    self.metadata[key] = self._value(f"the value of {key!r}")
                sep = self._peek()
                if sep == ",":
                    self._pos += 1
                    continue
                if sep == "}":
                    self._pos += 1
                    break
                if sep == "":
                    raise self._fail("ends before the top-level object closes (truncated file?)")
                raise self._fail(f"malformed JSON: expected ',' or '}}' after {key!r}, found {sep!r}")
        if self._peek() != "":
            raise self._fail("trailing data after the JSON document")
        if not seen_events:
            keys = ", ".join(sorted(self.metadata)[:8]) or "none"
            raise TraceError(f"no traceEvents: not a PyTorch profiler trace (top-level keys: {keys})",
                             path=self.label)

    def _events(self) -> Iterator[tuple[int, dict[str, Any]]]:
        self._expect("[", "'[' (traceEvents must be an array)")
        if self._peek() == "]":
            self._pos += 1
            return
        index = 0
        decode = _DECODER.raw_decode
        sep_match = _SEP.match
        buf, pos = self._buf, self._pos
        while True:
            # Fast path: the whole event and a comma after it are in the buffer.
            try:
                event, end = decode(buf, pos)
            except (json.JSONDecodeError, ValueError, RecursionError):  # cut by the buffer's end, or bad
                self._pos = pos
                event = self._value(f"traceEvents[{index}]")
                buf, end = self._buf, self._pos
            if type(event) is not dict:
                raise self._fail(f"traceEvents[{index}] is a {type(event).__name__}, not an event object", end)
            index += 1
            self.events_read = index
            yield index - 1, event
            m = sep_match(buf, end)
            if m is not None and m.end() < len(buf):
                pos = m.end()
                continue
            self._pos = end
            sep = self._peek()
            if sep == ",":
                self._pos += 1
                self._peek()
                buf, pos = self._buf, self._pos
                continue
            if sep == "]":
                self._pos += 1
                return
            if sep == "":
                raise self._fail(f"ends inside traceEvents after {index:,} events (truncated file?)")
            raise self._fail(f"malformed JSON: expected ',' or ']' after traceEvents[{index - 1}], found {sep!r}")

    def _exact_batch(self, until: int) -> list[Event]:
        """Events decoded by the exact path, converted, up to absolute offset `until` (or the array's end)."""
        self._exact_batches += 1
        out: list[Event] = []
        convert = msgspec.convert
        while True:
            event = self._value(f"traceEvents[{self.events_read}]")
            if type(event) is not dict:
                raise FastPathUnsure("not an event object")
            out.append(convert(event, _ExactEvent))  # every field Any, others dropped: it cannot fail
            self.events_read += 1
            sep = self._peek()
            if sep == ",":
                self._pos += 1
                self._peek()
                if self._dropped + self._pos > until:
                    return out
                continue
            if sep == "]":
                self._pos += 1
                self._array_done = True
                return out
            raise FastPathUnsure("malformed separator")

    def _column_events(self) -> Iterator[Columns | list[Event]]:
        """The events array by the compiled pass: the scanner reads on until the text it was given ends; each
        event it does not read (and the one cut by the buffer's end) is read by the exact path, alone; text that
        is not all ASCII is decoded by msgspec, as `_fast_events` decodes it."""
        self._expect("[", "'[' (traceEvents must be an array)")
        if self._peek() == "]":
            self._pos += 1
            return
        self._array_done = False
        scan, scanner = self._scanner.scan, self._scanner
        scratch = bytearray()
        refilled_at = -1
        while not self._array_done:
            rows, b64, b32, b8, self._pos, status = scan(self._buf, self._pos)
            if rows:
                self.events_read += rows
                yield scan_columns(scanner, rows, b64, b32, b8)
            if status == SCAN_END:
                self._pos += 1
                return
            if status == SCAN_EVENT:
                at = self._dropped + self._pos
                if not self._eof and refilled_at != at and len(self._buf) - self._pos < _CUT_EVENT_CHARS:
                    refilled_at = at  # most likely the event the buffer's end cuts: read more, and scan it again
                    self._fill()
                    continue
                yield self._exact_batch(at)  # this event alone, and its separator
            elif status == SCAN_SEP:
                self._separator()
            elif status == SCAN_MORE:
                if self._eof:
                    raise FastPathUnsure("the text ends inside traceEvents")
                self._fill()
            elif status == SCAN_TEXT:
                yield self._text_batch(scratch)
            elif status == SCAN_BADSEP:
                raise FastPathUnsure("malformed separator")

    def _separator(self) -> None:
        """The separator after an event, read more text as needed: ',' (the cursor past it) or ']'."""
        sep = self._peek()
        if sep not in (",", "]"):
            raise FastPathUnsure("malformed separator")
        self._pos += 1
        self._array_done = sep == "]"

    def _text_batch(self, scratch: bytearray) -> list[Event]:
        """The events up to the buffer's last `},` decoded by msgspec (text the compiled pass does not read),
        else by the exact path."""
        buf, pos = self._buf, self._pos
        cut = buf.rfind("},", pos)
        if cut < 0:
            if not self._eof and len(buf) - pos <= MAX_VALUE_CHARS:
                self._fill()
                return []
            return self._exact_batch(self._dropped + len(buf))
        return self._decoded_batch(cut, scratch)

    def _decoded_batch(self, cut: int, scratch: bytearray) -> list[Event]:
        """The events from the cursor to the buffer's `},` at `cut`, decoded by msgspec, else by the exact path;
        the cursor past them."""
        batch = self._decoded(self._buf, self._pos, cut + 1, scratch)  # searched and counted in place, copied once
        if batch is None:
            return self._exact_batch(self._dropped + cut)
        self.events_read += len(batch)
        self._pos = cut + 2
        self._peek()
        return batch

    def _decoded(self, buf: str, pos: int, end: int, scratch: bytearray) -> list[Event] | None:
        """`buf[pos:end]` (events and the separators between them) decoded by msgspec, or None where that
        decoding may differ from the exact path's: it failed, or a key was lost (the colon count)."""
        if buf.find("\\u003", pos, end) >= 0:
            return None
        limit = sys.getrecursionlimit()
        depth = _frame_depth()
        try:
            sys.setrecursionlimit(depth + _FAST_DEPTH)
            batch: list[Event] = _FAST.decode(f"[{buf[pos:end]}]")
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            return None
        finally:
            sys.setrecursionlimit(limit)
        # one colon per key and per colon inside a string, in both: fewer after decoding lost a key
        _ENCODE_INTO(batch, scratch)
        return batch if _colons(scratch) == buf.count(":", pos, end) else None

    def _fast_events(self, start_at: int | None = None, stop_at: int | None = None) -> Iterator[list[Event]]:
        self._expect("[", "'[' (traceEvents must be an array)")
        if self._peek() == "]":
            self._pos += 1
            return
        self._array_done = False
        scratch = bytearray()  # the re-encoded batch, its buffer reused
        while not self._array_done:
            buf, pos = self._buf, self._pos
            if stop_at is not None and self._dropped + pos >= stop_at:
                if self._exact_batches:
                    stop_at = None  # the other reader's cuts may differ from these: read on alone
                else:
                    self.split_at, self._stopped = self._dropped + pos, True
                    return
            cut = buf.rfind("},", pos)
            if cut < 0:
                if not self._eof and len(buf) - pos <= MAX_VALUE_CHARS:
                    self._fill()
                    self._peek()
                    continue
                if start_at is not None:
                    raise FastPathUnsure("the array ends before the second reader's start")
                yield self._exact_batch(self._dropped + len(self._buf))  # the last events, to the array's end
                continue
            if start_at is not None:
                if self._dropped + pos < start_at:  # the other reader's part: cut as it cuts, not decoded
                    self._pos = cut + 2
                    self._peek()
                    continue
                self.split_at, start_at = self._dropped + pos, None
            yield self._decoded_batch(cut, scratch)


CHANGED = "the file changed since it was hashed (rewritten or replaced while it was read): run again"
"""Why a read is refused whose file changed between its open and its last byte: its digest would pin bytes that
no file held whole."""


def file_state(st: os.stat_result) -> tuple[int, ...]:
    """What a rewrite in place or a replacement changes: device, inode, size, and the times of the last write
    and status change (the change time cannot be set back; a rewrite within one tick of the file system's clock
    after the previous write is not seen, nor is one undone before the read ends)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _colons(data: bytearray) -> int:
    """The colons in `data` (numpy's byte compare: five times `bytearray.count`'s speed)."""
    return int(np.count_nonzero(np.frombuffer(data, dtype=np.uint8) == 58))


def _frame_depth() -> int:
    f: FrameType | None = sys._getframe(1)
    n = 0
    while f is not None:
        f, n = f.f_back, n + 1
    return n
