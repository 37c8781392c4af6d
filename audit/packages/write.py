"""Writing a package atomically: files go to a hidden sibling directory, renamed into place
only after the manifest is complete, so a killed writer leaves nothing that validates.
"""

from __future__ import annotations

import functools
import gzip
import io
import os
import shutil
import tarfile
import time
import types
import typing
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pydantic

from audit.errors import AuditError, ValidationFailed
from audit.fileio import (
    HashingReader,
    JsonError,
    JsonlWriter,
    dumps,
    dumps_pretty,
    fsync_dir,
    loads_strict,
    open_regular,
    read_regular,
    sha256_file,
    write_atomic,
)
from audit.models import TEXT_SCHEMA, FileEntry, Manifest, Provenance, Record, unsafe_path_reason
from audit.outputs import check_output, publish, staging_dir
from audit.packages.kinds import DOCUMENT_SCHEMAS, ROW_MODELS
from audit.packages.layout import JSON_COLUMNS, MANIFEST, content_digest, document_model, row_to_json
from audit.packages.validate import prefixed, pydantic_problems, unknown_kind
from audit.producer import producer


def created_now() -> str:
    """ISO 8601 UTC creation time; honours SOURCE_DATE_EPOCH for reproducible builds."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    t = int(epoch) if epoch and epoch.isascii() and epoch.isdigit() else int(time.time())
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


class PackageWriter:
    """Build a package atomically: files go to a hidden sibling directory, renamed on commit.

    >>> with PackageWriter(out, kind="responses", benchmark="math500") as w:
    ...     with w.rows("responses.jsonl", "response_row.v1") as sink:
    ...         sink.write(row)
    """

    def __init__(self, out: str | os.PathLike[str], *, kind: str, benchmark: str | None = None,
                 provenance: Provenance | None = None, package_id: str | None = None,
                 id_prefix: str | None = None, overwrite: bool = False):
        self.out = Path(out)
        if self.out.name.endswith((".tar.gz", ".tgz")):
            raise AuditError("write the package as a directory; tar it with `audit bundle`",
                             path=str(self.out))
        if problem := unknown_kind(kind):
            raise AuditError(problem)
        check_output(self.out, force=overwrite)
        self.kind = kind
        self.benchmark = benchmark
        self.provenance = provenance or Provenance()
        self.package_id = package_id
        self.id_prefix = id_prefix  # without a package_id: `{id_prefix}-{content digest[:12]}`
        self.overwrite = overwrite
        self.tmp = staging_dir(self.out, "partial")  # (and removes the partials of writers killed before)
        self._entries: dict[str, tuple[str, int | None, int | None]] = {}
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
        self._entries[rel] = (schema, sink.count, sink.uncompressed if rel.endswith(".gz") else None)

    def add_text(self, rel: str, text: str) -> None:
        """Add a file without rows (README, log), pinned by hash and size."""
        self.path(rel).write_text(text, encoding="utf-8", newline="\n")
        self._entries[rel] = (TEXT_SCHEMA, None, None)

    def add_bytes(self, rel: str, data: bytes) -> None:
        """Add a file without rows from bytes (a binary or verbatim copy), pinned by hash and size."""
        self.path(rel).write_bytes(data)
        self._entries[rel] = (TEXT_SCHEMA, None, None)

    def add_file(self, rel: str, src: str | os.PathLike[str]) -> None:
        """Copy an existing file in as a text/binary file without rows."""
        shutil.copyfile(src, self.path(rel))
        self._entries[rel] = (TEXT_SCHEMA, None, None)

    def add_document(self, rel: str, schema: str, doc: Record) -> None:
        """Add one JSON document following a registered document schema (indented, stable bytes)."""
        if schema not in DOCUMENT_SCHEMAS or not isinstance(doc, document_model(schema)):
            raise AuditError(f"not a {schema!r} document")
        self.path(rel).write_text(dumps_pretty(doc.model_dump(mode="json", by_alias=True)), encoding="utf-8",
                                  newline="\n")
        self._entries[rel] = (schema, None, None)

    def commit(self) -> Manifest:
        files = []
        for rel in sorted(self._entries):
            schema, count, uncompressed = self._entries[rel]
            digest, size = sha256_file(self.tmp / rel)
            files.append(FileEntry(path=rel, sha256=digest, bytes=size, rows=count, schema=schema,
                                   uncompressed_bytes=uncompressed))
        prefix = self.id_prefix or f"{self.kind}-{self.benchmark or 'package'}"
        pid = self.package_id or f"{prefix}-{content_digest(files)[:12]}"
        try:
            manifest = Manifest(
                package_id=pid, kind=self.kind, benchmark=self.benchmark, created=created_now(),
                producer=producer(), provenance=self.provenance, files=files,
            )
        except pydantic.ValidationError as e:
            raise AuditError(str(pydantic_problems(MANIFEST, None, e)[0])) from None
        write_atomic(self.tmp / MANIFEST, dumps_pretty(manifest_json(manifest)))
        fsync_dir(self.tmp)
        publish(self.tmp, self.out, force=self.overwrite)
        fsync_dir(self.out.parent)
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
    @property
    def count(self) -> int:
        """Rows written so far."""
        raise NotImplementedError

    @property
    def uncompressed(self) -> int | None:
        """Bytes of JSONL written so far (before compression), where the sink knows them."""
        return None

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

    @property
    def uncompressed(self) -> int:
        return self._w.bytes

    def write(self, row: Record) -> None:
        self._w.write(row_to_json(row))

    def close(self) -> None:
        self._w.close()


def _arrow_type(annotation: Any, name: str) -> Any:
    """The Arrow type of a row field, or None when it has no fixed one (then the type is inferred)."""
    import pyarrow as pa

    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:  # a bounded int (models.Count, Int64) has its base type's column
        return _arrow_type(args[0], name)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        return _arrow_type(rest[0], name) if len(rest) == 1 else None
    if name in JSON_COLUMNS:
        return pa.string()
    if origin is typing.Literal:
        return pa.string() if all(isinstance(a, str) for a in args) else None
    if origin is list:
        inner = _arrow_type(args[0], "") if args else None
        return pa.list_(inner) if inner is not None else None
    return {str: pa.string(), int: pa.int64(), float: pa.float64(), bool: pa.bool_()}.get(annotation)


@functools.cache
def _arrow_schema(model: type[Record]) -> Any:
    """A fixed Arrow schema for a row model, so that a column that is null in every row (an unsupported
    counter) keeps its type and a file with no rows can still be written; None when a field has no
    fixed Arrow type."""
    import pyarrow as pa

    fields = []
    for name, f in model.model_fields.items():
        t = _arrow_type(f.annotation, name)
        if t is None:
            return None
        fields.append(pa.field(f.alias or name, t))
    return pa.schema(fields)


class _ParquetSink(_RowSink):
    """Rows buffered in batches and written as Parquet; object fields become JSON text columns."""

    BATCH = 65536

    def __init__(self, path: Path, model: type[Record]):
        self._path = path
        self._model = model
        self._schema = _arrow_schema(model)
        self._buf: list[dict[str, Any]] = []
        self._writer: Any = None
        self.rows = 0

    @property
    def count(self) -> int:
        return self.rows

    def write(self, row: Record) -> None:
        d = row.model_dump(mode="json", by_alias=True)
        for k in JSON_COLUMNS:
            if k in d:
                d[k] = dumps(d[k])
        self._buf.append(d)
        self.rows += 1
        if len(self._buf) >= self.BATCH:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self._buf:
            return
        table = pa.Table.from_pylist(self._buf, schema=self._schema)
        if self._writer is None:
            self._writer = pq.ParquetWriter(self._path, table.schema)
        self._writer.write_table(table.cast(self._writer.schema))
        self._buf = []

    def close(self) -> None:
        self._flush()
        if self._writer is None and self._schema is not None:  # no rows: an empty file that keeps the schema
            import pyarrow.parquet as pq

            self._writer = pq.ParquetWriter(self._path, self._schema)
        if self._writer is not None:
            self._writer.close()


def manifest_json(manifest: Manifest) -> dict[str, Any]:
    """The manifest as written: `uncompressed_bytes` only where a file has one (manifests without it
    keep their bytes)."""
    data = manifest.model_dump(mode="json", by_alias=True)
    for f in data["files"]:
        if f.get("uncompressed_bytes") is None:
            f.pop("uncompressed_bytes", None)
    return data


def bundle(pkg_dir: str | os.PathLike[str], out: str | os.PathLike[str], *, overwrite: bool = False) -> None:
    """Write a validated package directory as a reproducible `.tar.gz` (manifest.json first, then sorted;
    zeroed owners and times).

    The files tarred are the ones the manifest lists, each hashed as it is written and compared with its
    pin, and manifest.json is the validated one: a file changed or added after validation is refused
    (nothing is written), never bundled under the validated digest. An existing `out` is replaced only
    with `overwrite`, and only when it is a bundled package (see `audit.outputs`)."""
    from audit.packages.validate import validate_tree  # looked up per call: tests/test_attacks_kinds.py replaces it

    src = Path(pkg_dir)
    if not src.is_dir():
        raise AuditError("not a package directory", path=str(src))
    manifest, problems = validate_tree(src)
    if problems:
        raise ValidationFailed(str(src), [prefixed(src, p) for p in problems])
    assert manifest is not None
    out = Path(out)
    check_output(out, force=overwrite, kind="bundle")
    tmp = out.parent / f".{out.name}.tmp-{uuid.uuid4().hex[:8]}"

    def changed(rel: str, why: str) -> AuditError:
        return AuditError(f"changed while being bundled: {why}", path=f"{src}/{rel}")

    def member(name: str, size: int) -> tarfile.TarInfo:
        info = tarfile.TarInfo(name)  # a regular file: mode 0644, zeroed owners and time
        info.size = size
        info.mode = 0o644
        return info

    try:
        data = read_regular(src / MANIFEST)
    except OSError as e:
        raise changed(MANIFEST, f"unreadable: {e.strerror or e}") from None
    if load_manifest_bytes(data) != manifest:
        raise changed(MANIFEST, "not the manifest.json that was validated")
    try:
        with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz, \
                tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tf:
            # manifest.json first: a reader then knows every member's size before it unpacks a byte of it.
            tf.addfile(member(MANIFEST, len(data)), io.BytesIO(data))
            for entry in sorted(manifest.files, key=lambda f: f.path):
                try:
                    f, size = open_regular(src / entry.path)
                except OSError as e:
                    raise changed(entry.path, f"unreadable: {e.strerror or e}") from None
                with f:
                    if size != entry.bytes:
                        raise changed(entry.path, f"size is {size} bytes, manifest.json says {entry.bytes}")
                    source = HashingReader(f, size)  # never more than its size when opened
                    tf.addfile(member(entry.path, size), source)
                if source.sha.hexdigest() != entry.sha256:
                    raise changed(entry.path, f"sha256 is {source.sha.hexdigest()}, manifest.json says "
                                              f"{entry.sha256}")
        publish(tmp, out, force=overwrite, kind="bundle")
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def load_manifest_bytes(data: bytes) -> Manifest | None:
    """The Manifest model of manifest.json's bytes (strict JSON), or None when they are not one."""
    try:
        return Manifest.model_validate(loads_strict(data))
    except (JsonError, pydantic.ValidationError):
        return None
