"""What a package is on disk: its manifest's name, data file suffixes, the fields that key
each row schema, its content identity, and how a data file's rows are read and written.

Shared by `validate` (checks), `read` (a validated package's rows) and `write`.
"""

from __future__ import annotations

import functools
import json
import math
import types
import typing
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic_core import from_json

from audit.jsonl import READ_ERRORS, dumps, iter_raw_lines, open_binary, sha256_bytes
from audit.models import FileEntry, Record

MANIFEST = "manifest.json"

ROW_KEYS: dict[str, tuple[str, ...]] = {
    "response_row.v1": ("item_id", "sample", "attempt"),
    "item_row.v1": ("item_id",),
    "release_row.v1": ("item_id", "sample"),
    "bench_request_row.v1": ("request",),
    "bench_window_row.v1": ("window",),
    "profile_step.v1": ("step",),
    "profile_kernel.v1": ("name", "category"),
    "profile_collective.v1": ("step", "kind", "position"),
}
"""Fields that must be unique together within one file of each row schema."""

DATA_SUFFIXES = (".jsonl", ".jsonl.gz", ".parquet")

DOCUMENT_SCHEMAS: dict[str, tuple[str, str]] = {
    "trace_summary.v1": ("audit.trace.models", "TraceSummary"),
}
"""Files holding one JSON document (not rows), by schema id: the (module, class) of its model,
imported when a package holds one (the model lives beside the code that writes it)."""


def document_model(schema: str) -> type[Record]:
    import importlib

    module, name = DOCUMENT_SCHEMAS[schema]
    return getattr(importlib.import_module(module), name)


def content_digest(files: Iterable[FileEntry]) -> str:
    """The package's content identity: sha256 over its files' paths and hashes, sorted by path.

    The manifest's `created`, `producer` and `provenance` are not part of it, so
    rebuilding the same data elsewhere gives the same digest.
    """
    listing = sorted((f.path, f.sha256) for f in files)
    return sha256_bytes(dumps([{"path": p, "sha256": h} for p, h in listing]).encode())


def row_to_json(row: Record) -> dict[str, Any]:
    """A row as a JSON object in schema field order, leaving out empty optional fields."""
    out = row.model_dump(mode="json", by_alias=True)
    fields = type(row).model_fields
    return {
        k: v
        for k, v in out.items()
        if fields[k].is_required() or not (v is None or (k == "extra" and not v))
    }


def _from_parquet(obj: dict[str, Any]) -> dict[str, Any]:
    # Object-valued fields travel as JSON text in Parquet (see write._ParquetSink).
    out = {}
    for k, v in obj.items():
        if k in JSON_COLUMNS and isinstance(v, str):
            try:
                v = json.loads(v)
            except json.JSONDecodeError:
                pass
        out[k] = v
    return out


JSON_COLUMNS = ("extra",)


def iter_file_items(root: Path, entry: FileEntry) -> Iterator[tuple[int, bytes | None, dict[str, Any] | None,
                                                                  str | None]]:
    """(row number, raw JSONL line, object, error) for each row of a data file.

    JSONL rows come as raw lines (object None), so callers choose how to parse them;
    Parquet rows come as objects (line None).
    """
    full = root / entry.path
    if entry.path.endswith(".parquet"):
        import pyarrow.parquet as pq

        try:
            pf = pq.ParquetFile(full)
        except Exception as e:  # pyarrow raises several types for damaged files
            yield 0, None, None, f"not a readable Parquet file: {e}"
            return
        n = 0
        try:
            for batch in pf.iter_batches(batch_size=8192):
                for obj in batch.to_pylist():
                    n += 1
                    yield n, None, _from_parquet(obj), None
        except Exception as e:  # a damaged column chunk surfaces only while reading
            yield 0, None, None, f"not a readable Parquet file after row {n}: {e}"
        return
    with open_binary(full) as fh:
        try:
            for raw in iter_raw_lines(fh):
                yield raw.lineno, raw.data, None, raw.error
        except READ_ERRORS as e:  # damaged gzip stream
            yield 0, None, None, f"unreadable: {e}"


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


def fast_row(model: type[Record], data: bytes) -> Record | None:
    """The row model of one JSONL line through pydantic-core's parser, or None: use the strict path."""
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
    return rec


def fast_object(data: bytes) -> dict[str, Any] | None:
    """One JSONL line of a validated file as a dict through pydantic-core's parser, or None."""
    try:
        obj = from_json(data, allow_inf_nan=False)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) and _finite(obj) else None
