"""Output paths: one check before the work, one publish after it, for every writer.

Without --force an output that exists is refused, before any work (`check_output`) and again
at the publish, which is one atomic no-replace step (`rename_noreplace`: renameat2 RENAME_NOREPLACE,
or a hard link for a file), so of two writers started together one fails with a clear line and
neither result is silently replaced.

With --force only what audit wrote is replaced, proven before anything is destroyed:
- a package folder: an empty folder, or one that validates as a package (every file listed and
  pinned: a package holding a user's extra file does not);
- a verdict file: a file whose header reads as one (its sidecars are audit's, named by digest);
- a bundle: a `.tar.gz` that validates as a package;
- a release's generated salt file: one line of 64 hex digits;
- a report (`audit diff -o`, `audit verify -o`): a file that begins as one of their reports does.
A symbolic link, a user's folder or file, or a file that merely has a `.json` name is refused with
one line naming it. A replaced folder is renamed aside, proven again there (a folder swapped in
after the first check is put back, untouched), and only then removed.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import shutil
import stat
import uuid
from pathlib import Path
from typing import Literal

from audit.errors import AuditError

Kind = Literal["package", "verdicts", "bundle", "salt", "hf-release", "report"]

EXISTS = "already exists (use --force to replace it)"
"""The one wording of an output that exists, without --force (raise `exists_error`, not a copy of it)."""


def exists_error(path: str | os.PathLike[str]) -> AuditError:
    """The refusal of an output `path` that exists, without --force: one wording for every writer."""
    return AuditError(EXISTS, path=str(path))


_WHAT = {
    "package": "a package that validates, or an empty folder",
    "verdicts": "a verdict file",
    "bundle": "a bundled package that validates",
    "salt": "a salt file audit generated: 64 hex digits",
    "hf-release": "a dataset folder of `audit release --format hf`: README.md, data/verdicts.parquet and a "
                  "release package that validates",
    "report": "a report of `audit diff` or `audit verify`",
}

_HF_RELEASE = {"README.md", "data", "release"}

_SALT = re.compile(rb"[0-9a-f]{64}\n")

_REPORT = re.compile(rb'# audit diff\n|audit verify |\{\n  "schema_version": [0-9]+,\n  "kind": "(diff|verify)_report"')
"""How a report of `audit diff` or `audit verify` begins, in Markdown or text, or as JSON."""


def not_ours(path: Path, kind: Kind) -> str | None:
    """Why the existing `path` is not something audit wrote as a `kind` output (so --force must not
    replace it), or None when it is."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return "it is a symbolic link"
    if kind == "hf-release":
        if not stat.S_ISDIR(st.st_mode):
            return "it is not a folder"
        try:
            names = set(os.listdir(path))
            data = set(os.listdir(Path(path) / "data")) if "data" in names else set()
        except OSError as e:
            return f"unreadable: {e.strerror or e}"
        if names != _HF_RELEASE or data != {"verdicts.parquet"}:
            return "it holds other files than README.md, data/verdicts.parquet and release/"
        return not_ours(Path(path) / "release", "package")
    if kind == "package":
        if not stat.S_ISDIR(st.st_mode):
            return "it is not a folder"
        from audit.packages.validate import validate_tree

        try:
            with os.scandir(path) as entries:
                if next(entries, None) is None:
                    return None  # an empty folder
            _, problems = validate_tree(Path(path), rows=False)
        except OSError as e:
            return f"unreadable: {e.strerror or e}"
        return f"{problems[0]}" if problems else None
    if not stat.S_ISREG(st.st_mode):
        return "it is not a regular file"
    if kind in ("salt", "report"):  # told by their first bytes
        try:
            with open(path, "rb") as f:
                head = f.read(66)  # a salt and its newline, one byte more; more than a report's opening
        except OSError as e:
            return f"unreadable: {e.strerror or e}"
        if kind == "salt":
            return None if _SALT.fullmatch(head) else "not one line of 64 hex digits"
        return None if _REPORT.match(head) else "it does not begin as one of their reports"
    if kind == "verdicts":
        from audit.verdicts.read import read_verdicts

        try:
            read_verdicts(path, rows=None)
        except AuditError as e:
            return f"not a verdict file ({e.problem.message})"
        return None
    from audit.packages.validate import validate_package

    try:
        problems = validate_package(path, rows=False)
    except AuditError as e:
        return e.problem.message
    return f"{problems[0]}" if problems else None


def refusal(path: Path, kind: Kind, why: str) -> AuditError:
    return AuditError(f"--force replaces only what audit wrote ({_WHAT[kind]}); not this one: {why}", path=str(path))


def check_output(path: str | os.PathLike[str], *, force: bool, kind: Kind = "package") -> None:
    """Refuse an output path before any work: it exists without --force, or it is not audit's to
    replace, or its folder does not exist."""
    p = Path(path)
    if os.path.lexists(p):
        if not force:
            raise exists_error(p)
        why = not_ours(p, kind)
        if why is not None:
            raise refusal(p, kind, why)
    if not p.parent.is_dir():
        raise AuditError("parent directory does not exist", path=str(p.parent))


_RENAME_NOREPLACE = 1
_AT_FDCWD = -100


def _renameat2() -> object | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.renameat2
    except (OSError, AttributeError):
        return None


_renameat2_fn = _renameat2()


def rename_noreplace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """Rename `src` to `dst` in one step that fails (FileExistsError) when `dst` exists, even as an
    empty folder or a dangling link: renameat2(RENAME_NOREPLACE); for a file where that is not
    available, a hard link then unlinking `src`. For a folder without renameat2: checked then renamed."""
    s, d = os.fsencode(src), os.fsencode(dst)
    if _renameat2_fn is not None:
        if _renameat2_fn(_AT_FDCWD, s, _AT_FDCWD, d, _RENAME_NOREPLACE) == 0:  # type: ignore[operator]
            return
        err = ctypes.get_errno()
        if err not in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
            raise OSError(err, os.strerror(err), os.fsdecode(dst))
    if not os.path.isdir(src) or os.path.islink(src):
        os.link(src, dst, follow_symlinks=False)
        os.unlink(src)
        return
    if os.path.lexists(dst):  # a file system without RENAME_NOREPLACE: the best left is check, then rename
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), os.fsdecode(dst))
    os.rename(src, dst)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def clean_stale_stages(out: str | os.PathLike[str], tag: str) -> list[str]:
    """Remove the hidden folders `staging_dir(out, tag)` made for writers that died (kill -9, power loss) before
    they published: `.NAME.TAG-PID-HEX` whose PID runs no more. A live writer's folder is left alone; so is
    anything that is not a plain folder. Returns the names removed."""
    o = Path(out)
    prefix = f".{o.name}.{tag}-"
    removed = []
    try:
        names = [n for n in os.listdir(o.parent) if n.startswith(prefix)]
    except OSError:
        return []
    for name in names:
        pid = name[len(prefix):].split("-", 1)[0]
        if not (pid.isascii() and pid.isdigit()) or _pid_alive(int(pid)):
            continue
        p = o.parent / name
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
            removed.append(name)
    return removed


def staging_dir(out: str | os.PathLike[str], tag: str) -> Path:
    """A new hidden folder beside `out` to write it in before `publish` (`.NAME.TAG-PID-HEX`), after removing the
    ones of writers that died before publishing (`clean_stale_stages`). The one way a writer stages a folder."""
    o = Path(out)
    clean_stale_stages(o, tag)
    tmp = o.parent / f".{o.name}.{tag}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    return tmp


def publish(tmp: str | os.PathLike[str], out: str | os.PathLike[str], *, force: bool,
            kind: Kind = "package") -> None:
    """Move the finished `tmp` (a folder or file beside `out`) to `out`.

    Without `force` the move fails if `out` exists by then (another writer got there first).
    With it, an existing `out` is moved aside, proven to be audit's there, and removed only after
    `tmp` took its place; one that is not audit's is moved back and refused."""
    tmp, out = Path(tmp), Path(out)
    if force and os.path.lexists(out):
        trash = out.parent / f".old-{uuid.uuid4().hex[:8]}-{out.name}"  # keeps its suffix (.tar.gz)
        try:
            os.rename(out, trash)
            moved = True
        except FileNotFoundError:
            moved = False  # gone meanwhile: nothing to replace
        if moved:
            why = not_ours(trash, kind)
            if why is not None:
                try:
                    rename_noreplace(trash, out)
                except OSError:
                    why += f" (left as {trash.name})"
                raise refusal(out, kind, why)
            try:
                _publish_new(tmp, out)
            except BaseException:
                try:
                    rename_noreplace(trash, out)
                except OSError:
                    pass
                raise
            if trash.is_dir() and not trash.is_symlink():
                shutil.rmtree(trash, ignore_errors=True)
            else:
                trash.unlink(missing_ok=True)
            return
    _publish_new(tmp, out)


def write_text(path: str | os.PathLike[str], text: str, *, force: bool, kind: Kind = "report") -> None:
    """Write the text file `path` as `publish` moves an output into place: written whole beside it
    first, then published, so an existing file is replaced only with `force` (and only when audit
    wrote it) and readers never see half of it."""
    p = Path(path)
    tmp = p.parent / f".{p.name}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        with open(tmp, "x", encoding="utf-8", newline="\n") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        publish(tmp, p, force=force, kind=kind)
    finally:
        tmp.unlink(missing_ok=True)  # gone already once published


def _publish_new(tmp: Path, out: Path) -> None:
    try:
        rename_noreplace(tmp, out)
    except FileExistsError:
        raise AuditError("appeared while this was being written (another writer?); not replaced (use --force "
                         "to replace it)", path=str(out)) from None
