"""Reading a package: `open_package` validates it in full, then hands out its rows."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from audit.errors import AuditError, Problem, ValidationFailed
from audit.fileio import MAX_DOCUMENT_BYTES, JsonError, loads_strict, open_regular, parse_object, sha256_bytes
from audit.models import FileEntry, Manifest
from audit.packages.fastrow import fast_object, fast_row
from audit.packages.kinds import ROW_MODELS
from audit.packages.layout import PinnedRead, package_digest
from audit.packages.validate import check_document, prefixed, unpacked, validate_tree


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
        """The model of the package's one file following document `schema`, parsed from bytes read once
        and checked against the manifest's sha256 (AuditError when the file changed since validation)."""
        entries = self.files(schema)
        if len(entries) != 1:
            raise AuditError(f"holds {len(entries)} files of schema {schema!r}, expected 1", path=str(self.source))
        data = self.read_bytes(entries[0].path)
        problems, doc = check_document(entries[0], data)
        if problems:  # cannot happen: the bytes are the validated ones
            raise ValidationFailed(str(self.source), [prefixed(self.source, p) for p in problems])
        return doc

    def _pinned(self, entry: FileEntry) -> Iterator[tuple[int, bytes | None, dict[str, Any] | None, str | None]]:
        """Rows of one file, read from the bytes whose sha256 is checked against the manifest at the end:
        a file swapped or rewritten since validation is refused, never read under the validated digest."""
        reader = PinnedRead(self.root, entry)
        yield from reader
        if not reader.intact:
            raise AuditError(f"changed while being read: sha256 is {reader.sha256}, manifest.json says "
                             f"{entry.sha256}", path=f"{self.source}/{entry.path}")

    def iter_objects(self, schema: str) -> Iterator[tuple[FileEntry, int, dict[str, Any]]]:
        """Raw JSON objects of every file following `schema`, with their row numbers (no model
        construction: fast, for validated packages). Iterate to the end: the digest of what was
        read is checked after the last row (AuditError when the file changed since validation)."""
        for entry in self.files(schema):
            for rowno, data, obj, err in self._pinned(entry):
                if data is not None:
                    obj = fast_object(data)
                    if obj is None:
                        obj, err = parse_object(data)
                if err or obj is None:  # the file changed since validation
                    raise AuditError(f"changed while being read: {err or 'unreadable row'}",
                                     path=f"{self.source}/{entry.path}", row=rowno or None)
                yield entry, rowno, obj

    def iter_rows(self, schema: str) -> Iterator[Any]:
        """Rows of every file following `schema`, as models (the package was validated on open).
        Iterate to the end: the digest of what was read is checked after the last row."""
        model = ROW_MODELS[schema]
        for entry in self.files(schema):
            for rowno, data, obj, err in self._pinned(entry):
                rec = fast_row(model, data, check_keys=False) if data is not None else None
                if rec is not None:
                    yield rec
                    continue
                if data is not None:
                    obj, err = parse_object(data)
                if err or obj is None:  # the file changed since validation
                    raise AuditError(f"changed while being read: {err or 'unreadable row'}",
                                     path=f"{self.source}/{entry.path}", row=rowno or None)
                yield model.model_validate(obj)

    def read_bytes(self, path: str) -> bytes:
        """The bytes of one listed file, checked against the manifest's sha256 (AuditError when the file
        changed since validation): what a caller reads is what the digest describes."""
        entry = next((f for f in self.manifest.files if f.path == path), None)
        if entry is None:
            raise AuditError("not listed in manifest.json", path=f"{self.source}/{path}")
        try:
            f, _ = open_regular(self.root / path)
            with f:
                data = f.read(entry.bytes + 1)
        except OSError as e:  # swapped for a FIFO, a device or a link since validation
            raise AuditError(f"changed while being read: unreadable: {e.strerror or e}",
                             path=f"{self.source}/{path}") from None
        if len(data) != entry.bytes or sha256_bytes(data) != entry.sha256:
            raise AuditError(f"changed while being read: sha256 is {sha256_bytes(data)}, manifest.json says "
                             f"{entry.sha256}", path=f"{self.source}/{path}")
        return data

    def read_json(self, path: str) -> Any:
        """One listed JSON file (a text-schema summary or report), from the bytes of `read_bytes` (checked
        against the manifest), decoded strictly: AuditError naming the file and the key of a duplicate,
        or on NaN, Infinity or malformed JSON."""
        entry = next((f for f in self.manifest.files if f.path == path), None)
        if entry is not None and entry.bytes > MAX_DOCUMENT_BYTES:
            raise AuditError(f"larger than the {MAX_DOCUMENT_BYTES:,}-byte limit for a JSON document",
                             path=f"{self.source}/{path}")
        data = self.read_bytes(path)
        try:
            return loads_strict(data)
        except JsonError as e:
            raise AuditError(str(e), path=f"{self.source}/{path}", field=e.field) from None

    def close(self) -> None:
        if self._cleanup is not None:
            self._cleanup.__exit__(None, None, None)
            self._cleanup = None

    def __enter__(self) -> Package:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def load_package(path: str | os.PathLike[str]) -> tuple[Package | None, list[Problem]]:
    """Open and fully validate a package: (the Package, []) or (None, every problem, named as inside
    the package: see validate_package)."""
    src = Path(path)
    cm = unpacked(src)
    root, problems = cm.__enter__()
    try:
        if not problems:
            manifest, problems = validate_tree(root)
    except BaseException:
        cm.__exit__(None, None, None)
        raise
    if problems:
        cm.__exit__(None, None, None)
        return None, problems
    assert manifest is not None
    return Package(src, root, manifest, package_digest(manifest), cm), []


def open_package(path: str | os.PathLike[str], *, kind: str | None = None) -> Package:
    """Open and fully validate a package; raise ValidationFailed listing every problem."""
    src = Path(path)
    pkg, problems = load_package(src)
    if pkg is None:
        raise ValidationFailed(str(src), [prefixed(src, p) for p in problems])
    if kind is not None and pkg.kind != kind:
        pkg.close()
        raise AuditError(f"is a {pkg.kind!r} package, expected {kind!r}", path=str(src))
    return pkg
