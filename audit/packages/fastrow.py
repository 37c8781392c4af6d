"""Fast row decoding for validated packages: pydantic-core parses a JSON row in Rust, several times faster
than `json` plus model validation in Python, and steps aside (None) whenever its reading could differ from the
strict reader's (`fast_row`, `fast_object`)."""

from __future__ import annotations

import functools
import math
import types
import typing
from typing import Any

from pydantic_core import from_json

from audit.models import Record

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
    return typing.cast(Record, rec)


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
