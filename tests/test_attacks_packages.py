"""Attacks on raw packages (issue 11): bombs, swapped files, forged names and formats.

Each test performs its attack and passes only because the defence holds; see tests/attacks.py.
Bombs are built in milliseconds (repeated gzip members) and run in a jailed process whose
files cannot grow past a few MiB (RLIMIT_FSIZE), so a defence that extracted first fails with
EFBIG instead of filling the disk; timeouts bound the attacks that used to run for minutes.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import unicodedata
from pathlib import Path

import pytest
from tests.attack_tools import MIB, ROW, audit_jailed, gzip_repeated, manifest, many_empty_members_tar_gz, \
    repin, sha256, swap_for_fifo, tar_gz, write_package
from tests.attacks import attack
from tests.builders import make_package

import audit.packages.read as pkg_read


def _lines_ok(text: str, prefix: str) -> None:
    """Every output line is a finding about `prefix` or the closing count: nothing forged, no traceback."""
    assert "Traceback" not in text
    for line in text.splitlines():
        assert line.startswith((prefix, "invalid:", "audit: error:")), f"forged or stray line: {line!r}"


# --------------------------------------------------------------------------- archive bombs


@attack("pkg.tar-bomb")
def test_tar_bomb_member_larger_than_declared_is_refused_before_extraction(tmp_path):
    m = manifest([{"path": "responses.jsonl", "data": ROW, "rows": 1}])
    bomb = tmp_path / "bomb.tar.gz"
    bomb.write_bytes(tar_gz([("manifest.json", json.dumps(m).encode()), ("responses.jsonl", 64 * MIB)]))
    assert bomb.stat().st_size < MIB
    r = audit_jailed("validate", bomb, max_file_bytes=4 * MIB, timeout=60)
    assert r.returncode == 1, r.stderr
    assert "File too large" not in r.stdout + r.stderr  # nothing was extracted past 4 MiB
    assert f"{bomb}:responses.jsonl: tar member is 67,108,864 bytes, manifest.json says {len(ROW)}" in r.stdout
    _lines_ok(r.stdout + r.stderr, f"{bomb}")


@attack("pkg.tar-manifest-last")
def test_tar_bomb_before_the_manifest_stops_at_the_cap(tmp_path):
    m = manifest([{"path": "responses.jsonl", "data": ROW, "rows": 1}])
    bomb = tmp_path / "bomb.tar.gz"
    bomb.write_bytes(tar_gz([("responses.jsonl", 64 * MIB), ("manifest.json", json.dumps(m).encode())]))
    setup = "import audit.packages.validate as v; v.MAX_BYTES_BEFORE_MANIFEST = 2 << 20"
    r = audit_jailed("validate", bomb, max_file_bytes=4 * MIB, setup=setup, timeout=60)
    assert r.returncode == 1, r.stderr
    assert "File too large" not in r.stdout + r.stderr
    assert (f"{bomb}:responses.jsonl: members before manifest.json pass the 2,097,152-byte limit for "
            f"members read before it (write manifest.json first: `audit bundle` does)") in r.stdout
    _lines_ok(r.stdout + r.stderr, f"{bomb}")


@pytest.mark.slow
@attack("pkg.tar-many-members")
@pytest.mark.parametrize("manifest_first", [True, False], ids=["manifest-first", "manifest-last"])
def test_two_hundred_thousand_empty_members_are_refused_in_seconds(tmp_path, manifest_first):
    m = json.dumps(manifest([{"path": "responses.jsonl", "data": ROW, "rows": 1}])).encode()
    first = [("manifest.json", m), ("responses.jsonl", ROW)] if manifest_first else [("responses.jsonl", ROW)]
    data = many_empty_members_tar_gz(200_000, first)
    if not manifest_first:  # the manifest after the 200,000 members
        import gzip as gz

        body = gz.decompress(data)[:-1024]
        from tests.attack_tools import tar_header

        body += tar_header("manifest.json", len(m)) + m + b"\0" * (-len(m) % 512) + b"\0" * 1024
        data = gz.compress(body, compresslevel=1, mtime=0)
    tgz = tmp_path / "many.tar.gz"
    tgz.write_bytes(data)
    # A smaller cap before the manifest keeps the test short (the check is the same at 10,000).
    setup = "import audit.packages.validate as v; v.MAX_MEMBERS_BEFORE_MANIFEST = 1000"
    r = audit_jailed("validate", tgz, setup=setup, timeout=30)  # quadratic took minutes
    assert r.returncode == 1, r.stderr
    _lines_ok(r.stdout + r.stderr, f"{tgz}")
    assert len(r.stdout.splitlines()) <= 25  # findings are capped, not 200,000 lines
    if manifest_first:
        assert f"{tgz}:m0000000: file is not listed in manifest.json" in r.stdout
    else:
        assert "members before manifest.json pass the 1,000-member limit" in r.stdout


@attack("pkg.tar-duplicate-member")
@pytest.mark.parametrize("twice", ["responses.jsonl", "manifest.json"])
def test_a_member_twice_in_a_tarball_is_refused(tmp_path, twice):
    other = b'{"item_id":"q1","response":"The answer is (C)."}\n'
    m = manifest([{"path": "responses.jsonl", "data": ROW, "rows": 1}])
    members = [("manifest.json", json.dumps(m).encode()), ("responses.jsonl", ROW)]
    members.append((twice, other if twice == "responses.jsonl" else json.dumps(
        manifest([{"path": "responses.jsonl", "data": other, "rows": 1}])).encode()))
    tgz = tmp_path / "twice.tar.gz"
    tgz.write_bytes(tar_gz(members))
    r = audit_jailed("validate", tgz, timeout=60)
    assert r.returncode == 1
    assert f"{tgz}:{twice}: tar member appears twice (readers would disagree on which copy counts)" in r.stdout


@attack("pkg.gz-rows-bomb")
def test_gz_repeating_a_valid_row_stops_at_the_manifests_rows(tmp_path):
    chunk = ROW * (MIB // len(ROW))
    data = gzip_repeated(chunk, 8192)  # 8 GiB of rows, ~10 MB on disk
    pkg = write_package(tmp_path / "pkg", {"responses.jsonl.gz": data}, rows={"responses.jsonl.gz": 1})
    r = audit_jailed("validate", pkg, timeout=30)  # reading 8 GiB of rows took minutes
    assert r.returncode == 1, r.stderr
    assert f"{pkg}/responses.jsonl.gz: field rows: has more lines than the 1 rows manifest.json says" in r.stdout
    _lines_ok(r.stdout + r.stderr, f"{pkg}")


@attack("pkg.gz-blank-lines")
def test_gz_of_blank_lines_stops_at_a_decompressed_size_bound(tmp_path):
    data = gzip_repeated(b"\n" * MIB, 8192, head=ROW)  # a row, then 8 GiB of newlines
    pkg = write_package(tmp_path / "pkg", {"responses.jsonl.gz": data}, rows={"responses.jsonl.gz": 1})
    r = audit_jailed("validate", pkg, timeout=30)
    assert r.returncode == 1, r.stderr
    # A blank line counts as a line (and is a row error): the lines stop at the manifest's rows.
    assert f"{pkg}/responses.jsonl.gz: field rows: has more lines than the 1 rows manifest.json says" in r.stdout


@attack("pkg.gz-blank-lines")
def test_gz_with_its_declared_size_reads_and_refuses_one_byte_more(tmp_path):
    """Packages audit writes declare the decompressed size of a .gz file; one byte past it is refused."""
    from audit.fileio import jsonl_source
    from audit.pack import Table, build_package

    src = tmp_path / "r.jsonl"
    src.write_bytes(ROW)
    build_package(tmp_path / "pkg", kind="responses", tables=[Table("responses.jsonl.gz", "response_row.v1",
                                                                    jsonl_source(src))])
    m = json.loads((tmp_path / "pkg" / "manifest.json").read_text())
    (entry,) = m["files"]
    plain = gzip.decompress((tmp_path / "pkg" / "responses.jsonl.gz").read_bytes())
    assert entry["uncompressed_bytes"] == len(plain)
    data = gzip.compress(plain[:-1] + b" " * 10 + b"\n", mtime=0)  # ten bytes more on the same line
    (tmp_path / "pkg" / "responses.jsonl.gz").write_bytes(data)
    entry.update(sha256=sha256(data), bytes=len(data))
    (tmp_path / "pkg" / "manifest.json").write_text(json.dumps(m))
    r = audit_jailed("validate", tmp_path / "pkg")
    assert r.returncode == 1
    assert (f"responses.jsonl.gz: field uncompressed_bytes: decompresses to more than the {len(plain)} bytes "
            f"manifest.json says") in r.stdout


@attack("pkg.huge-line")
def test_an_80_mib_line_is_a_row_error(tmp_path):
    line = b'{"item_id":"q1","response":"' + b"x" * (80 * MIB) + b'"}\n'
    pkg = write_package(tmp_path / "pkg", {"responses.jsonl": line}, rows={"responses.jsonl": 1})
    r = audit_jailed("validate", pkg, timeout=60)
    assert r.returncode == 1
    assert f"{pkg}/responses.jsonl: row 1: line is {len(line):,} bytes, over the 67,108,864-byte limit" in r.stdout


# --------------------------------------------------------------------------- TOCTOU


def _mc_packages(tmp_path: Path, letter: str, name: str = "resp") -> tuple[Path, Path]:
    items = tmp_path / "items"
    if not items.exists():
        make_package(items, items=[{"item_id": f"q{i}", "reference": "A", "num_choices": 4} for i in range(20)])
    resp = make_package(tmp_path / name, responses=[
        {"item_id": f"q{i}", "response": f"The answer is ({letter}).", "finish_reason": "stop"} for i in range(20)])
    return resp, items


def _swapped_rows(pkg: Path) -> bytes:
    """Rows that grade every item correct, the same length as the package's own (all wrong)."""
    data = (pkg / "responses.jsonl").read_bytes()
    return data.replace(b"(B)", b"(A)")


def _after_validating(monkeypatch, root: Path, act) -> None:
    """`act()` runs just after package `root` is validated: the window an attacker races for."""
    original = pkg_read.validate_tree

    def validate_then_act(path, *a, **k):
        out = original(path, *a, **k)
        if Path(path) == root:
            act()
        return out

    monkeypatch.setattr(pkg_read, "validate_tree", validate_then_act)


@attack("pkg.toctou-grade")
@pytest.mark.parametrize("how", ["rename", "in-place"])
def test_grade_refuses_a_file_swapped_after_validation(tmp_path, monkeypatch, cli, how):
    resp, items = _mc_packages(tmp_path, "B")
    forged = _swapped_rows(resp)

    def swap():
        target = resp / "responses.jsonl"
        if how == "rename":
            (resp / "new").write_bytes(forged)
            os.replace(resp / "new", target)
        else:
            with open(target, "r+b") as f:
                f.write(forged)

    _after_validating(monkeypatch, resp, swap)
    out = tmp_path / "results.json"
    r = cli("grade", resp, "--items", items, "--benchmark", "choice", "-o", out)
    if r.code == 0:  # graded: then it must have graded the validated text (all wrong), never the swapped one
        rows = json.loads(out.read_text())["items"]
        assert {x["verdict"] for x in rows} == {"incorrect"}
    else:
        assert r.code == 2 and not out.exists()
        assert r.err == f"audit: error: {resp}/responses.jsonl: changed while being read: sha256 is " \
                        f"{sha256(forged)}, manifest.json says {sha256(forged.replace(b'(A)', b'(B)'))}\n"


@attack("pkg.toctou-grade")
def test_grade_with_a_thread_swapping_the_file_never_grades_the_other_text(tmp_path):
    import threading

    from audit.errors import AuditError
    from audit.grade import grade_package
    from audit.specs import resolve_config

    resp, items = _mc_packages(tmp_path, "B")
    good = (resp / "responses.jsonl").read_bytes()
    forged = _swapped_rows(resp)
    stop = threading.Event()

    def swapper():
        i = 0
        while not stop.is_set():
            tmp = resp / f".swap{i % 2}"
            tmp.write_bytes(forged if i % 2 else good)
            os.replace(tmp, resp / "responses.jsonl")
            i += 1

    t = threading.Thread(target=swapper)
    t.start()
    outcomes = set()
    try:
        for _ in range(30):
            try:
                g = grade_package(resp, resolve_config("choice"), items=items)
            except AuditError:
                outcomes.add("refused")
                continue
            outcomes.add("graded")
            assert set(g.columns["verdict"]) == {"incorrect"}, "graded the swapped text under the validated digest"
    finally:
        stop.set()
        t.join()
    assert outcomes  # at least one run happened


@attack("pkg.hardlink")
def test_a_hard_link_rewritten_through_its_other_name_is_refused(tmp_path, monkeypatch, cli):
    resp, items = _mc_packages(tmp_path, "B")
    outside = tmp_path / "outside.jsonl"
    os.link(resp / "responses.jsonl", outside)  # the package's file has a second name outside it
    forged = _swapped_rows(resp)

    def rewrite():
        with open(outside, "r+b") as f:
            f.write(forged)

    _after_validating(monkeypatch, resp, rewrite)
    out = tmp_path / "results.json"
    r = cli("grade", resp, "--items", items, "--benchmark", "choice", "-o", out)
    assert r.code == 2 and not out.exists()
    assert "changed while being read" in r.err


@pytest.mark.slow
@attack("pkg.fifo-swap")
def test_a_file_swapped_for_a_fifo_after_validation_is_refused_not_waited_on(tmp_path):
    resp, items = _mc_packages(tmp_path, "B")
    out = tmp_path / "results.json"
    r = audit_jailed("grade", resp, "--items", items, "--benchmark", "choice", "-o", out,
                     setup=swap_for_fifo("responses.jsonl", "resp"), timeout=30)  # a reader that opened the FIFO would wait for a writer forever
    assert r.returncode == 2 and not out.exists()
    assert f"{resp}/responses.jsonl: changed while being read: unreadable: not a regular file" in r.stderr


@attack("pkg.toctou-every-reader")
def test_validate_reports_what_it_hashed(tmp_path, monkeypatch, cli):
    import audit.packages.layout as layout

    resp, _ = _mc_packages(tmp_path, "B")
    broken = (resp / "responses.jsonl").read_bytes().replace(b'"sample":0', b'"sample":-1')
    original = layout.open_regular
    swapped = []

    def open_then_swap(path, *a, **k):
        # The file is replaced the moment validate has opened it: a separate hash and row check would
        # describe two different files (the rows of one, the digest of the other).
        got = original(path, *a, **k)
        if Path(path).name == "responses.jsonl" and not swapped:
            (resp / "new").write_bytes(broken)
            os.replace(resp / "new", resp / "responses.jsonl")
            swapped.append(True)
        return got

    monkeypatch.setattr(layout, "open_regular", open_then_swap)
    r = cli("validate", resp)
    assert swapped
    # One pass: the rows checked are the bytes hashed (the ones it opened), so the verdict is "valid"; a
    # report of the swapped file's rows (sample -1) without a digest mismatch would mix two files.
    assert r.code == 0, r.out
    assert cli("validate", resp).code == 1  # the file now on disk is refused by the next reader


@attack("pkg.toctou-every-reader")
def test_reproduce_refuses_a_package_swapped_after_its_digest_was_checked(tmp_path, monkeypatch, cli):
    import audit.packages as packages

    resp, items = _mc_packages(tmp_path, "B")
    out = tmp_path / "results.json"
    assert cli("grade", resp, "--items", items, "--benchmark", "choice", "-o", out).code == 0
    other, _ = _mc_packages(tmp_path, "A", name="other")
    original = packages.load_manifest
    swapped = []

    def load_then_swap(root, *a, **k):
        got = original(root, *a, **k)
        if Path(root) == resp and not swapped:
            os.rename(resp, tmp_path / "resp.orig")
            os.rename(other, resp)
            swapped.append(True)
        return got

    monkeypatch.setattr(packages, "load_manifest", load_then_swap)
    r = cli("reproduce", out)
    if swapped:
        assert r.code == 2, r.out  # not "differs": the package graded is not the one recorded
        assert "package content differs from the one graded" in r.err
    else:
        assert r.code == 0


def _verdicts(tmp_path: Path, name: str, benchmark: str, verdict: str, correct: range | None = None) -> Path:
    """Ten rows, all `verdict`, or correct for the items in `correct` and incorrect for the rest."""
    from tests.verdict_helpers import make_verdict_file, write_verdict_file

    def v(i: int) -> str:
        return verdict if correct is None else "correct" if i in correct else "incorrect"

    rows = [{"item_id": f"q{i}", "sample": 0, "verdict": v(i), "answer": "A" if v(i) == "correct" else "B",
             "reference": "A"} for i in range(10)]
    return write_verdict_file(tmp_path / name, make_verdict_file(rows, benchmark=benchmark))


@attack("pkg.toctou-every-reader")
def test_diff_reads_header_and_rows_from_the_same_bytes(tmp_path, monkeypatch):
    import audit.verdicts.read as verdicts
    from audit.diff import diff_files

    # Same counts, so the same summary and a header of the same length: only the benchmark name tells them apart.
    old = _verdicts(tmp_path, "old.json", "bench_a", "", correct=range(0, 5))
    other = _verdicts(tmp_path, "other.json", "bench_b", "", correct=range(5, 10))
    new = _verdicts(tmp_path, "new.json", "bench_a", "", correct=range(0, 5))
    original = getattr(verdicts, "_read_head", None)
    if original is not None:
        def head_then_swap(p, *a, **k):
            got = original(p, *a, **k)
            if Path(p) == old and other.exists():
                os.replace(other, old)
            return got

        monkeypatch.setattr(verdicts, "_read_head", head_then_swap)
    result = diff_files(old, new)
    if result.old.benchmark == "bench_a":  # OLD's header: then OLD's rows, which equal NEW's
        assert result.changed.num_rows == 0, "the header of one file with the rows of another"
    else:
        assert result.changed.num_rows == 10


@attack("pkg.toctou-every-reader")
def test_release_names_the_digest_of_the_verdict_file_it_published(tmp_path, monkeypatch, cli):
    import audit.release.build as release

    old = _verdicts(tmp_path, "results.json", "bench_a", "incorrect")
    other = _verdicts(tmp_path, "other.json", "bench_a", "correct")
    original_bytes = old.read_bytes()
    original = getattr(release, "sha256_file", None)
    if original is not None:
        def swap_then_hash(p, *a, **k):
            if Path(p) == old:
                os.replace(other, old)
            return original(p, *a, **k)

        monkeypatch.setattr(release, "sha256_file", swap_then_hash)
    r = cli("release", old, "-o", tmp_path / "rel", "--public")
    assert r.code == 0, r.err
    info = json.loads((tmp_path / "rel" / "release.json").read_text())
    published = {json.loads(x)["verdict"] for x in (tmp_path / "rel" / "verdicts.jsonl").read_text().splitlines()}
    assert published == {"incorrect"}
    assert info["verdict_file_sha256"] == sha256(original_bytes), "names a file whose rows it did not publish"


@attack("pkg.toctou-every-reader")
def test_verify_release_checks_the_bytes_the_manifest_pins(tmp_path, monkeypatch, cli):
    import audit.release.verify as release

    items = make_package(tmp_path / "items", items=[
        {"item_id": "p1", "reference": "A", "num_choices": 4, "protected": True,
         "question": "Which organelle converts glucose into usable chemical energy for the cell?"},
        {"item_id": "q1", "reference": "B", "num_choices": 4}])
    resp = make_package(tmp_path / "resp", responses=[{"item_id": "p1", "response": "It is (A)."},
                                                      {"item_id": "q1", "response": "It is (B)."}])
    from tests.verdict_helpers import make_verdict_file, package, write_verdict_file

    with release.open_package(items) as ip, release.open_package(resp) as rp:
        header = {"items_package": package(ip.digest, ip.manifest.package_id, "items"),
                  "responses_package": package(rp.digest, rp.manifest.package_id, "resp")}
    rows = [{"item_id": "p1", "sample": 0, "verdict": "correct", "answer": "A", "reference": "A"},
            {"item_id": "q1", "sample": 0, "verdict": "correct", "answer": "B", "reference": "B"}]
    vf = write_verdict_file(tmp_path / "results.json", make_verdict_file(rows, **header))
    rel = tmp_path / "rel"
    assert cli("release", vf, "-o", rel, "--public-text").code == 0  # public text: a free-text file to edit
    # The published release is edited to leak the question and re-pinned; verify-release must see it,
    # even when the clean file is put back while it reads.
    clean = (rel / "public_text.jsonl").read_bytes()
    leaky = clean.replace(b'"reason":"test row: correct"',
                          b'"reason":"Which organelle converts glucose into usable chemical energy"')
    (rel / "public_text.jsonl").write_bytes(leaky)
    m = json.loads((rel / "manifest.json").read_text())
    for f in m["files"]:
        if f["path"] == "public_text.jsonl":
            f.update(sha256=sha256(leaky), bytes=len(leaky))
    (rel / "manifest.json").write_text(json.dumps(m, indent=2))
    original = release.load_package  # verify-release opens the release with it (validated once)
    swapped: list[Path] = []

    def open_then_swap(path, *a, **k):
        pkg = original(path, *a, **k)
        if Path(path) == rel:
            (rel / "tmp").write_bytes(clean)
            os.replace(rel / "tmp", rel / "public_text.jsonl")
            swapped.append(path)
        return pkg

    monkeypatch.setattr(release, "load_package", open_then_swap)
    r = cli("verify-release", rel, "--items", items, "--responses", resp)
    assert r.code == 1, r.out
    assert "verified:" not in r.out
    assert swapped  # the clean file was put back while verify-release read


# --------------------------------------------------------------------------- links and names


@attack("pkg.symlink")
def test_symlink_inside_a_package_is_refused(tmp_path, cli):
    pkg = write_package(tmp_path / "pkg", {"responses.jsonl": ROW})
    os.symlink("/etc/passwd", pkg / "passwd")
    r = cli("validate", pkg)
    assert r.code == 1
    assert f"{pkg}/passwd: symbolic link (to /etc/passwd) is not allowed in a package" in r.out


@attack("pkg.listed-twice")
def test_a_file_listed_twice_is_refused(tmp_path, cli):
    pkg = write_package(tmp_path / "pkg", {"responses.jsonl": ROW})
    m = json.loads((pkg / "manifest.json").read_text())
    m["files"].append(dict(m["files"][0]))
    (pkg / "manifest.json").write_text(json.dumps(m))
    r = cli("validate", pkg)
    assert r.code == 1
    assert f"{pkg}/responses.jsonl: listed twice in manifest.json" in r.out


@attack("pkg.case-collision")
def test_paths_equal_under_case_folding_are_refused(tmp_path, cli):
    other = b'{"item_id":"q2","response":"The answer is (C)."}\n'
    pkg = write_package(tmp_path / "pkg", {"responses.jsonl": ROW, "Responses.jsonl": other})
    r = cli("validate", pkg)
    assert r.code == 1
    assert (f"{pkg}/Responses.jsonl: path collides with responses.jsonl where names are compared without case "
            f"or Unicode normalization (macOS, Windows)") in r.out


@attack("pkg.case-collision")
def test_paths_equal_once_windows_drops_trailing_dots_are_refused(tmp_path, cli):
    pkg = write_package(tmp_path / "pkg", {"responses.jsonl": ROW})
    (pkg / "notes.txt").write_text("one")
    (pkg / "notes.txt.").write_text("two")
    m = json.loads((pkg / "manifest.json").read_text())
    for name in ("notes.txt", "notes.txt."):
        data = (pkg / name).read_bytes()
        m["files"].append({"path": name, "sha256": sha256(data), "bytes": len(data), "rows": None, "schema": "text"})
    (pkg / "manifest.json").write_text(json.dumps(m))
    r = cli("validate", pkg)
    assert r.code == 1 and f"{pkg}/notes.txt.: path collides with notes.txt" in r.out


@attack("pkg.unicode-collision")
def test_paths_equal_under_unicode_normalization_are_refused(tmp_path, cli):
    nfc, nfd = unicodedata.normalize("NFC", "café.jsonl"), unicodedata.normalize("NFD", "café.jsonl")
    assert nfc != nfd
    other = b'{"item_id":"q2","response":"The answer is (C)."}\n'
    pkg = write_package(tmp_path / "pkg", {nfc: ROW, nfd: other})
    r = cli("validate", pkg)
    assert r.code == 1
    assert "path collides with" in r.out


# --------------------------------------------------------------------------- formats


@attack("fmt.dup-key-manifest")
def test_duplicate_key_in_manifest_is_refused(tmp_path, cli):
    pkg = write_package(tmp_path / "pkg", {"responses.jsonl": ROW})
    text = (pkg / "manifest.json").read_text()
    (pkg / "manifest.json").write_text(text.replace('"kind": "responses",', '"kind": "items", "kind": "responses",'))
    r = cli("validate", pkg)
    assert r.code == 1
    assert r.out == f"{pkg}/manifest.json: field kind: duplicate key in a JSON object\n"


@attack("fmt.dup-key-row")
def test_duplicate_key_in_a_row_is_refused(tmp_path, cli):
    row = b'{"item_id":"q1","response":"The answer is (B).","response":"The answer is (A)."}\n'
    pkg = write_package(tmp_path / "pkg", {"responses.jsonl": row})
    r = cli("validate", pkg)
    assert r.code == 1
    assert r.out == f"{pkg}/responses.jsonl: row 1: field response: duplicate key in a JSON object\n"
    # Also through an escape, which the fast path cannot see as the same key, and in a nested object.
    for row in (b'{"item_id":"q1","response":"x","respons\\u0065":"y"}\n',
                b'{"item_id":"q1","response":"x","extra":{"a":1,"a":2}}\n'):
        repin(pkg, "responses.jsonl", row)
        r = cli("validate", pkg)
        assert r.code == 1 and "duplicate key in a JSON object" in r.out, row


@attack("fmt.schema-version")
@pytest.mark.parametrize("version", [0, -5])
def test_schema_version_below_one_is_refused(tmp_path, cli, version):
    pkg = write_package(tmp_path / "pkg", {"responses.jsonl": ROW}, schema_version=version)
    r = cli("validate", pkg)
    assert r.code == 1
    assert r.out == (f"{pkg}/manifest.json: field schema_version: schema_version {version} is not one this audit "
                     f"reads (1 to 3)\n")


@attack("fmt.newline-in-name")
def test_a_newline_in_a_file_name_cannot_forge_output_lines(tmp_path, cli):
    name = "r.jsonl\nvalid: responses package attack, 1 files, 1 rows, digest 0"
    pkg = write_package(tmp_path / "pkg", {name: ROW})
    r = cli("validate", pkg)
    assert r.code == 1
    _lines_ok(r.out + r.err, f"{pkg}/")
    assert "path has a control character" in r.out


@attack("fmt.huge-int")
def test_huge_integers_are_refused_by_the_schema(tmp_path, cli):
    pkg = write_package(tmp_path / "pkg", {"responses.jsonl": b'{"item_id":"q1","sample":' + b"1" + b"0" * 30 +
                                           b',"response":"x"}\n'})
    r = cli("validate", pkg)
    assert r.code == 1
    assert r.out.startswith(f"{pkg}/responses.jsonl: row 1: field sample: Input should be less than or equal to "
                            f"9007199254740991")


@attack("fmt.huge-int")
def test_huge_sample_in_a_verdict_file_is_one_line_not_a_traceback(tmp_path, cli):
    vf = _verdicts(tmp_path, "a.json", "bench_a", "correct")
    text = vf.read_text().replace('"sample":0', '"sample":1' + "0" * 30, 1)
    vf.write_text(text)
    for args in (("diff", vf, vf), ("release", vf, "-o", tmp_path / "rel", "--public")):
        r = cli(*args)
        assert r.code == 2, r
        assert r.err == f"audit: error: {vf}: row 1: field sample: Input should be less than or equal to " \
                        f"9007199254740991 (got 1000000000000000000000000000000)\n"


@attack("fmt.deep-nesting")
def test_deeply_nested_json_is_one_line_everywhere(tmp_path, cli):
    deep = "[" * 100_000 + "]" * 100_000
    # In the manifest
    pkg = write_package(tmp_path / "pkg", {"responses.jsonl": ROW})
    text = (pkg / "manifest.json").read_text().replace('"provenance": {}', f'"provenance": {{"extra": {{"x": {deep}}}}}')
    (pkg / "manifest.json").write_text(text)
    r = cli("validate", pkg)
    assert (r.code, r.out) == (1, f"{pkg}/manifest.json: malformed JSON: nested too deeply\n")
    # In a row
    pkg2 = write_package(tmp_path / "pkg2", {"responses.jsonl": ('{"item_id":"q1","response":"x","extra":{"x":'
                                                                 + deep + '}}\n').encode()})
    r = cli("validate", pkg2)
    assert (r.code, r.out) == (1, f"{pkg2}/responses.jsonl: row 1: malformed JSON: nested too deeply\n")
    # In a verdict file
    vf = _verdicts(tmp_path, "a.json", "bench_a", "correct")
    vf.write_text(vf.read_text().replace('"detail":{}', '"detail":{"x":' + deep + "}", 1))
    r = audit_jailed("diff", vf, vf)  # pyarrow's JSON reader crashed (SIGSEGV) on this
    assert (r.returncode, r.stderr) == (2, f"audit: error: {vf}: row 1: malformed JSON: nested too deeply\n")


@attack("fmt.nan")
def test_nan_in_a_verdict_file_is_refused(tmp_path, cli):
    vf = _verdicts(tmp_path, "a.json", "bench_a", "correct")
    text = vf.read_text()
    vf.write_text(re.sub(r'"value": [0-9.]+', '"value": NaN', text, count=1))
    r = cli("diff", vf, vf)
    assert (r.code, r.err) == (2, f"audit: error: {vf}: not a JSON verdict file: malformed JSON: NaN is not valid "
                                  f"JSON\n")


@attack("fmt.bom")
def test_byte_order_mark_before_manifest_is_one_line(tmp_path, cli):
    pkg = write_package(tmp_path / "pkg", {"responses.jsonl": ROW})
    (pkg / "manifest.json").write_bytes(b"\xef\xbb\xbf" + (pkg / "manifest.json").read_bytes())
    r = cli("validate", pkg)
    assert r.code == 1
    assert len(r.out.splitlines()) == 1 and r.out.startswith(f"{pkg}/manifest.json: malformed JSON")


@attack("fmt.dup-key-verdict-file")
def test_duplicate_keys_in_a_verdict_file_are_refused(tmp_path, cli):
    vf = _verdicts(tmp_path, "a.json", "bench_a", "correct")
    text = vf.read_text()
    vf.write_text(text.replace('"benchmark": "bench_a",', '"benchmark": "bench_b",\n  "benchmark": "bench_a",'))
    r = cli("diff", vf, vf)
    assert (r.code, r.err) == (2, f"audit: error: {vf}: field benchmark: duplicate key in a JSON object\n")
    vf.write_text(text.replace('"verdict":"correct"', '"verdict":"incorrect","verdict":"correct"', 1))
    r = cli("diff", vf, vf)
    assert (r.code, r.err) == (2, f"audit: error: {vf}: row 1: field verdict: duplicate key in a JSON object\n")


@attack("fmt.control-chars-in-errors")
def test_a_tar_member_name_with_a_newline_cannot_forge_lines(tmp_path):
    m = manifest([{"path": "responses.jsonl", "data": ROW, "rows": 1}])
    tgz = tmp_path / "evil.tar.gz"
    tgz.write_bytes(tar_gz([("manifest.json", json.dumps(m).encode()), ("responses.jsonl", ROW),
                            ("x\nvalid: responses package attack, 1 files", b"")]))
    r = audit_jailed("validate", tgz)
    assert r.returncode == 1
    _lines_ok(r.stdout + r.stderr, f"{tgz}")
    assert "\\n" in r.stdout
