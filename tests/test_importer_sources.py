"""The importers' readers and expressions: streamed JSON arrays, templates, text-to-type conversion."""

from __future__ import annotations

import io
import json
import random

import pytest

from audit.importers import sources
from audit.importers.mapping import Expr, ExprError, coerce


def _array_records(data: bytes):
    return [(r.row, r.obj, r.error) for r in sources.iter_json_array(io.BufferedReader(io.BytesIO(data)), "x.json")]


def _random_value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(7 if depth < 3 else 4)
    if kind == 0:
        return rng.choice([0, -7, 12345678901234567890, 3.25, -1e-7])
    if kind == 1:
        return rng.choice([True, False, None])
    if kind in (2, 3):
        return "".join(rng.choice('ab ,]}[{"\\\n\té€😀') for _ in range(rng.randrange(12)))
    if kind == 4:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {f"k{i}": _random_value(rng, depth + 1) for i in range(rng.randrange(4))}


@pytest.mark.parametrize("chunk", [1, 2, 7, 64, 1 << 20])
def test_json_array_matches_json_loads_at_any_chunk_size(monkeypatch, chunk):
    # Elements, escapes and multi-byte characters cut at every possible read boundary.
    monkeypatch.setattr(sources, "_CHUNK", chunk)
    rng = random.Random(chunk)
    for _ in range(30):
        items = [{"question_id": i, "v": _random_value(rng)} for i in range(rng.randrange(6))]
        indent = rng.choice([None, 1, 2])
        data = json.dumps(items, indent=indent, ensure_ascii=rng.random() < 0.5).encode()
        assert _array_records(data) == [(i + 1, obj, None) for i, obj in enumerate(items)]


def test_json_array_problems_end_the_stream():
    assert _array_records(b'[{"a": 1}, 5, {"b": 2}]') == [
        (1, {"a": 1}, None), (2, None, "expected a JSON object, found int"), (3, {"b": 2}, None)]
    assert _array_records(b'[{"a": 1} {"b": 2}]') == [
        (1, {"a": 1}, None), (1, None, "malformed JSON: expected ',' or ']' after the element")]
    assert _array_records(b'[{"a": 1}, {"b": ') == [
        (1, {"a": 1}, None), (2, None, "malformed JSON: Expecting value")]
    assert _array_records(b'[{"a": NaN}]') == [(1, None, "malformed JSON: NaN is not valid JSON")]
    assert _array_records(b'[{"a": 1}] [') == [(1, {"a": 1}, None),
                                                (1, None, "malformed JSON: data after the closing ']'")]
    assert _array_records(b'{"a": 1}') == [(0, None, "expected a JSON array")]
    assert _array_records(b" [ ] ") == []
    assert _array_records(b'[{"a": "caf\xe9"}]') == [
        (0, None, "not valid UTF-8 near element 1: invalid continuation byte")]


def test_json_array_element_size_is_bounded(monkeypatch):
    monkeypatch.setattr(sources, "_CHUNK", 1024)
    data = b'[{"a": "' + b"x" * 50_000 + b'"}]'
    got = [(r.row, r.error) for r in sources.iter_json_array(io.BufferedReader(io.BytesIO(data)), "x.json",
                                                              max_element_bytes=10_000)]
    assert got == [(1, "element is over the 10,000-byte limit")]


def test_templates():
    rec = {"item_index": 7, "version": "2", "doc": {"question_id": 84}, "n": None}
    assert Expr("gpqa-{item_index:03d}-v{version}")(rec) == "gpqa-007-v2"
    assert Expr("{doc[question_id]}")(rec) == "84"
    assert Expr("{version:0>3}")(rec) == "002"
    assert Expr("{version:03d}")(rec) == "002"  # text that is a number formats as one (CSV cells)
    assert Expr("doc")(rec) == {"question_id": 84}
    for text, message in [("{missing}", "template '{missing}' refers to missing column 'missing'"),
                          ("{n}", "template field {n} is null"),
                          ("{doc[nope]}", "template '{doc[nope]}': missing key 'nope'"),
                          ("{item_index:xyz}", "template '{item_index:xyz}': Invalid format specifier 'xyz' "
                                               "for object of type 'int'"),
                          ("missing", "refers to missing column 'missing'")]:
        with pytest.raises(ExprError) as e:
            Expr(text)(rec)
        assert str(e.value) == message
    for bad in ["{}", "{0}", "{a.b}", "{a[0].real}", "{a:{b}}", "{a", ""]:
        with pytest.raises(ValueError):
            Expr(bad)


@pytest.mark.parametrize("value,accepts,kw,want", [
    ("7", (int,), {}, 7), (" 7 ", (int, type(None)), {}, 7), ("007", (int,), {}, 7), ("7.0", (int,), {}, "7.0"),
    ("", (int, type(None)), {}, None), ("", (str, type(None)), {}, ""), ("true", (bool,), {}, True),
    ("False", (bool,), {}, False), ("1", (bool,), {}, "1"), ("2.5", (float, type(None)), {}, 2.5),
    ("inf", (float,), {}, "inf"), (3, (float, type(None)), {}, 3.0), (True, (float,), {}, True),
    (84, (str,), {"int_to_text": True}, "84"), (84, (str, type(None)), {}, 84), (True, (str,), {"int_to_text": True}, True),
    ('["a","b"]', (list, type(None)), {}, ["a", "b"]), ("[oops", (list, type(None)), {}, "[oops"),
])
def test_coerce(value, accepts, kw, want):
    got = coerce(value, accepts, **kw)
    assert got == want and type(got) is type(want)
