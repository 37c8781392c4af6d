"""Round 3 attacks on what audit writes and what it calls the same (issue 19): `--force` replacing a
user's folder, two writers racing for one output name, a package identity that ignored its manifest,
trailing archives in a tarball, recorded fields `reproduce` copied unchecked, a zero tolerance
that was not exact, and claims arithmetic that crashed.

Each test performs its attack and passes only because the defence holds; see tests/attacks.py.
"""

from __future__ import annotations

import gzip
import io
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from tests.builders import make_package
from tests.attacks import attack
from tests.test_claims_ledger import MINI, SECOND, refused, write
from tests.test_claims_ledger import mini  # noqa: F401  (fixture)

from audit.claims.ledger import Tolerance
from audit.packages import bundle


# --------------------------------------------------------------------------- claims: tolerance and arithmetic


@attack("claims.zero-tolerance-slack")
@pytest.mark.parametrize("recorded, recomputed", [
    (10_000_000_007, 10_000_000_000),   # the count
    (2 ** 52 + 1, 2 ** 52),             # counts near a float's limit
    (1e15 + 1, 1e15),
])
def test_zero_tolerance_is_exact_for_counts(recorded, recomputed):
    assert not Tolerance(absolute=0).allows(float(recorded), float(recomputed))
    assert not Tolerance(relative=0).allows(float(recorded), float(recomputed))
    assert Tolerance(absolute=0).allows(float(recorded), float(recorded))


@attack("claims.zero-tolerance-slack")
def test_small_tolerances_forgive_only_a_floats_last_bits():
    assert Tolerance(absolute=0).allows(0.1 + 0.2, 0.3)  # one ulp: rounding, not a difference
    assert not Tolerance(absolute=0).allows(1e9 + 0.5, 1e9)
    assert not Tolerance(absolute=1).allows(1e10 + 2, 1e10)  # the slack no longer grows with the value
    assert Tolerance(absolute=1).allows(1e10 + 1, 1e10)
    assert not Tolerance(relative=1e-12).allows(1e6, 1e6 + 1e-5)


@attack("claims.arithmetic-crash")
@pytest.mark.parametrize("expr, message", [
    ("max(5)", "max takes at least 2 arguments (got 1)"),
    ("min(G1)", "min takes at least 2 arguments (got 1)"),
    ("abs(1, 2)", "abs takes 1 argument (got 2)"),
    ("sqrt(G1, 2)", "sqrt takes 1 argument (got 2)"),
    ("log(1, 2, 3)", "log takes 1 argument (got 3)"),
    ("exp()", "exp takes 1 argument (got 0)"),
    ("max(*G1)", "Starred is not allowed (numbers, claim ids, + - * /, parentheses and abs, min, max, sqrt, "
                 "log, exp only)"),
    ("1" * 320, "the number 111111111111111111111111111111… is out of range"),
    ("1e999 - 1e999", "the number 1e999 is out of range"),
    ("True + G1", "Constant is not allowed (numbers, claim ids, + - * /, parentheses and abs, min, max, sqrt, "
                  "log, exp only)"),
])
def test_bad_arithmetic_is_one_line_naming_the_row_and_field(cli, mini, expr, message):  # noqa: F811
    write(mini, MINI + SECOND.format(expr=expr))
    assert refused(cli, "claims.yaml") == f"claims.yaml: line 23: claim G2: field recipe.args.expr: {message}"


# --------------------------------------------------------------------------- tarballs: nothing after the end


def _bundled(tmp_path, name: str, answer: str) -> tuple[Path, bytes]:
    """A bundled package answering `answer`; returns its path and its decompressed tar bytes."""
    src = make_package(tmp_path / name, responses=[{"item_id": "q1", "response": answer}])
    out = tmp_path / f"{name}.tar.gz"
    bundle(src, out)
    return out, gzip.decompress(out.read_bytes())


def _trailing_cases(tmp_path) -> dict[str, bytes]:
    first, tar1 = _bundled(tmp_path, "honest", "A")
    _, tar2 = _bundled(tmp_path, "forged", "B")
    plain = first.read_bytes()
    return {
        "second archive, same stream": gzip.compress(tar1 + tar2, mtime=0),
        "second gzip member": plain + gzip.compress(tar2, mtime=0),
        "second archive after the end blocks' padding": gzip.compress(tar1 + bytes(10240) + tar2, mtime=0),
        "garbage after the gzip stream": plain + b"trailing garbage",
        "garbage after the end blocks": gzip.compress(tar1 + b"x", mtime=0),
        "a small archive right after the first end block": gzip.compress(tar1[:_end_of(tar1)] + bytes(512) + tar2,
                                                                         mtime=0),
    }


def _end_of(tar: bytes) -> int:
    """Offset of the first zero block after the last member (where tarfile stops reading)."""
    with tarfile.open(fileobj=io.BytesIO(tar), mode="r:") as tf:
        tf.getmembers()
        return tf.offset


@attack("pkg.tar-trailing-archive")
def test_a_second_archive_in_the_same_stream_is_refused(tmp_path, cli):
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(_trailing_cases(tmp_path)["second archive, same stream"])
    if shutil.which("tar"):  # what the attack relies on: tar -i unpacks the second archive over the first
        dest = tmp_path / "x"
        dest.mkdir()
        subprocess.run(["tar", "-xzif", str(bad), "-C", str(dest)], check=True)
        assert '"B"' in (dest / "responses.jsonl").read_text()
    r = cli("validate", bad)
    assert r.code == 1, r
    assert r.out.splitlines()[0] == f"{bad}: data after the end of the tar archive (a second archive or "\
                                    "garbage; nothing may follow it)"


@attack("pkg.tar-trailing-data")
@pytest.mark.parametrize("case", ["second gzip member", "second archive after the end blocks' padding",
                                  "garbage after the gzip stream", "garbage after the end blocks",
                                  "a small archive right after the first end block"])
def test_any_data_after_the_archive_is_refused(tmp_path, cli, case):
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(_trailing_cases(tmp_path)[case])
    r = cli("validate", bad)
    assert r.code == 1, r
    first = r.out.splitlines()[0]
    assert first in (f"{bad}: data after the end of the tar archive (a second archive or garbage; nothing may "
                     f"follow it)", f"{bad}: not a readable tar archive: Not a gzipped file (b'tr')"), first


@attack("pkg.tar-trailing-data")
def test_an_honest_bundle_and_zero_padding_still_validate(tmp_path, cli):
    first, tar1 = _bundled(tmp_path, "honest", "A")
    assert cli("validate", first).code == 0
    padded = tmp_path / "padded.tar.gz"
    padded.write_bytes(gzip.compress(tar1 + bytes(65536), mtime=0))  # tar -b 128 pads with zeros
    assert cli("validate", padded).code == 0
    plain = tmp_path / "plain.tar"
    plain.write_bytes(tar1)
    assert cli("validate", plain).code == 0


# --------------------------------------------------------------------------- --force replaces only what audit wrote

RESPONSE = '{"item_id": "q1", "sample": 0, "response": "ANSWER=B"}\n'
MATH_ITEMS = [{"item_id": "q1", "reference": "B"}]


def _jsonl(path: Path) -> Path:
    path.write_text(RESPONSE, encoding="utf-8")
    return path


def _refused_line(r, target: Path, why: str, what: str = "a package that validates, or an empty folder") -> None:
    assert (r.code, r.out) == (2, ""), r
    assert r.err == f"audit: error: {target}: --force replaces only what audit wrote ({what}); not this one: {why}\n"


def _pack(cli, tmp_path, out: Path, *extra: str):
    return cli("pack", out, "--responses", _jsonl(tmp_path / "r.jsonl"), *extra)


@attack("writes.force-user-folder")
def test_pack_force_refuses_a_users_folder(cli, tmp_path):
    out = tmp_path / "paper"
    out.mkdir()
    (out / "draft.tex").write_text("my paper", encoding="utf-8")
    r = _pack(cli, tmp_path, out, "--force")
    _refused_line(r, out, "manifest.json: missing: not an audit package (no manifest.json)")
    assert (out / "draft.tex").read_text(encoding="utf-8") == "my paper"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # nothing left beside it


@attack("writes.force-user-folder")
def test_pack_force_replaces_a_package_or_an_empty_folder(cli, tmp_path):
    out = tmp_path / "pkg"
    assert _pack(cli, tmp_path, out).code == 0
    r = _pack(cli, tmp_path, out)
    assert r.err == f"audit: error: {out}: already exists (use --force to replace it)\n"
    assert _pack(cli, tmp_path, out, "--force", "--benchmark", "mmlu_pro").code == 0
    assert json.loads((out / "manifest.json").read_text())["benchmark"] == "mmlu_pro"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _pack(cli, tmp_path, empty, "--force").code == 0
    assert (empty / "manifest.json").is_file()


@attack("writes.force-package-plus-file")
def test_force_refuses_a_package_holding_a_users_file(cli, tmp_path):
    out = tmp_path / "pkg"
    assert _pack(cli, tmp_path, out).code == 0
    (out / "notes.md").write_text("mine", encoding="utf-8")
    r = _pack(cli, tmp_path, out, "--force")
    _refused_line(r, out, "notes.md: file is not listed in manifest.json")
    assert (out / "notes.md").read_text(encoding="utf-8") == "mine"


@attack("writes.force-symlink")
@pytest.mark.parametrize("to", ["package", "folder", "missing"])
def test_force_refuses_a_symlink(cli, tmp_path, to):
    target = tmp_path / "target"
    if to == "package":
        assert _pack(cli, tmp_path, target).code == 0
    elif to == "folder":
        target.mkdir()
        (target / "draft.tex").write_text("x", encoding="utf-8")
    link = tmp_path / "link"
    link.symlink_to(target)
    r = _pack(cli, tmp_path, link, "--force")
    _refused_line(r, link, "it is a symbolic link")
    assert link.is_symlink()
    assert to == "missing" or any(target.iterdir())
    r = _pack(cli, tmp_path, link)  # without --force a link (even a dangling one) is an existing output
    assert r.err == f"audit: error: {link}: already exists (use --force to replace it)\n"


@attack("writes.force-parent-of-input")
def test_force_refuses_the_folder_that_holds_the_input(cli, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    src = _jsonl(work / "responses.jsonl")
    r = cli("pack", work, "--responses", src, "--force")
    _refused_line(r, work, "manifest.json: missing: not an audit package (no manifest.json)")
    assert src.read_text(encoding="utf-8") == RESPONSE


@attack("writes.force-json-name")
@pytest.mark.parametrize("content", ['{"results": "mine"}', "not json", None])
def test_grade_force_refuses_a_file_that_is_not_a_verdict_file(cli, tmp_path, content):
    pkg = make_package(tmp_path / "p", items=MATH_ITEMS, responses=[{"item_id": "q1", "response": "ANSWER=B"}])
    out = tmp_path / "results.json"
    if content is None:
        out.mkdir()
    else:
        out.write_text(content, encoding="utf-8")
    r = cli("grade", pkg, "--benchmark", "math", "-o", out, "--force")
    assert (r.code, r.out) == (2, ""), r
    assert r.err.startswith(f"audit: error: {out}: --force replaces only what audit wrote (a verdict file); not "
                            f"this one: "), r.err
    assert r.err.count("\n") == 1
    assert out.is_dir() if content is None else out.read_text(encoding="utf-8") == content


@attack("writes.force-json-name")
def test_grade_force_replaces_a_verdict_file(cli, tmp_path):
    pkg = make_package(tmp_path / "p", items=MATH_ITEMS, responses=[{"item_id": "q1", "response": "ANSWER=B"}])
    out = tmp_path / "results.json"
    assert cli("grade", pkg, "--benchmark", "math", "-o", out).code == 0
    assert cli("grade", pkg, "--benchmark", "math", "-o", out, "--force").code == 0
    link = tmp_path / "link.json"
    link.symlink_to(out)
    r = cli("grade", pkg, "--benchmark", "math", "-o", link, "--force")
    assert r.err == (f"audit: error: {link}: --force replaces only what audit wrote (a verdict file); not this "
                     f"one: it is a symbolic link\n")


def _user_folder(tmp_path: Path, name: str = "mine") -> Path:
    d = tmp_path / name
    d.mkdir()
    (d / "draft.tex").write_text("my paper", encoding="utf-8")
    return d


@attack("writes.force-every-writer")
def test_every_package_writer_refuses_a_users_folder(cli, tmp_path):
    from tests.floor_helpers import TINY_LLAMA
    from tests.trace_builders import TraceBuilder, decode_steps

    b = TraceBuilder()
    decode_steps(b, steps=3)
    trace = b.write(tmp_path / "decode.json")

    table = tmp_path / "t.jsonl"
    table.write_text('{"item_id": "a", "reference": "B"}\n', encoding="utf-8")
    pkg = make_package(tmp_path / "p", items=MATH_ITEMS, responses=[{"item_id": "q1", "response": "ANSWER=B"}])
    verdicts = tmp_path / "v.json"
    assert cli("grade", pkg, "--benchmark", "math", "-o", verdicts).code == 0
    calls = {
        "import table": ["import", "table", table, "--kind", "items"],
        "release": ["release", verdicts, "--public"],
        "floor": ["floor", TINY_LLAMA, "--hbm-tbps", "4.8"],
        "trace": ["trace", trace, "--unattributed"],
    }
    for name, args in calls.items():
        d = _user_folder(tmp_path, name.replace(" ", "-"))
        r = cli(*args, "-o", d, "--force")
        assert (r.code, r.err) == (2, f"audit: error: {d}: --force replaces only what audit wrote (a package "
                                      f"that validates, or an empty folder); not this one: manifest.json: missing: "
                                      f"not an audit package (no manifest.json)\n"), (name, r)
        assert (d / "draft.tex").read_text(encoding="utf-8") == "my paper"
    tgz = tmp_path / "b.tar.gz"
    tgz.write_text("my file", encoding="utf-8")
    r = cli("bundle", pkg, "-o", tgz)
    assert r.err == f"audit: error: {tgz}: already exists (use --force to replace it)\n"
    r = cli("bundle", pkg, "-o", tgz, "--force")
    assert r.code == 2 and r.err.startswith(f"audit: error: {tgz}: --force replaces only what audit wrote (a "
                                            f"bundled package that validates); not this one: "), r.err
    assert tgz.read_text(encoding="utf-8") == "my file"
    tgz.unlink()
    assert cli("bundle", pkg, "-o", tgz).code == 0
    assert cli("bundle", pkg, "-o", tgz, "--force").code == 0


@attack("writes.force-every-writer")
def test_import_verdicts_and_recorded_refuse_a_users_json(cli, tmp_path):
    src = tmp_path / "v.jsonl"
    src.write_text('{"item_id": "a", "correct": true}\n', encoding="utf-8")
    out = tmp_path / "out.json"
    out.write_text('{"mine": 1}', encoding="utf-8")
    r = cli("import", "verdicts", src, "--benchmark", "choice", "--tool", "t", "-o", out, "--force")
    assert r.code == 2 and r.err.startswith(f"audit: error: {out}: --force replaces only what audit wrote (a "
                                            f"verdict file); not this one: "), r.err
    assert out.read_text(encoding="utf-8") == '{"mine": 1}'
    out.unlink()
    assert cli("import", "verdicts", src, "--benchmark", "choice", "--tool", "t", "-o", out).code == 0
    assert cli("import", "verdicts", src, "--benchmark", "choice", "--tool", "t", "-o", out, "--force").code == 0


@attack("writes.force-every-writer")
def test_force_proves_again_after_moving_aside(tmp_path, monkeypatch):
    """A folder swapped in between the first check and the publish is put back, untouched."""
    import audit.outputs as outputs

    out = tmp_path / "pkg"
    out.mkdir()  # empty: passes the first check
    tmp = tmp_path / ".new"
    tmp.mkdir()
    (out / "draft.tex").write_text("my paper", encoding="utf-8")  # ... then a user's file arrives
    with pytest.raises(outputs.AuditError, match="not this one: manifest.json: missing"):
        outputs.publish(tmp, out, force=True)
    assert (out / "draft.tex").read_text(encoding="utf-8") == "my paper"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".new", "pkg"]


# --------------------------------------------------------------------------- two writers, one name

AUDIT = Path(sys.executable).with_name("audit")


def _race(*args: list[object]) -> list[tuple[int, str]]:
    """Start the `audit` commands together; their (exit code, stderr)."""
    procs = [subprocess.Popen([str(AUDIT), *map(str, a)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True) for a in args]
    return [(p.wait(timeout=120), p.communicate()[1]) for p in procs]


@pytest.mark.slow
@attack("writes.race-no-force")
def test_two_grades_racing_for_one_file_one_fails(tmp_path):
    pkg = make_package(tmp_path / "p", items=MATH_ITEMS, responses=[{"item_id": "q1", "response": "ANSWER=B"}])
    for trial in range(3):
        out = tmp_path / f"r{trial}.json"
        res = _race(*[["grade", pkg, "--benchmark", "math", "-o", out, "-q"]] * 2)
        assert sorted(c for c, _ in res) == [0, 2], res
        assert next(e for c, e in res if c == 2) == f"audit: error: {out}: already exists (use --force to replace it)\n"


@pytest.mark.slow
@attack("writes.race-every-writer")
def test_two_packs_racing_for_one_folder_one_fails(tmp_path):
    src = _jsonl(tmp_path / "r.jsonl")
    for trial in range(3):
        out = tmp_path / f"pkg{trial}"
        res = _race(["pack", out, "--responses", src, "--benchmark", "mmlu_pro"],
                    ["pack", out, "--responses", src, "--benchmark", "choice"])
        assert sorted(c for c, _ in res) == [0, 2], res
        assert next(e for c, e in res if c == 2) in (
            f"audit: error: {out}: already exists (use --force to replace it)\n",
            f"audit: error: {out}: appeared while this was being written (another writer?); not replaced (use "
            f"--force to replace it)\n")
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@attack("writes.race-every-writer")
def test_publish_never_replaces_an_empty_folder_or_a_dangling_link(tmp_path):
    from audit.errors import AuditError
    from audit.outputs import publish

    for make in (lambda p: p.mkdir(), lambda p: p.symlink_to(tmp_path / "nowhere")):
        out = tmp_path / "out"
        make(out)
        new = tmp_path / ".new"
        new.mkdir()
        with pytest.raises(AuditError, match="appeared while this was being written"):
            publish(new, out, force=False)  # os.rename would replace an empty folder
        assert new.is_dir() and (out.is_symlink() or not any(out.iterdir()))
        new.rmdir()
        out.unlink() if out.is_symlink() else out.rmdir()


# --------------------------------------------------------------------------- a package's identity covers its manifest


def _relabel(pkg: Path, edit) -> None:
    m = json.loads((pkg / "manifest.json").read_text(encoding="utf-8"))
    edit(m)
    (pkg / "manifest.json").write_text(json.dumps(m, indent=2), encoding="utf-8")


def _digest(cli, pkg: Path) -> str:
    r = cli("validate", pkg)
    assert r.code == 0, r
    return r.out.splitlines()[0].split("digest ")[1]


@attack("id.manifest-relabel")
def test_relabelling_model_and_sampling_changes_the_digest_and_reproduce_refuses(cli, tmp_path):
    src = _jsonl(tmp_path / "r.jsonl")
    prov = tmp_path / "prov.json"
    prov.write_text(json.dumps({"model": "small-model", "sampling": {"max_tokens": 512}}), encoding="utf-8")
    pkg = tmp_path / "pkg"
    items = make_package(tmp_path / "items", items=MATH_ITEMS)
    assert cli("pack", pkg, "--responses", src, "--provenance", prov).code == 0
    out = tmp_path / "r.json"
    assert cli("grade", pkg, "--items", items, "--benchmark", "math", "-o", out, "-q").code == 0
    before = _digest(cli, pkg)

    def forge(m):
        m["provenance"]["model"] = "frontier-model"
        m["provenance"]["sampling"]["max_tokens"] = 32768

    _relabel(pkg, forge)
    assert _digest(cli, pkg) != before
    r = cli("reproduce", out)
    assert r.code == 2 and r.err.startswith(f"audit: error: {pkg}: package content differs from the one graded"), r
    assert "identical" not in r.out


@attack("id.manifest-other-fields")
@pytest.mark.parametrize("field, edit", [
    ("benchmark", lambda m: m.update(benchmark="other")),
    ("package_id", lambda m: m.update(package_id="responses-forged")),
    ("producer", lambda m: m["producer"].update(git_dirty=not m["producer"]["git_dirty"])),
    ("engine", lambda m: m["provenance"].update(engine="forged-engine")),
    ("hardware", lambda m: m["provenance"].update(hardware="8x B200")),
    ("created", lambda m: m.update(created="2001-01-01T00:00:00Z")),
])
def test_every_manifest_field_but_created_is_in_the_identity(cli, tmp_path, field, edit):
    pkg = make_package(tmp_path / "pkg", responses=[{"item_id": "q1", "response": "x"}])
    before = _digest(cli, pkg)
    _relabel(pkg, edit)
    after = _digest(cli, pkg)
    assert (after == before) == (field == "created")
    # (A downgrade to the old scheme, schema_version 1, is no longer another digest: it is refused, see
    # tests/test_attacks_kinds.py, id.manifest-downgrade.)


@attack("id.manifest-relabel")
def test_old_packages_keep_their_pinned_digest_and_say_what_it_covers(cli):
    from tests.conftest import REPO

    pkg = REPO / "packages" / "demo-lab-note" / "math500"
    r = cli("validate", pkg)
    assert r.code == 0
    assert r.out.splitlines()[1] == ("note: its digest is of the old scheme (manifest schema_version 1): it covers "
                                     "file paths and hashes only, not the manifest's provenance, producer, kind or "
                                     "row counts")
    assert f"sha256: {_digest(cli, pkg)}" in (REPO / "packages" / "claims.yaml").read_text(encoding="utf-8")


@attack("writes.force-every-writer")
def test_claims_page_replaces_only_its_own_files(cli, mini, tmp_path):  # noqa: F811
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<html>my home page</html>", encoding="utf-8")
    r = cli("claims", "page", "claims.yaml", "-o", site)
    assert (r.code, r.out) == (2, "")
    assert r.err == (f"audit: error: {site / 'index.html'}: not replaced: it was not written by `audit claims "
                     f"page` (move it, or write the page to another folder)\n")
    assert (site / "index.html").read_text(encoding="utf-8") == "<html>my home page</html>"
    (site / "index.html").unlink()
    assert cli("claims", "page", "claims.yaml", "-o", site).code == 0
    assert cli("claims", "page", "claims.yaml", "-o", site).code == 0  # its own page is replaced
    plots = tmp_path / "plots"
    plots.mkdir()
    (plots / "claim-G1.png").write_bytes(b"mine")
    r = cli("claims", "page", "claims.yaml", "-o", plots)
    assert r.code == 2 and "claim plots with no page of `audit claims page` beside them" in r.err
    assert (plots / "claim-G1.png").read_bytes() == b"mine"


@attack("writes.force-every-writer")
def test_release_force_replaces_only_a_generated_salt(cli, tmp_path):
    items = make_package(tmp_path / "items", items=MATH_ITEMS)
    pkg = make_package(tmp_path / "p", responses=[{"item_id": "q1", "response": "ANSWER=B"}])
    verdicts = tmp_path / "v.json"
    assert cli("grade", pkg, "--items", items, "--benchmark", "math", "-o", verdicts).code == 0
    out = tmp_path / "rel"
    salt = tmp_path / "rel.salt"
    salt.write_text("my own notes\n", encoding="utf-8")
    r = cli("release", verdicts, "--public", "--hash-ids", "-o", out, "--force")
    assert (r.code, r.err) == (2, f"audit: error: {salt}: --force replaces only what audit wrote (a salt file "
                                  f"audit generated: 64 hex digits); not this one: not one line of 64 hex digits\n")
    assert salt.read_text(encoding="utf-8") == "my own notes\n" and not out.exists()
    salt.unlink()
    assert cli("release", verdicts, "--public", "--hash-ids", "-o", out).code == 0
    first = salt.read_text(encoding="utf-8")
    r = cli("release", verdicts, "--public", "--hash-ids", "-o", out)
    assert r.err == f"audit: error: {salt}: already exists (use --force to replace it)\n"
    assert cli("release", verdicts, "--public", "--hash-ids", "-o", out, "--force").code == 0
    assert salt.read_text(encoding="utf-8") != first


# --------------------------------------------------------------------------- reproduce says what it takes as recorded


@attack("reproduce.recorded-fields-copied")
def test_reproduce_names_the_producer_it_does_not_rederive_and_compares_the_environment(cli, tmp_path):
    pkg = make_package(tmp_path / "p", items=MATH_ITEMS, responses=[{"item_id": "q1", "response": "ANSWER=B"}])
    out = tmp_path / "r.json"
    assert cli("grade", pkg, "--benchmark", "math", "-o", out, "-q").code == 0
    text = out.read_text(encoding="utf-8")
    dirty = '"git_dirty": true' in text
    flipped = text.replace(f'"git_dirty": {str(dirty).lower()}', f'"git_dirty": {str(not dirty).lower()}', 1)
    assert flipped != text
    out.write_text(flipped, encoding="utf-8")
    r = cli("reproduce", out)
    assert r.code == 0 and r.out.splitlines()[0] == f"identical: {out}"
    producer_line = r.out.splitlines()[1]
    assert producer_line.startswith("not re-derived: producer audit ") and producer_line.endswith(
        ": who graded, as the file records it (this run's own producer is not compared)")
    assert ("(dirty)" in producer_line) == (not dirty)  # the recorded flag, shown as recorded
    env = json.loads(flipped.split('\n  "items": ')[0].rstrip(",") + "}")["environment"]
    out.write_text(flipped.replace(f'"python": "{env["python"]}"', '"python": "2.7"', 1), encoding="utf-8")
    r = cli("reproduce", out)
    assert r.out.splitlines()[0] == f"note: environment differs: python 2.7 -> {env['python']}"


@attack("writes.force-every-writer")
def test_bench_and_generate_refuse_a_users_folder_before_any_work(tmp_path):
    from audit.bench.store import check_outputs
    from audit.errors import AuditError
    from audit.generate import state

    mine = _user_folder(tmp_path)
    for out, tel in ((mine, None), (tmp_path / "new", mine)):
        with pytest.raises(AuditError, match="--force replaces only what audit wrote"):
            check_outputs(out, tel, True)
    work = _user_folder(tmp_path, "pkg.work")  # what `generate --force` would remove as an unfinished run
    with pytest.raises(AuditError, match="this is not an unfinished run's folder"):
        state.check_run_dir(work)
    assert (work / "draft.tex").is_file()
    (work / "run.json").write_text(json.dumps({"format": state.RUN_FORMAT}), encoding="utf-8")
    state.check_run_dir(work)  # an audit run's folder: --force may remove it


@pytest.mark.slow
@attack("claims.page-huge-own-file")
def test_a_huge_index_html_in_the_page_folder_is_refused_unread(mini, tmp_path):  # noqa: F811
    from tests.attack_tools import audit_jailed

    site = tmp_path / "site"
    site.mkdir()
    with open(site / "index.html", "wb") as f:
        f.truncate(8 << 30)  # 8 GiB, sparse: read whole (for the page's footer) before
    setup = "import resource; resource.setrlimit(resource.RLIMIT_AS, (1200 << 20, 1200 << 20))"
    r = audit_jailed("claims", "page", "claims.yaml", "-o", site, setup=setup, timeout=60)
    assert (r.returncode, r.stdout) == (2, ""), r.stderr[-2000:]
    assert r.stderr == (f"audit: error: {site / 'index.html'}: not replaced: it was not written by `audit claims "
                        f"page` (move it, or write the page to another folder)\n")


@attack("gen.run-json-fifo")
@pytest.mark.parametrize("kind", ["fifo", "huge"])
def test_a_run_json_that_is_a_fifo_or_huge_is_refused_unread(tmp_path, kind):
    """`generate --force` and a resume read OUT.work/run.json: a FIFO there blocked the read for ever, a huge
    file was read whole. Now a regular file of at most 16 MiB, else one line."""
    import os

    work = tmp_path / "pkg.work"
    work.mkdir()
    if kind == "fifo":
        os.mkfifo(work / "run.json")
    else:
        with open(work / "run.json", "wb") as f:
            f.truncate(8 << 30)  # sparse
    code = ("import sys\nfrom audit.errors import AuditError\nfrom audit.generate import state\n"
            "for check in (state.check_run_dir, state.load_state):\n"
            "    try:\n        check(__import__('pathlib').Path(sys.argv[1]))\n"
            "    except AuditError as e:\n        print(e)\n")
    r = subprocess.run([sys.executable, "-c", "import resource; resource.setrlimit(resource.RLIMIT_AS, "
                        "(1200 << 20, 1200 << 20))\n" + code, str(work)], capture_output=True, text=True, timeout=30)
    why = "not a regular file" if kind == "fifo" else "larger than the 16,777,216-byte limit for a run state file"
    assert r.stdout.splitlines() == [
        f"{work}: --force replaces only what audit wrote; this is not an unfinished run's folder (no run.json of "
        "an audit run)", f"{work}/run.json: unreadable run state: {why}"], (r.stdout, r.stderr)
