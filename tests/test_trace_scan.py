"""The compiled scanner (audit/trace/_scan.c) against a pure-Python reference of what each column must hold.

The reference reads the same text with the standard library's json (the duplicate-key hook, NaN refused,
floats kept as their text: what the exact reader `_DECODER` reads) and derives each column as the pass
(`_FastPass.events`, `gpu_event`, `named`; `to_ns`, `to_id`) reads the fields. The scanner may stop at any
event (status EVENT: the exact reader then reads it), but where it reads one its columns must equal the
reference, and it must stop where the reference says the exact reader refuses the text or the pass would
read a value the scanner does not convert (a time of more than 3 fraction digits or an exponent, a lone
surrogate in a string it extracts, a float or a boolean for a thread).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audit.fileio import reject_constant, unique_pairs
from audit.trace import scan as S
from audit.trace.reader import MAX_NS, to_ns

pytestmark = pytest.mark.skipif(not S.COMPILED, reason="the compiled pass is not built")


class JNum(str):
    """A JSON number with a fraction or an exponent, as its text (the exact reader keeps it as a str)."""


_REF = json.JSONDecoder(parse_float=JNum, parse_constant=reject_constant, object_pairs_hook=unique_pairs)
_PH = {"X": S.PH_X, "f": S.PH_F, "i": S.PH_LI, "I": S.PH_UI}
_ABSENT = object()


class MustStop(Exception):
    """The scanner must not read this event."""


@dataclass(frozen=True)
class Row:
    """One event as the pass reads it (the comparable content of one row of the columns)."""

    ph: int
    cat: str | None
    name: str | None
    ts: int | None
    dur: int | None
    pid: Any
    tid: Any
    id: Any
    correlation: Any
    stream: Any
    device: Any
    args: bool
    collective: str | None


def _lone_surrogate(s: str) -> bool:
    return any(0xD800 <= ord(ch) <= 0xDFFF for ch in s)


def _string(v: Any, others: bool = False) -> str | None:
    """ph, cat, name, a collective name: a str, None for absent or null; any other type stops the scan
    (unless `others`: then None, as the pass reads a collective name that is no string)."""
    if v is _ABSENT or v is None:
        return None
    if type(v) is str:
        if _lone_surrogate(v):
            raise MustStop("a lone surrogate in an extracted string")
        return v
    if others:
        return None
    raise MustStop(f"a {type(v).__name__} where a string is read")


def _time(v: Any) -> int | None:
    """ts, dur: `to_ns` of the value; a number form the scanner does not convert stops it."""
    if type(v) is JNum or (type(v) is str and len(v) <= 40):
        text = str(v)
        if "e" in text.lower() or re.fullmatch(r"-?\d+\.\d{4,}", text):
            raise MustStop("a time of more than 3 fraction digits or an exponent")
        return to_ns(text)
    if type(v) is str:
        return to_ns(v)  # over 40 characters: None
    return to_ns(v) if type(v) is int else None


def _thread(v: Any) -> Any:
    """pid, tid: an int (of at most 18 digits), a str, or None (absent or null); anything else stops."""
    if v is _ABSENT or v is None:
        return None
    if type(v) is int:
        if len(str(abs(v))) > 18:
            raise MustStop("a thread integer of more than 18 digits")
        return v
    if type(v) is str:
        return _string(v)
    raise MustStop(f"a {type(v).__name__} for a thread")


def _canon_int(v: int) -> Any:
    """What the pass tells apart in an integer field: an id in [0, MAX_NS), one too large, a negative one."""
    return v if 0 <= v < MAX_NS else ("big" if v >= MAX_NS else "negative")


def _id(v: Any) -> Any:
    if v is _ABSENT:
        return "absent"
    if v is None:
        return "null"
    return _canon_int(v) if type(v) is int else "other"


def reference(text: str) -> Row:
    """The row the scanner must give for the event `text`, or MustStop."""
    if not text.isascii():
        raise MustStop("not ASCII")
    try:
        e = _REF.decode(text)
    except (ValueError, RecursionError) as err:  # invalid JSON, a repeated key, NaN, an integer over the limit
        raise MustStop(f"the exact reader refuses it: {err}") from None
    if type(e) is not dict:
        raise MustStop("not an object")
    ph = e.get("ph", _ABSENT)
    ph_s = _string(ph)
    args = e.get("args", _ABSENT)
    if args is not _ABSENT and args is not None and type(args) is not dict:
        raise MustStop("args that are no object")
    a = args if type(args) is dict else {}
    return Row(
        ph=S.PH_NONE if ph_s is None else _PH.get(ph_s, S.PH_OTHER),
        cat=_string(e.get("cat", _ABSENT)), name=_string(e.get("name", _ABSENT)),
        ts=_time(e.get("ts", _ABSENT)), dur=_time(e.get("dur", _ABSENT)),
        pid=_thread(e.get("pid", _ABSENT)), tid=_thread(e.get("tid", _ABSENT)),
        id=_id(e.get("id", _ABSENT)), correlation=_id(a.get("correlation", _ABSENT)),
        stream=_id(a.get("stream", _ABSENT)), device=_id(a.get("device", _ABSENT)),
        args=type(args) is dict, collective=_string(a.get("Collective name", _ABSENT), others=True))


def _tagged_id(tag: int, v: int) -> Any:
    return {S.T_NONE: "absent", S.T_NULL: "null", S.T_OTHER: "other"}.get(tag, _canon_int(v) if tag == S.T_INT else tag)


def row_of(c: S.Columns, r: int) -> Row:
    """Row r of the columns, read back as `Row` (and its thread key checked against its pid and tid)."""
    sc, i64, i32, i8 = c.scanner, c.i64, c.i32, c.i8

    def sid(k: int) -> str | None:
        v = int(i32[k][r])
        return None if v < 0 else sc.string(v)

    def time(k: int, tag: int) -> int | None:
        assert i8[tag][r] in (S.T_INT, S.T_NONE)
        return int(i64[k][r]) if i8[tag][r] == S.T_INT else None

    def thread(k: int, tag: int) -> Any:
        t = int(i8[tag][r])
        assert t in (S.T_INT, S.T_STR, S.T_NONE)
        return int(i64[k][r]) if t == S.T_INT else sc.string(int(i64[k][r])) if t == S.T_STR else None

    pid, tid = thread(S.PID, S.PID_TAG), thread(S.TID, S.TID_TAG)
    key = sc.thread_key(int(i32[S.THREAD_KEY][r]))
    assert key == (pid, tid) and [type(x) for x in key] == [type(pid), type(tid)]
    assert i8[S.ARGS_TAG][r] in (S.T_INT, S.T_NONE)
    return Row(ph=int(i8[S.PH][r]), cat=sid(S.CAT), name=sid(S.NAME), ts=time(S.TS, S.TS_TAG),
               dur=time(S.DUR, S.DUR_TAG), pid=pid, tid=tid, id=_tagged_id(int(i8[S.ID_TAG][r]), int(i64[S.ID][r])),
               correlation=_tagged_id(int(i8[S.CORR_TAG][r]), int(i64[S.CORR][r])),
               stream=_tagged_id(int(i8[S.STREAM_TAG][r]), int(i64[S.STREAM][r])),
               device=_tagged_id(int(i8[S.DEVICE_TAG][r]), int(i64[S.DEVICE][r])),
               args=i8[S.ARGS_TAG][r] == S.T_INT, collective=sid(S.COLLECTIVE))


def scan(text: str, start: int = 0, scanner: Any = None) -> tuple[S.Columns, int, int]:
    sc = scanner or S.Scanner()
    rows, b64, b32, b8, nxt, status = sc.scan(text, start)
    assert 0 <= nxt <= len(text)
    return S.columns(sc, rows, b64, b32, b8), nxt, status


def check_events(texts: list[str], seps: list[str], tail: str = "]", scanner: Any = None) -> int:
    """Scan the events joined by `seps`, then `tail`: each event read equals its reference, and the scan stops
    at (or before) the first that must not be read. How many it read."""
    refs: list[Row | MustStop] = []
    for t in texts:
        try:
            refs.append(reference(t))
        except MustStop as err:
            refs.append(err)
    text, starts = "", []
    for i, t in enumerate(texts):
        starts.append(len(text))
        text += t + (seps[i % len(seps)] if i < len(texts) - 1 else "")
    text += tail
    c, nxt, status = scan(text, 0, scanner)
    stop = next((i for i, r in enumerate(refs) if isinstance(r, MustStop)), len(texts))
    assert c.rows <= stop, f"read event {stop}, which must stop the scan ({refs[stop]}): {texts[stop]!r}"
    for r in range(c.rows):
        assert row_of(c, r) == refs[r], texts[r]
    if status == S.TEXT:
        assert c.rows == 0 and not text.isascii()
    elif c.rows < len(texts):
        blank = len(texts[c.rows]) - len(texts[c.rows].lstrip(" \t\n\r"))
        assert status in (S.EVENT, S.MORE) and nxt == starts[c.rows] + blank
    elif tail.strip() == "]":
        assert status == S.END and text[nxt] == "]"
    return c.rows


def check_one(text: str) -> Row | None:
    """One event: its row if the scanner reads it (None if it stopped), checked against the reference."""
    return row_of(*scan(text + "]")[:1], 0) if check_events([text], [","]) else None


# ---------- concrete cases ----------

KERNEL = ('{"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4, '
          'at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, '
          'at::detail::Array<char*, 1>)", "pid": 0, "tid": 7, "ts": 1695835542514261.123, "dur": 3.456, '
          '"args": {"External id": 31, "queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": 12345, '
          '"registers per thread": 16, "shared memory": 0, "blocks per SM": 0.5, "warps per SM": 2.5, '
          '"grid": [1, 1, 1], "block": [128, 1, 1], "est. achieved occupancy %": 100}}')
LAUNCH = ('{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 2869224, "tid": 2869224, '
          '"ts": 1695835542514200.5, "dur": 7.25, "args": {"External id": 31, "cbid": 211, "correlation": 12345}}')
FLOW_END = ('{\n    "ph": "f", "id": 5453, "pid": 2869224, "tid": 2869224, "ts": 1695835585772946,\n'
            '    "cat": "ac2g", "name": "ac2g", "bp": "e"\n  }')
ROCM = ('{"ph": "X", "cat": "kernel", "name": "Cijk_Alik_Bljk", "pid": 2, "tid": "stream 0", '
        '"ts": 1703700000000.5, "dur": 12, "args": {"stream": 0, "device": 2, "correlation": 77}}')
HTA_TS = '{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": "4458676416431.397", "dur": "1.5"}'
COMMS = ('{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 2, "ts": 10, "dur": 2, '
         '"args": {"Collective name": "allreduce", "Process Group Name": "0"}}')


def _r(**kw: Any) -> Row:
    base: dict[str, Any] = dict(ph=S.PH_NONE, cat=None, name=None, ts=None, dur=None, pid=None, tid=None, id="absent",
                                correlation="absent", stream="absent", device="absent", args=False, collective=None)
    base.update(kw)
    return Row(**base)


READ = {
    "kineto kernel": (KERNEL, _r(ph=S.PH_X, cat="kernel", name=json.loads(KERNEL)["name"], ts=1695835542514261123,
                                 dur=3456, pid=0, tid=7, correlation=12345, stream=7, device=0, args=True)),
    "cuda_runtime launch": (LAUNCH, _r(ph=S.PH_X, cat="cuda_runtime", name="cudaLaunchKernel", ts=1695835542514200500,
                                       dur=7250, pid=2869224, tid=2869224, correlation=12345, args=True)),
    "ac2g flow end": (FLOW_END, _r(ph=S.PH_F, cat="ac2g", name="ac2g", ts=1695835585772946000, pid=2869224,
                                   tid=2869224, id=5453)),
    "rocm string tid": (ROCM, _r(ph=S.PH_X, cat="kernel", name="Cijk_Alik_Bljk", ts=1703700000000500, dur=12000,
                                 pid=2, tid="stream 0", stream=0, device=2, correlation=77, args=True)),
    "hta string ts": (HTA_TS, _r(ph=S.PH_X, cat="cpu_op", name="aten::mm", ts=4458676416431397, dur=1500, pid=1,
                                 tid=1)),
    "record_param_comms": (COMMS, _r(ph=S.PH_X, cat="cpu_op", name="record_param_comms", ts=10000, dur=2000, pid=1,
                                     tid=2, collective="allreduce", args=True)),
    "empty event": ("{}", _r()),
    "instant event": ('{"ph":"i","s":"t","name":"x","ts":-1.5}', _r(ph=S.PH_LI, name="x", ts=-1500)),
    "global instant": ('{"ph":"I","ts":0}', _r(ph=S.PH_UI, ts=0)),
    "other ph": ('{"ph":"B","ts":"0012.5"}', _r(ph=S.PH_OTHER, ts=12500)),
    "escaped ph and name": ('{"ph":"\\u0058","name":"a\\"b\\\\c\\u00e9\\ud83d\\ude00"}',
                            _r(ph=S.PH_X, name='a"b\\c\u00e9\U0001f600')),
    "null fields": ('{"ph":null,"cat":null,"name":null,"ts":null,"dur":null,"pid":null,"tid":null,"id":null,'
                    '"args":null}', _r(id="null")),
    "explicit null stream": ('{"args":{"stream":null,"device":null,"correlation":null}}',
                             _r(args=True, stream="null", device="null", correlation="null")),
    "other-typed ids": ('{"id":"5","args":{"stream":1.0,"device":true,"correlation":[1]}}',
                        _r(id="other", args=True, stream="other", device="other", correlation="other")),
    "negative ids": ('{"id":-5,"args":{"correlation":-1}}', _r(id="negative", args=True, correlation="negative")),
    "id of 19 digits below MAX_NS": ('{"id":1000000000000000000,"args":{"correlation":4611686018427387903}}',
                                     _r(id=10**18, args=True, correlation=MAX_NS - 1)),
    "id of MAX_NS": ('{"id":4611686018427387904}', _r(id="big")),
    "id of 19 digits over int64": ('{"id":9999999999999999999,"args":{"stream":-9999999999999999999}}',
                                   _r(id="big", args=True, stream="negative")),
    "id of 40 digits": ('{"id":' + "9" * 40 + ',"args":{"device":-' + "9" * 40 + '}}',
                        _r(id="big", args=True, device="negative")),
    "string time over 40 chars": ('{"ts":"' + "1" * 41 + '","dur":"' + "0" * 39 + '1.5"}', _r(ts=None, dur=None)),
    "string time of 40 chars": ('{"ts":"' + "0" * 36 + '1.25"}', _r(ts=1250)),
    "time at the range's ends": ('{"ts":4611686018427387.903,"dur":-4611686018427387.903}',
                                 _r(ts=MAX_NS - 1, dur=-(MAX_NS - 1))),
    "time out of range": ('{"ts":4611686018427387.904,"dur":"-4611686018427388"}', _r()),
    "integer time of 17 digits": ('{"ts":12345678901234567}', _r()),
    "time of other types": ('{"ts":true,"dur":[1],"args":{}}', _r(args=True)),
    "string times that are no number": ('{"ts":"","dur":"abc"}', None),  # may stop: to_ns gives None either way
    "collective name no string": ('{"args":{"Collective name":5}}', _r(args=True)),
    "pid and tid of 18 digits": ('{"pid":-999999999999999999,"tid":"x"}', _r(pid=-999999999999999999, tid="x")),
    "deep args at 100": ('{"args":' + '{"a":' * 97 + "1" + "}" * 97 + "}", _r(args=True)),
    "64 keys": ("{" + ",".join(f'"k{i}":{i}' for i in range(63)) + ',"ts":1}', _r(ts=1000)),
}


@pytest.mark.parametrize("case", list(READ))
def test_the_scanner_reads_real_looking_events_as_the_reference_does(case):
    text, want = READ[case]
    got = check_one(text)
    if want is not None:
        assert got == want


STOP = {
    "duplicate top-level key": '{"ts":1,"ts":2}',
    "duplicate key in args": '{"args":{"stream":1,"stream":2}}',
    "duplicate key deep in an array": '{"x":[{"a":[{"b":1,"b":1}]}]}',
    "duplicate key of 8 characters": '{"abcdefgh":1,"abcdefgh":1}',
    "duplicate key, one escaped": '{"ts":1,"t\\u0073":2}',
    "non-ascii text": '{"name":"caf\u00e9"}',
    "NaN": '{"x":NaN}',
    "Infinity time": '{"ts":Infinity}',
    "negative infinity in args": '{"args":{"a":-Infinity}}',
    "lone high surrogate in name": '{"name":"\\ud800"}',
    "lone low surrogate in cat": '{"cat":"\\udc00x"}',
    "high surrogate then no low": '{"name":"\\ud800\\u0041"}',
    "lone surrogate in a string tid": '{"tid":"\\udfff"}',
    "lone surrogate in a collective name": '{"args":{"Collective name":"\\ud83d"}}',
    "time of 4 fraction digits": '{"ts":1.2345}',
    "string time of 4 fraction digits": '{"ts":"1.2345"}',
    "time with an exponent": '{"dur":1e3}',
    "string time with an exponent": '{"ts":"1E3"}',
    "float pid": '{"pid":1.0}',
    "boolean tid": '{"tid":true}',
    "list pid": '{"pid":[1]}',
    "object tid": '{"tid":{}}',
    "pid of 19 digits": '{"pid":1000000000000000000}',
    "args a list": '{"args":[]}',
    "args a string": '{"args":"x"}',
    "ph a number": '{"ph":1}',
    "name a list": '{"name":["x"]}',
    "integer over 4300 digits in args": '{"args":{"x":' + "1" * 4301 + "}}",
    "integer over 4300 digits as a time": '{"ts":' + "1" * 4301 + "}",
    "integer over 4300 digits as an id": '{"id":' + "1" * 4301 + "}",
    "trailing comma": '{"ts":1,}',
    "missing colon": '{"ts" 1}',
    "leading zero": '{"ts":01}',
    "control character in a string": '{"name":"a\nb"}',
    "bad escape": '{"name":"\\x41"}',
    "short unicode escape": '{"name":"\\u12"}',
    "unquoted key": "{ts:1}",
    "single quotes": "{'ts':1}",
    "not an object": "[1]",
}


@pytest.mark.parametrize("case", list(STOP))
def test_the_scanner_stops_before_what_the_exact_reader_reads_otherwise(case):
    text = STOP[case]
    with pytest.raises(MustStop):
        reference(text)
    c, nxt, status = scan(text + "]")
    assert c.rows == 0 and nxt == 0 and status in (S.EVENT, S.TEXT)
    check_events([KERNEL, text, LAUNCH], [", "])


def test_every_truncation_of_an_event_is_left_unread():
    for text in (KERNEL, LAUNCH, FLOW_END, HTA_TS, READ["escaped ph and name"][0]):
        sc = S.Scanner()
        for n in range(len(text)):
            c, nxt, status = scan(text[:n], 0, sc)
            assert c.rows == 0 and status in (S.EVENT, S.MORE), text[:n]
        c, nxt, status = scan(text, 0, sc)
        assert (c.rows, nxt, status) == (1, len(text), S.SEP)
        c, nxt, status = scan(text + " ,\n", 0, sc)
        assert (c.rows, nxt, status) == (1, len(text) + 3, S.MORE)
        c, nxt, status = scan(text + " x", 0, sc)
        assert (c.rows, nxt, status) == (1, len(text) + 1, S.BADSEP)


def test_a_start_outside_the_text_is_a_value_error_and_anything_else_scans():
    sc = S.Scanner()
    for start in (-1, 3, 1 << 40):
        with pytest.raises(ValueError):
            sc.scan("{}]", start) if start != 3 else sc.scan("{}", start)
    for start in range(len(KERNEL) + 1):  # any start, even inside an event, scans without error
        sc.scan(KERNEL + "]", start)
    with pytest.raises(IndexError):
        sc.string(sc.strings())
    with pytest.raises(IndexError):
        sc.thread_key(-1)


def test_a_scanner_made_without_init_refuses_to_scan():
    sc = S.Scanner.__new__(S.Scanner)
    with pytest.raises(ValueError):
        sc.scan('{"cat":"a"}]', 0)


def test_what_the_exact_reader_reads_but_the_scanner_does_not_stops_the_scan():
    """Nesting over 100, an object of more than 64 keys, 4096 keys open at once, an escaped key."""
    assert check_one('{"args":' + '{"a":' * 199 + "1" + "}" * 199 + "}") is None
    assert check_one('{"args":' + '[' * 150 + "]" * 150 + "}") is None
    assert check_one('{"t\\u0073":1}') is None
    assert check_one("{" + ",".join(f'"k{i}":{i}' for i in range(65)) + "}") is None
    opened = "".join("{" + "".join(f'"k{i}":0,' for i in range(63)) + '"n":' for _ in range(66))
    assert check_one('{"args":' + opened + "1" + "}" * 66 + "}") is None


# ---------- generated events ----------

EXTRACTED = ["ph", "cat", "name", "ts", "dur", "pid", "tid", "id", "args"]
ARGS_KEYS = ["correlation", "stream", "device", "Collective name", "External id"]
OTHER_KEYS = ["bp", "s", "x", "ts ", "Ts", "name2", "a" * 9, "stream", "device"]

_digits = st.integers(1, 25).flatmap(lambda n: st.text("0123456789", min_size=n, max_size=n))
_int_text = st.builds(lambda neg, d: ("-" if neg else "") + (d.lstrip("0") or "0"), st.booleans(), _digits)
_frac_text = st.builds(lambda i, f: f"{i}.{f}", _int_text, st.text("0123456789", min_size=1, max_size=6))
_exp_text = st.builds(lambda m, e, s: f"{m}{e}{s}", st.one_of(_int_text, _frac_text), st.sampled_from("eE"),
                      st.sampled_from(["1", "+3", "-2", "400"]))


def _escape(s: str, draw: Any) -> str:
    """`s` as a JSON string: most often as plain as JSON allows, else each character written plainly or as an
    escape at random (non-ASCII text raw at times)."""
    escaping = draw(st.integers(0, 3)) == 0
    out = ['"']
    for ch in s:
        o = ord(ch)
        plain = 0x20 <= o < 0x7F and ch not in '"\\'
        if plain and not (escaping and draw(st.integers(0, 9)) == 0):
            out.append(ch)
        elif ch in '"\\/\b\f\n\r\t' and draw(st.booleans()):
            out.append("\\" + {"\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t"}.get(ch, ch))
        elif o > 0xFFFF:
            o -= 0x10000
            out.append(f"\\u{0xD800 + (o >> 10):04x}\\u{0xDC00 + (o & 0x3FF):04X}")
        elif o >= 0x80 and escaping and draw(st.integers(0, 4)) == 0:
            out.append(ch)  # raw non-ASCII text
        else:
            out.append(f"\\u{o:04x}")
    out.append('"')
    return "".join(out)


_ODD = st.integers(0, 24).map(lambda n: n == 0)
"""True one time in 25: how often a generated value is one the scanner must stop at (NaN, a lone surrogate)."""


@st.composite
def json_string(draw: Any) -> str:
    s = draw(st.one_of(st.sampled_from(["X", "f", "i", "I", "kernel", "ac2g", "cuda_runtime", "", "12.5", "-3",
                                        "0012.345", "1.2345", "1e3", " 5", "+5", "record_param_comms"]),
                       st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=45),
                       st.text(st.characters(max_codepoint=0x7F), max_size=8),
                       st.text(max_size=8)))
    if draw(_ODD):  # a lone surrogate, written as an escape
        at = draw(st.integers(0, len(s)))
        return _escape(s[:at], draw)[:-1] + draw(st.sampled_from(["\\ud800", "\\uDC00", "\\udbff"])) + \
            _escape(s[at:], draw)[1:]
    return _escape(s, draw)


@st.composite
def json_number(draw: Any) -> str:
    if draw(_ODD):
        return draw(st.sampled_from(["NaN", "Infinity", "-Infinity", "1" * 4301]))
    return draw(st.one_of(_int_text, _int_text, _frac_text, _exp_text, st.sampled_from(["-0", "0", "-0.0"])))


def json_value(depth: int = 0) -> st.SearchStrategy[str]:
    leaf = st.one_of(st.sampled_from(["null", "true", "false"]), json_number(), json_string())
    if depth >= 3:
        return leaf
    return st.one_of(leaf, leaf, st.lists(st.deferred(lambda: json_value(depth + 1)), max_size=3).map(
        lambda xs: "[" + ",".join(xs) + "]"), json_object(OTHER_KEYS + ARGS_KEYS, depth + 1))


@st.composite
def json_object(draw: Any, keys: list[str], depth: int = 0, values: Any = None) -> str:
    """An object of keys drawn from `keys` (or others), each once, unless a key is repeated (one time in 25);
    its spacing drawn once per object."""
    key = st.one_of(st.sampled_from(keys), st.sampled_from(keys), st.text(st.characters(max_codepoint=0x7F),
                                                                          max_size=4))
    names = draw(st.lists(key, max_size=7, unique=not draw(_ODD)))
    colon, comma = draw(st.sampled_from([":", ": ", " : "])), draw(st.sampled_from([",", ", ", ",\n    "]))
    members = []
    for name in names:
        v = draw(values(name) if values else json_value(depth))
        members.append(_escape(name, draw) + colon + v)
    return "{" + comma.join(members) + "}"


def _event_value(key: str) -> st.SearchStrategy[str]:
    if key in ("ts", "dur"):
        return st.one_of(json_number(), json_number().map(lambda t: f'"{t}"'), json_value(2))
    if key == "args":
        args = json_object(ARGS_KEYS + OTHER_KEYS, 1, _args_value)
        return st.one_of(args, args, args, json_value(2))
    if key in ("pid", "tid", "id"):
        return st.one_of(_int_text, _int_text, json_string(), json_value(2))
    if key in ("ph", "cat", "name"):
        return st.one_of(json_string(), json_string(), json_string(), json_value(2))
    return json_value(1)


def _args_value(key: str) -> st.SearchStrategy[str]:
    if key == "Collective name":
        return st.one_of(json_string(), json_value(2))
    return st.one_of(_int_text, json_value(2)) if key in ARGS_KEYS else json_value(2)


EVENT = json_object(EXTRACTED + OTHER_KEYS, 0, _event_value)
SEPS = st.lists(st.sampled_from([",", ", ", ",\n  ", "\n,", " , "]), min_size=1, max_size=3)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=st.lists(EVENT, min_size=1, max_size=3), seps=SEPS)
def test_generated_events_are_read_as_the_reference_reads_them_or_not_at_all(events, seps):
    check_events(events, seps)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=st.lists(EVENT, min_size=1, max_size=6), seps=SEPS)
def test_generated_events_many(events, seps):
    check_events(events, seps)


@pytest.mark.parametrize("case", ["flow id of 19 digits", "integer of 4301 digits"])
def test_the_two_values_the_scanner_once_read_differently_collect_as_the_exact_path_does(tmp_path, case):
    """A flow end's id in [10**18, MAX_NS) was given as MAX_NS (the flow dropped, where the exact path keeps
    it); an integer over 4300 digits was skipped, where the exact reader refuses the file."""
    from tests.test_trace_fast import _agree, _both

    extra = {"flow id of 19 digits": '{"ph": "f", "id": 1000000000000000000, "pid": 1, "tid": 1, "ts": 10, '
                                     '"cat": "ac2g", "name": "ac2g", "bp": "e"}',
             "integer of 4301 digits": '{"ph": "X", "cat": "cpu_op", "name": "x", "pid": 1, "tid": 1, "ts": 1, '
                                       '"dur": 1, "args": {"n": ' + "1" * 4301 + "}}"}[case]
    path = tmp_path / "t.json"
    path.write_text('{"traceEvents": [' + LAUNCH + ", " + KERNEL + ", " + extra + "]}")
    fast, exact = _both(path)
    _agree(fast, exact, must_finish=case == "flow id of 19 digits")
