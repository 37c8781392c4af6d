"""The compiled pass's batches: what `audit.trace._scan` (audit/trace/_scan.c) extracts from the events array.

One call of `Scanner.scan` reads the events of the text it is given, in file order, until the text ends, the
array ends, or it meets an event it does not read (anything unusual: it is read by the exact reader, one event,
and the scan goes on after it). For each event it gives the fields the analysis reads as columns, and it proves
on the way that no object names a key twice and that the text is JSON; it builds no Python object per event.
Strings are numbered by the scanner in the order first met (`Scanner.string(id)`), and so are (pid, tid)
pairs (`Scanner.thread_key(id)`): the ids are the scanner's own, one scanner per file read.

Where the extension is not built (`COMPILED` is False) the reader decodes with msgspec instead: the same
results, measured slower (benchmarks/bench_trace.py says which ran).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

Scanner: Any
try:
    from audit.trace import _scan

    Scanner = _scan.Scanner
except ImportError:  # pragma: no cover - built by `pip install -e .`; tests under CI require it
    Scanner = None

COMPILED = Scanner is not None
"""Whether the compiled pass is built here."""

# Why a scan stopped (its `next` says where).
END, EVENT, SEP, MORE, LIMIT, BADSEP, TEXT = range(7)

# The int64 columns (`Columns.i64` rows).
TS, DUR, PID, TID, ID, CORR, STREAM, DEVICE = range(8)
# The int32 columns: string ids (-1: absent or null) and the thread key.
CAT, NAME, COLLECTIVE, THREAD_KEY = range(4)
# The int8 columns: the ph code, and a tag for each int64 column (and for args).
PH, TS_TAG, DUR_TAG, PID_TAG, TID_TAG, ID_TAG, CORR_TAG, STREAM_TAG, DEVICE_TAG, ARGS_TAG = range(10)

# Tags. T_INT on ts and dur: a time in ns (T_NONE: the value is no time); T_INT on an id: an integer (one of
# MAX_NS or more is given as MAX_NS, or -1 if negative); T_STR on pid or tid: a string's id; on args:
# T_INT an object, T_NONE absent or null.
T_NONE, T_INT, T_STR, T_OTHER, T_NULL = range(5)
# ph codes: absent or null, "X", "f", "i", "I", any other string.
PH_NONE, PH_X, PH_F, PH_LI, PH_UI, PH_OTHER = range(6)


@dataclass
class Columns:
    """The events one scan read, as columns (each row one event, in file order)."""

    scanner: Any
    """The scanner whose string and thread-key ids the columns hold."""
    rows: int
    i64: np.ndarray
    """int64, shape (8, rows): ts, dur (ns), pid, tid, id, correlation, stream, device."""
    i32: np.ndarray
    """int32, shape (4, rows): cat, name, collective name (string ids), thread key."""
    i8: np.ndarray
    """int8, shape (10, rows): the ph code and the tags."""


def columns(scanner: Any, rows: int, b64: bytes, b32: bytes, b8: bytes) -> Columns:
    """The columns of one scan, as numpy views of what it returned."""
    return Columns(scanner, rows, np.frombuffer(b64, dtype=np.int64).reshape(8, rows),
                   np.frombuffer(b32, dtype=np.int32).reshape(4, rows),
                   np.frombuffer(b8, dtype=np.int8).reshape(10, rows))
