"""Checking a package: manifest, every file's size and sha256, every row against its schema,
duplicate keys, unlisted files, links and tar members, before any row is used.
"""

from __future__ import annotations

import os
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pydantic

from audit.errors import AuditError, Problem
from audit.jsonl import READ_ERRORS, parse_object, read_document, sha256_file
from audit.models import MANIFEST_SCHEMA_VERSION, ROW_MODELS, TEXT_SCHEMA, FileEntry, Manifest, unsafe_path_reason
from audit.packages.layout import (DATA_SUFFIXES, DOCUMENT_SCHEMAS, MANIFEST, ROW_KEYS, document_model, fast_row,
                                   iter_file_items)

MAX_PROBLEMS_PER_FILE = 20
"""Row problems reported per file before the rest are summarised in one line."""


def pydantic_problems(path: str, row: int | None, err: pydantic.ValidationError) -> list[Problem]:
    """One Problem per pydantic error, naming the field: `missing required field`, `unknown field`, ..."""
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

    for rowno, data, obj, err in iter_file_items(root, entry):
        if rowno:
            rows += 1
        rec = fast_row(model, data) if data is not None else None
        if rec is None:
            if data is not None:
                obj, err = parse_object(data)
            if err:
                add(Problem(entry.path, err, rowno or None))
                continue
            try:
                rec = model.model_validate(obj)
            except pydantic.ValidationError as e:
                for p in pydantic_problems(entry.path, rowno, e):
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
        return None, pydantic_problems(name, None, e)


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
        return pydantic_problems(entry.path, None, e), None


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


def prefixed(src: Path, p: Problem) -> Problem:
    """A problem found inside the package at `src`, named from the caller's point of view."""
    if not p.path:
        return Problem(str(src), p.message, p.row, p.field)
    if src.is_dir():
        return Problem(f"{src}/{p.path}", p.message, p.row, p.field)
    return Problem(f"{src}:{p.path}", p.message, p.row, p.field)
