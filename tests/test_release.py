"""`audit release` / `audit verify-release` and the leak check.

The GPQA release is built from the real GPQA Diamond responses (kept gzip'd in
../shared/data; packages are written under pytest's tmp only, and no assertion
prints response text). Their verdicts are imported from the source's own extracted
letters, like a verdict file from another tool.
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest
from tests.verdict_helpers import make_verdict_file, write_verdict_file

from audit.leaks import LeakIndex, ProtectedText, find_leaks
from audit.release.models import ReleaseRow
from audit.pack import SourceRow, Table, build_package
from audit.packages import open_package
from audit.release import hash_id, release_id_key
from audit.verdicts import PackageRef, Policies

SALT = "7add16efb133513abd8e72912a5716f31afc70fd9885bc81801827f22fe7b167"  # 32 random bytes, fixed for tests
PUBLIC = ["public/1", "public/2"]  # two non-protected items beside the GPQA ones


def _rows(objs):
    return (SourceRow("<test>", i + 1, o) for i, o in enumerate(objs))


def _package(out: Path, kind: str, schema: str, objs) -> PackageRef:
    build_package(out, kind=kind, tables=[Table(f"{kind}.jsonl", schema, _rows(objs))], benchmark="gpqa_diamond")
    with open_package(out) as pkg:
        return PackageRef(package_id=pkg.manifest.package_id, digest=pkg.digest, path=out.name)


@pytest.fixture(scope="module")
def gpqa(tmp_path_factory):
    from tests.conftest import shared_path

    src = shared_path("gpqa_diamond_responses/gpqa_diamond_responses.jsonl.gz")
    d = tmp_path_factory.mktemp("gpqa")
    with gzip.open(src, "rt", encoding="utf-8") as f:
        raw = [json.loads(line) for line in f]
    models = sorted({r["model"] for r in raw})
    items, responses, verdicts = {}, [], []
    for r in raw:
        item_id = f"gpqa_diamond/{r['item_index']:03d}/v{r['version']}"
        items[item_id] = {"item_id": item_id, "reference": r["gold_letter"], "num_choices": 4, "protected": True}
        sample = models.index(r["model"])
        responses.append({"item_id": item_id, "sample": sample, "response": r["response"]})
        letter = r["source_extracted"] if r["source_extracted"] in ("A", "B", "C", "D") else None
        if letter is None:
            verdicts.append({"item_id": item_id, "sample": sample, "verdict": "incorrect", "status": "no_answer",
                             "rule": "source", "reference": r["gold_letter"]})
        else:
            v = "correct" if letter == r["gold_letter"] else "incorrect"
            verdicts.append({"item_id": item_id, "sample": sample, "verdict": v, "answer": letter, "rule": "source",
                             "reason": f"{letter} vs {r['gold_letter']}", "reference": r["gold_letter"]})
    for i, pid in enumerate(PUBLIC):
        items[pid] = {"item_id": pid, "reference": "A", "num_choices": 4, "protected": False}
        responses.append({"item_id": pid, "sample": 0, "response": "The answer is (A)."})
        verdicts.append({"item_id": pid, "sample": 0, "verdict": "correct" if i == 0 else "incorrect",
                         "answer": "A" if i == 0 else "B", "rule": "answer_is", "reference": "A",
                         "reason": "A vs A" if i == 0 else "B vs A"})
    items_ref = _package(d / "items", "items", "item_row.v1", sorted(items.values(), key=lambda x: x["item_id"]))
    resp_ref = _package(d / "responses", "responses", "response_row.v1", responses)
    header = {"benchmark": "gpqa_diamond", "responses_package": resp_ref, "items_package": items_ref,
              "extractor": None, "grader": None}
    write_verdict_file(d / "results.json", make_verdict_file(verdicts, **header))
    return {"dir": d, "raw": raw, "verdicts": verdicts, "header": header, "items": items}


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _nothing_written(parent: Path, name: str) -> bool:
    return not (parent / name).exists() and not any(p.name.startswith(f".{name}.") for p in parent.iterdir())


@pytest.mark.slow  # ~4-7 s: builds the release and verifies it against all 6,336 responses
@pytest.mark.shared_data
def test_gpqa_release_passes_leak_check_and_verifies(gpqa, cli, tmp_path):
    d = gpqa["dir"]
    out = tmp_path / "release"
    # GPQA's ids name the version, which puts the gold at letter v: dataset ids would give the key away
    # (tests/test_attacks_release.py), so the release salts them.
    r = cli("release", d / "results.json", "-o", out, "--hash-ids", "--salt", SALT)
    assert r.code == 0, r.err
    assert r.out == (f"wrote {out}: release package {r.out.split('release package ')[1].split(',')[0]}, 6,338 rows, "
                     f"794 items (792 protected); leak check passed (7,128 protected strings)\n")
    assert cli("validate", out).code == 0
    rows = [json.loads(x) for x in (out / "verdicts.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 6338
    key = release_id_key(SALT, json.loads((out / "release.json").read_text())["id_context"])
    public_ids = {hash_id(p, key): p for p in PUBLIC}
    prot = [x for x in rows if x["item_id"] not in public_ids]
    assert all(set(x) == {"item_id", "sample", "verdict", "status", "protected"} and x["protected"] for x in prot)
    public = sorted((x for x in rows if x["item_id"] in public_ids), key=lambda x: public_ids[x["item_id"]])
    assert [x["answer"] for x in public] == ["A", "B"] and all(x["reference"] == "A" for x in public)
    # Independently of the leak check: no 24-character piece of any response is in any file.
    blob = b"\n".join(_files(out).values()).decode("utf-8")
    rng = random.Random(7)
    pieces = [t[i:i + 24] for t in (x["response"] for x in gpqa["raw"]) if len(t) > 200
              for i in rng.sample(range(len(t) - 24), 1)]
    assert len(pieces) > 6000 and not any(p in blob for p in pieces)
    info = json.loads((out / "release.json").read_text(encoding="utf-8"))
    assert list(info)[:2] == ["schema_version", "kind"] and info["id_scheme"] == "hmac-sha256/release"
    acc = {f["name"]: f for f in info["figures"]}["accuracy"]
    expected_correct = sum(1 for v in gpqa["verdicts"] if v["verdict"] == "correct")
    assert (acc["correct"], acc["total"]) == (expected_correct, 6338)
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert f"| accuracy | {acc['value'] * 100:.2f}% | {expected_correct:,} / 6,338 | " in readme
    assert "| protected items | 792 |" in readme

    v = cli("verify-release", out, "--items", d / "items", "--responses", d / "responses", "--salt", SALT)
    assert v.code == 0, v.out
    assert [line.split()[:2] for line in v.out.splitlines()] == [
        ["ok", "package"], ["ok", "counts"], ["ok", "order"], ["ok", "ids"], ["ok", "items"], ["ok", "protected"],
        ["ok", "structure"], ["ok", "references"], ["ok", "verdicts"], ["ok", "figures"], ["ok", "readme"],
        ["ok", "leaks"], ["ok", "inference"], ["verified:", "13"]]
    assert "ok   leaks          no protected text from your copy (7,128 strings, responses included) in any file" in v.out


@pytest.mark.slow
@pytest.mark.shared_data
def test_planted_response_text_fails_and_writes_nothing(gpqa, cli, tmp_path):
    d = gpqa["dir"]
    victim = next(x for x in gpqa["raw"] if len(x["response"]) > 400)
    snippet = victim["response"][200:260]
    planted = [dict(v) for v in gpqa["verdicts"]]
    for v in planted:
        if v["item_id"] == "public/2":
            v["reason"] = "the model wrote: " + " ".join(snippet.split())  # reflowed: still caught
    header = {**gpqa["header"],
              "responses_package": gpqa["header"]["responses_package"].model_copy(update={"path": str(d / "responses")}),
              "items_package": gpqa["header"]["items_package"].model_copy(update={"path": str(d / "items")})}
    write_verdict_file(tmp_path / "planted.json", make_verdict_file(planted, **header))
    # Without --public-text the reason is withheld (not published): the leak check, the second layer, is for
    # what --public-text publishes.
    withheld = tmp_path / "withheld"
    assert cli("release", tmp_path / "planted.json", "-o", withheld, "--hash-ids", "--salt", SALT).code == 0
    assert snippet[:20] not in b"".join(_files(withheld).values()).decode("utf-8")
    r = cli("release", tmp_path / "planted.json", "-o", tmp_path / "rel", "--public-text")
    assert r.code == 2 and r.out == ""
    lines = r.err.splitlines()
    victim_id = f"gpqa_diamond/{victim['item_index']:03d}/v{victim['version']}"
    row = 2  # public/2 is the second row of public_text.jsonl
    assert any(line.startswith(f"audit: error: public_text.jsonl: row {row}: field reason: leak: ")
               and f"of protected item '{victim_id}'" in line for line in lines)
    assert snippet[:20] not in r.err  # the report names the leak, never the text
    assert _nothing_written(tmp_path, "rel")


@pytest.mark.slow
@pytest.mark.shared_data
def test_planted_reference_beside_id_fails(gpqa, cli, tmp_path, monkeypatch):
    import audit.release.build as rel

    real = rel._closed_row

    def leaky(r, release_id, rank, protected, item, reference_field):  # a bug that publishes protected rows in full
        return real(r, release_id, rank, False, item, reference_field)

    monkeypatch.setattr(rel, "_closed_row", leaky)
    r = cli("release", gpqa["dir"] / "results.json", "-o", tmp_path / "rel")
    assert r.code == 2
    first = r.err.splitlines()[0]
    assert first.startswith("audit: error: verdicts.jsonl: row 1: field ")
    assert "leak: the reference answer of protected item 'gpqa_diamond/000/v1' beside its id" in r.err
    lines = r.err.splitlines()
    assert len(lines) == 101 and lines[-1].startswith("audit: error: verdicts.jsonl: leak: ")
    assert lines[-1].endswith(" more leaks in this file not listed")
    assert _nothing_written(tmp_path, "rel")


@pytest.mark.slow
@pytest.mark.shared_data
def test_salted_ids(gpqa, cli, tmp_path):
    d = gpqa["dir"]
    out = tmp_path / "salted"
    assert cli("release", d / "results.json", "-o", out, "--hash-ids", "--salt", SALT).code == 0
    rows = [json.loads(x) for x in (out / "verdicts.jsonl").read_text(encoding="utf-8").splitlines()]
    ids = {x["item_id"] for x in rows}
    assert len(ids) == 794 and all(len(i) == 32 and int(i, 16) >= 0 for i in ids)
    key = release_id_key(SALT, json.loads((out / "release.json").read_text())["id_context"])
    assert hash_id("gpqa_diamond/000/v1", key) in ids and "gpqa_diamond/000/v1" not in ids
    assert SALT[:16] not in b"".join(_files(out).values()).decode()  # the salt is never published
    no_salt = cli("verify-release", out, "--items", d / "items")
    assert no_salt.code == 1 and "FAIL ids            the release uses salted ids: give --salt-file" in no_salt.out
    wrong = cli("verify-release", out, "--items", d / "items", "--salt", SALT + "x")
    assert wrong.code == 1 and "none is yours under this salt: wrong salt?" in wrong.out
    (tmp_path / "salt.txt").write_text(SALT + "\n", encoding="utf-8")
    (tmp_path / "salt.txt").chmod(0o600)  # a salt file others can read is refused
    ok = cli("verify-release", out, "--items", d / "items", "--salt-file", tmp_path / "salt.txt")
    assert ok.code == 0, ok.out
    short = cli("release", d / "results.json", "-o", tmp_path / "s2", "--hash-ids", "--salt", "short")
    assert short.code == 2 and "shorter than 32 characters" in short.err


@pytest.mark.slow
@pytest.mark.shared_data
def test_release_is_deterministic(gpqa, cli, tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    for name in ("a", "b"):
        assert cli("release", gpqa["dir"] / "results.json", "-o", tmp_path / name, "--hash-ids", "--salt",
                   SALT).code == 0
    assert _files(tmp_path / "a") == _files(tmp_path / "b")


# --------------------------------------------------------------------------- small releases, no shared data


def _items(tmp_path: Path, name: str, ref2: str = "A") -> PackageRef:
    return _package(tmp_path / name, "items", "item_row.v1",
                    [{"item_id": "i1", "reference": "A", "num_choices": 4},
                     {"item_id": "i2", "reference": ref2, "num_choices": 4}])


def test_public_release_verify_detects_a_gold_change(tmp_path, cli):
    iref = _items(tmp_path, "items")
    vf = make_verdict_file([{"item_id": "i1", "sample": 0, "verdict": "correct", "answer": "A", "reference": "A"},
                            {"item_id": "i2", "sample": 0, "verdict": "incorrect", "answer": "B", "reference": "A"}],
                           items_package=iref)
    write_verdict_file(tmp_path / "v.json", vf)
    assert cli("release", tmp_path / "v.json", "-o", tmp_path / "rel").code == 0
    assert cli("verify-release", tmp_path / "rel", "--items", tmp_path / "items").code == 0
    _items(tmp_path, "items-newer", ref2="B")  # the holder's copy has another gold for i2
    r = cli("verify-release", tmp_path / "rel", "--items", tmp_path / "items-newer")
    assert r.code == 1
    assert ("FAIL references     1 rows graded against another reference, first 'i2' (gold changed between "
            "versions?)\n") in r.out
    assert "ok   verdicts " in r.out
    assert r.err == "NOT verified: 12 of 13 checks passed\n"


def test_verify_detects_an_edited_readme(tmp_path, cli):
    _items(tmp_path, "items")
    vf = make_verdict_file([{"item_id": "i1", "sample": 0, "verdict": "correct", "answer": "A", "reference": "A"}])
    write_verdict_file(tmp_path / "v.json", vf)
    assert cli("release", tmp_path / "v.json", "-o", tmp_path / "rel", "--items", tmp_path / "items").code == 0
    readme = tmp_path / "rel" / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8").replace("100.00%", "099.99%"), encoding="utf-8")
    r = cli("verify-release", tmp_path / "rel", "--items", tmp_path / "items")
    assert r.code == 1 and r.out.startswith("FAIL package        1 problems, first: README.md: field sha256: sha256 is ")
    # A publisher who also rewrites the manifest passes the hash check, not the README check.
    from audit.fileio import sha256_file

    manifest = tmp_path / "rel" / "manifest.json"
    m = json.loads(manifest.read_text(encoding="utf-8"))
    digest, size = sha256_file(readme)
    m["files"] = [{**f, "sha256": digest, "bytes": size} if f["path"] == "README.md" else f for f in m["files"]]
    manifest.write_text(json.dumps(m, indent=2), encoding="utf-8")
    r = cli("verify-release", tmp_path / "rel", "--items", tmp_path / "items")
    assert r.code == 1
    assert "FAIL readme         README.md differs from what release.json generates (edited after release?)" in r.out
    assert "ok   figures " in r.out


def test_release_needs_to_know_what_is_protected(tmp_path, cli):
    vf = make_verdict_file([{"item_id": "i1", "sample": 0, "verdict": "correct"}], benchmark="choice")
    write_verdict_file(tmp_path / "v.json", vf)
    r = cli("release", tmp_path / "v.json", "-o", tmp_path / "rel")
    assert r.code == 2 and "cannot tell which items are protected" in r.err
    r = cli("release", tmp_path / "v.json", "-o", tmp_path / "rel", "--protected")
    assert r.code == 2 and "the leak check needs the responses of the protected items" in r.err
    r = cli("release", tmp_path / "v.json", "-o", tmp_path / "rel", "--protected", "--no-response-check")
    assert r.code == 0
    info = json.loads((tmp_path / "rel" / "release.json").read_text(encoding="utf-8"))
    assert info["leak_check"]["responses_checked"] is False and info["protected_items"] == 1
    r = cli("release", tmp_path / "v.json", "-o", tmp_path / "rel2", "--public")
    assert r.code == 0


def test_release_refuses_a_summary_its_rows_contradict(tmp_path, cli):
    vf = make_verdict_file([{"item_id": "i1", "sample": 0, "verdict": "correct"},
                            {"item_id": "i2", "sample": 0, "verdict": "incorrect"}])
    figs = [f.model_copy(update={"correct": 2, "value": 1.0}) if f.name == "accuracy" else f
            for f in vf.summary.figures]
    vf = vf.model_copy(update={"summary": vf.summary.model_copy(update={"figures": figs})})
    write_verdict_file(tmp_path / "v.json", vf)
    r = cli("release", tmp_path / "v.json", "-o", tmp_path / "rel", "--public")
    assert r.code == 2
    assert r.err == (f"audit: error: {tmp_path / 'v.json'}: field summary: the summary records accuracy = 2/2 (1.0000) "
                     f"but the rows give 1/2 (0.5000): regrade before releasing\n")


def test_protected_row_schema_rejects_content(tmp_path, cli):
    with pytest.raises(ValueError, match="a protected row may hold only item_id, sample, verdict and status, not answer"):
        ReleaseRow(item_id="x", sample=0, verdict="correct", status="correct", protected=True, answer="B")
    vf = make_verdict_file([{"item_id": "i1", "sample": 0, "verdict": "correct"}], benchmark="choice")
    write_verdict_file(tmp_path / "v.json", vf)
    assert cli("release", tmp_path / "v.json", "-o", tmp_path / "rel", "--protected", "--no-response-check").code == 0
    p = tmp_path / "rel" / "verdicts.jsonl"
    p.write_text(p.read_text().replace('"protected":true', '"protected":true,"answer":"B"'), encoding="utf-8")
    r = cli("validate", tmp_path / "rel")
    assert r.code == 1
    line = next(x for x in r.out.splitlines() if ": row 1: " in x)
    assert line.startswith(f"{tmp_path / 'rel'}/verdicts.jsonl: row 1: ")
    assert "a protected row may hold only item_id, sample, verdict and status, not answer" in line


# --------------------------------------------------------------------------- the leak check itself


PROTECTED = ProtectedText("secret/1", "question", "Which isotope of the element decays fastest under pressure?")


def test_leak_rules_on_each_file_type():
    idx = LeakIndex([PROTECTED, ProtectedText("secret/1", "reference", "C")], references={"secret/1": ["C"]},
                    aliases={"secret/1": "secret/1", "h123": "secret/1"})
    files = {
        "rows.jsonl": b'{"item_id":"other","reason":"Which isotope of the\\nelement decays"}\n'
                      b'{"item_id":"h123","answer":"C"}\n{"item_id":"h123","status":"correct","verdict":"correct"}\n',
        "info.json": json.dumps({"a": {"b": [{"id": "secret/1", "gold": "(C)"}], "c": "C"},
                                 "note": "isotope of the element decays fastest"}).encode(),
        "README.md": "| secret/1 | C |\n| secret/1 | Cobalt |\nwhich isotope of the element decays\n".encode(),
    }
    got = [str(p) for p in find_leaks(files, idx)]
    assert got == [
        "README.md: row 1: leak: the reference answer of protected item 'secret/1' beside its id",
        "README.md: row 3: leak: 30 letters and digits of the question of protected item 'secret/1'",
        "info.json: field a.b.0.gold: leak: the reference answer of protected item 'secret/1' beside its id",
        "info.json: field note: leak: 32 letters and digits of the question of protected item 'secret/1'",
        "rows.jsonl: row 1: field reason: leak: 30 letters and digits of the question of protected item 'secret/1'",
        "rows.jsonl: row 2: field answer: leak: the reference answer of protected item 'secret/1' beside its id",
    ]


def test_leak_check_finds_every_planted_substring_and_nothing_else():
    rng = random.Random(11)
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta", "zeta", "iota", "rho", "tau"]
    texts = [ProtectedText(f"s/{i}", "response", " ".join(rng.choice(words) + str(rng.randrange(100))
                                                           for _ in range(200))) for i in range(50)]
    idx = LeakIndex(texts)
    clean = ["unrelated release text number %d with its own words" % i for i in range(200)]
    assert idx.find(clean) == []
    for n in (20, 21, 35, 400):  # letters and digits: spaces and punctuation do not count
        t = rng.randrange(50)
        text = texts[t].text
        start = rng.randrange(len(text) - 2 * n)
        end = start
        while sum(c.isalnum() for c in text[start:end]) < n:
            end += 1
        piece = text[start:end]
        found = idx.find(clean + ["prefix! " + piece + " !suffix"])
        assert any(v == len(clean) and length >= n for v, _, length in found), n
        assert all(v == len(clean) for v, _, _ in found)
    first19 = text = texts[0].text
    end = 0
    while sum(c.isalnum() for c in text[:end]) < 19:
        end += 1
    assert idx.find(["!" + first19[:end] + "!"]) == []  # 19 letters and digits are not a leak


def test_hashed_release_never_publishes_a_raw_excluded_id(tmp_path, cli):
    # An excluded id with no row (scope=responses, or not in the items at all) was written
    # to release.json's policies as it is, though --hash-ids promises no dataset id is published.
    vf = make_verdict_file([{"item_id": "i1", "sample": 0, "verdict": "correct"}], benchmark="choice",
                           policies=Policies(exclude=["i1", "secret/2"], scope="responses"))
    write_verdict_file(tmp_path / "v.json", vf)
    r = cli("release", tmp_path / "v.json", "-o", tmp_path / "rel", "--protected", "--no-response-check",
            "--hash-ids", "--salt", SALT)
    assert r.code == 0, r.err
    blob = b"\n".join(_files(tmp_path / "rel").values()).decode("utf-8")
    assert "secret/2" not in blob and '"i1"' not in blob
    info = json.loads((tmp_path / "rel" / "release.json").read_text(encoding="utf-8"))
    key = release_id_key(SALT, info["id_context"])
    assert info["policies"]["exclude"] == sorted([hash_id("i1", key), hash_id("secret/2", key)])


def test_verify_release_compares_references_in_the_field_the_grading_used(tmp_path, cli):
    # A grading with --reference-field extra.KEY publishes that gold; verify-release compared it
    # with the holder's `reference` and reported a gold change against the very items graded.
    from tests.builders import make_package

    items = [{"item_id": f"q{i}", "reference": "A", "num_choices": 4, "extra": {"fixed": "B"}} for i in range(2)]
    make_package(tmp_path / "items", items=items)
    make_package(tmp_path / "resp", responses=[{"item_id": "q0", "response": "Answer: B"},
                                               {"item_id": "q1", "response": "Answer: A"}])
    assert cli("grade", tmp_path / "resp", "--items", tmp_path / "items", "--benchmark", "gpqa_diamond", "-o",
               tmp_path / "r.json", "-q", "--reference-field", "extra.fixed").code == 0
    assert cli("release", tmp_path / "r.json", "-o", tmp_path / "rel").code == 0
    info = json.loads((tmp_path / "rel" / "release.json").read_text(encoding="utf-8"))
    assert info["reference_field"] == "extra.fixed"
    v = cli("verify-release", tmp_path / "rel", "--items", tmp_path / "items")
    assert v.code == 0, v.out
    assert "ok   references     every published reference equals your copy's" in v.out
    # The holder's copy with another gold in that field is still caught.
    make_package(tmp_path / "items2", items=[{**it, "extra": {"fixed": "C"}} for it in items])
    v = cli("verify-release", tmp_path / "rel", "--items", tmp_path / "items2")
    assert v.code == 1 and "FAIL references     2 rows graded against another reference, first 'q0'" in v.out
