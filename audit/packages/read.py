"""Reading a package: `open_package` validates it in full, then hands out its rows."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from audit.errors import AuditError, ValidationFailed
from audit.jsonl import parse_object
from audit.models import ROW_MODELS, FileEntry, Manifest
from audit.packages.layout import content_digest, fast_object, fast_row, iter_file_items
from audit.packages.validate import prefixed, unpacked, validate_document, validate_tree


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
            raise ValidationFailed(str(self.source), [prefixed(self.source, p) for p in problems])
        return doc

    def iter_objects(self, schema: str) -> Iterator[tuple[FileEntry, int, dict[str, Any]]]:
        """Raw JSON objects of every file following `schema`, with their row numbers (no model
        construction: fast, for validated packages)."""
        for entry in self.files(schema):
            for rowno, data, obj, err in iter_file_items(self.root, entry):
                if data is not None:
                    obj = fast_object(data)
                    if obj is None:
                        obj, err = parse_object(data)
                if err or obj is None:  # cannot happen after validation unless the file changed since
                    raise AuditError(err or "unreadable row", path=f"{self.source}/{entry.path}", row=rowno)
                yield entry, rowno, obj

    def iter_rows(self, schema: str) -> Iterator[Any]:
        """Rows of every file following `schema`, as models (the package was validated on open)."""
        model = ROW_MODELS[schema]
        for entry in self.files(schema):
            for rowno, data, obj, err in iter_file_items(self.root, entry):
                rec = fast_row(model, data) if data is not None else None
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
            raise ValidationFailed(str(src), [prefixed(src, p) for p in problems])
        assert manifest is not None
        if kind is not None and manifest.kind != kind:
            raise AuditError(f"is a {manifest.kind!r} package, expected {kind!r}", path=str(src))
    except BaseException:
        cm.__exit__(None, None, None)
        raise
    return Package(src, root, manifest, content_digest(manifest.files), cm)
