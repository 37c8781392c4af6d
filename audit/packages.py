"""Raw packages: a directory (or `.tar.gz`) holding `manifest.json` and data files.

A package is written into a hidden sibling directory and renamed into place
only after its manifest is complete, so a killed writer leaves nothing that
validates. Reading verifies the manifest, every file's size and sha256, every
row against its schema, duplicate keys, and path safety before any row is used.
"""

from __future__ import annotations

import functools
import json
import math
import os
import shutil
import tarfile
import tempfile
import time
import types
import typing
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pydantic
from pydantic_core import from_json

from audit.errors import AuditError, Problem, ValidationFailed
from audit.jsonl import (
    atomic_text,
    READ_ERRORS,
    JsonlWriter,
    dumps,
    dumps_pretty,
    iter_raw_lines,
    open_binary,
    parse_object,
    read_document,
    sha256_bytes,
    sha256_file,
)
from audit.models import (
    MANIFEST_SCHEMA_VERSION,
    ROW_MODELS,
    TEXT_SCHEMA,
    FileEntry,
    Manifest,
    Provenance,
    Record,
    unsafe_path_reason,
)
from audit.producer import producer

MANIFEST = "manifest.json"
MAX_PROBLEMS_PER_FILE = 20
"""Row problems reported per file before the rest are summarised in one line."""

ROW_KEYS: dict[str, tuple[str, ...]] = {
    "response_row.v1": ("item_id", "sample", "attempt"),
    "item_row.v1": ("item_id",),
    "release_row.v1": ("item_id", "sample"),
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


def validate_document(root: Path, entry: FileEntry) -> tuple[list[Problem], Any]:
    """Check a document file against its model; return (problems, the model or None)."""
    if not entry.path.endswith(".json"):
        return [Problem(entry.path, "document files must end in .json")], None
    if entry.rows is not None:
        return [Problem(entry.path, "a document has no rows: manifest must say null", field="rows")], None
    data, err = read_document(root / entry.path)
    if err is None:
        obj, err = parse_object(data.replace(b"\n", b" "))
    if err:
        return [Problem(entry.path, err)], None
    try:
        return [], document_model(entry.schema_).model_validate(obj)
    except pydantic.ValidationError as e:
        return _pydantic_problems(entry.path, None, e), None


def created_now() -> str:
    """ISO 8601 UTC creation time; honours SOURCE_DATE_EPOCH for reproducible builds."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    t = int(epoch) if epoch and epoch.isdigit() else int(time.time())
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


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


# --------------------------------------------------------------------------- validation


def _pydantic_problems(path: str, row: int | None, err: pydantic.ValidationError) -> list[Problem]:
    problems = []
    for e in err.errors(include_url=False):
        loc = ".".join(str(p) for p in e["loc"]) or None
        kind = e["type"]
        if kind == "missing":
            msg = "missing required field"
        elif kind == "extra_forbidden":
            msg = "unknown field"
        else:
            got = e.get("input")
            shown = repr(got)
            if len(shown) > 60:
                shown = shown[:57] + "..."
            msg = f"{e['msg']} (got {shown})"
        problems.append(Problem(path, msg, row, loc))
    return problems


def _from_parquet(obj: dict[str, Any]) -> dict[str, Any]:
    # Object-valued fields travel as JSON text in Parquet (see _ParquetSink).
    out = {}
    for k, v in obj.items():
        if k in _JSON_COLUMNS and isinstance(v, str):
            try:
                v = json.loads(v)
            except json.JSONDecodeError:
                pass
        out[k] = v
    return out


_JSON_COLUMNS = ("extra",)


def _iter_file_items(root: Path, entry: FileEntry) -> Iterator[tuple[int, bytes | None, dict[str, Any] | None,
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


def _fast_row(model: type[Record], data: bytes) -> Record | None:
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


def _fast_object(data: bytes) -> dict[str, Any] | None:
    """One JSONL line of a validated file as a dict through pydantic-core's parser, or None."""
    try:
        obj = from_json(data, allow_inf_nan=False)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) and _finite(obj) else None


def validate_rows(root: Path, entry: FileEntry) -> tuple[list[Problem], int]:
    """Check every row of one data file against its schema; return (problems, row count)."""
    model = ROW_MODELS[entry.schema_]
    keys = ROW_KEYS.get(entry.schema_, ())
    seen: dict[tuple[Any, ...], int] = {}
    problems: list[Problem] = []
    extra = 0
    rows = 0

    def add(p: Problem) -> None:
        nonlocal extra
        if len(problems) < MAX_PROBLEMS_PER_FILE:
            problems.append(p)
        else:
            extra += 1

    for rowno, data, obj, err in _iter_file_items(root, entry):
        if rowno:
            rows += 1
        rec = _fast_row(model, data) if data is not None else None
        if rec is None:
            if data is not None:
                obj, err = parse_object(data)
            if err:
                add(Problem(entry.path, err, rowno or None))
                continue
            try:
                rec = model.model_validate(obj)
            except pydantic.ValidationError as e:
                for p in _pydantic_problems(entry.path, rowno, e):
                    add(p)
                continue
        if keys:
            key = tuple(getattr(rec, k) for k in keys)
            if key in seen:
                desc = ", ".join(f"{k}={v!r}" for k, v in zip(keys, key))
                add(Problem(entry.path, f"duplicate ({desc}); first seen in row {seen[key]}", rowno,
                            keys[0]))
            else:
                seen[key] = rowno
    if extra:
        problems.append(Problem(entry.path, f"... and {extra} more problems in this file"))
    return problems, rows


def _check_tree(root: Path, listed: set[str]) -> list[Problem]:
    """Symlinks, unlisted files and special files anywhere under the package root."""
    problems = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in sorted(dirnames + filenames):
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            if full.is_symlink():
                problems.append(Problem(rel, f"symbolic link (to {os.readlink(full)}) is not allowed in a package"))
                if name in dirnames:
                    dirnames.remove(name)
                continue
            if name in filenames:
                if not full.is_file():
                    problems.append(Problem(rel, "not a regular file"))
                elif rel != MANIFEST and rel not in listed:
                    problems.append(Problem(rel, "file is not listed in manifest.json"))
    return problems


def load_manifest(root: Path, label: str) -> tuple[Manifest | None, list[Problem]]:
    """Read and validate `manifest.json`; refuse newer schema versions before anything else."""
    mpath = root / MANIFEST
    name = f"{label}/{MANIFEST}" if label else MANIFEST
    if not mpath.is_file() or mpath.is_symlink():
        return None, [Problem(name, "missing: not an audit package (no manifest.json)")]
    data, err = read_document(mpath)
    if err:
        return None, [Problem(name, err)]
    obj, err = parse_object(data.replace(b"\n", b" "))
    if err:
        return None, [Problem(name, err)]
    version = obj.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        return None, [Problem(name, "missing or non-integer schema_version", field="schema_version")]
    if version > MANIFEST_SCHEMA_VERSION:
        return None, [Problem(name, f"schema_version {version} is newer than this audit reads "
                                    f"({MANIFEST_SCHEMA_VERSION}); upgrade audit", field="schema_version")]
    try:
        return Manifest.model_validate(obj), []
    except pydantic.ValidationError as e:
        return None, _pydantic_problems(name, None, e)


def validate_tree(root: Path, label: str = "", rows: bool = True) -> tuple[Manifest | None, list[Problem]]:
    """Validate an unpacked package directory; return its manifest (if readable) and all problems."""
    manifest, problems = load_manifest(root, label)
    if manifest is None:
        return None, problems
    listed = {f.path for f in manifest.files}
    problems += _check_tree(root, listed)
    seen_paths: set[str] = set()
    for entry in manifest.files:
        if entry.path in seen_paths:
            problems.append(Problem(entry.path, "listed twice in manifest.json"))
            continue
        seen_paths.add(entry.path)
        full = root / entry.path
        if full.is_symlink() or not full.is_file():
            if not full.is_symlink():
                problems.append(Problem(entry.path, "listed in manifest.json but missing"))
            continue
        if not full.resolve().is_relative_to(root.resolve()):
            # A symlinked directory on the way (reported by _check_tree): never read through it.
            problems.append(Problem(entry.path, "resolves outside the package"))
            continue
        digest, size = sha256_file(full)
        if size != entry.bytes:
            problems.append(Problem(entry.path, f"size is {size} bytes, manifest says {entry.bytes}",
                                    field="bytes"))
        if digest != entry.sha256:
            problems.append(Problem(entry.path, f"sha256 is {digest}, manifest says {entry.sha256} "
                                                f"(the file was altered)", field="sha256"))
        if entry.schema_ == TEXT_SCHEMA:
            continue
        if entry.schema_ in DOCUMENT_SCHEMAS:
            problems += validate_document(root, entry)[0]
            continue
        if entry.schema_ not in ROW_MODELS:
            problems.append(Problem(entry.path, f"unknown schema {entry.schema_!r}", field="schema"))
            continue
        if not entry.path.endswith(DATA_SUFFIXES):
            problems.append(Problem(entry.path, f"data files must end in {', '.join(DATA_SUFFIXES)}"))
            continue
        if rows:
            row_problems, count = validate_rows(root, entry)
            problems += row_problems
            if entry.rows is not None and count != entry.rows:
                problems.append(Problem(entry.path, f"has {count} rows, manifest says {entry.rows}",
                                        field="rows"))
    return manifest, problems


def _is_tar(path: Path) -> bool:
    return path.is_file() and path.name.endswith((".tar.gz", ".tgz", ".tar"))


def _tar_problems(tf: tarfile.TarFile) -> list[Problem]:
    # Problem paths are member names: callers prefix them with the tarball's path.
    problems = []
    for m in tf.getmembers():
        name = m.name[2:] if m.name.startswith("./") else m.name
        reason = unsafe_path_reason(name) if name not in (".", "") else None
        if reason and name != MANIFEST:
            problems.append(Problem(m.name, f"unsafe tar member: {reason}"))
        elif m.issym() or m.islnk():
            problems.append(Problem(m.name, f"unsafe tar member: link to {m.linkname}"))
        elif not (m.isfile() or m.isdir()):
            problems.append(Problem(m.name, "unsafe tar member: not a file or directory"))
    return problems


def _one_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return lines[0] if lines else type(e).__name__


@contextmanager
def unpacked(path: str | os.PathLike[str]) -> Iterator[tuple[Path, list[Problem]]]:
    """The package's root directory (a tarball is unpacked to a temporary one) and tar problems."""
    p = Path(path)
    if p.is_dir():
        yield p, []
        return
    if not p.exists():
        raise AuditError("no such file or directory", path=str(p))
    if not _is_tar(p):
        raise AuditError("not a package: expected a directory or a .tar.gz", path=str(p))
    mode = "r:" if p.name.endswith(".tar") else "r:gz"
    try:
        tf = tarfile.open(p, mode)
    except (tarfile.TarError, *READ_ERRORS) as e:
        # A damaged package is invalid (exit 1), like one damaged further in.
        yield p, [Problem("", f"not a readable tar archive: {_one_line(e)}")]
        return
    with tf, tempfile.TemporaryDirectory(prefix="audit-pkg-") as tmp:
        try:
            problems = _tar_problems(tf)
        except (tarfile.TarError, *READ_ERRORS) as e:  # truncated or damaged after the first header
            problems = [Problem("", f"not a readable tar archive: {_one_line(e)}")]
        if problems:
            yield Path(tmp), problems
            return
        try:
            tf.extractall(tmp, filter="data")
        except (tarfile.TarError, *READ_ERRORS) as e:
            yield Path(tmp), [Problem("", f"cannot unpack: {_one_line(e)}")]
            return
        root = Path(tmp)
        entries = [e for e in root.iterdir()]
        # Accept a tar of the directory itself (one top folder holding manifest.json).
        if not (root / MANIFEST).exists() and len(entries) == 1 and entries[0].is_dir():
            root = entries[0]
        yield root, []


def validate_package(path: str | os.PathLike[str], rows: bool = True) -> list[Problem]:
    """Every problem with the package at `path` (directory or tarball); empty when valid."""
    with unpacked(path) as (root, problems):
        if problems:
            return problems
        _, more = validate_tree(root, rows=rows)
        return more


@dataclass
class Package:
    """A validated package, open for reading. Use as a context manager (tarballs are unpacked)."""

    source: Path
    root: Path
    manifest: Manifest
    digest: str
    _cleanup: Any = field(default=None, repr=False)

    @property
    def kind(self) -> str:
        return self.manifest.kind

    def files(self, schema: str) -> list[FileEntry]:
        """The package's files that follow `schema`, in manifest order."""
        return [f for f in self.manifest.files if f.schema_ == schema]

    def document(self, schema: str) -> Any:
        """The model of the package's one file following document `schema` (validated on open)."""
        entries = self.files(schema)
        if len(entries) != 1:
            raise AuditError(f"holds {len(entries)} files of schema {schema!r}, expected 1", path=str(self.source))
        problems, doc = validate_document(self.root, entries[0])
        if problems:  # cannot happen after validation unless the file changed since
            raise ValidationFailed(str(self.source), [_prefixed(self.source, p) for p in problems])
        return doc

    def iter_objects(self, schema: str) -> Iterator[tuple[FileEntry, int, dict[str, Any]]]:
        """Raw JSON objects of every file following `schema`, with their row numbers (no model
        construction: fast, for validated packages)."""
        for entry in self.files(schema):
            for rowno, data, obj, err in _iter_file_items(self.root, entry):
                if data is not None:
                    obj = _fast_object(data)
                    if obj is None:
                        obj, err = parse_object(data)
                if err or obj is None:  # cannot happen after validation unless the file changed since
                    raise AuditError(err or "unreadable row", path=f"{self.source}/{entry.path}", row=rowno)
                yield entry, rowno, obj

    def iter_rows(self, schema: str) -> Iterator[Any]:
        """Rows of every file following `schema`, as models (the package was validated on open)."""
        model = ROW_MODELS[schema]
        for entry in self.files(schema):
            for rowno, data, obj, err in _iter_file_items(self.root, entry):
                rec = _fast_row(model, data) if data is not None else None
                if rec is not None:
                    yield rec
                    continue
                if data is not None:
                    obj, err = parse_object(data)
                if err or obj is None:  # cannot happen after validation unless the file changed since
                    raise AuditError(err or "unreadable row", path=f"{self.source}/{entry.path}", row=rowno)
                yield model.model_validate(obj)

    def close(self) -> None:
        if self._cleanup is not None:
            self._cleanup.__exit__(None, None, None)
            self._cleanup = None

    def __enter__(self) -> Package:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_package(path: str | os.PathLike[str], *, kind: str | None = None) -> Package:
    """Open and fully validate a package; raise ValidationFailed listing every problem."""
    src = Path(path)
    cm = unpacked(src)
    root, problems = cm.__enter__()
    try:
        if not problems:
            manifest, problems = validate_tree(root)
        if problems:
            raise ValidationFailed(str(src), [_prefixed(src, p) for p in problems])
        assert manifest is not None
        if kind is not None and manifest.kind != kind:
            raise AuditError(f"is a {manifest.kind!r} package, expected {kind!r}", path=str(src))
    except BaseException:
        cm.__exit__(None, None, None)
        raise
    return Package(src, root, manifest, content_digest(manifest.files), cm)


def _prefixed(src: Path, p: Problem) -> Problem:
    if not p.path:
        return Problem(str(src), p.message, p.row, p.field)
    if src.is_dir():
        return Problem(f"{src}/{p.path}", p.message, p.row, p.field)
    return Problem(f"{src}:{p.path}", p.message, p.row, p.field)


# --------------------------------------------------------------------------- writing


class PackageWriter:
    """Build a package atomically: files go to a hidden sibling directory, renamed on commit.

    >>> with PackageWriter(out, kind="responses", benchmark="math500") as w:
    ...     with w.rows("responses.jsonl", "response_row.v1") as sink:
    ...         sink.write(row)
    """

    def __init__(self, out: str | os.PathLike[str], *, kind: str, benchmark: str | None = None,
                 provenance: Provenance | None = None, package_id: str | None = None,
                 overwrite: bool = False):
        self.out = Path(out)
        if self.out.name.endswith((".tar.gz", ".tgz")):
            raise AuditError("write the package as a directory; tar it with `audit bundle`",
                             path=str(self.out))
        if self.out.exists() and not overwrite:
            raise AuditError("already exists (use --force to replace it)", path=str(self.out))
        parent = self.out.parent
        if not parent.is_dir():
            raise AuditError("parent directory does not exist", path=str(parent))
        self.kind = kind
        self.benchmark = benchmark
        self.provenance = provenance or Provenance()
        self.package_id = package_id
        self.overwrite = overwrite
        self.tmp = parent / f".{self.out.name}.partial-{uuid.uuid4().hex[:8]}"
        self.tmp.mkdir()
        self._entries: dict[str, tuple[str, int | None]] = {}
        self.manifest: Manifest | None = None

    def path(self, rel: str) -> Path:
        reason = unsafe_path_reason(rel)
        if reason:
            raise AuditError(reason, path=rel)
        full = self.tmp / rel
        full.parent.mkdir(parents=True, exist_ok=True)
        return full

    @contextmanager
    def rows(self, rel: str, schema: str) -> Iterator[_RowSink]:
        """A sink for rows of `schema` written to `rel` (JSONL, gzip'd when it ends in .gz)."""
        if schema not in ROW_MODELS:
            raise AuditError(f"unknown row schema {schema!r}")
        if rel.endswith(".parquet"):
            sink: _RowSink = _ParquetSink(self.path(rel), ROW_MODELS[schema])
        else:
            sink = _JsonlSink(self.path(rel))
        try:
            yield sink
        finally:
            sink.close()
        self._entries[rel] = (schema, sink.count)

    def add_text(self, rel: str, text: str) -> None:
        """Add a file without rows (README, log), pinned by hash and size."""
        self.path(rel).write_text(text, encoding="utf-8", newline="\n")
        self._entries[rel] = (TEXT_SCHEMA, None)

    def add_file(self, rel: str, src: str | os.PathLike[str]) -> None:
        """Copy an existing file in as a text/binary file without rows."""
        shutil.copyfile(src, self.path(rel))
        self._entries[rel] = (TEXT_SCHEMA, None)

    def add_document(self, rel: str, schema: str, doc: Record) -> None:
        """Add one JSON document following a registered document schema (indented, stable bytes)."""
        if schema not in DOCUMENT_SCHEMAS or not isinstance(doc, document_model(schema)):
            raise AuditError(f"not a {schema!r} document")
        self.path(rel).write_text(dumps_pretty(doc.model_dump(mode="json", by_alias=True)), encoding="utf-8",
                                  newline="\n")
        self._entries[rel] = (schema, None)

    def commit(self) -> Manifest:
        files = []
        for rel in sorted(self._entries):
            schema, count = self._entries[rel]
            digest, size = sha256_file(self.tmp / rel)
            files.append(FileEntry(path=rel, sha256=digest, bytes=size, rows=count, schema=schema))
        pid = self.package_id or f"{self.kind}-{self.benchmark or 'package'}-{content_digest(files)[:12]}"
        try:
            manifest = Manifest(
                package_id=pid, kind=self.kind, benchmark=self.benchmark, created=created_now(),
                producer=producer(), provenance=self.provenance, files=files,
            )
        except pydantic.ValidationError as e:
            raise AuditError(str(_pydantic_problems(MANIFEST, None, e)[0])) from None
        write_atomic(self.tmp / MANIFEST, dumps_pretty(manifest.model_dump(mode="json", by_alias=True)))
        _fsync_dir(self.tmp)
        if self.out.exists():
            trash = self.out.parent / f".{self.out.name}.old-{uuid.uuid4().hex[:8]}"
            os.rename(self.out, trash)
            os.rename(self.tmp, self.out)
            shutil.rmtree(trash, ignore_errors=True)
        else:
            os.rename(self.tmp, self.out)
        _fsync_dir(self.out.parent)
        self.manifest = manifest
        return manifest

    def abort(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> PackageWriter:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            try:
                self.commit()
            except BaseException:
                self.abort()
                raise
        else:
            self.abort()


class _RowSink:
    count: int

    def write(self, row: Record) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class _JsonlSink(_RowSink):
    def __init__(self, path: Path):
        self._w = JsonlWriter(path)

    @property
    def count(self) -> int:
        return self._w.rows

    def write(self, row: Record) -> None:
        self._w.write(row_to_json(row))

    def close(self) -> None:
        self._w.close()


class _ParquetSink(_RowSink):
    """Rows buffered in batches and written as Parquet; object fields become JSON text columns."""

    BATCH = 65536

    def __init__(self, path: Path, model: type[Record]):
        self._path = path
        self._model = model
        self._buf: list[dict[str, Any]] = []
        self._writer: Any = None
        self.count = 0

    def write(self, row: Record) -> None:
        d = row.model_dump(mode="json", by_alias=True)
        for k in _JSON_COLUMNS:
            if k in d:
                d[k] = dumps(d[k])
        self._buf.append(d)
        self.count += 1
        if len(self._buf) >= self.BATCH:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self._buf:
            return
        table = pa.Table.from_pylist(self._buf)
        if self._writer is None:
            self._writer = pq.ParquetWriter(self._path, table.schema)
        self._writer.write_table(table.cast(self._writer.schema))
        self._buf = []

    def close(self) -> None:
        self._flush()
        if self._writer is not None:
            self._writer.close()


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write a text file by temp file + fsync + rename: readers see the old or the new file, never half."""
    with atomic_text(path) as f:
        f.write(text)


def _fsync_dir(path: Path) -> None:
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


def bundle(pkg_dir: str | os.PathLike[str], out: str | os.PathLike[str]) -> None:
    """Write a validated package directory as a reproducible `.tar.gz` (sorted, zeroed owners and times)."""
    import gzip

    src = Path(pkg_dir)
    problems = validate_package(src)
    if problems:
        raise ValidationFailed(str(src), [_prefixed(src, p) for p in problems])
    out = Path(out)
    if not out.parent.is_dir():
        raise AuditError("directory does not exist", path=str(out.parent))
    tmp = out.parent / f".{out.name}.tmp-{uuid.uuid4().hex[:8]}"
    names = sorted(p.relative_to(src).as_posix() for p in src.rglob("*") if p.is_file())
    try:
        with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz, \
                tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tf:
            for name in names:
                info = tf.gettarinfo(str(src / name), arcname=name)
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                info.mtime = 0
                info.mode = 0o644
                with open(src / name, "rb") as fh:
                    tf.addfile(info, fh)
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
