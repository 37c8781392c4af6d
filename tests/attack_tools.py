"""Tools of the attack tests: bombs built in milliseconds, packages forged by hand, a CLI in a jailed process."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
import tarfile
from collections.abc import Sequence
from pathlib import Path
from typing import Literal
from typing import Any

MIB = 1 << 20

_ZERO_MEMBER = gzip.compress(b"\0" * MIB, compresslevel=9, mtime=0)


def gzip_repeated(chunk: bytes, copies: int, head: bytes = b"", tail: bytes = b"") -> bytes:
    """A gzip stream decompressing to head + chunk * copies + tail, built from one compressed copy of
    `chunk` repeated as gzip members (multi-member gzip is standard: every reader concatenates them)."""
    member = _ZERO_MEMBER if chunk == b"\0" * MIB else gzip.compress(chunk, compresslevel=9, mtime=0)
    parts = [gzip.compress(head, mtime=0)] if head else []
    parts.append(member * copies)
    if tail:
        parts.append(gzip.compress(tail, mtime=0))
    return b"".join(parts)


def tar_header(name: str, size: int, kind: bytes = tarfile.REGTYPE,
               fmt: Literal[0, 1, 2] = tarfile.GNU_FORMAT) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = size
    info.type = kind
    info.mtime = 0
    return info.tobuf(format=fmt)


def _pad(n: int) -> bytes:
    return b"\0" * (-n % 512)


def tar_gz(members: list[tuple[str, bytes | int]], *, end: bool = True) -> bytes:
    """A .tar.gz of (name, data) members; data given as an int is that many zero bytes, written as
    repeated gzip members of 1 MiB, so a 10 GiB member costs about 10 MB and no time."""
    out = []
    for name, data in members:
        if isinstance(data, int):
            assert data % MIB == 0
            out.append(gzip.compress(tar_header(name, data), mtime=0))
            out.append(_ZERO_MEMBER * (data // MIB))
        else:
            out.append(gzip.compress(tar_header(name, len(data)) + data + _pad(len(data)), mtime=0))
    if end:
        out.append(gzip.compress(b"\0" * 1024, mtime=0))
    return b"".join(out)


def many_empty_members_tar_gz(n: int, first: Sequence[tuple[str, bytes]] = ()) -> bytes:
    """A .tar.gz with `n` empty members m0000000..., after the members `first`; headers are patched
    from one template (name and checksum), so 200,000 members take well under a second."""
    template = bytearray(tar_header("m0000000", 0))
    body = bytearray()
    for name, data in first:
        body += tar_header(name, len(data)) + data + _pad(len(data))
    for i in range(n):
        h = bytearray(template)
        h[0:8] = b"m%07d" % i
        h[148:156] = b" " * 8
        h[148:156] = b"%06o\0 " % sum(h)
        body += h
    body += b"\0" * 1024
    return gzip.compress(bytes(body), compresslevel=1, mtime=0)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def manifest(files: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """A manifest.json object for hand-made packages (files: path, data bytes or (sha, size), rows, schema)."""
    entries = []
    for f in files:
        data = f.get("data")
        sha, size = (sha256(data), len(data)) if data is not None else (f["sha256"], f["bytes"])
        entry = {"path": f["path"], "sha256": sha, "bytes": size, "rows": f.get("rows"),
                 "schema": f.get("schema", "response_row.v1")}
        entry.update(f.get("more", {}))
        entries.append(entry)
    m = {"schema_version": 1, "package_id": "attack", "kind": "responses", "benchmark": "test",
         "created": "2026-01-01T00:00:00Z", "producer": {"tool": "audit", "version": "0"}, "provenance": {},
         "files": entries}
    m.update(extra)
    return m


def write_package(root: Path, files: dict[str, bytes], rows: dict[str, int] | None = None,
                  **extra: Any) -> Path:
    """A package directory holding `files` (path -> bytes), each pinned in a hand-made manifest."""
    root.mkdir(parents=True, exist_ok=True)
    entries = []
    for path, data in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
        n = (rows or {}).get(path)
        if n is None:
            plain = gzip.decompress(data) if path.endswith(".gz") else data
            n = sum(1 for line in plain.split(b"\n") if line.strip())
        entries.append({"path": path, "data": data, "rows": n})
    (root / "manifest.json").write_text(json.dumps(manifest(entries, **extra), indent=2))
    return root


ROW = b'{"item_id":"q1","response":"The answer is (B)."}\n'

_JAILED = """
import resource, sys
fsize = int(sys.argv[1])
if fsize:
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
setup = sys.argv[2]
if setup:
    exec(setup)
from audit.cli import main
sys.exit(main(sys.argv[3:]))
"""


def audit_jailed(*args: object, max_file_bytes: int = 0, setup: str = "", timeout: float = 60,
                 env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`audit ARGS` in a fresh interpreter where no file may grow past `max_file_bytes` (RLIMIT_FSIZE;
    a write past it fails with EFBIG) and that is killed after `timeout` seconds (TimeoutExpired)."""
    return subprocess.run([sys.executable, "-c", _JAILED, str(max_file_bytes), setup, *map(str, args)],
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def repin(pkg: Path, name: str, data: bytes, indent: int | None = 2) -> None:
    """Replace a listed file and its pin in manifest.json (what an attacker holding the package can do; a
    release's manifest is written without `indent`)."""
    (pkg / name).write_bytes(data)
    m = json.loads((pkg / "manifest.json").read_text())
    for f in m["files"]:
        if f["path"] == name:
            f.update(sha256=sha256(data), bytes=len(data))
    (pkg / "manifest.json").write_text(json.dumps(m, indent=indent))


_SWAP_FOR_FIFO = """
import os, audit.packages.read as r
orig = r.validate_tree
def swap(root, *a, **k):
    out = orig(root, *a, **k)
    p = os.path.join(str(root), {name!r})
    if os.path.basename(str(root)) == {folder!r} and os.path.isfile(p):
        os.unlink(p)
        os.mkfifo(p)
    return out
r.validate_tree = swap
"""


def swap_for_fifo(name: str, folder: str) -> str:
    """`audit_jailed` setup: once a package folder named `folder` is validated, its file `name` becomes a
    FIFO (a reader that opened it would wait for a writer forever)."""
    return _SWAP_FOR_FIFO.format(name=name, folder=folder)




def concurrent_pair_writer(grading, out, barrier, runs: int, errors) -> None:
    """One of several processes writing a verdict file and its Parquet sidecar to the same path,
    `runs` times, each run started together with the others (see test_attacks_verdicts)."""
    for _ in range(runs):
        barrier.wait(timeout=60)
        try:
            grading.write(out, parquet=True)
        except BaseException as e:  # reported to the parent, which fails the test
            errors.put(f"{type(e).__name__}: {e}")
        barrier.wait(timeout=60)


def replace_file(path: Path, data: bytes) -> None:
    """Swap `path` for a new file holding `data`: written beside it, then renamed over it (as an editor, a sync
    tool or a second run writing the same name does)."""
    tmp = path.with_name(path.name + ".swap")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def swap_after_hash(monkeypatch: Any, module: Any, path: Path, data: bytes) -> None:
    """`module.source_file` hashes `path` as it does, then the file is replaced by `data` (see replace_file):
    after the digest the provenance records, before any read of the records."""
    real = module.source_file

    def hashed_then_swapped(p: Any, *args: Any, **kw: Any) -> Any:
        pinned = real(p, *args, **kw)
        if Path(p).resolve() == path.resolve():
            replace_file(path, data)
        return pinned

    monkeypatch.setattr(module, "source_file", hashed_then_swapped)


def swap_before_read(monkeypatch: Any, module: Any, name: str, path: Path, data: bytes, read: int = 2) -> None:
    """`module.<name>` (a reader of the records) as it is, except that `path` is replaced by `data` just before
    its `read`-th call: between two reads of one import (its tables, its --recorded verdicts)."""
    real = getattr(module, name)
    calls = [0]

    def reader(*args: Any, **kw: Any) -> Any:
        calls[0] += 1
        if calls[0] == read:
            replace_file(path, data)
        return real(*args, **kw)

    monkeypatch.setattr(module, name, reader)
