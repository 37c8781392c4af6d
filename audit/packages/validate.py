"""Checking a package: manifest, every file's size and sha256, every row against its schema,
duplicate keys, unlisted files, links and tar members, before any row is used.
"""

from __future__ import annotations

import gzip
import os
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, cast

import pydantic

from audit.errors import AuditError, Problem, field_errors, one_line
from audit.fileio import MAX_DOCUMENT_BYTES, READ_ERRORS, JsonError, loads_strict, parse_object
from audit.models import (
    MANIFEST_SCHEMA_VERSION,
    TEXT_SCHEMA,
    FileEntry,
    Manifest,
    path_key,
    unsafe_path_reason,
)
from audit.packages.fastrow import fast_row
from audit.packages.kinds import DOCUMENT_SCHEMAS, KINDS, ROW_KEYS, ROW_MODELS
from audit.packages.layout import (
    DATA_SUFFIXES,
    MANIFEST,
    PinnedBytes,
    PinnedRead,
    TarTail,
    document_model,
)
from audit.producer import downgrade_problem
from audit.registry import unknown_error

MAX_PROBLEMS_PER_FILE = 20
"""Row problems reported per file before the rest are summarised in one line."""


def pydantic_problems(path: str, row: int | None, err: pydantic.ValidationError) -> list[Problem]:
    """One Problem per pydantic error, naming the field: `missing required field`, `unknown field`, ..."""
    return [Problem(path, e.message, row, e.field) for e in field_errors(err)]


def validate_rows(entry: FileEntry, reader: PinnedRead) -> tuple[list[Problem], int]:
    """Check every row of one data file against its schema; return (problems, row count).

    The rows come from `reader` (one pass that also hashes the file: see PinnedRead).
    """
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

    for rowno, data, obj, err in reader:
        if rowno:
            rows += 1
        rec = fast_row(model, data) if data is not None else None
        if rec is None:
            if data is not None:
                obj, err = parse_object(data)
            if err:
                add(Problem(entry.path, err, rowno or None, getattr(err, "field", None)))
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
                desc = ", ".join(f"{k}={v!r}" for k, v in zip(keys, key, strict=True))
                add(Problem(entry.path, f"duplicate ({desc}); first seen in row {seen[key]}", rowno,
                            keys[0]))
            else:
                seen[key] = rowno
    if extra:
        problems.append(Problem(entry.path, f"... and {extra} more problems in this file"))
    return problems, rows


def _check_tree(root: Path, listed: set[str]) -> list[Problem]:
    """Symlinks, unlisted files and special files anywhere under the package root."""
    problems: list[Problem] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        files = set(filenames)  # a set: `in` on the list made 200,000 files quadratic
        keep = []
        for name in sorted(dirnames + filenames):
            if len(problems) >= MAX_PROBLEMS_PER_FILE:
                problems.append(Problem("", "stopped listing the package's files after "
                                            f"{MAX_PROBLEMS_PER_FILE} problems"))
                return problems
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            if full.is_symlink():
                problems.append(Problem(rel, f"symbolic link (to {os.readlink(full)}) is not allowed in a package"))
                continue
            if name in files:
                if not full.is_file():
                    problems.append(Problem(rel, "not a regular file"))
                elif rel != MANIFEST and rel not in listed:
                    problems.append(Problem(rel, "file is not listed in manifest.json"))
            else:
                keep.append(name)
        kept = set(keep)
        dirnames[:] = [d for d in dirnames if d in kept]
    return problems


def load_manifest(root: Path, label: str) -> tuple[Manifest | None, list[Problem]]:
    """Read and validate `manifest.json`; refuse newer schema versions before anything else."""
    mpath = root / MANIFEST
    name = f"{label}/{MANIFEST}" if label else MANIFEST
    if not mpath.is_file() or mpath.is_symlink():
        return None, [Problem(name, "missing: not an audit package (no manifest.json)")]
    pinned = PinnedBytes(mpath, keep=MAX_DOCUMENT_BYTES)  # a regular file, never a FIFO swapped in
    if pinned.error or pinned.data is None:
        return None, [Problem(name, pinned.error or "unreadable")]
    obj, err = parse_object(pinned.data.replace(b"\n", b" "))
    if err:
        return None, [Problem(name, err, field=getattr(err, "field", None))]
    assert obj is not None  # (parse_object gives an object or an error)
    version = obj.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        return None, [Problem(name, "missing or non-integer schema_version", field="schema_version")]
    if version > MANIFEST_SCHEMA_VERSION:
        return None, [Problem(name, f"schema_version {version} is newer than this audit reads "
                                    f"(1 to {MANIFEST_SCHEMA_VERSION}); upgrade audit", field="schema_version")]
    if version < 1:
        return None, [Problem(name, f"schema_version {version} is not one this audit reads "
                                    f"(1 to {MANIFEST_SCHEMA_VERSION})", field="schema_version")]
    try:
        manifest = Manifest.model_validate(obj)
    except pydantic.ValidationError as e:
        return None, pydantic_problems(name, None, e)
    if problem := unknown_kind(manifest.kind):
        return None, [Problem(name, problem, field="kind")]
    if problem := downgrade_problem(manifest):
        return None, [Problem(name, problem, field="schema_version")]
    return manifest, []


def unknown_kind(name: str) -> str | None:
    """Why `name` is no registered package kind (`unknown package kind 'NAME' (known: ...)`), or None. The
    manifest model checks only that a kind is a safe name: the registry, not the schema, says which exist."""
    return None if name in KINDS else str(unknown_error("package kind", name, KINDS))


def check_document(entry: FileEntry, data: bytes) -> tuple[list[Problem], Any]:
    """Check the bytes of a document file against its model; return (problems, the model or None).
    JSON is read strictly: a duplicate key, NaN or nesting too deep is refused, naming the key."""
    try:
        obj = loads_strict(data)
    except JsonError as e:
        return [Problem(entry.path, str(e), field=e.field)], None
    if not isinstance(obj, dict):
        return [Problem(entry.path, f"expected a JSON object, found {type(obj).__name__}")], None
    try:
        return [], document_model(entry.schema_).model_validate(obj)
    except pydantic.ValidationError as e:
        return pydantic_problems(entry.path, None, e), None


def _document_shape(entry: FileEntry) -> list[Problem]:
    if not entry.path.endswith(".json"):
        return [Problem(entry.path, "document files must end in .json")]
    if entry.rows is not None:
        return [Problem(entry.path, "a document has no rows: manifest must say null", field="rows")]
    return []


def _kind_problems(manifest: Manifest) -> list[Problem]:
    """Files whose schema the manifest's kind does not hold: a kind is what its files are, so a responses package
    relabelled `kind: items` (read by every items reader as items) is refused."""
    from audit.packages.kinds import KINDS

    kind = KINDS.get(manifest.kind)
    if kind is None:
        return []  # (an unknown kind is the kind reader's line)
    return [Problem(f.path, f"schema {f.schema_} is not one a package of kind {manifest.kind!r} holds",
                    field="schema") for f in manifest.files if not kind.holds(f.schema_)]


def validate_tree(root: Path, label: str = "", rows: bool = True) -> tuple[Manifest | None, list[Problem]]:
    """Validate an unpacked package directory; return its manifest (if readable) and all problems.

    Each data file is read once: its rows are checked from the same bytes its sha256 is computed
    over (see PinnedRead), so a file swapped mid-check cannot pass under another's digest.
    """
    manifest, problems = load_manifest(root, label)
    if manifest is None:
        return None, problems
    listed = {f.path for f in manifest.files}
    problems += _check_tree(root, listed)
    problems += _kind_problems(manifest)
    seen_paths: set[str] = set()
    seen_keys: dict[str, str] = {}
    real_root = root.resolve()
    for entry in manifest.files:
        if entry.path in seen_paths:
            problems.append(Problem(entry.path, "listed twice in manifest.json"))
            continue
        seen_paths.add(entry.path)
        key = path_key(entry.path)
        if key in seen_keys:
            problems.append(Problem(entry.path, f"path collides with {seen_keys[key]} where names are compared "
                                                f"without case or Unicode normalization (macOS, Windows)"))
            continue
        seen_keys[key] = entry.path
        full = root / entry.path
        if full.is_symlink() or not full.is_file():
            if not full.is_symlink():
                problems.append(Problem(entry.path, "listed in manifest.json but missing"))
            continue
        if "/" in entry.path and not full.resolve().is_relative_to(real_root):
            # A symlinked directory on the way (reported by _check_tree): never read through it.
            problems.append(Problem(entry.path, "resolves outside the package"))
            continue
        # (Row schemas first: a lookup imports kind modules only until one registers the id.)
        is_document = entry.schema_ != TEXT_SCHEMA and entry.schema_ not in ROW_MODELS and \
            entry.schema_ in DOCUMENT_SCHEMAS
        is_rows = entry.schema_ != TEXT_SCHEMA and not is_document
        later: list[Problem] = []
        if is_rows and entry.schema_ not in ROW_MODELS:
            later.append(Problem(entry.path, f"unknown schema {entry.schema_!r}", field="schema"))
            is_rows = False
        elif is_rows and not entry.path.endswith(DATA_SUFFIXES):
            later.append(Problem(entry.path, f"data files must end in {', '.join(DATA_SUFFIXES)}"))
            is_rows = False
        elif is_rows and entry.rows is None:
            later.append(Problem(entry.path, "manifest.json gives no row count for this data file", field="rows"))
            is_rows = False
        elif is_document:
            later += _document_shape(entry)
            is_document = not later
        if is_rows and rows:
            reader = PinnedRead(root, entry)
            row_problems, count = validate_rows(entry, reader)
            digest, size = reader.sha256, reader.size
            later += row_problems
            later += [Problem(entry.path, message, field=field) for message, field in reader.problems]
            if not reader.stopped and count != entry.rows:
                later.append(Problem(entry.path, f"has {count} rows, manifest says {entry.rows}", field="rows"))
        else:
            # Text and binary files are hashed, documents also checked, from one read of a regular file.
            pinned = PinnedBytes(full, keep=MAX_DOCUMENT_BYTES if is_document else 0)
            digest, size = pinned.sha256, pinned.size
            if pinned.error:
                later.append(Problem(entry.path, pinned.error))
            elif is_document and pinned.data is not None:
                later += check_document(entry, pinned.data)[0]
            if digest is None:  # not readable as a regular file: nothing to compare
                problems += later
                continue
        if size != entry.bytes:
            problems.append(Problem(entry.path, f"size is {size} bytes, manifest says {entry.bytes}",
                                    field="bytes"))
        if digest != entry.sha256:
            problems.append(Problem(entry.path, f"sha256 is {digest}, manifest says {entry.sha256} "
                                                f"(the file was altered)", field="sha256"))
        problems += later
    return manifest, problems


def _is_tar(path: Path) -> bool:
    return path.is_file() and path.name.endswith((".tar.gz", ".tgz", ".tar"))


MAX_BYTES_BEFORE_MANIFEST = 256 << 20
"""Bytes a tarball may unpack before its manifest.json: past it, refused (audit writes the manifest first)."""

MAX_MEMBERS_BEFORE_MANIFEST = 10_000
"""Members a tarball may hold before its manifest.json."""

_TAR_OVERHEAD = 1 << 20
"""Slack over the declared sizes for tar headers, padding and the end blocks (plus 4 KiB per file)."""


class _TooMuch(Exception):
    pass


class _Counted:
    """The decompressed tar stream, counted: reading past `limit` bytes raises _TooMuch, so headers
    (a pax header is read whole), skipped data and unpacked files all stay within a known bound."""

    def __init__(self, fh: IO[bytes], limit: int):
        self._fh = fh
        self.limit = limit
        self.count = 0

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0 or self.count + n > self.limit:
            n = max(0, self.limit - self.count) + 1  # one byte past the limit tells it was passed
        data = self._fh.read(n)
        self.count += len(data)
        if self.count > self.limit:
            raise _TooMuch
        return data

    def readable(self) -> bool:
        return True


def _member_problem(m: tarfile.TarInfo, name: str) -> str | None:
    reason = unsafe_path_reason(name) if name != MANIFEST else None
    if reason:
        return f"unsafe tar member: {reason}"
    if m.issym() or m.islnk():
        return f"unsafe tar member: link to {m.linkname}"
    if m.issparse() or not (m.isfile() or m.isdir()):
        return "unsafe tar member: not a file or directory"
    return None


def _unpack(p: Path, dest: Path) -> tuple[Path, list[Problem]]:
    """Stream the tarball `p` into `dest`, member by member, never past known bounds.

    Nothing is unpacked first and checked later: each member's header is checked before its data
    is read (a safe relative name, a regular file or directory, not seen before under any case or
    Unicode normalization). Once manifest.json has been read (audit writes it first), a member it
    does not list, or whose header gives another size than it declares, is refused before a byte
    of it is written, and the whole stream may not decompress past the declared sizes. Before
    the manifest, members are capped (MAX_BYTES_BEFORE_MANIFEST, MAX_MEMBERS_BEFORE_MANIFEST).
    Returns the package root (`dest`, or its one top folder) and the problems found.
    """
    problems: list[Problem] = []
    with open(p, "rb") as raw:
        if not p.name.endswith(".tar"):
            if raw.read(2) != b"\x1f\x8b":
                return dest, [Problem("", "not a readable tar archive: not a gzip file")]
            raw.seek(0)
        stream = cast(IO[bytes], raw if p.name.endswith(".tar") else gzip.GzipFile(fileobj=raw, mode="rb"))
        counted = _Counted(stream, MAX_BYTES_BEFORE_MANIFEST + _TAR_OVERHEAD + 1536 * MAX_MEMBERS_BEFORE_MANIFEST)
        declared: dict[str, int] | None = None
        manifest_seen = False
        prefix = ""
        top: str | None = None
        seen: dict[str, str] = {}
        before: list[tuple[str, int]] = []  # (name, size) of files unpacked before the manifest
        before_bytes = 0
        name = ""

        def refuse(where: str, message: str) -> bool:
            # Reading stops at the first bad member (skipping its data would mean decompressing it), except
            # while the members unpacked before the manifest are checked against it.
            problems.append(Problem(where, message))
            return True

        try:
            tail = TarTail(counted)
            tf = tarfile.open(fileobj=cast(IO[bytes], tail), mode="r|")
            for m in tf:
                name = m.name
                while name.startswith("./"):
                    name = name[2:]
                name = name.rstrip("/") if m.isdir() else name
                if name in ("", "."):
                    continue
                if top is None:
                    top = name.split("/")[0]
                why = _member_problem(m, name)
                if why is None:
                    key = path_key(name)
                    if key in seen:
                        why = ("tar member appears twice (readers would disagree on which copy counts)"
                               if seen[key] == name else f"tar member collides with {seen[key]} where names are "
                                                         f"compared without case or Unicode normalization")
                    seen[key] = name
                if why is not None:
                    refuse(name, why)
                    break
                target = dest / name
                if m.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                is_manifest = not manifest_seen and (name == MANIFEST or (
                    name == f"{top}/{MANIFEST}" and name.count("/") == 1))
                if is_manifest:
                    if m.size > MAX_DOCUMENT_BYTES:
                        refuse(name, f"larger than the {MAX_DOCUMENT_BYTES:,}-byte limit for a JSON document")
                        break
                    manifest_seen = True
                    prefix = name[: -len(MANIFEST)]
                    declared = _declared_sizes(_extract(tf, m, target))
                    if declared is None:  # unreadable: the caps stay, and validation says what is wrong with it
                        continue
                    # The files unpacked before it: each listed, with the size the manifest gives.
                    for prev, size in before:
                        _listed_size_problem(prev, size, declared, prefix, refuse)
                        if len(problems) >= MAX_PROBLEMS_PER_FILE:
                            break
                    listed_bytes = sum(declared.values())
                    counted.limit = counted.count + listed_bytes + _TAR_OVERHEAD + 4096 * len(declared)
                    continue
                if declared is not None:
                    if problems or _listed_size_problem(name, m.size, declared, prefix, refuse):
                        break
                else:
                    before_bytes += m.size
                    if problems:
                        break
                    if len(before) >= MAX_MEMBERS_BEFORE_MANIFEST:
                        refuse(name, f"members before manifest.json pass the {MAX_MEMBERS_BEFORE_MANIFEST:,}-member "
                                     f"limit (write manifest.json first: `audit bundle` does)")
                        break
                    if before_bytes > MAX_BYTES_BEFORE_MANIFEST:
                        refuse(name, f"members before manifest.json pass the {MAX_BYTES_BEFORE_MANIFEST:,}-byte "
                                     f"limit for members read before it (write manifest.json first: `audit bundle` "
                                     f"does)")
                        break
                    before.append((name, m.size))
                if not problems:
                    _extract(tf, m, target)
            if not problems and (why := tail.trailing_problem(tf.offset)):
                problems.append(Problem("", why))
        except _TooMuch:
            problems.append(Problem(name, f"the archive decompresses past {counted.limit:,} bytes: more than its "
                                          f"manifest.json declares (or than the limit before it)"))
        except (tarfile.TarError, *READ_ERRORS) as e:  # damaged or truncated
            problems.append(Problem("", f"not a readable tar archive: {one_line(e)}"))
    if prefix and not problems:
        return dest / prefix.rstrip("/"), problems
    return dest, problems


def _declared_sizes(data: bytes) -> dict[str, int] | None:
    """path -> bytes of every file manifest.json lists; None when it cannot be read (validation says why)."""
    obj, err = parse_object(data.replace(b"\n", b" "))
    files = obj.get("files") if obj and not err else None
    if not isinstance(files, list):
        return None
    out: dict[str, int] = {}
    for f in files:
        if isinstance(f, dict) and isinstance(f.get("path"), str) and type(f.get("bytes")) is int:
            out[f["path"]] = f["bytes"]
    return out


def _listed_size_problem(name: str, size: int, declared: dict[str, int], prefix: str,
                         refuse: Callable[[str, str], bool]) -> bool:
    """Refuse a member the manifest does not list, or lists with another size; True to stop reading."""
    rel = name[len(prefix):] if prefix and name.startswith(prefix) else None if prefix else name
    if rel is None or rel not in declared:
        return refuse(name, "file is not listed in manifest.json")
    if size != declared[rel]:
        return refuse(name, f"tar member is {size:,} bytes, manifest.json says {declared[rel]:,}")
    return False


def _extract(tf: tarfile.TarFile, m: tarfile.TarInfo, target: Path) -> bytes:
    """Write one regular member (its name was checked) to `target`; return its bytes when small."""
    target.parent.mkdir(parents=True, exist_ok=True)
    src = tf.extractfile(m)
    assert src is not None
    keep = m.size <= MAX_DOCUMENT_BYTES and target.name == MANIFEST
    kept = bytearray()
    with open(target, "xb") as out:
        while chunk := src.read(1 << 20):
            out.write(chunk)
            if keep:
                kept += chunk
    return bytes(kept)


@contextmanager
def unpacked(path: str | os.PathLike[str]) -> Iterator[tuple[Path, list[Problem]]]:
    """The package's root directory (a tarball is unpacked to a temporary one, see _unpack) and tar problems."""
    p = Path(path)
    if p.is_dir():
        yield p, []
        return
    if not p.exists():
        raise AuditError("no such file or directory", path=str(p))
    if not _is_tar(p):
        raise AuditError("not a package: expected a directory or a .tar.gz", path=str(p))
    with tempfile.TemporaryDirectory(prefix="audit-pkg-") as tmp:
        try:
            root, problems = _unpack(p, Path(tmp))
        except OSError as e:  # a member that cannot be written (a file where a folder is needed, a full disk)
            root, problems = Path(tmp), [Problem("", f"cannot unpack: {one_line(e)}")]
        yield root, problems


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
