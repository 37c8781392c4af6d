"""Bad input to the package layer (issue 2): each case gets its clear one-line error, no traceback,
and nothing written — by `audit pack` (no package, no leftovers) or by `audit validate` / `audit show`
(the package untouched, no temporary directories left behind).

Message shapes: `pack` reports bad input on stderr as `audit: error: FILE: row N: field F: ...`
with exit 2; `validate` prints `PKG/FILE: row N: ...` on stdout, `invalid: K problems` on stderr
and exits 1; `show` refuses an invalid package with the same findings on stderr and exit 1.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import textwrap
from pathlib import Path

import pytest

from audit import __version__

GOOD = [
    b'{"item_id":"q1","response":"The answer is (B)."}',
    b'{"item_id":"q2","sample":1,"response":"The answer is (C).","finish_reason":"stop"}',
]


@pytest.fixture
def guarded_tmp(tmp_path, monkeypatch):
    """Send the library's temporary directories (tarball unpacking) to a folder checked empty at the end."""
    sys_tmp = tmp_path / "sys-tmp"
    sys_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(sys_tmp))
    yield tmp_path
    assert list(sys_tmp.iterdir()) == [], "temporary files left behind"


def _jsonl(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def _snapshot(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): (hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir")
            for p in sorted(root.rglob("*"))}


def _good_package(cli, tmp_path: Path, name: str = "pkg") -> Path:
    src = _jsonl(tmp_path / f"{name}.src.jsonl", GOOD)
    out = tmp_path / name
    r = cli("pack", out, "--responses", src, "--benchmark", "mmlu_pro")
    assert r.code == 0, r.err
    return out


def _rewrite_data(pkg: Path, data: bytes) -> None:
    """Replace responses.jsonl and re-pin it in the manifest, so that only the rows are wrong."""
    (pkg / "responses.jsonl").write_bytes(data)
    m = json.loads((pkg / "manifest.json").read_text())
    (entry,) = m["files"]
    entry.update(sha256=hashlib.sha256(data).hexdigest(), bytes=len(data),
                 rows=sum(1 for line in data.split(b"\n") if line.strip()))
    (pkg / "manifest.json").write_text(json.dumps(m, indent=2))


def _check_refused(cli, pkg: Path, lines: list[str]) -> None:
    """`validate` and `show` both refuse `pkg` with exactly these findings, and change nothing."""
    before = _snapshot(pkg)
    prefix = f"{pkg}/" if pkg.is_dir() else f"{pkg}:"
    r = cli("validate", pkg)
    want = [f"{prefix}{line}" if not line.startswith(":") else f"{pkg}{line}" for line in lines]
    assert (r.code, r.out.splitlines()) == (1, want)
    assert r.err == f"invalid: {len(lines)} problem{'s' if len(lines) > 1 else ''}\n"
    r = cli("show", pkg)
    assert (r.code, r.out) == (1, "")
    assert r.err.splitlines() == [f"audit: error: {w}" for w in want]
    assert "Traceback" not in r.err
    assert _snapshot(pkg) == before


# --------------------------------------------------------------------------- bad rows: pack, validate, show

ROW_CASES = {
    "malformed_json": (b'{"item_id":"q3","response":"x"', "row 3: malformed JSON: Expecting ',' delimiter at column 31"),
    "missing_required_field": (b'{"item_id":"q3"}', "row 3: field response: missing required field"),
    "wrong_type": (b'{"item_id":"q3","response":"x","sample":"1"}',
                   "row 3: field sample: Input should be a valid integer (got '1')"),
    "negative_sample": (b'{"item_id":"q3","response":"x","sample":-1}',
                        "row 3: field sample: Input should be greater than or equal to 0 (got -1)"),
    "unknown_field": (b'{"item_id":"q3","response":"x","answer":"B"}', "row 3: field answer: unknown field"),
    "duplicate_item_sample": (b'{"item_id":"q2","sample":1,"response":"again"}',
                              "row 3: field item_id: duplicate (item_id='q2', sample=1, attempt=0); first seen in "
                              "row 2"),
    "non_utf8": (b'{"item_id":"q3","response":"caf\xe9"}', "row 3: not valid UTF-8 at byte 31 of the line"),
    "nan": (b'{"item_id":"q3","response":"x","started_at":NaN}', "row 3: malformed JSON: NaN is not valid JSON"),
    "not_an_object": (b'["q3","x"]', "row 3: expected a JSON object, found list"),
    "nested_too_deeply": (b"[" * 100_000, "row 3: malformed JSON: nested too deeply"),
}


@pytest.mark.parametrize("case", sorted(ROW_CASES))
def test_pack_refuses_bad_row(cli, guarded_tmp, case):
    bad, message = ROW_CASES[case]
    src = _jsonl(guarded_tmp / "in.jsonl", [*GOOD, bad])
    out = guarded_tmp / "out"
    r = cli("pack", out, "--responses", src)
    assert (r.code, r.out, r.err) == (2, "", f"audit: error: {src}: {message}\n")
    assert not out.exists()
    assert sorted(p.name for p in guarded_tmp.iterdir()) == ["in.jsonl", "sys-tmp"]


@pytest.mark.parametrize("case", sorted(ROW_CASES))
def test_validate_and_show_refuse_bad_row(cli, guarded_tmp, case):
    bad, message = ROW_CASES[case]
    pkg = _good_package(cli, guarded_tmp)
    _rewrite_data(pkg, b"".join(line + b"\n" for line in [*GOOD, bad]))
    _check_refused(cli, pkg, [f"responses.jsonl: {message}"])


def test_problems_are_capped_per_file(cli, guarded_tmp):
    src = _jsonl(guarded_tmp / "in.jsonl", [b'{"item_id":"q"}'] * 50)
    r = cli("pack", guarded_tmp / "out", "--responses", src)
    lines = r.err.splitlines()
    assert r.code == 2 and len(lines) == 21
    assert lines[-1] == f"audit: error: {src}: stopped reading after 20 problems"


# --------------------------------------------------------------------------- damaged packages


def test_data_file_altered_by_one_byte(cli, guarded_tmp):
    pkg = _good_package(cli, guarded_tmp)
    data = bytearray((pkg / "responses.jsonl").read_bytes())
    old = hashlib.sha256(data).hexdigest()
    data[data.index(b"(B)") + 1] = ord("D")  # still valid rows: only the hash can tell
    (pkg / "responses.jsonl").write_bytes(bytes(data))
    new = hashlib.sha256(data).hexdigest()
    _check_refused(cli, pkg, [f"responses.jsonl: field sha256: sha256 is {new}, manifest says {old} "
                              f"(the file was altered)"])


def test_file_listed_but_missing(cli, guarded_tmp):
    pkg = _good_package(cli, guarded_tmp)
    (pkg / "responses.jsonl").unlink()
    _check_refused(cli, pkg, ["responses.jsonl: listed in manifest.json but missing"])


def test_extra_unlisted_file(cli, guarded_tmp):
    pkg = _good_package(cli, guarded_tmp)
    (pkg / "notes").mkdir()
    (pkg / "notes" / "README.txt").write_text("not listed")
    _check_refused(cli, pkg, ["notes/README.txt: file is not listed in manifest.json"])


def test_symlink_inside_package(cli, guarded_tmp):
    pkg = _good_package(cli, guarded_tmp)
    outside = guarded_tmp / "outside"
    outside.mkdir()
    (outside / "responses.jsonl").write_bytes((pkg / "responses.jsonl").read_bytes())
    (pkg / "responses.jsonl").unlink()
    (pkg / "data").symlink_to(outside)
    m = json.loads((pkg / "manifest.json").read_text())
    m["files"][0]["path"] = "data/responses.jsonl"
    (pkg / "manifest.json").write_text(json.dumps(m))
    _check_refused(cli, pkg, [f"data: symbolic link (to {outside}) is not allowed in a package",
                              "data/responses.jsonl: resolves outside the package"])


def test_manifest_from_a_newer_schema_version(cli, guarded_tmp):
    pkg = _good_package(cli, guarded_tmp)
    m = json.loads((pkg / "manifest.json").read_text())
    m["schema_version"] = 4
    m["something_new"] = {"a": 1}
    (pkg / "manifest.json").write_text(json.dumps(m))
    _check_refused(cli, pkg, ["manifest.json: field schema_version: schema_version 4 is newer than this audit "
                              "reads (1 to 3); upgrade audit"])


def test_manifest_problems(cli, guarded_tmp):
    pkg = _good_package(cli, guarded_tmp)
    m = json.loads((pkg / "manifest.json").read_text())
    m["files"][0]["path"] = "../responses.jsonl"
    (pkg / "manifest.json").write_text(json.dumps(m))
    _check_refused(cli, pkg, ["manifest.json: field files.0.path: path has an empty, '.' or '..' "
                              "component (got '../responses.jsonl')"])
    (pkg / "manifest.json").write_bytes(b'{"schema_version": 1, "kind": "responses", \xff}')
    _check_refused(cli, pkg, ["manifest.json: not valid UTF-8 at byte 43 of the line"])
    (pkg / "manifest.json").unlink()
    _check_refused(cli, pkg, ["manifest.json: missing: not an audit package (no manifest.json)"])


# --------------------------------------------------------------------------- tarballs


def _tar(path: Path, members: list[tuple[str, bytes | None, str | None]]) -> Path:
    """A .tar.gz of (name, data, link target) members; data None with a target makes a symlink."""
    with tarfile.open(path, "w:gz") as tf:
        for name, data, link in members:
            info = tarfile.TarInfo(name)
            if link is not None:
                info.type = tarfile.SYMTYPE if data is None else tarfile.LNKTYPE
                info.linkname = link
                tf.addfile(info)
            else:
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.parametrize("member,link,message", [
    ("../escape.txt", None, "../escape.txt: unsafe tar member: path has an empty, '.' or '..' component"),
    ("data/../../escape.txt", None,
     "data/../../escape.txt: unsafe tar member: path has an empty, '.' or '..' component"),
    ("/tmp/escape.txt", None, "/tmp/escape.txt: unsafe tar member: absolute path"),
    ("escape.txt", "symlink:/etc/passwd", "escape.txt: unsafe tar member: link to /etc/passwd"),
    ("escape.txt", "hardlink:../../etc/passwd", "escape.txt: unsafe tar member: link to ../../etc/passwd"),
])
def test_tar_with_unsafe_members(cli, guarded_tmp, member, link, message):
    pkg = _good_package(cli, guarded_tmp)
    members = [(name, (pkg / name).read_bytes(), None) for name in ("manifest.json", "responses.jsonl")]
    if link is None:
        members.append((member, b"outside", None))
    else:
        kind, target = link.split(":", 1)
        members.append((member, None if kind == "symlink" else b"", target))
    tgz = _tar(guarded_tmp / "evil.tar.gz", members)
    _check_refused(cli, tgz, [message])
    assert not (guarded_tmp.parent / "escape.txt").exists() and not Path("/tmp/escape.txt").exists()


def test_damaged_tarballs(cli, guarded_tmp):
    pkg = _good_package(cli, guarded_tmp)
    tgz = guarded_tmp / "pkg.tar.gz"
    assert cli("bundle", pkg, "-o", tgz).code == 0
    data = tgz.read_bytes()
    cut = guarded_tmp / "cut.tar.gz"
    cut.write_bytes(data[: len(data) // 2])
    _check_refused(cli, cut, [": not a readable tar archive: Compressed file ended before the end-of-stream "
                              "marker was reached"])
    junk = guarded_tmp / "junk.tar.gz"
    junk.write_bytes(b"this is not a tarball")
    _check_refused(cli, junk, [": not a readable tar archive: not a gzip file"])
    r = cli("validate", guarded_tmp / "nothing.tar.gz")
    assert (r.code, r.err) == (2, f"audit: error: {guarded_tmp / 'nothing.tar.gz'}: no such file or directory\n")


# --------------------------------------------------------------------------- a 2 GB line, in bounded memory

# The peak is this process's own: VmHWM, the high-water mark of the memory map that exec made. Not
# ru_maxrss: Linux carries the pre-exec map's high-water mark into it, and subprocess's vfork shares the
# parent's map, so it reported the pytest worker's peak (480-600 MiB late in a full run), not audit's.
_MEASURE = textwrap.dedent("""
    import sys
    from audit.cli import main
    code = main(sys.argv[1:])
    with open("/proc/self/status", encoding="ascii") as f:
        peak_kib = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    print(f"exit={code} peak_kib={peak_kib}")
""")


def _measured(*args) -> tuple[int, int, str, str]:
    """Run `audit ARGS` in a fresh interpreter: exit code, peak RSS in bytes, stdout, stderr."""
    proc = subprocess.run([sys.executable, "-c", _MEASURE, *map(str, args)], capture_output=True, text=True,
                          timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    *out, measure = proc.stdout.splitlines()
    exit_code, peak = measure.split()
    return int(exit_code.split("=")[1]), int(peak.split("=")[1]) * 1024, "".join(x + "\n" for x in out), proc.stderr


def test_the_measured_peak_is_the_commands_own_not_the_test_processs():
    # A test process holding 512 MiB (as a pytest worker late in a full run does) must not raise the peak measured
    # for a command it starts: ru_maxrss would report it, VmHWM does not.
    held = bytearray(512 * 1024**2)
    held[::4096] = b"\x01" * len(held[::4096])  # touched: resident, not just reserved
    try:
        code, peak, out, _ = _measured("--version")
    finally:
        del held
    assert (code, out) == (0, f"audit {__version__}\n")
    assert peak < 200 * 1024**2, f"peak RSS {peak / 1024**2:.0f} MiB for audit --version"


def _sparse_line_file(path: Path, head: bytes, size: int, tail: bytes) -> Path:
    # A 2 GB line costs no disk: the middle is a hole that reads as NUL bytes.
    with open(path, "wb") as f:
        f.write(head)
        f.seek(size)
        f.write(tail)
    return path


@pytest.fixture
def sparse_dir(tmp_path):
    """Where a sparse file reads fast: tmpfs maps holes to the zero page, while a disk file system
    may spend seconds filling the page cache with zeros on the first read."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        with tempfile.TemporaryDirectory(dir=shm, prefix="audit-test-") as d:
            yield Path(d)
    else:
        yield tmp_path


@pytest.mark.slow
def test_two_gigabyte_line_is_streamed_not_slurped(cli, sparse_dir):
    tmp_path = sparse_dir
    size = 2 * 1024**3
    src = _sparse_line_file(tmp_path / "huge.jsonl", GOOD[0] + b'\n{"item_id":"q2","response":"', size,
                            b'"}\n' + GOOD[1] + b"\n")
    line_bytes = size + 3 - (len(GOOD[0]) + 1)
    out = tmp_path / "out"
    code, peak, _, err = _measured("pack", out, "--responses", src)
    assert code == 2
    assert err == f"audit: error: {src}: row 2: line is {line_bytes:,} bytes, over the 67,108,864-byte limit\n"
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["huge.jsonl"]
    assert peak < 400 * 1024**2, f"peak RSS {peak / 1024**2:.0f} MiB reading a 2 GiB line"

    # The same line inside a package: validate reports it, also in bounded memory.
    pkg = _good_package(cli, tmp_path)
    os.replace(src, pkg / "responses.jsonl")
    code, peak, out, err = _measured("validate", pkg)
    assert (code, err) == (1, "invalid: 4 problems\n")  # the line; and size, sha256, row count differ
    assert (f"{pkg}/responses.jsonl: row 2: line is {line_bytes:,} bytes, over the 67,108,864-byte limit"
            in out.splitlines())
    assert peak < 400 * 1024**2, f"peak RSS {peak / 1024**2:.0f} MiB validating a 2 GiB line"


def test_lone_surrogate_escape_is_a_row_error_not_a_crash(cli, tmp_path):
    """JSON may escape a lone surrogate (\\ud800), which no UTF-8 file can hold: refused, one line."""
    src = tmp_path / "r.jsonl"
    src.write_text('{"item_id":"a","response":"x \\ud800 y"}\n{"item_id":"b","response":"ok \\ud83d\\ude00"}\n')
    r = cli("pack", tmp_path / "p", "--responses", src)
    assert (r.code, r.out) == (2, "")
    assert r.err == f"audit: error: {src}: row 1: string has a lone surrogate \\ud800: not valid Unicode\n"
    assert not (tmp_path / "p").exists()
